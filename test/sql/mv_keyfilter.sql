-- Key conditions pushed into a hybrid read's delta: a read that keeps some
-- group keys (WHERE k = value, k IN (...), k = ANY (array), in prepared
-- statements too) computes the delta of those groups alone, and answers
-- exactly as the defining query with the same condition, whatever moved
-- rows between groups, deleted them, or left min/max to recompute.
-- Conditions that cannot be pushed (other operators or types, columns,
-- volatile values, outer joins' nullable sides, OR) are applied as before.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

-- rows in which "view WHERE cond" and "query WHERE cond" differ
CREATE FUNCTION kf_diff(v regclass, cond text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM %s WHERE %s EXCEPT ALL SELECT * FROM (%s) d WHERE %s) '
                 'UNION ALL (SELECT * FROM (%s) d WHERE %s EXCEPT ALL SELECT * FROM %s WHERE %s)) x',
                 v, cond, q, cond, q, cond, v, cond) INTO n;
  RETURN n;
END $$;
-- the path a query's read of a view shows, and its delta: state rows of
-- inserts + rows that replace stored groups
CREATE FUNCTION kf_delta(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; path text := '?'; rows text := '-'; replacing text := '0';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '^\s*Path: ' THEN path := substring(line FROM 'Path: (\w+)'); END IF;
    IF line ~ 'Delta State Rows: ' THEN rows := substring(line FROM 'Delta State Rows: (\d+)'); END IF;
    IF line ~ 'Replacing Rows: ' THEN replacing := substring(line FROM 'Replacing Rows: (\d+)'); END IF;
  END LOOP;
  RETURN path || ' ' || rows || ' + ' || replacing;
END $$;

CREATE TABLE kf (id int PRIMARY KEY, region int, city text COLLATE "C", big bigint,
                 amount numeric, paid boolean);
INSERT INTO kf SELECT i, i % 10, 'c' || (i % 3), i % 4, i * 1.5, i % 5 <> 0
  FROM generate_series(1, 600) i;
CREATE MATERIALIZED VIEW kf_v WITH (mvinc.incremental = true) AS
  SELECT region, city, count(*) AS n, sum(amount) AS total, min(amount) AS lo,
         max(amount) AS hi, avg(amount) AS mean
  FROM kf WHERE paid GROUP BY region, city;
CREATE MATERIALIZED VIEW kf_big WITH (mvinc.incremental = true) AS
  SELECT big, count(*) AS n, sum(amount) AS total FROM kf GROUP BY big;

-- inserts waiting: one region's delta alone
INSERT INTO kf SELECT i, i % 10, 'c' || (i % 3), i % 4, i * 1.5, i % 5 <> 0
  FROM generate_series(601, 900) i;
SELECT mvinc.read_path('kf_v');
SELECT kf_delta('SELECT * FROM kf_v');
SELECT kf_delta('SELECT * FROM kf_v WHERE region = 7');
SELECT kf_delta('SELECT * FROM kf_v WHERE 7 = region AND city = ''c1''');
SELECT kf_delta('SELECT * FROM kf_v WHERE region IN (1, 2)');
SELECT kf_delta('SELECT * FROM kf_v WHERE region = ANY (ARRAY[3, NULL])');
SELECT c, kf_diff('kf_v', c)
  FROM unnest(ARRAY['region = 7', '7 = region AND city = ''c1''', 'region IN (1, 2)',
                    'region = ANY (ARRAY[3, NULL])', 'region = 42', 'region = NULL',
                    'city = ''c2''', 'region = 7 OR region = 8', 'region + 0 = 7',
                    'region > 7', 'region = (random() * 0)::int + 7']) c;

-- updates that move rows between groups, deletes (min and max recomputed),
-- inserts: the groups a condition keeps are exact, moved-out rows included
UPDATE kf SET region = 7 WHERE id IN (1, 2, 3);
UPDATE kf SET region = 8, amount = amount + 1 WHERE id IN (17, 27);
DELETE FROM kf WHERE id IN (7, 77, 607);
DELETE FROM kf WHERE amount = (SELECT min(amount) FROM kf WHERE region = 7 AND paid);
UPDATE kf SET paid = NOT paid WHERE id IN (37, 47, 57);
INSERT INTO kf VALUES (1001, 7, 'c9', 0, 1, true), (1002, 11, 'c0', 0, 2, true);
SELECT mvinc.read_path('kf_v');
SELECT kf_delta('SELECT * FROM kf_v WHERE region = 7');
SELECT c, kf_diff('kf_v', c)
  FROM unnest(ARRAY['region = 7', 'region = 8', 'region = 1', 'region = 11', 'region IN (7, 8)',
                    'city = ''c9''', 'region = 7 AND city = ''c1''']) c;
SELECT * FROM kf_v WHERE region = 11 ORDER BY city;

-- prepared statements: parameters, custom and generic plans
PREPARE kf_one(int) AS SELECT region, city, n, total, lo, hi FROM kf_v WHERE region = $1 ORDER BY city;
PREPARE kf_many(int[]) AS SELECT count(*), sum(n) FROM kf_v WHERE region = ANY ($1);
SET plan_cache_mode = force_generic_plan;
EXECUTE kf_one(7);
EXECUTE kf_one(8);
EXECUTE kf_many('{7,8,11}');
SELECT count(*), sum(n)
  FROM (SELECT region, city, count(*) AS n FROM kf WHERE paid AND region IN (7, 8, 11) GROUP BY 1, 2) s;
SET plan_cache_mode = force_custom_plan;
EXECUTE kf_one(7);
RESET plan_cache_mode;
-- a refresh between executions: fresh, then hybrid again with new inserts
SELECT mode FROM mvinc.refresh('kf_v');
EXECUTE kf_one(7);
INSERT INTO kf VALUES (1003, 7, 'c1', 0, 1000, true);
EXECUTE kf_one(7);
SELECT kf_diff('kf_v', 'region = 7');

-- PL/pgSQL: the same statement with another value each time, in one
-- REPEATABLE READ snapshot (a delta per value; all exact)
INSERT INTO kf SELECT i, i % 12, 'c' || (i % 4), i % 4, i, true FROM generate_series(1100, 1160) i;
BEGIN ISOLATION LEVEL REPEATABLE READ;
DO $$
DECLARE bad int := 0;
BEGIN
  FOR r IN 0..11 LOOP
    bad := bad + kf_diff('kf_v', format('region = %s', r));
    bad := bad + (SELECT count(*) FROM ((SELECT region, city, n FROM kf_v WHERE region = r
                                         EXCEPT ALL
                                         SELECT region, city, count(*) FROM kf WHERE paid AND region = r
                                          GROUP BY region, city)) d);
  END LOOP;
  RAISE NOTICE 'rows differing: %', bad;
END $$;
COMMIT;

-- two reads of the view with other conditions in one statement
SELECT a.city, a.n, b.n AS n8
  FROM kf_v a JOIN kf_v b ON a.city = b.city
 WHERE a.region = 7 AND b.region = 8 ORDER BY a.city;
SELECT a.city, a.n, b.n AS n8
  FROM (SELECT region, city, count(*) AS n FROM kf WHERE paid GROUP BY region, city) a
  JOIN (SELECT region, city, count(*) AS n FROM kf WHERE paid GROUP BY region, city) b ON a.city = b.city
 WHERE a.region = 7 AND b.region = 8 ORDER BY a.city;
-- an inner join's ON condition is pushed; an outer join's nullable side is
-- read whole (the condition there keeps rows, it does not remove them)
SELECT kf_delta('SELECT * FROM (VALUES (7)) x(r) JOIN kf_v ON kf_v.region = 7');
SELECT kf_delta('SELECT * FROM (VALUES (7)) x(r) LEFT JOIN kf_v ON kf_v.region = 7');
SELECT count(*) FROM (VALUES (7), (8)) x(r) LEFT JOIN kf_v ON kf_v.region = 7 AND x.r = 7;
-- a column of another relation is no value to push
SELECT kf_delta('SELECT * FROM (VALUES (7)) x(r) JOIN kf_v ON kf_v.region = x.r');
-- bigint key with an int constant: a cross-type operator of the key's
-- family is pushed; numeric constants (another family) are not
SELECT mode FROM mvinc.refresh('kf_big');
INSERT INTO kf VALUES (1200, 1, 'c1', 2, 5, true), (1201, 1, 'c1', 3, 5, true);
SELECT kf_delta('SELECT * FROM kf_big WHERE big = 2');
SELECT kf_delta('SELECT * FROM kf_big WHERE big = 2.0');
SELECT c, kf_diff('kf_big', c) FROM unnest(ARRAY['big = 2', 'big = 2.0', 'big = 2::int2']) c;
-- a collation other than the key's is not pushed
SELECT kf_delta('SELECT * FROM kf_v WHERE city = ''c1'' COLLATE "POSIX"');
SELECT kf_diff('kf_v', 'city = ''c1'' COLLATE "POSIX"');

-- a source query rewritten onto the view passes its key condition on
SET mvinc.enable_rewrite = on;
SELECT kf_delta('SELECT region, city, count(*) FROM kf WHERE paid AND region = 8 GROUP BY region, city');
SELECT region, city, count(*) FROM kf WHERE paid AND region = 8 GROUP BY region, city ORDER BY city;
RESET mvinc.enable_rewrite;
SELECT region, city, count(*) FROM kf WHERE paid AND region = 8 GROUP BY region, city ORDER BY city;
-- through plain views and subqueries in FROM that pass the key column on
-- as it is (not through ones that group, aggregate or limit rows)
CREATE TABLE kf_regions (region int PRIMARY KEY, label text);
INSERT INTO kf_regions SELECT r, 'region ' || r FROM generate_series(0, 9) r;
CREATE VIEW kf_pv AS SELECT region, city, n, total, lo FROM kf_v WHERE n > 0;
CREATE VIEW kf_ppv AS SELECT p.region AS reg, p.city, p.n, r.label
  FROM kf_pv p LEFT JOIN kf_regions r ON r.region = p.region;
CREATE VIEW kf_top AS SELECT * FROM kf_v ORDER BY n DESC LIMIT 3;
CREATE VIEW kf_sum AS SELECT region, sum(n) AS n FROM kf_v GROUP BY region;
SELECT kf_delta('SELECT * FROM (SELECT * FROM kf_v) s WHERE region = 8');
SELECT kf_delta('SELECT * FROM kf_pv WHERE region = 8');
SELECT kf_delta('SELECT * FROM kf_ppv WHERE reg IN (7, 8)');
SELECT kf_delta('SELECT * FROM kf_ppv WHERE label = ''region 8''');
SELECT kf_delta('SELECT * FROM kf_top WHERE region = 8');
SELECT kf_delta('SELECT * FROM kf_sum WHERE region = 8');
SELECT count(*) AS differing
  FROM ((SELECT * FROM kf_ppv WHERE reg IN (7, 8)
         EXCEPT ALL
         SELECT g.region, g.city, g.n, r.label
           FROM (SELECT region, city, count(*) AS n FROM kf WHERE paid GROUP BY 1, 2) g
           LEFT JOIN kf_regions r ON r.region = g.region WHERE g.region IN (7, 8))
        UNION ALL
        (SELECT g.region, g.city, g.n, r.label
           FROM (SELECT region, city, count(*) AS n FROM kf WHERE paid GROUP BY 1, 2) g
           LEFT JOIN kf_regions r ON r.region = g.region WHERE g.region IN (7, 8)
         EXCEPT ALL
         SELECT * FROM kf_ppv WHERE reg IN (7, 8))) d;
SELECT * FROM kf_sum WHERE region = 8;
SELECT region, count(*) FROM kf WHERE paid AND region = 8 GROUP BY region;

-- a statement that runs in parallel mode computes the delta all the same
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT (SELECT count(*) FROM kf) > 0 AS counted, v.* FROM kf_v v WHERE region = 7 ORDER BY city;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- a MERGE's ON is no WHERE: it removes no row of the view (nothing pushed)
CREATE TABLE kf_tgt (region int, n bigint);
CREATE TABLE kf_tgt2 (region int, n bigint);
MERGE INTO kf_tgt t USING kf_v s ON s.region = 3 AND t.region = s.region
  WHEN NOT MATCHED THEN INSERT VALUES (s.region, s.n);
MERGE INTO kf_tgt2 t USING (SELECT * FROM kf_v) s ON s.region = 3 AND t.region = s.region
  WHEN NOT MATCHED THEN INSERT VALUES (s.region, s.n);
SELECT x.t, count(*) AS differing
  FROM (SELECT 'kf_tgt' AS t, * FROM kf_tgt UNION ALL SELECT 'kf_tgt2', * FROM kf_tgt2) x
 WHERE (x.region, x.n) NOT IN (SELECT region, count(*) FROM kf WHERE paid GROUP BY region, city)
 GROUP BY x.t;
SELECT (SELECT count(*) FROM kf_tgt) AS merged, (SELECT count(*) FROM kf_tgt2) AS merged2,
       (SELECT count(*) FROM (SELECT DISTINCT region, city FROM kf WHERE paid) g) AS groups;
DROP TABLE kf_tgt, kf_tgt2;

-- values that print alike under some settings are different conditions
CREATE TABLE kf_f (id int PRIMARY KEY, k float8, d date);
INSERT INTO kf_f SELECT i, CASE WHEN i % 2 = 0 THEN 0.1 ELSE 0.1000000000001 END,
                       CASE WHEN i % 2 = 0 THEN date '2020-02-01' ELSE date '2020-01-02' END
  FROM generate_series(1, 20) i;
CREATE MATERIALIZED VIEW kf_fv WITH (mvinc.incremental = true) AS
  SELECT k, count(*) AS n FROM kf_f GROUP BY k;
CREATE MATERIALIZED VIEW kf_dv WITH (mvinc.incremental = true) AS
  SELECT d, count(*) AS n FROM kf_f GROUP BY d;
INSERT INTO kf_f SELECT i, CASE WHEN i % 2 = 0 THEN 0.1 ELSE 0.1000000000001 END,
                       CASE WHEN i % 2 = 0 THEN date '2020-02-01' ELSE date '2020-01-02' END
  FROM generate_series(21, 40) i;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SET extra_float_digits = -10;
SELECT (SELECT n FROM kf_fv WHERE k = 0.1) AS n1, (SELECT n FROM kf_fv WHERE k = 0.1000000000001) AS n2;
RESET extra_float_digits;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL DateStyle = 'SQL, DMY';
SELECT n FROM kf_dv WHERE d = '2020-02-01';
SET LOCAL DateStyle = 'SQL, MDY';
SELECT n FROM kf_dv WHERE d = '2020-01-02';
COMMIT;
DROP TABLE kf_f CASCADE;

-- a key that may fail or show its input is not filtered on: the filter
-- could run before the view's WHERE, on rows it drops (as a superuser)
CREATE TABLE kf_sec (id serial PRIMARY KEY, payload text, d int);
INSERT INTO kf_sec (payload, d) VALUES ('1', 1), ('2', 0);
CREATE MATERIALIZED VIEW kf_secv WITH (mvinc.incremental = true) AS
  SELECT payload::int AS k, count(*) AS n FROM kf_sec WHERE payload ~ '^[0-9]+$' GROUP BY payload::int;
CREATE MATERIALIZED VIEW kf_divv WITH (mvinc.incremental = true) AS
  SELECT 100 / d AS k, count(*) AS n FROM kf_sec WHERE d <> 0 GROUP BY 100 / d;
CREATE TABLE kf_vch (id int PRIMARY KEY, tag varchar(10));
INSERT INTO kf_vch VALUES (1, 'a'), (2, 'b');
CREATE MATERIALIZED VIEW kf_vc WITH (mvinc.incremental = true) AS
  SELECT tag, count(*) AS n FROM kf_vch GROUP BY tag;
INSERT INTO kf_vch VALUES (3, 'a'), (4, 'b'), (5, 'c');
INSERT INTO kf_sec (payload, d) VALUES ('3', 2), ('secret: 1234-5678', 0);
CREATE TABLE kf_arr (id int PRIMARY KEY, a int[], b int[]);
INSERT INTO kf_arr VALUES (1, '{1}', '{1}');
CREATE MATERIALIZED VIEW kf_arrv WITH (mvinc.incremental = true) AS
  SELECT (ARRAY[a, b])[1][1] AS k, count(*) AS n FROM kf_arr
  WHERE cardinality(a) = cardinality(b) GROUP BY 1;
INSERT INTO kf_arr VALUES (2, '{2}', '{2}'), (3, '{3}', '{3,4}');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT * FROM kf_secv WHERE k = 3;
SELECT * FROM kf_divv WHERE k = 50;
SELECT * FROM kf_arrv WHERE k = 2;
SELECT kf_delta('SELECT * FROM kf_secv WHERE k = 3'), kf_delta('SELECT * FROM kf_divv WHERE k = 50');
-- a varchar key compares as text: pushed
SELECT kf_delta('SELECT * FROM kf_vc');
SELECT kf_delta('SELECT * FROM kf_vc WHERE tag = ''b''');
SELECT * FROM kf_vc WHERE tag = 'b';
DROP TABLE kf_sec, kf_vch, kf_arr CASCADE;

-- keys of other kinds: an enum, a domain, a nondeterministic collation
-- (equal keys that differ in case are one group), and lower(name) (not
-- leakproof: not filtered on, and still exact)
CREATE TYPE kf_tier AS ENUM ('low', 'mid', 'high');
CREATE DOMAIN kf_code AS int CHECK (VALUE >= 0);
CREATE COLLATION kf_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE kt (id int PRIMARY KEY, name text COLLATE kf_ci, tier kf_tier, code kf_code, x int);
INSERT INTO kt SELECT i, (ARRAY['Ann', 'bob', 'Cy'])[i % 3 + 1], (ARRAY['low', 'mid', 'high'])[i % 3 + 1]::kf_tier,
                      i % 4, i FROM generate_series(1, 90) i;
CREATE MATERIALIZED VIEW kt_v WITH (mvinc.incremental = true) AS
  SELECT lower(name) AS lname, tier, code, count(*) AS n, sum(x) AS sx FROM kt GROUP BY lower(name), tier, code;
CREATE MATERIALIZED VIEW kt_ci WITH (mvinc.incremental = true) AS
  SELECT name, count(*) AS n, max(x) AS hi FROM kt GROUP BY name;
INSERT INTO kt SELECT i, (ARRAY['ANN', 'Bob', 'cy', 'Dee'])[i % 4 + 1], (ARRAY['low', 'mid', 'high'])[i % 3 + 1]::kf_tier,
                      i % 5, i FROM generate_series(91, 150) i;
UPDATE kt SET name = 'BOB', tier = 'high' WHERE id IN (1, 2, 3);
DELETE FROM kt WHERE id IN (4, 5);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kf_delta('SELECT * FROM kt_v'), kf_delta('SELECT * FROM kt_ci');
SELECT kf_delta('SELECT * FROM kt_v WHERE lname = ''ann''');
SELECT kf_delta('SELECT * FROM kt_v WHERE tier = ''mid'' AND code = 2');
SELECT kf_delta('SELECT * FROM kt_ci WHERE name = ''ann''');
SELECT c, kf_diff('kt_v', c)
  FROM unnest(ARRAY['lname = ''ann''', 'tier = ''mid'' AND code = 2', 'tier IN (''low'', ''high'')',
                    'code = 4', 'code = 4::kf_code']) c;
SELECT c, kf_diff('kt_ci', c)
  FROM unnest(ARRAY['name = ''ann''', 'name = ''BOB''', 'name IN (''cy'', ''dee'')',
                    'name = ''ann'' COLLATE "C"']) c;
SELECT lower(name::text) AS name, n, hi FROM kt_ci WHERE name IN ('ANN', 'bob', 'CY', 'dee') ORDER BY 1;
DROP TABLE kt CASCADE;
DROP TYPE kf_tier;
DROP DOMAIN kf_code;
DROP COLLATION kf_ci;

-- the delta functions check what they are given (PUBLIC may call them)
SELECT * FROM mvinc._delta_states('kf_v'::regclass, '{1}', ARRAY['<(integer,integer)'::regoperator::oid], ARRAY[7])
  AS d(k1 int, k2 text, s1 bytea, s2 bytea, s3 bytea, s4 bytea, _mvinc_count bigint);
SELECT * FROM mvinc._delta_states('kf_v'::regclass, '{3}', ARRAY['=(integer,integer)'::regoperator::oid], ARRAY[7])
  AS d(k1 int, k2 text, s1 bytea, s2 bytea, s3 bytea, s4 bytea, _mvinc_count bigint);
SELECT * FROM mvinc._delta_states('kf_v'::regclass, '{1}', ARRAY['=(integer,integer)'::regoperator::oid], 7)
  AS d(k1 int, k2 text, s1 bytea, s2 bytea, s3 bytea, s4 bytea, _mvinc_count bigint);
SELECT * FROM mvinc._delta_states('kf_v'::regclass, '{1,2}', ARRAY['=(integer,integer)'::regoperator::oid], ARRAY[7])
  AS d(k1 int, k2 text, s1 bytea, s2 bytea, s3 bytea, s4 bytea, _mvinc_count bigint);

DROP VIEW kf_ppv, kf_pv, kf_top, kf_sum;
DROP TABLE kf_regions;
DROP MATERIALIZED VIEW kf_v;
DROP MATERIALIZED VIEW kf_big;
DROP TABLE kf;
DROP FUNCTION kf_diff(regclass, text);
DROP FUNCTION kf_delta(text);
