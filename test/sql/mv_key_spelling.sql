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
-- the key itself respelled (2 -> 2.00; deleted and inserted again as
-- 3.000 in one transaction): a version too, through the change stream
-- (pending, refreshed, and by the set-based rule after a TRUNCATE) and
-- through snapshot loads
CREATE TABLE ks_hk (n numeric PRIMARY KEY, v int);
INSERT INTO ks_hk VALUES (2, 1), (3, 1), (4, 1);
CREATE MATERIALIZED VIEW ks_hkh WITH (mvinc.history = true, mvinc.key = 'n') AS SELECT n, v FROM ks_hk;
CREATE FUNCTION ks_hkdiff() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT (n, v)::text FROM ks_hkh WHERE valid_to = 'infinity' EXCEPT ALL SELECT (n, v)::text FROM ks_hk)
    UNION ALL (SELECT (n, v)::text FROM ks_hk EXCEPT ALL SELECT (n, v)::text FROM ks_hkh WHERE valid_to = 'infinity')) x
$$;
UPDATE ks_hk SET n = 2.00 WHERE n = 2;
BEGIN;
DELETE FROM ks_hk WHERE n = 3;
INSERT INTO ks_hk VALUES (3.000, 1);
COMMIT;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ks_hkdiff() AS pending_differing, (SELECT count(*) FROM ks_hkh) AS versions;
REFRESH MATERIALIZED VIEW ks_hkh;
SELECT ks_hkdiff() AS refreshed_differing, (SELECT count(*) FROM ks_hkh) AS versions;
BEGIN;
TRUNCATE ks_hk;
INSERT INTO ks_hk VALUES (2.0, 1), (3.000, 1), (4.0, 1);
COMMIT;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ks_hkdiff() AS pending_differing, (SELECT count(*) FROM ks_hkh) AS versions;
REFRESH MATERIALIZED VIEW ks_hkh;
SELECT ks_hkdiff() AS refreshed_differing, (SELECT count(*) FROM ks_hkh) AS versions;
SELECT count(*) AS problems FROM mvinc.history_check('ks_hkh');
CREATE TABLE ks_day1 (n numeric, v int);
CREATE TABLE ks_day2 (n numeric, v int);
INSERT INTO ks_day1 VALUES (2, 1), (3.0, 5);
INSERT INTO ks_day2 VALUES (2.00, 1), (3.0, 5);
CREATE MATERIALIZED VIEW ks_hkl WITH (mvinc.history = true, mvinc.key = 'n') AS SELECT n, v FROM ks_hk WITH NO DATA;
SELECT * FROM mvinc.history_load('ks_hkl', snapshot => 'ks_day1', as_of => '2024-01-01');
SELECT * FROM mvinc.history_load('ks_hkl', snapshot => 'ks_day2', as_of => '2024-01-02');
-- and a late load: the set-based rule
SELECT * FROM mvinc.history_load('ks_hkl', snapshot => 'ks_day1', as_of => '2023-12-31');
SELECT n::text, v, valid_from, valid_to FROM ks_hkl ORDER BY n, valid_from;
SELECT count(*) AS problems FROM mvinc.history_check('ks_hkl');
DROP TABLE ks_src, ks_plan, ks_hk, ks_day1, ks_day2 CASCADE;
DROP FUNCTION ks_diff();
DROP FUNCTION ks_hdiff();
DROP FUNCTION ks_hkdiff();
