-- Every definition an incremental view cannot maintain is refused at
-- CREATE, with a detail that names the construct; nothing is left behind.
CREATE TABLE r_src (id int PRIMARY KEY, g int, v numeric, t text, ts timestamptz);
CREATE TABLE r_other (id int PRIMARY KEY, w int);
CREATE TABLE r_nokey (g int, v int);
CREATE TEMP TABLE r_temp (id int PRIMARY KEY, v int);
CREATE UNLOGGED TABLE r_unlogged (id int PRIMARY KEY, v int);
CREATE TABLE r_part (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE r_parent (id int PRIMARY KEY, v int);
CREATE TABLE r_child () INHERITS (r_parent);
CREATE VIEW r_view AS SELECT * FROM r_src;
\set VERBOSITY default

-- joins
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT s.g, count(*) FROM r_src s JOIN r_other o ON o.id = s.id GROUP BY s.g;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT s.g FROM r_src s, r_other o;
-- subquery in FROM, CTE, set operation, VALUES, function
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g FROM (SELECT g FROM r_src) q;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  WITH q AS (SELECT g FROM r_src) SELECT g FROM q;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g FROM r_src UNION ALL SELECT w FROM r_other;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT * FROM (VALUES (1)) v(x);
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT * FROM generate_series(1, 3) x;
-- sublinks
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id FROM r_src WHERE g IN (SELECT w FROM r_other);
-- window functions, DISTINCT, DISTINCT ON, HAVING over what the select list does not show, grouping sets
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, row_number() OVER () FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT DISTINCT g FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT DISTINCT ON (g) g, v FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g FROM r_src GROUP BY g HAVING count(*) > 1;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FROM r_src GROUP BY ROLLUP (g);
-- LIMIT/OFFSET, ORDER BY, FOR UPDATE, set-returning function
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id FROM r_src LIMIT 10;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id FROM r_src OFFSET 1;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id FROM r_src ORDER BY id;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, generate_series(1, 2) FROM r_src;
-- volatile and stable functions, system columns, whole rows
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, random() FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id FROM r_src WHERE ts < now();
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, ts::date FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, ctid FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, xmin FROM r_src WHERE id > 0;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, r_src FROM r_src;
-- aggregates: no combine function, DISTINCT, ORDER BY, ordered-set,
-- expressions over a column neither aggregated nor grouped
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, string_agg(t, ',') FROM r_src GROUP BY g;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, array_agg(v) FROM r_src GROUP BY g;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, count(DISTINCT v) FROM r_src GROUP BY g;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, sum(v ORDER BY v) FROM r_src GROUP BY g;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, sum(v) + v FROM r_src GROUP BY id;
-- sources: no key (projection), temporary, unlogged, partitioned, foreign-like
-- (view, materialized view), inheritance parent
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT g, v FROM r_nokey;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, v FROM r_temp;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, v FROM r_unlogged;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, v FROM r_part;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, g FROM r_view;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = true) AS
  SELECT id, v FROM r_parent;
-- options
CREATE MATERIALIZED VIEW m WITH (mvinc.cluster_by = 'g') AS SELECT g FROM r_src;
CREATE MATERIALIZED VIEW m WITH (mvinc.incremental = 'maybe') AS SELECT g FROM r_src;

-- nothing was created
SELECT count(*) FROM pg_class WHERE relname = 'm';
SELECT count(*) FROM mvinc.mv_view;
SELECT count(*) FROM pg_class WHERE relnamespace = 'mvinc'::regnamespace AND relname ~ '^mv_[0-9]+';

-- without mvinc.incremental (or with it false) a view is plain PostgreSQL
CREATE MATERIALIZED VIEW plain_m WITH (mvinc.incremental = false) AS
  SELECT DISTINCT g FROM r_src;
CREATE MATERIALIZED VIEW plain_m2 AS SELECT g, string_agg(t, ',') FROM r_src GROUP BY g;
INSERT INTO r_src VALUES (1, 1, 1, 'a', NULL);
REFRESH MATERIALIZED VIEW plain_m;
SELECT * FROM plain_m;
SELECT count(*) FROM mvinc.mv_view;
DROP MATERIALIZED VIEW plain_m, plain_m2;
DROP VIEW r_view;
DROP TABLE r_src, r_other, r_nokey, r_temp, r_unlogged, r_part, r_parent, r_child;
