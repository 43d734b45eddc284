-- ALTER TABLE ... SET TABLESPACE on colfile tables: the file is copied
-- byte for byte and its metadata under the new file number; rows keep
-- their TIDs (indexes are moved as they are), deletions stay deleted, and
-- an aborted move leaves the table as it was.  (Snapshots older than the
-- move get an error, as after VACUUM FULL: spec colfile_rewrite_snapshot.)
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE cf_space LOCATION '';
RESET allow_in_place_tablespaces;
SET mvinc.colfile_rows_per_group = 100;
CREATE TABLE ts (id int PRIMARY KEY, v int, t text) USING colfile;
INSERT INTO ts SELECT g, g % 13, 'row ' || g FROM generate_series(1, 450) g;
INSERT INTO ts SELECT g, g % 13, 'row ' || g FROM generate_series(451, 460) g;
UPDATE ts SET v = v + 100 WHERE id % 7 = 0;
DELETE FROM ts WHERE id % 5 = 0;
CREATE TABLE ts_before AS SELECT ctid AS tid, * FROM ts;
SELECT pg_relation_filenode('ts') AS old_node \gset
ALTER TABLE ts SET TABLESPACE cf_space;
SELECT tablespace FROM pg_tables WHERE tablename = 'ts';
-- the same rows at the same TIDs, found by the index too
SELECT count(*) AS differences FROM (
  (SELECT ctid AS tid, * FROM ts EXCEPT ALL SELECT * FROM ts_before)
  UNION ALL
  (SELECT * FROM ts_before EXCEPT ALL SELECT ctid AS tid, * FROM ts)) d;
SET enable_seqscan = off;
SELECT id, v, t FROM ts WHERE id IN (14, 15, 16) ORDER BY id;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('ts');
SELECT count(*) AS old_metadata FROM mvinc.colfile_rowgroup WHERE relfilenode = :old_node;
-- writes, VACUUM and compaction go on in the new place
INSERT INTO ts SELECT g, 1, 'later ' || g FROM generate_series(1001, 1020) g;
DELETE FROM ts WHERE id BETWEEN 100 AND 300;
VACUUM ts;
SELECT count(*), sum(v) FROM ts;
SELECT * FROM mvinc.colfile_check('ts');
-- buffered inserts of the moving transaction move along; an aborted move
-- changes nothing
BEGIN;
INSERT INTO ts VALUES (2001, 2, 'in the moving transaction');
ALTER TABLE ts SET TABLESPACE pg_default;
SELECT count(*), sum(v) FROM ts;
ROLLBACK;
SELECT tablespace FROM pg_tables WHERE tablename = 'ts';
SELECT count(*), sum(v) FROM ts;
BEGIN;
INSERT INTO ts VALUES (2001, 2, 'in the moving transaction');
ALTER TABLE ts SET TABLESPACE pg_default;
COMMIT;
SELECT tablespace FROM pg_tables WHERE tablename = 'ts';
SELECT count(*), sum(v) FROM ts;
SELECT * FROM mvinc.colfile_check('ts');
DROP TABLE ts, ts_before;
DROP TABLESPACE cf_space;
RESET mvinc.colfile_rows_per_group;
