-- Automatic refresh: mvinc.refresh_interval at CREATE and by ALTER
-- MATERIALIZED VIEW .. SET / RESET; background workers refresh views with
-- pending changes once their interval has passed; failures are recorded,
-- shown and retried.  Waits poll a condition with a bounded timeout.
CREATE FUNCTION ar_wait(cond text, seconds int DEFAULT 20) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  ok boolean;
BEGIN
  FOR i IN 1 .. seconds * 20 LOOP
    EXECUTE cond INTO ok;
    IF ok THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;

CREATE TABLE ar_src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO ar_src SELECT i, i % 5, i FROM generate_series(1, 100) i;
CREATE MATERIALIZED VIEW ar_v WITH (mvinc.incremental = true, mvinc.refresh_interval = '0') AS
  SELECT g, sum(v) AS s, count(*) AS n FROM ar_src GROUP BY g;
SELECT refresh_interval, next_refresh IS NOT NULL AS has_next, refresh_failures, last_error
  FROM mvinc.views WHERE view = 'ar_v'::regclass;

-- continuous: refreshed as soon as the changes are captured
BEGIN;
INSERT INTO ar_src VALUES (101, 1, 1000);
UPDATE ar_src SET v = v + 1 WHERE id = 2;
COMMIT;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ar_wait($$SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'ar_v'::regclass$$) AS refreshed;
SELECT last_refresh_mode, last_refresh_changes, last_refresh_ms >= 0 AS timed
  FROM mvinc.views WHERE view = 'ar_v'::regclass;
SELECT count(*) AS differences FROM ((TABLE ar_v EXCEPT ALL SELECT g, sum(v), count(*) FROM ar_src GROUP BY g)
  UNION ALL (SELECT g, sum(v), count(*) FROM ar_src GROUP BY g EXCEPT ALL TABLE ar_v)) d;
SELECT mvinc.read_path('ar_v');

-- a long interval: changes wait for it (the last refresh was just now)
ALTER MATERIALIZED VIEW ar_v SET (mvinc.refresh_interval = '1 hour');
SELECT refresh_interval, next_refresh > now() + interval '50 minutes' AS next_in_an_hour
  FROM mvinc.views WHERE view = 'ar_v'::regclass;
INSERT INTO ar_src VALUES (102, 2, 5);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured, pg_sleep(1);
SELECT pending_changes FROM mvinc.views WHERE view = 'ar_v'::regclass;
SELECT count(*) AS rows_read FROM ar_v;   -- reads stay exact meanwhile

-- RESET: only refreshed when asked; other options pass to PostgreSQL
ALTER MATERIALIZED VIEW ar_v RESET (mvinc.refresh_interval);
SELECT refresh_interval, next_refresh FROM mvinc.views WHERE view = 'ar_v'::regclass;
ALTER MATERIALIZED VIEW ar_v SET (fillfactor = 70, mvinc.refresh_interval = '100ms');
SELECT reloptions FROM pg_class WHERE oid = 'ar_v'::regclass;
SELECT refresh_interval FROM mvinc.views WHERE view = 'ar_v'::regclass;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ar_wait($$SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'ar_v'::regclass$$) AS refreshed;

-- bad settings
ALTER MATERIALIZED VIEW ar_v SET (mvinc.refresh_interval = '-1 second');
ALTER MATERIALIZED VIEW ar_v SET (mvinc.refresh_interval = 'soon');
ALTER MATERIALIZED VIEW ar_v SET (mvinc.refresh_interval = '300000 years');
ALTER VIEW ar_v SET (mvinc.refresh_interval = '1s');
ALTER MATERIALIZED VIEW ar_v SET (mvinc.incremental = false);
ALTER MATERIALIZED VIEW ar_v SET (mvinc.cluster_by = 'nope');
ALTER MATERIALIZED VIEW ar_v SET (mvinc.refresh_every = '1s');
ALTER MATERIALIZED VIEW IF EXISTS ar_missing SET (mvinc.refresh_interval = '1s');
CREATE MATERIALIZED VIEW ar_plain AS SELECT 1 AS one;
ALTER MATERIALIZED VIEW ar_plain SET (mvinc.refresh_interval = '1s');
CREATE MATERIALIZED VIEW ar_plain2 WITH (mvinc.refresh_interval = '1s') AS SELECT 1 AS one;
CREATE MATERIALIZED VIEW ar_bad WITH (mvinc.incremental = true, mvinc.refresh_interval = '-5 min') AS
  SELECT g, count(*) AS n FROM ar_src GROUP BY g;
SELECT count(*) AS half_created FROM pg_class WHERE relname = 'ar_bad';
DROP MATERIALIZED VIEW ar_plain;

