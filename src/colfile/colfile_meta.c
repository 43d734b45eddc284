/*-------------------------------------------------------------------------
 * colfile_meta.c
 *	  The heap metadata tables: mvinc.colfile_rowgroup (row groups and their
 *	  chunk directories), and what concerns all of a relfilenode's metadata
 *	  (copies, range deletions); per-row records are colfile_rowstate.c's.
 *	  Their tuples carry the xids, so visibility of row groups and
 *	  deletions is plain MVCC.
 *
 * Rows are inserted with the command id of the statement that produced
 * them (not the current one), so a row group flushed late is still
 * invisible to its own statement and visible to the next.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "miscadmin.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "storage/itemptr.h"
#include "utils/fmgrprotos.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mvinc.h"
#include "colfile/colfile.h"

#define Natts_rowgroup 7
#define Natts_colfile 10

static ColfileMetaRels cached_ids;
static bool cached_ids_valid = false;
static bool inval_registered = false;

/*
 * Detoasted directories of row groups, kept across queries: an index
 * fetch finds the row group of every row it reads, and detoasting (pglz)
 * a 200-column directory per lookup was a visible part of a point read.
 * A metadata tuple never changes once inserted, so (relfilenode,
 * first_block, seq, xmin) names one directory for good; the cache is
 * dropped when the metadata tables are invalidated (the extension was
 * dropped: sequence numbers may repeat) and when it outgrows
 * DIR_CACHE_BYTES. Only directories stored toasted are kept.
 */
#define DIR_CACHE_BYTES (8 * 1024 * 1024)

typedef struct DirCacheKey
{
	Oid			relfilenode;
	TransactionId xmin;
	int64		first_block;
	int64		seq;
} DirCacheKey;

typedef struct DirCacheEntry
{
	DirCacheKey key;
	bytea	   *dir;
} DirCacheEntry;

static HTAB *dir_cache = NULL;
static MemoryContext dir_cache_cxt = NULL;
static Size dir_cache_bytes = 0;
static bool dir_cache_stale = false;

/* Forget every cached directory */
static void
dir_cache_reset(void)
{
	if (dir_cache_cxt)
		MemoryContextDelete(dir_cache_cxt);
	dir_cache_cxt = NULL;
	dir_cache = NULL;
	dir_cache_bytes = 0;
	dir_cache_stale = false;
}

/* A palloc'd copy of the directory datum d of the row group key */
static bytea *
dir_cache_get(DirCacheKey *key, Datum d)
{
	DirCacheEntry *e;
	bool		found;
	bytea	   *copy;

	if (!VARATT_IS_EXTENDED(DatumGetPointer(d)))
		return DatumGetByteaPCopy(d);
	if (dir_cache_stale || dir_cache_bytes > DIR_CACHE_BYTES)
		dir_cache_reset();
	if (dir_cache == NULL)
	{
		HASHCTL		ctl;

		dir_cache_cxt = AllocSetContextCreate(TopMemoryContext, "colfile directories",
											  ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(DirCacheKey);
		ctl.entrysize = sizeof(DirCacheEntry);
		ctl.hcxt = dir_cache_cxt;
		dir_cache = hash_create("colfile directories", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(dir_cache, key, HASH_FIND, NULL);
	if (e == NULL)
	{
		bytea	   *dir = DatumGetByteaPCopy(d);
		bytea	   *kept = MemoryContextAlloc(dir_cache_cxt, VARSIZE(dir));

		memcpy(kept, dir, VARSIZE(dir));
		e = hash_search(dir_cache, key, HASH_ENTER, &found);
		e->dir = kept;
		dir_cache_bytes += VARSIZE(dir);
		return dir;
	}
	copy = palloc(VARSIZE(e->dir));
	memcpy(copy, e->dir, VARSIZE(e->dir));
	return copy;
}

/* Any relcache invalidation of our tables (or of everything) drops the cache */
static void
meta_relcache_inval(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == cached_ids.rowgroup ||
		relid == cached_ids.rowgroup_idx || relid == cached_ids.rowstate ||
		relid == cached_ids.rowstate_idx || relid == cached_ids.rowstate_del_idx ||
		relid == cached_ids.rowlock || relid == cached_ids.rowlock_idx ||
		relid == cached_ids.seq)
	{
		cached_ids_valid = false;
		dir_cache_stale = true;
		ColfileGroupMemoForget();
	}
}

/* Resolve the metadata tables of the installed extension (cached) */
void
ColfileMetaRelIds(ColfileMetaRels *ids)
{
	Oid			nsp;

	if (cached_ids_valid)
	{
		*ids = cached_ids;
		return;
	}
	if (!inval_registered)
	{
		CacheRegisterRelcacheCallback(meta_relcache_inval, (Datum) 0);
		inval_registered = true;
	}
	nsp = get_namespace_oid("mvinc", true);
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"mvinc\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION mvinc.")));
	ids->rowgroup = get_relname_relid("colfile_rowgroup", nsp);
	ids->rowgroup_idx = get_relname_relid("colfile_rowgroup_key", nsp);
	ids->rowstate = get_relname_relid("colfile_rowstate", nsp);
	ids->rowstate_idx = get_relname_relid("colfile_rowstate_key", nsp);
	ids->rowstate_del_idx = get_relname_relid("colfile_rowstate_deletions", nsp);
	ids->colfile = get_relname_relid("colfile_colfile", nsp);
	ids->colfile_idx = get_relname_relid("colfile_colfile_key", nsp);
	ids->seq = get_relname_relid("colfile_seq", nsp);
	ids->rowlock = get_relname_relid("colfile_rowlock", nsp);
	ids->rowlock_idx = get_relname_relid("colfile_rowlock_key", nsp);
	if (!OidIsValid(ids->rowlock) || !OidIsValid(ids->rowlock_idx))
	{
		/* installed as 0.1, not updated yet: every record in rowstate */
		ids->rowlock = ids->rowstate;
		ids->rowlock_idx = ids->rowstate_idx;
	}
	if (!OidIsValid(ids->rowgroup) || !OidIsValid(ids->rowgroup_idx) ||
		!OidIsValid(ids->rowstate) || !OidIsValid(ids->rowstate_idx) ||
		!OidIsValid(ids->rowstate_del_idx) ||
		!OidIsValid(ids->colfile) || !OidIsValid(ids->colfile_idx) ||
		!OidIsValid(ids->seq))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colfile metadata tables of extension \"mvinc\" are missing"),
				 errhint("Reinstall the extension.")));
	cached_ids = *ids;
	cached_ids_valid = true;
}

