-- History views: cases a review found wrong, each compared with what the
-- source says.
SET timezone = 'UTC';

-- an expression that fails on rows the WHERE leaves out is computed only
-- for rows the view has
CREATE TABLE he_div (k int PRIMARY KEY, v int, s text);
INSERT INTO he_div VALUES (1, 1, '10'), (2, 2, '20');
CREATE MATERIALIZED VIEW he_div_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, 100 / v AS q, s::int AS n FROM he_div WHERE v <> 0 AND s ~ '^[0-9]+$';
UPDATE he_div SET v = 0 WHERE k = 1;                 -- leaves the WHERE: closes
UPDATE he_div SET s = 'x' WHERE k = 2;               -- leaves too
SELECT k, q, n, valid_to = 'infinity' AS current FROM he_div_h ORDER BY k, valid_from;
REFRESH MATERIALIZED VIEW he_div_h;
SELECT k, q, n, valid_to = 'infinity' AS current FROM he_div_h ORDER BY k, valid_from;

-- times pass through text on a read of pending changes: a DateStyle that
-- prints zone abbreviations (CST, IST name other zones too) reads back
-- the same instant
CREATE TABLE he_ts (at timestamptz PRIMARY KEY, seen timestamptz, span interval);
INSERT INTO he_ts VALUES ('2024-06-01 12:00+00', '2024-06-01 12:00+00', '1 day');
CREATE MATERIALIZED VIEW he_ts_h WITH (mvinc.history = true, mvinc.key = 'at')
  AS SELECT at, seen, span FROM he_ts;
UPDATE he_ts SET seen = '2024-07-01 12:00+00', span = '1 day 02:03:04';
UPDATE he_ts SET at = '2024-08-01 12:00+00';         -- a key change
SET timezone = 'Asia/Shanghai';
SET datestyle = 'SQL, MDY';
SET intervalstyle = 'sql_standard';
SELECT count(*) FILTER (WHERE valid_to = 'infinity') AS current,
       bool_and(at = '2024-08-01 12:00+00' AND seen = '2024-07-01 12:00+00' AND span = '1 day 02:03:04')
         FILTER (WHERE valid_to = 'infinity') AS current_right
  FROM he_ts_h;
SET timezone = 'Asia/Kolkata';
SELECT count(*) FILTER (WHERE valid_to = 'infinity') AS current,
       bool_and(at = '2024-08-01 12:00+00') FILTER (WHERE valid_to = 'infinity') AS key_right
  FROM he_ts_h;
RESET datestyle;
RESET intervalstyle;
SET timezone = 'UTC';
REFRESH MATERIALIZED VIEW he_ts_h;
SELECT at, seen, span, valid_to = 'infinity' AS current FROM he_ts_h ORDER BY valid_from, at;

-- a key in a nondeterministic collation: a change of spelling only is
-- the same key, with a new version showing the source's spelling
CREATE COLLATION he_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE he_ci_src (email text COLLATE he_ci PRIMARY KEY, lvl int);
INSERT INTO he_ci_src VALUES ('bob@x.org', 1), ('ann@x.org', 1);
CREATE MATERIALIZED VIEW he_ci_h WITH (mvinc.history = true, mvinc.key = 'email')
  AS SELECT email, lvl FROM he_ci_src;
UPDATE he_ci_src SET email = 'Bob@x.org' WHERE email = 'bob@x.org';
UPDATE he_ci_src SET email = 'ANN@x.org', lvl = 2 WHERE email = 'ann@x.org';
SELECT email, lvl, valid_to = 'infinity' AS current FROM he_ci_h ORDER BY lower(email), valid_from;
REFRESH MATERIALIZED VIEW he_ci_h;
SELECT email, lvl, valid_to = 'infinity' AS current FROM he_ci_h ORDER BY lower(email), valid_from;
-- a unique index that compares by bytes does not make a case-insensitive
-- key unique ('a' and 'A' both fit it): refused, as with no index at all
CREATE TABLE he_ci_bytes (k text COLLATE he_ci NOT NULL, v int);
CREATE UNIQUE INDEX ON he_ci_bytes (k COLLATE "C");
INSERT INTO he_ci_bytes VALUES ('a', 1), ('A', 2);
CREATE MATERIALIZED VIEW he_ci_bytes_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM he_ci_bytes;
DROP TABLE he_ci_bytes;

