# History refreshes while writers commit (hist_direct.c judges each
# change-log row's transaction itself): transactions that commit around a
# refresh's snapshot are applied by exactly one refresh, never twice and
# never lost, whether the refresh looks its keys up one by one or walks
# the key index.  A view refreshed continuously among the writers (some
# holding their transactions open, some changing many keys, some keys)
# must end with the same versions, key by key, as a view of the same
# query refreshed once at the end; both equal the source and pass
# mvinc.history_check.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $seconds = $ENV{MVINC_HISTORY_WRITERS_SECONDS} // 15;
my $node = mvinc_node('history_writers');

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE src (id int PRIMARY KEY, v int NOT NULL, w text);
INSERT INTO src SELECT i, 0, 'w' FROM generate_series(1, 3000) i;
CREATE MATERIALIZED VIEW h_live WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, v, w FROM src WHERE v % 7 <> 3;
CREATE MATERIALIZED VIEW h_once WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, v, w FROM src WHERE v % 7 <> 3;
});

$node->pgbench(
	"-n -c 6 -j 3 -T $seconds --max-tries=50",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'writers and refreshes',
	{
		'short@20' => q{
\set id random(1, 3000)
\set r random(1, 100)
BEGIN;
UPDATE src SET v = v + 1 WHERE id = :id;
DELETE FROM src WHERE id = :id % 3000 + 1 AND :r < 30;
INSERT INTO src VALUES (:id % 3000 + 1, :r, NULL) ON CONFLICT (id) DO UPDATE SET w = 'u' || :r;
END;
},
		'long@2' => q{
\set id random(1, 3000)
BEGIN;
UPDATE src SET v = v + 2, w = 'long' WHERE id = :id;
SELECT pg_sleep(random() * 0.3);
UPDATE src SET v = v + 1 WHERE id = :id;
END;
},
		'bulk@3' => q{
\set m random(0, 49)
UPDATE src SET v = v + 1 WHERE id % 50 = :m;
},
		'key@2' => q{
\set id random(1, 3000)
BEGIN;
UPDATE src SET id = id + 3000 WHERE id = :id;
UPDATE src SET v = v + 5 WHERE id = :id + 3000;
UPDATE src SET id = id - 3000 WHERE id = :id + 3000;
END;
},
		'refresh@1' => q{
REFRESH MATERIALIZED VIEW h_live;
},
	});

$node->safe_psql('postgres', q{
SELECT mvinc.wait_for_capture();
REFRESH MATERIALIZED VIEW h_live;
REFRESH MATERIALIZED VIEW h_once;
});

for my $v ('h_live', 'h_once')
{
	is($node->safe_psql('postgres', qq{
SELECT count(*) FROM (
  (SELECT id, v, w FROM $v WHERE valid_to = 'infinity' EXCEPT ALL SELECT id, v, w FROM src WHERE v % 7 <> 3)
  UNION ALL
  (SELECT id, v, w FROM src WHERE v % 7 <> 3 EXCEPT ALL SELECT id, v, w FROM $v WHERE valid_to = 'infinity')) d}),
		'0', "$v: current versions equal the source");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.history_check('$v')"),
		'0', "$v: history_check finds nothing");
}
# (the first versions start at each view's creation: compared by values)
is($node->safe_psql('postgres', q{
WITH l AS (SELECT id, array_agg(ROW(v, w)::text ORDER BY valid_from) AS s FROM h_live GROUP BY id),
     o AS (SELECT id, array_agg(ROW(v, w)::text ORDER BY valid_from) AS s FROM h_once GROUP BY id)
SELECT count(*) FROM l FULL JOIN o USING (id) WHERE l.s IS DISTINCT FROM o.s}),
	'0', 'the continuously refreshed view holds the versions of the one refreshed once');
ok($node->safe_psql('postgres',
	"SELECT count(*) FILTER (WHERE valid_to < 'infinity') > 1000 FROM h_live") eq 't',
	'the writers made history');

$node->stop;
done_testing();
