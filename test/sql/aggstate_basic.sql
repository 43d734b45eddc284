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

-- many groups under a small work_mem: hash aggregation spills to disk
SET work_mem = '64kB';
SET enable_sort = off;
CREATE TABLE many AS
SELECT i % 20000 AS k, mvinc.agg_state('avg(integer)', i) a, mvinc.agg_state('sum(numeric)', i::numeric) s
  FROM generate_series(1, 100000) i GROUP BY i % 20000, i % 3;
SELECT count(*) AS groups,
       count(*) FILTER (WHERE a <> p.avg OR s <> p.sum) AS mismatches
  FROM (SELECT k, mvinc.agg_final('avg(integer)', mvinc.agg_merge('avg(integer)', a), NULL::numeric) a,
               mvinc.agg_final('sum(numeric)', mvinc.agg_merge('sum(numeric)', s), NULL::numeric) s
          FROM many GROUP BY k) m
  JOIN (SELECT i % 20000 AS k, avg(i) avg, sum(i::numeric) sum FROM generate_series(1, 100000) i GROUP BY 1) p
 USING (k);
RESET work_mem;
RESET enable_sort;

-- aggregates that keep the same state share it
SELECT a, b, mvinc.agg_same_state(a, b)
  FROM (VALUES ('sum(numeric)'::regprocedure, 'avg(numeric)'::regprocedure),
               ('sum(bigint)', 'avg(bigint)'), ('sum(integer)', 'avg(integer)'),
               ('avg(integer)', 'avg(smallint)'), ('stddev(numeric)', 'variance(numeric)'),
               ('sum(numeric)', 'stddev(numeric)'), ('max(integer)', 'max(integer)'),
               ('string_agg(text,text)', 'string_agg(text,text)')) v(a, b);
SELECT mvinc.agg_final('sum(numeric)', mvinc.agg_state('avg(numeric)', y), NULL::numeric), sum(y) FROM t;

