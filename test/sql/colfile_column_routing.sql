-- colfile updates in place through a partitioned parent, and triggers that
-- read a row by TID later (expected: heap's answers)
-- INSERT ... ON CONFLICT DO UPDATE routed to a partition is not one of the
-- statement's result relations: its SET columns must not be taken from
-- another UPDATE of that partition in the same statement or an outer one
CREATE TABLE pp (id int, k int, a int, b int, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
CREATE TABLE pp1 PARTITION OF pp FOR VALUES IN (1) USING colfile;
INSERT INTO pp SELECT i, 1, i, i FROM generate_series(1, 5) i;
WITH x AS (UPDATE pp1 SET a = a + 1 WHERE id = 1 RETURNING 1)
INSERT INTO pp VALUES (2, 1, 0, 0) ON CONFLICT (k, id) DO UPDATE SET b = pp.b + 100 RETURNING *;
WITH x AS (UPDATE pp SET a = a + 1 WHERE id = 1 RETURNING 1)
INSERT INTO pp VALUES (3, 1, 0, 0) ON CONFLICT (k, id) DO UPDATE SET b = pp.b + 100 RETURNING *;
CREATE FUNCTION f_upsert(int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO pp VALUES ($1, 1, 0, 0) ON CONFLICT (k, id) DO UPDATE SET b = pp.b + 1000; RETURN 0; END $$;
UPDATE pp1 SET a = a + f_upsert(id + 3) WHERE id = 1;
SELECT * FROM pp ORDER BY id;
-- transition tables on the parent see the old row as it was
CREATE TABLE lg (o text, n text);
CREATE FUNCTION trf() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO lg SELECT o::text, n::text FROM oldt o JOIN newt n USING (id); RETURN NULL; END $$;
CREATE TRIGGER trf AFTER UPDATE ON pp REFERENCING OLD TABLE AS oldt NEW TABLE AS newt
  FOR EACH STATEMENT EXECUTE FUNCTION trf();
INSERT INTO pp VALUES (5, 1, 0, 0) ON CONFLICT (k, id) DO UPDATE SET b = pp.b + 100 RETURNING *;
SELECT * FROM lg;
DROP TABLE pp, lg;
-- AFTER INSERT row triggers read the new row by TID when they fire: a
-- later update in place must not show in it
CREATE TABLE t10 (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE TABLE log10 (tg text, r text);
CREATE FUNCTION lg10() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO log10 VALUES (TG_NAME, NEW::text); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER dlg AFTER INSERT ON t10 DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION lg10();
BEGIN;
INSERT INTO t10 VALUES (1, 0, 'ins');
UPDATE t10 SET a = 5, b = 'upd' WHERE id = 1;
COMMIT;
DROP TRIGGER dlg ON t10;
CREATE FUNCTION fix() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE t10 SET b = 'fixed' WHERE id = NEW.id; RETURN NULL; END $$;
CREATE TRIGGER a1 AFTER INSERT ON t10 FOR EACH ROW EXECUTE FUNCTION fix();
CREATE TRIGGER a2 AFTER INSERT ON t10 FOR EACH ROW EXECUTE FUNCTION lg10();
INSERT INTO t10 VALUES (2, 0, 'ins');
SELECT * FROM log10 ORDER BY r;
SELECT * FROM t10 ORDER BY id;
DROP TABLE t10, log10;
DROP FUNCTION f_upsert(int), trf(), lg10(), fix();