-- an extract whose column has another type modifier is refused (values
-- the source could not hold would be stored, or versions made of values
-- that differ only in digits the view does not keep); cast when filling it
CREATE TABLE he_shape (id int PRIMARY KEY, price numeric(6,2), code varchar(3));
CREATE MATERIALIZED VIEW he_load WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, price FROM he_shape WITH NO DATA;
CREATE TABLE he_wide (id int, price numeric(10,4), code varchar(10));
SELECT * FROM mvinc.history_load('he_load', 'he_wide', '2024-01-01');
CREATE TABLE he_e1 (id int, price numeric(6,2), code varchar(3));
INSERT INTO he_e1 VALUES (1, 1.2345, 'abc'), (2, 2.5, 'de');
SELECT * FROM mvinc.history_load('he_load', 'he_e1', '2024-01-01');
SELECT * FROM mvinc.history_load('he_load', 'he_e1', '2024-01-02');
SELECT * FROM mvinc.history_load('he_load', 'he_e1', '2023-12-31');   -- late: merged
SELECT id, price, valid_from::date, valid_to FROM he_load ORDER BY 1, 3;
SELECT count(*) AS problems FROM mvinc.history_check('he_load');

-- the source keeps what the view needs: a unique key on its key, and the
-- key in its replica identity
CREATE TABLE he_pk (id int NOT NULL, v int, CONSTRAINT he_pk_key PRIMARY KEY (id));
CREATE UNIQUE INDEX he_pk_alt ON he_pk (id);
INSERT INTO he_pk VALUES (1, 1);
CREATE MATERIALIZED VIEW he_pk_h WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM he_pk;
ALTER TABLE he_pk DROP CONSTRAINT he_pk_key;         -- the replica identity's index
ALTER TABLE he_pk REPLICA IDENTITY USING INDEX he_pk_alt;
ALTER TABLE he_pk DROP CONSTRAINT he_pk_key;         -- now it may go
DROP INDEX he_pk_alt;                                -- the last unique index on the key
DROP INDEX CONCURRENTLY he_pk_alt;                   -- refused before it starts
ALTER TABLE he_pk REPLICA IDENTITY FULL;
DROP INDEX he_pk_alt;                                -- still the key's last unique index
DROP INDEX CONCURRENTLY he_pk_alt;
CREATE UNIQUE INDEX he_pk_more ON he_pk (id);
DROP INDEX CONCURRENTLY he_pk_more;                  -- another one is left: it may go
-- a partitioned index takes its partitions' indexes with it
CREATE TABLE he_hp (id int NOT NULL, v int) PARTITION BY RANGE (id);
CREATE TABLE he_hp1 PARTITION OF he_hp FOR VALUES FROM (0) TO (100);
ALTER TABLE he_hp1 REPLICA IDENTITY FULL;
CREATE UNIQUE INDEX he_hp_id ON he_hp (id);
INSERT INTO he_hp VALUES (1, 1);
CREATE MATERIALIZED VIEW he_hp_h WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM he_hp1;
DROP INDEX he_hp_id;                                 -- he_hp1's key index would go
DROP MATERIALIZED VIEW he_hp_h;
DROP TABLE he_hp;
UPDATE he_pk SET v = 2;
REFRESH MATERIALIZED VIEW he_pk_h;
SELECT id, v, valid_to = 'infinity' AS current FROM he_pk_h ORDER BY valid_from;

