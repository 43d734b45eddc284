/*-------------------------------------------------------------------------
 * colfile_tableam.c
 *	  The colfile table access method handler: sequential and parallel
 *	  scans, index fetches, inserts, storage set-up, size estimates and
 *	  ANALYZE sampling. Modification, locking and maintenance callbacks live
 *	  in colfile_modify.c and colfile_vacuum.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/multixact.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/tsmapi.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "access/stratnum.h"
#include "access/nbtree.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
#include "nodes/primnodes.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "colfile/colfile.h"

PG_FUNCTION_INFO_V1(colfile_handler);

typedef struct ColfileParallelScanData
{
	ParallelTableScanDescData base;
	pg_atomic_uint64 next_group;
} ColfileParallelScanData;

/* A qual "column op constant" that min/max can refute for a whole group */
typedef struct ColfileSkipKey
{
	AttrNumber	attno;
	StrategyNumber strategy;
	Datum		value;
	Oid			collation;
	FmgrInfo	cmp;			/* btree order proc (column type, constant type) */
} ColfileSkipKey;

typedef struct ColfileScanDescData
{
	TableScanDescData base;
	MemoryContext cxt;
	bool		loaded;
	ColfileRowGroup **groups;
	int			ngroups;
	int			gi;				/* current group index, -1 before first */
	int			pos;
	int			cur_gi;			/* group index of cur */
	ColfileGroupCache *cur;
	ColfileGroupCache *prev;
	HTAB	   *deleted;		/* MVCC snapshots: deleted rows */
	uint8	  **group_gone;		/* [ngroups]: per group with rows in deleted,
								 * a bitmap of the rows hidden (its delete
								 * vector and those), else NULL; NULL when
								 * deleted is empty */
	bool		deleted_unmapped;	/* groups not in TID order: probe deleted */
	bool		check_each;		/* other snapshots: check rows one by one */
	bool		cur_all_visible;	/* every row of cur is visible */
	const uint8 *cur_gone;		/* else, when only its delete vector hides
								 * rows: that vector */
	ColfileProj *proj;			/* NULL: every column */
	ColfileFileSet *files;		/* column files the snapshot sees, or NULL */
	ColfileSkipKey *skip;		/* quals checked against chunk min/max */
	int			nskip;
	int64		groups_skipped;
	/* ANALYZE */
	int64		total_rows;
	int64		sample_lo;
	int64		sample_hi;
	int64		sample_next;
	int64		sample_block;	/* TABLESAMPLE: current block, -1 before */
	int64	   *group_start;	/* cumulative row counts */
	bool		own_snapshot;
} ColfileScanDescData;

typedef ColfileScanDescData *ColfileScanDesc;

static void mark_groups_with_deletions(ColfileScanDesc s);

typedef struct ColfileIndexFetchData
{
	IndexFetchTableData base;
	MemoryContext cxt;
	ColfileGroupCache *cur;
	ColfileGroupCache *prev;
	ColfileProj *proj;			/* NULL: every column */
	MemoryContext tmp;			/* reset per fetch */
} ColfileIndexFetchData;

/* Remember which columns a scan must decode (NULL: all) */
void
ColfileScanSetNeeded(TableScanDesc scan, Bitmapset *needed)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	MemoryContext old = MemoryContextSwitchTo(s->cxt);

	s->proj = ColfileMakeProj(needed, RelationGetDescr(s->base.rs_rd)->natts);
	MemoryContextSwitchTo(old);
}

/*
 * Take the quals of the form "column op constant" (op a btree operator of
 * the column type's default operator family) as group-skipping keys,
 * replacing any set before.
 */
void
ColfileScanSetSkipQuals(TableScanDesc scan, List *quals, Index scanrelid)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	TupleDesc	desc = RelationGetDescr(s->base.rs_rd);
	ListCell   *lc;

	s->skip = palloc0(sizeof(ColfileSkipKey) * Max(list_length(quals), 1));
	s->nskip = 0;
	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *var;
		Const	   *con;
		Oid			opno;
		TypeCacheEntry *tc;
		int			strategy;
		Oid			proc;
		Form_pg_attribute att;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		var = linitial(op->args);
		con = lsecond(op->args);
		opno = op->opno;
		if (IsA(var, Const) && IsA(con, Var))
		{
			Node	   *t = (Node *) var;

			var = (Var *) con;
			con = (Const *) t;
			opno = get_commutator(opno);
			if (!OidIsValid(opno))
				continue;
		}
		if (!IsA(var, Var) || !IsA(con, Const) || con->constisnull ||
			var->varno != scanrelid || var->varlevelsup != 0 ||
			var->varattno <= 0 || var->varattno > desc->natts)
			continue;
		att = TupleDescAttr(desc, var->varattno - 1);
		if (att->attisdropped || var->vartype != att->atttypid ||
			(OidIsValid(att->attcollation) && op->inputcollid != att->attcollation))
			continue;
		tc = lookup_type_cache(att->atttypid, TYPECACHE_BTREE_OPFAMILY);
		if (!OidIsValid(tc->btree_opf))
			continue;
		strategy = get_op_opfamily_strategy(opno, tc->btree_opf);
		if (strategy == 0)
			continue;
		proc = get_opfamily_proc(tc->btree_opf, att->atttypid, con->consttype, BTORDER_PROC);
		if (!OidIsValid(proc))
			continue;
		s->skip[s->nskip].attno = var->varattno;
		s->skip[s->nskip].strategy = strategy;
		s->skip[s->nskip].value = con->constvalue;
		s->skip[s->nskip].collation = att->attcollation;
		fmgr_info_cxt(proc, &s->skip[s->nskip].cmp, s->cxt);
		s->nskip++;
	}
	MemoryContextSwitchTo(old);
}

