/*-------------------------------------------------------------------------
 * mv_scheduler.c
 *	  Automatic refresh.  A view with mvinc.refresh_interval (set at CREATE
 *	  or by ALTER MATERIALIZED VIEW .. SET) is refreshed by a background
 *	  worker when changes its readers would see are captured and the
 *	  interval has passed since its last refresh (0: as soon as they are).
 *
 *	  The capture worker of each database calls MvSchedulerTick between its
 *	  batches (every 100 ms at most): once a second, or every 100 ms while a
 *	  view's interval is under a second, one catalog query lists the views
 *	  that are due, most overdue first, and each that has pending changes
 *	  gets a refresh worker, unless one is queued or running for it or
 *	  mvinc.max_refresh_workers run in the server or
 *	  mvinc.max_refresh_workers_per_database in this database (mv_stats.c
 *	  keeps the claims).  No worker runs for a view without changes, and
 *	  none in a database without scheduled views.
 *
 *	  The worker refreshes the view as mvinc.refresh() would (the owner's
 *	  right to read the source is checked), at READ COMMITTED, and records
 *	  the outcome in mvinc.mv_view: success clears the failure count; a
 *	  failure raises it, keeps the error (mvinc.views shows it to those who
 *	  may read the view) and defers the next attempt by the interval (at
 *	  least a second) times 2^(failures - 1), at most an hour, so that a
 *	  view that keeps failing neither hogs the workers nor starves the
 *	  others.  One log line per refresh at mvinc.refresh_log_level.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mv/mv.h"

static int	mvinc_max_refresh_workers = 2;
static int	mvinc_max_refresh_workers_per_db = 1;
static int	mvinc_refresh_log_level = DEBUG1;
static int	mvinc_max_pending_changes = 10000000;

/* How often the tick looks for views past mvinc.max_pending_changes */
#define PENDING_CHECK_MS 5000

static const struct config_enum_entry log_level_options[] = {
	{"debug5", DEBUG5, false},
	{"debug4", DEBUG4, false},
	{"debug3", DEBUG3, false},
	{"debug2", DEBUG2, false},
	{"debug1", DEBUG1, false},
	{"debug", DEBUG2, true},
	{"info", INFO, false},
	{"notice", NOTICE, false},
	{"warning", WARNING, false},
	{"log", LOG, false},
	{NULL, 0, false}
};

/*
 * Store a view's refresh interval (NULL: refresh only when asked).  A
 * negative or unreadable interval is refused.  A pending retry after
 * failures is dropped: the new setting applies at once.
 */
void
MvSetRefreshInterval(Oid viewid, const char *interval)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (interval != NULL)
	{
		Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
															   CStringGetDatum(interval),
															   ObjectIdGetDatum(InvalidOid),
															   Int32GetDatum(-1)));
		Interval	zero = {0};
		Interval	most = {0};
		bool		negative;

		most.month = 10 * MONTHS_PER_YEAR;
		negative = DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(iv),
													IntervalPGetDatum(&zero)));
		if (negative || DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(iv),
														 IntervalPGetDatum(&most))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"mvinc.refresh_interval\": \"%s\"", interval),
					 errdetail(negative ? "The interval is negative." :
							   "The interval is longer than 10 years."),
					 errhint(negative ?
							 "Give 0 to refresh as soon as changes are captured, or RESET the option to refresh only when asked." :
							 "RESET the option to refresh only when asked.")));
	}
	/* the capture worker hosts the schedule: keep it (or start it) */
	if (interval != NULL)
		MvRequireCaptureWorker(true);
	values[0] = ObjectIdGetDatum(viewid);
	values[1] = interval ? CStringGetTextDatum(interval) : (Datum) 0;
	nulls[1] = interval ? ' ' : 'n';
	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET refresh_interval = $2::pg_catalog.interval, "
							  "retry_after = NULL WHERE view = $1::pg_catalog.regclass",
							  2, types, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not set the refresh interval of materialized view %u", viewid);
	MvSpiFinish();
}

/*
 * Is any view of this database refreshed on a schedule?  The capture
 * worker, which runs the schedule, asks before it stops for lack of
 * tracked tables (a restored view waits for its refresh to track its
 * source).
 */
