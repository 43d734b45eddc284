# colfile under churn while VACUUM runs: pgbench clients delete and
# re-insert the same keys and update indexed and non-indexed columns of a
# colfile table and of its heap twin in the same transactions, while a loop
# runs VACUUM every second and autovacuum runs at its most aggressive. At the
# end both tables must hold the same rows by a sequential scan and by every
# index, with no duplicated key, a clean colfile_check and a clean amcheck
# (heapallindexed). Before the fix of VACUUM's metadata writes, deleted rows
# came back here within seconds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_CHURN_SECONDS} // 60;
my $node = mvinc_node('colfile_vacuum_churn', conf => q(
autovacuum_naptime = 1s
autovacuum_vacuum_threshold = 0
autovacuum_vacuum_scale_factor = 0
autovacuum_vacuum_insert_threshold = 0
autovacuum_vacuum_insert_scale_factor = 0
autovacuum_analyze_threshold = 0
autovacuum_analyze_scale_factor = 0
autovacuum_vacuum_cost_delay = 0
));

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE EXTENSION amcheck;
CREATE TABLE c (id int PRIMARY KEY, grp int NOT NULL, bal int NOT NULL, note text) USING colfile;
CREATE INDEX c_grp ON c (grp);
CREATE INDEX c_bal_part ON c (bal) WHERE bal > 1000;
CREATE TABLE h (id int PRIMARY KEY, grp int NOT NULL, bal int NOT NULL, note text) USING heap;
CREATE INDEX h_grp ON h (grp);
INSERT INTO c SELECT g, g % 50, 1000, 'start' FROM generate_series(1, 1000) g;
INSERT INTO h SELECT * FROM c;
});

# Each transaction does the same to both tables. Transactions on one key
# are serialized by an advisory lock: under READ COMMITTED a concurrent
# delete and re-insert could otherwise be seen by one table's statement and
# not by the other's, as between two heap tables. Half the scripts run at
# REPEATABLE READ.
my $vacuums = IPC::Run::start(
	[ 'bash', '-c',
	  "end=\$((SECONDS + $seconds)); while [ \$SECONDS -lt \$end ]; do "
	  . "psql -X -q -h '" . $node->host . "' -p " . $node->port
	  . " -d postgres -c 'VACUUM c' -c 'VACUUM h' >/dev/null 2>&1; sleep 1; done" ]);

$node->pgbench(
	"-n -c 4 -j 2 -T $seconds --max-tries=100",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'delete/re-insert and updates under VACUUM',
	{
		'reinsert' => q{
\set k random(1, 1000)
\set g random(0, 49)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_advisory_xact_lock(:k);
DELETE FROM c WHERE id = :k;
INSERT INTO c VALUES (:k, :g, 1000, 'again') ON CONFLICT (id) DO UPDATE SET grp = excluded.grp, bal = excluded.bal, note = excluded.note;
DELETE FROM h WHERE id = :k;
INSERT INTO h VALUES (:k, :g, 1000, 'again') ON CONFLICT (id) DO UPDATE SET grp = excluded.grp, bal = excluded.bal, note = excluded.note;
END;
},
		'move_indexed' => q{
\set k random(1, 1000)
BEGIN;
SELECT pg_advisory_xact_lock(:k);
UPDATE c SET grp = (grp + 1) % 50 WHERE id = :k;
UPDATE h SET grp = (grp + 1) % 50 WHERE id = :k;
END;
},
		'add_plain' => q{
\set k random(1, 1000)
\set d random(1, 10)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_advisory_xact_lock(:k);
UPDATE c SET bal = bal + :d, note = 'added' WHERE id = :k;
UPDATE h SET bal = bal + :d, note = 'added' WHERE id = :k;
END;
},
		'delete_only' => q{
\set k random(1, 1000)
BEGIN;
SELECT pg_advisory_xact_lock(:k);
DELETE FROM c WHERE id = :k;
DELETE FROM h WHERE id = :k;
END;
},
	});
$vacuums->finish;

my $cols = 'id, grp, bal, note';
my $diff = sub {
	my ($settings, $where, $what) = @_;
	my $q = qq{$settings
SELECT (SELECT count(*) FROM c WHERE $where) || '|' ||
       (SELECT count(*) FROM (SELECT $cols FROM c WHERE $where EXCEPT ALL SELECT $cols FROM h WHERE $where) x) || '|' ||
       (SELECT count(*) FROM (SELECT $cols FROM h WHERE $where EXCEPT ALL SELECT $cols FROM c WHERE $where) y) || '|' ||
       (SELECT count(*) FROM h WHERE $where);};
	my $r = $node->safe_psql('postgres', $q);
	my ($nc, $only_c, $only_h, $nh) = split /\|/, $r;
	ok($only_c == 0 && $only_h == 0 && $nc == $nh,
		"$what: colfile and heap agree (colfile $nc rows, heap $nh, only colfile $only_c, only heap $only_h)");
};

my $seq = 'SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;';
my $idx = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
$diff->($seq, 'true', 'sequential scan');
$diff->($idx, 'id > 0', 'primary key index');
$diff->($idx, 'grp >= 0', 'index on grp');
$diff->($idx, 'bal > 1000', 'partial index on bal');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM c'),
	'0', 'no key appears twice');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('c')}),
	'0', 'colfile_check is clean');
for my $i (qw(c_pkey c_grp c_bal_part))
{
	$node->safe_psql('postgres', "SELECT bt_index_check('$i', true)");
	$node->safe_psql('postgres', "SELECT bt_index_parent_check('$i', true)");
	pass("amcheck with heapallindexed passes on $i");
}

# A last VACUUM with nothing running keeps every live row and leaves no row
# group whose rows are all dead.
$node->safe_psql('postgres', 'VACUUM c');
$diff->($seq, 'true', 'after a quiet VACUUM');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('c')}),
	'0', 'colfile_check is clean after the quiet VACUUM');

$node->stop;
done_testing();