/* Can min/max prove that no row of the group passes the skip keys? */
static bool
group_excluded(ColfileScanDesc s, ColfileRowGroup *rg)
{
	TupleDesc	desc = RelationGetDescr(s->base.rs_rd);
	int			i;

	for (i = 0; i < s->nskip; i++)
	{
		ColfileSkipKey *k = &s->skip[i];
		ColfileChunkDesc *c = ColfileDirChunk(rg->directory, k->attno, NULL);
		Datum		mn,
					mx;
		int			cmin,
					cmax;
		bool		excluded = false;

		if (c == NULL)
			continue;			/* column added later: missing value */
		if (ColfileFileSetTouches(s->files, rg, k->attno))
			continue;			/* updated values: the group's min/max may not hold */
		if (c->flags & CHUNK_ALL_NULL)
			return true;		/* strict operators never pass NULL */
		if (!ColfileDirMinMax(rg->directory, k->attno, TupleDescAttr(desc, k->attno - 1),
							  &mn, &mx))
			continue;
		cmin = DatumGetInt32(FunctionCall2Coll(&k->cmp, k->collation, mn, k->value));
		cmax = DatumGetInt32(FunctionCall2Coll(&k->cmp, k->collation, mx, k->value));
		switch (k->strategy)
		{
			case BTLessStrategyNumber:
				excluded = cmin >= 0;
				break;
			case BTLessEqualStrategyNumber:
				excluded = cmin > 0;
				break;
			case BTEqualStrategyNumber:
				excluded = cmin > 0 || cmax < 0;
				break;
			case BTGreaterEqualStrategyNumber:
				excluded = cmax < 0;
				break;
			case BTGreaterStrategyNumber:
				excluded = cmax <= 0;
				break;
		}
		if (excluded)
			return true;
	}
	return false;
}

/* Remember which columns an index fetch must decode (NULL: all) */
void
ColfileIndexFetchSetNeeded(IndexFetchTableData *fetch, Bitmapset *needed)
{
	ColfileIndexFetchData *f = (ColfileIndexFetchData *) fetch;
	MemoryContext old = MemoryContextSwitchTo(f->cxt);

	if (needed == NULL)
		needed = bms_make_singleton(0); /* no column, not "all" */
	f->proj = ColfileMakeProj(needed, RelationGetDescr(f->base.rel)->natts);
	MemoryContextSwitchTo(old);
}

/*
 * Slots are virtual slots that also report xmin, the transaction that
 * wrote the row's row group, for a row fetched by TID (fetch_row_version,
 * tuple_lock): ON CONFLICT reads it to tell a row of its own transaction
 * from a concurrent one ("command cannot affect row a second time", or a
 * serialization failure under REPEATABLE READ). Rows from scans, and every
 * other system column, are refused as by a virtual slot.
 */
typedef struct ColfileSlot
{
	VirtualTupleTableSlot base;
	TransactionId xmin;			/* set by ColfileFetchRow, else invalid */
} ColfileSlot;

static TupleTableSlotOps colfile_slot_ops;

static void
colfile_slot_clear(TupleTableSlot *slot)
{
	((ColfileSlot *) slot)->xmin = InvalidTransactionId;
	TTSOpsVirtual.clear(slot);
}

static void
colfile_slot_copyslot(TupleTableSlot *dst, TupleTableSlot *src)
{
	((ColfileSlot *) dst)->xmin = InvalidTransactionId;
	TTSOpsVirtual.copyslot(dst, src);
}

static Datum
colfile_slot_getsysattr(TupleTableSlot *slot, int attnum, bool *isnull)
{
	ColfileSlot *cs = (ColfileSlot *) slot;

	if (attnum == MinTransactionIdAttributeNumber && TransactionIdIsValid(cs->xmin))
	{
		*isnull = false;
		return TransactionIdGetDatum(cs->xmin);
	}
	return TTSOpsVirtual.getsysattr(slot, attnum, isnull);
}

/* Let a colfile slot report xmin for the row it holds (or stop: invalid) */
void
ColfileSlotSetXmin(TupleTableSlot *slot, TransactionId xmin)
{
	if (slot->tts_ops == &colfile_slot_ops)
		((ColfileSlot *) slot)->xmin = xmin;
}

static const TupleTableSlotOps *
colfile_slot_callbacks(Relation rel)
{
	if (colfile_slot_ops.getsysattr == NULL)
	{
		colfile_slot_ops = TTSOpsVirtual;
		colfile_slot_ops.base_slot_size = sizeof(ColfileSlot);
		colfile_slot_ops.clear = colfile_slot_clear;
		colfile_slot_ops.getsysattr = colfile_slot_getsysattr;
		colfile_slot_ops.copyslot = colfile_slot_copyslot;
	}
	return &colfile_slot_ops;
}