static bool
schedule_exists(void)
{
	bool		exists;

	MvSpiConnect();
	exists = SPI_execute("SELECT 1 FROM mvinc.mv_view WHERE refresh_interval IS NOT NULL LIMIT 1",
						 true, 1) == SPI_OK_SELECT && SPI_processed > 0;
	MvSpiFinish();
	return exists;
}

/* Trigger on mvinc.mv_view: a row with a schedule wants the capture worker */
PG_FUNCTION_INFO_V1(mvinc_mv_view_scheduled);
Datum
mvinc_mv_view_scheduled(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "not called as a trigger");
	MvRequireCaptureWorker(false);
	return PointerGetDatum(NULL);
}

/* Does the view have changes a reader would see now, or need a rebuild? */
static bool
has_pending(Oid viewid)
{
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
	Oid			changelog;
	Snapshot	latest;
	MvDeltaKind kind;

	if (cat == NULL || !cat->populated || cat->checkpoint_snapshot == NULL)
		return false;
	if (cat->built_generation != cat->source_generation)
		return true;
	/* restored without its storage or tracking: a refresh adopts it */
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog) || !OidIsValid(cat->storage_oid))
		return true;
	/* changes lost to retention or a new capture slot: a rebuild is due */
	if (MvRetainedFrom(cat->sourceid) > cat->checkpoint_lsn)
		return true;
	latest = RegisterSnapshot(GetLatestSnapshot());
	kind = MvDeltaVisible(changelog, cat->checkpoint_lsn, MvSnapshotText(latest, false),
						  cat->checkpoint_snapshot, latest, false, 0, NULL);
	UnregisterSnapshot(latest);
	return kind != MV_DELTA_NONE;
}

/*
 * Can the change log hold more than max rows?  Its estimate when it has
 * one, else its size at the most rows a page can hold: the exact count
 * that follows reads up to max index entries, so only when it may pass.
 */
static bool
log_may_exceed(Oid changelog, int64 max)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(changelog));
	float4		reltuples;
	Relation	rel;
	BlockNumber pages;

	if (!HeapTupleIsValid(tup))
		return false;
	reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	if (reltuples >= 0 && reltuples <= max)
		return false;
	rel = table_open(changelog, AccessShareLock);
	pages = RelationGetNumberOfBlocks(rel);
	table_close(rel, AccessShareLock);
	return (int64) pages * MaxHeapTuplesPerPage > max;
}

/*
 * A view never refreshed would keep its source's change log growing
 * without bound: past mvinc.max_pending_changes rows after its checkpoint,
 * it lets them go (it stops consuming) and becomes stale: reads run its
 * query and its next refresh is full.  A view being refreshed is left
 * alone (that refresh consumes them).
 */
