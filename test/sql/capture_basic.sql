-- Change capture: tracking, the change log's shape, and the captured
-- content of each kind of change.
\set VERBOSITY default

CREATE TABLE cap_items (id int PRIMARY KEY, name text, qty numeric(10,2), note text);
SELECT mvinc.track('cap_items') AS changelog \gset
SELECT :'changelog' = 'mvinc.changelog_' || 'cap_items'::regclass::oid AS named_by_oid;
-- idempotent
SELECT mvinc.track('cap_items')::text = :'changelog' AS same_changelog;

-- the change log: metadata columns, then the source columns
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = :'changelog'::regclass AND attnum > 0 ORDER BY attnum;
SELECT pg_get_indexdef(indexrelid) ~ 'USING btree \(_mvinc_lsn\)$' AS lsn_btree
  FROM pg_index WHERE indrelid = :'changelog'::regclass;
SELECT classid::regclass, deptype FROM pg_depend
 WHERE objid = :'changelog'::regclass AND refclassid = 'pg_extension'::regclass;

INSERT INTO cap_items VALUES (1, 'one', 1.5, NULL), (2, 'two', NULL, 'n');
UPDATE cap_items SET qty = 3 WHERE id = 1;
UPDATE cap_items SET id = 20 WHERE id = 2;     -- the key changes
DELETE FROM cap_items WHERE id = 1;

-- a rolled back transaction and a rolled back savepoint leave nothing
BEGIN;
INSERT INTO cap_items VALUES (100, 'aborted', 0, NULL);
ROLLBACK;
BEGIN;
INSERT INTO cap_items VALUES (3, 'kept', 3, NULL);
SAVEPOINT s1;
INSERT INTO cap_items VALUES (101, 'rolled back', 0, NULL);
UPDATE cap_items SET name = 'rolled back too' WHERE id = 3;
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
UPDATE cap_items SET name = 'kept too' WHERE id = 3;
RELEASE SAVEPOINT s2;
COMMIT;

SELECT mvinc.wait_for_capture() IS NOT NULL AS captured;

-- one transaction per distinct (lsn, xid), ordered by lsn then seq
SELECT dense_rank() OVER (ORDER BY _mvinc_lsn) AS tx, _mvinc_seq AS seq, _mvinc_op AS op,
       _mvinc_image AS img, id, name, qty, note
  FROM :changelog ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n';
-- the metadata agree with the transactions
SELECT count(DISTINCT _mvinc_lsn) AS transactions, count(DISTINCT _mvinc_xid) AS xids,
       bool_and(_mvinc_time <= now()) AS times_ok
  FROM :changelog;

-- leave nothing tracked behind: later suites' VACUUMs share the slot's horizon
DROP TABLE cap_items;
