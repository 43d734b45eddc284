# Incremental views over a colfile source, read while colfile writers run:
# pgbench runs writers (inserts, in-place updates of v and g, which keep
# the row's TID, updates of id, which move the row, deletes, rollbacks;
# at READ COMMITTED and SERIALIZABLE), refreshes (some leaving append
# rows) and readers at READ COMMITTED, REPEATABLE READ and SERIALIZABLE,
# one of them a role with SELECT on the views alone. Each reader compares
# every view with its defining query in one statement (one snapshot; the
# query through a STABLE function, which takes no snapshot of its own, and
# SECURITY DEFINER for the role that may not read the source) and divides
# by zero on a difference, which pgbench does not retry: a wrong answer
# aborts the run. Serialization failures are retried. At the end: the
# views equal their queries, mvinc.verify_view and mvinc.colfile_check
# find nothing, and reads took the hybrid path (the others are shown).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_READ_DIFF_SECONDS} // 20;
my $node = mvinc_node('mv_colfile_read_differential');
my $db = 'postgres';

$node->safe_psql($db, q{
CREATE EXTENSION mvinc;
CREATE ROLE rd LOGIN;
CREATE SEQUENCE ids START 100001;
GRANT USAGE ON SEQUENCE ids TO PUBLIC;
CREATE TABLE src (id int PRIMARY KEY, g int NOT NULL, v int NOT NULL, pad text) USING colfile;
INSERT INTO src SELECT i, i % 20, i % 97, md5(i::text) FROM generate_series(1, 2000) i;
});
# (each view in a transaction of its own: one created where the source
# was just written would wait for its first refresh)
$node->safe_psql($db, q{
CREATE MATERIALIZED VIEW va WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM src GROUP BY g;
});
$node->safe_psql($db, q{
CREATE MATERIALIZED VIEW vp WITH (mvinc.incremental = true) AS
  SELECT id, g, v FROM src WHERE g % 3 <> 0;
});
$node->safe_psql($db, q{
GRANT SELECT ON va, vp TO rd;
CREATE FUNCTION q_va() RETURNS TABLE (g int, n bigint, s bigint, lo int, hi int)
  LANGUAGE sql STABLE SECURITY DEFINER
  AS $$ SELECT g, count(*), sum(v), min(v), max(v) FROM src GROUP BY g $$;
CREATE FUNCTION q_vp() RETURNS TABLE (id int, g int, v int)
  LANGUAGE sql STABLE SECURITY DEFINER
  AS $$ SELECT id, g, v FROM src WHERE g % 3 <> 0 $$;
GRANT EXECUTE ON FUNCTION q_va(), q_vp() TO rd;
-- the number of rows that differ, in the calling statement's snapshot
CREATE VIEW diffs AS
  SELECT (SELECT count(*) FROM ((TABLE va EXCEPT ALL SELECT * FROM q_va())
                                UNION ALL (SELECT * FROM q_va() EXCEPT ALL TABLE va)) d) AS va,
         (SELECT count(*) FROM ((TABLE vp EXCEPT ALL SELECT * FROM q_vp())
                                UNION ALL (SELECT * FROM q_vp() EXCEPT ALL TABLE vp)) d) AS vp;
GRANT SELECT ON diffs TO rd;
});

