\echo Use "CREATE EXTENSION mvinc" to load this file. \quit

-- mvinc install script, part 00: the server set-up check.
-- The extension schema is "mvinc" (see mvinc.control); every object here is
-- created in it and referenced schema-qualified, so search_path cannot
-- redirect the extension's own calls.

CREATE FUNCTION mvinc._check_setup() RETURNS void
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_check_setup';

SELECT mvinc._check_setup();

-- The extension's own tables are heap whatever the session's default table
-- access method is (CREATE EXTENSION scopes this SET LOCAL to the script).
SET LOCAL default_table_access_method = heap;

-- Users reach mvinc's views and functions through the schema; each object
-- grants or revokes what it needs (internal functions, change logs and view
-- storage stay closed).
GRANT USAGE ON SCHEMA mvinc TO PUBLIC;
REVOKE ALL ON FUNCTION mvinc._check_setup() FROM PUBLIC;

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
    retained_from pg_lsn NOT NULL DEFAULT '0/0'  -- rows with lsn <= this were removed
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

CREATE FUNCTION mvinc._start_worker() RETURNS void
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_start_worker';
REVOKE ALL ON FUNCTION mvinc._start_worker() FROM PUBLIC;

-- Writers of tracked colfile tables log their rows as transactional logical
-- messages with prefix 'mvinc.row', which capture writes into change logs:
-- a role that may emit logical messages in this database could forge rows
-- of any tracked colfile table, so that is no longer everybody's right.
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, bytea) FROM PUBLIC;

-- The worker waits for this transaction to commit before it creates the slot.
SELECT mvinc._start_worker();

-- mvinc install script, part 20: aggregate states (src/mv/aggstate*.c).
-- Any aggregate that supports partial aggregation kept as a mergeable
-- state (bytea), driven by its own pg_aggregate entry; see
-- docs/internals.md, "Aggregate states".

-- Support functions of the aggregates below (not for direct use).
CREATE FUNCTION mvinc._agg_state_trans(internal, regprocedure, VARIADIC "any")
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_trans';
CREATE FUNCTION mvinc._agg_state_trans(internal, regprocedure)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_trans';
CREATE FUNCTION mvinc._agg_merge_trans(internal, regprocedure, bytea)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_merge_trans';
CREATE FUNCTION mvinc._agg_merge_trans(internal, regprocedure, bytea, anyelement)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_merge_trans';
CREATE FUNCTION mvinc._agg_apply_trans(internal, regprocedure, bytea, integer, VARIADIC "any")
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_apply_trans';
CREATE FUNCTION mvinc._agg_apply_trans(internal, regprocedure, bytea, integer)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_apply_trans';
CREATE FUNCTION mvinc._agg_state_final(internal)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_final';
CREATE FUNCTION mvinc._agg_state_combine(internal, internal)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_combine';
CREATE FUNCTION mvinc._agg_state_serialize(internal)
    RETURNS bytea LANGUAGE c STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_serialize';
CREATE FUNCTION mvinc._agg_state_deserialize(bytea, internal)
    RETURNS internal LANGUAGE c STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_state_deserialize';

-- Only the aggregates below call them, and an aggregate's support
-- functions are checked against the aggregate's owner, not the caller.
REVOKE ALL ON FUNCTION
    mvinc._agg_state_trans(internal, regprocedure, VARIADIC "any"),
    mvinc._agg_state_trans(internal, regprocedure),
    mvinc._agg_merge_trans(internal, regprocedure, bytea),
    mvinc._agg_merge_trans(internal, regprocedure, bytea, anyelement),
    mvinc._agg_apply_trans(internal, regprocedure, bytea, integer, VARIADIC "any"),
    mvinc._agg_apply_trans(internal, regprocedure, bytea, integer),
    mvinc._agg_state_final(internal),
    mvinc._agg_state_combine(internal, internal),
    mvinc._agg_state_serialize(internal),
    mvinc._agg_state_deserialize(bytea, internal)
  FROM PUBLIC;

-- The state of aggfn over the rows: mvinc.agg_state('sum(integer)', x).
CREATE AGGREGATE mvinc.agg_state(aggfn regprocedure, VARIADIC "any") (
    SFUNC = mvinc._agg_state_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);
