/*-------------------------------------------------------------------------
 * mv_capture.c
 *	  The mv subsystem's view of change capture: thin wrappers over the
 *	  capture C API (docs/internals.md), the non-throwing wait and track
 *	  used by reads and restores, and the end-of-record insert LSN.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "capture/capture.h"
#include "mv/mv.h"

/* Refresh waits at most this long for capture to reach its target LSN */
#define MV_REFRESH_WAIT_MS	60000

/*
 * The current WAL insert position as an end-of-record LSN: when the insert
 * position sits just after a page header, no record ends there (records
 * end at the page boundary), and a flush to it cannot be satisfied.
 */
XLogRecPtr
MvInsertLsn(void)
{
	return MvincRecordEndFloor(GetXLogInsertRecPtr());
}

/*
 * Start capturing relid's changes; returns its change log. Tracking is
 * mvinc's business, done with the extension's rights: a view owner needs
 * what a native matview needs (SELECT on what its query reads), not
 * ownership of the source (mvinc.track() itself still asks for it).
 */
Oid
MvTrack(Oid relid, bool full_old_rows)
{
	MvInternal	save;
	Oid			logid;

	MvBecomeInternal(&save);
	logid = MvincTrack(relid, full_old_rows);
	MvEndInternal(&save);
	return logid;
}

/*
 * Lock relid for an initial computation that reads it and for tracking it,
 * at once (MvincTrackLockMode says why)
 */
void
MvLockForTracking(Oid relid, bool full_old_rows)
{
	MvincLockForTracking(relid, full_old_rows);
}

/* MvTrack that returns false instead of raising an error */
bool
MvTryTrack(Oid relid, bool full_old_rows)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		(void) MvincTrack(relid, full_old_rows);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			class;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;

		/*
		 * Only a source that cannot be tracked yet is the caller's to
		 * handle; a cancel, a deadlock, a lock timeout or an internal error
		 * is not.
		 */
		class = ERRCODE_TO_CATEGORY(edata->sqlerrcode);
		if (class == ERRCODE_TO_CATEGORY(ERRCODE_TRANSACTION_ROLLBACK) ||
			class == ERRCODE_TO_CATEGORY(ERRCODE_OPERATOR_INTERVENTION) ||
			class == ERRCODE_TO_CATEGORY(ERRCODE_INSUFFICIENT_RESOURCES) ||
			class == ERRCODE_TO_CATEGORY(ERRCODE_INTERNAL_ERROR) ||
			edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/* relid's change log, or InvalidOid */
Oid
MvChangeLogRelid(Oid relid)
{
	return MvincChangeLogRelid(relid);
}

/* Wait until every transaction committed before lsn is in the change logs */
void
MvWaitForCapture(XLogRecPtr lsn)
{
	(void) MvincWaitForCapture(lsn, MV_REFRESH_WAIT_MS);
}

/*
 * Like MvWaitForCapture, but returns false instead of raising an error
 * (a read falls back to the live path then); no subtransaction, no write.
 */
bool
MvTryWaitForCapture(XLogRecPtr lsn, int timeout_ms)
{
	if (MvincCapturedLsn() >= lsn)
		return true;
	return MvincTryWaitForCapture(lsn, timeout_ms);
}

/*
 * May the current transaction have written relid?  Reads ask this (not
 * pgstat's counts, which track_counts = off leaves empty): a read of a
 * view whose source the transaction wrote must run the query.
 */
bool
MvXactMayHaveWritten(Oid relid)
{
	return MvincXactMayHaveWritten(relid);
}

/*
 * Where capture must be before a read of relid's change log may trust it
 * (for a snapshot taken before insert_lsn): the last commit that changed
 * relid, at most insert_lsn.
 */
XLogRecPtr
MvCaptureTarget(Oid relid, XLogRecPtr insert_lsn)
{
	return MvincCaptureTarget(relid, insert_lsn);
}

/*
 * Have each capture worker call tick between its batches, and wanted
 * before it stops for lack of tracked tables (mv_scheduler.c)
 */
void
MvOnCaptureTick(void (*tick) (void), bool (*wanted) (void))
{
	mvinc_capture_tick = tick;
	mvinc_capture_wanted = wanted;
}

/*
 * Before whatever will track a source (a view's creation, a refresh that
 * adopts a restored view) takes a lock on it or writes: have this
 * database's capture running, so that the tracking need not count the
 * changes before it as lost.  Waiting later, with the source locked, can
 * stall: the new slot waits for running transactions, and a writer of the
 * source that already has an xid would wait for our lock.
 */
void
MvAwaitCapture(void)
{
	MvincAwaitCaptureSlot();
}

/*
 * This transaction makes the capture worker needed (a refresh schedule);
 * see MvincRequireCaptureWorker
 */
void
MvRequireCaptureWorker(bool error_if_none)
{
	MvincRequireCaptureWorker(error_if_none);
}

/* Sources whose last view this transaction dropped, released at its commit */
static List *sources_to_release = NIL;

/*
 * Capture of a source may stop when no view of either kind reads it any
 * more.  Asked under the lock that creating a view takes on its source
 * first (SHARE, in create_incremental and create_history) and tracking
 * takes too, in the latest snapshot: a view created meanwhile, committed
 * before we got the lock, is seen (a transaction snapshot of REPEATABLE
 * READ would not), and one created after waits for our commit and tracks
 * the source anew.
 */
static void
release_if_unused(Oid sourceid)
{
	MvInternal	save;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(sourceid)};
	SPIPlanPtr	plan;
	bool		used;

	if (!OidIsValid(sourceid) || !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(sourceid)))
		return;
	MvBecomeInternal(&save);
	LockRelationOid(sourceid, ShareUpdateExclusiveLock);
	MvSpiConnect();
	plan = SPI_prepare("SELECT 1 FROM mvinc.mv_view WHERE source = $1::pg_catalog.regclass "
					   "UNION ALL SELECT 1 FROM mvinc.history_view WHERE source = $1::pg_catalog.regclass "
					   "LIMIT 1", 1, types);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look for the views of source %u", sourceid);
	used = SPI_processed > 0;
	MvSpiFinish();
	if (!used)
		MvincReleaseSource(sourceid);
	MvEndInternal(&save);
}

