-- ALTER TABLE of a tracked source that would make change capture blind is
-- refused (issue 11, hole 6): a change to an access method other than
-- heap and colfile (logical decoding reads only heap's WAL; colfile
-- writers log row messages), SET UNLOGGED (no WAL at all) and a replica
-- identity that no longer identifies updated and deleted rows.  Nothing
-- of the statement is applied; the views stay exact.
-- An access method that is not heap by name (its WAL would be heap's, but
-- mvinc knows only heap and colfile)
CREATE ACCESS METHOD sa_other TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE sa_src (id int PRIMARY KEY, g int, v int);
INSERT INTO sa_src SELECT i, i % 3, i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW sa_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM sa_src GROUP BY g;
CREATE MATERIALIZED VIEW sa_proj WITH (mvinc.incremental = true) AS
  SELECT id, v FROM sa_src WHERE v > 5;
CREATE FUNCTION sa_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE q text := rtrim(pg_get_viewdef(v), ';'); n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
\set VERBOSITY default

ALTER TABLE sa_src SET ACCESS METHOD sa_other;
-- as one subcommand of several
ALTER TABLE sa_src ADD COLUMN w int, SET ACCESS METHOD sa_other;
ALTER TABLE sa_src SET UNLOGGED;
ALTER TABLE sa_src REPLICA IDENTITY NOTHING;
-- nothing was applied: still heap, logged, no new column
SELECT a.amname, c.relpersistence, c.relreplident,
       (SELECT count(*) FROM pg_attribute WHERE attrelid = c.oid AND attname = 'w') AS w
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'sa_src'::regclass;

-- what capture follows is accepted: heap to heap (a rewrite), to colfile
-- and back (changes between are captured), another replica identity that
-- identifies rows, other subcommands
ALTER TABLE sa_src SET ACCESS METHOD heap;
ALTER TABLE sa_src SET ACCESS METHOD colfile;
-- a rewrite: the next refresh recomputes; the one after reads the change log
SELECT mode FROM mvinc.refresh('sa_agg');
INSERT INTO sa_src VALUES (101, 2, 7), (102, 0, 8);
UPDATE sa_src SET v = v * 2 WHERE id IN (4, 5, 101);
DELETE FROM sa_src WHERE id = 6;
SELECT mode FROM mvinc.refresh('sa_agg');
SELECT sa_diff('sa_agg') AS agg_diff, sa_diff('sa_proj') AS proj_diff;
ALTER TABLE sa_src SET ACCESS METHOD heap;
ALTER TABLE sa_src REPLICA IDENTITY USING INDEX sa_src_pkey;
ALTER TABLE sa_src REPLICA IDENTITY FULL;
ALTER TABLE sa_src SET LOGGED;
INSERT INTO sa_src VALUES (100, 1, 100);
UPDATE sa_src SET v = v + 1 WHERE id IN (1, 2);
DELETE FROM sa_src WHERE id = 3;
SELECT mode FROM mvinc.refresh('sa_agg');
SELECT mode FROM mvinc.refresh('sa_proj');
SELECT sa_diff('sa_agg') AS agg_diff, sa_diff('sa_proj') AS proj_diff,
       mvinc.read_path('sa_agg') AS agg_path, mvinc.read_path('sa_proj') AS proj_path;

-- a table tracked with mvinc.track alone
CREATE TABLE sa_tracked (id int PRIMARY KEY, v int);
SELECT mvinc.track('sa_tracked') IS NOT NULL AS tracked;
ALTER TABLE sa_tracked SET ACCESS METHOD sa_other;
SELECT mvinc.untrack('sa_tracked');
ALTER TABLE sa_tracked SET ACCESS METHOD sa_other;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'sa_tracked'::regclass;
DROP TABLE sa_tracked;

-- a table that is not tracked changes its access method freely
CREATE TABLE sa_plain (id int PRIMARY KEY, v int);
ALTER TABLE sa_plain SET ACCESS METHOD sa_other;
ALTER TABLE sa_plain SET ACCESS METHOD heap;
DROP TABLE sa_plain;

