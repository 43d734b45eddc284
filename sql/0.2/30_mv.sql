
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

-- A view refreshed on a schedule needs its database's capture worker, which
-- runs the schedule: also when its row comes back from a dump (by COPY,
-- with its source not tracked yet).  Best effort: ALTER ... SET reports a
-- missing worker slot itself.
CREATE FUNCTION mvinc._mv_view_scheduled() RETURNS trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'mvinc_mv_view_scheduled';
REVOKE ALL ON FUNCTION mvinc._mv_view_scheduled() FROM PUBLIC;
CREATE TRIGGER mv_view_scheduled AFTER INSERT OR UPDATE OF refresh_interval ON mvinc.mv_view
    FOR EACH ROW WHEN (NEW.refresh_interval IS NOT NULL)
    EXECUTE FUNCTION mvinc._mv_view_scheduled();

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
-- ROWS 100: a delta is most often a small share of the view's groups; at
-- the default 1000 the planner hashed a 75,000-group storage to join a
-- delta of 3,000 rows (31 ms, where hashing the delta takes 1).
CREATE FUNCTION mvinc._delta_states(view oid) RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED ROWS 100
    AS 'MODULE_PATHNAME', 'mvinc_delta_states';
-- The groups that updates and deletes past the checkpoint touched, as the
-- statement sees them now (state rows; a count of 0 for a group gone):
-- they replace the stored ones in a hybrid read.
CREATE FUNCTION mvinc._delta_replaced(view oid) RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED ROWS 10
    AS 'MODULE_PATHNAME', 'mvinc_delta_replaced';
-- Both, for the groups whose keys pass conditions the reader's query
-- applies above the read (group key keys[i] OPERATOR(ops[i]) ANY (the i-th
-- array of vals); only btree equality of the key's type): a read of a few
-- groups computes the delta of those groups alone.
CREATE FUNCTION mvinc._delta_states(view oid, keys int2[], ops oid[], VARIADIC vals "any")
    RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'mvinc_delta_states';
CREATE FUNCTION mvinc._delta_replaced(view oid, keys int2[], ops oid[], VARIADIC vals "any")
    RETURNS SETOF record
    LANGUAGE c STRICT STABLE PARALLEL RESTRICTED ROWS 10
    AS 'MODULE_PATHNAME', 'mvinc_delta_replaced';

-- Fold the state rows that append refreshes added beside the storage of
-- an aggregate view into its one row per group; returns the rows folded.
CREATE FUNCTION mvinc.compact(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_compact';

-- Rewrite the storage of a view in mvinc.cluster_by order (else its group
-- keys), folding append rows first; readers go on, refreshes wait; returns
-- the rows written.
CREATE FUNCTION mvinc.recluster(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_recluster';

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

-- Refreshes and compactions running now in this database, one row per
-- backend (shared memory; see mv_progress.c), like pg_stat_progress_*.
-- The function shows only views the caller may SELECT, so PUBLIC keeps
-- EXECUTE.
CREATE FUNCTION mvinc._refresh_progress(OUT pid integer, OUT datid oid, OUT view regclass,
        OUT command text, OUT mode text, OUT phase text, OUT rows_done bigint,
        OUT rows_total bigint, OUT started timestamptz, OUT phase_started timestamptz)
    RETURNS SETOF record
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_refresh_progress';

CREATE VIEW mvinc.refresh_progress AS
    SELECT p.pid, p.datid, d.datname, p.view, p.command, p.mode, p.phase,
           p.rows_done, p.rows_total, p.started, p.phase_started
      FROM mvinc._refresh_progress() p
      LEFT JOIN pg_catalog.pg_database d ON d.oid = p.datid;
GRANT SELECT ON mvinc.refresh_progress TO PUBLIC;

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
