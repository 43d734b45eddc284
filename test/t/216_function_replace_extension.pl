# An extension's update script replaces its functions with CREATE OR
# REPLACE FUNCTION: views calling them follow as after the statement typed
# by hand (an incremental view reads its query and refreshes in full, a
# history view refuses the update), though mvinc's hooks otherwise stand
# aside while an extension script runs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

# (the comparisons' queries over the source must not be answered by the view)
my $node = mvinc_node('funcext', conf => 'mvinc.enable_rewrite = off');
my $dir = $node->config_data('--sharedir') . '/extension';
PostgreSQL::Test::Utils::append_to_file("$dir/mvinc_tbuck.control",
	"default_version = '1.0'\nrelocatable = false\nschema = tbuck\n");
PostgreSQL::Test::Utils::append_to_file("$dir/mvinc_tbuck--1.0.sql",
	"CREATE FUNCTION tbuck.bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT \$1 % 3';\n");
PostgreSQL::Test::Utils::append_to_file("$dir/mvinc_tbuck--1.0--1.1.sql",
	"CREATE OR REPLACE FUNCTION tbuck.bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT \$1 % 5';\n");
PostgreSQL::Test::Utils::append_to_file("$dir/mvinc_tbuck--1.1--1.2.sql",
	"CREATE OR REPLACE FUNCTION tbuck.bucket(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT \$1 % 7';\n");

$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE SCHEMA tbuck;
CREATE EXTENSION mvinc_tbuck VERSION '1.0';
CREATE TABLE src (id int PRIMARY KEY, x int);
INSERT INTO src SELECT i, i FROM generate_series(1, 30) i;
CREATE MATERIALIZED VIEW v WITH (mvinc.incremental = true) AS
  SELECT tbuck.bucket(x) AS b, count(*) AS n FROM src GROUP BY 1;
SELECT mvinc.wait_for_capture();
});
my $diff = q{SELECT count(*) FROM ((TABLE v EXCEPT ALL SELECT tbuck.bucket(x), count(*) FROM src GROUP BY 1)
  UNION ALL (SELECT tbuck.bucket(x), count(*) FROM src GROUP BY 1 EXCEPT ALL TABLE v)) d};
is($node->safe_psql('postgres', "SELECT mvinc.read_path('v')"), 'fresh', 'fresh before the update');

$node->safe_psql('postgres', q{ALTER EXTENSION mvinc_tbuck UPDATE TO '1.1'});
is($node->safe_psql('postgres', "SELECT mvinc.read_path('v')"), 'live',
	'the update script replaced the function: the view reads its query');
is($node->safe_psql('postgres', $diff), '0', 'and answers with the new body');
is($node->safe_psql('postgres', "SELECT mode FROM mvinc.refresh('v')"), 'full', 'its next refresh is full');
is($node->safe_psql('postgres', $diff), '0', 'after which the storage has the new groups');

# a history view calling it refuses the update, which changes nothing
$node->safe_psql('postgres', q{
CREATE MATERIALIZED VIEW h WITH (mvinc.history = true, mvinc.key = 'id') AS
  SELECT id, tbuck.bucket(x) AS b FROM src;
});
my ($ret, $out, $err) = $node->psql('postgres', q{ALTER EXTENSION mvinc_tbuck UPDATE TO '1.2'});
isnt($ret, 0, 'the update is refused under a history view');
like($err, qr/history view "h" uses it/, 'naming the view');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'mvinc_tbuck'"),
	'1.1', 'the extension stays as it was');

$node->stop;
done_testing();