/* Next sequence number for a row group */
int64
ColfileNextSeq(void)
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	return nextval_internal(ids.seq, false);
}

/* Make an index entry for a metadata tuple already inserted */
void
ColfileMetaIndexEntry(Relation heap, Oid indexoid, HeapTuple tup, Datum *keys, bool *keynulls)
{
	Relation	idx = index_open(indexoid, RowExclusiveLock);
	IndexInfo  *ii = BuildIndexInfo(idx);

	index_insert(idx, keys, keynulls, &tup->t_self, heap, UNIQUE_CHECK_NO, false, ii);
	index_close(idx, RowExclusiveLock);
}

/* Insert a heap tuple with a given command id and index it */
void
ColfileMetaInsert(Relation heap, Oid indexoid, HeapTuple tup, CommandId cid,
				  Datum *keys, bool *keynulls, bool unique)
{
	Relation	idx;
	IndexInfo  *ii;
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile metadata insert",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old;

	heap_insert(heap, tup, cid, 0, NULL);
	old = MemoryContextSwitchTo(tmp);
	idx = index_open(indexoid, RowExclusiveLock);
	ii = BuildIndexInfo(idx);
	index_insert(idx, keys, keynulls, &tup->t_self, heap,
				 unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO, false, ii);
	index_close(idx, RowExclusiveLock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/* Record a newly written row group, or a reservation (nrows < 0) */
void
ColfileInsertRowGroup(Relation rel, ColfileRowGroup *rg, CommandId cid)
{
	ColfileMetaRels ids;
	Relation	meta;
	Datum		values[Natts_rowgroup];
	bool		nulls[Natts_rowgroup] = {0};
	HeapTuple	tup;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, RowExclusiveLock);
	values[0] = ObjectIdGetDatum(rel->rd_node.relNode);
	values[1] = Int64GetDatum(rg->first_block);
	values[2] = Int32GetDatum(rg->nrows);
	values[3] = Int64GetDatum(rg->seq);
	values[4] = Int64GetDatum(rg->data_offset);
	values[5] = Int64GetDatum(rg->data_length);
	values[6] = PointerGetDatum(rg->directory);
	tup = heap_form_tuple(RelationGetDescr(meta), values, nulls);
	/* (cid may be older than snapshots the memo knows: they would see it) */
	ColfileGroupMemoForget();
	ColfileMetaInsert(meta, ids.rowgroup_idx, tup, cid, values, nulls, true);
	heap_freetuple(tup);
	table_close(meta, RowExclusiveLock);
}

/* Delete reservations of finished transactions (VACUUM) */
void
ColfilePruneReservations(Oid relfilenode)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	Snapshot	snapshot = GetLatestSnapshot();

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, RowExclusiveLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	scan = systable_beginscan(meta, ids.rowgroup_idx, true,
							  MvincUnlockedSnapshot(snapshot), 1, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		int32		nrows;
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

		if (!MvincUnlockedVisible(scan, tup, snapshot))
			continue;
		nrows = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(meta), &isnull));

		if (nrows < 0 && !TransactionIdIsCurrentTransactionId(xmin) &&
			!TransactionIdIsInProgress(xmin))
			simple_heap_delete(meta, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(meta, RowExclusiveLock);
	CommandCounterIncrement();
}

