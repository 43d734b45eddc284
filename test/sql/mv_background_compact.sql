-- Background compaction: a refresh that leaves more append rows than
-- mvinc.background_compact_fraction of the storage's rows has them folded
-- by a background worker after it commits; reads stay exact throughout.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
SET mvinc.background_compact_fraction = 0.05;

CREATE FUNCTION bc_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;

-- the view's append rows once none are left, or after 30 s
CREATE FUNCTION bc_wait_folded(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  FOR i IN 1..300 LOOP
    SELECT append_rows INTO n FROM mvinc.views WHERE view = v;
    EXIT WHEN n = 0;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN n;
END $$;

CREATE TABLE bc_src (id int PRIMARY KEY, g int NOT NULL, x numeric NOT NULL);
INSERT INTO bc_src SELECT i, i % 200, i FROM generate_series(1, 2000) i;
CREATE MATERIALIZED VIEW bc_v WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(x) AS s, max(x) AS hi FROM bc_src GROUP BY g;
-- the fraction is of the storage's rows as last analyzed
SELECT relname FROM pg_class WHERE oid = (SELECT storage_oid FROM mvinc.mv_view WHERE view = 'bc_v'::regclass) \gset
ANALYZE mvinc.:"relname";

-- below the fraction (5 of 200 groups): the rows stay until a later fold
INSERT INTO bc_src SELECT i, i % 5, i FROM generate_series(2001, 2005) i;
SELECT mode FROM mvinc.refresh('bc_v');
SELECT append_rows FROM mvinc.views WHERE view = 'bc_v'::regclass;

-- refreshed in a transaction that rolls back: nothing to fold
BEGIN;
INSERT INTO bc_src SELECT i, i % 50, i FROM generate_series(2006, 2100) i;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mode FROM mvinc.refresh('bc_v');
ROLLBACK;
SELECT append_rows FROM mvinc.views WHERE view = 'bc_v'::regclass;

-- past it (55 groups): folded in the background once the refresh commits
INSERT INTO bc_src SELECT i, i % 50, i FROM generate_series(2101, 2200) i;
SELECT mode FROM mvinc.refresh('bc_v');
SELECT append_rows > 10 AS appended FROM mvinc.views WHERE view = 'bc_v'::regclass;
SELECT bc_diff('bc_v');
SELECT bc_wait_folded('bc_v');
SELECT mvinc.read_path('bc_v'), bc_diff('bc_v');
SELECT * FROM mvinc.verify_view('bc_v');

-- off: the rows wait
SET mvinc.background_compact_fraction = 0;
INSERT INTO bc_src SELECT i, i % 60, i FROM generate_series(2201, 2300) i;
SELECT mode FROM mvinc.refresh('bc_v');
SELECT pg_sleep(0.5);
SELECT append_rows > 10 AS still_appended FROM mvinc.views WHERE view = 'bc_v'::regclass;
SELECT mvinc.read_path('bc_v'), bc_diff('bc_v');
RESET mvinc.background_compact_fraction;

DROP MATERIALIZED VIEW bc_v;
DROP TABLE bc_src;
