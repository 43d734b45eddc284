# colfile keeps row locks and the records of updates in place
# ('x', 'n', 's', 'K', 'c') in an unlogged table: they write no WAL, and a
# crash, which ends every transaction that held them, empties the table.
# A prepared transaction survives a restart with its locks, as heap's do:
# they must still keep others off its rows. A standby, which has no
# unlogged tables, must read colfile tables without them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('colfile_row_locks');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
CREATE EXTENSION mvinc;
CREATE TABLE t (id int PRIMARY KEY, a int, b text) USING colfile;
INSERT INTO t SELECT g, g, 'row ' || g FROM generate_series(1, 5000) g;
});

# an UPDATE of an unindexed column of every row writes a few bytes per row
# (its column file), not a record per row
my $wal = sql(q{
SELECT pg_current_wal_insert_lsn() AS l0 \gset
UPDATE t SET a = a + 1;
SELECT pg_current_wal_insert_lsn() - :'l0'});
cmp_ok($wal, '<', 5000 * 50, "an UPDATE in place of 5,000 rows wrote $wal bytes of WAL");
is(sql(q{SELECT count(*) FROM mvinc.colfile_rowlock WHERE relfilenode = pg_relation_filenode('t')}),
	'5000', 'its records are in the unlogged table');

# a prepared transaction's locks and updates in place survive a crash
sql(q{
BEGIN;
SELECT * FROM t WHERE id = 1 FOR UPDATE;
UPDATE t SET a = -2 WHERE id = 2;
SELECT * FROM t WHERE id = 4 FOR SHARE;
SELECT * FROM t WHERE id = 5 FOR KEY SHARE;
PREPARE TRANSACTION 'p';
});
$node->stop('immediate');
$node->start;

sub blocked
{
	my ($stmt) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SET lock_timeout = '300ms'; $stmt");
	return $err =~ /lock timeout/ ? 1 : 0;
}
ok(blocked('UPDATE t SET a = 0 WHERE id = 1'), 'FOR UPDATE held after the crash');
ok(blocked('UPDATE t SET a = 0 WHERE id = 2'), 'the update in place held after the crash');
ok(!blocked('SELECT * FROM t WHERE id = 2 FOR KEY SHARE'),
	'FOR KEY SHARE does not wait for an update in place');
ok(blocked('UPDATE t SET a = 0 WHERE id = 4'), 'FOR SHARE held after the crash');
ok(blocked('DELETE FROM t WHERE id = 5'), 'FOR KEY SHARE held after the crash');
ok(!blocked('UPDATE t SET a = 0 WHERE id = 5'), 'FOR KEY SHARE lets an update in place pass');
ok(!blocked('UPDATE t SET a = 0 WHERE id = 6'), 'other rows are free');
is(sql(q{SELECT locked_rows FROM mvinc.colfile_stats('t')}), '4', 'colfile_stats counts the held rows');

sql(q{COMMIT PREPARED 'p'});
ok(!blocked('UPDATE t SET a = a + 100 WHERE id IN (1, 2, 4)'), 'COMMIT PREPARED releases them');
is(sql(q{SELECT string_agg(id || ':' || a, ' ' ORDER BY id) FROM t WHERE id <= 6}),
	'1:102 2:98 3:4 4:105 5:0 6:0', 'values after the prepared update and the later ones');
sql(q{VACUUM t});
is(sql(q{SELECT (SELECT count(*) FROM mvinc.colfile_rowlock WHERE relfilenode = pg_relation_filenode('t'))
        + (SELECT count(*) FROM mvinc.colfile_rowstate WHERE relfilenode = pg_relation_filenode('t'))}),
	'0', 'VACUUM removes the records and their prepared copies');
is(sql(q{SELECT count(*) FROM mvinc.colfile_check('t')}), '0', 'colfile_check is clean');

# a standby reads colfile tables while the primary holds locks
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('colfile_row_locks_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
my ($in, $out, $err) = ('', '', '');
my $holder = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], \$in, \$out, \$err);
$in .= "BEGIN; SELECT count(*) FROM (SELECT * FROM t WHERE id <= 100 FOR UPDATE) l; UPDATE t SET a = a + 1 WHERE id > 4900; SELECT 'held';\n";
$holder->pump until $out =~ /held/ || $err =~ /ERROR/;
is($err, '', 'the primary holds locks and an update in place');
sql(q{ANALYZE t});
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*), sum(a) FROM t}),
	sql(q{SELECT count(*), sum(a) FROM t}), 'the standby reads the table');
# the planner reads the index's endpoint with a non-MVCC snapshot
is($standby->safe_psql('postgres', q{SET enable_seqscan = off;
SELECT count(*) FROM t WHERE id > 4990}), '10', 'the standby plans and runs an index scan');
is($standby->safe_psql('postgres', q{SELECT locked_rows FROM mvinc.colfile_stats('t')}),
	'0', 'a standby has no row locks');
$in .= "COMMIT;\n";
$holder->finish;
is(sql(q{SELECT sum(a) FROM t WHERE id > 4900}),
	sql(q{SELECT sum(g + 2) FROM generate_series(4901, 5000) g}), 'the update committed');

$standby->stop;
$node->stop;
done_testing();
