-- Colfile Aggregate: whole-table aggregates of a colfile table computed over
-- decoded columns.  Every query is run with the node and without it (an
-- Aggregate over the sequential scan) and on a heap twin: the answers must
-- be identical, and the node must be used where it applies.
SET mvinc.colfile_rows_per_group = 1000;
SELECT setseed(0.42);

CREATE TABLE ag (id int, a int2, b int4, c int8, f4 float4, f8 float8,
                 d date, ts timestamp, tz timestamptz, s text, n numeric) USING colfile;
CREATE TABLE ag_heap (LIKE ag) USING heap;

CREATE FUNCTION ag_fill(lo int, hi int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ag
  SELECT g,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 60000 - 30000)::int2 END,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END,
         CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1e6 - 5e5)::float4 END,
         CASE WHEN random() < 0.1 THEN NULL ELSE random() * 1e12 - 5e11 END,
         CASE WHEN random() < 0.1 THEN NULL ELSE date '2000-01-01' + (random() * 20000)::int END,
         CASE WHEN random() < 0.1 THEN NULL ELSE timestamp '2000-01-01' + random() * interval '9000 days' END,
         CASE WHEN random() < 0.1 THEN NULL ELSE timestamptz '2000-01-01 UTC' + random() * interval '9000 days' END,
         CASE WHEN random() < 0.1 THEN NULL ELSE md5(g::text) END,
         g / 7.0
  FROM generate_series(lo, hi) g
$$;

