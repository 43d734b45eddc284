/*-------------------------------------------------------------------------
 * colfile_vacuum.c
 *	  Maintenance: index builds, VACUUM (index cleanup, dropping fully
 *	  deleted row groups, lock record pruning, statistics) and the rewrite
 *	  behind VACUUM FULL and CLUSTER.
 *
 * A row whose deletion committed before every running snapshot
 * (xmin < OldestXmin) is dead to everybody: VACUUM removes its index
 * entries, and a row group whose rows are all dead loses its metadata.
 * Index entries pointing at TIDs that belong to no row group (aborted
 * inserts) are dead as well. Then VACUUM prunes the metadata tuples that
 * are dead to everybody and lists the bytes no remaining tuple references
 * as free, truncating the file's free tail (colfile_storage.c says why that
 * order makes reuse safe).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/multixact.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "utils/fmgroids.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "catalog/storage.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "mvinc.h"
#include "colfile/colfile.h"

/* Status of a row for maintenance, from the row state records */
typedef enum RowFate
{
	ROW_LIVE,					/* not deleted, or deletion in progress */
	ROW_RECENTLY_DEAD,			/* deletion committed, some snapshot may see the row */
	ROW_DEAD					/* dead to everybody */
} RowFate;

typedef struct FateEntry
{
	ItemPointerData tid;
	RowFate		fate;
} FateEntry;

/* Build the fate of every deleted row of a relfilenode */
static HTAB *
build_fates(Oid relfilenode, TransactionId oldest_xmin)
{
	HASHCTL		ctl;
	HTAB	   *fates;

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(FateEntry);
	ctl.hcxt = CurrentMemoryContext;
	fates = hash_create("colfile row fates", 1024, &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	{
		ColfileMetaRels ids;
		Relation	meta;
		SysScanDesc scan;
		ScanKeyData key[1];
		HeapTuple	tup;

		ColfileMetaRelIds(&ids);
		meta = table_open(ids.rowstate, AccessShareLock);
		ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(relfilenode));
		scan = systable_beginscan(meta, ids.rowstate_del_idx, true, SnapshotAny, 1, key);
		while ((tup = systable_getnext(scan)) != NULL)
		{
			bool		isnull;
			char		kind = DatumGetChar(heap_getattr(tup, 3, RelationGetDescr(meta), &isnull));
			ItemPointer t = DatumGetItemPointer(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull));
			TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
			RowFate		fate;
			FateEntry  *e;
			bool		found;

			if (kind != ROWSTATE_DELETED && kind != ROWSTATE_UPDATED &&
				kind != ROWSTATE_KILLED)
				continue;
			if (TransactionIdIsCurrentTransactionId(xmin))
				fate = kind == ROWSTATE_KILLED ? ROW_DEAD : ROW_RECENTLY_DEAD;
			else if (TransactionIdIsInProgress(xmin))
				fate = kind == ROWSTATE_KILLED ? ROW_DEAD : ROW_LIVE;
			else if (TransactionIdDidCommit(xmin))
				fate = (kind == ROWSTATE_KILLED ||
						TransactionIdPrecedes(xmin, oldest_xmin)) ? ROW_DEAD : ROW_RECENTLY_DEAD;
			else
				continue;		/* aborted */
			e = hash_search(fates, t, HASH_ENTER, &found);
			if (!found || fate > e->fate)
				e->fate = fate;
		}
		systable_endscan(scan);
		table_close(meta, AccessShareLock);
	}
	return fates;
}

static RowFate
fate_of(HTAB *fates, ItemPointer tid)
{
	ItemPointerData key = *tid;
	FateEntry  *e = hash_search(fates, &key, HASH_FIND, NULL);

	return e ? e->fate : ROW_LIVE;
}

/* ColfileRowDead over a fates table */
static bool
row_dead_to_all(void *arg, ItemPointer tid)
{
	return fate_of((HTAB *) arg, tid) == ROW_DEAD;
}

