-- Refresh and reads of incremental and history views cast and store
-- values with elevated rights, so a domain CHECK constraint that calls a
-- user-defined function would run that function with those rights.  A
-- non-superuser cannot make a view lead to one: not at CREATE (source
-- columns, view columns, arrays and composites of such domains), and not
-- later by ALTER DOMAIN, ALTER TYPE or ALTER TABLE on a tracked table.
CREATE ROLE mvinc_sec_owner LOGIN;
GRANT CREATE ON SCHEMA public TO mvinc_sec_owner;
SET ROLE mvinc_sec_owner;
CREATE FUNCTION sec_escalate(int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  IF current_user <> 'mvinc_sec_owner' THEN
    EXECUTE 'ALTER ROLE mvinc_sec_owner SUPERUSER';
  END IF;
  RETURN true;
END $$;
CREATE DOMAIN sec_bad AS int CHECK (sec_escalate(VALUE));
CREATE DOMAIN sec_bad2 AS sec_bad;                          -- inherits the check
CREATE DOMAIN sec_ok AS int CHECK (VALUE > 0);              -- built-in functions only
CREATE TYPE sec_pair AS (a int, b sec_bad);
CREATE TABLE sec_t1 (k int PRIMARY KEY, v sec_bad);
CREATE TABLE sec_t2 (k int PRIMARY KEY, v sec_bad2[]);
CREATE TABLE sec_t3 (k int PRIMARY KEY, v sec_pair);
CREATE TABLE sec_t4 (k int PRIMARY KEY, v int, w sec_ok);
INSERT INTO sec_t4 VALUES (1, 1, 1);
-- refused at CREATE
CREATE MATERIALIZED VIEW sec_v1 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t1;
CREATE MATERIALIZED VIEW sec_h1 WITH (mvinc.history = true, mvinc.key = 'k') AS SELECT k, v FROM sec_t1;
CREATE MATERIALIZED VIEW sec_v1k WITH (mvinc.incremental = true) AS SELECT k FROM sec_t1;  -- any column of the source
CREATE MATERIALIZED VIEW sec_v2 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t2;
CREATE MATERIALIZED VIEW sec_v3 WITH (mvinc.incremental = true) AS SELECT k, v FROM sec_t3;
CREATE MATERIALIZED VIEW sec_v4 WITH (mvinc.incremental = true) AS SELECT k, v::sec_bad AS v FROM sec_t4;
-- accepted: checks with built-in functions only
CREATE MATERIALIZED VIEW sec_v5 WITH (mvinc.incremental = true) AS SELECT k, v, w FROM sec_t4;
CREATE MATERIALIZED VIEW sec_h5 WITH (mvinc.history = true, mvinc.key = 'k') AS SELECT k, w FROM sec_t4;
-- refused later: the statement is undone
ALTER DOMAIN sec_ok ADD CONSTRAINT sneaky CHECK (sec_escalate(VALUE));
ALTER TABLE sec_t4 ADD COLUMN x sec_bad;
ALTER TABLE sec_t4 ALTER COLUMN v TYPE sec_bad;
CREATE TYPE sec_box AS (a int);
ALTER TABLE sec_t4 ADD COLUMN y sec_box;
ALTER TYPE sec_box ADD ATTRIBUTE b sec_bad;
\d sec_t4
SELECT conname FROM pg_constraint WHERE contypid = 'sec_ok'::regtype ORDER BY 1;
-- the views still work, and nobody became a superuser
UPDATE sec_t4 SET w = 5;
SELECT * FROM sec_v5;
SELECT k, w, valid_to = 'infinity' AS current FROM sec_h5 ORDER BY valid_from;
REFRESH MATERIALIZED VIEW sec_h5;
SELECT rolsuper FROM pg_roles WHERE rolname = 'mvinc_sec_owner';
-- tables whose changes are not captured may use them
CREATE TABLE sec_free (k int, v sec_bad);
INSERT INTO sec_free VALUES (1, 1);
DROP TABLE sec_free;
RESET ROLE;
SELECT rolsuper FROM pg_roles WHERE rolname = 'mvinc_sec_owner';
DROP MATERIALIZED VIEW sec_v5, sec_h5;
DROP TABLE sec_t1, sec_t2, sec_t3, sec_t4;
DROP TYPE sec_pair, sec_box;
DROP DOMAIN sec_bad2, sec_bad, sec_ok;
DROP FUNCTION sec_escalate(int);
REVOKE CREATE ON SCHEMA public FROM mvinc_sec_owner;
DROP ROLE mvinc_sec_owner;
