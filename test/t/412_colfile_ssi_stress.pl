# colfile under SERIALIZABLE with concurrent clients: pgbench runs
# transactions whose invariants write skew would break, retrying
# serialization failures (pgbench --max-tries), first on colfile tables,
# then the same scripts on heap tables (a twin database on the same node):
#  - doctors on call: a doctor goes off call only if both of the group's
#    two doctors are on call (a read of the group), others go back on call;
#    no group may end with nobody on call;
#  - transfers: money leaves a customer's account only if the customer's
#    two accounts together hold the amount (a read of their sum), and goes
#    to another customer's account; no customer may go below zero, and no
#    money is created or lost;
#  - audits: a read-only transaction checks both invariants over the whole
#    tables within its snapshot (a division by zero if not, which pgbench
#    does not retry: the run fails).
# Every write is made again in a heap mirror table in the same transaction:
# the colfile tables must end equal to their mirrors, their indexes must
# agree with their scans and mvinc.colfile_check must find nothing.
# The share of tries that ended in a serialization failure is printed for
# colfile and heap (information only: colfile's predicate locks are
# compared with heap's by test/specs/colfile_ssi_precision.spec).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MvincNode;

my $groups = 20;        # doctors: two per group
my $customers = 20;     # accounts: two per customer, 50 in each
my $seconds = $ENV{MVINC_SSI_STRESS_SECONDS} // 10;    # per table AM
# optional: the same transaction rate (pgbench -R) on both table AMs
my @rate = $ENV{MVINC_SSI_STRESS_RATE} ? ('-R', $ENV{MVINC_SSI_STRESS_RATE}) : ();

my $node = mvinc_node('colfile_ssi_stress');

for my $am ('colfile', 'heap')
{
	$node->safe_psql('postgres', "CREATE DATABASE ssi_$am");
	$node->safe_psql("ssi_$am", qq{
CREATE EXTENSION mvinc;
CREATE TABLE doc (grp int, id int, on_call bool NOT NULL, PRIMARY KEY (grp, id)) USING $am;
CREATE TABLE doc_m (grp int, id int, on_call bool NOT NULL, PRIMARY KEY (grp, id)) USING heap;
INSERT INTO doc SELECT g, i, true FROM generate_series(1, $groups) g, generate_series(1, 2) i;
INSERT INTO doc_m SELECT * FROM doc;
CREATE TABLE acct (id int PRIMARY KEY, cust int NOT NULL, bal int NOT NULL) USING $am;
CREATE INDEX ON acct (cust);
CREATE TABLE acct_m (id int PRIMARY KEY, cust int NOT NULL, bal int NOT NULL) USING heap;
INSERT INTO acct SELECT 2 * c + k, c, 50 FROM generate_series(1, $customers) c, generate_series(0, 1) k;
INSERT INTO acct_m SELECT * FROM acct;
ANALYZE;
});
}

my $total = 100 * $customers;
my %scripts = (
	'off@4' => qq{
\\set g random(1, $groups)
\\set i random(1, 2)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) AS n FROM doc WHERE grp = :g AND on_call \\gset
\\if :n >= 2
UPDATE doc SET on_call = false WHERE grp = :g AND id = :i;
UPDATE doc_m SET on_call = false WHERE grp = :g AND id = :i;
\\endif
END;
},
	'on@2' => qq{
\\set g random(1, $groups)
\\set i random(1, 2)
BEGIN ISOLATION LEVEL SERIALIZABLE;
UPDATE doc SET on_call = true WHERE grp = :g AND id = :i;
UPDATE doc_m SET on_call = true WHERE grp = :g AND id = :i;
END;
},
	'transfer@4' => qq{
\\set c random(1, $customers)
\\set d 1 + (:c + random(0, $customers - 2)) % $customers
\\set src 2 * :c + random(0, 1)
\\set dst 2 * :d + random(0, 1)
\\set amt random(1, 60)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sum(bal) AS s FROM acct WHERE cust = :c \\gset
\\if :s >= :amt
UPDATE acct SET bal = bal + CASE WHEN id = :src THEN -:amt ELSE :amt END WHERE id IN (:src, :dst);
UPDATE acct_m SET bal = bal + CASE WHEN id = :src THEN -:amt ELSE :amt END WHERE id IN (:src, :dst);
\\endif
END;
},
	'audit@1' => qq{
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY;
SELECT 1 / (count(*) = 0)::int AS nobody_on_call_in_no_group
  FROM (SELECT grp FROM doc GROUP BY grp HAVING NOT bool_or(on_call)) s;
SELECT 1 / (sum(s) = $total AND min(s) >= 0)::int AS money_kept
  FROM (SELECT cust, sum(bal) AS s FROM acct GROUP BY cust) s;
END;
},
);
my @files;
for my $name (sort keys %scripts)
{
	(my $file = $node->basedir . "/$name") =~ s/\@\d+$//;
	PostgreSQL::Test::Utils::append_to_file($file, $scripts{$name});
	push @files, '-f', $node->basedir . "/$name";
}

