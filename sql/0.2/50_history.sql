
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

-- Everyone may list the history views, like pg_matviews.
CREATE VIEW mvinc.history_views AS
    SELECT h.view, h.source, h.key_columns, h.feed, h.history_start, h.retention,
           h.last_refresh, h.last_changes,
           (SELECT pg_catalog.max(l.as_of) FROM mvinc.history_loads l WHERE l.view = h.view)
               AS last_load_as_of,
           h.storage_oid::pg_catalog.regclass AS storage
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