/* Read the row group list (and deletions) under the scan's snapshot */
static void
load_groups(ColfileScanDesc s)
{
	Relation	rel = s->base.rs_rd;
	Snapshot	snap = s->base.rs_snapshot;
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	List	   *l;
	ListCell   *lc;
	int			i = 0;

	if (snap == NULL)
	{
		snap = RegisterSnapshot(GetTransactionSnapshot());
		s->base.rs_snapshot = snap;
		s->own_snapshot = true;
		ColfileCheckRewrite(rel, snap);	/* ANALYZE's scans come here */
	}
	l = ColfileListGroups(rel, snap);
	s->ngroups = list_length(l);
	s->groups = palloc(sizeof(ColfileRowGroup *) * Max(s->ngroups, 1));
	s->group_start = palloc(sizeof(int64) * (s->ngroups + 1));
	s->total_rows = 0;
	foreach(lc, l)
	{
		ColfileRowGroup *rg = lfirst(lc);

		/* SnapshotAny also returns groups of aborted transactions */
		if (snap->snapshot_type == SNAPSHOT_ANY &&
			!TransactionIdIsCurrentTransactionId(rg->xmin) &&
			!TransactionIdIsInProgress(rg->xmin) &&
			!TransactionIdDidCommit(rg->xmin))
			continue;
		s->groups[i] = rg;
		s->group_start[i] = s->total_rows;
		s->total_rows += rg->nrows;
		i++;
	}
	s->ngroups = i;
	s->group_start[i] = s->total_rows;
	s->files = ColfileListColumnFiles(rel, snap, s->cxt);
	if (snap->snapshot_type == SNAPSHOT_MVCC)
	{
		s->deleted = ColfileDeletedSet(rel->rd_node.relNode, snap);
		mark_groups_with_deletions(s);
	}
	else if (snap->snapshot_type != SNAPSHOT_ANY)
		s->check_each = true;
	s->loaded = true;
	MemoryContextSwitchTo(old);
}

static TableScanDesc
colfile_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
				   struct ScanKeyData *key, ParallelTableScanDesc pscan,
				   uint32 flags)
{
	ColfileScanDesc s = palloc0(sizeof(ColfileScanDescData));

	ColfileCheckRewrite(rel, snapshot);
	ColfileFlushAllForRead(RelationGetRelid(rel));
	s->base.rs_rd = rel;
	s->base.rs_snapshot = snapshot;
	s->base.rs_nkeys = nkeys;
	s->base.rs_flags = flags;
	s->base.rs_parallel = pscan;
	s->cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile scan",
								   ALLOCSET_DEFAULT_SIZES);
	s->gi = -1;
	s->pos = -1;
	s->sample_block = -1;
	ColfilePredicateLockScan(rel, snapshot, flags);
	/* statistics, as heap counts them (seq_scan, seq_tup_read) */
	if (flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(rel);
	if (pscan != NULL)
		ColfileScanSetNeeded(&s->base, ColfileParallelNeeded(RelationGetRelid(rel)));
	return (TableScanDesc) s;
}

static void
colfile_scan_end(TableScanDesc scan)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;

	if (s->own_snapshot)
		UnregisterSnapshot(s->base.rs_snapshot);
	if ((s->base.rs_flags & SO_TEMP_SNAPSHOT) && s->base.rs_snapshot)
		UnregisterSnapshot(s->base.rs_snapshot);
	MemoryContextDelete(s->cxt);
	pfree(s);
}

static void
colfile_scan_rescan(TableScanDesc scan, struct ScanKeyData *key,
					bool set_params, bool allow_strat, bool allow_sync,
					bool allow_pagemode)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;

	s->gi = -1;
	s->pos = -1;
	s->cur_gi = -1;
	s->sample_block = -1;
	if (s->base.rs_flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(s->base.rs_rd);
	ColfileFreeGroup(s->prev);
	ColfileFreeGroup(s->cur);
	s->prev = s->cur = NULL;
}

/* Move to group gi, keeping the previous one decoded one step longer */
static void
enter_group(ColfileScanDesc s, int gi)
{
	ColfileFreeGroup(s->prev);
	s->prev = s->cur;
	s->cur = ColfileLoadGroup(s->base.rs_rd, s->groups[gi], s->cxt);
	ColfileGroupUseFiles(s->base.rs_rd, s->cur, s->files);
}

/* Next group index for a forward scan (claimed from the shared counter in parallel) */
static int
next_group_index(ColfileScanDesc s)
{
	if (s->base.rs_parallel)
	{
		ColfileParallelScanData *p = (ColfileParallelScanData *) s->base.rs_parallel;

		return (int) pg_atomic_fetch_add_u64(&p->next_group, 1);
	}
	return s->gi < 0 ? 0 : s->gi + 1;
}

/* Is the row at position pos of the current group visible? */
static inline bool
row_visible(ColfileScanDesc s, int pos)
{
	ItemPointerData tid;

	if (s->cur_all_visible)
		return true;
	if (s->cur_gone)
		return (s->cur_gone[pos / 8] & (1 << (pos % 8))) == 0;
	if (ColfileGroupRowGone(&s->cur->rg, pos))
		return false;
	ColfileGroupTid(&s->cur->rg, pos, &tid);
	if (s->deleted)
		return !s->deleted_unmapped || !ColfileDeletedSetContains(s->deleted, &tid);
	if (s->check_each)
	{
		ColfileRowGroup rg;
		MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile row check",
												  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(tmp);
		bool		visible;

		visible = ColfileRowVisible(s->base.rs_rd, &tid, s->base.rs_snapshot, &rg);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(tmp);
		return visible;
	}
	return true;
}

