-- A read's decision is kept for later statements under the same snapshot,
-- but only under the same mvinc.read_path: a function that reads with
-- 'stale_ok' must not make the next 'auto' read stale.
CREATE TABLE rp_src (id serial PRIMARY KEY, g int, x int);
INSERT INTO rp_src (g, x) SELECT i % 5, i FROM generate_series(1, 100) i;
CREATE MATERIALIZED VIEW rp_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS sx FROM rp_src GROUP BY g;
INSERT INTO rp_src (g, x) VALUES (1, 1000), (7, 7);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
CREATE FUNCTION rp_quick() RETURNS bigint LANGUAGE sql STABLE
  SET mvinc.read_path = 'stale_ok' AS 'SELECT count(*) FROM rp_agg';
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rp_quick() AS stale_groups;
SHOW mvinc.read_path;
SELECT count(*) AS groups FROM rp_agg;
SELECT mvinc.read_path('rp_agg');
SET LOCAL mvinc.read_path = 'stale_ok';
SELECT count(*) AS stale_groups FROM rp_agg;
SELECT mvinc.read_path('rp_agg');
SET LOCAL mvinc.read_path = 'auto';
SELECT count(*) AS groups FROM rp_agg;
SET LOCAL mvinc.read_path = 'live';
SELECT mvinc.read_path('rp_agg');
COMMIT;
-- a cursor declared under one setting and fetched under another reads as
-- it started
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL mvinc.read_path = 'stale_ok';
DECLARE c CURSOR FOR SELECT g, n, sx FROM rp_agg ORDER BY g;
FETCH 2 FROM c;
SET LOCAL mvinc.read_path = 'auto';
FETCH ALL FROM c;
SELECT g, n, sx FROM rp_agg ORDER BY g;
COMMIT;

-- group keys of array types: NULL and '{}' are two groups (a NULL-safe
-- comparison through ARRAY[key] nested the arrays and merged them)
CREATE TABLE rp_arr (id serial PRIMARY KEY, arr int[], x int);
INSERT INTO rp_arr (arr, x) VALUES (NULL, 1), ('{}', 10), ('{1}', 100);
CREATE MATERIALIZED VIEW rp_arr_agg WITH (mvinc.incremental = true) AS
  SELECT arr, count(*) AS c, sum(x) AS s FROM rp_arr GROUP BY arr;
INSERT INTO rp_arr (arr, x) VALUES ('{}', 1000), (NULL, 5), ('{NULL}', 7);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('rp_arr_agg');
SELECT * FROM rp_arr_agg ORDER BY arr NULLS FIRST;
SELECT mode FROM mvinc.refresh('rp_arr_agg');
SELECT * FROM rp_arr_agg ORDER BY arr NULLS FIRST;
DELETE FROM rp_arr WHERE arr = '{}' AND x = 10;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT * FROM rp_arr_agg ORDER BY arr NULLS FIRST;
SELECT mode FROM mvinc.refresh('rp_arr_agg');
SELECT * FROM rp_arr_agg ORDER BY arr NULLS FIRST;
SELECT count(*) AS differences FROM (
  (TABLE rp_arr_agg EXCEPT ALL SELECT arr, count(*), sum(x) FROM rp_arr GROUP BY arr)
  UNION ALL (SELECT arr, count(*), sum(x) FROM rp_arr GROUP BY arr EXCEPT ALL TABLE rp_arr_agg)) d;
SET mvinc.enable_rewrite = on;
SELECT count(*) AS null_rows FROM rp_arr WHERE arr IS NULL;
RESET mvinc.enable_rewrite;

DROP MATERIALIZED VIEW rp_agg, rp_arr_agg;
DROP FUNCTION rp_quick();
DROP TABLE rp_src, rp_arr;
