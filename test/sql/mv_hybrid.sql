-- The hybrid read: when the changes past a view's checkpoint that the
-- reader sees are inserts, updates and deletes, an aggregate view answers
-- from its storage merged with its append rows and the states of those
-- inserts, the groups that updates and deletes touched replaced (by
-- retraction, or from the source when an aggregate cannot retract),
-- exactly as the defining query would. A truncation, or a view that can do
-- neither (no GROUP BY and an aggregate that cannot retract), reads live.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

\i include/mv_diff.sql

CREATE TABLE hs (id int PRIMARY KEY, g int, k text, x numeric, f float8, b boolean);
INSERT INTO hs SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 10 END, 'k' || (i % 4),
                      i * 1.5, i / 8.0, i % 3 = 0
  FROM generate_series(1, 400) i;
CREATE MATERIALIZED VIEW hs_groups WITH (mvinc.incremental = true) AS
  SELECT g, k, count(*) AS n, sum(x) AS sx, avg(x) AS ax, min(x) AS lo, max(k) AS hk,
         bool_or(b) AS anyb, mvinc.approx_count_distinct(id) AS dist
  FROM hs WHERE x > 3 GROUP BY g, k;
CREATE MATERIALIZED VIEW hs_total WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(x) AS sx FROM hs;
CREATE MATERIALIZED VIEW hs_rows WITH (mvinc.incremental = true) AS
  SELECT id, g, x FROM hs WHERE b;

-- inserts only: hybrid for the aggregate views (old groups, new groups, NULL
-- keys, rows its WHERE drops) and the projection view
INSERT INTO hs VALUES (401, 1, 'k1', 10, 1, true), (402, 77, 'new', 20, 2, false),
                      (403, NULL, 'k2', 30, 3, true), (404, 2, 'k0', 1, 4, true);
SELECT v, mvinc.read_path(v), mv_diff(v)
  FROM unnest(ARRAY['hs_groups', 'hs_total', 'hs_rows']::regclass[]) v;
SELECT * FROM hs_groups WHERE g = 77 OR g IS NULL ORDER BY g, k;

-- with appended state rows waiting as well
SELECT mode FROM mvinc.refresh('hs_groups');
SELECT append_rows > 0 AS has_append_rows FROM mvinc.views WHERE view = 'hs_groups'::regclass;
INSERT INTO hs SELECT i, i % 12, 'k' || (i % 5), i, i, i % 2 = 0 FROM generate_series(405, 460) i;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
-- an aborted insert is no change; a committed one in a subtransaction is
BEGIN;
INSERT INTO hs VALUES (900, 1, 'k1', 900, 9, true);
ROLLBACK;
BEGIN;
SAVEPOINT s;
INSERT INTO hs VALUES (901, 1, 'k1', 901, 9, true);
RELEASE s;
SAVEPOINT t;
INSERT INTO hs VALUES (902, 1, 'k1', 902, 9, true);
ROLLBACK TO t;
COMMIT;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');

-- prepared statements and a cursor across hybrid, fresh and live
PREPARE hs_one(int) AS SELECT n, sx, lo FROM hs_groups WHERE g = $1 AND k = 'k1';
EXECUTE hs_one(1);
SELECT mode FROM mvinc.refresh('hs_groups');
SELECT mvinc.read_path('hs_groups');
EXECUTE hs_one(1);
INSERT INTO hs VALUES (903, 1, 'k1', 5, 5, false);
SELECT mvinc.read_path('hs_groups');
EXECUTE hs_one(1);
BEGIN;
DECLARE hs_cur CURSOR FOR SELECT g, k, n FROM hs_groups ORDER BY g, k;
FETCH 3 FROM hs_cur;
COMMIT;
-- updates and deletes: hybrid too, the groups they touch replaced (these
-- views have min and max, which cannot retract: from the source)
UPDATE hs SET x = x + 1 WHERE id = 903;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
EXECUTE hs_one(1);
SELECT n, sx, lo FROM (SELECT g, k, count(*) AS n, sum(x) AS sx, min(x) AS lo FROM hs
                        WHERE x > 3 GROUP BY g, k) q WHERE g = 1 AND k = 'k1';