/* Non-aborted row groups (any snapshot), as an array sorted by first_block */
static ColfileRowGroup **
live_groups(Relation rel, int *n)
{
	List	   *l = ColfileListGroups(rel, SnapshotAny);
	ColfileRowGroup **arr = palloc(sizeof(ColfileRowGroup *) * (list_length(l) + 1));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, l)
	{
		ColfileRowGroup *rg = lfirst(lc);

		if (!TransactionIdIsCurrentTransactionId(rg->xmin) &&
			!TransactionIdIsInProgress(rg->xmin) &&
			!TransactionIdDidCommit(rg->xmin))
			continue;
		arr[i++] = rg;
	}
	*n = i;
	return arr;
}

/* Which columns does an index need (NULL: all)? */
static Bitmapset *
index_columns(IndexInfo *ii)
{
	Bitmapset  *needed = NULL;
	Bitmapset  *vars = NULL;
	int			i;
	int			x;

	for (i = 0; i < ii->ii_NumIndexAttrs; i++)
		if (ii->ii_IndexAttrNumbers[i] > 0)
			needed = bms_add_member(needed, ii->ii_IndexAttrNumbers[i]);
		else if (ii->ii_IndexAttrNumbers[i] < 0)
			return NULL;
	pull_varattnos((Node *) ii->ii_Expressions, 1, &vars);
	pull_varattnos((Node *) ii->ii_Predicate, 1, &vars);
	x = -1;
	while ((x = bms_next_member(vars, x)) >= 0)
	{
		int			attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno == 0)
			return NULL;		/* whole-row reference */
		if (attno > 0)
			needed = bms_add_member(needed, attno);
	}
	if (needed == NULL)
		needed = bms_make_singleton(0);
	return needed;
}

/*
 * An index build over a caller's MVCC scan: every row that snapshot sees,
 * as live. This is what amcheck's heapallindexed verification asks for
 * (bt_index_check and bt_index_parent_check register their own snapshot);
 * the scan is ended here, as table_index_build_scan's contract says.
 */
static double
index_build_mvcc_scan(Relation table_rel, Relation index_rel,
					  IndexInfo *index_info, TableScanDesc scan,
					  IndexBuildCallback callback, void *callback_state)
{
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(table_rel, NULL);
	ExprState  *predicate;
	double		reltuples = 0;

	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(index_info, slot, estate, values, isnull);
		callback(index_rel, &slot->tts_tid, values, isnull, true, callback_state);
		reltuples += 1;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
	return reltuples;
}

