-- Change capture: TOAST, NULLs, common types, replica identity FULL vs
-- DEFAULT, TRUNCATE, ALTER TABLE ADD/DROP COLUMN and DROP TABLE of a source.
\set VERBOSITY default

-- Every common type round-trips, NULLs included.
CREATE TABLE cap_types (
    id bigint PRIMARY KEY, b boolean, i2 smallint, i4 int, i8 bigint,
    f4 real, f8 double precision, n numeric, t text, vc varchar(5), c char(3),
    by bytea, d date, ts timestamp, tz timestamptz, iv interval, u uuid,
    j json, jb jsonb, a int[], ta text[], ip inet, e "char", x xml, r int4range);
SELECT mvinc.track('cap_types') AS cl \gset
INSERT INTO cap_types VALUES
  (1, true, 1, 2, 3, 1.5, 2.25, 12345.6789, 'text', 'vc', 'c', '\xdeadbeef',
   '2024-01-16', '2024-01-16 12:34:56', '2024-01-16 12:34:56+00', '1 day 2 hours',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1}', '{"b": [1, 2]}',
   '{1,NULL,3}', '{"x","y z"}', '10.0.0.1/8', 'q', '<a>1</a>', '[1,5)'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
-- the change log holds exactly the source rows (row comparison, NULL-safe)
SELECT count(*) AS logged,
       count(*) FILTER (WHERE (s.*)::text = (ROW(l.id, l.b, l.i2, l.i4, l.i8, l.f4, l.f8, l.n, l.t,
              l.vc, l.c, l.by, l.d, l.ts, l.tz, l.iv, l.u, l.j, l.jb, l.a, l.ta, l.ip, l.e,
              l.x, l.r))::text) AS identical
  FROM :cl l JOIN cap_types s USING (id);
SELECT id, t, jb, a, tz FROM :cl ORDER BY id;

-- TOAST: values above 2 kB, changed and unchanged.
CREATE TABLE cap_toast (id int PRIMARY KEY, small int, big text, big2 text);
ALTER TABLE cap_toast ALTER big SET STORAGE EXTERNAL;   -- stored out of line, not compressed
SELECT mvinc.track('cap_toast') AS cl \gset
INSERT INTO cap_toast SELECT 1, 1, repeat('x', 5000), string_agg(md5(g::text), '') FROM generate_series(1, 200) g;
UPDATE cap_toast SET small = 2 WHERE id = 1;                 -- both TOASTed columns unchanged
UPDATE cap_toast SET big = repeat('y', 6000) WHERE id = 1;   -- one changed, one unchanged
DELETE FROM cap_toast;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_seq AS seq, _mvinc_op AS op, _mvinc_image AS img, id, small,
       length(big) AS big_len, left(big, 1) AS big_first, length(big2) AS big2_len
  FROM :cl ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n';
-- new images of updates are complete (never missing)
SELECT count(*) AS incomplete FROM :cl WHERE _mvinc_image = 'n' AND (big IS NULL OR big2 IS NULL);

-- Replica identity FULL: old images are complete ('o'), TOAST included.
CREATE TABLE cap_full (k int, v text, big text);
SELECT mvinc.track('cap_full');        -- no key: refused
SELECT mvinc.track('cap_full', full_old_rows => true) AS cl_full \gset
SELECT relreplident FROM pg_class WHERE oid = 'cap_full'::regclass;
INSERT INTO cap_full VALUES (1, 'a', repeat('z', 4000));
UPDATE cap_full SET v = 'b';
DELETE FROM cap_full;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_seq AS seq, _mvinc_op AS op, _mvinc_image AS img, k, v, length(big) AS big_len
  FROM :cl_full ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n';

-- A table with a primary key switched to FULL by a later track() call.
CREATE TABLE cap_pk (id int PRIMARY KEY, v text);
SELECT mvinc.track('cap_pk') AS cl \gset
INSERT INTO cap_pk VALUES (1, 'a');
UPDATE cap_pk SET v = 'b';
SELECT mvinc.track('cap_pk', true)::text = :'cl' AS same_changelog;
UPDATE cap_pk SET v = 'c';
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT dense_rank() OVER (ORDER BY _mvinc_lsn) AS tx, _mvinc_op AS op, _mvinc_image AS img, id, v
  FROM :cl ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n';

-- TRUNCATE is logged as op 't' with NULL columns.
TRUNCATE cap_pk;
INSERT INTO cap_pk VALUES (7, 'after truncate');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, _mvinc_image AS img, id, v FROM :cl
 WHERE _mvinc_lsn > (SELECT max(_mvinc_lsn) FROM :cl WHERE _mvinc_op = 'u')
 ORDER BY _mvinc_lsn, _mvinc_seq;

-- ALTER TABLE ADD/DROP COLUMN: the change log follows.
ALTER TABLE cap_pk ADD COLUMN extra int DEFAULT 5, DROP COLUMN v;
SELECT attname FROM pg_attribute WHERE attrelid = :'cl'::regclass AND attnum > 6 AND NOT attisdropped ORDER BY attnum;
INSERT INTO cap_pk VALUES (8, 9);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, id, extra FROM :cl WHERE id = 8;

