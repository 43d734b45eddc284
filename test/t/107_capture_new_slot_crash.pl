# A capture worker that dies after creating a new slot but before it has
# recorded what a new slot means (the changes of tables already tracked,
# committed before the slot's start, count as lost): the slot must not
# survive it, or the next worker takes it for an old one and nothing is
# recorded: a view created in a writing transaction then missed a change
# for good (found by a review).  The slot is persisted only after the
# record commits.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('freshwin', conf => q(
mvinc.capture_idle_stop = 0
));
sub wait_for { return mvinc_wait_for($node, @_, 30); }
my $workers = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'";
$node->safe_psql('postgres', 'CREATE DATABASE d1');
$node->safe_psql('d1', 'CREATE EXTENSION mvinc');
$node->safe_psql('d1', 'CREATE TABLE src (k int primary key, v int); CREATE TABLE other (x int);
                        INSERT INTO src SELECT g, g FROM generate_series(1, 10) g');
ok(wait_for('postgres', $workers, '0'), 'no capture worker runs');

# a long transaction with an xid holds the new slot back
my $l = $node->background_psql('d1');
$l->query_safe('BEGIN; INSERT INTO other VALUES (1);');
# the first view, in a writing transaction: goes on without the slot
my ($rc, $out, $err) = $node->psql('d1', q{BEGIN; INSERT INTO other VALUES (2);
CREATE MATERIALIZED VIEW mv WITH (mvinc.incremental = true) AS SELECT k, v FROM src; COMMIT;});
is($rc, 0, 'view created') or diag($err);
# a change committed before the slot is consistent: only the marking covers it
$node->safe_psql('d1', 'INSERT INTO src VALUES (100, 100)');
# someone holds a row lock on mvinc.tracked (LOCK ... SHARE, no xid: only widens the window a crash or SIGTERM can hit)
my $r = $node->background_psql('d1');
$r->query_safe('BEGIN; LOCK TABLE mvinc.tracked IN SHARE MODE; SELECT pg_current_xact_id_if_assigned() IS NULL;');
$l->query_safe('COMMIT');
# the worker has its new slot (not persisted yet); its marking UPDATE waits for the lock
ok(wait_for('d1', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker' AND wait_event_type = 'Lock'", '1'),
	'the worker waits to record the changes lost before its new slot');
$node->safe_psql('d1', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'mvinc capture worker'");
$r->query_safe('COMMIT');
$r->quit; $l->quit;
ok(wait_for('postgres', $workers, '1'), 'worker back');
$node->safe_psql('d1', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('d1', "SELECT mvinc.read_path('mv')"), 'live', 'the view reads its query');
is($node->safe_psql('d1', "SELECT mode FROM mvinc.refresh('mv')"), 'full', 'its refresh rebuilds it');
my $diff = q{SELECT count(*) FROM ((TABLE mv EXCEPT ALL SELECT k, v FROM src) UNION ALL (SELECT k, v FROM src EXCEPT ALL TABLE mv)) d};
is($node->safe_psql('d1', $diff), '0', 'the view equals its query after a refresh');
is($node->safe_psql('d1', 'SELECT count(*) FROM mv WHERE k = 100'), '1', 'row 100 is in the view');
done_testing();
