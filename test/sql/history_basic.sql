-- History views fed by the change stream: one version per committed
-- change of the tracked columns, with half-open validity intervals.
-- Commit times vary from run to run, so versions are shown by value and
-- order; the times are checked against clock marks taken between commits.
CREATE TABLE hb_users (user_id int PRIMARY KEY, user_level int, name text, note text);
INSERT INTO hb_users SELECT g, g % 3, 'u' || g, 'n' FROM generate_series(1, 6) g;
CREATE MATERIALIZED VIEW hb_h WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT user_id, user_level, name FROM hb_users WHERE user_id < 100;
\d hb_h
SELECT regexp_replace(indexdef, 'hv_[0-9]+', 'hv_N', 'g') AS storage_index,
       (SELECT pg_get_userbyid(relowner) = current_user FROM pg_class
         WHERE oid = ('mvinc.' || tablename)::regclass) AS owned_by_view_owner
  FROM pg_indexes WHERE schemaname = 'mvinc' AND tablename =
       (SELECT storage_name FROM mvinc.history_view WHERE view = 'hb_h'::regclass);
SELECT view, source, key_columns, feed FROM mvinc.history_views;
-- every current row opens at the creation time
SELECT count(*) AS versions, count(DISTINCT valid_from) AS starts,
       bool_and(valid_from <= now()) AS started, bool_and(valid_to = 'infinity') AS current
  FROM hb_h;

-- the source's state after each step, with a clock mark after its commit
CREATE TABLE hb_marks (step int, at timestamptz, user_id int, user_level int, name text);
CREATE PROCEDURE hb_mark(step int) LANGUAGE sql AS $$
  INSERT INTO hb_marks SELECT step, clock_timestamp(), user_id, user_level, name
    FROM hb_users WHERE user_id < 100
  UNION ALL SELECT step, clock_timestamp(), NULL, NULL, NULL $$;
CALL hb_mark(0);
UPDATE hb_users SET user_level = 9 WHERE user_id = 1;        -- tracked column
CALL hb_mark(1);
UPDATE hb_users SET note = 'changed' WHERE user_id = 2;      -- untracked: no version
UPDATE hb_users SET user_level = user_level WHERE user_id = 3;  -- changes nothing
DELETE FROM hb_users WHERE user_id = 4;                      -- closes
CALL hb_mark(2);
INSERT INTO hb_users VALUES (4, 7, 'back', 'n');             -- re-insert opens
BEGIN;                                                       -- net effect of one transaction
UPDATE hb_users SET user_level = 7 WHERE user_id = 5;
UPDATE hb_users SET user_level = 8 WHERE user_id = 5;
UPDATE hb_users SET name = 'tmp' WHERE user_id = 6;
UPDATE hb_users SET name = 'u6' WHERE user_id = 6;           -- back to where it was: nothing
COMMIT;
CALL hb_mark(3);
UPDATE hb_users SET user_id = 60 WHERE user_id = 6;          -- key change: close 6, open 60
UPDATE hb_users SET user_id = 500 WHERE user_id = 5;         -- leaves the WHERE: closes
CALL hb_mark(4);
UPDATE hb_users SET user_id = 50 WHERE user_id = 500;        -- enters again
UPDATE hb_users SET name = NULL WHERE user_id = 1;           -- NULL is a value
CALL hb_mark(5);
UPDATE hb_users SET name = NULL WHERE user_id = 1;           -- NULL to NULL: nothing
UPDATE hb_users SET user_level = 2 WHERE user_id = 1;        -- several changes in one day
UPDATE hb_users SET user_level = 3 WHERE user_id = 1;
CALL hb_mark(6);
-- never stale: before any refresh, reads apply the captured changes
-- as of every mark, the unrefreshed view equals the source's state then
SELECT m.step, count(*) FILTER (WHERE x.side = 'view') AS only_view,
       count(*) FILTER (WHERE x.side = 'source') AS only_source
  FROM (SELECT DISTINCT step, at FROM hb_marks WHERE user_id IS NULL) m
  LEFT JOIN LATERAL (
    (SELECT 'view' AS side, * FROM (SELECT user_id, user_level, name FROM hb_h
                                     WHERE valid_from <= m.at AND m.at < valid_to
                                    EXCEPT ALL SELECT user_id, user_level, name FROM hb_marks
                                     WHERE step = m.step AND user_id IS NOT NULL) a)
    UNION ALL
    (SELECT 'source', * FROM (SELECT user_id, user_level, name FROM hb_marks
                               WHERE step = m.step AND user_id IS NOT NULL
                              EXCEPT ALL SELECT user_id, user_level, name FROM hb_h
                               WHERE valid_from <= m.at AND m.at < valid_to) b)) x ON true
 GROUP BY m.step ORDER BY m.step;
