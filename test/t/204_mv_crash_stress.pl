# Crash rounds under load (issue 19): writers insert, update (the key of
# the view, a flag in its WHERE, the TOASTed body, or leave the body
# unchanged) and delete rows of "docs", a source of default replica
# identity whose body is stored out of line, of "acc", and of "cacc" (a
# colfile table: its changes are row messages), roll back whole
# transactions and subtransactions; readers read the views and
# mvinc.views; a refresher refreshes and compacts the views.  Each round
# ends with one of: an immediate stop, kill -9 of the capture worker,
# kill -9 of a backend while it refreshes.  After each restart every view
# must equal its query after a refresh, and mvinc.verify_view must find
# nothing.  About a minute in all (short rounds, so that CI stays fast).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use IPC::Run;
use MvincNode;

my $rounds = 9;

my $node = mvinc_node('stress', conf => q{
restart_after_crash = on
autovacuum_naptime = 1
mvinc.retention_interval = 1000
log_min_messages = warning
});
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE docs (id int PRIMARY KEY, k int NOT NULL, flag boolean NOT NULL, body text);
ALTER TABLE docs ALTER body SET STORAGE EXTERNAL;  -- out of line, uncompressed
INSERT INTO docs SELECT i, i % 100, i % 3 <> 0, repeat('a', 2100) || i FROM generate_series(1, 500) i;
CREATE TABLE acc (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO acc SELECT i, i % 7, i FROM generate_series(1, 500) i;
CREATE MATERIALIZED VIEW docs_v WITH (mvinc.incremental = true) AS
  SELECT id, k, md5(body) AS h FROM docs WHERE flag;
CREATE MATERIALIZED VIEW acc_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a FROM acc GROUP BY g;
CREATE MATERIALIZED VIEW acc_p WITH (mvinc.incremental = true) AS
  SELECT id, v FROM acc WHERE v % 2 = 0;
CREATE TABLE cacc (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL) USING colfile;
INSERT INTO cacc SELECT i, i % 7, i FROM generate_series(1, 500) i;
CREATE MATERIALIZED VIEW cacc_agg WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM cacc GROUP BY g;
CREATE MATERIALIZED VIEW cacc_p WITH (mvinc.incremental = true) AS
  SELECT id, v FROM cacc WHERE v % 3 = 0;
CREATE FUNCTION view_diff(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  q text := rtrim(pg_get_viewdef(v), ';');
  n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %s)) x',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
});
is($node->safe_psql('postgres', "SELECT relreplident FROM pg_class WHERE oid = 'docs'::regclass"),
	'd', 'docs keeps its default replica identity');

my $dir = PostgreSQL::Test::Utils::tempdir;
append_to_file("$dir/write.sql", q{
\set id random(1, 1200)
\set k random(1, 100)
\set r random(1, 10)
BEGIN;
INSERT INTO docs VALUES (:id, :k, :k % 3 <> 0, repeat('b', 2100) || :k)
  ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k;
UPDATE docs SET k = :k + 1, flag = NOT flag WHERE id = :id + 1;
UPDATE docs SET body = repeat('c', 2200) || :k WHERE id = :id + 2;
\if :r = 1
DELETE FROM docs WHERE id = :id + 3;
\endif
INSERT INTO acc VALUES (:id, :k % 7, :k) ON CONFLICT (id) DO UPDATE SET v = acc.v + 1, g = EXCLUDED.g;
INSERT INTO cacc VALUES (:id, :k % 7, :k) ON CONFLICT (id) DO UPDATE SET v = cacc.v + 1, g = EXCLUDED.g;
\if :r <= 2
DELETE FROM acc WHERE id = :id + 5;
DELETE FROM cacc WHERE id = :id + 5;
\endif
SAVEPOINT s;
UPDATE docs SET k = -1 WHERE id = :id + 4;
UPDATE acc SET v = -1 WHERE id = :id + 6;
UPDATE cacc SET v = -1 WHERE id = :id + 6;
ROLLBACK TO s;
\if :r = 10
ROLLBACK;
\else
COMMIT;
\endif
});
append_to_file("$dir/read.sql", q{
SELECT count(*) FROM docs_v WHERE k > 50;
SELECT sum(n) FROM acc_agg;
SELECT sum(pending_changes) FROM mvinc.views;
});
append_to_file("$dir/refresh.sql", q{
SELECT mode FROM mvinc.refresh('docs_v');
SELECT mode FROM mvinc.refresh('acc_agg');
SELECT mvinc.compact('acc_agg');
SELECT mode FROM mvinc.refresh('acc_p');
SELECT mode FROM mvinc.refresh('cacc_agg');
SELECT mode FROM mvinc.refresh('cacc_p');
});

