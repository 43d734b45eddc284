/*-------------------------------------------------------------------------
 * mv_stats.c
 *	  Per-view counters of the paths reads took (fresh, merge, hybrid,
 *	  live), in shared memory: mvinc.views shows them, and
 *	  mvinc.reset_read_counts() sets them back to zero.  The same entry
 *	  says whether a background compaction of the view is queued
 *	  (mv_compactor.c starts at most one at a time) and whether an
 *	  automatic refresh of it is queued or running (mv_scheduler.c).
 *
 *	  A fixed table of MV_STATS_SLOTS entries keyed by (database, view),
 *	  open addressing; an entry is claimed under the lock the first time a
 *	  view is read, and counted with atomics; a dropped view's entry
 *	  becomes a tombstone (probes go on past it, claims reuse it).  Counts start at zero when
 *	  the server starts and are not kept across restarts (like
 *	  pg_stat_statements without its file).  When the table is full, reads
 *	  of further views are not counted (their counts show NULL).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "mv/mv.h"

#define MV_STATS_SLOTS 4096
#define N_PATHS 4				/* indexed by MvReadBranch */
#define TOMBSTONE ((Oid) 1)		/* viewid of a free entry that probes pass */

typedef struct ReadCountSlot
{
	Oid			dboid;			/* InvalidOid: free */
	Oid			viewid;
	pg_atomic_uint64 reads[N_PATHS];
	pg_atomic_uint32 compactor;	/* when a background compaction was queued
								 * (seconds since the epoch), or 0 */
	pg_atomic_uint32 refresh_queued;	/* when an automatic refresh was
										 * queued (seconds), or 0 */
	pg_atomic_uint32 refresh_pid;	/* the worker running it, or 0 */
} ReadCountSlot;

typedef struct ReadCounts
{
	LWLock	   *lock;			/* claims of slots */
	bool		full;			/* no free slot is left */
	ReadCountSlot slots[MV_STATS_SLOTS];
} ReadCounts;

static ReadCounts *read_counts = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(mvinc_read_counts);
PG_FUNCTION_INFO_V1(mvinc_reset_read_counts);

static void
stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(ReadCounts));
	RequestNamedLWLockTranche("mvinc_read_counts", 1);
}