PREPARE hb_current AS SELECT user_id, user_level, name FROM hb_h
  WHERE valid_to = 'infinity' ORDER BY 1;
EXECUTE hb_current;
REFRESH MATERIALIZED VIEW hb_h;
EXECUTE hb_current;
SELECT user_id, user_level, name, valid_to = 'infinity' AS current
  FROM hb_h ORDER BY user_id, valid_from;
SELECT * FROM mvinc.history_check('hb_h');
-- as of every mark, the view equals the source's state then
SELECT m.step, count(*) FILTER (WHERE x.side = 'view') AS only_view,
       count(*) FILTER (WHERE x.side = 'source') AS only_source
  FROM (SELECT DISTINCT step, at FROM hb_marks WHERE user_id IS NULL) m
  LEFT JOIN LATERAL (
    (SELECT 'view' AS side, * FROM (SELECT user_id, user_level, name FROM hb_h
                                     WHERE valid_from <= m.at AND m.at < valid_to
                                    EXCEPT ALL SELECT user_id, user_level, name FROM hb_marks
                                     WHERE step = m.step AND user_id IS NOT NULL) a)
    UNION ALL
    (SELECT 'source', * FROM (SELECT user_id, user_level, name FROM hb_marks
                               WHERE step = m.step AND user_id IS NOT NULL
                              EXCEPT ALL SELECT user_id, user_level, name FROM hb_h
                               WHERE valid_from <= m.at AND m.at < valid_to) b)) x ON true
 GROUP BY m.step ORDER BY m.step;
-- the versions of one key follow each other without gaps or overlaps
SELECT valid_to = lead(valid_from) OVER w OR lead(valid_from) OVER w IS NULL AS adjacent
  FROM hb_h WHERE user_id = 1 WINDOW w AS (ORDER BY valid_from);
SELECT * FROM mvinc.history_as_of('hb_h', now()) AS h(user_id int, user_level int, name text)
 ORDER BY 1;
SELECT last_changes FROM mvinc.history_views WHERE view = 'hb_h'::regclass;

-- TRUNCATE closes every current version; a row inserted after it in the
-- same transaction stays open
BEGIN;
TRUNCATE hb_users;
INSERT INTO hb_users VALUES (1, 3, NULL, 'kept');
COMMIT;
REFRESH MATERIALIZED VIEW hb_h;
SELECT user_id, user_level, name, valid_to = 'infinity' AS current
  FROM hb_h WHERE valid_to > now() - interval '1 hour' ORDER BY user_id, valid_from DESC LIMIT 3;
SELECT count(*) FILTER (WHERE valid_to = 'infinity') AS current_versions FROM hb_h;
SELECT * FROM mvinc.history_check('hb_h');
-- a refresh with nothing to do changes nothing
REFRESH MATERIALIZED VIEW hb_h;
SELECT last_changes FROM mvinc.history_views WHERE view = 'hb_h'::regclass;

-- a composite key, and commits in the same transaction order
CREATE TABLE hb_acct (region text NOT NULL, id int NOT NULL, balance numeric,
                      PRIMARY KEY (region, id));
