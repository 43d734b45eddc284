# A hot standby cannot prove a stream-fed history view's read complete:
# the pending changes are captured into the change log by the primary's
# capture worker, and the standby cannot tell whether every source commit
# its snapshot sees is in the (replicated) change log yet.  Its reads
# (the view, mvinc.history_as_of, mvinc.history_check) fail with a clear
# error instead of answering without those changes.  Incremental views
# stay exact there: they read live.  A snapshot-fed history view reads
# only its storage, which replication keeps exact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('hist_standby');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
CREATE EXTENSION mvinc;
CREATE TABLE src (k int PRIMARY KEY, v int);
INSERT INTO src SELECT g, g FROM generate_series(1, 100) g;
CREATE MATERIALIZED VIEW iv WITH (mvinc.incremental = true) AS
  SELECT k % 10 AS g, sum(v) AS s, count(*) AS n FROM src GROUP BY k % 10;
CREATE MATERIALIZED VIEW h WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM src;
CREATE TABLE shape (k int PRIMARY KEY, v int);
CREATE MATERIALIZED VIEW daily WITH (mvinc.history = true, mvinc.key = 'k')
  AS SELECT k, v FROM shape WITH NO DATA;
CREATE TABLE day1 AS SELECT k, v FROM src;
SELECT mvinc.history_load('daily', 'day1', '2024-01-01');
});
sql(q{SELECT mvinc.wait_for_capture()});
my $log = sql(q{SELECT changelog::regclass FROM mvinc.tracked WHERE relid = 'src'::regclass});

$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('hist_standby_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;

# Keep the primary's capture worker from writing the change log, so that
# the standby replays a source commit whose change-log rows do not exist
# yet: what the standby can never rule out on its own.
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; LOCK TABLE $log IN SHARE MODE;");
sql(q{UPDATE src SET v = v + 1000 WHERE k % 7 = 0});
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
  WHERE backend_type = 'mvinc capture worker' AND wait_event_type = 'Lock'})
  or die 'the capture worker did not wait for the change log';
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT count(*) FROM src WHERE v > 1000}), '14',
	'the standby sees the update of the source');
is($standby->safe_psql('postgres', "SELECT count(*) FROM $log"), '0',
	'and no change-log rows for it');

my $cur_diff = q{SELECT count(*) FROM ((SELECT k, v FROM h WHERE valid_to = 'infinity' EXCEPT ALL SELECT k, v FROM src)
  UNION ALL (SELECT k, v FROM src EXCEPT ALL SELECT k, v FROM h WHERE valid_to = 'infinity')) d};
my ($ret, $out, $err) = $standby->psql('postgres', $cur_diff);
diag("standby read of h: ret $ret, rows differing from src: '$out'") if $ret == 0;
isnt($ret, 0, 'a read of the history view fails on the standby');
like($err, qr/ERROR:  cannot read history view "h" on a standby/, 'with the error naming the view');
like($err, qr/DETAIL:  .*captured on the primary/, 'its detail says why');
like($err, qr/HINT:  Read it on the primary/, 'its hint says where to read it');

($ret, $out, $err) = $standby->psql('postgres', q{SELECT * FROM h WHERE k = 7});
like($err, qr/cannot read history view "h" on a standby/, 'a read by key fails likewise');

($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT count(*) FROM mvinc.history_as_of('h', now()) AS a(k int, v int)});
like($err, qr/cannot read history view "h" on a standby/, 'mvinc.history_as_of fails likewise');

($ret, $out, $err) = $standby->psql('postgres', q{SELECT count(*) FROM mvinc.history_check('h')});
like($err, qr/cannot read history view "h" on a standby/,
	'mvinc.history_check, which reads the view, fails likewise');

($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT * FROM mvinc.history_load('daily', 'day1', '2024-01-02')});
like($err, qr/cannot execute mvinc.history_load\(\) during recovery/,
	'mvinc.history_load fails on the standby');

# the snapshot-fed view reads only its storage: exact on a standby too
is($standby->safe_psql('postgres', q{SELECT count(*) FROM ((SELECT k, v FROM daily WHERE valid_to = 'infinity'
  EXCEPT ALL TABLE day1) UNION ALL (TABLE day1 EXCEPT ALL SELECT k, v FROM daily WHERE valid_to = 'infinity')) d}),
	'0', 'a snapshot-fed history view reads on the standby');

# the incremental view reads live on the standby: exactly its query
is($standby->safe_psql('postgres', q{SELECT count(*) FROM (
  (TABLE iv EXCEPT ALL SELECT k % 10, sum(v), count(*) FROM src GROUP BY k % 10)
  UNION ALL (SELECT k % 10, sum(v), count(*) FROM src GROUP BY k % 10 EXCEPT ALL TABLE iv)) d}),
	'0', 'the incremental view reads exactly its query on the standby');

# the primary, once capture goes on, reads the history view exactly
$holder->query_safe('COMMIT');
$holder->quit;
is(sql($cur_diff), '0', 'the primary reads the history view exactly');
$node->wait_for_catchup($standby);
($ret, $out, $err) = $standby->psql('postgres', $cur_diff);
like($err, qr/cannot read history view "h" on a standby/,
	'the standby refuses even when capture has caught up');

$standby->stop;
$node->stop;
done_testing();
