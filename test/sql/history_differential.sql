-- History views checked against the source: a random history of
-- transactions (inserts, updates of tracked and untracked columns, no-op
-- updates, key changes, rows leaving and entering the WHERE, NULLs,
-- deletes, rolled-back subtransactions and transactions, TRUNCATE), the
-- source's state recorded after every commit, refreshes at random points.
-- As of every recorded time the view must equal the recorded state,
-- before the last refresh (pending changes applied on read) and after it.
-- The source is a heap table, then a colfile table.
CREATE TABLE hd_src (id int PRIMARY KEY, a int, b text, c int DEFAULT 0);
INSERT INTO hd_src SELECT g, g % 5, 'b' || g % 3, 0 FROM generate_series(1, 30) g;
CREATE MATERIALIZED VIEW hd_h WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, a, b FROM hd_src WHERE a IS DISTINCT FROM 13;
CREATE MATERIALIZED VIEW hd_h2 WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, upper(b) AS ub FROM hd_src;
CREATE TABLE hd_marks (step int, at timestamptz, id int, a int, b text);

CREATE PROCEDURE hd_mark(step int) LANGUAGE sql AS $$
  INSERT INTO hd_marks SELECT step, clock_timestamp(), id, a, b FROM hd_src
  UNION ALL SELECT step, clock_timestamp(), NULL, NULL, NULL $$;

CREATE PROCEDURE hd_run(first_step int, last_step int) LANGUAGE plpgsql AS $$
DECLARE
  r float8;
  k int;
BEGIN
  PERFORM setseed(0.4242 / first_step);
  IF first_step = 1 THEN
    CALL hd_mark(0);
    COMMIT;
  END IF;
  FOR i IN first_step .. last_step LOOP
    FOR j IN 1 .. 1 + floor(random() * 3)::int LOOP
      r := random();
      k := 1 + floor(random() * 40)::int;
      IF r < 0.25 THEN
        INSERT INTO hd_src VALUES (k, floor(random() * 15)::int, 'b' || floor(random() * 3)::int)
          ON CONFLICT (id) DO UPDATE SET a = excluded.a;
      ELSIF r < 0.45 THEN
        UPDATE hd_src SET a = floor(random() * 15)::int WHERE id = k;
      ELSIF r < 0.55 THEN
        UPDATE hd_src SET c = c + 1 WHERE id % 4 = k % 4;           -- untracked column
      ELSIF r < 0.6 THEN
        UPDATE hd_src SET a = a, b = b WHERE id <= k;               -- changes nothing
      ELSIF r < 0.7 THEN
        DELETE FROM hd_src WHERE id = k;
      ELSIF r < 0.75 THEN
        UPDATE hd_src SET id = k + 40 WHERE id = k
          AND NOT EXISTS (SELECT FROM hd_src WHERE id = k + 40);    -- key change
      ELSIF r < 0.8 THEN
        UPDATE hd_src SET b = CASE WHEN b IS NULL THEN 'b1' END WHERE id = k;  -- NULLs
      ELSIF r < 0.85 THEN
        UPDATE hd_src SET a = 13 WHERE id = k;                      -- leaves hd_h's WHERE
      ELSIF r < 0.95 THEN
        BEGIN                                                       -- rolled-back subtransaction
          UPDATE hd_src SET a = -1, b = 'rolled back' WHERE id <= k;
          DELETE FROM hd_src WHERE id > k;
          RAISE EXCEPTION 'roll back';
        EXCEPTION WHEN raise_exception THEN
          NULL;
        END;
      ELSIF r < 0.96 THEN
        TRUNCATE hd_src;
      ELSE
        UPDATE hd_src SET a = a + 1 WHERE id BETWEEN k AND k + 5;
        UPDATE hd_src SET a = a - 1 WHERE id BETWEEN k AND k + 5;   -- back in the same transaction
      END IF;
    END LOOP;
    IF random() < 0.1 THEN
      ROLLBACK;
    ELSE
      COMMIT;
    END IF;
    CALL hd_mark(i);
    COMMIT;
    IF random() < 0.08 THEN
      REFRESH MATERIALIZED VIEW hd_h;
      COMMIT;
    END IF;
    IF random() < 0.05 THEN
      REFRESH MATERIALIZED VIEW hd_h2;
      COMMIT;
    END IF;
  END LOOP;
END $$;

-- rows that differ between each view as of every mark and the state then
CREATE FUNCTION hd_differences() RETURNS TABLE (view text, marks bigint, wrong_marks bigint)
LANGUAGE sql AS $$
  WITH m AS (SELECT DISTINCT step, at FROM hd_marks WHERE id IS NULL),
  d1 AS (
    SELECT m.step, (SELECT count(*) FROM (
        (SELECT id, a, b FROM hd_h WHERE valid_from <= m.at AND m.at < valid_to
         EXCEPT ALL
         SELECT id, a, b FROM hd_marks x WHERE x.step = m.step AND x.id IS NOT NULL
           AND x.a IS DISTINCT FROM 13)
        UNION ALL
        (SELECT id, a, b FROM hd_marks x WHERE x.step = m.step AND x.id IS NOT NULL
           AND x.a IS DISTINCT FROM 13
         EXCEPT ALL
         SELECT id, a, b FROM hd_h WHERE valid_from <= m.at AND m.at < valid_to)) d) AS n
    FROM m),
  d2 AS (
    SELECT m.step, (SELECT count(*) FROM (
        (SELECT id, ub FROM hd_h2 WHERE valid_from <= m.at AND m.at < valid_to
         EXCEPT ALL
         SELECT id, upper(b) FROM hd_marks x WHERE x.step = m.step AND x.id IS NOT NULL)
        UNION ALL
        (SELECT id, upper(b) FROM hd_marks x WHERE x.step = m.step AND x.id IS NOT NULL
         EXCEPT ALL
         SELECT id, ub FROM hd_h2 WHERE valid_from <= m.at AND m.at < valid_to)) d) AS n
    FROM m)
  SELECT 'hd_h', count(*), count(*) FILTER (WHERE n > 0) FROM d1
  UNION ALL
  SELECT 'hd_h2', count(*), count(*) FILTER (WHERE n > 0) FROM d2 $$;

CALL hd_run(1, 300);
SELECT count(DISTINCT step) AS marks FROM hd_marks;
-- before the last refresh: reads apply what is pending
SELECT * FROM hd_differences();
REFRESH MATERIALIZED VIEW hd_h;
REFRESH MATERIALIZED VIEW hd_h2;
SELECT * FROM hd_differences();
SELECT * FROM mvinc.history_check('hd_h');
SELECT * FROM mvinc.history_check('hd_h2');
-- the same source as a colfile table: its changes arrive as row messages
ALTER TABLE hd_src SET ACCESS METHOD colfile;
CALL hd_run(301, 450);
SELECT * FROM hd_differences();
REFRESH MATERIALIZED VIEW hd_h;
REFRESH MATERIALIZED VIEW hd_h2;
SELECT * FROM hd_differences();
SELECT * FROM mvinc.history_check('hd_h');
SELECT * FROM mvinc.history_check('hd_h2');
-- the history holds versions that ended, not only the current ones
SELECT count(*) FILTER (WHERE valid_to < 'infinity') > 100 AS closed_versions,
       count(*) FILTER (WHERE valid_to = 'infinity') = (SELECT count(*) FROM hd_src
                                                         WHERE a IS DISTINCT FROM 13) AS current_versions
  FROM hd_h;
DROP TABLE hd_src CASCADE;