# Reads through the indexes, on both table AMs (the reads of one group or
# customer then lock rows, not the table).
my $options = '-c enable_seqscan=off -c enable_bitmapscan=off';
for my $am ('colfile', 'heap')
{
	local $ENV{PGOPTIONS} = $options;
	my $plan = $node->safe_psql("ssi_$am",
		q{EXPLAIN (COSTS OFF) SELECT count(*) FROM doc WHERE grp = 1 AND on_call;
		  EXPLAIN (COSTS OFF) SELECT sum(bal) FROM acct WHERE cust = 1});
	note("$am plans of the checking reads:\n$plan");
}

my %rate;
for my $am ('colfile', 'heap')
{
	my $db = "ssi_$am";
	my ($out, $err) = ('', '');
	my @cmd = ('pgbench', '-n', '-c', 4, '-j', 2, '-T', $seconds,
		'--max-tries=1000', '--failures-detailed', @rate,
		'-h', $node->host, '-p', $node->port, @files, $db);
	my $ok;
	{
		local $ENV{PGOPTIONS} = $options;
		$ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	}
	note("pgbench on $am:\n$out$err");
	ok($ok, "$am: pgbench ran without an aborted client");
	unlike($err, qr/aborted|division by zero/, "$am: no audit saw a broken invariant");
	my ($processed) = $out =~ /number of transactions actually processed: (\d+)/;
	my ($failed) = $out =~ /number of failed transactions: (\d+)/;
	my ($retries) = $out =~ /total number of retries: (\d+)/;
	$failed //= 0;
	$retries //= 0;
	cmp_ok($processed // 0, '>', 0, "$am: transactions were processed");
	is($failed, 0, "$am: no transaction failed past its retries");
	my ($tps) = $out =~ /tps = ([0-9.]+)/;
	my $tries = ($processed // 0) + $failed + $retries;
	$rate{$am} = sprintf('%.1f%% of %d tries (%d transactions, %.0f tps)',
		$tries ? 100 * $retries / $tries : 0, $tries, $processed // 0, $tps // 0);

	# the invariants
	is($node->safe_psql($db,
			'SELECT count(*) FROM (SELECT grp FROM doc GROUP BY grp HAVING NOT bool_or(on_call)) s'),
		'0', "$am: every group has a doctor on call");
	is($node->safe_psql($db,
			'SELECT count(*), count(DISTINCT (grp, id)) FROM doc'),
		2 * $groups . '|' . 2 * $groups, "$am: doctors neither lost nor duplicated");
	is($node->safe_psql($db,
			'SELECT sum(bal), count(*), count(DISTINCT id) FROM acct'),
		"$total|" . 2 * $customers . '|' . 2 * $customers,
		"$am: no money created or lost, no account lost or duplicated");
	is($node->safe_psql($db,
			'SELECT count(*) FROM (SELECT cust FROM acct GROUP BY cust HAVING sum(bal) < 0) s'),
		'0', "$am: no customer below zero");

	# the tables equal their heap mirrors, through scans and through indexes
	is($node->safe_psql($db, q{
SELECT (SELECT count(*) FROM (SELECT * FROM doc EXCEPT SELECT * FROM doc_m) s)
     + (SELECT count(*) FROM (SELECT * FROM doc_m EXCEPT SELECT * FROM doc) s)
     + (SELECT count(*) FROM (SELECT * FROM acct EXCEPT SELECT * FROM acct_m) s)
     + (SELECT count(*) FROM (SELECT * FROM acct_m EXCEPT SELECT * FROM acct) s)}),
		'0', "$am: the tables equal their heap mirrors");
	is($node->safe_psql($db, q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT string_agg(grp || '.' || id || ':' || on_call, ' ' ORDER BY grp, id) FROM doc WHERE grp > 0)
     = (SELECT string_agg(grp || '.' || id || ':' || on_call, ' ' ORDER BY grp, id) FROM doc_m),
       (SELECT string_agg(id || ':' || bal, ' ' ORDER BY id) FROM acct WHERE id > 0)
     = (SELECT string_agg(id || ':' || bal, ' ' ORDER BY id) FROM acct_m),
       (SELECT string_agg(id || ':' || bal, ' ' ORDER BY id) FROM acct WHERE cust > 0)
     = (SELECT string_agg(id || ':' || bal, ' ' ORDER BY id) FROM acct_m)}),
		't|t|t', "$am: the indexes agree with the mirrors");
	if ($am eq 'colfile')
	{
		is($node->safe_psql($db, q{
SELECT count(*) FROM (SELECT * FROM mvinc.colfile_check('doc')
                      UNION ALL SELECT * FROM mvinc.colfile_check('acct')) s}),
			'0', 'colfile_check is clean');
	}
}

# information: how often a try ended in a serialization failure (the runs
# are as long, not as fast: a slower table AM's transactions overlap more)
diag("serialization failures (retried tries / all tries), colfile: $rate{colfile}; heap: $rate{heap}");

$node->stop;
done_testing();
