-- Incremental (append-only) refreshes of aggregate views merged in C
-- through the storage's key index (mvinc.direct_merge, the default):
-- NULL and multi-column keys, expression keys, new groups, internal and
-- polymorphic states, HyperLogLog, collations, several refreshes in one
-- transaction, a non-superuser owner.  Each view has a twin refreshed
-- with INSERT .. ON CONFLICT (direct_merge off): their storage must hold
-- the same bytes, and both must equal their query.
-- (Appends go into the storage itself only when the view folds them at
-- once: mv_append.sql covers the append table.)
SET mvinc.compact_fraction = 0;
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
CREATE FUNCTION g_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
-- rows of the storage of a that its twin b lacks, and the other way round
CREATE FUNCTION g_storage_diff(a regclass, b regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  sa text := (SELECT format('mvinc.%I', storage_name) FROM mvinc.mv_view WHERE view = a);
  sb text := (SELECT format('mvinc.%I', storage_name) FROM mvinc.mv_view WHERE view = b);
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL TABLE %s)) x',
                 sa, sb, sb, sa) INTO n;
  RETURN n;
END $$;
-- refresh a view directly and its twin through ON CONFLICT; report both
CREATE FUNCTION g_refresh(a regclass, b regclass)
  RETURNS TABLE (mode text, diff bigint, twin_mode text, twin_diff bigint, storage_diff bigint)
  LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL mvinc.direct_merge = on;
  SELECT r.mode INTO mode FROM mvinc.refresh(a) r;
  SET LOCAL mvinc.direct_merge = off;
  SELECT r.mode INTO twin_mode FROM mvinc.refresh(b) r;
  diff := g_diff(a);
  twin_diff := g_diff(b);
  storage_diff := g_storage_diff(a, b);
  RETURN NEXT;
END $$;

CREATE TYPE g_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE g_src (id serial PRIMARY KEY, a int, b text COLLATE "C", v numeric, f float8,
                    m g_mood, arr int[]);
INSERT INTO g_src (a, b, v, f, m, arr)
  SELECT i % 5, CASE WHEN i % 7 = 0 THEN NULL ELSE 'b' || (i % 3) END, i * 1.25, i / 3.0,
         (ARRAY['sad', 'ok', 'happy'])[1 + i % 3]::g_mood, ARRAY[i, i % 4]
  FROM generate_series(1, 60) i;
UPDATE g_src SET a = NULL WHERE id % 11 = 0;

-- NULL keys in a two-column key, internal states (avg/stddev of numeric),
-- shared sum/avg state, float array state, counts
CREATE MATERIALIZED VIEW g_stats WITH (mvinc.incremental = true) AS
  SELECT a, b, count(*) AS n, sum(v) AS s, avg(v) AS av, stddev(v) AS sd, var_samp(a) AS va,
         max(f) AS mf, count(f) AS nf
  FROM g_src GROUP BY a, b;
CREATE MATERIALIZED VIEW g_stats_t WITH (mvinc.incremental = true) AS
  SELECT a, b, count(*) AS n, sum(v) AS s, avg(v) AS av, stddev(v) AS sd, var_samp(a) AS va,
         max(f) AS mf, count(f) AS nf
  FROM g_src GROUP BY a, b;
-- an expression key with NULLs; min/max of text in "C", polymorphic
-- states (enum, array), HyperLogLog
CREATE MATERIALIZED VIEW g_poly WITH (mvinc.incremental = true) AS
  SELECT a % 2 AS parity, min(b) AS lo, max(b) AS hi, max(m) AS mood, max(arr) AS arr,
         mvinc.approx_count_distinct(v) AS dv
  FROM g_src WHERE v IS NOT NULL GROUP BY a % 2;
CREATE MATERIALIZED VIEW g_poly_t WITH (mvinc.incremental = true) AS
  SELECT a % 2 AS parity, min(b) AS lo, max(b) AS hi, max(m) AS mood, max(arr) AS arr,
         mvinc.approx_count_distinct(v) AS dv
  FROM g_src WHERE v IS NOT NULL GROUP BY a % 2;