-- RENAME COLUMN and a column type change follow too
ALTER TABLE cap_pk RENAME COLUMN extra TO renamed;
ALTER TABLE cap_pk ALTER COLUMN renamed TYPE text;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = :'cl'::regclass AND attnum > 6 AND NOT attisdropped ORDER BY attnum;
INSERT INTO cap_pk VALUES (9, 'nine');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, id, renamed FROM :cl WHERE id >= 8 ORDER BY id;

-- a transaction that writes a column and then renames it: its values
-- follow the column (capture matches columns by attribute number)
BEGIN;
INSERT INTO cap_pk VALUES (10, 'ten');
UPDATE cap_pk SET renamed = 'nine!' WHERE id = 9;
ALTER TABLE cap_pk RENAME COLUMN renamed TO again;
INSERT INTO cap_pk VALUES (11, 'eleven');
COMMIT;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, _mvinc_image AS img, id, again FROM :cl WHERE id >= 9
 ORDER BY _mvinc_lsn, _mvinc_seq;
-- a column dropped and added again under its name is another column: the
-- dropped one's values do not land in it
BEGIN;
UPDATE cap_pk SET again = 'old' WHERE id = 10;
ALTER TABLE cap_pk DROP COLUMN again;
ALTER TABLE cap_pk ADD COLUMN again text;
INSERT INTO cap_pk VALUES (12, 'new');
COMMIT;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, _mvinc_image AS img, id, again FROM :cl WHERE id >= 10
 ORDER BY _mvinc_lsn, _mvinc_seq;

-- a view over a partition whose columns are renamed and added through its
-- parent (the only way for an inherited column): its change log follows
CREATE TABLE cap_parted (id int, k int, v int) PARTITION BY RANGE (id);
CREATE TABLE cap_part1 PARTITION OF cap_parted FOR VALUES FROM (0) TO (100);
ALTER TABLE cap_part1 ADD PRIMARY KEY (id);
INSERT INTO cap_parted VALUES (1, 1, 10);
CREATE MATERIALIZED VIEW cap_part_sum WITH (mvinc.incremental = true) AS
  SELECT k, sum(v) AS s, count(*) AS n FROM cap_part1 GROUP BY k;
BEGIN;
INSERT INTO cap_parted VALUES (2, 1, 20);
ALTER TABLE cap_parted RENAME COLUMN v TO w;
ALTER TABLE cap_parted ADD COLUMN note text;
INSERT INTO cap_parted VALUES (3, 1, 30, 'x');
COMMIT;
SELECT mode FROM mvinc.refresh('cap_part_sum');
SELECT * FROM cap_part_sum;
SELECT * FROM mvinc.verify_view('cap_part_sum');
SELECT attname FROM pg_attribute
 WHERE attrelid = (SELECT changelog FROM mvinc.tracked WHERE relid = 'cap_part1'::regclass)
   AND attnum > 6 AND NOT attisdropped ORDER BY attnum;
DROP TABLE cap_parted CASCADE;

-- DROP TABLE of a tracked source drops its change log and the tracking.
SELECT count(*) AS tracked_before FROM mvinc.tracked WHERE relid = 'cap_pk'::regclass;
DROP TABLE cap_pk;
SELECT to_regclass(:'cl') AS changelog_after_drop;
SELECT count(*) AS tracked_after FROM mvinc.tracked t
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.relid);

-- untrack drops the change log; tracking again starts an empty one
SELECT mvinc.untrack('cap_full');
SELECT mvinc.untrack('cap_full');   -- idempotent
SELECT to_regclass(:'cl_full') IS NULL AS changelog_dropped;
INSERT INTO cap_full VALUES (2, 'untracked', NULL);
SELECT mvinc.track('cap_full', true) AS cl \gset
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT count(*) AS rows_after_retrack FROM :cl;
-- a change right after tracking again is captured (the decoder's cache of
-- tracked tables is invalidated in WAL order)
INSERT INTO cap_full VALUES (3, 'tracked again', NULL);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT _mvinc_op AS op, _mvinc_image AS img, k, v FROM :cl;

-- Names that need quoting, a collation, a domain, an enum and generated columns.
CREATE SCHEMA "Cap Schema";
CREATE TYPE "Cap Schema"."Mood" AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN "Cap Schema".posint AS int CHECK (VALUE > 0);
CREATE TABLE "Cap Schema"."Odd ""Name""" (
    "Key Col" int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "Col A" varchar(10) COLLATE "C",
    mood "Cap Schema"."Mood",
    n "Cap Schema".posint,
    twice int GENERATED ALWAYS AS (n * 2) STORED);
SELECT mvinc.track('"Cap Schema"."Odd ""Name"""') AS cl \gset
SELECT attname, format_type(atttypid, atttypmod), collname FROM pg_attribute a
  LEFT JOIN pg_collation c ON c.oid = a.attcollation AND a.attcollation <> 100
 WHERE attrelid = :'cl'::regclass AND attnum > 6 ORDER BY attnum;
INSERT INTO "Cap Schema"."Odd ""Name""" ("Col A", mood, n) VALUES ('x y', 'happy', 21);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT "Key Col", "Col A", mood, n, twice FROM :cl;
DROP TABLE "Cap Schema"."Odd ""Name""";
DROP SCHEMA "Cap Schema" CASCADE;

-- leave nothing tracked behind
DROP TABLE cap_types, cap_toast, cap_full;
