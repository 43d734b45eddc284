-- Internal functions of mvinc are not callable by PUBLIC (issue 11, hole
-- 7), and a reader who is not a superuser still reads incremental views
-- through every path: the storage, the storage merged with appended
-- states, and the defining query (the source read as the view owner).
CREATE TABLE p_src (id int PRIMARY KEY, g int, v int);
INSERT INTO p_src SELECT i, i % 4, i FROM generate_series(1, 40) i;
CREATE MATERIALIZED VIEW p_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, max(v) AS mx FROM p_src GROUP BY g;
CREATE MATERIALIZED VIEW p_secret WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n FROM p_src GROUP BY g;
CREATE ROLE p_reader;
GRANT SELECT ON p_agg TO p_reader;
-- a plain view over p_secret, owned by a role that may read it
CREATE VIEW p_over_secret AS SELECT g, n FROM p_secret;
GRANT SELECT ON p_over_secret TO p_reader;

-- The underscore functions of schema mvinc that PUBLIC may still call:
-- the read path's branch choice and the helpers of mvinc.views and
-- mvinc.refresh_progress (granted to PUBLIC), each of which checks the
-- caller's rights on the view itself.
SELECT p.oid::regprocedure AS public_internal
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'mvinc'::regnamespace AND p.proname LIKE '\_%'
   AND pg_catalog.has_function_privilege('p_reader', p.oid, 'EXECUTE')
 ORDER BY 1::text;

SET ROLE p_reader;
-- the read path works: fresh (storage only)
SELECT mvinc.read_path('p_agg');
SELECT g, n, s, mx FROM p_agg ORDER BY g;
-- through a view owned by someone who may read p_secret
SELECT g, n FROM p_over_secret ORDER BY g;
-- the internal functions are refused
\set VERBOSITY terse
SELECT mvinc._read_branch('p_secret'::regclass::oid);
SELECT mvinc.read_path('p_secret');
SELECT mvinc._agg_final_stored('count()'::regprocedure, NULL, NULL::bigint);
SELECT * FROM mvinc._capture_status();
SELECT mvinc._start_worker();
SELECT mvinc._check_setup();
\set VERBOSITY default
-- nor after a SECURITY DEFINER function read the view in this transaction
-- (its owner read it)
RESET ROLE;
CREATE FUNCTION p_peek() RETURNS bigint LANGUAGE sql SECURITY DEFINER STABLE AS $$ SELECT count(*) FROM p_secret $$;
GRANT EXECUTE ON FUNCTION p_peek() TO p_reader;
SET ROLE p_reader;
BEGIN;
SELECT p_peek() > 0 AS peeked;
\set VERBOSITY terse
SELECT mvinc._read_branch('p_secret'::regclass::oid);
\set VERBOSITY default
ROLLBACK;
RESET ROLE;
DROP FUNCTION p_peek();
SET ROLE p_reader;
-- a view the reader may read answers
SELECT mvinc._read_branch('p_agg'::regclass::oid);
-- mvinc.views lists every view (as pg_matviews does), but counts rows only
-- of those the reader may read
SELECT view, kind, pending_changes, storage_rows IS NOT NULL AS counted,
       reads_fresh IS NOT NULL AS reads_counted
  FROM mvinc.views WHERE view IN ('p_agg'::regclass, 'p_secret'::regclass) ORDER BY view::text;
-- the aggregates whose support functions were revoked still work
SELECT mvinc.agg_final('sum(integer)', mvinc.agg_merge('sum(integer)', st), NULL::bigint) AS s,
       mvinc.agg_final('count()', mvinc.agg_merge('count()', n), NULL::bigint) AS n
  FROM (SELECT x % 2, mvinc.agg_state('sum(integer)', x), mvinc.agg_state('count()')
          FROM generate_series(1, 10) x GROUP BY 1) q(k, st, n);
SELECT mvinc.approx_count_distinct(x) AS d FROM generate_series(1, 10) x;
RESET ROLE;

-- live path: changes the view has not consumed yet, read by the reader
-- who may not read the source
INSERT INTO p_src VALUES (100, 1, 1000);
SET ROLE p_reader;
SELECT count(*) FROM p_src;
SELECT mvinc.read_path('p_agg');
SELECT g, n, s, mx FROM p_agg ORDER BY g;
SELECT g, n FROM p_over_secret ORDER BY g;
RESET ROLE;