SELECT mode FROM mvinc.refresh('hs_groups');
INSERT INTO hs VALUES (904, 3, 'k3', 7, 7, true);
DELETE FROM hs WHERE id = 10;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
-- a row moving group, leaving and entering the WHERE, a NULL key, a group
-- emptied, all with appended state rows waiting
UPDATE hs SET g = 55 WHERE id = 11;
UPDATE hs SET x = 1 WHERE id = 12;
UPDATE hs SET x = 50 WHERE id = 2;
UPDATE hs SET g = NULL WHERE id = 14;
DELETE FROM hs WHERE g = 6 AND k = 'k2';
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
SELECT count(*) FILTER (WHERE g = 6 AND k = 'k2') AS emptied_group,
       count(*) FILTER (WHERE g = 55) AS new_group FROM hs_groups;
-- an aborted delete and a rolled-back savepoint's update change nothing
BEGIN;
DELETE FROM hs WHERE g = 7;
ROLLBACK;
BEGIN;
SAVEPOINT s;
UPDATE hs SET x = x * 10 WHERE g = 8;
ROLLBACK TO s;
UPDATE hs SET x = x + 0.5 WHERE id = 18;
COMMIT;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
-- EXPLAIN ANALYZE counts the replaced groups
CREATE FUNCTION hs_replaced() RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; found text := 'none';
BEGIN
  FOR l IN EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM hs_groups LOOP
    IF l ~ 'Replacing Rows' THEN found := trim(l); END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT hs_replaced();
DROP FUNCTION hs_replaced();
-- a truncation: live
SELECT mode FROM mvinc.refresh('hs_groups');
CREATE TABLE hs_copy AS TABLE hs;
TRUNCATE hs;
INSERT INTO hs SELECT * FROM hs_copy;
DROP TABLE hs_copy;
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
SELECT mode FROM mvinc.refresh('hs_groups');

-- a projection view: the rows the delta touched, as its last images leave
-- them (with a key-only old image: the source has the default replica
-- identity), over the stored rows
SELECT mode FROM mvinc.refresh('hs_rows');
UPDATE hs SET x = x + 1 WHERE id % 9 = 0;
UPDATE hs SET b = NOT b WHERE id % 10 = 1;
DELETE FROM hs WHERE id % 17 = 0;
UPDATE hs SET id = id + 10000 WHERE id = 33;
BEGIN;
UPDATE hs SET x = 0 WHERE id = 42;
UPDATE hs SET x = 42 WHERE id = 42;
DELETE FROM hs WHERE id = 45;
INSERT INTO hs VALUES (45, 1, 'k1', 45, 45, true);
COMMIT;
SELECT mvinc.read_path('hs_rows'), mv_diff('hs_rows');
SELECT id, g, x FROM hs_rows WHERE id IN (33, 10033, 42, 45) ORDER BY id;
SELECT count(*) FROM hs_rows WHERE id % 17 = 0;
SELECT mode FROM mvinc.refresh('hs_rows');
-- a source read only by a projection view keeps key-only old images
CREATE TABLE hp (a int, b int, t text, PRIMARY KEY (a, b));
INSERT INTO hp SELECT i, i % 3, 't' || i FROM generate_series(1, 50) i;
CREATE MATERIALIZED VIEW hp_rows WITH (mvinc.incremental = true) AS
  SELECT a, upper(t) AS ut FROM hp WHERE a % 5 <> 0;
SELECT relreplident FROM pg_class WHERE oid = 'hp'::regclass;
UPDATE hp SET t = 'changed' WHERE a < 10;
UPDATE hp SET b = b + 10 WHERE a = 11;
UPDATE hp SET a = 100 WHERE a = 12;
UPDATE hp SET a = 15 WHERE a = 13;
DELETE FROM hp WHERE a = 14;
SELECT mvinc.read_path('hp_rows'), mv_diff('hp_rows');
SELECT * FROM hp_rows WHERE a IN (1, 11, 12, 13, 14, 15, 100) ORDER BY a;
-- a projection view shows only what its reader may see of the source:
-- one who may not read the source's key reads the defining query
CREATE ROLE mvinc_hybrid_proj;
GRANT SELECT ON hp_rows TO mvinc_hybrid_proj;
UPDATE hp SET t = 'again' WHERE a = 2;
SET ROLE mvinc_hybrid_proj;
SELECT mvinc.read_path('hp_rows');
SELECT count(*) FROM mvinc._delta_replaced('hp_rows'::regclass::oid)
  AS r(_mvinc_id1 int, _mvinc_id2 int, c1 text, _mvinc_present bool);