/* Delete our reservation tuple at first_block (merge before commit) */
void
ColfileDeleteOwnReservation(Oid relfilenode, int64 first_block)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, RowExclusiveLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(first_block));
	scan = systable_beginscan(meta, ids.rowgroup_idx, true, SnapshotSelf, 2, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		int32		nrows = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(meta), &isnull));

		if (nrows < 0 && TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
			simple_heap_delete(meta, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(meta, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Was this metadata tuple deleted by a committed transaction or by ours?
 * (Only matters for SnapshotAny lookups, which see every version.)
 */
bool
ColfileMetaTupleRemoved(HeapTupleHeader h)
{
	TransactionId xmax;

	if (h->t_infomask & HEAP_XMAX_INVALID)
		return false;
	if (HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
		return false;
	xmax = HeapTupleHeaderGetUpdateXid(h);
	if (!TransactionIdIsValid(xmax))
		return false;
	return TransactionIdIsCurrentTransactionId(xmax) ||
		(!TransactionIdIsInProgress(xmax) && TransactionIdDidCommit(xmax));
}

/* Fill a ColfileRowGroup from a metadata tuple */
static void
rowgroup_from_tuple(Relation meta, HeapTuple tup, ColfileRowGroup *rg)
{
	Datum		values[Natts_rowgroup];
	bool		nulls[Natts_rowgroup];

	heap_deform_tuple(tup, RelationGetDescr(meta), values, nulls);
	rg->first_block = DatumGetInt64(values[1]);
	rg->nrows = DatumGetInt32(values[2]);
	rg->seq = DatumGetInt64(values[3]);
	rg->data_offset = DatumGetInt64(values[4]);
	rg->data_length = DatumGetInt64(values[5]);
	rg->xmin = HeapTupleHeaderGetXmin(tup->t_data);
	rg->cmin = TransactionIdIsCurrentTransactionId(rg->xmin) ?
		HeapTupleHeaderGetCmin(tup->t_data) : InvalidCommandId;
	{
		DirCacheKey key;

		memset(&key, 0, sizeof(key));
		key.relfilenode = DatumGetObjectId(values[0]);
		key.xmin = rg->xmin;
		key.first_block = rg->first_block;
		key.seq = rg->seq;
		rg->directory = dir_cache_get(&key, values[6]);
	}
	rg->ext_off = VARSIZE(rg->directory) >= VARHDRSZ + sizeof(ColfileDirHeader) ?
		((ColfileDirHeader *) VARDATA(rg->directory))->ext_off : 0;
	rg->rowids_off = rg->dead_off = rg->ndead = 0;
	if (rg->ext_off != 0)
	{
		ColfileDirExt ext;

		memcpy(&ext, VARDATA(rg->directory) + rg->ext_off, sizeof(ext));
		if (ext.nrowids > 0)
			rg->rowids_off = rg->ext_off + sizeof(ext);
		if (ext.ndead > 0)
		{
			rg->dead_off = rg->ext_off + sizeof(ext) + sizeof(int64) * ext.nrowids;
			rg->ndead = ext.ndead;
		}
	}
	rg->self = tup->t_self;
}

/* Did the transaction that inserted this metadata tuple abort? */
bool
ColfileInserterAborted(HeapTupleHeader h)
{
	TransactionId xmin;

	if (HeapTupleHeaderXminCommitted(h))
		return false;
	if (HeapTupleHeaderXminInvalid(h))
		return true;
	xmin = HeapTupleHeaderGetXmin(h);
	return !TransactionIdIsCurrentTransactionId(xmin) &&
		!TransactionIdIsInProgress(xmin) && !TransactionIdDidCommit(xmin);
}

/*
 * Is this row group tuple out of the picture for a SnapshotAny lookup:
 * removed, or inserted by a transaction that aborted (a compacted group
 * whose VACUUM aborted names rows that still live in its sources)?
 */
static bool
group_tuple_gone(HeapTupleHeader h)
{
	return ColfileMetaTupleRemoved(h) || ColfileInserterAborted(h);
}

/*
 * Must a lookup under this snapshot skip group tuples that are gone?
 * SnapshotAny sees every version. A non-vacuumable snapshot (the planner's
 * look at an index's actual endpoints, get_actual_variable_range) sees a
 * removed tuple until its own horizon passes the deleter, and that horizon
 * can lag the one a VACUUM of the metadata's TOAST table used: reading the
 * tuple's directory then fails with "missing chunk". Only VACUUM removes
 * group tuples while others run (groups whose rows are all dead, or
 * replaced by a tuple with the same rows), so nothing a reader may see is
 * lost by skipping them.
 */
static bool
skips_gone_groups(Snapshot snapshot)
{
	return snapshot->snapshot_type == SNAPSHOT_ANY ||
		snapshot->snapshot_type == SNAPSHOT_NON_VACUUMABLE;
}

/*
 * Is this group tuple one a compaction of another transaction is writing
 * (a directory extension: row ids or a delete vector), still running? A
 * lookup that is not MVCC reads the tuples it replaces instead: they hold
 * the same rows, and their column files, which that compaction is deleting
 * and a listing still shows, bind to their positions.
 */
static bool
compaction_in_progress(Relation meta, HeapTuple tup)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
	bool		isnull;
	bytea	   *head;

	if (HeapTupleHeaderXminCommitted(tup->t_data) || HeapTupleHeaderXminInvalid(tup->t_data) ||
		TransactionIdIsCurrentTransactionId(xmin) || !TransactionIdIsInProgress(xmin))
		return false;
	head = DatumGetByteaPSlice(heap_getattr(tup, 7, RelationGetDescr(meta), &isnull),
							   0, sizeof(ColfileDirHeader));
	return VARSIZE_ANY_EXHDR(head) >= sizeof(ColfileDirHeader) &&
		((ColfileDirHeader *) VARDATA_ANY(head))->ext_off != 0;
}

/*
 * A lookup of metadata outside MVCC judges each tuple when it reaches it,
 * but reads the index's entries a leaf page at a time, earlier: a VACUUM
 * that inserts a replacing tuple after the page was read and commits
 * before the tuples it replaces are judged leaves neither (they are gone,
 * the new one was never listed).  The replacing tuple is in the index
 * before its inserter counts as completed, so a scan during which no
 * transaction completed missed nothing: take a mark before the scan, and
 * if the scan skipped a tuple as gone, look again when transactions
 * completed since.
 */
uint64
ColfileCompletionMark(void)
{
	uint64		mark = ShmemVariableCache->xactCompletionCount;

	pg_memory_barrier();
	return mark;
}

bool
ColfileCompletedSince(uint64 mark)
{
	pg_memory_barrier();
	return ShmemVariableCache->xactCompletionCount != mark;
}

/*
 * SERIALIZABLE: meet the group tuples that would own block, seen by
 * snapshot or not (the nearest at or below it, every version of it), so
 * that their writers are conflicted out to (MvincUnlockedVisible) as
 * heap's fetch conflicts out to the writers of the tuple it reads, even
 * when the memo answers the lookup without walking down to them.
 */
static void
meet_owner_tuples(Relation meta, Relation idx, Oid relfilenode, int64 block,
				  Snapshot snapshot)
{
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	int64		first = COLFILE_NO_GROUP;

	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(block));
	scan = systable_beginscan_ordered(meta, idx, MvincUnlockedSnapshot(snapshot), 2, key);
	while ((tup = systable_getnext_ordered(scan, BackwardScanDirection)) != NULL)
	{
		bool		isnull;
		int64		first_block = DatumGetInt64(heap_getattr(tup, 2, RelationGetDescr(meta),
															 &isnull));

		if (first != COLFILE_NO_GROUP && first_block != first)
			break;
		first = first_block;
		(void) MvincUnlockedVisible(scan, tup, snapshot);
	}
	systable_endscan_ordered(scan);
}

/*
 * Find the row group owning TID block 'block' visible under snapshot. With
 * a dirty snapshot, the snapshot's xmin/xmax report the inserter, as heap
 * does for a tuple. An MVCC snapshot's lookups are memoized: the index
 * entries of rows inserted after an old snapshot point into groups it does
 * not see, and each would walk back over all of them (colfile_group_memo.c).
 */
bool
ColfileFindRowGroup(Oid relfilenode, int64 block, Snapshot snapshot,
					ColfileRowGroup *rg)
{
	ColfileMetaRels ids;
	Relation	meta,
				idx;
	SysScanDesc scan;
	ScanKeyData key[3];
	int			nkeys = 2;
	HeapTuple	tup;
	bool		found = false;
	bool		look_again;
	ColfileGroupMemoPlan memo;
	int64		met = COLFILE_NO_GROUP;

	ColfileGroupMemoPlanFor(relfilenode, block, snapshot, &memo);
	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, AccessShareLock);
	idx = index_open(ids.rowgroup_idx, AccessShareLock);
	if (memo.use && IsolationIsSerializable())
		meet_owner_tuples(meta, idx, relfilenode, block, snapshot);
	if (memo.absent)
	{
		index_close(idx, AccessShareLock);
		table_close(meta, AccessShareLock);
		return false;
	}
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(memo.from));
	if (memo.above != COLFILE_NO_GROUP)
		ScanKeyInit(&key[nkeys++], 2, BTGreaterStrategyNumber, F_INT8GT,
					Int64GetDatum(memo.above));

	/*
	 * Outside MVCC, a missed replacement is looked for again (see
	 * ColfileCompletionMark); a dirty or self snapshot skips gone tuples
	 * unseen, so any completion counts for it.  A compacted tuple judged
	 * before the tuples it replaces may be skipped as running, and these as
	 * gone once it commits: wait for its transaction, then look again.
	 */
	do
	{
		uint64		mark = 0;
		bool		skipped_gone = !skips_gone_groups(snapshot);
		TransactionId compactor = InvalidTransactionId;

		if (!IsMVCCSnapshot(snapshot))
			mark = ColfileCompletionMark();
		look_again = false;
		found = false;
		scan = systable_beginscan_ordered(meta, idx, MvincUnlockedSnapshot(snapshot), nkeys, key);
		while ((tup = systable_getnext_ordered(scan, BackwardScanDirection)) != NULL)
		{
			if (!MvincUnlockedVisible(scan, tup, snapshot))
				continue;
			if (skips_gone_groups(snapshot) && group_tuple_gone(tup->t_data))
			{
				skipped_gone = true;
				continue;
			}
			if (!IsMVCCSnapshot(snapshot) && compaction_in_progress(meta, tup))
			{
				compactor = HeapTupleHeaderGetXmin(tup->t_data);
				continue;
			}
			rowgroup_from_tuple(meta, tup, rg);
			found = true;
			break;
		}
		systable_endscan_ordered(scan);
		met = found ? rg->first_block : COLFILE_NO_GROUP;
		if (found && block > ColfileGroupLastBlock(rg))
			found = false;
		if (!found && TransactionIdIsValid(compactor))
		{
			XactLockTableWait(compactor, NULL, NULL, XLTW_None);
			look_again = true;
		}
		else if (!found && !IsMVCCSnapshot(snapshot) && skipped_gone &&
				 ColfileCompletedSince(mark))
			look_again = true;
		CHECK_FOR_INTERRUPTS();
	} while (!found && look_again);
	index_close(idx, AccessShareLock);
	table_close(meta, AccessShareLock);
	if (memo.use && !found)
	{
		bool		noted = ColfileGroupMemoNote(&memo, relfilenode, snapshot, block, met,
												 met != COLFILE_NO_GROUP ? ColfileGroupLastBlock(rg) : 0);

		/*
		 * Nothing seen down to where the memo knows the answer: now it
		 * knows block's (had it been dropped, the lookup is a full one).
		 */
		if (memo.above != COLFILE_NO_GROUP && met == COLFILE_NO_GROUP)
		{
			if (!noted)
				ColfileGroupMemoForget();
			return ColfileFindRowGroup(relfilenode, block, snapshot, rg);
		}
	}

	/*
	 * A dirty snapshot reports what it met in the group tuple. Only VACUUM
	 * deletes group tuples while others run (dropping groups whose rows are
	 * all dead, or replacing them with a compacted group or a delete vector
	 * holding the same rows), so the deleter is never a row's deleter; and
	 * such a replacement's inserter is not its rows' inserter (they were
	 * all visible to everybody). Row deleters are reported by the row state
	 * records.
	 */
	if (snapshot->snapshot_type == SNAPSHOT_DIRTY)
	{
		snapshot->xmax = InvalidTransactionId;
		if (found && rg->ext_off != 0)
			snapshot->xmin = InvalidTransactionId;
	}
	return found;
}