-- a source read with its inheritance children cannot get one
CREATE TABLE he_par (k int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW he_par_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM he_par;
CREATE TABLE he_chi () INHERITS (he_par);
CREATE TABLE he_chi2 (k int, v int);
ALTER TABLE he_chi2 INHERIT he_par;
CREATE MATERIALIZED VIEW he_par_only WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM ONLY he_par;
DROP MATERIALIZED VIEW he_par_h;
CREATE TABLE he_chi () INHERITS (he_par);            -- FROM ONLY: allowed
INSERT INTO he_chi VALUES (5, 5);
REFRESH MATERIALIZED VIEW he_par_only;
SELECT count(*) AS versions FROM he_par_only;

-- a column renamed right after a write (usually before capture wrote it
-- to the change log): the write's values follow the renamed column
CREATE TABLE he_ren (k int PRIMARY KEY, v int);
INSERT INTO he_ren VALUES (1, 1), (2, 2);
CREATE MATERIALIZED VIEW he_ren_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM he_ren;
UPDATE he_ren SET v = 100 WHERE k = 1;
ALTER TABLE he_ren RENAME COLUMN v TO v2;
SELECT k, v, valid_to = 'infinity' AS current FROM he_ren_h ORDER BY k, valid_from;
REFRESH MATERIALIZED VIEW he_ren_h;
SELECT k, v, valid_to = 'infinity' AS current FROM he_ren_h ORDER BY k, valid_from;

-- history_check reads the view's own names of its key and interval, and
-- still finds what is wrong
CREATE TABLE he_rn (k int PRIMARY KEY, a int);
INSERT INTO he_rn VALUES (1, 1), (2, 2);
CREATE MATERIALIZED VIEW he_rn_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, a FROM he_rn;
UPDATE he_rn SET a = 3 WHERE k = 1;
REFRESH MATERIALIZED VIEW he_rn_h;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN k TO id;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN valid_from TO since;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN a TO amount;
SELECT * FROM mvinc.history_check('he_rn_h');
-- so does history_as_of (it took the columns named valid_from / valid_to:
-- with the names swapped it read the wrong one, renamed it failed)
SELECT * FROM mvinc.history_as_of('he_rn_h', now()) AS x(id int, amount int) ORDER BY id;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN valid_to TO valid_from;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN since TO valid_to;
SELECT * FROM mvinc.history_as_of('he_rn_h', now()) AS x(id int, amount int) ORDER BY id;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN valid_from TO until;
ALTER MATERIALIZED VIEW he_rn_h RENAME COLUMN valid_to TO since;
SET mvinc.history_manual_edit = on;
DO $$ BEGIN
  EXECUTE format('INSERT INTO %s VALUES (2, 5, %L, %L)',
                 (SELECT storage FROM mvinc.history_views WHERE view = 'he_rn_h'::regclass),
                 '2000-01-01', 'infinity');
END $$;
RESET mvinc.history_manual_edit;
SELECT key, problem FROM mvinc.history_check('he_rn_h');
SELECT id, amount FROM he_rn_h WHERE until = 'infinity' ORDER BY id;
DROP MATERIALIZED VIEW he_rn_h;
DROP TABLE he_rn;

-- column privileges: on every column they read pending changes as SELECT
-- on the view does; on some of them, the pending changes need them all
CREATE TABLE he_col (k int PRIMARY KEY, a int, b int);
INSERT INTO he_col VALUES (1, 1, 1);
CREATE MATERIALIZED VIEW he_col_h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, a, b FROM he_col;
UPDATE he_col SET a = 2;
CREATE ROLE mvinc_he_all;
CREATE ROLE mvinc_he_some;
GRANT SELECT (k, a, b, valid_from, valid_to) ON he_col_h TO mvinc_he_all;
GRANT SELECT (k, valid_from, valid_to) ON he_col_h TO mvinc_he_some;
SET ROLE mvinc_he_all;
SELECT k, a, valid_to = 'infinity' AS current FROM he_col_h ORDER BY valid_from;
SET ROLE mvinc_he_some;
SELECT k, valid_to = 'infinity' AS current FROM he_col_h ORDER BY valid_from;
RESET ROLE;
REFRESH MATERIALIZED VIEW he_col_h;
SET ROLE mvinc_he_some;
SELECT k, valid_to = 'infinity' AS current FROM he_col_h ORDER BY valid_from;
RESET ROLE;
DROP MATERIALIZED VIEW he_col_h;
DROP TABLE he_col;
DROP ROLE mvinc_he_all, mvinc_he_some;

DROP MATERIALIZED VIEW he_div_h, he_ts_h, he_ci_h, he_load, he_pk_h, he_par_only, he_ren_h;
DROP TABLE he_div, he_ts, he_ci_src, he_shape, he_wide, he_e1, he_pk, he_chi, he_chi2, he_par, he_ren;
DROP COLLATION he_ci;

-- a history view read inside a parallel query (a PARALLEL SAFE function
-- run by a worker): a snapshot-fed view reads its storage; a stream-fed
-- one cannot read its pending changes there (no newer snapshot can be
-- taken) and says so
CREATE TABLE he_par (id int PRIMARY KEY, v int);
INSERT INTO he_par SELECT g, g FROM generate_series(1, 200) g;
CREATE MATERIALIZED VIEW he_par_h WITH (mvinc.history = true, mvinc.key = 'id') AS SELECT id, v FROM he_par;
CREATE TABLE he_par_shape (id int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW he_par_s WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM he_par_shape WITH NO DATA;
SELECT new FROM mvinc.history_load('he_par_s', 'he_par', '2024-01-01');
CREATE FUNCTION he_par_stream(k int) RETURNS int STABLE PARALLEL SAFE LANGUAGE sql
  AS 'SELECT v FROM he_par_h WHERE id = k AND valid_to = ''infinity''';
CREATE FUNCTION he_par_loaded(k int) RETURNS int STABLE PARALLEL SAFE LANGUAGE sql
  AS 'SELECT v FROM he_par_s WHERE id = k AND valid_to = ''infinity''';
SET force_parallel_mode = on;
SELECT count(*) FILTER (WHERE he_par_loaded(id) IS DISTINCT FROM v) AS differing FROM he_par;
\set VERBOSITY terse
SELECT count(*) FILTER (WHERE he_par_stream(id) IS DISTINCT FROM v) AS differing FROM he_par;
\set VERBOSITY default
RESET force_parallel_mode;
SELECT count(*) FILTER (WHERE he_par_stream(id) IS DISTINCT FROM v) AS differing FROM he_par;
DROP FUNCTION he_par_stream, he_par_loaded;
DROP TABLE he_par, he_par_shape CASCADE;
