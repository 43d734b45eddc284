-- Differential test of the transparent rewrite: a seeded random workload on
-- one source (inserts, updates including group keys, deletes, NULLs,
-- TRUNCATE, rollbacks, savepoints, checks inside a transaction that wrote
-- the source, refreshes that append or fold, compactions, REFRESH ... WITH
-- NO DATA, a view dropped and made again); after every step each query of
-- a fixed list runs with mvinc.enable_rewrite on and off in the same
-- REPEATABLE READ snapshot (or in the transaction that wrote), and the two
-- answers must be equal as multisets of rows (EXCEPT ALL both ways, on the
-- values and on their text).  A mismatch stops the run and names the step,
-- the query and the view it was planned onto.  The rewritten executions
-- are counted from EXPLAIN's 'Rewritten onto view' line.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;
SET mvinc.enable_rewrite = on;
SET rd.even = off;

-- no float columns: int and numeric sums are exact on either path
CREATE TABLE rd_src (id int PRIMARY KEY, g int, h text, v numeric(10,2), w int, c int NOT NULL);
INSERT INTO rd_src
  SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 6 END,
         CASE WHEN i % 13 = 0 THEN NULL ELSE 'h' || (i % 4) END,
         CASE WHEN i % 7 = 0 THEN NULL ELSE i * 2.25 END,
         CASE WHEN i % 5 = 0 THEN NULL ELSE i % 9 END, i % 50
  FROM generate_series(1, 80) i;

