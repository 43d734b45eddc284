-- colfile: values arriving as TOAST pointers (from a heap table's TOAST
-- relation) or compressed are stored as values, not as references
CREATE TABLE toast_src (id int, v text) USING heap;
ALTER TABLE toast_src ALTER COLUMN v SET STORAGE EXTERNAL;
INSERT INTO toast_src VALUES
  (1, repeat('1234567890', 30000)),
  (2, repeat('x', 10)),
  (3, NULL);
CREATE TABLE toast_comp (id int, v text) USING heap;
INSERT INTO toast_comp VALUES (4, repeat('abc', 5000));
SELECT pg_relation_size(reltoastrelid) > 0 AS out_of_line FROM pg_class WHERE relname = 'toast_src';
SELECT pg_column_size(v) < length(v) AS compressed FROM toast_comp;
CREATE TABLE toast_cf (id int, v text) USING colfile;
INSERT INTO toast_cf SELECT * FROM toast_src;
INSERT INTO toast_cf SELECT * FROM toast_comp;
-- an UPDATE that keeps the value passes the pointer again
CREATE TABLE toast_cf2 (id int, v text, n int) USING colfile;
INSERT INTO toast_cf2 SELECT id, v, 0 FROM toast_src;
UPDATE toast_cf2 SET v = s.v, n = n + 1 FROM toast_src s WHERE s.id = toast_cf2.id;
-- the source and its TOAST data go away; the copies must not depend on them
DROP TABLE toast_src, toast_comp;
SELECT id, length(v), md5(v) FROM toast_cf ORDER BY id;
SELECT id, length(v), md5(v), n FROM toast_cf2 ORDER BY id;
DROP TABLE toast_cf, toast_cf2;
