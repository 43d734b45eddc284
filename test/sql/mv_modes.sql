-- Refresh modes: initial, noop, incremental, merge, regroup, full; the
-- output of mvinc.refresh and the view compared with its query after each.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
\i include/mv_diff.sql
-- refresh and show mode, changes, whether the LSN range moved forward
CREATE FUNCTION mv_refresh(v regclass, f boolean DEFAULT false)
  RETURNS TABLE (mode text, changes bigint, lsn_forward boolean, diff bigint)
  LANGUAGE sql AS $$
    SELECT r.mode, r.changes_applied, r.from_lsn IS NULL OR r.from_lsn <= r.to_lsn, mv_diff(v)
    FROM mvinc.refresh(v, f) r $$;

CREATE TABLE m_src (id int PRIMARY KEY, g int, v numeric, w int, t text);
INSERT INTO m_src SELECT i, i % 4, i, i % 10, 't' || i FROM generate_series(1, 40) i;

CREATE MATERIALIZED VIEW m_sum WITH (mvinc.incremental = true) AS
  SELECT g, sum(v) AS s, count(*) AS n, avg(w) AS a FROM m_src WHERE w <> 9 GROUP BY g WITH NO DATA;
CREATE MATERIALIZED VIEW m_minmax WITH (mvinc.incremental = true) AS
  SELECT g, min(v) AS lo, max(t) AS hi, count(*) AS n FROM m_src GROUP BY g WITH NO DATA;
CREATE MATERIALIZED VIEW m_all WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(v) AS s, max(w) AS mx FROM m_src WITH NO DATA;
CREATE MATERIALIZED VIEW m_proj WITH (mvinc.incremental = true) AS
  SELECT id, v * 10 AS v10, t FROM m_src WHERE g <> 0 WITH NO DATA;

-- initial
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_all');
SELECT * FROM mv_refresh('m_proj');
-- noop
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_proj');

-- incremental: inserts only (new groups, existing groups, NULL group)
INSERT INTO m_src VALUES (41, 1, 100, 1, 'x'), (42, 7, 5, 2, 'y'), (43, NULL, 1, 3, NULL);
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_all');
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM m_sum ORDER BY g;
SELECT mvinc.read_path('m_sum');

-- several inserts in one transaction and in several
BEGIN;
INSERT INTO m_src VALUES (44, 2, 1, 1, 'a');
INSERT INTO m_src VALUES (45, 2, 2, 1, 'b');
COMMIT;
INSERT INTO m_src VALUES (46, NULL, 3, 1, 'c');
SELECT * FROM mv_refresh('m_sum');
-- one state row per group after incremental refreshes
SELECT count(*) = (SELECT count(*) FROM (SELECT DISTINCT g FROM m_sum) d) AS one_row_per_group FROM m_sum;

-- merge: projection with updates and deletes, also moving rows in and out
-- of the WHERE clause and changing the key
UPDATE m_src SET v = v + 1 WHERE id IN (1, 2);
UPDATE m_src SET g = 0 WHERE id = 3;
UPDATE m_src SET g = 1 WHERE id = 4;
DELETE FROM m_src WHERE id = 5;
UPDATE m_src SET id = 1000 WHERE id = 6;
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM m_proj WHERE id IN (1, 2, 3, 4, 5, 6, 1000) ORDER BY id;

-- regroup: retractable aggregates take the delta, others recompute the
-- touched groups (also rows moving between groups and out of WHERE)
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_all');
UPDATE m_src SET w = 9 WHERE id = 7;
DELETE FROM m_src WHERE g = 3;
UPDATE m_src SET v = NULL WHERE id = 8;
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_all');
SELECT * FROM m_minmax ORDER BY g;
-- a group that disappears entirely and comes back
DELETE FROM m_src WHERE g = 7;
SELECT * FROM mv_refresh('m_sum');
SELECT count(*) FROM m_sum WHERE g = 7;
INSERT INTO m_src VALUES (47, 7, 1, 1, 'z');
SELECT * FROM mv_refresh('m_sum');
-- numeric scale: retracting the only input with the largest scale is
-- refused by agg_apply, and that group is recomputed
UPDATE m_src SET v = 1.12345 WHERE id = 10;
SELECT * FROM mv_refresh('m_sum');
UPDATE m_src SET v = 1 WHERE id = 10;
SELECT * FROM mv_refresh('m_sum');
SELECT s FROM m_sum WHERE g = 2;