/*
 * A copy of the header of row group rg's tuple (buffer released); false
 * when the tuple is gone from the heap (pruned)
 */
static bool
group_tuple_header(const ColfileRowGroup *rg, HeapTupleHeaderData *out)
{
	ColfileMetaRels ids;
	Relation	meta;
	HeapTupleData tup;
	Buffer		buf;
	bool		found;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, AccessShareLock);
	tup.t_self = rg->self;
	found = heap_fetch(meta, SnapshotAny, &tup, &buf, true);
	if (found)
	{
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(out, tup.t_data, sizeof(HeapTupleHeaderData));
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		ReleaseBuffer(buf);
	}
	table_close(meta, AccessShareLock);
	return found;
}

/*
 * Is row group rg's tuple being inserted or deleted by another transaction
 * still running (a VACUUM replacing the group)? Returns that transaction,
 * or InvalidTransactionId.
 */
TransactionId
ColfileGroupTupleBusy(const ColfileRowGroup *rg)
{
	HeapTupleHeaderData hd;
	HeapTupleHeader h = &hd;
	TransactionId xmin;

	if (!group_tuple_header(rg, &hd))
		return InvalidTransactionId;
	xmin = HeapTupleHeaderGetXmin(h);
	if (!HeapTupleHeaderXminCommitted(h) && !HeapTupleHeaderXminInvalid(h) &&
		!TransactionIdIsCurrentTransactionId(xmin) && TransactionIdIsInProgress(xmin))
		return xmin;
	if (!(h->t_infomask & HEAP_XMAX_INVALID) && !HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
	{
		TransactionId xmax = HeapTupleHeaderGetUpdateXid(h);

		if (TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) &&
			TransactionIdIsInProgress(xmax))
			return xmax;
	}
	return InvalidTransactionId;
}

