-- colfile: a transaction's small statements do not leave small row groups.
-- Every INSERT statement writes a row group of its own; before commit, the
-- groups a transaction wrote into a table over adjacent TID space are
-- merged (up to mvinc.colfile_rows_per_group rows), keeping every TID, with
-- the transaction's own column updates folded in. Checked against a heap
-- copy under the same statements, through sequential scans and index
-- lookups of every row.
SET mvinc.colfile_rows_per_group = 1000;
CREATE TABLE cm (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE TABLE cm_heap (id int PRIMARY KEY, a int, b text);
CREATE FUNCTION cm_both(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE replace(sql, '@T', 'cm');
  EXECUTE replace(sql, '@T', 'cm_heap');
END $$;
-- rows lo..hi, one INSERT statement each, into both
CREATE FUNCTION cm_insert(lo int, hi int, a int, b text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN lo..hi LOOP
    PERFORM cm_both(format('INSERT INTO @T VALUES (%s, %s, %L)', i, a, b));
  END LOOP;
END $$;
-- equal as rows, equal through the primary key (each heap row found by its
-- key in the colfile table), and colfile_check clean
CREATE FUNCTION cm_same() RETURNS TABLE (only_colfile bigint, only_heap bigint, by_key bigint, problems bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_seqscan = on;
  only_colfile := (SELECT count(*) FROM (SELECT * FROM cm EXCEPT ALL SELECT * FROM cm_heap) d);
  only_heap := (SELECT count(*) FROM (SELECT * FROM cm_heap EXCEPT ALL SELECT * FROM cm) d);
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  by_key := (SELECT count(*) FROM cm_heap h WHERE (SELECT c.a FROM cm c WHERE c.id = h.id) IS NOT DISTINCT FROM h.a);
  problems := (SELECT count(*) FROM mvinc.colfile_check('cm'));
  RETURN NEXT;
END $$;

-- 2,000 single-row INSERTs in one PL/pgSQL loop: two groups of 1,000 rows
DO $$ BEGIN
  FOR i IN 1..2000 LOOP
    PERFORM cm_both(format('INSERT INTO @T VALUES (%s, %s, %L)', i, i % 7, 'r' || i));
  END LOOP;
END $$;
SELECT row_group, rows, deleted_rows, column_files FROM mvinc.colfile_row_groups('cm');
SELECT * FROM cm_same();

-- in autocommit, each statement is its own transaction: nothing to merge
INSERT INTO cm VALUES (2001, 0, 'a');
INSERT INTO cm VALUES (2002, 0, 'a');
INSERT INTO cm_heap VALUES (2001, 0, 'a'), (2002, 0, 'a');
SELECT count(*) AS groups FROM mvinc.colfile_row_groups('cm');

-- the transaction's deletes and updates of its own rows, in place
-- (unindexed columns) and not (the key), are kept; its column files are
-- folded into the merged group
BEGIN;
SELECT cm_insert(3001, 3040, 1, 'n');
SELECT cm_both('UPDATE @T SET a = a + 10 WHERE id BETWEEN 3001 AND 3010');
SELECT cm_both('UPDATE @T SET b = b || ''!'' WHERE id % 4 = 0 AND id > 3000');
SELECT cm_both('UPDATE @T SET id = id + 100 WHERE id BETWEEN 3031 AND 3035');
SELECT cm_both('DELETE FROM @T WHERE id BETWEEN 3021 AND 3025');
SELECT cm_insert(3041, 3050, 2, 'm');
SELECT count(*) > 40 AS many_groups_before_commit, sum(column_files) > 0 AS with_files
  FROM mvinc.colfile_row_groups('cm') WHERE row_group > 100;
COMMIT;
SELECT count(*) AS groups, sum(column_files) AS column_files, sum(rows) AS rows, sum(deleted_rows) AS deleted
  FROM mvinc.colfile_row_groups('cm') WHERE row_group > 100;
SELECT * FROM cm_same();

-- a rolled-back savepoint leaves a gap: what is on either side merges
BEGIN;
SELECT cm_insert(4001, 4010, 3, 's');
SAVEPOINT sp;
INSERT INTO cm VALUES (4011, 3, 'gone');
INSERT INTO cm VALUES (4012, 3, 'gone');
ROLLBACK TO sp;
SAVEPOINT sp2;
SELECT cm_insert(4013, 4020, 3, 'kept');
RELEASE sp2;
SELECT cm_insert(4021, 4030, 3, 't');
COMMIT;
SELECT rows FROM mvinc.colfile_row_groups('cm') WHERE row_group > 100 ORDER BY row_group DESC LIMIT 2;
SELECT * FROM cm_same();
-- the rolled-back keys are free again
INSERT INTO cm VALUES (4011, 3, 'later');
INSERT INTO cm_heap VALUES (4011, 3, 'later');

-- a whole transaction rolled back leaves nothing
BEGIN;
SELECT cm_insert(5001, 5020, 4, 'x');
ROLLBACK;
SELECT * FROM cm_same();

-- two tables in one transaction, statements interleaved; a cursor WITH
-- HOLD opened before commit reads what it read
CREATE TABLE cm2 (k int, v int) USING colfile;
BEGIN;
SELECT cm_insert(6001, 6005, 5, 'two');
DECLARE c CURSOR WITH HOLD FOR SELECT id, b FROM cm WHERE id BETWEEN 6001 AND 6100 ORDER BY id;
SELECT cm_insert(6006, 6030, 5, 'two');
DO $$ BEGIN FOR i IN 1..30 LOOP INSERT INTO cm2 VALUES (i, i * i); END LOOP; END $$;
COMMIT;
FETCH ALL FROM c;
CLOSE c;
SELECT count(*) AS groups, sum(rows) AS rows FROM mvinc.colfile_row_groups('cm2');
SELECT sum(v), count(*) FROM cm2;
SELECT * FROM cm_same();

-- TRUNCATE in the transaction: only the new storage's groups merge
BEGIN;
INSERT INTO cm2 VALUES (100, 1);
INSERT INTO cm2 VALUES (101, 1);
TRUNCATE cm2;
INSERT INTO cm2 VALUES (200, 2);
INSERT INTO cm2 VALUES (201, 2);
INSERT INTO cm2 VALUES (202, 2);
COMMIT;
SELECT row_group, rows FROM mvinc.colfile_row_groups('cm2');
SELECT * FROM cm2 ORDER BY k;

-- statements larger than a quarter of a group are left as they are
BEGIN;
INSERT INTO cm2 SELECT i, 0 FROM generate_series(1, 600) i;
INSERT INTO cm2 SELECT i, 0 FROM generate_series(1, 600) i;
INSERT INTO cm2 VALUES (1, 1);
INSERT INTO cm2 VALUES (2, 2);
COMMIT;
SELECT row_group, rows FROM mvinc.colfile_row_groups('cm2');

-- a unique index: every buffer records its TID range for other sessions'
-- uniqueness checks; a large statement after a small one (no extension of
-- its range then), and a rolled-back savepoint whose reservation covered
-- what was left of the transaction's TID space (later rows must not fall
-- in it: VACUUM takes every TID of an aborted reservation for dead)
CREATE TABLE cu (id int PRIMARY KEY, v int) USING colfile;
CREATE FUNCTION cu_check() RETURNS TABLE (rows bigint, by_key bigint, problems bigint)
LANGUAGE plpgsql AS $$
BEGIN
  rows := (SELECT count(*) FROM cu);
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  by_key := (SELECT count(*) FROM (SELECT id FROM cu) s WHERE EXISTS (SELECT 1 FROM cu c WHERE c.id = s.id));
  problems := (SELECT count(*) FROM mvinc.colfile_check('cu'));
  RETURN NEXT;
END $$;
BEGIN;
INSERT INTO cu VALUES (0, 0);
INSERT INTO cu SELECT i, i FROM generate_series(1, 1500) i;
COMMIT;
SELECT * FROM cu_check();
UPDATE cu SET v = -1 WHERE id = 1499;
SELECT * FROM cu WHERE id = 1499;
INSERT INTO cu VALUES (1499, 0);
BEGIN;
INSERT INTO cu VALUES (2001, 1);
SAVEPOINT s;
INSERT INTO cu VALUES (0, 99);
ROLLBACK TO s;
INSERT INTO cu VALUES (2002, 2);
INSERT INTO cu VALUES (2003, 3);
COMMIT;
VACUUM cu;
SELECT * FROM cu_check();
INSERT INTO cu VALUES (2002, 22);
-- the same through an exception block
DO $$ BEGIN
  FOR i IN 3001..3010 LOOP
    BEGIN
      INSERT INTO cu VALUES (i, i);
      IF i % 3 = 0 THEN INSERT INTO cu VALUES (0, i); END IF;
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
  END LOOP;
END $$;
VACUUM cu;
SELECT * FROM cu_check();
SELECT count(*) FROM cu WHERE id BETWEEN 3001 AND 3010;

-- an exclusion constraint writes a group per row, all in the last (and
-- only) command of the transaction: merged too
CREATE TABLE cx (r int4range, EXCLUDE USING gist (r WITH &&)) USING colfile;
INSERT INTO cx SELECT int4range(i * 10, i * 10 + 5) FROM generate_series(1, 10) i;
SELECT count(*) AS groups, sum(rows) AS rows FROM mvinc.colfile_row_groups('cx');
INSERT INTO cx VALUES (int4range(52, 53));
SET enable_seqscan = off;
SELECT r FROM cx WHERE r && int4range(40, 71) ORDER BY r;
RESET enable_seqscan;
DROP TABLE cx;

-- TRUNCATE of a table created, or already truncated, in the transaction:
-- the file's TID allocator starts again, and so does the transaction's
BEGIN;
CREATE TABLE ct (id int PRIMARY KEY, v int) USING colfile;
INSERT INTO ct VALUES (1, 1);
TRUNCATE ct;
INSERT INTO ct VALUES (2, 2);
COMMIT;
INSERT INTO ct VALUES (3, 3);
BEGIN;
TRUNCATE ct;
INSERT INTO ct VALUES (4, 4);
TRUNCATE ct;
INSERT INTO ct VALUES (5, 5);
INSERT INTO ct VALUES (6, 6);
COMMIT;
INSERT INTO ct VALUES (7, 7);
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT * FROM ct WHERE id IN (1, 2, 3, 4, 5, 6, 7) ORDER BY id;
RESET enable_seqscan; RESET enable_bitmapscan;
SELECT * FROM ct ORDER BY id;
SELECT count(*) AS problems FROM mvinc.colfile_check('ct');

-- what VACUUM and a compaction find afterwards is whole
VACUUM cm;
SELECT * FROM cm_same();
SELECT groups_rewritten >= 0 AS compacted FROM mvinc.colfile_compact('cm');
SELECT * FROM cm_same();

DROP TABLE cm, cm_heap, cm2, cu, ct;
DROP FUNCTION cu_check();
DROP FUNCTION cm_both(text), cm_insert(int, int, int, text), cm_same();
