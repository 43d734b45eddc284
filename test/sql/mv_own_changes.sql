-- A refresh inside a transaction that changed the source reads those
-- changes from the source and records the transaction as seen: later
-- changes of the source in that transaction would be lost.  A later write
-- (direct, routed through a partitioned parent, by a cached plan) marks
-- the view stale; one that was missed all the same is refused at COMMIT
-- and at PREPARE TRANSACTION; with track_counts off, where changes cannot
-- be counted, such a refresh leaves the view stale.
CREATE TABLE oc_par (id int, g int, v int) PARTITION BY RANGE (id);
CREATE TABLE oc_p1 PARTITION OF oc_par FOR VALUES FROM (0) TO (1000);
ALTER TABLE oc_p1 ADD PRIMARY KEY (id);
INSERT INTO oc_par SELECT i, i % 5, i FROM generate_series(1, 100) i;
CREATE MATERIALIZED VIEW oc_v WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM oc_p1 GROUP BY g;
CREATE FUNCTION oc_differences() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT * FROM oc_v EXCEPT ALL SELECT g, count(*), sum(v) FROM oc_p1 GROUP BY g)
    UNION ALL
    (SELECT g, count(*), sum(v) FROM oc_p1 GROUP BY g EXCEPT ALL SELECT * FROM oc_v)) d $$;

-- a later change routed through the parent marks the view stale (it was
-- not seen: refused at COMMIT, and let through by PREPARE TRANSACTION, so
-- that COMMIT PREPARED lost it for good)
BEGIN;
INSERT INTO oc_p1 VALUES (201, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
INSERT INTO oc_par VALUES (202, 1, 1000);
PREPARE TRANSACTION 'oc_routed';
COMMIT PREPARED 'oc_routed';
SELECT mvinc.read_path('oc_v');
SELECT oc_differences();
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();
SELECT problem, detail FROM mvinc.verify_view('oc_v');
BEGIN;
INSERT INTO oc_p1 VALUES (211, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
UPDATE oc_par SET v = v + 1 WHERE id = 211;
COMMIT;
SELECT mvinc.read_path('oc_v');
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();

-- a cached plan is not planned again: its write is noticed when it starts
SET plan_cache_mode = force_generic_plan;
PREPARE oc_ins(int) AS INSERT INTO oc_p1 VALUES ($1, 3, $1);
EXECUTE oc_ins(221);
BEGIN;
INSERT INTO oc_p1 VALUES (222, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
EXECUTE oc_ins(223);
COMMIT;
RESET plan_cache_mode;
DEALLOCATE oc_ins;
SELECT mvinc.read_path('oc_v');
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();

-- the write that marked the view stale was rolled back with its savepoint
-- (and the mark with it): a later write marks it again.  (The first write
-- was taken for noted for good: the later one was neither marked nor
-- refused, and the view kept missing it, fresh.)
BEGIN;
INSERT INTO oc_p1 VALUES (241, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
SAVEPOINT oc_s;
INSERT INTO oc_p1 VALUES (242, 1, 1000);
ROLLBACK TO oc_s;
INSERT INTO oc_p1 VALUES (243, 1, 2000);
SELECT oc_differences();
COMMIT;
SELECT mvinc.read_path('oc_v');
SELECT oc_differences();
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();
SELECT problem, detail FROM mvinc.verify_view('oc_v');
-- marks rolled back twice, the later write routed through the parent
BEGIN;
INSERT INTO oc_p1 VALUES (251, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
SAVEPOINT oc_s;
INSERT INTO oc_p1 VALUES (252, 1, 1000);
ROLLBACK TO oc_s;
RELEASE oc_s;
SAVEPOINT oc_t;
INSERT INTO oc_par VALUES (253, 1, 3000);
ROLLBACK TO oc_t;
INSERT INTO oc_par VALUES (254, 1, 4000);
COMMIT;
SELECT mvinc.read_path('oc_v');
SELECT oc_differences();
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();

-- a refresh after the last change prepares and commits
BEGIN;
INSERT INTO oc_p1 VALUES (231, 2, 5);
INSERT INTO oc_par VALUES (232, 1, 1000);
REFRESH MATERIALIZED VIEW oc_v;
PREPARE TRANSACTION 'oc_kept';
COMMIT PREPARED 'oc_kept';
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT oc_differences();
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();
SELECT problem, detail FROM mvinc.verify_view('oc_v');

-- track_counts off: the refresh reads the transaction's own insert, and
-- the next refresh must not apply it again
SET track_counts = off;
BEGIN;
INSERT INTO oc_p1 VALUES (301, 4, 100000);
SELECT mode FROM mvinc.refresh('oc_v', full => true);
SELECT oc_differences();
INSERT INTO oc_par VALUES (302, 3, 7);   -- routed, not counted
COMMIT;
SELECT mvinc.read_path('oc_v');
SELECT oc_differences();
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('oc_v');
SELECT oc_differences();
SELECT problem, detail FROM mvinc.verify_view('oc_v');
RESET track_counts;

DROP MATERIALIZED VIEW oc_v;
DROP FUNCTION oc_differences();
DROP TABLE oc_par;
