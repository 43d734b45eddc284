-- colfile column updates: an UPDATE that changes no indexed column of a
-- table without AFTER UPDATE row triggers keeps each row's TID and writes
-- only the changed columns (a column file); every other UPDATE moves rows.
-- in_place() tells which happened to the row with id 1.
CREATE TABLE cu (id int PRIMARY KEY, k int, a int, b text, c float8) USING colfile;
INSERT INTO cu SELECT g, g % 5, g, 'b' || g, g / 2.0 FROM generate_series(1, 20) g;
CREATE TABLE cu_tid (tid tid);
CREATE FUNCTION cu_mark() RETURNS void LANGUAGE sql AS
  $$ DELETE FROM cu_tid; INSERT INTO cu_tid SELECT ctid FROM cu WHERE id = 1 $$;
CREATE FUNCTION cu_in_place() RETURNS bool LANGUAGE sql AS
  $$ SELECT (SELECT ctid FROM cu WHERE id = 1) = (SELECT tid FROM cu_tid) $$;
CREATE FUNCTION cu_files() RETURNS bigint LANGUAGE sql AS
  $$ SELECT column_files FROM mvinc.colfile_stats('cu') $$;

-- unindexed columns: in place, one column file per statement and row group
SELECT cu_mark();
UPDATE cu SET a = a * 10, c = c + 1 WHERE id <= 10 RETURNING id, a, c;
SELECT cu_in_place() AS in_place, cu_files() AS files;
SELECT * FROM cu ORDER BY id LIMIT 3;
-- an indexed column (the primary key; k once indexed) moves the rows
UPDATE cu SET id = id WHERE id = 1;          -- unchanged value: in place
SELECT cu_in_place() AS in_place;
UPDATE cu SET id = 100 WHERE id = 2;
SELECT count(*) FROM cu WHERE id = 100;
CREATE INDEX cu_k ON cu (k);
SELECT cu_mark();
UPDATE cu SET k = k + 1 WHERE id = 1;
SELECT cu_in_place() AS in_place;
SELECT cu_mark();
UPDATE cu SET k = k, b = 'same k' WHERE id = 1;  -- indexed but equal: in place
SELECT cu_in_place() AS in_place;
-- expression and partial indexes make their columns indexed
CREATE INDEX cu_lower_b ON cu (lower(b));
SELECT cu_mark();
UPDATE cu SET b = 'B1' WHERE id = 1;
SELECT cu_in_place() AS in_place;
DROP INDEX cu_lower_b;
CREATE INDEX cu_part ON cu (id) WHERE c > 100;
SELECT cu_mark();
UPDATE cu SET c = 1000 WHERE id = 1;
SELECT cu_in_place() AS in_place;
SET enable_seqscan = off;
SELECT id, c FROM cu WHERE c > 100;
RESET enable_seqscan;
DROP INDEX cu_part;
-- AFTER UPDATE row triggers read the old and new rows by TID: rows move
CREATE FUNCTION cu_log() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE NOTICE 'old a %, new a %', OLD.a, NEW.a; RETURN NULL; END $$;
CREATE TRIGGER cu_after AFTER UPDATE ON cu FOR EACH ROW EXECUTE FUNCTION cu_log();
SELECT cu_mark();
UPDATE cu SET a = 7 WHERE id = 1;
SELECT cu_in_place() AS in_place;
DROP TRIGGER cu_after ON cu;
-- a statement-level AFTER trigger does not
CREATE FUNCTION cu_stmt() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE NOTICE 'statement done'; RETURN NULL; END $$;
CREATE TRIGGER cu_after_stmt AFTER UPDATE ON cu FOR EACH STATEMENT EXECUTE FUNCTION cu_stmt();
SELECT cu_mark();
UPDATE cu SET a = 8 WHERE id = 1;
SELECT cu_in_place() AS in_place;
DROP TRIGGER cu_after_stmt ON cu;
-- a BEFORE trigger that changes an indexed column: old and new are compared
CREATE FUNCTION cu_bump_k() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN NEW.k := NEW.k + 100; RETURN NEW; END $$;
CREATE TRIGGER cu_before BEFORE UPDATE ON cu FOR EACH ROW EXECUTE FUNCTION cu_bump_k();
SELECT cu_mark();
UPDATE cu SET a = 9 WHERE id = 1;
SELECT cu_in_place() AS in_place, k, a FROM cu WHERE id = 1;
SET enable_seqscan = off;
SELECT id, a FROM cu WHERE k = (SELECT k FROM cu WHERE id = 1);
RESET enable_seqscan;
DROP TRIGGER cu_before ON cu;
-- ... and one that changes an unindexed column the statement does not assign
CREATE FUNCTION cu_set_b() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN NEW.b := 'from trigger'; RETURN NEW; END $$;
CREATE TRIGGER cu_before_b BEFORE UPDATE ON cu FOR EACH ROW EXECUTE FUNCTION cu_set_b();
SELECT cu_mark();
UPDATE cu SET a = 10 WHERE id = 1;
SELECT cu_in_place() AS in_place, a, b FROM cu WHERE id = 1;
DROP TRIGGER cu_before_b ON cu;
-- transition tables read the old rows after the update: rows move, on the
-- table itself and under a partitioned parent that has the trigger
CREATE FUNCTION cu_old_table() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE NOTICE 'old a: %, new a: %', (SELECT string_agg(a::text, ',') FROM old_t),
       (SELECT string_agg(a::text, ',') FROM new_t); RETURN NULL; END $$;
