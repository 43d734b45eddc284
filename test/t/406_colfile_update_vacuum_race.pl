# Concurrent UPDATEs of the same few colfile rows while VACUUM merges their
# small row groups: every statement succeeds and no update is lost.
#
# Clients update 50 hot rows without any serialization of their own: some
# move rows (an indexed column changes: delete + insert at a new TID, in a
# one-row group), some bump a counter in place and log each bump in a heap
# table, in the same statement.  Many UPDATEs meet a row updated
# concurrently and follow it to its newest version (EvalPlanQual), fetched
# by TID while a VACUUM loop merges the one-row groups into compacted ones.
# A lookup of a row group by TID outside MVCC once read the index before a
# compaction inserted its group and judged the replaced groups after it
# committed: the row was in no group, and UPDATEs failed with "failed to
# fetch tuple being updated", "could not read row ... to update it" or
# matched no row, within seconds. The table is tracked: each update logs
# the old row, fetched by TID outside MVCC with its group's column files,
# which VACUUM merges meanwhile (a listing that missed the merged file gave
# the row's values from before its in-place updates).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_RACE_SECONDS} // 20;
my $node = mvinc_node('colfile_update_vacuum_race');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE r (id int PRIMARY KEY, d int NOT NULL, n int NOT NULL, g int NOT NULL) USING colfile;
CREATE INDEX r_d ON r (d);
INSERT INTO r SELECT g, g, 0, g % 5 FROM generate_series(1, 100) g;
-- tracked: every update and move logs the old row, fetched by TID
CREATE MATERIALIZED VIEW r_sums WITH (mvinc.incremental = true) AS
  SELECT g, sum(n) AS n, sum(d) AS d, count(*) AS c FROM r GROUP BY g;
CREATE TABLE bumps (id int NOT NULL);
-- one bump, logged with it; an UPDATE that finds no row is an error
CREATE FUNCTION bump(k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c int;
BEGIN
  UPDATE r SET n = n + 1 WHERE id = k;
  GET DIAGNOSTICS c = ROW_COUNT;
  IF c <> 1 THEN RAISE EXCEPTION 'the update of row % matched % rows', k, c; END IF;
  INSERT INTO bumps VALUES (k);
END $$;
});

# VACUUM as often as it can run, from a pgbench of its own
my $vacuum_script = $node->basedir . '/vacuum.sql';
append_to_file($vacuum_script, "VACUUM r;\n");
my ($vacuum_out, $vacuum_err) = ('', '');
my $vacuums = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-f', $vacuum_script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$vacuum_out, '2>', \$vacuum_err);

$node->pgbench(
	"-n -c 4 -j 2 -T $seconds",
	0,
	[qr{processed: [1-9]}, qr{failed transactions: 0 }],
	[qr{^$}],
	'moving and in-place updates of the same rows beside a VACUUM loop',
	{
		'move@2' => q{
\set k random(1, 50)
UPDATE r SET d = d + 1 WHERE id = :k;
},
		'move_and_bump@3' => q{
\set k random(1, 50)
BEGIN;
UPDATE r SET d = d + 1, n = n + 1 WHERE id = :k;
INSERT INTO bumps VALUES (:k);
END;
},
		'bump@1' => q{
\set k random(1, 50)
SELECT bump(:k);
},
	});
$vacuums->finish;
like($vacuum_out, qr{processed: [1-9]}, 'VACUUM ran meanwhile');

is($node->safe_psql('postgres', q{
SELECT count(*) FROM r
 WHERE n <> (SELECT count(*) FROM bumps b WHERE b.id = r.id)}),
	'0', 'every row counts exactly the bumps logged for it');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM r'),
	'100|100', 'every row is there once');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM r WHERE d > 0}), '100', 'every row is found through the moved index');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('r')}),
	'0', 'colfile_check is clean');
# the old rows logged while VACUUM merged column files were the rows'
# latest values (a stale one left the view unequal to its query)
$node->safe_psql('postgres', q{SELECT mvinc.refresh('r_sums')});
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.verify_view('r_sums')}),
	'0', 'the view over the table equals its query');

$node->stop;
done_testing();
