# colfile UNLOGGED tables across restarts and crashes. A clean restart
# keeps their rows; an immediate stop empties them, as it does heap's
# unlogged tables, while their metadata (in logged tables) survives: the
# emptied table reads as empty, takes new rows whose TIDs start above
# everything left behind (index lookups, deletes, updates in place and
# compaction never meet the old rows), VACUUM removes what was left, and
# colfile_check stays clean. A second crash after new writes does the same.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('colfile_unlogged');
$node->init(allows_streaming => 'logical');
$node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'mvinc'
max_replication_slots = 20
max_worker_processes = 32
mvinc.colfile_rows_per_group = 1000
autovacuum = off
));
$node->start;

sub sql { my ($sql) = @_; return $node->safe_psql('postgres', $sql); }

sql(q{
CREATE EXTENSION mvinc;
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE UNLOGGED TABLE uh (id int PRIMARY KEY, a int, b text);
CREATE INDEX u_a ON u (a);
INSERT INTO u SELECT g, g % 7, 'old' || g FROM generate_series(1, 5000) g;
INSERT INTO uh SELECT * FROM u;
DELETE FROM u WHERE id % 10 = 0;
DELETE FROM uh WHERE id % 10 = 0;
UPDATE u SET b = b || 'x' WHERE id % 3 = 0;
UPDATE uh SET b = b || 'x' WHERE id % 3 = 0;
CHECKPOINT;
});
is(sql(q{SELECT relpersistence FROM pg_class WHERE relname = 'u'}), 'u', 'unlogged colfile table');
my $before = sql(q{SELECT count(*), sum(a), md5(string_agg(b, ',' ORDER BY id)) FROM u});

# a clean restart keeps the rows
$node->restart;
is(sql(q{SELECT count(*), sum(a), md5(string_agg(b, ',' ORDER BY id)) FROM u}), $before,
	'clean restart keeps the rows');

sub same_as_heap
{
	my ($what) = @_;
	is(sql(q{SELECT (SELECT count(*) FROM (SELECT * FROM u EXCEPT ALL SELECT * FROM uh) d)
	            + (SELECT count(*) FROM (SELECT * FROM uh EXCEPT ALL SELECT * FROM u) d)}),
		'0', "$what: same rows as the heap twin");
	is(sql(q{SET enable_seqscan = off; SELECT count(*) FROM uh WHERE NOT EXISTS
	        (SELECT 1 FROM u WHERE u.id = uh.id AND u.b = uh.b)}),
		'0', "$what: every row found through the index");
	is(sql(q{SELECT count(*) FROM mvinc.colfile_check('u')}), '0', "$what: colfile_check clean");
}

# an immediate stop empties it; the metadata stays behind
$node->stop('immediate');
$node->start;
is(sql(q{SELECT count(*) FROM u}), '0', 'crash empties the table');
is(sql(q{SELECT count(*) FROM uh}), '0', 'and its heap twin');
ok(sql(q{SELECT count(*) FROM mvinc.colfile_rowgroup WHERE relfilenode = pg_relation_filenode('u')}) > 0,
	'old metadata is still there');
is(sql(q{SELECT row_groups, live_rows, deleted_rows FROM mvinc.colfile_stats('u')}), '0|0|0',
	'and ignored');
is(sql(q{SELECT count(*) FROM mvinc.colfile_check('u')}), '0', 'colfile_check clean when empty');

# new rows: the old TIDs are never reused
sql(q{
INSERT INTO u SELECT g, g % 5, 'new' || g FROM generate_series(1, 3000) g;
INSERT INTO uh SELECT * FROM u;
});
ok(sql(q{SELECT min(ctid) > '(20,0)' FROM u}), 'new TIDs start above the old ones');
same_as_heap('after new inserts');
sql(q{
DELETE FROM u WHERE id % 4 = 0;
DELETE FROM uh WHERE id % 4 = 0;
UPDATE u SET b = b || 'y' WHERE id % 5 = 0;
UPDATE uh SET b = b || 'y' WHERE id % 5 = 0;
UPDATE u SET a = a + 100 WHERE id % 7 = 0;
UPDATE uh SET a = a + 100 WHERE id % 7 = 0;
});
same_as_heap('after deletes and updates');

# VACUUM removes what the earlier life left, compaction works on the rest
sql(q{VACUUM u});
is(sql(q{SELECT count(*) FROM mvinc.colfile_rowgroup r WHERE relfilenode = pg_relation_filenode('u')
        AND first_block < (SELECT min(row_group) FROM mvinc.colfile_row_groups('u'))}),
	'0', 'VACUUM deleted the old row groups');
is(sql(q{SELECT count(*) FROM (SELECT relfilenode, row_tid FROM mvinc.colfile_rowstate
                               UNION ALL SELECT relfilenode, row_tid FROM mvinc.colfile_rowlock) s
        WHERE relfilenode = pg_relation_filenode('u')
        AND row_tid < (SELECT ('(' || min(row_group) || ',0)')::tid FROM mvinc.colfile_row_groups('u'))}),
	'0', 'and the old row states');
sql(q{SELECT mvinc.colfile_compact('u'); VACUUM u; SELECT mvinc.colfile_compact('u');});
same_as_heap('after VACUUM and compaction');