/*
 * The rows of the deleted set, as bitmaps per group: each deleted TID's
 * group found by binary search over the groups in TID order (their TID
 * ranges do not overlap), its position by ColfileGroupPos; a group's bitmap
 * starts as its delete vector. A scan then tests a bit per row instead of
 * probing the set.
 */
static void
mark_groups_with_deletions(ColfileScanDesc s)
{
	HASH_SEQ_STATUS seq;
	ItemPointer tid;

	if (hash_get_num_entries(s->deleted) == 0 || s->ngroups == 0)
		return;
	for (int i = 1; i < s->ngroups; i++)
	{
		if (s->groups[i]->first_block <= s->groups[i - 1]->first_block)
		{
			/* not in TID order (not expected): probe the set per row */
			s->deleted_unmapped = true;
			return;
		}
	}
	s->group_gone = palloc0(sizeof(uint8 *) * s->ngroups);
	hash_seq_init(&seq, s->deleted);
	while ((tid = hash_seq_search(&seq)) != NULL)
	{
		int64		block = ItemPointerGetBlockNumberNoCheck(tid);
		int			lo = 0,
					hi = s->ngroups - 1;
		ColfileRowGroup *rg;
		int			pos;

		/* the last group starting at or below block */
		while (lo < hi)
		{
			int			mid = (lo + hi + 1) / 2;

			if (s->groups[mid]->first_block <= block)
				lo = mid;
			else
				hi = mid - 1;
		}
		rg = s->groups[lo];
		if (rg->first_block > block || block > ColfileGroupLastBlock(rg) ||
			(pos = ColfileGroupPos(rg, tid)) < 0)
			continue;
		if (s->group_gone[lo] == NULL)
		{
			Size		len = (rg->nrows + 7) / 8;

			s->group_gone[lo] = palloc0(len);
			if (rg->dead_off != 0)
				memcpy(s->group_gone[lo], VARDATA(rg->directory) + rg->dead_off, len);
		}
		s->group_gone[lo][pos / 8] |= 1 << (pos % 8);
	}
}

/* Make group gi the current decoded group */
static void
ensure_group(ColfileScanDesc s, int gi)
{
	if (s->cur == NULL || s->cur_gi != gi)
	{
		enter_group(s, gi);
		s->cur_gi = gi;
		/* most groups need no check per row, or a bit test */
		s->cur_all_visible = false;
		s->cur_gone = NULL;
		if (!s->check_each && !s->deleted_unmapped)
		{
			if (s->group_gone != NULL && s->group_gone[gi] != NULL)
				s->cur_gone = s->group_gone[gi];
			else if (s->cur->rg.dead_off != 0)
				s->cur_gone = (const uint8 *) VARDATA(s->cur->rg.directory) + s->cur->rg.dead_off;
			else
				s->cur_all_visible = true;
		}
	}
}

/*
 * Position (gi, pos) is the row returned last; gi == -1 is before the
 * first group, gi == ngroups after the last.
 */
static bool
colfile_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
						 TupleTableSlot *slot)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;

	CHECK_FOR_INTERRUPTS();
	if (!s->loaded)
		load_groups(s);
	if (ScanDirectionIsBackward(direction))
	{
		if (s->base.rs_parallel)
			elog(ERROR, "backward parallel scans are not supported");
		if (s->gi >= s->ngroups)
		{
			s->gi = s->ngroups - 1;
			s->pos = INT_MAX;
		}
		for (;;)
		{
			if (s->gi < 0)
			{
				s->gi = -1;
				ExecClearTuple(slot);
				return false;
			}
			if (s->pos == INT_MAX && s->nskip > 0 && group_excluded(s, s->groups[s->gi]))
			{
				s->groups_skipped++;
				s->gi--;
				continue;
			}
			ensure_group(s, s->gi);
			if (s->pos > s->cur->rg.nrows)
				s->pos = s->cur->rg.nrows;
			s->pos--;
			if (s->pos < 0)
			{
				s->gi--;
				s->pos = INT_MAX;
				continue;
			}
			if (row_visible(s, s->pos))
				break;
		}
	}
	else
	{
		if (s->gi < 0)
		{
			s->gi = next_group_index(s);
			s->pos = -1;
		}
		for (;;)
		{
			if (s->gi >= s->ngroups)
			{
				s->gi = s->ngroups;
				ExecClearTuple(slot);
				return false;
			}
			if (s->pos < 0 && s->nskip > 0 && group_excluded(s, s->groups[s->gi]))
			{
				s->groups_skipped++;
				s->gi = next_group_index(s);
				continue;
			}
			ensure_group(s, s->gi);
			s->pos++;
			if (s->pos >= s->cur->rg.nrows)
			{
				s->gi = next_group_index(s);
				s->pos = -1;
				continue;
			}
			if (row_visible(s, s->pos))
				break;
		}
	}
	ColfileFillSlotScan(s->base.rs_rd, s->cur, s->pos, slot, s->proj);
	pgstat_count_heap_getnext(s->base.rs_rd);
	return true;
}

static Size
colfile_parallelscan_estimate(Relation rel)
{
	return sizeof(ColfileParallelScanData);
}

