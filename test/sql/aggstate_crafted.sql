-- Aggregate states from the caller: every SQL function that takes a state
-- (agg_final, agg_combine_final, agg_combine, agg_merge, agg_apply)
-- checks it before the aggregate's deserialization function reads it
-- (aggstate_check.c).  PostgreSQL's own deserialization functions trust
-- their input: a crafted numeric state used to crash the server.  Each
-- damaged state below must raise an error for a role that is not a
-- superuser, and valid states must still give the aggregate's result.
CREATE SCHEMA aggstate_crafted;
SET search_path = aggstate_crafted;
CREATE ROLE regress_crafted_user;
GRANT USAGE ON SCHEMA aggstate_crafted, mvinc TO regress_crafted_user;

-- Pieces of states, big-endian as the serialization functions write them
CREATE FUNCTION i2(int) RETURNS bytea LANGUAGE sql IMMUTABLE
    AS 'SELECT substring(int4send($1) FROM 3)';
-- numericvar_serialize: ndigits, weight, sign, dscale, digits
CREATE FUNCTION nv(nd int, w int, sg int, ds int, VARIADIC d int[] DEFAULT '{}')
    RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT int4send(nd) || int4send(w) || int4send(sg) || int4send(ds) ||
         coalesce((SELECT string_agg(i2(x), '' ORDER BY o)
                     FROM unnest(d) WITH ORDINALITY u(x, o)), '')
$$;
-- numeric_avg_serialize's tail: maxScale, maxScaleCount, NaN, +Inf, -Inf
CREATE FUNCTION tail(ms int DEFAULT 0, msc int8 DEFAULT 1, nan int8 DEFAULT 0,
                     pinf int8 DEFAULT 0, ninf int8 DEFAULT 0)
    RETURNS bytea LANGUAGE sql IMMUTABLE
    AS 'SELECT int4send(ms) || int8send(msc) || int8send(nan) || int8send(pinf) || int8send(ninf)';
-- mvinc's header of a retractable aggregate's state: count, flag
CREATE FUNCTION counted(payload bytea, n int8 DEFAULT 1) RETURNS bytea
    LANGUAGE sql IMMUTABLE AS $$SELECT int8send(n) || '\x01'::bytea || payload$$;

-- Valid states, made by mvinc
CREATE TABLE t (x numeric, i int, b bigint);
INSERT INTO t VALUES (1.5, 1, 10), (2.25, 2, 20), (-3, 3, 30);
CREATE TABLE good (agg regprocedure PRIMARY KEY, state bytea, direct text);
INSERT INTO good
SELECT 'sum(numeric)'::regprocedure, mvinc.agg_state('sum(numeric)', x), sum(x)::text FROM t UNION ALL
SELECT 'var_pop(numeric)', mvinc.agg_state('var_pop(numeric)', x), var_pop(x)::text FROM t UNION ALL
SELECT 'var_pop(integer)', mvinc.agg_state('var_pop(integer)', i), var_pop(i)::text FROM t UNION ALL
SELECT 'sum(bigint)', mvinc.agg_state('sum(bigint)', b), sum(b)::text FROM t UNION ALL
SELECT 'mvinc.approx_count_distinct(anyelement)',
       mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', i), '3' FROM t;
-- their layouts, as the crafted states below spell them
SELECT agg, state FROM good ORDER BY agg::text;
SELECT state = counted(int8send(3) || nv(1, -1, 0, 2, 7500) || tail(2, 1), 3)
  FROM good WHERE agg = 'sum(numeric)'::regprocedure;

