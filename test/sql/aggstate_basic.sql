-- Aggregate states: build, merge, combine and finish common aggregates.
CREATE SCHEMA aggstate_basic;
SET search_path = aggstate_basic;
SET extra_float_digits = 0;
CREATE TABLE t (g int, x int, y numeric, z float8, s text);
INSERT INTO t SELECT i % 3, i, i / 7.0, i * 1.5, 'v' || i FROM generate_series(1, 20) i;
INSERT INTO t VALUES (1, NULL, NULL, NULL, NULL);

SELECT mvinc.agg_kind('sum(integer)'), mvinc.agg_kind('count()'), mvinc.agg_kind('avg(numeric)');

-- one state per group, finished
SELECT g,
       mvinc.agg_final('sum(integer)', mvinc.agg_state('sum(integer)', x), NULL::bigint) AS sum,
       mvinc.agg_final('count()', mvinc.agg_state('count()'), NULL::bigint) AS count_star,
       mvinc.agg_final('count("any")', mvinc.agg_state('count("any")', x), NULL::bigint) AS count,
       mvinc.agg_final('avg(numeric)', mvinc.agg_state('avg(numeric)', y), NULL::numeric) AS avg,
       mvinc.agg_final('max(text)', mvinc.agg_state('max(text)', s), NULL::text) AS max,
       mvinc.agg_final('avg(double precision)', mvinc.agg_state('avg(double precision)', z), NULL::float8) AS avgf
  FROM t GROUP BY g ORDER BY g;
SELECT g, sum(x), count(*), count(x), avg(y), max(s), avg(z) FROM t GROUP BY g ORDER BY g;

-- merged over groups
WITH s AS (SELECT g, mvinc.agg_state('avg(integer)', x) st FROM t GROUP BY g)
SELECT mvinc.agg_final('avg(integer)', mvinc.agg_merge('avg(integer)', st), NULL::numeric), (SELECT avg(x) FROM t) FROM s;

-- empty input
SELECT mvinc.agg_state('sum(integer)', x) FROM t WHERE false;
SELECT mvinc.agg_final('count()', NULL, NULL::bigint), mvinc.agg_final('sum(integer)', NULL, NULL::bigint);

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_basic CASCADE;
RESET client_min_messages;
