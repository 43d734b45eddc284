-- mvinc demo: an incremental materialized view kept from the WAL, the
-- change capture behind it, and the colfile table access method.
\pset footer off
\timing off
CREATE EXTENSION mvinc;

-- A source table with 200k orders for 2,000 customers.
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL,
                     amount numeric(12,2) NOT NULL, paid bool NOT NULL);
INSERT INTO orders (customer_id, amount, paid)
SELECT g % 2000, (g % 997) / 10.0, g % 5 <> 0 FROM generate_series(1, 200000) g;

-- An incremental view: aggregates are stored as mergeable partial states.
CREATE MATERIALIZED VIEW paid_orders_by_customer
    (customer_id, total_amount, order_count, average_amount)
    WITH (mvinc.incremental = true)
AS SELECT customer_id, sum(amount), count(*), avg(amount)
   FROM orders WHERE paid GROUP BY customer_id;

SELECT * FROM paid_orders_by_customer WHERE customer_id IN (1, 2) ORDER BY 1;
SELECT mvinc.read_path('paid_orders_by_customer');

-- New orders arrive. The view is not stale: until it is refreshed, reads
-- take another path and still answer correctly.
INSERT INTO orders (customer_id, amount, paid)
SELECT g % 2000, 42, true FROM generate_series(1, 300) g;
SELECT mvinc.read_path('paid_orders_by_customer');
SELECT * FROM paid_orders_by_customer WHERE customer_id IN (1, 2) ORDER BY 1;

-- A refresh consumes only the captured changes. Appends add the delta's
-- states beside the stored ones, one row per touched customer, without
-- rewriting stored rows; reads merge them in until a compaction folds them.
SELECT * FROM mvinc.refresh('paid_orders_by_customer');
SELECT mvinc.read_path('paid_orders_by_customer');
SELECT storage_rows, append_rows FROM mvinc.views WHERE view = 'paid_orders_by_customer'::regclass;
SELECT * FROM paid_orders_by_customer WHERE customer_id IN (1, 2) ORDER BY 1;
SELECT mvinc.compact('paid_orders_by_customer') AS rows_folded;

-- Updates and deletes: retractable states (sum, count, avg) take them back.
UPDATE orders SET amount = amount + 1 WHERE customer_id = 1;
DELETE FROM orders WHERE customer_id = 2 AND amount > 50;
SELECT mode, changes_applied FROM mvinc.refresh('paid_orders_by_customer');
SELECT * FROM paid_orders_by_customer WHERE customer_id IN (1, 2) ORDER BY 1;

-- The view always equals its defining query (both differences are empty).
SELECT count(*) AS rows_in_view_not_in_query FROM (
  TABLE paid_orders_by_customer
  EXCEPT ALL
  SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id) d;
SELECT count(*) AS rows_in_query_not_in_view FROM (
  SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id
  EXCEPT ALL
  TABLE paid_orders_by_customer) d;

-- The same native REFRESH works too, and the view is listed with its state.
REFRESH MATERIALIZED VIEW paid_orders_by_customer;

-- Or the view refreshes on its own: here as soon as changes are captured
-- (an interval such as '30s' waits that long since the last refresh).
ALTER MATERIALIZED VIEW paid_orders_by_customer SET (mvinc.refresh_interval = '0');
INSERT INTO orders (customer_id, amount, paid) VALUES (3, 5.00, true);
DO $$
BEGIN
  PERFORM mvinc.wait_for_capture();
  FOR i IN 1 .. 200 LOOP
    EXIT WHEN (SELECT pending_changes = 0 FROM mvinc.views
               WHERE view = 'paid_orders_by_customer'::regclass);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT last_refresh_mode, last_refresh_changes, pending_changes, refresh_interval
  FROM mvinc.views WHERE view = 'paid_orders_by_customer'::regclass;
\x on
SELECT * FROM mvinc.views;
-- The capture worker that feeds the change log from the WAL.
SELECT * FROM mvinc.capture;
\x off

-- History views (zipper tables): every version of a projection of a table,
-- each valid over [valid_from, valid_to), kept from the same change stream.
CREATE TABLE customers (id int PRIMARY KEY, tier text NOT NULL, email text);
INSERT INTO customers VALUES (1, 'bronze', 'a@example.com'), (2, 'silver', 'b@example.com');
CREATE MATERIALIZED VIEW customer_tiers WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, tier FROM customers;
UPDATE customers SET tier = 'gold' WHERE id = 1;
UPDATE customers SET email = 'new@example.com' WHERE id = 2;   -- not tracked: no version
DELETE FROM customers WHERE id = 2;
-- never stale: these changes show before any refresh
SELECT id, tier, valid_to = 'infinity' AS current FROM customer_tiers ORDER BY id, valid_from;
REFRESH MATERIALIZED VIEW customer_tiers;
SELECT count(*) AS problems FROM mvinc.history_check('customer_tiers');

-- colfile: a columnar table access method, compressed with zstd.
CREATE TABLE features (id bigint PRIMARY KEY, f1 int, f2 float8, f3 text) USING colfile;
INSERT INTO features SELECT g, g % 100, g / 7.0, 'label ' || (g % 10) FROM generate_series(1, 100000) g;
SELECT sum(f1), round(avg(f2)::numeric, 2) FROM features;
UPDATE features SET f1 = f1 * 2 WHERE id <= 10;
SELECT id, f1 FROM features WHERE id IN (1, 2) ORDER BY id;
SELECT pg_size_pretty(pg_total_relation_size('features')) AS colfile_size;
SELECT count(*) AS problems FROM mvinc.colfile_check('features');