-- Damaged states: (which aggregate, what is wrong, the bytes)
CREATE TABLE bad (agg regprocedure, what text, state bytea);
INSERT INTO bad VALUES
 -- the reviewer's state: weight INT_MIN (segfault in numeric_avg_deserialize)
 ('sum(numeric)', 'reviewer', '\x0000000000000001010000000000000001000000018000000000000000000000000001000000000000000000000000000000000000000000000000000000000000000000000000'),
 ('sum(numeric)', 'weight INT_MIN', counted(int8send(1) || nv(1, -2147483648, 0, 0, 1) || tail())),
 ('sum(numeric)', 'weight INT_MAX', counted(int8send(1) || nv(1, 2147483647, 0, 0, 1) || tail())),
 ('sum(numeric)', 'weight 70000', counted(int8send(1) || nv(1, 70000, 0, 0, 1) || tail())),
 ('sum(numeric)', 'ndigits -1', counted(int8send(1) || nv(-1, 0, 0, 0) || tail())),
 ('sum(numeric)', 'ndigits huge', counted(int8send(1) || nv(2147483647, 0, 0, 0, 1) || tail())),
 ('sum(numeric)', 'ndigits past the bytes', counted(int8send(1) || nv(30, 0, 0, 0, 1) || tail())),
 ('sum(numeric)', 'sign NaN', counted(int8send(1) || nv(1, 0, 49152, 0, 1) || tail())),
 ('sum(numeric)', 'sign 1', counted(int8send(1) || nv(1, 0, 1, 0, 1) || tail())),
 ('sum(numeric)', 'dscale -1', counted(int8send(1) || nv(1, 0, 0, -1, 1) || tail())),
 ('sum(numeric)', 'dscale 16384', counted(int8send(1) || nv(1, 0, 0, 16384, 1) || tail())),
 ('sum(numeric)', 'digit 10000', counted(int8send(1) || nv(1, 0, 0, 0, 10000) || tail())),
 ('sum(numeric)', 'digit 65535', counted(int8send(1) || nv(1, 0, 0, 0, 65535) || tail())),
 ('sum(numeric)', 'N negative', counted(int8send(-1) || nv(1, 0, 0, 0, 1) || tail())),
 ('sum(numeric)', 'NaN count negative', counted(int8send(1) || nv(1, 0, 0, 0, 1) || tail(0, 1, -1))),
 ('sum(numeric)', 'maxScale -1', counted(int8send(1) || nv(1, 0, 0, 0, 1) || tail(-1))),
 ('sum(numeric)', 'truncated tail', counted(int8send(1) || nv(1, 0, 0, 0, 1) || substring(tail() FROM 2))),
 ('sum(numeric)', 'truncated in digits', counted(int8send(1) || substring(nv(2, 0, 0, 0, 1, 2) FROM 1 FOR 17))),
 ('sum(numeric)', 'only N', counted(int8send(1))),
 ('sum(numeric)', 'trailing byte', counted(int8send(1) || nv(1, 0, 0, 0, 1) || tail() || '\x00'::bytea)),
 ('sum(numeric)', 'empty payload', counted(''::bytea)),
 ('sum(numeric)', 'empty bytea', ''),
 ('sum(numeric)', 'header cut', '\x00000000000001'),
 ('sum(numeric)', 'flag 2', '\x000000000000000102'),
 ('sum(numeric)', 'null flag with bytes', '\x00000000000000010000'),
 ('sum(numeric)', 'count negative', counted(int8send(1) || nv(1, 0, 0, 0, 1) || tail(), -5)),
 ('var_pop(numeric)', 'sumX2 weight INT_MIN', counted(int8send(1) || nv(1, 0, 0, 0, 1) || nv(1, -2147483648, 0, 0, 1) || tail())),
 ('var_pop(numeric)', 'sumX2 dscale 32767', counted(int8send(1) || nv(1, 0, 0, 0, 1) || nv(1, 0, 0, 32767, 1) || tail())),
 ('var_pop(integer)', 'sumX ndigits huge', counted(int8send(1) || nv(1073741823, 0, 0, 0, 1) || nv(0, 0, 0, 0))),
 ('var_pop(integer)', 'sumX2 digit 10000', counted(int8send(1) || nv(1, 0, 0, 0, 1) || nv(1, 0, 0, 0, 10000))),
 ('var_pop(integer)', 'missing sumX2', counted(int8send(1) || nv(1, 0, 0, 0, 1))),
 ('sum(bigint)', 'weight -70000', counted(int8send(1) || nv(1, -70000, 0, 0, 1))),
 ('sum(bigint)', 'trailing sumX2', counted(int8send(1) || nv(1, 0, 0, 0, 1) || nv(0, 0, 0, 0))),
 ('mvinc.approx_count_distinct(anyelement)', 'hll garbage', '\x01020304'),
 ('mvinc.approx_count_distinct(anyelement)', 'hll empty', '');