-- The same for aggregates without arguments: mvinc.agg_state('count()').
CREATE AGGREGATE mvinc.agg_state(aggfn regprocedure) (
    SFUNC = mvinc._agg_state_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);

-- States merged with aggfn's combine function.
CREATE AGGREGATE mvinc.agg_merge(aggfn regprocedure, state bytea) (
    SFUNC = mvinc._agg_merge_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);
-- The same, told the aggregate's argument type and collation by a sample
-- value: mvinc.agg_merge('max(text)', s, NULL::text COLLATE "C"), or
-- mvinc.agg_merge('max(anyarray)', s, NULL::int[]) for a polymorphic state.
CREATE AGGREGATE mvinc.agg_merge(aggfn regprocedure, state bytea, sample anyelement) (
    SFUNC = mvinc._agg_merge_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, COMBINEFUNC = mvinc._agg_state_combine,
    SERIALFUNC = mvinc._agg_state_serialize, DESERIALFUNC = mvinc._agg_state_deserialize,
    PARALLEL = SAFE);

-- A base state with rows added (sign > 0) and retracted (sign < 0);
-- NULL when a retraction is refused: recompute the group.
CREATE AGGREGATE mvinc.agg_apply(aggfn regprocedure, base bytea, sign integer, VARIADIC "any") (
    SFUNC = mvinc._agg_apply_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, PARALLEL = SAFE);
CREATE AGGREGATE mvinc.agg_apply(aggfn regprocedure, base bytea, sign integer) (
    SFUNC = mvinc._agg_apply_trans, STYPE = internal, SSPACE = 128,
    FINALFUNC = mvinc._agg_state_final, PARALLEL = SAFE);

-- Two states merged (NULL is the empty state).
CREATE FUNCTION mvinc.agg_combine(aggfn regprocedure, a bytea, b bytea)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine';
CREATE FUNCTION mvinc.agg_combine(aggfn regprocedure, a bytea, b bytea, sample anyelement)
    RETURNS bytea LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine';