INSERT INTO hb_acct VALUES ('eu', 1, 10), ('us', 1, 20);
CREATE MATERIALIZED VIEW hb_acct_h WITH (mvinc.history = true, mvinc.key = 'region, id',
                                         mvinc.history_start = '2020-01-01')
  AS SELECT region, id, balance FROM hb_acct;
SELECT region, id, balance, valid_from FROM hb_acct_h ORDER BY 1, 2;
UPDATE hb_acct SET balance = balance + 1;
UPDATE hb_acct SET balance = balance + 1 WHERE region = 'eu';
REFRESH MATERIALIZED VIEW hb_acct_h;
SELECT region, id, balance, valid_to = 'infinity' AS current
  FROM hb_acct_h ORDER BY 1, 2, valid_from;
SELECT * FROM mvinc.history_check('hb_acct_h');

-- retention: versions that ended before now() - retention go at refresh
ALTER MATERIALIZED VIEW hb_acct_h SET (mvinc.history_retention = '1 microsecond');
SELECT retention FROM mvinc.history_views WHERE view = 'hb_acct_h'::regclass;
UPDATE hb_acct SET balance = 0 WHERE region = 'us';
SELECT pg_sleep(0.01);
REFRESH MATERIALIZED VIEW hb_acct_h;
SELECT region, id, balance, valid_to = 'infinity' AS current
  FROM hb_acct_h ORDER BY 1, 2, valid_from;
ALTER MATERIALIZED VIEW hb_acct_h RESET (mvinc.history_retention);
SELECT retention FROM mvinc.history_views WHERE view = 'hb_acct_h'::regclass;

-- refusals
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true) AS SELECT user_id FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'name')
  AS SELECT user_id, name FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, balance FROM hb_acct;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT user_id + 1 AS k FROM hb_users;
CREATE TABLE hb_defer (id int NOT NULL, v int, UNIQUE (id) DEFERRABLE);
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM hb_defer;
DROP TABLE hb_defer;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'nope')
  AS SELECT user_id FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'user_id, user_id')
  AS SELECT user_id FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT user_id, now() AS at FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'user_level')
  AS SELECT user_level, count(*) FROM hb_users GROUP BY user_level;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT u.user_id FROM hb_users u JOIN hb_acct a ON a.id = u.user_id;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.key = 'user_id')
  AS SELECT user_id, user_level AS valid_from FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = true, mvinc.incremental = true,
                                      mvinc.key = 'user_id') AS SELECT user_id FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.key = 'user_id') AS SELECT user_id FROM hb_users;
CREATE MATERIALIZED VIEW hb_bad WITH (mvinc.history = false, mvinc.key = 'user_id')
  AS SELECT user_id FROM hb_users;
SELECT count(*) AS leftovers FROM pg_class WHERE relname = 'hb_bad';
REFRESH MATERIALIZED VIEW hb_h WITH NO DATA;
BEGIN ISOLATION LEVEL REPEATABLE READ;
REFRESH MATERIALIZED VIEW hb_h;
ROLLBACK;
-- a transaction's own changes wait for its commit (they have no commit time yet)
BEGIN;
UPDATE hb_users SET user_level = 0 WHERE user_id = 1;
REFRESH MATERIALIZED VIEW hb_h;
SELECT user_id, user_level FROM hb_h WHERE user_id = 1 AND valid_to = 'infinity';
ROLLBACK;
SELECT * FROM mvinc.history_load('hb_h', 'hb_users', now());
SELECT * FROM mvinc.history_load('hb_users', 'hb_users', now());
-- the storage is written only by refresh (its name holds an oid: masked)
CREATE FUNCTION hb_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(stmt, (SELECT storage_name FROM mvinc.history_view WHERE view = 'hb_h'::regclass));
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN regexp_replace(SQLERRM, 'hv_[0-9]+', 'hv_N');
END $$;
SELECT hb_try('INSERT INTO mvinc.%I SELECT * FROM hb_h LIMIT 1');
SELECT hb_try('UPDATE mvinc.%I SET valid_to = now()');
SELECT hb_try('DELETE FROM mvinc.%I');
SELECT hb_try('TRUNCATE mvinc.%I');
SELECT * FROM mvinc.history_check('hb_users');

