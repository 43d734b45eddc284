# test/lib.sh: shared set-up for test/run, test/demo and test/bench/run.
# Installs what is missing (as root, from Debian's archive), builds mvinc,
# installs it into a private copy of the PostgreSQL 15 installation (so
# several checkouts never overwrite each other's library), and starts or
# stops a throwaway cluster owned by a non-root user.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN_SYS=/usr/lib/postgresql/15/bin
PGXS_DIR=/usr/lib/postgresql/15/lib/pgxs
PORT=${MVINC_PORT:-54329}
WORK=${MVINC_WORK:-/tmp/mvinc-$PORT}
PGROOT=$WORK/pg                      # private installation (DESTDIR)
PGBIN=$PGROOT$PGBIN_SYS
DATA=$WORK/data
SOCK=$WORK/sock
RUN_AS=""

say() { printf '\n=== %s\n' "$*"; }

# Install Debian packages that are missing (needs root or sudo).
ensure_packages() {
	local need=()
	dpkg -s postgresql-15 >/dev/null 2>&1 || need+=(postgresql-15)
	dpkg -s postgresql-server-dev-15 >/dev/null 2>&1 || need+=(postgresql-server-dev-15)
	dpkg -s libzstd-dev >/dev/null 2>&1 || need+=(libzstd-dev)
	dpkg -s libipc-run-perl >/dev/null 2>&1 || need+=(libipc-run-perl)
	dpkg -s make >/dev/null 2>&1 || need+=(make)
	dpkg -s gcc >/dev/null 2>&1 || need+=(gcc)
	dpkg -s rsync >/dev/null 2>&1 || need+=(rsync)
	for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
	[ ${#need[@]} -eq 0 ] && return 0
	say "installing ${need[*]}"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
}

# Pick the user that owns the cluster: ourselves, or "postgres" when root.
choose_user() {
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || useradd --system --create-home postgres
		RUN_AS="runuser -u postgres --"
	fi
}

as_owner() { $RUN_AS env PATH="$PGBIN:$PATH" "$@"; }

# Build with assertions and install into the private copy of PostgreSQL.
build_and_install_private() {
	say "building mvinc"
	make -C "$REPO" -s -j"$(nproc)" MVINC_ASSERT="${MVINC_ASSERT:-1}" PG_CONFIG=$PGBIN_SYS/pg_config
	mkdir -p "$WORK"
	rm -rf "$PGROOT"
	mkdir -p "$PGROOT/usr/lib/postgresql" "$PGROOT/usr/share/postgresql"
	cp -a /usr/lib/postgresql/15 "$PGROOT/usr/lib/postgresql/"
	cp -a /usr/share/postgresql/15 "$PGROOT/usr/share/postgresql/"
	make -C "$REPO" -s install DESTDIR="$PGROOT" MVINC_ASSERT="${MVINC_ASSERT:-1}" PG_CONFIG=$PGBIN_SYS/pg_config >/dev/null
	chmod -R a+rX "$WORK"
}

# Build and install into the system's PostgreSQL 15 (for the demo).
build_and_install_system() {
	say "building and installing mvinc"
	make -C "$REPO" -s -j"$(nproc)" PG_CONFIG=$PGBIN_SYS/pg_config
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo make -C "$REPO" -s install PG_CONFIG=$PGBIN_SYS/pg_config >/dev/null
	PGBIN=$PGBIN_SYS
}

# Start a throwaway cluster with the settings mvinc needs.
start_cluster() {
	stop_cluster
	rm -rf "$DATA" "$SOCK"
	mkdir -p "$DATA" "$SOCK"
	[ -n "$RUN_AS" ] && chown -R postgres "$WORK"
	as_owner initdb -D "$DATA" -A trust -U postgres --no-sync -k >/dev/null
	cat >>"$DATA/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$SOCK'
listen_addresses = ''
wal_level = logical
shared_preload_libraries = 'mvinc'
max_replication_slots = 20
max_wal_senders = 10
max_worker_processes = 32
max_prepared_transactions = 10
fsync = off
synchronous_commit = off
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
# tests and benchmarks compare views with the queries they answer: those
# queries must not be answered by the views (rewrite tests turn it on)
mvinc.enable_rewrite = off
# a database's capture worker stops once nothing is tracked (default 10 s);
# a view created in a transaction block (isolation setups) while none runs
# would then rebuild at its first refresh: keep it between tests
# (test/t/104_capture_worker_economy.pl tests the stop)
mvinc.capture_idle_stop = '1h'
${MVINC_EXTRA_CONF:-}
CONF
	as_owner pg_ctl -D "$DATA" -l "$WORK/server.log" -w -t 60 start >/dev/null
	export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres
}

stop_cluster() {
	if [ -f "$DATA/postmaster.pid" ]; then
		as_owner pg_ctl -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
	fi
}