-- aggfn's result over a state; the third argument gives the result type.
CREATE FUNCTION mvinc.agg_final(aggfn regprocedure, state bytea, result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_final';

-- agg_final for the stored results of incremental views (generated
-- columns need an immutable expression): an aggregate's final function
-- gives the same result for the same state, and the aggregate named by an
-- OID does not change.
CREATE FUNCTION mvinc._agg_final_stored(aggfn regprocedure, state bytea, result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_final';
-- Storage tables' generated columns call it; they are written only by
-- refresh, which runs as the bootstrap superuser.
REVOKE ALL ON FUNCTION mvinc._agg_final_stored(regprocedure, bytea, anyelement) FROM PUBLIC;

-- 'retractable', 'mergeable' or 'unsupported', and why not better.
CREATE FUNCTION mvinc.agg_kind(aggfn regprocedure)
    RETURNS text LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_kind';
CREATE FUNCTION mvinc.agg_kind_detail(aggfn regprocedure)
    RETURNS text LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_kind_detail';

-- Whether a state of one aggregate is also the state of another (sum and
-- avg of numeric), so that a view can store it once.
CREATE FUNCTION mvinc.agg_same_state(a regprocedure, b regprocedure)
    RETURNS boolean LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_same_state';

-- Whether agg_merge/agg_combine need the sample argument for aggfn: its
-- state type is polymorphic or its argument is collatable (min/max(text)).
CREATE FUNCTION mvinc.agg_needs_sample(aggfn regprocedure)
    RETURNS boolean LANGUAGE c STRICT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_needs_sample';

-- approx_count_distinct: a mergeable HyperLogLog (src/mv/hll.c).
CREATE FUNCTION mvinc._hll_trans(internal, anyelement)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_trans';
CREATE FUNCTION mvinc._hll_combine(internal, internal)
    RETURNS internal LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_combine';
CREATE FUNCTION mvinc._hll_serialize(internal)
    RETURNS bytea LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_serialize';
CREATE FUNCTION mvinc._hll_deserialize(bytea, internal)
    RETURNS internal LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_deserialize';
CREATE FUNCTION mvinc._hll_final(internal)
    RETURNS bigint LANGUAGE c CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_hll_final';

REVOKE ALL ON FUNCTION
    mvinc._hll_trans(internal, anyelement),
    mvinc._hll_combine(internal, internal),
    mvinc._hll_serialize(internal),
    mvinc._hll_deserialize(bytea, internal),
    mvinc._hll_final(internal)
  FROM PUBLIC;

-- The approximate number of distinct non-NULL values (about 1.6 % error).
CREATE AGGREGATE mvinc.approx_count_distinct(anyelement) (
    SFUNC = mvinc._hll_trans, STYPE = internal, SSPACE = 4200,
    FINALFUNC = mvinc._hll_final,
    COMBINEFUNC = mvinc._hll_combine,
    SERIALFUNC = mvinc._hll_serialize, DESERIALFUNC = mvinc._hll_deserialize,
    PARALLEL = SAFE);

-- mvinc install script, part 30: incremental materialized views.
-- The catalog (one row per view, one per storage column), the SQL surface
-- and the event triggers that follow DROP and ALTER of views and sources.

-- One row per incremental view.  Keyed by the view (regclass, so that a
-- dump restores the key by name); storage_oid tells whether the storage
-- table of this row exists in this database (after a restore it does not,
-- and the view's first REFRESH rebuilds it).
CREATE TABLE mvinc.mv_view (
    view                regclass PRIMARY KEY,
    source              regclass NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('aggregate', 'projection')),
    definition          text NOT NULL,      -- the original query
    query_tree          text NOT NULL,      -- its parsed form (nodeToString)
    cluster_by          text,
    storage_name        name NOT NULL,      -- table in schema mvinc
    storage_oid         oid NOT NULL,
    source_generation   integer NOT NULL DEFAULT 0,  -- bumped by DDL on the source
    built_generation    integer,            -- generation the storage was built at
    populated           boolean NOT NULL DEFAULT false,
    checkpoint_snapshot pg_snapshot,        -- source snapshot the storage reflects
    checkpoint_lsn      pg_lsn,             -- change-log rows of invisible xacts are > this
    append_rows         bigint NOT NULL DEFAULT 0,  -- state rows in <storage_name>_append
    last_refresh        timestamptz,
    last_mode           text,
    last_changes        bigint,             -- changes the last refresh applied
    last_duration_ms    float8,             -- how long it took (after its lock)
    -- automatic refresh (mv_scheduler.c): NULL = only when asked
    refresh_interval    interval CHECK (refresh_interval BETWEEN interval '0' AND interval '10 years'),
    refresh_failures    integer NOT NULL DEFAULT 0,  -- automatic ones in a row
    last_error          text,                        -- of the last failed one
    retry_after         timestamptz                  -- backoff after failures
);
CREATE INDEX mv_view_source ON mvinc.mv_view (source);

-- Logical -> physical schema: which storage column makes which view column.
CREATE TABLE mvinc.mv_column (
    view          regclass NOT NULL REFERENCES mvinc.mv_view ON DELETE CASCADE,
    physical_name name NOT NULL,
    role          text NOT NULL CHECK (role IN ('group', 'aggregate', 'column', 'count', 'rowid')),
    view_attnum   smallint,                 -- NULL for hidden columns
    aggregate     regprocedure,             -- role 'aggregate'
    type          text NOT NULL,
    expression    text,
    -- a physical column may make several view columns (count(*) is the
    -- hidden count; sum and avg of one argument share one state)
    UNIQUE NULLS NOT DISTINCT (view, physical_name, view_attnum)
);

SELECT pg_catalog.pg_extension_config_dump('mvinc.mv_view', '');
SELECT pg_catalog.pg_extension_config_dump('mvinc.mv_column', '');

CREATE FUNCTION mvinc.refresh(view regclass, "full" boolean DEFAULT false,
        OUT mode text, OUT changes_applied bigint, OUT from_lsn pg_lsn, OUT to_lsn pg_lsn)
    RETURNS SETOF record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'mvinc_refresh';

CREATE FUNCTION mvinc.read_path(view regclass) RETURNS text
    LANGUAGE c STRICT STABLE
    AS 'MODULE_PATHNAME', 'mvinc_read_path';

-- For each incremental view over the table a query reads: would the
-- query be planned onto it (mvinc.enable_rewrite), and if not, why.
CREATE FUNCTION mvinc.explain_rewrite(query text,
        OUT view regclass, OUT used boolean, OUT reason text)
    RETURNS SETOF record
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_explain_rewrite';

-- Used by the read redirection: which branch answers the current
-- statement ('fresh': the storage; 'merge': the storage merged with its
-- appended state rows; 'live': the query).  Stable, so it is evaluated
-- once per execution.  The redirected query runs it with the reader's
-- rights, so PUBLIC keeps EXECUTE; the function itself answers only for a
-- view that a query now running in this transaction reads (the executor
-- has checked the rights on it) or that the caller may SELECT.
CREATE FUNCTION mvinc._read_branch(view oid) RETURNS text
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'mvinc_read_branch';

-- The state rows of the inserts past a view's checkpoint that the
-- statement sees: the delta side of a hybrid read. Called by the redirected
-- read with the reader's rights, so PUBLIC keeps EXECUTE; it answers only
-- for views the caller may read, with state rows of the view's groups.
CREATE FUNCTION mvinc._delta_states(view oid) RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'mvinc_delta_states';
-- The groups that updates and deletes past the checkpoint touched, as the
-- statement sees them now (state rows; a count of 0 for a group gone):
-- they replace the stored ones in a hybrid read.
CREATE FUNCTION mvinc._delta_replaced(view oid) RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED ROWS 10
    AS 'MODULE_PATHNAME', 'mvinc_delta_replaced';

-- Fold the state rows that append refreshes added beside the storage of
-- an aggregate view into its one row per group; returns the rows folded.
CREATE FUNCTION mvinc.compact(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_compact';

-- Consistency check of a view (no rows: consistent).  Every change of the
-- source after the view's checkpoint must be applied or still in the change
-- log; it refreshes in a subtransaction that it rolls back and compares the
-- view with its query.  Like amcheck's functions, closed to PUBLIC.
CREATE FUNCTION mvinc.verify_view(view regclass, OUT problem text, OUT detail text)
    RETURNS SETOF record
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_verify_view';
REVOKE ALL ON FUNCTION mvinc.verify_view(regclass) FROM PUBLIC;

CREATE FUNCTION mvinc._pending_changes(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_pending_changes';

CREATE FUNCTION mvinc._storage_rows(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_storage_rows';

-- Reads of the view by path taken, since the server started or the
-- counts were reset (shared memory; see mv_stats.c).
CREATE FUNCTION mvinc._read_counts(view regclass, OUT fresh bigint, OUT merge bigint,
                                   OUT hybrid bigint, OUT live bigint)
    RETURNS record
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_read_counts';

-- Set a view's read counts back to zero; like pg_stat_reset, closed to PUBLIC.
CREATE FUNCTION mvinc.reset_read_counts(view regclass) RETURNS void
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_reset_read_counts';
REVOKE ALL ON FUNCTION mvinc.reset_read_counts(regclass) FROM PUBLIC;

-- mvinc.views (PUBLIC) calls these three with the reader's rights; they
-- count (as the bootstrap superuser) only for a caller who may SELECT the
-- view, and are NULL otherwise.

CREATE VIEW mvinc.views AS
    SELECT v.view, v.source, v.kind, v.checkpoint_lsn,
           mvinc._pending_changes(v.view) AS pending_changes,
           -- WAL written since the view's checkpoint (all tables')
           CASE WHEN NOT pg_catalog.pg_is_in_recovery()
                THEN pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_insert_lsn(),
                                                v.checkpoint_lsn)::bigint
           END AS wal_bytes_behind,
           v.last_refresh, v.last_mode AS last_refresh_mode,
           v.last_changes AS last_refresh_changes,
           v.last_duration_ms AS last_refresh_ms,
           mvinc._storage_rows(v.view) AS storage_rows,
           v.append_rows,
           v.populated,
           c.fresh AS reads_fresh, c.merge AS reads_merge,
           c.hybrid AS reads_hybrid, c.live AS reads_live,
           v.refresh_interval,
           CASE WHEN v.refresh_interval IS NOT NULL AND v.populated
                THEN GREATEST(v.last_refresh + v.refresh_interval, v.retry_after)
           END AS next_refresh,
           v.refresh_failures,
           -- an error may quote source values: only for the view's owner
           CASE WHEN pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                             WHERE c.oid = v.view), 'USAGE')
                THEN v.last_error END AS last_error
      FROM mvinc.mv_view v, LATERAL mvinc._read_counts(v.view) c;
-- like pg_matviews: everyone may list the views
GRANT SELECT ON mvinc.views TO PUBLIC;

-- DROP of a view (or of its source with CASCADE): forget its catalog rows
-- and its capture consumer.  Storage goes with the view (internal dependency).
CREATE FUNCTION mvinc._on_sql_drop() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'mvinc_on_sql_drop';
REVOKE ALL ON FUNCTION mvinc._on_sql_drop() FROM PUBLIC;
CREATE EVENT TRIGGER mvinc_mv_sql_drop ON sql_drop
    EXECUTE FUNCTION mvinc._on_sql_drop();

-- ALTER of a source bumps its generation: the next refresh is 'full'.
-- A view's new owner gets its storage tables.
CREATE FUNCTION mvinc._on_ddl_end() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'mvinc_on_ddl_end';
REVOKE ALL ON FUNCTION mvinc._on_ddl_end() FROM PUBLIC;
CREATE EVENT TRIGGER mvinc_mv_ddl_end ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER MATERIALIZED VIEW')
    EXECUTE FUNCTION mvinc._on_ddl_end();

-- Reads of a view are redirected to mvinc.mv_<oid> and mvinc._read_branch():
-- everyone may look the schema up; the storage tables and functions keep
-- their own privileges (storage belongs to the view owner).
GRANT USAGE ON SCHEMA mvinc TO PUBLIC;
-- mvinc install script, part 40: the colfile table access method.
--
-- A colfile table's pages hold only column chunks (and a metapage); what
-- exists and who changed it lives in the heap tables below, keyed by the
-- table's relfilenode so that TRUNCATE, VACUUM FULL and CLUSTER (which
-- switch relfilenodes) stay transactional. These tables are internal state:
-- pg_dump does not dump them (a colfile table's rows are dumped as rows).

CREATE FUNCTION mvinc.colfile_handler(internal) RETURNS table_am_handler
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_handler';

CREATE ACCESS METHOD colfile TYPE TABLE HANDLER mvinc.colfile_handler;
COMMENT ON ACCESS METHOD colfile IS 'mvinc columnar table access method';

-- Sequence numbers: one per row group written (part 2 orders column files
-- and delete files against data files by them).
CREATE SEQUENCE mvinc.colfile_seq;

-- Row groups ("data files"): rows [0, row_count) own the TIDs
-- (first_block + p / 291, p % 291 + 1); their column chunks are bytes
-- [data_offset, data_offset + data_length) of the table's byte stream,
-- described chunk by chunk (offset, sizes, compression, min/max) in
-- directory. The row's xmin is the inserting transaction.
CREATE TABLE mvinc.colfile_rowgroup (
    relfilenode oid NOT NULL,
    first_block bigint NOT NULL,
    row_count integer NOT NULL,
    seq bigint NOT NULL,
    data_offset bigint NOT NULL,
    data_length bigint NOT NULL,
    directory bytea NOT NULL
);
-- row_count < 0: a reservation of -row_count TIDs by a write buffer whose
-- rows are not written yet (tables with unique indexes); the real row sorts
-- after it.
CREATE UNIQUE INDEX colfile_rowgroup_key
    ON mvinc.colfile_rowgroup (relfilenode, first_block, row_count);

-- Row states: one tuple per deleted, updated or locked row version, whose
-- xmin is the transaction that did it. kind: 'd' deleted, 'u' updated (the
-- new version is at new_tid), 'c' columns updated at the same TID (see
-- colfile_colfile), 'k' killed speculative insert, 'x' locked FOR UPDATE,
-- 'n' FOR NO KEY UPDATE, 's' FOR SHARE, 'K' FOR KEY SHARE. A lock ends with its
-- transaction; VACUUM removes records that no longer matter. The deletion
-- records of one statement share a sequence number from colfile_seq: they
-- are that statement's "delete file", ordered against data files (and, in
-- part 2, column files) by sequence number.
CREATE TABLE mvinc.colfile_rowstate (
    relfilenode oid NOT NULL,
    row_tid tid NOT NULL,
    kind "char" NOT NULL,
    new_tid tid,
    seq bigint              -- deletions: one sequence number per statement
);
CREATE INDEX colfile_rowstate_key
    ON mvinc.colfile_rowstate (relfilenode, row_tid);
