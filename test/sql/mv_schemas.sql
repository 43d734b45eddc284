-- Incremental views on real schemas: user-defined types and collations,
-- privileges of non-owners, savepoints, inheritance, cleanup after every
-- kind of DROP, JIT in internal statements, REFRESH ... WITH NO DATA.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

CREATE FUNCTION mv_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;

-- What mvinc leaves behind that nothing needs: tracking of dropped tables,
-- consumers without a view, catalog rows of dropped views, change logs and
-- storage tables nobody owns.
CREATE FUNCTION mv_leftovers() RETURNS SETOF text LANGUAGE sql AS $$
  SELECT 'tracked ' || t.relid FROM mvinc.tracked t
   WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.relid)
  UNION ALL
  SELECT 'consumer ' || c.consumer FROM mvinc.consumers c
   WHERE NOT EXISTS (SELECT 1 FROM mvinc.mv_view v WHERE 'mv_' || v.view::oid = c.consumer)
  UNION ALL
  SELECT 'view row ' || v.view::oid FROM mvinc.mv_view v
   WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = v.view::oid)
  UNION ALL
  SELECT 'column row ' || c.view::oid FROM mvinc.mv_column c
   WHERE NOT EXISTS (SELECT 1 FROM mvinc.mv_view v WHERE v.view = c.view)
  UNION ALL
  SELECT 'table ' || r.relname FROM pg_class r
   WHERE r.relnamespace = 'mvinc'::regnamespace AND r.relkind = 'r'
     AND ((r.relname ~ '^changelog_[0-9]+$'
           AND NOT EXISTS (SELECT 1 FROM mvinc.tracked t WHERE t.changelog = r.oid))
       OR (r.relname ~ '^mv_[0-9]+(_append)?$'
           AND NOT EXISTS (SELECT 1 FROM mvinc.mv_view v
                            WHERE v.storage_name::text = substring(r.relname from '^mv_[0-9]+'))))
  ORDER BY 1
$$;

-- 1. User-defined types, domains, arrays, composites, an extension's type
-- and a collation of its own schema, in group keys, aggregates, WHERE and
-- projections; the types live outside the search_path of internal SQL.
CREATE EXTENSION citext;
CREATE SCHEMA app;
CREATE TYPE app.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN app.amount AS numeric(12,2) CHECK (VALUE >= 0);
CREATE TYPE app.pair AS (a int, b text);
CREATE COLLATION app.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE FUNCTION app.is_positive(app.amount) RETURNS boolean IMMUTABLE LANGUAGE sql
  AS 'SELECT $1 > 0';
CREATE TABLE app.entries (id int PRIMARY KEY, mood app.mood, amt app.amount, tags text[],
                          p app.pair, name citext, label text COLLATE app.ci);
INSERT INTO app.entries
  SELECT g, (ARRAY['sad','ok','happy'])[g % 3 + 1]::app.mood, (g * 1.5)::app.amount,
         ARRAY['t' || (g % 2)], ROW(g % 4, 'b' || (g % 2))::app.pair,
         (ARRAY['Ann','ANN','bob'])[g % 3 + 1], (ARRAY['X','x','y'])[g % 3 + 1]
  FROM generate_series(1, 60) g;
CREATE MATERIALIZED VIEW app.by_mood WITH (mvinc.incremental = true) AS
  SELECT mood, count(*), sum(amt), max(amt), min(mood) AS least_mood
  FROM app.entries WHERE app.is_positive(amt) GROUP BY mood;
CREATE MATERIALIZED VIEW app.by_tags WITH (mvinc.incremental = true) AS
  SELECT tags, p, count(*), avg(amt) FROM app.entries GROUP BY tags, p;
CREATE MATERIALIZED VIEW app.by_name WITH (mvinc.incremental = true) AS
  SELECT name, label, count(*), max(label) AS top FROM app.entries GROUP BY name, label;
