/*-------------------------------------------------------------------------
 * mv_init.c
 *	  Start-up of the mv subsystem (incremental materialized views): hooks,
 *	  and the cheap checks every hook makes first (is the extension
 *	  installed in this database, where is its schema).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"
#include "utils/plancache.h"
#include "commands/extension.h"
#include "utils/lsyscache.h"

#include "mvinc.h"
#include "mv/mv.h"

/* Oid of schema mvinc, or InvalidOid (a syscache lookup) */
Oid
MvincSchemaOid(void)
{
	return get_namespace_oid("mvinc", true);
}

/*
 * True when mvinc is installed in this database with the mv catalog in
 * place (false while its install script runs).
 */
bool
MvincExtensionReady(void)
{
	/* the catalog table last found with the extension (it is a member) */
	static Oid	ready_catalog = InvalidOid;
	Oid			schema;
	Oid			catalog;

	if (creating_extension)
		return false;
	schema = MvincSchemaOid();
	if (!OidIsValid(schema))
		return false;
	catalog = get_relname_relid("mv_view", schema);
	if (!OidIsValid(catalog))
		return false;
	/* pg_extension has no syscache: scan it only when the catalog is new */
	if (catalog == ready_catalog)
		return true;
	if (!OidIsValid(get_extension_oid("mvinc", true)))
		return false;
	ready_catalog = catalog;
	return true;
}

/*
 * Run the subsystem's own SQL (catalog, change log, storage) with the
 * rights of the bootstrap superuser and search_path pinned to pg_catalog,
 * so that it works for every view owner and cannot be redirected, and
 * without JIT.  User
 * code in view definitions is limited to built-in functions unless a
 * superuser created the view (mv_analyze.c).  An error restores both with
 * the (sub)transaction.
 */