-- a key that the replica identity does not hold: capture logs whole old rows
CREATE TABLE hb_ri (id int PRIMARY KEY, code int NOT NULL UNIQUE, v int);
INSERT INTO hb_ri VALUES (1, 10, 0), (2, 20, 0);
CREATE MATERIALIZED VIEW hb_ri_code WITH (mvinc.history = true, mvinc.key = 'code')
  AS SELECT code, v FROM hb_ri;
SELECT relreplident FROM pg_class WHERE oid = 'hb_ri'::regclass;
DELETE FROM hb_ri WHERE id = 2;
SELECT code, v, valid_to = 'infinity' AS current FROM hb_ri_code ORDER BY code, valid_from;
DROP MATERIALIZED VIEW hb_ri_code;
-- the identity cannot change afterwards to one without the key
CREATE TABLE hb_ri2 (id int PRIMARY KEY, code int NOT NULL UNIQUE, v int);
INSERT INTO hb_ri2 VALUES (1, 10, 0), (2, 20, 0);
CREATE MATERIALIZED VIEW hb_ri_id WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, v FROM hb_ri2;
ALTER TABLE hb_ri2 REPLICA IDENTITY USING INDEX hb_ri2_code_key;
ALTER TABLE hb_ri2 REPLICA IDENTITY FULL;
ALTER TABLE hb_ri2 REPLICA IDENTITY DEFAULT;
DELETE FROM hb_ri2 WHERE id = 1;
REFRESH MATERIALIZED VIEW hb_ri_id;
SELECT id, v, valid_to = 'infinity' AS current FROM hb_ri_id ORDER BY id, valid_from;
DROP TABLE hb_ri, hb_ri2 CASCADE;

-- values pass through text when pending changes are applied on read:
-- whatever extra_float_digits says, an untracked change makes no version
CREATE TABLE hb_f (id int PRIMARY KEY, x float8, other int);
INSERT INTO hb_f VALUES (1, 0.1::float8 + 0.2::float8, 0);
CREATE MATERIALIZED VIEW hb_fh WITH (mvinc.history = true, mvinc.key = 'id') AS SELECT id, x FROM hb_f;
UPDATE hb_f SET other = 1;
SET extra_float_digits = 0;
SELECT count(*) AS versions FROM hb_fh;
RESET extra_float_digits;
SELECT x = 0.1::float8 + 0.2::float8 AS exact FROM hb_fh;
DROP TABLE hb_f CASCADE;

-- privileges: readers need SELECT on the view only, as for any view
CREATE ROLE hb_reader;
CREATE ROLE hb_other;
GRANT SELECT ON hb_h TO hb_reader;
SET ROLE hb_reader;
SELECT count(*) > 0 AS reads FROM hb_h WHERE valid_to = 'infinity';
SELECT count(*) > 0 AS reads FROM hb_users;
SELECT count(*) FROM mvinc.history_check('hb_h');
REFRESH MATERIALIZED VIEW hb_h;
RESET ROLE;
-- through a plain view whose owner may read it: the pending changes are
-- the whole view's rows, which that view may hide, so they need a refresh
CREATE VIEW hb_current_users AS SELECT user_id, user_level FROM hb_h WHERE valid_to = 'infinity';
GRANT SELECT ON hb_current_users TO hb_other;
UPDATE hb_users SET user_level = 42 WHERE user_id = 1;
SET ROLE hb_other;
SELECT * FROM hb_current_users ORDER BY 1;
BEGIN;
SELECT count(*) FROM hb_current_users, mvinc._history_pending('hb_h'::regclass)
  AS p(user_id int, user_level int, name text, valid_from timestamptz, valid_to timestamptz, c bool);
