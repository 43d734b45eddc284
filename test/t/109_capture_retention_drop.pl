# A source dropped while the capture worker's retention pass is removing
# rows of its change log: the pass named the change log, then the DROP
# (holding the change log) committed, and the pass's DELETE failed with
# "relation ... does not exist": the worker exited and restarted, and for a
# moment views could not be created ("capture worker ... is not ready";
# found by a review).  The pass now locks the change log and skips it once
# it is gone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('retdrop', conf => q{
mvinc.retention_interval = 200
});
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE keep (k int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW keep_v WITH (mvinc.incremental = true) AS SELECT k, v FROM keep;
});
my $pid = $node->safe_psql('postgres', 'SELECT worker_pid FROM mvinc.capture');

for my $round (1 .. 3)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE gone (k int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW gone_v WITH (mvinc.incremental = true) AS SELECT k, v FROM gone;
INSERT INTO gone SELECT i, i FROM generate_series(1, 5000) i;
SELECT mvinc.wait_for_capture();
SELECT mvinc.refresh('gone_v');});

	# the refresh left 5000 change-log rows for retention; the DROP holds
	# the change log while the retention pass comes to it
	my $dropper = $node->background_psql('postgres');
	$dropper->query_safe('SET client_min_messages = warning; BEGIN; DROP TABLE gone CASCADE;');
	ok($node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_locks l
	  JOIN pg_stat_activity a USING (pid)
	  WHERE a.backend_type = 'mvinc capture worker' AND NOT l.granted}),
		"round $round: the retention pass waits for the dropping transaction");
	$dropper->query_safe('COMMIT;');
	$dropper->quit;

	$node->safe_psql('postgres', qq{INSERT INTO keep VALUES ($round, $round)});
	$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
	is($node->safe_psql('postgres', 'SELECT worker_pid FROM mvinc.capture'), $pid,
		"round $round: the capture worker kept running");
}
is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM mvinc.capture'), 't',
	'the capture worker reported no error');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ((TABLE keep_v EXCEPT ALL TABLE keep)
  UNION ALL (TABLE keep EXCEPT ALL TABLE keep_v)) d}), '0', 'the other view reads right');
$node->stop;
done_testing();