CREATE MATERIALIZED VIEW app.rows WITH (mvinc.incremental = true) AS
  SELECT id, mood, amt, tags, p, name, label FROM app.entries WHERE mood <> 'sad';
SELECT * FROM app.by_mood ORDER BY mood;
SELECT count(*) FROM app.by_name;
INSERT INTO app.entries VALUES (100, 'happy', 7.25, '{t9}', ROW(9, 'z'), 'ann', 'X');
UPDATE app.entries SET mood = 'sad', amt = amt + 1, name = 'BOB', label = 'Y' WHERE id % 7 = 0;
DELETE FROM app.entries WHERE id % 11 = 0;
REFRESH MATERIALIZED VIEW app.by_mood;
REFRESH MATERIALIZED VIEW app.by_tags;
REFRESH MATERIALIZED VIEW app.by_name;
REFRESH MATERIALIZED VIEW app.rows;
SELECT v, mvinc.read_path(v), mv_diff(v)
  FROM unnest(ARRAY['app.by_mood', 'app.by_tags', 'app.by_name', 'app.rows']::regclass[]) v;
SELECT * FROM app.by_mood ORDER BY mood;
-- internal SQL names every type and collation with its schema
SELECT physical_name, type FROM mvinc.mv_column
 WHERE view = 'app.rows'::regclass AND physical_name LIKE 'c%' ORDER BY physical_name;

-- 2. Privileges: a role that does not own the source needs what a native
-- matview needs (SELECT on the columns it reads, CREATE on the schema).
CREATE ROLE mvinc_reader_role NOLOGIN;
CREATE TABLE ledger (id int PRIMARY KEY, acct int, amount int, secret text);
INSERT INTO ledger SELECT g, g % 4, g, 's' || g FROM generate_series(1, 40) g;
GRANT SELECT (id, acct, amount) ON ledger TO mvinc_reader_role;
GRANT CREATE ON SCHEMA public TO mvinc_reader_role;
SET ROLE mvinc_reader_role;
CREATE MATERIALIZED VIEW ledger_sums WITH (mvinc.incremental = true) AS
  SELECT acct, sum(amount), count(*) FROM ledger GROUP BY acct;
CREATE MATERIALIZED VIEW ledger_rows WITH (mvinc.incremental = true) AS
  SELECT id, amount FROM ledger WHERE acct = 1;
-- a column it may not read: refused, as a native matview is
CREATE MATERIALIZED VIEW ledger_secrets WITH (mvinc.incremental = true) AS
  SELECT id, secret FROM ledger;
-- tracking a table by hand still needs ownership
SELECT mvinc.track('ledger');
SELECT mv_diff('ledger_sums'), mv_diff('ledger_rows');
RESET ROLE;
INSERT INTO ledger VALUES (41, 1, 1000, 'x');
SET ROLE mvinc_reader_role;
REFRESH MATERIALIZED VIEW ledger_sums;
SELECT mvinc.read_path('ledger_sums'), mv_diff('ledger_sums');
SELECT * FROM ledger_sums ORDER BY acct;
RESET ROLE;
SELECT relname, pg_get_userbyid(relowner) FROM pg_class
 WHERE relname IN ('ledger_sums', 'ledger_rows') ORDER BY 1;
-- the owner loses SELECT: REFRESH is refused as a native one is
REVOKE SELECT ON ledger FROM mvinc_reader_role;
INSERT INTO ledger VALUES (42, 1, 1000, 'y');
SET ROLE mvinc_reader_role;
REFRESH MATERIALIZED VIEW ledger_sums;
RESET ROLE;
-- a new owner gets the storage too, by ALTER ... OWNER TO and REASSIGN OWNED
CREATE ROLE mvinc_heir_role NOLOGIN;
GRANT SELECT ON ledger TO mvinc_heir_role;
ALTER MATERIALIZED VIEW ledger_rows OWNER TO mvinc_heir_role;
REASSIGN OWNED BY mvinc_reader_role TO mvinc_heir_role;
SELECT pg_get_userbyid(c.relowner) = pg_get_userbyid(s.relowner) AS storage_follows, count(*)
  FROM mvinc.mv_view v JOIN pg_class c ON c.oid = v.view
  JOIN pg_class s ON s.relnamespace = 'mvinc'::regnamespace
   AND s.relname::text IN (v.storage_name::text, v.storage_name::text || '_append')
 WHERE v.view::text IN ('ledger_sums', 'ledger_rows') GROUP BY 1;
