-- colfile: inserts, updates, deletes and sequential scans are counted in
-- the cumulative statistics as heap counts them (autovacuum and
-- autoanalyze decide from these counters)
CREATE TABLE ps (id int PRIMARY KEY, v int) USING colfile;
INSERT INTO ps SELECT g, g FROM generate_series(1, 10) g;
INSERT INTO ps VALUES (1, 0), (11, 11) ON CONFLICT DO NOTHING;
COPY ps FROM STDIN;
12	12
\.
UPDATE ps SET v = v + 1 WHERE id <= 3;
DELETE FROM ps WHERE id > 9;
BEGIN;
INSERT INTO ps VALUES (20, 20);
ROLLBACK;
SELECT count(*) FROM ps;
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins, n_tup_upd, n_tup_del, n_live_tup, n_dead_tup,
       seq_scan > 0 AS seq_scanned, seq_tup_read >= 9 AS rows_read
FROM pg_stat_user_tables WHERE relname = 'ps';
DROP TABLE ps;