RESET ROLE;
GRANT SELECT (a, b) ON hp TO mvinc_hybrid_proj;
SET ROLE mvinc_hybrid_proj;
SELECT mvinc.read_path('hp_rows');
SELECT ut FROM hp_rows WHERE a = 2;
RESET ROLE;
DROP OWNED BY mvinc_hybrid_proj;
DROP ROLE mvinc_hybrid_proj;
-- a replica identity without the primary key would log old rows the view
-- cannot identify: refused, at ALTER and at CREATE
ALTER TABLE hp ADD COLUMN u int;
UPDATE hp SET u = a * 100 + b;
ALTER TABLE hp ALTER u SET NOT NULL;
CREATE UNIQUE INDEX hp_u ON hp (u);
CREATE UNIQUE INDEX hp_bau ON hp (b, a, u);
ALTER TABLE hp REPLICA IDENTITY USING INDEX hp_u;
ALTER TABLE hp REPLICA IDENTITY FULL;
ALTER TABLE hp REPLICA IDENTITY USING INDEX hp_bau;
ALTER TABLE hp REPLICA IDENTITY DEFAULT;
DROP MATERIALIZED VIEW hp_rows;
ALTER TABLE hp REPLICA IDENTITY USING INDEX hp_u;
CREATE MATERIALIZED VIEW hp_rows WITH (mvinc.incremental = true) AS SELECT a, t FROM hp;
DROP TABLE hp;
-- a domain-typed column of a projection view
CREATE DOMAIN hd_pos AS int CHECK (VALUE > 0);
CREATE TABLE hd (id int PRIMARY KEY, p hd_pos);
INSERT INTO hd SELECT i, i FROM generate_series(1, 20) i;
CREATE MATERIALIZED VIEW hd_rows WITH (mvinc.incremental = true) AS SELECT id, p FROM hd;
UPDATE hd SET p = 100 WHERE id = 2;
SELECT mvinc.read_path('hd_rows'), mv_diff('hd_rows');
SELECT * FROM hd_rows WHERE id = 2;
DROP TABLE hd CASCADE;
DROP DOMAIN hd_pos;

-- a view whose aggregates all retract: touched groups are the stored ones
-- with the changes applied; the approximate distinct count cannot retract
CREATE MATERIALIZED VIEW hs_sums WITH (mvinc.incremental = true) AS
  SELECT k, g IS NULL AS nog, count(*) AS n, sum(x) AS sx, avg(f) AS af, count(b) AS nb
  FROM hs WHERE x > 3 GROUP BY k, g IS NULL;
CREATE MATERIALIZED VIEW hs_dist WITH (mvinc.incremental = true) AS
  SELECT k, count(*) AS n, mvinc.approx_count_distinct(g) AS dg FROM hs GROUP BY k;
SELECT mode FROM mvinc.refresh('hs_sums');
-- (appended state rows waiting too: the stored states merge them)
INSERT INTO hs SELECT i, i % 4, 'k' || (i % 3), i, i, true FROM generate_series(3001, 3040) i;
SET mvinc.compact_fraction = 1000;
SELECT mode FROM mvinc.refresh('hs_sums');
RESET mvinc.compact_fraction;
SELECT append_rows > 0 AS has_append_rows FROM mvinc.views WHERE view = 'hs_sums'::regclass;
UPDATE hs SET x = x + 100, f = f * 2 WHERE id % 7 = 0;
DELETE FROM hs WHERE id % 11 = 0;
INSERT INTO hs VALUES (950, 1, 'k9', 5, 1, true);
UPDATE hs SET k = 'kx' WHERE id = 30;
SELECT v, mvinc.read_path(v), mv_diff(v)
  FROM unnest(ARRAY['hs_groups', 'hs_sums', 'hs_dist']::regclass[]) v;
DELETE FROM hs WHERE k = 'kx';
SELECT v, mvinc.read_path(v), mv_diff(v)
  FROM unnest(ARRAY['hs_groups', 'hs_sums', 'hs_dist']::regclass[]) v;
SELECT mode FROM mvinc.refresh('hs_groups');
DROP MATERIALIZED VIEW hs_sums, hs_dist;

