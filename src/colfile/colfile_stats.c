/*-------------------------------------------------------------------------
 * colfile_stats.c
 *	  mvinc.colfile_stats, mvinc.colfile_column_stats,
 *	  mvinc.colfile_block_stats and mvinc.colfile_check:
 *	  what a colfile table holds, and whether its metadata, pages, row
 *	  states and indexes agree (the colfile counterpart of amcheck).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "access/amapi.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_index.h"
#include "access/htup_details.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "access/table.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "mvinc.h"
#include "colfile/colfile.h"

PG_FUNCTION_INFO_V1(colfile_stats);
PG_FUNCTION_INFO_V1(colfile_column_stats);
PG_FUNCTION_INFO_V1(colfile_check);
PG_FUNCTION_INFO_V1(colfile_block_stats);

/*
 * Open a relation argument for the functions that report on its contents:
 * a colfile table the caller may read (what they count and check is the
 * table's rows), its buffered rows written
 */
Relation
ColfileOpenReadable(Oid relid)
{
	Relation	rel;

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	rel = relation_open(relid, AccessShareLock);

	if (rel->rd_rel->relkind != RELKIND_RELATION || !ColfileIsColfileRel(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a colfile table", RelationGetRelationName(rel)),
				 errhint("Pass a table created with USING colfile.")));
	ColfileFlushAllForRead(relid);
	return rel;
}

/*
 * Rows of relfilenode locked or updated in place by transactions still
 * running (a prepared one's records are in both row state tables)
 */
static int64
count_locked_rows(Oid relfilenode)
{
	ColfileRowRecordScan s;
	HeapTuple	tup;
	HASHCTL		ctl;
	HTAB	   *rows;
	int64		n;

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(ItemPointerData);
	ctl.hcxt = CurrentMemoryContext;
	rows = hash_create("colfile locked rows", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ColfileRowRecordScanBegin(&s, relfilenode, NULL, SnapshotAny, AccessShareLock);
	while ((tup = ColfileRowRecordScanNext(&s)) != NULL)
	{
		char		kind = ColfileRowRecordKind(&s, tup);
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

		if ((ROWSTATE_IS_LOCK(kind) || kind == ROWSTATE_COLUMNS) &&
			(TransactionIdIsCurrentTransactionId(xmin) || TransactionIdIsInProgress(xmin)))
			(void) hash_search(rows, ColfileRowRecordTid(&s, tup), HASH_ENTER, NULL);
	}
	ColfileRowRecordScanEnd(&s);
	n = hash_get_num_entries(rows);
	hash_destroy(rows);
	return n;
}

/*
 * Count visible deletions, their delete files (distinct sequence numbers)
 * and rows locked (or updated in place) by transactions still running.
 */
static void
count_states(Relation rel, Snapshot snap, int64 *deleted, int64 *delete_files,
			 int64 *locked)
{
	HTAB	   *del = ColfileDeletedSet(rel->rd_node.relNode, snap);
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	HASHCTL		ctl;
	HTAB	   *seqs;

	int64		floor = ColfileTidFloor(rel);

	/* deletions below the floor are an earlier life's (ColfileTidFloor) */
	*deleted = 0;
	if (floor >= 0)
	{
		HASH_SEQ_STATUS st;
		ItemPointer t;

		hash_seq_init(&st, del);
		while ((t = hash_seq_search(&st)) != NULL)
			if (ItemPointerGetBlockNumber(t) >= floor)
				(*deleted)++;
	}
	*locked = 0;
	hash_destroy(del);

	ColfileMetaRelIds(&ids);
	*locked = count_locked_rows(rel->rd_node.relNode);
	meta = table_open(ids.rowstate, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rel->rd_node.relNode));
	/* delete files: distinct sequence numbers of visible deletions */
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(int64);
	ctl.hcxt = CurrentMemoryContext;
	seqs = hash_create("colfile delete files", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	scan = systable_beginscan(meta, ids.rowstate_del_idx, true, MvincUnlockedSnapshot(snap), 1, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		ItemPointer t;
		Datum		seq;

		if (!MvincUnlockedVisible(scan, tup, snap))
			continue;
		t = DatumGetItemPointer(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull));
		seq = heap_getattr(tup, 5, RelationGetDescr(meta), &isnull);
		if (floor < 0 || (int64) ItemPointerGetBlockNumber(t) < floor)
			continue;			/* an earlier life's */
		if (!isnull)
		{
			int64		v = DatumGetInt64(seq);

			(void) hash_search(seqs, &v, HASH_ENTER, NULL);
		}
	}
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	*delete_files = hash_get_num_entries(seqs);
	hash_destroy(seqs);
}

