-- The one-pass writers of history views (hist_direct.c): a refresh's
-- changes applied per key in commit order, an in-order snapshot load's
-- diff, both writing through the executor's simple-relation routines.
-- Each result is checked against the source (current versions), against
-- the versions' rules (mvinc.history_check) and by counts of versions.
-- (amount compares by its spelling: 1.5 to 1.50 is a version, and the
-- current versions are compared with the source as text)
CREATE TABLE hd_src (region text COLLATE "C", id int, amount numeric, spot point,
                     doc jsonb, note text, PRIMARY KEY (region, id));
INSERT INTO hd_src SELECT 'r' || g % 7, g, g * 1.5, point(g, g), jsonb_build_object('g', g), 'n'
  FROM generate_series(1, 3000) g;
CREATE MATERIALIZED VIEW hd_h WITH (mvinc.history = true, mvinc.key = 'region, id')
  AS SELECT region, id, amount, spot, doc FROM hd_src;
CREATE FUNCTION hd_diff() RETURNS TABLE (only_view bigint, only_source bigint, problems bigint)
LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM (SELECT region, id, amount::text, spot::text, doc FROM hd_h
                                 WHERE valid_to = 'infinity'
                                EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM hd_src) a),
         (SELECT count(*) FROM (SELECT region, id, amount::text, spot::text, doc FROM hd_src
                                EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM hd_h
                                 WHERE valid_to = 'infinity') b),
         (SELECT count(*) FROM mvinc.history_check('hd_h')) $$;

-- changes of every kind, several per key, across transactions
UPDATE hd_src SET amount = amount + 1 WHERE id % 10 = 1;          -- 300 new versions
UPDATE hd_src SET amount = amount::numeric(10,2) WHERE id % 10 = 2; -- 1.5 to 1.50: 300 versions
UPDATE hd_src SET spot = point(id, -id) WHERE id % 10 = 3;        -- point has no "=": compared as text
UPDATE hd_src SET spot = point(id, -id) WHERE id % 10 = 3;        -- the same text: no version
UPDATE hd_src SET doc = NULL WHERE id % 10 = 4;                   -- to NULL
UPDATE hd_src SET doc = NULL WHERE id % 10 = 4;                   -- NULL to NULL: nothing
UPDATE hd_src SET note = 'x' WHERE id % 10 = 5;                   -- untracked: nothing
DELETE FROM hd_src WHERE id % 10 = 6;                             -- 300 closed
INSERT INTO hd_src SELECT 'r' || g % 7, g, 0, point(0, 0), '{}', 'back'
  FROM generate_series(1, 3000) g WHERE g % 10 = 6 AND g % 20 = 6;  -- 150 opened again
UPDATE hd_src SET region = 'moved' WHERE id % 10 = 7;             -- key change: 300 closed, 300 opened
BEGIN;
UPDATE hd_src SET amount = -1 WHERE id % 10 = 8;
UPDATE hd_src SET amount = -2 WHERE id % 10 = 8;                  -- one transaction: one version
SAVEPOINT s;
UPDATE hd_src SET amount = -3 WHERE id % 10 = 8;
ROLLBACK TO s;
COMMIT;
BEGIN;
UPDATE hd_src SET amount = 99 WHERE id % 10 = 9;
ROLLBACK;                                                          -- nothing
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;

-- a refresh that rolls back leaves dead versions and index entries, which
-- the next refresh's lookups of each key's latest version step over
BEGIN;
REFRESH MATERIALIZED VIEW hd_h;
SELECT * FROM hd_diff();
ROLLBACK;
REFRESH MATERIALIZED VIEW hd_h;
SELECT * FROM hd_diff();
SELECT count(*) AS versions, count(*) FILTER (WHERE valid_to = 'infinity') AS current,
       count(*) FILTER (WHERE valid_to <> 'infinity') AS ended
  FROM hd_h;
SELECT id % 10 AS kind, count(*) AS versions FROM hd_h GROUP BY 1 ORDER BY 1;
-- each version of a key starts where the one before it ended, or later
SELECT count(*) AS overlaps FROM (
  SELECT valid_from < lag(valid_to) OVER (PARTITION BY region, id ORDER BY valid_from) AS bad
    FROM hd_h) x WHERE bad;