/* Feed every row that may be visible to someone into an index build */
double
colfile_index_build_range_scan(Relation table_rel, Relation index_rel,
							   IndexInfo *index_info, bool allow_sync,
							   bool anyvisible, bool progress,
							   BlockNumber start_blockno, BlockNumber numblocks,
							   IndexBuildCallback callback, void *callback_state,
							   TableScanDesc scan)
{
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	ExprState  *predicate;
	TransactionId oldest_xmin;
	HTAB	   *fates;
	ColfileRowGroup **groups;
	int			ngroups;
	int			g;
	double		reltuples = 0;
	ColfileProj *proj;
	MemoryContext cxt;
	ColfileFileSet *files;

	if (scan != NULL && IsMVCCSnapshot(scan->rs_snapshot))
		return index_build_mvcc_scan(table_rel, index_rel, index_info, scan,
									 callback, callback_state);

	/*
	 * CREATE INDEX CONCURRENTLY, second phase (as heap): the rows a fresh
	 * MVCC snapshot sees; validate_index adds those committed after it.
	 */
	if (index_info->ii_Concurrent)
	{
		Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());
		double		n;

		n = index_build_mvcc_scan(table_rel, index_rel, index_info,
								  table_beginscan(table_rel, snapshot, 0, NULL),
								  callback, callback_state);
		UnregisterSnapshot(snapshot);
		return n;
	}
	ColfileFlushAllForRead(RelationGetRelid(table_rel));
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	oldest_xmin = GetOldestNonRemovableTransactionId(table_rel);
	fates = build_fates(table_rel->rd_node.relNode, oldest_xmin);
	/* a parallel build hands us its scan: claim groups from it */
	if (scan != NULL)
	{
		ngroups = 0;
		groups = NULL;
	}
	else
		groups = live_groups(table_rel, &ngroups);
	proj = ColfileMakeProj(index_columns(index_info), RelationGetDescr(table_rel)->natts);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile index build",
								ALLOCSET_DEFAULT_SIZES);

	/*
	 * Rows get their newest committed values. Where a column update of an
	 * indexed column is newer than some snapshot, that snapshot must not
	 * use the index (heap's broken HOT chain: indcheckxmin).
	 */
	files = ColfileListColumnFiles(table_rel, SnapshotAny, cxt);
	if (files != NULL &&
		ColfileColumnFilesRecent(table_rel, index_columns(index_info) ?
								 index_columns(index_info) :
								 bms_add_range(NULL, 1, RelationGetDescr(table_rel)->natts),
								 oldest_xmin))
		index_info->ii_BrokenHotChain = true;

	for (g = 0;; g++)
	{
		ColfileRowGroup *rg;
		ColfileGroupCache *gc;
		int			pos;

		if (scan != NULL)
			rg = ColfileScanNextGroup(scan);
		else
			rg = g < ngroups ? groups[g] : NULL;
		if (rg == NULL)
			break;
		gc = ColfileLoadGroup(table_rel, rg, cxt);
		ColfileGroupUseFiles(table_rel, gc, files);

		for (pos = 0; pos < gc->rg.nrows; pos++)
		{
			ItemPointerData tid;
			RowFate		fate;
			Datum		values[INDEX_MAX_KEYS];
			bool		isnull[INDEX_MAX_KEYS];

			CHECK_FOR_INTERRUPTS();
			if (ColfileGroupRowGone(&gc->rg, pos))
				continue;
			ColfileGroupTid(&gc->rg, pos, &tid);
			fate = fate_of(fates, &tid);
			if (fate == ROW_DEAD)
				continue;
			if (anyvisible && fate != ROW_LIVE)
				continue;
			ColfileFillSlot(table_rel, gc, pos, slot, proj);
			MemoryContextReset(econtext->ecxt_per_tuple_memory);
			if (predicate != NULL && !ExecQual(predicate, econtext))
				continue;
			FormIndexDatum(index_info, slot, estate, values, isnull);
			callback(index_rel, &tid, values, isnull, fate == ROW_LIVE,
					 callback_state);
			if (fate == ROW_LIVE)
				reltuples += 1;
		}
		ExecClearTuple(slot);
		ColfileFreeGroup(gc);
	}
	if (scan != NULL)
		table_endscan(scan);	/* a caller's scan is ours to end */
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	MemoryContextDelete(cxt);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
	return reltuples;
}

/*
 * CREATE INDEX CONCURRENTLY, third phase: insert into the index every row
 * the reference snapshot sees that it lacks.  state->tuplesort holds the
 * index's TIDs, sorted; a colfile scan does not return rows in TID order
 * (compacted groups hold rows of several ranges), so the TIDs the
 * snapshot sees are sorted too and the two lists merged.  Missing rows
 * are fetched by TID (no HOT chains: an update always makes a new TID).
 */
