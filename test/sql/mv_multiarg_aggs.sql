-- Aggregates of two arguments (corr, regr_*, covar_*): their states take
-- both arguments, at CREATE, in refreshes of every kind and in reads of
-- every path; each answer is compared with the defining query's.
CREATE TABLE ma_src (id int PRIMARY KEY, k int, x float8, y float8, b bool);
INSERT INTO ma_src SELECT i, i % 4, i, (i * i) % 17, i % 3 = 0 FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW ma_v WITH (mvinc.incremental = true) AS
  SELECT k, corr(y, x) AS c, regr_slope(y, x) AS slope, regr_intercept(y, x) AS icpt,
         covar_pop(y, x) AS cp, covar_samp(y, x) FILTER (WHERE b) AS cs, regr_count(y, x) AS rc,
         count(*) AS n
    FROM ma_src GROUP BY k;
CREATE MATERIALIZED VIEW ma_all WITH (mvinc.incremental = true) AS
  SELECT regr_r2(y, x) AS r2, regr_sxy(y, x) AS sxy, count(*) AS n FROM ma_src;
-- rows of the view and of its query that differ (floats rounded: states
-- combined in another order may differ in the last digits)
CREATE FUNCTION ma_diff() RETURNS bigint LANGUAGE sql AS $$
  WITH v AS (SELECT k, round(c::numeric, 9), round(slope::numeric, 9), round(icpt::numeric, 9),
                    round(cp::numeric, 9), round(cs::numeric, 9), rc, n FROM ma_v),
       q AS (SELECT k, round(corr(y, x)::numeric, 9), round(regr_slope(y, x)::numeric, 9),
                    round(regr_intercept(y, x)::numeric, 9), round(covar_pop(y, x)::numeric, 9),
                    round((covar_samp(y, x) FILTER (WHERE b))::numeric, 9), regr_count(y, x), count(*)
               FROM ma_src GROUP BY k),
       va AS (SELECT round(r2::numeric, 9), round(sxy::numeric, 9), n FROM ma_all),
       qa AS (SELECT round(regr_r2(y, x)::numeric, 9), round(regr_sxy(y, x)::numeric, 9), count(*)
                FROM ma_src)
  SELECT (SELECT count(*) FROM ((TABLE v EXCEPT ALL TABLE q) UNION ALL (TABLE q EXCEPT ALL TABLE v)) d)
       + (SELECT count(*) FROM ((TABLE va EXCEPT ALL TABLE qa) UNION ALL (TABLE qa EXCEPT ALL TABLE va)) d) $$;
SELECT ma_diff() AS differences;
-- inserts: read hybrid, then an incremental refresh
INSERT INTO ma_src SELECT i, i % 5, i * 0.5, i % 7, i % 2 = 0 FROM generate_series(201, 260) i;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('ma_v') AS path;
SELECT ma_diff() AS differences;
SELECT mode FROM mvinc.refresh('ma_v');
SELECT mode FROM mvinc.refresh('ma_all');
SELECT ma_diff() AS differences;
-- updates and deletes: groups recomputed
UPDATE ma_src SET y = y + 3, b = NOT b WHERE id % 9 = 0;
DELETE FROM ma_src WHERE id % 11 = 0;
UPDATE ma_src SET x = NULL WHERE id = 5;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('ma_v') AS path_v, mvinc.read_path('ma_all') AS path_all;
SELECT ma_diff() AS differences;
SELECT mode FROM mvinc.refresh('ma_v');
SELECT mode FROM mvinc.refresh('ma_all');
SELECT ma_diff() AS differences;
SELECT * FROM mvinc.verify_view('ma_v');
SELECT * FROM mvinc.verify_view('ma_all');
DROP TABLE ma_src CASCADE;
DROP FUNCTION ma_diff();
