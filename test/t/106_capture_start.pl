# Starting change capture in a database where none runs.  The first view
# must not wait long for the new replication slot (which waits for every
# transaction running when it begins): it goes on after a short wait and
# its view reads its query until its first refresh rebuilds it, exact all
# along.  Before, it held its source's SHARE lock while waiting, and a
# writer of the source that already had an xid stalled with it for a
# minute, then the CREATE failed (found by a review).  Snapshot-fed history
# loads need no capture at all, not even a free replication slot.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use MvincNode;

my $node = mvinc_node('capstart', conf => q(
mvinc.capture_idle_stop = 0
max_replication_slots = 2
));

sub wait_for { return mvinc_wait_for($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE d1');
$node->safe_psql('d1', 'CREATE EXTENSION mvinc');
$node->safe_psql('d1', 'CREATE TABLE src (k int, v int); CREATE TABLE other (x int);
                        INSERT INTO src SELECT g % 10, g FROM generate_series(1, 100) g');
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'", '0'),
	'no capture worker runs');

# A transaction with an xid stays open while the first view is created
# (the new slot waits for it), then writes the source and commits.
my $w = $node->background_psql('d1');
$w->query_safe('BEGIN; INSERT INTO other VALUES (1);');
my $t0 = time;
my ($rc, $out, $err) = $node->psql('d1',
	'CREATE MATERIALIZED VIEW mv WITH (mvinc.incremental = true) AS SELECT k, sum(v) AS s, count(*) AS n FROM src GROUP BY k');
my $elapsed = time - $t0;
is($rc, 0, 'the first view is created while the transaction is open');
ok($elapsed < 20, "without a long wait ($elapsed s)");
like($err, qr/NOTICE:  change capture of database "d1" is starting/, 'with a NOTICE saying why');
$w->query_safe('INSERT INTO src VALUES (1, 1000), (42, 7)');
$w->query_safe('COMMIT');
$w->quit;
my $diff = q{SELECT count(*) FROM ((TABLE mv EXCEPT ALL SELECT k, sum(v), count(*) FROM src GROUP BY k)
  UNION ALL (SELECT k, sum(v), count(*) FROM src GROUP BY k EXCEPT ALL TABLE mv)) d};
is($node->safe_psql('d1', $diff), '0', 'and after the writer committed');
$node->safe_psql('d1', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('d1', "SELECT mode FROM mvinc.refresh('mv')"), 'full', 'its first refresh rebuilds it');
$node->safe_psql('d1', 'INSERT INTO src VALUES (3, 3)');
$node->safe_psql('d1', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('d1', "SELECT mode FROM mvinc.refresh('mv')"), 'incremental', 'then it refreshes incrementally');
is($node->safe_psql('d1', $diff), '0', 'and equals its query');
is($node->safe_psql('d1', "SELECT mvinc.read_path('mv')"), 'fresh', 'read from its storage');

# history_load needs no capture: not even a free replication slot
$node->safe_psql('postgres', 'CREATE DATABASE d2');
$node->safe_psql('d2', 'CREATE EXTENSION mvinc');
$node->safe_psql('d2', q{CREATE TABLE shape (id int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW h WITH (mvinc.history = true, mvinc.key = 'id') AS SELECT id, v FROM shape WITH NO DATA;
CREATE TABLE d10 (id int PRIMARY KEY, v int); INSERT INTO d10 VALUES (1, 1), (2, 2);});
ok(wait_for('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND datname = 'd2'", '0'),
	'no capture worker in d2');
$node->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('filler' || g) FROM generate_series(1, 2 - (SELECT count(*) FROM pg_replication_slots)::int) g");
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'), '2', 'every replication slot is taken');
($rc, $out, $err) = $node->psql('d2', "SELECT * FROM mvinc.history_load('h', 'd10', now())");
is($rc, 0, 'history_load works without a free replication slot') or diag($err);
is($node->safe_psql('d2', 'SELECT count(*) FROM h'), '2', 'and loads the snapshot');

done_testing();