-- rollbacks and savepoints leave no trace
BEGIN;
INSERT INTO m_src VALUES (100, 1, 1, 1, 'r');
ROLLBACK;
BEGIN;
INSERT INTO m_src VALUES (101, 1, 1, 1, 'kept');
SAVEPOINT s1;
INSERT INTO m_src VALUES (102, 1, 1, 1, 'gone');
ROLLBACK TO s1;
COMMIT;
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM m_proj WHERE id >= 100 ORDER BY id;

-- full: on request, after TRUNCATE, after ALTER of the source
SELECT * FROM mv_refresh('m_sum', true);
TRUNCATE m_src;
INSERT INTO m_src VALUES (1, 1, 1, 1, 'after');
SELECT * FROM mv_refresh('m_sum');
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM m_proj;
ALTER TABLE m_src ADD COLUMN extra int;
SELECT mvinc.read_path('m_sum');
SELECT * FROM mv_refresh('m_sum');
SELECT mvinc.read_path('m_sum');
-- renaming a column of the source or the source itself (the change log
-- follows the rename; the next refresh is full, as after any ALTER)
ALTER TABLE m_src RENAME COLUMN t TO label;
ALTER TABLE m_src RENAME TO m_source;
ALTER TABLE m_source RENAME TO m_src;
INSERT INTO m_src VALUES (2, 2, 2, 2, 'two');
SELECT * FROM mv_refresh('m_sum');
INSERT INTO m_src VALUES (5, 2, 2, 2, 'five');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_minmax');
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM mv_refresh('m_proj');
SELECT * FROM m_proj ORDER BY id;
-- a column the view uses cannot be dropped or retyped
ALTER TABLE m_src DROP COLUMN v;
ALTER TABLE m_src ALTER COLUMN w TYPE bigint;

-- a refresh in a transaction that wrote the source reads the source (full)
-- and includes the transaction's own changes; changing the source again
-- afterwards makes the view stale (live reads, next refresh full)
BEGIN;
INSERT INTO m_src VALUES (3, 3, 3, 3, 'mine');
SELECT mvinc.read_path('m_proj');
SELECT * FROM m_proj ORDER BY id;
SELECT * FROM mv_refresh('m_proj');
SELECT mvinc.read_path('m_proj');
COMMIT;
SELECT * FROM mv_refresh('m_proj');
SELECT mvinc.read_path('m_proj');
BEGIN;
UPDATE m_src SET label = 'mine!' WHERE id = 3;
SELECT * FROM mv_refresh('m_proj');
DELETE FROM m_src WHERE id = 3;
SELECT * FROM m_proj ORDER BY id;
COMMIT;
SELECT mvinc.read_path('m_proj');
SELECT * FROM m_proj ORDER BY id;
SELECT * FROM mv_refresh('m_proj');
SELECT mvinc.read_path('m_proj');
-- a failed refresh leaves view and checkpoint as they were
SELECT checkpoint_lsn AS lsn_before FROM mvinc.mv_view WHERE view = 'm_proj'::regclass \gset
INSERT INTO m_src VALUES (4, 4, 4, 4, 'four');
BEGIN;
SELECT mode FROM mvinc.refresh('m_proj');
SELECT 1 / 0;
ROLLBACK;
SELECT checkpoint_lsn = :'lsn_before' AS unchanged FROM mvinc.mv_view WHERE view = 'm_proj'::regclass;
SELECT * FROM mv_refresh('m_proj');

-- a refresh or compaction in a REPEATABLE READ or SERIALIZABLE transaction
-- is refused: its snapshot may predate changes committed before it started
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mode FROM mvinc.refresh('m_proj');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
REFRESH MATERIALIZED VIEW m_proj;
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mvinc.compact('m_proj');
ROLLBACK;

-- refresh of a plain view is refused (WITH NO DATA: mv_schemas)
CREATE MATERIALIZED VIEW plain AS SELECT 1 AS x;
SELECT * FROM mvinc.refresh('plain');
SELECT mvinc.read_path('plain');
DROP MATERIALIZED VIEW plain;

SELECT view, kind, last_refresh_mode, pending_changes FROM mvinc.views ORDER BY view::text;
DROP TABLE m_src CASCADE;
DROP FUNCTION mv_refresh(regclass, boolean);
DROP FUNCTION mv_diff(regclass);