-- the views, kept by definition so that a step can drop one and make it again
CREATE TABLE rd_view (name text PRIMARY KEY, def text NOT NULL);
INSERT INTO rd_view VALUES
  -- two keys, every kind of aggregate the roll-up combines
  ('rd_gh', 'SELECT g, h, count(*) AS n, sum(v) AS sv, count(v) AS cv, min(v) AS lo, max(v) AS hi,
                    sum(w) AS sw, count(w) AS cw, max(w) AS mw, min(h) AS mh, sum(c) AS sc
             FROM rd_src GROUP BY g, h'),
  -- a WHERE on a key column
  ('rd_pos', 'SELECT g, w, count(*) AS n, sum(v) AS sv, count(v) AS cv, max(h) AS xh, min(c) AS lc
              FROM rd_src WHERE g > 1 GROUP BY g, w'),
  -- no GROUP BY: one row; every aggregate retractable
  ('rd_all', 'SELECT count(*) AS n, sum(v) AS sv, count(v) AS cv, sum(w) AS sw, count(w) AS cw, sum(c) AS sc
              FROM rd_src'),
  -- FILTER, bool_or, a WHERE on the key
  ('rd_h', 'SELECT h, count(*) AS n, count(*) FILTER (WHERE w > 4) AS nbig,
                   sum(v) FILTER (WHERE w > 4) AS sbig, sum(v) AS sv, count(v) AS cv, bool_or(c > 40) AS anybig
            FROM rd_src WHERE h IS NOT NULL GROUP BY h');
CREATE FUNCTION rd_make(name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE MATERIALIZED VIEW %I WITH (mvinc.incremental = true) AS %s',
                 name, (SELECT def FROM rd_view v WHERE v.name = rd_make.name));
END $$;
SELECT count(*) AS views FROM (SELECT rd_make(name) FROM rd_view ORDER BY name) m;

-- The queries: rewritable ones (the same grouping, roll-ups to fewer keys
-- or none, conditions on int and text keys, avg from sum and count, HAVING,
-- ORDER BY / LIMIT, DISTINCT, a subquery), then ones no view answers.
-- toplevel: the aggregate is the query's top level (mvinc.explain_rewrite
-- looks at that level only).
CREATE TABLE rd_q (qi int PRIMARY KEY, q text NOT NULL, rewritable bool NOT NULL,
                   toplevel bool NOT NULL DEFAULT true);
INSERT INTO rd_q (qi, rewritable, q) VALUES
  (1, true, 'SELECT g, h, count(*) AS n, sum(v) AS sv, min(v) AS lo, max(v) AS hi FROM rd_src GROUP BY g, h'),
  (2, true, 'SELECT g, sum(v) AS sv, count(v) AS cv, max(v) AS hi, min(h) AS mh, count(*) AS n FROM rd_src GROUP BY g'),
  (3, true, 'SELECT count(*) AS n, sum(v) AS sv, avg(w) AS aw, count(w) AS cw FROM rd_src'),
  (4, true, 'SELECT sum(c) AS sc, count(*) AS n, avg(v) AS av, avg(c) AS ac FROM rd_src'),
  (5, true, 'SELECT h, avg(v) AS av, count(*) AS n FROM rd_src GROUP BY h'),
  (6, true, 'SELECT g, h, avg(v) AS av, avg(w) AS aw, sum(w) AS sw FROM rd_src
             WHERE g IN (1, 2) AND h <> ''h1'' GROUP BY g, h'),
  (7, true, 'SELECT g, count(*) AS n, sum(v) AS sv, avg(v) AS av FROM rd_src WHERE g > 3 GROUP BY g'),
  (8, true, 'SELECT w, sum(v) AS sv, count(*) AS n, max(h) AS xh FROM rd_src WHERE g >= 2 AND g <= 4 GROUP BY w'),
  (9, true, 'SELECT g, count(*) AS n, sum(v) AS sv FROM rd_src GROUP BY g HAVING count(*) > 3 AND sum(v) > 300'),
  (10, true, 'SELECT g, h, sum(w) AS sw, max(w) AS mw FROM rd_src GROUP BY g, h
              HAVING count(*) >= 2 AND max(w) IS NOT NULL'),
  (11, true, 'SELECT g, h, count(*) AS n, sum(v) AS sv FROM rd_src GROUP BY g, h
              ORDER BY sum(v) DESC NULLS LAST, g NULLS FIRST, h NULLS FIRST LIMIT 4'),
  (12, true, 'SELECT avg(c) AS ac, max(w) AS mw, count(w) AS cw FROM rd_src WHERE g = 2 AND h = ''h2'''),
  (13, true, 'SELECT h, count(*) FILTER (WHERE w > 4) AS nbig, sum(v) FILTER (WHERE w > 4) AS sbig,
                     bool_or(c > 40) AS anybig FROM rd_src WHERE h IS NOT NULL GROUP BY h'),
  (14, true, 'SELECT count(*) FILTER (WHERE w > 4) AS nbig, sum(v) FILTER (WHERE w > 4) AS sbig, avg(v) AS av,
                     bool_or(c > 40) AS anybig FROM rd_src WHERE h IN (''h0'', ''h3'')'),
  (15, true, 'SELECT g, count(w) AS cw, sum(w) AS sw, max(w) AS mw FROM rd_src WHERE g IS NULL OR g = 0 GROUP BY g'),
  (16, true, 'SELECT DISTINCT count(*) AS n FROM rd_src GROUP BY g, h'),
  (17, true, 'SELECT g, w, count(*) AS n, min(c) AS lc FROM rd_src WHERE g > 1 AND w < 5 GROUP BY g, w
              ORDER BY g, w NULLS FIRST LIMIT 6'),
  (18, true, 'SELECT h, count(*) AS n, sum(c) AS sc FROM rd_src WHERE h IS NULL GROUP BY h'),
  (19, true, 'SELECT min(v) AS lo, max(w) AS mw, min(h) AS mh FROM rd_src'),
  -- no group matches: counts are 0, sums and averages NULL
  (20, true, 'SELECT count(*) AS n, count(v) AS cv, sum(v) AS sv, avg(v) AS av, avg(c) AS ac, max(w) AS mw
              FROM rd_src WHERE g = 99'),
  (21, true, 'SELECT count(*) AS n FROM rd_src WHERE h = ''none'' HAVING count(*) = 0'),
  -- HAVING without GROUP BY
  (22, true, 'SELECT count(*) AS n, sum(v) AS sv FROM rd_src HAVING count(*) > 60'),
  -- without GROUP BY, a condition on no column (true in even steps): one row either way
  (23, true, 'SELECT count(*) AS n, sum(v) AS sv, avg(c) AS ac FROM rd_src WHERE current_setting(''rd.even'')::bool'),
  -- no view answers these
  (25, false, 'SELECT g, sum(v) AS sv FROM rd_src WHERE w > 3 GROUP BY g'),   -- WHERE on a column no view groups by
  (26, false, 'SELECT g, sum(id) AS si FROM rd_src GROUP BY g'),              -- an aggregate no view keeps
  (27, false, 'SELECT g % 2 AS gm, count(*) AS n FROM rd_src GROUP BY g % 2');  -- GROUP BY an expression
-- in a subquery
INSERT INTO rd_q (qi, rewritable, toplevel, q) VALUES
  (24, true, false, 'SELECT * FROM (SELECT g, sum(v) AS t FROM rd_src WHERE g > 1 GROUP BY g) q WHERE t > 200');

-- a prepared statement (a condition on a key and a parameter; custom and
-- generic plans), and its result tables
PREPARE rd_p(int) AS
  SELECT g, sum(v) AS sv, count(*) AS n, avg(v) AS av FROM rd_src WHERE g >= $1 GROUP BY g;
CREATE TEMP TABLE rd_on_p (g int, sv numeric, n bigint, av numeric);
CREATE TEMP TABLE rd_off_p (LIKE rd_on_p);

-- which queries a view answers now
SELECT qi, rewritable,
       EXISTS (SELECT FROM mvinc.explain_rewrite(q) WHERE used) = rewritable AS as_planned
  FROM rd_q WHERE toplevel ORDER BY qi;

-- each query's answers with the rewrite on and off
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT qi, q FROM rd_q LOOP
    EXECUTE format('CREATE TEMP TABLE rd_on_%s AS %s WITH NO DATA', r.qi, r.q);
    EXECUTE format('CREATE TEMP TABLE rd_off_%s AS %s WITH NO DATA', r.qi, r.q);
  END LOOP;
END $$;

-- Random values, NULL now and then
CREATE FUNCTION rd_rand(lo int, hi int, pnull float8 DEFAULT 0.1) RETURNS int
  LANGUAGE sql AS $$ SELECT CASE WHEN random() < pnull THEN NULL
                                 ELSE lo + floor(random() * (hi - lo + 1))::int END $$;

-- one row per check of every query: the queries rewritten (and the
-- prepared statement, as 0), the read paths of the rewritten ones, the
-- queries that differed (none: a difference stops the run) and the
-- queries whose mvinc.explain_rewrite verdict is not what EXPLAIN shows
CREATE TABLE rd_log (step int, op text, phase text, rewritten int[], paths text[],
                     mismatches int, explain_disagrees int);

-- Every query with the rewrite on (under EXPLAIN ANALYZE, to see whether
-- it was rewritten and the read path) and off, in this transaction; stops
-- at the first difference
CREATE FUNCTION rd_check(step int, op text, phase text) RETURNS rd_log LANGUAGE plpgsql AS $$
DECLARE
  r record;
  line text;
  onto text;
  path text;
  ex text;
  n bigint;
  nt bigint;
  rewritten int[] := '{}';
  disagree int := 0;
  paths text[] := '{}';
  k int := step % 5;
BEGIN
  PERFORM set_config('rd.even', (step % 2 = 0)::text, true);
  FOR r IN SELECT qi, q, toplevel FROM rd_q ORDER BY qi LOOP
    PERFORM set_config('mvinc.enable_rewrite', 'on', true);
    EXECUTE format('DELETE FROM rd_on_%s', r.qi);
    onto := NULL;
    path := NULL;
    FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) INSERT INTO rd_on_%s %s',
                               r.qi, r.q) LOOP
      IF line ~ 'Rewritten onto view: ' THEN
        onto := substring(line from 'Rewritten onto view: (\S+)');
      ELSIF path IS NULL AND line ~ '^\s*Path: ' THEN
        path := substring(line from 'Path: (\S+)');
      END IF;
    END LOOP;
    IF r.toplevel THEN
      SELECT string_agg(view::text, ',') INTO ex FROM mvinc.explain_rewrite(r.q) WHERE used;
      -- (whether, not onto which: reltuples, which picks the view, may change between)
      IF (ex IS NULL) <> (onto IS NULL) THEN
        disagree := disagree + 1;
      END IF;
    END IF;
    PERFORM set_config('mvinc.enable_rewrite', 'off', true);
    EXECUTE format('DELETE FROM rd_off_%s', r.qi);
    EXECUTE format('INSERT INTO rd_off_%s %s', r.qi, r.q);
    PERFORM set_config('mvinc.enable_rewrite', 'on', true);
    EXECUTE format('SELECT (SELECT count(*) FROM ((TABLE rd_on_%1$s EXCEPT ALL TABLE rd_off_%1$s)
                                                  UNION ALL (TABLE rd_off_%1$s EXCEPT ALL TABLE rd_on_%1$s)) d),
                           (SELECT count(*) FROM ((SELECT t::text FROM rd_on_%1$s t EXCEPT ALL SELECT t::text FROM rd_off_%1$s t)
                                                  UNION ALL (SELECT t::text FROM rd_off_%1$s t EXCEPT ALL SELECT t::text FROM rd_on_%1$s t)) d)',
                   r.qi) INTO n, nt;
    IF n <> 0 OR nt <> 0 THEN
      RAISE EXCEPTION 'step % (%, %): query % rewritten onto % differs by % rows (% as text): %',
        step, op, phase, r.qi, coalesce(onto, '(none)'), n, nt, r.q;
    END IF;
    IF onto IS NOT NULL THEN
      rewritten := rewritten || r.qi;
      paths := paths || coalesce(path, '?');
    END IF;
  END LOOP;

  -- the prepared statement: its plan as cached now, against its query
  PERFORM set_config('mvinc.enable_rewrite', 'on', true);
  DELETE FROM rd_on_p;
  FOR r IN EXECUTE format('EXECUTE rd_p(%s)', k) LOOP
    INSERT INTO rd_on_p VALUES (r.g, r.sv, r.n, r.av);
  END LOOP;
  onto := NULL;
  FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) EXECUTE rd_p(%s)', k) LOOP
    IF line ~ 'Rewritten onto view: ' THEN
      onto := substring(line from 'Rewritten onto view: (\S+)');
    END IF;
  END LOOP;
  PERFORM set_config('mvinc.enable_rewrite', 'off', true);
  DELETE FROM rd_off_p;
  INSERT INTO rd_off_p SELECT g, sum(v), count(*), avg(v) FROM rd_src WHERE g >= k GROUP BY g;
  PERFORM set_config('mvinc.enable_rewrite', 'on', true);
  SELECT count(*) INTO n FROM ((TABLE rd_on_p EXCEPT ALL TABLE rd_off_p) UNION ALL (TABLE rd_off_p EXCEPT ALL TABLE rd_on_p)) d;
  IF n <> 0 THEN
    RAISE EXCEPTION 'step % (%, %): prepared statement rd_p(%) rewritten onto % differs by % rows',
      step, op, phase, k, coalesce(onto, '(none)'), n;
  END IF;
  IF onto IS NOT NULL THEN
    rewritten := rewritten || 0;
  END IF;
  RETURN ROW(step, op, phase, rewritten, paths, 0, disagree)::rd_log;
END $$;

-- some writes of a random kind
CREATE FUNCTION rd_write() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO rd_src
    SELECT rd_rand(1, 400, 0), rd_rand(0, 5), 'h' || rd_rand(0, 3), rd_rand(0, 1000) / 4.0, rd_rand(0, 9), rd_rand(0, 49, 0)
    FROM generate_series(1, rd_rand(1, 3, 0))
    ON CONFLICT (id) DO NOTHING;
  UPDATE rd_src SET g = rd_rand(0, 5), h = 'h' || rd_rand(0, 3)
    WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT rd_rand(1, 3, 0));
  DELETE FROM rd_src WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT rd_rand(0, 2, 0));
END $$;

CREATE PROCEDURE rd_run(steps int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
  r float8;
  op text;
  vw text;
  m text;
  l rd_log;
  -- the kinds of step drawn first: how many random() calls a step makes
  -- depends on the rows (their order in the table, which vacuum may change)
  pick float8[];
BEGIN
  PERFORM setseed(seed);
  pick := ARRAY(SELECT random() FROM generate_series(1, 2 * steps));
  FOR step IN 1..steps LOOP
    r := pick[2 * step - 1];
    IF r < 0.48 OR r >= 0.58 THEN
      IF r < 0.18 THEN
        op := 'insert';
        INSERT INTO rd_src
          SELECT rd_rand(1, 400, 0), rd_rand(0, 5), 'h' || rd_rand(0, 3), rd_rand(0, 1000) / 4.0,
                 rd_rand(0, 9), rd_rand(0, 49, 0)
          FROM generate_series(1, rd_rand(1, 4, 0))
          ON CONFLICT (id) DO NOTHING;
      ELSIF r < 0.27 THEN
        op := 'update';
        UPDATE rd_src SET v = rd_rand(0, 1000) / 4.0, w = rd_rand(0, 9), c = rd_rand(0, 49, 0)
          WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT rd_rand(1, 3, 0));
      ELSIF r < 0.35 THEN
        op := 'update keys';
        UPDATE rd_src SET g = rd_rand(0, 5), h = CASE WHEN random() < 0.1 THEN NULL ELSE 'h' || rd_rand(0, 3) END,
                          w = CASE WHEN random() < 0.5 THEN w ELSE rd_rand(0, 9) END
          WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT rd_rand(1, 3, 0));
      ELSIF r < 0.43 THEN
        op := 'delete';
        DELETE FROM rd_src WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT rd_rand(1, 3, 0));
      ELSIF r < 0.48 THEN
        op := 'rollback';
        PERFORM rd_write();
        ROLLBACK;
      ELSIF r < 0.62 THEN
        op := 'savepoint';
        PERFORM rd_write();
        BEGIN
          PERFORM rd_write();
          UPDATE rd_src SET v = v + 1000, g = 5 - g WHERE id IN (SELECT id FROM rd_src ORDER BY random() LIMIT 2);
          RAISE EXCEPTION 'roll back to savepoint';
        EXCEPTION WHEN raise_exception THEN
          NULL;
        END;
      ELSIF r < 0.63 THEN
        op := 'truncate';
        TRUNCATE rd_src;
        INSERT INTO rd_src SELECT i, i % 4, 'h' || (i % 3), i * 1.25, i % 6, i % 50 FROM generate_series(1, 30) i;
      ELSIF r < 0.655 THEN
        op := 'no data';
        SELECT name INTO vw FROM rd_view ORDER BY random() LIMIT 1;
        EXECUTE format('REFRESH MATERIALIZED VIEW %I WITH NO DATA', vw);
      ELSIF r < 0.68 THEN
        op := 'remake';
        SELECT name INTO vw FROM rd_view ORDER BY random() LIMIT 1;
        EXECUTE format('DROP MATERIALIZED VIEW %I', vw);
        PERFORM rd_make(vw);
      ELSIF r < 0.78 THEN
        -- inserts only, appended beside the storage: read merged
        op := 'insert, append';
        INSERT INTO rd_src
          SELECT rd_rand(1, 400, 0), rd_rand(0, 5), 'h' || rd_rand(0, 3), rd_rand(0, 1000) / 4.0,
                 rd_rand(0, 9), rd_rand(0, 49, 0)
          FROM generate_series(1, rd_rand(1, 4, 0))
          ON CONFLICT (id) DO NOTHING;
        COMMIT;
        PERFORM set_config('mvinc.compact_fraction', '1000', true);
        FOR vw IN SELECT name FROM rd_view ORDER BY name LOOP
          PERFORM mvinc.refresh(vw::regclass);
        END LOOP;
      ELSE
        op := 'refresh';
        -- appends of GROUP BY views: folded at once, now and then, or never
        PERFORM set_config('mvinc.compact_fraction',
                           (ARRAY['0', '0.5', '1000', '1000'])[1 + floor(random() * 4)::int], true);
        FOR vw IN SELECT name FROM rd_view ORDER BY name LOOP
          IF random() < 0.1 THEN
            EXECUTE format('REFRESH MATERIALIZED VIEW %I', vw);
          ELSIF random() < 0.8 THEN
            SELECT mode INTO m FROM mvinc.refresh(vw::regclass, random() < 0.05);
          END IF;
          IF random() < 0.05 THEN
            PERFORM mvinc.compact(vw::regclass);
          END IF;
        END LOOP;
      END IF;
      COMMIT;
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
      INSERT INTO rd_log SELECT * FROM rd_check(step, op, 'after');
      COMMIT;
    ELSE
      -- checked inside the transaction that wrote, then committed or not
      op := 'in transaction';
      COMMIT;
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
      PERFORM rd_write();
      IF random() < 0.5 THEN
        PERFORM rd_write();
      END IF;
      l := rd_check(step, op, 'inside');
      -- (SET TRANSACTION right after: any expression would take a snapshot)
      IF pick[2 * step] < 0.5 THEN
        COMMIT;
        SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
        op := 'in transaction, committed';
      ELSE
        ROLLBACK;
        SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
        op := 'in transaction, rolled back';
      END IF;
      INSERT INTO rd_log SELECT l.*;
      INSERT INTO rd_log SELECT * FROM rd_check(step, op, 'after');
      COMMIT;
    END IF;
  END LOOP;
END $$;

CALL rd_run(150, 0.31);

-- what the run did (counts only: the workload is seeded)
SELECT op, count(*) > 0 AS happened FROM rd_log GROUP BY op ORDER BY op;
SELECT count(DISTINCT step) AS steps, count(*) FILTER (WHERE phase = 'inside') > 0 AS checked_inside,
       sum(mismatches) AS mismatches FROM rd_log;
-- most executions of the rewritable queries were rewritten (none of the
-- others), each rewritable query at least once, and the prepared statement
-- in most checks too
WITH per_query AS (
  SELECT q.qi, q.rewritable, count(*) AS checks, count(*) FILTER (WHERE q.qi = ANY (l.rewritten)) AS rewritten
    FROM rd_q q CROSS JOIN rd_log l GROUP BY q.qi, q.rewritable)
SELECT sum(rewritten) FILTER (WHERE rewritable) > 0.6 * sum(checks) FILTER (WHERE rewritable)
         AS "rewritten in most checks",
       bool_and(rewritten > 0) FILTER (WHERE rewritable) AS each_rewritten,
       sum(rewritten) FILTER (WHERE NOT rewritable) AS unanswerable_rewritten,
       (SELECT count(*) FILTER (WHERE 0 = ANY (rewritten)) > 0.6 * count(*) FROM rd_log) AS prepared_rewritten
  FROM per_query;
-- mvinc.explain_rewrite rewrites what EXPLAIN shows rewritten
SELECT sum(explain_disagrees) AS explain_rewrite_disagrees FROM rd_log;
-- the paths the rewritten queries were read by
SELECT p AS path, count(*) > 0 AS happened FROM rd_log, unnest(paths) p GROUP BY p ORDER BY p;

-- The same while the source is a colfile table (its changes reach the
-- change log as row messages)
ALTER TABLE rd_src SET ACCESS METHOD colfile;
TRUNCATE rd_log;
CALL rd_run(60, 0.17);
SELECT count(DISTINCT step) AS colfile_steps, count(DISTINCT op) > 5 AS kinds_of_step,
       sum(mismatches) AS mismatches,
       sum(cardinality(rewritten)) > 0.6 * (SELECT count(*) FROM rd_q WHERE rewritable) * count(*)
         AS "rewritten in most checks"
  FROM rd_log;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'rd_src'::regclass;

DEALLOCATE rd_p;
SET client_min_messages = warning;
DROP PROCEDURE rd_run(int, float8);
DROP FUNCTION rd_check(int, text, text);
DROP FUNCTION rd_write();
DROP FUNCTION rd_rand(int, int, float8);
DROP TABLE rd_src CASCADE;
DROP FUNCTION rd_make(text);
DROP TABLE rd_view, rd_q, rd_log;
RESET client_min_messages;