static Size
colfile_parallelscan_initialize(Relation rel, ParallelTableScanDesc pscan)
{
	ColfileParallelScanData *p = (ColfileParallelScanData *) pscan;

	p->base.phs_relid = RelationGetRelid(rel);
	p->base.phs_syncscan = false;
	pg_atomic_init_u64(&p->next_group, 0);
	return sizeof(ColfileParallelScanData);
}

static void
colfile_parallelscan_reinitialize(Relation rel, ParallelTableScanDesc pscan)
{
	ColfileParallelScanData *p = (ColfileParallelScanData *) pscan;

	pg_atomic_write_u64(&p->next_group, 0);
}

/*
 * Next row group of a (possibly parallel) scan, for index builds: every
 * participant claims whole groups.
 */
ColfileRowGroup *
ColfileScanNextGroup(TableScanDesc scan)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	int			gi;

	if (!s->loaded)
		load_groups(s);
	gi = next_group_index(s);
	s->gi = gi;
	if (gi >= s->ngroups)
		return NULL;
	return s->groups[gi];
}

/*
 * Next group of a forward, non-parallel scan for a consumer that reads
 * columns whole (the aggregate scan), loaded, with the rows to skip: none
 * (*gone NULL, *per_row false), those set in *gone, or, with *per_row,
 * those ColfileScanRowVisible refuses.  NULL at the end.  Groups the
 * skip keys exclude are passed over, as by the row-at-a-time scan.
 */
ColfileGroupCache *
ColfileScanNextLoadedGroup(TableScanDesc scan, const uint8 **gone, bool *per_row)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;

	Assert(s->base.rs_parallel == NULL);
	if (!s->loaded)
		load_groups(s);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		s->gi = next_group_index(s);
		s->pos = -1;
		if (s->gi >= s->ngroups)
		{
			s->gi = s->ngroups;
			return NULL;
		}
		if (s->nskip > 0 && group_excluded(s, s->groups[s->gi]))
		{
			s->groups_skipped++;
			continue;
		}
		ensure_group(s, s->gi);
		*gone = s->cur_all_visible ? NULL : s->cur_gone;
		*per_row = !s->cur_all_visible && s->cur_gone == NULL;
		return s->cur;
	}
}

/* Is row pos of the group ColfileScanNextLoadedGroup returned last visible? */
bool
ColfileScanRowVisible(TableScanDesc scan, int pos)
{
	return row_visible((ColfileScanDesc) scan, pos);
}

/* Row groups the skip keys excluded so far */
int64
ColfileScanGroupsSkipped(TableScanDesc scan)
{
	return ((ColfileScanDesc) scan)->groups_skipped;
}

/* Count rows a batch consumer read, as the scan's statistics count them */
void
ColfileScanCountRows(TableScanDesc scan, int64 nrows)
{
	Relation	rel = scan->rs_rd;

	if (pgstat_should_count_relation(rel))
		rel->pgstat_info->t_counts.t_tuples_returned += nrows;
}

/* ---- index fetches ---- */

static IndexFetchTableData *
colfile_index_fetch_begin(Relation rel)
{
	ColfileIndexFetchData *f = palloc0(sizeof(ColfileIndexFetchData));

	ColfileFlushAllForRead(RelationGetRelid(rel));
	f->base.rel = rel;
	f->cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile index fetch",
								   ALLOCSET_DEFAULT_SIZES);
	f->tmp = AllocSetContextCreate(f->cxt, "colfile index fetch per row",
								   ALLOCSET_SMALL_SIZES);
	return &f->base;
}

static void
colfile_index_fetch_reset(IndexFetchTableData *scan)
{
}

static void
colfile_index_fetch_end(IndexFetchTableData *scan)
{
	ColfileIndexFetchData *f = (ColfileIndexFetchData *) scan;

	MemoryContextDelete(f->cxt);
	pfree(f);
}

static bool
colfile_index_fetch_tuple(IndexFetchTableData *scan, ItemPointer tid,
						  Snapshot snapshot, TupleTableSlot *slot,
						  bool *call_again, bool *all_dead)
{
	ColfileIndexFetchData *f = (ColfileIndexFetchData *) scan;
	Relation	rel = f->base.rel;
	ColfileRowGroup rg;
	MemoryContext old;
	bool		visible;

	*call_again = false;
	if (all_dead)
		*all_dead = false;
	ColfileCheckRewrite(rel, snapshot);
	/* locked before the row is read (colfile_ssi.c), even if not visible */
	ColfilePredicateLockRow(rel, tid, snapshot);
	MemoryContextReset(f->tmp);
	old = MemoryContextSwitchTo(f->tmp);
	visible = ColfileRowVisible(rel, tid, snapshot, &rg);
	MemoryContextSwitchTo(old);
	if (!visible)
		return false;
	if (rg.nrows < 0)
	{
		/* a reservation seen by a uniqueness check: the row exists, unread */
		ExecStoreAllNullTuple(slot);
		slot->tts_tid = *tid;
		slot->tts_tableOid = RelationGetRelid(rel);
		return true;
	}
	if (f->cur == NULL || f->cur->rg.first_block != rg.first_block ||
		f->cur->rg.seq != rg.seq)
	{
		if (f->prev && f->prev->rg.first_block == rg.first_block &&
			f->prev->rg.seq == rg.seq)
		{
			ColfileGroupCache *t = f->cur;

			f->cur = f->prev;
			f->prev = t;
		}
		else
		{
			ColfileFreeGroup(f->prev);
			f->prev = f->cur;
			f->cur = ColfileLoadGroup(rel, &rg, f->cxt);
			f->cur->by_block = true;
		}
	}
	/* single decoded values live until the next fetch, as heap's buffer pin */
	old = MemoryContextSwitchTo(f->tmp);
	ColfileGroupFilesFor(rel, f->cur, snapshot);
	ColfileFillSlot(rel, f->cur, ColfileGroupPos(&rg, tid), slot, f->proj);
	MemoryContextSwitchTo(old);
	return true;
}

