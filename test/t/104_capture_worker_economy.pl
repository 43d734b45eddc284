# Worker economy: a database runs a capture worker (and holds a replication
# slot) only while it has tracked tables or scheduled views.  CREATE
# EXTENSION only tries to start one (it stops when idle), so it works in
# more databases than there are worker slots; tracking where no worker or replication slot is free is a
# clear error that leaves nothing behind; a worker whose last table is
# untracked stops and gives its slots back.  A view created in a
# transaction that has already written (which cannot wait for a new slot)
# reads correctly and rebuilds at its first refresh.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MvincNode;

# Two worker slots (no logical replication launcher to take one), three
# replication slots; an idle worker stops at once.
my $node = mvinc_node('economy', conf => q(
max_worker_processes = 2
max_logical_replication_workers = 0
max_replication_slots = 3
max_parallel_workers_per_gather = 0
mvinc.capture_idle_stop = 0
));

sub workers
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'");
}

sub slots
{
	return $node->safe_psql('postgres',
		"SELECT string_agg(d.datname, ',' ORDER BY d.datname) FROM pg_replication_slots s "
		  . "JOIN pg_database d ON s.slot_name = 'mvinc_' || d.oid");
}

sub wait_for { return mvinc_wait_for($node, @_); }

my $view_sql = q{
CREATE TABLE t (k int, v int);
INSERT INTO t SELECT g % 10, g FROM generate_series(1, 1000) g;
CREATE MATERIALIZED VIEW mv WITH (mvinc.incremental = true)
    AS SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k;
};
my $diff = q{SELECT count(*) FROM ((TABLE mv EXCEPT ALL
    SELECT k, sum(v), count(*) FROM t GROUP BY k) UNION ALL
    (SELECT k, sum(v), count(*) FROM t GROUP BY k EXCEPT ALL TABLE mv)) d};

# mvinc's launcher runs once at server start, in a worker slot
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'mvinc%'", '0'),
	'the launcher is done');

# Four databases with the extension, more than there are worker slots
for my $db (qw(d1 d2 d3 d4))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION mvinc');
}
pass('CREATE EXTENSION works in more databases than there are worker slots');
# (each starts a worker if a slot is free, which stops once idle)
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '0'),
	'no capture worker runs where nothing is tracked');
ok(wait_for('postgres', "SELECT count(*) FROM pg_replication_slots", '0'), 'no replication slot either');
is($node->safe_psql('d1', 'SELECT mvinc.wait_for_capture() IS NOT NULL'), 't',
	'wait_for_capture returns at once with nothing tracked');

# The first view of d1 and of d2 start their databases' workers
$node->safe_psql('d1', $view_sql);
$node->safe_psql('d2', $view_sql);
is(workers(), '2', 'a worker for each database with a tracked table');
is(slots(), 'd1,d2', 'and a replication slot each');

# d3: no worker slot left.  The error names the setting; nothing is left
# half-created.
my ($rc, $out, $err) = $node->psql('d3', $view_sql);
isnt($rc, 0, 'no worker slot: CREATE MATERIALIZED VIEW fails');
like($err, qr/could not start the mvinc capture worker.*\n.*DETAIL:  All background worker slots are in use\.\n.*HINT:  Increase "max_worker_processes"/,
	'the error names max_worker_processes');
is($node->safe_psql('d3', "SELECT count(*) FROM pg_class WHERE relname = 'mv'")
	  . $node->safe_psql('d3', 'SELECT count(*) FROM mvinc.tracked'),
	'00', 'nothing half-created');
$node->safe_psql('d3', 'DROP TABLE t');

# Dropping d1's only view frees its worker and its replication slot
$node->safe_psql('d1', 'DROP MATERIALIZED VIEW mv');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '1'),
	'the worker of a database with nothing tracked stops');
is(slots(), 'd2', 'and drops its replication slot');
$node->safe_psql('d3', $view_sql);
is($node->safe_psql('d3', $diff), '0', 'd3 now gets a worker: its view is right');
is(slots(), 'd2,d3', 'd3 holds a slot');

