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
 * Worker side, after each confirmation: keep a held horizon at the slot's
 * catalog_xmin.  An UPDATE that left a TOASTed column unchanged is decoded
 * with a pointer to the old value's TOAST chunks; whoever later deletes
 * them has an xid >= catalog_xmin (it commits after the change we still
 * have to decode), so holding the horizon there keeps VACUUM from removing
 * them before the writer fetched them.  With start, hold it when a tracked
 * source needs it (MvincHorizonRecheck releases it when that is safe).
 */
void
MvincHorizonAdvance(bool start)
{
	ReplicationSlot *slot = MyReplicationSlot;
	bool		changed = false;
	bool		dirty;

	if (start)
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		start = any_source_needs_horizon();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	SpinLockAcquire(&slot->mutex);
	if ((start || TransactionIdIsValid(slot->data.xmin)) &&
		slot->data.xmin != slot->data.catalog_xmin)
	{
		slot->data.xmin = slot->data.catalog_xmin;
		slot->effective_xmin = slot->data.catalog_xmin;
		changed = true;
	}
	dirty = slot->dirty;
	SpinLockRelease(&slot->mutex);
	if (start)
		release_at = InvalidXLogRecPtr;
	/* Saved at once: after a crash the horizon must hold before we run */
	if (changed)
		ReplicationSlotMarkDirty();
	if (changed || dirty)
		ReplicationSlotSave();
	if (changed)
		ReplicationSlotsComputeRequiredXmin(false);
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
