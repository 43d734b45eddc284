/*-------------------------------------------------------------------------
 * capture_commits.c
 *	  How far capture must get before a read may trust one source's change
 *	  log.  Backends that commit changes to a source publish the end of that
 *	  commit in shared memory, so a reader waits for capture up to the last
 *	  commit that changed its source, not up to the end of all WAL written
 *	  since (other tables', other databases').
 *
 *	  One entry per (database, source) that a read asked about, claimed by
 *	  that read (open addressing; when the table is full, reads of further
 *	  sources wait for the insert position, as without it).  The rules
 *	  (docs/internals.md, "Capture targets"):
 *	  - a writer counts itself, at pre-commit, in the entry of each source
 *	    its transaction may have changed (it holds a lock on it of a mode
 *	    that every change takes: ROW EXCLUSIVE or stronger);
 *	    at commit it raises the entry's last commit end to its own, then
 *	    uncounts itself; at abort it only uncounts;
 *	  - an entry is trusted once every transaction that could have passed
 *	    its pre-commit before the entry existed has ended: the claim notes
 *	    the next xid, and the entry becomes ready when the oldest running
 *	    xid reaches it, ready_lsn being the insert position then (all those
 *	    commits end before it);
 *	  - so a reader whose snapshot sees a commit that changed the source
 *	    finds its writer still counted (and waits for the insert position)
 *	    or finds its commit end in the entry (or below ready_lsn);
 *	  - PREPARE TRANSACTION of a writer makes the entry untrusted again
 *	    (COMMIT PREPARED runs in another session that does not know what
 *	    the transaction changed) until the prepared transaction has ended.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "capture/capture.h"

#define COMMIT_ENTRIES 2048

typedef struct SourceCommits
{
	Oid			dboid;			/* InvalidOid: free (set under the lock) */
	Oid			relid;
	pg_atomic_uint32 writers;	/* counted at pre-commit, not yet uncounted */
	pg_atomic_uint64 last_commit_end;	/* highest commit end published */
	pg_atomic_uint64 ready_lsn; /* 0 while untrusted (written under the lock) */
	FullTransactionId ready_after;	/* under the lock: xids before it must end */
} SourceCommits;

typedef struct CommitsShared
{
	LWLock	   *lock;
	pg_atomic_uint32 generation;	/* bumped when an entry changes source */
	SourceCommits entries[COMMIT_ENTRIES];
} CommitsShared;

static CommitsShared *commits = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* This backend's copy of the entries of its database (writers' side) */
static uint32 cached_generation = 0;	/* the shared one starts at 1 */
static int	n_cached = 0;
static int *cached_index = NULL;
static Oid *cached_relid = NULL;

/* Entries this transaction counted itself in at pre-commit */
static int	n_counted = 0;
static int *counted_index = NULL;

static void
commits_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(CommitsShared));
	RequestNamedLWLockTranche("mvinc_capture_commits", 1);
}