-- merged path: appended state rows beside the storage
SET mvinc.compact_fraction = 1000;
SELECT mode FROM mvinc.refresh('p_agg');
SELECT mode FROM mvinc.refresh('p_secret');
RESET mvinc.compact_fraction;
SELECT append_rows > 0 AS appended FROM mvinc.views WHERE view = 'p_agg'::regclass;
SET ROLE p_reader;
SELECT mvinc.read_path('p_agg');
SELECT mvinc._read_branch('p_agg'::regclass::oid);
SELECT g, n, s, mx FROM p_agg ORDER BY g;
SELECT g, n FROM p_over_secret ORDER BY g;
-- prepared statement and PL/pgSQL, across a change
PREPARE p_read AS SELECT sum(n) AS n, sum(s) AS s FROM p_agg;
EXECUTE p_read;
RESET ROLE;
INSERT INTO p_src VALUES (101, 2, 1);
SET ROLE p_reader;
EXECUTE p_read;
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT g, n FROM p_over_secret ORDER BY g LOOP
    RAISE NOTICE 'g % n %', r.g, r.n;
  END LOOP;
END $$;
DEALLOCATE p_read;
RESET ROLE;

-- the view owner who is not a superuser refreshes (the storage's generated
-- columns call a revoked function) and drops (event trigger functions too)
CREATE ROLE p_owner;
GRANT CREATE ON SCHEMA public TO p_owner;
SET ROLE p_owner;
CREATE TABLE p_own_src (id int PRIMARY KEY, g int, v int);
INSERT INTO p_own_src SELECT i, i % 2, i FROM generate_series(1, 10) i;
CREATE MATERIALIZED VIEW p_own WITH (mvinc.incremental = true) AS
  SELECT g, sum(v) AS s, max(v) AS mx, count(*) AS n FROM p_own_src GROUP BY g;
INSERT INTO p_own_src VALUES (11, 1, 11);
SELECT mode FROM mvinc.refresh('p_own');
DELETE FROM p_own_src WHERE id = 11;
SELECT mode FROM mvinc.refresh('p_own');
SELECT g, s, mx, n FROM p_own ORDER BY g;
SELECT mvinc.read_path('p_own');
-- the owner owns the storage, which refreshes write with mvinc's rights:
-- no code of the owner's may be attached to it (it would run with them)
RESET ROLE;
SELECT storage_name AS p_storage FROM mvinc.mv_view WHERE view = 'p_own'::regclass \gset
SET ROLE p_owner;
CREATE FUNCTION p_own_trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION p_try(cmd text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE cmd;
  RETURN 'allowed';
EXCEPTION WHEN insufficient_privilege THEN
  RETURN 'refused: ' || regexp_replace(SQLERRM, 'mv_[0-9]+', 'mv_N', 'g');
END $$;
SELECT p_try(format(c, :'p_storage')) FROM unnest(ARRAY[
  'CREATE TRIGGER p_t BEFORE INSERT ON mvinc.%I FOR EACH ROW EXECUTE FUNCTION p_own_trig()',
  'CREATE TRIGGER p_t BEFORE INSERT ON mvinc.%I_append FOR EACH ROW EXECUTE FUNCTION p_own_trig()',
  'CREATE RULE p_r AS ON INSERT TO mvinc.%I DO ALSO NOTIFY p_own',
  'CREATE INDEX ON mvinc.%I ((k1 + 0))',
  'CREATE STATISTICS p_st ON k1, _mvinc_count FROM mvinc.%I',
  'ALTER TABLE mvinc.%I ADD COLUMN extra int DEFAULT 0',
  'ALTER TABLE mvinc.%I OWNER TO p_reader',
  'ALTER TABLE mvinc.%I RENAME COLUMN k1 TO k9',
  'ALTER TABLE mvinc.%I RENAME TO p_moved',
  'ALTER INDEX mvinc.%I_key RENAME TO p_moved_key',
  'ALTER TABLE mvinc.%I SET SCHEMA public']) c;
-- nor a table of the owner's that writes of the storage would reach: a
-- child by inheritance (its triggers fire), a partitioned parent (its row
-- triggers are cloned onto a new partition)
CREATE TABLE p_like (LIKE p_own_src);
CREATE TABLE p_parted (LIKE p_own_src) PARTITION BY LIST (g);
SELECT p_try(format(c, :'p_storage')) FROM unnest(ARRAY[
  'CREATE TABLE p_kid () INHERITS (mvinc.%I)',
  'CREATE TABLE p_kid () INHERITS (p_like, mvinc.%I_append)',
  'ALTER TABLE p_like INHERIT mvinc.%I',
  'ALTER TABLE p_parted ATTACH PARTITION mvinc.%I DEFAULT']) c;
DROP TABLE p_like, p_parted;
DROP FUNCTION p_try(text);
DROP FUNCTION p_own_trig();
DROP MATERIALIZED VIEW p_own;
DROP TABLE p_own_src;
RESET ROLE;
SELECT count(*) AS forgotten_left FROM mvinc.mv_view v
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = v.view::oid);

DROP VIEW p_over_secret;
DROP TABLE p_src CASCADE;
REVOKE ALL ON SCHEMA public FROM p_owner;
DROP ROLE p_reader;
DROP ROLE p_owner;
