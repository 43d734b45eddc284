# Exactly once across crashes: pgbench writes to tracked tables (inserts,
# updates that leave TOASTed values unchanged, deletes, rollbacks) while the
# server is stopped in immediate mode, twice; after each restart the change
# log must replay to exactly the source table, hold no duplicate, and have
# one insert row per committed transaction.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $node = mvinc_node('crash', conf => "autovacuum_naptime = 1\nlog_min_messages = warning\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text);
CREATE TABLE events (n bigint PRIMARY KEY, at timestamptz DEFAULT now());
CREATE SEQUENCE events_n;
SELECT mvinc.track('acct');
SELECT mvinc.track('events');
});

my $script = PostgreSQL::Test::Utils::tempdir . '/workload.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
\set id random(1, 300)
\set r random(1, 20)
BEGIN;
INSERT INTO events (n) VALUES (nextval('events_n'));
INSERT INTO acct VALUES (:id, 1, (SELECT string_agg(md5(g::text || :id), '') FROM generate_series(1, 40 + :id % 60) g))
  ON CONFLICT (id) DO UPDATE SET bal = acct.bal + 1;
UPDATE acct SET bal = bal + 1 WHERE id = :id % 50 + 1;
\if :r = 1
DELETE FROM acct WHERE id = :id;
\endif
\if :r = 2
ROLLBACK;
\else
COMMIT;
\endif
});

# Replays the change log and compares it with the source.
sub check_log
{
	my ($label) = @_;
	$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture(timeout => '60 s')");
	my $acct_log = $node->safe_psql('postgres', "SELECT mvinc.track('acct')");
	my $events_log = $node->safe_psql('postgres', "SELECT mvinc.track('events')");

	my $diff = $node->safe_psql('postgres', qq{
WITH last AS (
  SELECT DISTINCT ON (id) id, _mvinc_op AS op, bal, note FROM $acct_log
  ORDER BY id, _mvinc_lsn DESC, _mvinc_seq DESC, (_mvinc_image = 'n') DESC),
replayed AS (SELECT id, bal, note FROM last WHERE op <> 'd')
SELECT (SELECT count(*) FROM (SELECT * FROM replayed EXCEPT SELECT * FROM acct) a)
     + (SELECT count(*) FROM (SELECT * FROM acct EXCEPT SELECT * FROM replayed) b)});
	is($diff, '0', "$label: the change log replays to the source table");

	my $dups = $node->safe_psql('postgres', qq{
SELECT count(*) FROM (SELECT _mvinc_lsn, _mvinc_seq, _mvinc_image FROM $acct_log
  GROUP BY 1, 2, 3 HAVING count(*) > 1) d});
	is($dups, '0', "$label: no change logged twice");

	my $ev = $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM events) || ' ' ||
       (SELECT count(*) FROM $events_log WHERE _mvinc_op = 'i') || ' ' ||
       (SELECT count(DISTINCT n) FROM $events_log)});
	my ($src, $logged, $distinct) = split / /, $ev;
	ok($src > 0, "$label: transactions committed ($src)");
	is("$logged $distinct", "$src $src", "$label: one insert row per committed transaction");

	my $missing = $node->safe_psql('postgres', qq{
SELECT count(*) FROM $acct_log WHERE _mvinc_image = 'n' AND note IS NULL});
	is($missing, '0', "$label: no TOASTed value missing from new images");
}

for my $round (1 .. 2)
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '4', '-T', '30', '-f', $script,
		  '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$out, '2>', \$err);
	sleep 4;
	$node->stop('immediate');
	$h->finish;
	$node->start;
	check_log("crash $round");
}

# A transaction bigger than the decoder's memory is captured whole, once.
$node->append_conf('postgresql.conf', "logical_decoding_work_mem = '64kB'\nwork_mem = '64kB'\n");
$node->reload;
$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text);
SELECT mvinc.track('big');
INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 200000) g;
});
$node->safe_psql('postgres', "SELECT mvinc.wait_for_capture(timeout => '120 s')");
my $big_log = $node->safe_psql('postgres', "SELECT mvinc.track('big')");
is($node->safe_psql('postgres', "SELECT count(*), count(DISTINCT id), count(DISTINCT _mvinc_lsn) FROM $big_log"),
	'200000|200000|1', 'a 200k-row transaction is captured whole, once');
is($node->safe_psql('postgres', "SELECT last_error IS NULL FROM mvinc.capture"), 't', 'no capture error');

# Errors of the worker are retried, so only the log shows them (e.g. a WAL
# flush request past the end of WAL, under the pgbench load above)
unlike(PostgreSQL::Test::Utils::slurp_file($node->logfile),
	qr/"mvinc capture worker" \(PID \d+\) exited with exit code 1/,
	'the capture worker never failed under load');
$node->stop;
done_testing();
