-- Every way of reaching an incremental view reads it through the read
-- path: SQL functions the planner inlines (set-returning and in a scalar
-- subquery), views over it, CTEs, PL/pgSQL, prepared statements, cursors.
-- Each is compared with the defining query, fresh and with pending changes.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

CREATE TABLE il (id int PRIMARY KEY, g int, x int);
INSERT INTO il SELECT i, i % 3, i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW il_v WITH (mvinc.incremental = true) AS
  SELECT g, sum(x) AS s, count(*) AS n FROM il GROUP BY g;
CREATE VIEW il_q AS SELECT g, sum(x) AS s, count(*) AS n FROM il GROUP BY g;

-- inlined: a STABLE set-returning SQL function, one with a parameter, and
-- a scalar subquery inside an inlined function
CREATE FUNCTION il_all() RETURNS SETOF il_v LANGUAGE sql STABLE AS 'SELECT * FROM il_v';
CREATE FUNCTION il_one(int) RETURNS SETOF il_v LANGUAGE sql STABLE
  AS 'SELECT * FROM il_v WHERE g = $1';
CREATE FUNCTION il_total() RETURNS TABLE (t bigint) LANGUAGE sql STABLE
  AS 'SELECT (SELECT sum(s) FROM il_v)::bigint';
CREATE VIEW il_over AS SELECT * FROM il_v WHERE n > 0;
CREATE FUNCTION il_plpgsql() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r record; total bigint := 0;
BEGIN
  FOR r IN SELECT * FROM il_v LOOP total := total + r.s; END LOOP;
  RETURN total;
END $$;
PREPARE il_prep AS SELECT * FROM il_all() WHERE g = 1;

CREATE FUNCTION il_check() RETURNS TABLE (way text, mismatches bigint) LANGUAGE sql AS $$
  SELECT 'inlined SRF', count(*) FROM ((SELECT * FROM il_all() EXCEPT ALL SELECT * FROM il_q)
                                      UNION ALL (SELECT * FROM il_q EXCEPT ALL SELECT * FROM il_all())) x
  UNION ALL
  SELECT 'inlined SRF with parameter', count(*) FROM ((SELECT * FROM il_one(1) EXCEPT ALL SELECT * FROM il_q WHERE g = 1)
                                      UNION ALL (SELECT * FROM il_q WHERE g = 1 EXCEPT ALL SELECT * FROM il_one(1))) x
  UNION ALL
  SELECT 'inlined scalar subquery', (SELECT t FROM il_total()) - (SELECT sum(s) FROM il_q)
  UNION ALL
  SELECT 'view over the view', count(*) FROM ((SELECT * FROM il_over EXCEPT ALL SELECT * FROM il_q)
                                      UNION ALL (SELECT * FROM il_q EXCEPT ALL SELECT * FROM il_over)) x
  UNION ALL
  SELECT 'CTE', count(*) FROM (WITH c AS MATERIALIZED (SELECT * FROM il_v)
                               SELECT * FROM c EXCEPT ALL SELECT * FROM il_q) x
  UNION ALL
  SELECT 'PL/pgSQL loop', il_plpgsql() - (SELECT sum(s) FROM il_q)
  UNION ALL
  SELECT 'join of two inlined calls', (SELECT count(*) FROM il_all() a JOIN il_all() b USING (g))
                                      - (SELECT count(*) FROM il_q)
$$;

SELECT mvinc.read_path('il_v');
SELECT * FROM il_check();
SELECT * FROM il_all() ORDER BY g;
EXECUTE il_prep;
-- pending changes: every way answers them
INSERT INTO il VALUES (100, 1, 1000);
UPDATE il SET x = x + 1 WHERE id <= 5;
SELECT mvinc.read_path('il_v');
SELECT * FROM il_check();
EXECUTE il_prep;
-- refreshed: the same, from the storage
REFRESH MATERIALIZED VIEW il_v;
SELECT mvinc.read_path('il_v');
SELECT * FROM il_check();
EXECUTE il_prep;
-- a cursor opened on an inlined call
BEGIN;
DECLARE il_cur CURSOR FOR SELECT * FROM il_all() ORDER BY g;
FETCH 2 FROM il_cur;
FETCH ALL FROM il_cur;
COMMIT;
-- row locks through an inlined function are refused as on the view itself
CREATE FUNCTION il_lock() RETURNS SETOF il_v LANGUAGE sql STABLE
  AS 'SELECT * FROM il_v FOR UPDATE';
SELECT * FROM il_lock();
-- the plan reads the storage, not the view's own (empty) relation
CREATE FUNCTION il_plan_scans_matview() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
  FOR l IN EXPLAIN (COSTS OFF) SELECT * FROM il_all() LOOP
    IF l ~ 'Scan on il_v' THEN found := true; END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT il_plan_scans_matview();
DROP FUNCTION il_plan_scans_matview();
-- mvinc.read_path: auto (exact), live (always the query), stale_ok (the
-- storage as last refreshed); a prepared statement follows the setting
INSERT INTO il VALUES (101, 2, 500);
SELECT mvinc.read_path('il_v'), (SELECT s FROM il_v WHERE g = 2) AS s2;
SET mvinc.read_path = stale_ok;
SELECT mvinc.read_path('il_v'), (SELECT s FROM il_v WHERE g = 2) AS s2;
EXECUTE il_prep;
SET mvinc.read_path = live;
REFRESH MATERIALIZED VIEW il_v;
SELECT mvinc.read_path('il_v'), (SELECT s FROM il_v WHERE g = 2) AS s2;
SELECT * FROM il_check();
SET mvinc.read_path = sometimes;
RESET mvinc.read_path;
SELECT mvinc.read_path('il_v'), (SELECT s FROM il_v WHERE g = 2) AS s2;
DROP FUNCTION il_check(), il_all(), il_one(int), il_total(), il_plpgsql(), il_lock();
DROP VIEW il_over, il_q;
DROP MATERIALIZED VIEW il_v;
DROP TABLE il;
