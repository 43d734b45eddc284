-- mvinc.recluster(view) and mvinc.cluster_by: the storage is rewritten in
-- the cluster order (the group keys by default), with its append rows
-- folded first, its indexes and TOAST values kept, and the view's content
-- unchanged.  The isolation spec mv_recluster_concurrent checks readers
-- whose snapshots predate a recluster, and the swap's wait for readers;
-- TAP 112 runs readers comparing with the defining query throughout.
CREATE TABLE rc_src (id int PRIMARY KEY, g int NOT NULL, h text NOT NULL, v numeric NOT NULL);
-- groups arrive in scrambled order
INSERT INTO rc_src SELECT i, (i * 7919) % 500, 'h' || (i * 31) % 7, i FROM generate_series(1, 5000) i;
CREATE FUNCTION rc_diff(v regclass, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE %s)) d',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
-- is a storage table's heap in order of the given columns?
CREATE FUNCTION rc_ordered(v regclass, cols text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE ok boolean;
BEGIN
  EXECUTE format('SELECT coalesce(bool_and(ok), true) FROM (SELECT ROW(%s) >= lag(ROW(%s)) OVER (ORDER BY ctid) AS ok FROM mvinc.%I) s',
                 cols, cols, (SELECT storage_name FROM mvinc.mv_view WHERE view = v)) INTO ok;
  RETURN ok;
END $$;
CREATE FUNCTION rc_storage(v regclass) RETURNS regclass LANGUAGE sql AS
  $$ SELECT ('mvinc.' || quote_ident(storage_name::text))::regclass FROM mvinc.mv_view WHERE view = v $$;

CREATE MATERIALIZED VIEW rc_agg WITH (mvinc.incremental = true) AS
  SELECT g, h, count(*) AS n, sum(v) AS s, max(v) AS top FROM rc_src GROUP BY g, h;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;

-- churn: updates move stored rows, an append leaves rows beside the storage
SET mvinc.compact_fraction = 1000;
UPDATE rc_src SET v = v + 1 WHERE id % 3 = 0;
SELECT mode FROM mvinc.refresh('rc_agg');
INSERT INTO rc_src SELECT i, (i * 13) % 600, 'h' || i % 5, i FROM generate_series(5001, 6000) i;
SELECT mode FROM mvinc.refresh('rc_agg');
SELECT append_rows > 0 AS appended FROM mvinc.views WHERE view = 'rc_agg'::regclass;
SELECT c.relfilenode AS old_file, (SELECT array_agg(indexrelid ORDER BY indexrelid) FROM pg_index WHERE indrelid = c.oid) AS old_indexes
  FROM pg_class c WHERE c.oid = rc_storage('rc_agg') \gset

SELECT count(*) AS groups FROM rc_agg \gset
SELECT mvinc.recluster('rc_agg') = :groups AS rows_written;
SELECT append_rows, storage_rows = (SELECT count(*) FROM rc_agg) AS storage_rows_ok
  FROM mvinc.views WHERE view = 'rc_agg'::regclass;
SELECT rc_diff('rc_agg', 'SELECT g, h, count(*), sum(v), max(v) FROM rc_src GROUP BY g, h') AS differ;
SELECT rc_ordered('rc_agg', 'k1, k2') AS in_key_order;
-- new files, the same relations and indexes (nothing else left behind)
SELECT c.relfilenode <> :old_file AS new_file,
       (SELECT array_agg(indexrelid ORDER BY indexrelid) FROM pg_index WHERE indrelid = c.oid) = :'old_indexes' AS same_indexes
  FROM pg_class c WHERE c.oid = rc_storage('rc_agg');
SELECT count(*) AS transient_left FROM pg_class WHERE relname LIKE 'pg_temp_%' AND relnamespace = 'mvinc'::regnamespace;
-- reads by key through the storage's index, and refreshes, go on
SET enable_seqscan = off;
SELECT n, s, top FROM rc_agg WHERE g = 42 AND h = 'h0';
SELECT count(*) AS n, sum(v) AS s, max(v) AS top FROM rc_src WHERE g = 42 AND h = 'h0';
RESET enable_seqscan;
DELETE FROM rc_src WHERE id % 5 = 0;
SELECT mode FROM mvinc.refresh('rc_agg');
SELECT rc_diff('rc_agg', 'SELECT g, h, count(*), sum(v), max(v) FROM rc_src GROUP BY g, h') AS differ;
RESET mvinc.compact_fraction;

-- a prepared read planned before the recluster reads the new files
PREPARE rc_read AS SELECT sum(n) AS n FROM rc_agg WHERE g < 100;
EXECUTE rc_read;
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
EXECUTE rc_read;
DEALLOCATE rc_read;

-- rolled back (savepoint): the old files stay
BEGIN;
SAVEPOINT s;
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
ROLLBACK TO SAVEPOINT s;
SELECT rc_diff('rc_agg', 'SELECT g, h, count(*), sum(v), max(v) FROM rc_src GROUP BY g, h') AS differ;
COMMIT;
SELECT rc_diff('rc_agg', 'SELECT g, h, count(*), sum(v), max(v) FROM rc_src GROUP BY g, h') AS differ;

-- cluster_by another key: recluster adds an index on it (range reads use it)
CREATE TABLE rc_wide (id int PRIMARY KEY, region int NOT NULL, note text NOT NULL);
-- incompressible values of several kB: stored in the TOAST table
INSERT INTO rc_wide SELECT i, (i * 37) % 11,
  (SELECT string_agg(md5(i::text || '.' || j), '') FROM generate_series(1, 1 + (i % 3) * 80) j)
  FROM generate_series(1, 300) i;
CREATE MATERIALIZED VIEW rc_proj WITH (mvinc.incremental = true, mvinc.cluster_by = 'region') AS
  SELECT id, region, note FROM rc_wide WHERE id % 10 <> 0;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT pg_relation_size(reltoastrelid) > 0 AS toasted FROM pg_class WHERE oid = rc_storage('rc_proj');
UPDATE rc_wide SET note = note || 'x' WHERE id % 4 = 0;
SELECT mode FROM mvinc.refresh('rc_proj');
SELECT mvinc.recluster('rc_proj') AS rows_written;
SELECT rc_ordered('rc_proj', 'c2') AS in_region_order;
SELECT rc_diff('rc_proj', 'SELECT id, region, note FROM rc_wide WHERE id % 10 <> 0') AS differ;
SELECT md5(string_agg(note, ',' ORDER BY id)) = (SELECT md5(string_agg(note, ',' ORDER BY id)) FROM rc_wide WHERE id % 10 <> 0) AS notes_equal
  FROM rc_proj;
SELECT indexrelid::regclass = (rc_storage('rc_proj')::text || '_cluster')::regclass AS cluster_index,
       pg_get_indexdef(indexrelid) LIKE '%(c2)' AS on_region
  FROM pg_index WHERE indrelid = rc_storage('rc_proj') AND NOT indisunique;
-- a second recluster reuses it
SELECT mvinc.recluster('rc_proj') AS rows_written;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = rc_storage('rc_proj');

-- ALTER ... SET / RESET (mvinc.cluster_by), for the next recluster: a
-- prefix of the key index needs no index of its own; another order gets
-- one, which the recluster after a change of order drops
ALTER MATERIALIZED VIEW rc_agg SET (mvinc.cluster_by = 'g');
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = rc_storage('rc_agg');
ALTER MATERIALIZED VIEW rc_agg SET (mvinc.cluster_by = 'h');
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
SELECT rc_ordered('rc_agg', 'k2') AS in_h_order;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = rc_storage('rc_agg');
ALTER MATERIALIZED VIEW rc_agg SET (mvinc.cluster_by = 'h, g');
SELECT cluster_by FROM mvinc.mv_view WHERE view = 'rc_agg'::regclass;
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
SELECT rc_ordered('rc_agg', 'k2, k1') AS in_h_g_order;
SELECT pg_get_indexdef(indexrelid) LIKE '%(k2, k1)' AS cluster_index_on_h_g
  FROM pg_index WHERE indrelid = rc_storage('rc_agg') AND NOT indisunique;
SELECT rc_diff('rc_agg', 'SELECT g, h, count(*), sum(v), max(v) FROM rc_src GROUP BY g, h') AS differ;
ALTER MATERIALIZED VIEW rc_agg RESET (mvinc.cluster_by);
SELECT cluster_by IS NULL AS reset FROM mvinc.mv_view WHERE view = 'rc_agg'::regclass;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = rc_storage('rc_agg');
SELECT mvinc.recluster('rc_agg') > 0 AS reclustered;
SELECT rc_ordered('rc_agg', 'k1, k2') AS in_key_order;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = rc_storage('rc_agg');

-- NULL group keys: the copied key index keeps NULLS NOT DISTINCT
CREATE TABLE rc_null (id int PRIMARY KEY, g int, v int NOT NULL);
INSERT INTO rc_null SELECT i, nullif(i % 7, 3), i FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW rc_nullv WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM rc_null GROUP BY g;
SELECT mvinc.recluster('rc_nullv') AS rows_written;
INSERT INTO rc_null VALUES (1001, NULL, 5), (1002, 3, 5), (1003, 99, 1);
UPDATE rc_null SET v = v + 1 WHERE g IS NULL;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('rc_nullv');
SELECT rc_diff('rc_nullv', 'SELECT g, count(*), sum(v) FROM rc_null GROUP BY g') AS differ;
SELECT count(*) AS null_groups FROM rc_nullv WHERE g IS NULL;
DROP MATERIALIZED VIEW rc_nullv;
DROP TABLE rc_null;

-- one row, no key: rewritten as it is
CREATE MATERIALIZED VIEW rc_total WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(v) AS s FROM rc_src;
SELECT mvinc.recluster('rc_total') AS rows_written;
SELECT rc_diff('rc_total', 'SELECT count(*), sum(v) FROM rc_src') AS differ;
SELECT count(*) AS running FROM mvinc.refresh_progress;

-- refused
\set VERBOSITY default
CREATE MATERIALIZED VIEW rc_bad WITH (mvinc.incremental = true, mvinc.cluster_by = 'nope') AS
  SELECT g, count(*) FROM rc_src GROUP BY g;
CREATE MATERIALIZED VIEW rc_bad WITH (mvinc.incremental = true, mvinc.cluster_by = 'n') AS
  SELECT g, count(*) AS n FROM rc_src GROUP BY g;
CREATE MATERIALIZED VIEW rc_bad WITH (mvinc.incremental = true, mvinc.cluster_by = 'g,,') AS
  SELECT g, count(*) AS n FROM rc_src GROUP BY g;
SELECT count(*) AS left_behind FROM pg_class WHERE relname = 'rc_bad';
ALTER MATERIALIZED VIEW rc_agg SET (mvinc.cluster_by = 's');
SELECT cluster_by IS NULL AS unchanged FROM mvinc.mv_view WHERE view = 'rc_agg'::regclass;
CREATE MATERIALIZED VIEW rc_native AS SELECT g FROM rc_src;
SELECT mvinc.recluster('rc_native');
CREATE MATERIALIZED VIEW rc_empty WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n FROM rc_src GROUP BY g WITH NO DATA;
SELECT mvinc.recluster('rc_empty');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mvinc.recluster('rc_agg');
ROLLBACK;
-- a scan of the view open in the same session (it would read the new files)
BEGIN;
DECLARE rc_cursor CURSOR FOR SELECT g FROM rc_agg;
MOVE 2 IN rc_cursor;
SELECT mvinc.recluster('rc_agg');
ROLLBACK;
SELECT mvinc.recluster('rc_agg') = (SELECT count(*) FROM rc_agg) AS read_in_the_same_query;
CREATE ROLE rc_other;
SET ROLE rc_other;
SELECT mvinc.recluster('rc_agg');
RESET ROLE;
DROP ROLE rc_other;
\set VERBOSITY terse

DROP MATERIALIZED VIEW rc_agg, rc_proj, rc_total, rc_native, rc_empty;
DROP TABLE rc_src, rc_wide;
DROP FUNCTION rc_diff, rc_ordered, rc_storage;
