# ALTER EXTENSION mvinc UPDATE from 0.1 (sql/mvinc--0.1.sql, as released)
# to 0.2: a database with every kind of object, created under 0.1, keeps
# working with the new library before the update and after it, and the
# updated extension's objects are exactly those of a fresh 0.2 install
# (names, definitions, columns, privileges).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('upgrade');

$node->safe_psql('postgres', 'CREATE DATABASE old; CREATE DATABASE fresh');
$node->safe_psql('old', "CREATE EXTENSION mvinc VERSION '0.1'");
is($node->safe_psql('old', "SELECT extversion FROM pg_extension WHERE extname = 'mvinc'"),
	'0.1', 'version 0.1 installs');

$node->safe_psql('old', q{
CREATE TABLE orders (id int PRIMARY KEY, customer int, amount numeric, paid boolean NOT NULL);
INSERT INTO orders SELECT g, g % 50, g / 10.0, g % 4 <> 0 FROM generate_series(1, 5000) g;
CREATE MATERIALIZED VIEW by_customer WITH (mvinc.incremental = true) AS
  SELECT customer, sum(amount) AS total, count(*) AS n, avg(amount) AS mean, max(amount) AS top
    FROM orders WHERE paid GROUP BY customer;
CREATE MATERIALIZED VIEW big_orders WITH (mvinc.incremental = true) AS
  SELECT id, customer, amount FROM orders WHERE amount > 400;
CREATE TABLE events (id int PRIMARY KEY, kind int, v int) USING colfile;
INSERT INTO events SELECT g, g % 7, g FROM generate_series(1, 3000) g;
CREATE MATERIALIZED VIEW by_kind WITH (mvinc.incremental = true, mvinc.refresh_interval = '1 s') AS
  SELECT kind, count(*) AS n, sum(v) AS s FROM events GROUP BY kind;
CREATE TABLE users (id int PRIMARY KEY, level int);
INSERT INTO users SELECT g, 1 FROM generate_series(1, 100) g;
CREATE MATERIALIZED VIEW levels WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, level FROM users;
CREATE TABLE asked (id int PRIMARY KEY, x int);
SELECT mvinc.track('asked');
});
$node->safe_psql('old', 'UPDATE users SET level = 2 WHERE id <= 10');
$node->safe_psql('old', 'REFRESH MATERIALIZED VIEW levels');
# changes waiting at the update
$node->safe_psql('old', q{
INSERT INTO orders SELECT g, g % 60, g / 10.0, true FROM generate_series(5001, 5200) g;
UPDATE orders SET amount = amount + 1 WHERE id % 97 = 0;
DELETE FROM events WHERE id % 11 = 0;
UPDATE users SET level = 3 WHERE id = 1;
});

my $diff = q{SELECT (SELECT count(*) FROM ((TABLE by_customer EXCEPT ALL
    SELECT customer, sum(amount), count(*), avg(amount), max(amount) FROM orders WHERE paid GROUP BY customer)
  UNION ALL (SELECT customer, sum(amount), count(*), avg(amount), max(amount) FROM orders WHERE paid GROUP BY customer
    EXCEPT ALL TABLE by_customer)) d)
 + (SELECT count(*) FROM ((TABLE big_orders EXCEPT ALL SELECT id, customer, amount FROM orders WHERE amount > 400)
  UNION ALL (SELECT id, customer, amount FROM orders WHERE amount > 400 EXCEPT ALL TABLE big_orders)) d)
 + (SELECT count(*) FROM ((TABLE by_kind EXCEPT ALL SELECT kind, count(*), sum(v) FROM events GROUP BY kind)
  UNION ALL (SELECT kind, count(*), sum(v) FROM events GROUP BY kind EXCEPT ALL TABLE by_kind)) d)
 + (SELECT count(*) FROM ((SELECT id, level FROM levels WHERE valid_to = 'infinity' EXCEPT ALL TABLE users)
  UNION ALL (TABLE users EXCEPT ALL SELECT id, level FROM levels WHERE valid_to = 'infinity')) d)};

is($node->safe_psql('old', $diff), '0', 'under 0.1 with the new library, every view equals its query');

$node->safe_psql('old', 'ALTER EXTENSION mvinc UPDATE');
is($node->safe_psql('old', "SELECT extversion FROM pg_extension WHERE extname = 'mvinc'"),
	'0.2', 'ALTER EXTENSION mvinc UPDATE brings it to 0.2');