/* ---- single rows ---- */

static bool
colfile_tuple_fetch_row_version(Relation rel, ItemPointer tid,
								Snapshot snapshot, TupleTableSlot *slot)
{
	return ColfileFetchRowVersion(rel, tid, snapshot, slot);
}

static bool
colfile_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	int64		next_tid_block;
	int64		next_byte;

	/*
	 * as heap's "below the relation's size": a TID block handed out, in
	 * this life of the file (ColfileTidFloor)
	 */
	if (!ItemPointerIsValid(tid))
		return false;
	ColfileReadMeta(scan->rs_rd, &next_tid_block, &next_byte);
	return ItemPointerGetBlockNumber(tid) < next_tid_block &&
		(int64) ItemPointerGetBlockNumber(tid) >= ColfileTidFloorCached(scan->rs_rd);
}

/* Follow committed updates to the newest version */
static void
colfile_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
	Relation	rel = scan->rs_rd;
	int			guard = 0;

	for (;;)
	{
		List	   *states = ColfileRowStatesFor(rel->rd_node.relNode, tid);
		ListCell   *lc;
		bool		moved = false;

		foreach(lc, states)
		{
			ColfileRowState *rs = lfirst(lc);

			if (rs->kind == ROWSTATE_UPDATED &&
				!ItemPointerIndicatesMovedPartitions(&rs->new_tid) &&
				(TransactionIdIsCurrentTransactionId(rs->xmin) ||
				 (!TransactionIdIsInProgress(rs->xmin) && TransactionIdDidCommit(rs->xmin))))
			{
				*tid = rs->new_tid;
				moved = true;
				break;
			}
		}
		list_free_deep(states);
		if (!moved || ++guard > 1000000)
			break;
	}
}

static bool
colfile_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
								 Snapshot snapshot)
{
	ColfileRowGroup rg;

	ColfileFlushForTid(RelationGetRelid(rel), &slot->tts_tid);
	return ColfileRowVisible(rel, &slot->tts_tid, snapshot, &rg);
}

/* Index entries are removed by VACUUM's bulk delete, never opportunistically */
static TransactionId
colfile_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	return InvalidTransactionId;
}

/* ---- inserts ---- */

static void
colfile_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
					 int options, struct BulkInsertStateData *bistate)
{
	/*
	 * As heap: an xid first, then the check for SIREAD locks on the
	 * relation (a view's stored read takes one)
	 */
	(void) GetCurrentTransactionId();
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	ColfileBufferInsert(rel, slot, cid);
	ColfileInsertCallDone(rel);
	ColfileLogRowChange(rel, 'i', NULL, slot);
	pgstat_count_heap_insert(rel, 1);
}

static void
colfile_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
								 CommandId cid, int options,
								 struct BulkInsertStateData *bistate,
								 uint32 specToken)
{
	(void) GetCurrentTransactionId();
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	ColfileBufferInsert(rel, slot, cid);
	ColfileFlushRel(rel);
	pgstat_count_heap_insert(rel, 1);
}

static void
colfile_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
								   uint32 specToken, bool succeeded)
{
	if (!succeeded)
	{
		colfile_kill_row(rel, &slot->tts_tid);
		pgstat_count_heap_delete(rel);	/* as heap: the insert was counted */
	}
	else
		ColfileLogRowChange(rel, 'i', NULL, slot);
}

static void
colfile_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
					 CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	int			i;

	(void) GetCurrentTransactionId();
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	for (i = 0; i < nslots; i++)
		ColfileBufferInsert(rel, slots[i], cid);
	ColfileInsertCallDone(rel);
	for (i = 0; i < nslots; i++)
		ColfileLogRowChange(rel, 'i', NULL, slots[i]);
	pgstat_count_heap_insert(rel, nslots);
}

static void
colfile_finish_bulk_insert(Relation rel, int options)
{
	ColfileFlushRel(rel);
}

/* ---- storage ---- */

static void
colfile_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
								  char persistence, TransactionId *freezeXid,
								  MultiXactId *minmulti)
{
	SMgrRelation srel;

	/*
	 * Temporary and unlogged tables' pages are not WAL-logged (generic WAL
	 * skips relations that need none); their metadata rows are ordinary
	 * rows of the logged metadata tables, removed with the table. Crash
	 * recovery empties an unlogged table's file (its init fork is empty)
	 * and leaves the metadata: readers of an empty file ignore it, and the
	 * file's first metapage starts its TIDs above it (ColfileTidFloor).
	 */

	/* rows buffered for the old storage are written there first */
	ColfileFlushRel(rel);

	*freezeXid = InvalidTransactionId;	/* our pages hold no xids */
	*minmulti = InvalidMultiXactId;

	/* forget the old storage's metadata (transactionally) and any stale rows */
	if (rel->rd_node.relNode != newrnode->relNode && OidIsValid(rel->rd_node.relNode))
		ColfileDeleteAllMetadata(rel->rd_node.relNode);
	ColfileDeleteAllMetadata(newrnode->relNode);

	srel = RelationCreateStorage(*newrnode, persistence, true);

	/* an unlogged table's (empty) init fork, as heap makes it */
	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(newrnode, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);
}

