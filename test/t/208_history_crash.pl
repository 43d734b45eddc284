# A crash (immediate stop) in the middle of a history view's refresh and
# of a snapshot load: after restart the versions are those of the last
# committed refresh or load, and the next one gives exactly the versions
# that a twin view, refreshed or loaded without a crash, holds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $node = mvinc_node('histcrash');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, a int, b text);
INSERT INTO src SELECT i, i % 10, 'b' || i FROM generate_series(1, 200) i;
-- an immutable but slow filter, so that applying changes takes seconds
CREATE FUNCTION slow_ok(int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.02); RETURN true; END $$;
CREATE MATERIALIZED VIEW slow WITH (mvinc.history = true, mvinc.key = 'id',
                                    mvinc.history_start = '2020-01-01')
  AS SELECT id, a, b FROM src WHERE slow_ok(id);
CREATE MATERIALIZED VIEW twin WITH (mvinc.history = true, mvinc.key = 'id',
                                    mvinc.history_start = '2020-01-01')
  AS SELECT id, a, b FROM src;
CREATE TABLE shape (id int PRIMARY KEY, a int, b text);
CREATE MATERIALIZED VIEW slow_daily WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, a, b FROM shape WHERE slow_ok(id) WITH NO DATA;
CREATE MATERIALIZED VIEW twin_daily WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, a, b FROM shape WITH NO DATA;
CREATE TABLE day1 AS SELECT id, a, b FROM src;
CREATE TABLE day2 AS SELECT id, a + (id % 3) AS a, b FROM src WHERE id % 11 <> 0;
SELECT mvinc.history_load('slow_daily', 'day1', '2024-01-01');
SELECT mvinc.history_load('twin_daily', 'day1', '2024-01-01');
});

# the stored versions of a view, independent of the read path
sub versions
{
	my ($view) = @_;
	my $name = $node->safe_psql('postgres',
		"SELECT storage_name FROM mvinc.history_view WHERE view = '$view'::regclass");
	return $node->safe_psql('postgres',
		"SELECT md5(string_agg(format('%s/%s/%s/%s/%s', id, a, b, valid_from, valid_to), ',' "
		  . "ORDER BY id, valid_from)) || ':' || count(*) FROM mvinc.$name");
}

# crash while $sql runs (or, with $after, sleeps before its commit)
sub crash_during
{
	my ($sql, $what, $after) = @_;
	my ($out, $err) = ('', '');
	$sql = "BEGIN; $sql; SELECT pg_sleep(60); COMMIT;" if $after;
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%$what%' AND pid <> pg_backend_pid()"
		  . ($after ? " AND wait_event = 'PgSleep'" : " AND now() - query_start > interval '1 s'"))
	  or die "$what did not start";
	$node->stop('immediate');
	$h->finish;
	$node->start;
}

for my $round (1, 2)
{
	$node->safe_psql('postgres', qq{
UPDATE src SET a = a + 1 WHERE id % 7 = $round;
UPDATE src SET b = b || 'x' WHERE id % 13 = $round;
DELETE FROM src WHERE id % 50 = $round;
INSERT INTO src SELECT 1000 * $round + i, i, 'new' FROM generate_series(1, 20) i;
UPDATE src SET id = id + 5000 WHERE id = 100 + $round;
});
	$node->safe_psql('postgres', "REFRESH MATERIALIZED VIEW twin");
	my $before = versions('slow');
	my $checkpoint = $node->safe_psql('postgres',
		"SELECT checkpoint_lsn FROM mvinc.history_view WHERE view = 'slow'::regclass");

	crash_during("REFRESH MATERIALIZED VIEW slow", 'REFRESH MATERIALIZED VIEW slow', $round == 2);
	is(versions('slow'), $before, "round $round: the versions are those of the last committed refresh");
	is($node->safe_psql('postgres',
		"SELECT checkpoint_lsn FROM mvinc.history_view WHERE view = 'slow'::regclass"),
		$checkpoint, "round $round: and so is the checkpoint");
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM ((SELECT id, a, b, valid_from, valid_to FROM slow EXCEPT ALL
                       SELECT id, a, b, valid_from, valid_to FROM twin)
                      UNION ALL (SELECT id, a, b, valid_from, valid_to FROM twin EXCEPT ALL
                       SELECT id, a, b, valid_from, valid_to FROM slow)) d}),
		'0', "round $round: reads apply the pending changes as before the crash");

	$node->safe_psql('postgres', "REFRESH MATERIALIZED VIEW slow");
	is(versions('slow'), versions('twin'), "round $round: the next refresh gives the twin's versions");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.history_check('slow')"),
		'0', "round $round: history_check finds nothing");
}

# a snapshot load, while it applies and before its commit
for my $round (1, 2)
{
	my $before = versions('slow_daily');
	crash_during("SELECT mvinc.history_load('slow_daily', 'day2', '2024-01-0$round 12:00')",
		'history_load', $round == 2);
	is(versions('slow_daily'), $before, "load round $round: the versions are those before the load");
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM mvinc.history_loads WHERE view = 'slow_daily'::regclass"),
		$round, "load round $round: the load is not recorded");
	$node->safe_psql('postgres', "SELECT mvinc.history_load('slow_daily', 'day2', '2024-01-0$round 12:00')");
	$node->safe_psql('postgres', "SELECT mvinc.history_load('twin_daily', 'day2', '2024-01-0$round 12:00')");
	is(versions('slow_daily'), versions('twin_daily'), "load round $round: loading again gives the twin's versions");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.history_check('slow_daily')"),
		'0', "load round $round: history_check finds nothing");
}

$node->stop;
done_testing();
