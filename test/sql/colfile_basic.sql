-- colfile: basic SQL on a colfile table
SET mvinc.colfile_rows_per_group = 100;
CREATE TABLE cf (id int, name text, v float8) USING colfile;
INSERT INTO cf VALUES (1, 'one', 1.5);
INSERT INTO cf SELECT g, 'n' || g, g * 0.5 FROM generate_series(2, 250) g;
SELECT count(*), sum(id), min(name), max(v) FROM cf;
SELECT * FROM cf WHERE id IN (1, 100, 250) ORDER BY id;
SELECT ctid, id FROM cf WHERE id IN (1, 100, 250) ORDER BY id;
-- delete and update
DELETE FROM cf WHERE id % 10 = 0;
SELECT count(*) FROM cf;
UPDATE cf SET name = 'upd' WHERE id < 5;
SELECT * FROM cf WHERE id < 7 ORDER BY id;
SELECT count(*) FROM cf;
-- index
CREATE INDEX cf_id ON cf (id);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM cf WHERE id = 42;
SELECT * FROM cf WHERE id = 42;
SELECT * FROM cf WHERE id = 40;
EXPLAIN (COSTS OFF) SELECT * FROM cf WHERE id < 5;
SELECT * FROM cf WHERE id < 5 ORDER BY id;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('cf');
SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('cf');
DROP TABLE cf;
