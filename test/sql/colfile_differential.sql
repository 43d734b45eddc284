-- colfile: differential test. The same seeded random DML (inserts, COPY,
-- updates of keys and non-keys, deletes, rollbacks, savepoints, TRUNCATE,
-- ADD/DROP COLUMN) is applied to a heap table and a colfile table, and the
-- two are compared (sequential and index scans) after every step.
SET mvinc.colfile_rows_per_group = 7;
CREATE TABLE diff_h (id int PRIMARY KEY, a int, b text) USING heap;
CREATE TABLE diff_c (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE INDEX ON diff_h (a);
CREATE INDEX ON diff_c (a);
CREATE TABLE diff_state (next_id int, ncols int, steps int);
CREATE TABLE diff_log (step int, what text, nrows bigint);
INSERT INTO diff_state VALUES (1, 0, 0);

-- run sql (with @T for the table) against both tables
CREATE FUNCTION diff_both(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE replace(sql, '@T', 'diff_h');
  EXECUTE replace(sql, '@T', 'diff_c');
END $$;

-- fail loudly when the tables differ
CREATE FUNCTION diff_compare(step int, what text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE d bigint; n1 bigint; n2 bigint; lo int;
BEGIN
  SELECT count(*) INTO d FROM ((TABLE diff_h EXCEPT ALL TABLE diff_c)
                               UNION ALL (TABLE diff_c EXCEPT ALL TABLE diff_h)) x;
  IF d <> 0 THEN
    RAISE EXCEPTION 'step %: % left % differing rows', step, what, d;
  END IF;
  lo := (step * 37) % 300;
  PERFORM set_config('enable_seqscan', 'off', true);
  SELECT count(*), sum(a) INTO n1 FROM diff_h WHERE id BETWEEN lo AND lo + 40;
  SELECT count(*), sum(a) INTO n2 FROM diff_c WHERE id BETWEEN lo AND lo + 40;
  IF n1 <> n2 THEN
    RAISE EXCEPTION 'step %: % index scan differs (% vs %)', step, what, n1, n2;
  END IF;
  SELECT count(*) INTO n1 FROM diff_h WHERE a = step % 50;
  SELECT count(*) INTO n2 FROM diff_c WHERE a = step % 50;
  PERFORM set_config('enable_seqscan', 'on', true);
  IF n1 <> n2 THEN
    RAISE EXCEPTION 'step %: % secondary index differs (% vs %)', step, what, n1, n2;
  END IF;
END $$;

-- one random DML step on both tables; returns what it did
CREATE FUNCTION diff_step(step int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  op int := floor(random() * 14);
  k int := floor(random() * 1000);
  n int := 1 + floor(random() * 12);
  m int := 2 + floor(random() * 6);
  nid int;
  nc int;
BEGIN
  SELECT next_id, ncols INTO nid, nc FROM diff_state;
  IF op <= 2 THEN
    PERFORM diff_both(format('INSERT INTO @T (id, a, b) SELECT g, (g * 7 + %s) %% 50, md5((g + %s)::text) FROM generate_series(%s, %s) g',
                             k, k, nid, nid + n - 1));
    UPDATE diff_state SET next_id = nid + n;
    RETURN 'insert';
  ELSIF op = 3 THEN
    PERFORM diff_both(format('INSERT INTO @T (id, a, b) VALUES (%s, %s, NULL)', nid, k % 50));
    UPDATE diff_state SET next_id = nid + 1;
    RETURN 'insert one';
  ELSIF op = 4 THEN
    PERFORM diff_both(format('UPDATE @T SET a = (a + %s) %% 50, b = coalesce(b, '''') || ''u'' WHERE id %% %s = %s', k, m, k % m));
    RETURN 'update';
  ELSIF op = 5 THEN
    PERFORM diff_both(format('UPDATE @T SET id = -id WHERE id > 0 AND id %% %s = %s', m * 3, k % (m * 3)));
    RETURN 'update key';
  ELSIF op = 6 THEN
    PERFORM diff_both(format('DELETE FROM @T WHERE id %% %s = %s', m * 2, k % (m * 2)));
    RETURN 'delete';
  ELSIF op = 7 THEN
    -- a subtransaction that fails: everything in it is rolled back
    BEGIN
      PERFORM diff_both(format('INSERT INTO @T (id, a, b) SELECT g, g %% 50, ''sp'' FROM generate_series(%s, %s) g', nid, nid + n));
      PERFORM diff_both(format('UPDATE @T SET a = 0 WHERE id %% %s = 0', m));
      PERFORM diff_both(format('DELETE FROM @T WHERE id %% %s = 1', m));
      RAISE EXCEPTION 'roll back';
    EXCEPTION WHEN raise_exception THEN
      NULL;
    END;
    UPDATE diff_state SET next_id = nid + n + 1;
    RETURN 'rolled back subtransaction';
  ELSIF op = 8 THEN
    -- a subtransaction that succeeds
    BEGIN
      PERFORM diff_both(format('UPDATE @T SET b = ''sp ok'' WHERE id %% %s = 2', m));
      PERFORM diff_both(format('INSERT INTO @T (id, a, b) VALUES (%s, 1, ''sp ok'')', nid));
    END;
    UPDATE diff_state SET next_id = nid + 1;
    RETURN 'subtransaction';
  ELSIF op = 9 THEN
    EXECUTE format('COPY (SELECT g, g %% 50, ''copy'' || g FROM generate_series(%s, %s) g) TO ''/tmp/mvinc_colfile_diff.copy''',
                   nid, nid + n * 3);
    PERFORM diff_both('COPY @T (id, a, b) FROM ''/tmp/mvinc_colfile_diff.copy''');
    UPDATE diff_state SET next_id = nid + n * 3 + 1;
    RETURN 'copy';
  ELSIF op = 10 AND random() < 0.15 THEN
    PERFORM diff_both('TRUNCATE @T');
    RETURN 'truncate';
  ELSIF op = 11 AND random() < 0.3 THEN
    IF nc < 3 THEN
      PERFORM diff_both(format('ALTER TABLE @T ADD COLUMN x%s int DEFAULT %s', nc, k));
      UPDATE diff_state SET ncols = nc + 1;
      RETURN 'add column';
    ELSE
      PERFORM diff_both(format('ALTER TABLE @T DROP COLUMN x%s', nc - 1));
      UPDATE diff_state SET ncols = nc - 1;
      RETURN 'drop column';
    END IF;
  ELSIF op = 12 THEN
    PERFORM diff_both(format('INSERT INTO @T (id, a, b) VALUES (%s, 1, ''new'') ON CONFLICT (id) DO UPDATE SET a = excluded.a + 1, b = ''upserted''',
                             1 + k % greatest(nid, 1)));
    UPDATE diff_state SET next_id = greatest(nid, 2 + k % greatest(nid, 1));
    RETURN 'upsert';
  ELSE
    PERFORM diff_both(format('DELETE FROM @T WHERE id IN (SELECT id FROM @T ORDER BY id LIMIT %s)', n));
    RETURN 'delete first';
  END IF;
END $$;

-- steps grouped in transactions, some committed and some rolled back
CREATE PROCEDURE diff_run(seed float8, nsteps int) LANGUAGE plpgsql AS $$
DECLARE i int; what text; s int;
BEGIN
  PERFORM setseed(seed);
  FOR i IN 1..nsteps LOOP
    SELECT steps + 1 INTO s FROM diff_state;
    UPDATE diff_state SET steps = s;
    what := diff_step(s);
    PERFORM diff_compare(s, what);
    INSERT INTO diff_log SELECT s, what, count(*) FROM diff_c;
    IF random() < 0.25 THEN
      IF random() < 0.3 THEN
        ROLLBACK;
        PERFORM diff_compare(s, 'rollback after ' || what);
      ELSE
        COMMIT;
      END IF;
    END IF;
  END LOOP;
  COMMIT;
END $$;

CALL diff_run(0.1, 120);
VACUUM diff_c;
CALL diff_run(0.2, 120);
SET mvinc.colfile_rows_per_group = 3;
CALL diff_run(0.3, 120);
VACUUM FULL diff_c;
CALL diff_run(0.4, 120);
SELECT steps >= 300 AS enough_steps FROM diff_state;
-- what the committed steps did (rolled-back steps are not logged)
SELECT what, count(*) AS steps FROM diff_log GROUP BY what ORDER BY what;
SELECT max(nrows) > 100 AS grew FROM diff_log;
SELECT (SELECT count(*) FROM diff_h) = (SELECT count(*) FROM diff_c) AS same_count;
SELECT * FROM mvinc.colfile_check('diff_c');
DROP TABLE diff_h, diff_c, diff_state, diff_log;
DROP PROCEDURE diff_run;
DROP FUNCTION diff_step, diff_compare, diff_both;
