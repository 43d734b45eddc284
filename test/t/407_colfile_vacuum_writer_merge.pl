# VACUUM of a colfile table beside writers whose statements fail and retry
# (unique violations caught in exception blocks, ON CONFLICT DO NOTHING):
# the rows those leave behind are dead to everybody at once, so VACUUM
# drops their row groups, which it listed a while before; the writing
# transaction, committing meanwhile, merges its small groups and deletes
# those same group tuples.  VACUUM failed with "tuple concurrently deleted"
# within seconds; heap's never does.  Every VACUUM must succeed, and the
# table must stay consistent (keys unique by sequential and index scans,
# colfile_check clean).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_RACE_SECONDS} // 20;
my $node = mvinc_node('colfile_vacuum_writer_merge');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
ALTER DATABASE postgres SET mvinc.colfile_rows_per_group = 64;
CREATE TABLE uq (id int, k int, v int, note text) USING colfile;
CREATE UNIQUE INDEX uq_id ON uq (id);
CREATE UNIQUE INDEX uq_k ON uq (k);
});

my $vacuum_script = $node->basedir . '/vacuum.sql';
append_to_file($vacuum_script, q{VACUUM uq;
SELECT pg_sleep(0.03);
\set x random(1, 3)
\if :x = 1
VACUUM uq;
\elif :x = 2
SELECT count(*) FROM mvinc.colfile_compact('uq');
\else
SELECT pg_sleep(0.05);
\endif
});
my ($vacuum_out, $vacuum_err) = ('', '');
my $vacuums = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-f', $vacuum_script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$vacuum_out, '2>', \$vacuum_err);

$node->pgbench(
	"-n -c 8 -j 4 -T $seconds",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'inserts that fail and retry, upserts, deletes and key changes',
	{
		'writes' => q{
\set r random(1, 40)
\set r2 random(1, 40)
\set op random(1, 8)
\if :op <= 3
DO $$ BEGIN INSERT INTO uq VALUES (:r, :r + 1000, 1, 'a'); INSERT INTO uq VALUES (:r2, :r2 + 1000, 1, 'b'); EXCEPTION WHEN unique_violation THEN NULL; END $$;
\elif :op <= 4
BEGIN; INSERT INTO uq SELECT g, g + 1000, 1, 'c' FROM generate_series(:r, :r + 3) g ON CONFLICT DO NOTHING; UPDATE uq SET v = v + 1, note = note || 'u' WHERE id = :r2; COMMIT;
\elif :op <= 6
DELETE FROM uq WHERE id = :r;
\elif :op <= 7
DO $$ BEGIN UPDATE uq SET k = :r2 + 1000 WHERE id = :r; EXCEPTION WHEN unique_violation THEN NULL; END $$;
\else
DO $$ BEGIN UPDATE uq SET id = :r2 WHERE id = :r; EXCEPTION WHEN unique_violation THEN NULL; END $$;
\endif
},
	});
$vacuums->finish;
like($vacuum_out, qr{processed: [1-9]}, 'VACUUM and compactions ran meanwhile');
unlike($vacuum_err, qr{ERROR}, 'no VACUUM or compaction failed');

is($node->safe_psql('postgres', q{SELECT count(*) - count(DISTINCT id) + count(*) - count(DISTINCT k) FROM uq}),
	'0', 'keys are unique by a sequential scan');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM uq WHERE id > 0) = (SELECT count(*) FROM uq)
   AND (SELECT count(*) FROM uq WHERE k > 0) = (SELECT count(*) FROM uq)}),
	't', 'both indexes find every row');
$node->safe_psql('postgres', 'VACUUM uq');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('uq')}),
	'0', 'colfile_check is clean after a last VACUUM');

$node->stop;
done_testing();
