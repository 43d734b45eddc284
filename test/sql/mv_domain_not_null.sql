-- Columns of a NOT NULL domain type.  A key-only old image (an update or
-- delete waiting to be refreshed) holds NULL in the other columns, and a
-- TRUNCATE's rows hold NULL everywhere: generated SQL cast them to the
-- domain, which refuses NULL.  Reads of a history view or of a projection
-- view failed while such a change waited, and after a TRUNCATE every
-- refresh of the history view failed, for good.
CREATE EXTENSION IF NOT EXISTS mvinc;
CREATE DOMAIN dn_pos AS int NOT NULL CHECK (VALUE > 0);
CREATE TABLE dn_src (k int PRIMARY KEY, d dn_pos, w int);
INSERT INTO dn_src VALUES (1, 1, 0), (2, 2, 0), (3, 3, 0);
CREATE MATERIALIZED VIEW dn_hist WITH (mvinc.history = true, mvinc.key = 'k') AS
  SELECT k, d FROM dn_src;
CREATE MATERIALIZED VIEW dn_rows WITH (mvinc.incremental = true) AS
  SELECT k, d FROM dn_src;
CREATE MATERIALIZED VIEW dn_groups WITH (mvinc.incremental = true) AS
  SELECT d, count(*) AS n FROM dn_src GROUP BY d;
-- the views against their queries; the current versions against the source
CREATE FUNCTION dn_diff() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'dn_hist', count(*) FROM (
    (SELECT k, d FROM dn_hist WHERE valid_to = 'infinity' EXCEPT ALL SELECT k, d FROM dn_src)
    UNION ALL (SELECT k, d FROM dn_src EXCEPT ALL SELECT k, d FROM dn_hist WHERE valid_to = 'infinity')) x
  UNION ALL SELECT 'dn_rows', count(*) FROM (
    (TABLE dn_rows EXCEPT ALL SELECT k, d FROM dn_src)
    UNION ALL (SELECT k, d FROM dn_src EXCEPT ALL TABLE dn_rows)) x
  UNION ALL SELECT 'dn_groups', count(*) FROM (
    (TABLE dn_groups EXCEPT ALL SELECT d, count(*) FROM dn_src GROUP BY d)
    UNION ALL (SELECT d, count(*) FROM dn_src GROUP BY d EXCEPT ALL TABLE dn_groups)) x
$$;
-- an update outside the views, a change of d, a delete: waiting, then refreshed
UPDATE dn_src SET w = 1 WHERE k = 1;
UPDATE dn_src SET d = 20 WHERE k = 2;
DELETE FROM dn_src WHERE k = 3;
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT mvinc.read_path('dn_rows') AS rows_path, mvinc.read_path('dn_groups') AS groups_path;
SELECT * FROM dn_diff();
SELECT k, d, valid_to = 'infinity' AS current FROM dn_hist ORDER BY k, valid_from;
REFRESH MATERIALIZED VIEW dn_hist;
REFRESH MATERIALIZED VIEW dn_rows;
REFRESH MATERIALIZED VIEW dn_groups;
SELECT * FROM dn_diff();
-- TRUNCATE, then a row again: waiting, then refreshed
TRUNCATE dn_src;
INSERT INTO dn_src VALUES (4, 4, 0);
SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;
SELECT * FROM dn_diff();
REFRESH MATERIALIZED VIEW dn_hist;
REFRESH MATERIALIZED VIEW dn_rows;
REFRESH MATERIALIZED VIEW dn_groups;
SELECT * FROM dn_diff();
SELECT k, d, valid_to = 'infinity' AS current FROM dn_hist ORDER BY k, valid_from;
SELECT count(*) AS problems FROM mvinc.history_check('dn_hist');
DROP TABLE dn_src CASCADE;
DROP FUNCTION dn_diff();
DROP DOMAIN dn_pos;
