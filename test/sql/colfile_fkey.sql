-- colfile: UPDATE of a referencing row checks the foreign key, as on heap
-- (the check reads the old row's xmin to learn whether this transaction
-- inserted it, and then checks even an unchanged key)
CREATE TABLE fk_pk (id int PRIMARY KEY) USING colfile;
CREATE TABLE fk_ref (id int PRIMARY KEY, pid int REFERENCES fk_pk, note text) USING colfile;
INSERT INTO fk_pk VALUES (1), (2);
INSERT INTO fk_ref VALUES (10, 1, 'a'), (11, 2, 'b');
UPDATE fk_ref SET pid = 3 WHERE id = 10;
UPDATE fk_ref SET pid = 2 WHERE id = 10;
UPDATE fk_ref SET note = 'c' WHERE id = 11;
BEGIN;
INSERT INTO fk_ref VALUES (12, 1, 'd');
UPDATE fk_ref SET note = 'e' WHERE id = 12;
UPDATE fk_ref SET pid = 4 WHERE id = 12;
ROLLBACK;
-- referenced side: a referenced key cannot change or go
UPDATE fk_pk SET id = 5 WHERE id = 2;
DELETE FROM fk_pk WHERE id = 2;
UPDATE fk_pk SET id = 6 WHERE id = 1;
SELECT * FROM fk_ref ORDER BY id;
SELECT * FROM fk_pk ORDER BY id;
DROP TABLE fk_ref, fk_pk;
