-- colfile: space reuse. VACUUM lists the bytes of row groups that no
-- snapshot can reach any more (their metadata tuples pruned) as free, new
-- row groups fill them, and a free tail goes back to the file system.
-- VACUUM runs until it has freed what it should: another database's
-- change capture may hold the horizon back for a moment.
SET mvinc.colfile_rows_per_group = 1000;
CREATE TABLE sp (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE TABLE sp_heap (id int PRIMARY KEY, a int, b text);
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(1, 1000) g;
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(1001, 2000) g;
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(2001, 3000) g;
INSERT INTO sp_heap SELECT * FROM sp;
SELECT pg_relation_size('sp') AS size3 \gset
SELECT row_groups, free_bytes FROM mvinc.colfile_stats('sp');
-- the middle group dies; its bytes become a hole
DELETE FROM sp WHERE id BETWEEN 1001 AND 2000;
DELETE FROM sp_heap WHERE id BETWEEN 1001 AND 2000;
\set ECHO none
\o /dev/null
SELECT 'VACUUM sp', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''sp'') WHERE free_bytes = 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_groups, free_bytes > 0 AS has_free_bytes FROM mvinc.colfile_stats('sp');
SELECT free_bytes AS free_before FROM mvinc.colfile_stats('sp') \gset
SELECT * FROM mvinc.colfile_check('sp');
-- a group of the same shape fills the hole: the file does not grow
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(3001, 4000) g;
INSERT INTO sp_heap SELECT g, g, md5(g::text) FROM generate_series(3001, 4000) g;
SELECT pg_relation_size('sp') = :size3 AS same_size,
       free_bytes < :free_before AS hole_used
FROM mvinc.colfile_stats('sp');
SELECT * FROM mvinc.colfile_check('sp');
-- every row as in the heap twin, by a scan and by the index
SELECT count(*), sum(a), count(DISTINCT b) FROM sp;
SELECT (SELECT count(*) FROM (SELECT * FROM sp EXCEPT SELECT * FROM sp_heap) d) AS only_colfile,
       (SELECT count(*) FROM (SELECT * FROM sp_heap EXCEPT SELECT * FROM sp) d) AS only_heap;
SET enable_seqscan = off;
SELECT count(*), sum(a) FROM sp WHERE id BETWEEN 900 AND 3100;
SELECT b = md5('3500') AS right_row FROM sp WHERE id = 3500;
RESET enable_seqscan;
-- an aborted insert's bytes are free too, with no deletion: afterwards the
-- space available (free bytes minus file size) is back to what it was,
-- less the committed one-row group (within a page)
SELECT free_bytes - pg_relation_size('sp') AS avail_before FROM mvinc.colfile_stats('sp') \gset
BEGIN;
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(5001, 8000) g;
ROLLBACK;
BEGIN;
INSERT INTO sp SELECT 9000, 9000, 'kept';
SAVEPOINT s;
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(9001, 10000) g;
ROLLBACK TO s;
COMMIT;
INSERT INTO sp_heap VALUES (9000, 9000, 'kept');
SELECT pg_relation_size('sp') AS size_aborted \gset
\set ECHO none
\o /dev/null
SELECT 'VACUUM sp', format('SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''sp'') WHERE free_bytes - pg_relation_size(''sp'') < %s', :avail_before - 8192)
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT pg_relation_size('sp') < :size_aborted AS tail_truncated,
       free_bytes - pg_relation_size('sp') >= :avail_before - 8192 AS aborted_space_back
FROM mvinc.colfile_stats('sp');
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(5001, 7000) g;
INSERT INTO sp_heap SELECT g, g, md5(g::text) FROM generate_series(5001, 7000) g;
SELECT pg_relation_size('sp') <= :size_aborted AS reused_aborted_space;
SELECT * FROM mvinc.colfile_check('sp');
SELECT (SELECT count(*) FROM (SELECT * FROM sp EXCEPT SELECT * FROM sp_heap) d) AS only_colfile,
       (SELECT count(*) FROM (SELECT * FROM sp_heap EXCEPT SELECT * FROM sp) d) AS only_heap;
-- everything deleted: the file shrinks back to its metapage
DELETE FROM sp;
\set ECHO none
\o /dev/null
SELECT 'VACUUM sp', 'SELECT pg_sleep(0.2) WHERE pg_relation_size(''sp'') > 8192'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT pg_relation_size('sp') AS size_empty, row_groups, free_bytes
FROM mvinc.colfile_stats('sp');
INSERT INTO sp SELECT g, g, md5(g::text) FROM generate_series(1, 1500) g;
SELECT count(*), sum(a), count(DISTINCT b) FROM sp;
SELECT * FROM mvinc.colfile_check('sp');
DROP TABLE sp, sp_heap;
