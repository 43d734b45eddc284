# Change-log retention keeps up with a view refreshed continuously while
# writers hold transactions longer than the refresh period.  Retention
# removes only rows that no running snapshot may need (a REPEATABLE READ
# reader that predates a refresh reads from the older checkpoint: see
# specs history_rr_retention, mv_read_rr_retention): once it waited for a
# moment when no consumer row was newer than the xmin horizon, which such
# writers never give, and the change log grew without bound.  Here it must
# trail the refreshes: the bound advances, and the change log holds a small
# part of the changes made.  The view equals its query at the end.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $seconds = $ENV{MVINC_RETENTION_SECONDS} // 20;
my $node = mvinc_node('retention_overlap', conf => "mvinc.retention_interval = '200ms'\n");

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO src SELECT i, i % 100, 0 FROM generate_series(1, 10000) i;
CREATE MATERIALIZED VIEW v WITH (mvinc.incremental = true, mvinc.refresh_interval = '0') AS
  SELECT g, count(*) AS n, sum(v) AS s FROM src GROUP BY g;
CREATE TABLE bound_at_start AS
  SELECT retained_from FROM mvinc.tracked WHERE relid = 'src'::regclass;
});

# half the clients hold their transaction up to 2 s after the write
$node->pgbench(
	"-n -c 6 -j 3 -T $seconds",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'writers, some holding their transactions open',
	{
		'long@1' => q{
\set id random(1, 10000)
BEGIN;
UPDATE src SET v = v + 1 WHERE id = :id;
SELECT pg_sleep(random() * 2);
END;
},
		'short@4' => q{
\set id random(1, 10000)
UPDATE src SET v = v + 1 WHERE id = :id;
},
	});

my $changelog = $node->safe_psql('postgres',
	q{SELECT changelog::regclass FROM mvinc.tracked WHERE relid = 'src'::regclass});
my $made = $node->safe_psql('postgres', 'SELECT sum(v) FROM src');
my $kept = $node->safe_psql('postgres', "SELECT count(*) FROM $changelog");
ok($node->safe_psql('postgres', q{SELECT t.retained_from > b.retained_from
  FROM mvinc.tracked t, bound_at_start b WHERE t.relid = 'src'::regclass}) eq 't',
	'retention advanced while the writers ran');
# each update logs an old and a new row: at most a quarter of them kept
ok($kept < $made / 2, "the change log holds a small part of the changes ($kept rows for $made updates)");

ok(mvinc_wait_for($node, 'postgres',
	q{SELECT count(*) FROM ((TABLE v EXCEPT ALL SELECT g, count(*), sum(v) FROM src GROUP BY g)
	   UNION ALL (SELECT g, count(*), sum(v) FROM src GROUP BY g EXCEPT ALL TABLE v)) d}, '0', 30),
	'the view equals its query');

$node->stop;
done_testing();