static void
colfile_relation_nontransactional_truncate(Relation rel)
{
	ColfileDiscardRel(RelationGetRelid(rel));
	ColfileDeleteAllMetadata(rel->rd_node.relNode);
	RelationTruncate(rel, 0);
	ColfileForgetTidFloor(rel);
}

/*
 * ALTER TABLE ... SET TABLESPACE: copy the file byte for byte, as heap
 * does, and the metadata under the new file number (ColfileCopyMetadata;
 * metadata a reused file number left behind is deleted first).  The
 * copy's metapage names this transaction as the rewriter, so that it
 * tells older snapshots it cannot answer them (ColfileCheckRewrite).
 */
static void
colfile_relation_copy_data(Relation rel, const RelFileNode *newrnode)
{
	SMgrRelation dstrel;

	ColfileFlushRel(rel);
	FlushRelationBuffers(rel);
	dstrel = smgropen(*newrnode, rel->rd_backend);
	RelationCreateStorage(*newrnode, rel->rd_rel->relpersistence, true);
	RelationCopyStorage(RelationGetSmgr(rel), dstrel, MAIN_FORKNUM,
						rel->rd_rel->relpersistence);
	for (ForkNumber fork = MAIN_FORKNUM + 1; fork <= MAX_FORKNUM; fork++)
	{
		if (!smgrexists(RelationGetSmgr(rel), fork))
			continue;
		smgrcreate(dstrel, fork, false);
		if (RelationIsPermanent(rel) ||
			(rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED && fork == INIT_FORKNUM))
			log_smgrcreate(newrnode, fork);
		RelationCopyStorage(RelationGetSmgr(rel), dstrel, fork,
							rel->rd_rel->relpersistence);
	}
	ColfileSetRewriteXidInCopy(dstrel, RelationIsPermanent(rel));
	ColfileDeleteAllMetadata(newrnode->relNode);
	ColfileCopyMetadata(rel->rd_node.relNode, newrnode->relNode);
	ColfileDeleteAllMetadata(rel->rd_node.relNode);
	RelationDropStorage(rel);
	smgrclose(dstrel);
}

static bool
colfile_relation_needs_toast_table(Relation rel)
{
	return false;				/* values are detoasted on write */
}

static Oid
colfile_relation_toast_am(Relation rel)
{
	return HEAP_TABLE_AM_OID;
}

static void
colfile_relation_estimate_size(Relation rel, int32 *attr_widths,
							   BlockNumber *pages, double *tuples,
							   double *allvisfrac)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Size		overhead = 1;
	int			i;

	/*
	 * Rows cost no bytes beyond their values, but a table without columns
	 * (or with all dropped) needs some width: the helper divides by it.
	 */
	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			overhead = 0;
	/* compressed columns: assume about three times heap's density */
	table_block_relation_estimate_size(rel, attr_widths, pages, tuples,
									   allvisfrac, overhead,
									   COLFILE_PAYLOAD_PER_PAGE * 3);
	*allvisfrac = 0;
}

/*
 * Make the group holding row number row (counted over the scan's groups in
 * order) current; returns the row's position in it
 */
static int
locate_row(ColfileScanDesc s, int64 row)
{
	int			lo = 0,
				hi = s->ngroups - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (s->group_start[mid] <= row)
			lo = mid;
		else
			hi = mid - 1;
	}
	ensure_group(s, lo);
	return (int) (row - s->group_start[lo]);
}

/* ---- ANALYZE: physical block b samples the b-th slice of all rows ---- */

static bool
colfile_scan_analyze_next_block(TableScanDesc scan, BlockNumber blockno,
								BufferAccessStrategy bstrategy)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	BlockNumber nblocks = RelationGetNumberOfBlocks(s->base.rs_rd);

	if (!s->loaded)
		load_groups(s);
	if (nblocks == 0)
		return false;
	s->sample_lo = (int64) ((double) s->total_rows * blockno / nblocks);
	s->sample_hi = (int64) ((double) s->total_rows * (blockno + 1) / nblocks);
	s->sample_next = s->sample_lo;
	return s->sample_hi > s->sample_lo;
}

static bool
colfile_scan_analyze_next_tuple(TableScanDesc scan, TransactionId OldestXmin,
								double *liverows, double *deadrows,
								TupleTableSlot *slot)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;

	while (s->sample_next < s->sample_hi)
	{
		int			pos = locate_row(s, s->sample_next++);

		if (!row_visible(s, pos))
		{
			*deadrows += 1;
			continue;
		}
		ColfileFillSlot(s->base.rs_rd, s->cur, pos, slot, NULL);
		*liverows += 1;
		return true;
	}
	return false;
}

/*
 * ---- TABLESAMPLE: virtual block b is rows [b * 291, (b + 1) * 291) in
 * the scan's row order (the TID block size), so SYSTEM samples runs of rows
 * and BERNOULLI single rows ----
 */

