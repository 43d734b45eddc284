-- colfile under SERIALIZABLE takes SSI's SIREAD locks where heap takes
-- them: the relation for scans, the row's TID for reads by TID (index
-- scans, TID scans, the rows an UPDATE or DELETE meets), the index pages
-- its btree reads; and none on colfile's metadata tables, which every
-- colfile table shares (locks there made unrelated tables conflict).
-- Each statement runs once on a colfile table c and once on a heap twin h
-- in a fresh SERIALIZABLE transaction; the locks each one left are listed
-- with c and h spelled t.
CREATE TABLE c (id int PRIMARY KEY, v int, w text) USING colfile;
CREATE TABLE h (id int PRIMARY KEY, v int, w text) USING heap;
INSERT INTO c SELECT g, g, 'w' || g FROM generate_series(1, 100) g;
INSERT INTO h SELECT g, g, 'w' || g FROM generate_series(1, 100) g;
VACUUM ANALYZE c, h;
CREATE FUNCTION sireads_after(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	locks text;
BEGIN
	EXECUTE stmt;
	SELECT string_agg(format('%s %s%s%s', l.locktype,
							 regexp_replace(l.relation::regclass::text, '^[ch](_|$)', 't\1'),
							 ' ' || l.page, ' ' || l.tuple), ', '
					  ORDER BY l.locktype, l.relation::regclass::text, l.page, l.tuple)
	  INTO locks
	  FROM pg_locks l
	 WHERE l.pid = pg_backend_pid() AND l.mode = 'SIReadLock';
	RETURN coalesce(locks, 'none');
END $$;
-- (statement, whether sequential scans are allowed)
CREATE TABLE steps (n int, stmt text, seqscan text);
INSERT INTO steps VALUES
	(1, 'SELECT v FROM %I WHERE id = 5', 'off'),
	(2, 'SELECT count(*) FROM %I', 'on'),
	(3, 'SELECT sum(v) FROM %I WHERE w LIKE ''w1%%''', 'on'),
	(4, 'SELECT v FROM %I WHERE ctid = ''(0,7)''', 'on'),
	(5, 'UPDATE %I SET v = v + 1 WHERE id = 9', 'off'),
	(6, 'DELETE FROM %I WHERE id = 11', 'off'),
	(7, 'INSERT INTO %I VALUES (1000, 0, ''new'')', 'on'),
	(8, 'SELECT v FROM %I WHERE id BETWEEN 20 AND 22', 'off'),
	(9, 'UPDATE %I SET id = id + 1000 WHERE id = 30', 'off'),
	(10, 'UPDATE %I SET w = ''x'' WHERE v > 90', 'on'),
	(11, 'SELECT count(*) FROM %I TABLESAMPLE SYSTEM (100)', 'on');
SET enable_bitmapscan = off;
-- each statement in a fresh SERIALIZABLE transaction (the default, for
-- the transactions the procedure starts), rolled back
CREATE PROCEDURE compare_locks() LANGUAGE plpgsql AS $$
DECLARE
	stmts text[];
	seqscans text[];
	c_locks text[] := '{}';
	h_locks text[] := '{}';
BEGIN
	SELECT array_agg(stmt ORDER BY n), array_agg(seqscan ORDER BY n)
	  INTO stmts, seqscans FROM steps;
	COMMIT;
	FOR i IN 1 .. array_length(stmts, 1) LOOP
		PERFORM set_config('enable_seqscan', seqscans[i], true);
		c_locks := c_locks || sireads_after(format(stmts[i], 'c'));
		ROLLBACK;
		PERFORM set_config('enable_seqscan', seqscans[i], true);
		h_locks := h_locks || sireads_after(format(stmts[i], 'h'));
		ROLLBACK;
	END LOOP;
	INSERT INTO lock_lists SELECT * FROM unnest(c_locks, h_locks) WITH ORDINALITY;
END $$;
CREATE TABLE lock_lists (c_locks text, h_locks text, step int);
SET default_transaction_isolation = serializable;
CALL compare_locks();
RESET default_transaction_isolation;
SELECT step, c_locks = h_locks AS as_heap, c_locks AS locks FROM lock_lists ORDER BY step;
-- a TID range scan locks the relation (heap takes no lock at all there)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sireads_after('SELECT count(*) FROM c WHERE ctid < ''(0,50)''');
ROLLBACK;
-- rows read through an index by a cursor
BEGIN ISOLATION LEVEL SERIALIZABLE;
SET LOCAL enable_seqscan = off;
DECLARE cur CURSOR FOR SELECT v FROM c WHERE id > 95 ORDER BY id;
FETCH 2 FROM cur;
SELECT sireads_after('SELECT 1');
ROLLBACK;
DROP PROCEDURE compare_locks();
DROP FUNCTION sireads_after(text);
DROP TABLE c, h, steps, lock_lists;
