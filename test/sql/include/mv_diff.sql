-- mv_diff(view): the rows in which an incremental view and its defining
-- query differ (EXCEPT ALL both ways), read in the caller's snapshot
CREATE FUNCTION mv_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