static void
cap_pending(void)
{
	List	   *views = NIL;
	MemoryContext outer = CurrentMemoryContext;
	ListCell   *lc;

	if (mvinc_max_pending_changes <= 0)
		return;
	MvSpiConnect();
	if (SPI_execute("SELECT view, source, checkpoint_lsn FROM mvinc.mv_view "
					"WHERE populated AND built_generation = source_generation "
					"AND checkpoint_lsn IS NOT NULL", true, 0) == SPI_OK_SELECT)
	{
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			bool		isnull;
			MemoryContext spi = MemoryContextSwitchTo(outer);
			List	   *v = list_make2_oid(DatumGetObjectId(SPI_getbinval(t, SPI_tuptable->tupdesc, 1, &isnull)),
										   DatumGetObjectId(SPI_getbinval(t, SPI_tuptable->tupdesc, 2, &isnull)));

			v = lappend(v, pstrdup(SPI_getvalue(t, SPI_tuptable->tupdesc, 3)));
			views = lappend(views, v);
			MemoryContextSwitchTo(spi);
		}
	}
	foreach(lc, views)
	{
		List	   *v = lfirst(lc);
		Oid			viewid = linitial_oid(v);
		Oid			source = lsecond_oid(v);
		char	   *from = lthird(v);
		Oid			changelog = MvChangeLogRelid(source);
		int64		pending;
		bool		isnull;
		char	   *why;

		if (!OidIsValid(changelog) || !log_may_exceed(changelog, mvinc_max_pending_changes))
			continue;
		if (SPI_execute(psprintf("SELECT pg_catalog.count(*) FROM (SELECT FROM %s WHERE _mvinc_lsn > %s "
								 "LIMIT %d) s", MvSourceName(changelog), quote_literal_cstr(from),
								 mvinc_max_pending_changes + 1), true, 0) != SPI_OK_SELECT ||
			SPI_processed != 1)
			continue;
		pending = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull));
		if (pending <= mvinc_max_pending_changes ||
			!ConditionalLockRelationOid(viewid, ExclusiveLock))
			continue;
		why = psprintf("more than %d changes were pending (mvinc.max_pending_changes): "
					   "the view reads its query until a full refresh", mvinc_max_pending_changes);
		MvCatalogMarkStale(viewid);
		MvDropConsumer(source, MvConsumerName(viewid));
		{
			Oid			types[2] = {OIDOID, TEXTOID};
			Datum		values[2] = {ObjectIdGetDatum(viewid), CStringGetTextDatum(why)};

			SPI_execute_with_args("UPDATE mvinc.mv_view SET last_error = $2 "
								  "WHERE view = $1::pg_catalog.regclass",
								  2, types, values, NULL, false, 0);
		}
		ereport(WARNING,
				(errmsg("materialized view \"%s\" stops keeping its pending changes",
						get_rel_name(viewid)),
				 errdetail("More than %d changes of its source wait past its last refresh (mvinc.max_pending_changes).",
						   mvinc_max_pending_changes),
				 errhint("Its reads run its query until a refresh, which will be full; refresh it regularly (mvinc.refresh_interval).")));
	}
	MvSpiFinish();
}

/*
 * The views due for an automatic refresh that have pending changes, most
 * overdue first; *min_interval_ms gets the shortest interval of any
 * scheduled view (-1: none).
 */
static List *
due_views(long *min_interval_ms)
{
	List	   *due = NIL;
	List	   *candidates = NIL;
	MemoryContext outer = CurrentMemoryContext;
	ListCell   *lc;

	*min_interval_ms = -1;
	MvSpiConnect();
	/* every scheduled view: its interval, and whether it is due */
	if (SPI_execute("SELECT v.view, "
					"pg_catalog.date_part('epoch', v.refresh_interval) * 1000, "
					"(v.retry_after IS NULL OR v.retry_after <= pg_catalog.now()) "
					"AND (v.last_refresh IS NULL OR "
					"     v.last_refresh + v.refresh_interval <= pg_catalog.now()) "
					"FROM mvinc.mv_view v WHERE v.refresh_interval IS NOT NULL AND v.populated "
					"ORDER BY v.last_refresh + v.refresh_interval NULLS FIRST",
					true, 0) == SPI_OK_SELECT)
	{
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	t = SPI_tuptable->vals[i];
			bool		isnull;
			long		ms = (long) DatumGetFloat8(SPI_getbinval(t, SPI_tuptable->tupdesc, 2, &isnull));

			if (*min_interval_ms < 0 || ms < *min_interval_ms)
				*min_interval_ms = ms;
			if (DatumGetBool(SPI_getbinval(t, SPI_tuptable->tupdesc, 3, &isnull)))
			{
				MemoryContext spi = MemoryContextSwitchTo(outer);

				candidates = lappend_oid(candidates,
										 DatumGetObjectId(SPI_getbinval(t, SPI_tuptable->tupdesc, 1,
																		&isnull)));
				MemoryContextSwitchTo(spi);
			}
		}
	}
	MvSpiFinish();
	foreach(lc, candidates)
	{
		/* (one running or queued will see these changes, or come back) */
		if (!MvRefresherBusy(lfirst_oid(lc)) && has_pending(lfirst_oid(lc)))
			due = lappend_oid(due, lfirst_oid(lc));
	}
	return due;
}

/*
 * Called by this database's capture worker between batches, outside any
 * transaction.  Its own errors are logged, never raised: capture goes on.
 */
