# Automatic refresh across databases and restarts: each database's views
# with mvinc.refresh_interval are refreshed by its own schedule, also after
# a restart; mvinc.max_refresh_workers = 0 stops automatic refreshes; DROP
# DATABASE is not held up by a scheduled view.  (Behaviour and errors are
# in test/sql/mv_auto_refresh.sql.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('autorefresh');
$node->safe_psql('postgres', 'CREATE DATABASE db1; CREATE DATABASE db2;');
for my $db ('db1', 'db2')
{
	$node->safe_psql($db, q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO src SELECT i, i % 7, i FROM generate_series(1, 500) i;
CREATE MATERIALIZED VIEW v WITH (mvinc.incremental = true, mvinc.refresh_interval = '0') AS
  SELECT g, sum(v) AS s, count(*) AS n FROM src GROUP BY g;
});
}

my $diff = q{SELECT count(*) FROM ((TABLE v EXCEPT ALL SELECT g, sum(v), count(*) FROM src GROUP BY g)
  UNION ALL (SELECT g, sum(v), count(*) FROM src GROUP BY g EXCEPT ALL TABLE v)) d};
my $refreshed = q{SELECT pending_changes = 0 AND last_refresh_mode <> 'initial'
  FROM mvinc.views WHERE view = 'v'::regclass};

sub change
{
	my ($db, $id) = @_;
	$node->safe_psql($db, "INSERT INTO src VALUES ($id, 3, $id); UPDATE src SET v = v + 1 WHERE id = 10;
	  SELECT mvinc.wait_for_capture()");
}

for my $db ('db1', 'db2')
{
	change($db, 1000);
	ok($node->poll_query_until($db, $refreshed), "$db: its view is refreshed on its own");
	is($node->safe_psql($db, $diff), '0', "$db: and equals its query");
	is($node->safe_psql($db, "SELECT mvinc.read_path('v')"), 'fresh', "$db: and reads fresh");
}

$node->restart;
$node->safe_psql('db1', "SELECT mvinc.refresh('v')");    # mode back to a known value
change('db1', 1001);
ok($node->poll_query_until('db1', q{SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'v'::regclass}),
	'after a restart the schedule goes on');
is($node->safe_psql('db1', $diff), '0', 'and the view equals its query');

# Turned off for the server: changes wait
$node->append_conf('postgresql.conf', 'mvinc.max_refresh_workers = 0');
$node->reload;
$node->poll_query_until('db1', q{SELECT current_setting('mvinc.max_refresh_workers') = '0'});
change('db1', 1002);
sleep 1;
is($node->safe_psql('db1', q{SELECT pending_changes FROM mvinc.views WHERE view = 'v'::regclass}), '2',
	'with mvinc.max_refresh_workers = 0 nothing is refreshed on its own');
is($node->safe_psql('db1', $diff), '0', 'reads stay exact meanwhile');
$node->append_conf('postgresql.conf', 'mvinc.max_refresh_workers = 2');
$node->reload;
ok($node->poll_query_until('db1', q{SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'v'::regclass}),
	'turned on again, the pending changes are refreshed');

# A database with a scheduled view drops cleanly, while its source changes
$node->safe_psql('db2', 'INSERT INTO src SELECT i, i % 7, i FROM generate_series(2000, 40000) i');
$node->safe_psql('postgres', 'DROP DATABASE db2');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'db2'}), '0',
	'DROP DATABASE is not held up by automatic refreshes');
change('db1', 1003);
ok($node->poll_query_until('db1', q{SELECT pending_changes = 0 FROM mvinc.views WHERE view = 'v'::regclass}),
	'and the other database goes on');

$node->stop;
done_testing();
