# Concurrent increments of colfile rows updated in place, each through a
# row the statement (or its transaction) also locks FOR UPDATE elsewhere:
# a subquery's lock, a function's. Such a lock once counted as "the
# statement holds the newest version", so the statement's stale value
# overwrote concurrent increments (31 % of them lost under this load).
# Every increment is logged in a heap table in the same transaction: the
# sum must equal the log.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $seconds = $ENV{MVINC_RACE_SECONDS} // 8;
my $node = mvinc_node('colfile_locked_update_race');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE t (id int PRIMARY KEY, n int, pad text) USING colfile;
INSERT INTO t SELECT g, 0, 'row ' || g FROM generate_series(1, 10) g;
CREATE TABLE inc_log (id int, via text);
CREATE FUNCTION lock_row(int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN PERFORM 1 FROM t WHERE id = $1 FOR UPDATE; RETURN true; END $$;
});

$node->pgbench(
	"-n -c 6 -j 3 -T $seconds",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'increments through locked rows',
	{
		'subquery_lock' => q{
\set r random(1, 10)
BEGIN;
UPDATE t SET n = n + 1 WHERE id IN (SELECT id FROM t WHERE id = :r FOR UPDATE);
INSERT INTO inc_log VALUES (:r, 'subquery');
COMMIT;
},
		'function_lock' => q{
\set r random(1, 10)
BEGIN;
UPDATE t SET n = n + 1 WHERE id = :r AND lock_row(id);
INSERT INTO inc_log VALUES (:r, 'function');
COMMIT;
},
		'plain' => q{
\set r random(1, 10)
BEGIN;
UPDATE t SET n = n + 1 WHERE id = :r;
INSERT INTO inc_log VALUES (:r, 'plain');
COMMIT;
},
	});

is($node->safe_psql('postgres', q{
SELECT count(*) FROM t FULL JOIN (SELECT id, count(*) AS c FROM inc_log GROUP BY id) l USING (id)
 WHERE t.n IS DISTINCT FROM coalesce(l.c, 0)}),
	'0', 'every row holds exactly its logged increments');
ok($node->safe_psql('postgres', q{SELECT count(DISTINCT via) FROM inc_log}) == 3,
	'all three kinds of statements ran');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('t')}),
	'0', 'colfile_check is clean');

$node->stop;
done_testing();