-- existing groups, new groups, the NULL groups, NULL inputs
INSERT INTO g_src (a, b, v, f, m, arr) VALUES
  (1, 'b1', 10, 1, 'happy', ARRAY[100]), (NULL, 'b2', 3, NULL, 'ok', NULL),
  (NULL, NULL, NULL, 2, NULL, ARRAY[1, 2]), (9, 'new', 7.5, 0.5, 'sad', ARRAY[0]),
  (9, NULL, 1, 1, 'sad', NULL), (3, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM g_refresh('g_stats', 'g_stats_t');
SELECT * FROM g_refresh('g_poly', 'g_poly_t');
SELECT * FROM g_stats WHERE a IS NULL OR a = 9 ORDER BY a, b;
SELECT * FROM g_poly ORDER BY parity;

-- a bigger append: every group several times, so that some updates
-- cannot be HOT and get new index entries; then more rounds on top
INSERT INTO g_src (a, b, v, f, m, arr)
  SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE i % 12 END, 'b' || (i % 4), i, i * 0.5,
         'ok', ARRAY[i % 9]
  FROM generate_series(1, 3000) i;
SELECT * FROM g_refresh('g_stats', 'g_stats_t');
SELECT * FROM g_refresh('g_poly', 'g_poly_t');
INSERT INTO g_src (a, b, v) SELECT i % 20, NULL, i FROM generate_series(1, 500) i;
SELECT * FROM g_refresh('g_stats', 'g_stats_t');
SELECT * FROM g_refresh('g_poly', 'g_poly_t');
-- one row per group, NULL groups included
SELECT count(*) = count(DISTINCT (a, b)) + count(*) FILTER (WHERE a IS NULL OR b IS NULL)
       - count(DISTINCT (a, b)) FILTER (WHERE a IS NULL OR b IS NULL) AS one_row_per_group
  FROM (SELECT a, b FROM g_stats) x;
SELECT (SELECT count(*) FROM g_stats) = (SELECT count(*) FROM (SELECT DISTINCT a, b FROM g_src) d)
  AS groups_match;

-- a refresh that saw its own transaction's source writes is full; the
-- next one merges again
BEGIN;
INSERT INTO g_src (a, b, v) VALUES (NULL, NULL, 1000), (2, 'b1', 5);
SELECT mode FROM mvinc.refresh('g_stats');
COMMIT;
INSERT INTO g_src (a, b, v) VALUES (NULL, NULL, 2000), (2, 'b1', 6), (77, NULL, 1);
SELECT mode FROM mvinc.refresh('g_stats');
SELECT g_diff('g_stats') AS diff;
SELECT a, b, n, s FROM g_stats WHERE a IS NULL AND b IS NULL OR a = 77 ORDER BY a;

-- an aborted refresh leaves the storage as it was
INSERT INTO g_src (a, b, v) VALUES (NULL, NULL, 1), (5, 'b5', 1);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
BEGIN;
SELECT mode FROM mvinc.refresh('g_stats');
ROLLBACK;
SELECT g_diff('g_stats') AS diff_before_refresh_is_live;
SELECT mode FROM mvinc.refresh('g_stats');
SELECT g_diff('g_stats') AS diff;

-- a prepared read sees each refresh
PREPARE g_read AS SELECT n, s FROM g_stats WHERE a = 1 AND b = 'b1';
EXECUTE g_read;
INSERT INTO g_src (a, b, v) VALUES (1, 'b1', 1);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('g_stats');
EXECUTE g_read;
DEALLOCATE g_read;

-- a view owner who is not a superuser
CREATE ROLE g_owner;
GRANT CREATE ON SCHEMA public TO g_owner;
SET ROLE g_owner;
CREATE TABLE g_own_src (id int PRIMARY KEY, b text, v numeric);
INSERT INTO g_own_src SELECT i, CASE WHEN i % 4 = 0 THEN NULL ELSE 'b' || i % 3 END, i
  FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW g_owned WITH (mvinc.incremental = true) AS
  SELECT b, count(*) AS n, avg(v) AS av FROM g_own_src GROUP BY b;
INSERT INTO g_own_src VALUES (100, NULL, 4), (101, 'owned', 2), (102, 'b1', 1);
SELECT mode FROM mvinc.refresh('g_owned');
SELECT g_diff('g_owned') AS diff;
SELECT * FROM g_owned WHERE b IS NULL OR b = 'owned' ORDER BY b;
DROP MATERIALIZED VIEW g_owned;
DROP TABLE g_own_src;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM g_owner;
DROP ROLE g_owner;

DROP MATERIALIZED VIEW g_stats, g_stats_t, g_poly, g_poly_t;
DROP TABLE g_src;
DROP TYPE g_mood;
DROP FUNCTION g_refresh(regclass, regclass);
DROP FUNCTION g_storage_diff(regclass, regclass);
DROP FUNCTION g_diff(regclass);
