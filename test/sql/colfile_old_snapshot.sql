-- colfile: index scans under snapshots that do not see many row groups.
-- An index entry's row is found through its row group, looked up under
-- the scan's snapshot; rows inserted after the snapshot, or by aborted
-- transactions, have index entries into groups it does not see, and those
-- lookups are memoized per snapshot (colfile_group_memo.c). Whatever the
-- memo holds, an index scan returns what a sequential scan in the same
-- snapshot does: here with aborted groups between committed ones, and
-- with cursors older than their own transaction's later inserts, deletes,
-- updates, subtransactions and compactions. (A snapshot older than other
-- sessions' writes: specs/colfile_old_snapshot.spec.)
CREATE TABLE os (id int PRIMARY KEY, v int, w text) USING colfile;

-- the same aggregate through the primary key (forwards and backwards)
-- and by a sequential scan, in the current snapshot (each statement
-- planned when run)
CREATE FUNCTION os_check(OUT by_index text, OUT backwards text, OUT by_seqscan text,
                         OUT agree bool) LANGUAGE plpgsql AS $$
DECLARE
  q text := 'SELECT format(''%s rows, sum %s, %s'', count(*), sum(v), sum(length(w))) FROM ';
  seqscan text := current_setting('enable_seqscan');
  bitmapscan text := current_setting('enable_bitmapscan');
  indexscan text := current_setting('enable_indexscan');
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  EXECUTE q || 'os WHERE id > 0' INTO by_index;
  EXECUTE q || '(SELECT * FROM os WHERE id > 0 ORDER BY id DESC) s' INTO backwards;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  EXECUTE q || 'os' INTO by_seqscan;
  PERFORM set_config('enable_seqscan', seqscan, true);
  PERFORM set_config('enable_bitmapscan', bitmapscan, true);
  PERFORM set_config('enable_indexscan', indexscan, true);
  agree := by_index = by_seqscan AND backwards = by_seqscan;
END $$;

-- the next row of two cursors over the same aggregate, and whether they agree
CREATE FUNCTION os_both(i refcursor, s refcursor, OUT by_index text, OUT by_seqscan text,
                        OUT agree bool) LANGUAGE plpgsql AS $$
DECLARE a record; b record;
BEGIN
  FETCH i INTO a;
  FETCH s INTO b;
  by_index := a::text;
  by_seqscan := b::text;
  agree := by_index = by_seqscan;
END $$;

SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(v), sum(length(w)) FROM os WHERE id > 0;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- 150 committed groups, each followed by an aborted one; keys interleave
-- the groups, so a walk in key order goes from group to group
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO os SELECT g * 1000 + %s, g, md5(g::text) FROM generate_series(1, 20) g', i),
       format('BEGIN; INSERT INTO os SELECT g * 1000 + %s, g, %L FROM generate_series(1, 20) g; ROLLBACK',
              i + 500, 'aborted')
FROM generate_series(1, 150) i \gexec
\o
\set ECHO all
SELECT row_groups, live_rows FROM mvinc.colfile_stats('os');
SELECT * FROM os_check();
-- the same in parallel workers (their snapshot is a restored copy)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_index_scan_size = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(v), sum(length(w)) FROM os WHERE id > 0;
SELECT count(*), sum(v), sum(length(w)) FROM os WHERE id > 0;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_index_scan_size;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- cursors declared before their transaction's own writes keep reading
-- the table as it was; lookups go on between the writes (cp)
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE ci CURSOR FOR SELECT count(*), sum(v), sum(length(w)) FROM os WHERE id > 0;
DECLARE cd CURSOR FOR SELECT count(*), sum(v), sum(length(w))
  FROM (SELECT * FROM os WHERE id > 0 ORDER BY id DESC) s;
DECLARE cp CURSOR FOR SELECT id, v, w FROM os WHERE id > 0;
SET LOCAL enable_seqscan = on;
SET LOCAL enable_indexscan = off;
DECLARE cs CURSOR FOR SELECT count(*), sum(v), sum(length(w)) FROM os;
DECLARE cs2 CURSOR FOR SELECT count(*), sum(v), sum(length(w)) FROM os;
SET LOCAL enable_indexscan = on;
SET LOCAL enable_seqscan = off;
FETCH 2 FROM cp;
-- 100 statements inserting 20 rows each: 100 groups the cursors do not see
DO $$
BEGIN
  FOR i IN 1..100 LOOP
    INSERT INTO os SELECT g * 1000 + 700 + i, g, 'own' FROM generate_series(1, 20) g;
  END LOOP;
END $$;
FETCH 2 FROM cp;
SELECT * FROM os_check();
DELETE FROM os WHERE id % 7 = 0;
UPDATE os SET v = v + 1 WHERE id % 5 = 0;
UPDATE os SET id = id + 900 WHERE id % 1000 = 3;
FETCH 2 FROM cp;
SELECT * FROM os_check();
-- a subtransaction's inserts and deletes, rolled back: seen, then not
SAVEPOINT a;
INSERT INTO os SELECT g * 1000 + 950, g, 'rolled back' FROM generate_series(1, 20) g;
DELETE FROM os WHERE id % 1000 = 4;
SELECT * FROM os_check();
ROLLBACK TO a;
SELECT * FROM os_check();
FETCH 2 FROM cp;
SELECT * FROM os_both('ci', 'cs');
SELECT * FROM os_both('cd', 'cs2');
COMMIT;
SELECT * FROM os_check();

-- REPEATABLE READ cursors declared before their transaction compacts the
-- groups they read (merged, dead rows dropped, column files folded in)
-- and upserts: they read the groups as they were
VACUUM os;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE ri CURSOR FOR SELECT count(*), sum(v), sum(length(w)) FROM os WHERE id > 0;
SET LOCAL enable_seqscan = on;
SET LOCAL enable_indexscan = off;
DECLARE rs CURSOR FOR SELECT count(*), sum(v), sum(length(w)) FROM os;
SET LOCAL enable_indexscan = on;
SELECT * FROM os_check();
SELECT groups_written > 0 AS compacted FROM mvinc.colfile_compact('os');
DO $$
BEGIN
  FOR i IN 1..50 LOOP
    INSERT INTO os SELECT g * 1000 + 960 + i % 30, g, 'late' FROM generate_series(1, 20) g
      ON CONFLICT (id) DO UPDATE SET v = os.v + 1;
  END LOOP;
END $$;
SELECT * FROM os_both('ri', 'rs');
SELECT * FROM os_check();
COMMIT;
SELECT * FROM os_check();
SELECT * FROM mvinc.colfile_check('os');

DROP TABLE os;
DROP FUNCTION os_check();
DROP FUNCTION os_both(refcursor, refcursor);
