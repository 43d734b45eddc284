# A recluster's swap gets its moment of ACCESS EXCLUSIVE under a steady
# stream of REPEATABLE READ readers whose transactions overlap without end
# (each holds its lock on the storage until it ends, 100-200 ms here): its
# waits in line grow (50 ms, doubling up to 1 s) until one outlasts the
# readers ahead of it.  With waits of 50 ms each time the swap starved
# until mvinc.recluster_swap_timeout (seen for 39 s in TAP 205).  The
# readers' answers stay the view's query's throughout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $node = mvinc_node('swapreaders', conf => q{
log_min_messages = warning
});
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO src SELECT i, i % 200, i FROM generate_series(1, 20000) i;
CREATE MATERIALIZED VIEW v WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s FROM src GROUP BY g;
CREATE TABLE wrong (at timestamptz DEFAULT clock_timestamp(), n bigint);
});

# six clients, each a 100-200 ms REPEATABLE READ transaction reading the view
# twice: at every moment some reader holds the storage
my $script = PostgreSQL::Test::Utils::tempdir() . '/reader.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM v;
SELECT pg_sleep(0.1 + random() * 0.1);
INSERT INTO wrong (n) SELECT count(*) FROM (
  (SELECT g, n, s FROM v EXCEPT ALL SELECT g, count(*), sum(v) FROM src GROUP BY g)
  UNION ALL
  (SELECT g, count(*), sum(v) FROM src GROUP BY g EXCEPT ALL SELECT g, n, s FROM v)) d
  HAVING count(*) > 0;
COMMIT;
});
my $connstr = $node->connstr('postgres');
my $bindir = $node->config_data('--bindir');
my ($out, $err) = ('', '');
my $readers = IPC::Run::start(
	[ "$bindir/pgbench", '-n', '-c', '6', '-T', '40', '-f', $script, $connstr ],
	'>', \$out, '2>', \$err);

# the readers are under way
ok(mvinc_wait_for($node, 'postgres',
	q{SELECT count(*) >= 2 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(0.1 +%' AND state = 'active'},
	't', 10), 'readers run');

# a change to fold, so that the recluster has append rows and a full copy
$node->safe_psql('postgres', q{INSERT INTO src SELECT i, i % 200, i FROM generate_series(20001, 21000) i;
REFRESH MATERIALIZED VIEW v;});

my $t0 = time;
my ($rc, $stdout, $stderr) = $node->psql('postgres', q{
SET mvinc.recluster_swap_timeout = 20000;
SELECT mvinc.recluster('v');});
my $took = time - $t0;
is($rc, 0, 'the recluster swapped among steady readers') or diag($stderr);
cmp_ok($took, '<', 20, "within the swap timeout (took ${took}s)");

$readers->kill_kill;
$readers->finish;
is($node->safe_psql('postgres', q{SELECT count(*) FROM wrong}), '0',
	'every reader saw the view equal to its query');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (
  (SELECT g, n, s FROM v EXCEPT ALL SELECT g, count(*), sum(v) FROM src GROUP BY g)
  UNION ALL
  (SELECT g, count(*), sum(v) FROM src GROUP BY g EXCEPT ALL SELECT g, n, s FROM v)) d}),
	'0', 'the view equals its query after the recluster');

$node->stop;
done_testing();
