-- colfile tables as sources of incremental and history views: their
-- writers log each changed row as a logical message while the table is
-- tracked, and capture turns it into the change-log rows a heap change
-- gives.  Every way of writing a colfile table reaches the views.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
-- internal tables are heap whatever the default access method is
SET default_table_access_method = colfile;
CREATE TABLE cs_src (id int PRIMARY KEY, g int, v numeric, t text);
CREATE TABLE cs_big (id int PRIMARY KEY, t text) USING heap;
ALTER TABLE cs_big ALTER COLUMN t SET STORAGE EXTERNAL;
INSERT INTO cs_src SELECT i, i % 4, i * 1.5, 'r' || i FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW cs_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, max(length(t)) AS mx FROM cs_src GROUP BY g;
CREATE MATERIALIZED VIEW cs_proj WITH (mvinc.incremental = true) AS
  SELECT id, v, left(t, 3) AS t3, md5(t) AS h FROM cs_src WHERE g <> 3;
CREATE MATERIALIZED VIEW cs_hist WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, g, t FROM cs_src;
SELECT DISTINCT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
  WHERE c.relnamespace = 'mvinc'::regnamespace AND c.relkind = 'r';
RESET default_table_access_method;

CREATE FUNCTION cs_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE q text := rtrim(pg_get_viewdef(v), ';'); n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
-- both views equal their query, before a refresh (pending changes read)
-- and after it; the history view's current versions equal the source
CREATE FUNCTION cs_check() RETURNS TABLE (agg bigint, proj bigint, hist_current bigint, agg_mode text, proj_mode text)
LANGUAGE plpgsql AS $$
BEGIN
  agg := cs_diff('cs_agg');
  proj := cs_diff('cs_proj');
  SELECT mode INTO agg_mode FROM mvinc.refresh('cs_agg');
  SELECT mode INTO proj_mode FROM mvinc.refresh('cs_proj');
  agg := agg + cs_diff('cs_agg');
  proj := proj + cs_diff('cs_proj');
  REFRESH MATERIALIZED VIEW cs_hist;
  SELECT count(*) INTO hist_current FROM (
    (SELECT id, g, t FROM cs_hist WHERE valid_to = 'infinity' EXCEPT ALL SELECT id, g, t FROM cs_src)
    UNION ALL
    (SELECT id, g, t FROM cs_src EXCEPT ALL SELECT id, g, t FROM cs_hist WHERE valid_to = 'infinity')) d;
  RETURN NEXT;
END $$;

-- single rows, several statements in one transaction, COPY (multi-row
-- inserts), ON CONFLICT in both forms
INSERT INTO cs_src VALUES (201, 1, 10, 'one');
BEGIN;
INSERT INTO cs_src SELECT i, i % 5, i, 'x' FROM generate_series(202, 260) i;
UPDATE cs_src SET v = v + 1, t = t || '!' WHERE id % 7 = 0;
DELETE FROM cs_src WHERE id % 11 = 0;
COMMIT;
COPY cs_src FROM stdin;
301	0	1.25	copied
302	2	2.5	\N
303	4	\N	copied too
\.
INSERT INTO cs_src VALUES (1, 9, 0, 'conflict') ON CONFLICT (id) DO UPDATE SET g = excluded.g, t = excluded.t;
INSERT INTO cs_src VALUES (2, 9, 0, 'ignored') ON CONFLICT (id) DO NOTHING;
INSERT INTO cs_src VALUES (400, 9, 0, 'new') ON CONFLICT (id) DO UPDATE SET g = 0;
SELECT * FROM cs_check();

-- rolled back: a transaction, a subtransaction, a failed statement
BEGIN;
INSERT INTO cs_src VALUES (500, 1, 1, 'rolled back');
DELETE FROM cs_src WHERE id < 50;
ROLLBACK;
BEGIN;
UPDATE cs_src SET g = 2 WHERE id = 3;
SAVEPOINT s;
UPDATE cs_src SET g = 7 WHERE id BETWEEN 100 AND 150;
INSERT INTO cs_src VALUES (501, 1, 1, 'gone');
ROLLBACK TO SAVEPOINT s;
INSERT INTO cs_src VALUES (502, 1, 1, 'kept');
COMMIT;
INSERT INTO cs_src VALUES (503, 1, 1, 'fails'), (1, 1, 1, 'duplicate');
SELECT * FROM cs_check();