/*
 * Has row group rg's tuple been deleted by a committed transaction (or
 * ours) since rg was read: replaced by a compaction, say?
 */
bool
ColfileGroupTupleReplaced(const ColfileRowGroup *rg)
{
	HeapTupleHeaderData hd;

	/* gone from the heap (pruned): long replaced */
	return !group_tuple_header(rg, &hd) || ColfileMetaTupleRemoved(&hd);
}

/*
 * The row groups of rel's file visible under snapshot, by first_block:
 * none when the file is empty, none below its TID floor (what an earlier
 * life of the relfilenode left behind).
 */
List *
ColfileListGroups(Relation rel, Snapshot snapshot)
{
	int64		floor = ColfileTidFloorCached(rel);
	List	   *all;
	List	   *kept = NIL;
	ListCell   *lc;

	all = ColfileListRowGroups(rel->rd_node.relNode, snapshot);

	/*
	 * (Listed all the same: a SERIALIZABLE reader conflicts out to the
	 * writers of the tuples it meets, empty table or not.)
	 */
	if (floor < 0)
		return NIL;
	if (floor == 0)
		return all;
	foreach(lc, all)
	{
		ColfileRowGroup *rg = lfirst(lc);

		if (rg->first_block >= floor)
			kept = lappend(kept, rg);
	}
	list_free(all);
	return kept;
}

