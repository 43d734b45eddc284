-- Incremental views over a colfile source, read by roles other than the
-- owner, and row-level security on a colfile source.
--  - A reader with SELECT on the view alone sees what a native matview
--    shows (everything the view's query gives its owner), on every read
--    path, and may not read the source; a projection view's hybrid read
--    needs the source's key columns, so this reader reads it live.
--  - RLS on a colfile source is refused as on heap (mv_rls): at CREATE of
--    an incremental or history view, and at ENABLE / FORCE ROW LEVEL
--    SECURITY once a view exists; a policy on the table while RLS is off
--    changes nothing the view shows.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
CREATE ROLE cr_owner;
CREATE ROLE cr_reader;
GRANT CREATE ON SCHEMA public TO cr_owner;

CREATE TABLE cr_src (id int PRIMARY KEY, who name NOT NULL, g int NOT NULL, v int NOT NULL) USING colfile;
ALTER TABLE cr_src OWNER TO cr_owner;
INSERT INTO cr_src SELECT i, CASE WHEN i % 2 = 0 THEN 'cr_owner' ELSE 'cr_reader' END, i % 3, i
  FROM generate_series(1, 30) i;
-- a policy, not enforced while RLS is off
CREATE POLICY cr_mine ON cr_src USING (who = current_user);
GRANT SELECT ON cr_src TO cr_owner;

SET ROLE cr_owner;
CREATE MATERIALIZED VIEW cr_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, min(v) AS lo FROM cr_src GROUP BY g;
CREATE MATERIALIZED VIEW cr_proj WITH (mvinc.incremental = true) AS
  SELECT id, who, v FROM cr_src WHERE g <> 1;
GRANT SELECT ON cr_agg, cr_proj TO cr_reader;
-- what the views must show: their queries, run by their owner
CREATE FUNCTION cr_expected_agg() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
  SELECT string_agg(format('%s:%s:%s:%s', g, n, s, lo), ' ' ORDER BY g)
  FROM (SELECT g, count(*) AS n, sum(v) AS s, min(v) AS lo FROM cr_src GROUP BY g) q $$;
CREATE FUNCTION cr_expected_proj() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
  SELECT md5(string_agg(format('%s:%s:%s', id, who, v), ' ' ORDER BY id))
  FROM (SELECT id, who, v FROM cr_src WHERE g <> 1) q $$;
GRANT EXECUTE ON FUNCTION cr_expected_agg(), cr_expected_proj() TO cr_reader;
RESET ROLE;

-- the reader's reads: the path taken, and whether they equal the queries
CREATE FUNCTION cr_check() RETURNS TABLE (agg_path text, agg_ok bool, proj_path text, proj_ok bool)
LANGUAGE sql AS $$
  SELECT mvinc.read_path('cr_agg'),
         (SELECT string_agg(format('%s:%s:%s:%s', g, n, s, lo), ' ' ORDER BY g) FROM cr_agg) = cr_expected_agg(),
         mvinc.read_path('cr_proj'),
         (SELECT md5(string_agg(format('%s:%s:%s', id, who, v), ' ' ORDER BY id)) FROM cr_proj) = cr_expected_proj() $$;
GRANT EXECUTE ON FUNCTION cr_check() TO cr_reader;

SET ROLE cr_reader;
SELECT * FROM cr_src;                           -- no right on the source
SELECT * FROM cr_check();                       -- nothing pending
SELECT count(*) AS rows, count(DISTINCT who) AS owners FROM cr_proj;
RESET ROLE;

-- pending inserts
INSERT INTO cr_src VALUES (31, 'cr_reader', 0, 31), (32, 'cr_owner', 2, 32);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SET ROLE cr_reader;
SELECT * FROM cr_check();
RESET ROLE;
-- pending in-place updates (v and g are not indexed: the rows keep their
-- TIDs), a moved row (id is), deletes; min must be recomputed
UPDATE cr_src SET v = v + 100 WHERE id IN (3, 4);
UPDATE cr_src SET g = 1 WHERE id = 6;
UPDATE cr_src SET id = 106 WHERE id = 5;
DELETE FROM cr_src WHERE id IN (1, 2, 30);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SET ROLE cr_reader;
SELECT * FROM cr_check();
-- in a REPEATABLE READ transaction that then writes the source (as
-- another role): its reads of the views run their queries from then on
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM cr_check();
RESET ROLE;
UPDATE cr_src SET v = 0 WHERE id BETWEEN 7 AND 12;
SET ROLE cr_reader;
SELECT * FROM cr_check();
COMMIT;
RESET ROLE;
-- after refreshes (the aggregate view's append rows: merge path)
SET ROLE cr_owner;
SELECT mode FROM mvinc.refresh('cr_agg');
SELECT mode FROM mvinc.refresh('cr_proj');
INSERT INTO cr_src VALUES (40, 'cr_owner', 0, 40);
RESET ROLE;
SET ROLE cr_owner;
SET mvinc.compact_fraction = 1000;
SELECT mode FROM mvinc.refresh('cr_agg');
RESET mvinc.compact_fraction;
RESET ROLE;
SELECT append_rows > 0 AS appended FROM mvinc.views WHERE view = 'cr_agg'::regclass;
SET ROLE cr_reader;
SELECT * FROM cr_check();
RESET ROLE;

-- RLS after CREATE: refused, alone and with other subcommands
ALTER TABLE cr_src ENABLE ROW LEVEL SECURITY;
ALTER TABLE cr_src FORCE ROW LEVEL SECURITY;
ALTER TABLE cr_src ADD COLUMN w int, ENABLE ROW LEVEL SECURITY;
ALTER TABLE IF EXISTS ONLY cr_src ENABLE ROW LEVEL SECURITY;
SET ROLE cr_owner;                              -- the table's owner
ALTER TABLE cr_src ENABLE ROW LEVEL SECURITY;
RESET ROLE;
SELECT relrowsecurity, relforcerowsecurity,
       (SELECT count(*) FROM pg_attribute WHERE attrelid = c.oid AND attname = 'w') AS w
  FROM pg_class c WHERE oid = 'cr_src'::regclass;
-- the reader still sees every row, not the policy's
SET ROLE cr_reader;
SELECT * FROM cr_check();
RESET ROLE;

-- RLS before CREATE: an incremental view (aggregate, projection, WITH NO
-- DATA) and a history view are refused, nothing is created
CREATE TABLE cr_sec (id int PRIMARY KEY, who name, v int) USING colfile;
INSERT INTO cr_sec VALUES (1, 'cr_owner', 1), (2, 'cr_reader', 2);
CREATE POLICY cr_sec_mine ON cr_sec USING (who = current_user);
ALTER TABLE cr_sec ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON cr_sec TO cr_owner;
SET ROLE cr_owner;
CREATE MATERIALIZED VIEW cr_sec_agg WITH (mvinc.incremental = true) AS
  SELECT who, sum(v) AS s FROM cr_sec GROUP BY who;
CREATE MATERIALIZED VIEW cr_sec_proj WITH (mvinc.incremental = true) AS
  SELECT id, v FROM cr_sec WITH NO DATA;
CREATE MATERIALIZED VIEW cr_sec_hist WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, v FROM cr_sec;
-- a native one applies the owner's policy
CREATE MATERIALIZED VIEW cr_sec_plain AS SELECT id, v FROM cr_sec;
SELECT * FROM cr_sec_plain;
RESET ROLE;
SELECT count(*) AS views FROM pg_class WHERE relkind = 'm' AND relname LIKE 'cr\_sec\_%' AND relname <> 'cr_sec_plain';
SELECT count(*) AS tracked FROM mvinc.tracked WHERE relid = 'cr_sec'::regclass;
-- FORCE without ENABLE applies no policy: the view is created, shows
-- every row, and ENABLE is then refused
ALTER TABLE cr_sec DISABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SET ROLE cr_owner;
CREATE MATERIALIZED VIEW cr_sec_agg WITH (mvinc.incremental = true) AS
  SELECT who, sum(v) AS s FROM cr_sec GROUP BY who;
SELECT who, s FROM cr_sec_agg ORDER BY who;
RESET ROLE;
ALTER TABLE cr_sec ENABLE ROW LEVEL SECURITY;
SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'cr_sec'::regclass;

DROP MATERIALIZED VIEW cr_sec_plain, cr_sec_agg;
SELECT mvinc.untrack('cr_sec');
DROP TABLE cr_sec;
DROP MATERIALIZED VIEW cr_agg, cr_proj;
DROP FUNCTION cr_check(), cr_expected_agg(), cr_expected_proj();
SELECT mvinc.untrack('cr_src');
DROP TABLE cr_src;
REVOKE CREATE ON SCHEMA public FROM cr_owner;
DROP ROLE cr_owner, cr_reader;
