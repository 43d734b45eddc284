-- colfile: compaction on the user's terms. Per-table thresholds
-- (mvinc.colfile_set_compaction), compaction on demand
-- (mvinc.colfile_compact, whole table or named row groups) and the row
-- groups it can be given (mvinc.colfile_row_groups). Compacted rows keep
-- their TIDs, column files are folded into their groups, and the table
-- stays equal to a heap copy under the same statements.
SET mvinc.colfile_rows_per_group = 1000;
CREATE TABLE ca (id int PRIMARY KEY, a int, b text, c int) USING colfile;
CREATE TABLE ca_heap (id int PRIMARY KEY, a int, b text, c int);
CREATE FUNCTION ca_same() RETURNS TABLE (only_colfile bigint, only_heap bigint) LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM (SELECT * FROM ca EXCEPT ALL SELECT * FROM ca_heap) d),
         (SELECT count(*) FROM (SELECT * FROM ca_heap EXCEPT ALL SELECT * FROM ca) d) $$;
CREATE FUNCTION ca_both(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE replace(sql, '@T', 'ca');
  EXECUTE replace(sql, '@T', 'ca_heap');
END $$;
SELECT ca_both('INSERT INTO @T SELECT i, i, ''x'' || i, 0 FROM generate_series(1, 3000) i');
-- in place (unindexed columns), and deletes
SELECT ca_both('UPDATE @T SET c = c + 1 WHERE id % 3 = 0');
SELECT ca_both('UPDATE @T SET b = b || ''y'' WHERE id % 7 = 0');
SELECT ca_both('DELETE FROM @T WHERE id % 10 = 0');
SELECT row_group, rows, deleted_rows, column_files FROM mvinc.colfile_row_groups('ca');
CREATE TABLE ca_tids AS SELECT id, ctid AS tid FROM ca;

-- thresholds: checked, per table, shown, forgotten with NULLs
SELECT mvinc.colfile_set_compaction('ca', dead_fraction => 1.5);
SELECT mvinc.colfile_set_compaction('ca', file_fraction => -1);
SELECT mvinc.colfile_set_compaction('ca_heap', dead_fraction => 0.5);
SELECT mvinc.colfile_set_compaction(NULL, 0.5);
SELECT mvinc.colfile_set_compaction('ca', dead_fraction => 0.05);
SELECT * FROM mvinc.colfile_compaction_settings;
SELECT mvinc.colfile_set_compaction('ca', file_fraction => 1000);
SELECT * FROM mvinc.colfile_compaction_settings;
SELECT mvinc.colfile_set_compaction('ca');
SELECT count(*) FROM mvinc.colfile_compaction_settings;

-- the table's thresholds decide: with dead rows at 10 % under a 5 % bound,
-- compaction rewrites every group without its dead rows, folding its
-- column files in. It runs until it has (the first call sets its horizon;
-- another database's capture may hold it).
SELECT mvinc.colfile_set_compaction('ca', dead_fraction => 0.05);
\set ECHO none
\o /dev/null
SELECT 'SELECT mvinc.colfile_compact(''ca'')',
       'SELECT pg_sleep(0.2) FROM mvinc.colfile_row_groups(''ca'') HAVING sum(deleted_rows) > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_group, rows, deleted_rows, column_files FROM mvinc.colfile_row_groups('ca');
SELECT * FROM ca_same();
SELECT count(*) AS moved FROM ca JOIN ca_tids USING (id) WHERE ca.ctid <> ca_tids.tid;
SET enable_seqscan = off;
SELECT count(*) AS found_by_index FROM ca_tids t WHERE EXISTS (SELECT 1 FROM ca WHERE ca.id = t.id AND ca.ctid = t.tid);
SELECT * FROM ca WHERE id = 21;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('ca');

-- a named group is compacted whatever the thresholds: its column file is
-- folded in, the other groups keep theirs
SELECT mvinc.colfile_set_compaction('ca', dead_fraction => 1, file_fraction => 1000);
SELECT ca_both('UPDATE @T SET c = c * 2 WHERE id % 5 = 1');
\set ECHO none
\o /dev/null
SELECT 'SELECT mvinc.colfile_compact(''ca'', 4)',
       'SELECT pg_sleep(0.2) FROM mvinc.colfile_row_groups(''ca'') WHERE row_group = 4 AND column_files > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT row_group, rows, deleted_rows, column_files FROM mvinc.colfile_row_groups('ca');
SELECT * FROM ca_same();
SELECT * FROM mvinc.colfile_check('ca');
-- nothing to do for a group without dead rows or files, or one not there
SELECT groups_rewritten FROM mvinc.colfile_compact('ca', 4, 12345);

-- rolled back: as if never run (in a subtransaction, retried while a
-- snapshot of another session, a capture worker's say, may not see the
-- column files yet: compaction leaves their groups alone meanwhile)
DO $$
DECLARE
  r record;
  files bigint;
BEGIN
  FOR i IN 1..50 LOOP
    BEGIN
      SELECT * INTO r FROM mvinc.colfile_compact('ca', 0, 8);
      SELECT sum(column_files) INTO files FROM mvinc.colfile_row_groups('ca');
      RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN
      NULL;
    END;
    IF r.groups_rewritten > 0 THEN
      RAISE NOTICE 'groups rewritten %, written %, column files folded %, rows written %, dropped %; column files left: %',
        r.groups_rewritten, r.groups_written, r.column_files_folded, r.rows_written, r.rows_dropped, files;
      RETURN;
    END IF;
    PERFORM pg_sleep(0.2);
  END LOOP;
  RAISE NOTICE 'the groups were never compacted';
END $$;
SELECT sum(column_files) FROM mvinc.colfile_row_groups('ca');
SELECT * FROM ca_same();

-- an update in place that changed nothing (a BEFORE trigger has old and
-- new compared) still ties the transaction to its row's group: the
-- compaction in the same transaction leaves that group alone, and a later
-- update lands on the right row
CREATE FUNCTION ca_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER ca_keep BEFORE UPDATE ON ca FOR EACH ROW EXECUTE FUNCTION ca_keep();
BEGIN;
UPDATE ca SET c = c WHERE id = 2001;
SELECT groups_rewritten, column_files_folded FROM mvinc.colfile_compact('ca', 8);
SELECT ca_both('UPDATE @T SET c = 77 WHERE id = 2001');
COMMIT;
DROP TRIGGER ca_keep ON ca;
DROP FUNCTION ca_keep();
SELECT id, c FROM ca WHERE id BETWEEN 2000 AND 2003 ORDER BY id;
SELECT * FROM ca_same();

-- the caller's own uncommitted column updates are not folded, and reads
-- in the same transaction see them after the compaction
BEGIN;
SELECT ca_both('UPDATE @T SET c = c + 100 WHERE id < 5');
SELECT column_files_folded FROM mvinc.colfile_compact('ca', 0);
SELECT row_group, column_files FROM mvinc.colfile_row_groups('ca') WHERE row_group = 0;
SELECT id, c FROM ca WHERE id < 5 ORDER BY id;
COMMIT;
SELECT * FROM ca_same();

-- VACUUM folds files under the table's file threshold, not above it
SELECT mvinc.colfile_set_compaction('ca', file_fraction => 1000);
VACUUM ca;
SELECT sum(column_files) > 0 AS files_kept FROM mvinc.colfile_row_groups('ca');
SELECT mvinc.colfile_set_compaction('ca', file_fraction => 0);
\set ECHO none
\o /dev/null
SELECT 'VACUUM ca',
       'SELECT pg_sleep(0.2) FROM mvinc.colfile_row_groups(''ca'') HAVING sum(column_files) > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT sum(column_files) AS files_left FROM mvinc.colfile_row_groups('ca');
SELECT * FROM ca_same();
SELECT * FROM mvinc.colfile_check('ca');

-- settings outlive TRUNCATE and go with DROP TABLE
TRUNCATE ca;
SELECT "table", dead_fraction, file_fraction FROM mvinc.colfile_compaction_settings;

-- refused: other tables, other roles, a NULL group, read-only transactions
SELECT * FROM mvinc.colfile_compact('ca_heap');
SELECT * FROM mvinc.colfile_compact('ca', NULL::bigint);
SELECT * FROM mvinc.colfile_row_groups('ca_heap');
CREATE ROLE ca_other;
GRANT SELECT, UPDATE ON ca TO ca_other;
SET ROLE ca_other;
SELECT * FROM mvinc.colfile_compact('ca');
SELECT mvinc.colfile_set_compaction('ca', 0.5);
SELECT count(*) FROM mvinc.colfile_compaction_settings;
SELECT count(*) FROM mvinc.colfile_row_groups('ca');
RESET ROLE;
REVOKE SELECT ON ca FROM ca_other;
SET ROLE ca_other;
SELECT count(*) FROM mvinc.colfile_row_groups('ca');
SELECT live_rows FROM mvinc.colfile_stats('ca');
SELECT count(*) FROM mvinc.colfile_check('ca');
RESET ROLE;
BEGIN READ ONLY;
SELECT * FROM mvinc.colfile_compact('ca');
ROLLBACK;
DROP TABLE ca;
SELECT count(*) FROM mvinc.colfile_settings;
DROP TABLE ca_heap, ca_tids;
DROP FUNCTION ca_same, ca_both;
DROP ROLE ca_other;
