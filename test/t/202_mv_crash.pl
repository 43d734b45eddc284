# A crash (immediate stop) in the middle of a refresh: after restart the
# view and its checkpoint are those of the last committed refresh, reads
# are still correct, and the next refresh catches up.  Twice: once while
# the refresh statement runs, once after it finished but before commit.
# Then a recluster: committed, or crashed before its commit, the storage
# after restart is the same rows, readable through its indexes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $node = mvinc_node('mvcrash');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, g int, v numeric);
INSERT INTO src SELECT i, i % 10, i FROM generate_series(1, 300) i;
-- an immutable but slow filter, so that a full refresh takes seconds
CREATE FUNCTION slow_ok(int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.02); RETURN true; END $$;
CREATE MATERIALIZED VIEW agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, max(v) AS mx FROM src WHERE slow_ok(id) GROUP BY g;
CREATE MATERIALIZED VIEW proj WITH (mvinc.incremental = true) AS
  SELECT id, v FROM src WHERE v > 100;
});

my $check = q{
SELECT (SELECT count(*) FROM ((TABLE agg EXCEPT ALL
          SELECT g, count(*), sum(v), max(v) FROM src GROUP BY g)
        UNION ALL (SELECT g, count(*), sum(v), max(v) FROM src GROUP BY g EXCEPT ALL TABLE agg)) x)
     + (SELECT count(*) FROM ((TABLE proj EXCEPT ALL SELECT id, v FROM src WHERE v > 100)
        UNION ALL (SELECT id, v FROM src WHERE v > 100 EXCEPT ALL TABLE proj)) y)};
my $state = q{SELECT string_agg(view::text || ':' || checkpoint_lsn || ':' || last_refresh_mode || ':' || storage_rows,
  ',' ORDER BY view::text) FROM mvinc.views};
# the storage finalized, independent of the read path
sub storage_of
{
	my $name = $node->safe_psql('postgres', "SELECT storage_name FROM mvinc.mv_view WHERE view = 'agg'::regclass");
	return $node->safe_psql('postgres',
		"SELECT string_agg(format('%s/%s/%s/%s', k1, _mvinc_count, mvinc.agg_final('sum(numeric)', s1, NULL::numeric), "
		  . "mvinc.agg_final('max(numeric)', s2, NULL::numeric)), ',' ORDER BY k1) FROM mvinc.$name");
}

for my $round (1, 2)
{
	$node->safe_psql('postgres', qq{
UPDATE src SET v = v + 1 WHERE id % 7 = $round;
DELETE FROM src WHERE id % 50 = $round;
INSERT INTO src SELECT 1000 * $round + i, i % 12, i FROM generate_series(1, 20) i;
});
	$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture()");
	my $before = $node->safe_psql('postgres', $state);
	my $stored = storage_of();

	# A full refresh of agg (seconds) and proj, in one transaction.
	my $sql = $round == 1
	  ? "BEGIN; SELECT mode FROM mvinc.refresh('proj'); SELECT mode FROM mvinc.refresh('agg', true); COMMIT;"
	  : "BEGIN; SELECT mode FROM mvinc.refresh('proj'); SELECT mode FROM mvinc.refresh('agg', true); SELECT pg_sleep(60); COMMIT;";
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	# wait until the refresh (round 1) or the sleep after it (round 2) runs
	my $what = $round == 1 ? 'mvinc.refresh' : 'pg_sleep';
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%$what%' AND pid <> pg_backend_pid()"
		  . ($round == 1 ? " AND now() - query_start > interval '1 s'" : " AND wait_event = 'PgSleep'"))
	  or die "the refresh did not start";
	$node->stop('immediate');
	$h->finish;
	$node->start;

	is($node->safe_psql('postgres', $state), $before, "round $round: checkpoints are those of the last committed refresh");
	is(storage_of(), $stored, "round $round: the storage is that of the last committed refresh");
	is($node->safe_psql('postgres', $check), '0', "round $round: reads equal the queries after restart");
	like($node->safe_psql('postgres', "SELECT mvinc.read_path('agg')"), qr/^(hybrid|live)$/,
		"round $round: the view reads its changes on read (hybrid) or the query until refreshed");

	is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('agg')"), 'regroup', "round $round: the next refresh catches up");
	is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('proj')"), 'merge', "round $round: for both views");
	is($node->safe_psql('postgres', "SELECT mvinc.read_path('agg')"), 'fresh', "round $round: and the view is fresh again");
	is($node->safe_psql('postgres', $check), '0', "round $round: and equal to their queries");
}

# A recluster committed before the crash (its new files come back from
# WAL), and one crashed before its commit (the old files stay, the
# transient copy is gone).
for my $commit (1, 0)
{
	my $stored = storage_of();
	my $sql = $commit
	  ? "SELECT mvinc.recluster('agg'); SELECT mvinc.recluster('proj');"
	  : "BEGIN; SELECT mvinc.recluster('agg'); SELECT mvinc.recluster('proj'); SELECT pg_sleep(60); COMMIT;";
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	if ($commit)
	{
		$h->finish;
		is($err, '', 'recluster: no error');
	}
	else
	{
		$node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()")
		  or die "the recluster did not run";
	}
	$node->stop('immediate');
	$h->finish;
	$node->start;
	my $what = $commit ? 'committed' : 'crashed';
	is(storage_of(), $stored, "recluster $what: the storage has the same rows after restart");
	is($node->safe_psql('postgres', $check), '0', "recluster $what: reads equal the queries");
	is($node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT count(*) FROM src s WHERE v > 100 AND NOT EXISTS (SELECT FROM proj p WHERE p.id = s.id AND p.v = s.v)}),
		'0', "recluster $what: reads by key through the storage's index");
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relname LIKE 'pg_temp_%' AND relnamespace = 'mvinc'::regnamespace"),
		'0', "recluster $what: no transient relation left");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.verify_view('agg')"), '0',
		"recluster $what: the view verifies");
}

$node->stop;
done_testing();
