/*-------------------------------------------------------------------------
 * colfile_column_files.c
 *	  Column files as stored: writing one (its bytes and its tuple in
 *	  mvinc.colfile_colfile, row positions as an int4 array or a bitmap),
 *	  reading file tuples into a per-backend cache, listing the files a
 *	  snapshot sees (for a whole scan, or a fetch's row group), and making
 *	  them the files a loaded group overlays. How the overlay puts the
 *	  values in is colfile_column.c's.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mvinc.h"
#include "colfile/colfile.h"
#include "colfile/colfile_column_int.h"

struct ColfileFileSet
{
	int			n;
	ColfileColumnFile **files;	/* by (first_block, seq) */
};

/* The descriptor of some columns of desc, in attnums order */
TupleDesc
ColfileSubsetDesc(TupleDesc desc, int nattrs, const AttrNumber *attnums)
{
	TupleDesc	sub = CreateTemplateTupleDesc(Max(nattrs, 1));

	for (int i = 0; i < nattrs; i++)
		TupleDescCopyEntry(sub, i + 1, desc, attnums[i]);
	return sub;
}

/*
 * A file's row positions (ascending) as stored: an int4 array, or, when
 * smaller, a bitmap after the marker -1 and the bitmap's length in bits
 * (an UPDATE of every row of a 10,000-row group: 1.2 kB, which compresses
 * well, instead of 40 kB)
 */
#define POSITIONS_BITMAP_MARKER (-1)

static bytea *
encode_positions(const int32 *positions, int n)
{
	int32		nbits = n > 0 ? positions[n - 1] + 1 : 0;
	Size		bitmap_len = sizeof(int32) * 2 + (nbits + 7) / 8;
	bytea	   *out;

	if (n == 0 || bitmap_len >= sizeof(int32) * n)
	{
		out = palloc(VARHDRSZ + sizeof(int32) * n);
		SET_VARSIZE(out, VARHDRSZ + sizeof(int32) * n);
		if (n > 0)
			memcpy(VARDATA(out), positions, sizeof(int32) * n);
		return out;
	}
	out = palloc0(VARHDRSZ + bitmap_len);
	SET_VARSIZE(out, VARHDRSZ + bitmap_len);
	{
		int32		head[2] = {POSITIONS_BITMAP_MARKER, nbits};
		uint8	   *bits = (uint8 *) VARDATA(out) + sizeof(head);

		memcpy(VARDATA(out), head, sizeof(head));
		for (int i = 0; i < n; i++)
			bits[positions[i] / 8] |= (uint8) (1 << (positions[i] % 8));
	}
	return out;
}

/* The positions of a stored file (n of them), in the current context */
static int32 *
decode_positions(bytea *stored, int n)
{
	Size		len = VARSIZE_ANY_EXHDR(stored);
	const char *data = VARDATA_ANY(stored);
	int32		head[2];
	int32	   *positions = palloc(sizeof(int32) * Max(n, 1));
	int			k = 0;

	if (len < sizeof(head) || (memcpy(head, data, sizeof(head)), head[0] != POSITIONS_BITMAP_MARKER))
	{
		if (len != sizeof(int32) * n)
			elog(ERROR, "colfile column file holds %zu bytes of positions for %d rows", len, n);
		memcpy(positions, data, len);
		return positions;
	}
	if (head[1] < 0 || len != sizeof(head) + (head[1] + 7) / 8)
		elog(ERROR, "colfile column file has a malformed position bitmap");
	for (int32 p = 0; p < head[1]; p++)
		if (((const uint8 *) data)[sizeof(head) + p / 8] & (1 << (p % 8)))
		{
			if (k >= n)
				elog(ERROR, "colfile column file holds more positions than its %d rows", n);
			positions[k++] = p;
		}
	if (k != n)
		elog(ERROR, "colfile column file holds %d positions for %d rows", k, n);
	return positions;
}

