-- mvinc upgrade from 0.1 to 0.2.
\echo Use "ALTER EXTENSION mvinc UPDATE TO '0.2'" to load this file. \quit

-- Capture: a source tracked only for its views stops being tracked when its
-- last view is dropped; one that mvinc.track() asked for stays.  Which
-- sources 0.1 tracked by mvinc.track() it did not record: those that no
-- view reads are taken for asked.
ALTER TABLE mvinc.tracked
    ADD COLUMN requested boolean NOT NULL DEFAULT false;
UPDATE mvinc.tracked t SET requested = true
 WHERE NOT EXISTS (SELECT 1 FROM mvinc.mv_view v WHERE v.source::pg_catalog.oid = t.relid)
   AND NOT EXISTS (SELECT 1 FROM mvinc.history_view h WHERE h.source::pg_catalog.oid = t.relid);

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

-- Rewrite the storage of a view in mvinc.cluster_by order (else its group
-- keys), folding append rows first; readers go on, refreshes wait; returns
-- the rows written.
CREATE FUNCTION mvinc.recluster(view regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'mvinc_recluster';

-- A delta is most often a small share of the view's groups: planned as
-- 1000 rows, a whole read of a 75,000-group view hashed the storage to
-- join a delta of 3,000.
ALTER FUNCTION mvinc._delta_states(oid) ROWS 100;

-- The delta of a hybrid read (as _delta_states and _delta_replaced) for
-- the groups whose keys pass conditions the reader's query
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

-- The result over three states combined (NULL is the empty state):
-- agg_final(agg_combine(agg_combine(a, b), c)) in one call, without
-- serializing the combined state; reads merge stored rows with it.  The
-- types come from result, as for agg_final; the optional last argument
-- (agg_combine's sample) gives only its collation.
CREATE FUNCTION mvinc.agg_combine_final(aggfn regprocedure, a bytea, b bytea, c bytea,
                                        result anyelement)
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine_final';
CREATE FUNCTION mvinc.agg_combine_final(aggfn regprocedure, a bytea, b bytea, c bytea,
                                        result anyelement, sample "any")
    RETURNS anyelement LANGUAGE c CALLED ON NULL INPUT STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'mvinc_agg_combine_final';

-- history_views shows each view's storage, and history_check reads the
-- view's own names of its key and interval (a view column may be renamed)
CREATE OR REPLACE VIEW mvinc.history_views AS
    SELECT h.view, h.source, h.key_columns, h.feed, h.history_start, h.retention,
           h.last_refresh, h.last_changes,
           (SELECT pg_catalog.max(l.as_of) FROM mvinc.history_loads l WHERE l.view = h.view)
               AS last_load_as_of,
           h.storage_oid::pg_catalog.regclass AS storage
      FROM mvinc.history_view h;

CREATE OR REPLACE FUNCTION mvinc.history_check(view regclass,
        OUT key text, OUT problem text, OUT valid_from timestamptz, OUT valid_to timestamptz)
    RETURNS SETOF record
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    keys  text;
    vals  text;
    vf    text;
    vt    text;
    loads boolean;
    fixed int2[];
BEGIN
    -- the view's names of the key and the interval: its columns are the
    -- storage's, in the same places, perhaps renamed since
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(coalesce(va.attname, n.k)), ', '
                                 ORDER BY n.o) FILTER (WHERE n.o > 0),
           pg_catalog.max(pg_catalog.quote_ident(coalesce(va.attname, n.k))) FILTER (WHERE n.o = 0),
           pg_catalog.max(pg_catalog.quote_ident(coalesce(va.attname, n.k))) FILTER (WHERE n.o = -1),
           pg_catalog.array_agg(va.attnum) FILTER (WHERE va.attnum IS NOT NULL),
           pg_catalog.bool_or(h.feed = 'snapshot')
      INTO keys, vf, vt, fixed, loads
      FROM mvinc.history_views h
     CROSS JOIN LATERAL (SELECT u.k, u.o FROM unnest(h.key_columns) WITH ORDINALITY AS u(k, o)
                         UNION ALL VALUES ('valid_from'::name, 0::int8), ('valid_to', -1)) n
      LEFT JOIN pg_catalog.pg_attribute sa ON sa.attrelid = h.storage AND sa.attname = n.k
      LEFT JOIN pg_catalog.pg_attribute va ON va.attrelid = h.view AND va.attnum = sa.attnum
     WHERE h.view = history_check.view;
    IF keys IS NULL THEN
        RAISE EXCEPTION '"%" is not a history view', view
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Create it WITH (mvinc.history = true, mvinc.key = ''...'').';
    END IF;
    -- the tracked values: every column but the key and the interval
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
      INTO vals
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = history_check.view AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attnum <> ALL (coalesce(fixed, '{}'))
       AND (fixed IS NOT NULL OR a.attname NOT IN ('valid_from', 'valid_to'));
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH v AS (
            SELECT ROW(%1$s)::text AS k, h.%6$s AS vf, h.%7$s AS vt,
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
        view::text, CASE WHEN loads THEN 'true' ELSE 'false' END, pg_catalog.quote_literal(view::oid::text) || '::pg_catalog.oid::pg_catalog.regclass',
        vf, vt);
END
$$;

-- history_as_of finds the interval columns where the storage has them, as
-- history_check does (a rename of valid_from or valid_to made it read the
-- wrong column or fail)
CREATE OR REPLACE FUNCTION mvinc.history_as_of(view regclass, t timestamptz)
    RETURNS SETOF record
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    cols text;
    vf   text;
    vt   text;
BEGIN
    IF NOT EXISTS (SELECT FROM mvinc.history_views h WHERE h.view = history_as_of.view) THEN
        RAISE EXCEPTION '"%" is not a history view', view
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Create it WITH (mvinc.history = true, mvinc.key = ''...'').';
    END IF;
    -- the view's names of the interval: its columns are the storage's, in
    -- the same places, perhaps renamed since
    SELECT pg_catalog.max(pg_catalog.quote_ident(va.attname)) FILTER (WHERE sa.attname = 'valid_from'),
           pg_catalog.max(pg_catalog.quote_ident(va.attname)) FILTER (WHERE sa.attname = 'valid_to')
      INTO vf, vt
      FROM mvinc.history_views h
      JOIN pg_catalog.pg_attribute sa ON sa.attrelid = h.storage
                                     AND sa.attname IN ('valid_from', 'valid_to')
      JOIN pg_catalog.pg_attribute va ON va.attrelid = h.view AND va.attnum = sa.attnum
     WHERE h.view = history_as_of.view;
    vf := coalesce(vf, 'valid_from');
    vt := coalesce(vt, 'valid_to');
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
      INTO cols
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = history_as_of.view AND a.attnum > 0 AND NOT a.attisdropped
       AND pg_catalog.quote_ident(a.attname) NOT IN (vf, vt);
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT %s FROM %s WHERE %s OPERATOR(pg_catalog.<=) $1 AND $1 OPERATOR(pg_catalog.<) %s',
        cols, view::text, vf, vt) USING t;
END
$$;

-- Row locks and in-place update marks ('x', 'n', 's', 'K', 'c'): the
-- records of colfile_rowstate that matter only while their transaction runs
-- or while snapshots older than its commit do. Unlogged: no WAL per locked
-- or updated row, and a crash, which ends every transaction and snapshot,
-- may empty it. A prepared transaction copies its records into
-- colfile_rowstate at PREPARE, so they survive a restart as it does.
CREATE UNLOGGED TABLE mvinc.colfile_rowlock (
    relfilenode oid NOT NULL,
    row_tid tid NOT NULL,
    kind "char" NOT NULL,
    new_tid tid,            -- always NULL: same layout as colfile_rowstate
    seq bigint              -- always NULL
);
CREATE INDEX colfile_rowlock_key
    ON mvinc.colfile_rowlock (relfilenode, row_tid);
