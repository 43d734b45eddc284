-- Retraction: agg_apply starts from a stored state, adds rows with
-- sign > 0 and retracts rows with sign < 0 through the aggregate's
-- inverse transition function.  After deleting and inserting rows, every
-- retractable aggregate's applied state must equal its recomputation.
CREATE SCHEMA aggstate_retract;
SET search_path = aggstate_retract;
SELECT setseed(0.1717);
CREATE TABLE r (id int PRIMARY KEY, g int, i2 int2, i4 int4, i8 int8,
                n numeric, m money, iv interval);
INSERT INTO r
SELECT i, i % 12,
       CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 2000 - 1000)::int2 END,
       CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 2e9 - 1e9)::int4 END,
       CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END,
       CASE WHEN random() < 0.15 THEN NULL ELSE round((random() * 1e6)::numeric, 2) END,
       CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 1e4)::numeric(10,2)::money END,
       CASE WHEN random() < 0.15 THEN NULL ELSE make_interval(days => i % 40, secs => round(random() * 1e5)) END
  FROM generate_series(1, 2000) i;
-- group 11 loses every row, group 12 is new
CREATE TABLE delta AS
SELECT -1 AS sign, * FROM r WHERE g = 11 OR random() < 0.3;
INSERT INTO delta
SELECT 1, i, CASE WHEN i % 3 = 0 THEN 12 ELSE i % 11 END,
       (i % 1000)::int2, i * 1000, i::int8 * 1000000000, round(i / 3.0, 2),
       (i / 4.0)::numeric::money, make_interval(hours => i % 100)
  FROM generate_series(3001, 3400) i;

CREATE TABLE col (typ regtype PRIMARY KEY, expr text);
INSERT INTO col VALUES ('int2', 'i2'), ('int4', 'i4'), ('int8', 'i8'),
  ('numeric', 'n'), ('money', 'm'), ('interval', 'iv'), ('"any"', 'i4');

-- Apply the delta to each group's base state and compare with the
-- aggregate recomputed over the changed table; refused groups (NULL)
-- are recomputed with agg_state, as a refresh would.
CREATE FUNCTION check_retract(agg regprocedure, OUT groups int, OUT bad int, OUT refused int)
LANGUAGE plpgsql AS $f$
DECLARE
  p pg_proc;
  args text;
  cargs text;
  pargs text;
  rt text;
BEGIN
  SELECT * INTO p FROM pg_proc WHERE oid = agg;
  rt := format_type(p.prorettype, NULL);
  SELECT string_agg(c.expr, ', ' ORDER BY ord) INTO args
    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, ord) JOIN col c ON c.typ = a.t;
  cargs := CASE WHEN args IS NULL THEN '' ELSE ', ' || args END;
  pargs := coalesce(args, '*');
  EXECUTE format('CREATE TEMP TABLE base AS SELECT g, mvinc.agg_state(%L%s) s FROM r GROUP BY g', agg, cargs);
  EXECUTE format($q$
    CREATE TEMP TABLE applied AS
    SELECT g, mvinc.agg_apply(%1$L, b.s, d.sign%2$s ORDER BY d.sign DESC) s
      FROM delta d LEFT JOIN base b USING (g) GROUP BY g$q$, agg, cargs);
  SELECT count(*) INTO refused FROM applied WHERE s IS NULL;
  -- the changed table
  CREATE TEMP TABLE r2 AS
    SELECT * FROM r WHERE id NOT IN (SELECT id FROM delta WHERE sign < 0)
    UNION ALL SELECT id, g, i2, i4, i8, n, m, iv FROM delta WHERE sign > 0;
  EXECUTE format($q$
    WITH now AS (
      SELECT g, coalesce(a.s, (SELECT mvinc.agg_state(%1$L%2$s) FROM r2 WHERE r2.g = a.g)) s
        FROM applied a
      UNION ALL
      SELECT g, s FROM base WHERE g NOT IN (SELECT g FROM applied)),
    m AS (SELECT g, mvinc.agg_final(%1$L, s, NULL::%3$s) r FROM now),
    p AS (SELECT g, pg_catalog.%4$I(%5$s) r FROM r2 GROUP BY g
          UNION ALL SELECT 11, pg_catalog.%4$I(%5$s) FROM r2 WHERE false)
    SELECT count(*), count(*) FILTER (WHERE p.r IS DISTINCT FROM m.r)
      FROM p FULL JOIN m USING (g)$q$, agg, cargs, rt, p.proname, pargs)
    INTO groups, bad;
  DROP TABLE base, applied, r2;