static void
commits_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	commits = ShmemInitStruct("mvinc_capture_commits", sizeof(CommitsShared), &found);
	if (!found)
	{
		commits->lock = &(GetNamedLWLockTranche("mvinc_capture_commits"))->lock;
		pg_atomic_init_u32(&commits->generation, 1);
		for (int i = 0; i < COMMIT_ENTRIES; i++)
		{
			SourceCommits *e = &commits->entries[i];

			e->dboid = InvalidOid;
			e->relid = InvalidOid;
			pg_atomic_init_u32(&e->writers, 0);
			pg_atomic_init_u64(&e->last_commit_end, 0);
			pg_atomic_init_u64(&e->ready_lsn, 0);
			e->ready_after = InvalidFullTransactionId;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * May the current transaction have inserted, updated, deleted or truncated
 * rows of relid?  Every such change (COPY, triggers, foreign-key actions,
 * partition routing, logical replication apply included) holds ROW
 * EXCLUSIVE or a stronger lock on the table until the transaction ends,
 * and a subtransaction that rolls back releases the locks it took along
 * with its changes.  Unlike pgstat's counts this does not depend on
 * track_counts.  A lock taken without a change answers yes.
 */
bool
MvincXactMayHaveWritten(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	for (LOCKMODE mode = RowExclusiveLock; mode <= MaxLockMode; mode++)
		if (LockHeldByMe(&tag, mode))
			return true;
	return false;
}

/* Refresh this backend's list of its database's entries when it changed */
static void
refresh_cache(void)
{
	uint32		gen;

	pg_memory_barrier();
	if (pg_atomic_read_u32(&commits->generation) == cached_generation)
		return;
	if (cached_index == NULL)
	{
		int		   *index = MemoryContextAlloc(TopMemoryContext, COMMIT_ENTRIES * sizeof(int));
		Oid		   *relids = MemoryContextAlloc(TopMemoryContext, COMMIT_ENTRIES * sizeof(Oid));
		int		   *counted = MemoryContextAlloc(TopMemoryContext, COMMIT_ENTRIES * sizeof(int));

		cached_relid = relids;
		counted_index = counted;
		cached_index = index;
	}
	LWLockAcquire(commits->lock, LW_SHARED);
	gen = pg_atomic_read_u32(&commits->generation);
	n_cached = 0;
	for (int i = 0; i < COMMIT_ENTRIES; i++)
	{
		if (commits->entries[i].dboid != MyDatabaseId)
			continue;
		cached_index[n_cached] = i;
		cached_relid[n_cached] = commits->entries[i].relid;
		n_cached++;
	}
	LWLockRelease(commits->lock);
	cached_generation = gen;
}

/* Make an entry untrusted until the transactions running now have ended */
static void
untrust(SourceCommits *e)
{
	pg_atomic_write_u64(&e->ready_lsn, 0);
	e->ready_after = ReadNextFullTransactionId();
}

/* The writers' side, at the end of each transaction that has an xid */
static void
commits_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			n_counted = 0;
			if (commits == NULL || !OidIsValid(MyDatabaseId) ||
				!TransactionIdIsValid(GetTopTransactionIdIfAny()))
				return;
			refresh_cache();
			for (int i = 0; i < n_cached; i++)
			{
				if (!MvincXactMayHaveWritten(cached_relid[i]))
					continue;
				if (event == XACT_EVENT_PRE_COMMIT)
				{
					pg_atomic_fetch_add_u32(&commits->entries[cached_index[i]].writers, 1);
					counted_index[n_counted++] = cached_index[i];
				}
				else
				{
					LWLockAcquire(commits->lock, LW_EXCLUSIVE);
					if (commits->entries[cached_index[i]].relid == cached_relid[i])
						untrust(&commits->entries[cached_index[i]]);
					LWLockRelease(commits->lock);
				}
			}
			break;
		case XACT_EVENT_COMMIT:
			for (int i = 0; i < n_counted; i++)
			{
				SourceCommits *e = &commits->entries[counted_index[i]];
				uint64		end = XactLastCommitEnd;
				uint64		cur = pg_atomic_read_u64(&e->last_commit_end);

				while (cur < end &&
					   !pg_atomic_compare_exchange_u64(&e->last_commit_end, &cur, end))
					;
				pg_write_barrier();
				pg_atomic_fetch_sub_u32(&e->writers, 1);
			}
			n_counted = 0;
			break;
		case XACT_EVENT_ABORT:
			for (int i = 0; i < n_counted; i++)
				pg_atomic_fetch_sub_u32(&commits->entries[counted_index[i]].writers, 1);
			n_counted = 0;
			break;
		default:
			break;
	}
}

/*
 * Entries of this database whose relation was dropped and that no writer
 * counts in (their number; their relids in relids[]).  The relation check
 * reads the catalog, so no lock is held.
 */
static int
dropped_entries(Oid *relids)
{
	int			n = 0;

	LWLockAcquire(commits->lock, LW_SHARED);
	for (int i = 0; i < COMMIT_ENTRIES; i++)
		if (commits->entries[i].dboid == MyDatabaseId)
			relids[n++] = commits->entries[i].relid;
	LWLockRelease(commits->lock);
	for (int i = 0; i < n;)
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relids[i])))
			relids[i] = relids[--n];
		else
			i++;
	}
	return n;
}

/* The entry of relid in this database, or NULL; caller holds the lock */
static SourceCommits *
find_entry(Oid relid, SourceCommits **free_entry)
{
	uint32		start = (relid ^ (MyDatabaseId * 2654435761u)) % COMMIT_ENTRIES;

	*free_entry = NULL;
	for (int n = 0; n < COMMIT_ENTRIES; n++)
	{
		SourceCommits *e = &commits->entries[(start + n) % COMMIT_ENTRIES];

		if (e->dboid == MyDatabaseId && e->relid == relid)
			return e;
		if (e->dboid == InvalidOid)
		{
			*free_entry = e;
			return NULL;
		}
	}
	return NULL;
}

/*
 * The entry of relid in this database, claimed when there is none: a free
 * one, or when the table is full one of this database whose relation was
 * dropped and that no writer counts in.  NULL when there is none.
 * Entries are never freed, so a probe stops at the first free one.
 */