void
colfile_index_validate_scan(Relation table_rel, Relation index_rel,
							IndexInfo *index_info, Snapshot snapshot,
							ValidateIndexState *state)
{
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(table_rel, NULL);
	ExprState  *predicate;
	Tuplesortstate *visible;
	TableScanDesc scan;
	Datum		val;
	bool		isnull;
	bool		have_index_tid;
	ItemPointerData index_tid;

	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);

	visible = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid, false,
									maintenance_work_mem, NULL, TUPLESORT_NONE);
	scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		tuplesort_putdatum(visible, Int64GetDatum(itemptr_encode(&slot->tts_tid)), false);
		state->htups += 1;
	}
	table_endscan(scan);
	tuplesort_performsort(visible);

	have_index_tid = tuplesort_getdatum(state->tuplesort, true, &val, &isnull, NULL);
	if (have_index_tid)
		itemptr_decode(&index_tid, DatumGetInt64(val));
	while (tuplesort_getdatum(visible, true, &val, &isnull, NULL))
	{
		ItemPointerData tid;
		Datum		values[INDEX_MAX_KEYS];
		bool		nulls[INDEX_MAX_KEYS];

		CHECK_FOR_INTERRUPTS();
		itemptr_decode(&tid, DatumGetInt64(val));
		while (have_index_tid && ItemPointerCompare(&index_tid, &tid) < 0)
		{
			have_index_tid = tuplesort_getdatum(state->tuplesort, true, &val, &isnull, NULL);
			if (have_index_tid)
				itemptr_decode(&index_tid, DatumGetInt64(val));
		}
		if (have_index_tid && ItemPointerEquals(&index_tid, &tid))
			continue;

		/* missing from the index */
		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (!ColfileFetchRow(table_rel, &tid, snapshot, slot))
			elog(ERROR, "row (%u,%u) of \"%s\" vanished during CREATE INDEX CONCURRENTLY",
				 ItemPointerGetBlockNumber(&tid), ItemPointerGetOffsetNumber(&tid),
				 RelationGetRelationName(table_rel));
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(index_info, slot, estate, values, nulls);
		index_insert(index_rel, values, nulls, &tid, table_rel,
					 index_info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, index_info);
		state->tups_inserted += 1;
	}
	tuplesort_end(visible);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
}

typedef struct VacState
{
	ColfileRowGroup **groups;
	int			ngroups;
	ColfileRowGroup **aborted;
	int			naborted;
	HTAB	   *fates;
	int64		limit;			/* ColfileMarkLimit */
	int64		removed;
} VacState;

/*
 * Is this index entry's row dead to everybody? Yes when its deletion is
 * visible to all, or when it lies in a row group whose inserter aborted.
 * A TID in no known row group is kept when it may be a row another backend
 * is still buffering; below the mark (ColfileMarkLimit) none can be, so
 * such a TID was an aborted insert whose group tuple was pruned already.
 */
static bool
dead_tid_callback(ItemPointer tid, void *arg)
{
	VacState   *vs = (VacState *) arg;
	int64		blk = ItemPointerGetBlockNumber(tid);
	int			i;

	if (fate_of(vs->fates, tid) == ROW_DEAD)
	{
		vs->removed++;
		return true;
	}
	for (i = 0; i < vs->naborted; i++)
	{
		ColfileRowGroup *rg = vs->aborted[i];

		if (blk >= rg->first_block && blk <= ColfileGroupLastBlock(rg))
			return true;
	}
	if (blk < vs->limit)
	{
		/* the last group starting at or below blk (groups are by first_block) */
		int			lo = 0,
					hi = vs->ngroups - 1,
					found = -1;

		while (lo <= hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (vs->groups[mid]->first_block <= blk)
				found = mid, lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (found < 0 || ColfileGroupPos(vs->groups[found], tid) < 0)
		{
			vs->removed++;
			return true;
		}
	}
	return false;
}

/*
 * Scan every tuple of a relfilenode's row groups still in the heap (key:
 * the caller's one-entry array), including those whose index entries
 * readers have marked dead: such a tuple is not pruned yet, and a standby
 * query may still see it (those marks are hints, not WAL-logged).
 */
static SysScanDesc
every_group_tuple(Relation meta, Oid indexoid, Oid relfilenode, ScanKey key)
{
	SysScanDesc scan;

	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	scan = systable_beginscan(meta, indexoid, true, SnapshotAny, 1, key);
	if (scan->iscan)
		scan->iscan->ignore_killed_tuples = false;
	return scan;
}

/*
 * Row groups and reservations whose inserting transaction aborted. A tuple
 * VACUUM wrote (compacted group, delete vector) is left out: its rows are
 * those of the tuples it was to replace, alive.
 */
static ColfileRowGroup **
aborted_groups(Oid relfilenode, int *n)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	List	   *l = NIL;
	ListCell   *lc;
	ColfileRowGroup **arr;
	int			i = 0;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, AccessShareLock);
	scan = every_group_tuple(meta, ids.rowgroup_idx, relfilenode, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
		bool		isnull;
		ColfileRowGroup *rg;

		if (TransactionIdIsCurrentTransactionId(xmin) ||
			TransactionIdIsInProgress(xmin) || TransactionIdDidCommit(xmin))
			continue;
		{
			bytea	   *head = DatumGetByteaPSlice(heap_getattr(tup, 7, RelationGetDescr(meta), &isnull),
												   0, sizeof(ColfileDirHeader));

			if (VARSIZE_ANY_EXHDR(head) >= sizeof(ColfileDirHeader) &&
				((ColfileDirHeader *) VARDATA_ANY(head))->ext_off != 0)
				continue;
		}
		rg = palloc0(sizeof(ColfileRowGroup));
		rg->first_block = DatumGetInt64(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull));
		rg->nrows = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(meta), &isnull));
		l = lappend(l, rg);
	}
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	arr = palloc(sizeof(ColfileRowGroup *) * (list_length(l) + 1));
	foreach(lc, l)
		arr[i++] = lfirst(lc);
	*n = i;
	return arr;
}