ROLLBACK;
RESET ROLE;
REFRESH MATERIALIZED VIEW hb_h;
SET ROLE hb_other;
SELECT * FROM hb_current_users ORDER BY 1;
RESET ROLE;
DROP VIEW hb_current_users;
-- a column list other than the storage's is refused (the rows are stored as they come)
UPDATE hb_users SET user_level = 43 WHERE user_id = 1;
SELECT * FROM mvinc._history_pending('hb_h'::regclass)
  AS p(user_id text, user_level int, name text, valid_from timestamptz, valid_to timestamptz, c bool);
SELECT count(*) FROM mvinc._history_pending('hb_h'::regclass)
  AS p(user_id int, user_level int, name text, valid_from timestamptz, valid_to timestamptz, c bool);
-- a new owner gets the storage (reads check it as the owner)
ALTER MATERIALIZED VIEW hb_h OWNER TO hb_reader;
SELECT pg_get_userbyid(relowner) AS storage_owner FROM pg_class
 WHERE oid = (SELECT storage_oid FROM mvinc.history_view WHERE view = 'hb_h'::regclass);
-- a read applies the source's changes since the last refresh: its owner
-- must be allowed to read the source, as for a refresh (and for reads of
-- incremental views)
SET ROLE hb_reader;
SELECT user_id, user_level FROM hb_h WHERE valid_to = 'infinity' ORDER BY 1;
REFRESH MATERIALIZED VIEW hb_h;
RESET ROLE;
GRANT SELECT (user_id, user_level, name) ON hb_users TO hb_reader;
SET ROLE hb_reader;
SELECT user_id, user_level FROM hb_h WHERE valid_to = 'infinity' ORDER BY 1;
RESET ROLE;
REVOKE SELECT (user_level) ON hb_users FROM hb_reader;
GRANT SELECT ON hb_h TO hb_other;
SET ROLE hb_other;
SELECT user_id, user_level FROM hb_h WHERE valid_to = 'infinity' ORDER BY 1;
RESET ROLE;
REVOKE ALL ON hb_users FROM hb_reader;
REVOKE SELECT ON hb_h FROM hb_other;
ALTER MATERIALIZED VIEW hb_h OWNER TO CURRENT_USER;
-- row-level security on the source of a history view is refused
ALTER TABLE hb_users ENABLE ROW LEVEL SECURITY;
SET ROLE hb_other;
SELECT count(*) FROM hb_h;
RESET ROLE;

-- DROP takes the storage and the catalog rows along
SELECT storage_name AS hb_storage FROM mvinc.history_view WHERE view = 'hb_acct_h'::regclass \gset
DROP MATERIALIZED VIEW hb_acct_h;
SELECT count(*) AS catalog_rows FROM mvinc.history_view WHERE storage_name = :'hb_storage';
SELECT to_regclass('mvinc.' || :'hb_storage') AS storage;
SELECT count(*) AS consumers FROM mvinc.consumers WHERE consumer LIKE 'hv_%';
-- DROP OWNED BY a role that owns a history view (and, here, an incremental one)
CREATE TABLE hb_o (id int PRIMARY KEY, v int);
ALTER TABLE hb_o OWNER TO hb_other;
GRANT CREATE ON SCHEMA public TO hb_other;
SET ROLE hb_other;
CREATE MATERIALIZED VIEW hb_oh WITH (mvinc.history = true, mvinc.key = 'id') AS SELECT id, v FROM hb_o;
CREATE MATERIALIZED VIEW hb_oi WITH (mvinc.incremental = true) AS SELECT v, count(*) FROM hb_o GROUP BY v;
RESET ROLE;
DROP OWNED BY hb_other;
SELECT (SELECT count(*) FROM mvinc.history_view WHERE view::text = 'hb_oh') AS history_rows,
       (SELECT count(*) FROM mvinc.mv_view WHERE view::text = 'hb_oi') AS incremental_rows,
       (SELECT count(*) FROM pg_class WHERE relname IN ('hb_o', 'hb_oh', 'hb_oi')) AS relations;
DROP TABLE hb_users CASCADE;
SELECT count(*) AS history_views FROM mvinc.history_view;
DROP ROLE hb_reader;
DROP ROLE hb_other;
