-- Incremental views: every supported shape, created WITH DATA, read fresh
-- and live, compared with their defining query.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

-- The view equals its defining query (EXCEPT ALL both ways): mismatching rows
\i include/mv_diff.sql

CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount numeric(12,2),
                     paid boolean, qty int, weight float8, note text);
INSERT INTO orders
  SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 7 END, g * 1.25, g % 3 <> 0,
         g % 5, g / 4.0, 'n' || (g % 4)
  FROM generate_series(1, 200) g;

-- GROUP BY a column, with a column list and mvinc.cluster_by
CREATE MATERIALIZED VIEW paid_by_customer (customer_id, total_amount, order_count, average_amount)
  WITH (mvinc.incremental = true, mvinc.cluster_by = 'customer_id')
  AS SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id;
\d paid_by_customer
\dm
SELECT * FROM paid_by_customer ORDER BY customer_id;
SELECT mv_diff('paid_by_customer');
SELECT mvinc.read_path('paid_by_customer');
SELECT view, source, kind, pending_changes, last_refresh_mode, storage_rows, populated FROM mvinc.views;
SELECT physical_name, role, view_attnum, aggregate, type, expression
  FROM mvinc.mv_column WHERE view = 'paid_by_customer'::regclass ORDER BY physical_name;
CREATE FUNCTION explain_clean(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(l, '[0-9]{4,}', 'N', 'g');
  END LOOP;
END $$;
SELECT explain_clean('SELECT * FROM paid_by_customer');

-- GROUP BY immutable expressions (one of them not selected)
CREATE MATERIALIZED VIEW by_expr WITH (mvinc.incremental = true) AS
  SELECT qty % 2 AS parity, upper(note) AS unote, count(*) AS n, max(amount) AS mx
  FROM orders GROUP BY qty % 2, upper(note), paid;
SELECT mv_diff('by_expr');

-- aggregates without GROUP BY: always one row
CREATE MATERIALIZED VIEW totals WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(amount) AS s, avg(qty) AS a, min(id) AS lo, max(id) AS hi
  FROM orders WHERE customer_id = 3;
SELECT * FROM totals;
CREATE MATERIALIZED VIEW empty_totals WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(amount) AS s FROM orders WHERE id < 0;
SELECT * FROM empty_totals;

-- GROUP BY without aggregates
CREATE MATERIALIZED VIEW groups_only WITH (mvinc.incremental = true) AS
  SELECT customer_id, paid FROM orders GROUP BY customer_id, paid;
SELECT mv_diff('groups_only');

-- projection with WHERE and expressions; hidden row identity
CREATE MATERIALIZED VIEW big_orders WITH (mvinc.incremental = true) AS
  SELECT id, customer_id, amount * 2 AS double_amount, note FROM orders WHERE amount > 200;
SELECT count(*), mv_diff('big_orders') FROM big_orders;
SELECT physical_name, role FROM mvinc.mv_column WHERE view = 'big_orders'::regclass ORDER BY 1;

-- every aggregate family (and NULL groups)
CREATE MATERIALIZED VIEW families WITH (mvinc.incremental = true) AS
  SELECT customer_id,
         count(*) AS n, count(note) AS n_note, sum(qty) AS s_int, sum(id::bigint) AS s_big,
         sum(amount) AS s_num, avg(qty) AS a_int, avg(amount) AS a_num,
         min(amount) AS mn, max(note) AS mx_text, bool_and(paid) AS all_paid, bool_or(paid) AS any_paid,
         bit_or(qty) AS bits, stddev_samp(amount) AS sd, var_pop(qty) AS vp,
         mvinc.approx_count_distinct(note) AS notes
  FROM orders GROUP BY customer_id;
SELECT mv_diff('families');
SELECT customer_id, n, notes FROM families ORDER BY customer_id NULLS FIRST;
-- float aggregates merge in another order: compare with a tolerance
CREATE MATERIALIZED VIEW floats WITH (mvinc.incremental = true) AS
  SELECT paid, sum(weight) AS s, avg(weight) AS a, max(weight) AS mx FROM orders GROUP BY paid;
SELECT f.paid, abs(f.s - o.s) < 1e-9 AS s_ok, abs(f.a - o.a) < 1e-9 AS a_ok, f.mx = o.mx AS mx_ok
  FROM floats f JOIN (SELECT paid, sum(weight) s, avg(weight) a, max(weight) mx FROM orders GROUP BY paid) o
  USING (paid) ORDER BY 1;

-- min/max of text under a non-default collation, and of an enum
-- (polymorphic state): merges pass the argument's type and collation
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE notes (id int PRIMARY KEY, g int, t text COLLATE "C", m mood);
INSERT INTO notes VALUES (1, 1, 'b', 'ok'), (2, 1, 'B', 'sad'), (3, 2, 'a', 'happy');
CREATE MATERIALIZED VIEW note_ext WITH (mvinc.incremental = true) AS
  SELECT g, min(t) AS lo, max(t) AS hi, max(m) AS best, min(m) AS worst FROM notes GROUP BY g;
INSERT INTO notes VALUES (4, 1, 'a', 'happy'), (5, 2, 'Z', 'sad');
SELECT mode FROM mvinc.refresh('note_ext');
SELECT * FROM note_ext ORDER BY g;
SELECT mv_diff('note_ext');
DROP TABLE notes CASCADE;
DROP TYPE mood;

-- WITH NO DATA: published, read live until the first refresh (initial)
CREATE MATERIALIZED VIEW later WITH (mvinc.incremental = true) AS
  SELECT paid, count(*) AS n FROM orders GROUP BY paid WITH NO DATA;
SELECT mvinc.read_path('later');
SELECT * FROM later ORDER BY paid;
SELECT mode, changes_applied FROM mvinc.refresh('later');
SELECT mvinc.read_path('later');
SELECT * FROM later ORDER BY paid;

-- reads stay correct after writes: live until refreshed, then fresh again
INSERT INTO orders VALUES (1001, 3, 10, true, 1, 1, 'x');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('paid_by_customer');
SELECT * FROM paid_by_customer WHERE customer_id = 3;
REFRESH MATERIALIZED VIEW paid_by_customer;
SELECT mvinc.read_path('paid_by_customer');
SELECT * FROM paid_by_customer WHERE customer_id = 3;
-- a prepared statement decides at execution, not at planning
PREPARE q AS SELECT order_count FROM paid_by_customer WHERE customer_id = 3;
EXECUTE q;
INSERT INTO orders VALUES (1002, 3, 10, true, 1, 1, 'x');
EXECUTE q;
REFRESH MATERIALIZED VIEW CONCURRENTLY paid_by_customer;
EXECUTE q;
DEALLOCATE q;
-- the view inside a plain view and a subquery
CREATE VIEW v_on_mv AS SELECT customer_id, order_count FROM paid_by_customer WHERE customer_id < 2;
SELECT * FROM v_on_mv ORDER BY 1;
SELECT count(*) FROM orders o WHERE o.customer_id IN (SELECT customer_id FROM paid_by_customer);
DROP VIEW v_on_mv;

-- the view and its storage are read-only
INSERT INTO paid_by_customer VALUES (1, 1, 1, 1);
UPDATE paid_by_customer SET order_count = 0;
DELETE FROM paid_by_customer;
TRUNCATE paid_by_customer;
COPY paid_by_customer FROM '/nonexistent/file';
SELECT format('INSERT INTO mvinc.%I DEFAULT VALUES', storage_name) AS ins,
       format('TRUNCATE mvinc.%I', storage_name) AS trunc,
       format('DROP TABLE mvinc.%I', storage_name) AS drp
  FROM mvinc.mv_view WHERE view = 'paid_by_customer'::regclass \gset
\set VERBOSITY sqlstate
:ins;
:trunc;
:drp;
\set VERBOSITY default
SELECT storage_rows > 0 AS has_rows FROM mvinc.views WHERE view = 'paid_by_customer'::regclass;

-- permissions are those of the view
CREATE ROLE mv_reader;
SET ROLE mv_reader;
SELECT count(*) FROM paid_by_customer;
RESET ROLE;
GRANT SELECT ON paid_by_customer TO mv_reader;
SET ROLE mv_reader;
SELECT count(*) > 0 AS readable FROM paid_by_customer;
SELECT count(*) FROM orders;
SELECT view, kind FROM mvinc.views WHERE view = 'paid_by_customer'::regclass;
RESET ROLE;
REVOKE SELECT ON paid_by_customer FROM mv_reader;
DROP ROLE mv_reader;

-- a view owner who is not a superuser: create, refresh, read, drop
CREATE ROLE mv_owner;
GRANT CREATE ON SCHEMA public TO mv_owner;
SET ROLE mv_owner;
CREATE TABLE own_src (id int PRIMARY KEY, g int, v numeric);
INSERT INTO own_src SELECT i, i % 3, i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW own_v WITH (mvinc.incremental = true) AS
  SELECT g, sum(v) AS s, count(*) AS n FROM own_src GROUP BY g;
INSERT INTO own_src VALUES (100, 1, 100);
UPDATE own_src SET v = v + 1 WHERE id = 1;
SELECT mode FROM mvinc.refresh('own_v');
REFRESH MATERIALIZED VIEW own_v;
SELECT mvinc.read_path('own_v'), mv_diff('own_v');
SELECT * FROM own_v ORDER BY g;
CREATE FUNCTION own_f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
CREATE MATERIALIZED VIEW own_bad WITH (mvinc.incremental = true) AS
  SELECT own_f(g), count(*) FROM own_src GROUP BY own_f(g);
DROP MATERIALIZED VIEW own_v;
DROP FUNCTION own_f(int);
DROP TABLE own_src;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM mv_owner;
DROP ROLE mv_owner;

-- DROP removes storage, catalog rows and the capture consumer
SELECT storage_name AS later_storage FROM mvinc.mv_view WHERE view = 'later'::regclass \gset
DROP MATERIALIZED VIEW later;
SELECT count(*) FROM pg_class WHERE relname = :'later_storage';
SELECT count(*) FROM mvinc.mv_view WHERE storage_name = :'later_storage';
-- DROP of the source needs CASCADE, which drops the views
DROP TABLE orders;
DROP TABLE orders CASCADE;
SELECT count(*) FROM mvinc.mv_view;
SELECT count(*) FROM pg_class WHERE relnamespace = 'mvinc'::regnamespace AND relname ~ '^mv_[0-9]+';
DROP FUNCTION mv_diff(regclass);
DROP FUNCTION explain_clean(text);
