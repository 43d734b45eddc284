-- mvinc.refresh_progress: its columns, no rows while nothing runs, and no
-- row left behind by a refresh or compaction that finished or failed (in
-- every mode, also while its transaction is still open, also when the
-- error is caught).  The isolation spec mv_progress_concurrent watches
-- commands while they run, and the privilege rule.
CREATE TABLE pr_src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO pr_src SELECT i, i % 4, i FROM generate_series(1, 40) i;
CREATE MATERIALIZED VIEW pr_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM pr_src GROUP BY g;
CREATE MATERIALIZED VIEW pr_proj WITH (mvinc.incremental = true) AS
  SELECT id, v FROM pr_src WHERE v > 10;
CREATE MATERIALIZED VIEW pr_hist WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, v FROM pr_src;

SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_catalog.pg_attribute a
 WHERE a.attrelid = 'mvinc.refresh_progress'::regclass AND a.attnum > 0
 ORDER BY a.attnum;
-- everyone may look (the function filters by the caller's rights)
SELECT pg_catalog.has_table_privilege('public', 'mvinc.refresh_progress', 'SELECT') AS view_public,
       pg_catalog.has_function_privilege('public', 'mvinc._refresh_progress()', 'EXECUTE') AS function_public;

SELECT count(*) AS running FROM mvinc.refresh_progress;

-- finished refreshes leave no row, inside their transaction and after
SET mvinc.compact_fraction = 1000;
INSERT INTO pr_src VALUES (41, 1, 41), (42, 5, 42);
BEGIN;
SELECT mode, changes_applied FROM mvinc.refresh('pr_agg');
SELECT count(*) AS running FROM mvinc.refresh_progress;
SELECT mode, changes_applied FROM mvinc.refresh('pr_proj');
SELECT count(*) AS running FROM mvinc.refresh_progress;
COMMIT;
SELECT append_rows > 0 AS appended FROM mvinc.views WHERE view = 'pr_agg'::regclass;
UPDATE pr_src SET v = v + 1 WHERE id IN (1, 2);
DELETE FROM pr_src WHERE id = 3;
SELECT mode, changes_applied FROM mvinc.refresh('pr_agg');
SELECT mode, changes_applied FROM mvinc.refresh('pr_proj');
SELECT mode FROM mvinc.refresh('pr_agg', true);
SELECT mode FROM mvinc.refresh('pr_agg');
REFRESH MATERIALIZED VIEW pr_hist;
SELECT count(*) AS running FROM mvinc.refresh_progress;

-- a compaction too
INSERT INTO pr_src VALUES (43, 2, 43);
SELECT mode FROM mvinc.refresh('pr_agg');
BEGIN;
SELECT mvinc.compact('pr_agg') AS folded;
SELECT count(*) AS running FROM mvinc.refresh_progress;
COMMIT;

-- failed ones: the error aborts the transaction
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mode FROM mvinc.refresh('pr_agg');
ROLLBACK;
SELECT count(*) AS running FROM mvinc.refresh_progress;

-- ... or is caught, and the transaction goes on (no abort clears the row:
-- the command itself does)
BEGIN ISOLATION LEVEL REPEATABLE READ;
DO $$
BEGIN
  PERFORM mvinc.refresh('pr_agg');
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'refresh refused: %', SQLERRM;
END $$;
SELECT count(*) AS running FROM mvinc.refresh_progress;
DO $$
BEGIN
  PERFORM mvinc.compact('pr_agg');
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'compaction refused: %', SQLERRM;
END $$;
SELECT count(*) AS running FROM mvinc.refresh_progress;
DO $$
BEGIN
  REFRESH MATERIALIZED VIEW pr_hist;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'history refresh refused: %', SQLERRM;
END $$;
SELECT count(*) AS running FROM mvinc.refresh_progress;
COMMIT;

-- a refresh after those reports and clears as before
INSERT INTO pr_src VALUES (44, 3, 44);
SELECT mode, changes_applied FROM mvinc.refresh('pr_agg');
SELECT count(*) AS running FROM mvinc.refresh_progress;

DROP TABLE pr_src CASCADE;