-- Deletions only: what scans hash and VACUUM judges, without walking the
-- lock and column-update records (one per updated row until VACUUM).
CREATE INDEX colfile_rowstate_deletions
    ON mvinc.colfile_rowstate (relfilenode, row_tid) WHERE kind IN ('d', 'u', 'k');

-- Column files: an UPDATE that changes no indexed column keeps the row's
-- TID and writes only the new values of the columns it changed (attnums)
-- for the rows at positions (int4 array, ascending) of the row group
-- (first_block, group_seq), encoded like a row group of those columns, one
-- file per statement, row group and column set. Columns 1-7 are laid out as
-- in colfile_rowgroup (VACUUM reads the byte extents of both alike). The
-- xmin is the updater; of the files visible to a snapshot holding a row,
-- the highest seq is the newest (a row's updaters follow each other in
-- commit order). Each updated row also has a row state of kind 'c'.
CREATE TABLE mvinc.colfile_colfile (
    relfilenode oid NOT NULL,
    first_block bigint NOT NULL,
    row_count integer NOT NULL,
    seq bigint NOT NULL,
    data_offset bigint NOT NULL,
    data_length bigint NOT NULL,
    directory bytea NOT NULL,
    group_seq bigint NOT NULL,
    attnums int2[] NOT NULL,
    positions bytea NOT NULL
);
CREATE UNIQUE INDEX colfile_colfile_key
    ON mvinc.colfile_colfile (relfilenode, first_block, seq);

