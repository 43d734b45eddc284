-- Refresh, reads and capture cast and store values with elevated rights,
-- and a domain's CHECK may run any code (a user's function, a cast to
-- another domain, query_to_xml).  A non-superuser cannot make a view lead
-- to one: not at CREATE (source columns, view columns, casts in the
-- query; arrays, composites and ranges of such domains included), and
-- not later by ALTER DOMAIN, ALTER TYPE or ALTER TABLE (undone when they
-- give a column of a tracked table or a view such a type).  What a
-- superuser set up stays usable, also by others.
CREATE ROLE mvinc_sec_owner LOGIN;
CREATE ROLE mvinc_sec_reader;
GRANT CREATE ON SCHEMA public TO mvinc_sec_owner;
-- a superuser's view over a checked domain, read by a grantee
CREATE FUNCTION sec_positive(int) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 0';
CREATE DOMAIN sec_su AS int CHECK (sec_positive(VALUE));
CREATE TABLE sec_su_t (k int PRIMARY KEY, v sec_su);
INSERT INTO sec_su_t VALUES (1, 1);
CREATE MATERIALIZED VIEW sec_su_v WITH (mvinc.incremental = true) AS SELECT v, count(*) FROM sec_su_t GROUP BY v;
GRANT SELECT ON sec_su_v TO mvinc_sec_reader;
INSERT INTO sec_su_t VALUES (2, 1);

SET ROLE mvinc_sec_owner;
CREATE FUNCTION sec_escalate(int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  IF current_user <> 'mvinc_sec_owner' THEN
    EXECUTE 'ALTER ROLE mvinc_sec_owner SUPERUSER';
  END IF;
  RETURN true;
END $$;
CREATE FUNCTION sec_escalate0() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF current_user <> 'mvinc_sec_owner' THEN
    EXECUTE 'ALTER ROLE mvinc_sec_owner SUPERUSER';
  END IF;
  RETURN 1;
END $$;
CREATE DOMAIN sec_bad AS int CHECK (sec_escalate(VALUE));
CREATE DOMAIN sec_bad2 AS sec_bad;                          -- inherits the check
CREATE DOMAIN sec_cast AS int CHECK ((VALUE::sec_bad) IS NOT NULL);
CREATE DOMAIN sec_xml AS int CHECK (query_to_xml('SELECT sec_escalate0()', false, false, '') IS NOT NULL);
CREATE DOMAIN sec_ok AS int CHECK (VALUE > 0);              -- built-in functions only: still a CHECK
CREATE DOMAIN sec_plain AS int;                             -- no CHECK
CREATE TYPE sec_pair AS (a int, b sec_bad);
CREATE TABLE sec_t1 (k int PRIMARY KEY, v sec_bad);
CREATE TABLE sec_t2 (k int PRIMARY KEY, v sec_bad2[]);
CREATE TABLE sec_t3 (k int PRIMARY KEY, v sec_pair);
CREATE TABLE sec_t5 (k int PRIMARY KEY, v sec_cast, w sec_xml, x sec_ok);
CREATE TABLE sec_t4 (k int PRIMARY KEY, v int, w sec_plain);
INSERT INTO sec_t4 VALUES (1, 1, 1);
-- refused at CREATE
CREATE MATERIALIZED VIEW sec_v1 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t1;
CREATE MATERIALIZED VIEW sec_h1 WITH (mvinc.history = true, mvinc.key = 'k') AS SELECT k, v FROM sec_t1;
CREATE MATERIALIZED VIEW sec_v1k WITH (mvinc.incremental = true) AS SELECT k FROM sec_t1;  -- any column of the source
CREATE MATERIALIZED VIEW sec_v2 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t2;
CREATE MATERIALIZED VIEW sec_v3 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t3;
CREATE MATERIALIZED VIEW sec_v5 WITH (mvinc.incremental = true) AS SELECT k FROM sec_t5;
CREATE MATERIALIZED VIEW sec_v6 WITH (mvinc.incremental = true) AS SELECT k, v::sec_plain AS v FROM sec_t4;
CREATE MATERIALIZED VIEW sec_v7 WITH (mvinc.history = true, mvinc.key = 'k') AS SELECT k, v FROM sec_t4 WHERE v::sec_ok > 0;
-- accepted: no CHECK anywhere
CREATE MATERIALIZED VIEW sec_v8 WITH (mvinc.incremental = true) AS SELECT k, v, w FROM sec_t4;
CREATE MATERIALIZED VIEW sec_h8 WITH (mvinc.history = true, mvinc.key = 'k') AS SELECT k, w FROM sec_t4;
-- refused later: the statement is undone
ALTER DOMAIN sec_plain ADD CONSTRAINT sneaky CHECK (sec_escalate(VALUE));
ALTER TABLE sec_t4 ADD COLUMN x sec_bad;
CREATE TYPE sec_box AS (a int);
ALTER TABLE sec_t4 ADD COLUMN y sec_box;
ALTER TYPE sec_box ADD ATTRIBUTE b sec_bad;
CREATE TABLE sec_inner (a int);
ALTER TABLE sec_t4 ADD COLUMN z sec_inner;
ALTER TABLE sec_inner ADD COLUMN b sec_pair;                 -- a row type the tracked table uses
\d sec_t4
\d sec_inner
SELECT conname FROM pg_constraint WHERE contypid = 'sec_plain'::regtype ORDER BY 1;
-- the views still work, and nobody became a superuser
UPDATE sec_t4 SET w = 5;
SELECT k, v, w FROM sec_v8;
SELECT k, w, valid_to = 'infinity' AS current FROM sec_h8 ORDER BY valid_from;
REFRESH MATERIALIZED VIEW sec_h8;
SELECT rolsuper FROM pg_roles WHERE rolname = 'mvinc_sec_owner';
-- DDL that gives no view or tracked table such a column is the user's own
-- business, also while a superuser's view over a checked domain exists
ALTER DOMAIN sec_ok ADD CONSTRAINT also CHECK (sec_escalate(VALUE));
CREATE TABLE sec_free (k int, v sec_bad);
INSERT INTO sec_free VALUES (1, 1);
DROP TABLE sec_free;
RESET ROLE;
SELECT rolsuper FROM pg_roles WHERE rolname = 'mvinc_sec_owner';
-- the superuser's view: its grantee reads it, changes waiting (Hybrid)
SET ROLE mvinc_sec_reader;
SELECT * FROM sec_su_v ORDER BY v;
RESET ROLE;

DROP MATERIALIZED VIEW sec_v8, sec_h8, sec_su_v;
DROP TABLE sec_t1, sec_t2, sec_t3, sec_t4, sec_t5, sec_su_t, sec_inner;
DROP TYPE sec_pair, sec_box;
DROP DOMAIN sec_bad2, sec_cast, sec_bad, sec_xml, sec_ok, sec_plain, sec_su;
DROP FUNCTION sec_escalate(int), sec_escalate0(), sec_positive(int);
REVOKE CREATE ON SCHEMA public FROM mvinc_sec_owner;
DROP ROLE mvinc_sec_owner, mvinc_sec_reader;
