-- Append refreshes of aggregate views with GROUP BY add the delta's states
-- to the view's append table instead of updating the stored rows; reads
-- merge them per group (the 'merge' read branch) until a compaction folds
-- them in.  Each view here has a twin that folds at every refresh
-- (mvinc.compact_fraction = 0): after mvinc.compact() their storage must
-- hold the same bytes, and both must always equal their query.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
CREATE FUNCTION a_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
CREATE FUNCTION a_storage_diff(a regclass, b regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  sa text := (SELECT format('mvinc.%I', storage_name) FROM mvinc.mv_view WHERE view = a);
  sb text := (SELECT format('mvinc.%I', storage_name) FROM mvinc.mv_view WHERE view = b);
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL TABLE %s)) x',
                 sa, sb, sb, sa) INTO n;
  RETURN n;
END $$;
-- refresh a view keeping appends apart and its twin folding them; report both
CREATE FUNCTION a_refresh(a regclass, b regclass)
  RETURNS TABLE (mode text, append_rows bigint, branch text, diff bigint, twin_mode text,
                 twin_append_rows bigint, twin_diff bigint)
  LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL mvinc.compact_fraction = 1000;
  SELECT r.mode INTO mode FROM mvinc.refresh(a) r;
  SET LOCAL mvinc.compact_fraction = 0;
  SELECT r.mode INTO twin_mode FROM mvinc.refresh(b) r;
  append_rows := (SELECT v.append_rows FROM mvinc.views v WHERE v.view = a);
  twin_append_rows := (SELECT v.append_rows FROM mvinc.views v WHERE v.view = b);
  branch := mvinc._read_branch(a::oid);
  diff := a_diff(a);
  twin_diff := a_diff(b);
  RETURN NEXT;
END $$;
CREATE FUNCTION a_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(l, '[0-9]{4,}', 'N', 'g');
  END LOOP;
END $$;

CREATE TABLE a_src (id serial PRIMARY KEY, a int, b text COLLATE "C", v numeric, f float8, paid bool);
INSERT INTO a_src (a, b, v, f, paid)
  SELECT i % 5, CASE WHEN i % 7 = 0 THEN NULL ELSE 'b' || (i % 3) END, i * 1.25, i / 4.0, i % 4 <> 0
  FROM generate_series(1, 60) i;
UPDATE a_src SET a = NULL WHERE id % 11 = 0;

-- NULL keys in a two-column key; internal (numeric avg, stddev), shared
-- sum/avg, HyperLogLog, min/max of text, bool_and states
CREATE MATERIALIZED VIEW a_stats WITH (mvinc.incremental = true) AS
  SELECT a, b, count(*) AS n, sum(v) AS s, avg(v) AS av, stddev(v) AS sd, min(b) AS lo,
         max(v) AS hi, mvinc.approx_count_distinct(v) AS dv, bool_and(paid) AS allpaid
  FROM a_src WHERE f > 1 GROUP BY a, b;
CREATE MATERIALIZED VIEW a_stats_t WITH (mvinc.incremental = true) AS
  SELECT a, b, count(*) AS n, sum(v) AS s, avg(v) AS av, stddev(v) AS sd, min(b) AS lo,
         max(v) AS hi, mvinc.approx_count_distinct(v) AS dv, bool_and(paid) AS allpaid
  FROM a_src WHERE f > 1 GROUP BY a, b;
-- a NOT NULL key (plain key equality in the merge)
CREATE MATERIALIZED VIEW a_ids WITH (mvinc.incremental = true) AS
  SELECT id % 7 AS k, count(*) AS n, sum(v) AS s FROM a_src GROUP BY id % 7;
CREATE MATERIALIZED VIEW a_ids_t WITH (mvinc.incremental = true) AS
  SELECT id % 7 AS k, count(*) AS n, sum(v) AS s FROM a_src GROUP BY id % 7;
SELECT count(*) AS append_tables FROM pg_class
  WHERE relname IN (SELECT storage_name || '_append' FROM mvinc.mv_view);

