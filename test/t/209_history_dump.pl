# pg_dump | psql into a second database keeps the versions of history
# views: their storage is an ordinary table in schema mvinc (dumped with
# its rows), the catalog rows are extension configuration data, and the
# REFRESH in the dump's post-data adopts the storage and goes on from the
# source's state then.  A snapshot-fed view (never REFRESHed) adopts its
# storage at its next load.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('histdump');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE users (id int PRIMARY KEY, level int, name text);
INSERT INTO users SELECT g, g % 4, 'u' || g FROM generate_series(1, 50) g;
CREATE MATERIALIZED VIEW levels WITH (mvinc.history = true, mvinc.key = 'id',
                                      mvinc.history_start = '2000-01-01',
                                      mvinc.history_retention = '100 years')
  AS SELECT id, level FROM users;
UPDATE users SET level = level + 10 WHERE id <= 5;
DELETE FROM users WHERE id = 50;
REFRESH MATERIALIZED VIEW levels;
UPDATE users SET level = 99 WHERE id = 1;   -- pending at dump time
CREATE TABLE shape (id int PRIMARY KEY, level int);
CREATE MATERIALIZED VIEW daily WITH (mvinc.history = true, mvinc.key = 'id')
  AS SELECT id, level FROM shape WITH NO DATA;
CREATE TABLE d1 AS SELECT id, level FROM users;
CREATE TABLE d2 AS SELECT id, level + 1 AS level FROM users WHERE id > 2;
SELECT mvinc.history_load('daily', 'd1', '2024-01-01');
SELECT mvinc.history_load('daily', 'd2', '2024-01-02');
});
my $versions = q{SELECT string_agg(concat_ws('/', id, level, valid_from, valid_to), ','
                   ORDER BY id, valid_from) FROM %s};
my $levels_before = $node->safe_psql('postgres', sprintf($versions, 'levels WHERE id <> 1'));
my $dumped_at = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
my $daily_before = $node->safe_psql('postgres', sprintf($versions, 'daily'));

my $dump = PostgreSQL::Test::Utils::tempdir . '/dump.sql';
$node->command_ok([ 'pg_dump', '--no-sync', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump of a database with history views');
my $text = slurp_file($dump);
like($text, qr/CREATE TABLE mvinc\.hv_\d+/, 'the storage of history views is dumped');
like($text, qr/REFRESH MATERIALIZED VIEW public\.levels/, 'the stream-fed view is refreshed in post-data');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', $node->connstr('restored'), '-f', $dump ],
	'the dump restores into a new database');

is($node->safe_psql('restored', sprintf($versions, 'levels WHERE id <> 1')), $levels_before,
	'the restored view has every version');
# the dump holds the stored versions: a change still pending then starts
# when the restored view's REFRESH adopts the storage
is($node->safe_psql('restored', qq{SELECT string_agg(level || ':' || (valid_from > '$dumped_at'), ','
   ORDER BY valid_from) FROM levels WHERE id = 1}), '1:false,11:false,99:true',
	'a change pending at dump time starts at the restore');
is($node->safe_psql('restored', sprintf($versions, 'daily')), $daily_before,
	'the snapshot-fed view has every version');
is($node->safe_psql('restored', q{SELECT string_agg(view::text || ':' || coalesce(feed, '-') || ':'
   || coalesce((retention = '100 years')::text, '-'), ',' ORDER BY view::text) FROM mvinc.history_views}),
	'daily:snapshot:-,levels:stream:true', 'the catalog rows came back');
is($node->safe_psql('restored', "SELECT count(*) FROM mvinc.history_loads"), '2', 'and the loads');

$node->safe_psql('restored', q{
UPDATE users SET level = -1 WHERE id = 2;
INSERT INTO users VALUES (77, 7, 'new');
});
is($node->safe_psql('restored', q{SELECT string_agg(id || ':' || level, ',' ORDER BY id) FROM levels
   WHERE id IN (2, 77) AND valid_to = 'infinity'}), '2:-1,77:7', 'reads see changes made after the restore');
$node->safe_psql('restored', 'REFRESH MATERIALIZED VIEW levels');
is($node->safe_psql('restored', q{SELECT count(*) FROM ((SELECT id, level FROM levels WHERE valid_to = 'infinity'
   EXCEPT SELECT id, level FROM users) UNION ALL (SELECT id, level FROM users
   EXCEPT SELECT id, level FROM levels WHERE valid_to = 'infinity')) d}), '0',
	'after a refresh the current versions equal the source');
is($node->safe_psql('restored', "SELECT count(*) FROM levels WHERE id = 2"), '3',
	'the key changed after the restore has its old versions and the new one');
$node->safe_psql('restored', "CREATE TABLE d3 AS SELECT id, level FROM users");
$node->safe_psql('restored', "SELECT mvinc.history_load('daily', 'd3', '2024-01-03')");
is($node->safe_psql('restored', "SELECT count(*) FROM mvinc.history_check('daily')"), '0',
	'the restored snapshot-fed view takes the next load');
is($node->safe_psql('restored', "SELECT count(*) FROM mvinc.history_check('levels')"), '0',
	'and both histories are valid');
is($node->safe_psql('restored', q{SELECT count(*) FROM pg_depend d JOIN mvinc.history_view h
   ON d.objid = h.storage_oid AND d.refobjid = h.view::oid AND d.deptype = 'a'}), '2',
	'the adopted storage tables go with their views');
$node->safe_psql('restored', 'DROP MATERIALIZED VIEW levels, daily');
is($node->safe_psql('restored', "SELECT count(*) FROM pg_class WHERE relname LIKE 'hv\\_%'"), '0',
	'dropping the views drops the storage');

$node->stop;
done_testing();
