-- colfile: a command meets a row it inserted or changed itself, as on heap:
-- ON CONFLICT DO UPDATE and MERGE refuse to change a row twice, a plain
-- UPDATE through a join changes it once
CREATE TABLE up (i int PRIMARY KEY, t text) USING colfile;
INSERT INTO up VALUES (1, 'one'), (2, 'two'), (4, 'four');
-- the second (2,'b') meets the row the first one inserted in this command
INSERT INTO up VALUES (1, 'a'), (2, 'b'), (2, 'b') ON CONFLICT (i) DO UPDATE SET t = 'fails';
INSERT INTO up VALUES (3, 'c'), (3, 'c') ON CONFLICT (i) DO UPDATE SET t = 'fails';
SELECT * FROM up ORDER BY i;
-- within a transaction and a savepoint, then without duplicates
BEGIN;
INSERT INTO up VALUES (5, 'five');
SAVEPOINT s;
INSERT INTO up VALUES (6, 'x'), (6, 'y') ON CONFLICT (i) DO UPDATE SET t = excluded.t;
ROLLBACK TO s;
INSERT INTO up VALUES (5, 'e'), (6, 'f') ON CONFLICT (i) DO UPDATE SET t = excluded.t || '-upd';
COMMIT;
SELECT * FROM up ORDER BY i;
-- DO NOTHING skips the duplicate silently
INSERT INTO up VALUES (7, 'g'), (7, 'h') ON CONFLICT (i) DO NOTHING;
SELECT * FROM up WHERE i = 7;
-- a row inserted by an earlier command of the transaction is updated
BEGIN;
INSERT INTO up VALUES (8, 'h');
INSERT INTO up VALUES (8, 'h2') ON CONFLICT (i) DO UPDATE SET t = excluded.t;
COMMIT;
SELECT * FROM up WHERE i = 8;

-- MERGE: two source rows match one target row
CREATE TABLE msrc (i int, t text) USING colfile;
INSERT INTO msrc VALUES (1, 'm1'), (1, 'm1 again');
MERGE INTO up USING msrc ON up.i = msrc.i
  WHEN MATCHED THEN UPDATE SET t = msrc.t;
MERGE INTO up USING msrc ON up.i = msrc.i
  WHEN MATCHED THEN DELETE;
SELECT * FROM up WHERE i = 1;

-- UPDATE through a join with two matches: the row changes once
CREATE TABLE jsrc (i int, n int) USING colfile;
INSERT INTO jsrc VALUES (2, 10), (2, 20);
UPDATE up SET t = t || '+' FROM jsrc WHERE up.i = jsrc.i;
SELECT * FROM up WHERE i = 2;
DELETE FROM up USING jsrc WHERE up.i = jsrc.i;
SELECT count(*) FROM up WHERE i = 2;
SELECT * FROM mvinc.colfile_check('up');
DROP TABLE up, msrc, jsrc;

-- the same under REPEATABLE READ and SERIALIZABLE: the executor checks the
-- conflicting row's xmin against the snapshot
CREATE TABLE sc (f1 int PRIMARY KEY, f2 int) USING colfile;
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO sc VALUES (1, 1), (1, 2) ON CONFLICT DO NOTHING;
INSERT INTO sc VALUES (2, 1), (2, 2) ON CONFLICT (f1) DO UPDATE SET f2 = 0;
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
INSERT INTO sc VALUES (3, 1), (3, 2) ON CONFLICT DO NOTHING;
INSERT INTO sc VALUES (1, 5) ON CONFLICT (f1) DO UPDATE SET f2 = excluded.f2;
COMMIT;
SELECT * FROM sc ORDER BY f1;
DROP TABLE sc;
