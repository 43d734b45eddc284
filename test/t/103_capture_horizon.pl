# The capture slot holds the data xmin horizon (VACUUM of every table)
# only while a tracked source may need an unchanged TOASTed value fetched
# by its pointer: no REPLICA IDENTITY FULL and a TOAST table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use MvincNode;

my $node = mvinc_node('horizon');

sub xmin_held
{
	return $node->safe_psql('postgres',
		"SELECT xmin IS NOT NULL FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'");
}

# Poll until the slot's xmin is held (t) or not (f), 15 s at most.
sub wait_xmin
{
	my ($want) = @_;
	for (1 .. 150)
	{
		return 1 if xmin_held() eq $want;
		usleep(100_000);
	}
	return 0;
}

# Poll until the worker's last error mentions a word, 30 s at most.
sub wait_for_error
{
	my ($word) = @_;
	for (1 .. 300)
	{
		return 1 if $node->safe_psql('postgres',
			"SELECT coalesce(last_error LIKE '%$word%', false) FROM mvinc.capture") eq 't';
		usleep(100_000);
	}
	return 0;
}

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE narrow (id int PRIMARY KEY, n int);          -- no TOAST table
CREATE TABLE wide_full (id int PRIMARY KEY, t text);
SELECT mvinc.track('narrow');
SELECT mvinc.track('wide_full', full_old_rows => true);
});
ok(wait_xmin('f'), 'only toast-less and FULL sources: the slot holds no xmin');

# A source that needs it: held at once, before the track commits.
$node->safe_psql('postgres', q{
CREATE TABLE wide (id int PRIMARY KEY, small int, big text);
ALTER TABLE wide ALTER big SET STORAGE EXTERNAL;
BEGIN;
SELECT mvinc.track('wide');
SELECT pg_sleep(0);
COMMIT;
});
is(xmin_held(), 't', 'tracking a source with TOAST and default identity holds it at once');
sleep 2;
is(xmin_held(), 't', 'and keeps holding it');

# Unchanged TOASTed values still come out whole.
$node->safe_psql('postgres', q{
INSERT INTO wide VALUES (1, 1, repeat('w', 5000));
UPDATE wide SET small = 2;
SELECT mvinc.wait_for_capture();
});
my $log = $node->safe_psql('postgres', "SELECT mvinc.track('wide')");
is($node->safe_psql('postgres', "SELECT string_agg(_mvinc_image::text || coalesce(length(big)::text, ''), ' ' ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n') FROM $log"),
	'n5000 k n5000', 'the unchanged TOASTed value is logged whole');

# While held, the horizon trails captured writes, not the bgwriter's
# running-transactions records (every 15 s): within 6 s of steady writes
# it passes a transaction that was the newest at the start.
my $start = $node->safe_psql('postgres', 'SELECT txid_current()');
my $passed = 0;
for (1 .. 60)
{
	$node->safe_psql('postgres', 'UPDATE wide SET small = small + 1');
	if ($node->safe_psql('postgres',
			"SELECT xmin::text::bigint > $start % 4294967296 FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'") eq 't')
	{
		$passed = 1;
		last;
	}
	usleep(100_000);
}
ok($passed, 'the held horizon follows writes within seconds');

# The held horizon follows what the worker has captured, yet never passes
# a transaction that may still delete TOAST chunks a change to capture
# needs.  D takes an xid and waits while writes go on and are captured;
# then U updates a row leaving its TOASTed value, D changes that value
# (deleting the old chunks) and commits, and VACUUM runs, all while the
# worker is held up on U's change.  U's row must still come out whole.
$node->safe_psql('postgres', q{
CREATE TABLE wide2 (id int PRIMARY KEY, small int, big text);
ALTER TABLE wide2 ALTER big SET STORAGE EXTERNAL;
INSERT INTO wide2 VALUES (1, 1, repeat('w', 5000));
INSERT INTO narrow SELECT g, 0 FROM generate_series(1000, 1009) g;
});
my $log2 = $node->safe_psql('postgres', "SELECT mvinc.track('wide2')");
my ($d_in, $d_out, $d_err) = ('', '', '');
my $d = IPC::Run::start([ 'psql', '-X', '-At', '-d', $node->connstr('postgres') ],
	\$d_in, \$d_out, \$d_err);
$d_in .= "BEGIN; SELECT 'xid ' || txid_current();\n";
$d->pump until $d_out =~ /xid (\d+)/;
my $d_xid = $1;
for (1 .. 20)
{
	$node->safe_psql('postgres',
		'UPDATE narrow SET n = n + 1 WHERE id >= 1000; SELECT mvinc.wait_for_capture()');
}
is($node->safe_psql('postgres',
		"SELECT xmin::text::bigint <= $d_xid % 4294967296 FROM pg_replication_slots WHERE slot_name LIKE 'mvinc%'"),
	't', 'the held horizon does not pass a running transaction');

# Hold the worker up: U's change fails to convert into the change log
# until its column has the source's type again.
$node->safe_psql('postgres', "ALTER TABLE $log2 ALTER COLUMN small TYPE boolean USING NULL");
$node->safe_psql('postgres', 'UPDATE wide2 SET small = 999 WHERE id = 1');
ok(wait_for_error('boolean'), 'the worker is held up on the update');
$d_in .= "UPDATE wide2 SET big = repeat('z', 6000) WHERE id = 1; COMMIT; SELECT 'done';\n";
$d->pump until $d_out =~ /done/;
$d->finish;
$node->safe_psql('postgres', 'VACUUM wide2');
$node->safe_psql('postgres', "ALTER TABLE $log2 ALTER COLUMN small TYPE int USING NULL");
$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture(timeout => '90 s')");
is($node->safe_psql('postgres',
		"SELECT string_agg(_mvinc_op::text || _mvinc_image::text || coalesce(left(big, 1) || length(big), '-'), ' ' "
		  . "ORDER BY _mvinc_lsn, _mvinc_seq, _mvinc_image = 'n') FROM $log2"),
	'uk- unw5000 uk- unz6000', 'the value the update left is captured whole after VACUUM');
unlike(slurp_file($node->logfile), qr/could not be fetched/, 'no TOASTed value was lost');
$node->safe_psql('postgres', "SELECT mvinc.untrack('wide2')");

# REPLICA IDENTITY FULL: released once capture passed that point.
$node->safe_psql('postgres', 'ALTER TABLE wide REPLICA IDENTITY FULL');
ok(wait_xmin('f'), 'FULL identity: released');

# Back to DEFAULT: the ALTER holds it again at once.
$node->safe_psql('postgres', 'ALTER TABLE wide REPLICA IDENTITY DEFAULT');
is(xmin_held(), 't', 'ALTER TABLE back to DEFAULT holds it at once');

# Untracking the source releases it.
$node->safe_psql('postgres', "SELECT mvinc.untrack('wide')");
ok(wait_xmin('f'), 'untrack: released');

# A restart holds it until the worker has checked the sources.
$node->restart;
ok(wait_xmin('f'), 'after a restart, released again');
$node->safe_psql('postgres', "INSERT INTO narrow VALUES (1, 1); INSERT INTO wide_full VALUES (1, repeat('x', 5000))");
$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM mvinc.capture'), 't', 'no capture error');

$node->stop;
done_testing();
