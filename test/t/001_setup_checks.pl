# CREATE EXTENSION refuses a server that is not set up for mvinc, with an
# error naming the setting and the fix, and leaves nothing behind.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('setup', no_start => 1);

# Not preloaded.
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->start;
my ($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION mvinc');
isnt($ret, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($err, qr/must be loaded via "shared_preload_libraries"/, 'error names the setting');
like($err, qr/HINT:.*shared_preload_libraries/, 'hint gives the fix');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'mvinc'"),
	'0', 'nothing half-created');

# Preloaded, but wal_level is replica.
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'mvinc'\nwal_level = replica");
$node->restart;
($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION mvinc');
isnt($ret, 0, 'CREATE EXTENSION fails with wal_level = replica');
like($err, qr/requires "wal_level" to be "logical"/, 'error names wal_level');
like($err, qr/HINT:.*wal_level = logical/, 'hint gives the fix');

# Set up right: it works.
$node->append_conf('postgresql.conf', "wal_level = logical");
$node->restart;
($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION mvinc');
is($ret, 0, 'CREATE EXTENSION works once the server is set up') or diag $err;

$node->stop;
done_testing();