static SourceCommits *
entry_for(Oid relid)
{
	SourceCommits *e;
	SourceCommits *claim;
	Oid		   *dropped = NULL;
	int			n_dropped = 0;

	LWLockAcquire(commits->lock, LW_SHARED);
	e = find_entry(relid, &claim);
	LWLockRelease(commits->lock);
	if (e != NULL)
		return e;
	if (claim == NULL)
	{
		dropped = palloc(COMMIT_ENTRIES * sizeof(Oid));
		n_dropped = dropped_entries(dropped);
	}

	LWLockAcquire(commits->lock, LW_EXCLUSIVE);
	e = find_entry(relid, &claim);
	for (int i = 0; e == NULL && claim == NULL && i < COMMIT_ENTRIES; i++)
	{
		SourceCommits *c = &commits->entries[i];

		if (c->dboid != MyDatabaseId || pg_atomic_read_u32(&c->writers) != 0)
			continue;
		for (int d = 0; d < n_dropped && claim == NULL; d++)
			if (c->relid == dropped[d])
				claim = c;
	}
	if (e == NULL && claim != NULL)
	{
		claim->dboid = MyDatabaseId;
		claim->relid = relid;
		pg_atomic_write_u64(&claim->last_commit_end, 0);
		/* 0 is what a backend's copy starts at: never the shared value */
		if (pg_atomic_add_fetch_u32(&commits->generation, 1) == 0)
			pg_atomic_add_fetch_u32(&commits->generation, 1);
		/* after the generation: a writer with a later xid sees the entry */
		untrust(claim);
		e = claim;
	}
	LWLockRelease(commits->lock);
	if (dropped)
		pfree(dropped);
	return e;
}

/* Has every transaction with an xid before the entry's ready_after ended? */
static bool
waited_out(FullTransactionId ready_after)
{
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId oldest = GetOldestActiveTransactionId();
	uint64		oldest_full;

	/* the oldest running xid is less than 2^31 behind the next one */
	oldest_full = U64FromFullTransactionId(next) -
		(uint32) (XidFromFullTransactionId(next) - oldest);
	return oldest_full >= U64FromFullTransactionId(ready_after);
}

/* Trust the entry once the transactions it waits for have ended */
static XLogRecPtr
try_trust(SourceCommits *e)
{
	FullTransactionId after;
	XLogRecPtr	ready;

	LWLockAcquire(commits->lock, LW_SHARED);
	after = e->ready_after;
	LWLockRelease(commits->lock);
	if (!waited_out(after))
		return InvalidXLogRecPtr;

	LWLockAcquire(commits->lock, LW_EXCLUSIVE);
	ready = pg_atomic_read_u64(&e->ready_lsn);
	/* a PREPARE since may have untrusted it again */
	if (ready == InvalidXLogRecPtr && FullTransactionIdEquals(e->ready_after, after))
	{
		ready = MvincRecordEndFloor(GetXLogInsertRecPtr());
		pg_atomic_write_u64(&e->ready_lsn, ready);
	}
	LWLockRelease(commits->lock);
	return ready;
}

/*
 * The entry of relid in this database: from this backend's copy of its
 * database's entries when it is there (no lock; an entry changes source
 * only when its relation was dropped, and a reader holds a lock on its
 * source), else from the table, claimed when missing.
 */
static SourceCommits *
lookup(Oid relid)
{
	refresh_cache();
	for (int i = 0; i < n_cached; i++)
		if (cached_relid[i] == relid)
			return &commits->entries[cached_index[i]];
	return entry_for(relid);
}

/*
 * The position capture must reach before a snapshot taken before
 * insert_lsn may trust relid's change log: the end of the last commit that
 * changed relid, or insert_lsn when that is not known (a writer is
 * committing, the entry is not trusted yet, no shared memory).  Never more
 * than insert_lsn.
 */
XLogRecPtr
MvincCaptureTarget(Oid relid, XLogRecPtr insert_lsn)
{
	SourceCommits *e;
	XLogRecPtr	ready;
	XLogRecPtr	last;

	if (commits == NULL || !OidIsValid(MyDatabaseId) || RecoveryInProgress())
		return insert_lsn;
	e = lookup(relid);
	if (e == NULL)
		return insert_lsn;
	ready = pg_atomic_read_u64(&e->ready_lsn);
	if (ready == InvalidXLogRecPtr)
		ready = try_trust(e);
	if (ready == InvalidXLogRecPtr)
		return insert_lsn;
	/* a writer's commit end is stored before it uncounts itself */
	pg_memory_barrier();
	if (pg_atomic_read_u32(&e->writers) > 0)
		return insert_lsn;
	pg_read_barrier();
	last = pg_atomic_read_u64(&e->last_commit_end);
	pg_read_barrier();
	if (e->dboid != MyDatabaseId || e->relid != relid)
		return insert_lsn;
	return Min(insert_lsn, Max(ready, last));
}

/* Shared memory (only while preloading) and the writers' callback */
void
MvincCommitsInit(void)
{
	RegisterXactCallback(commits_xact_callback, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = commits_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = commits_shmem_startup;
}
