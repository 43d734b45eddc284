-- History views fed by full snapshot extracts (mvinc.history_load): each
-- load is the state at its as_of, which holds until the next load; late
-- loads fit in between, repeated loads change nothing.
SET timezone = 'UTC';
CREATE SCHEMA hl_staging;
CREATE TABLE hl_staging.users_shape (user_id int PRIMARY KEY, user_level int, tier text);
CREATE MATERIALIZED VIEW hl_h WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT user_id, user_level, upper(tier) AS tier FROM hl_staging.users_shape
     WHERE user_level IS DISTINCT FROM -1 WITH NO DATA;
SELECT feed FROM mvinc.history_views WHERE view = 'hl_h'::regclass;
SELECT count(*) FROM hl_h;

CREATE TABLE hl_staging.d10 (user_id int, user_level int, tier text);
INSERT INTO hl_staging.d10 VALUES (1, 1, 'a'), (2, 1, 'a'), (3, 1, NULL), (9, -1, 'x');
CREATE TABLE hl_staging.d12 (user_id int, user_level int, tier text);
INSERT INTO hl_staging.d12 VALUES (1, 2, 'a'), (2, 1, 'a'), (4, 1, 'b');
CREATE TABLE hl_staging.d11 (user_id int, user_level int, tier text);
INSERT INTO hl_staging.d11 VALUES (1, 5, 'a'), (2, 1, 'a'), (3, 1, NULL), (4, 4, 'b');

-- in order: NEW, then NEW / CHANGE / CLOSE / UNCHANGED
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d10', '2024-01-10');
SELECT feed FROM mvinc.history_views WHERE view = 'hl_h'::regclass;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-12');
SELECT * FROM hl_h ORDER BY user_id, valid_from;
-- the same snapshot again: nothing changes
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-12');
-- the same day again, corrected, then as first loaded: that day's state
-- is replaced each time; duplicate keys are refused there too
UPDATE hl_staging.d12 SET tier = 'c' WHERE user_id = 4;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-12');
SELECT user_id, tier, valid_from, valid_to FROM hl_h WHERE user_id = 4 ORDER BY valid_from;
INSERT INTO hl_staging.d12 VALUES (4, 1, 'b');
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-12');
DELETE FROM hl_staging.d12 WHERE user_id = 4 AND tier = 'c';
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-12');
SELECT * FROM hl_h ORDER BY user_id, valid_from;
-- late data: the day between splits the intervals that cover it
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d11', '2024-01-11');
SELECT * FROM hl_h ORDER BY user_id, valid_from;
SELECT * FROM mvinc.history_check('hl_h');
-- a late load equal to the state around it merges back
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d10', '2024-01-10 12:00');
SELECT * FROM hl_h WHERE user_id IN (1, 3) ORDER BY user_id, valid_from;
-- a late load that differs, with a later load already past it
DELETE FROM hl_staging.d11 WHERE user_id = 2;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d11', '2024-01-11');
SELECT * FROM hl_h WHERE user_id = 2 ORDER BY valid_from;
SELECT * FROM mvinc.history_check('hl_h');
-- a load older than every other one
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-01-01');
SELECT user_id, user_level, valid_from, valid_to FROM hl_h
 WHERE valid_from < '2024-01-10' ORDER BY 1, 3;
SELECT * FROM mvinc.history_check('hl_h');
SELECT as_of, rows, new, changed, closed FROM mvinc.history_loads
 WHERE view = 'hl_h'::regclass ORDER BY as_of;

-- as-of queries, plain and through the helper
SELECT user_id, user_level, tier FROM hl_h
 WHERE valid_from <= '2024-01-11 06:00' AND '2024-01-11 06:00' < valid_to ORDER BY 1;
SELECT * FROM mvinc.history_as_of('hl_h', '2024-01-12')
  AS h(user_id int, user_level int, tier text) ORDER BY 1;
-- one key as of a time reads the storage's key index
CREATE FUNCTION hl_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(line, 'hv_[0-9]+', 'hv_N', 'g');
  END LOOP;
END $$;
SELECT hl_plan($$SELECT * FROM hl_h WHERE user_id = 1
   AND valid_from <= '2024-01-11' AND '2024-01-11' < valid_to$$);