-- appends, existing and new groups, twice: the rows pile up
INSERT INTO a_src (a, b, v, f, paid)
  SELECT i % 9, CASE WHEN i % 5 = 0 THEN NULL ELSE 'b' || (i % 4) END, i * 0.5, i, i % 3 <> 0
  FROM generate_series(1, 30) i;
SELECT * FROM a_refresh('a_stats', 'a_stats_t');
SELECT * FROM a_refresh('a_ids', 'a_ids_t');
INSERT INTO a_src (a, b, v, f, paid) VALUES (NULL, NULL, 7, 7, true), (NULL, NULL, NULL, 8, NULL),
  (42, 'new', 1, 9, false);
SELECT * FROM a_refresh('a_stats', 'a_stats_t');
SELECT * FROM a_refresh('a_ids', 'a_ids_t');
SELECT view, storage_rows, append_rows FROM mvinc.views
  WHERE view IN ('a_stats', 'a_stats_t') ORDER BY view;
SELECT mvinc.read_path('a_stats');
SELECT a_explain('SELECT * FROM a_stats');
SELECT * FROM a_stats WHERE a IS NULL ORDER BY b;

-- a prepared statement keeps its plan across the branches
PREPARE a_read AS SELECT count(*), sum(n), sum(s) FROM a_stats;
EXECUTE a_read;
-- a refresh that rolls back leaves the rows and their count as they were
BEGIN;
INSERT INTO a_src (a, b, v, f, paid) VALUES (1, 'b1', 100, 100, true);
COMMIT;
BEGIN;
SET LOCAL mvinc.compact_fraction = 1000;
SELECT mode FROM mvinc.refresh('a_stats');
SELECT append_rows FROM mvinc.views WHERE view = 'a_stats'::regclass;
ROLLBACK;
SELECT append_rows FROM mvinc.views WHERE view = 'a_stats'::regclass;
SELECT mvinc.read_path('a_stats'), a_diff('a_stats');
SELECT * FROM a_refresh('a_stats', 'a_stats_t');

-- compaction folds the rows into the storage: the bytes of the twin
SELECT mvinc.compact('a_stats') > 0 AS folded, mvinc.compact('a_stats') AS again;
SELECT mvinc.compact('a_ids') > 0 AS folded;
SELECT view, append_rows, last_refresh_mode FROM mvinc.views
  WHERE view IN ('a_stats', 'a_ids') ORDER BY view;
SELECT mvinc._read_branch('a_stats'::regclass::oid), a_diff('a_stats'),
       a_storage_diff('a_stats', 'a_stats_t') AS storage_diff,
       a_storage_diff('a_ids', 'a_ids_t') AS ids_storage_diff;
EXECUTE a_read;

-- the refresh folds once the rows pass mvinc.compact_fraction of the
-- storage, its own rows too (the append table was empty before it)
SET mvinc.compact_fraction = 0.01;
INSERT INTO a_src (a, b, v, f, paid) VALUES (1, 'b1', 1, 10, true);
SELECT mode FROM mvinc.refresh('a_stats');
SELECT append_rows, a_diff('a_stats') FROM mvinc.views WHERE view = 'a_stats'::regclass;
SET mvinc.compact_fraction = 0.2;
INSERT INTO a_src (a, b, v, f, paid) VALUES (1, 'b1', 1, 10, true);
SELECT mode FROM mvinc.refresh('a_stats');
SELECT append_rows FROM mvinc.views WHERE view = 'a_stats'::regclass;
INSERT INTO a_src (a, b, v, f, paid)
  SELECT i, 'x' || i, i, 10 + i, true FROM generate_series(1, 40) i;
SELECT mode FROM mvinc.refresh('a_stats');
SELECT append_rows, a_diff('a_stats') FROM mvinc.views WHERE view = 'a_stats'::regclass;
RESET mvinc.compact_fraction;