-- Compaction thresholds per table (NULL: the GUC's value), set with
-- mvinc.colfile_set_compaction; a row goes with its table.
CREATE TABLE mvinc.colfile_settings (
    relid oid PRIMARY KEY,
    dead_fraction float8 CHECK (dead_fraction BETWEEN 0 AND 1),
    file_fraction float8 CHECK (file_fraction >= 0)
);
CREATE VIEW mvinc.colfile_compaction_settings AS
    SELECT s.relid::regclass AS "table",
           coalesce(s.dead_fraction,
                    pg_catalog.current_setting('mvinc.colfile_compact_dead_fraction')::float8) AS dead_fraction,
           coalesce(s.file_fraction,
                    pg_catalog.current_setting('mvinc.colfile_compact_file_fraction')::float8) AS file_fraction
      FROM mvinc.colfile_settings s;
GRANT SELECT ON mvinc.colfile_compaction_settings TO PUBLIC;

CREATE FUNCTION mvinc.colfile_set_compaction(rel regclass,
    dead_fraction float8 DEFAULT NULL, file_fraction float8 DEFAULT NULL)
    RETURNS void
    LANGUAGE c CALLED ON NULL INPUT
    AS 'MODULE_PATHNAME', 'colfile_set_compaction';

-- Online compaction: rewrite the row groups that pass the table's
-- thresholds (or the ones named, whatever their shares), rows keeping
-- their TIDs, under SHARE UPDATE EXCLUSIVE (as VACUUM).
CREATE FUNCTION mvinc.colfile_compact(rel regclass,
    VARIADIC row_groups bigint[] DEFAULT NULL,
    OUT groups_rewritten bigint, OUT groups_written bigint,
    OUT column_files_folded bigint, OUT rows_written bigint,
    OUT rows_dropped bigint)
    RETURNS record
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'colfile_compact';

-- The row groups a snapshot sees: row_group names one for colfile_compact
CREATE FUNCTION mvinc.colfile_row_groups(rel regclass,
    OUT row_group bigint, OUT rows integer, OUT deleted_rows integer,
    OUT bytes bigint, OUT column_files integer, OUT column_file_bytes bigint)
    RETURNS SETOF record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_row_groups';

CREATE FUNCTION mvinc.colfile_stats(rel regclass,
    OUT row_groups bigint, OUT live_rows bigint, OUT deleted_rows bigint,
    OUT locked_rows bigint, OUT column_files bigint, OUT delete_files bigint,
    OUT pages bigint, OUT compressed_bytes bigint, OUT raw_bytes bigint,
    OUT free_bytes bigint)
    RETURNS record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_stats';

CREATE FUNCTION mvinc.colfile_column_stats(rel regclass,
    OUT attnum integer, OUT attname name, OUT compressed_bytes bigint,
    OUT raw_bytes bigint, OUT zstd_chunks bigint, OUT raw_chunks bigint)
    RETURNS SETOF record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_column_stats';

CREATE FUNCTION mvinc.colfile_block_stats(rel regclass,
    OUT attnum integer, OUT attname name, OUT encoding text,
    OUT compression text, OUT blocks bigint, OUT stored_bytes bigint)
    RETURNS SETOF record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_block_stats';

CREATE FUNCTION mvinc.colfile_check(rel regclass,
    OUT problem text, OUT detail text)
    RETURNS SETOF record
    LANGUAGE c STRICT
    AS 'MODULE_PATHNAME', 'colfile_check';

-- mvinc install script, part 50: history views (zipper tables, SCD type 2).
-- The catalog (one row per view, one per snapshot load), the SQL surface
-- and the event trigger that follows DROP of views.  See src/history/.

-- One row per history view.  Its versions live in mvinc.hv_<view oid>, an
-- ordinary table owned by the view's owner that is not a member of the
-- extension: history cannot be recomputed from the source, so pg_dump keeps
-- it with its rows, and the view's first REFRESH after a restore adopts it
-- (storage_name) and goes on from there.
CREATE TABLE mvinc.history_view (
    view                regclass PRIMARY KEY,
    source              regclass NOT NULL,
    key_columns         name[] NOT NULL,       -- view columns, in key order
    storage_name        name NOT NULL,         -- table in schema mvinc
    storage_oid         oid NOT NULL,
    -- NULL until the first REFRESH ('stream') or history_load ('snapshot')
    feed                text CHECK (feed IN ('stream', 'snapshot')),
    history_start       timestamptz,           -- mvinc.history_start
    retention           interval CHECK (retention > interval '0'),
    checkpoint_snapshot pg_snapshot,           -- as for incremental views
    checkpoint_lsn      pg_lsn,
    last_refresh        timestamptz,
    last_changes        bigint                 -- versions opened or closed
);
CREATE INDEX history_view_source ON mvinc.history_view (source);

-- The snapshot loads of a snapshot-fed view: a load observes the state at
-- as_of, which holds until the next load (late loads fit in between).
CREATE TABLE mvinc.history_loads (
    view      regclass NOT NULL REFERENCES mvinc.history_view ON DELETE CASCADE,
    as_of     timestamptz NOT NULL,
    loaded_at timestamptz NOT NULL,
    rows      bigint NOT NULL,
    new       bigint NOT NULL,
    changed   bigint NOT NULL,
    closed    bigint NOT NULL,
    PRIMARY KEY (view, as_of)
);

-- when the loads were: everyone may see (history_check reads it)
GRANT SELECT (view, as_of) ON mvinc.history_loads TO PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('mvinc.history_view', '');
SELECT pg_catalog.pg_extension_config_dump('mvinc.history_loads', '');

-- Diff a full extract against the versions current at as_of (NEW, CHANGE,
-- CLOSE, UNCHANGED) and apply it; the view's owner only (checked inside).
CREATE FUNCTION mvinc.history_load(view regclass, snapshot regclass, as_of timestamptz,
        OUT new bigint, OUT changed bigint, OUT closed bigint, OUT unchanged bigint)
    RETURNS record
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_history_load';

-- One row per violation of the history's invariants; no rows: valid.  It
-- reads the view with the caller's rights.
CREATE FUNCTION mvinc.history_check(view regclass,
        OUT key text, OUT problem text, OUT valid_from timestamptz, OUT valid_to timestamptz)
    RETURNS SETOF record
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    keys  text;
    vals  text;
    loads boolean;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(k), ', ' ORDER BY o),
           h.feed = 'snapshot'
      INTO keys, loads
      FROM mvinc.history_views h, unnest(h.key_columns) WITH ORDINALITY AS u(k, o)
     WHERE h.view = history_check.view
     GROUP BY h.feed;
    IF keys IS NULL THEN
        RAISE EXCEPTION '"%" is not a history view', view
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Create it WITH (mvinc.history = true, mvinc.key = ''...'').';
    END IF;
    -- the tracked values: every column but the key and the interval
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
      INTO vals
      FROM pg_catalog.pg_attribute a, mvinc.history_views h
     WHERE a.attrelid = history_check.view AND h.view = history_check.view AND a.attnum > 0
       AND NOT a.attisdropped AND a.attname <> ALL (h.key_columns)
       AND a.attname NOT IN ('valid_from', 'valid_to');
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH v AS (
            SELECT ROW(%1$s)::text AS k, h.valid_from AS vf, h.valid_to AS vt,
                   %2$s AS vals
              FROM %3$s h),
        w AS (
            SELECT v.*, pg_catalog.lag(vt) OVER s AS p_vt, pg_catalog.lag(vals) OVER s AS p_vals,
                   pg_catalog.count(*) FILTER (WHERE vt = 'infinity') OVER (PARTITION BY k) AS ncur
              FROM v WINDOW s AS (PARTITION BY k ORDER BY vf, vt))
        SELECT k, 'valid_from is not before valid_to', vf, vt FROM w WHERE NOT vf < vt
        UNION ALL
        SELECT k, 'overlaps the previous version', vf, vt FROM w WHERE vf < p_vt
        UNION ALL
        SELECT k, 'more than one current version', vf, vt FROM w WHERE vt = 'infinity' AND ncur > 1
        UNION ALL
        SELECT k, 'same values as the previous version', vf, vt FROM w
         WHERE vf = p_vt AND vals IS NOT DISTINCT FROM p_vals
        UNION ALL
        SELECT k, 'gap that no snapshot load observed', p_vt, vf FROM w
         WHERE %4$s AND vf > p_vt
           AND NOT EXISTS (SELECT FROM mvinc.history_loads l
                            WHERE l.view = %5$s AND l.as_of = w.p_vt)
        ORDER BY 1, 3, 2 $q$,
        keys, CASE WHEN vals IS NULL THEN 'NULL::text' ELSE pg_catalog.format('ROW(%s)::text', vals) END,
        view::text, CASE WHEN loads THEN 'true' ELSE 'false' END, pg_catalog.quote_literal(view::oid::text) || '::pg_catalog.oid::pg_catalog.regclass');