CREATE TRIGGER cu_trans AFTER UPDATE ON cu REFERENCING OLD TABLE AS old_t NEW TABLE AS new_t
  FOR EACH STATEMENT EXECUTE FUNCTION cu_old_table();
SELECT cu_mark();
UPDATE cu SET a = 99 WHERE id = 1;
SELECT cu_in_place() AS in_place;
DROP TRIGGER cu_trans ON cu;
CREATE TABLE cu_tp (id int, a int) PARTITION BY RANGE (id);
CREATE TABLE cu_tp1 PARTITION OF cu_tp FOR VALUES FROM (0) TO (100) USING colfile;
INSERT INTO cu_tp VALUES (1, 1), (2, 2);
CREATE TRIGGER cu_tp_trans AFTER UPDATE ON cu_tp REFERENCING OLD TABLE AS old_t NEW TABLE AS new_t
  FOR EACH STATEMENT EXECUTE FUNCTION cu_old_table();
UPDATE cu_tp SET a = a * 10;
DROP TABLE cu_tp;
-- a FOR UPDATE cursor declared before an update in place of its rows
-- skips them (updated by a later command), as heap
BEGIN ISOLATION LEVEL SERIALIZABLE;
CREATE TABLE cu_cur (a int) USING colfile;
INSERT INTO cu_cur VALUES (1);
DECLARE c1 NO SCROLL CURSOR FOR SELECT * FROM cu_cur FOR UPDATE;
UPDATE cu_cur SET a = 2;
FETCH ALL FROM c1;
COMMIT;
DROP TABLE cu_cur;

-- generated columns follow the columns they are computed from
ALTER TABLE cu ADD COLUMN g int GENERATED ALWAYS AS (a * 2) STORED;
SELECT cu_mark();
UPDATE cu SET a = 11 WHERE id = 1;
SELECT cu_in_place() AS in_place, a, g FROM cu WHERE id = 1;

-- the columns a statement assigns are its own: a failed statement's are
-- forgotten, a data-modifying WITH counts, two UPDATEs of one table in one
-- statement are taken together
BEGIN;
SAVEPOINT s;
UPDATE cu SET b = 'x' || (1 / 0) WHERE id = 1;
ROLLBACK TO s;
WITH u AS (UPDATE cu SET a = 12 WHERE id = 1 RETURNING a) SELECT * FROM u;
SELECT a, b FROM cu WHERE id = 1;
COMMIT;
WITH u1 AS (UPDATE cu SET a = 13 WHERE id = 3 RETURNING id),
     u2 AS (UPDATE cu SET c = 13 WHERE id = 4 RETURNING id)
SELECT (SELECT id FROM u1), (SELECT id FROM u2);
SELECT id, a, c FROM cu WHERE id IN (3, 4) ORDER BY id;
-- a function an UPDATE calls per row, itself updating the table
CREATE FUNCTION cu_touch(i int) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN UPDATE cu SET c = -i WHERE id = i + 10; RETURN i; END $$;
UPDATE cu SET a = cu_touch(id) WHERE id BETWEEN 5 AND 7;
SELECT id, a, c FROM cu WHERE id IN (5, 6, 7, 15, 16, 17) ORDER BY id;