-- valid states of one aggregate given to another
INSERT INTO bad
SELECT b.agg, 'state of ' || g.agg::text, g.state
  FROM good g, good b
 WHERE (g.agg::text, b.agg::text) IN (('var_pop(numeric)', 'sum(numeric)'), ('sum(numeric)', 'var_pop(numeric)'),
                          ('sum(bigint)', 'var_pop(integer)'), ('var_pop(integer)', 'sum(bigint)'),
                          ('sum(numeric)', 'mvinc.approx_count_distinct(anyelement)'),
                          ('mvinc.approx_count_distinct(anyelement)', 'sum(numeric)'));

-- A statement's error: SQLSTATE, message and detail (or its result)
CREATE FUNCTION try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r text;
  msg text;
  det text;
BEGIN
  EXECUTE stmt INTO r;
  RETURN 'ok: ' || coalesce(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || msg || coalesce(' / ' || nullif(det, ''), '');
END $$;
-- The calls of each function on a state s of aggregate a (g: a valid one)
CREATE FUNCTION calls(a regprocedure, s bytea, g bytea) RETURNS TABLE (fn text, stmt text)
    LANGUAGE sql STABLE AS $$
  SELECT v.fn, format(v.f, a::oid, quote_literal(s::text), quote_literal(g::text),
                      (SELECT prorettype::regtype FROM pg_proc WHERE oid = a),
                      (SELECT proargtypes[0]::regtype FROM pg_proc WHERE oid = a))
    FROM (VALUES
      ('agg_final', 'SELECT mvinc.agg_final(%1$s, %2$s::bytea, NULL::%4$s)::text'),
      ('agg_combine_final', 'SELECT mvinc.agg_combine_final(%1$s, NULL, %2$s::bytea, NULL, NULL::%4$s)::text'),
      ('agg_combine a', 'SELECT md5(mvinc.agg_combine(%1$s, %2$s::bytea, %3$s::bytea))'),
      ('agg_combine b', 'SELECT md5(mvinc.agg_combine(%1$s, %3$s::bytea, %2$s::bytea))'),
      ('agg_merge', 'SELECT md5(mvinc.agg_merge(%1$s, s)) FROM (VALUES (%3$s::bytea), (%2$s::bytea)) v(s)'),
      ('agg_apply', 'SELECT md5(mvinc.agg_apply(%1$s, %2$s::bytea, 1, 1::%5$s))')) v(fn, f)
   WHERE v.fn <> 'agg_apply' OR mvinc.agg_kind(a) = 'retractable'
$$;
GRANT SELECT ON ALL TABLES IN SCHEMA aggstate_crafted TO regress_crafted_user;

SET ROLE regress_crafted_user;
-- Valid states still give the aggregate's result
SELECT g.agg, g.direct,
       mvinc.agg_final(g.agg, g.state, NULL::numeric)::text = g.direct AS final_ok
  FROM good g WHERE g.agg::text NOT LIKE 'mvinc.%' ORDER BY g.agg::text;
SELECT mvinc.agg_final('mvinc.approx_count_distinct(anyelement)', state, NULL::bigint)
  FROM good WHERE agg = 'mvinc.approx_count_distinct(anyelement)'::regprocedure;
-- combined with themselves: sums double, variances stay
SELECT g.agg, mvinc.agg_final(g.agg, mvinc.agg_combine(g.agg, g.state, g.state), NULL::numeric),
       mvinc.agg_combine_final(g.agg, g.state, g.state, NULL, NULL::numeric),
       (SELECT mvinc.agg_final(g.agg, mvinc.agg_merge(g.agg, s), NULL::numeric)
          FROM (VALUES (g.state), (g.state)) v(s)) AS merged
  FROM good g WHERE g.agg::text NOT LIKE 'mvinc.%' ORDER BY g.agg::text;
-- agg_apply: a retraction of what was added
SELECT mvinc.agg_final('sum(numeric)', mvinc.agg_apply('sum(numeric)', state, -1, -3::numeric), NULL::numeric)
  FROM good WHERE agg = 'sum(numeric)'::regprocedure;

-- Every damaged state raises an error from every function (no crash)
SELECT b.agg, b.what, c.fn, try(c.stmt)
  FROM bad b JOIN good g USING (agg), LATERAL calls(b.agg, b.state, g.state) c
 ORDER BY b.agg::text, b.what, c.fn;

-- mvinc's own state aggregates name another aggregate in their states:
-- refused as the aggregate of these functions
SELECT try($$SELECT mvinc.agg_final('mvinc.agg_merge(regprocedure,bytea)',
                '\x000000000000000000000000000000'::bytea, NULL::bytea)::text$$);
SELECT mvinc.agg_kind_detail('mvinc.agg_state(regprocedure,"any")');
RESET ROLE;

-- An aggregate whose deserialization function mvinc does not know (here
-- a stand-in never called): its states only from a superuser
CREATE FUNCTION unknown_deserialize(bytea, internal) RETURNS internal
    LANGUAGE internal STRICT AS 'byteacat';
CREATE AGGREGATE my_avg(numeric) (SFUNC = numeric_avg_accum, STYPE = internal,
    FINALFUNC = numeric_avg, COMBINEFUNC = numeric_avg_combine,
    SERIALFUNC = numeric_avg_serialize, DESERIALFUNC = unknown_deserialize);
-- a user's alias of a known one is checked as that one
CREATE FUNCTION alias_deserialize(bytea, internal) RETURNS internal
    LANGUAGE internal STRICT AS 'numeric_avg_deserialize';
CREATE AGGREGATE my_avg2(numeric) (SFUNC = numeric_avg_accum, STYPE = internal,
    FINALFUNC = numeric_avg, COMBINEFUNC = numeric_avg_combine,
    SERIALFUNC = numeric_avg_serialize, DESERIALFUNC = alias_deserialize);
SET ROLE regress_crafted_user;
SELECT try($$SELECT mvinc.agg_final('aggstate_crafted.my_avg(numeric)', '\x00'::bytea, NULL::numeric)::text$$);
SELECT try($$SELECT mvinc.agg_final('aggstate_crafted.my_avg2(numeric)', state, NULL::numeric)::text
               FROM aggstate_crafted.bad WHERE what = 'reviewer'$$);
SELECT mvinc.agg_final('aggstate_crafted.my_avg2(numeric)', int8send(2) || nv(1, 0, 0, 0, 5) || tail(), NULL::numeric);
RESET ROLE;

-- A view that is not a superuser's may not call the functions over states
-- (refresh would run them as a superuser)
CREATE TABLE src (k int, s bytea);
GRANT SELECT ON src TO regress_crafted_user;
GRANT CREATE ON SCHEMA aggstate_crafted TO regress_crafted_user;
SET ROLE regress_crafted_user;
SELECT try($$CREATE MATERIALIZED VIEW aggstate_crafted.v WITH (mvinc.incremental = true) AS
  SELECT k, mvinc._agg_final_stored('sum(numeric)', s, NULL::numeric) AS f FROM aggstate_crafted.src$$);
RESET ROLE;

DROP SCHEMA aggstate_crafted CASCADE;
DROP OWNED BY regress_crafted_user;
DROP ROLE regress_crafted_user;