-- failures: the owner lost SELECT on the source; the error is kept, shown
-- to the view's owner, and the refresh retried with backoff
CREATE ROLE ar_owner;
CREATE ROLE ar_other;
GRANT CREATE ON SCHEMA public TO ar_owner;
CREATE TABLE ar_src2 (id int PRIMARY KEY, g int NOT NULL);
GRANT SELECT ON ar_src2 TO ar_owner;
SET ROLE ar_owner;
CREATE MATERIALIZED VIEW ar_w WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n FROM ar_src2 GROUP BY g;
ALTER MATERIALIZED VIEW ar_w SET (mvinc.refresh_interval = '0');
RESET ROLE;
SET ROLE ar_other;
ALTER MATERIALIZED VIEW ar_w SET (mvinc.refresh_interval = '1s');
RESET ROLE;
REVOKE SELECT ON ar_src2 FROM ar_owner;
INSERT INTO ar_src2 VALUES (1, 1);
SELECT ar_wait($$SELECT refresh_failures >= 1 FROM mvinc.views WHERE view = 'ar_w'::regclass$$) AS failed;
-- a view that keeps failing does not starve the others
INSERT INTO ar_src VALUES (105, 0, 1);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ar_wait($$SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'ar_v'::regclass$$) AS others_refreshed;
SET ROLE ar_owner;
SELECT last_error, next_refresh > last_refresh AS retry_deferred FROM mvinc.views WHERE view = 'ar_w'::regclass;
RESET ROLE;
SET ROLE ar_other;
SELECT refresh_failures >= 1 AS failures_shown, last_error FROM mvinc.views WHERE view = 'ar_w'::regclass;
RESET ROLE;
GRANT SELECT ON ar_src2 TO ar_owner;
SELECT ar_wait($$SELECT pending_changes = 0 AND refresh_failures = 0 FROM mvinc.views WHERE view = 'ar_w'::regclass$$)
  AS recovered;
SELECT last_error, (SELECT n FROM ar_w WHERE g = 1) AS n FROM mvinc.views WHERE view = 'ar_w'::regclass;

-- a view nobody refreshes lets its changes go past mvinc.max_pending_changes
ALTER SYSTEM SET mvinc.max_pending_changes = 5;
SELECT pg_reload_conf();
CREATE MATERIALIZED VIEW ar_cap WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n FROM ar_src GROUP BY g;
INSERT INTO ar_src SELECT i, i % 5, i FROM generate_series(200, 220) i;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT ar_wait($$SELECT last_error IS NOT NULL FROM mvinc.views WHERE view = 'ar_cap'::regclass$$) AS let_go;
SELECT last_error, mvinc.read_path('ar_cap') FROM mvinc.views WHERE view = 'ar_cap'::regclass;
SELECT count(*) AS consumers FROM mvinc.consumers WHERE consumer = 'mv_' || 'ar_cap'::regclass::oid;
SELECT mode FROM mvinc.refresh('ar_cap');
SELECT last_error, mvinc.read_path('ar_cap') FROM mvinc.views WHERE view = 'ar_cap'::regclass;
SELECT count(*) AS consumers FROM mvinc.consumers WHERE consumer = 'mv_' || 'ar_cap'::regclass::oid;
SELECT count(*) AS differences FROM ((TABLE ar_cap EXCEPT ALL SELECT g, count(*) FROM ar_src GROUP BY g)
  UNION ALL (SELECT g, count(*) FROM ar_src GROUP BY g EXCEPT ALL TABLE ar_cap)) d;
ALTER SYSTEM RESET mvinc.max_pending_changes;
SELECT pg_reload_conf();
DROP MATERIALIZED VIEW ar_cap;

-- WITH NO DATA: not refreshed automatically (REFRESH populates it)
CREATE MATERIALIZED VIEW ar_nodata WITH (mvinc.incremental = true, mvinc.refresh_interval = '0') AS
  SELECT g, count(*) AS n FROM ar_src GROUP BY g WITH NO DATA;
INSERT INTO ar_src VALUES (103, 3, 3);
SELECT populated, next_refresh FROM mvinc.views WHERE view = 'ar_nodata'::regclass;

-- a dropped view is no longer scheduled
DROP MATERIALIZED VIEW ar_v;
DROP MATERIALIZED VIEW ar_nodata;
INSERT INTO ar_src VALUES (104, 4, 4);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;

DROP MATERIALIZED VIEW ar_w;
DROP TABLE ar_src, ar_src2;
REVOKE CREATE ON SCHEMA public FROM ar_owner;
DROP ROLE ar_owner;
DROP ROLE ar_other;
DROP FUNCTION ar_wait(text, int);
