/*-------------------------------------------------------------------------
 * colfile_column_vacuum.c
 *	  Compaction's side of column files (colfile_column.c): whether a row
 *	  group may be rewritten, its settled files (folded in by a rewrite),
 *	  merging a group's all-visible files into one,
 *	  deleting a dropped group's files, and whether an index build must be
 *	  marked indcheckxmin over recent ones (docs/internals.md, "colfile
 *	  column updates").
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "mvinc.h"
#include "colfile/colfile.h"
#include "colfile/colfile_column_int.h"

static bool recent_column_updates(Oid relfilenode, const ColfileRowGroup *rg,
								  TransactionId oldest_xmin);

/* ColfileCompact's check after its work: see recent_column_updates */
bool
ColfileGroupRecentlyUpdated(Oid relfilenode, const ColfileRowGroup *rg,
							TransactionId oldest_xmin)
{
	return recent_column_updates(relfilenode, rg, oldest_xmin);
}

/*
 * Has a row of rg's TID range been updated in place by a transaction not
 * older than the horizon (running, ours included, or committed since the
 * compaction began)?
 * Any updater that can interleave with this VACUUM is such a transaction,
 * whether its file is written yet or not.
 */
static bool
recent_column_updates(Oid relfilenode, const ColfileRowGroup *rg,
					  TransactionId oldest_xmin)
{
	ColfileRowRecordScan s;
	HeapTuple	tup;
	bool		found = false;

	ColfileRowRecordScanBegin(&s, relfilenode, rg, SnapshotAny, AccessShareLock);
	while (!found && (tup = ColfileRowRecordScanNext(&s)) != NULL)
	{
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

		/*
		 * The caller's own (mvinc.colfile_compact in a transaction that
		 * updated in place) count too: its buffers and cached binding hold
		 * positions in the group as it is.
		 */
		if (ColfileRowRecordKind(&s, tup) == ROWSTATE_COLUMNS &&
			!TransactionIdPrecedes(xmin, oldest_xmin) &&
			!ColfileInserterAborted(tup->t_data))
			found = true;
	}
	ColfileRowRecordScanEnd(&s);
	return found;
}

/*
 * The column files of row group rg, oldest first, as snapshot lists them,
 * if each one passes: a writer's own (oldest_xmin invalid: written by this
 * transaction, SnapshotSelf), else settled (committed before oldest_xmin).
 * *files gets them (ColfileColumnFile, from the per-backend file cache),
 * *tids their tuples' TIDs, *bytes their bytes. False, and nothing listed,
 * when one does not pass; with prefix, the files before the first one that
 * does not pass are listed instead, and true returned.
 */
static bool
group_files_if(Relation rel, const ColfileRowGroup *rg, Snapshot snapshot,
			   TransactionId oldest_xmin, bool prefix, List **files, List **tids,
			   int64 *bytes)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	bool		passed = true;

	*files = NIL;
	*tids = NIL;
	*bytes = 0;
	ColfileMetaRelIds(&ids);
	meta = table_open(ids.colfile, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rel->rd_node.relNode));
	ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(rg->first_block));
	scan = systable_beginscan_ordered(meta, index_open(ids.colfile_idx, AccessShareLock),
									  snapshot, 2, key);
	while ((tup = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
		ColfileColumnFile *f;
		ItemPointer self;

		if (ColfileFileTupleGone(tup->t_data))
			continue;
		/* another merge's, not ended: its files are not ours to delete */
		if (TransactionIdIsValid(oldest_xmin) ?
			(!TransactionIdPrecedes(xmin, oldest_xmin) || !TransactionIdDidCommit(xmin) ||
			 ColfileFileTupleBeingDeleted(tup->t_data)) :
			!TransactionIdIsCurrentTransactionId(xmin))
		{
			passed = false;
			break;
		}
		f = ColfileFileFromTuple(meta, tup);
		*files = lappend(*files, f);
		*bytes += f->rg.data_length;
		self = palloc(sizeof(ItemPointerData));
		*self = tup->t_self;
		*tids = lappend(*tids, self);
	}
	index_close(scan->irel, AccessShareLock);
	systable_endscan_ordered(scan);
	table_close(meta, AccessShareLock);
	if (!passed && !prefix)
	{
		*files = NIL;
		*tids = NIL;
		*bytes = 0;
	}
	return passed || prefix;
}

/*
 * The column files of row group rg when every snapshot sees them all
 * (committed before oldest_xmin): see group_files_if
 */