static void
stats_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	read_counts = ShmemInitStruct("mvinc_read_counts", sizeof(ReadCounts), &found);
	if (!found)
	{
		read_counts->lock = &(GetNamedLWLockTranche("mvinc_read_counts"))->lock;
		read_counts->full = false;
		for (int i = 0; i < MV_STATS_SLOTS; i++)
		{
			read_counts->slots[i].dboid = InvalidOid;
			read_counts->slots[i].viewid = InvalidOid;
			for (int p = 0; p < N_PATHS; p++)
				pg_atomic_init_u64(&read_counts->slots[i].reads[p], 0);
			pg_atomic_init_u32(&read_counts->slots[i].compactor, 0);
			pg_atomic_init_u32(&read_counts->slots[i].refresh_queued, 0);
			pg_atomic_init_u32(&read_counts->slots[i].refresh_pid, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * The slot of viewid in this database; with claim, a free one is taken
 * when there is none.  NULL when there is none (or no shared memory).
 */
static ReadCountSlot *
find_slot_in(Oid dboid, Oid viewid, bool claim)
{
	uint32		start;
	ReadCountSlot *slot = NULL;
	ReadCountSlot *tomb = NULL;
	ReadCountSlot *free_slot = NULL;

	if (read_counts == NULL)
		return NULL;
	if (claim && read_counts->full)
		return NULL;
	start = (viewid ^ (dboid * 2654435761u)) % MV_STATS_SLOTS;
	LWLockAcquire(read_counts->lock, claim ? LW_EXCLUSIVE : LW_SHARED);
	for (int n = 0; n < MV_STATS_SLOTS; n++)
	{
		ReadCountSlot *s = &read_counts->slots[(start + n) % MV_STATS_SLOTS];

		if (s->dboid == dboid && s->viewid == viewid)
		{
			slot = s;
			break;
		}
		if (s->dboid == InvalidOid && s->viewid == TOMBSTONE)
		{
			if (tomb == NULL)
				tomb = s;
			continue;
		}
		if (s->dboid == InvalidOid)
		{
			free_slot = s;
			break;
		}
	}
	if (slot == NULL && claim && (tomb != NULL || free_slot != NULL))
	{
		slot = tomb ? tomb : free_slot;
		for (int p = 0; p < N_PATHS; p++)
			pg_atomic_write_u64(&slot->reads[p], 0);
		pg_atomic_write_u32(&slot->compactor, 0);
		pg_atomic_write_u32(&slot->refresh_queued, 0);
		pg_atomic_write_u32(&slot->refresh_pid, 0);
		slot->dboid = dboid;
		slot->viewid = viewid;
	}
	if (slot == NULL && claim)
		read_counts->full = true;
	LWLockRelease(read_counts->lock);
	return slot;
}

static ReadCountSlot *
find_slot(Oid viewid, bool claim)
{
	return find_slot_in(MyDatabaseId, viewid, claim);
}

/* The slot of viewid, claimed if it has none (shared lock first) */
static ReadCountSlot *
slot_for(Oid viewid)
{
	ReadCountSlot *slot = find_slot(viewid, false);

	return slot ? slot : find_slot(viewid, true);
}

/* Count a read of viewid that took path */
void
MvCountRead(Oid viewid, MvReadBranch path)
{
	ReadCountSlot *slot = slot_for(viewid);

	if (slot != NULL)
		pg_atomic_fetch_add_u64(&slot->reads[path], 1);
}

/*
 * mvinc._read_counts(view): reads by path since the server started or the
 * counts were reset; NULLs for a caller who may not read the view, or
 * when the counts are not kept.
 */
Datum
mvinc_read_counts(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	TupleDesc	desc;
	Datum		values[N_PATHS];
	bool		nulls[N_PATHS];
	static const MvReadBranch order[N_PATHS] = {MV_READ_FRESH, MV_READ_MERGE,
	MV_READ_HYBRID, MV_READ_LIVE};
	ReadCountSlot *slot = NULL;
	bool		counted;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	counted = read_counts != NULL &&
		pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;

	/* a view never read has no slot (listing views claims none): zeros */
	if (counted)
		slot = find_slot(viewid, false);
	counted = counted && (slot != NULL || !read_counts->full);
	for (int i = 0; i < N_PATHS; i++)
	{
		nulls[i] = !counted;
		values[i] = Int64GetDatum(slot ? (int64) pg_atomic_read_u64(&slot->reads[order[i]]) : 0);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* Set the counts of viewid back to zero (reset, or the view dropped) */
void
MvForgetReadCounts(Oid viewid)
{
	ReadCountSlot *slot = find_slot(viewid, false);

	if (slot != NULL)
		for (int p = 0; p < N_PATHS; p++)
			pg_atomic_write_u64(&slot->reads[p], 0);
}

/* The view was dropped: its entry becomes a tombstone */
void
MvReleaseStats(Oid viewid)
{
	ReadCountSlot *slot = find_slot(viewid, false);

	if (slot == NULL)
		return;
	LWLockAcquire(read_counts->lock, LW_EXCLUSIVE);
	if (slot->dboid == MyDatabaseId && slot->viewid == viewid)
	{
		slot->dboid = InvalidOid;
		slot->viewid = TOMBSTONE;
		read_counts->full = false;
	}
	LWLockRelease(read_counts->lock);
}

/* mvinc.reset_read_counts(view) */
Datum
mvinc_reset_read_counts(PG_FUNCTION_ARGS)
{
	MvForgetReadCounts(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/* Ask for the shared memory (only while preloading) */
void
MvStatsInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
}

/*
 * At most one background compaction of a view waits to start: true when
 * the caller may start one (also when the table is full and cannot tell).
 * A claim older than a minute is taken over: its worker never started.
 */
bool
MvClaimCompactor(Oid viewid)
{
	ReadCountSlot *slot = slot_for(viewid);
	uint32		now = (uint32) time(NULL);
	uint32		queued;

	if (slot == NULL)
		return true;
	queued = pg_atomic_read_u32(&slot->compactor);
	if (queued != 0 && now - queued < 60)
		return false;
	return pg_atomic_compare_exchange_u32(&slot->compactor, &queued, now);
}

/* The queued compaction of viewid in dboid started (or never will) */
void
MvReleaseCompactor(Oid dboid, Oid viewid)
{
	ReadCountSlot *slot = find_slot_in(dboid, viewid, false);

	if (slot != NULL)
		pg_atomic_write_u32(&slot->compactor, 0);
}

/*
 * Is an automatic refresh of the slot's view queued or running?  A queued
 * one that has not started within a minute never will (its worker could
 * not be forked).
 */
static bool
refresh_busy(ReadCountSlot *s, uint32 now)
{
	uint32		queued = pg_atomic_read_u32(&s->refresh_queued);

	return pg_atomic_read_u32(&s->refresh_pid) != 0 ||
		(queued != 0 && now - queued < 60);
}

/* Is an automatic refresh of viewid queued or running? */
bool
MvRefresherBusy(Oid viewid)
{
	ReadCountSlot *slot = find_slot(viewid, false);

	return slot != NULL && refresh_busy(slot, (uint32) time(NULL));
}

/*
 * Queue an automatic refresh of viewid unless one is queued or running
 * (MV_CLAIM_BUSY), or max_total refreshes run in the server or max_db in
 * this database (MV_CLAIM_FULL; also when the table has no entry left).
 */
MvClaim
MvClaimRefresher(Oid viewid, int max_total, int max_db)
{
	ReadCountSlot *slot = slot_for(viewid);
	uint32		now = (uint32) time(NULL);
	int			total = 0;
	int			in_db = 0;
	MvClaim		claimed = MV_CLAIM_FULL;

	if (slot == NULL)
		return MV_CLAIM_FULL;
	LWLockAcquire(read_counts->lock, LW_EXCLUSIVE);
	for (int i = 0; i < MV_STATS_SLOTS; i++)
	{
		ReadCountSlot *s = &read_counts->slots[i];

		if (s->dboid == InvalidOid || !refresh_busy(s, now))
			continue;
		total++;
		if (s->dboid == MyDatabaseId)
			in_db++;
	}
	if (refresh_busy(slot, now))
		claimed = MV_CLAIM_BUSY;
	else if (total < max_total && in_db < max_db)
	{
		pg_atomic_write_u32(&slot->refresh_queued, now);
		claimed = MV_CLAIM_OK;
	}
	LWLockRelease(read_counts->lock);
	return claimed;
}

/*
 * The refresh worker of viewid in dboid started (pid, its own), or ended
 * (0: clears its own pid only, not that of a worker that took over a
 * claim), or was never started (0 from the tick: clears the queue mark).
 */
void
MvSetRefresher(Oid dboid, Oid viewid, int pid)
{
	ReadCountSlot *slot = find_slot_in(dboid, viewid, false);
	uint32		mine = (uint32) MyProcPid;

	if (slot == NULL)
		return;
	if (pid != 0)
		pg_atomic_write_u32(&slot->refresh_pid, (uint32) pid);
	else
		(void) pg_atomic_compare_exchange_u32(&slot->refresh_pid, &mine, 0);
	pg_atomic_write_u32(&slot->refresh_queued, 0);
}

/* Ask the automatic refreshes running in dboid to stop (DROP DATABASE) */
void
MvStopRefreshersOf(Oid dboid)
{
	if (read_counts == NULL)
		return;
	LWLockAcquire(read_counts->lock, LW_SHARED);
	for (int i = 0; i < MV_STATS_SLOTS; i++)
	{
		ReadCountSlot *s = &read_counts->slots[i];
		uint32		pid = pg_atomic_read_u32(&s->refresh_pid);

		if (s->dboid == dboid && pid != 0)
			(void) kill((pid_t) pid, SIGTERM);
	}
	LWLockRelease(read_counts->lock);
}