-- a source whose last view is dropped is no longer tracked (its change log
-- would keep every row): it changes its access method freely
DROP MATERIALIZED VIEW sa_agg;
SELECT count(*) AS still_tracked FROM mvinc.tracked WHERE relid = 'sa_src'::regclass;
DROP MATERIALIZED VIEW sa_proj;
SELECT count(*) AS still_tracked FROM mvinc.tracked WHERE relid = 'sa_src'::regclass;
ALTER TABLE sa_src SET ACCESS METHOD sa_other;
-- one that mvinc.track() asked for stays tracked after its last view
CREATE TABLE sa_asked (id int PRIMARY KEY, v int);
SELECT mvinc.track('sa_asked') IS NOT NULL AS tracked;
CREATE MATERIALIZED VIEW sa_asked_v WITH (mvinc.incremental = true) AS SELECT id, v FROM sa_asked;
DROP MATERIALIZED VIEW sa_asked_v;
SELECT count(*) AS still_tracked FROM mvinc.tracked WHERE relid = 'sa_asked'::regclass;
SELECT mvinc.untrack('sa_asked');
DROP TABLE sa_asked;
DROP TABLE sa_src;
DROP ACCESS METHOD sa_other;
DROP FUNCTION sa_diff(regclass);
-- a projection view keeps its rows' primary key in columns of the key's
-- type: changing that type is refused (every refresh failed after it); a
-- column the view selects is PostgreSQL's to refuse; with only aggregate
-- views the key may change
CREATE TABLE sa_pk (id int PRIMARY KEY, k int, x int);
INSERT INTO sa_pk SELECT i, i % 5, i FROM generate_series(1, 10) i;
CREATE MATERIALIZED VIEW sa_pk_p WITH (mvinc.incremental = true) AS SELECT k, x FROM sa_pk;
CREATE MATERIALIZED VIEW sa_pk_a WITH (mvinc.incremental = true) AS
  SELECT k, count(*) AS n FROM sa_pk GROUP BY k;
