/*-------------------------------------------------------------------------
 * capture_horizon.c
 *	  The capture slot's data xmin: held at its catalog_xmin only while a
 *	  tracked source may need an unchanged TOASTed value fetched by its
 *	  pointer (a source without REPLICA IDENTITY FULL that has a TOAST
 *	  table), released otherwise, since it holds back VACUUM of every table
 *	  in the database while capture lags.
 *
 *	  Rules (they keep every needed TOAST chunk from VACUUM):
 *	  - The worker holds the horizon when it starts, before decoding, if a
 *	    tracked source needs it (a fresh database's worker does not, so
 *	    VACUUM right after CREATE EXTENSION reclaims as without mvinc).
 *	  - A backend that makes a source need it (track, ALTER TABLE of a
 *	    tracked source) sets the hold itself, in shared memory, before it
 *	    commits, holding RowExclusiveLock on mvinc.tracked until then, and
 *	    counts the request in shared memory.
 *	  - The worker releases only when, under ShareLock on mvinc.tracked (no
 *	    such backend in flight), no source needs it at some WAL position L,
 *	    no request was counted since, and it has confirmed everything up to
 *	    L: changes before L are applied, and changes after L need nothing.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mvinc.h"
#include "capture/capture.h"

/* Worker state: a release waiting for the slot to be confirmed up to here */
static XLogRecPtr release_at = InvalidXLogRecPtr;
static uint64 release_requests = 0;

static bool any_source_needs_horizon(void);

/* Does this source need unchanged TOASTed values fetched by pointer? */
static bool
source_needs_horizon(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		needs = false;

	if (HeapTupleIsValid(tup))
	{
		Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);

		needs = cls->relreplident != REPLICA_IDENTITY_FULL && OidIsValid(cls->reltoastrelid);
		ReleaseSysCache(tup);
	}
	return needs;
}

/*
 * Requester side (track, ALTER TABLE of a tracked source): when relid
 * needs the horizon, hold it now, before this transaction commits.
 */
void
MvincHoldHorizonFor(Oid relid)
{
	char		name[NAMEDATALEN];
	ReplicationSlot *slot;
	bool		changed = false;
	CaptureWorkerSlot *s;

	if (MvincCaptureShared == NULL || !source_needs_horizon(relid))
		return;
	/* The worker cannot decide to release until we commit */
	LockRelationOid(MvincTrackedRelid(), RowExclusiveLock);

	MvincCaptureSlotName(MyDatabaseId, name);
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	s = MvincCaptureSlotFor(MyDatabaseId, false);
	if (s != NULL)
		s->hold_requests++;
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	slot = SearchNamedReplicationSlot(name, false);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		if (!TransactionIdIsValid(slot->effective_xmin) &&
			TransactionIdIsValid(slot->data.catalog_xmin))
		{
			slot->data.xmin = slot->data.catalog_xmin;
			slot->effective_xmin = slot->data.catalog_xmin;
			/* the worker (or a checkpoint) writes it to disk */
			slot->dirty = true;
			slot->just_dirtied = true;
			changed = true;
		}
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
	LWLockRelease(MvincCaptureShared->lock);
	if (changed)
		ReplicationSlotsComputeRequiredXmin(false);
}

/*
 * Where the held horizon may move next: every transaction whose commit
 * record ends after candidate_lsn has an xid >= candidate_xmin.  Taken by
 * reading the oldest running xid first and the WAL insert position after:
 * a transaction that had already left the proc array had inserted its
 * commit record before that position, and any other one is running or
 * starts later.
 */
static TransactionId candidate_xmin = InvalidTransactionId;
static XLogRecPtr candidate_lsn = InvalidXLogRecPtr;

/* The slot file is written at most this often for an advance alone */
#define HORIZON_SAVE_INTERVAL_MS	1000

/*
 * Worker side, after each confirmation: move a held horizon forward.  An
 * UPDATE that left a TOASTed column unchanged is decoded with a pointer to
 * the old value's TOAST chunks, which only a later transaction deletes: one
 * that commits after the change we still have to decode.  So once the
 * slot is confirmed up to candidate_lsn, candidate_xmin keeps every chunk a
 * change still to decode may need.  The catalog_xmin is such a bound too
 * (oldest running xid at a running-xacts record before the restart point),
 * but it moves only at those records: the bgwriter logs one every 15 s,
 * and 15 s of dead versions in every table of the database made almost no
 * update HOT under steady writes.  The candidate moves every batch.
 *
 * With start, hold it when a tracked source needs it (MvincHorizonRecheck
 * releases it when that is safe); the hold starts at the catalog_xmin.
 *
 * The slot file is saved at once when the hold starts here or in a
 * backend (after a crash it must hold before we run), and at most once a
 * second for an advance alone: an older xmin on disk is only more
 * cautious, and the changes between the confirmed position on disk and
 * the applied one are skipped on restart, never fetched.
 */
