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
-- new version is at new_tid), 'k' killed speculative insert, 'x' locked
-- FOR [NO KEY] UPDATE, 's' locked FOR [KEY] SHARE. A lock ends with its
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