END
$$;

-- The rows of a history view as they were at t (without valid_from and
-- valid_to); callers give the column list.  A view named at run time cannot
-- be inlined: the plain query "WHERE valid_from <= t AND t < valid_to" on
-- the view is the fast path.
CREATE FUNCTION mvinc.history_as_of(view regclass, t timestamptz)
    RETURNS SETOF record
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    cols text;
BEGIN
    IF NOT EXISTS (SELECT FROM mvinc.history_views h WHERE h.view = history_as_of.view) THEN
        RAISE EXCEPTION '"%" is not a history view', view
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Create it WITH (mvinc.history = true, mvinc.key = ''...'').';
    END IF;
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
      INTO cols
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = history_as_of.view AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attname NOT IN ('valid_from', 'valid_to');
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT %s FROM %s WHERE valid_from <= $1 AND $1 OPERATOR(pg_catalog.<) valid_to',
        cols, view::text) USING t;
END
$$;

-- Everyone may list the history views, like pg_matviews.
CREATE VIEW mvinc.history_views AS
    SELECT h.view, h.source, h.key_columns, h.feed, h.history_start, h.retention,
           h.last_refresh, h.last_changes,
           (SELECT pg_catalog.max(l.as_of) FROM mvinc.history_loads l WHERE l.view = h.view)
               AS last_load_as_of
      FROM mvinc.history_view h;
GRANT SELECT ON mvinc.history_views TO PUBLIC;

-- DROP of a history view: forget its catalog rows and its capture consumer
-- (its storage goes with it: an automatic dependency).
CREATE FUNCTION mvinc._on_history_drop() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'mvinc_on_history_drop';
REVOKE ALL ON FUNCTION mvinc._on_history_drop() FROM PUBLIC;
CREATE EVENT TRIGGER mvinc_history_sql_drop ON sql_drop
    EXECUTE FUNCTION mvinc._on_history_drop();

-- The versions that captured changes past a history view's checkpoint end
-- or open, as the statement sees them: reads of the view merge them with
-- the storage (src/history/hist_read.c).  Called with the reader's rights,
-- so PUBLIC keeps EXECUTE; it answers only for views the caller may read.
-- It takes the latest snapshot, which a parallel query cannot.
CREATE FUNCTION mvinc._history_pending(view oid) RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'mvinc_history_pending';