/*
 * Make this lazy VACUUM's transaction an ordinary one before it writes.
 *
 * PostgreSQL marks a lazy VACUUM PROC_IN_VACUUM and leaves its transaction
 * id out of every snapshot, because heap's VACUUM never takes one. Ours
 * does: it deletes metadata rows. A reader whose snapshot neither lists that
 * id as running nor finds it committed judges the deletion aborted and
 * hints the tuple so for good (HEAP_XMAX_INVALID): the row group comes back
 * with its row states gone, deleted rows included, while its index entries
 * are already removed. With the flag cleared before the id is taken, the id
 * is in every snapshot taken while it runs, as any writer's is. The price:
 * this VACUUM's xmin holds back other VACUUMs' horizon until it commits.
 * (docs/internals.md, "Who may write colfile metadata".)
 */
static void
vacuum_become_ordinary_writer(void)
{
	Assert(!TransactionIdIsValid(GetTopTransactionIdIfAny()));
	MvincSetProcStatusFlag(PROC_IN_VACUUM, false);
}

/*
 * Prune the heap pages of mvinc.colfile_rowgroup (and colfile_colfile) that hold deleted or
 * aborted tuples of this relfilenode, so that the tuples dead to everybody
 * are physically gone (and their removal WAL-logged, which cancels standby
 * queries that could still see them) before their bytes are listed free.
 * A page whose cleanup lock is not free now waits for the next VACUUM.
 */
static void
prune_tuples_of(Oid metaoid, Oid indexoid, Oid relfilenode)
{
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	Bitmapset  *blocks = NULL;
	GlobalVisState *vistest;
	int			b;

	meta = table_open(metaoid, RowExclusiveLock);
	scan = every_group_tuple(meta, indexoid, relfilenode, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		HeapTupleHeader h = tup->t_data;

		if ((!(h->t_infomask & HEAP_XMAX_INVALID) &&
			 !HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask)) || ColfileInserterAborted(h))
			blocks = bms_add_member(blocks, ItemPointerGetBlockNumber(&tup->t_self));
	}
	systable_endscan(scan);

	vistest = GlobalVisTestFor(meta);
	b = -1;
	while ((b = bms_next_member(blocks, b)) >= 0)
	{
		Buffer		buf = ReadBuffer(meta, (BlockNumber) b);
		int			nnewlpdead;

		if (ConditionalLockBufferForCleanup(buf))
		{
			(void) heap_page_prune(meta, buf, InvalidTransactionId, vistest,
								   InvalidTransactionId, 0, &nnewlpdead, NULL);
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}
	bms_free(blocks);
	table_close(meta, RowExclusiveLock);
}

/* ... in both tables whose tuples reference bytes: row groups, column files */
static void
prune_group_tuples(Oid relfilenode)
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	prune_tuples_of(ids.rowgroup, ids.rowgroup_idx, relfilenode);
	prune_tuples_of(ids.colfile, ids.colfile_idx, relfilenode);
}