END
$f$;

SELECT a.aggfnoid::regprocedure AS agg, c.*
  FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid,
       check_retract(a.aggfnoid) c
 WHERE p.pronamespace = 'pg_catalog'::regnamespace
   AND mvinc.agg_kind(a.aggfnoid) = 'retractable'
   AND NOT EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) t
                    WHERE t NOT IN (SELECT typ FROM col))
 ORDER BY 1::text;

-- Several refreshes in a row: each round deletes and inserts random rows,
-- applies them to the states of the previous round (recomputing refused
-- groups), and compares every group with the recomputed aggregate.
CREATE TABLE w (id int PRIMARY KEY, g int, x int, n numeric, iv interval);
INSERT INTO w SELECT i, i % 7, (random() * 100)::int,
                     CASE WHEN random() < 0.2 THEN NULL ELSE round((random() * 100)::numeric, 1) END,
                     make_interval(mins => i % 50)
  FROM generate_series(1, 500) i;
CREATE TABLE ws AS
SELECT g, mvinc.agg_state('count()') c, mvinc.agg_state('sum(bigint)', x::int8) s8,
       mvinc.agg_state('avg(integer)', x) a4, mvinc.agg_state('sum(interval)', iv) si,
       mvinc.agg_state('var_samp(numeric)', n) vn
  FROM w GROUP BY g;
CREATE FUNCTION round_trip(round int, OUT groups int, OUT bad int, OUT refused int)
LANGUAGE plpgsql AS $f$
BEGIN
  CREATE TEMP TABLE d AS
    SELECT -1 AS sign, * FROM w
     WHERE random() < 0.25 OR (round = 3 AND (g = 6 OR id = 999999));
  INSERT INTO d SELECT 1, 10000 * round + i, CASE WHEN i % 9 = 0 THEN 7 ELSE i % 6 END,
                       (random() * 100)::int, round((random() * 100)::numeric, 1 + i % 2),
                       make_interval(secs => i)
    FROM generate_series(1, 60) i;
  -- round 2 adds the only value with scale 3, round 3 takes it away:
  -- numeric's inverse refuses, the group is recomputed
  INSERT INTO d SELECT 1, 999999, 0, 1, 1.234, '1 min' WHERE round = 2;
  DELETE FROM w WHERE id IN (SELECT id FROM d WHERE sign < 0);
  INSERT INTO w SELECT id, g, x, n, iv FROM d WHERE sign > 0;
  CREATE TEMP TABLE a AS
    SELECT g,
      mvinc.agg_apply('count()', ws.c, d.sign ORDER BY d.sign DESC) c,
      mvinc.agg_apply('sum(bigint)', ws.s8, d.sign, d.x::int8 ORDER BY d.sign DESC) s8,
      mvinc.agg_apply('avg(integer)', ws.a4, d.sign, d.x ORDER BY d.sign DESC) a4,
      mvinc.agg_apply('sum(interval)', ws.si, d.sign, d.iv ORDER BY d.sign DESC) si,
      mvinc.agg_apply('var_samp(numeric)', ws.vn, d.sign, d.n ORDER BY d.sign DESC) vn
    FROM d LEFT JOIN ws USING (g) GROUP BY g;
  SELECT count(*) FILTER (WHERE c IS NULL OR s8 IS NULL OR a4 IS NULL OR si IS NULL OR vn IS NULL)
    INTO refused FROM a;
  -- refused states are recomputed from the source
  UPDATE a SET c = r.c, s8 = r.s8, a4 = r.a4, si = r.si, vn = r.vn
    FROM (SELECT g, mvinc.agg_state('count()') c, mvinc.agg_state('sum(bigint)', x::int8) s8,
                 mvinc.agg_state('avg(integer)', x) a4, mvinc.agg_state('sum(interval)', iv) si,
                 mvinc.agg_state('var_samp(numeric)', n) vn
            FROM w GROUP BY g) r
   WHERE a.g = r.g AND (a.c IS NULL OR a.s8 IS NULL OR a.a4 IS NULL OR a.si IS NULL OR a.vn IS NULL);
  DELETE FROM ws WHERE g IN (SELECT g FROM a);
  INSERT INTO ws SELECT * FROM a;
  SELECT count(*), count(*) FILTER (WHERE
           mvinc.agg_final('count()', ws.c, NULL::int8) IS DISTINCT FROM coalesce(p.c, 0)
        OR mvinc.agg_final('sum(bigint)', ws.s8, NULL::numeric) IS DISTINCT FROM p.s8
        OR mvinc.agg_final('avg(integer)', ws.a4, NULL::numeric) IS DISTINCT FROM p.a4
        OR mvinc.agg_final('sum(interval)', ws.si, NULL::interval) IS DISTINCT FROM p.si
        OR mvinc.agg_final('var_samp(numeric)', ws.vn, NULL::numeric) IS DISTINCT FROM p.vn)
    INTO groups, bad
    FROM ws LEFT JOIN (SELECT g, count(*) c, sum(x::int8) s8, avg(x) a4, sum(iv) si, var_samp(n) vn
                         FROM w GROUP BY g) p USING (g);
  DROP TABLE d, a;
