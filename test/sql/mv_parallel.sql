-- Reads of incremental views in statements that run in parallel mode: the
-- read path (fresh or live) is decided before the executor enters parallel
-- mode, and both paths answer the defining query.
CREATE TABLE par_orders (id int PRIMARY KEY, customer int NOT NULL, amount numeric NOT NULL);
INSERT INTO par_orders SELECT g, g % 50, g % 7 FROM generate_series(1, 20000) g;
CREATE MATERIALIZED VIEW par_totals WITH (mvinc.incremental = true) AS
  SELECT customer, sum(amount) AS total, count(*) AS n FROM par_orders GROUP BY customer;
ANALYZE par_orders;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET force_parallel_mode = on;

-- The reads below run in parallel mode, with parallel workers.
CREATE FUNCTION par_plan_has_gather(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
  RETURN plan::text LIKE '%"Gather"%';
END $$;
SELECT par_plan_has_gather('SELECT count(*) FROM (TABLE par_totals EXCEPT ALL
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer) d');

-- Fresh path.
SELECT mvinc.read_path('par_totals');
SELECT count(*) AS view_minus_query FROM (TABLE par_totals EXCEPT ALL
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer) d;
SELECT count(*) AS query_minus_view FROM (
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer
  EXCEPT ALL TABLE par_totals) d;

-- Hybrid path: changes not refreshed yet (the delta, computed before the
-- statement enters parallel mode, with the groups the deletes touched).
INSERT INTO par_orders SELECT g, g % 60, 100 FROM generate_series(20001, 21000) g;
DELETE FROM par_orders WHERE id % 97 = 0;
SELECT mvinc.read_path('par_totals');
SELECT count(*) AS view_minus_query FROM (TABLE par_totals EXCEPT ALL
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer) d;
SELECT count(*) AS query_minus_view FROM (
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer
  EXCEPT ALL TABLE par_totals) d;
-- Live path: the same, asked for.
SET mvinc.read_path = live;
SELECT mvinc.read_path('par_totals');
SELECT count(*) AS view_minus_query FROM (TABLE par_totals EXCEPT ALL
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer) d;
SELECT count(*) AS query_minus_view FROM (
  SELECT customer, sum(amount), count(*) FROM par_orders GROUP BY customer
  EXCEPT ALL TABLE par_totals) d;
RESET mvinc.read_path;

-- Fresh again after a refresh; a prepared statement follows the path.
PREPARE read_totals AS SELECT count(*), sum(total), sum(n) FROM par_totals;
EXECUTE read_totals;
SELECT mode FROM mvinc.refresh('par_totals');
SELECT mvinc.read_path('par_totals');
EXECUTE read_totals;
SELECT count(DISTINCT customer), sum(amount), count(*) FROM par_orders;
DEALLOCATE read_totals;

RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
DROP MATERIALIZED VIEW par_totals;
DROP TABLE par_orders;
DROP FUNCTION par_plan_has_gather(text);