-- savepoints, cursors, repeated updates of a row in one transaction
BEGIN;
UPDATE cu SET a = 1 WHERE id = 8;
SAVEPOINT s;
UPDATE cu SET a = 2 WHERE id = 8;
DECLARE cur CURSOR FOR SELECT a FROM cu WHERE id = 8;
UPDATE cu SET a = 3 WHERE id = 8;
FETCH cur;
SELECT a FROM cu WHERE id = 8;
ROLLBACK TO s;
SELECT a FROM cu WHERE id = 8;
UPDATE cu SET a = a + 1 WHERE id = 8;
COMMIT;
SELECT a FROM cu WHERE id = 8;
-- one command meeting a row twice (a join) updates it once, as heap
WITH u AS (UPDATE cu SET a = v FROM (VALUES (9, 1), (9, 2)) v(i, v)
           WHERE cu.id = v.i RETURNING cu.a)
SELECT count(*) AS updated, min(a) IN (1, 2) AS one_of_them FROM u;
-- ON CONFLICT DO UPDATE in place, and twice in one command
INSERT INTO cu (id, k, a) VALUES (10, 0, 0) ON CONFLICT (id) DO UPDATE SET a = excluded.a + 1;
SELECT a FROM cu WHERE id = 10;
INSERT INTO cu (id, k, a) VALUES (10, 0, 0), (10, 0, 0) ON CONFLICT (id) DO UPDATE SET a = 5;

-- foreign keys: a child's check (FOR KEY SHARE) on an updated parent
CREATE TABLE cu_child (id int PRIMARY KEY, parent int REFERENCES cu) USING colfile;
INSERT INTO cu_child VALUES (1, 1);
-- the parent now has AFTER UPDATE triggers (the foreign key's): rows move
SELECT cu_mark();
UPDATE cu SET a = 14 WHERE id = 1;
SELECT cu_in_place() AS in_place;
-- the child's foreign key check is an AFTER UPDATE trigger too; it finds 3
UPDATE cu_child SET parent = 3 WHERE id = 1;
SELECT * FROM cu_child;
DROP TABLE cu_child;
UPDATE cu SET a = 2 WHERE id = 9;

-- VACUUM merges a group's column files into one once every snapshot sees
-- them, or folds them into the group when it rewrites it (here: small
-- groups merged; colfile_admin tests the thresholds)
SELECT cu_files() > 1 AS several_files;
\set ECHO none
\o /dev/null
SELECT 'VACUUM cu', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''cu'') WHERE column_files > 1'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT cu_files() <= 1 AS files_merged_or_folded;
SELECT count(*) AS stale_generated FROM cu WHERE g IS DISTINCT FROM a * 2;
SELECT * FROM mvinc.colfile_check('cu');
SELECT id, k, a, b, c, g FROM cu ORDER BY id;
-- a new index over updated values; VACUUM FULL folds files into row groups
CREATE INDEX cu_a ON cu (a);
SET enable_seqscan = off;
SELECT id FROM cu WHERE a = 13;
RESET enable_seqscan;
VACUUM FULL cu;
SELECT cu_files() AS files_after_vacuum_full;
SELECT id, k, a, b, c, g FROM cu ORDER BY id;

-- turned off, every UPDATE moves rows
SET mvinc.colfile_column_updates = off;
SELECT cu_mark();
UPDATE cu SET c = 0 WHERE id = 1;
SELECT cu_in_place() AS in_place;
RESET mvinc.colfile_column_updates;

-- partitions: in place within a partition; a move to another partition is
-- a delete and an insert
CREATE TABLE cu_p (id int, part int, v int) PARTITION BY LIST (part);
CREATE TABLE cu_p1 PARTITION OF cu_p FOR VALUES IN (1) USING colfile;
CREATE TABLE cu_p2 PARTITION OF cu_p FOR VALUES IN (2) USING colfile;
INSERT INTO cu_p VALUES (1, 1, 1), (2, 1, 2);
CREATE TEMP TABLE cu_ptid AS SELECT ctid AS tid FROM cu_p1 WHERE id = 1;
UPDATE cu_p SET v = 10 WHERE id = 1;
SELECT ctid = (SELECT tid FROM cu_ptid) AS in_place, * FROM cu_p1 WHERE id = 1;
UPDATE cu_p SET part = 2 WHERE id = 2;
SELECT tableoid::regclass, * FROM cu_p ORDER BY id;
DROP TABLE cu_p;

DROP TABLE cu, cu_tid;
DROP FUNCTION cu_mark, cu_in_place, cu_files, cu_log, cu_stmt, cu_bump_k, cu_set_b, cu_touch, cu_old_table;
