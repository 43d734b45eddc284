-- Reads of incremental and history views do not depend on the reader's
-- search_path: the read query's own operators, functions and types are
-- pg_catalog's and mvinc's whatever schemas come first, and the objects
-- of the view's definition are those it named at CREATE.
CREATE SCHEMA sp_evil;
CREATE SCHEMA sp_def;
CREATE FUNCTION sp_def.twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
CREATE TABLE sp_src (id serial PRIMARY KEY, k int, x int);
INSERT INTO sp_src (k, x) SELECT i % 4, i FROM generate_series(1, 100) i;
CREATE MATERIALIZED VIEW sp_v WITH (mvinc.incremental = true) AS
  SELECT k, sum(x) AS s, count(*) AS n FROM sp_src GROUP BY k;
SET search_path = sp_def, public;
CREATE MATERIALIZED VIEW public.sp_w WITH (mvinc.incremental = true) AS
  SELECT k, sum(twice(x)) AS s2 FROM sp_src GROUP BY k;
RESET search_path;
CREATE TABLE sp_hsrc (id int PRIMARY KEY, v int);
INSERT INTO sp_hsrc SELECT i, i FROM generate_series(1, 5) i;
CREATE MATERIALIZED VIEW sp_h WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM sp_hsrc;
-- inserts and an update since the refresh: incremental reads go hybrid,
-- the history view's read applies its pending changes
INSERT INTO sp_src (k, x) VALUES (1, 1000), (5, 5);
UPDATE sp_src SET x = x + 1 WHERE id = 3;
UPDATE sp_hsrc SET v = 50 WHERE id = 5;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;

-- objects that would answer in their place, first on the reader's path
CREATE FUNCTION sp_evil.arreq(int[], int[]) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RAISE NOTICE 'sp_evil.arreq runs as %', current_user; RETURN true; END $$;
CREATE OPERATOR sp_evil.= (LEFTARG = int[], RIGHTARG = int[], FUNCTION = sp_evil.arreq);
CREATE FUNCTION sp_evil.int8gt(bigint, int) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RAISE NOTICE 'sp_evil.int8gt runs as %', current_user; RETURN true; END $$;
CREATE OPERATOR sp_evil.> (LEFTARG = bigint, RIGHTARG = int, FUNCTION = sp_evil.int8gt);
CREATE FUNCTION sp_evil.int4eq(int, int) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RAISE NOTICE 'sp_evil.int4eq runs as %', current_user; RETURN true; END $$;
CREATE OPERATOR sp_evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = sp_evil.int4eq);
CREATE FUNCTION sp_evil.twice(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN RAISE NOTICE 'sp_evil.twice runs as %', current_user; RETURN 0; END $$;

-- a new session (the read query is built per backend), the schema first
\c
SET search_path = sp_evil, pg_catalog, public;
SELECT mvinc.read_path('sp_v') AS path_v, mvinc.read_path('sp_w') AS path_w;
CREATE TEMP TABLE sp_hybrid AS SELECT * FROM sp_v;
CREATE TEMP TABLE sp_hybrid_w AS SELECT * FROM sp_w;
CREATE TEMP TABLE sp_hist AS SELECT id, v, valid_to = 'infinity' AS cur FROM sp_h;
SET mvinc.read_path = live;
SELECT * FROM sp_hybrid ORDER BY k;
SELECT count(*) AS differences FROM
  ((TABLE sp_hybrid EXCEPT ALL SELECT * FROM sp_v) UNION ALL
   (SELECT * FROM sp_v EXCEPT ALL TABLE sp_hybrid)) d;
SELECT count(*) AS differences FROM
  ((TABLE sp_hybrid_w EXCEPT ALL SELECT * FROM sp_w) UNION ALL
   (SELECT * FROM sp_w EXCEPT ALL TABLE sp_hybrid_w)) d;
RESET mvinc.read_path;
RESET search_path;
SELECT * FROM sp_hist ORDER BY id, cur;
-- (and both are the defining queries' answers)
SELECT (SELECT count(*) FROM (SELECT k, sum(x), count(*) FROM sp_src GROUP BY k
                              EXCEPT ALL TABLE sp_hybrid) d) AS v_missing,
       (SELECT count(*) FROM (SELECT k, sum(sp_def.twice(x)) FROM sp_src GROUP BY k
                              EXCEPT ALL TABLE sp_hybrid_w) d) AS w_missing;

DROP SCHEMA sp_evil CASCADE;
DROP MATERIALIZED VIEW sp_h;
DROP TABLE sp_src, sp_hsrc CASCADE;
DROP SCHEMA sp_def CASCADE;