# The updated extension is a fresh 0.2 install: its members (less the
# per-object tables: change logs and view storage), their definitions,
# columns and privileges.
$node->safe_psql('fresh', 'CREATE EXTENSION mvinc');
my $members = q{
WITH m AS (
  SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
   WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'mvinc' AND d.deptype = 'e')
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT pg_describe_object(m.classid, m.objid, 0) || ' ' ||
         coalesce(CASE
           WHEN m.classid = 'pg_proc'::regclass THEN
             (SELECT pg_get_function_identity_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid)
                     || ' ' || p.provolatile::text || p.proparallel::text || p.prosecdef::text || ' ' || coalesce(p.proacl::text, '')
                     || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.oid = m.objid)
           WHEN m.classid = 'pg_class'::regclass THEN
             (SELECT c.relkind::text || ' ' || coalesce(c.relacl::text, '') || ' ' || coalesce(array_to_string(c.reloptions, ','), '')
                     || ' ' || coalesce(md5(pg_get_viewdef(c.oid)), '') || ' '
                     || coalesce((SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod)
                                                    || CASE WHEN a.attnotnull THEN '!' ELSE '' END
                                                    || coalesce('=' || pg_get_expr(ad.adbin, ad.adrelid), ''), ',' ORDER BY a.attnum)
                                    FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
                     || ' ' || coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), ';' ORDER BY 1)
                                           FROM pg_index i WHERE i.indrelid = c.oid), '')
                FROM pg_class c WHERE c.oid = m.objid)
           ELSE '' END, '') AS line
    FROM m) s
 WHERE line !~ '^table mvinc\.(changelog_|mv_|hv_)'};
my $fresh_members = $node->safe_psql('fresh', $members);
my $old_members = $node->safe_psql('old', $members);
is($old_members, $fresh_members, 'the updated extension has the objects of a fresh 0.2 install');
is($node->safe_psql('old', q{SELECT string_agg(evtname || ':' || evtevent || ':' || evtfoid::regproc, ',' ORDER BY evtname)
                               FROM pg_event_trigger}),
   $node->safe_psql('fresh', q{SELECT string_agg(evtname || ':' || evtevent || ':' || evtfoid::regproc, ',' ORDER BY evtname)
                                 FROM pg_event_trigger}),
   'and the same event triggers');

# Everything keeps working
is($node->safe_psql('old', $diff), '0', 'after the update every view equals its query');
$node->safe_psql('old', 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql('old', "SELECT mode FROM mvinc.refresh('by_customer')"), 'regroup', 'an aggregate view refreshes incrementally');
is($node->safe_psql('old', "SELECT mode FROM mvinc.refresh('big_orders')"), 'merge', 'a projection view too');
$node->safe_psql('old', 'REFRESH MATERIALIZED VIEW levels');
is($node->safe_psql('old', "SELECT last_changes > 0 FROM mvinc.history_views WHERE view = 'levels'::regclass"),
	't', 'a history view too');
ok($node->poll_query_until('old', "SELECT mvinc.read_path('by_kind') = 'fresh'"),
	'the scheduled view over a colfile table refreshes itself');
is($node->safe_psql('old', $diff), '0', 'every view equals its query after the refreshes');
is($node->safe_psql('old', "SELECT string_agg(level::text, ',' ORDER BY valid_from) FROM levels WHERE id = 1"),
	'1,2,3', 'the history view kept its versions and added the new one');
is($node->safe_psql('old', "SELECT count(*) FROM mvinc.colfile_check('events')"), '0', 'the colfile table is consistent');
is($node->safe_psql('old', 'SELECT count(*) FROM mvinc.refresh_progress'), '0', 'mvinc.refresh_progress is there');

# 0.2's rule on tracking: the last view of a source takes its tracking
# along, a source tracked by mvinc.track() stays
$node->safe_psql('old', 'DROP MATERIALIZED VIEW by_customer');
is($node->safe_psql('old', "SELECT count(*) FROM mvinc.tracked WHERE relid = 'orders'::regclass"), '1',
	'a source with a view left stays tracked');
$node->safe_psql('old', 'DROP MATERIALIZED VIEW big_orders');
is($node->safe_psql('old', "SELECT count(*) FROM mvinc.tracked WHERE relid = 'orders'::regclass"), '0',
	'its last view dropped, it is no longer tracked');
is($node->safe_psql('old', "SELECT requested FROM mvinc.tracked WHERE relid = 'asked'::regclass"), 't',
	'a source 0.1 tracked without a view counts as asked for');

$node->safe_psql('old', 'DROP EXTENSION mvinc CASCADE');
is($node->safe_psql('old', "SELECT count(*) FROM pg_namespace WHERE nspname = 'mvinc'"), '0',
	'the updated extension drops cleanly');

done_testing();
