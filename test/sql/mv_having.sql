-- HAVING: the storage keeps every group; reads (stored and hybrid paths)
-- filter the finalized rows by the condition over the view's columns, so
-- a group leaves and comes back as the source changes. Each view equals
-- its query after each step.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

\i include/mv_diff.sql

CREATE TABLE hv (id int PRIMARY KEY, g int, x numeric, b boolean);
INSERT INTO hv SELECT i, i % 10, i, i % 4 = 0 FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW hv_big WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS s, max(x) AS hi FROM hv
  GROUP BY g HAVING count(*) > 19 AND sum(x) < 2100 AND g <> 7;
CREATE MATERIALIZED VIEW hv_all WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(x) FILTER (WHERE b) AS sb FROM hv HAVING count(*) > 150;
CREATE VIEW hv_check AS
  SELECT v, mvinc.read_path(v), mv_diff(v) FROM unnest(ARRAY['hv_big', 'hv_all']::regclass[]) v;
TABLE hv_check;
SELECT g, n FROM hv_big ORDER BY g;
TABLE hv_all;
PREPARE hv_q AS SELECT count(*) FROM hv_big;
EXECUTE hv_q;

-- groups leave (a delete, an update past the sum bound) and come back
DELETE FROM hv WHERE id IN (1, 11);
UPDATE hv SET x = x + 1000 WHERE id = 2;
INSERT INTO hv VALUES (201, 3, 1, false);
TABLE hv_check;
SELECT g, n FROM hv_big ORDER BY g;
EXECUTE hv_q;
SELECT v, (SELECT mode FROM mvinc.refresh(v)) FROM unnest(ARRAY['hv_big', 'hv_all']::regclass[]) v;
TABLE hv_check;
EXECUTE hv_q;
INSERT INTO hv VALUES (202, 1, 1, true), (203, 1, 2, true);
UPDATE hv SET x = x - 1000 WHERE id = 2;
SELECT v, (SELECT mode FROM mvinc.refresh(v)) FROM unnest(ARRAY['hv_big', 'hv_all']::regclass[]) v;
TABLE hv_check;
SELECT g, n FROM hv_big ORDER BY g;
-- the view without GROUP BY has no row while the condition fails
DELETE FROM hv WHERE id > 100;
TABLE hv_check;
SELECT count(*) FROM hv_all;
SELECT mvinc.verify_view(v) FROM unnest(ARRAY['hv_big', 'hv_all']::regclass[]) v;

-- a reader's condition that is not leakproof never runs on the groups
-- HAVING hides (a native matview does not store them), on any path, also
-- when the condition itself is not leakproof (a division); the function is
-- made cheap so that the planner would run it first
CREATE TABLE hl (g int, x int);
INSERT INTO hl SELECT i % 5, i FROM generate_series(1, 50) i;
INSERT INTO hl VALUES (7, 1);
CREATE MATERIALIZED VIEW hl_v WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS s FROM hl GROUP BY g HAVING sum(x) / count(*) > 5;
CREATE FUNCTION hl_leak(int) RETURNS bool LANGUAGE plpgsql STABLE COST 0.0001 AS
  $$ BEGIN IF $1 = 7 THEN RAISE NOTICE 'saw hidden group %', $1; END IF; RETURN true; END $$;
SET client_min_messages = notice;
SELECT mvinc.read_path('hl_v'), count(*) FROM hl_v WHERE hl_leak(g);
INSERT INTO hl VALUES (7, 2), (1, 1);
SELECT mvinc.read_path('hl_v'), count(*) FROM hl_v WHERE hl_leak(g);
SELECT count(*) FROM mvinc.refresh('hl_v');
SELECT mvinc.read_path('hl_v'), count(*) FROM hl_v WHERE hl_leak(g);
SET client_min_messages = warning;
DROP TABLE hl CASCADE;
DROP FUNCTION hl_leak(int);

-- refused: HAVING without aggregates or GROUP BY (the query is one group)
CREATE MATERIALIZED VIEW hv_bad WITH (mvinc.incremental = true) AS
  SELECT 1 AS one FROM hv HAVING true;
-- refused: what the select list does not show
CREATE MATERIALIZED VIEW hv_bad WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FROM hv GROUP BY g HAVING sum(x) > 0;
CREATE MATERIALIZED VIEW hv_bad WITH (mvinc.incremental = true) AS
  SELECT count(*) FROM hv GROUP BY g HAVING g > 0;
CREATE MATERIALIZED VIEW hv_bad WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FROM hv GROUP BY g HAVING count(*) > random();

DEALLOCATE hv_q;
DROP VIEW hv_check;
DROP TABLE hv CASCADE;
DROP FUNCTION mv_diff(regclass);
