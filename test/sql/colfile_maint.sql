-- colfile: maintenance paths (parallel index build, VACUUM reclaiming
-- row groups, statistics, check, stats)
SET mvinc.colfile_rows_per_group = 1000;
CREATE TABLE m (id int, a int, t text) USING colfile;
INSERT INTO m SELECT g, g % 100, repeat('x', g % 50) FROM generate_series(1, 20000) g;
-- a parallel index build (workers claim whole row groups)
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
SET maintenance_work_mem = '64MB';
ALTER TABLE m ADD PRIMARY KEY (id);
CREATE INDEX m_a ON m (a);
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
SELECT * FROM mvinc.colfile_check('m');
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM m WHERE a = 42;
RESET enable_seqscan;
-- VACUUM drops row groups whose rows are all deleted, and their index entries
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('m');
DELETE FROM m WHERE id <= 5000;
DELETE FROM m WHERE id % 2 = 0;
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('m');
-- the capture worker's replication slot may hold the VACUUM horizon for a
-- moment (while it may need TOAST fetches): wait until it lets go
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE xmin IS NOT NULL);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
VACUUM m;
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('m');
SELECT reltuples FROM pg_class WHERE relname = 'm';
SELECT * FROM mvinc.colfile_check('m');
SELECT count(*) FROM m;
-- per-column sizes
SELECT attname, compressed_bytes > 0 AS stored, compressed_bytes <= raw_bytes AS not_bigger
  FROM mvinc.colfile_column_stats('m') ORDER BY attnum;
-- row locks leave no records behind once VACUUM has run
BEGIN;
SELECT count(*) FROM (SELECT * FROM m WHERE id < 6100 FOR UPDATE) x;
COMMIT;
VACUUM m;
SELECT count(*) FROM mvinc.colfile_rowlock r WHERE r.relfilenode = pg_relation_filenode('m') AND kind IN ('x', 's');
SELECT count(*) FROM mvinc.colfile_rowstate r WHERE r.relfilenode = pg_relation_filenode('m') AND kind IN ('x', 's');
-- VACUUM FULL rewrites into full row groups
VACUUM FULL m;
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('m');
SELECT * FROM mvinc.colfile_check('m');
DROP TABLE m;
-- deletions of one statement form one delete file (one sequence number)
CREATE TABLE df (id int) USING colfile;
INSERT INTO df SELECT generate_series(1, 100);
DELETE FROM df WHERE id <= 10;
DELETE FROM df WHERE id > 90;
UPDATE df SET id = -id WHERE id = 50;
SELECT row_groups, live_rows, deleted_rows, delete_files FROM mvinc.colfile_stats('df');
BEGIN;
SELECT count(*) FROM (SELECT * FROM df WHERE id BETWEEN 20 AND 29 FOR SHARE) x;
SELECT locked_rows FROM mvinc.colfile_stats('df');
COMMIT;
SELECT locked_rows FROM mvinc.colfile_stats('df');
DROP TABLE df;
-- CREATE INDEX CONCURRENTLY and REINDEX CONCURRENTLY (concurrent writers:
-- isolation spec colfile_cic), over compacted row groups whose rows are
-- not in TID order, with unique, partial and expression indexes
CREATE EXTENSION IF NOT EXISTS amcheck;
SET mvinc.colfile_rows_per_group = 100;
CREATE TABLE ci (id int, a int, t text) USING colfile;
INSERT INTO ci SELECT g, g % 10, 'T' || g FROM generate_series(1, 500) g;
INSERT INTO ci SELECT g, g % 10, 'T' || g FROM generate_series(501, 520) g;
UPDATE ci SET a = a + 100 WHERE id % 9 = 0;
DELETE FROM ci WHERE id % 4 = 0;
SET mvinc.colfile_compact_dead_fraction = 0.1;
VACUUM ci;
RESET mvinc.colfile_compact_dead_fraction;
CREATE UNIQUE INDEX CONCURRENTLY ci_id ON ci (id);
CREATE INDEX CONCURRENTLY ci_a ON ci (a) WHERE id % 2 = 1;
CREATE INDEX CONCURRENTLY ci_t ON ci (lower(t));
SELECT c.relname, i.indisvalid, i.indisready, bt_index_check(c.oid, true) IS NOT NULL AS checked
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = 'ci'::regclass ORDER BY 1;
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM ci WHERE id BETWEEN 100 AND 200;
SELECT count(*), sum(id) FROM ci WHERE a = 103 AND id % 2 = 1;
SELECT id FROM ci WHERE lower(t) = 't333';
RESET enable_seqscan;
SELECT count(*), sum(id) FROM ci WHERE id BETWEEN 100 AND 200;
SELECT count(*), sum(id) FROM ci WHERE a = 103 AND id % 2 = 1;
-- duplicates: the unique build fails and leaves an invalid index, as on heap
\set VERBOSITY terse
CREATE UNIQUE INDEX CONCURRENTLY ci_dup ON ci (a);
\set VERBOSITY default
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ci_dup'::regclass;
DROP INDEX ci_dup;
REINDEX TABLE CONCURRENTLY ci;
SELECT c.relname, i.indisvalid, bt_index_check(c.oid, true) IS NOT NULL AS checked
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = 'ci'::regclass ORDER BY 1;
SELECT * FROM mvinc.colfile_check('ci');
RESET mvinc.colfile_rows_per_group;
DROP TABLE ci;
