-- colfile: the SQL surface (constraints, ON CONFLICT, MERGE, locks, DDL, maintenance)
SET mvinc.colfile_rows_per_group = 50;
CREATE TABLE parent (id int PRIMARY KEY, label text, amount numeric) USING colfile;
INSERT INTO parent SELECT g, 'p' || g, g * 1.25 FROM generate_series(1, 120) g;
-- primary key violations
INSERT INTO parent VALUES (5, 'dup', 0);
-- multi-row insert, COPY
INSERT INTO parent VALUES (1001, 'a', 1), (1002, 'b', 2), (1003, NULL, NULL);
COPY parent FROM stdin;
2001	copy1	10.5
2002	copy2	\N
\.
SELECT count(*), sum(amount) FROM parent;
-- ON CONFLICT
INSERT INTO parent VALUES (1, 'x', 0) ON CONFLICT DO NOTHING;
INSERT INTO parent VALUES (2, 'upserted', 99) ON CONFLICT (id) DO UPDATE SET label = excluded.label, amount = parent.amount + excluded.amount;
INSERT INTO parent VALUES (3000, 'new', 1) ON CONFLICT (id) DO UPDATE SET label = 'never';
SELECT * FROM parent WHERE id IN (1, 2, 3000) ORDER BY id;
-- MERGE
MERGE INTO parent p USING (VALUES (3, 'merged'), (4000, 'merge-new')) AS s(id, label) ON p.id = s.id
  WHEN MATCHED THEN UPDATE SET label = s.label
  WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.label, 0);
SELECT * FROM parent WHERE id IN (3, 4000) ORDER BY id;
-- foreign keys referencing the table
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent ON DELETE CASCADE) USING colfile;
INSERT INTO child VALUES (1, 10), (2, 11), (3, 10);
INSERT INTO child VALUES (4, 999999);
DELETE FROM parent WHERE id = 10;
SELECT * FROM child ORDER BY id;
UPDATE parent SET id = 9999 WHERE id = 11;
-- row locks
BEGIN;
SELECT id, label FROM parent WHERE id BETWEEN 20 AND 22 ORDER BY id FOR UPDATE;
SELECT id FROM parent WHERE id = 23 FOR SHARE;
SELECT id FROM parent WHERE id = 24 FOR NO KEY UPDATE NOWAIT;
SELECT id FROM parent WHERE id = 25 FOR KEY SHARE SKIP LOCKED;
UPDATE parent SET label = 'locked-then-updated' WHERE id = 20;
COMMIT;
SELECT label FROM parent WHERE id = 20;
-- RETURNING, ctid
UPDATE parent SET amount = 0 WHERE id = 30 RETURNING id, label, amount;
DELETE FROM parent WHERE id = 31 RETURNING *;
-- transactions, savepoints
BEGIN;
INSERT INTO parent VALUES (5000, 'sp', 1);
SAVEPOINT s1;
INSERT INTO parent VALUES (5001, 'rolled back', 1);
UPDATE parent SET label = 'rolled back too' WHERE id = 40;
ROLLBACK TO s1;
DELETE FROM parent WHERE id = 41;
SELECT id, label FROM parent WHERE id IN (40, 41, 5000, 5001) ORDER BY id;
COMMIT;
SELECT id, label FROM parent WHERE id IN (40, 41, 5000, 5001) ORDER BY id;
BEGIN;
DELETE FROM parent WHERE id < 100;
ROLLBACK;
SELECT count(*) FROM parent;
-- hash and expression indexes, partial index
CREATE INDEX parent_label_hash ON parent USING hash (label);
CREATE INDEX parent_lower ON parent (lower(label)) WHERE amount > 10;
SET enable_seqscan = off;
SELECT id FROM parent WHERE label = 'p50';
SELECT id FROM parent WHERE lower(label) = 'p60' AND amount > 10;
SELECT id FROM parent WHERE id = 50;
RESET enable_seqscan;
-- unique index built on existing rows with a duplicate
CREATE TABLE u (a int) USING colfile;
INSERT INTO u VALUES (1), (2), (2);
CREATE UNIQUE INDEX u_a ON u (a);
DELETE FROM u WHERE ctid = (SELECT max(ctid) FROM u);
CREATE UNIQUE INDEX u_a ON u (a);
INSERT INTO u VALUES (2);
-- TOASTed input
CREATE TABLE big (id int, doc text) USING colfile;
INSERT INTO big SELECT g, repeat(md5(g::text), 5000) FROM generate_series(1, 3) g;
SELECT id, length(doc), md5(doc) = md5(repeat(md5(id::text), 5000)) AS same FROM big ORDER BY id;
-- ADD / DROP COLUMN
ALTER TABLE u ADD COLUMN b text DEFAULT 'dflt';
ALTER TABLE u ADD COLUMN c int;
INSERT INTO u VALUES (3, 'three', 33);
ALTER TABLE u DROP COLUMN b;
SELECT * FROM u ORDER BY a;
ALTER TABLE u ALTER COLUMN c TYPE bigint;
SELECT * FROM u ORDER BY a;
-- TRUNCATE (transactional)
BEGIN;
TRUNCATE u;
SELECT count(*) FROM u;
ROLLBACK;
SELECT count(*) FROM u;
BEGIN;
CREATE TABLE t2 (x int) USING colfile;
INSERT INTO t2 VALUES (1);
TRUNCATE t2;
INSERT INTO t2 VALUES (2);
SELECT * FROM t2;
COMMIT;
TRUNCATE u;
SELECT count(*) FROM u;
-- VACUUM, ANALYZE, VACUUM FULL, CLUSTER
DELETE FROM parent WHERE id BETWEEN 1 AND 50;
VACUUM parent;
ANALYZE parent;
SELECT reltuples > 0 AS analyzed FROM pg_class WHERE relname = 'parent';
SELECT count(*) FROM parent;
VACUUM FULL parent;
SELECT count(*), sum(amount) FROM parent;
CLUSTER parent USING parent_pkey;
SELECT id FROM parent ORDER BY id LIMIT 3;
SELECT * FROM mvinc.colfile_check('parent');
SELECT * FROM mvinc.colfile_check('child');
-- plans: bitmap scans are never chosen; parallel scans work
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM parent WHERE id < 80;
RESET enable_indexscan;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET mvinc.colfile_aggregate_scan = off;  -- (else one Colfile Aggregate node)
EXPLAIN (COSTS OFF) SELECT count(*) FROM parent;
SELECT count(*) FROM parent;
RESET mvinc.colfile_aggregate_scan;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- cursors, backwards
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM parent ORDER BY id;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
COMMIT;
BEGIN;
DECLARE c2 SCROLL CURSOR FOR SELECT a FROM (VALUES (1)) v(a), (SELECT id FROM parent WHERE id < 55) p;
FETCH LAST FROM c2;
COMMIT;
-- TABLESAMPLE: SYSTEM samples runs of 291 rows, BERNOULLI single rows;
-- deleted rows never come back, and the same seed gives the same sample
SET mvinc.colfile_rows_per_group = 1000;
CREATE TABLE ts (id int PRIMARY KEY, v int) USING colfile;
INSERT INTO ts SELECT g, g % 10 FROM generate_series(1, 5000) g;
INSERT INTO ts SELECT g, g % 10 FROM generate_series(5001, 6000) g;
DELETE FROM ts WHERE id % 3 = 0;
RESET mvinc.colfile_rows_per_group;
SELECT count(*) = (SELECT count(*) FROM ts) AS all_rows FROM ts TABLESAMPLE SYSTEM (100);
SELECT count(*) = (SELECT count(*) FROM ts) AS all_rows FROM ts TABLESAMPLE BERNOULLI (100);
SELECT count(*) FROM ts TABLESAMPLE SYSTEM (0);
SELECT count(*) FROM ts TABLESAMPLE BERNOULLI (0);
SELECT count(*) BETWEEN 800 AND 2400 AS about_40_percent,
       count(*) FILTER (WHERE id % 3 = 0) AS deleted_rows_seen,
       count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ts t2 WHERE t2.id = s.id AND t2.v = s.v)) AS unknown_rows