-- updates and deletes fold first, then regroup or retract
SET mvinc.compact_fraction = 1000;
INSERT INTO a_src (a, b, v, f, paid) VALUES (2, 'b2', 3, 30, true), (3, NULL, 4, 40, false);
SELECT mode FROM mvinc.refresh('a_stats');
SELECT mode FROM mvinc.refresh('a_ids');
SELECT view, append_rows > 0 AS has_append_rows FROM mvinc.views
  WHERE view IN ('a_stats', 'a_ids') ORDER BY view;
UPDATE a_src SET v = v + 1, a = 4 WHERE id % 6 = 1;
DELETE FROM a_src WHERE id % 10 = 3;
SELECT * FROM a_refresh('a_stats', 'a_stats_t');
SELECT * FROM a_refresh('a_ids', 'a_ids_t');
SELECT a_storage_diff('a_stats', 'a_stats_t') AS storage_diff,
       a_storage_diff('a_ids', 'a_ids_t') AS ids_storage_diff;

-- TRUNCATE (full refresh) empties the append table too
INSERT INTO a_src (a, b, v, f, paid) VALUES (2, 'b2', 3, 30, true);
SELECT mode FROM mvinc.refresh('a_stats');
TRUNCATE a_src;
INSERT INTO a_src (a, b, v, f, paid) VALUES (1, 'z', 1, 5, true);
SELECT * FROM a_refresh('a_stats', 'a_stats_t');
SELECT format('SELECT count(*) FROM mvinc.%I', storage_name || '_append') AS count_append
  FROM mvinc.mv_view WHERE view = 'a_stats'::regclass \gset
:count_append;
RESET mvinc.compact_fraction;

-- the append table is written only by refresh; views without GROUP BY
-- and projections have none
SELECT format('INSERT INTO mvinc.%I DEFAULT VALUES', storage_name || '_append') AS ins,
       format('TRUNCATE mvinc.%I', storage_name || '_append') AS trunc,
       format('DROP TABLE mvinc.%I', storage_name || '_append') AS drp
  FROM mvinc.mv_view WHERE view = 'a_stats'::regclass \gset
\set VERBOSITY sqlstate
:ins;
:trunc;
:drp;
\set VERBOSITY default
CREATE MATERIALIZED VIEW a_total WITH (mvinc.incremental = true) AS SELECT count(*), sum(v) FROM a_src;
CREATE MATERIALIZED VIEW a_rows WITH (mvinc.incremental = true) AS SELECT id, v FROM a_src WHERE paid;
SELECT count(*) AS append_tables FROM pg_class
  WHERE relname IN (SELECT storage_name || '_append' FROM mvinc.mv_view
                     WHERE view IN ('a_total'::regclass, 'a_rows'::regclass));
SELECT mvinc.compact('a_total'), mvinc.compact('a_rows');
SELECT mvinc.compact('a_src');

-- readers with rights on the view only read the merged rows too
CREATE ROLE a_reader;
GRANT SELECT ON a_stats TO a_reader;
SET mvinc.compact_fraction = 1000;
INSERT INTO a_src (a, b, v, f, paid) VALUES (5, 'r', 2, 50, true), (1, 'z', 2, 60, true);
SELECT mode FROM mvinc.refresh('a_stats');
RESET mvinc.compact_fraction;
SET ROLE a_reader;
SELECT mvinc._read_branch('a_stats'::regclass::oid);
SELECT a, b, n, s, av FROM a_stats ORDER BY a, b;
SELECT mvinc.compact('a_stats');
RESET ROLE;

-- DROP takes the append table along
SELECT storage_name || '_append' AS stats_append FROM mvinc.mv_view WHERE view = 'a_stats'::regclass \gset
DROP MATERIALIZED VIEW a_stats;
SELECT count(*) FROM pg_class WHERE relname = :'stats_append';
DROP TABLE a_src CASCADE;
REVOKE ALL ON SCHEMA public FROM a_reader;
DROP ROLE a_reader;
DROP FUNCTION a_diff(regclass), a_storage_diff(regclass, regclass), a_refresh(regclass, regclass),
  a_explain(text);
