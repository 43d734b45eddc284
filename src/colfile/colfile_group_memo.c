/*-------------------------------------------------------------------------
 * colfile_group_memo.c
 *	  What lookups of the row group owning a TID block (ColfileFindRowGroup)
 *	  under one MVCC snapshot have learned, so that the next ones need not
 *	  walk the same invisible group tuples again.
 *
 * A lookup scans the group tuples of a relfilenode backwards from the
 * block and stops at the first one the snapshot sees. Under a snapshot
 * older than many later inserts, the index entries of the rows inserted
 * since point into groups it does not see, and every such lookup walked
 * back over all the invisible group tuples between its block and the
 * newest group the snapshot sees: quadratic in the inserts.
 *
 * A lookup that found no owner leaves a span: no group tuple the snapshot
 * sees starts in (start, end], and the first one at or below start starts
 * there and ends at block start_last (start is COLFILE_NO_GROUP when there
 * is none). A later lookup in the span has its answer without a scan
 * (above start_last, or no group below) or scans from start; one above a
 * span's end scans down to that end only, and the span grows to it.
 *
 * Spans are kept per (relfilenode, snapshot) and are only as good as the
 * visibility they were read under: they must not outlive a change of what
 * the snapshot sees. What an MVCC snapshot sees of other transactions is
 * fixed by its contents (MvincSnapshotKey, mvinc_snapshot_key.c: xmin,
 * xmax, xip, subxip; equal contents, equal visibility, as
 * GetSnapshotDataReuse relies on). What it sees of our own transaction also
 * depends on curcid (part of the key) and changes only when
 *  - we insert a group tuple with a command id older than the current one
 *    (a write buffer flushed late: ColfileInsertRowGroup forgets all),
 *  - a subtransaction aborts (its inserts vanish, but its deletions too:
 *    a tuple it deleted is seen again: forgotten at the abort),
 *  - the transaction ends (our xid becomes some other transaction's to
 *    later snapshots: forgotten).
 * Deletions of group tuples use the current command id, which no existing
 * snapshot sees; other transactions' inserts and deletions (compaction,
 * VACUUM, TRUNCATE's new file) are invisible to a snapshot taken before,
 * and their tuples cannot be pruned while it runs. Any invalidation of
 * the metadata tables forgets all too. Only SNAPSHOT_MVCC snapshots use
 * the memo; memory is bounded by MEMO_ENTRIES x MEMO_SPANS.
 *
 * Under SERIALIZABLE a lookup must also conflict out to the writer of the
 * group tuple that would own its block, seen or not (MvincUnlockedVisible),
 * as heap's index fetch does on the tuple itself: that is how a reader
 * learns of a concurrent writer whose row it meets in the index after the
 * writer's checks ran (colfile_ssi.c). A concurrent writer may add a group
 * inside a span learned earlier (TID space it reserved before, below
 * blocks looked up since), which the memo would skip: ColfileFindRowGroup
 * meets those tuples first (the nearest at or below the block: one index
 * probe), then asks the memo.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/snapshot.h"

#include "mvinc.h"
#include "colfile/colfile.h"

#define MEMO_ENTRIES 4			/* (relfilenode, snapshot) pairs kept */
#define MEMO_SPANS 1024			/* spans kept per pair (24 bytes each) */

typedef struct MemoSpan
{
	int64		start;			/* first_block of the group seen below, or
								 * COLFILE_NO_GROUP */
	int64		start_last;		/* that group's last block */
	int64		end;			/* no group seen starts in (start, end] */
} MemoSpan;

typedef struct MemoEntry
{
	bool		used;
	Oid			relfilenode;
	uint64		last_use;
	MvincSnapshotKey snapshot;	/* what its snapshot sees (ids in memo_cxt) */
	/* spans by start, disjoint */
	int			nspans;
	int			maxspans;
	MemoSpan   *spans;
} MemoEntry;

static MemoEntry memo[MEMO_ENTRIES];
static MemoryContext memo_cxt = NULL;
static uint64 memo_clock = 0;
static uint64 memo_generation = 1;
static bool memo_empty = true;

static MemoEntry *
find_entry(Oid relfilenode, Snapshot snapshot)
{
	for (int i = 0; i < MEMO_ENTRIES; i++)
		if (memo[i].used && memo[i].relfilenode == relfilenode &&
			MvincSnapshotKeyMatches(&memo[i].snapshot, snapshot))
			return &memo[i];
	return NULL;
}