static void
release_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
	{
		List	   *sources = sources_to_release;
		ListCell   *lc;

		sources_to_release = NIL;
		/* (nothing to release once DROP EXTENSION took it all) */
		if (sources == NIL || !MvincExtensionReady())
			return;
		/* internal SQL at commit runs under a snapshot of its own */
		PushActiveSnapshot(GetTransactionSnapshot());
		foreach(lc, sources)
			release_if_unused(lfirst_oid(lc));
		PopActiveSnapshot();
	}
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
			 event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
		sources_to_release = NIL;
}

/*
 * A view of sourceid was dropped (its catalog row is gone): look at its
 * source when the transaction commits, not now.  Untracking drops the
 * change log, whose ACCESS EXCLUSIVE lock the capture worker would wait
 * for, and all capture in the database with it, until this transaction
 * ends (found by a review); at commit that is a moment.  A drop rolled
 * back (a savepoint) leaves the view, which the look then finds.
 */
void
MvReleaseSource(Oid sourceid)
{
	static bool registered = false;
	MemoryContext old;

	if (!OidIsValid(sourceid))
		return;
	if (!registered)
	{
		RegisterXactCallback(release_xact_callback, NULL);
		registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	sources_to_release = list_append_unique_oid(sources_to_release, sourceid);
	MemoryContextSwitchTo(old);
}

/* Tell retention which change-log rows the view still needs */
void
MvSetConsumer(Oid relid, const char *consumer, XLogRecPtr lsn)
{
	MvincSetConsumer(relid, consumer, lsn);
}

/* Forget the view as a consumer (no-op without capture) */
void
MvDropConsumer(Oid relid, const char *consumer)
{
	MvincDropConsumer(relid, consumer);
}

/* MvRetainedFrom as snapshot sees it (no SPI: the read path's decision) */
XLogRecPtr
MvRetainedFromIn(Oid relid, Snapshot snapshot)
{
	return MvincRetainedFromIn(relid, snapshot);
}

/*
 * Change-log rows with lsn <= this were removed by retention or lost
 * (MvincMarkChangesLost), as the latest snapshot sees it: a refresh asks
 * after waiting for capture, and a loss recorded meanwhile must count
 * (the statement's snapshot, taken before the wait, missed it: the refresh
 * reported noop for changes that were gone)
 */
XLogRecPtr
MvRetainedFrom(Oid relid)
{
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
	XLogRecPtr	result = MvincRetainedFromIn(relid, latest);

	UnregisterSnapshot(latest);
	return result;
}

/* A tracked source was dropped: drop its change log and tracking rows */
void
MvForgetDroppedSource(Oid relid)
{
	MvincForgetDroppedSource(relid);
}