-- min/max of text merge under the collation the caller names (the states
-- were built under the column's): C puts 'a' after 'B', ICU before.
CREATE TABLE c (k int, s text COLLATE "C");
INSERT INTO c VALUES (1, 'a'), (2, 'B');
CREATE TABLE cs AS SELECT k, mvinc.agg_state('max(text)', s) st FROM c GROUP BY k;
SELECT mvinc.agg_final('max(text)', mvinc.agg_merge('max(text)', st, NULL::text COLLATE "C"), NULL::text) AS c,
       mvinc.agg_final('max(text)', mvinc.agg_merge('max(text)', st, NULL::text COLLATE "und-x-icu"), NULL::text) AS icu,
       (SELECT max(s) FROM c) AS plain
  FROM cs;
SELECT mvinc.agg_final('max(text)', mvinc.agg_combine('max(text)', a.st, b.st, NULL::text COLLATE "C"), NULL::text) AS c,
       mvinc.agg_final('max(text)', mvinc.agg_combine('max(text)', a.st, b.st, NULL::text COLLATE "und-x-icu"), NULL::text) AS icu
  FROM cs a, cs b WHERE a.k = 1 AND b.k = 2;

-- polymorphic states (max(anyenum), max(anyarray), range_intersect_agg)
-- take their type from the arguments, or from a sample value when merged
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE pm (k int, m mood, a int[], r int4range);
INSERT INTO pm VALUES (1, 'ok', '{1,2}', '[1,10)'), (1, 'sad', '{3}', '[2,12)'),
                      (2, 'happy', '{1,5}', '[0,8)'), (2, NULL, NULL, NULL);
CREATE TABLE pms AS
SELECT k, mvinc.agg_state('max(anyenum)', m) sm, mvinc.agg_state('max(anyarray)', a) sa,
       mvinc.agg_state('range_intersect_agg(anyrange)', r) sr
  FROM pm GROUP BY k;
SELECT mvinc.agg_kind('max(anyenum)'),
       mvinc.agg_final('max(anyenum)', mvinc.agg_merge('max(anyenum)', sm, NULL::mood), NULL::mood),
       mvinc.agg_final('max(anyarray)', mvinc.agg_merge('max(anyarray)', sa, NULL::int[]), NULL::int[]),
       mvinc.agg_final('range_intersect_agg(anyrange)',
         mvinc.agg_merge('range_intersect_agg(anyrange)', sr, NULL::int4range), NULL::int4range)
  FROM pms;
SELECT max(m), max(a), range_intersect_agg(r) FROM pm;
SELECT mvinc.agg_final('max(anyenum)', mvinc.agg_combine('max(anyenum)', a.sm, b.sm, NULL::mood), NULL::mood)
  FROM pms a, pms b WHERE a.k = 1 AND b.k = 2;
-- which aggregates want the sample
SELECT f, mvinc.agg_needs_sample(f)
  FROM (VALUES ('max(anyenum)'::regprocedure), ('max(text)'), ('min(character)'),
               ('sum(integer)'), ('count("any")'), ('range_intersect_agg(anyrange)')) v(f);
-- without a sample the state type is unknown
SELECT mvinc.agg_merge('max(anyenum)', sm) FROM pms;

-- agg_combine_final: the result over three states at once is agg_final of
-- agg_combine's, for every triple of groups' states and the empty state
CREATE TABLE gs AS
SELECT g, mvinc.agg_state('sum(integer)', x) si, mvinc.agg_state('avg(numeric)', y) an,
       mvinc.agg_state('max(text)', s) mt, mvinc.agg_state('count()') c,
       mvinc.agg_state('avg(double precision)', z) af
  FROM t GROUP BY g
UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL;
SELECT count(*) AS triples,
       count(*) FILTER (WHERE
         mvinc.agg_combine_final('sum(integer)', a.si, b.si, c.si, NULL::bigint) IS NOT DISTINCT FROM
           mvinc.agg_final('sum(integer)', mvinc.agg_combine('sum(integer)',
             mvinc.agg_combine('sum(integer)', a.si, b.si), c.si), NULL::bigint)
         AND mvinc.agg_combine_final('avg(numeric)', a.an, b.an, c.an, NULL::numeric) IS NOT DISTINCT FROM
           mvinc.agg_final('avg(numeric)', mvinc.agg_combine('avg(numeric)',
             mvinc.agg_combine('avg(numeric)', a.an, b.an), c.an), NULL::numeric)
         AND mvinc.agg_combine_final('sum(numeric)', a.an, b.an, c.an, NULL::numeric) IS NOT DISTINCT FROM
           mvinc.agg_final('sum(numeric)', mvinc.agg_combine('sum(numeric)',
             mvinc.agg_combine('sum(numeric)', a.an, b.an), c.an), NULL::numeric)
         AND mvinc.agg_combine_final('max(text)', a.mt, b.mt, c.mt, NULL::text, NULL::text) IS NOT DISTINCT FROM
           mvinc.agg_final('max(text)', mvinc.agg_combine('max(text)',
             mvinc.agg_combine('max(text)', a.mt, b.mt, NULL::text), c.mt, NULL::text), NULL::text)
         AND mvinc.agg_combine_final('count()', a.c, b.c, c.c, NULL::bigint) =
           mvinc.agg_final('count()', mvinc.agg_combine('count()',
             mvinc.agg_combine('count()', a.c, b.c), c.c), NULL::bigint)
         AND mvinc.agg_combine_final('avg(double precision)', a.af, b.af, c.af, NULL::float8) IS NOT DISTINCT FROM
           mvinc.agg_final('avg(double precision)', mvinc.agg_combine('avg(double precision)',
             mvinc.agg_combine('avg(double precision)', a.af, b.af), c.af), NULL::float8)) AS equal
  FROM gs a, gs b, gs c;
-- all three states of the whole table: the plain aggregates' results
SELECT mvinc.agg_combine_final('sum(integer)', a.si, b.si, c.si, NULL::bigint) AS sum,
       mvinc.agg_combine_final('avg(numeric)', a.an, b.an, c.an, NULL::numeric) AS avg,
       mvinc.agg_combine_final('count()', a.c, b.c, c.c, NULL::bigint) AS count_star,
       (SELECT ROW(sum(x), avg(y), count(*)) FROM t) AS plain
  FROM gs a, gs b, gs c WHERE a.g = 0 AND b.g = 1 AND c.g = 2;
-- the empty state three times: the aggregate over no rows
SELECT mvinc.agg_combine_final('count()', NULL, NULL, NULL, NULL::bigint),
       mvinc.agg_combine_final('sum(integer)', NULL, NULL, NULL, NULL::bigint);
-- the sample gives the collation and a polymorphic state's type
SELECT mvinc.agg_combine_final('max(text)', a.st, b.st, NULL, NULL::text, NULL::text COLLATE "C") AS c,
       mvinc.agg_combine_final('max(text)', a.st, NULL, b.st, NULL::text, NULL::text COLLATE "und-x-icu") AS icu
  FROM cs a, cs b WHERE a.k = 1 AND b.k = 2;
SELECT mvinc.agg_combine_final('max(anyenum)', a.sm, NULL, b.sm, NULL::mood, NULL::mood),
       mvinc.agg_combine_final('max(anyarray)', a.sa, b.sa, NULL, NULL::int[], NULL::int[])
  FROM pms a, pms b WHERE a.k = 1 AND b.k = 2;
-- the result type must be the aggregate's
SELECT mvinc.agg_combine_final('sum(integer)', NULL, NULL, NULL, NULL::int);

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA aggstate_basic CASCADE;
RESET client_min_messages;
