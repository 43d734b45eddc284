# Dropping a source's last view inside a longer transaction must not stall
# capture: untracking drops the source's change log (ACCESS EXCLUSIVE),
# and the capture worker, with a change of that source to write, waited
# for the lock, holding up capture of the whole database (and every
# refresh) until the transaction ended; a refresh inside that transaction
# waited for itself (found by a review).  The source is now released when
# the transaction commits; rolled back, nothing happens.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('dropxact');
$node->safe_psql('postgres', 'CREATE EXTENSION mvinc');
$node->safe_psql('postgres', q{
CREATE TABLE a (k int PRIMARY KEY, v int); CREATE TABLE b (k int PRIMARY KEY, v int);
INSERT INTO a VALUES (1, 1); INSERT INTO b VALUES (1, 1);
CREATE MATERIALIZED VIEW va WITH (mvinc.incremental = true) AS SELECT k, v FROM a;
CREATE MATERIALIZED VIEW vb WITH (mvinc.incremental = true) AS SELECT k, v FROM b;
SELECT mvinc.wait_for_capture();});

my $s1 = $node->background_psql('postgres', on_error_stop => 0);
$s1->query_safe('BEGIN; DROP MATERIALIZED VIEW va;');
$node->safe_psql('postgres', 'INSERT INTO a VALUES (2, 2); INSERT INTO b VALUES (2, 2);');
my ($rc, $out, $err) = $node->psql('postgres', q{SET statement_timeout = '20s'; SELECT mode FROM mvinc.refresh('vb')});
is($rc, 0, 'a refresh elsewhere goes on while the transaction is open') or diag($err);
is($out, 'incremental', 'and applies the change');
$s1->query_safe("SET LOCAL statement_timeout = '20s'");
is($s1->query_safe("SELECT mode FROM mvinc.refresh('vb')"), 'noop',
	'so does one inside the dropping transaction');
is($s1->query_safe("SELECT count(*) FROM mvinc.tracked WHERE relid = 'a'::regclass"), '1',
	'the source is still tracked until the commit');
$s1->query_safe('COMMIT');
is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.tracked WHERE relid = 'a'::regclass"), '0',
	'released at the commit');

# rolled back: the view and the tracking stay
$node->safe_psql('postgres', q{CREATE MATERIALIZED VIEW va WITH (mvinc.incremental = true) AS SELECT k, v FROM a});
$s1->query_safe('BEGIN; DROP MATERIALIZED VIEW va;');
$s1->query_safe('ROLLBACK');
$s1->quit;
is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.tracked WHERE relid = 'a'::regclass"), '1',
	'a rolled back drop leaves the source tracked');
$node->safe_psql('postgres', 'INSERT INTO a VALUES (4, 4)');
$node->safe_psql('postgres', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('va')"), 'incremental', 'and its view refreshes');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ((TABLE va EXCEPT ALL TABLE a) UNION ALL (TABLE a EXCEPT ALL TABLE va)) d'),
	'0', 'exactly');
# a savepoint rolled back inside a committed transaction: still tracked
$node->safe_psql('postgres', 'BEGIN; SAVEPOINT s; DROP MATERIALIZED VIEW va; ROLLBACK TO SAVEPOINT s; COMMIT;');
is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.tracked WHERE relid = 'a'::regclass"), '1',
	'a drop rolled back to a savepoint leaves it tracked');

done_testing();
