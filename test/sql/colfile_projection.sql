-- colfile: scans decode only the columns a query needs. Every query shape
-- below is run on a heap table and its colfile twin and must give the same
-- answer (a wrong column set would show up as NULLs).
SET mvinc.colfile_rows_per_group = 64;
CREATE TABLE pj_h (id int PRIMARY KEY, g int, a int, b text, c float8, d date, e int[]) USING heap;
CREATE TABLE pj_c (id int PRIMARY KEY, g int, a int, b text, c float8, d date, e int[]) USING colfile;
INSERT INTO pj_h SELECT i, i % 7, i % 101, 'b' || (i % 13), i / 3.0, date '2024-01-01' + i % 40,
       ARRAY[i, i % 5] FROM generate_series(1, 1000) i;
INSERT INTO pj_c SELECT * FROM pj_h;
CREATE INDEX ON pj_h (a);
CREATE INDEX ON pj_c (a);
ANALYZE pj_h;
ANALYZE pj_c;

CREATE FUNCTION pj_same(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE r1 text; r2 text;
BEGIN
  EXECUTE format('SELECT md5(coalesce(string_agg(x::text, %L ORDER BY x::text), %L)) FROM (%s) x', '|', '',
                 replace(q, '@T', 'pj_h')) INTO r1;
  EXECUTE format('SELECT md5(coalesce(string_agg(x::text, %L ORDER BY x::text), %L)) FROM (%s) x', '|', '',
                 replace(q, '@T', 'pj_c')) INTO r2;
  IF r1 IS DISTINCT FROM r2 THEN
    RAISE WARNING 'differs: %', q;
  END IF;
  RETURN r1 IS NOT DISTINCT FROM r2;
END $$;

CREATE TABLE pj_queries (q text);
INSERT INTO pj_queries VALUES
 ('SELECT sum(c) FROM @T'),
 ('SELECT count(*) FROM @T'),
 ('SELECT count(*) FROM @T WHERE b = ''b3'''),
 ('SELECT g, sum(a), max(b) FROM @T GROUP BY g'),
 ('SELECT g, count(DISTINCT b) FILTER (WHERE c > 10) FROM @T GROUP BY g HAVING sum(a) > 10'),
 ('SELECT * FROM @T WHERE id % 97 = 0'),
 ('SELECT t FROM @T t WHERE id < 5'),
 ('SELECT id, e[2] FROM @T ORDER BY c DESC, id LIMIT 7'),
 ('SELECT d, b FROM @T ORDER BY d, b, id LIMIT 3 OFFSET 10'),
 ('SELECT id FROM @T ORDER BY g FETCH FIRST 3 ROWS WITH TIES'),
 ('SELECT DISTINCT b FROM @T'),
 ('SELECT DISTINCT ON (g) g, id, b FROM @T ORDER BY g, id DESC'),
 ('SELECT x.id, y.b FROM @T x JOIN @T y ON x.a = y.id WHERE x.g = 3'),
 ('SELECT x.id, y.c FROM @T x LEFT JOIN @T y ON x.id = y.a + 500 WHERE x.id < 50'),
 ('SELECT x.b, count(*) FROM @T x JOIN @T y USING (g) WHERE x.id < 20 AND y.id < 20 GROUP BY x.b'),
 ('SELECT id FROM @T x WHERE EXISTS (SELECT 1 FROM @T y WHERE y.a = x.g AND y.b = x.b)'),
 ('SELECT id, (SELECT max(c) FROM @T y WHERE y.g = x.g) FROM @T x WHERE id < 30'),
 ('SELECT id, sum(c) OVER (PARTITION BY g ORDER BY id) FROM @T WHERE id < 100'),
 ('SELECT g, a, sum(c) FROM @T GROUP BY GROUPING SETS ((g), (a)) HAVING count(*) > 5'),
 ('SELECT b FROM @T UNION SELECT b || ''x'' FROM @T WHERE g = 1'),
 ('SELECT id FROM @T WHERE a = 42'),
 ('SELECT a, d FROM @T WHERE a BETWEEN 10 AND 12'),
 ('SELECT a FROM @T WHERE a < 3'),
 ('SELECT id, e FROM @T WHERE c > 300 AND d < ''2024-01-10'''),
 ('WITH w AS MATERIALIZED (SELECT id, b FROM @T WHERE g = 2) SELECT b, count(*) FROM w GROUP BY b'),
 ('SELECT ctid IS NOT NULL, id FROM @T WHERE id < 4'),
 ('SELECT row_to_json(t) FROM @T t WHERE id = 77'),
 ('SELECT id FROM @T WHERE id IN (SELECT a FROM @T WHERE g = 5)');

SELECT count(*) AS queries, count(*) FILTER (WHERE pj_same(q)) AS same FROM pj_queries;
SET enable_seqscan = off;
SET enable_hashjoin = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE pj_same(q)) AS same FROM pj_queries;
RESET enable_seqscan;
RESET enable_hashjoin;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) AS queries, count(*) FILTER (WHERE pj_same(q)) AS same FROM pj_queries;
RESET ALL;
-- cursors and prepared statements re-use plans
PREPARE p1 AS SELECT sum(c), max(b) FROM pj_c WHERE g = $1;
EXECUTE p1(1);
EXECUTE p1(2);
SELECT sum(c), max(b) FROM pj_h WHERE g = 2;
DROP TABLE pj_h, pj_c, pj_queries;
DROP FUNCTION pj_same;