void
MvBecomeInternal(MvInternal *save)
{
	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save->sec_context | SECURITY_LOCAL_USERID_CHANGE);
	save->nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

	/*
	 * No JIT: internal statements are costed from change-log statistics
	 * that lag (a handful of changes can look like millions of rows), and
	 * compiling one took 100-300 ms where running it took 2.
	 */
	(void) set_config_option("jit", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	/* internal SQL reads what it names: never a view in its place */
	mv_rewrite_internal_change = true;
	(void) set_config_option("mvinc.enable_rewrite", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	mv_rewrite_internal_change = false;
	/* storage, scratch tables: heap whatever the user's default is */
	(void) set_config_option("default_table_access_method", "heap", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/* Back to the caller's user and settings */
void
MvEndInternal(MvInternal *save)
{
	mv_rewrite_internal_change = true;
	AtEOXact_GUC(true, save->nestlevel);
	mv_rewrite_internal_change = false;
	SetUserIdAndSecContext(save->userid, save->sec_context);
}

/* Stack of internal sections opened by MvSpiConnect */
#define MV_SPI_DEPTH 32
static MvInternal spi_stack[MV_SPI_DEPTH];
static int	spi_level[MV_SPI_DEPTH];	/* transaction nest level of each */
static int	spi_depth = 0;

/* SPI_connect as the internal user (see MvBecomeInternal) */
void
MvSpiConnect(void)
{
	if (spi_depth >= MV_SPI_DEPTH)
		elog(ERROR, "mvinc internal SQL nested too deeply");
	spi_level[spi_depth] = GetCurrentTransactionNestLevel();
	MvBecomeInternal(&spi_stack[spi_depth++]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/* SPI_finish and back to the caller's user */
void
MvSpiFinish(void)
{
	SPI_finish();
	MvEndInternal(&spi_stack[--spi_depth]);
}

/* Forget open sections after an error (the transaction restored the rest) */
static void
mv_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		spi_depth = 0;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		MvUnpinReadBranches();
}

/* Forget the sections of an aborted subtransaction */
static void
mv_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		int			level = GetCurrentTransactionNestLevel();

		while (spi_depth > 0 && spi_level[spi_depth - 1] >= level)
			spi_depth--;
		MvForgetReadDecisions(mySubid);
	}
}

/* mvinc.read_path: how reads of incremental views choose their path */
int			mvinc_read_path_mode = MV_READ_PATH_AUTO;

static const struct config_enum_entry read_path_options[] = {
	{"auto", MV_READ_PATH_AUTO, false},
	{"live", MV_READ_PATH_LIVE, false},
	{"stale_ok", MV_READ_PATH_STALE_OK, false},
	{NULL, 0, false}
};

/* mvinc.fresh_wait: ms a read waits for capture before going live */
int			mvinc_fresh_wait = 2000;

/* mvinc.direct_merge: appends merge into aggregate storage in C */
bool		mvinc_direct_merge = true;

/*
 * Plans made under mvinc.read_path = stale_ok read no source through a
 * view (the rewrite is off then), plans made otherwise may: cached plans
 * are made again when the setting enters or leaves stale_ok.
 */
static void
assign_read_path(int newval, void *extra)
{
	if ((newval == MV_READ_PATH_STALE_OK) != (mvinc_read_path_mode == MV_READ_PATH_STALE_OK))
		ResetPlanCache();
}

/* Install the mv subsystem's GUCs and hooks */
void
MvincMvInit(void)
{
	DefineCustomBoolVariable("mvinc.direct_merge",
							 "Merges appended rows into the storage of aggregate views through its key index.",
							 "Off: with INSERT .. ON CONFLICT DO UPDATE (slower; for comparison and as a fallback).",
							 &mvinc_direct_merge, true,
							 PGC_USERSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomRealVariable("mvinc.compact_fraction",
							 "Append refreshes of aggregate views with GROUP BY add state rows beside the storage up to this fraction of its rows.",
							 "Past it the refresh folds them into the storage (compacts); 0 folds at every refresh.",
							 &mvinc_compact_fraction, 1.0, 0.0, 1000.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("mvinc.enable_rewrite",
							 "Plans aggregate queries over the source of an incremental view onto the view when it can answer them.",
							 "See mvinc.explain_rewrite(query) for why a view was or was not used.",
							 &mvinc_enable_rewrite, true,
							 PGC_USERSET, 0, NULL, MvAssignEnableRewrite, NULL);
	DefineCustomEnumVariable("mvinc.read_path",
							 "How reads of incremental views choose between the storage and the defining query.",
							 "auto: the storage when it holds every change the query's snapshot sees, else the defining query; "
							 "live: always the defining query; stale_ok: the storage as last refreshed, without waiting for capture.",
							 &mvinc_read_path_mode, MV_READ_PATH_AUTO, read_path_options,
							 PGC_USERSET, 0, NULL, assign_read_path, NULL);
	DefineCustomIntVariable("mvinc.fresh_wait",
							"How long a read of an incremental view waits for change capture to catch up.",
							"After this many milliseconds the read answers from the source (the live path).",
							&mvinc_fresh_wait, 2000, 0, 600000,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.recluster_swap_timeout",
							"How long mvinc.recluster tries to take the lock it swaps the storage's files under.",
							"It never makes readers of the view wait long behind it; past this many milliseconds of readers holding the view it fails.",
							&mvinc_recluster_swap_timeout, 60000, 100, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	MvUtilityInit();
	MvReadInit();
	MvReadScanInit();
	MvDeltaCacheInit();
	MvCompactorInit();
	MvSchedulerInit();
	MvStatsInit();
	MvProgressInit();
	MvRefreshInit();
	RegisterXactCallback(mv_xact_callback, NULL);
	RegisterSubXactCallback(mv_subxact_callback, NULL);
}

/*
 * Start a background worker of this library for one view of this
 * database (function gets the view, bgw_extra the database); false when
 * no worker slot is free.  No handle: nothing is allocated (a caller may
 * run after its commit record), nothing waits for the worker.
 */
bool
MvStartViewWorker(Oid viewid, const char *function, const char *type)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "mvinc");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "%s for view %u", type, viewid);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "%s", type);
	bgw.bgw_main_arg = ObjectIdGetDatum(viewid);
	memcpy(bgw.bgw_extra, &MyDatabaseId, sizeof(Oid));
	bgw.bgw_notify_pid = 0;
	return RegisterDynamicBackgroundWorker(&bgw, NULL);
}

/*
 * Run internal SQL returning oid columns (one or two; nargs $n are oids)
 * and collect them into *first and, when second is given, *second, in the
 * caller's memory context.  read_only: in the statement's snapshot.
 */
void
MvSpiOids(const char *sql, int nargs, Oid *args, bool read_only, List **first, List **second)
{
	MemoryContext outer = CurrentMemoryContext;
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2];
	int			rc;
	uint64		i;

	Assert(nargs <= 2);
	for (i = 0; i < (uint64) nargs; i++)
		values[i] = ObjectIdGetDatum(args[i]);
	MvSpiConnect();
	rc = SPI_execute_with_args(sql, nargs, types, values, NULL, read_only, 0);
	if (rc != SPI_OK_SELECT && rc != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "mvinc internal query failed (%d): %s", rc, sql);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		a = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		Datum		b = second ? SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull) : 0;
		MemoryContext spicxt = MemoryContextSwitchTo(outer);

		*first = lappend_oid(*first, DatumGetObjectId(a));
		if (second)
			*second = lappend_oid(*second, DatumGetObjectId(b));
		MemoryContextSwitchTo(spicxt);
	}
	MvSpiFinish();
}