void
MvincHorizonAdvance(bool start)
{
	static TimestampTz last_save = 0;
	static bool advance_unsaved = false;
	ReplicationSlot *slot = MyReplicationSlot;
	TransactionId target;
	bool		started = false;
	bool		changed = false;
	bool		dirty;

	if (start)
	{
		MvincWorkerLeaveDecoding();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		start = any_source_needs_horizon();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	SpinLockAcquire(&slot->mutex);
	target = slot->data.catalog_xmin;
	if (TransactionIdIsValid(candidate_xmin) &&
		slot->data.confirmed_flush >= candidate_lsn)
	{
		if (TransactionIdFollows(candidate_xmin, target))
			target = candidate_xmin;
		candidate_xmin = InvalidTransactionId;
	}
	if (!TransactionIdIsValid(slot->data.xmin))
		started = start;
	if (TransactionIdIsValid(target) &&
		(started || (TransactionIdIsValid(slot->data.xmin) &&
					 TransactionIdFollows(target, slot->data.xmin))))
	{
		slot->data.xmin = target;
		slot->effective_xmin = target;
		changed = true;
	}
	dirty = slot->dirty;
	SpinLockRelease(&slot->mutex);
	if (start)
		release_at = InvalidXLogRecPtr;

	/* dirty, and not by an advance of ours: a backend took the hold */
	if (dirty && !advance_unsaved)
		started = true;
	if (changed)
	{
		ReplicationSlotMarkDirty();
		ReplicationSlotsComputeRequiredXmin(false);
		advance_unsaved = true;
	}
	if (started || (advance_unsaved &&
					TimestampDifferenceExceeds(last_save, GetCurrentTimestamp(),
											   HORIZON_SAVE_INTERVAL_MS)))
	{
		ReplicationSlotSave();
		last_save = GetCurrentTimestamp();
		advance_unsaved = false;
	}

	/* The next candidate, once this one is passed */
	if (!TransactionIdIsValid(candidate_xmin))
	{
		candidate_xmin = GetOldestActiveTransactionId();
		candidate_lsn = GetXLogInsertRecPtr();
	}
}

/* Does any tracked source need the horizon?  (In a transaction) */
static bool
any_source_needs_horizon(void)
{
	bool		needs;
	bool		isnull;
	int			spi_nest = MvincSpiConnect();

	if (SPI_execute("SELECT EXISTS (SELECT FROM mvinc.tracked t JOIN pg_catalog.pg_class c "
					"ON c.oid = t.relid WHERE c.relreplident <> 'f' AND c.reltoastrelid <> 0)",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not check the tracked sources");
	needs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	MvincSpiFinish(spi_nest);
	return needs;
}

/*
 * Worker side, about once a second between batches: release the horizon
 * when no tracked source needs it (see the rules at the top).
 */
void
MvincHorizonRecheck(void)
{
	ReplicationSlot *slot = MyReplicationSlot;
	XLogRecPtr	confirmed;
	bool		held;
	bool		needs = true;
	uint64		requests;
	XLogRecPtr	now = InvalidXLogRecPtr;
	Oid			tracked;

	SpinLockAcquire(&slot->mutex);
	held = TransactionIdIsValid(slot->data.xmin);
	confirmed = slot->data.confirmed_flush;
	SpinLockRelease(&slot->mutex);
	if (!held)
	{
		release_at = InvalidXLogRecPtr;
		return;
	}

	MvincWorkerLeaveDecoding();
	StartTransactionCommand();
	tracked = MvincTrackedRelid();
	if (OidIsValid(tracked) && ConditionalLockRelationOid(tracked, ShareLock))
	{
		LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
		requests = MyCaptureSlot->hold_requests;
		LWLockRelease(MvincCaptureShared->lock);
		now = MvincRecordEndFloor(GetXLogInsertRecPtr());
		PushActiveSnapshot(GetTransactionSnapshot());
		needs = any_source_needs_horizon();
		PopActiveSnapshot();
	}
	CommitTransactionCommand();

	if (needs)
	{
		release_at = InvalidXLogRecPtr;
		return;
	}
	if (XLogRecPtrIsInvalid(release_at) || requests != release_requests)
	{
		/* Release once everything before now is confirmed */
		release_at = now;
		release_requests = requests;
	}
	if (confirmed < release_at)
		return;

	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	if (MyCaptureSlot->hold_requests == release_requests)
	{
		SpinLockAcquire(&slot->mutex);
		slot->data.xmin = InvalidTransactionId;
		slot->effective_xmin = InvalidTransactionId;
		SpinLockRelease(&slot->mutex);
	}
	else
		held = false;			/* a request came in: keep holding */
	LWLockRelease(MvincCaptureShared->lock);
	release_at = InvalidXLogRecPtr;
	if (held)
	{
		ReplicationSlotMarkDirty();
		ReplicationSlotSave();
		ReplicationSlotsComputeRequiredXmin(false);
	}
}
