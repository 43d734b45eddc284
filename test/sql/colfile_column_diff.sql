-- colfile column updates: differential test. Seeded random UPDATEs of one
-- to five columns (most of them unindexed: written in place as column
-- files; some indexed: delete + insert), mixed with inserts, deletes,
-- upserts, repeated updates of the same rows in one transaction, failed
-- subtransactions, rollbacks and VACUUM, applied to a heap table and a
-- colfile table and compared after every step: whole tables, index scans,
-- and scans whose quals the colfile scan checks against row group min/max.
-- g, a stored generated column over f1 and k, must follow their updates.
SET mvinc.colfile_rows_per_group = 50;
CREATE TABLE cd_h (id int PRIMARY KEY, k int, f1 int, f2 text, f3 float8,
                   f4 numeric, f5 bool, f6 text,
                   g int GENERATED ALWAYS AS (f1 * 2 + k) STORED) USING heap;
CREATE TABLE cd_c (id int PRIMARY KEY, k int, f1 int, f2 text, f3 float8,
                   f4 numeric, f5 bool, f6 text,
                   g int GENERATED ALWAYS AS (f1 * 2 + k) STORED) USING colfile;
-- indexed: id, k, f2 (expression), f5 and f6 (partial index)
CREATE INDEX ON cd_h (k);
CREATE INDEX ON cd_c (k);
CREATE INDEX ON cd_h (lower(f2));
CREATE INDEX ON cd_c (lower(f2));
CREATE INDEX ON cd_h (id) WHERE f5 AND f6 IS NOT NULL;
CREATE INDEX ON cd_c (id) WHERE f5 AND f6 IS NOT NULL;
INSERT INTO cd_h SELECT g, g % 17, g, 'v' || g, g / 3.0, g * 1.5, g % 2 = 0, NULL
  FROM generate_series(1, 600) g;
INSERT INTO cd_c SELECT id, k, f1, f2, f3, f4, f5, f6 FROM cd_h;
CREATE TABLE cd_state (steps int, next_id int);
INSERT INTO cd_state VALUES (0, 601);
CREATE TABLE cd_log (what text);