bool
ColfileSettledColumnFiles(Relation rel, const ColfileRowGroup *rg,
						  TransactionId oldest_xmin, List **files, List **tids,
						  int64 *bytes)
{
	Assert(TransactionIdIsValid(oldest_xmin));
	return group_files_if(rel, rg, SnapshotAny, oldest_xmin, false, files, tids, bytes);
}

/*
 * The column files of rg, a group this transaction wrote, when this
 * transaction wrote them all (those of its aborted subtransactions are not
 * seen): see group_files_if
 */
bool
ColfileOwnColumnFiles(Relation rel, const ColfileRowGroup *rg, List **files,
					  List **tids, int64 *bytes)
{
	return group_files_if(rel, rg, SnapshotSelf, InvalidTransactionId, false, files, tids,
						  bytes);
}

/* Delete the column file tuples at tids (ColfileSettledColumnFiles) */
void
ColfileDeleteColumnFileTuples(List *tids)
{
	ColfileMetaRels ids;
	Relation	meta;
	ListCell   *lc;

	if (tids == NIL)
		return;
	ColfileMetaRelIds(&ids);
	meta = table_open(ids.colfile, RowExclusiveLock);
	foreach(lc, tids)
		simple_heap_delete(meta, (ItemPointer) lfirst(lc));
	table_close(meta, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * VACUUM: merge the oldest column files of row group rg, up to the first
 * one some snapshot may not see (not committed before oldest_xmin), into
 * one when there are two or more: the new file holds, for every position
 * and column any of them holds, the value they give together, which every
 * snapshot sees; the old tuples are deleted in the same transaction. The
 * new file takes the sequence number of the newest file it replaces, so it
 * keeps their place among the group's files: below every file it leaves
 * (a running update's among them), which a reader overlays after it. So a
 * group's files stay few even while it keeps being updated, and a fetch
 * lists few. Returns whether it merged.
 */
bool
ColfileMergeColumnFiles(Relation rel, ColfileRowGroup *rg, TransactionId oldest_xmin,
						int min_files)
{
	Oid			relfilenode = rel->rd_node.relNode;
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *files;
	List	   *selves;
	int64		bytes;
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext work;

	/*
	 * A writer takes its file's sequence number and inserts the tuple under
	 * the space lock (ColfileWriteColumnFile): listed without one, a file
	 * numbered but not yet inserted would be missed, and a settled file
	 * numbered after it merged into a file that sorts above it.
	 */
	ColfileLockSpace(rel, ShareLock);
	(void) group_files_if(rel, rg, SnapshotAny, oldest_xmin, true, &files, &selves, &bytes);
	ColfileUnlockSpace(rel, ShareLock);
	if (list_length(files) < Max(min_files, 2))
		return false;

	work = AllocSetContextCreate(cxt, "colfile column file merge", ALLOCSET_DEFAULT_SIZES);
	{
		MemoryContext old = MemoryContextSwitchTo(work);
		ColfileGroupCache *gc = ColfileLoadGroup(rel, rg, work);
		ColfileColumnFile **arr = palloc(sizeof(ColfileColumnFile *) * list_length(files));
		uint8	   *held = palloc0(Max(rg->nrows, 1));
		Bitmapset  *cols = NULL;
		FileContent fc;
		int			i = 0,
					x = -1;
		ListCell   *lc;

		foreach(lc, files)
		{
			ColfileColumnFile *f = lfirst(lc);

			arr[i++] = f;
			for (int r = 0; r < f->nrows; r++)
				if (f->positions[r] >= 0 && f->positions[r] < rg->nrows)
					held[f->positions[r]] = 1;
			for (int k = 0; k < f->nattrs; k++)
				if (f->attnums[k] <= desc->natts &&
					!TupleDescAttr(desc, f->attnums[k] - 1)->attisdropped)
					cols = bms_add_member(cols, f->attnums[k]);
		}
		ColfileGroupSetFiles(gc, arr, i);
		memset(&fc, 0, sizeof(fc));
		fc.relfilenode = relfilenode;
		fc.first_block = rg->first_block;
		fc.group_seq = rg->seq;
		fc.seq = arr[i - 1]->seq;	/* the newest merged file's place */
		fc.cid = GetCurrentCommandId(true);
		fc.positions = palloc(sizeof(int32) * Max(rg->nrows, 1));
		for (int p = 0; p < rg->nrows; p++)
			if (held[p])
				fc.positions[fc.n++] = p;
		fc.nattrs = bms_num_members(cols);
		fc.attnums = palloc(sizeof(AttrNumber) * Max(fc.nattrs, 1));
		fc.values = palloc(sizeof(Datum *) * Max(fc.nattrs, 1));
		fc.isnull = palloc(sizeof(bool *) * Max(fc.nattrs, 1));
		i = 0;
		while ((x = bms_next_member(cols, x)) >= 0)
		{
			ColfileDecoded *d = ColfileDecodeChunk(rel, &gc->rg, desc, x, work);

			ColfileOverlayChunk(rel, gc, x - 1, d, desc);
			fc.attnums[i] = x;
			fc.values[i] = palloc(sizeof(Datum) * Max(fc.n, 1));
			fc.isnull[i] = palloc(sizeof(bool) * Max(fc.n, 1));
			for (int r = 0; r < fc.n; r++)
			{
				fc.values[i][r] = d->values[fc.positions[r]];
				fc.isnull[i][r] = d->isnull[fc.positions[r]];
			}
			i++;
		}
		/* the old tuples go first: the new one reuses a key of theirs */
		ColfileDeleteColumnFileTuples(selves);
		if (fc.nattrs > 0 && fc.n > 0)
			ColfileWriteColumnFile(rel, &fc);
		MemoryContextSwitchTo(old);
	}
	MemoryContextDelete(work);
	return true;
}

/*
 * A statement just wrote a column file for row group rg: when the group
 * holds COLFILE_WRITER_MERGE_FILES settled files or more, merge them now,
 * as VACUUM would, instead of letting every fetch of the group list them
 * all until the next VACUUM (single-row UPDATEs by key add a file each).
 * Only under ShareUpdateExclusiveLock, VACUUM's, taken without waiting:
 * one merger at a time, and none while VACUUM or a compaction runs. It is
 * released at once (held to the end of the transaction, an UPDATE would
 * block ANALYZE and VACUUM, and deadlock with them): a later merger, or
 * VACUUM, leaves the files whose deletion by a merge still runs alone
 * (group_files_if). Not under SERIALIZABLE: other readers would meet the
 * merge as a write of ours and conflict out to us.
 */
void
ColfileMergeManyColumnFiles(Relation rel, ColfileRowGroup *rg)
{
	if (IsolationIsSerializable() ||
		!ConditionalLockRelation(rel, ShareUpdateExclusiveLock))
		return;
	(void) ColfileMergeColumnFiles(rel, rg, GetOldestNonRemovableTransactionId(rel),
								   COLFILE_WRITER_MERGE_FILES);
	UnlockRelation(rel, ShareUpdateExclusiveLock);
}

/* Delete the column files of a row group (VACUUM drops the group) */
void
ColfileDeleteColumnFiles(Oid relfilenode, const ColfileRowGroup *rg)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	Snapshot	snapshot;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.colfile, RowExclusiveLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(rg->first_block));
	snapshot = GetLatestSnapshot();
	scan = systable_beginscan(meta, ids.colfile_idx, true, MvincUnlockedSnapshot(snapshot), 2, key);
	while ((tup = systable_getnext(scan)) != NULL)
		if (MvincUnlockedVisible(scan, tup, snapshot))
			simple_heap_delete(meta, &tup->t_self);
	systable_endscan(scan);
	table_close(meta, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Has a column file of any of attrs (attnums) been written by a transaction
 * some snapshot may not see (not before oldest_xmin)? An index built now
 * holds the newest values, which such a snapshot must not look up
 * (heap's broken HOT chain: the index is marked indcheckxmin).
 */
bool
ColfileColumnFilesRecent(Relation rel, Bitmapset *attrs, TransactionId oldest_xmin)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	bool		recent = false;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.colfile, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rel->rd_node.relNode));
	scan = systable_beginscan(meta, ids.colfile_idx, true, SnapshotAny, 1, key);
	while (!recent && (tup = systable_getnext(scan)) != NULL)
	{
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
		bool		isnull;
		ArrayType  *arr;
		int16	   *att;
		int			n;

		if (ColfileFileTupleGone(tup->t_data))
			continue;
		if (TransactionIdIsNormal(xmin) && !TransactionIdPrecedes(xmin, oldest_xmin))
		{
			arr = DatumGetArrayTypeP(heap_getattr(tup, 9, RelationGetDescr(meta), &isnull));
			n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
			att = (int16 *) ARR_DATA_PTR(arr);
			for (int i = 0; i < n; i++)
				if (bms_is_member(att[i], attrs))
					recent = true;
		}
	}
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	return recent;
}
