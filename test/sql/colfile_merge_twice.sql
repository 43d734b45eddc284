-- colfile: MERGE whose source matches a target row twice, the first match
-- updating the row in place. The second match must judge its WHEN
-- conditions on the row as the statement's scan read it, as heap does (the
-- new version is at another TID there), so it reaches the cardinality error
-- instead of skipping the row because the first update made a condition
-- false. Compared with heap: the same statements, results and errors.
CREATE TABLE mt_heap (id int PRIMARY KEY, k int, a int, b text) USING heap;
CREATE TABLE mt_col (id int PRIMARY KEY, k int, a int, b text) USING colfile;
CREATE INDEX ON mt_heap (k);
CREATE INDEX ON mt_col (k);
CREATE FUNCTION mt_bump(tab regclass, i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %s SET a = a + 100 WHERE id = $1', tab) USING i;
  RETURN i;
END $$;
CREATE PROCEDURE mt_case(tab regclass, label text, stmt text) LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('TRUNCATE %s', tab);
  EXECUTE format('INSERT INTO %s SELECT g, g, 1, ''b'' || g FROM generate_series(1, 5) g', tab);
  BEGIN
    EXECUTE format(stmt, tab, tab::text);
    GET DIAGNOSTICS n = ROW_COUNT;
    RAISE NOTICE '% %: % rows', tab, label, n;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '% %: %', tab, label, SQLERRM;
  END;
  RAISE NOTICE '% %: %', tab, label,
    (SELECT string_agg(format('%s/%s/%s/%s', id, k, a, b), ' ' ORDER BY id)
     FROM mt_rows(tab));
END $$;
CREATE FUNCTION mt_rows(tab regclass) RETURNS TABLE (id int, k int, a int, b text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT id, k, a, b FROM %s', tab);
END $$;
CREATE PROCEDURE mt_all(tab regclass) LANGUAGE plpgsql AS $$
BEGIN
  -- the first match changes a column in place so the condition fails
  CALL mt_case(tab, 'condition', $q$
    MERGE INTO %1$s t USING (VALUES (1), (1)) s(id) ON t.id = s.id
      WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = 2$q$);
  CALL mt_case(tab, 'do nothing', $q$
    MERGE INTO %1$s t USING (VALUES (2), (2)) s(id) ON t.id = s.id
      WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = 2
      WHEN MATCHED THEN DO NOTHING$q$);
  CALL mt_case(tab, 'other action', $q$
    MERGE INTO %1$s t USING (VALUES (3), (3)) s(id) ON t.id = s.id
      WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = 2
      WHEN MATCHED THEN UPDATE SET b = 'second'$q$);
  CALL mt_case(tab, 'delete', $q$
    MERGE INTO %1$s t USING (VALUES (4, 'x'), (4, 'y')) s(id, v) ON t.id = s.id
      WHEN MATCHED AND t.b = 'b4' THEN UPDATE SET b = s.v
      WHEN MATCHED THEN DELETE$q$);
  -- the row moves (indexed column): the second match sees the old version
  CALL mt_case(tab, 'moved', $q$
    MERGE INTO %1$s t USING (VALUES (5), (5)) s(id) ON t.id = s.id
      WHEN MATCHED AND t.k = 5 THEN UPDATE SET k = 50$q$);
  -- duplicates of different rows and no duplicate: no error
  CALL mt_case(tab, 'distinct', $q$
    MERGE INTO %1$s t USING (VALUES (1), (2), (3)) s(id) ON t.id = s.id
      WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = t.a + t.id$q$);
  -- a function called per source row updates the target row in place
  -- (another command) before the MERGE reaches it: heap's error
  CALL mt_case(tab, 'function', $q$
    MERGE INTO %1$s t USING (SELECT g AS id FROM generate_series(1, 3) g) s
      ON t.id = s.id AND mt_bump(%2$L, s.id %% 3 + 1) > 0
      WHEN MATCHED AND t.a = 1 THEN UPDATE SET b = 'f'$q$);
  -- UPDATE ... FROM matching a row twice: updated once, no error
  CALL mt_case(tab, 'update from', $q$
    UPDATE %1$s t SET a = t.a + s.d FROM (VALUES (1, 10), (1, 20), (2, 30)) s(id, d)
      WHERE t.id = s.id AND t.a = 1$q$);
END $$;
CALL mt_all('mt_heap');
CALL mt_all('mt_col');
-- the same inside a transaction that updated the rows before (another
-- command): the second match still sees the first one's scan values
BEGIN;
UPDATE mt_col SET a = 1, b = 'pre' WHERE id <= 2;
MERGE INTO mt_col t USING (VALUES (1), (1)) s(id) ON t.id = s.id
  WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = 2;
ROLLBACK;
BEGIN;
UPDATE mt_col SET a = 1, b = 'pre' WHERE id <= 2;
MERGE INTO mt_col t USING (VALUES (2)) s(id) ON t.id = s.id
  WHEN MATCHED AND t.a = 1 THEN UPDATE SET a = 2;
SELECT * FROM mt_col WHERE id <= 2 ORDER BY id;
COMMIT;
DROP TABLE mt_heap, mt_col;
DROP PROCEDURE mt_all(regclass), mt_case(regclass, text, text);
DROP FUNCTION mt_rows(regclass), mt_bump(regclass, int);
