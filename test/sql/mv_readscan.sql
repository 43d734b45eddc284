-- The plan node of a view read (Custom Scan "Mvinc View Read"): costed as
-- the arm it expects, deciding per execution which arm runs, and showing it
-- in EXPLAIN.  Every answer is compared with the defining query.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

CREATE FUNCTION rs_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;

-- the node's own lines of EXPLAIN (ANALYZE) of a statement
CREATE FUNCTION rs_node(stmt text, run bool DEFAULT true) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE %s, COSTS OFF, TIMING OFF, SUMMARY OFF) %s',
                             CASE WHEN run THEN 'true' ELSE 'false' END, stmt) LOOP
    IF line ~ '(Mvinc View Read|View:|Candidate Paths|Expected Path|  Path:|Delta State Rows|Replacing Rows)' THEN
      RETURN NEXT regexp_replace(line, '^\s*(->\s*)?', '');
    END IF;
  END LOOP;
END $$;

-- the planner's row estimate for the whole view, against its row count
CREATE FUNCTION rs_estimate_ok(v regclass) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  plan json;
  n bigint;
BEGIN
  EXECUTE format('EXPLAIN (FORMAT JSON) SELECT * FROM %s', v) INTO plan;
  EXECUTE format('SELECT count(*) FROM %s', v) INTO n;
  RETURN (plan->0->'Plan'->>'Plan Rows')::float8 BETWEEN n * 0.5 AND n * 2 + 10;
END $$;

