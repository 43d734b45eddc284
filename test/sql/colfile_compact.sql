-- colfile: VACUUM compacts row groups. Consecutive groups whose rows are
-- visible to everybody are rewritten into one group (up to
-- mvinc.colfile_rows_per_group rows), without the rows dead to everybody,
-- and every row keeps its TID: indexes, locks and deletions still find it.
-- The first VACUUM sets compaction's horizon, a later one compacts; VACUUM
-- runs until it has (another database's capture may hold the horizon).
SET mvinc.colfile_rows_per_group = 1000;
-- updates here move rows (delete + insert), as updates of indexed columns
-- do; column updates in place are colfile_column_diff's subject
SET mvinc.colfile_column_updates = off;
CREATE TABLE cc (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE TABLE cc_heap (id int PRIMARY KEY, a int, b text);
-- 200 single-row statements: 200 row groups
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO cc VALUES (%s, %s, %L)', g, g % 7, md5(g::text))
FROM generate_series(1, 200) g \gexec
\o
\set ECHO all
INSERT INTO cc_heap SELECT * FROM cc;
SELECT row_groups, live_rows FROM mvinc.colfile_stats('cc');
CREATE TABLE tids AS SELECT id, ctid AS tid FROM cc;
\set ECHO none
\o /dev/null
SELECT 'VACUUM cc', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''cc'') WHERE row_groups > 1'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('cc');
-- every row kept its TID, and indexes find it
SELECT count(*) AS moved FROM cc JOIN tids USING (id) WHERE cc.ctid <> tids.tid;
SET enable_seqscan = off;
SELECT count(*) AS found_by_index FROM tids t WHERE EXISTS (SELECT 1 FROM cc WHERE cc.id = t.id AND cc.ctid = t.tid);
SELECT b = md5('123') AS right_row FROM cc WHERE id = 123;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('cc');
SELECT (SELECT count(*) FROM (SELECT * FROM cc EXCEPT ALL SELECT * FROM cc_heap) d) AS only_colfile,
       (SELECT count(*) FROM (SELECT * FROM cc_heap EXCEPT ALL SELECT * FROM cc) d) AS only_heap;
-- writes to compacted rows: update, delete, lock, uniqueness
UPDATE cc SET a = a + 100 WHERE id % 10 = 0;
UPDATE cc_heap SET a = a + 100 WHERE id % 10 = 0;
DELETE FROM cc WHERE id % 10 = 1;
DELETE FROM cc_heap WHERE id % 10 = 1;
BEGIN;
SELECT id FROM cc WHERE id = 42 FOR UPDATE;
COMMIT;
INSERT INTO cc VALUES (42, 0, 'duplicate');
SELECT (SELECT count(*) FROM (SELECT * FROM cc EXCEPT ALL SELECT * FROM cc_heap) d) AS only_colfile,
       (SELECT count(*) FROM (SELECT * FROM cc_heap EXCEPT ALL SELECT * FROM cc) d) AS only_heap;
SELECT * FROM mvinc.colfile_check('cc');
-- the 20 updated rows now sit in a new group next to the compacted one,
-- which has 40 dead rows: both are small, the next compaction merges them
-- and leaves the dead rows and their deletion records out
DROP TABLE tids;
CREATE TABLE tids AS SELECT id, ctid AS tid FROM cc;
\set ECHO none
\o /dev/null
SELECT 'VACUUM cc', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''cc'') WHERE row_groups > 1 OR deleted_rows > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('cc');
SELECT count(*) AS moved FROM cc JOIN tids USING (id) WHERE cc.ctid <> tids.tid;
SELECT * FROM mvinc.colfile_check('cc');
SELECT (SELECT count(*) FROM (SELECT * FROM cc EXCEPT ALL SELECT * FROM cc_heap) d) AS only_colfile,
       (SELECT count(*) FROM (SELECT * FROM cc_heap EXCEPT ALL SELECT * FROM cc) d) AS only_heap;
-- added and dropped columns: compaction writes the default of a column
-- added after a group was written, and nothing for a dropped one
ALTER TABLE cc ADD COLUMN extra int DEFAULT 5;
ALTER TABLE cc DROP COLUMN a;
SELECT format('INSERT INTO cc VALUES (%s, %L, %s)', g, md5(g::text), g)
FROM generate_series(1001, 1010) g \gexec
DROP TABLE tids;
CREATE TABLE tids AS SELECT id, ctid AS tid FROM cc;
\set ECHO none
\o /dev/null
SELECT 'VACUUM cc', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''cc'') WHERE row_groups > 1'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, live_rows FROM mvinc.colfile_stats('cc');
SELECT count(*) AS moved FROM cc JOIN tids USING (id) WHERE cc.ctid <> tids.tid;
SELECT extra, count(*) FROM cc GROUP BY extra ORDER BY extra LIMIT 3;
SELECT sum(extra) FILTER (WHERE id > 1000) AS new_rows_extra FROM cc;
SELECT * FROM mvinc.colfile_check('cc');
ANALYZE cc;
SELECT reltuples FROM pg_class WHERE relname = 'cc';
-- a large group with few dead rows keeps its bytes (10%, under
-- mvinc.colfile_compact_dead_fraction): the dead rows only go into its
-- delete vector, and their deletion records away; one with more dead rows
-- is rewritten without them
SET mvinc.colfile_rows_per_group = 100;
CREATE TABLE big (id int PRIMARY KEY, v int) USING colfile;
INSERT INTO big SELECT g, g FROM generate_series(1, 100) g;
SELECT data_offset AS big_offset FROM mvinc.colfile_rowgroup
WHERE relfilenode = pg_relation_filenode('big') AND row_count > 0 \gset
DELETE FROM big WHERE id <= 10;
\set ECHO none
\o /dev/null
SELECT 'VACUUM big', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''big'') WHERE deleted_rows > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('big');
SELECT data_offset = :big_offset AS same_bytes FROM mvinc.colfile_rowgroup
WHERE relfilenode = pg_relation_filenode('big') AND row_count > 0;
SELECT count(*), sum(v) FROM big;
SET enable_seqscan = off;
SELECT count(*) FROM big WHERE id <= 20;
RESET enable_seqscan;
DELETE FROM big WHERE id <= 40;
\set ECHO none
\o /dev/null
SELECT 'VACUUM big', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''big'') WHERE deleted_rows > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('big');
SELECT count(*), sum(v) FROM big;
SELECT * FROM mvinc.colfile_check('big');
-- index entries of an aborted insert go even when its group tuple was
-- pruned before the table's own VACUUM saw it (VACUUM of the metadata table
-- here; another colfile table's VACUUM prunes the pages they share): once
-- compaction's mark is passed, a TID below it in no row group is dead
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE TABLE ab (id int PRIMARY KEY) USING colfile;
INSERT INTO ab VALUES (0);
BEGIN;
INSERT INTO ab SELECT generate_series(1, 100);
ROLLBACK;
VACUUM mvinc.colfile_rowgroup;
VACUUM ab;
SELECT count(*) AS entries FROM bt_page_items('ab_pkey', 1);
\set ECHO none
\o /dev/null
SELECT 'VACUUM ab', 'SELECT pg_sleep(0.2) FROM bt_page_items(''ab_pkey'', 1) HAVING count(*) > 1'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT count(*) AS entries FROM bt_page_items('ab_pkey', 1);
SELECT * FROM ab;
DROP TABLE cc, cc_heap, tids, big, ab;