# pgbench in the background; its clients die with the server
sub start_load
{
	my @h;
	for my $job ([ 3, "$dir/write.sql" ], [ 1, "$dir/read.sql" ], [ 1, "$dir/refresh.sql" ])
	{
		my ($out, $err) = ('', '');
		push @h, IPC::Run::start(
			[ 'pgbench', '-n', '-c', $job->[0], '-T', '60', '--max-tries', '10', '-f', $job->[1],
			  '-h', $node->host, '-p', $node->port, 'postgres' ],
			'>', \$out, '2>', \$err);
	}
	return @h;
}

# pid of a backend running a query like $like, within a few seconds
sub find_pid
{
	my ($sql) = @_;
	for (1 .. 100)
	{
		my $pid = $node->safe_psql('postgres', $sql);
		return $pid if $pid ne '';
		usleep(30_000);
	}
	return '';
}

my @kinds = ('immediate stop', 'kill -9 of the capture worker', 'kill -9 of a refreshing backend');
my @views = ('docs_v', 'acc_agg', 'acc_p', 'cacc_agg', 'cacc_p');
for my $round (1 .. $rounds)
{
	my $kind = $kinds[ ($round - 1) % 3 ];
	my @load = start_load();
	usleep(2_000_000 + int(rand(1_500_000)));

	if ($kind eq 'immediate stop')
	{
		$node->stop('immediate');
		$_->kill_kill for @load;
		$node->start;
	}
	else
	{
		my $pid = $kind =~ /capture/
		  ? find_pid("SELECT worker_pid FROM mvinc.capture WHERE worker_pid IS NOT NULL")
		  : find_pid("SELECT pid FROM pg_stat_activity WHERE state = 'active' "
			  . "AND query LIKE '%mvinc.refresh(%' AND pid <> pg_backend_pid() LIMIT 1");
		ok($pid ne '', "round $round: found the process for the $kind");
		kill 'KILL', $pid if $pid ne '';
		$_->kill_kill for @load;
		# the postmaster reinitializes after the crash
		$node->poll_query_until('postgres', 'SELECT true')
		  or die "round $round: the server did not come back";
	}
	$_->finish for @load;

	$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture(timeout => '60 s')");
	for my $v (@views)
	{
		$node->safe_psql('postgres', "SELECT mvinc.refresh('$v')");
		is($node->safe_psql('postgres', "SELECT view_diff('$v')"), '0',
			"round $round ($kind): $v equals its query");
		my $findings = $node->safe_psql('postgres',
			"SELECT string_agg(problem || ': ' || detail, E'\\n') FROM mvinc.verify_view('$v')");
		is($findings, '', "round $round ($kind): verify_view finds nothing in $v");
	}
}

my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP:|terminated by signal 6/, 'no assertion failed');
unlike($log, qr/a write in a transaction hidden/, 'the capture worker never wrote while hidden from snapshots');
ok($node->safe_psql('postgres', "SELECT count(*) FROM docs WHERE body LIKE 'c%'") > 0,
	'the load committed body updates');
ok($node->safe_psql('postgres', "SELECT count(*) FROM cacc WHERE id > 500") > 0,
	'the load committed inserts into the colfile source');
$node->stop;
done_testing();