-- the planner's total cost of a statement
CREATE FUNCTION rs_cost(stmt text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || stmt INTO plan;
  RETURN (plan->0->'Plan'->>'Total Cost')::float8;
END $$;

CREATE TABLE rs_src (id int PRIMARY KEY, g int NOT NULL, x numeric NOT NULL);
INSERT INTO rs_src SELECT i, i % 50, i FROM generate_series(1, 20000) i;
ANALYZE rs_src;
CREATE MATERIALIZED VIEW rs_v WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS s, avg(x) AS a FROM rs_src GROUP BY g;
ANALYZE rs_v;

-- a plain EXPLAIN lists the candidates and the expected path, and runs none
SELECT rs_node('SELECT * FROM rs_v', false);
-- fresh: costed and estimated as the storage, not the sum of the arms
SELECT rs_node('SELECT * FROM rs_v');
SELECT rs_estimate_ok('rs_v'), rs_diff('rs_v');
SELECT rs_cost('SELECT * FROM rs_v') * 2 < rs_cost(rtrim(pg_get_viewdef('rs_v'), ';'))
  AS cheaper_than_the_query;

-- hybrid: inserts wait unrefreshed
INSERT INTO rs_src SELECT i, i % 60, i FROM generate_series(20001, 20300) i;
SELECT rs_node('SELECT * FROM rs_v');
SELECT rs_diff('rs_v');
-- hybrid too: an update waits (the groups it touched replaced)
UPDATE rs_src SET x = x + 1 WHERE id % 100 = 0;
SELECT rs_node('SELECT * FROM rs_v');
SELECT rs_diff('rs_v');
-- merge: refreshed into the append table; fresh again after compaction
DELETE FROM rs_src WHERE id % 100 = 0;
SELECT mode FROM mvinc.refresh('rs_v');
INSERT INTO rs_src SELECT i, i % 70, i FROM generate_series(20301, 20305) i;
SELECT mode FROM mvinc.refresh('rs_v');
SELECT rs_node('SELECT * FROM rs_v');
SELECT rs_diff('rs_v'), rs_estimate_ok('rs_v');
SELECT append_rows > 0 AS has_append_rows FROM mvinc.views WHERE view = 'rs_v'::regclass;
SELECT mvinc.compact('rs_v') >= 0 AS compacted;
SELECT rs_node('SELECT * FROM rs_v WHERE g = 3');
SELECT * FROM rs_v WHERE g = 3;

-- a generic plan is costed for the path expected when it was made; each
-- execution still decides (here fresh, then merge, then hybrid)
CREATE TABLE rs_src2 (id int PRIMARY KEY, g int NOT NULL);
INSERT INTO rs_src2 SELECT i, i % 5 FROM generate_series(1, 100) i;
CREATE MATERIALIZED VIEW rs_w WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n FROM rs_src2 GROUP BY g;
SET plan_cache_mode = force_generic_plan;
PREPARE rs_all AS SELECT g, n FROM rs_w ORDER BY g;
SELECT rs_node('EXECUTE rs_all');
EXECUTE rs_all;
INSERT INTO rs_src2 VALUES (101, 1), (102, 9);
SELECT mode FROM mvinc.refresh('rs_w');
SELECT append_rows > 0 AS has_append_rows FROM mvinc.views WHERE view = 'rs_w'::regclass;
SELECT rs_node('EXECUTE rs_all');
EXECUTE rs_all;
SELECT rs_diff('rs_w');
INSERT INTO rs_src2 VALUES (103, 9);
EXECUTE rs_all;
RESET plan_cache_mode;
DEALLOCATE rs_all;

-- every way of reaching the view goes through the node
-- (a join, rescanned on the inner side of a nested loop)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT k, v.n FROM generate_series(1, 4) k JOIN rs_v v ON v.g = k ORDER BY k;
SELECT count(*) FROM generate_series(1, 4) k JOIN rs_v v ON v.g = k
  JOIN (SELECT g, count(*) AS n FROM rs_src GROUP BY g) q ON q.g = k AND q.n = v.n;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
-- lateral, a UNION ALL around it, a CTE, a view over it, an inlined function
SELECT k, l.n FROM generate_series(1, 3) k, LATERAL (SELECT n FROM rs_v WHERE g = k) l ORDER BY k;
SELECT count(*) FROM (SELECT g, n FROM rs_v UNION ALL SELECT g, n FROM rs_w) u;
SELECT rs_node('SELECT count(*) FROM (SELECT g, n FROM rs_v UNION ALL SELECT g, n FROM rs_w) u');
WITH c AS MATERIALIZED (SELECT * FROM rs_v) SELECT count(*), sum(n) FROM c;
CREATE VIEW rs_plain AS SELECT g, n FROM rs_v WHERE g < 10;
SELECT rs_node('SELECT * FROM rs_plain');
SELECT sum(n) = (SELECT count(*) FROM rs_src WHERE g < 10) AS plain_view_right FROM rs_plain;
CREATE FUNCTION rs_fn(k int) RETURNS TABLE (g int, n bigint) LANGUAGE sql STABLE AS
  'SELECT g, n FROM rs_v WHERE g = k';
SELECT rs_node('SELECT * FROM rs_fn(4)');
SELECT * FROM rs_fn(4);
-- a scrollable cursor reads backwards
BEGIN;
DECLARE rs_cur SCROLL CURSOR FOR SELECT g, n FROM rs_v WHERE g < 3 ORDER BY g;
FETCH ALL FROM rs_cur;
FETCH BACKWARD 2 FROM rs_cur;
COMMIT;

-- a cursor's node keeps its decision while it is open, however many other
-- decisions the transaction makes meanwhile (here 20 reads after writes to
-- the source, which all go live): its arm's guard must agree with it
CREATE FUNCTION rs_cursor_rows() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  c refcursor;
  r record;
  fetched bigint := 0;
BEGIN
  OPEN c FOR SELECT g, n FROM rs_v;
  FOR i IN 1..20 LOOP
    INSERT INTO rs_src VALUES (30000 + i, 1000 + i, i);
    PERFORM count(*) FROM rs_v;
  END LOOP;
  LOOP
    FETCH c INTO r;
    EXIT WHEN NOT FOUND;
    fetched := fetched + 1;
  END LOOP;
  CLOSE c;
  RETURN fetched;
END $$;
SELECT count(*) AS rows_before FROM rs_v \gset
SELECT mvinc.read_path('rs_v');
BEGIN;
SELECT rs_cursor_rows() = :rows_before AS cursor_read_every_row;
ROLLBACK;
DROP FUNCTION rs_cursor_rows();

-- mvinc.views counts the paths reads took (since the counts were reset)
SELECT mvinc.reset_read_counts('rs_w');
SELECT reads_fresh, reads_merge, reads_hybrid, reads_live FROM mvinc.views WHERE view = 'rs_w'::regclass;
SELECT mode FROM mvinc.refresh('rs_w');
SELECT mvinc.compact('rs_w') >= 0 AS compacted;
SELECT count(*) FROM rs_w;
SELECT count(*) FROM rs_w WHERE g = 1;
INSERT INTO rs_src2 VALUES (104, 9);
SELECT count(*) FROM rs_w;
DELETE FROM rs_src2 WHERE id = 104;
SELECT count(*) FROM rs_w;
SELECT reads_fresh, reads_merge, reads_hybrid, reads_live FROM mvinc.views WHERE view = 'rs_w'::regclass;

-- a transaction's own writes to the source send its reads to the query,
-- also when pgstat counts nothing (track_counts off)
SELECT mode FROM mvinc.refresh('rs_w');
BEGIN;
SET LOCAL track_counts = off;
INSERT INTO rs_src2 VALUES (105, 1);
SELECT mvinc.read_path('rs_w');
SELECT (SELECT n FROM rs_w WHERE g = 1) = (SELECT count(*) FROM rs_src2 WHERE g = 1) AS own_insert_seen;
ROLLBACK;
BEGIN;
SAVEPOINT s;
INSERT INTO rs_src2 VALUES (106, 1);
ROLLBACK TO SAVEPOINT s;
SELECT mvinc.read_path('rs_w') AS after_rolled_back_write;
COMMIT;

DROP FUNCTION rs_fn(int);
DROP VIEW rs_plain;
DROP MATERIALIZED VIEW rs_v;
DROP MATERIALIZED VIEW rs_w;
DROP TABLE rs_src, rs_src2;
