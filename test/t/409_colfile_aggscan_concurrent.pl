# The Colfile Aggregate node under concurrent writers, VACUUM and
# compaction: inside one REPEATABLE READ transaction, whole-table
# aggregates (with and without conditions) through the node must equal
# the same query row at a time (mvinc.colfile_aggregate_scan off), and
# under READ COMMITTED both must equal a count kept by the writers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_RACE_SECONDS} // 15;
my $node = mvinc_node('colfile_aggscan_concurrent');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
ALTER DATABASE postgres SET mvinc.colfile_rows_per_group = 200;
CREATE TABLE t (id int, a int, b int8, f float8, d date) USING colfile;
CREATE INDEX t_id ON t (id);
INSERT INTO t SELECT g, g % 50, g * 7, g / 3.0, date '2020-01-01' + g % 400 FROM generate_series(1, 5000) g;
CREATE TABLE tally (n bigint);
INSERT INTO tally VALUES (5000);
-- raises when the node and the row-at-a-time scan disagree in one snapshot
CREATE FUNCTION check_same(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r1 text; r2 text;
BEGIN
  SET LOCAL mvinc.colfile_aggregate_scan = on;
  EXECUTE format('SELECT (%s)::text', q) INTO r1;
  SET LOCAL mvinc.colfile_aggregate_scan = off;
  EXECUTE format('SELECT (%s)::text', q) INTO r2;
  SET LOCAL mvinc.colfile_aggregate_scan = on;
  IF r1 IS DISTINCT FROM r2 THEN
    RAISE EXCEPTION 'node % <> row at a time % for %', r1, r2, q;
  END IF;
END $$;
CREATE FUNCTION check_tally() RETURNS void LANGUAGE plpgsql AS $$
DECLARE c bigint; n bigint;
BEGIN
  SELECT count(*) INTO c FROM t;
  SELECT tally.n INTO n FROM tally;
  IF c <> n THEN
    RAISE EXCEPTION 'count(*) % <> % rows the writers counted', c, n;
  END IF;
END $$;
});
is($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT count(*), sum(b) FROM t WHERE a > 10}) =~ /Colfile Aggregate/ ? 1 : 0,
	1, 'the node is planned');

my $vacuum_script = $node->basedir . '/vacuum.sql';
append_to_file($vacuum_script, q{VACUUM t;
SELECT pg_sleep(0.2);
SELECT count(*) FROM mvinc.colfile_compact('t');
});
my ($vacuum_out, $vacuum_err) = ('', '');
my $vacuums = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-f', $vacuum_script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$vacuum_out, '2>', \$vacuum_err);

$node->pgbench(
	"-n -c 4 -j 2 -T $seconds",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'writers and readers comparing the node with the row-at-a-time scan',
	{
		'write' => q{
\set k random(1, 6000)
\set op random(1, 6)
\if :op = 1
BEGIN; INSERT INTO t VALUES (:k, :k % 50, :k * 7, :k / 3.0, date '2020-01-01' + :k % 400); UPDATE tally SET n = n + 1; COMMIT;
\elif :op = 2
BEGIN; WITH d AS (DELETE FROM t WHERE id = :k RETURNING 1) UPDATE tally SET n = n - (SELECT count(*) FROM d); COMMIT;
\elif :op = 3
UPDATE t SET b = b + 1, f = f * 2 WHERE id = :k;
\elif :op = 4
BEGIN; INSERT INTO t VALUES (:k, 1, 1, 1, NULL); SAVEPOINT s; INSERT INTO t VALUES (:k, 2, 2, 2, NULL); ROLLBACK TO s; UPDATE tally SET n = n + 1; COMMIT;
\else
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_same('SELECT row(count(*), sum(b), min(d), max(f), avg(a)) FROM t');
SELECT check_same('SELECT row(count(*), sum(b), max(d)) FROM t WHERE a > 10 AND d IS NOT NULL');
SELECT check_same('SELECT row(count(b), min(b)) FROM t WHERE id BETWEEN ' || :k || ' AND ' || :k || ' + 500');
SELECT check_tally();
COMMIT;
\endif
},
	});
$vacuums->finish;
like($vacuum_out, qr{processed: [1-9]}, 'VACUUM and compactions ran meanwhile');
unlike($vacuum_err, qr{ERROR}, 'no VACUUM or compaction failed');
is($node->safe_psql('postgres', q{SELECT (SELECT count(*) FROM t) = (SELECT n FROM tally)}),
	't', 'the node counts what the writers counted');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('t')}), '0',
	'colfile_check is clean');

$node->stop;
done_testing();
