-- colfile: random-access mini-block encodings (frame of reference, decimal
-- floats, scaled numerics, dictionaries, hex strings) and the choice
-- between them and zstd. Every column is compared with heap through a
-- scan (whole-chunk decoding), index point reads (single values, read in
-- place) and index range reads (whole blocks), at boundary values.
-- Row groups of 1200 rows: mini-blocks of 512, 512 and 176 rows.
SET mvinc.colfile_rows_per_group = 1200;
SET extra_float_digits = 3;
CREATE COLLATION enc_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE enc_h (id int PRIMARY KEY, i2 int2, i4 int4, i8 int8, d date, b bool,
                    ch "char", ts timestamptz, f4 float4, f8 float8, n numeric,
                    n2 numeric(12,2), t text, tci text COLLATE enc_ci, u uuid,
                    bx bytea, allnull int, konst text, hx text);
CREATE TABLE enc_c (LIKE enc_h INCLUDING ALL) USING colfile;

-- block 1 (ids 1..512): sequences, constants, decimals, hex strings;
-- block 2 (513..1024): extremes, NULLs, specials, mixed scales;
-- block 3 (1025..1200): low-cardinality values, a few NULLs;
-- columns with values repeated across blocks get a chunk dictionary
INSERT INTO enc_h
SELECT g,
  CASE WHEN g <= 512 THEN g::int2 WHEN g <= 1024 THEN (ARRAY[-32768, 32767, NULL, 0])[1 + g % 4]::int2 ELSE (g % 3)::int2 END,
  CASE WHEN g <= 512 THEN 7 WHEN g <= 1024 THEN (ARRAY[-2147483648, 2147483647, NULL, -1])[1 + g % 4] ELSE g % 5 END,
  CASE WHEN g <= 512 THEN g * 1000003::bigint - 5
       WHEN g <= 1024 THEN (ARRAY[-9223372036854775808, 9223372036854775807, NULL, 0, -1])[1 + g % 5]
       ELSE 42 END,
  CASE WHEN g <= 512 THEN date '2020-01-01' + g / 100 WHEN g <= 1024 THEN (ARRAY[date '4713-01-01 BC', date '5874897-12-31', NULL, 'infinity', '-infinity'])[1 + g % 5] ELSE date '2024-02-29' END,
  CASE WHEN g <= 1024 THEN g % 3 = 0 ELSE NULL END,
  CASE WHEN g <= 512 THEN chr(65 + g % 26)::"char" ELSE (ARRAY['\x80'::"char", '\xff'::"char", NULL])[1 + g % 3] END,
  timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',
  CASE WHEN g <= 512 THEN (g % 40) / 4.0 WHEN g <= 1024 THEN (ARRAY['NaN', '-0', 'Infinity', '-Infinity', '3.4e38', '1.4e-45', NULL, '0.1'])[1 + g % 8]::float4 ELSE 0.5 END,
  CASE WHEN g <= 512 THEN g * 0.001 * 7
       WHEN g <= 1024 THEN (ARRAY['NaN', '-0', 'Infinity', '-Infinity', '1.7976931348623157e308', '5e-324', NULL, '0.1', '0'])[1 + g % 9]::float8
       ELSE 1 / 3.0 END,
  CASE WHEN g <= 512 THEN round(g / 7.0, 3)
       WHEN g <= 1024 THEN (ARRAY['NaN', 'Infinity', '-Infinity', '1.5', '2.25', '-0.001', NULL, '123456789012345678901234567890', '0'])[1 + g % 9]::numeric
       ELSE 7 END,
  CASE WHEN g <= 512 THEN round((g * 7919 % 100000) / 100.0, 2) WHEN g <= 1024 THEN (ARRAY[-9999999999.99, 9999999999.99, NULL, 0])[1 + g % 4] ELSE 1.50 END,
  CASE WHEN g <= 512 THEN md5(g::text) WHEN g <= 1024 THEN (ARRAY['', 'ABCDEF', 'abc', 'x', NULL, repeat('long', 3000), 'żółw'])[1 + g % 7] ELSE (ARRAY['new', 'paid', 'shipped'])[1 + g % 3] END,
  (ARRAY['abc', 'ABC', 'Abc', 'abd', NULL])[1 + g % 5],
  CASE WHEN g % 11 = 0 THEN NULL ELSE md5((g % 17)::text)::uuid END,
  CASE WHEN g <= 512 THEN decode(md5(g::text), 'hex') ELSE (ARRAY['\x'::bytea, '\x00'::bytea, NULL])[1 + g % 3] END,
  NULL,
  'same',
  CASE WHEN g <= 1100 THEN md5((g % 300)::text) END
