-- colfile: a TID is valid for a table only once a row group handed it out
-- (currtid2, TID scans), as heap checks TIDs against the relation's size
CREATE TABLE tidt (a int) USING colfile;
SELECT currtid2('tidt'::text, '(0,1)'::tid);
SELECT ctid, a FROM tidt WHERE ctid = '(0,1)';
INSERT INTO tidt VALUES (1), (2);
SELECT currtid2('tidt'::text, '(0,1)'::tid);
SELECT currtid2('tidt'::text, '(5000,1)'::tid);
SELECT ctid, a FROM tidt WHERE ctid = ANY (ARRAY['(0,2)', '(5000,1)']::tid[]);
UPDATE tidt SET a = 10 WHERE a = 1;
SELECT a FROM tidt WHERE ctid = currtid2('tidt'::text, '(0,1)'::tid);
CREATE MATERIALIZED VIEW tidmv USING colfile AS SELECT a FROM tidt WHERE false;
SELECT currtid2('tidmv'::text, '(0,1)'::tid);
DROP MATERIALIZED VIEW tidmv;
DROP TABLE tidt;
