-- colfile: tables without columns (or with every column dropped) are
-- planned and read like others; the size estimate once divided by zero
CREATE TABLE nocols () USING colfile;
SELECT exists(SELECT * FROM nocols);
INSERT INTO nocols DEFAULT VALUES;
INSERT INTO nocols DEFAULT VALUES;
SELECT * FROM nocols n, LATERAL (VALUES (n.*)) v;
SELECT count(*) FROM nocols;
CREATE TABLE dropped (a int, b text) USING colfile;
INSERT INTO dropped VALUES (1, 'x');
ALTER TABLE dropped DROP COLUMN a, DROP COLUMN b;
SELECT count(*) FROM dropped;
SELECT exists(SELECT * FROM dropped);
DROP TABLE nocols, dropped;
