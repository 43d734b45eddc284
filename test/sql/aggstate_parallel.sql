-- agg_state and agg_merge run as partial aggregates in parallel plans
-- (workers' group states are serialized and combined in the leader):
-- the states must be byte-for-byte those of a serial plan.
CREATE SCHEMA aggstate_parallel;
SET search_path = aggstate_parallel;
CREATE TYPE color AS ENUM ('red', 'green', 'blue');
CREATE TABLE p AS
SELECT i, i % 10 AS g, (ARRAY['red', 'green', 'blue'])[1 + i % 3]::color AS e, (i * 7919 % 100003)::numeric / 100 AS n,
       CASE WHEN i % 13 = 0 THEN NULL ELSE i % 1000 END AS x, md5(i::text) AS s
  FROM generate_series(1, 200000) i;
ANALYZE p;

CREATE VIEW states AS
  SELECT g, mvinc.agg_state('count()') c, mvinc.agg_state('sum(integer)', x) sx,
         mvinc.agg_state('avg(numeric)', n) an, mvinc.agg_state('max(integer)', x) mx,
         mvinc.agg_state('min(text)', s) ms,
         mvinc.agg_state('mvinc.approx_count_distinct(anyelement)', s) h,
         mvinc.agg_state('min(anyenum)', e) me
    FROM p GROUP BY g;

SET max_parallel_workers_per_gather = 0;
CREATE TABLE serial AS SELECT * FROM states;
CREATE TABLE serial_merged AS
SELECT mvinc.agg_merge('avg(numeric)', an) an, mvinc.agg_merge('count()', c) c FROM serial;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT * FROM states;
CREATE TABLE par AS SELECT * FROM states;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE s.c = p.c AND s.sx = p.sx AND s.an = p.an AND s.mx = p.mx
                          AND s.ms = p.ms AND s.h = p.h AND s.me = p.me) AS identical
  FROM serial s JOIN par p USING (g);

-- agg_merge in parallel over many state rows
CREATE TABLE many AS SELECT i, mvinc.agg_state('avg(numeric)', n) an, mvinc.agg_state('count()') c
  FROM p GROUP BY i;
ANALYZE many;
EXPLAIN (COSTS OFF)
SELECT mvinc.agg_merge('avg(numeric)', an) FROM many;
SELECT (SELECT mvinc.agg_merge('avg(numeric)', an) FROM many) = an AS avg_identical,
       (SELECT mvinc.agg_merge('count()', c) FROM many) = c AS count_identical,
       mvinc.agg_final('avg(numeric)', an, NULL::numeric) = (SELECT avg(n) FROM p) AS avg_right
  FROM serial_merged;

-- an aggregate that is not parallel safe is refused in a worker
CREATE AGGREGATE my_sum(int) (SFUNC = int4_sum, STYPE = int8, COMBINEFUNC = int8pl);
SELECT mvinc.agg_state('aggstate_parallel.my_sum(int)', x) FROM p;
CREATE OR REPLACE AGGREGATE my_sum(int) (SFUNC = int4_sum, STYPE = int8, COMBINEFUNC = int8pl,
    PARALLEL = SAFE);
SELECT mvinc.agg_final('aggstate_parallel.my_sum(int)',
         mvinc.agg_state('aggstate_parallel.my_sum(int)', x), NULL::bigint) = sum(x) FROM p;

RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
RESET enable_hashagg;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_parallel CASCADE;
RESET client_min_messages;
