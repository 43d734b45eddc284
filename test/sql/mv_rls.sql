-- Row-level security on the source of an incremental view is refused
-- (issue 11, hole 4): the stored rows are computed without the source's
-- policies, so reads would depend on the path (the defining query applies
-- the reader's policies, the storage none), and a view whose owner's
-- policy hides rows would store them.  Refused at CREATE, and at ALTER
-- TABLE ... ENABLE / FORCE ROW LEVEL SECURITY of a source.
CREATE TABLE rls_src (id int PRIMARY KEY, owner name, v int);
INSERT INTO rls_src SELECT i, CASE WHEN i % 2 = 0 THEN 'alice' ELSE 'bob' END, i
  FROM generate_series(1, 10) i;
CREATE POLICY rls_own ON rls_src USING (owner = current_user);
ALTER TABLE rls_src ENABLE ROW LEVEL SECURITY;
\set VERBOSITY default

CREATE MATERIALIZED VIEW rls_v WITH (mvinc.incremental = true) AS
  SELECT owner, sum(v) AS s FROM rls_src GROUP BY owner;
CREATE MATERIALIZED VIEW rls_v WITH (mvinc.incremental = true) AS
  SELECT id, v FROM rls_src WITH NO DATA;
-- nothing was created or tracked
SELECT count(*) AS views FROM pg_class WHERE relname = 'rls_v';
SELECT count(*) AS tracked FROM mvinc.tracked WHERE relid = 'rls_src'::regclass;
-- a plain materialized view over it is PostgreSQL's business
CREATE MATERIALIZED VIEW rls_plain AS SELECT owner, sum(v) AS s FROM rls_src GROUP BY owner;
DROP MATERIALIZED VIEW rls_plain;

-- RLS enabled or forced once the view exists
ALTER TABLE rls_src DISABLE ROW LEVEL SECURITY;
CREATE MATERIALIZED VIEW rls_v WITH (mvinc.incremental = true) AS
  SELECT owner, sum(v) AS s FROM rls_src GROUP BY owner;
ALTER TABLE rls_src ENABLE ROW LEVEL SECURITY;
ALTER TABLE rls_src FORCE ROW LEVEL SECURITY;
ALTER TABLE rls_src ADD COLUMN w int, ENABLE ROW LEVEL SECURITY;
SELECT relrowsecurity, relforcerowsecurity,
       (SELECT count(*) FROM pg_attribute WHERE attrelid = c.oid AND attname = 'w') AS w
  FROM pg_class c WHERE oid = 'rls_src'::regclass;
-- turning it off stays allowed, and the view stays exact
ALTER TABLE rls_src NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
INSERT INTO rls_src VALUES (11, 'alice', 11);
SELECT mode FROM mvinc.refresh('rls_v');
SELECT owner, s FROM rls_v ORDER BY owner;
-- once the view is gone, the table may have RLS again
DROP MATERIALIZED VIEW rls_v;
ALTER TABLE rls_src ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SELECT mvinc.untrack('rls_src');
DROP TABLE rls_src;