-- key changes, NULLs, out-of-line values read from a heap table (the
-- message carries the value, not a pointer into another table's TOAST)
UPDATE cs_src SET id = id + 1000 WHERE id BETWEEN 60 AND 64;
UPDATE cs_src SET v = NULL, t = NULL WHERE id BETWEEN 65 AND 67;
-- (the heap table is dropped in the same transaction: its TOAST is gone
-- when the transaction is decoded)
INSERT INTO cs_big SELECT i, repeat(md5(i::text), 300) FROM generate_series(1, 3) i;
BEGIN;
INSERT INTO cs_src SELECT 600 + id, 1, id, t FROM cs_big;
UPDATE cs_src s SET t = b.t FROM cs_big b WHERE s.id = 70 + b.id;
DROP TABLE cs_big;
COMMIT;
SELECT * FROM cs_check();
SELECT max(mx) FROM cs_agg;

-- VACUUM (pruning, compaction, delete vectors) changes no row: the change
-- log gets nothing from it
DELETE FROM cs_src WHERE id % 3 = 0;
SELECT * FROM cs_check();
CREATE FUNCTION cs_logged_since(lsn pg_lsn) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM mvinc.wait_for_capture();
  EXECUTE format('SELECT count(*) FROM %s WHERE _mvinc_lsn > $1', mvinc.track('cs_src'))
    INTO n USING lsn;
  RETURN n;
END $$;
SELECT pg_current_wal_insert_lsn() AS before_vacuum \gset
SET mvinc.colfile_compact_dead_fraction = 0.01;
SELECT deleted_rows > 0 AS deletions_to_fold FROM mvinc.colfile_stats('cs_src');
-- (repeated while another session's snapshot keeps the deleted rows)
\set ECHO none
\o /dev/null
SELECT 'VACUUM cs_src', 'SELECT pg_sleep(0.2) FROM mvinc.colfile_stats(''cs_src'') WHERE deleted_rows > 0'
FROM generate_series(1, 50) \gexec
\o
\set ECHO all
RESET mvinc.colfile_compact_dead_fraction;
SELECT deleted_rows FROM mvinc.colfile_stats('cs_src');
SELECT cs_logged_since(:'before_vacuum') AS rows_from_vacuum;
UPDATE cs_src SET g = g + 1 WHERE id % 5 = 1;
SELECT * FROM cs_check();

-- TRUNCATE, and writes after it in the same transaction (the refresh
-- after a TRUNCATE recomputes: the change log itself must hold them)
SELECT pg_current_wal_insert_lsn() AS before_truncate \gset
BEGIN;
TRUNCATE cs_src;
INSERT INTO cs_src SELECT i, i % 3, i, 't' || i FROM generate_series(1, 30) i;
COMMIT;
SELECT cs_logged_since(:'before_truncate') AS logged_truncate_and_inserts;
SELECT * FROM cs_check();

-- Only mvinc's writers emit row messages: emitting logical messages is
-- not PUBLIC's right in a database with mvinc, and what a superuser emits
-- with the prefix that is not a valid row of a tracked colfile table is
-- skipped (with a WARNING in the server log), capture going on past it
SELECT has_function_privilege('public', 'pg_logical_emit_message(boolean, text, text)', 'EXECUTE') AS public_text,
       has_function_privilege('public', 'pg_logical_emit_message(boolean, text, bytea)', 'EXECUTE') AS public_bytea;
CREATE FUNCTION cs_le4(i bigint) RETURNS bytea LANGUAGE sql AS $$
  SELECT set_byte(set_byte(set_byte(set_byte('\x00000000'::bytea, 0, (i & 255)::int),
         1, ((i >> 8) & 255)::int), 2, ((i >> 16) & 255)::int), 3, ((i >> 24) & 255)::int) $$;
BEGIN;
SELECT pg_logical_emit_message(true, 'mvinc.row', 'not a row') IS NOT NULL AS emitted;
-- a valid header naming the source, a body that is no row
SELECT pg_logical_emit_message(true, 'mvinc.row',
         '\x01690000'::bytea || cs_le4('cs_src'::regclass::oid::bigint) || cs_le4(0) || cs_le4(40)
         || decode(repeat('00', 40), 'hex')) IS NOT NULL AS emitted;
INSERT INTO cs_src VALUES (31, 1, 1, 'after the forged ones');
COMMIT;
SELECT cs_logged_since(:'before_truncate') AS logged_since_truncate;
SELECT * FROM cs_check();

-- a whole-row replica identity: old rows are logged whole
SELECT mvinc.track('cs_src', full_old_rows => true) IS NOT NULL AS tracked;
UPDATE cs_src SET v = v * 2 WHERE id <= 10;
DELETE FROM cs_src WHERE id = 30;
SELECT * FROM cs_check();
SELECT * FROM mvinc.history_check('cs_hist');

DROP TABLE cs_src CASCADE;
DROP FUNCTION cs_check();
DROP FUNCTION cs_logged_since(pg_lsn);
DROP FUNCTION cs_le4(bigint);
DROP FUNCTION cs_diff(regclass);
