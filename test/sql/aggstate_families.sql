-- Every built-in aggregate over the common types, checked against itself:
-- rows split into random chunks, one state per (group, chunk), states
-- merged per group (agg_merge), combined pairwise (agg_combine) and over
-- the whole table, then finished (agg_final), must equal the plain
-- aggregate.  Floating-point results may differ in the last digits
-- because the summation order differs; they are compared relatively.
CREATE SCHEMA aggstate_families;
SET search_path = aggstate_families;
SELECT setseed(0.4242);
CREATE TABLE src (g int, chunk int, i2 int2, i4 int4, i8 int8, n numeric,
                  f4 float4, f8 float8, y float8, m money, iv interval,
                  d date, ts timestamp, tx text, b bool);
INSERT INTO src
SELECT i % 10, 1 + floor(random() * 7)::int,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 2000 - 1000)::int2 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 2e9 - 1e9)::int4 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 1e6)::numeric, (i % 5)) END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 100)::float4 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() * 1e6 - 5e5 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() * 10 + i END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1e4)::numeric(10,2)::money END,
       CASE WHEN random() < 0.1 THEN NULL ELSE make_interval(days => i % 40, secs => random() * 1e5) END,
       CASE WHEN random() < 0.1 THEN NULL ELSE date '2000-01-01' + (random() * 9000)::int END,
       CASE WHEN random() < 0.1 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '9000 days' END,
       CASE WHEN random() < 0.1 THEN NULL ELSE md5(i::text) END,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() < 0.8 END
  FROM generate_series(1, 3000) i;
-- a group of only NULLs and a group of one row
INSERT INTO src (g, chunk) SELECT 10, c FROM generate_series(1, 7) c;
INSERT INTO src VALUES (11, 3, 1, 2, 3, 4.5, 5.5, 6.5, 7.5, 8.5, '9 s', '2020-02-02', '2020-02-02 02:02', 'one', true);

-- The column used for each argument type.
CREATE TABLE col (typ regtype PRIMARY KEY, expr text);
INSERT INTO col VALUES ('int2', 'i2'), ('int4', 'i4'), ('int8', 'i8'),
  ('numeric', 'n'), ('float4', 'f4'), ('float8', 'f8'), ('money', 'm'),
  ('interval', 'iv'), ('date', 'd'), ('timestamp', 'ts'), ('text', 'tx'),
  ('bool', 'b'), ('"any"', 'i4');

-- Compare one aggregate's merged states with the plain aggregate.
CREATE FUNCTION check_agg(agg regprocedure, OUT groups int, OUT merge_bad int,
                          OUT combine_bad int, OUT total_ok bool, OUT empty_ok bool)
LANGUAGE plpgsql AS $f$
DECLARE
  p pg_proc;
  args text;
  fname text;
  rt text;
  pargs text;
  same text;
BEGIN
  SELECT * INTO p FROM pg_proc WHERE oid = agg;
  fname := 'pg_catalog.' || quote_ident(p.proname);
  rt := format_type(p.prorettype, NULL);
  SELECT string_agg(CASE WHEN p.pronargs = 2 AND ord = 1 AND c.expr = 'f8' THEN 'y' ELSE c.expr END, ', ' ORDER BY ord)
    INTO args
    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, ord) JOIN col c ON c.typ = a.t;
  args := coalesce(args, '');
  -- count(*) is spelled 'count()' for mvinc, with a star for the parser
  pargs := CASE WHEN args = '' THEN '*' ELSE args END;
  IF p.prorettype IN ('float4'::regtype, 'float8'::regtype) THEN
    same := format('(a.r IS NULL AND b.r IS NULL) OR a.r = b.r OR abs(a.r - b.r) <= %s * greatest(abs(a.r), abs(b.r))',
                   CASE WHEN p.prorettype = 'float4'::regtype THEN '1e-5' ELSE '1e-9' END);
  ELSE
    same := 'a.r IS NOT DISTINCT FROM b.r';
  END IF;
  EXECUTE format($q$
    CREATE TEMP TABLE st AS
      SELECT g, chunk, mvinc.agg_state(%1$L %2$s) s FROM src GROUP BY g, chunk$q$,
    agg, CASE WHEN args = '' THEN '' ELSE ', ' || args END);
  EXECUTE format($q$
    CREATE TEMP TABLE plain AS SELECT g, %1$s(%2$s) r FROM src GROUP BY g$q$, fname, pargs);
  EXECUTE format($q$
    WITH m AS (SELECT g, mvinc.agg_final(%1$L, mvinc.agg_merge(%1$L, s), NULL::%2$s) r FROM st GROUP BY g)
    SELECT count(*), count(*) FILTER (WHERE NOT coalesce(%3$s, false))
      FROM plain a FULL JOIN m b USING (g)$q$, agg, rt, same)
    INTO groups, merge_bad;
  EXECUTE format($q$
    WITH lo AS (SELECT g, mvinc.agg_merge(%1$L, s) s FROM st WHERE chunk <= 3 GROUP BY g),
         hi AS (SELECT g, mvinc.agg_merge(%1$L, s) s FROM st WHERE chunk > 3 GROUP BY g),
         m AS (SELECT g, mvinc.agg_final(%1$L, mvinc.agg_combine(%1$L, lo.s, hi.s), NULL::%2$s) r
                 FROM lo FULL JOIN hi USING (g))
    SELECT count(*) FILTER (WHERE NOT coalesce(%3$s, false))
      FROM plain a FULL JOIN m b USING (g)$q$, agg, rt, same)
    INTO combine_bad;
  EXECUTE format($q$
    SELECT coalesce(%4$s, false)
      FROM (SELECT %3$s(%5$s) r FROM src) a,
           (SELECT mvinc.agg_final(%1$L, mvinc.agg_merge(%1$L, s), NULL::%2$s) r FROM st) b$q$,
    agg, rt, fname, same, pargs)
    INTO total_ok;
  EXECUTE format($q$
    SELECT coalesce(%4$s, false)
      FROM (SELECT %3$s(%5$s) r FROM src WHERE false) a,
           (SELECT mvinc.agg_final(%1$L, (SELECT mvinc.agg_merge(%1$L, s) FROM st WHERE false), NULL::%2$s) r) b$q$,
    agg, rt, fname, same, pargs)
    INTO empty_ok;
  DROP TABLE st;
  DROP TABLE plain;
END
$f$;

-- The aggregates under test: every plain built-in aggregate whose
-- arguments all have a column above.
CREATE TEMP VIEW under_test AS
SELECT a.aggfnoid::regprocedure AS agg, mvinc.agg_kind(a.aggfnoid) AS kind
  FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
 WHERE a.aggkind = 'n' AND p.pronamespace = 'pg_catalog'::regnamespace
   AND NOT EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) t
                    WHERE t NOT IN (SELECT typ FROM col));

SELECT kind, count(*) FROM under_test GROUP BY kind ORDER BY kind;
SELECT agg, kind, mvinc.agg_kind_detail(agg) FROM under_test WHERE kind <> 'retractable' ORDER BY agg::text;

-- Every supported aggregate: no mismatch is expected anywhere.
SELECT u.agg, c.*
  FROM under_test u, check_agg(u.agg) c
 WHERE u.kind <> 'unsupported'
 ORDER BY u.agg::text;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_families CASCADE;
RESET client_min_messages;
