# mvinc: incremental materialized views, history views and the colfile table AM.
# Variables only; the rules live in pgxs.mk.

EXTENSION    = mvinc
MODULE_big   = mvinc
EXTVERSION   = 0.2

# Every C file under src/ is part of the library; subsystems own their folder.
OBJS         = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))

# The install script is assembled from one part per subsystem
# (sql/$(EXTVERSION)/*.sql).  Earlier versions' scripts are kept as they
# were released, with an upgrade script from each to the next.
DATA_built   = sql/mvinc--$(EXTVERSION).sql
DATA         = sql/mvinc--0.1.sql $(sort $(wildcard sql/mvinc--*--*.sql))

PG_CPPFLAGS  = -I$(srcdir)/src
PG_CFLAGS    = -Wall -Werror -Wno-missing-braces
SHLIB_LINK   = -lzstd

# pg_regress: inputs in test/sql, expected output in ./expected (checked first).
REGRESS      = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=mvinc --dbname=contrib_regression
ISOLATION    = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=mvinc --dbname=isolation_regression
TAP_TESTS    = 1
PROVE_TESTS  = test/t/*.pl

EXTRA_CLEAN  = results output_iso tmp_check regression.diffs regression.out

include pgxs.mk
