-- colfile: index point lookups (single-value decoding on first touch of a
-- mini-block, whole-block decoding on the second) agree with heap, for
-- every kind of column and after UPDATE, DELETE, savepoints, VACUUM,
-- TRUNCATE, VACUUM FULL, ADD/DROP COLUMN.
SET mvinc.colfile_rows_per_group = 2000;
CREATE TABLE lk_h (id int PRIMARY KEY, i8 bigint, f float8, n numeric, t text,
                   b bool, d date, nul text, big text);
CREATE TABLE lk_c (LIKE lk_h INCLUDING ALL) USING colfile;
INSERT INTO lk_h SELECT g, g::bigint * 1000003, g / 7.0, round(g / 3.0, 2), md5(g::text),
  g % 3 = 0, date '2020-01-01' + g % 400, CASE WHEN g % 5 = 0 THEN NULL ELSE 'v' || g END,
  CASE WHEN g % 997 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 5000) g;
INSERT INTO lk_c SELECT * FROM lk_h;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- compare the rows an index fetch returns for a set of keys
CREATE FUNCTION lk_diff(keys int[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE k int; n bigint := 0; a text; b text;
BEGIN
  FOREACH k IN ARRAY keys LOOP
    SELECT h::text INTO a FROM lk_h h WHERE id = k;
    SELECT c::text INTO b FROM lk_c c WHERE id = k;
    IF a IS DISTINCT FROM b THEN
      RAISE NOTICE 'key %: heap % colfile %', k, a, b;
      n := n + 1;
    END IF;
  END LOOP;
  RETURN n;
END $$;

EXPLAIN (COSTS OFF) SELECT * FROM lk_c WHERE id = 42;
-- one row per lookup (first touch), across blocks and row groups
SELECT lk_diff(ARRAY[1, 2, 511, 512, 513, 997, 1994, 2000, 2001, 4999, 5000, 0, 5001]);
-- several rows of one block in one scan (second touch decodes the block)
SELECT id, f, t, nul, length(big) FROM lk_c WHERE id IN (5, 6, 7, 997) ORDER BY id;
SELECT (SELECT array_agg(c::text ORDER BY id) FROM lk_c c WHERE id BETWEEN 990 AND 1030) =
       (SELECT array_agg(h::text ORDER BY id) FROM lk_h h WHERE id BETWEEN 990 AND 1030) AS range_agrees;
-- projection: only some columns
SELECT t, nul FROM lk_c WHERE id = 1995;
-- nested loop: inner index fetches keyed by an outer scan
SELECT count(*), sum(length(c.t)), sum(length(c.big)) FROM generate_series(1, 5000, 13) g
  JOIN lk_c c ON c.id = g;

-- same session: UPDATE, DELETE, savepoints
BEGIN;
UPDATE lk_h SET t = 'upd', nul = NULL WHERE id IN (3, 600, 2500);
UPDATE lk_c SET t = 'upd', nul = NULL WHERE id IN (3, 600, 2500);
DELETE FROM lk_h WHERE id IN (4, 601);
DELETE FROM lk_c WHERE id IN (4, 601);
SELECT lk_diff(ARRAY[3, 4, 600, 601, 2500]);
SAVEPOINT s;
UPDATE lk_h SET t = 'sub' WHERE id = 5;
UPDATE lk_c SET t = 'sub' WHERE id = 5;
SELECT lk_diff(ARRAY[5]);
ROLLBACK TO s;
SELECT lk_diff(ARRAY[5]);
SELECT t FROM lk_c WHERE id = 5;
COMMIT;
SELECT lk_diff(ARRAY[3, 4, 5, 600, 601, 2500]);
-- FOR UPDATE and UPDATE ... RETURNING fetch single rows
SELECT id, t FROM lk_c WHERE id = 2500 FOR UPDATE;
UPDATE lk_c SET b = NOT b WHERE id = 1999 RETURNING id, t, nul, b;
UPDATE lk_h SET b = NOT b WHERE id = 1999;

-- VACUUM, ADD/DROP COLUMN
VACUUM lk_c;
ALTER TABLE lk_h ADD COLUMN extra int DEFAULT 7;
ALTER TABLE lk_c ADD COLUMN extra int DEFAULT 7;
ALTER TABLE lk_h DROP COLUMN d;
ALTER TABLE lk_c DROP COLUMN d;
SELECT lk_diff(ARRAY[1, 3, 4, 512, 1999, 2500, 5000]);
SELECT id, extra FROM lk_c WHERE id = 4999;

-- VACUUM FULL rewrites: lookups read the new files
VACUUM FULL lk_c;
SELECT lk_diff(ARRAY[1, 3, 4, 512, 1999, 2500, 5000]);
-- TRUNCATE and refill in one transaction
BEGIN;
TRUNCATE lk_c;
SELECT count(*) FROM lk_c WHERE id = 1;
INSERT INTO lk_c SELECT * FROM lk_h;
SELECT lk_diff(ARRAY[1, 3, 4, 512, 1999, 2500, 5000]);
COMMIT;
SELECT lk_diff(ARRAY[1, 3, 4, 512, 1999, 2500, 5000]);
SELECT * FROM mvinc.colfile_check('lk_c');
DROP TABLE lk_h, lk_c;
DROP FUNCTION lk_diff(int[]);