static void
scheduler_tick(void)
{
	static TimestampTz last_tick = 0;
	static long period_ms = 1000;
	static TimestampTz last_no_slot = 0;
	static TimestampTz last_cap = 0;
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext tick_cxt;
	List	   *due = NIL;
	long		min_interval_ms = -1;
	Oid			catalog;
	ListCell   *lc;

	if (mvinc_max_refresh_workers <= 0 || !TimestampDifferenceExceeds(last_tick, now, period_ms))
		return;
	last_tick = now;
	tick_cxt = AllocSetContextCreate(TopMemoryContext, "mvinc scheduler", ALLOCSET_SMALL_SIZES);
	PG_TRY();
	{
		/* now() is the statement's start: a worker must set it itself */
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		catalog = MvincExtensionReady() ?
			get_relname_relid("mv_view", MvincSchemaOid()) : InvalidOid;

		/*
		 * (An older install script has no schedule.)  Capture must not wait
		 * behind whoever locks the catalog (ALTER EXTENSION, VACUUM FULL):
		 * then no look this time.
		 */
		if (OidIsValid(catalog) &&
			get_attnum(catalog, "refresh_interval") != InvalidAttrNumber &&
			ConditionalLockRelationOid(catalog, AccessShareLock))
		{
			List	   *views;

			if (TimestampDifferenceExceeds(last_cap, now, PENDING_CHECK_MS))
			{
				last_cap = now;
				cap_pending();
			}
			views = due_views(&min_interval_ms);
			MemoryContextSwitchTo(tick_cxt);
			due = list_copy(views);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(outer);
		EmitErrorReport();
		AbortOutOfAnyTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
		due = NIL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(outer);
	period_ms = min_interval_ms >= 0 && min_interval_ms < 1000 ? 100 : 1000;

	foreach(lc, due)
	{
		Oid			viewid = lfirst_oid(lc);
		MvClaim		claim = MvClaimRefresher(viewid, mvinc_max_refresh_workers,
											 mvinc_max_refresh_workers_per_db);

		if (claim == MV_CLAIM_FULL)
			break;
		if (claim == MV_CLAIM_BUSY)
			continue;
		if (MvStartViewWorker(viewid, "MvincRefresherMain", "mvinc refresh"))
			continue;
		MvSetRefresher(MyDatabaseId, viewid, 0);
		if (TimestampDifferenceExceeds(last_no_slot, now, 60000))
		{
			last_no_slot = now;
			ereport(WARNING,
					(errmsg("could not start an automatic refresh of materialized view %u", viewid),
					 errdetail("No background worker slot is free; it is tried again at the next check."),
					 errhint("Increase \"max_worker_processes\".")));
		}
		break;
	}
	MemoryContextDelete(tick_cxt);
}

/* Record an automatic refresh's outcome: error NULL for a success */
static void
record_outcome(Oid viewid, const char *error)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(viewid), error ? CStringGetTextDatum(error) : (Datum) 0};
	char		nulls[2] = {' ', error ? ' ' : 'n'};

	MvSpiConnect();
	if (error == NULL)
		SPI_execute_with_args("UPDATE mvinc.mv_view SET refresh_failures = 0, last_error = NULL, "
							  "retry_after = NULL WHERE view = $1::pg_catalog.regclass "
							  "AND (refresh_failures <> 0 OR retry_after IS NOT NULL OR last_error IS NOT NULL)",
							  1, types, values, nulls, false, 0);
	else
		SPI_execute_with_args("UPDATE mvinc.mv_view SET refresh_failures = refresh_failures + 1, "
							  "last_error = $2, retry_after = pg_catalog.now() + "
							  "LEAST(interval '1 hour', "
							  "GREATEST(COALESCE(refresh_interval, interval '0'), "
							  "interval '1 second') * pg_catalog.power(2, LEAST(refresh_failures, 12))) "
							  "WHERE view = $1::pg_catalog.regclass",
							  2, types, values, nulls, false, 0);
	MvSpiFinish();
}

