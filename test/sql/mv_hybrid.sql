-- The hybrid read: when the only changes past a view's checkpoint that
-- the reader sees are inserts, an aggregate view with GROUP BY answers from
-- its storage merged with its append rows and the states of those inserts,
-- exactly as the defining query would. Anything else reads live.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

CREATE FUNCTION mv_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;

CREATE TABLE hs (id int PRIMARY KEY, g int, k text, x numeric, f float8, b boolean);
INSERT INTO hs SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 10 END, 'k' || (i % 4),
                      i * 1.5, i / 8.0, i % 3 = 0
  FROM generate_series(1, 400) i;
CREATE MATERIALIZED VIEW hs_groups WITH (mvinc.incremental = true) AS
  SELECT g, k, count(*) AS n, sum(x) AS sx, avg(x) AS ax, min(x) AS lo, max(k) AS hk,
         bool_or(b) AS anyb, mvinc.approx_count_distinct(id) AS dist
  FROM hs WHERE x > 3 GROUP BY g, k;
CREATE MATERIALIZED VIEW hs_total WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(x) AS sx FROM hs;
CREATE MATERIALIZED VIEW hs_rows WITH (mvinc.incremental = true) AS
  SELECT id, g, x FROM hs WHERE b;

-- inserts only: hybrid for the aggregate views (old groups, new groups, NULL
-- keys, rows its WHERE drops), live for the projection view
INSERT INTO hs VALUES (401, 1, 'k1', 10, 1, true), (402, 77, 'new', 20, 2, false),
                      (403, NULL, 'k2', 30, 3, true), (404, 2, 'k0', 1, 4, true);
SELECT v, mvinc.read_path(v), mv_diff(v)
  FROM unnest(ARRAY['hs_groups', 'hs_total', 'hs_rows']::regclass[]) v;
SELECT * FROM hs_groups WHERE g = 77 OR g IS NULL ORDER BY g, k;

-- with appended state rows waiting as well
SELECT mode FROM mvinc.refresh('hs_groups');
SELECT append_rows > 0 AS has_append_rows FROM mvinc.views WHERE view = 'hs_groups'::regclass;
INSERT INTO hs SELECT i, i % 12, 'k' || (i % 5), i, i, i % 2 = 0 FROM generate_series(405, 460) i;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
-- an aborted insert is no change; a committed one in a subtransaction is
BEGIN;
INSERT INTO hs VALUES (900, 1, 'k1', 900, 9, true);
ROLLBACK;
BEGIN;
SAVEPOINT s;
INSERT INTO hs VALUES (901, 1, 'k1', 901, 9, true);
RELEASE s;
SAVEPOINT t;
INSERT INTO hs VALUES (902, 1, 'k1', 902, 9, true);
ROLLBACK TO t;
COMMIT;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');

-- prepared statements and a cursor across hybrid, fresh and live
PREPARE hs_one(int) AS SELECT n, sx, lo FROM hs_groups WHERE g = $1 AND k = 'k1';
EXECUTE hs_one(1);
SELECT mode FROM mvinc.refresh('hs_groups');
SELECT mvinc.read_path('hs_groups');
EXECUTE hs_one(1);
INSERT INTO hs VALUES (903, 1, 'k1', 5, 5, false);
SELECT mvinc.read_path('hs_groups');
EXECUTE hs_one(1);
BEGIN;
DECLARE hs_cur CURSOR FOR SELECT g, k, n FROM hs_groups ORDER BY g, k;
FETCH 3 FROM hs_cur;
COMMIT;
-- an update, a delete or a truncation makes the read live
UPDATE hs SET x = x + 1 WHERE id = 903;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
EXECUTE hs_one(1);
SELECT mode FROM mvinc.refresh('hs_groups');
INSERT INTO hs VALUES (904, 3, 'k3', 7, 7, true);
DELETE FROM hs WHERE id = 10;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
SELECT mode FROM mvinc.refresh('hs_groups');

