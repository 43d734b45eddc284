-- A hybrid read's delta of inserts is kept in the backend and reused by a
-- later statement whose snapshot sees the same transactions' changes past
-- the same checkpoint (mv_deltacache.c); any other change makes a new one.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

\i include/mv_diff.sql

-- the delta lines of EXPLAIN ANALYZE of a whole read of view v
CREATE FUNCTION kept_delta(v regclass) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM %s', v) LOOP
    IF l ~ '^\s*(Path|Delta)' THEN RETURN NEXT btrim(l); END IF;
  END LOOP;
END $$;

CREATE TABLE hk (id serial PRIMARY KEY, g int, x numeric);
INSERT INTO hk (g, x) SELECT i % 10, i FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW hk_sums WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS sx FROM hk GROUP BY g;

INSERT INTO hk (g, x) VALUES (1, 1000), (11, 11);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
-- computed, then kept (each statement its own transaction and snapshot)
SELECT kept_delta('hk_sums');
SELECT kept_delta('hk_sums');
SELECT count(*) AS kept_deltas FROM pg_backend_memory_contexts WHERE name = 'mvinc kept delta';
SELECT mv_diff('hk_sums');
SELECT * FROM hk_sums WHERE g IN (1, 11) ORDER BY g;
-- a rolled-back insert leaves the same transactions: still kept
BEGIN;
INSERT INTO hk (g, x) VALUES (1, 5);
ROLLBACK;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT mv_diff('hk_sums');
-- another committed insert: a new delta, with it
INSERT INTO hk (g, x) VALUES (1, 7), (12, 12);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT * FROM hk_sums WHERE g IN (1, 12) ORDER BY g;
SELECT kept_delta('hk_sums');
SELECT mv_diff('hk_sums');
-- a REPEATABLE READ transaction whose snapshot sees the same transactions
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM hk_sums;
SELECT kept_delta('hk_sums');
COMMIT;
-- a refresh moves the checkpoint: nothing waits (the kept delta is
-- forgotten), then a new delta
SELECT mode FROM mvinc.refresh('hk_sums');
SELECT kept_delta('hk_sums');
SELECT count(*) AS kept_deltas FROM pg_backend_memory_contexts WHERE name = 'mvinc kept delta';
INSERT INTO hk (g, x) VALUES (2, 2);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT kept_delta('hk_sums');
SELECT mv_diff('hk_sums');
-- updates and deletes: the delta reads the storage and source too, never kept
UPDATE hk SET x = x + 1 WHERE id = 3;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT kept_delta('hk_sums');
SELECT mv_diff('hk_sums');
SELECT mode FROM mvinc.refresh('hk_sums');
-- a view dropped and made again under the same name: its own delta
INSERT INTO hk (g, x) VALUES (3, 3);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT count(*) AS kept_deltas FROM pg_backend_memory_contexts WHERE name = 'mvinc kept delta';
DROP MATERIALIZED VIEW hk_sums;
SELECT count(*) AS kept_deltas FROM pg_backend_memory_contexts WHERE name = 'mvinc kept delta';
CREATE MATERIALIZED VIEW hk_sums WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) + 1 AS sx FROM hk GROUP BY g;
INSERT INTO hk (g, x) VALUES (3, 4);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT kept_delta('hk_sums');
SELECT mv_diff('hk_sums');
-- key conditions compute their own (the kept one is of all groups)
SELECT * FROM hk_sums WHERE g = 3;
-- turned off: computed every time
SELECT kept_delta('hk_sums');
SET mvinc.keep_hybrid_delta = off;
SELECT kept_delta('hk_sums');
SELECT kept_delta('hk_sums');
RESET mvinc.keep_hybrid_delta;
SELECT kept_delta('hk_sums');
SELECT kept_delta('hk_sums');

DROP MATERIALIZED VIEW hk_sums;
DROP TABLE hk;
DROP FUNCTION kept_delta(regclass);
DROP FUNCTION mv_diff(regclass);