/* All row groups of a relfilenode visible under snapshot, by first_block */
List *
ColfileListRowGroups(Oid relfilenode, Snapshot snapshot)
{
	ColfileMetaRels ids;
	Relation	meta,
				idx;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	List	   *result = NIL;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, AccessShareLock);
	idx = index_open(ids.rowgroup_idx, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	scan = systable_beginscan_ordered(meta, idx, MvincUnlockedSnapshot(snapshot), 1, key);
	while ((tup = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		ColfileRowGroup *rg;

		if (!MvincUnlockedVisible(scan, tup, snapshot))
			continue;
		if (skips_gone_groups(snapshot) && group_tuple_gone(tup->t_data))
			continue;
		rg = palloc(sizeof(ColfileRowGroup));

		rowgroup_from_tuple(meta, tup, rg);
		if (rg->nrows < 0)
			continue;			/* a reservation: rows still being buffered */
		result = lappend(result, rg);
	}
	systable_endscan_ordered(scan);
	index_close(idx, AccessShareLock);
	table_close(meta, AccessShareLock);
	return result;
}

#define N_METADATA_TABLES 4

/*
 * The row group, row state, column file and row lock tables, and their key
 * indexes; the number of them that hold tuples (the row lock table is the
 * row state table in an extension not updated from 0.1)
 */
static int
all_metadata_tables(Oid tabs[N_METADATA_TABLES], Oid idxs[N_METADATA_TABLES])
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	tabs[0] = ids.rowgroup;
	idxs[0] = ids.rowgroup_idx;
	tabs[1] = ids.rowstate;
	idxs[1] = ids.rowstate_idx;
	tabs[2] = ids.colfile;
	idxs[2] = ids.colfile_idx;
	tabs[3] = ids.rowlock;
	idxs[3] = ids.rowlock_idx;
	return ids.rowlock == ids.rowstate ? 3 : 4;
}

/*
 * The tables a row's records may be in: row states and, unless it is the
 * same table, row locks. The row lock table is unlogged, so a standby has
 * none (and no transaction that could hold a lock).
 */
int
ColfileRowStateTables(const ColfileMetaRels *ids, Oid tabs[2], Oid idxs[2])
{
	tabs[0] = ids->rowstate;
	idxs[0] = ids->rowstate_idx;
	if (ids->rowlock == ids->rowstate || RecoveryInProgress())
		return 1;
	tabs[1] = ids->rowlock;
	idxs[1] = ids->rowlock_idx;
	return 2;
}

/* Open table s->cur of a row record scan and start its index scan */
static void
row_record_scan_open(ColfileRowRecordScan *s)
{
	s->meta = table_open(s->tabs[s->cur], s->lockmode);
	s->scan = systable_beginscan(s->meta, s->idxs[s->cur], true,
								 MvincUnlockedSnapshot(s->snapshot), s->nkeys, s->key);
}

/*
 * Begin a scan of relfilenode's row records (those of rg's TID range when
 * rg is given) under snapshot, the tables opened with lockmode
 */
void
ColfileRowRecordScanBegin(ColfileRowRecordScan *s, Oid relfilenode,
						  const ColfileRowGroup *rg, Snapshot snapshot,
						  LOCKMODE lockmode)
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	s->ntabs = ColfileRowStateTables(&ids, s->tabs, s->idxs);
	s->cur = 0;
	s->snapshot = snapshot;
	s->lockmode = lockmode;
	ScanKeyInit(&s->key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	s->nkeys = 1;
	if (rg != NULL)
	{
		ItemPointerSet(&s->lo, (BlockNumber) rg->first_block, 0);
		ItemPointerSet(&s->hi, (BlockNumber) (ColfileGroupLastBlock(rg) + 1), 0);
		ScanKeyInit(&s->key[1], 2, BTGreaterEqualStrategyNumber, F_TIDGE,
					ItemPointerGetDatum(&s->lo));
		ScanKeyInit(&s->key[2], 2, BTLessStrategyNumber, F_TIDLT,
					ItemPointerGetDatum(&s->hi));
		s->nkeys = 3;
	}
	row_record_scan_open(s);
}

/* The next record of the scan (of table s->meta), or NULL at the end */
HeapTuple
ColfileRowRecordScanNext(ColfileRowRecordScan *s)
{
	for (;;)
	{
		HeapTuple	tup = systable_getnext(s->scan);

		if (tup != NULL && !MvincUnlockedVisible(s->scan, tup, s->snapshot))
			continue;
		if (tup != NULL)
			return tup;
		if (s->cur + 1 >= s->ntabs)
			return NULL;
		systable_endscan(s->scan);
		table_close(s->meta, s->lockmode);
		s->cur++;
		row_record_scan_open(s);
	}
}

void
ColfileRowRecordScanEnd(ColfileRowRecordScan *s)
{
	systable_endscan(s->scan);
	table_close(s->meta, s->lockmode);
	s->scan = NULL;
	s->meta = NULL;
}

/* The kind of a record the scan returned */
char
ColfileRowRecordKind(ColfileRowRecordScan *s, HeapTuple tup)
{
	bool		isnull;

	return DatumGetChar(heap_getattr(tup, 3, RelationGetDescr(s->meta), &isnull));
}

/* The row (TID) of a record the scan returned */
ItemPointer
ColfileRowRecordTid(ColfileRowRecordScan *s, HeapTuple tup)
{
	bool		isnull;

	return DatumGetItemPointer(heap_getattr(tup, 2, RelationGetDescr(s->meta), &isnull));
}

/*
 * Copy the metadata of relfilenode from to relfilenode to (ALTER TABLE ...
 * SET TABLESPACE, which copies the file byte for byte): the row groups
 * and the deletion records the latest snapshot sees (lock records end
 * with their transactions; under ACCESS EXCLUSIVE none is running).  The
 * copies are this transaction's: older snapshots are kept from reading
 * them by ColfileCheckRewrite.
 */