/* The entry for (relfilenode, snapshot), made in place of the oldest */
static MemoEntry *
make_entry(Oid relfilenode, Snapshot snapshot)
{
	MemoEntry  *e = &memo[0];

	for (int i = 1; i < MEMO_ENTRIES && e->used; i++)
		if (!memo[i].used || memo[i].last_use < e->last_use)
			e = &memo[i];
	if (e->used)
	{
		MvincSnapshotKeyFree(&e->snapshot);
		pfree(e->spans);
	}
	if (memo_cxt == NULL)
		memo_cxt = AllocSetContextCreate(TopMemoryContext, "colfile group memo",
										 ALLOCSET_SMALL_SIZES);
	memset(e, 0, sizeof(MemoEntry));
	e->relfilenode = relfilenode;
	MvincSnapshotKeySet(&e->snapshot, snapshot, memo_cxt);
	e->maxspans = 16;
	e->spans = MemoryContextAlloc(memo_cxt, sizeof(MemoSpan) * e->maxspans);
	e->last_use = ++memo_clock;
	e->used = true;
	memo_empty = false;
	return e;
}

/* Index of the last span starting at or below block, or -1 */
static int
span_below(const MemoEntry *e, int64 block)
{
	int			lo = 0,
				hi = e->nspans - 1;

	if (e->nspans == 0 || e->spans[0].start > block)
		return -1;
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (e->spans[mid].start <= block)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Forget everything (see the header comment for when) */
void
ColfileGroupMemoForget(void)
{
	if (memo_empty)
		return;
	memo_generation++;
	memset(memo, 0, sizeof(memo));
	if (memo_cxt)
		MemoryContextReset(memo_cxt);
	memo_empty = true;
}

/*
 * How a lookup of the group owning block under snapshot should go:
 * plan->absent when no group the snapshot sees owns it, else a scan of
 * the group tuples starting at or below plan->from and (unless
 * COLFILE_NO_GROUP) above plan->above.
 */
void
ColfileGroupMemoPlanFor(Oid relfilenode, int64 block, Snapshot snapshot,
						ColfileGroupMemoPlan *plan)
{
	MemoEntry  *e;
	int			i;

	plan->use = snapshot->snapshot_type == SNAPSHOT_MVCC;
	plan->absent = false;
	plan->from = block;
	plan->above = COLFILE_NO_GROUP;
	plan->generation = memo_generation;
	if (!plan->use || memo_empty || (e = find_entry(relfilenode, snapshot)) == NULL)
		return;
	e->last_use = ++memo_clock;
	if ((i = span_below(e, block)) < 0)
		return;
	if (block > e->spans[i].end)
		plan->above = e->spans[i].end;	/* walk down to the span only */
	else if (e->spans[i].start == COLFILE_NO_GROUP || block > e->spans[i].start_last)
		plan->absent = true;
	else
		plan->from = e->spans[i].start;
}

/*
 * Record what a lookup planned by plan found: no owner of block; the scan
 * stopped at the group tuple starting at met (COLFILE_NO_GROUP: none)
 * ending at block met_last. False when nothing was recorded: the memo
 * changed since the plan, or what was found contradicts it (then it is
 * forgotten).
 */
bool
ColfileGroupMemoNote(const ColfileGroupMemoPlan *plan, Oid relfilenode,
					 Snapshot snapshot, int64 block, int64 met, int64 met_last)
{
	MemoEntry  *e;
	int			i;

	if (!plan->use || plan->generation != memo_generation)
		return false;
	e = find_entry(relfilenode, snapshot);
	if (e == NULL)
	{
		if (plan->above != COLFILE_NO_GROUP || plan->from != block)
			return false;		/* (the plan was made from an entry) */
		e = make_entry(relfilenode, snapshot);
	}
	i = span_below(e, block);
	if (plan->above != COLFILE_NO_GROUP && met == COLFILE_NO_GROUP)
	{
		/* nothing seen in (above, block]: the span below reaches block */
		if (i < 0 || e->spans[i].end != plan->above)
		{
			ColfileGroupMemoForget();
			return false;
		}
		e->spans[i].end = block;
		return true;
	}
	if (i >= 0 && e->spans[i].start == met)
	{
		/* from a span's start, or past its end to the same group */
		e->spans[i].end = Max(e->spans[i].end, block);
		return true;
	}
	if ((i >= 0 && e->spans[i].start > met) ||
		(i >= 0 && e->spans[i].end >= block) ||
		(plan->above == COLFILE_NO_GROUP && plan->from != block))
	{
		/* a span said otherwise: visibility changed under us */
		ColfileGroupMemoForget();
		return false;
	}
	/* a new span (met, block], after span i (which ends below met) */
	if (e->nspans == MEMO_SPANS)
	{
		e->nspans = 0;			/* full: start over */
		i = -1;
	}
	if (e->nspans == e->maxspans)
	{
		e->maxspans = Min(e->maxspans * 2, MEMO_SPANS);
		e->spans = repalloc(e->spans, sizeof(MemoSpan) * e->maxspans);
	}
	memmove(&e->spans[i + 2], &e->spans[i + 1], sizeof(MemoSpan) * (e->nspans - i - 1));
	e->spans[i + 1].start = met;
	e->spans[i + 1].start_last = met_last;
	e->spans[i + 1].end = block;
	e->nspans++;
	return true;
}
