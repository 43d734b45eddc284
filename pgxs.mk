# Finds PostgreSQL 15's pg_config, includes PGXS and adds mvinc's own rules.

PG_CONFIG ?= $(shell command -v /usr/lib/postgresql/15/bin/pg_config 2>/dev/null || command -v pg_config)
ifeq ($(PG_CONFIG),)
$(error pg_config not found: install postgresql-server-dev-15 or pass PG_CONFIG=/path/to/pg_config)
endif

PG_MAJOR := $(shell $(PG_CONFIG) --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
ifneq ($(PG_MAJOR),15)
$(error mvinc targets PostgreSQL 15, but $(PG_CONFIG) is PostgreSQL $(PG_MAJOR): pass PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config)
endif

# Test builds turn on our own Assert()s (the Debian server is built without).
ifeq ($(MVINC_ASSERT),1)
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif

# Rebuild objects when a header they include changes (gcc writes .deps/*.Po).
override autodepend = yes

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The install script is the concatenation of the per-subsystem parts.
sql/mvinc--$(EXTVERSION).sql: $(sort $(wildcard sql/$(EXTVERSION)/*.sql))
	cat $^ > $@