/* Encode and write a column file, and insert its metadata tuple */
void
ColfileWriteColumnFile(Relation rel, FileContent *fc)
{
	ColfileMetaRels ids;
	Relation	meta,
				idx;
	Datum		values[Natts_colfile];
	bool		nulls[Natts_colfile] = {0};
	Datum	   *att = palloc(sizeof(Datum) * fc->nattrs);
	bytea	   *pos = encode_positions(fc->positions, fc->n);
	HeapTuple	tup;
	IndexInfo  *ii;
	StringInfoData data;
	bytea	   *dir;
	int64		offset;

	initStringInfo(&data);
	dir = ColfileEncodeGroup(rel, ColfileSubsetDesc(RelationGetDescr(rel), fc->nattrs, fc->attnums),
							 fc->n, fc->values, fc->isnull, &data);
	for (int i = 0; i < fc->nattrs; i++)
		att[i] = Int16GetDatum(fc->attnums[i]);

	ColfileMetaRelIds(&ids);
	values[0] = ObjectIdGetDatum(fc->relfilenode);
	values[1] = Int64GetDatum(fc->first_block);
	values[2] = Int32GetDatum(fc->n);
	values[5] = Int64GetDatum(data.len);
	values[6] = PointerGetDatum(dir);
	values[7] = Int64GetDatum(fc->group_seq);
	values[8] = PointerGetDatum(construct_array(att, fc->nattrs, INT2OID, 2, true, TYPALIGN_SHORT));
	values[9] = PointerGetDatum(pos);

	/*
	 * VACUUM must not list the bytes as free before the tuple exists, and
	 * a merge of the group's files must not list them between the new
	 * sequence number and the tuple (ColfileMergeColumnFiles)
	 */
	ColfileLockSpace(rel, RowExclusiveLock);
	values[3] = Int64GetDatum(fc->seq != 0 ? fc->seq : ColfileNextSeq());
	offset = data.len > 0 ? ColfileWriteBytes(rel, data.data, data.len) : 0;
	values[4] = Int64GetDatum(offset);
	meta = table_open(ids.colfile, RowExclusiveLock);
	tup = heap_form_tuple(RelationGetDescr(meta), values, nulls);
	heap_insert(meta, tup, fc->cid, 0, NULL);
	idx = index_open(ids.colfile_idx, RowExclusiveLock);
	ii = BuildIndexInfo(idx);
	{
		/* the key: (relfilenode, first_block, seq) */
		Datum		keys[3] = {values[0], values[1], values[3]};
		bool		keynulls[3] = {false, false, false};

		index_insert(idx, keys, keynulls, &tup->t_self, meta, UNIQUE_CHECK_YES, false, ii);
	}
	index_close(idx, RowExclusiveLock);
	heap_freetuple(tup);
	table_close(meta, RowExclusiveLock);
	ColfileUnlockSpace(rel, RowExclusiveLock);
	pfree(data.data);
}

/*
 * Column files as read from their tuples, kept across queries: a fetch by
 * TID lists its group's files each time, and deforming their position
 * arrays again each time cost more than the lookup. A file tuple never
 * changes once inserted, so (relfilenode, seq, xmin) names one file for
 * good; a merged file takes the seq of a file it replaces, so xmin is the
 * raw one too (frozen, HeapTupleHeaderGetXmin gives both the same).
 * Entries are freed only at transaction end (loaded groups point at them),
 * then all at once when the cache outgrew FILE_CACHE_BYTES.
 */
#define FILE_CACHE_BYTES (16 * 1024 * 1024)

typedef struct FileCacheKey
{
	Oid			relfilenode;
	TransactionId xmin;
	TransactionId raw_xmin;		/* frozen files too: a merged one reuses seq */
	int64		seq;
} FileCacheKey;

typedef struct FileCacheEntry
{
	FileCacheKey key;
	ColfileColumnFile *f;
} FileCacheEntry;

static HTAB *file_cache = NULL;
static MemoryContext file_cache_cxt = NULL;
static Size file_cache_bytes = 0;

/* Transaction end: drop the file cache when it grew too big */
void
ColfileFileCacheXactEnd(void)
{
	if (file_cache != NULL && file_cache_bytes > FILE_CACHE_BYTES)
	{
		hash_destroy(file_cache);
		MemoryContextReset(file_cache_cxt);
		file_cache = NULL;
		file_cache_bytes = 0;
	}
}

