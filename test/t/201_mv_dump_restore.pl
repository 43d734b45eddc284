# pg_dump | psql into a second database recreates working incremental
# views: the matview is dumped as a (populated) materialized view, the
# catalog rows as extension configuration data, and the REFRESH in the
# dump's post-data adopts the view (new storage, tracking, initial
# computation).  Afterwards the restored views refresh incrementally.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('dump');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount numeric, paid boolean);
INSERT INTO orders SELECT g, g % 13, g * 1.5, g % 4 <> 0 FROM generate_series(1, 500) g;
CREATE MATERIALIZED VIEW by_customer (customer_id, total, n, average)
  WITH (mvinc.incremental = true)
  AS SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id;
CREATE MATERIALIZED VIEW big WITH (mvinc.incremental = true)
  AS SELECT id, amount FROM orders WHERE amount > 600;
CREATE MATERIALIZED VIEW plain AS SELECT count(*) AS n FROM orders;
INSERT INTO orders VALUES (1001, 1, 10, true);
});

my $dump = PostgreSQL::Test::Utils::tempdir . '/dump.sql';
$node->command_ok(
	[ 'pg_dump', '--no-sync', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump of a database with incremental views');
my $text = slurp_file($dump);
like($text, qr/REFRESH MATERIALIZED VIEW public\.by_customer/, 'the dump refreshes the view in post-data');
unlike($text, qr/CREATE TABLE mvinc\.mv_/, 'storage tables are not dumped');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', $node->connstr('restored'), '-f', $dump ],
	'the dump restores into a new database');

my $check = q{
SELECT (SELECT count(*) FROM ((TABLE by_customer EXCEPT ALL
          SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id)
        UNION ALL
        (SELECT customer_id, sum(amount), count(*), avg(amount) FROM orders WHERE paid GROUP BY customer_id
          EXCEPT ALL TABLE by_customer)) x)
     + (SELECT count(*) FROM ((TABLE big EXCEPT ALL SELECT id, amount FROM orders WHERE amount > 600)
        UNION ALL (SELECT id, amount FROM orders WHERE amount > 600 EXCEPT ALL TABLE big)) y)};

is($node->safe_psql('restored', $check), '0', 'restored views equal their queries');
is($node->safe_psql('restored',
	"SELECT string_agg(view::text || ':' || coalesce(last_refresh_mode, '-') || ':' || populated, ',' ORDER BY view::text) FROM mvinc.views"),
	'big:initial:true,by_customer:initial:true', 'both views were adopted by their REFRESH');
is($node->safe_psql('restored', "SELECT mvinc.read_path('by_customer')"), 'fresh', 'the restored view reads fresh');

$node->safe_psql('restored', q{
INSERT INTO orders VALUES (2001, 2, 7, true), (2002, 99, 1, true);
UPDATE orders SET amount = amount + 1000 WHERE id = 3;
DELETE FROM orders WHERE id = 8;
});
is($node->safe_psql('restored', "SELECT mode FROM mvinc.refresh('by_customer')"), 'regroup',
	'the restored aggregate view refreshes incrementally');
is($node->safe_psql('restored', "SELECT mode FROM mvinc.refresh('big')"), 'merge',
	'the restored projection view refreshes incrementally');
is($node->safe_psql('restored', $check), '0', 'and equals its queries afterwards');

# The original database is untouched by all this.
is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('by_customer')"), 'incremental',
	'the original view refreshes on');
is($node->safe_psql('postgres', $check), '0', 'the original views equal their queries');

# A second dump of the restored database restores as well.
my $dump2 = PostgreSQL::Test::Utils::tempdir . '/dump2.sql';
$node->command_ok([ 'pg_dump', '--no-sync', '-d', $node->connstr('restored'), '-f', $dump2 ], 'dump of the restored database');
$node->safe_psql('postgres', 'CREATE DATABASE restored2');
$node->command_ok(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-1', '-d', $node->connstr('restored2'), '-f', $dump2 ],
	'it restores again, in a single transaction');
# The restore's transaction adopted the views, but this database's capture
# began only after it committed (a new slot waits for running transactions):
# the views read their queries until their first refresh rebuilds them.
is($node->safe_psql('restored2', $check), '0', 'views restored in one transaction answer their queries');
is($node->safe_psql('restored2', "SELECT mvinc.read_path('by_customer')"), 'live', 'through the live path');
$node->safe_psql('restored2', "ALTER MATERIALIZED VIEW big SET (mvinc.refresh_interval = '0')");
ok($node->poll_query_until('restored2', "SELECT mvinc.read_path('big') = 'fresh'"),
	'a scheduled one is rebuilt by its automatic refresh');
$node->safe_psql('restored2', "REFRESH MATERIALIZED VIEW by_customer;");
is($node->safe_psql('restored2', "SELECT string_agg(last_refresh_mode, ',' ORDER BY view::text) FROM mvinc.views"),
	'full,full', 'the first refreshes rebuild');
is($node->safe_psql('restored2', $check), '0', 'twice-restored views equal their queries');

# DROP EXTENSION needs CASCADE, which drops the incremental views (and
# their storage) but leaves plain materialized views alone.
my ($ret, $out, $err) = $node->psql('postgres', 'DROP EXTENSION mvinc');
like($err, qr/cannot drop extension mvinc because other objects depend on it/, 'DROP EXTENSION without CASCADE is refused');
$node->safe_psql('postgres', 'DROP EXTENSION mvinc CASCADE');
is($node->safe_psql('postgres',
	"SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relkind = 'm'"),
	'plain', 'DROP EXTENSION CASCADE dropped the incremental views only');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname ~ '^mv_[0-9]+\$'"),
	'0', 'no storage is left behind');

$node->stop;
done_testing();
