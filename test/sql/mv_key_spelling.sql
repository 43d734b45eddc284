-- Group keys whose equal values are spelled differently (numeric 1.0 and
-- 1.00, float -0 and 0, interval '1 mon' and '30 days').  A view whose
-- aggregates all retract kept a group's stored key when rows left it: once
-- no row had the stored spelling, the view showed a value the query never
-- gives (refreshed and hybrid reads alike; 1.0 - 1 day and 1 mon - 1 day
-- are different days).  Such views compute touched groups from the source.
CREATE EXTENSION IF NOT EXISTS mvinc;
CREATE TABLE ks_src (id int PRIMARY KEY, n numeric, f float8, i interval, v numeric);
INSERT INTO ks_src VALUES (1, 1.0, '-0', '1 mon', 10), (2, 7, 7, '1 day', 1),
  (3, 2.0, 2, '24 hours', 5), (4, 2.00, 2, '1 day', 6);
CREATE MATERIALIZED VIEW ks_nf WITH (mvinc.incremental = true) AS
  SELECT n, f, count(*) AS c, sum(v) AS sv FROM ks_src GROUP BY n, f;
CREATE MATERIALIZED VIEW ks_i WITH (mvinc.incremental = true) AS
  SELECT i, count(*) AS c FROM ks_src GROUP BY i;
-- the views against their queries, compared as text (spellings count)
CREATE FUNCTION ks_diff() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'ks_nf', count(*) FROM (
    (SELECT (n, f, c, sv)::text FROM ks_nf EXCEPT ALL
     SELECT (n, f, count(*), sum(v))::text FROM ks_src GROUP BY n, f)
    UNION ALL (SELECT (n, f, count(*), sum(v))::text FROM ks_src GROUP BY n, f EXCEPT ALL
     SELECT (n, f, c, sv)::text FROM ks_nf)) x
  UNION ALL SELECT 'ks_i', count(*) FROM (
    (SELECT (i, c)::text FROM ks_i EXCEPT ALL SELECT (i, count(*))::text FROM ks_src GROUP BY i)
    UNION ALL (SELECT (i, count(*))::text FROM ks_src GROUP BY i EXCEPT ALL SELECT (i, c)::text FROM ks_i)) x
$$;
-- (compared only once every group has one spelling: which one a group of
-- several shows is arbitrary, in PostgreSQL's GROUP BY too)
-- no row keeps 1.0 / -0, nor 2.0, nor '1 mon', nor '24 hours'
UPDATE ks_src SET n = 1.00, f = '0', i = '30 days' WHERE id = 1;
DELETE FROM ks_src WHERE id = 3;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('ks_nf') AS nf_path, mvinc.read_path('ks_i') AS i_path;
SELECT * FROM ks_diff();
SELECT n, f, c, sv FROM ks_nf ORDER BY n;
SELECT i, c FROM ks_i ORDER BY i;
REFRESH MATERIALIZED VIEW ks_nf;
REFRESH MATERIALIZED VIEW ks_i;
SELECT * FROM ks_diff();
SELECT n, f, c, sv FROM ks_nf ORDER BY n;
SELECT i, c FROM ks_i ORDER BY i;
SELECT count(*) AS differences FROM mvinc.verify_view('ks_nf');
DROP TABLE ks_src CASCADE;
DROP FUNCTION ks_diff();