/* Come back after the interval (at least a second): the view is busy */
static void
defer(Oid viewid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};

	MvSpiConnect();
	SPI_execute_with_args("UPDATE mvinc.mv_view SET retry_after = pg_catalog.now() + "
						  "GREATEST(refresh_interval, interval '1 second') "
						  "WHERE view = $1::pg_catalog.regclass",
						  1, types, values, NULL, false, 0);
	MvSpiFinish();
}

/* The worker's claim ends with it, however it exits */
static void
refresher_exit(int code, Datum arg)
{
	Oid			dboid;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	MvSetRefresher(dboid, DatumGetObjectId(arg), 0);
}

/* Worker entry point: one automatic refresh of one view */
void
MvincRefresherMain(Datum arg)
{
	Oid			viewid = DatumGetObjectId(arg);
	Oid			dboid;
	TimestampTz start;
	char	   *name = NULL;
	char	   *mode = NULL;
	int64		changes = 0;
	ErrorData  *failure = NULL;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	MvSetRefresher(dboid, viewid, MyProcPid);
	before_shmem_exit(refresher_exit, arg);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("mvinc refresh");
	/* refreshes run at READ COMMITTED, whatever the server's default */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	start = GetCurrentTimestamp();
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "mvinc automatic refresh");
		/*
		 * A refresh of the view running elsewhere (by hand, perhaps in an
		 * open transaction) would hold this worker, and the database's
		 * share of workers, for as long: leave it to that one.
		 */
		if (MvincExtensionReady() && MvIsIncrementalView(viewid))
		{
			if (ConditionalLockRelationOid(viewid, ExclusiveLock))
			{
				MvRefreshResult res;

				name = MemoryContextStrdup(TopMemoryContext, get_rel_name(viewid));
				res = MvRefresh(viewid, false, false);
				mode = MemoryContextStrdup(TopMemoryContext, res.mode);
				changes = res.changes;
				record_outcome(viewid, NULL);
			}
			else
				defer(viewid);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		failure = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();

	if (failure != NULL)
	{
		const char *message = failure->message ? failure->message : "unknown error";

		ereport(WARNING,
				(errmsg("automatic refresh of materialized view %u failed: %s", viewid, message),
				 failure->detail ? errdetail_internal("%s", failure->detail) : 0,
				 errhint("mvinc.views shows the failures; the refresh is tried again later.")));
		PG_TRY();
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			if (MvincExtensionReady() && MvIsIncrementalView(viewid))
				record_outcome(viewid, message);
			PopActiveSnapshot();
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			/*
			 * Not even the failure could be recorded (a read-only
			 * database?): keep the claim a while, or the next tick would
			 * start another worker at once.
			 */
			HOLD_INTERRUPTS();
			EmitErrorReport();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			RESUME_INTERRUPTS();
			for (int i = 0; i < 100; i++)
			{
				CHECK_FOR_INTERRUPTS();
				pg_usleep(100000L);
			}
		}
		PG_END_TRY();
	}
	else if (mode != NULL)
		ereport(mvinc_refresh_log_level,
				(errmsg("automatic refresh of materialized view \"%s\": %s, %lld changes, %ld ms",
						name, mode, (long long) changes,
						TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()))));
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}

/* Install the GUCs and the capture worker's tick */
void
MvSchedulerInit(void)
{
	DefineCustomIntVariable("mvinc.max_refresh_workers",
							"Automatic refreshes that may run at the same time in the server (0: none).",
							"Each takes a background worker slot (max_worker_processes) while it runs.",
							&mvinc_max_refresh_workers, 2, 0, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.max_refresh_workers_per_database",
							"Automatic refreshes that may run at the same time in one database.",
							NULL, &mvinc_max_refresh_workers_per_db, 1, 1, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.max_pending_changes",
							"Change-log rows past a view's last refresh after which the view lets them go (0: no limit).",
							"The view then reads its query until its next refresh, which is full.",
							&mvinc_max_pending_changes, 10000000, 0, INT_MAX - 1,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("mvinc.refresh_log_level",
							 "Level of the log line each automatic refresh writes.",
							 "Failures are always logged as warnings.",
							 &mvinc_refresh_log_level, DEBUG1, log_level_options,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	MvOnCaptureTick(scheduler_tick, schedule_exists);
}