FROM ts s TABLESAMPLE BERNOULLI (40) REPEATABLE (7);
SELECT (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE SYSTEM (30) REPEATABLE (3)) =
       (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE SYSTEM (30) REPEATABLE (3)) AS same_sample;
-- (rows are numbered in row-group order here: id - 1)
WITH s AS (SELECT id FROM ts TABLESAMPLE SYSTEM (30) REPEATABLE (3))
SELECT bool_and(n = (SELECT count(*) FROM ts WHERE (id - 1) / 291 = b)) AS whole_runs,
       count(*) BETWEEN 2 AND 19 AS some_runs
FROM (SELECT (id - 1) / 291 AS b, count(*) AS n FROM s GROUP BY 1) x;
DROP TABLE ts;
-- unlogged tables (an empty init fork; crashes: TAP 405), and the
-- persistence changes that rewrite them
CREATE UNLOGGED TABLE ut (a int PRIMARY KEY, b text) USING colfile;
INSERT INTO ut SELECT g, md5(g::text) FROM generate_series(1, 500) g;
UPDATE ut SET b = 'u' || b WHERE a % 7 = 0;
DELETE FROM ut WHERE a % 5 = 0;
SELECT relpersistence, (pg_stat_file(pg_relation_filepath('ut') || '_init')).size AS init_fork_bytes
  FROM pg_class WHERE relname = 'ut';
SELECT count(*), sum(a), count(*) FILTER (WHERE b LIKE 'u%') FROM ut;
ALTER TABLE ut SET LOGGED;
SELECT relpersistence, count(*), sum(a) FROM ut, pg_class WHERE relname = 'ut' GROUP BY 1;
ALTER TABLE ut SET UNLOGGED;
SET enable_seqscan = off;
SELECT relpersistence, count(*), sum(a) FROM ut, pg_class WHERE relname = 'ut' AND ut.a > 0 GROUP BY 1;
RESET enable_seqscan;
SELECT * FROM mvinc.colfile_check('ut');
DROP TABLE ut;
-- refusals (temporary tables: colfile_temp)
-- (CREATE INDEX CONCURRENTLY works: colfile_maint, spec colfile_cic)
CREATE INDEX CONCURRENTLY parent_amount ON parent (amount);
DROP INDEX IF EXISTS parent_amount;
SELECT * FROM mvinc.colfile_stats('pg_class');
-- default_table_access_method
SET default_table_access_method = colfile;
CREATE TABLE dflt (a int);
SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'dflt';
RESET default_table_access_method;
DROP TABLE dflt, t2, u, big, child, parent;
SELECT count(*) FROM mvinc.colfile_rowgroup r WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relfilenode = r.relfilenode);
