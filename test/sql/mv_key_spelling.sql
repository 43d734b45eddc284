-- Group keys whose equal values are spelled differently (numeric 1.0 and
-- 1.00, float -0 and 0, interval '1 mon' and '30 days').  A view whose
-- aggregates all retract kept a group's stored key when rows left it: once
-- no row had the stored spelling, the view showed a value the query never
-- gives (refreshed and hybrid reads alike; 1.0 - 1 day and 1 mon - 1 day
-- are different days).  Such views compute touched groups from the source.
-- History views made no version for such a change (below).
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
-- a history view: a change from one spelling to another is a version, so
-- the current versions equal the source as text, read pending and refreshed
CREATE TABLE ks_plan (k int PRIMARY KEY, period interval, amount jsonb, f float8);
INSERT INTO ks_plan VALUES (1, '1 mon', '{"n": 1}', 0), (2, '1 day', '{"n": 2}', 1);
CREATE MATERIALIZED VIEW ks_hist WITH (mvinc.history = true, mvinc.key = 'k') AS
  SELECT k, period, amount, f FROM ks_plan;
UPDATE ks_plan SET period = '30 days', amount = '{"n": 1.00}', f = '-0' WHERE k = 1;
UPDATE ks_plan SET period = '24 hours' WHERE k = 2;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
CREATE FUNCTION ks_hdiff() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT (k, period, amount, f)::text FROM ks_hist WHERE valid_to = 'infinity'
     EXCEPT ALL SELECT (k, period, amount, f)::text FROM ks_plan)
    UNION ALL (SELECT (k, period, amount, f)::text FROM ks_plan
     EXCEPT ALL SELECT (k, period, amount, f)::text FROM ks_hist WHERE valid_to = 'infinity')) x
$$;
SELECT ks_hdiff() AS pending_differing, (SELECT count(*) FROM ks_hist) AS versions;
REFRESH MATERIALIZED VIEW ks_hist;
SELECT ks_hdiff() AS refreshed_differing, (SELECT count(*) FROM ks_hist) AS versions;
-- the same value again: no version
UPDATE ks_plan SET period = '30 days' WHERE k = 1;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
REFRESH MATERIALIZED VIEW ks_hist;
SELECT ks_hdiff() AS differing, (SELECT count(*) FROM ks_hist) AS versions;
DROP TABLE ks_src, ks_plan CASCADE;
DROP FUNCTION ks_diff();
DROP FUNCTION ks_hdiff();
