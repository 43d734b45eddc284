# colfile under a long mixed workload stays bounded: a 40-column table and
# its heap twin get, round after round, small inserts, updates of a few
# columns on a twentieth of the rows, deletes, a rolled-back insert, an
# ADD COLUMN once, and a plain VACUUM every few rounds, with autovacuum on.
# Every row is updated about every 20 rounds, so without space reuse the
# main fork grows by the table's size every 20 rounds. Checked: the file
# at the end is within a bound of its size a third of the way in, both
# tables agree, colfile_check is clean; the sizes (and the VACUUM FULL
# size) are printed for the record.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $rounds = $ENV{MVINC_SPACE_ROUNDS} // 90;
my $node = mvinc_node('colfile_space_bounded', conf => q(
autovacuum_naptime = 1s
autovacuum_vacuum_cost_delay = 0
mvinc.colfile_rows_per_group = 10000
));

my $cols = join(', ', map { "c$_ int" } 1 .. 36);
$node->safe_psql('postgres', qq{
CREATE EXTENSION mvinc;
CREATE TABLE c (id int PRIMARY KEY, k int, note text, ts timestamptz, $cols) USING colfile;
CREATE TABLE h (id int PRIMARY KEY, k int, note text, ts timestamptz, $cols);
});
my $vals = join(', ', map { "g % ($_ + 7)" } 1 .. 36);
$node->safe_psql('postgres', qq{
INSERT INTO c SELECT g, g % 100, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 minute', $vals
FROM generate_series(1, 30000) g;
INSERT INTO h SELECT * FROM c;
});

my $next_id = 30001;
my %size;
for my $r (1 .. $rounds)
{
	my $m = $r % 20;
	my ($lo, $hi) = ($next_id, $next_id + 199);
	$next_id += 200;
	my $del_lo = ($r - 1) * 150 + 1;
	my $del_hi = $del_lo + 149;
	my $sql = qq{
BEGIN;
INSERT INTO c SELECT g, g % 100, md5(g::text), now(), $vals FROM generate_series($lo, $hi) g;
INSERT INTO h SELECT * FROM c WHERE id BETWEEN $lo AND $hi;
UPDATE c SET c1 = c1 + 1, c2 = c2 + $r, note = 'u$r' WHERE id % 20 = $m;
UPDATE h SET c1 = c1 + 1, c2 = c2 + $r, note = 'u$r' WHERE id % 20 = $m;
DELETE FROM c WHERE id BETWEEN $del_lo AND $del_hi;
DELETE FROM h WHERE id BETWEEN $del_lo AND $del_hi;
COMMIT;
BEGIN;
INSERT INTO c SELECT g, 0, 'rolled back', now(), $vals FROM generate_series(900001, 900300) g;
ROLLBACK;
};
	$sql .= "ALTER TABLE c ADD COLUMN extra int DEFAULT 7; ALTER TABLE h ADD COLUMN extra int DEFAULT 7;\n"
	  if $r == 10;
	$sql .= "VACUUM c;\n" if $r % 5 == 0;
	$node->safe_psql('postgres', $sql);
	$size{$r} = $node->safe_psql('postgres', q{SELECT pg_relation_size('c')})
	  if $r % 10 == 0;
}
note("main fork every 10 rounds: "
	  . join(', ', map { "$_: $size{$_}" } sort { $a <=> $b } keys %size));

my $third = int($rounds / 30) * 10;
ok($size{$rounds} <= 1.5 * $size{$third},
	"the file stays bounded ($size{$third} bytes after $third rounds, $size{$rounds} after $rounds)");

my $all = 'id, k, note, ts, ' . join(', ', map { "c$_" } 1 .. 36) . ', extra';
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM ((SELECT $all FROM c EXCEPT ALL SELECT $all FROM h)
	                      UNION ALL (SELECT $all FROM h EXCEPT ALL SELECT $all FROM c)) x}),
	'0', 'colfile and heap agree');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mvinc.colfile_check('c')}),
	'0', 'colfile_check is clean');

$node->safe_psql('postgres', 'VACUUM FULL c');
my $full = $node->safe_psql('postgres', q{SELECT pg_relation_size('c')});
note(sprintf('after VACUUM FULL: %d bytes (the file was %.1fx that)', $full,
		$size{$rounds} / $full));
my $heap = $node->safe_psql('postgres', q{SELECT pg_relation_size('h')});
note("heap twin: $heap bytes");

$node->stop;
done_testing();
