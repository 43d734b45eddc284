/*-------------------------------------------------------------------------
 * colfile_reader.c
 *	  Reading rows: TID <-> (row group, position), visibility of a row under
 *	  a snapshot (row group metadata tuple and row state records), loading
 *	  row groups and decoding only the columns asked for.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

/* TID of row pos of the row group starting at first_block */
void
ColfileTidFor(int64 first_block, int pos, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (first_block + pos / COLFILE_ROWS_PER_BLOCK),
				   (OffsetNumber) (pos % COLFILE_ROWS_PER_BLOCK + 1));
}

/* Position of tid within the row group starting at first_block */
int
ColfilePosFor(int64 first_block, ItemPointer tid)
{
	return (int) (((int64) ItemPointerGetBlockNumberNoCheck(tid) - first_block) *
				  COLFILE_ROWS_PER_BLOCK +
				  ItemPointerGetOffsetNumberNoCheck(tid) - 1);
}

/* Row id of row pos of a compacted group */
static inline int64
stored_rowid(const ColfileRowGroup *rg, int pos)
{
	int64		id;

	memcpy(&id, VARDATA(rg->directory) + rg->rowids_off + (Size) pos * sizeof(int64),
		   sizeof(int64));
	return id;
}

/* TID of row pos of a row group (plain or compacted) */
void
ColfileGroupTid(const ColfileRowGroup *rg, int pos, ItemPointer tid)
{
	int64		id;

	if (rg->rowids_off == 0)
	{
		ColfileTidFor(rg->first_block, pos, tid);
		return;
	}
	id = stored_rowid(rg, pos);
	ItemPointerSet(tid, (BlockNumber) (id / COLFILE_ROWS_PER_BLOCK),
				   (OffsetNumber) (id % COLFILE_ROWS_PER_BLOCK + 1));
}

/* Is row pos gone from the group (set in its delete vector)? */
bool
ColfileGroupRowGone(const ColfileRowGroup *rg, int pos)
{
	uint8		byte;

	if (rg->dead_off == 0)
		return false;
	byte = ((const uint8 *) VARDATA(rg->directory))[rg->dead_off + pos / 8];
	return (byte & (1 << (pos % 8))) != 0;
}

/*
 * Position of tid in a row group (plain, compacted or a reservation), or -1
 * (also for a row gone into the delete vector)
 */