SET ROLE mvinc_heir_role;
REFRESH MATERIALIZED VIEW ledger_sums;
SELECT mvinc.read_path('ledger_sums'), mv_diff('ledger_sums'), mv_diff('ledger_rows');
RESET ROLE;
DROP MATERIALIZED VIEW ledger_sums, ledger_rows;
REVOKE CREATE ON SCHEMA public FROM mvinc_reader_role;
REVOKE SELECT ON ledger FROM mvinc_heir_role;
DROP ROLE mvinc_reader_role, mvinc_heir_role;

-- 3. A savepoint rolled back after a refresh takes the refresh along;
-- the transaction commits and the view is right.
CREATE TABLE sp (id int PRIMARY KEY, g int, x int);
INSERT INTO sp SELECT g, g % 3, g FROM generate_series(1, 30) g;
CREATE MATERIALIZED VIEW sp_sums WITH (mvinc.incremental = true) AS
  SELECT g, sum(x), count(*) FROM sp GROUP BY g;
BEGIN;
SAVEPOINT p;
INSERT INTO sp VALUES (100, 1, 100);
REFRESH MATERIALIZED VIEW sp_sums;
ROLLBACK TO p;
COMMIT;
SELECT mvinc.read_path('sp_sums'), mv_diff('sp_sums');
-- a refresh in a released savepoint, then a write rolled back
BEGIN;
INSERT INTO sp VALUES (101, 1, 100);
SAVEPOINT p;
REFRESH MATERIALIZED VIEW sp_sums;
RELEASE p;
SAVEPOINT q;
INSERT INTO sp VALUES (102, 1, 100);
ROLLBACK TO q;
COMMIT;
SELECT mvinc.read_path('sp_sums'), mv_diff('sp_sums');
-- a refresh inside a savepoint that is rolled back, then another refresh
BEGIN;
INSERT INTO sp VALUES (103, 2, 5);
SAVEPOINT p;
REFRESH MATERIALIZED VIEW sp_sums;
ROLLBACK TO p;
REFRESH MATERIALIZED VIEW sp_sums;
COMMIT;
SELECT mvinc.read_path('sp_sums'), mv_diff('sp_sums');

-- 4. Inheritance: a child of a table that a view reads with its children
-- is refused; a view FROM ONLY the parent lets children come and go.
CREATE TABLE parent_t (id int PRIMARY KEY, g int, x int);
INSERT INTO parent_t SELECT g, g % 2, g FROM generate_series(1, 10) g;
CREATE MATERIALIZED VIEW parent_all WITH (mvinc.incremental = true) AS
  SELECT g, sum(x) FROM parent_t GROUP BY g;
CREATE MATERIALIZED VIEW parent_only WITH (mvinc.incremental = true) AS
  SELECT g, sum(x) FROM ONLY parent_t GROUP BY g;
CREATE TABLE child_t () INHERITS (parent_t);
CREATE TABLE loose_t (id int, g int, x int);
ALTER TABLE loose_t INHERIT parent_t;
DROP MATERIALIZED VIEW parent_all;
CREATE TABLE child_t () INHERITS (parent_t);
INSERT INTO child_t VALUES (50, 1, 50);
INSERT INTO parent_t VALUES (11, 1, 11);
REFRESH MATERIALIZED VIEW parent_only;
SELECT mvinc.read_path('parent_only'), mv_diff('parent_only');
-- once the last child is gone, a view with children can be created again
DROP TABLE child_t;
CREATE MATERIALIZED VIEW parent_all WITH (mvinc.incremental = true) AS
  SELECT g, sum(x) FROM parent_t GROUP BY g;
