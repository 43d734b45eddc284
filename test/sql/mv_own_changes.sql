-- A refresh inside a transaction that changed the source reads those
-- changes from the source and records the transaction as seen: later
-- changes of the source in that transaction would be lost.  Direct writes
-- mark the view stale; any other later change (routed through a
-- partitioned parent, made by a trigger) is refused at COMMIT and at
-- PREPARE TRANSACTION alike; with track_counts off, where changes cannot
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

-- a later change routed through the parent: refused at COMMIT
BEGIN;
INSERT INTO oc_p1 VALUES (201, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
INSERT INTO oc_par VALUES (202, 1, 1000);
COMMIT;
-- and at PREPARE TRANSACTION (its changes would be captured at COMMIT PREPARED)
BEGIN;
INSERT INTO oc_p1 VALUES (201, 2, 5);
REFRESH MATERIALIZED VIEW oc_v;
INSERT INTO oc_par VALUES (202, 1, 1000);
PREPARE TRANSACTION 'oc_lost';
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'oc_lost';
SELECT count(*) FROM oc_p1 WHERE id > 200;
-- a refresh after the last change prepares and commits
BEGIN;
INSERT INTO oc_p1 VALUES (201, 2, 5);
INSERT INTO oc_par VALUES (202, 1, 1000);
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