END
$f$;
SELECT r, t.* FROM generate_series(1, 5) r, round_trip(r) t;
-- group 6 lost every row in round 3 and stays empty
SELECT mvinc.agg_final('count()', c, NULL::int8), mvinc.agg_final('sum(interval)', si, NULL::interval)
  FROM ws WHERE g = 6;

-- Retracting the last input resets the state: sum over nothing is NULL,
-- count over nothing is 0.
CREATE TABLE one (sign int, iv interval, m money, x int);
INSERT INTO one VALUES (1, '1 day', '$2.50', 7);
CREATE TABLE st AS
SELECT mvinc.agg_state('sum(interval)', iv) s_iv, mvinc.agg_state('sum(money)', m) s_m,
       mvinc.agg_state('count("any")', x) s_c, mvinc.agg_state('avg(integer)', x) s_a
  FROM one;
SELECT mvinc.agg_final('sum(interval)', mvinc.agg_apply('sum(interval)', s_iv, -1, iv), NULL::interval) AS sum_iv,
       mvinc.agg_final('sum(money)', mvinc.agg_apply('sum(money)', s_m, -1, m), NULL::money) AS sum_m,
       mvinc.agg_final('count("any")', mvinc.agg_apply('count("any")', s_c, -1, x), NULL::int8) AS count,
       mvinc.agg_final('avg(integer)', mvinc.agg_apply('avg(integer)', s_a, -1, x), NULL::numeric) AS avg
  FROM st, one;
-- ... and adding rows again after that works
SELECT mvinc.agg_final('sum(interval)',
         mvinc.agg_apply('sum(interval)', s_iv, d.sign, d.iv), NULL::interval)
  FROM st, (VALUES (-1, interval '1 day'), (1, '3 hours'), (1, NULL)) d(sign, iv);
-- NULL inputs are skipped by a strict inverse; sign 0 and NULL rows are ignored
SELECT mvinc.agg_final('count("any")',
         mvinc.agg_apply('count("any")', s_c, d.sign, d.x), NULL::int8)
  FROM st, (VALUES (-1, NULL::int), (0, 5), (NULL, 5), (1, 9)) d(sign, x);

-- A retraction the state cannot take gives NULL: recompute the group.
-- Retracting from an empty state:
SELECT mvinc.agg_apply('count("any")', NULL, -1, 1) IS NULL AS refused;
-- numeric cannot forget the only input with the largest scale:
CREATE TABLE ns AS
SELECT mvinc.agg_state('sum(numeric)', v) s FROM (VALUES (1.5), (2), (3)) v(v);
SELECT mvinc.agg_apply('sum(numeric)', s, -1, 1.5) IS NULL AS refused FROM ns;
SELECT mvinc.agg_final('sum(numeric)', mvinc.agg_apply('sum(numeric)', s, -1, 2::numeric), NULL::numeric) FROM ns;

-- The counted state format: input count, then the state
SELECT mvinc.agg_state('count()') FROM generate_series(1, 3);
SELECT mvinc.agg_state('sum(interval)', iv) FROM one WHERE false;
SELECT mvinc.agg_apply('sum(interval)', s_iv, -1, iv) FROM st, one;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_retract CASCADE;
RESET client_min_messages;