-- a statement in parallel mode (the live arm planned with workers)
-- cannot take the latest snapshot once in that mode: its delta is
-- computed at executor start, and the answer is still exact
INSERT INTO hs VALUES (905, 4, 'k0', 70, 7, true);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE FUNCTION hs_plan_is_parallel() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
  FOR l IN EXPLAIN (COSTS OFF) SELECT * FROM hs_groups LOOP
    IF l ~ 'Gather' THEN found := true; END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT hs_plan_is_parallel();
SELECT mvinc.read_path('hs_groups'), mv_diff('hs_groups');
SELECT count(*) FROM hs_groups;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP FUNCTION hs_plan_is_parallel();
SELECT mvinc.read_path('hs_groups');

-- a reader that may read the view (not the source) reads it hybrid; the
-- delta function answers nobody else
CREATE ROLE mvinc_hybrid_reader;
GRANT SELECT ON hs_groups TO mvinc_hybrid_reader;
SET ROLE mvinc_hybrid_reader;
SELECT mvinc.read_path('hs_groups');
SELECT n, sx FROM hs_groups WHERE g = 4 AND k = 'k0';
SELECT count(*) FROM mvinc._delta_states('hs_total'::regclass::oid) AS d(n bigint);
RESET ROLE;
SELECT n, sx FROM hs_groups WHERE g = 4 AND k = 'k0';
SELECT n, sx FROM (SELECT g, k, count(*) AS n, sum(x) AS sx FROM hs WHERE x > 3 GROUP BY g, k) q
 WHERE g = 4 AND k = 'k0';
REVOKE SELECT ON hs_groups FROM mvinc_hybrid_reader;
-- one who may read it only through a plain view reads the defining query:
-- the delta is the whole view's, which the plain view may not show
CREATE VIEW hs_groups_g4 AS SELECT * FROM hs_groups WHERE g = 4;
GRANT SELECT ON hs_groups_g4 TO mvinc_hybrid_reader;
SELECT reads_live AS live_before, reads_hybrid AS hybrid_before FROM mvinc.views
 WHERE view = 'hs_groups'::regclass \gset
SET ROLE mvinc_hybrid_reader;
BEGIN;
SELECT n, sx FROM hs_groups_g4 WHERE k = 'k0';
SELECT count(*) FROM hs_groups_g4, mvinc._delta_states('hs_groups'::regclass::oid)
  AS d(k1 int, k2 text, _mvinc_count bigint, s1 bytea);
ROLLBACK;
RESET ROLE;
SELECT reads_live > :live_before AS went_live, reads_hybrid = :hybrid_before AS not_hybrid
  FROM mvinc.views WHERE view = 'hs_groups'::regclass;
-- a column list other than the delta's is refused
SELECT count(*) FROM mvinc._delta_states('hs_groups'::regclass::oid)
  AS d(k1 text, k2 text, _mvinc_count bigint, s1 bytea);
DROP VIEW hs_groups_g4;
DROP ROLE mvinc_hybrid_reader;

-- EXPLAIN names the hybrid branch and its delta
CREATE FUNCTION hs_plan_has_delta() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false;
BEGIN
  FOR l IN EXPLAIN (COSTS OFF) SELECT * FROM hs_groups LOOP
    IF l ~ '_delta_states' THEN found := true; END IF;
  END LOOP;
  RETURN found;
END $$;
SELECT hs_plan_has_delta();

