# colfile under concurrent writers: pgbench transfers between random
# accounts (two UPDATEs per transaction, READ COMMITTED, EvalPlanQual on
# conflicts) plus SELECT ... FOR UPDATE; money is neither created nor lost,
# no row is duplicated, indexes agree, and VACUUM then reclaims every dead
# row group.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('colfile_concurrency');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE acc (id int PRIMARY KEY, bal int, note text) USING colfile;
INSERT INTO acc SELECT g, 1000, 'n' FROM generate_series(1, 100) g;
});

$node->pgbench(
	'-n -c 4 -j 2 -T 8 --max-tries=50',
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'concurrent transfers and row locks',
	{
		'transfer' => q{
\set x random(1, 100)
\set y random(1, 100)
BEGIN;
UPDATE acc SET bal = bal - 1 WHERE id = :x;
UPDATE acc SET bal = bal + 1, note = 'moved' WHERE id = :y;
END;
},
		'lock' => q{
\set x random(1, 100)
BEGIN;
SELECT bal FROM acc WHERE id = :x FOR UPDATE;
UPDATE acc SET note = 'locked' WHERE id = :x;
END;
},
	});

is($node->safe_psql('postgres', 'SELECT count(*), sum(bal), count(DISTINCT id) FROM acc'),
	'100|100000|100', 'no money created or lost, no duplicated row');
is($node->safe_psql('postgres',
	'SET enable_seqscan = off; SELECT count(*), sum(bal) FROM acc WHERE id > 0'),
	'100|100000', 'the primary key index agrees');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mvinc.colfile_check(\'acc\')'),
	'0', 'colfile_check is clean');
$node->safe_psql('postgres', 'VACUUM acc');
is($node->safe_psql('postgres',
	'SELECT row_groups <= 100, live_rows, deleted_rows FROM mvinc.colfile_stats(\'acc\')'),
	't|100|0', 'VACUUM reclaims the dead row groups');
is($node->safe_psql('postgres', 'SELECT count(*), sum(bal) FROM acc'),
	'100|100000', 'same answer after VACUUM');

$node->stop;
done_testing();