static bool
colfile_scan_sample_next_block(TableScanDesc scan, struct SampleScanState *scanstate)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	int64		nblocks;
	int64		blockno;

	if (!s->loaded)
		load_groups(s);
	nblocks = (s->total_rows + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK;
	if (nblocks == 0 || nblocks > MaxBlockNumber)
		blockno = -1;
	else if (tsm->NextSampleBlock)
	{
		BlockNumber b = tsm->NextSampleBlock(scanstate, (BlockNumber) nblocks);

		blockno = BlockNumberIsValid(b) ? (int64) b : -1;
	}
	else
		blockno = s->sample_block + 1 < nblocks ? s->sample_block + 1 : -1;
	s->sample_block = blockno;
	if (blockno < 0)
		return false;
	s->sample_lo = blockno * COLFILE_ROWS_PER_BLOCK;
	s->sample_hi = Min(s->sample_lo + COLFILE_ROWS_PER_BLOCK, s->total_rows);
	return true;
}

static bool
colfile_scan_sample_next_tuple(TableScanDesc scan, struct SampleScanState *scanstate,
							   TupleTableSlot *slot)
{
	ColfileScanDesc s = (ColfileScanDesc) scan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	OffsetNumber maxoffset = (OffsetNumber) (s->sample_hi - s->sample_lo);

	for (;;)
	{
		OffsetNumber off;
		int			pos;

		CHECK_FOR_INTERRUPTS();
		off = tsm->NextSampleTuple(scanstate, (BlockNumber) s->sample_block, maxoffset);
		if (!OffsetNumberIsValid(off))
		{
			ExecClearTuple(slot);
			return false;
		}
		pos = locate_row(s, s->sample_lo + off - 1);
		if (!row_visible(s, pos))
			continue;
		ColfileFillSlot(s->base.rs_rd, s->cur, pos, slot, s->proj);
		pgstat_count_heap_getnext(s->base.rs_rd);
		return true;
	}
}

static const TableAmRoutine colfile_methods = {
	.type = T_TableAmRoutine,

	.slot_callbacks = colfile_slot_callbacks,

	.scan_begin = colfile_scan_begin,
	.scan_end = colfile_scan_end,
	.scan_rescan = colfile_scan_rescan,
	.scan_getnextslot = colfile_scan_getnextslot,

	.parallelscan_estimate = colfile_parallelscan_estimate,
	.parallelscan_initialize = colfile_parallelscan_initialize,
	.parallelscan_reinitialize = colfile_parallelscan_reinitialize,

	.index_fetch_begin = colfile_index_fetch_begin,
	.index_fetch_reset = colfile_index_fetch_reset,
	.index_fetch_end = colfile_index_fetch_end,
	.index_fetch_tuple = colfile_index_fetch_tuple,

	.tuple_insert = colfile_tuple_insert,
	.tuple_insert_speculative = colfile_tuple_insert_speculative,
	.tuple_complete_speculative = colfile_tuple_complete_speculative,
	.multi_insert = colfile_multi_insert,
	.tuple_delete = colfile_tuple_delete,
	.tuple_update = colfile_tuple_update,
	.tuple_lock = colfile_tuple_lock,
	.finish_bulk_insert = colfile_finish_bulk_insert,

	.tuple_fetch_row_version = colfile_tuple_fetch_row_version,
	.tuple_get_latest_tid = colfile_tuple_get_latest_tid,
	.tuple_tid_valid = colfile_tuple_tid_valid,
	.tuple_satisfies_snapshot = colfile_tuple_satisfies_snapshot,
	.index_delete_tuples = colfile_index_delete_tuples,

	.relation_set_new_filenode = colfile_relation_set_new_filenode,
	.relation_nontransactional_truncate = colfile_relation_nontransactional_truncate,
	.relation_copy_data = colfile_relation_copy_data,
	.relation_copy_for_cluster = colfile_copy_for_cluster,
	.relation_vacuum = colfile_relation_vacuum,
	.scan_analyze_next_block = colfile_scan_analyze_next_block,
	.scan_analyze_next_tuple = colfile_scan_analyze_next_tuple,
	.index_build_range_scan = colfile_index_build_range_scan,
	.index_validate_scan = colfile_index_validate_scan,

	.relation_size = table_block_relation_size,
	.relation_needs_toast_table = colfile_relation_needs_toast_table,
	.relation_toast_am = colfile_relation_toast_am,
	.relation_fetch_toast_slice = heap_fetch_toast_slice,

	.relation_estimate_size = colfile_relation_estimate_size,

	/* no bitmap scans: the planner then never chooses them */
	.scan_bitmap_next_block = NULL,
	.scan_bitmap_next_tuple = NULL,
	.scan_sample_next_block = colfile_scan_sample_next_block,
	.scan_sample_next_tuple = colfile_scan_sample_next_tuple
};

/* Is rel a colfile table? */
bool
ColfileIsColfileRel(Relation rel)
{
	return rel->rd_tableam == &colfile_methods;
}

/* Is the table access method amoid colfile (under whatever name)? */
bool
ColfileIsColfileAm(Oid amoid)
{
	HeapTuple	tup = SearchSysCache1(AMOID, ObjectIdGetDatum(amoid));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		Form_pg_am am = (Form_pg_am) GETSTRUCT(tup);

		result = am->amtype == AMTYPE_TABLE &&
			GetTableAmRoutine(am->amhandler) == &colfile_methods;
		ReleaseSysCache(tup);
	}
	return result;
}

Datum
colfile_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&colfile_methods);
}
