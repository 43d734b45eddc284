-- colfile: a row group's min/max per column are kept in the order of the
-- column's type and collation when the group was written. ALTER COLUMN
-- TYPE to a binary-compatible type of another order (int4 <-> oid) or to
-- another collation does not rewrite the table: groups written before
-- must not be skipped by min/max any more. Compared with heap.
CREATE TABLE mm_heap (id int, v int, o oid, t text COLLATE "C") USING heap;
CREATE TABLE mm_col (id int, v int, o oid, t text COLLATE "C") USING colfile;
CREATE PROCEDURE mm_fill(tab regclass) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$INSERT INTO %s SELECT g, g - 2, (g * 1000000000::bigint)::oid,
                  CASE WHEN g %% 2 = 0 THEN 'B' ELSE 'a' END || g
                  FROM generate_series(1, 4) g$q$, tab);
END $$;
CALL mm_fill('mm_heap');
CALL mm_fill('mm_col');
SELECT relfilenode AS rfn FROM pg_class WHERE oid = 'mm_col'::regclass \gset
ALTER TABLE mm_heap ALTER COLUMN v TYPE oid, ALTER COLUMN o TYPE int4,
  ALTER COLUMN t TYPE text COLLATE "und-x-icu";
ALTER TABLE mm_col ALTER COLUMN v TYPE oid, ALTER COLUMN o TYPE int4,
  ALTER COLUMN t TYPE text COLLATE "und-x-icu";
-- not rewritten: the groups and their min/max are the ones written before
SELECT relfilenode = :rfn AS same_file FROM pg_class WHERE oid = 'mm_col'::regclass;
CREATE FUNCTION mm_query(tab regclass, cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT string_agg(id::text, '','' ORDER BY id) FROM %s WHERE %s', tab, cond) INTO r;
  RETURN coalesce(r, '-');
END $$;
SELECT cond, mm_query('mm_heap', cond) AS heap, mm_query('mm_col', cond) AS colfile
FROM (VALUES ('v > 100'), ('v < 3'), ('v = 4294967295'), ('o < 0'),
             ('o > 1500000000'), ('t < ''B'''), ('t > ''a4'''), ('t = ''a3''')) c(cond);
-- the aggregate scan skips groups the same way
SELECT count(*), max(o) FROM mm_col WHERE o < 0;
SELECT count(*), max(o) FROM mm_heap WHERE o < 0;
-- rows written after the change have min/max in the new order: used
INSERT INTO mm_col SELECT id + 10, v, o, t FROM mm_col;
INSERT INTO mm_heap SELECT id + 10, v, o, t FROM mm_heap;
SELECT cond, mm_query('mm_heap', cond) AS heap, mm_query('mm_col', cond) AS colfile
FROM (VALUES ('v > 100'), ('o < 0'), ('t < ''B''')) c(cond);
-- the group of one row, o = 5, is skipped; the first two are read (the
-- first because its min/max were taken as oids)
INSERT INTO mm_col VALUES (20, 1, 5, 'z');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM mm_col WHERE o < 0;
DROP TABLE mm_heap, mm_col;
DROP FUNCTION mm_query(regclass, text);
DROP PROCEDURE mm_fill(regclass);