ALTER TABLE sa_pk ALTER COLUMN id TYPE bigint;
ALTER TABLE sa_pk ALTER COLUMN x TYPE bigint;
DROP MATERIALIZED VIEW sa_pk_p;
ALTER TABLE sa_pk ALTER COLUMN id TYPE bigint;
INSERT INTO sa_pk VALUES (5000000000, 1, 1);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('sa_pk_a');
SELECT * FROM sa_pk_a ORDER BY k;
DROP TABLE sa_pk CASCADE;
-- a source column renamed through ALTER VIEW, ALTER MATERIALIZED VIEW or
-- ALTER FOREIGN TABLE (PostgreSQL renames a table's column there too): the
-- change log follows, as for ALTER TABLE.  (It kept the old name: reads
-- failed, and after the next ALTER TABLE the column's pending values came
-- into the views as NULL.)
CREATE TABLE sa_rn (id int PRIMARY KEY, k int NOT NULL, v int, pad text);
INSERT INTO sa_rn SELECT g, g % 10, g, 'x' FROM generate_series(1, 100) g;
CREATE MATERIALIZED VIEW sa_rn_p WITH (mvinc.incremental = true) AS SELECT id, k, v FROM sa_rn;
CREATE MATERIALIZED VIEW sa_rn_h WITH (mvinc.history = true, mvinc.key = 'id') AS SELECT id, k, v FROM sa_rn;
ALTER VIEW sa_rn RENAME COLUMN v TO w;
UPDATE sa_rn SET w = w + 1 WHERE id <= 30;
ALTER MATERIALIZED VIEW sa_rn RENAME COLUMN w TO x;
UPDATE sa_rn SET x = x + 1 WHERE id <= 20;
ALTER FOREIGN TABLE sa_rn RENAME COLUMN x TO y;
UPDATE sa_rn SET y = y + 1 WHERE id <= 10;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT count(*) AS pending_differing FROM (
  (SELECT id, k, y FROM sa_rn EXCEPT ALL TABLE sa_rn_p) UNION ALL (TABLE sa_rn_p EXCEPT ALL SELECT id, k, y FROM sa_rn)) d;
ALTER TABLE sa_rn RENAME COLUMN pad TO pad2;
REFRESH MATERIALIZED VIEW sa_rn_p;
REFRESH MATERIALIZED VIEW sa_rn_h;
SELECT (SELECT count(*) FROM ((SELECT id, k, y FROM sa_rn EXCEPT ALL TABLE sa_rn_p)
                              UNION ALL (TABLE sa_rn_p EXCEPT ALL SELECT id, k, y FROM sa_rn)) d) AS refreshed_differing,
       (SELECT count(*) FROM ((SELECT id, k, y FROM sa_rn EXCEPT ALL
                               SELECT id, k, v FROM sa_rn_h WHERE valid_to = 'infinity')
                              UNION ALL (SELECT id, k, v FROM sa_rn_h WHERE valid_to = 'infinity'
                               EXCEPT ALL SELECT id, k, y FROM sa_rn)) d) AS history_differing,
       (SELECT count(*) FROM sa_rn_h) AS versions;
-- a refusal names the history views too
ALTER TABLE sa_rn SET UNLOGGED;
DROP TABLE sa_rn CASCADE;
-- a primary key replaced by one of other columns or types under a
-- projection view is refused (the view identifies rows by hidden columns
-- of the key it was created with: it was left unreadable and
-- unrefreshable for good); one of the same types is accepted
CREATE TABLE sa_pk2 (id int PRIMARY KEY, k int NOT NULL, t text NOT NULL, v int);
INSERT INTO sa_pk2 SELECT g, g % 10, g::text, g FROM generate_series(1, 100) g;
CREATE MATERIALIZED VIEW sa_pk2_p WITH (mvinc.incremental = true) AS SELECT id, k, v FROM sa_pk2;
ALTER TABLE sa_pk2 DROP CONSTRAINT sa_pk2_pkey, ADD PRIMARY KEY (k, id);
ALTER TABLE sa_pk2 DROP CONSTRAINT sa_pk2_pkey, ADD PRIMARY KEY (t);
CREATE UNIQUE INDEX sa_pk2_t ON sa_pk2 (t);
ALTER TABLE sa_pk2 DROP CONSTRAINT sa_pk2_pkey, ADD PRIMARY KEY USING INDEX sa_pk2_t;
-- the same shape: accepted, and the view stays exact
ALTER TABLE sa_pk2 DROP CONSTRAINT sa_pk2_pkey, ADD PRIMARY KEY (id);
UPDATE sa_pk2 SET v = v + 1 WHERE id <= 10;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
REFRESH MATERIALIZED VIEW sa_pk2_p;
SELECT count(*) AS differing FROM ((SELECT id, k, v FROM sa_pk2 EXCEPT ALL TABLE sa_pk2_p)
                                   UNION ALL (TABLE sa_pk2_p EXCEPT ALL SELECT id, k, v FROM sa_pk2)) d;
DROP TABLE sa_pk2 CASCADE;
-- a column's collation changed while no view used it: a view created
-- later compares logged values by the new collation too (the change log
-- kept the old one: 'c' was the max of {'C1','c'} read through the log)
CREATE TABLE sa_coll (id int PRIMARY KEY, g int, k text);
INSERT INTO sa_coll SELECT i, i % 3, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'B' END || i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW sa_coll_n WITH (mvinc.incremental = true) AS SELECT g, count(*) FROM sa_coll GROUP BY g;
ALTER TABLE sa_coll ALTER COLUMN k TYPE text COLLATE "und-x-icu";
CREATE MATERIALIZED VIEW sa_coll_m WITH (mvinc.incremental = true) AS
  SELECT g, min(k), max(k), count(*) FROM sa_coll GROUP BY g;
INSERT INTO sa_coll VALUES (102, 1, 'c'), (103, 1, 'C1'), (104, 2, 'b'), (105, 2, 'A2');
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
CREATE VIEW sa_coll_live AS SELECT g, min(k), max(k), count(*) FROM sa_coll GROUP BY g;
SELECT * FROM sa_coll_m ORDER BY g;
SELECT count(*) AS hybrid_differing FROM ((TABLE sa_coll_m EXCEPT ALL TABLE sa_coll_live)
                                          UNION ALL (TABLE sa_coll_live EXCEPT ALL TABLE sa_coll_m)) d;
REFRESH MATERIALIZED VIEW sa_coll_m;
SELECT count(*) AS refreshed_differing FROM ((TABLE sa_coll_m EXCEPT ALL TABLE sa_coll_live)
                                             UNION ALL (TABLE sa_coll_live EXCEPT ALL TABLE sa_coll_m)) d;
DROP TABLE sa_coll CASCADE;