-- Runs q with the node on and off and on the heap twin (q names the
-- table as ag; the twin is read as ag_heap): 'same' or what differed, and
-- whether the node was used.  Float sums depend on the order of the rows,
-- which differs between the twins after updates: with by_order they are
-- compared between the node and the row-at-a-time scan only.
CREATE FUNCTION ag_check(q text, by_order boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  node boolean := false;
  r_on text; r_off text; r_heap text;
  line text;
BEGIN
  SET LOCAL mvinc.colfile_aggregate_scan = on;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    node := node OR line LIKE '%Colfile Aggregate%';
  END LOOP;
  EXECUTE format('SELECT array_agg(x::text) FROM (%s) x', q) INTO r_on;
  SET LOCAL mvinc.colfile_aggregate_scan = off;
  EXECUTE format('SELECT array_agg(x::text) FROM (%s) x', q) INTO r_off;
  SET LOCAL mvinc.colfile_aggregate_scan = on;
  EXECUTE format('SELECT array_agg(x::text) FROM (%s) x', replace(q, 'FROM ag', 'FROM ag_heap')) INTO r_heap;
  IF r_on IS DISTINCT FROM r_off THEN
    RETURN format('DIFFERENT: node %s, row at a time %s', r_on, r_off);
  END IF;
  IF r_on IS DISTINCT FROM r_heap AND NOT by_order THEN
    RETURN format('DIFFERENT from heap: %s, heap %s', r_on, r_heap);
  END IF;
  RETURN CASE WHEN node THEN 'same, node' ELSE 'same, no node' END;
END $$;

CREATE TABLE ag_queries (n serial, q text, by_order boolean GENERATED ALWAYS AS (q ~ 'sum\(f|avg\(f') STORED);
INSERT INTO ag_queries (q) VALUES
  ('SELECT count(*) FROM ag'),
  ('SELECT count(*), count(a), count(s), count(n), count(tz) FROM ag'),
  ('SELECT sum(a), sum(b), sum(c) FROM ag'),
  ('SELECT avg(a), avg(b), avg(c) FROM ag'),
  ('SELECT min(a), max(a), min(b), max(b), min(c), max(c) FROM ag'),
  ('SELECT min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM ag'),
  ('SELECT sum(f4), min(f4), max(f4), sum(f8), min(f8), max(f8) FROM ag'),
  ('SELECT sum(b) / nullif(count(*), 0) AS ratio, round(avg(a), 2) AS r2, max(b)::int8 - min(b) AS spread FROM ag'),
  ('SELECT count(*) FROM ag HAVING count(*) > 10'),
  ('SELECT sum(b) FROM ag HAVING sum(b) IS NULL'),
  ('SELECT sum(b), count(*) FROM ag ORDER BY 1 LIMIT 1'),
  -- conditions "column op value" and "column IS [NOT] NULL"
  ('SELECT sum(b), count(*) FROM ag WHERE id > 10'),
  ('SELECT sum(c), max(d), count(s) FROM ag WHERE id BETWEEN 1500 AND 4200 AND b <> 0 AND a IS NOT NULL'),
  ('SELECT count(*), sum(a) FROM ag WHERE 2000 >= id AND s > ''8'' AND s LIKE ''%a%'''),
  ('SELECT count(*), min(f8) FROM ag WHERE b IS NULL'),
  ('SELECT count(*), sum(b) FROM ag WHERE tz < now() AND d >= date ''2010-01-01'''),
  ('SELECT count(*), sum(b) FROM ag WHERE b > NULL::int'),
  ('SELECT count(*), avg(b) FROM ag WHERE id > (SELECT 5000)'),
  ('SELECT count(*) FROM ag WHERE id < 0'),
  -- a value is computed when a row first reaches its condition, as a scan's
  ('SELECT count(*) FROM ag WHERE id < 0 AND b > (SELECT 1 / (random() * 0)::int)'),
  -- not for the node: it must decline, and the answers stay the same
  ('SELECT sum(b) FROM ag WHERE id > 10 OR a > 0'),
  ('SELECT sum(b) FROM ag WHERE id + 1 > 10'),
  ('SELECT sum(b) FROM ag WHERE id > random() * 0'),
  ('SELECT sum(b) FROM ag WHERE id IN (SELECT id FROM ag WHERE id < 100)'),
  ('SELECT a % 3 AS k, count(*) FROM ag GROUP BY 1 ORDER BY 1'),
  ('SELECT count(DISTINCT a) FROM ag'),
  ('SELECT sum(b) FILTER (WHERE a > 0) FROM ag'),
  ('SELECT sum(n), avg(f8) FROM ag'),
  ('SELECT sum(b + 1) FROM ag'),
  ('SELECT string_agg(s, '','' ORDER BY id) IS NOT NULL FROM ag');

-- an empty table
SELECT n, ag_check(q, by_order) FROM ag_queries ORDER BY n;

-- rows in several groups, some groups with deletions, column files from
-- updates in place, a whole group deleted
SELECT ag_fill(1, 5500);
INSERT INTO ag_heap SELECT * FROM ag;
DELETE FROM ag WHERE id % 7 = 3 OR id BETWEEN 2001 AND 3000;
DELETE FROM ag_heap WHERE id % 7 = 3 OR id BETWEEN 2001 AND 3000;
UPDATE ag SET b = b / 2, f8 = f8 * 3 WHERE id % 5 = 1;
UPDATE ag_heap SET b = b / 2, f8 = f8 * 3 WHERE id % 5 = 1;
SELECT n, ag_check(q, by_order) FROM ag_queries ORDER BY n;
-- EXPLAIN shows the conditions; groups their min/max refute are skipped
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT count(*), sum(b) FROM ag WHERE id > 4600 AND 5200 > id AND s IS NOT NULL;

-- the transaction's own rows still buffered, its own deletions, and a
-- rolled-back savepoint
BEGIN;
SELECT ag_fill(6001, 6300);
INSERT INTO ag_heap SELECT * FROM ag WHERE id > 6000;
SAVEPOINT s;
DELETE FROM ag WHERE id < 100;
ROLLBACK TO s;
DELETE FROM ag WHERE id BETWEEN 100 AND 200;
DELETE FROM ag_heap WHERE id BETWEEN 100 AND 200;
SELECT n, ag_check(q, by_order) FROM ag_queries WHERE n <= 20 ORDER BY n;
COMMIT;

-- NaN, infinities, signed zeros and a column that is all NULL
CREATE TABLE ag_special (f4 float4, f8 float8, d date, e int) USING colfile;
INSERT INTO ag_special VALUES ('NaN', 1, 'infinity', NULL), ('-0', '-Infinity', '-infinity', NULL),
  (0.0, 'NaN', '2020-01-01', NULL), ('Infinity', 0.0, NULL, NULL), (1, '-0', NULL, NULL);
SET mvinc.colfile_aggregate_scan = on;
EXPLAIN (COSTS OFF) SELECT sum(f4), min(f4), max(f4), sum(f8), min(f8), max(f8), min(d), max(d), sum(e), avg(e), min(e), count(e) FROM ag_special;
SELECT sum(f4), min(f4), max(f4), sum(f8), min(f8), max(f8), min(d), max(d), sum(e), avg(e), min(e), count(e) FROM ag_special;
SET mvinc.colfile_aggregate_scan = off;
SELECT sum(f4), min(f4), max(f4), sum(f8), min(f8), max(f8), min(d), max(d), sum(e), avg(e), min(e), count(e) FROM ag_special;
RESET mvinc.colfile_aggregate_scan;
-- a signed zero tie: the later value wins, as in float8smaller/larger
SELECT min(f8)::text, max(f8)::text FROM (VALUES (0.0::float8), ('-0'::float8)) v(f8);
TRUNCATE ag_special;
INSERT INTO ag_special (f4, f8) VALUES (0.0, 0.0), ('-0', '-0');
SELECT min(f4)::text, max(f4)::text, min(f8)::text, max(f8)::text FROM ag_special;
INSERT INTO ag_special (f4, f8) VALUES (0.0, 0.0);
SELECT min(f4)::text, max(f4)::text, min(f8)::text, max(f8)::text FROM ag_special;

-- a value that fails is an error once a row reaches it
SELECT count(*) FROM ag_special WHERE f8 > 0 AND e > (SELECT 1 / (random() * 0)::int);
SELECT count(*) FROM ag_special WHERE e > (SELECT 1 / (random() * 0)::int);
SET mvinc.colfile_aggregate_scan = off;
SELECT count(*) FROM ag_special WHERE e > (SELECT 1 / (random() * 0)::int);
RESET mvinc.colfile_aggregate_scan;

-- a float sum that overflows fails as the built-in one does
INSERT INTO ag_special (f8) VALUES (1.5e308), (1.5e308);
SELECT sum(f8) FROM ag_special;
SET mvinc.colfile_aggregate_scan = off;
SELECT sum(f8) FROM ag_special;
RESET mvinc.colfile_aggregate_scan;
-- sum and avg of int8 past 64 bits
CREATE TABLE ag_big (c int8) USING colfile;
INSERT INTO ag_big SELECT 9223372036854775807 FROM generate_series(1, 3);
INSERT INTO ag_big VALUES (-9223372036854775808);
SELECT sum(c), avg(c) FROM ag_big;
SET mvinc.colfile_aggregate_scan = off;
SELECT sum(c), avg(c) FROM ag_big;
RESET mvinc.colfile_aggregate_scan;

-- every way to reach it: a view, an inlined SQL function, a prepared
-- statement (generic plan), a cursor, a scalar subquery rescanned per row
CREATE VIEW ag_v AS SELECT * FROM ag;
EXPLAIN (COSTS OFF) SELECT sum(b) FROM ag_v;
-- conditions through a view, a subquery and a CTE (the table is not
-- range-table entry 1 there: EXPLAIN's text of them failed to plan)
EXPLAIN (COSTS OFF) SELECT sum(b) FROM ag_v WHERE b > 10;
SELECT (SELECT sum(b) FROM ag_v WHERE b > 10) = (SELECT sum(b) FROM ag_heap WHERE b > 10) AS view_same;
SELECT (SELECT count(*) FROM (SELECT * FROM ag) s WHERE b > 10) = (SELECT count(*) FROM ag_heap WHERE b > 10) AS subquery_same;
WITH w AS (SELECT 1) SELECT count(*) = (SELECT count(*) FROM ag_heap WHERE b > 3) AS cte_same FROM w, ag WHERE b > 3;
SELECT (SELECT sum(b) FROM ag_v) = (SELECT sum(b) FROM ag_heap) AS view_same;
CREATE FUNCTION ag_sum() RETURNS TABLE (s bigint) LANGUAGE sql STABLE AS $$ SELECT sum(b) FROM ag $$;
SELECT (SELECT s FROM ag_sum()) = (SELECT sum(b) FROM ag_heap) AS function_same;
SET plan_cache_mode = force_generic_plan;
PREPARE ag_p(int) AS SELECT count(*) + $1 FROM ag WHERE id > $1 - 1000000 HAVING count(*) > $1;
EXPLAIN (COSTS OFF) EXECUTE ag_p(1);
EXECUTE ag_p(1);
INSERT INTO ag (id, b) VALUES (-1, 5);
EXECUTE ag_p(1);
DELETE FROM ag WHERE id = -1;
EXECUTE ag_p(1000000);
RESET plan_cache_mode;
BEGIN;
DECLARE ag_c CURSOR FOR SELECT count(*), sum(c) FROM ag;
FETCH ag_c;
FETCH ag_c;
COMMIT;
EXPLAIN (COSTS OFF) SELECT g, (SELECT count(*) FROM ag HAVING count(*) > g) FROM generate_series(4000, 4002) g;
SELECT g, (SELECT count(*) FROM ag HAVING count(*) > g) = (SELECT count(*) FROM ag_heap) AS same
  FROM (VALUES (1), (3500), (100000)) v(g);

-- statistics count what a sequential scan counts: rows read, not passed
BEGIN;
SELECT seq_scan AS scans, seq_tup_read AS rows_read FROM pg_stat_xact_user_tables WHERE relid = 'ag'::regclass \gset
SELECT count(*) FROM ag WHERE id < 1000 AND b IS NOT NULL;
SELECT seq_scan - :scans AS scans, seq_tup_read - :rows_read AS rows_read FROM pg_stat_xact_user_tables WHERE relid = 'ag'::regclass;
SET LOCAL mvinc.colfile_aggregate_scan = off;
SELECT seq_scan AS scans, seq_tup_read AS rows_read FROM pg_stat_xact_user_tables WHERE relid = 'ag'::regclass \gset
SELECT count(*) FROM ag WHERE id < 1000 AND b IS NOT NULL;
SELECT seq_scan - :scans AS scans, seq_tup_read - :rows_read AS rows_read FROM pg_stat_xact_user_tables WHERE relid = 'ag'::regclass;
COMMIT;

-- a correlated subquery: its conditions' values change per outer row
CREATE TABLE ag_outer (x int);
INSERT INTO ag_outer VALUES (1), (2), (NULL), (3);
EXPLAIN (COSTS OFF) SELECT x, (SELECT count(*) FROM ag WHERE b > x * 1000 AND id < x * 1000) FROM ag_outer;
SELECT x, (SELECT count(*) FROM ag WHERE b > x * 1000 AND id < x * 1000) = (SELECT count(*) FROM ag_heap WHERE b > x * 1000 AND id < x * 1000) AS same
  FROM ag_outer ORDER BY x;
DROP TABLE ag_outer;

-- row-level security and privileges as the sequential scan gives them
CREATE ROLE ag_reader;
GRANT CREATE ON SCHEMA public TO ag_reader;
GRANT SELECT (id, b) ON ag TO ag_reader;
GRANT SELECT ON ag_heap TO ag_reader;
SET ROLE ag_reader;
SELECT sum(b) IS NOT NULL, count(*) > 0, count(id) > 0 FROM ag;
SELECT sum(c) FROM ag;  -- fails: no privilege on c
RESET ROLE;
ALTER TABLE ag ENABLE ROW LEVEL SECURITY;
CREATE POLICY ag_pol ON ag USING (id < 300);
SET ROLE ag_reader;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ag;
SELECT count(*), sum(b) = (SELECT sum(b) FROM ag_heap WHERE id < 300) FROM ag;
-- the policy's condition is applied before the query's: a leaky function
-- of the query never sees a hidden row
CREATE FUNCTION ag_leaky_lt(int, int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT COST 0.0000001 AS
  $$ BEGIN IF $1 >= 300 THEN RAISE NOTICE 'saw hidden row %', $1; END IF; RETURN $1 < $2; END $$;
CREATE OPERATOR <<<< (FUNCTION = ag_leaky_lt, LEFTARG = int, RIGHTARG = int);
EXPLAIN (COSTS OFF) SELECT count(*) FROM ag WHERE id <<<< 250;
SELECT count(*) FROM ag WHERE id <<<< 250;
-- a cheap leakproof condition of the query may go before the policy's
-- (order_qual_clauses does it): the policy's operator then sees only
-- the rows it passes, on both paths
RESET ROLE;
CREATE FUNCTION ag_noisy_lt(int, int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT COST 1000 AS
  $$ BEGIN IF $1 = 250 THEN RAISE EXCEPTION 'the policy saw row %', $1; END IF; RETURN $1 < $2; END $$;
CREATE OPERATOR <% (FUNCTION = ag_noisy_lt, LEFTARG = int, RIGHTARG = int);
DROP POLICY ag_pol ON ag;
CREATE POLICY ag_pol ON ag USING (id <% 300);
SET ROLE ag_reader;
SELECT count(*) FROM ag WHERE id = 8;
SET mvinc.colfile_aggregate_scan = off;
SELECT count(*) FROM ag WHERE id = 8;
RESET mvinc.colfile_aggregate_scan;
RESET ROLE;
DROP POLICY ag_pol ON ag;
CREATE POLICY ag_pol ON ag USING (id < 300);
DROP OPERATOR <% (int, int);
DROP FUNCTION ag_noisy_lt(int, int);
SET ROLE ag_reader;
DROP OPERATOR <<<< (int, int);
DROP FUNCTION ag_leaky_lt(int, int);
RESET ROLE;
DROP POLICY ag_pol ON ag;
ALTER TABLE ag DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON ag, ag_heap FROM ag_reader;
REVOKE CREATE ON SCHEMA public FROM ag_reader;
DROP ROLE ag_reader;

-- after VACUUM (compacted groups, delete vectors) and after a new column
VACUUM ag;
ALTER TABLE ag ADD COLUMN z int DEFAULT 7;
ALTER TABLE ag_heap ADD COLUMN z int DEFAULT 7;
INSERT INTO ag_queries (q) VALUES ('SELECT sum(z), count(z), min(z) FROM ag');
SELECT n, ag_check(q, by_order) FROM ag_queries ORDER BY n;

-- few rows to skip per group (an eighth or less: deletions, rows a
-- condition refuses, NULLs among them): integer sums and counts fold the
-- group whole and take those rows back; the other aggregates skip them
TRUNCATE ag;
TRUNCATE ag_heap;
ALTER TABLE ag DROP COLUMN z;
ALTER TABLE ag_heap DROP COLUMN z;
SELECT ag_fill(1, 5500);
INSERT INTO ag_heap SELECT * FROM ag;
DELETE FROM ag WHERE id % 23 = 5 OR id IN (1, 1000, 1001, 5500);
DELETE FROM ag_heap WHERE id % 23 = 5 OR id IN (1, 1000, 1001, 5500);
UPDATE ag SET b = b / 2 WHERE id % 31 = 1;
UPDATE ag_heap SET b = b / 2 WHERE id % 31 = 1;
SELECT n, ag_check(q, by_order) FROM ag_queries WHERE n <> 31 ORDER BY n;
INSERT INTO ag_queries (q) VALUES
  ('SELECT count(a), sum(a), avg(a), count(c), sum(c), avg(c), min(b), max(c), count(*) FROM ag WHERE id > 40'),
  ('SELECT sum(b), count(b), avg(b) FROM ag WHERE id <> 17 AND id <> 2017');
SELECT n, ag_check(q, by_order) FROM ag_queries WHERE n > 31 ORDER BY n;
VACUUM ag;
SELECT n, ag_check(q, by_order) FROM ag_queries WHERE n <> 31 ORDER BY n;

DROP FUNCTION ag_sum();
DROP VIEW ag_v;
DROP TABLE ag, ag_heap, ag_special, ag_big, ag_queries;
DROP FUNCTION ag_check(text, boolean);
DROP FUNCTION ag_fill(int, int);