/* Is a file tuple out of the picture: removed or its inserter aborted? */
bool
ColfileFileTupleGone(HeapTupleHeader h)
{
	TransactionId xmax;

	if (ColfileInserterAborted(h))
		return true;
	if ((h->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
		return false;
	xmax = HeapTupleHeaderGetUpdateXid(h);
	return TransactionIdIsValid(xmax) &&
		(TransactionIdIsCurrentTransactionId(xmax) ||
		 (!TransactionIdIsInProgress(xmax) && TransactionIdDidCommit(xmax)));
}

/*
 * Is a file tuple being deleted by another transaction still running (a
 * merge of the group's files that has not ended)?
 */
bool
ColfileFileTupleBeingDeleted(HeapTupleHeader h)
{
	TransactionId xmax;

	if ((h->t_infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
		return false;
	xmax = HeapTupleHeaderGetUpdateXid(h);
	return TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) &&
		TransactionIdIsInProgress(xmax);
}

/*
 * May a lookup under a non-MVCC snapshot overlay this file? Only files of
 * committed transactions and of this one: never another transaction's
 * uncommitted values.
 */
static bool
file_committed_or_mine(HeapTupleHeader h)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(h);

	if (ColfileFileTupleGone(h))
		return false;
	if (TransactionIdIsCurrentTransactionId(xmin))
		return true;
	if (TransactionIdIsInProgress(xmin))
		return false;
	return TransactionIdDidCommit(xmin);
}

/* A column file as described by its tuple, from the cache or read now */
ColfileColumnFile *
ColfileFileFromTuple(Relation meta, HeapTuple tup)
{
	FileCacheKey key;
	FileCacheEntry *e;
	bool		found;
	bool		isnull;
	MemoryContext old;
	ColfileColumnFile *f;
	Datum		values[Natts_colfile];
	bool		nulls[Natts_colfile];
	ArrayType  *arr;
	bytea	   *pos;
	int16	   *att;
	Size		before;

	if (file_cache == NULL)
	{
		HASHCTL		ctl;

		if (file_cache_cxt == NULL)
			file_cache_cxt = AllocSetContextCreate(TopMemoryContext, "colfile column file cache",
												   ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(FileCacheKey);
		ctl.entrysize = sizeof(FileCacheEntry);
		ctl.hcxt = file_cache_cxt;
		file_cache = hash_create("colfile column files", 256, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.relfilenode = DatumGetObjectId(heap_getattr(tup, 1, RelationGetDescr(meta), &isnull));
	key.seq = DatumGetInt64(heap_getattr(tup, 4, RelationGetDescr(meta), &isnull));
	key.xmin = HeapTupleHeaderGetXmin(tup->t_data);
	key.raw_xmin = HeapTupleHeaderGetRawXmin(tup->t_data);
	e = hash_search(file_cache, &key, HASH_ENTER, &found);
	if (found)
		return e->f;

	e->f = NULL;
	before = MemoryContextMemAllocated(file_cache_cxt, true);
	old = MemoryContextSwitchTo(file_cache_cxt);
	PG_TRY();
	{
		f = palloc0(sizeof(ColfileColumnFile));
		heap_deform_tuple(tup, RelationGetDescr(meta), values, nulls);
		f->rg.first_block = DatumGetInt64(values[1]);
		f->nrows = f->rg.nrows = DatumGetInt32(values[2]);
		f->seq = f->rg.seq = DatumGetInt64(values[3]);
		f->rg.data_offset = DatumGetInt64(values[4]);
		f->rg.data_length = DatumGetInt64(values[5]);
		f->rg.directory = DatumGetByteaPCopy(values[6]);
		f->group_seq = DatumGetInt64(values[7]);
		arr = DatumGetArrayTypePCopy(values[8]);
		f->nattrs = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		att = (int16 *) ARR_DATA_PTR(arr);
		f->attnums = palloc(sizeof(AttrNumber) * Max(f->nattrs, 1));
		for (int i = 0; i < f->nattrs; i++)
			f->attnums[i] = att[i];
		pos = DatumGetByteaPP(values[9]);
		f->positions = decode_positions(pos, f->nrows);
		if ((Pointer) pos != DatumGetPointer(values[9]))
			pfree(pos);

		f->xmin = key.xmin;
		f->cmin = TransactionIdIsCurrentTransactionId(key.xmin) ?
			HeapTupleHeaderGetCmin(tup->t_data) : InvalidCommandId;
	}
	PG_CATCH();
	{
		hash_search(file_cache, &key, HASH_REMOVE, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	e->f = f;
	file_cache_bytes += MemoryContextMemAllocated(file_cache_cxt, true) - before;
	return f;
}

/*
 * The column files under snapshot with key relfilenode (and first_block,
 * when given), by (first_block, seq), as a list of cache entries. MVCC
 * snapshots judge file tuples as any; other snapshots see committed files
 * and this transaction's.
 */
static List *
list_files(Oid relfilenode, const int64 *first_block, Snapshot snapshot)
{
	ColfileMetaRels ids;
	Relation	meta,
				idx;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;
	List	   *result = NIL;
	bool		mvcc = snapshot->snapshot_type == SNAPSHOT_MVCC ||
		snapshot->snapshot_type == SNAPSHOT_HISTORIC_MVCC;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.colfile, AccessShareLock);
	idx = index_open(ids.colfile_idx, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	if (first_block)
		ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(*first_block));
	for (;;)
	{
		uint64		mark = mvcc ? 0 : ColfileCompletionMark();
		bool		skipped = false;

		scan = systable_beginscan_ordered(meta, idx,
										  mvcc ? MvincUnlockedSnapshot(snapshot) : SnapshotAny,
										  first_block ? 2 : 1, key);
		while ((tup = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
		{
			if (mvcc && !MvincUnlockedVisible(scan, tup, snapshot))
				continue;
			if (!mvcc && !file_committed_or_mine(tup->t_data))
			{
				skipped = true;
				continue;
			}
			result = lappend(result, ColfileFileFromTuple(meta, tup));
		}
		systable_endscan_ordered(scan);

		/*
		 * A merge of files by VACUUM inserts the merged file and deletes
		 * the files it replaces: a listing may have skipped the first as
		 * running (or never seen it, ColfileCompletionMark) and the others
		 * as gone once it committed.  List again then.
		 */
		if (mvcc || !skipped || !ColfileCompletedSince(mark))
			break;
		list_free(result);
		result = NIL;
		CHECK_FOR_INTERRUPTS();
	}
	index_close(idx, AccessShareLock);
	table_close(meta, AccessShareLock);
	return result;
}

/* Every column file of rel a scan under snapshot overlays (NULL: none) */
ColfileFileSet *
ColfileListColumnFiles(Relation rel, Snapshot snapshot, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	List	   *l = list_files(rel->rd_node.relNode, NULL, snapshot);
	ColfileFileSet *set = NULL;
	ListCell   *lc;
	int			i = 0;

	if (l != NIL)
	{
		set = palloc(sizeof(ColfileFileSet));
		set->n = list_length(l);
		set->files = palloc(sizeof(ColfileColumnFile *) * set->n);
		foreach(lc, l)
			set->files[i++] = lfirst(lc);
		list_free(l);
	}
	MemoryContextSwitchTo(old);
	return set;
}

/* Number of files in a set (NULL: none) */
int
ColfileFileSetCount(ColfileFileSet *set)
{
	return set ? set->n : 0;
}

/* File i of a set, by (first_block, seq) */
ColfileColumnFile *
ColfileFileSetGet(ColfileFileSet *set, int i)
{
	return set->files[i];
}

/* Index of the first file of a set with first_block >= fb */
static int
set_lower_bound(ColfileFileSet *set, int64 fb)
{
	int			lo = 0,
				hi = set->n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (set->files[mid]->rg.first_block < fb)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does a file of the set overlay column attnum of row group rg? */
bool
ColfileFileSetTouches(ColfileFileSet *set, const ColfileRowGroup *rg,
					  AttrNumber attnum)
{
	if (set == NULL)
		return false;
	for (int i = set_lower_bound(set, rg->first_block);
		 i < set->n && set->files[i]->rg.first_block == rg->first_block; i++)
	{
		ColfileColumnFile *f = set->files[i];

		for (int a = 0; a < f->nattrs; a++)
			if (f->attnums[a] == attnum)
				return true;
	}
	return false;
}

/* An entry of a group's files_loaded: the file (in the file cache) is the key */
typedef struct LoadedFileEntry
{
	ColfileColumnFile *f;
	ColfileLoadedFile *loaded;
} LoadedFileEntry;

/*
 * Make files (of gc's group, oldest first) the ones gc overlays. Called
 * per fetch by TID, with every file of the group: looked up by hash, as a
 * group may carry thousands of single-row updates' files until VACUUM.
 */
void
ColfileGroupSetFiles(ColfileGroupCache *gc, ColfileColumnFile **files, int n)
{
	MemoryContext old = MemoryContextSwitchTo(gc->cxt);

	if (gc->visible == NULL || n > gc->visible_cap)
	{
		gc->visible = palloc(sizeof(ColfileLoadedFile *) * Max(n, 4));
		gc->visible_cap = Max(n, 4);
	}
	if (gc->files_loaded == NULL && n > 0)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(ColfileColumnFile *);
		ctl.entrysize = sizeof(LoadedFileEntry);
		ctl.hcxt = gc->cxt;
		gc->files_loaded = hash_create("colfile loaded files", Max(n, 16), &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	for (int i = 0; i < n; i++)
	{
		bool		found;
		LoadedFileEntry *e = hash_search(gc->files_loaded, &files[i], HASH_ENTER, &found);

		/* decoded columns of a file are kept: a file never changes */
		if (!found)
		{
			e->loaded = palloc0(sizeof(ColfileLoadedFile));
			e->loaded->f = files[i];
			e->loaded->cols = palloc0(sizeof(ColfileDecoded *) * Max(files[i]->nattrs, 1));
		}
		gc->visible[i] = e->loaded;
	}
	gc->nvisible = n;
	MemoryContextSwitchTo(old);
}

/* Overlay on a scan's group the files of the set that belong to it */
void
ColfileGroupUseFiles(Relation rel, ColfileGroupCache *gc, ColfileFileSet *set)
{
	int			lo,
				hi;

	gc->nvisible = 0;
	if (set == NULL)
		return;
	lo = set_lower_bound(set, gc->rg.first_block);
	for (hi = lo; hi < set->n && set->files[hi]->rg.first_block == gc->rg.first_block; hi++)
		;
	if (hi > lo)
		ColfileGroupSetFiles(gc, set->files + lo, hi - lo);
}

/* Overlay on a fetch's group the files snapshot sees (one lookup) */
void
ColfileGroupFilesFor(Relation rel, ColfileGroupCache *gc, Snapshot snapshot)
{
	List	   *l = list_files(rel->rd_node.relNode, &gc->rg.first_block, snapshot);

	gc->nvisible = 0;
	if (l != NIL)
	{
		ColfileColumnFile **arr = palloc(sizeof(ColfileColumnFile *) * list_length(l));
		int			i = 0;
		ListCell   *lc;

		foreach(lc, l)
			arr[i++] = lfirst(lc);
		ColfileGroupSetFiles(gc, arr, i);
		pfree(arr);
		list_free(l);
	}
}

/*
 * Does gc overlay a file the MVCC snapshot does not see: another
 * transaction's committed after the snapshot was taken, or one of ours
 * written by the snapshot's command or a later one?
 */
bool
ColfileGroupFilesUnseenBy(ColfileGroupCache *gc, Snapshot snapshot)
{
	for (int i = 0; i < gc->nvisible; i++)
	{
		ColfileColumnFile *f = gc->visible[i]->f;

		if (TransactionIdIsCurrentTransactionId(f->xmin) ?
			(f->cmin != InvalidCommandId && f->cmin >= snapshot->curcid) :
			XidInMVCCSnapshot(f->xmin, snapshot))
			return true;
	}
	return false;
}
