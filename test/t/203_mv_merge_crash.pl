# Crash recovery of the direct merge of appends (mv_merge.c): a committed
# incremental refresh after a checkpoint is redone from WAL alone (HOT and
# non-HOT updates, new groups, the NULL group), an uncommitted one leaves
# no trace, and the storage's key index matches its heap (amcheck) after
# each restart.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $node = mvinc_node('mvmerge');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE EXTENSION amcheck;
CREATE TABLE src (id int PRIMARY KEY, g int, v numeric);
INSERT INTO src SELECT i, CASE WHEN i % 17 = 0 THEN NULL ELSE i % 300 END, i FROM generate_series(1, 600) i;
CREATE MATERIALIZED VIEW agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a FROM src GROUP BY g;
});

my $query = 'SELECT g, count(*), sum(v), avg(v) FROM src GROUP BY g';
my $check = "SELECT count(*) FROM ((TABLE agg EXCEPT ALL $query) UNION ALL ($query EXCEPT ALL TABLE agg)) x";
my $storage = $node->safe_psql('postgres', "SELECT storage_name FROM mvinc.mv_view WHERE view = 'agg'::regclass");

# the storage finalized, independent of the read path
sub storage_of
{
	return $node->safe_psql('postgres',
		"SELECT string_agg(format('%s/%s/%s', k1, _mvinc_count, mvinc.agg_final('avg(numeric)', s1, NULL::numeric)), "
		  . "',' ORDER BY k1 NULLS FIRST) FROM mvinc.$storage");
}

# the key index holds exactly the heap's live rows, one per group
sub index_ok
{
	return $node->safe_psql('postgres',
		"SELECT bt_index_check('mvinc.${storage}_key', true) IS NOT NULL "
		  . "AND (SELECT count(*) = count(DISTINCT g) + least(count(*) FILTER (WHERE g IS NULL), 1) FROM agg)");
}

my $next = 1000;
for my $round (1, 2)
{
	# appends: every group many times (some updates cannot be HOT), new
	# groups, the NULL group
	my $append = sub {
		my $sql = qq{INSERT INTO src SELECT $next + i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % (300 + 50 * $round) END, i
		  FROM generate_series(1, 3000) i};
		$next += 10000;
		$node->safe_psql('postgres', $sql);
		$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture()");
	};

	# a committed merge after a checkpoint: only WAL has it at the crash
	$append->();
	$node->safe_psql('postgres', 'CHECKPOINT');
	is($node->safe_psql('postgres', qq{
BEGIN;
SELECT mode FROM mvinc.refresh('agg');
SELECT n_tup_hot_upd > 0 AND n_tup_upd > n_tup_hot_upd AS hot_and_not
  FROM pg_stat_xact_user_tables WHERE relname = '$storage';
COMMIT;}), "incremental\nt", "round $round: the append is merged, with HOT and non-HOT updates");
	my $stored = storage_of();

	# an uncommitted merge when the server crashes
	$append->();
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
			"BEGIN; SELECT mode FROM mvinc.refresh('agg'); SELECT pg_sleep(60); COMMIT;" ],
		'>', \$out, '2>', \$err);
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()")
	  or die "the refresh did not run";
	$node->stop('immediate');
	$h->finish;
	$node->start;

	is(storage_of(), $stored, "round $round: after the crash the storage is that of the committed merge");
	is(index_ok(), 't', "round $round: and its key index matches the heap");
	is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('agg')"), 'incremental',
		"round $round: the next refresh merges the rest");
	is($node->safe_psql('postgres', $check), '0', "round $round: the view equals its query");
	is(index_ok(), 't', "round $round: the key index still matches the heap");
}

$node->stop;
done_testing();