CREATE FUNCTION cd_both(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE replace(sql, '@T', 'cd_h');
  EXECUTE replace(sql, '@T', 'cd_c');
END $$;

CREATE FUNCTION cd_compare(step int, what text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE d bigint; a1 text; a2 text; lo int := (step * 53) % 600;
BEGIN
  SELECT count(*) INTO d FROM ((TABLE cd_h EXCEPT ALL TABLE cd_c)
                               UNION ALL (TABLE cd_c EXCEPT ALL TABLE cd_h)) x;
  IF d <> 0 THEN
    RAISE EXCEPTION 'step %: % left % differing rows', step, what, d;
  END IF;
  -- quals a colfile scan checks against min/max of updated columns
  SELECT string_agg(id::text, ',' ORDER BY id) INTO a1 FROM cd_h WHERE f1 BETWEEN lo AND lo + 30;
  SELECT string_agg(id::text, ',' ORDER BY id) INTO a2 FROM cd_c WHERE f1 BETWEEN lo AND lo + 30;
  IF a1 IS DISTINCT FROM a2 THEN
    RAISE EXCEPTION 'step %: % range scan on f1 differs', step, what;
  END IF;
  PERFORM set_config('enable_seqscan', 'off', true);
  SELECT string_agg(format('%s:%s:%s:%s', id, f1, f3, f4), ',' ORDER BY id) INTO a1
    FROM cd_h WHERE id BETWEEN lo AND lo + 40;
  SELECT string_agg(format('%s:%s:%s:%s', id, f1, f3, f4), ',' ORDER BY id) INTO a2
    FROM cd_c WHERE id BETWEEN lo AND lo + 40;
  IF a1 IS DISTINCT FROM a2 THEN
    RAISE EXCEPTION 'step %: % primary key scan differs', step, what;
  END IF;
  SELECT string_agg(format('%s:%s', id, f6), ',' ORDER BY id) INTO a1 FROM cd_h WHERE k = step % 17;
  SELECT string_agg(format('%s:%s', id, f6), ',' ORDER BY id) INTO a2 FROM cd_c WHERE k = step % 17;
  IF a1 IS DISTINCT FROM a2 THEN
    RAISE EXCEPTION 'step %: % index scan on k differs', step, what;
  END IF;
  SELECT count(*) INTO a1 FROM cd_h WHERE f5 AND f6 IS NOT NULL AND id > 0;
  SELECT count(*) INTO a2 FROM cd_c WHERE f5 AND f6 IS NOT NULL AND id > 0;
  PERFORM set_config('enable_seqscan', 'on', true);
  IF a1 IS DISTINCT FROM a2 THEN
    RAISE EXCEPTION 'step %: % partial index scan differs', step, what;
  END IF;
END $$;

-- an assignment list of 1 to 5 random columns, weighted to unindexed ones
CREATE FUNCTION cd_sets(k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  cols text[] := ARRAY[
    format('f1 = f1 + %s', k % 7 - 3),
    format('f3 = f3 * %s', 1 + k % 3),
    format('f4 = f4 + %s.25', k % 5),
    format('f1 = %s', k % 600),
    'f3 = NULL',
    format('f4 = CASE WHEN f4 IS NULL THEN %s ELSE NULL END', k),
    format('f2 = ''w'' || %s', k),
    format('k = (k + %s) %% 17', k),
    'f5 = NOT f5',
    format('f6 = CASE WHEN f6 IS NULL THEN ''s%s'' END', k)];
  n int := 1 + floor(random() * 5);
  picked text[] := '{}';
  c int;
  used int[] := '{}';
BEGIN
  WHILE cardinality(picked) < n LOOP
    -- unindexed assignments (1-6) three times as likely as indexed (7-10)
    IF random() < 0.75 THEN c := 1 + floor(random() * 6); ELSE c := 7 + floor(random() * 4); END IF;
    -- one assignment per column
    IF c IN (1, 4) AND (1 = ANY(used) OR 4 = ANY(used)) THEN CONTINUE; END IF;
    IF c IN (2, 5) AND (2 = ANY(used) OR 5 = ANY(used)) THEN CONTINUE; END IF;
    IF c IN (3, 6) AND (3 = ANY(used) OR 6 = ANY(used)) THEN CONTINUE; END IF;
    IF c = ANY(used) THEN CONTINUE; END IF;
    used := used || c;
    picked := picked || cols[c];
  END LOOP;
  RETURN array_to_string(picked, ', ');
END $$;

CREATE FUNCTION cd_step(step int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  op int := floor(random() * 12);
  k int := floor(random() * 1000);
  m int := 2 + floor(random() * 9);
  nid int;
  s text;
BEGIN
  SELECT next_id INTO nid FROM cd_state;
  IF op <= 5 THEN
    s := cd_sets(k);
    PERFORM cd_both(format('UPDATE @T SET %s WHERE id %% %s = %s', s, m, k % m));
    RETURN 'update';
  ELSIF op = 6 THEN
    -- the same rows twice in one transaction, then a single row
    PERFORM cd_both(format('UPDATE @T SET %s WHERE id %% %s = %s', cd_sets(k), m, k % m));
    PERFORM cd_both(format('UPDATE @T SET %s WHERE id %% %s = %s', cd_sets(k + 1), m, k % m));
    PERFORM cd_both(format('UPDATE @T SET f1 = f1 + 1 WHERE id = %s', k % 600));
    RETURN 'update twice';
  ELSIF op = 7 THEN
    BEGIN
      PERFORM cd_both(format('UPDATE @T SET %s WHERE id %% %s = %s', cd_sets(k), m, k % m));
      RAISE EXCEPTION 'roll back';
    EXCEPTION WHEN raise_exception THEN
      NULL;
    END;
    RETURN 'rolled back update';
  ELSIF op = 8 THEN
    PERFORM cd_both(format('INSERT INTO @T SELECT g, g %% 17, g, ''n'' || g, g, g, true, NULL FROM generate_series(%s, %s) g',
                           nid, nid + m));
    UPDATE cd_state SET next_id = nid + m + 1;
    RETURN 'insert';
  ELSIF op = 9 THEN
    PERFORM cd_both(format('DELETE FROM @T WHERE id %% %s = %s AND f1 %% 3 = 0', m * 3, k % (m * 3)));
    RETURN 'delete';
  ELSIF op = 10 THEN
    PERFORM cd_both(format('INSERT INTO @T SELECT id, 0, 0, '''', 0, 0, false, NULL FROM @T WHERE id %% %s = %s
                            ON CONFLICT (id) DO UPDATE SET f1 = @T.f1 * 2, f3 = excluded.f3', m, k % m));
    RETURN 'upsert';
  ELSE
    IF random() < 0.5 THEN
      PERFORM cd_both(format('UPDATE @T SET f1 = f1 - 1, f4 = f4 * 2 WHERE id IN (SELECT id FROM @T WHERE k = %s)', k % 17));
    ELSE
      PERFORM cd_both(format('UPDATE @T t SET f3 = u.f1 FROM @T u WHERE u.id = t.id + 1 AND t.id %% %s = 0', m));
    END IF;
    RETURN 'update with subquery';
  END IF;
END $$;

CREATE PROCEDURE cd_run(seed float8, nsteps int) LANGUAGE plpgsql AS $$
DECLARE i int; what text; s int;
BEGIN
  PERFORM setseed(seed);
  FOR i IN 1..nsteps LOOP
    SELECT steps + 1 INTO s FROM cd_state;
    UPDATE cd_state SET steps = s;
    what := cd_step(s);
    PERFORM cd_compare(s, what);
    INSERT INTO cd_log VALUES (what);
    IF random() < 0.3 THEN
      IF random() < 0.3 THEN
        ROLLBACK;
        PERFORM cd_compare(s, 'rollback after ' || what);
      ELSE
        COMMIT;
      END IF;
    END IF;
  END LOOP;
  COMMIT;
END $$;

CALL cd_run(0.11, 150);
VACUUM cd_c;
SELECT * FROM mvinc.colfile_check('cd_c');
CALL cd_run(0.22, 150);
VACUUM cd_c;
CALL cd_run(0.33, 150);
SELECT (SELECT count(*) FROM cd_state WHERE steps >= 300) = 1 AS enough_steps;
SELECT what, count(*) > 0 AS happened FROM cd_log GROUP BY what ORDER BY what;
-- most updates were written in place
SELECT (SELECT count(*) FROM mvinc.colfile_colfile
        WHERE relfilenode = pg_relation_filenode('cd_c')) > 20 AS column_files_written;
SELECT * FROM mvinc.colfile_check('cd_c');
-- compaction folds every settled column file into its group (thresholds
-- at 0), on demand and then by VACUUM, and the runs go on over the result.
-- It runs until no file is left (the first call sets its horizon; another
-- database's capture may hold it).
SELECT mvinc.colfile_set_compaction('cd_c', dead_fraction => 0, file_fraction => 0);
\set ECHO none
\o /dev/null
SELECT 'SELECT mvinc.colfile_compact(''cd_c'')',
       'SELECT pg_sleep(0.2) FROM mvinc.colfile_row_groups(''cd_c'') HAVING sum(column_files) > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
SELECT count(*) AS groups_with_files FROM mvinc.colfile_row_groups('cd_c') WHERE column_files > 0;
SELECT count(*) AS column_files FROM mvinc.colfile_colfile WHERE relfilenode = pg_relation_filenode('cd_c');
SELECT cd_compare(0, 'compacted');
SELECT * FROM mvinc.colfile_check('cd_c');
CALL cd_run(0.44, 100);
VACUUM cd_c;
SELECT cd_compare(0, 'vacuum folded');
SELECT * FROM mvinc.colfile_check('cd_c');
CALL cd_run(0.55, 50);
SELECT * FROM mvinc.colfile_compact('cd_c') WHERE false;
SELECT cd_compare(0, 'compacted again');
SELECT * FROM mvinc.colfile_check('cd_c');
-- VACUUM FULL folds the column files into new row groups
VACUUM FULL cd_c;
SELECT count(*) FROM mvinc.colfile_colfile WHERE relfilenode = pg_relation_filenode('cd_c');
SELECT cd_compare(0, 'vacuum full');
DROP TABLE cd_h, cd_c, cd_state, cd_log;
DROP PROCEDURE cd_run;
DROP FUNCTION cd_step, cd_sets, cd_compare, cd_both;