SELECT mv_diff('parent_all');

-- 5. JIT: internal statements never compile, even with JIT forced on
-- (jit_guard raises when it runs with JIT on at every cost).
CREATE FUNCTION public.jit_guard(int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('jit') = 'on' AND current_setting('jit_above_cost') = '0' THEN
    RAISE EXCEPTION 'internal SQL ran with jit = on';
  END IF;
  RETURN true;
END $$;
CREATE TABLE tiny (id int PRIMARY KEY, g int, x int);
INSERT INTO tiny SELECT g, g % 2, g FROM generate_series(1, 5) g;
SET jit = on;
SET jit_above_cost = 0;
CREATE MATERIALIZED VIEW tiny_counts WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FROM tiny WHERE public.jit_guard(x) GROUP BY g;
DELETE FROM tiny WHERE id = 1;
UPDATE tiny SET x = x + 1;
SELECT mode FROM mvinc.refresh('tiny_counts');
SELECT mode FROM mvinc.refresh('tiny_counts', true);
RESET jit_above_cost;
RESET jit;
SELECT mvinc.read_path('tiny_counts'), mv_diff('tiny_counts');

-- 6. REFRESH ... WITH NO DATA empties the view and marks it unpopulated;
-- reads run the defining query; the next REFRESH computes it anew.
REFRESH MATERIALIZED VIEW CONCURRENTLY sp_sums WITH NO DATA;
REFRESH MATERIALIZED VIEW sp_sums WITH NO DATA;
SELECT last_refresh_mode, populated, storage_rows FROM mvinc.views WHERE view = 'sp_sums'::regclass;
SELECT relispopulated FROM pg_class WHERE oid = 'sp_sums'::regclass;
SELECT count(*) FROM mvinc.consumers WHERE consumer = 'mv_' || 'sp_sums'::regclass::oid;
SELECT mvinc.read_path('sp_sums'), mv_diff('sp_sums');
INSERT INTO sp VALUES (200, 0, 7);
SELECT mv_diff('sp_sums');
SELECT mode FROM mvinc.refresh('sp_sums');
SELECT mvinc.read_path('sp_sums'), mv_diff('sp_sums');

-- 7. Cleanup: every way of dropping leaves nothing behind.
SELECT * FROM mv_leftovers();
SET client_min_messages = warning;  -- the cascade lists internal names
DROP SCHEMA app CASCADE;
RESET client_min_messages;
SELECT * FROM mv_leftovers();
SELECT count(*) FROM mvinc.tracked WHERE relid::regclass::text LIKE 'app.%';
DROP TABLE sp CASCADE;
SELECT * FROM mv_leftovers();
CREATE ROLE mvinc_dropped_role;
CREATE TABLE owned_src (id int PRIMARY KEY, g int);
ALTER TABLE owned_src OWNER TO mvinc_dropped_role;
CREATE MATERIALIZED VIEW owned_view WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FROM owned_src GROUP BY g;
ALTER MATERIALIZED VIEW owned_view OWNER TO mvinc_dropped_role;
DROP OWNED BY mvinc_dropped_role;
DROP ROLE mvinc_dropped_role;
SELECT * FROM mv_leftovers();
DROP MATERIALIZED VIEW parent_only, parent_all, tiny_counts;
SELECT * FROM mv_leftovers();
DROP TABLE parent_t, loose_t, tiny, ledger;
SELECT * FROM mv_leftovers();
SELECT count(*) AS tracked_left FROM mvinc.tracked t
 WHERE t.relid::regclass::text IN ('parent_t', 'tiny', 'ledger');
DROP EXTENSION citext;