int
ColfileGroupPos(const ColfileRowGroup *rg, ItemPointer tid)
{
	int64		want;
	int			lo,
				hi;

	if (rg->rowids_off == 0)
	{
		int			pos = ColfilePosFor(rg->first_block, tid);

		return pos >= 0 && pos < Abs(rg->nrows) && !ColfileGroupRowGone(rg, pos) ? pos : -1;
	}
	want = (int64) ItemPointerGetBlockNumberNoCheck(tid) * COLFILE_ROWS_PER_BLOCK +
		ItemPointerGetOffsetNumberNoCheck(tid) - 1;
	lo = 0;
	hi = rg->nrows - 1;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int64		id = stored_rowid(rg, mid);

		if (id == want)
			return ColfileGroupRowGone(rg, mid) ? -1 : mid;
		if (id < want)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* The last TID block a row group's rows may use */
int64
ColfileGroupLastBlock(const ColfileRowGroup *rg)
{
	if (rg->rowids_off == 0 || rg->nrows <= 0)
		return rg->first_block +
			(Abs(rg->nrows) + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK - 1;
	return stored_rowid(rg, rg->nrows - 1) / COLFILE_ROWS_PER_BLOCK;
}

/* Make a row group ready for decoding in a child of parent */
ColfileGroupCache *
ColfileLoadGroup(Relation rel, ColfileRowGroup *rg, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "colfile row group",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColfileGroupCache *gc = palloc0(sizeof(ColfileGroupCache));

	gc->cxt = cxt;
	gc->rg = *rg;
	gc->rg.directory = (bytea *) palloc(VARSIZE(rg->directory));
	memcpy(gc->rg.directory, rg->directory, VARSIZE(rg->directory));
	gc->natts = RelationGetDescr(rel)->natts;
	gc->cols = palloc0(sizeof(ColfileDecoded *) * Max(gc->natts, 1));
	MemoryContextSwitchTo(old);
	return gc;
}

/* Release a loaded row group */
void
ColfileFreeGroup(ColfileGroupCache *gc)
{
	if (gc)
		MemoryContextDelete(gc->cxt);
}

/* Turn a set of needed attnums (1-based; NULL = all) into a column array */
ColfileProj *
ColfileMakeProj(Bitmapset *needed, int natts)
{
	ColfileProj *p;
	int			x = -1;

	if (needed == NULL)
		return NULL;
	p = palloc0(sizeof(ColfileProj));
	p->cols = palloc(sizeof(int) * Max(natts, 1));
	p->want = palloc0(sizeof(bool) * Max(natts, 1));
	while ((x = bms_next_member(needed, x)) >= 0)
		if (x >= 1 && x <= natts)
		{
			p->cols[p->ncols++] = x - 1;
			p->want[x - 1] = true;
		}
	return p;
}

/*
 * Decode (once per group) and fetch one value. The slot's descriptor, not
 * the relation's, says how to read the stored bytes: ALTER COLUMN TYPE
 * reads the old rows with the old descriptor after the catalog changed.
 */
static inline void
fill_one(Relation rel, ColfileGroupCache *gc, int a, int pos, TupleTableSlot *slot,
		 Buffer *pinned)
{
	if (a >= gc->natts)
	{
		slot->tts_values[a] = (Datum) 0;
		slot->tts_isnull[a] = true;
		return;
	}
	if (gc->by_block && gc->cols[a] == NULL)
	{
		int			bno = pos / COLFILE_ROWS_PER_MINIBLOCK;
		int			nblocks = (gc->rg.nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;
		ColfileDecoded *d;

		if ((gc->blocks[a] == NULL || gc->blocks[a][bno] == NULL) &&
			gc->touched[a] != bno)
		{
			/*
			 * First touch of this block: decode the one value, keeping
			 * nothing (a point lookup reads one row per block). A second
			 * row of the same block decodes and keeps the whole block.
			 * By-reference values go to the current (per-fetch) context.
			 */
			Buffer		buf = *pinned;

			*pinned = InvalidBuffer;
			gc->touched[a] = bno;
			ColfileDecodeValue(rel, &gc->rg, slot->tts_tupleDescriptor, a + 1,
							   pos, buf, &slot->tts_values[a], &slot->tts_isnull[a]);
			return;
		}
		if (gc->blocks[a] == NULL)
			gc->blocks[a] = MemoryContextAllocZero(gc->cxt, sizeof(ColfileDecoded *) * nblocks);
		if (gc->blocks[a][bno] == NULL)
			gc->blocks[a][bno] = ColfileDecodeBlock(rel, &gc->rg,
													slot->tts_tupleDescriptor,
													a + 1, bno, gc->cxt);
		d = gc->blocks[a][bno];
		slot->tts_values[a] = d->values[pos % COLFILE_ROWS_PER_MINIBLOCK];
		slot->tts_isnull[a] = d->isnull[pos % COLFILE_ROWS_PER_MINIBLOCK];
		return;
	}
	if (gc->cols[a] == NULL)
		gc->cols[a] = gc->nvisible > 0 ?
			ColfileDecodeColumn(rel, gc, a, slot->tts_tupleDescriptor) :
			ColfileDecodeChunk(rel, &gc->rg, slot->tts_tupleDescriptor, a + 1, gc->cxt);
	slot->tts_values[a] = gc->cols[a]->values[pos];
	slot->tts_isnull[a] = gc->cols[a]->isnull[pos];
}

/*
 * Column a (0-based) of a group loaded by a scan (not by block), decoded
 * whole with its column files overlaid, read with the descriptor desc
 */
ColfileDecoded *
ColfileGroupColumn(Relation rel, ColfileGroupCache *gc, int a, TupleDesc desc)
{
	Assert(!gc->by_block && a < gc->natts);
	if (gc->cols[a] == NULL)
		gc->cols[a] = gc->nvisible > 0 ?
			ColfileDecodeColumn(rel, gc, a, desc) :
			ColfileDecodeChunk(rel, &gc->rg, desc, a + 1, gc->cxt);
	return gc->cols[a];
}

/* Is reading row pos of column a a first touch of its mini-block? */
static inline bool
first_touch(ColfileGroupCache *gc, int a, int pos)
{
	int			bno = pos / COLFILE_ROWS_PER_MINIBLOCK;

	return a < gc->natts && (gc->cols == NULL || gc->cols[a] == NULL) &&
		(gc->blocks[a] == NULL || gc->blocks[a][bno] == NULL) &&
		gc->touched[a] != bno;
}

/* Make the per-block state of a group read by an index fetch */
static void
init_by_block(ColfileGroupCache *gc)
{
	gc->blocks = MemoryContextAllocZero(gc->cxt, sizeof(ColfileDecoded **) * gc->natts);
	gc->touched = MemoryContextAlloc(gc->cxt, sizeof(int) * gc->natts);
	memset(gc->touched, -1, sizeof(int) * gc->natts);
}

/*
 * Columns an index fetch prefetches ahead of decoding them: enough for
 * the cache misses to overlap, few enough pins for small shared_buffers
 */
#define PREFETCH_BATCH 32

static inline int
prefetch_batch(void)
{
	return Min(PREFETCH_BATCH, Max(1, NBuffers / 64));
}

/*
 * Before an index fetch decodes single values of the columns [from, to)
 * of the column list (proj, or all): pin their pages into pinned[] and
 * prefetch their lines, so that the cache misses overlap
 * (ColfilePrefetchValue)
 */
static void
prefetch_cols(Relation rel, ColfileGroupCache *gc, int pos, TupleTableSlot *slot,
			  ColfileProj *proj, int from, int to, Buffer *pinned)
{
	int			natts = slot->tts_tupleDescriptor->natts;
	int			i;

	for (i = from; i < to; i++)
	{
		int			a = proj ? proj->cols[i] : i;

		pinned[i - from] = InvalidBuffer;
		if (a < natts && first_touch(gc, a, pos))
			pinned[i - from] = ColfilePrefetchValue(rel, &gc->rg, slot->tts_tupleDescriptor,
													a + 1, pos);
	}
}

/* The slot's TID for row pos (per row: a plain group's is computed inline) */
static inline void
set_slot_tid(ColfileGroupCache *gc, int pos, TupleTableSlot *slot)
{
	if (gc->rg.rowids_off == 0)
		ItemPointerSet(&slot->tts_tid,
					   (BlockNumber) (gc->rg.first_block + pos / COLFILE_ROWS_PER_BLOCK),
					   (OffsetNumber) (pos % COLFILE_ROWS_PER_BLOCK + 1));
	else
		ColfileGroupTid(&gc->rg, pos, &slot->tts_tid);
}

/*
 * Store row pos of a loaded group into slot as a virtual tuple. Columns
 * not in proj (NULL: all) are NULL and never decoded; they are set to NULL
 * once per slot. With by_block, by-reference values may be allocated in
 * the current memory context: it must live as long as the slot's contents.
 */
void
ColfileFillSlot(Relation rel, ColfileGroupCache *gc, int pos,
				TupleTableSlot *slot, ColfileProj *proj)
{
	int			natts = slot->tts_tupleDescriptor->natts;
	int			ncols = proj ? proj->ncols : natts;
	int			batch = gc->by_block ? prefetch_batch() : 0;
	Buffer		pinned[PREFETCH_BATCH];
	Buffer		none = InvalidBuffer;
	int			a,
				i,
				j;

	ExecClearTuple(slot);
	if (gc->by_block && gc->blocks == NULL)
		init_by_block(gc);
	if (proj != NULL && proj->primed != slot)
	{
		for (a = 0; a < natts; a++)
		{
			slot->tts_values[a] = (Datum) 0;
			slot->tts_isnull[a] = true;
		}
		proj->primed = slot;
	}
	for (i = 0; i < ncols; i++)
	{
		a = proj ? proj->cols[i] : i;
		if (batch > 0 && i % batch == 0)
		{
			/* pins not used by the previous batch (none expected) */
			for (j = 0; i > 0 && j < batch; j++)
				if (BufferIsValid(pinned[j]))
					ReleaseBuffer(pinned[j]);
			prefetch_cols(rel, gc, pos, slot, proj, i, Min(i + batch, ncols), pinned);
		}
		if (a < natts)
			fill_one(rel, gc, a, pos, slot, batch > 0 ? &pinned[i % batch] : &none);
	}
	if (batch > 0 && ncols > 0)
	{
		/* pins not used by the last batch (none expected) */
		int			last = ncols - ((ncols - 1) / batch) * batch;

		for (j = 0; j < last; j++)
			if (BufferIsValid(pinned[j]))
				ReleaseBuffer(pinned[j]);
	}
	/* scans overlaid the decoded chunks; fetches by block overlay the row */
	if (gc->nvisible > 0 && gc->by_block)
		ColfileOverlayRow(rel, gc, pos, slot, proj);
	ExecStoreVirtualTuple(slot);
	set_slot_tid(gc, pos, slot);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * ColfileFillSlot for a sequential scan's rows: with the group decoded
 * whole (not by block), each column's value is at pos of its decoded
 * chunk, with column files already overlaid. Per row, so the general
 * path's prefetching and overlay branches are left out.
 */
void
ColfileFillSlotScan(Relation rel, ColfileGroupCache *gc, int pos,
					TupleTableSlot *slot, ColfileProj *proj)
{
	int			natts = slot->tts_tupleDescriptor->natts;
	int			ncols = proj ? proj->ncols : natts;
	Buffer		none = InvalidBuffer;

	if (gc->by_block || (proj != NULL && proj->primed != slot))
	{
		ColfileFillSlot(rel, gc, pos, slot, proj);
		return;
	}
	ExecClearTuple(slot);
	for (int i = 0; i < ncols; i++)
	{
		int			a = proj ? proj->cols[i] : i;
		ColfileDecoded *d;

		if (a >= natts)
			continue;
		if (unlikely(a >= gc->natts || gc->cols[a] == NULL))
		{
			fill_one(rel, gc, a, pos, slot, &none);
			continue;
		}
		d = gc->cols[a];
		slot->tts_values[a] = d->values[pos];
		slot->tts_isnull[a] = d->isnull[pos];
	}
	ExecStoreVirtualTuple(slot);
	set_slot_tid(gc, pos, slot);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * Is the row at tid visible under snapshot? Fills *rg with its row group.
 * A dirty snapshot reports in-progress inserters and deleters in its
 * xmin/xmax, as heap does.
 */
bool
ColfileRowVisible(Relation rel, ItemPointer tid, Snapshot snapshot,
				  ColfileRowGroup *rg)
{
	Oid			relfilenode = rel->rd_node.relNode;
	int			pos;
	List	   *states = NIL;
	bool		mvcc = snapshot->snapshot_type == SNAPSHOT_MVCC ||
		snapshot->snapshot_type == SNAPSHOT_HISTORIC_MVCC;
	int64		floor;

	if (!ItemPointerIsValid(tid))
		return false;
	/* below the floor (or no file): an earlier life's TID, no row now */
	floor = ColfileTidFloorCached(rel);
	if (floor < 0 || (int64) ItemPointerGetBlockNumber(tid) < floor)
		return false;

	/*
	 * Other snapshots judge the row by its records, read before its group:
	 * a VACUUM committing in between may have folded the row (dead to
	 * everybody) into the group's delete vector and deleted its records;
	 * read in this order, the row is dead either way.
	 */
	if (!mvcc && snapshot->snapshot_type != SNAPSHOT_ANY)
		states = ColfileRowStatesFor(relfilenode, tid);
	if (!ColfileFindRowGroup(relfilenode, ItemPointerGetBlockNumber(tid),
							 snapshot, rg))
	{
		list_free_deep(states);
		return false;
	}
	pos = ColfileGroupPos(rg, tid);
	if (rg->nrows < 0)
	{
		/*
		 * A reservation: rows still in their writer's buffer. Uniqueness
		 * checks see them: a dirty snapshot with xmin set to the writer, so
		 * that the checker waits for it, and SnapshotSelf (the writer's own
		 * check that its new row is alive). MVCC snapshots never do (the
		 * writer flushes before its own later commands read).
		 */
		list_free_deep(states);
		if (mvcc)
			return false;
		return pos >= 0;
	}
	if (pos < 0)
	{
		list_free_deep(states);
		return false;
	}

	switch (snapshot->snapshot_type)
	{
		case SNAPSHOT_MVCC:
		case SNAPSHOT_HISTORIC_MVCC:
			return !ColfileRowDeletedFor(relfilenode, tid, snapshot);
		case SNAPSHOT_ANY:
			return true;
		default:
			{
				ListCell   *lc;
				bool		visible = true;

				foreach(lc, states)
				{
					ColfileRowState *rs = lfirst(lc);

					if (rs->kind == ROWSTATE_KILLED)
						visible = false;
					else if (rs->kind == ROWSTATE_DELETED || rs->kind == ROWSTATE_UPDATED)
					{
						if (snapshot->snapshot_type == SNAPSHOT_NON_VACUUMABLE)
							continue;
						if (TransactionIdIsCurrentTransactionId(rs->xmin))
							visible = false;
						else if (TransactionIdIsInProgress(rs->xmin))
						{
							if (snapshot->snapshot_type == SNAPSHOT_DIRTY)
								snapshot->xmax = rs->xmin;
						}
						else
							visible = false;	/* committed (aborted ones are left out) */
					}
				}
				list_free_deep(states);
				return visible;
			}
	}
}

/*
 * The row group last used by ColfileFetchRow, kept across calls: an UPDATE
 * fetches its old rows one by one, mostly from the same group. Row groups
 * never change once written, and (relfilenode, first_block, seq) never
 * names another one (a compacted group takes a new seq), so the cache
 * cannot go stale; the slot is
 * materialized, so replacing the cache never pulls memory from under it.
 */
static ColfileGroupCache *fetch_cache = NULL;
static void drop_fetch_cache(void);
static Oid	fetch_cache_relfilenode = InvalidOid;

/*
 * The rewriters of the relations ColfileCheckRewrite read last, until
 * transaction end (a rewriter is set once, when its file is made, and a
 * file number is not reused within a transaction), with the verdict when
 * it cannot concern any snapshot of this transaction: then a check is one
 * lookup here (it runs at every index fetch).
 */
#define REWRITE_CACHE_SIZE 8
static struct
{
	RelFileNode node;
	FullTransactionId xid;
	bool		seen_by_all;	/* every snapshot of this transaction sees it */
}			rewrite_cache[REWRITE_CACHE_SIZE];
static int	rewrite_cache_used = 0;
static int	rewrite_cache_next = 0;

/* The cache entry of rel's rewriter, read from the metapage when missing */
static int
rewrite_entry(Relation rel)
{
	int			i;
	FullTransactionId fxid;

	for (i = 0; i < rewrite_cache_used; i++)
		if (RelFileNodeEquals(rewrite_cache[i].node, rel->rd_node))
			return i;
	i = rewrite_cache_next;
	rewrite_cache_next = (rewrite_cache_next + 1) % REWRITE_CACHE_SIZE;
	if (rewrite_cache_used < REWRITE_CACHE_SIZE)
		rewrite_cache_used++;
	fxid = ColfileRewriteXid(rel);
	rewrite_cache[i].node = rel->rd_node;
	rewrite_cache[i].xid = fxid;

	/*
	 * None, over 2^31 ids ago (before any snapshot; a 32-bit test would
	 * wrap), or older than this transaction's xmin, which no later snapshot
	 * of the transaction goes below (a file made by a transaction that did
	 * not commit is never read by others).
	 */
	rewrite_cache[i].seen_by_all = !FullTransactionIdIsNormal(fxid) ||
		U64FromFullTransactionId(ReadNextFullTransactionId()) -
		U64FromFullTransactionId(fxid) >= (uint64) 1 << 31 ||
		(TransactionIdIsNormal(TransactionXmin) &&
		 TransactionIdPrecedes(XidFromFullTransactionId(fxid), TransactionXmin));
	return i;
}

/*
 * VACUUM FULL, CLUSTER and SET TABLESPACE record every row again as the
 * rewriting transaction's (row visibility is per row group, whose tuple
 * that transaction inserts), so an MVCC snapshot taken before it
 * committed would find the table empty, where heap keeps each tuple's
 * xmin and answers.  Such a snapshot gets an error instead of a wrong
 * answer.  The rewriter is kept as a full id, so an old one stays old.
 */
void
ColfileCheckRewrite(Relation rel, Snapshot snapshot)
{
	int			entry;
	TransactionId xid;

	if (snapshot == NULL || snapshot->snapshot_type != SNAPSHOT_MVCC)
		return;
	entry = rewrite_entry(rel);
	if (rewrite_cache[entry].seen_by_all)
		return;
	xid = XidFromFullTransactionId(rewrite_cache[entry].xid);
	if (TransactionIdIsCurrentTransactionId(xid) || !XidInMVCCSnapshot(xid, snapshot))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not read colfile table \"%s\": it was rewritten after this transaction's snapshot was taken",
					RelationGetRelationName(rel)),
			 errdetail("VACUUM FULL, CLUSTER or ALTER TABLE ... SET TABLESPACE recorded its rows again; this snapshot cannot tell which of them it would see."),
			 errhint("Retry the transaction.")));
}

/* Transaction end: drop the caches */
void
ColfileReaderXactEnd(void)
{
	rewrite_cache_used = 0;
	rewrite_cache_next = 0;
	drop_fetch_cache();
}

/* Drop the fetch cache */
static void
drop_fetch_cache(void)
{
	if (fetch_cache)
		ColfileFreeGroup(fetch_cache);
	fetch_cache = NULL;
	fetch_cache_relfilenode = InvalidOid;
}

/*
 * Does this transaction hold the newest version of the row at tid, so that
 * a fetch by TID gives it, as heap's update chain leads there? It does when
 * it locked, updated or deleted the row, but for two cases where the
 * caller's TID names the version the statement's snapshot (files_as) sees,
 * as in heap: an update in place by the running command or one it called
 * (cmin not below the snapshot's), whose new version heap puts at a TID of
 * its own (a MERGE source row matching a row the same MERGE had updated
 * judged its WHEN conditions on the new values, and could skip the
 * cardinality error); and a row we only hold FOR KEY SHARE, which others
 * may update in place since (EvalPlanQual re-read a join partner with
 * such an update, committed after the snapshot).
 */
static bool
row_held_by_us(Relation rel, ItemPointer tid, Snapshot files_as)
{
	List	   *states = ColfileRowStatesFor(rel->rd_node.relNode, tid);
	ListCell   *lc;
	bool		held = false;

	foreach(lc, states)
	{
		ColfileRowState *st = lfirst(lc);

		if (!TransactionIdIsCurrentTransactionId(st->xmin))
			continue;
		if (st->kind == ROWSTATE_COLUMNS && st->cmin >= files_as->curcid)
			return false;
		if (st->kind != ROWSTATE_LOCK_KEYSHARE)
			held = true;
	}
	return held;
}

static bool fetch_row(Relation rel, ItemPointer tid, Snapshot snapshot,
					  Snapshot files_as, TupleTableSlot *slot);

/* Fetch the row at tid if visible under snapshot, decoding every column */
bool
ColfileFetchRow(Relation rel, ItemPointer tid, Snapshot snapshot,
				TupleTableSlot *slot)
{
	return fetch_row(rel, tid, snapshot, NULL, slot);
}

/*
 * The table AM's fetch by TID (table_tuple_fetch_row_version). With
 * SnapshotAny heap returns the version at that TID: the one the caller's
 * scan found. An update in place keeps every version at one TID, so a row
 * this transaction has not locked, updated or deleted is given as the
 * statement's snapshot (the active one) sees it: EvalPlanQual re-reads the
 * other tables of a join this way, and must not see their rows as updated
 * since (it would re-check against values the scan never read), and a MERGE
 * judges a second match of a row it updated on what its scan read. A row
 * we hold (EvalPlanQual's lock, a trigger's, our deletion: row_held_by_us)
 * is the newest version, as heap's chain leads there.
 */
bool
ColfileFetchRowVersion(Relation rel, ItemPointer tid, Snapshot snapshot,
					   TupleTableSlot *slot)
{
	Snapshot	files_as = NULL;

	if (snapshot->snapshot_type == SNAPSHOT_ANY && ActiveSnapshotSet() &&
		IsMVCCSnapshot(GetActiveSnapshot()))
		files_as = GetActiveSnapshot();
	/* as heap_fetch, a row read by TID is SIREAD-locked: before (colfile_ssi.c) */
	ColfilePredicateLockRow(rel, tid, snapshot);
	return fetch_row(rel, tid, snapshot, files_as, slot);
}

/*
 * ColfileFetchRow; files_as (MVCC, or NULL): overlay only the column files
 * it sees when the row is not ours (ColfileFetchRowVersion)
 */
static bool
fetch_row(Relation rel, ItemPointer tid, Snapshot snapshot, Snapshot files_as,
		  TupleTableSlot *slot)
{
	ColfileRowGroup rg;
	MemoryContext tmp,
				old;
	bool		found = false;
	bool		read_as = false;
	int			retries = 0;

	ColfileCheckRewrite(rel, snapshot);
	ColfileFlushInsertsForRead(RelationGetRelid(rel));
	ColfileFlushForTid(RelationGetRelid(rel), tid);
	/* called per row (UPDATE, triggers, EvalPlanQual): nothing may leak */
	tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile fetch",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(tmp);
	while (ColfileRowVisible(rel, tid, snapshot, &rg) && rg.nrows >= 0)
	{
		if (fetch_cache == NULL ||
			fetch_cache_relfilenode != rel->rd_node.relNode ||
			fetch_cache->rg.first_block != rg.first_block ||
			fetch_cache->rg.seq != rg.seq ||
			fetch_cache->natts != RelationGetDescr(rel)->natts)
		{
			drop_fetch_cache();
			fetch_cache = ColfileLoadGroup(rel, &rg, TopMemoryContext);
			fetch_cache->by_block = true;
			fetch_cache_relfilenode = rel->rd_node.relNode;
		}
		ColfileGroupFilesFor(rel, fetch_cache, snapshot);

		/*
		 * A snapshot that is not MVCC sees a compaction's work once it
		 * commits: found before, the group's files listed after, the row
		 * would miss the values folded into the new group. Group and files
		 * go in one transaction: look again.
		 */
		if (!IsMVCCSnapshot(snapshot) && ColfileGroupTupleReplaced(&rg))
		{
			if (++retries >= 100)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not read row (%u,%u) of \"%s\": its row group keeps being replaced",
								ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
								RelationGetRelationName(rel)),
						 errhint("Retry the statement.")));
			drop_fetch_cache();
			continue;
		}
		if (files_as != NULL && ColfileGroupFilesUnseenBy(fetch_cache, files_as) &&
			!row_held_by_us(rel, tid, files_as))
		{
			/*
			 * Read the row as files_as sees it, its group too: files bind to
			 * the group by position, and a compaction committed since may
			 * have moved the row within the group
			 */
			read_as = true;
			break;
		}
		ColfileFillSlot(rel, fetch_cache, ColfileGroupPos(&rg, tid), slot, NULL);
		/* copy byref values into the slot's own memory */
		ExecMaterializeSlot(slot);
		ColfileSlotSetXmin(slot, rg.xmin);
		found = true;
		break;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	/* (a row files_as does not see at all is given newest, as before) */
	if (read_as && !(found = fetch_row(rel, tid, files_as, NULL, slot)))
		found = fetch_row(rel, tid, snapshot, NULL, slot);
	return found;
}
