# The capture worker's life: started by the first table tracked and at
# server start, one per database (104 covers its stop when nothing is left), restarted after errors without losing or
# duplicating changes, stopped with its slot dropped by DROP EXTENSION and
# DROP DATABASE; misconfiguration refused with a hint.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use MvincNode;

my $node = mvinc_node('life');

sub workers
{
	my ($db) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND datname = '$db'");
}

sub slots
{
	return $node->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'");
}

sub wait_for { return mvinc_wait_for($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE db1; CREATE DATABASE db2;');
$node->safe_psql('db1', 'CREATE EXTENSION mvinc');
$node->safe_psql('db1', q{
CREATE TABLE t (id int PRIMARY KEY, v text);
SELECT mvinc.track('t');
INSERT INTO t VALUES (1, 'a');
SELECT mvinc.wait_for_capture();
});
is(workers('db1'), '1', 'tracking a table starts one worker');
is(workers('db2'), '0', 'no worker where the extension is not installed');
is(slots(), '1', 'one slot');

# A second CREATE EXTENSION elsewhere; a rolled back one leaves nothing.
$node->safe_psql('db2', 'BEGIN; CREATE EXTENSION mvinc; ROLLBACK;');
sleep 2;
is(workers('db2'), '0', 'rolled back CREATE EXTENSION: no worker');
is(slots(), '1', 'rolled back CREATE EXTENSION: no slot');

# Server restart: the launcher starts the worker; nothing is lost.
$node->restart;
$node->safe_psql('db1', "INSERT INTO t VALUES (2, 'b')");
$node->safe_psql('db1', 'SELECT mvinc.wait_for_capture()');
my $log = $node->safe_psql('db1', "SELECT mvinc.track('t')");
is($node->safe_psql('db1', "SELECT string_agg(id::text, ',' ORDER BY id) FROM $log"), '1,2',
	'after a restart the worker runs again and captures');
is(workers('db1'), '1', 'one worker after restart');

# mvinc.capture_nice: the worker runs that much nicer than the server,
# from a reload on.
sub niceness
{
	my ($pid) = @_;
	my $stat = slurp_file("/proc/$pid/stat");
	$stat =~ s/^.*\) //s;    # after the command name: state is field 3
	return (split / /, $stat)[16];    # field 19
}
SKIP:
{
	skip 'no /proc', 1 unless -e "/proc/$$/stat";
	my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	$node->append_conf('postgresql.conf', "mvinc.capture_nice = 7");
	$node->reload;
	my $nicer = 0;
	for (1 .. 100)
	{
		my $pid = $node->safe_psql('db1',
			"SELECT pid FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND datname = 'db1'");
		$nicer = niceness($pid) - niceness($postmaster) if $pid;
		last if $nicer == 7;
		usleep(100_000);
	}
	is($nicer, 7, 'mvinc.capture_nice: the worker runs 7 nicer after a reload');
}

# Errors: the worker records the error, restarts with backoff, and loses
# and duplicates nothing once the cause is gone.
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE int USING NULL");
$node->safe_psql('db1', "INSERT INTO t VALUES (200, 'x'), (3, 'c')");
ok(wait_for('db1', "SELECT last_error LIKE 'invalid input syntax for type integer%' FROM mvinc.capture", 't'),
	'the error is shown in mvinc.capture');
my ($ret, $out, $err) = $node->psql('db1', "SELECT mvinc.wait_for_capture(timeout => '200 ms')");
like($err, qr/timed out waiting for change capture.*\n.*invalid input syntax/, 'wait_for_capture times out and names the error');
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE text");
$node->safe_psql('db1', "SELECT mvinc.wait_for_capture(timeout => '90 s')");
is($node->safe_psql('db1', "SELECT string_agg(id::text, ',' ORDER BY id) FROM $log"), '1,2,3,200',
	'after the error is fixed, every change is captured once');

# An unchanged TOASTed value whose chunks a TRUNCATE removed before the
# update was captured: logged as NULL with a WARNING, capture goes on.
$node->safe_psql('db1', q{
CREATE TABLE tt (id int PRIMARY KEY, small int, big text);
ALTER TABLE tt ALTER big SET STORAGE EXTERNAL;
SELECT mvinc.track('tt');
});
my $tt_log = $node->safe_psql('db1', "SELECT mvinc.track('tt')");
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE int USING NULL");
$node->safe_psql('db1', "INSERT INTO t VALUES (400, 'blocks the worker')");
ok(wait_for('db1', "SELECT last_error LIKE 'invalid input syntax%' FROM mvinc.capture", 't'), 'worker blocked again');
$node->safe_psql('db1', "INSERT INTO tt VALUES (1, 1, repeat('t', 5000))");
$node->safe_psql('db1', "UPDATE tt SET small = 2");
$node->safe_psql('db1', "TRUNCATE tt");
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE text");
$node->safe_psql('db1', "SELECT mvinc.wait_for_capture(timeout => '90 s')");
is($node->safe_psql('db1', "SELECT string_agg(_mvinc_op::text || _mvinc_image::text || coalesce(length(big)::text, '-'), ' ' ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n') FROM $tt_log"),
	'in5000 uk- un- tn-', 'the lost value is logged as NULL, the rest in order');
like(slurp_file($node->logfile), qr/unchanged TOASTed value of column "big" of table \d+ could not be fetched/,
	'with a WARNING');

# A killed worker comes back.
$node->safe_psql('db1', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'");
$node->safe_psql('db1', "INSERT INTO t VALUES (4, 'd')");
$node->safe_psql('db1', "SELECT mvinc.wait_for_capture(timeout => '90 s')");
is($node->safe_psql('db1', "SELECT count(*) FROM $log WHERE id = 4"), '1', 'a terminated worker is restarted');

# WAL removed before the worker read it (max_slot_wal_keep_size): the slot
# is recreated, the loss is recorded in retained_from, capture goes on.
# A refresh that waits for capture meanwhile must see the loss recorded
# during its wait and rebuild (it reported noop: its statement snapshot
# predated the record).
$node->safe_psql('db1', 'CREATE MATERIALIZED VIEW tv WITH (mvinc.incremental = true) AS SELECT count(*) AS n, max(id) AS m FROM t');
$node->append_conf('postgresql.conf', "max_slot_wal_keep_size = 1MB\nwal_keep_size = 0");
$node->reload;
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE int USING NULL");
$node->safe_psql('db1', "INSERT INTO t VALUES (300, 'lost')");
ok(wait_for('db1', "SELECT last_error LIKE 'invalid input syntax%' FROM mvinc.capture", 't'), 'worker blocked');
$node->safe_psql('db1', 'CREATE TABLE filler (x text)');
for (1 .. 4)
{
	$node->safe_psql('db1', "INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 2000); SELECT pg_switch_wal();");
}
$node->safe_psql('db1', 'CHECKPOINT');
is($node->safe_psql('postgres', "SELECT wal_status FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'"),
	'lost', 'the slot lost its WAL');
my ($r_in, $r_out, $r_err) = ("SELECT 'mode ' || mode FROM mvinc.refresh('tv');\n", '', '');
my $refresher = IPC::Run::start([ 'psql', '-X', '-At', '-d', $node->connstr('db1') ],
	\$r_in, \$r_out, \$r_err);
$refresher->pump_nb;
ok(wait_for('db1', "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%mvinc.refresh(''tv'')%' AND state = 'active' AND pid <> pg_backend_pid()", '1'),
	'a refresh waits for capture');
$node->safe_psql('db1', "ALTER TABLE $log ALTER COLUMN v TYPE text");
$refresher->pump until $r_out =~ /mode (\w+)/ || $r_err =~ /ERROR/;
is($1 // $r_err, 'full', 'the waiting refresh saw the loss and rebuilt');
$r_in .= "\\q\n";
$refresher->finish;
is($node->safe_psql('db1', "SELECT (n, m) = (SELECT count(*), max(id) FROM t) FROM tv"), 't',
	'the view equals its query after the loss');
$node->safe_psql('db1', 'DROP MATERIALIZED VIEW tv');
my $recorded = 0;
for (1 .. 900)
{
	$recorded = $node->safe_psql('db1', "SELECT retained_from > '0/0' FROM mvinc.tracked WHERE relid = 't'::regclass");
	last if $recorded eq 't';
	usleep(100_000);
}
is($recorded, 't', 'the loss is recorded in retained_from');
$node->safe_psql('db1', "INSERT INTO t VALUES (301, 'after')");
$node->safe_psql('db1', "SELECT mvinc.wait_for_capture(timeout => '90 s')");
is($node->safe_psql('db1', "SELECT count(*) FROM $log WHERE id = 301"), '1', 'capture goes on with a new slot');
like(slurp_file($node->logfile), qr/replication slot "mvinc_\d+" was invalidated: changes committed between/,
	'and logged');

# Someone drops the slot while the worker is down: the loss is recorded too.
my $before = $node->safe_psql('db1', "SELECT retained_from FROM mvinc.tracked WHERE relid = 't'::regclass");
my $dropped = 0;
for (1 .. 100)
{
	$node->safe_psql('db1', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'");
	my ($r) = $node->psql('db1', "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'");
	if ($r == 0 && slots() eq '0') { $dropped = 1; last; }
	usleep(20_000);
}
ok($dropped, 'slot dropped behind the worker\'s back');
ok(wait_for('db1', "SELECT retained_from > '$before' FROM mvinc.tracked WHERE relid = 't'::regclass", 't'),
	'a dropped slot is recorded as lost changes');

# DROP EXTENSION: worker and slot go, nothing of mvinc is left.
$node->safe_psql('db1', 'DROP EXTENSION mvinc');
ok(wait_for('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'", '0'),
	'DROP EXTENSION drops the slot');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '0'),
	'DROP EXTENSION stops the worker');
is($node->safe_psql('db1', "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'mvinc'"),
	'0', 'no table of mvinc left');
is($node->safe_psql('db1', "SELECT count(*) FROM pg_class WHERE relname LIKE 'changelog%'"), '0', 'no change log left');
is($node->safe_psql('db1', "SELECT count(*) FROM pg_namespace WHERE nspname = 'mvinc'"), '0', 'no schema mvinc left');
is($node->safe_psql('db1', "SELECT count(*) FROM pg_extension WHERE extname = 'mvinc'"), '0', 'no extension left');

# A schema mvinc that still holds someone else's object is kept.
$node->safe_psql('db1', 'CREATE EXTENSION mvinc');
$node->safe_psql('db1', q{
CREATE TABLE mvinc.user_notes (x int);
INSERT INTO t VALUES (500, 'again');
SELECT mvinc.track('t');
INSERT INTO t VALUES (501, 'again');
SELECT mvinc.wait_for_capture(timeout => '90 s');
});
is($node->safe_psql('db1', "SELECT string_agg(id::text, ',') FROM " . $node->safe_psql('db1', "SELECT mvinc.track('t')")),
	'501', 're-created extension captures');
$node->safe_psql('db1', 'DROP EXTENSION mvinc');
is($node->safe_psql('db1', "SELECT string_agg(c.relname, ',') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'mvinc'"),
	'user_notes', 'a schema mvinc with a user table is kept, with only that table');
ok(wait_for('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'", '0'),
	'second DROP EXTENSION drops the slot');
$node->safe_psql('db1', 'DROP TABLE mvinc.user_notes');

# CREATE again, then DROP DATABASE works with the worker running.
$node->safe_psql('db1', "CREATE EXTENSION mvinc; SELECT mvinc.track('t')");
ok(wait_for('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'", '1'),
	'CREATE EXTENSION and a table tracked again create the slot');
$node->safe_psql('postgres', 'DROP DATABASE db1');
is(slots(), '0', 'DROP DATABASE drops the slot');
sleep 2;
is(workers('db1'), '0', 'and the worker stays stopped');
unlike(slurp_file($node->logfile), qr/database \d+ does not exist/, 'no restart loop on the dropped database');

# Misconfiguration: no free replication slot, no free worker slot.
$node->append_conf('postgresql.conf', "max_replication_slots = 1");
$node->restart;
$node->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('taken')");
$node->safe_psql('db2', 'CREATE EXTENSION mvinc; CREATE TABLE u (id int PRIMARY KEY)');
($ret, $out, $err) = $node->psql('db2', "SELECT mvinc.track('u')");
like($err, qr/no free replication slot for the mvinc capture worker/, 'no free replication slot: tracking refused');
like($err, qr/HINT:.*max_replication_slots/, 'hint names max_replication_slots');
$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('taken')");

$node->append_conf('postgresql.conf', "max_replication_slots = 10\nmax_worker_processes = 0");
$node->restart;
($ret, $out, $err) = $node->psql('db2', "SELECT mvinc.track('u')");
like($err, qr/could not start the mvinc capture worker/, 'no free worker slot: tracking refused');
like($err, qr/HINT:.*max_worker_processes/, 'hint names max_worker_processes');
is($node->safe_psql('db2', "SELECT count(*) FROM mvinc.tracked"), '0', 'nothing half-created');

$node->stop;
done_testing();