# Replication slots all taken (a physical one fills the last): the error
# names max_replication_slots, before a worker is started.
$node->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('filler')");
($rc, $out, $err) = $node->psql('d4', $view_sql);
isnt($rc, 0, 'no replication slot: CREATE MATERIALIZED VIEW fails');
like($err, qr/no free replication slot for the mvinc capture worker of database "d4".*\n.*DETAIL:  All 3 replication slots are in use.*\n.*HINT:  .*"max_replication_slots"/,
	'the error names max_replication_slots');
is($node->safe_psql('d4', 'SELECT count(*) FROM mvinc.tracked'), '0', 'nothing tracked in d4');
$node->safe_psql('d4', 'DROP TABLE t');
$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('filler')");

# d2 and d3 are back to nothing tracked: both workers stop
$node->safe_psql('d2', 'DROP MATERIALIZED VIEW mv');
$node->safe_psql('d3', 'DROP MATERIALIZED VIEW mv; DROP TABLE t');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '0'),
	'no worker left once nothing is tracked');
is(slots(), '', 'no slot left');

# A view created in a transaction that already wrote: it cannot wait for
# the new slot (which waits for it), so its source's changes up to the
# slot's start count as lost: it reads its query and rebuilds at its first
# refresh.  A writer that commits right after it must not be missed.
$node->safe_psql('d4', "BEGIN; $view_sql; COMMIT;");
$node->safe_psql('d4', 'INSERT INTO t VALUES (3, 5000), (11, 7)');
is($node->safe_psql('d4', $diff), '0', 'read right after: equals the query');
$node->safe_psql('d4', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('d4', "SELECT mode FROM mvinc.refresh('mv')"), 'full', 'its first refresh rebuilds');
is($node->safe_psql('d4', $diff), '0', 'equals the query after it');
$node->safe_psql('d4', 'INSERT INTO t VALUES (4, 1); UPDATE t SET v = v + 1 WHERE k = 5');
is($node->safe_psql('d4', $diff), '0', 'then reads stay right');
$node->safe_psql('d4', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('d4', "SELECT mode FROM mvinc.refresh('mv')"), 'regroup', 'and refreshes incrementally');
is($node->safe_psql('d4', $diff), '0', 'equal after that refresh');

# A scheduled view keeps the worker (it hosts the schedule) even when its
# source is not tracked yet; a restart brings back only needed workers.
$node->safe_psql('d4', "ALTER MATERIALIZED VIEW mv SET (mvinc.refresh_interval = '0')");
$node->restart;
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture launcher'", '0'),
	'the launcher is done');
ok(wait_for('postgres', "SELECT string_agg(datname, ',') FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", 'd4'),
	'after a restart only the database with a tracked table runs a worker');
$node->safe_psql('d4', 'INSERT INTO t VALUES (1, 1)');
ok(wait_for('d4', "SELECT mvinc.read_path('mv')", 'fresh'), 'the scheduled view refreshes itself');
is($node->safe_psql('d4', $diff), '0', 'and is right');

# A scheduled view restored into a database whose worker has stopped: the
# restored catalog row (COPY) starts the worker, which runs the schedule.
my $dump = $node->basedir . '/d4.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('d4') ], 'a dump of d4');
# (two worker slots: d5's capture worker and its refresh worker need both)
$node->safe_psql('d4', 'DROP MATERIALIZED VIEW mv');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '0'),
	'd4 has nothing left to capture');
$node->safe_psql('postgres', 'CREATE DATABASE d5');
command_ok([ 'pg_restore', '--section=pre-data', '-d', $node->connstr('d5'), $dump ], 'its pre-data restored');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND datname = 'd5'", '0'),
	'no worker runs in the new database');
command_ok([ 'pg_restore', '--section=data', '-d', $node->connstr('d5'), $dump ], 'its data restored');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND datname = 'd5'", '1'),
	'the restored schedule started the worker');
command_ok([ 'pg_restore', '--section=post-data', '-d', $node->connstr('d5'), $dump ], 'its post-data restored');
$node->safe_psql('d5', 'INSERT INTO t VALUES (1, 1)');
ok(wait_for('d5', "SELECT mvinc.read_path('mv')", 'fresh'), 'the restored view refreshes itself');
is($node->safe_psql('d5', $diff), '0', 'and is right');

done_testing();