-- refusals: nothing is applied
CREATE TABLE hl_staging.dup (user_id int, user_level int, tier text);
INSERT INTO hl_staging.dup VALUES (1, 1, 'a'), (1, 2, 'a'), (7, 1, 'a'), (7, 1, 'b'), (8, 1, 'c');
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.dup', '2024-02-01');
CREATE TABLE hl_staging.short (user_id int, user_level int);
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.short', '2024-02-01');
CREATE TABLE hl_staging.wrong (user_id int, user_level text, tier text);
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.wrong', '2024-02-01');
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', 'infinity');
CREATE VIEW hl_staging.v12 AS SELECT * FROM hl_staging.d12;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.v12', '2024-02-01');
CREATE TABLE hl_staging.rls (LIKE hl_staging.d12);
ALTER TABLE hl_staging.rls ENABLE ROW LEVEL SECURITY;
CREATE ROLE hl_loader;
GRANT SELECT ON hl_staging.rls TO hl_loader;
GRANT USAGE, CREATE ON SCHEMA hl_staging TO hl_loader;
SET ROLE hl_loader;
CREATE TABLE hl_staging.loader_shape (user_id int PRIMARY KEY, user_level int, tier text);
CREATE MATERIALIZED VIEW hl_staging.hl_mine WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT user_id, user_level FROM hl_staging.loader_shape WITH NO DATA;
SELECT * FROM mvinc.history_load('hl_staging.hl_mine', 'hl_staging.rls', '2024-02-01');
RESET ROLE;
DROP MATERIALIZED VIEW hl_staging.hl_mine;
DROP TABLE hl_staging.loader_shape;
SELECT count(*) AS loads FROM mvinc.history_loads WHERE view = 'hl_h'::regclass;
REFRESH MATERIALIZED VIEW hl_h;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-02-01');
ROLLBACK;
CREATE ROLE hl_other;
GRANT SELECT ON hl_staging.d12 TO hl_other;
GRANT USAGE ON SCHEMA hl_staging TO hl_other;
SET ROLE hl_other;
SELECT * FROM mvinc.history_load('hl_h', 'hl_staging.d12', '2024-02-01');
RESET ROLE;
SELECT * FROM mvinc.history_check('hl_h');

-- history_check finds what is wrong (written here behind refresh's back)
CREATE TABLE hl_bad (k int, v int, valid_from timestamptz, valid_to timestamptz);
INSERT INTO hl_bad VALUES
  (1, 1, '2024-01-01', '2024-01-03'), (1, 2, '2024-01-02', 'infinity'),  -- overlap
  (2, 1, '2024-01-01', 'infinity'), (2, 2, '2024-01-05', 'infinity'),    -- two current
  (3, 1, '2024-01-01', '2024-01-02'), (3, 1, '2024-01-02', 'infinity'),  -- same values
  (4, 1, '2024-01-01', '2024-01-02'), (4, 2, '2024-01-03', 'infinity');  -- gap, no load then
CREATE MATERIALIZED VIEW hl_chk WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT user_id AS k, user_level AS v FROM hl_staging.users_shape WITH NO DATA;
SELECT * FROM mvinc.history_load('hl_chk', 'hl_staging.d12', '2024-01-01');
SET mvinc.history_manual_edit = on;
DO $$ BEGIN EXECUTE format('DELETE FROM mvinc.%I; INSERT INTO mvinc.%I SELECT * FROM hl_bad',
  (SELECT storage_name FROM mvinc.history_view WHERE view = 'hl_chk'::regclass),
  (SELECT storage_name FROM mvinc.history_view WHERE view = 'hl_chk'::regclass)); END $$;
RESET mvinc.history_manual_edit;
SELECT * FROM mvinc.history_check('hl_chk');

DROP MATERIALIZED VIEW hl_chk;
DROP SCHEMA hl_staging CASCADE;
SELECT count(*) AS history_views, (SELECT count(*) FROM mvinc.history_loads) AS loads
  FROM mvinc.history_view;
DROP ROLE hl_other;
DROP ROLE hl_loader;

-- a key column named like the check's own aliases (n), extract without a key index
CREATE TABLE hl_n_shape (n int PRIMARY KEY, g int);
CREATE MATERIALIZED VIEW hl_n WITH (mvinc.history = true, mvinc.key = 'n')
  AS SELECT n, g FROM hl_n_shape WITH NO DATA;
CREATE TABLE hl_n_day AS SELECT i AS n, i % 2 AS g FROM generate_series(1, 5) i;
SELECT * FROM mvinc.history_load('hl_n', 'hl_n_day', '2024-01-01');
DROP TABLE hl_n_shape, hl_n_day CASCADE;
