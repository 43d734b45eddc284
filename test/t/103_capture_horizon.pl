# The capture slot holds the data xmin horizon (VACUUM of every table)
# only while a tracked source may need an unchanged TOASTed value fetched
# by its pointer: no REPLICA IDENTITY FULL and a TOAST table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
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

# While held, the horizon trails writes by about a second (the worker logs
# running transactions itself), not the bgwriter's 15 seconds: within 6 s
# of steady writes it passes a transaction that was the newest at the start.
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