Datum
colfile_stats(PG_FUNCTION_ARGS)
{
	Relation	rel = ColfileOpenReadable(PG_GETARG_OID(0));
	Snapshot	snap = GetActiveSnapshot();
	List	   *groups = ColfileListGroups(rel, snap);
	ListCell   *lc;
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};
	ColfileExtent *free_ext;
	int			nfree,
				i;
	int64		free_bytes = 0;
	int64		rows = 0,
				comp = 0,
				raw = 0,
				deleted,
				delete_files,
				locked;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);
		int			natts,
					a;

		rows += rg->nrows - rg->ndead;	/* delete-vector rows are gone */
		ColfileDirChunk(rg->directory, 1, &natts);
		for (a = 1; a <= natts; a++)
		{
			ColfileChunkDesc *c = ColfileDirChunk(rg->directory, a, NULL);

			comp += c->stored_len;
			raw += c->raw_len;
		}
	}
	count_states(rel, snap, &deleted, &delete_files, &locked);
	values[0] = Int64GetDatum(list_length(groups));
	values[1] = Int64GetDatum(rows - deleted);
	values[2] = Int64GetDatum(deleted);
	values[3] = Int64GetDatum(locked);
	{
		ColfileFileSet *files = ColfileListColumnFiles(rel, snap, CurrentMemoryContext);
		int64		floor = ColfileTidFloor(rel);
		int64		nfiles = 0;

		for (i = 0; i < ColfileFileSetCount(files); i++)
			if (floor >= 0 && ColfileFileSetGet(files, i)->rg.first_block >= floor)
				nfiles++;		/* (others are an earlier life's) */
		values[4] = Int64GetDatum(nfiles);
	}
	values[5] = Int64GetDatum(delete_files);
	values[6] = Int64GetDatum(RelationGetNumberOfBlocks(rel));
	values[7] = Int64GetDatum(comp);
	values[8] = Int64GetDatum(raw);
	free_ext = ColfileListFreeExtents(rel, &nfree, NULL);
	for (i = 0; i < nfree; i++)
		free_bytes += free_ext[i].length;
	values[9] = Int64GetDatum(free_bytes);
	relation_close(rel, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
colfile_column_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = ColfileOpenReadable(PG_GETARG_OID(0));
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *groups = ColfileListGroups(rel, GetActiveSnapshot());
	int			natts = desc->natts;
	int64	   *comp = palloc0(sizeof(int64) * natts);
	int64	   *raw = palloc0(sizeof(int64) * natts);
	int64	   *nz = palloc0(sizeof(int64) * natts);
	int64	   *nr = palloc0(sizeof(int64) * natts);
	ListCell   *lc;
	int			a;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);

		for (a = 0; a < natts; a++)
		{
			ColfileChunkDesc *c = ColfileDirChunk(rg->directory, a + 1, NULL);

			if (c == NULL || (c->flags & CHUNK_ALL_NULL))
				continue;
			comp[a] += c->stored_len;
			raw[a] += c->raw_len;
			if (c->compression == CHUNK_ZSTD)
				nz[a]++;
			else
				nr[a]++;
		}
	}
	for (a = 0; a < natts; a++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		values[0] = Int32GetDatum(a + 1);
		values[1] = NameGetDatum(&att->attname);
		values[2] = Int64GetDatum(comp[a]);
		values[3] = Int64GetDatum(raw[a]);
		values[4] = Int64GetDatum(nz[a]);
		values[5] = Int64GetDatum(nr[a]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/* Mini-blocks per column, encoding and compression, with their bytes */
Datum
colfile_block_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = ColfileOpenReadable(PG_GETARG_OID(0));
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *groups = ColfileListGroups(rel, GetActiveSnapshot());
	int			natts = desc->natts;

	/* [attnum][encoding][compression] */
#define NENC 8
	int64	   *nblk = palloc0(sizeof(int64) * natts * NENC * 2);
	int64	   *bytes = palloc0(sizeof(int64) * natts * NENC * 2);
	ListCell   *lc;
	int			a,
				e,
				z;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);

		for (a = 0; a < natts && rg->nrows > 0; a++)
		{
			ColfileChunkDesc *c = ColfileDirChunk(rg->directory, a + 1, NULL);
			uint32		nb = (rg->nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;
			uint32		i;

			if (c == NULL || (c->flags & CHUNK_ALL_NULL))
				continue;
			if (c->flags & CHUNK_HAS_DICT)
				nb++;			/* the chunk dictionary */
			for (i = 0; i < nb; i++)
			{
				ColfileBlockDesc bd;
				int			k;

				ColfileBlockInfo(rel, rg, a + 1, i, &bd);
				k = (a * NENC + Min(bd.encoding, NENC - 1)) * 2 +
					(bd.compression == CHUNK_ZSTD);
				nblk[k]++;
				bytes[k] += bd.stored_len;
			}
		}
	}
	for (a = 0; a < natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		for (e = 0; e < NENC; e++)
			for (z = 0; z < 2; z++)
			{
				int			k = (a * NENC + e) * 2 + z;
				Datum		values[6];
				bool		nulls[6] = {0};

				if (nblk[k] == 0)
					continue;
				values[0] = Int32GetDatum(a + 1);
				values[1] = NameGetDatum(&att->attname);
				values[2] = CStringGetTextDatum(ColfileEncodingName(e));
				values[3] = CStringGetTextDatum(z ? "zstd" : "none");
				values[4] = Int64GetDatum(nblk[k]);
				values[5] = Int64GetDatum(bytes[k]);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	}
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * Do single-value reads (what an index fetch does) of a sample of rows of
 * column a agree with the decoded chunk d, byte for byte? Returns the
 * first row that differs, or -1.
 */
static int
point_reads_differ(Relation rel, ColfileRowGroup *rg, TupleDesc desc, int a,
				   ColfileDecoded *d)
{
	Form_pg_attribute att = TupleDescAttr(desc, a - 1);
	int			pos;

	for (pos = 0; pos < rg->nrows; pos++)
	{
		Datum		v;
		bool		isnull;
		int			r = pos % COLFILE_ROWS_PER_MINIBLOCK;

		/* the first rows of each block, its last ones and a stride */
		if (r > 2 && r < COLFILE_ROWS_PER_MINIBLOCK - 2 && pos < rg->nrows - 2 &&
			r % 61 != 0)
			continue;
		ColfileDecodeValue(rel, rg, desc, a, pos, InvalidBuffer, &v, &isnull);
		if (isnull != d->isnull[pos] ||
			(!isnull && !datumIsEqual(v, d->values[pos], att->attbyval, att->attlen)))
			return pos;
	}
	return -1;
}

/* Emit one problem row */
static void
problem(ReturnSetInfo *rsinfo, const char *what, char *detail)
{
	Datum		values[2];
	bool		nulls[2] = {0};

	values[0] = CStringGetTextDatum(what);
	values[1] = CStringGetTextDatum(detail);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* A byte extent for colfile_check: a visible row group's, or a free one */
typedef struct CheckedExtent
{
	int64		offset;
	int64		length;
	bool		is_free;
} CheckedExtent;

static int
checked_extent_cmp(const void *a, const void *b)
{
	int64		x = ((const CheckedExtent *) a)->offset;
	int64		y = ((const CheckedExtent *) b)->offset;

	return x < y ? -1 : x > y ? 1 : 0;
}

Datum
colfile_check(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = ColfileOpenReadable(PG_GETARG_OID(0));
	TupleDesc	desc = RelationGetDescr(rel);
	Snapshot	snap = GetActiveSnapshot();
	List	   *groups = ColfileListGroups(rel, snap);
	ListCell   *lc;
	int64		next_tid_block,
				next_byte;
	int64		prev_end_block = -1;
	int64		live = 0;
	HTAB	   *deleted;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile check",
											  ALLOCSET_DEFAULT_SIZES);
	List	   *indexes;
	ColfileFileSet *files;
	int64		floor;

	InitMaterializedSRF(fcinfo, 0);
	ColfileReadMeta(rel, &next_tid_block, &next_byte);
	deleted = ColfileDeletedSet(rel->rd_node.relNode, snap);
	/* metadata below the floor is an earlier life's, ignored by readers */
	floor = ColfileTidFloor(rel);
	if (floor < 0)
		floor = PG_INT64_MAX;

	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);
		int			natts,
					a,
					pos;
		int64		last_block = ColfileGroupLastBlock(rg);

		if (rg->nrows <= 0)
			problem(rsinfo, "empty row group",
					psprintf("row group %lld has %d rows", (long long) rg->first_block, rg->nrows));
		if (rg->first_block < prev_end_block)
			problem(rsinfo, "overlapping row groups",
					psprintf("row group %lld starts before the previous one ends (%lld)",
							 (long long) rg->first_block, (long long) prev_end_block));
		prev_end_block = last_block + 1;
		if (last_block + 1 > next_tid_block)
			problem(rsinfo, "row group beyond the TID allocator",
					psprintf("row group %lld ends at block %lld, metapage says %lld",
							 (long long) rg->first_block, (long long) (last_block + 1),
							 (long long) next_tid_block));
		if (rg->data_offset + rg->data_length > next_byte)
			problem(rsinfo, "row group beyond the byte allocator",
					psprintf("row group %lld ends at byte %lld, metapage says %lld",
							 (long long) rg->first_block,
							 (long long) (rg->data_offset + rg->data_length),
							 (long long) next_byte));
		ColfileDirChunk(rg->directory, 1, &natts);
		if (natts > desc->natts)
			problem(rsinfo, "row group has more columns than the table",
					psprintf("row group %lld has %d columns, the table %d",
							 (long long) rg->first_block, natts, desc->natts));
		for (a = 1; a <= Min(natts, desc->natts); a++)
		{
			ColfileChunkDesc *c = ColfileDirChunk(rg->directory, a, NULL);
			MemoryContext old;

			if (c->flags & CHUNK_ALL_NULL)
				continue;
			if (c->offset + c->stored_len > (uint64) rg->data_length)
			{
				problem(rsinfo, "chunk outside its row group",
						psprintf("row group %lld column %d", (long long) rg->first_block, a));
				continue;
			}
			old = MemoryContextSwitchTo(cxt);
			PG_TRY();
			{
				ColfileDecoded *d = ColfileDecodeChunk(rel, rg, desc, a, cxt);
				int			bad = point_reads_differ(rel, rg, desc, a, d);

				if (bad >= 0)
					problem(rsinfo, "point read differs from scan",
							psprintf("row group %lld column %d row %d",
									 (long long) rg->first_block, a, bad));
			}
			PG_CATCH();
			{
				ErrorData  *e;

				MemoryContextSwitchTo(cxt);
				e = CopyErrorData();
				FlushErrorState();
				MemoryContextSwitchTo(old);
				problem(rsinfo, "unreadable chunk",
						psprintf("row group %lld column %d: %s",
								 (long long) rg->first_block, a, e->message));
			}
			PG_END_TRY();
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
		}
		for (pos = 0; pos < rg->nrows; pos++)
		{
			ItemPointerData tid;

			ColfileGroupTid(rg, pos, &tid);
			if (!ColfileGroupRowGone(rg, pos) &&
				!ColfileDeletedSetContains(deleted, &tid))
				live++;
		}
	}

	/*
	 * Column files the snapshot sees: bound to a row group it sees, positions
	 * ascending within the group, columns of the table, chunks readable
	 */
	files = ColfileListColumnFiles(rel, snap, CurrentMemoryContext);
	for (int i = 0; i < ColfileFileSetCount(files); i++)
	{
		ColfileColumnFile *f = ColfileFileSetGet(files, i);
		ColfileRowGroup *owner = NULL;
		char	   *where = psprintf("column file %lld of row group %lld",
									 (long long) f->seq, (long long) f->rg.first_block);

		if (f->rg.first_block < floor)
			continue;			/* an earlier life's (ColfileTidFloor) */

		foreach(lc, groups)
			if (((ColfileRowGroup *) lfirst(lc))->first_block == f->rg.first_block)
				owner = lfirst(lc);
		if (owner == NULL)
		{
			problem(rsinfo, "column file without its row group", where);
			continue;
		}
		for (int r = 0; r < f->nrows; r++)
			if (f->positions[r] < 0 || f->positions[r] >= owner->nrows ||
				(r > 0 && f->positions[r] <= f->positions[r - 1]))
			{
				problem(rsinfo, "column file position out of order or range",
						psprintf("%s: position %d at %d", where, f->positions[r], r));
				break;
			}
		if (f->rg.data_offset + f->rg.data_length > next_byte)
			problem(rsinfo, "column file beyond the byte allocator", where);
		for (int k = 0; k < f->nattrs; k++)
		{
			MemoryContext old;
			TupleDesc	sub;

			if (f->attnums[k] < 1 || f->attnums[k] > desc->natts)
			{
				problem(rsinfo, "column file names no column of the table",
						psprintf("%s: column %d", where, f->attnums[k]));
				continue;
			}
			old = MemoryContextSwitchTo(cxt);
			PG_TRY();
			{
				sub = CreateTemplateTupleDesc(f->nattrs);
				for (int j = 0; j < f->nattrs; j++)
					TupleDescCopyEntry(sub, j + 1, desc, Min(Max(f->attnums[j], 1), desc->natts));
				(void) ColfileDecodeChunk(rel, &f->rg, sub, k + 1, cxt);
			}
			PG_CATCH();
			{
				ErrorData  *e;

				MemoryContextSwitchTo(cxt);
				e = CopyErrorData();
				FlushErrorState();
				MemoryContextSwitchTo(old);
				problem(rsinfo, "unreadable column file",
						psprintf("%s column %d: %s", where, f->attnums[k], e->message));
			}
			PG_END_TRY();
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
		}
	}

	/*
	 * No two visible row groups or column files share a byte, and no listed
	 * free extent holds a byte of one
	 */
	{
		int			nfree,
					n = 0,
					i;
		int64		free_end;	/* the allocator's end when the list was read */
		ColfileExtent *free_ext = ColfileListFreeExtents(rel, &nfree, &free_end);
		CheckedExtent *all = palloc(sizeof(CheckedExtent) *
									(list_length(groups) + ColfileFileSetCount(files) + nfree + 1));

		for (i = 0; i < ColfileFileSetCount(files); i++)
		{
			ColfileColumnFile *f = ColfileFileSetGet(files, i);

			if (f->rg.data_length <= 0 || f->rg.first_block < floor)
				continue;
			all[n].offset = f->rg.data_offset;
			all[n].length = f->rg.data_length;
			all[n++].is_free = false;
		}

		foreach(lc, groups)
		{
			ColfileRowGroup *rg = lfirst(lc);

			if (rg->data_length <= 0)
				continue;
			all[n].offset = rg->data_offset;
			all[n].length = rg->data_length;
			all[n++].is_free = false;
		}
		for (i = 0; i < nfree; i++)
		{
			if (free_ext[i].offset + free_ext[i].length > free_end)
				problem(rsinfo, "free extent beyond the byte allocator",
						psprintf("free extent at byte %lld of %lld bytes, metapage says %lld",
								 (long long) free_ext[i].offset,
								 (long long) free_ext[i].length, (long long) free_end));
			all[n].offset = free_ext[i].offset;
			all[n].length = free_ext[i].length;
			all[n++].is_free = true;
		}
		qsort(all, n, sizeof(CheckedExtent), checked_extent_cmp);
		for (i = 1; i < n; i++)
		{
			CheckedExtent *a = &all[i - 1];
			CheckedExtent *b = &all[i];

			if (a->offset + a->length > b->offset)
				problem(rsinfo,
						a->is_free || b->is_free ?
						"row group or column file bytes listed free" :
						"row groups or column files share bytes",
						psprintf("bytes %lld..%lld and %lld..%lld overlap",
								 (long long) a->offset, (long long) (a->offset + a->length),
								 (long long) b->offset, (long long) (b->offset + b->length)));
		}
	}

	/* deletions the snapshot sees must name rows of groups it sees */
	{
		HASH_SEQ_STATUS st;
		ItemPointer t;

		hash_seq_init(&st, deleted);
		while ((t = hash_seq_search(&st)) != NULL)
		{
			ColfileRowGroup rg;

			if (ItemPointerGetBlockNumber(t) < floor)
				continue;
			if (!ColfileFindRowGroup(rel->rd_node.relNode, ItemPointerGetBlockNumber(t),
									 snap, &rg) ||
				ColfileGroupPos(&rg, t) < 0)
				problem(rsinfo, "deletion of a row that does not exist",
						psprintf("row (%u,%u)", ItemPointerGetBlockNumber(t),
								 ItemPointerGetOffsetNumber(t)));
		}
	}

	/* every index has exactly one entry per live row, pointing at a live row */
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		IndexScanDesc is;
		int64		entries = 0;
		ItemPointer t;

		if (idx->rd_indam->amgettuple == NULL || !idx->rd_indam->amoptionalkey || !heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) ||
			!idx->rd_index->indisvalid)
		{
			index_close(idx, AccessShareLock);
			continue;
		}
		is = index_beginscan(rel, idx, snap, 0, 0);
		index_rescan(is, NULL, 0, NULL, 0);
		while ((t = index_getnext_tid(is, ForwardScanDirection)) != NULL)
		{
			ColfileRowGroup rg;

			if (ColfileRowVisible(rel, t, snap, &rg))
				entries++;
		}
		index_endscan(is);
		if (entries != live)
			problem(rsinfo, "index does not match the table",
					psprintf("index \"%s\" has %lld entries for live rows, the table %lld live rows",
							 RelationGetRelationName(idx), (long long) entries, (long long) live));
		index_close(idx, AccessShareLock);
	}
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}