-- a second round on the versions the first one wrote
UPDATE hd_src SET amount = amount * 2 WHERE id % 10 IN (1, 7);
DELETE FROM hd_src WHERE region = 'moved' AND id % 20 = 7;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
REFRESH MATERIALIZED VIEW hd_h;
SELECT * FROM hd_diff();
SELECT id % 10 AS kind, count(*) AS versions FROM hd_h GROUP BY 1 ORDER BY 1;

-- the refreshes above read their keys' latest versions in one walk along
-- the storage's key index (their deltas touch most keys); a delta of a
-- few keys looks each one up: a changed, a deleted, a re-inserted one
UPDATE hd_src SET amount = amount + 5 WHERE id IN (11, 21);
DELETE FROM hd_src WHERE id = 31;
INSERT INTO hd_src VALUES ('r1', 36, 1, point(0, 0), '{}', 'again');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
REFRESH MATERIALIZED VIEW hd_h;
SELECT * FROM hd_diff();
SELECT id, amount, valid_to = 'infinity' AS current FROM hd_h
 WHERE id IN (11, 31, 36) ORDER BY id, valid_from;

-- an in-order snapshot load: its diff of the extract with the current
-- versions, a rolled-back load before it
CREATE TABLE hd_shape (region text COLLATE "C", id int, amount numeric, spot point, doc jsonb,
                       PRIMARY KEY (region, id));
CREATE MATERIALIZED VIEW hd_daily WITH (mvinc.history = true, mvinc.key = 'region, id')
  AS SELECT region, id, amount, spot, doc FROM hd_shape WITH NO DATA;
CREATE TABLE hd_day1 AS SELECT region, id, amount, spot, doc FROM hd_src;
CREATE TABLE hd_day2 AS SELECT region, id,
    CASE WHEN id % 5 = 0 THEN amount + 1 ELSE amount END AS amount,
    CASE WHEN id % 5 = 1 THEN point(1, 1) ELSE spot END AS spot, doc
  FROM hd_src WHERE id % 9 <> 0
  UNION ALL SELECT 'new', g, g, point(g, 0), NULL FROM generate_series(1, 100) g;
SELECT * FROM mvinc.history_load('hd_daily', 'hd_day1', '2024-01-01');
BEGIN;
SELECT * FROM mvinc.history_load('hd_daily', 'hd_day2', '2024-01-02');
ROLLBACK;
SELECT * FROM mvinc.history_load('hd_daily', 'hd_day2', '2024-01-02');
SELECT * FROM mvinc.history_load('hd_daily', 'hd_day2', '2024-01-03');   -- nothing changes
SELECT count(*) AS differences FROM (
  (SELECT region, id, amount::text, spot::text, doc FROM hd_daily WHERE valid_to = 'infinity'
   EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM hd_day2)
  UNION ALL
  (SELECT region, id, amount::text, spot::text, doc FROM hd_day2
   EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM hd_daily WHERE valid_to = 'infinity')) d;
SELECT count(*) AS day1_differences FROM (
  (SELECT region, id, amount::text, spot::text, doc FROM mvinc.history_as_of('hd_daily', '2024-01-01 12:00')
        AS h(region text, id int, amount numeric, spot point, doc jsonb)
   EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM hd_day1)
  UNION ALL
  (SELECT region, id, amount::text, spot::text, doc FROM hd_day1
   EXCEPT ALL SELECT region, id, amount::text, spot::text, doc FROM mvinc.history_as_of('hd_daily', '2024-01-01 12:00')
        AS h(region text, id int, amount numeric, spot point, doc jsonb))) d;
SELECT count(*) AS problems FROM mvinc.history_check('hd_daily');
SELECT valid_from::date, valid_to::date, count(*) FROM hd_daily GROUP BY 1, 2 ORDER BY 1, 2;

DROP MATERIALIZED VIEW hd_h, hd_daily;
DROP FUNCTION hd_diff();
DROP TABLE hd_src, hd_shape, hd_day1, hd_day2;
