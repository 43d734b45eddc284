# MvincNode: a PostgreSQL::Test::Cluster set up as mvinc needs
# (wal_level = logical, mvinc preloaded), shared by the TAP tests.
package MvincNode;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use Exporter 'import';

our @EXPORT = qw(mvinc_node mvinc_wait_for);

# Create and start a node; extra postgresql.conf lines may be passed.
sub mvinc_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', qq(
shared_preload_libraries = 'mvinc'
max_replication_slots = 20
max_worker_processes = 32
max_prepared_transactions = 10
# tests that want background compaction turn it on in their conf
mvinc.background_compact_fraction = 0
));
	$node->append_conf('postgresql.conf', $opts{conf}) if $opts{conf};
	$node->start unless $opts{no_start};
	return $node;
}

# Poll until a query in database $db returns $want; false after $seconds
# (default 15).
sub mvinc_wait_for
{
	my ($node, $db, $sql, $want, $seconds) = @_;
	for (1 .. ($seconds // 15) * 10)
	{
		return 1 if $node->safe_psql($db, $sql) eq $want;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

1;
