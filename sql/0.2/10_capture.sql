
-- mvinc install script, part 10: change capture.
-- Tracked sources, their consumers, the capture worker's progress, the SQL
-- surface, and the start of this database's capture worker.

-- One row per tracked source.  A user catalog table, so that the output
-- plugin reads it under the historic snapshot of the transaction being
-- decoded: a change is captured iff its transaction's catalog snapshot
-- already sees the row (see src/capture/capture_plugin.c).
CREATE TABLE mvinc.tracked (
    relid         oid PRIMARY KEY,        -- the source table
    changelog     oid NOT NULL,           -- its change log, mvinc.changelog_<relid>
    full_old_rows boolean NOT NULL,
    retained_from pg_lsn NOT NULL DEFAULT '0/0',  -- rows with lsn <= this were removed
    -- tracked by mvinc.track(): kept when its last view is dropped
    requested     boolean NOT NULL DEFAULT false
) WITH (user_catalog_table = true);

-- Who still needs which change log rows (MvincSetConsumer).
CREATE TABLE mvinc.consumers (
    relid      oid NOT NULL REFERENCES mvinc.tracked (relid) ON DELETE CASCADE,
    consumer   text NOT NULL,
    needed_lsn pg_lsn NOT NULL,
    PRIMARY KEY (relid, consumer)
);

-- The last WAL position whose transactions are all in the change logs;
-- written in the same transaction as the rows (exactly once across crashes).
CREATE TABLE mvinc.capture_progress (
    applied_lsn pg_lsn NOT NULL
);
INSERT INTO mvinc.capture_progress VALUES ('0/0');

CREATE FUNCTION mvinc.track(rel regclass, full_old_rows boolean DEFAULT false)
    RETURNS regclass
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_track';

CREATE FUNCTION mvinc.untrack(rel regclass) RETURNS void
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_untrack';

CREATE FUNCTION mvinc.wait_for_capture(lsn pg_lsn DEFAULT pg_catalog.pg_current_wal_insert_lsn(),
                                       timeout interval DEFAULT '10 s')
    RETURNS pg_lsn
    LANGUAGE c STRICT PARALLEL RESTRICTED  -- the leader may wait; workers may not
    AS 'MODULE_PATHNAME', 'mvinc_wait_for_capture';

CREATE FUNCTION mvinc._capture_status(
        OUT slot_name name, OUT confirmed_lsn pg_lsn, OUT captured_lsn pg_lsn,
        OUT lag_bytes numeric, OUT worker_pid integer,
        OUT last_error text, OUT last_error_time timestamptz)
    RETURNS record
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'mvinc_capture_status';

CREATE VIEW mvinc.capture AS
    SELECT s.slot_name, s.confirmed_lsn, s.captured_lsn, s.lag_bytes,
           s.worker_pid, s.last_error, s.last_error_time
      FROM mvinc._capture_status() s;
-- Neither the view nor its function is PUBLIC (slot, lag, last error): a
-- role allowed to watch capture needs SELECT on mvinc.capture and EXECUTE
-- on mvinc._capture_status() (functions run with the caller's rights).
REVOKE ALL ON FUNCTION mvinc._capture_status() FROM PUBLIC;


-- Writers of tracked colfile tables log their rows as transactional logical
-- messages with prefix 'mvinc.row', which capture writes into change logs:
-- a role that may emit logical messages in this database could forge rows
-- of any tracked colfile table, so that is no longer everybody's right.
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, bytea) FROM PUBLIC;

CREATE FUNCTION mvinc._start_worker() RETURNS void
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_start_worker';
REVOKE ALL ON FUNCTION mvinc._start_worker() FROM PUBLIC;

-- The capture worker runs while tables are tracked (it starts with the first,
-- and stops mvinc.capture_idle_stop after the last).  Start it now if a
-- worker slot is free: it waits for this transaction, creates the slot and
-- keeps it for that long, so that a view created right after, even in a
-- transaction that has already written, is captured from its start.
SELECT mvinc._start_worker();
