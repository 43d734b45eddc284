# Reads of incremental views checked against their defining queries while
# writers, refreshes, compactions, reclusters and change-log retention run (the
# read-path issue's differential test).  Checkers compare each view with
# its query in one snapshot (whole, and for a few group keys: key
# conditions go into the hybrid delta): one statement at READ COMMITTED, twice in one
# transaction (before and after other commits) at REPEATABLE READ and
# SERIALIZABLE, and with mvinc.read_path = live.  Writers insert (so that
# reads take the hybrid path), update, delete, roll back and use
# subtransactions.  Any difference is logged and fails the test; every
# path must have been taken.  MVINC_READ_DIFF_SECONDS sets the length
# (default 40).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $seconds = $ENV{MVINC_READ_DIFF_SECONDS} || 40;

my $node = mvinc_node('readdiff', conf => q{
mvinc.retention_interval = 500
mvinc.background_compact_fraction = 0.05
# a recluster holds the view's refresh lock while its swap waits for
# readers; steady readers can make that wait long: bound it (the loop
# tries again)
mvinc.recluster_swap_timeout = 4000
autovacuum_naptime = 1
log_min_messages = warning
});
$node->safe_psql('postgres', q{
CREATE EXTENSION mvinc;
CREATE TABLE ins (id bigserial PRIMARY KEY, g int NOT NULL, v numeric NOT NULL, f boolean NOT NULL);
INSERT INTO ins (g, v, f) SELECT i % 40, i / 7.0, i % 5 <> 0 FROM generate_series(1, 4000) i;
CREATE TABLE mix (id int PRIMARY KEY, g int, v int NOT NULL, f boolean NOT NULL);
INSERT INTO mix SELECT i, nullif(i % 30, 7), i, i % 3 <> 0 FROM generate_series(1, 3000) i;
CREATE MATERIALIZED VIEW ins_g WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS lo, max(v) AS hi
  FROM ins WHERE f GROUP BY g;
CREATE MATERIALIZED VIEW ins_t WITH (mvinc.incremental = true) AS
  SELECT count(*) AS n, sum(v) AS s FROM ins;
CREATE MATERIALIZED VIEW mix_g WITH (mvinc.incremental = true) AS
  SELECT g, count(*) AS n, sum(v) AS s, max(v) AS hi FROM mix GROUP BY g;
CREATE MATERIALIZED VIEW mix_p WITH (mvinc.incremental = true, mvinc.cluster_by = 'g') AS
  SELECT id, g, v FROM mix WHERE f;
CREATE TABLE seen (level text, view text, path text);
CREATE TABLE reclustered (view text, rows bigint);

-- Compare every view with its query in one snapshot per view; log any
-- difference, and record the path each comparison took.
CREATE FUNCTION rd_check(level text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v regclass;
  q text;
  p text;
  d bigint;
BEGIN
  FOREACH v IN ARRAY ARRAY['ins_g', 'ins_t', 'mix_g', 'mix_p']::regclass[] LOOP
    q := rtrim(pg_get_viewdef(v), ';');
    EXECUTE format('SELECT mvinc.read_path(%L), count(*) FROM ((TABLE %s EXCEPT ALL (%s)) '
                   'UNION ALL ((%s) EXCEPT ALL TABLE %s)) x', v, v, q, q, v) INTO p, d;
    IF d <> 0 THEN
      RAISE WARNING 'MVINC-MISMATCH view % level % path % rows %', v, level, p, d;
    END IF;
    INSERT INTO seen VALUES (level, v::text, p);
  END LOOP;
  -- reads that keep a few groups (their key conditions go into the delta)
  FOREACH v IN ARRAY ARRAY['ins_g', 'mix_g']::regclass[] LOOP
    q := rtrim(pg_get_viewdef(v), ';');
    EXECUTE format('SELECT mvinc.read_path(%L), count(*) FROM '
                   '((SELECT * FROM %s WHERE g IN ($1, $1 + 1) EXCEPT ALL SELECT * FROM (%s) d WHERE g IN ($1, $1 + 1)) '
                   'UNION ALL (SELECT * FROM (%s) d WHERE g = $1 EXCEPT ALL SELECT * FROM %s WHERE g = $1)) x',
                   v, v, q, q, v) INTO p, d USING (random() * 47)::int;
    IF d <> 0 THEN
      RAISE WARNING 'MVINC-MISMATCH view % keyed level % path % rows %', v, level, p, d;
    END IF;
    INSERT INTO seen VALUES (level, v::text || ' keyed', p);
  END LOOP;
END $$;
});
ok(1, 'set up');

my $connstr = "-h '" . $node->host . "' -p " . $node->port . " -d postgres";
my $refresher = IPC::Run::start(
	[ 'bash', '-c',
	  "end=\$((SECONDS + $seconds)); i=0; while [ \$SECONDS -lt \$end ]; do i=\$((i+1)); "
	  . "psql -X -q $connstr -c \"SELECT mvinc.refresh(v) FROM unnest(ARRAY['ins_g','ins_t','mix_g','mix_p']::regclass[]) v\" >/dev/null 2>&1; "
	  . "if [ \$((i % 3)) = 0 ]; then psql -X -q $connstr -c \"SELECT mvinc.compact('ins_g'), mvinc.compact('mix_g')\" >/dev/null 2>&1; fi; "
	  . "sleep 0.7; done" ]);
# reclusters in a loop of their own: a swap may wait long for steady
# readers (up to mvinc.recluster_swap_timeout), which must not hold up the
# refreshes (the fresh path needs them)
my $recluster = IPC::Run::start(
	[ 'bash', '-c',
	  "end=\$((SECONDS + $seconds)); while [ \$SECONDS -lt \$end ]; do sleep 2; "
	  . "psql -X -q $connstr -c \"INSERT INTO reclustered SELECT 'ins_g', mvinc.recluster('ins_g')\" "
	  . "-c \"INSERT INTO reclustered SELECT 'mix_p', mvinc.recluster('mix_p')\" "
	  . "-c \"INSERT INTO reclustered SELECT 'mix_g', mvinc.recluster('mix_g')\" >/dev/null 2>&1; "
	  . "done" ]);

$node->pgbench(
	"-n -c 6 -j 2 -T $seconds --max-tries=20",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'writers and checkers',
	{
		'ins_writer@6' => q{
\set n random(1, 20)
\set g random(0, 45)
BEGIN;
INSERT INTO ins (g, v, f) SELECT (:g + i) % 47, random() * 1000, random() < 0.8 FROM generate_series(1, :n) i;
SAVEPOINT s;
INSERT INTO ins (g, v, f) VALUES (:g, 1, true);
ROLLBACK TO s;
COMMIT;
},
		'ins_abort@1' => q{
BEGIN;
INSERT INTO ins (g, v, f) VALUES (99, 99, true);
ROLLBACK;
},
		'mix_writer@3' => q{
\set k random(1, 3500)
\set g random(0, 35)
BEGIN;
UPDATE mix SET v = v + 1, f = NOT f WHERE id = :k;
INSERT INTO mix VALUES (:k + 3500, :g, :k, true) ON CONFLICT (id) DO UPDATE SET g = excluded.g, v = mix.v - 1;
DELETE FROM mix WHERE id = :k + 1;
COMMIT;
},
		'rc_check@2' => q{
SELECT rd_check('read committed');
},
		'rr_check@2' => q{
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rd_check('repeatable read');
SELECT pg_sleep(0.05);
SELECT rd_check('repeatable read');
COMMIT;
},
		'ser_check@1' => q{
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT rd_check('serializable');
SELECT pg_sleep(0.05);
SELECT rd_check('serializable');
COMMIT;
},
		'live_check@1' => q{
BEGIN;
SET LOCAL mvinc.read_path = live;
SELECT rd_check('live forced');
COMMIT;
},
	});
$refresher->finish;
$recluster->finish;

my $log = slurp_file($node->logfile);
# the warnings themselves, not the function's text in logged statements
my @mismatches = ($log =~ /WARNING:\s+(MVINC-MISMATCH view [^%\s][^\n]*)/g);
is(scalar(@mismatches), 0, 'every read equals the defining query in the same snapshot')
  or diag(join("\n", @mismatches[0 .. ($#mismatches < 9 ? $#mismatches : 9)]));

my $paths = $node->safe_psql('postgres',
	q{SELECT string_agg(path || '=' || n, ' ' ORDER BY path) FROM
	  (SELECT path, count(*) AS n FROM seen GROUP BY path) s});
note("paths taken: $paths");
for my $p (qw(fresh hybrid live))
{
	like($paths, qr/\b$p=\d+/, "the $p path was taken");
}
is($node->safe_psql('postgres',
	q{SELECT count(DISTINCT level) FROM seen}), '4', 'every isolation level checked');
is($node->safe_psql('postgres',
	q{SELECT count(DISTINCT view) FROM reclustered}), '3', 'three views (one with NULL keys) were reclustered during the run');
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM seen WHERE level = 'live forced' AND path <> 'live'}), '0',
	'mvinc.read_path = live reads live');

# Quiet now: after a refresh every view is stored right
$node->safe_psql('postgres', q{SELECT mvinc.wait_for_capture()});
for my $v (qw(ins_g ins_t mix_g mix_p))
{
	$node->safe_psql('postgres', "SELECT mvinc.refresh('$v')");
	is($node->safe_psql('postgres', "SELECT count(*) FROM mvinc.verify_view('$v')"),
		'0', "$v verifies after the run");
}

$node->stop;
done_testing();
