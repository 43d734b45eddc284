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
-- transaction; VACUUM removes records that no longer matter. Locks and 'c'
-- are written to colfile_rowlock (below), and here only when a prepared
-- transaction keeps them or in an extension installed as 0.1 before its
-- update. The deletion
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