static int
extent_offset_cmp(const void *a, const void *b)
{
	int64		x = ((const ColfileExtent *) a)->offset;
	int64		y = ((const ColfileExtent *) b)->offset;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * List as free every byte that no row group or column file tuple still
 * present (aborted inserts excepted) references, and give the free tail back to the file
 * system when ACCESS EXCLUSIVE is free at once (as heap's VACUUM does).
 * Returns the bytes listed free.
 */
static int64
reclaim_space(Relation rel)
{
	Oid			relfilenode = rel->rd_node.relNode;
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	ColfileExtent *used;
	ColfileExtent *gaps;
	int			nused = 0,
				capused = 64,
				ngaps = 0,
				i;
	int64		next_tid_block,
				next_byte,
				end = 0,
				freed = 0,
				floor;
	BlockNumber need;

	if (RelationGetNumberOfBlocks(rel) == 0)
		return 0;
	floor = ColfileTidFloorCached(rel);
	ColfileLockSpace(rel, ExclusiveLock);
	used = palloc(sizeof(ColfileExtent) * capused);
	ColfileMetaRelIds(&ids);
	/* column files lay out their extents as row groups do (columns 5, 6) */
	for (int t = 0; t < 2; t++)
	{
		meta = table_open(t == 0 ? ids.rowgroup : ids.colfile, AccessShareLock);
		scan = every_group_tuple(meta, t == 0 ? ids.rowgroup_idx : ids.colfile_idx,
								 relfilenode, key);
		while ((tup = systable_getnext(scan)) != NULL)
		{
			bool		isnull;
			int64		off,
						len;

			if (ColfileInserterAborted(tup->t_data))
				continue;
			/* an earlier life's (ColfileTidFloor): its bytes are not in this file */
			if (DatumGetInt64(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull)) < floor)
				continue;
			off = DatumGetInt64(heap_getattr(tup, 5, RelationGetDescr(meta), &isnull));
			len = DatumGetInt64(heap_getattr(tup, 6, RelationGetDescr(meta), &isnull));
			if (len <= 0)
				continue;
			if (nused == capused)
			{
				capused *= 2;
				used = repalloc(used, sizeof(ColfileExtent) * capused);
			}
			used[nused].offset = off;
			used[nused].length = len;
			nused++;
		}
		systable_endscan(scan);
		table_close(meta, AccessShareLock);
	}

	ColfileReadMeta(rel, &next_tid_block, &next_byte);
	qsort(used, nused, sizeof(ColfileExtent), extent_offset_cmp);
	gaps = palloc(sizeof(ColfileExtent) * (nused + 1));
	for (i = 0; i < nused; i++)
	{
		/* (never a gap at or past the byte allocator: no such bytes are used) */
		if (used[i].offset > end && end < next_byte)
		{
			gaps[ngaps].offset = end;
			gaps[ngaps].length = Min(used[i].offset, next_byte) - end;
			freed += gaps[ngaps].length;
			ngaps++;
		}
		end = Max(end, used[i].offset + used[i].length);
	}
	if (end < next_byte &&
		!ConditionalLockRelation(rel, AccessExclusiveLock))
	{
		/* readers are busy: list the tail instead of cutting it off */
		gaps[ngaps].offset = end;
		gaps[ngaps].length = next_byte - end;
		freed += gaps[ngaps].length;
		ngaps++;
		end = next_byte;
	}
	need = ColfileSetFreeSpace(rel, gaps, ngaps, end);
	if (end < next_byte)
	{
		if (need < RelationGetNumberOfBlocks(rel))
			RelationTruncate(rel, need);
		UnlockRelation(rel, AccessExclusiveLock);
	}
	ColfileUnlockSpace(rel, ExclusiveLock);
	pfree(used);
	pfree(gaps);
	return freed;
}

/* VACUUM: clean indexes, drop dead row groups, prune locks, update stats */
void
colfile_relation_vacuum(Relation rel, struct VacuumParams *params,
						BufferAccessStrategy bstrategy)
{
	Oid			relfilenode = rel->rd_node.relNode;
	TransactionId oldest_xmin = GetOldestNonRemovableTransactionId(rel);
	VacState	vs;
	Relation   *indrels;
	int			nindexes;
	int			i;
	int			g;
	double		live = 0,
				dead = 0;
	BlockNumber nblocks;

	vacuum_become_ordinary_writer();
	ColfileFlushAllForRead(RelationGetRelid(rel));
	{
		/* what an earlier life of the relfilenode left (ColfileTidFloor) */
		int64		floor = ColfileTidFloor(rel);

		/*
		 * (An empty file's is left to a VACUUM after its first write: an
		 * inserter may be making its metapage right now. Only unlogged
		 * tables: metadata is keyed by relfilenode alone, and a permanent
		 * table's floor is above 0 only when its number was reused.)
		 */
		if (floor > 0 && rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
			ColfileDeleteMetadataBelow(relfilenode, floor);
	}
	memset(&vs, 0, sizeof(vs));
	vs.fates = build_fates(relfilenode, oldest_xmin);
	vs.groups = live_groups(rel, &vs.ngroups);
	vs.aborted = aborted_groups(relfilenode, &vs.naborted);
	vs.limit = ColfileMarkLimit(rel, oldest_xmin);

	/* index cleanup */
	vac_open_indexes(rel, RowExclusiveLock, &nindexes, &indrels);
	for (i = 0; i < nindexes; i++)
	{
		IndexVacuumInfo ivinfo;
		IndexBulkDeleteResult *stats;

		memset(&ivinfo, 0, sizeof(ivinfo));
		ivinfo.index = indrels[i];
		ivinfo.analyze_only = false;
		ivinfo.report_progress = false;
		ivinfo.estimated_count = true;
		ivinfo.message_level = DEBUG2;
		ivinfo.num_heap_tuples = rel->rd_rel->reltuples;
		ivinfo.strategy = bstrategy;
		stats = index_bulk_delete(&ivinfo, NULL, dead_tid_callback, &vs);
		stats = index_vacuum_cleanup(&ivinfo, stats);
		if (stats)
		{
			if (!stats->estimated_count)
				vac_update_relstats(indrels[i], stats->num_pages, stats->num_index_tuples,
									0, false, InvalidTransactionId,
									InvalidMultiXactId, NULL, NULL, false);
			pfree(stats);
		}
	}
	vac_close_indexes(nindexes, indrels, NoLock);

	/* dead row groups and live/dead counts */
	for (g = 0; g < vs.ngroups; g++)
	{
		ColfileRowGroup *rg = vs.groups[g];
		int			pos;
		int			ndead = 0;

		for (pos = 0; pos < rg->nrows; pos++)
		{
			ItemPointerData tid;
			RowFate		f;

			ColfileGroupTid(rg, pos, &tid);
			f = ColfileGroupRowGone(rg, pos) ? ROW_DEAD : fate_of(vs.fates, &tid);
			if (f == ROW_DEAD)
				ndead++;
			else if (f == ROW_RECENTLY_DEAD)
				dead++;
			else
				live++;
		}
		if (!(ndead == rg->nrows && TransactionIdDidCommit(rg->xmin) &&
			  ColfileDeleteRowGroupMeta(relfilenode, rg)))
			dead += ndead;
	}
	{
		ColfileCompactRules rules;
		ColfileCompactResult res;

		ColfileCompactRulesFor(rel, &rules);
		(void) ColfileCompact(rel, oldest_xmin, vs.limit, row_dead_to_all, vs.fates,
							  &rules, &res);
	}
	(void) ColfilePruneRowStates(relfilenode, oldest_xmin);
	ColfilePruneReservations(relfilenode);
	prune_group_tuples(relfilenode);
	(void) reclaim_space(rel);
	ColfileSetMark(rel, oldest_xmin);

	nblocks = RelationGetNumberOfBlocks(rel);
	vac_update_relstats(rel, nblocks, live, 0, nindexes > 0,
						InvalidTransactionId, InvalidMultiXactId,
						NULL, NULL, false);
	pgstat_report_vacuum(RelationGetRelid(rel), rel->rd_rel->relisshared,
						 live, dead);
}

/*
 * mvinc.colfile_compact: the compaction part of VACUUM, in the caller's
 * transaction. The index entries of the dead rows it leaves out stay until
 * the next VACUUM, which finds their TIDs in no row group (lookups already
 * find nothing there). False when it backed off (colfile_compact.c).
 */
bool
ColfileCompactNow(Relation rel, const ColfileCompactRules *rules,
				  ColfileCompactResult *res)
{
	TransactionId oldest_xmin = GetOldestNonRemovableTransactionId(rel);
	HTAB	   *fates;
	bool		done;

	ColfileFlushAllForRead(RelationGetRelid(rel));
	fates = build_fates(rel->rd_node.relNode, oldest_xmin);
	done = ColfileCompact(rel, oldest_xmin, ColfileMarkLimit(rel, oldest_xmin),
						  row_dead_to_all, fates, rules, res);

	/*
	 * A finished writer's TID reservation inside a merged range would sort
	 * before the compacted group in a lookup of its block (it names the
	 * reserved first block): gone with the merge, as in VACUUM.
	 */
	ColfilePruneReservations(rel->rd_node.relNode);
	ColfileSetMark(rel, oldest_xmin);
	hash_destroy(fates);
	return done;
}

/* Buffer one row read from the old storage into the new one */
static void
copy_row_into(Relation NewTable, TupleTableSlot *slot, TupleTableSlot *newslot,
			  TupleDesc olddesc, CommandId cid)
{
	TupleDesc	newdesc = RelationGetDescr(NewTable);
	int			a;

	slot_getallattrs(slot);
	ExecClearTuple(newslot);
	for (a = 0; a < newdesc->natts; a++)
	{
		newslot->tts_values[a] = a < olddesc->natts ? slot->tts_values[a] : 0;
		newslot->tts_isnull[a] = a < olddesc->natts ? slot->tts_isnull[a] : true;
		if (TupleDescAttr(newdesc, a)->attisdropped)
			newslot->tts_isnull[a] = true;
	}
	ExecStoreVirtualTuple(newslot);
	ColfileBufferInsert(NewTable, newslot, cid);
}

/* VACUUM FULL and CLUSTER: copy the live rows into the new storage */
void
colfile_copy_for_cluster(Relation OldTable, Relation NewTable,
						 Relation OldIndex, bool use_sort,
						 TransactionId OldestXmin,
						 TransactionId *xid_cutoff,
						 MultiXactId *multi_cutoff,
						 double *num_tuples,
						 double *tups_vacuumed,
						 double *tups_recently_dead)
{
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	TupleTableSlot *slot = table_slot_create(OldTable, NULL);
	TupleTableSlot *newslot = table_slot_create(NewTable, NULL);
	CommandId	cid = GetCurrentCommandId(true);
	TupleDesc	olddesc = RelationGetDescr(OldTable);

	*num_tuples = 0;
	*tups_vacuumed = 0;
	*tups_recently_dead = 0;
	*xid_cutoff = InvalidTransactionId;
	*multi_cutoff = InvalidMultiXactId;

	ColfileFlushAllForRead(RelationGetRelid(OldTable));
	if (OldIndex != NULL)
	{
		IndexScanDesc is = index_beginscan(OldTable, OldIndex, snap, 0, 0);

		index_rescan(is, NULL, 0, NULL, 0);
		while (index_getnext_slot(is, ForwardScanDirection, slot))
		{
			CHECK_FOR_INTERRUPTS();
			copy_row_into(NewTable, slot, newslot, olddesc, cid);
			*num_tuples += 1;
		}
		index_endscan(is);
	}
	else
	{
		TableScanDesc ts = table_beginscan(OldTable, snap, 0, NULL);

		while (table_scan_getnextslot(ts, ForwardScanDirection, slot))
		{
			CHECK_FOR_INTERRUPTS();
			copy_row_into(NewTable, slot, newslot, olddesc, cid);
			*num_tuples += 1;
		}
		table_endscan(ts);
	}
	ColfileFlushRel(NewTable);
	/* older snapshots cannot read the copy (ColfileCheckRewrite) */
	ColfileSetRewriteXid(NewTable);
	ExecDropSingleTupleTableSlot(slot);
	ExecDropSingleTupleTableSlot(newslot);
	UnregisterSnapshot(snap);
}
