# colfile crash safety: immediate stops during COPY, during a large UPDATE,
# with open transactions, while free space is reused, after column updates
# and while VACUUM merges column files; after each
# restart colfile_check is clean,
# every committed row is there (compared with a heap twin written in the
# same transactions) and nothing uncommitted is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('colfile_crash');
$node->init(allows_streaming => 'logical', extra => ['--data-checksums']);
$node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'mvinc'
max_replication_slots = 20
max_worker_processes = 32
mvinc.colfile_rows_per_group = 1000
));
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE t (id int PRIMARY KEY, a int, b text) USING colfile;
CREATE TABLE ref (id int PRIMARY KEY, a int, b text);
BEGIN;
INSERT INTO t SELECT g, g % 97, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO ref SELECT * FROM t;
COMMIT;
BEGIN;
DELETE FROM t WHERE id % 13 = 0;
DELETE FROM ref WHERE id % 13 = 0;
UPDATE t SET a = -a WHERE id % 17 = 0;
UPDATE ref SET a = -a WHERE id % 17 = 0;
COMMIT;
});

# Start sql in the background and crash the server once it has run a while.
sub crash_during
{
	my ($sql, $what) = @_;
	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		\$in, \$out, \$err);
	# wait until the statement has been running for a second
	$node->poll_query_until('postgres',
		qq{SELECT count(*) > 0 FROM pg_stat_activity
		   WHERE state = 'active' AND query LIKE '%mvinc_crash_marker%'
		     AND now() - query_start > interval '1 second'})
	  or die "statement did not start: $err";
	$node->stop('immediate');
	$h->finish;
	$node->start;
	pass("crashed during $what and restarted");
}

# Compare t with ref and run colfile_check.
sub verify
{
	my ($what) = @_;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM mvinc.colfile_check(\'t\')'),
		'0', "colfile_check clean after $what");
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM ((TABLE t EXCEPT ALL TABLE ref)
		                      UNION ALL (TABLE ref EXCEPT ALL TABLE t)) x}),
		'0', "committed rows intact after $what");
	is($node->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT count(*) FROM ref r WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.id = r.id AND t.a = r.a)}),
		'0', "index lookups find every committed row after $what");
}

# VACUUM until a condition on t holds (capture may hold the horizon a
# moment); returns whether it did
sub vacuum_until
{
	my ($cond) = @_;
	for (1 .. 100)
	{
		$node->safe_psql('postgres', 'VACUUM t');
		return 1 if $node->safe_psql('postgres', "SELECT $cond") eq 't';
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

# VACUUM until it lists free bytes
sub vacuum_until_free
{
	vacuum_until(q{free_bytes > 0 FROM mvinc.colfile_stats('t')})
	  or die 'VACUUM listed no free bytes';
}

verify('setup');

crash_during(q{/* mvinc_crash_marker */ COPY t (id, a, b) FROM PROGRAM 'seq 100001 5000000 | sed "s/$/\t1\tcopy/"'},
	'COPY');
verify('a crash during COPY');

crash_during(q{/* mvinc_crash_marker */ UPDATE t SET a = a + 1, b = b || 'x' FROM generate_series(1, 200) s WHERE s = 1 AND pg_sleep(0.0001) IS NOT NULL},
	'a large UPDATE');
verify('a crash during a large UPDATE');

# open transactions: one with uncommitted changes, one prepared-free mix
my ($in, $out, $err) = ('', '', '');
my $open = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], \$in, \$out, \$err);
$in .= q{
BEGIN;
INSERT INTO t SELECT g, 0, 'open' FROM generate_series(900001, 905000) g;
UPDATE t SET b = 'open update' WHERE id < 1000;
DELETE FROM t WHERE id BETWEEN 2000 AND 3000;
SELECT 'open transaction ready';
};
$open->pump until $out =~ /open transaction ready/;
# a committed transaction at the same time
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 5, 'committed' FROM generate_series(800001, 801500) g;
INSERT INTO ref SELECT g, 5, 'committed' FROM generate_series(800001, 801500) g;
DELETE FROM t WHERE id BETWEEN 5000 AND 5100;
DELETE FROM ref WHERE id BETWEEN 5000 AND 5100;
COMMIT;
});
$node->stop('immediate');
$open->kill_kill;
$node->start;
verify('a crash with open transactions');

# the table keeps working after recovery
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 7, 'after' FROM generate_series(700001, 703000) g;
INSERT INTO ref SELECT g, 7, 'after' FROM generate_series(700001, 703000) g;
UPDATE t SET a = a + 1 WHERE id % 11 = 0;
UPDATE ref SET a = a + 1 WHERE id % 11 = 0;
COMMIT;
VACUUM t;
});
verify('writes after recovery');
$node->stop('immediate');
$node->start;
verify('a crash after VACUUM');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE b = \'open\''), '0',
	'no uncommitted row survived');

# Space reuse: whole row groups die, VACUUM lists their bytes free (it
# runs until it has: capture may hold the horizon for a moment), then
# crashes while a COPY fills the free extents, and right after VACUUM
# rewrote the free list. Reused bytes must never overwrite a committed row.
$node->safe_psql('postgres', q{
BEGIN;
DELETE FROM t WHERE id <= 12000;
DELETE FROM ref WHERE id <= 12000;
COMMIT;
});
vacuum_until_free();
crash_during(q{/* mvinc_crash_marker */ COPY t (id, a, b) FROM PROGRAM 'seq 2000001 6000000 | sed "s/$/	2	reuse/"'},
	'a COPY into free space');
