-- colfile: single-row UPDATEs by key each add a column file to their row
-- group, and a fetch by TID lists the group's files. A statement that
-- finds its group holding many files every snapshot sees merges them (as
-- VACUUM would), so a group updated all the time between two VACUUMs
-- keeps few; the values stay those of a heap twin given the same updates.
CREATE TABLE hu (id int PRIMARY KEY, v int, w text) USING colfile;
CREATE TABLE hu_heap (id int PRIMARY KEY, v int, w text);
INSERT INTO hu SELECT g, 0, 'w' FROM generate_series(1, 500) g;
INSERT INTO hu_heap SELECT * FROM hu;
-- 300 statements, each its own transaction (not echoed)
\set ECHO none
\o /dev/null
SELECT format('UPDATE %I SET v = v + %s, w = w || %L WHERE id = %s',
			  t, i, chr(97 + i % 26), 1 + (i * 37) % 500)
  FROM generate_series(1, 300) i, (VALUES ('hu'), ('hu_heap')) AS x(t)
 ORDER BY i, t \gexec
\o
\set ECHO all
SELECT row_groups, column_files < 100 AS few_files FROM mvinc.colfile_stats('hu');
-- the same rows, read by a scan and by fetches through the key
SELECT count(*) AS differ FROM hu FULL JOIN hu_heap h USING (id)
 WHERE hu.v IS DISTINCT FROM h.v OR hu.w IS DISTINCT FROM h.w;
SET enable_seqscan = off;
SELECT count(*) AS differ_by_key
  FROM generate_series(1, 500) k
 WHERE (SELECT (v, w) FROM hu WHERE id = k) IS DISTINCT FROM
	   (SELECT (v, w) FROM hu_heap WHERE id = k);
RESET enable_seqscan;
-- not in a SERIALIZABLE transaction (a merge would be a write that other
-- readers conflict out to): its files wait for VACUUM
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT column_files AS before FROM mvinc.colfile_stats('hu') \gset
UPDATE hu SET v = v + 1 WHERE id = 1;
SELECT column_files = :before + 1 AS only_added FROM mvinc.colfile_stats('hu');
COMMIT;
SELECT * FROM mvinc.colfile_check('hu');
DROP TABLE hu, hu_heap;
-- a merged file takes the seq of the newest file it replaces: once both
-- tuples are frozen, a backend that cached the old file must not take it
-- for the merged one (the per-backend file cache keys on the raw xmin)
CREATE TABLE fz (id int, v int) USING colfile WITH (autovacuum_enabled = off);
INSERT INTO fz SELECT g, 0 FROM generate_series(1, 100) g;
UPDATE fz SET v = 1 WHERE id = 1;
UPDATE fz SET v = 2 WHERE id = 2;
VACUUM FREEZE mvinc.colfile_colfile;
SELECT * FROM fz WHERE id IN (1, 2) ORDER BY id;
VACUUM fz;
VACUUM FREEZE mvinc.colfile_colfile;
SELECT column_files FROM mvinc.colfile_stats('fz');
SELECT * FROM fz WHERE id IN (1, 2) ORDER BY id;
DROP TABLE fz;
