-- mvinc.verify_view: every change after a view's checkpoint is applied or
-- still in the change log (no rows: consistent).  A change removed from
-- the change log by hand before the view applied it is reported, with
-- the rows that differ; the check itself leaves view and checkpoint as
-- they were.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
CREATE TABLE vf_src (id int PRIMARY KEY, g int, v int, note text);
INSERT INTO vf_src SELECT i, i % 3, i, 'n' || i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW vf_proj WITH (mvinc.incremental = true) AS
  SELECT id, v, note FROM vf_src WHERE g <> 0;
CREATE MATERIALIZED VIEW vf_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, avg(v::float8) AS a FROM vf_src GROUP BY g;
SELECT * FROM mvinc.verify_view('vf_proj');
SELECT * FROM mvinc.verify_view('vf_agg');

-- pending changes (not refreshed yet) are in the change log: consistent
UPDATE vf_src SET v = v + 100 WHERE id IN (1, 2, 4);
DELETE FROM vf_src WHERE id = 5;
INSERT INTO vf_src VALUES (31, 1, 31, 'n31');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT checkpoint_lsn AS lsn_before FROM mvinc.mv_view WHERE view = 'vf_proj'::regclass \gset
SELECT * FROM mvinc.verify_view('vf_proj');
SELECT * FROM mvinc.verify_view('vf_agg');
-- the check refreshed only in a subtransaction it rolled back
SELECT checkpoint_lsn = :'lsn_before' AS unchanged, pending_changes
  FROM mvinc.views WHERE view = 'vf_proj'::regclass;
SELECT mode FROM mvinc.refresh('vf_proj');
SELECT mode FROM mvinc.refresh('vf_agg');
SELECT * FROM mvinc.verify_view('vf_proj');

-- a change lost from the change log before the views applied it
UPDATE vf_src SET v = -v WHERE id IN (7, 8);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT format('DELETE FROM %s WHERE id = 7', changelog::regclass) AS lose
  FROM mvinc.tracked WHERE relid = 'vf_src'::regclass \gset
:lose;
SELECT * FROM mvinc.verify_view('vf_proj');
SELECT * FROM mvinc.verify_view('vf_agg');

-- not for PUBLIC (like amcheck), and only for incremental views
CREATE ROLE vf_user;
SET ROLE vf_user;
SELECT * FROM mvinc.verify_view('vf_proj');
RESET ROLE;
DROP ROLE vf_user;
CREATE MATERIALIZED VIEW vf_plain AS SELECT 1 AS x;
SELECT * FROM mvinc.verify_view('vf_plain');
-- in READ COMMITTED only, as a refresh
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM mvinc.verify_view('vf_proj');
ROLLBACK;

DROP MATERIALIZED VIEW vf_plain;
DROP TABLE vf_src CASCADE;