-- a view without GROUP BY merges the inserts' states into its one row
CREATE TABLE hn (id int PRIMARY KEY, x numeric, k text);
CREATE MATERIALIZED VIEW hn_all WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(k) AS lo, max(x) AS hi
  FROM hn WHERE x IS DISTINCT FROM 0;
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
-- only inserts its WHERE drops: hybrid, with the stored row unchanged
INSERT INTO hn VALUES (1, 0, 'z');
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
INSERT INTO hn VALUES (2, NULL, 'b'), (3, 5, 'a'), (4, 7.5, NULL);
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
SELECT mode FROM mvinc.refresh('hn_all');
INSERT INTO hn VALUES (5, -1, 'c');
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
-- a delete: live (min and max cannot retract, and there is no group to
-- recompute alone)
DELETE FROM hn WHERE id = 5;
SELECT mvinc.read_path('hn_all'), mv_diff('hn_all');
SELECT * FROM hn_all;
DROP MATERIALIZED VIEW hn_all;
-- without min and max: the one row with the changes applied
CREATE MATERIALIZED VIEW hn_sum WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a FROM hn WHERE x IS DISTINCT FROM 0;
UPDATE hn SET x = 10 WHERE id = 3;
DELETE FROM hn WHERE id = 4;
INSERT INTO hn VALUES (6, 6, 'f');
SELECT mvinc.read_path('hn_sum'), mv_diff('hn_sum');
SELECT * FROM hn_sum;
-- every row gone: the one row says so
DELETE FROM hn;
SELECT mvinc.read_path('hn_sum'), mv_diff('hn_sum');
SELECT * FROM hn_sum;
DROP MATERIALIZED VIEW hn_sum;
-- count(*) alone, and changes all outside the view's WHERE
INSERT INTO hn SELECT i, i, 'x' FROM generate_series(1, 10) i;
CREATE MATERIALIZED VIEW hn_count WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n FROM hn WHERE x > 5;
UPDATE hn SET x = 0 WHERE id = 1;
DELETE FROM hn WHERE id = 2;
SELECT mvinc.read_path('hn_count'), mv_diff('hn_count');
SELECT * FROM hn_count;
SELECT mode FROM mvinc.refresh('hn_count');
SELECT * FROM hn_count;
UPDATE hn SET x = 1 WHERE id = 9;
SELECT mvinc.read_path('hn_count'), mv_diff('hn_count');
DROP MATERIALIZED VIEW hn_count;
DROP TABLE hn;

-- every kind of group a hybrid read merges: stored with appended states
-- and inserts waiting, stored with either, appended with inserts (not
-- stored), appended alone, inserts alone, stored alone; a NULL key in each
-- kind; aggregates that share a state (sum, avg of numeric), a collated
-- max, a polymorphic min, count(*)
CREATE TYPE hk_level AS ENUM ('low', 'mid', 'high');
CREATE TABLE hk (id serial PRIMARY KEY, g int, x numeric, t text COLLATE "C", l hk_level);
INSERT INTO hk (g, x, t, l) SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i % 6 + 1 END, i / 4.0,
                                   CASE WHEN i % 2 = 0 THEN 'a' || i ELSE 'B' || i END,
                                   (ARRAY['low', 'mid', 'high'])[i % 3 + 1]::hk_level
  FROM generate_series(1, 60) i;
CREATE MATERIALIZED VIEW hk_groups WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS sx, avg(x) AS ax, max(t) AS mt, min(l) AS ml
  FROM hk GROUP BY g;
-- appended states for stored groups 1, 2 and the NULL group, new groups 7, 8
INSERT INTO hk (g, x, t, l) VALUES (1, 100, 'zz', 'high'), (2, 0.5, 'A', 'low'), (NULL, 7, 'b', 'mid'),
                                   (7, 70, 'c', 'high'), (8, 80, 'D', 'mid');
SET mvinc.compact_fraction = 1000;
SELECT mode FROM mvinc.refresh('hk_groups');
RESET mvinc.compact_fraction;
SELECT append_rows AS appended FROM mvinc.views WHERE view = 'hk_groups'::regclass;
-- inserts waiting for group 1 (stored, appended), 3 (stored), 7 (appended),
-- 9 (new), NULL (stored, appended)
INSERT INTO hk (g, x, t, l) VALUES (1, 1.25, 'zzz', 'low'), (3, 3, 'C', 'low'), (7, 7.5, 'd', 'low'),
                                   (9, 9, 'e', NULL), (NULL, 0.125, 'Z', 'high');
SELECT mvinc.read_path('hk_groups'), mv_diff('hk_groups');
SELECT * FROM hk_groups ORDER BY g;
SELECT * FROM hk_groups WHERE g = 7;
SELECT * FROM hk_groups WHERE g IN (1, 8, 9) ORDER BY g;
SELECT * FROM hk_groups WHERE g IS NULL;
-- updates and deletes too: touched groups are replaced, the others merged
UPDATE hk SET x = x + 1 WHERE g = 7;
DELETE FROM hk WHERE g = 2 AND x < 1;
SELECT mvinc.read_path('hk_groups'), mv_diff('hk_groups');
SELECT * FROM hk_groups WHERE g IN (2, 7) ORDER BY g;
DROP MATERIALIZED VIEW hk_groups;
DROP TABLE hk;
DROP TYPE hk_level;

DROP FUNCTION hs_plan_has_delta();
DROP MATERIALIZED VIEW hs_groups, hs_total, hs_rows;
DROP TABLE hs;
DROP FUNCTION mv_diff(regclass);
