-- Change capture: refusals and their messages, consumers and retention,
-- and the textual output of plugin "mvinc".
\set VERBOSITY default

CREATE TEMP TABLE cap_temp (id int PRIMARY KEY);
SELECT mvinc.track('cap_temp');
CREATE UNLOGGED TABLE cap_unlogged (id int PRIMARY KEY);
SELECT mvinc.track('cap_unlogged');
CREATE TABLE cap_parted (id int PRIMARY KEY) PARTITION BY RANGE (id);
SELECT mvinc.track('cap_parted');
CREATE VIEW cap_view AS SELECT 1 AS x;
SELECT mvinc.track('cap_view');
SELECT mvinc.track('pg_class');
SELECT mvinc.track('mvinc.tracked');
CREATE TABLE cap_nokey (a int, b text);
SELECT mvinc.track('cap_nokey');
ALTER TABLE cap_nokey REPLICA IDENTITY NOTHING;
SELECT mvinc.track('cap_nokey');
CREATE TABLE cap_reserved (id int PRIMARY KEY, _mvinc_x int);
SELECT mvinc.track('cap_reserved');
-- only heap and colfile tables (colfile writers log row messages): not
-- another access method, even one with heap's handler
CREATE ACCESS METHOD cap_other TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE cap_otheram (id int PRIMARY KEY) USING cap_other;
SELECT mvinc.track('cap_otheram');
DROP TABLE cap_otheram;
DROP ACCESS METHOD cap_other;
SELECT mvinc.track(NULL) IS NULL AS null_is_null;
SELECT mvinc.wait_for_capture(timeout => '-1 s');
-- a position that will not be reached soon times out (once a table is
-- tracked: with none, nothing is waited for)
CREATE TABLE cap_wait (id int PRIMARY KEY);
SELECT mvinc.track('cap_wait') IS NOT NULL AS tracked;
\set VERBOSITY terse
SELECT mvinc.wait_for_capture('FFFFFFFF/0', '50 ms');
\set VERBOSITY default
-- the wait runs in the leader of a parallel query (no subtransaction, no
-- write); its timeout is an error of the query, not of a subtransaction
CREATE TABLE cap_par AS SELECT g AS id FROM generate_series(1, 1000) g;
ANALYZE cap_par;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured, n FROM (SELECT count(*) AS n FROM cap_par) s;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured, n FROM (SELECT count(*) AS n FROM cap_par) s;
\set VERBOSITY terse
SELECT mvinc.wait_for_capture('FFFFFFFF/0', '50 ms'), n FROM (SELECT count(*) AS n FROM cap_par) s;
\set VERBOSITY default
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE cap_par, cap_wait;
CREATE ROLE cap_other;
GRANT USAGE ON SCHEMA mvinc TO cap_other;
SET ROLE cap_other;
SELECT mvinc.track('cap_nokey');
RESET ROLE;
REVOKE USAGE ON SCHEMA mvinc FROM cap_other;
DROP ROLE cap_other;

-- a table with a replica identity index (no primary key) is accepted
CREATE TABLE cap_ri (a int NOT NULL, b text);
CREATE UNIQUE INDEX cap_ri_a ON cap_ri (a);
ALTER TABLE cap_ri REPLICA IDENTITY USING INDEX cap_ri_a;
SELECT mvinc.track('cap_ri') IS NOT NULL AS tracked;
INSERT INTO cap_ri VALUES (1, 'x');
UPDATE cap_ri SET b = 'y';
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.track('cap_ri') AS cl \gset
SELECT _mvinc_op AS op, _mvinc_image AS img, a, b FROM :cl ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n';

-- the capture view
SELECT slot_name = 'mvinc_' || (SELECT oid FROM pg_database WHERE datname = current_database()) AS slot_named,
       confirmed_lsn IS NOT NULL AS has_lsn, lag_bytes >= 0 AS lag_ok,
       worker_pid = (SELECT pid FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'
                      AND datname = current_database()) AS pid_ok,
       last_error
  FROM mvinc.capture;

-- Consumers and retention.  C API exposed through SQL only in tests:
CREATE FUNCTION pg_temp.set_consumer(regclass, text, pg_lsn) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO mvinc.consumers VALUES ($1, $2, $3)
    ON CONFLICT (relid, consumer) DO UPDATE SET needed_lsn = EXCLUDED.needed_lsn $$;
INSERT INTO cap_ri SELECT g, 'r' FROM generate_series(2, 100) g;
SELECT mvinc.wait_for_capture() AS upto \gset
INSERT INTO cap_ri VALUES (101, 'kept');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT pg_temp.set_consumer('cap_ri', 'view a', :'upto');
SELECT mvinc.untrack('cap_ri');
-- wait for the worker's retention pass (mvinc.retention_interval)
ALTER SYSTEM SET mvinc.retention_interval = '100ms';
SELECT pg_reload_conf();
DO $$ BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT retained_from FROM mvinc.tracked WHERE relid = 'cap_ri'::regclass) > '0/0';
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT retained_from = :'upto' AS bound_recorded FROM mvinc.tracked WHERE relid = 'cap_ri'::regclass;
SELECT count(*) AS left_rows, min(a) AS first_left FROM :cl;
DELETE FROM mvinc.consumers WHERE relid = 'cap_ri'::regclass;
ALTER SYSTEM RESET mvinc.retention_interval;
SELECT pg_reload_conf();
SELECT mvinc.untrack('cap_ri');

-- the output plugin's textual form, for debugging
SET output_plugin_libraries = 'mvinc';
CREATE TABLE cap_text (id int PRIMARY KEY, v text);
SELECT mvinc.track('cap_text') IS NOT NULL AS tracked;
SELECT 'init' FROM pg_create_logical_replication_slot('cap_text_slot', 'mvinc');
INSERT INTO cap_text VALUES (1, 'it''s');
UPDATE cap_text SET id = 2;
INSERT INTO cap_nokey VALUES (1, 'untracked');
TRUNCATE cap_text;
SELECT mvinc.wait_for_capture() IS NOT NULL AS flushed;   -- flushes the WAL
SELECT regexp_replace(regexp_replace(data, '\d+/[0-9A-F]+', 'LSN'), '(BEGIN|COMMIT) \d+', '\1 XID')
  FROM pg_logical_slot_get_changes('cap_text_slot', NULL, NULL);
INSERT INTO cap_nokey VALUES (2, 'untracked');
SELECT mvinc.wait_for_capture() IS NOT NULL AS flushed;
SELECT regexp_replace(regexp_replace(data, '\d+/[0-9A-F]+', 'LSN'), '(BEGIN|COMMIT) \d+', '\1 XID')
  FROM pg_logical_slot_get_changes('cap_text_slot', NULL, NULL, 'include-untracked', 'on');
SELECT pg_drop_replication_slot('cap_text_slot');
SELECT mvinc.untrack('cap_text');

-- leave nothing tracked behind
DROP TABLE cap_parted, cap_nokey, cap_reserved, cap_ri, cap_text;
