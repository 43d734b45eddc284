-- Differential test: a seeded random workload on one source (inserts,
-- updates including key changes, deletes, NULLs, TRUNCATE, rollbacks,
-- savepoints, random refreshes, appends kept beside the storage or folded
-- at once, compactions); after every step each view must equal its
-- defining query (EXCEPT ALL both ways).  A mismatch stops the run and
-- names the step.  The source is a heap table, then a colfile table.
SELECT mvinc.wait_for_capture() IS NOT NULL AS capture_ready;

CREATE TABLE d_src (id int PRIMARY KEY, g int, h text, v numeric(10,2), w int);
INSERT INTO d_src SELECT i, i % 5, 'h' || (i % 3), i * 1.5, i % 9 FROM generate_series(1, 60) i;

CREATE MATERIALIZED VIEW d_agg WITH (mvinc.incremental = true) AS
  SELECT g, h, count(*) AS n, sum(v) AS s, avg(w) AS a, min(v) AS lo, max(h) AS hi, count(v) AS nv
  FROM d_src WHERE w IS DISTINCT FROM 3 GROUP BY g, h;
CREATE MATERIALIZED VIEW d_ret WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a, sum(w) AS sw, count(w) AS nw
  FROM d_src GROUP BY g;
CREATE MATERIALIZED VIEW d_one WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(v) AS s, max(w) AS mx FROM d_src WHERE g IS NOT NULL;
CREATE MATERIALIZED VIEW d_proj WITH (mvinc.incremental = true) AS
  SELECT id, g, v * 2 AS v2, h FROM d_src WHERE w IS NULL OR w < 7;
CREATE MATERIALIZED VIEW d_grp WITH (mvinc.incremental = true) AS
  SELECT g % 3 AS gm, w FROM d_src GROUP BY g % 3, w;
-- a NOT NULL group key (plain key equality instead of record comparison)
CREATE MATERIALIZED VIEW d_key WITH (mvinc.incremental = true) AS
  SELECT id, count(*) AS n, sum(v) AS s FROM d_src WHERE w IS NOT NULL GROUP BY id;
CREATE MATERIALIZED VIEW d_keymax WITH (mvinc.incremental = true) AS
  SELECT id, max(w) AS mx, min(h) AS mn FROM d_src GROUP BY id;
-- aggregates with FILTER (retractable and not)
CREATE MATERIALIZED VIEW d_filt WITH (mvinc.incremental = true) AS
  SELECT g, count(*) FILTER (WHERE v > 100) AS nbig, sum(v) FILTER (WHERE h <> 'h1') AS sh,
         avg(w) FILTER (WHERE v > 50) AS aw, min(v) FILTER (WHERE w > 2) AS lo
  FROM d_src GROUP BY g;
-- HAVING: groups leave and come back
CREATE MATERIALIZED VIEW d_have WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM d_src GROUP BY g HAVING count(*) > 10 AND sum(v) > 1000;
-- expressions over aggregates (one hidden) and keys
CREATE MATERIALIZED VIEW d_expr WITH (mvinc.incremental = true) AS
  SELECT g, h || ':' || count(*)::text AS label, sum(v) / nullif(count(w), 0) AS per_w,
         max(v) - min(v) AS spread
  FROM d_src GROUP BY g, h;
-- one state row, every aggregate retractable (appends merge into it)
CREATE MATERIALIZED VIEW d_oneret WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(v) AS s, avg(w) AS a FROM d_src WHERE h IS NOT NULL;

-- Rows of v that differ from its query (both directions)
CREATE FUNCTION d_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;

-- Random values, NULL now and then
CREATE FUNCTION d_rand(lo int, hi int, pnull float8 DEFAULT 0.1) RETURNS int
  LANGUAGE sql AS $$ SELECT CASE WHEN random() < pnull THEN NULL
                                 ELSE lo + floor(random() * (hi - lo + 1))::int END $$;

CREATE TABLE d_log (step int, op text, modes text, fresh_reads int, merged_reads int);