-- a statement in parallel mode (the live arm planned with workers)
-- cannot take the latest snapshot once in that mode: its delta is
-- computed at executor start, and the answer is still exact
INSERT INTO hs VALUES (905, 4, 'k0', 70, 7, true);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE FUNCTION hs_plan_is_parallel() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
  FOR l IN EXPLAIN (COSTS OFF) SELECT * FROM hs_groups LOOP
    IF l ~ 'Gather' THEN found := true; END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT hs_plan_is_parallel();
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
SELECT count(*) FROM hs_groups;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP FUNCTION hs_plan_is_parallel();
SELECT mvinc.read_path('hs_groups');

-- a reader that may read the view (not the source) reads it hybrid; the
-- delta function answers nobody else
CREATE ROLE mvinc_hybrid_reader;
GRANT SELECT ON hs_groups TO mvinc_hybrid_reader;
SET ROLE mvinc_hybrid_reader;
SELECT mvinc.read_path('hs_groups');
SELECT n, sx FROM hs_groups WHERE g = 4 AND k = 'k0';
SELECT count(*) FROM mvinc._delta_states('hs_total'::regclass::oid) AS d(n bigint);
RESET ROLE;
SELECT n, sx FROM hs_groups WHERE g = 4 AND k = 'k0';
SELECT n, sx FROM (SELECT g, k, count(*) AS n, sum(x) AS sx FROM hs WHERE x > 3 GROUP BY g, k) q
 WHERE g = 4 AND k = 'k0';
REVOKE SELECT ON hs_groups FROM mvinc_hybrid_reader;
-- one who may read it only through a plain view reads the defining query:
-- the delta is the whole view's, which the plain view may not show
CREATE VIEW hs_groups_g4 AS SELECT * FROM hs_groups WHERE g = 4;
GRANT SELECT ON hs_groups_g4 TO mvinc_hybrid_reader;
SELECT reads_live AS live_before, reads_hybrid AS hybrid_before FROM mvinc.views
 WHERE view = 'hs_groups'::regclass \gset
SET ROLE mvinc_hybrid_reader;
BEGIN;
SELECT n, sx FROM hs_groups_g4 WHERE k = 'k0';
SELECT count(*) FROM hs_groups_g4, mvinc._delta_states('hs_groups'::regclass::oid)
  AS d(k1 int, k2 text, _mvinc_count bigint, s1 bytea);
ROLLBACK;
RESET ROLE;
SELECT reads_live > :live_before AS went_live, reads_hybrid = :hybrid_before AS not_hybrid
  FROM mvinc.views WHERE view = 'hs_groups'::regclass;
-- a column list other than the delta's is refused
SELECT count(*) FROM mvinc._delta_states('hs_groups'::regclass::oid)
  AS d(k1 text, k2 text, _mvinc_count bigint, s1 bytea);
DROP VIEW hs_groups_g4;
DROP ROLE mvinc_hybrid_reader;

-- EXPLAIN names the hybrid branch and its delta
CREATE FUNCTION hs_plan_has_delta() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
  FOR l IN EXPLAIN (COSTS OFF) SELECT * FROM hs_groups LOOP
    IF l ~ '_delta_states' THEN found := true; END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT hs_plan_has_delta();

-- a view without GROUP BY merges the inserts' states into its one row
CREATE TABLE hn (id int PRIMARY KEY, x numeric, k text);
CREATE MATERIALIZED VIEW hn_all WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(k) AS lo, max(x) AS hi
  FROM hn WHERE x IS DISTINCT FROM 0;
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
-- only inserts its WHERE drops: hybrid, with the stored row unchanged
INSERT INTO hn VALUES (1, 0, 'z');
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
INSERT INTO hn VALUES (2, NULL, 'b'), (3, 5, 'a'), (4, 7.5, NULL);
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
SELECT mode FROM mvinc.refresh('hn_all');
INSERT INTO hn VALUES (5, -1, 'c');
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
-- a delete: live
DELETE FROM hn WHERE id = 5;
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
DROP MATERIALIZED VIEW hn_all;
DROP TABLE hn;

DROP FUNCTION hs_plan_has_delta();
DROP MATERIALIZED VIEW hs_groups, hs_total, hs_rows;
DROP TABLE hs;
DROP FUNCTION mv_diff(regclass);
