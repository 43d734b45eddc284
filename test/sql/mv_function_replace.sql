-- CREATE OR REPLACE of a function a view's definition calls: the stored
-- rows were computed with the old body, the defining query now computes
-- others.  An incremental view reads its query until the next refresh,
-- which recomputes it (as ALTER TABLE of its source does); a history
-- view, whose stored versions cannot be recomputed, refuses it.  The
-- same definition run again changes nothing.  Until 2026-12-05 the views
-- kept the old results, REFRESH included.
CREATE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 3';
CREATE FUNCTION fr_near(int, int) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT abs($1 - $2) < 5';
CREATE OPERATOR ~~~ (FUNCTION = fr_near, LEFTARG = int, RIGHTARG = int);
CREATE FUNCTION fr_other(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
CREATE TABLE fr_src (id int PRIMARY KEY, v int);
INSERT INTO fr_src SELECT i, i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW fr_agg WITH (mvinc.incremental = true) AS
  SELECT fr_bucket(v) AS b, count(*) AS n, sum(v) AS s FROM fr_src GROUP BY 1;
-- through an operator
CREATE MATERIALIZED VIEW fr_proj WITH (mvinc.incremental = true) AS
  SELECT id, v FROM fr_src WHERE v ~~~ 10;
-- calls neither
CREATE MATERIALIZED VIEW fr_plain WITH (mvinc.incremental = true) AS
  SELECT id, v FROM fr_src WHERE v > 20;
CREATE FUNCTION fr_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE q text := rtrim(pg_get_viewdef(v), ';'); n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
CREATE FUNCTION fr_state() RETURNS TABLE (view text, path text, diff bigint) LANGUAGE sql AS $$
  SELECT v::text, mvinc.read_path(v), fr_diff(v)
    FROM unnest('{fr_agg,fr_proj,fr_plain}'::regclass[]) v $$;
SELECT * FROM fr_state();

CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 5';
CREATE OR REPLACE FUNCTION fr_near(int, int) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT abs($1 - $2) < 2';
-- a function no view calls changes nothing
CREATE OR REPLACE FUNCTION fr_other(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
INSERT INTO fr_src VALUES (31, 9), (32, 25);
SELECT * FROM fr_state();
SELECT mode FROM mvinc.refresh('fr_agg');
SELECT mode FROM mvinc.refresh('fr_proj');
SELECT mode FROM mvinc.refresh('fr_plain');
SELECT * FROM fr_state();
SELECT * FROM fr_agg ORDER BY b;
-- later changes are incremental again
INSERT INTO fr_src VALUES (33, 11);
DELETE FROM fr_src WHERE id = 10;
SELECT * FROM fr_state();
SELECT mode FROM mvinc.refresh('fr_agg');
SELECT mode FROM mvinc.refresh('fr_proj');
SELECT * FROM fr_state();

-- a replacement rolled back leaves the views as they were
BEGIN;
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 7';
ROLLBACK;
SELECT * FROM fr_state();

-- the same definition again (a deployment script run twice): nothing to do
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 5';
SELECT * FROM fr_state();
-- nor with only what guides the planner changed (cost, parallel safety)
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE PARALLEL SAFE COST 5 LANGUAGE sql
  AS 'SELECT $1 % 5';
SELECT * FROM fr_state();

-- a history view refuses a change: nothing is replaced
CREATE MATERIALIZED VIEW fr_hist WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, fr_bucket(v) AS b FROM fr_src;
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 5';
\set VERBOSITY default
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 2';
\set VERBOSITY terse
SELECT prosrc FROM pg_proc WHERE proname = 'fr_bucket';
SELECT count(*) AS differ FROM fr_hist h JOIN fr_src s USING (id)
 WHERE h.valid_to = 'infinity' AND h.b IS DISTINCT FROM fr_bucket(s.v);
DROP MATERIALIZED VIEW fr_hist;
CREATE OR REPLACE FUNCTION fr_bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 % 2';
SELECT * FROM fr_state();
SELECT mode FROM mvinc.refresh('fr_agg');
SELECT * FROM fr_agg ORDER BY b;


-- an aggregate replaced with another transition function
CREATE FUNCTION fr_step(bigint, int) RETURNS bigint IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 + $2';
CREATE AGGREGATE fr_total(int) (SFUNC = fr_step, STYPE = bigint, COMBINEFUNC = int8pl, INITCOND = '0');
CREATE MATERIALIZED VIEW fr_aggr WITH (mvinc.incremental = true) AS
  SELECT v % 2 AS k, fr_total(v) AS t FROM fr_src GROUP BY 1;
SELECT mvinc.read_path('fr_aggr'), fr_diff('fr_aggr');
CREATE FUNCTION fr_step2(bigint, int) RETURNS bigint IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 + 2 * $2';
CREATE OR REPLACE AGGREGATE fr_total(int) (SFUNC = fr_step2, STYPE = bigint, COMBINEFUNC = int8pl, INITCOND = '0');
SELECT mvinc.read_path('fr_aggr'), fr_diff('fr_aggr');
SELECT mode FROM mvinc.refresh('fr_aggr');
SELECT mvinc.read_path('fr_aggr'), fr_diff('fr_aggr');
-- and the transition function it now calls, replaced
CREATE OR REPLACE FUNCTION fr_step2(bigint, int) RETURNS bigint IMMUTABLE STRICT LANGUAGE sql AS 'SELECT $1 + 3 * $2';
SELECT mvinc.read_path('fr_aggr'), fr_diff('fr_aggr');
SELECT mode FROM mvinc.refresh('fr_aggr');
SELECT mvinc.read_path('fr_aggr'), fr_diff('fr_aggr');
DROP MATERIALIZED VIEW fr_aggr;
DROP AGGREGATE fr_total(int);
DROP FUNCTION fr_step, fr_step2;

DROP MATERIALIZED VIEW fr_agg, fr_proj, fr_plain;
DROP TABLE fr_src;
DROP FUNCTION fr_state, fr_diff, fr_other, fr_bucket;
DROP OPERATOR ~~~ (int, int);
DROP FUNCTION fr_near;
