-- colfile: temporary tables (local buffers, no WAL; metadata in the
-- permanent metadata tables, gone with the table), compared with heap twins
SET mvinc.colfile_rows_per_group = 100;
CREATE TEMP TABLE tc (id int PRIMARY KEY, name text, v float8) USING colfile;
CREATE TEMP TABLE th (id int PRIMARY KEY, name text, v float8) USING heap;
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.oid = 'tc'::regclass;
INSERT INTO tc VALUES (1, 'one', 1.5);
INSERT INTO tc SELECT g, 'n' || g, g * 0.5 FROM generate_series(2, 450) g;
INSERT INTO th SELECT * FROM tc;
COPY tc FROM STDIN;
1000	copied	1
1001	\N	\N
\.
COPY th FROM STDIN;
1000	copied	1
1001	\N	\N
\.
-- writes, savepoints and rollbacks, applied to both
BEGIN;
UPDATE tc SET name = 'upd' WHERE id % 7 = 0;
UPDATE th SET name = 'upd' WHERE id % 7 = 0;
SAVEPOINT s;
DELETE FROM tc WHERE id < 100;
DELETE FROM th WHERE id < 100;
ROLLBACK TO s;
DELETE FROM tc WHERE id % 5 = 0;
DELETE FROM th WHERE id % 5 = 0;
COMMIT;
BEGIN;
DELETE FROM tc;
DELETE FROM th;
ROLLBACK;
INSERT INTO tc VALUES (1, 'dup');                          -- unique violation
INSERT INTO tc VALUES (1, 'dup') ON CONFLICT (id) DO UPDATE SET name = 'conflict';
INSERT INTO th VALUES (1, 'dup') ON CONFLICT (id) DO UPDATE SET name = 'conflict';
SELECT count(*) AS only_in_colfile FROM (TABLE tc EXCEPT ALL TABLE th) d;
SELECT count(*) AS only_in_heap FROM (TABLE th EXCEPT ALL TABLE tc) d;
SELECT * FROM tc WHERE id IN (1, 7, 1001) ORDER BY id;
SET enable_seqscan = off;
SELECT id, name FROM tc WHERE id = 14;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('tc');
SELECT row_groups > 0 AS has_row_groups, live_rows FROM mvinc.colfile_stats('tc');
-- a transactional TRUNCATE (new storage) rolled back, then committed
BEGIN;
TRUNCATE tc;
SELECT count(*) FROM tc;
ROLLBACK;
SELECT count(*) FROM tc;
TRUNCATE tc;
INSERT INTO tc VALUES (5, 'after truncate', 0);
SELECT * FROM tc;
SELECT * FROM mvinc.colfile_check('tc');
-- VACUUM, ANALYZE, rewrite
DELETE FROM tc;
VACUUM ANALYZE tc;
INSERT INTO tc SELECT g, 'r' || g, g FROM generate_series(1, 300) g;
VACUUM FULL tc;
SELECT count(*), sum(id) FROM tc;
-- ON COMMIT DELETE ROWS and ON COMMIT DROP
CREATE TEMP TABLE tdel (a int) USING colfile ON COMMIT DELETE ROWS;
BEGIN;
INSERT INTO tdel SELECT generate_series(1, 250);
SELECT count(*) FROM tdel;
COMMIT;
SELECT count(*) FROM tdel;
SELECT * FROM mvinc.colfile_check('tdel');
BEGIN;
CREATE TEMP TABLE tdrop (a int) USING colfile ON COMMIT DROP;
INSERT INTO tdrop VALUES (1), (2);
SELECT sum(a) FROM tdrop;
COMMIT;
SELECT to_regclass('tdrop');
-- with default_table_access_method, CREATE TEMP TABLE AS
SET default_table_access_method = colfile;
CREATE TEMP TABLE tas AS SELECT g AS a, g::text AS b FROM generate_series(1, 120) g;
SELECT a.amname, count(*) FROM tas, pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.oid = 'tas'::regclass GROUP BY a.amname;
RESET default_table_access_method;
-- dropping the tables removes their metadata
SELECT pg_relation_filenode('tc') AS tc_node \gset
SELECT count(*) > 0 AS has_metadata FROM mvinc.colfile_rowgroup WHERE relfilenode = :tc_node;
DROP TABLE tc, th, tdel, tas;
SELECT count(*) FROM mvinc.colfile_rowgroup WHERE relfilenode = :tc_node;
-- and so does the end of the session that owned them
CREATE TEMP TABLE tgone (a int) USING colfile;
INSERT INTO tgone SELECT generate_series(1, 10);
SELECT pg_relation_filenode('tgone') AS gone_node, pg_backend_pid() AS old_pid \gset
\c
SELECT set_config('test.old_pid', :'old_pid', false) IS NOT NULL AS set;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = current_setting('test.old_pid')::int);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT count(*) FROM mvinc.colfile_rowgroup WHERE relfilenode = :gone_node;
-- ON COMMIT DELETE ROWS: the commit's flush of buffered inserts writes a
-- row group that the on-commit truncation must delete too (it was left
-- behind, naming pages the truncation removed: "could not read block")
CREATE TEMP TABLE tocd (f1 int, f2 text) USING colfile ON COMMIT DELETE ROWS;
INSERT INTO tocd VALUES (1, 'foo'), (2, 'bar');
SELECT * FROM tocd;
BEGIN;
INSERT INTO tocd VALUES (3, 'kept until commit');
SELECT * FROM tocd;
COMMIT;
SELECT * FROM tocd;
CREATE INDEX CONCURRENTLY tocd_f1 ON tocd (f1);
SELECT row_groups, live_rows FROM mvinc.colfile_stats('tocd');
SELECT * FROM mvinc.colfile_check('tocd');
DROP TABLE tocd;