void
ColfileCopyMetadata(Oid from, Oid to)
{
	Oid			tabs[N_METADATA_TABLES];
	Oid			idxs[N_METADATA_TABLES];
	CommandId	cid = GetCurrentCommandId(true);

	ColfileGroupMemoForget();	/* inserts group tuples (as ColfileInsertRowGroup) */
	CommandCounterIncrement();
	(void) all_metadata_tables(tabs, idxs);
	for (int i = 0; i < 3; i++)	/* not the row locks */
	{
		Relation	meta = table_open(tabs[i], RowExclusiveLock);
		TupleDesc	desc = RelationGetDescr(meta);
		Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
		SysScanDesc scan;
		ScanKeyData key[1];
		HeapTuple	tup;
		Datum		values[Max(Natts_colfile, Max(Natts_rowgroup, Natts_rowstate))];
		bool		nulls[Max(Natts_colfile, Max(Natts_rowgroup, Natts_rowstate))];

		ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(from));
		scan = systable_beginscan(meta, idxs[i], true, MvincUnlockedSnapshot(snapshot), 1, key);
		while ((tup = systable_getnext(scan)) != NULL)
		{
			HeapTuple	copy;

			if (!MvincUnlockedVisible(scan, tup, snapshot))
				continue;
			heap_deform_tuple(tup, desc, values, nulls);
			if (i == 0 && DatumGetInt32(values[2]) < 0)
				continue;		/* a reservation (none under our lock) */
			if (i == 1 && !ROWSTATE_IS_DELETION(DatumGetChar(values[2])))
				continue;		/* a row lock, or a column update's record */
			values[0] = ObjectIdGetDatum(to);
			copy = heap_form_tuple(desc, values, nulls);
			if (i == 2)
			{
				/* column files' key: (relfilenode, first_block, seq) */
				values[2] = values[3];
				nulls[2] = nulls[3];
			}
			ColfileMetaInsert(meta, idxs[i], copy, cid, values, nulls, i != 1);
			if (i == 1)
			{
				ColfileMetaRels ids;

				ColfileMetaRelIds(&ids);
				ColfileMetaIndexEntry(meta, ids.rowstate_del_idx, copy, values, nulls);	/* deletions only */
			}
			heap_freetuple(copy);
		}
		systable_endscan(scan);
		UnregisterSnapshot(snapshot);
		table_close(meta, RowExclusiveLock);
	}
	CommandCounterIncrement();
}

/*
 * Call fn on every tuple of the metadata tables (which: 0 row groups and
 * reservations, 1 row states, 2 column files) of relfilenode that snapshot
 * sees, the tables opened in lockmode.
 */
typedef void (*MetaTupleFn) (Relation meta, int which, HeapTuple tup, void *arg);

static void
visit_metadata(Oid relfilenode, Snapshot snapshot, LOCKMODE lockmode,
			   MetaTupleFn fn, void *arg)
{
	Oid			tabs[N_METADATA_TABLES];
	Oid			idxs[N_METADATA_TABLES];
	int			ntabs = all_metadata_tables(tabs, idxs);

	for (int i = 0; i < ntabs; i++)
	{
		Relation	meta;
		SysScanDesc scan;
		ScanKeyData key[1];
		HeapTuple	tup;

		if (i == 3 && RecoveryInProgress())
			break;				/* unlogged: no row locks on a standby */
		meta = table_open(tabs[i], lockmode);
		ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(relfilenode));
		scan = systable_beginscan(meta, idxs[i], true, MvincUnlockedSnapshot(snapshot), 1, key);
		while ((tup = systable_getnext(scan)) != NULL)
			if (MvincUnlockedVisible(scan, tup, snapshot))
				fn(meta, i, tup, arg);
		systable_endscan(scan);
		table_close(meta, lockmode);
	}
}

/* The first TID block a metadata tuple names (row states: their row's) */
static int64
tuple_first_block(Relation meta, int which, HeapTuple tup)
{
	bool		isnull;

	if (which == 1 || which == 3)
		return ItemPointerGetBlockNumberNoCheck(
			DatumGetItemPointer(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull)));
	return DatumGetInt64(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull));
}

