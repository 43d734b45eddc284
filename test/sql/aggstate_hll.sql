-- approx_count_distinct: HyperLogLog with 2^12 registers (standard error
-- about 1.6 %).  Estimates must be within 3 standard errors (4.9 %);
-- states merge exactly (merge of halves = whole), in SQL and through the
-- aggregate-state machinery, and in parallel plans.
CREATE SCHEMA aggstate_hll;
SET search_path = aggstate_hll;
SELECT mvinc.agg_kind('mvinc.approx_count_distinct(anyelement)');

-- small and exact-ish cardinalities, NULLs ignored, empty is 0
SELECT mvinc.approx_count_distinct(x) FROM (VALUES (1), (2), (2), (NULL::int)) v(x);
SELECT mvinc.approx_count_distinct(x) FROM generate_series(1, 0) x;
SELECT mvinc.approx_count_distinct(x) FROM (SELECT NULL::text x) s;

-- accuracy on 10k, 100k and 1M distinct values of several types
CREATE FUNCTION rel_err(est bigint, n bigint) RETURNS numeric
    LANGUAGE sql AS 'SELECT round(abs(est - n)::numeric / n, 4)';
SELECT n,
       rel_err(mvinc.approx_count_distinct(x), n) < 0.049 AS int_ok,
       rel_err(mvinc.approx_count_distinct(x::text), n) < 0.049 AS text_ok,
       rel_err(mvinc.approx_count_distinct(x::int8 * 7919), n) < 0.049 AS int8_ok
  FROM (VALUES (10000), (100000), (1000000)) c(n),
       LATERAL generate_series(1, n) x
 GROUP BY n ORDER BY n;
-- duplicates do not count
SELECT rel_err(mvinc.approx_count_distinct(x % 50000), 50000) < 0.049 AS dup_ok
  FROM generate_series(1, 400000) x;
-- values equal for the type's hash opclass count once
SELECT mvinc.approx_count_distinct(x) FROM (VALUES (1.0::numeric), (1.00), (1)) v(x);

-- merging: the sketch of the halves is the sketch of the whole
CREATE TABLE h AS SELECT x, x % 2 AS half, x % 10 AS g FROM generate_series(1, 200000) x;
CREATE TABLE hs AS
SELECT half, g, mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x) s
  FROM h GROUP BY half, g;
SELECT (SELECT mvinc.agg_merge('mvinc.approx_count_distinct(anyelement)', s) FROM hs)
     = (SELECT mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x) FROM h) AS merge_equal,
       (SELECT mvinc.agg_final('mvinc.approx_count_distinct(anyelement)',
                               mvinc.agg_merge('mvinc.approx_count_distinct(anyelement)', s), NULL::bigint) FROM hs)
     = (SELECT mvinc.approx_count_distinct(x) FROM h) AS final_equal;
-- sparse sketches merge into sparse and dense ones alike
SELECT mvinc.agg_final('mvinc.approx_count_distinct(anyelement)',
         mvinc.agg_combine('mvinc.approx_count_distinct(anyelement)', a, b), NULL::bigint)
  FROM (SELECT mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x) a FROM generate_series(1, 100) x) sa,
       (SELECT mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x) b FROM generate_series(51, 150) x) sb;
SELECT length(mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x)) AS sparse_bytes
  FROM generate_series(1, 100) x;
SELECT length(mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', x)) AS dense_bytes
  FROM generate_series(1, 10000) x;
-- per-group estimates from merged states equal the plain aggregate
SELECT count(*) FILTER (WHERE m.e <> p.e) AS mismatches
  FROM (SELECT g, mvinc.agg_final('mvinc.approx_count_distinct(anyelement)',
                    mvinc.agg_merge('mvinc.approx_count_distinct(anyelement)', s), NULL::bigint) e
          FROM hs GROUP BY g) m
  JOIN (SELECT g, mvinc.approx_count_distinct(x) e FROM h GROUP BY g) p USING (g);

-- parallel partial aggregation uses the serial/combine functions
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT mvinc.approx_count_distinct(x) FROM h;
SELECT mvinc.approx_count_distinct(x) = (SELECT mvinc.agg_final('mvinc.approx_count_distinct(anyelement)',
         mvinc.agg_merge('mvinc.approx_count_distinct(anyelement)', s), NULL::bigint) FROM hs) AS parallel_equal
  FROM h;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- a type without a hash function
SELECT mvinc.approx_count_distinct(x) FROM (VALUES (point(1, 2))) v(x);
-- a damaged state
SELECT mvinc.agg_final('mvinc.approx_count_distinct(anyelement)', '\x0102'::bytea, NULL::bigint);

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_hll CASCADE;
RESET client_min_messages;
