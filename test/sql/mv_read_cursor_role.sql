-- A read node decides its path once, for the user who starts it; its
-- arms ask again as they run (their guards, the hybrid delta).  A cursor
-- fetched by another user (SET ROLE between DECLARE and FETCH, or a
-- refcursor opened by a SECURITY DEFINER function and fetched by its
-- caller) must still get the node's rows: the arms take the running
-- node's decision, not one made for the user fetching.  (The arms asked
-- for the fetching user's decision: a projection view's hybrid arm, whose
-- guard then said live, returned no rows at all.)
CREATE TABLE cr_src (id int PRIMARY KEY, g int NOT NULL, v int);
INSERT INTO cr_src SELECT i, i % 5, i FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW cr_proj WITH (mvinc.incremental = true) AS
  SELECT id, g, v FROM cr_src WHERE v % 3 <> 0;
CREATE MATERIALIZED VIEW cr_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, max(v) AS mx FROM cr_src GROUP BY g;
-- cr_reader may read the views, not the source: it reads the projection
-- view through its defining query (it may not see the row identity), the
-- aggregate view through its storage and delta
CREATE ROLE cr_reader;
GRANT SELECT ON cr_proj, cr_agg TO cr_reader;
-- cr_plain may read the aggregate view only through a plain view
CREATE ROLE cr_plain;
CREATE VIEW cr_over_agg AS SELECT g, n, s, mx FROM cr_agg;
GRANT SELECT ON cr_over_agg TO cr_plain;

-- changes waiting to be refreshed: updates and deletes too
UPDATE cr_src SET v = v + 1000 WHERE id % 7 = 0;
DELETE FROM cr_src WHERE id % 11 = 0;
INSERT INTO cr_src SELECT i, i % 5, i FROM generate_series(201, 230) i;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('cr_proj') AS proj, mvinc.read_path('cr_agg') AS agg;
SET ROLE cr_reader;
SELECT mvinc.read_path('cr_proj') AS proj_for_reader, mvinc.read_path('cr_agg') AS agg_for_reader;
RESET ROLE;
-- the answers
SELECT count(*), sum(v), sum(id) FROM cr_src WHERE v % 3 <> 0;
SELECT g, count(*) AS n, sum(v) AS s, max(v) AS mx FROM cr_src GROUP BY g ORDER BY g;

-- declared by the owner (hybrid), fetched by the reader (who would read live)
BEGIN;
DECLARE c_proj CURSOR FOR SELECT count(*), sum(v), sum(id) FROM cr_proj;
DECLARE c_agg CURSOR FOR SELECT * FROM cr_agg ORDER BY g;
SET ROLE cr_reader;
SELECT mvinc.read_path('cr_proj') AS proj_for_reader;
FETCH ALL FROM c_proj;
FETCH ALL FROM c_agg;
COMMIT;
RESET ROLE;

-- declared by the reader (live), fetched by the owner (who would read hybrid)
BEGIN;
SET ROLE cr_reader;
DECLARE c_proj CURSOR FOR SELECT count(*), sum(v), sum(id) FROM cr_proj;
RESET ROLE;
SELECT mvinc.read_path('cr_proj') AS proj_for_owner;
FETCH ALL FROM c_proj;
COMMIT;

-- the owner's cursor fetched by a role that reads the aggregate view only
-- through a plain view (its own decision would be live)
BEGIN;
DECLARE c_agg CURSOR FOR SELECT * FROM cr_agg ORDER BY g;
SET ROLE cr_plain;
SELECT g, n, s, mx FROM cr_over_agg ORDER BY g;
FETCH ALL FROM c_agg;
COMMIT;
RESET ROLE;

-- a refcursor opened by a SECURITY DEFINER function, fetched by its caller
CREATE FUNCTION cr_open(c refcursor) RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
  OPEN c FOR SELECT count(*), sum(v), sum(id) FROM cr_proj;
  RETURN c;
END $$;
GRANT EXECUTE ON FUNCTION cr_open(refcursor) TO cr_reader;
SET ROLE cr_reader;
BEGIN;
SELECT cr_open('c_def');
FETCH ALL FROM c_def;
COMMIT;
RESET ROLE;

-- code of another user called while an arm runs (a SECURITY DEFINER
-- function of a role that may not read the view) asks for itself: the
-- running arm's decision and its reader's rights are not its own
CREATE ROLE cr_other;
CREATE TABLE cr_loot (g int, n bigint);
ALTER TABLE cr_loot OWNER TO cr_other;
CREATE FUNCTION cr_peek(x int) RETURNS bool LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
  -- (0, n): read the delta's state rows; (-1, -1): refused
  BEGIN
    INSERT INTO cr_loot SELECT 0, count(*) FROM mvinc._delta_replaced('cr_agg'::regclass)
      AS d(k1 int, s1 bytea, s2 bytea, c bigint);
  EXCEPTION WHEN insufficient_privilege THEN
    INSERT INTO cr_loot VALUES (-1, -1);
  END;
  -- (1, 1): learnt the path; (-2, -2): refused
  BEGIN
    INSERT INTO cr_loot SELECT 1, 1 WHERE mvinc._read_branch('cr_agg'::regclass) IS NOT NULL;
  EXCEPTION WHEN insufficient_privilege THEN
    INSERT INTO cr_loot VALUES (-2, -2);
  END;
  RETURN true;
END $$;
ALTER FUNCTION cr_peek(int) OWNER TO cr_other;
SELECT count(*) FROM cr_agg WHERE cr_peek(g);
SELECT g, n, count(*) FROM cr_loot GROUP BY g, n ORDER BY g;
DROP FUNCTION cr_peek(int);
DROP TABLE cr_loot;
DROP ROLE cr_other;

-- the same after a refresh (fresh for everyone)
REFRESH MATERIALIZED VIEW cr_proj;
REFRESH MATERIALIZED VIEW cr_agg;
BEGIN;
DECLARE c_proj CURSOR FOR SELECT count(*), sum(v), sum(id) FROM cr_proj;
SET ROLE cr_reader;
FETCH ALL FROM c_proj;
COMMIT;
RESET ROLE;

DROP FUNCTION cr_open(refcursor);
DROP VIEW cr_over_agg;
DROP TABLE cr_src CASCADE;
DROP ROLE cr_reader;
DROP ROLE cr_plain;
