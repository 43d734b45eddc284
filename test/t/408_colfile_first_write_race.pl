# The first write to an empty colfile file creates its metapage.  Writers
# arriving together on a file TRUNCATE just emptied (or a new table) must
# all wait for that page: one of them extended the file, and the others
# read the new block before its creator had locked and formatted it, and
# failed with "invalid metapage" (seen first in 407 as a CI flake).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $seconds = $ENV{MVINC_RACE_SECONDS} // 10;
my $node = mvinc_node('colfile_first_write_race');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE tt (a int, b text) USING colfile;
CREATE INDEX tt_a ON tt (a);
});

$node->pgbench(
	"-n -c 8 -j 4 -T $seconds",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'inserts, scans and VACUUMs racing the first write after TRUNCATE',
	{
		'first_writes' => q{
\set op random(1, 20)
\if :op = 1
TRUNCATE tt;
\elif :op = 2
VACUUM tt;
\elif :op = 3
SELECT count(*) FROM tt;
\else
INSERT INTO tt VALUES (:op, 'x');
\endif
},
	});

is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('tt')}),
	'0', 'colfile_check is clean');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM tt WHERE a > 0) = (SELECT count(*) FROM tt)}),
	't', 'the index finds every row');

$node->stop;
done_testing();
