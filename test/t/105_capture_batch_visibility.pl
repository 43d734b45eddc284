# Issue 19: a view silently missed committed changes.
#
# The capture worker writes each batch of change-log rows in a transaction
# of its own while it is a logical decoding process.  PostgreSQL leaves the
# xids of such processes out of other backends' snapshots (GetSnapshotData
# skips PROC_IN_LOGICAL_DECODING), assuming they never write.  So a backend
# whose snapshot was taken while a batch was being written, after some
# later xid had completed, took the batch's xid for finished; reading a row
# of the batch before it committed, it found the xid not committed and
# marked the row's xmin invalid for good (the "aborted" hint bit).  Once
# the batch committed, its rows were invisible to everyone, the captured
# position covered them, and the next refresh moved the view's checkpoint
# past changes it never saw.
#
# The worker is held deterministically inside a batch: it has inserted the
# change-log rows and waits for the lock on its progress row, which this
# test holds.  Meanwhile ordinary reads of the change log run (the
# pending-changes count of mvinc.views, and a plain scan), then the batch
# commits and the view is refreshed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

# change-log retention (every 10 s by default) would remove the rows of the
# previous round between the counts below: not while this test counts
my $node = mvinc_node('batchvis', conf => q{
mvinc.retention_interval = '1h'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE docs (id int PRIMARY KEY, k int NOT NULL, body text);
INSERT INTO docs SELECT i, i, repeat(md5(i::text), 3) FROM generate_series(1, 200) i;
CREATE MATERIALIZED VIEW docs_v WITH (mvinc.incremental = true) AS
  SELECT id, k FROM docs WHERE k % 3 <> 0;
CREATE TABLE bump (x int);
});
$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
my $log = $node->safe_psql('postgres',
	"SELECT changelog::regclass FROM mvinc.tracked WHERE relid = 'docs'::regclass");
my $check = q{SELECT count(*) FROM ((TABLE docs_v EXCEPT ALL SELECT id, k FROM docs WHERE k % 3 <> 0)
  UNION ALL (SELECT id, k FROM docs WHERE k % 3 <> 0 EXCEPT ALL TABLE docs_v)) d};
my $worker_waits = q{SELECT count(*) = 1 FROM pg_stat_activity
  WHERE backend_type = 'mvinc capture worker' AND wait_event_type = 'Lock'};

for my $round (1 .. 2)
{
	$node->safe_psql('postgres', "SELECT mvinc.refresh('docs_v')");

	# Hold the worker inside its next batch: the change-log rows are
	# inserted (the batch has an xid), the progress update waits for us.
	my $holder = $node->background_psql('postgres');
	$holder->query_safe('BEGIN; SELECT * FROM mvinc.capture_progress FOR UPDATE;');
	my $before = $node->safe_psql('postgres', "SELECT count(*) FROM $log");
	$node->safe_psql('postgres', "UPDATE docs SET k = k + 1000 WHERE id % 10 = $round");
	$node->poll_query_until('postgres', $worker_waits)
	  or die 'the capture worker did not reach its progress update';

	# A transaction that starts and ends after the batch's: every snapshot
	# from now on has its xmax past the batch's xid.
	$node->safe_psql('postgres', 'INSERT INTO bump VALUES (1)');

	# Ordinary reads of the change log while the batch is in progress.
	my $pending = $node->safe_psql('postgres',
		"SELECT pending_changes FROM mvinc.views WHERE view = 'docs_v'::regclass");
	is($pending, '0', "round $round: the batch in progress is not counted yet");
	is($node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM $log"),
		$before, "round $round: nor seen by a scan of the change log");

	$holder->query_safe('COMMIT;');
	$holder->quit;
	$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');

	# 20 updated rows: an old (key) and a new image each
	is($node->safe_psql('postgres', "SELECT count(*) FROM $log") - $before, 40,
		"round $round: the committed batch is visible in the change log");
	is($node->safe_psql('postgres',
			"SELECT pending_changes FROM mvinc.views WHERE view = 'docs_v'::regclass"),
		'20', "round $round: and counted as pending");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.verify_view('docs_v')"), '0',
		"round $round: verify_view finds every change applied or in the change log");
	is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('docs_v')"), 'merge',
		"round $round: the refresh applies it");
	is($node->safe_psql('postgres', $check), '0', "round $round: the view equals its query");
	is($node->safe_psql('postgres', 'SELECT mvinc.read_path(\'docs_v\')'), 'fresh',
		"round $round: and reads it fresh");
}

$node->stop;
done_testing();
