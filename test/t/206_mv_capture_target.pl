# A read of an incremental view waits for capture only up to the last
# commit that changed the view's source: writes to other tables and other
# databases do not hold it back, while every commit of the source that its
# snapshot sees is either captured or sends it to the defining query (a
# writer that committed while capture was stopped, COMMIT PREPARED,
# track_counts off, a restart).  The capture worker is stopped with
# SIGSTOP, so "would have to wait" shows as the live path after
# mvinc.fresh_wait.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('target', conf => "mvinc.fresh_wait = '300ms'");
$node->safe_psql('postgres', q{
CREATE DATABASE db2;
CREATE EXTENSION mvinc;
CREATE TABLE s (k int NOT NULL, v int NOT NULL);
CREATE TABLE other (x int);
INSERT INTO s SELECT g % 10, g FROM generate_series(1, 1000) g;
CREATE MATERIALIZED VIEW v WITH (mvinc.incremental = true) AS
  SELECT k, sum(v) AS total, count(*) AS n FROM s GROUP BY k;
});
$node->safe_psql('db2', 'CREATE EXTENSION mvinc; CREATE TABLE t2 (x int)');

my $diff = q{SELECT count(*) FROM ((TABLE v EXCEPT ALL
  SELECT k, sum(v), count(*) FROM s GROUP BY k) UNION ALL
  (SELECT k, sum(v), count(*) FROM s GROUP BY k EXCEPT ALL TABLE v)) d};

sub path { return $node->safe_psql('postgres', "SELECT mvinc.read_path('v')"); }

sub worker_pid
{
	return $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
	  WHERE backend_type = 'mvinc capture worker' AND datname = 'postgres'});
}

my $pid;
sub stop_capture { $pid = worker_pid(); kill 'STOP', $pid; }

sub resume_capture
{
	kill 'CONT', $pid;
	$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
}

is(path(), 'fresh', 'a refreshed view reads fresh');

# Writes elsewhere while capture stands still
stop_capture();
$node->safe_psql('postgres', 'INSERT INTO other SELECT generate_series(1, 100)');
$node->safe_psql('db2', 'INSERT INTO t2 SELECT generate_series(1, 100)');
is(path(), 'fresh', 'writes to other tables and databases do not make a read wait');
is($node->safe_psql('postgres', $diff), '0', 'and it reads the stored answer, which is right');

# A writer of the source that has not committed is not waited for; once it
# commits, its change is not captured, so the read runs the query.
my $writer = $node->background_psql('postgres');
$writer->query_safe('BEGIN; INSERT INTO s VALUES (1, 5000);');
is(path(), 'fresh', 'an uncommitted write to the source is not waited for');
$writer->query_safe('COMMIT;');
is(path(), 'live', 'a committed write capture has not reached sends the read live');
is($node->safe_psql('postgres', $diff), '0', 'which gives the right answer');
$node->safe_psql('postgres', 'INSERT INTO other VALUES (1)');
is(path(), 'live', 'and keeps it live until capture has it');
resume_capture();
is(path(), 'hybrid', 'once captured, the insert is merged on read');
is($node->safe_psql('postgres', $diff), '0', 'correctly');
$node->safe_psql('postgres', "SELECT mvinc.refresh('v')");

# A writer whose changes pgstat does not count
stop_capture();
$node->safe_psql('postgres', 'SET track_counts = off; INSERT INTO s VALUES (2, 7)');
is(path(), 'live', 'a write made with track_counts off is waited for too');
is($node->safe_psql('postgres', $diff), '0', 'and read right');
resume_capture();
$node->safe_psql('postgres', "SELECT mvinc.refresh('v')");

# Two-phase commit: COMMIT PREPARED runs where nobody knows what the
# transaction changed, so a prepared writer makes reads wait for all WAL
# until it has ended.
$node->safe_psql('postgres', "BEGIN; INSERT INTO s VALUES (3, 11); PREPARE TRANSACTION 'w'");
is(path(), 'fresh', 'a prepared writer is not seen, capture running');
stop_capture();
$node->safe_psql('postgres', 'INSERT INTO other VALUES (2)');
is(path(), 'live', 'while it is prepared, reads wait for all WAL');
$node->safe_psql('postgres', "COMMIT PREPARED 'w'");
is(path(), 'live', 'after COMMIT PREPARED, its change is waited for');
is($node->safe_psql('postgres', $diff), '0', 'and read right');
resume_capture();
is(path(), 'hybrid', 'once captured it is merged on read');
is($node->safe_psql('postgres', $diff), '0', 'correctly');
$node->safe_psql('postgres', "SELECT mvinc.refresh('v')");

# After a restart nothing is known of earlier writers: the first read
# waits for the insert position, later ones only for the source.
$node->restart;
$node->safe_psql('postgres', 'INSERT INTO s VALUES (4, 13)');
is($node->safe_psql('postgres', $diff), '0', 'the first read after a restart is right');
$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
stop_capture();
$node->safe_psql('postgres', 'INSERT INTO other VALUES (3)');
is(path(), 'hybrid', 'then writes elsewhere do not make reads wait');
$node->safe_psql('postgres', 'INSERT INTO s VALUES (5, 17)');
is(path(), 'live', 'but a new write to the source does');
is($node->safe_psql('postgres', $diff), '0', 'read right');
resume_capture();
is($node->safe_psql('postgres', $diff), '0', 'and right once captured');

$writer->quit;
$node->stop;
done_testing();