# the review's cases. (a) An earlier life with holes (a rolled-back
# insert) and a larger file: VACUUM must not list its bytes as free in the
# new, smaller file, or later rows overwrite live ones.
sql(q{
CREATE UNLOGGED TABLE v (id int PRIMARY KEY, b text) USING colfile;
INSERT INTO v SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 2000) g;
BEGIN; INSERT INTO v SELECT g, repeat(md5(g::text), 4) FROM generate_series(2001, 4000) g; ROLLBACK;
INSERT INTO v SELECT g, repeat(md5(g::text), 4) FROM generate_series(4001, 6000) g;
DELETE FROM v WHERE id % 100 = 0;
UPDATE v SET b = b || 'u' WHERE id % 100 = 1;
CHECKPOINT;
});
# (b) an unlogged partitioned table whose colfile partition had a row moved out
sql(q{
CREATE UNLOGGED TABLE pt (k int, v int) PARTITION BY LIST (k);
CREATE UNLOGGED TABLE pt1 PARTITION OF pt FOR VALUES IN (1) USING colfile;
CREATE UNLOGGED TABLE pt2 PARTITION OF pt FOR VALUES IN (2) USING colfile;
INSERT INTO pt VALUES (1, 1), (1, 2);
UPDATE pt SET k = 2 WHERE v = 1;
CHECKPOINT;
});
# (c) a wide table whose compacted groups' directories went to TOAST, then
# the metadata's TOAST vacuumed
sql('CREATE UNLOGGED TABLE w (' . join(', ', map { "c$_ int" } 1 .. 300) . ') USING colfile');
sql(q{
DO $$ BEGIN FOR i IN 1..20 LOOP INSERT INTO w (c1, c300) VALUES (i, i); END LOOP; END $$;
VACUUM w; VACUUM w; VACUUM w;
VACUUM mvinc.colfile_rowgroup;
CHECKPOINT;
});
$node->stop('immediate');
$node->start;
sql(q{INSERT INTO v SELECT g, 'new' || g FROM generate_series(1, 10) g});
# TIDs of the earlier life name no row (before VACUUM removes its metadata)
is(sql(q{SELECT count(*) FROM v WHERE ctid = '(0,1)'}), '0', 'a ctid below the floor finds no row');
is(sql(q{WITH d AS (DELETE FROM v WHERE ctid = '(0,2)' RETURNING 1) SELECT count(*) FROM d}), '0',
	'nor deletes one');
is(sql(q{WITH u AS (UPDATE v SET b = 'x' WHERE ctid = '(0,3)' RETURNING 1) SELECT count(*) FROM u}), '0',
	'nor updates one');
is(sql(q{SELECT count(*) FROM v}), '10', 'no row was added or lost');
# stats show no earlier life
is(sql(q{SELECT column_files, delete_files FROM mvinc.colfile_stats('v')}), '0|0',
	'colfile_stats counts nothing of the earlier life');
sql(q{VACUUM v});
is(sql(q{SELECT count(*) FROM mvinc.colfile_check('v')}), '0', 'VACUUM after the crash lists no byte of the earlier life as free');
sql(q{INSERT INTO v SELECT g, repeat(md5(g::text), 4) FROM generate_series(11, 3000) g});
is(sql(q{SELECT count(*), sum(id), count(*) FILTER (WHERE b = repeat(md5(id::text), 4) OR b = 'new' || id) FROM v}),
	'3000|4501500|3000', 'rows written after that VACUUM are intact');
is(sql(q{SELECT count(*) FROM mvinc.colfile_check('v')}), '0', 'and colfile_check is clean');
# a partition that had a row moved out takes inserts again
sql(q{INSERT INTO pt VALUES (1, 3), (2, 4)});
is(sql(q{SELECT count(*) FROM pt}), '2', 'a partition with a moved-out row takes inserts after the crash');
# the wide table's first insert after the crash
sql(q{INSERT INTO w (c1, c300) VALUES (1, 1)});
is(sql(q{SELECT count(*), sum(c300) FROM w}), '1|1', 'a table whose old directories left TOAST takes inserts');

# a second crash after new writes, then SET LOGGED: rows survive the next crash
$node->stop('immediate');
$node->start;
is(sql(q{SELECT count(*) FROM u}), '0', 'second crash empties the table again');
sql(q{
INSERT INTO u SELECT g, g, 'third' || g FROM generate_series(1, 2000) g;
INSERT INTO uh SELECT * FROM u;
});
same_as_heap('after the second crash');
sql(q{ALTER TABLE u SET LOGGED; ALTER TABLE uh SET LOGGED;});
is(sql(q{SELECT relpersistence FROM pg_class WHERE relname = 'u'}), 'p', 'SET LOGGED');
$node->stop('immediate');
$node->start;
is(sql(q{SELECT count(*) FROM u}), '2000', 'a logged table keeps its rows across a crash');
same_as_heap('logged after the crash');
sql(q{ALTER TABLE u SET UNLOGGED; ALTER TABLE uh SET UNLOGGED;});
is(sql(q{SELECT relpersistence FROM pg_class WHERE relname = 'u'}), 'u', 'SET UNLOGGED');
same_as_heap('unlogged again');

$node->stop;
done_testing();