CREATE PROCEDURE d_run(steps int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
  views regclass[] := ARRAY['d_agg', 'd_ret', 'd_one', 'd_proj', 'd_grp', 'd_key', 'd_keymax', 'd_oneret',
                            'd_filt', 'd_have', 'd_expr']::regclass[];
  vw regclass;
  r float8;
  op text;
  n bigint;
  m text;
  modes text;
  fresh int;
  merged int;
BEGIN
  PERFORM setseed(seed);
  FOR step IN 1..steps LOOP
    r := random();
    modes := NULL;
    IF r < 0.30 THEN
      op := 'insert';
      INSERT INTO d_src
        SELECT d_rand(1, 300, 0), d_rand(0, 6), 'h' || d_rand(0, 3), d_rand(0, 1000) / 4.0, d_rand(0, 9)
        FROM generate_series(1, d_rand(1, 4, 0))
        ON CONFLICT (id) DO NOTHING;
    ELSIF r < 0.48 THEN
      op := 'update';
      UPDATE d_src SET g = d_rand(0, 6), v = d_rand(0, 1000) / 4.0, w = d_rand(0, 9)
        WHERE id IN (SELECT id FROM d_src ORDER BY random() LIMIT d_rand(1, 3, 0));
    ELSIF r < 0.52 THEN
      op := 'update key';
      UPDATE d_src SET id = (SELECT max(id) + 1 FROM d_src), h = 'h' || d_rand(0, 3)
        WHERE id = (SELECT id FROM d_src ORDER BY random() LIMIT 1);
    ELSIF r < 0.64 THEN
      op := 'delete';
      DELETE FROM d_src WHERE id IN (SELECT id FROM d_src ORDER BY random() LIMIT d_rand(1, 3, 0));
    ELSIF r < 0.65 THEN
      op := 'truncate';
      TRUNCATE d_src;
      INSERT INTO d_src SELECT i, i % 4, 'h' || (i % 2), i, i % 5 FROM generate_series(1, 20) i;
    ELSIF r < 0.69 THEN
      op := 'rollback';
      INSERT INTO d_src VALUES (d_rand(301, 400, 0), 1, 'rb', 1, 1) ON CONFLICT DO NOTHING;
      DELETE FROM d_src WHERE id IN (SELECT id FROM d_src ORDER BY random() LIMIT 2);
      ROLLBACK;
    ELSIF r < 0.74 THEN
      op := 'savepoint';
      INSERT INTO d_src VALUES (d_rand(401, 500, 0), 2, 'kept', 2, 2) ON CONFLICT DO NOTHING;
      BEGIN
        INSERT INTO d_src VALUES (d_rand(501, 600, 0), 3, 'gone', 3, 3) ON CONFLICT DO NOTHING;
        UPDATE d_src SET v = v + 1000 WHERE id IN (SELECT id FROM d_src ORDER BY random() LIMIT 2);
        RAISE EXCEPTION 'roll back to savepoint';
      EXCEPTION WHEN raise_exception THEN
        NULL;
      END;
    ELSE
      op := 'refresh';
      -- appends of GROUP BY views: folded at once, now and then, or never
      PERFORM set_config('mvinc.compact_fraction',
                         (ARRAY['0', '0.5', '1000', '1000'])[1 + floor(random() * 4)::int], true);
      FOREACH vw IN ARRAY views LOOP
        IF random() < 0.6 THEN
          SELECT mode INTO m FROM mvinc.refresh(vw, random() < 0.03);
          modes := concat_ws(',', modes, vw::text || ':' || m);
        END IF;
        IF random() < 0.05 AND mvinc.compact(vw) > 0 THEN
          modes := concat_ws(',', modes, vw::text || ':compact');
        END IF;
      END LOOP;
    END IF;
    COMMIT;
    fresh := 0;
    merged := 0;
    FOREACH vw IN ARRAY views LOOP
      IF mvinc.read_path(vw) = 'fresh' THEN
        fresh := fresh + 1;
      END IF;
      IF mvinc._read_branch(vw::oid) = 'merge' THEN
        merged := merged + 1;
      END IF;
      n := d_diff(vw);
      IF n <> 0 THEN
        RAISE EXCEPTION 'step %: view % differs from its query by % rows after %', step, vw, n, op;
      END IF;
    END LOOP;
    INSERT INTO d_log VALUES (step, op, modes, fresh, merged);
    COMMIT;
  END LOOP;
END $$;

CALL d_run(2000, 0.42);

-- what the run did (counts only: the workload is seeded)
SELECT op, count(*) > 0 AS happened FROM d_log GROUP BY op ORDER BY op;
SELECT m AS mode, count(*) > 0 AS happened
  FROM d_log, unnest(string_to_array(modes, ',')) x, split_part(x, ':', 2) m
  WHERE modes IS NOT NULL GROUP BY m ORDER BY m;
SELECT count(*) AS steps, sum(fresh_reads) > 1000 AS many_fresh_reads,
       sum(8 - fresh_reads) > 1000 AS many_live_reads,
       sum(merged_reads) > 100 AS many_merged_reads FROM d_log;
-- appends to views whose aggregates are all retractable merge delta states
SELECT split_part(x, ':', 1) AS view, count(*) > 0 AS merged_appends
  FROM d_log, unnest(string_to_array(modes, ',')) x
  WHERE split_part(x, ':', 2) = 'incremental' AND split_part(x, ':', 1) IN ('d_ret', 'd_key', 'd_oneret')
  GROUP BY 1 ORDER BY 1;

-- The same views while the source is a colfile table: its changes reach
-- the change log as row messages, and changing the access method of a
-- tracked table keeps capture complete
ALTER TABLE d_src SET ACCESS METHOD colfile;
SELECT d_diff(v) AS diff FROM unnest(ARRAY['d_agg', 'd_ret', 'd_proj', 'd_keymax']::regclass[]) v;
TRUNCATE d_log;
CALL d_run(1000, 0.17);
SELECT count(*) AS colfile_steps, count(DISTINCT op) AS kinds_of_step,
       sum(fresh_reads) > 0 AS fresh_reads, sum(merged_reads) > 0 AS merged_reads FROM d_log;
SELECT m AS mode, count(*) > 0 AS happened
  FROM d_log, unnest(string_to_array(modes, ',')) x, split_part(x, ':', 2) m
  WHERE modes IS NOT NULL GROUP BY m ORDER BY m;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'd_src'::regclass;

DROP PROCEDURE d_run(int, float8);
DROP TABLE d_src CASCADE;
DROP TABLE d_log;
DROP FUNCTION d_diff(regclass);
DROP FUNCTION d_rand(int, int, float8);