# a wrong answer: division by zero (not retried by pgbench)
my $check = 'SELECT 1 / (va + vp = 0)::int AS view_equals_query FROM diffs;';
my $write = q{
\set op random(1, 6)
\set id random(1, 2600)
\set d random(-3, 3)
\if :op = 1
INSERT INTO src VALUES (nextval('ids'), :id % 20, :id % 89, 'new');
\elif :op = 2
UPDATE src SET v = v + :d WHERE id = :id;
\elif :op = 3
UPDATE src SET g = (g + 1) % 20 WHERE id = :id;
\elif :op = 4
UPDATE src SET id = nextval('ids') WHERE id = :id;
\elif :op = 5
DELETE FROM src WHERE id = :id;
\else
UPDATE src SET v = v + 1, g = (g + :d + 20) % 20 WHERE id BETWEEN :id AND :id + 5;
\endif
};
my %scripts = (
	'write_rc@6' => qq{
\\set r random(1, 10)
BEGIN;
$write
$write
\\if :r = 1
ROLLBACK;
\\else
COMMIT;
\\endif
},
	'write_ser@2' => qq{
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT n FROM va WHERE g = 3;
$write
COMMIT;
},
	'refresh@1' => q{
\set r random(1, 4)
SELECT mode FROM mvinc.refresh('vp');
\if :r = 1
SET mvinc.compact_fraction = 1000;
\else
SET mvinc.compact_fraction = 1;
\endif
SELECT mode FROM mvinc.refresh('va');
\sleep 50 ms
},
	'read_rc@2' => qq{
$check
SELECT sum(n) FROM va WHERE g IN (1, 2);
$check
},
	'read_rr@2' => qq{
BEGIN ISOLATION LEVEL REPEATABLE READ;
$check
\\sleep 20 ms
$check
COMMIT;
},
	'read_ser@2' => qq{
BEGIN ISOLATION LEVEL SERIALIZABLE;
$check
\\sleep 20 ms
$check
COMMIT;
},
	'read_role@2' => qq{
\\set r random(1, 3)
\\if :r = 1
BEGIN ISOLATION LEVEL SERIALIZABLE;
\\elif :r = 2
BEGIN ISOLATION LEVEL REPEATABLE READ;
\\else
BEGIN;
\\endif
SET LOCAL ROLE rd;
$check
SELECT 1 / (count(*) = 0)::int AS reader_may_not_read_source
  FROM (SELECT 1 WHERE has_table_privilege('src', 'SELECT')) s;
$check
COMMIT;
},
);
my @files;
for my $name (sort keys %scripts)
{
	(my $file = $node->basedir . "/$name") =~ s/\@\d+$//;
	PostgreSQL::Test::Utils::append_to_file($file, $scripts{$name});
	push @files, '-f', $node->basedir . "/$name";
}

my ($out, $err) = ('', '');
my @cmd = ('pgbench', '-n', '-c', 6, '-j', 2, '-T', $seconds,
	'--max-tries=1000', '--failures-detailed',
	'-h', $node->host, '-p', $node->port, @files, $db);
my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
note("pgbench:\n$out$err");
ok($ok, 'pgbench ran without an aborted client');
unlike($err, qr/aborted|division by zero/, 'every read of a view equaled its query in its snapshot');
my ($processed) = $out =~ /number of transactions actually processed: (\d+)/;
my ($failed) = $out =~ /number of failed transactions: (\d+)/;
cmp_ok($processed // 0, '>', 0, 'transactions were processed');
is($failed // 0, 0, 'no transaction failed past its retries');

# the views equal their queries, before and after a last refresh
$node->safe_psql($db, 'SELECT mvinc.wait_for_capture()');
is($node->safe_psql($db, 'SELECT va, vp FROM diffs'), '0|0', 'views equal their queries (pending changes read)');
my $paths = $node->safe_psql($db, q{
SELECT string_agg(format('%s: fresh %s, merge %s, hybrid %s, live %s', view, reads_fresh, reads_merge,
                         reads_hybrid, reads_live), '; ' ORDER BY view::text)
  FROM mvinc.views WHERE view IN ('va'::regclass, 'vp'::regclass)});
diag("reads per path: $paths");
is($node->safe_psql($db, q{
SELECT bool_and(reads_hybrid > 0) FROM mvinc.views WHERE view IN ('va'::regclass, 'vp'::regclass)}),
	't', 'reads of both views took the hybrid path');
is($node->safe_psql($db, q{
SELECT count(*) FROM (SELECT * FROM mvinc.verify_view('va') UNION ALL SELECT * FROM mvinc.verify_view('vp')) f}),
	'0', 'verify_view finds nothing');
$node->safe_psql($db, q{SELECT mvinc.refresh('va'); SELECT mvinc.refresh('vp');});
is($node->safe_psql($db, 'SELECT va, vp FROM diffs'), '0|0', 'views equal their queries after a refresh');
is($node->safe_psql($db, 'SELECT count(*) FROM mvinc.colfile_check(\'src\')'), '0', 'colfile_check is clean');

$node->stop;
done_testing();