FROM generate_series(1, 1200) g;
INSERT INTO enc_c SELECT * FROM enc_h ORDER BY id;

-- the encoding of every block (a column absent here is all NULL)
SELECT attname, encoding, compression, blocks
  FROM mvinc.colfile_block_stats('enc_c') ORDER BY attnum, encoding, compression;

-- scans
SELECT count(*) AS scan_diff FROM (
  (SELECT h::text FROM enc_h h EXCEPT ALL SELECT c::text FROM enc_c c)
  UNION ALL
  (SELECT c::text FROM enc_c c EXCEPT ALL SELECT h::text FROM enc_h h)) x;
SELECT sum(i8) = (SELECT sum(i8) FROM enc_h WHERE id NOT BETWEEN 513 AND 1024) AS sum_i8,
       sum(n) = (SELECT sum(n) FROM enc_h WHERE id NOT BETWEEN 513 AND 1024) AS sum_n
  FROM enc_c WHERE id NOT BETWEEN 513 AND 1024;

-- point reads: one index fetch per row, each a single value per column
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE FUNCTION enc_point_diff(lo int, hi int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE k int; n bigint := 0; a text; b text;
BEGIN
  FOR k IN lo..hi LOOP
    SELECT h::text INTO a FROM enc_h h WHERE id = k;
    SELECT c::text INTO b FROM enc_c c WHERE id = k;
    IF a IS DISTINCT FROM b THEN
      RAISE NOTICE 'key %: heap % colfile %', k, a, b;
      n := n + 1;
    END IF;
  END LOOP;
  RETURN n;
END $$;
SELECT enc_point_diff(1, 1200) AS point_diff;
-- range reads: the second row of a block decodes the whole block
EXPLAIN (COSTS OFF) SELECT * FROM enc_c WHERE id BETWEEN 500 AND 530;
SELECT count(*) AS range_diff FROM (
  (SELECT h::text FROM enc_h h WHERE id BETWEEN 1 AND 1200
   EXCEPT ALL SELECT c::text FROM enc_c c WHERE id BETWEEN 1 AND 1200)) x;
-- values equal under the nondeterministic collation keep their spelling
SELECT tci COLLATE "C" AS tci, count(*) FROM enc_c WHERE tci = 'abc' GROUP BY 1 ORDER BY 1;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM mvinc.colfile_check('enc_c');

-- zstd over encodings: with no required gain, zstd wins wherever smaller
SET mvinc.colfile_zstd_min_gain = 0;
CREATE TABLE enc_z (LIKE enc_h INCLUDING ALL) USING colfile;
INSERT INTO enc_z SELECT * FROM enc_h ORDER BY id;
SELECT count(*) > 0 AS some_zstd FROM mvinc.colfile_block_stats('enc_z') WHERE compression = 'zstd';
SELECT count(*) AS zstd_diff FROM (
  (SELECT h::text FROM enc_h h EXCEPT ALL SELECT c::text FROM enc_z c)
  UNION ALL
  (SELECT c::text FROM enc_z c EXCEPT ALL SELECT h::text FROM enc_h h)) x;
SELECT * FROM mvinc.colfile_check('enc_z');
-- and never compressing an encoded block
SET mvinc.colfile_zstd_min_gain = 100;
TRUNCATE enc_z;
INSERT INTO enc_z SELECT * FROM enc_h ORDER BY id;
SELECT count(*) AS encoded_zstd FROM mvinc.colfile_block_stats('enc_z')
  WHERE compression = 'zstd' AND encoding <> 'plain';
SELECT * FROM mvinc.colfile_check('enc_z');
RESET mvinc.colfile_zstd_min_gain;
DROP TABLE enc_z;

-- ADD COLUMN with a default: old groups read the default, new groups
-- store it (a constant block); VACUUM FULL re-encodes the old ones
ALTER TABLE enc_h ADD COLUMN extra bigint DEFAULT 9223372036854775807;
ALTER TABLE enc_c ADD COLUMN extra bigint DEFAULT 9223372036854775807;
ALTER TABLE enc_h ADD COLUMN note text DEFAULT 'd41d8cd98f00b204e9800998ecf8427e';
ALTER TABLE enc_c ADD COLUMN note text DEFAULT 'd41d8cd98f00b204e9800998ecf8427e';
INSERT INTO enc_h (id, extra, note) SELECT g, CASE WHEN g % 2 = 0 THEN g END, md5(g::text) FROM generate_series(1201, 1800) g;
INSERT INTO enc_c (id, extra, note) SELECT g, CASE WHEN g % 2 = 0 THEN g END, md5(g::text) FROM generate_series(1201, 1800) g;
SELECT attname, encoding, compression, blocks
  FROM mvinc.colfile_block_stats('enc_c') WHERE attname IN ('extra', 'note')
  ORDER BY attnum, encoding, compression;
SELECT count(*) AS added_diff FROM (
  (SELECT h::text FROM enc_h h EXCEPT ALL SELECT c::text FROM enc_c c)
  UNION ALL
  (SELECT c::text FROM enc_c c EXCEPT ALL SELECT h::text FROM enc_h h)) x;
VACUUM FULL enc_c;
SELECT attname, encoding, compression, blocks
  FROM mvinc.colfile_block_stats('enc_c') WHERE attname IN ('extra', 'note')
  ORDER BY attnum, encoding, compression;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT enc_point_diff(1, 1800) AS point_diff_after_rewrite;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM mvinc.colfile_check('enc_c');

-- UPDATE and DELETE on encoded blocks
UPDATE enc_h SET f8 = f8 + 1, n2 = n2 / 3 WHERE id % 7 = 0;
UPDATE enc_c SET f8 = f8 + 1, n2 = n2 / 3 WHERE id % 7 = 0;
DELETE FROM enc_h WHERE id % 13 = 0;
DELETE FROM enc_c WHERE id % 13 = 0;
SELECT count(*) AS modified_diff FROM (
  (SELECT h::text FROM enc_h h EXCEPT ALL SELECT c::text FROM enc_c c)
  UNION ALL
  (SELECT c::text FROM enc_c c EXCEPT ALL SELECT h::text FROM enc_h h)) x;
VACUUM FULL enc_c;
SELECT count(*) AS rewritten_diff FROM (
  (SELECT h::text FROM enc_h h EXCEPT ALL SELECT c::text FROM enc_c c)
  UNION ALL
  (SELECT c::text FROM enc_c c EXCEPT ALL SELECT h::text FROM enc_h h)) x;
SELECT * FROM mvinc.colfile_check('enc_c');

-- ALTER TYPE to a domain over the same type keeps the old blocks (no
-- rewrite), read as the new type; new blocks are encoded as before
CREATE DOMAIN enc_f4 AS float4;
CREATE DOMAIN enc_num AS numeric;
CREATE TABLE enc_dom (id int, f float4, n numeric) USING colfile;
INSERT INTO enc_dom SELECT g, g / 4.0, round(g / 3.0, 2) FROM generate_series(1, 1000) g;
CREATE TEMP TABLE enc_node AS SELECT pg_relation_filenode('enc_dom') AS node;
ALTER TABLE enc_dom ALTER f TYPE enc_f4, ALTER n TYPE enc_num;
SELECT pg_relation_filenode('enc_dom') = node AS not_rewritten FROM enc_node;
INSERT INTO enc_dom SELECT g, g / 4.0, round(g / 3.0, 2) FROM generate_series(1001, 2000) g;
SELECT attname, encoding, compression, sum(blocks) AS blocks
  FROM mvinc.colfile_block_stats('enc_dom') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT sum(f), sum(n), count(*) FROM enc_dom;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE INDEX ON enc_dom (id);
SELECT * FROM enc_dom WHERE id IN (1, 2, 999, 1001, 2000) ORDER BY id;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM mvinc.colfile_check('enc_dom');
DROP TABLE enc_dom;
DROP DOMAIN enc_f4;
DROP DOMAIN enc_num;

DROP FUNCTION enc_point_diff(int, int);
DROP TABLE enc_h, enc_c;
DROP COLLATION enc_ci;
RESET extra_float_digits;
RESET mvinc.colfile_rows_per_group;
