-- Aggregate states: refusals and their messages (errcode, errmsg,
-- errdetail naming the construct, errhint with the fix).
CREATE SCHEMA aggstate_errors;
SET search_path = aggstate_errors;
CREATE TABLE t (x int, s text);
INSERT INTO t VALUES (1, 'a'), (2, 'b');

-- The SQLSTATE a statement fails with.
CREATE FUNCTION sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;

-- A user aggregate with an internal state and no serialization functions.
CREATE AGGREGATE my_avg(numeric) (SFUNC = numeric_avg_accum, STYPE = internal,
    FINALFUNC = numeric_avg, COMBINEFUNC = numeric_avg_combine);

-- What is supported and why not
SELECT f, mvinc.agg_kind(f), mvinc.agg_kind_detail(f)
  FROM (VALUES ('string_agg(text,text)'::regprocedure),
               ('array_agg(anynonarray)'), ('percentile_cont(float8,float8)'),
               ('rank("any")'), ('max(anyarray)'), ('my_avg(numeric)'),
               ('abs(integer)'), ('sum(integer)'), ('sum(bigint)')) v(f);

-- Unsupported aggregates are refused by every function
SELECT mvinc.agg_state('string_agg(text,text)', s, ',') FROM t;
SELECT mvinc.agg_state('percentile_cont(float8,float8)', 0.5, x::float8) FROM t;
SELECT mvinc.agg_state('rank("any")', x) FROM t;
SELECT mvinc.agg_merge('max(anyarray)', NULL) FROM t;
SELECT mvinc.agg_final('my_avg(numeric)', NULL, NULL::numeric);
SELECT mvinc.agg_combine('abs(integer)', '\x00', '\x00');
SELECT sqlstate_of($$SELECT mvinc.agg_state('string_agg(text,text)', s, ',') FROM t$$),
       sqlstate_of($$SELECT mvinc.agg_combine('abs(integer)', '\x00', '\x00')$$);

-- Retraction of an aggregate without a usable inverse
SELECT mvinc.agg_apply('max(integer)', NULL, -1, x) FROM t;
SELECT mvinc.agg_apply('sum(integer)', NULL, 1, x) FROM t;
SELECT sqlstate_of($$SELECT mvinc.agg_apply('max(integer)', NULL, -1, x) FROM t$$);

-- Arguments that do not fit the aggregate
SELECT mvinc.agg_state('sum(bigint)', x) FROM t;
SELECT mvinc.agg_state('sum(integer)', x, x) FROM t;
SELECT mvinc.agg_state('count()', x) FROM t;
SELECT mvinc.agg_state('max(text)', 'literal') FROM t;
SELECT mvinc.agg_state('sum(integer)', VARIADIC ARRAY[x]) FROM t;
SELECT mvinc.agg_state(NULL, x) FROM t;
SELECT mvinc.agg_state(CASE WHEN x = 1 THEN 'sum(integer)'::regprocedure ELSE 'max(integer)' END, x) FROM t;
SELECT sqlstate_of($$SELECT mvinc.agg_state('sum(bigint)', x) FROM t$$),
       sqlstate_of($$SELECT mvinc.agg_state('sum(integer)', x, x) FROM t$$);
-- binary-coercible arguments are fine (varchar for text)
SELECT mvinc.agg_final('max(text)', mvinc.agg_state('max(text)', s::varchar), NULL::text) FROM t;

-- A result type that is not the aggregate's
SELECT mvinc.agg_final('sum(integer)', NULL, NULL::int);
SELECT sqlstate_of($$SELECT mvinc.agg_final('sum(integer)', NULL, NULL::int)$$);

-- Damaged states
SELECT mvinc.agg_final('sum(integer)', '\x0001'::bytea, NULL::bigint);
SELECT mvinc.agg_final('count()', '\x0001'::bytea, NULL::bigint);
SELECT mvinc.agg_final('count()', '\x000000000000000102'::bytea, NULL::bigint);
SELECT mvinc.agg_final('sum(integer)', '\x000000000000000100'::bytea, NULL::bigint);

-- Privileges: the caller needs EXECUTE on the aggregate
CREATE AGGREGATE my_sum(int) (SFUNC = int4_sum, STYPE = int8, COMBINEFUNC = int8pl);
REVOKE EXECUTE ON FUNCTION my_sum(int) FROM PUBLIC;
CREATE ROLE regress_aggstate_user;
GRANT USAGE ON SCHEMA aggstate_errors, mvinc TO regress_aggstate_user;
GRANT SELECT ON t TO regress_aggstate_user;
SET ROLE regress_aggstate_user;
SELECT mvinc.agg_state('aggstate_errors.my_sum(int)', x) FROM aggstate_errors.t;
SELECT mvinc.agg_final('sum(integer)', mvinc.agg_state('sum(integer)', x), NULL::bigint) FROM aggstate_errors.t;
RESET ROLE;
GRANT EXECUTE ON FUNCTION my_sum(int) TO regress_aggstate_user;
SET ROLE regress_aggstate_user;
SELECT mvinc.agg_final('aggstate_errors.my_sum(int)',
                       mvinc.agg_state('aggstate_errors.my_sum(int)', x), NULL::bigint) FROM aggstate_errors.t;
RESET ROLE;

-- agg_combine_final takes its types from the result's sample, checked as
-- agg_final checks it, whatever the last (collation) argument's type: a
-- result of another type than the aggregate's is refused, not copied as
-- that type (an enum's oid read as a pointer crashed the server; an
-- array's pointer came back as an integer)
CREATE TYPE hue AS ENUM ('red', 'green');
SET ROLE regress_aggstate_user;
SELECT mvinc.agg_combine_final('max(anyenum)', '\x677265656e', NULL, NULL, NULL::text, NULL::aggstate_errors.hue);
SELECT mvinc.agg_combine_final('max(anyarray)', mvinc.agg_state('max(anyarray)', ARRAY['s']::text[]),
                               NULL, NULL, NULL::int8, NULL::text[]);
SELECT mvinc.agg_combine_final('max(anyarray)', mvinc.agg_state('max(anyarray)', ARRAY['s']::text[]),
                               NULL, NULL, NULL::text[], NULL::int8);
SELECT mvinc.agg_combine_final('max(anyenum)', mvinc.agg_state('max(anyenum)', 'green'::aggstate_errors.hue),
                               NULL, NULL, NULL::aggstate_errors.hue, NULL::text);
RESET ROLE;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_errors CASCADE;
DROP OWNED BY regress_aggstate_user;
DROP ROLE regress_aggstate_user;
RESET client_min_messages;