verify('a crash during a COPY into free space');
# the crashed COPY's row groups count as aborted: VACUUM frees their bytes
my $size_before = $node->safe_psql('postgres', q{SELECT pg_relation_size('t')});
vacuum_until_free();
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 3, md5(g::text) FROM generate_series(1, 9000) g;
INSERT INTO ref SELECT g, 3, md5(g::text) FROM generate_series(1, 9000) g;
COMMIT;
});
ok($node->safe_psql('postgres', qq{SELECT pg_relation_size('t') <= $size_before}) eq 't',
	'committed rows after the crash fill the crashed COPY\'s space (the file did not grow)');
verify('writes into free space after recovery');
$node->safe_psql('postgres', q{
BEGIN;
DELETE FROM t WHERE id <= 9000;
DELETE FROM ref WHERE id <= 9000;
COMMIT;
});
vacuum_until_free();
$node->stop('immediate');
$node->start;
verify('a crash after VACUUM listed free space');
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 4, md5(g::text) FROM generate_series(1, 9000) g;
INSERT INTO ref SELECT g, 4, md5(g::text) FROM generate_series(1, 9000) g;
COMMIT;
});
verify('writes into free space listed before the crash');

# Compaction: 300 single-row statements make 300 row groups; a first VACUUM
# sets compaction's horizon; the next one is held by a SHARE lock on the
# row-state table after it wrote the compacted group and deleted the
# sources' tuples (uncommitted), and the server crashes there. The old
# groups must be intact after recovery, and a later VACUUM compacts them.
$node->safe_psql('postgres', join('', map {
	"INSERT INTO t VALUES ($_, 6, 'small $_'); INSERT INTO ref VALUES ($_, 6, 'small $_');\n"
} 600001 .. 600300));
$node->safe_psql('postgres', 'VACUUM t');
my $groups_before = $node->safe_psql('postgres', q{SELECT row_groups FROM mvinc.colfile_stats('t')});
my ($lin, $lout, $lerr) = ('', '', '');
my $locker = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], \$lin, \$lout, \$lerr);
$lin .= "BEGIN; LOCK mvinc.colfile_rowstate IN SHARE MODE; SELECT 'locked';\n";
$locker->pump until $lout =~ /locked/;
my ($vin, $vout, $verr) = ('', '', '');
my $vacuum = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'VACUUM t' ],
	\$vin, \$vout, \$verr);
$node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM pg_stat_activity
	WHERE query = 'VACUUM t' AND wait_event_type = 'Lock'})
  or die 'VACUUM did not block';
$node->stop('immediate');
$locker->kill_kill;
$vacuum->kill_kill;
$node->start;
verify('a crash during compaction');
is($node->safe_psql('postgres', q{SELECT row_groups FROM mvinc.colfile_stats('t')}),
	$groups_before, 'the crashed compaction left the row groups as they were');
ok(vacuum_until(qq{row_groups < $groups_before - 200 FROM mvinc.colfile_stats('t')}),
	'a later VACUUM compacts the small row groups');
verify('compaction after the crash');

# Column updates: an UPDATE of unindexed columns keeps the rows' TIDs and
# writes column files. Committed ones survive a crash, an open one's vanish,
# and a crash while VACUUM merges a group's column files (held by a SHARE
# lock on the column file table) leaves the files as they were.
$node->safe_psql('postgres', q{
BEGIN;
UPDATE t SET b = b || '+c' WHERE id % 7 = 0;
UPDATE ref SET b = b || '+c' WHERE id % 7 = 0;
COMMIT;
BEGIN;
UPDATE t SET a = a * 3 WHERE id % 5 = 0;
UPDATE ref SET a = a * 3 WHERE id % 5 = 0;
COMMIT;
UPDATE t SET a = a + 1 WHERE id % 5 = 0;
UPDATE ref SET a = a + 1 WHERE id % 5 = 0;
});
ok($node->safe_psql('postgres', q{SELECT column_files > 0 FROM mvinc.colfile_stats('t')}) eq 't',
	'the updates were written in place');
($in, $out, $err) = ('', '', '');
$open = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], \$in, \$out, \$err);
$in .= q{
BEGIN;
UPDATE t SET b = 'open column update' WHERE id % 3 = 0;
SELECT 'open transaction ready';
};
$open->pump until $out =~ /open transaction ready/;
$node->stop('immediate');
$open->kill_kill;
$node->start;
verify('a crash after column updates');
is($node->safe_psql('postgres', q{SELECT count(*) FROM t WHERE b = 'open column update'}), '0',
	'no uncommitted column update survived');
my $files_before = $node->safe_psql('postgres', q{SELECT column_files FROM mvinc.colfile_stats('t')});
($lin, $lout, $lerr) = ('', '', '');
$locker = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres') ], \$lin, \$lout, \$lerr);
$lin .= "BEGIN; LOCK mvinc.colfile_colfile IN SHARE MODE; SELECT 'locked';\n";
$locker->pump until $lout =~ /locked/;
($vin, $vout, $verr) = ('', '', '');
$vacuum = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'VACUUM t' ],
	\$vin, \$vout, \$verr);
$node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM pg_stat_activity
	WHERE query = 'VACUUM t' AND wait_event_type = 'Lock'})
  or die 'VACUUM did not block';
$node->stop('immediate');
$locker->kill_kill;
$vacuum->kill_kill;
$node->start;
verify('a crash while VACUUM merged column files');
is($node->safe_psql('postgres', q{SELECT column_files FROM mvinc.colfile_stats('t')}),
	$files_before, 'the crashed VACUUM left the column files as they were');
ok(vacuum_until(q{column_files <= row_groups FROM mvinc.colfile_stats('t')}),
	'a later VACUUM merges each row group\'s column files into one');
verify('merging column files');
$node->stop('immediate');
$node->start;
verify('a crash after VACUUM merged column files');

$node->stop;
done_testing();
