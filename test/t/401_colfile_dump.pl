# colfile tables survive pg_dump and restore: rows, indexes, constraints,
# dropped and added columns, and the access method itself; the restored
# tables pass colfile_check.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MvincNode;

my $node = mvinc_node('colfile_dump');
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
SET mvinc.colfile_rows_per_group = 100;
CREATE TABLE parent (id int PRIMARY KEY, label text, v numeric, gone int) USING colfile;
INSERT INTO parent SELECT g, 'l' || g, g / 7.0, g FROM generate_series(1, 1000) g;
DELETE FROM parent WHERE id % 10 = 0;
UPDATE parent SET label = 'u' WHERE id % 7 = 0;
ALTER TABLE parent DROP COLUMN gone;
ALTER TABLE parent ADD COLUMN extra text DEFAULT 'x';
CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent) USING colfile;
INSERT INTO child SELECT g, g FROM generate_series(1, 99) g WHERE g % 10 <> 0;
CREATE INDEX parent_label ON parent (label);
});
my $before = $node->safe_psql('postgres',
	'SELECT md5(string_agg(p::text, \',\' ORDER BY id)) FROM parent p');
my $before_child = $node->safe_psql('postgres', 'SELECT count(*), sum(pid) FROM child');

my $dump = $node->basedir . '/colfile.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump of a database with colfile tables');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore into a new database');

is($node->safe_psql('restored',
	'SELECT md5(string_agg(p::text, \',\' ORDER BY id)) FROM parent p'),
	$before, 'parent rows are the same after restore');
is($node->safe_psql('restored', 'SELECT count(*), sum(pid) FROM child'),
	$before_child, 'child rows are the same after restore');
is($node->safe_psql('restored',
	q{SELECT string_agg(c.relname || ':' || a.amname, ',' ORDER BY c.relname)
	  FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname IN ('parent', 'child')}),
	'child:colfile,parent:colfile', 'restored tables use colfile');
is($node->safe_psql('restored',
	'SELECT count(*) FROM mvinc.colfile_check(\'parent\')') .
	$node->safe_psql('restored', 'SELECT count(*) FROM mvinc.colfile_check(\'child\')'),
	'00', 'colfile_check is clean after restore');
my ($ret, $out, $err) = $node->psql('restored', 'INSERT INTO child VALUES (5000, 10)');
like($err, qr/violates foreign key constraint/, 'foreign key restored');
is($node->safe_psql('restored',
	'SET enable_seqscan = off; SELECT count(*) FROM parent WHERE label = \'u\''),
	$node->safe_psql('postgres', 'SELECT count(*) FROM parent WHERE label = \'u\''),
	'restored index answers like the original');

$node->stop;
done_testing();