/* ... and the last (groups span blocks, updated rows name their new TID) */
static int64
tuple_last_block(Relation meta, int which, HeapTuple tup)
{
	int64		last = tuple_first_block(meta, which, tup);

	if (which == 0 && group_tuple_gone(tup->t_data))
	{
		/*
		 * Its directory may be gone from TOAST already: the range its row
		 * count spans (rows it held under row ids beyond it are held by the
		 * tuple that replaced it, or were dead to everybody)
		 */
		bool		isnull;
		int32		nrows = DatumGetInt32(heap_getattr(tup, 3, RelationGetDescr(meta), &isnull));

		last += Max((Abs(nrows) + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK - 1, 0);
	}
	else if (which == 0)
	{
		ColfileRowGroup rg;

		rowgroup_from_tuple(meta, tup, &rg);
		last = ColfileGroupLastBlock(&rg);
	}
	else if (which == 1)
	{
		bool		isnull;
		Datum		nt = heap_getattr(tup, 4, RelationGetDescr(meta), &isnull);
		ItemPointer ntid = isnull ? NULL : DatumGetItemPointer(nt);

		/* (a row moved to another partition names no block of ours) */
		if (ntid != NULL && ItemPointerIsValid(ntid) &&
			!ItemPointerIndicatesMovedPartitions(ntid))
			last = Max(last, (int64) ItemPointerGetBlockNumberNoCheck(ntid));
	}
	return last;
}

static void
note_tid_end(Relation meta, int which, HeapTuple tup, void *arg)
{
	int64	   *end = (int64 *) arg;

	*end = Max(*end, tuple_last_block(meta, which, tup) + 1);
}

/*
 * The first TID block above every TID the metadata of relfilenode names
 * (row groups and reservations, row states, column files), whoever wrote
 * them: 0 when there is none. A relfilenode whose file is empty but whose
 * metadata is not (an unlogged table reset by crash recovery) starts its
 * TIDs there, so that nothing left behind can name a new row
 * (colfile_storage.c, "TID floor").
 */
int64
ColfileMetadataTidEnd(Oid relfilenode)
{
	int64		end = 0;

	visit_metadata(relfilenode, SnapshotAny, AccessShareLock, note_tid_end, &end);
	return end;
}

static void
delete_below(Relation meta, int which, HeapTuple tup, void *arg)
{
	if (tuple_first_block(meta, which, tup) < *(int64 *) arg)
		simple_heap_delete(meta, &tup->t_self);
}

/*
 * Delete the metadata rows of relfilenode that name TIDs below floor
 * (VACUUM: what an unlogged table's crash reset left behind).
 */
void
ColfileDeleteMetadataBelow(Oid relfilenode, int64 floor)
{
	visit_metadata(relfilenode, GetLatestSnapshot(), RowExclusiveLock, delete_below, &floor);
	CommandCounterIncrement();
}

static void
delete_tuple(Relation meta, int which, HeapTuple tup, void *arg)
{
	simple_heap_delete(meta, &tup->t_self);
}

/* Delete every metadata row of a relfilenode (TRUNCATE, DROP) */
void
ColfileDeleteAllMetadata(Oid relfilenode)
{
	/*
	 * See what this command wrote too: ON COMMIT DELETE ROWS truncates
	 * after the pre-commit flush of buffered inserts wrote its group.
	 */
	CommandCounterIncrement();
	visit_metadata(relfilenode, GetLatestSnapshot(), RowExclusiveLock, delete_tuple, NULL);
	CommandCounterIncrement();
}

/* Delete the row state records of a row group's TID range for which dead() holds (all when dead is NULL) */
void
ColfileDeleteRowStatesWhere(Oid relfilenode, ColfileRowGroup *rg,
							ColfileRowDead dead, void *arg)
{
	ColfileRowRecordScan s;
	HeapTuple	tup;

	ColfileRowRecordScanBegin(&s, relfilenode, rg, GetLatestSnapshot(), RowExclusiveLock);
	while ((tup = ColfileRowRecordScanNext(&s)) != NULL)
		if (dead == NULL || dead(arg, ColfileRowRecordTid(&s, tup)))
			simple_heap_delete(s.meta, &tup->t_self);
	ColfileRowRecordScanEnd(&s);
	CommandCounterIncrement();
}

/*
 * Delete one row group's metadata and its row states (VACUUM); false when
 * its tuple was deleted meanwhile (see below)
 */
bool
ColfileDeleteRowGroupMeta(Oid relfilenode, ColfileRowGroup *rg)
{
	ColfileMetaRels ids;
	Relation	meta;
	TM_Result	result;
	TM_FailureData tmfd;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, RowExclusiveLock);

	/*
	 * The group was listed a while ago: its writer, committing meanwhile,
	 * may have merged it into a bigger one of its own (deleting its tuple;
	 * its row states and files then belong to the merged group).  Such a
	 * group is not ours to drop any more.
	 */
	result = heap_delete(meta, &rg->self, GetCurrentCommandId(true), InvalidSnapshot,
						 true, &tmfd, false);
	table_close(meta, RowExclusiveLock);
	if (result == TM_Updated || result == TM_Deleted)
		return false;
	if (result != TM_Ok)
		elog(ERROR, "unexpected result %d deleting the row group tuple (%u,%u)", (int) result,
			 ItemPointerGetBlockNumber(&rg->self), ItemPointerGetOffsetNumber(&rg->self));
	ColfileDeleteRowStatesWhere(relfilenode, rg, NULL, NULL);
	ColfileDeleteColumnFiles(relfilenode, rg);
	return true;
}

/*
 * Replace row group tuples by one compacted group holding their rows
 * (VACUUM): in one transaction, so every snapshot sees either the sources
 * or the compacted group. The sources go first: the compacted group takes
 * the first source's key.
 */
void
ColfileReplaceRowGroups(Relation rel, List *sources, ColfileRowGroup *merged)
{
	ColfileMetaRels ids;
	Relation	meta;
	ListCell   *lc;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowgroup, RowExclusiveLock);
	foreach(lc, sources)
		simple_heap_delete(meta, &((ColfileRowGroup *) lfirst(lc))->self);
	table_close(meta, RowExclusiveLock);
	CommandCounterIncrement();
	if (merged != NULL)
		ColfileInsertRowGroup(rel, merged, GetCurrentCommandId(true));
	CommandCounterIncrement();
}
