-- colfile: rows already modified by the current transaction (TM_SelfModified),
-- compared with heap: the same statements, the same results and errors.
CREATE FUNCTION selfmod_bump(tab regclass, k int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %s SET v = v + 1 WHERE id = $1', tab) USING k;
  RETURN true;
END $$;
CREATE FUNCTION selfmod_trig() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- touch the row being changed once more, from within the command
  EXECUTE format('UPDATE %s SET v = v + 100 WHERE id = $1', TG_TABLE_NAME) USING OLD.id;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $$;
CREATE TABLE sm_heap (id int PRIMARY KEY, v int) USING heap;
CREATE TABLE sm_col (id int PRIMARY KEY, v int) USING colfile;
CREATE PROCEDURE selfmod_case(tab regclass) LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('TRUNCATE %s', tab);
  EXECUTE format('INSERT INTO %s VALUES (1, 10), (2, 20), (3, 30)', tab);
  -- a row updated by a data-modifying CTE, then by a function in the same
  -- statement (another command id), then by the outer UPDATE: error
  BEGIN
    EXECUTE format('WITH u AS (UPDATE %1$s SET v = v + 1000 WHERE id = 1 RETURNING *, selfmod_bump(%2$L, 1))
                    UPDATE %1$s a SET v = u.v + 1 FROM u WHERE a.id = u.id', tab, tab::text);
    RAISE NOTICE '%: cte+function update: no error', tab;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: cte+function update: %', tab, SQLERRM;
  END;
  BEGIN
    EXECUTE format('WITH u AS (UPDATE %1$s SET v = v + 1000 WHERE id = 1 RETURNING *, selfmod_bump(%2$L, 1))
                    DELETE FROM %1$s a USING u WHERE a.id = u.id', tab, tab::text);
    RAISE NOTICE '%: cte+function delete: no error', tab;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: cte+function delete: %', tab, SQLERRM;
  END;
  -- updated by the CTE in the same command: the outer UPDATE / DELETE skips it
  EXECUTE format('WITH u AS (UPDATE %1$s SET v = v + 1000 WHERE id = 2 RETURNING *)
                  UPDATE %1$s a SET v = u.v + 1 FROM u WHERE a.id = u.id', tab);
  EXECUTE format('WITH u AS (UPDATE %1$s SET v = v + 1000 WHERE id = 2 RETURNING *)
                  DELETE FROM %1$s a USING u WHERE a.id = u.id', tab);
  FOR r IN EXECUTE format('SELECT id || '':'' || v FROM %s ORDER BY id', tab) LOOP
    RAISE NOTICE '%: %', tab, r;
  END LOOP;
END $$;
CALL selfmod_case('sm_heap');
CALL selfmod_case('sm_col');
-- BEFORE UPDATE / DELETE row triggers that update the row itself: error
CREATE TRIGGER sm_heap_t BEFORE UPDATE OR DELETE ON sm_heap FOR EACH ROW
  WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION selfmod_trig();
CREATE TRIGGER sm_col_t BEFORE UPDATE OR DELETE ON sm_col FOR EACH ROW
  WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION selfmod_trig();
UPDATE sm_heap SET v = v + 1 WHERE id = 3;
UPDATE sm_col SET v = v + 1 WHERE id = 3;
DELETE FROM sm_heap WHERE id = 3;
DELETE FROM sm_col WHERE id = 3;
SELECT * FROM sm_heap ORDER BY id;
SELECT * FROM sm_col ORDER BY id;
DROP TRIGGER sm_heap_t ON sm_heap;
DROP TRIGGER sm_col_t ON sm_col;
-- modified by an earlier command of the same transaction: the normal result
BEGIN;
UPDATE sm_heap SET v = v + 5 WHERE id = 3;
UPDATE sm_col SET v = v + 5 WHERE id = 3;
UPDATE sm_heap SET v = v + 5 WHERE id = 3 RETURNING *;
UPDATE sm_col SET v = v + 5 WHERE id = 3 RETURNING *;
SELECT id, v FROM sm_heap WHERE id = 3 FOR UPDATE;
SELECT id, v FROM sm_col WHERE id = 3 FOR UPDATE;
DELETE FROM sm_heap WHERE id = 3 RETURNING *;
DELETE FROM sm_col WHERE id = 3 RETURNING *;
UPDATE sm_heap SET v = 0 WHERE id = 3;
UPDATE sm_col SET v = 0 WHERE id = 3;
COMMIT;
SELECT * FROM sm_heap ORDER BY id;
SELECT * FROM sm_col ORDER BY id;
DROP TABLE sm_heap, sm_col;
DROP PROCEDURE selfmod_case(regclass);
DROP FUNCTION selfmod_bump(regclass, int), selfmod_trig();
