/*-------------------------------------------------------------------------
 * colfile_compact.c
 *	  Compaction by VACUUM: runs of consecutive row groups are rewritten
 *	  into one row group of at most mvinc.colfile_rows_per_group rows,
 *	  without the rows that are dead to everybody, each row keeping its TID.
 *
 * Small statements make small row groups (a single-row UPDATE writes a
 * one-row group), and deleted rows keep their bytes and their deletion
 * records; scans slow down as both accumulate. A compacted group lists its
 * rows' TIDs (row ids, ColfileDirHeader), so indexes, deletion and lock
 * records, and every running transaction keep working unchanged: the
 * sources' tuples are deleted and the compacted one inserted in VACUUM's
 * transaction, and every snapshot sees one or the other, holding the same
 * live rows under the same TIDs. Rows dead to everybody are left out and
 * their row state records deleted, so scans hash fewer deletions.
 *
 * Which groups may be merged:
 *  - their inserters committed before every running snapshot (all-visible),
 *    so no in-progress transaction's rows move;
 *  - they are consecutive among the relfilenode's row group tuples (by
 *    first TID block), so a lookup of a TID (the nearest group tuple at or
 *    below its block) finds the compacted group; aborted and removed tuples
 *    in between are skipped by every lookup;
 *  - no tuple can appear later inside the run's TID range: a writer
 *    reserves TID blocks when it starts a buffer and inserts the group's
 *    tuple when it flushes. So only groups below the metapage's mark are
 *    merged: the TID allocator as a VACUUM read it, with the next
 *    transaction id read just after; writers take their id before they
 *    reserve blocks, and once every id below the mark's has ended
 *    (OldestXmin), every group below the mark has its tuple;
 *  - their column files, if any, are seen by every snapshot, and no
 *    transaction newer than the horizon updated their rows in place: the
 *    files are folded into the rewritten group.
 * mvinc.colfile_compact runs the same in the caller's transaction
 * (colfile_admin.c); the thresholds are the table's (ColfileCompactRules).
 *
 * A writing transaction merges its own small groups the same way before
 * it commits (ColfileMergeGroupsOfWriter, called by colfile_writer.c for
 * runs of groups over its adjacent TID reservations): nobody else sees
 * them yet, so none of the rules above is needed, every row is kept (its
 * own deletions are records by TID, which stays), and its own column
 * files on them are folded.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"
#include "colfile/colfile_column_int.h"

typedef struct CompactSource
{
	ColfileRowGroup *rg;
	int			nlive;			/* rows not dead to everybody */
	List	   *files;			/* its column files, oldest first */
	List	   *file_tids;		/* their tuples */
	int64		file_bytes;
} CompactSource;

typedef struct Compactor
{
	Relation	rel;
	ColfileRowDead dead;
	void	   *arg;
	const ColfileCompactRules *rules;
	ColfileCompactResult res;
	TransactionId oldest_xmin;	/* VACUUM's horizon */
	bool		writer;			/* merging its own groups before commit */
	List	   *touched;		/* groups rewritten or whose files merged */
	MemoryContext cxt;
} Compactor;

/* Is row pos of rg (at tid) dead to everybody, or already gone? */
static bool
row_dead(Compactor *c, ColfileRowGroup *rg, int pos, ItemPointer tid)
{
	return ColfileGroupRowGone(rg, pos) || c->dead(c->arg, tid);
}

static int
live_rows(Compactor *c, ColfileRowGroup *rg)
{
	int			n = 0;
	int			pos;

	for (pos = 0; pos < rg->nrows; pos++)
	{
		ItemPointerData tid;

		ColfileGroupTid(rg, pos, &tid);
		if (!row_dead(c, rg, pos, &tid))
			n++;
	}
	return n;
}

/*
 * A directory with a new extension (ColfileDirExt): the row ids of a
 * compacted group (nrowids, else 0) and a delete vector of nrows bits (when
 * ndead > 0). dir's own extension, if any, is dropped.
 */
static bytea *
with_ext(bytea *dir, const char *rowids, int nrowids, const uint8 *dead,
		 int nrows, int ndead)
{
	int32		old_ext = ((ColfileDirHeader *) VARDATA(dir))->ext_off;
	Size		base = old_ext != 0 ? old_ext : VARSIZE(dir) - VARHDRSZ;
	Size		off = TYPEALIGN(sizeof(int64), base);
	Size		bits = ndead > 0 ? (nrows + 7) / 8 : 0;
	Size		len = off + sizeof(ColfileDirExt) + sizeof(int64) * nrowids + bits;
	bytea	   *out = palloc0(VARHDRSZ + len);
	ColfileDirExt ext;

	memcpy(VARDATA(out), VARDATA(dir), base);
	SET_VARSIZE(out, VARHDRSZ + len);
	ext.nrowids = nrowids;
	ext.ndead = ndead;
	memcpy(VARDATA(out) + off, &ext, sizeof(ext));
	if (nrowids > 0)
		memcpy(VARDATA(out) + off + sizeof(ext), rowids, sizeof(int64) * nrowids);
	if (bits > 0)
		memcpy(VARDATA(out) + off + sizeof(ext) + sizeof(int64) * nrowids, dead, bits);
	((ColfileDirHeader *) VARDATA(out))->ext_off = (int32) off;
	return out;
}

/*
 * Rewrite the sources (consecutive, oldest TIDs first) into one group, each
 * source's column files folded in: the values are read through them, and
 * the files go with their groups (the new group's positions are its own).
 */
static void
rewrite(Compactor *c, CompactSource *src, int nsrc, int total)
{
	Relation	rel = c->rel;
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile compaction",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	Datum	  **values = palloc(sizeof(Datum *) * Max(desc->natts, 1));
	bool	  **isnull = palloc(sizeof(bool *) * Max(desc->natts, 1));
	int64	   *rowids = palloc(sizeof(int64) * (total + 1));
	List	   *sources = NIL;
	int			n = 0;
	int			i,
				a;
	ColfileRowGroup merged;

	for (a = 0; a < desc->natts; a++)
	{
		values[a] = palloc(sizeof(Datum) * (total + 1));
		isnull[a] = palloc(sizeof(bool) * (total + 1));
	}
	for (i = 0; i < nsrc; i++)
	{
		ColfileRowGroup *rg = src[i].rg;
		ColfileGroupCache *gc = ColfileLoadGroup(rel, rg, cxt);
		int			pos;

		if (src[i].files != NIL)
		{
			ColfileColumnFile **arr = palloc(sizeof(ColfileColumnFile *) * list_length(src[i].files));
			ListCell   *lc;
			int			k = 0;

			foreach(lc, src[i].files)
				arr[k++] = lfirst(lc);
			ColfileGroupSetFiles(gc, arr, k);
		}

		for (pos = 0; pos < rg->nrows; pos++)
		{
			ItemPointerData tid;

			CHECK_FOR_INTERRUPTS();
			ColfileGroupTid(rg, pos, &tid);
			if (row_dead(c, rg, pos, &tid))
			{
				if (!ColfileGroupRowGone(rg, pos))
					c->res.rows_dropped++;
				continue;
			}
			Assert(n < total);
			ColfileFillSlot(rel, gc, pos, slot, NULL);
			slot_getallattrs(slot);
			for (a = 0; a < desc->natts; a++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, a);

				isnull[a][n] = slot->tts_isnull[a] || att->attisdropped;
				values[a][n] = isnull[a][n] ? (Datum) 0 :
					datumCopy(slot->tts_values[a], att->attbyval, att->attlen);
			}
			rowids[n++] = (int64) ItemPointerGetBlockNumber(&tid) * COLFILE_ROWS_PER_BLOCK +
				ItemPointerGetOffsetNumber(&tid) - 1;
			ExecClearTuple(slot);
		}
		ColfileFreeGroup(gc);	/* its values are copied */
		sources = lappend(sources, rg);
	}
	Assert(n == total);

	if (n == 0)
		ColfileReplaceRowGroups(rel, sources, NULL);
	else
	{
		StringInfoData data;
		bytea	   *dir;

		initStringInfo(&data);
		dir = ColfileEncodeGroup(rel, desc, n, values, isnull, &data);
		memset(&merged, 0, sizeof(merged));
		merged.directory = with_ext(dir, (const char *) rowids, n, NULL, n, 0);
		merged.first_block = src[0].rg->first_block;
		merged.nrows = n;
		merged.seq = ColfileNextSeq();
		merged.data_length = data.len;
		ColfileLockSpace(rel, RowExclusiveLock);
		merged.data_offset = data.len > 0 ? ColfileWriteBytes(rel, data.data, data.len) : 0;
		ColfileReplaceRowGroups(rel, sources, &merged);
		ColfileUnlockSpace(rel, RowExclusiveLock);
	}
	/* the left-out rows' deletion and lock records go with them */
	for (i = 0; i < nsrc; i++)
	{
		if (!c->writer)
			ColfileDeleteRowStatesWhere(rel->rd_node.relNode, src[i].rg, c->dead, c->arg);
		ColfileDeleteColumnFileTuples(src[i].file_tids);
		c->res.files_folded += list_length(src[i].files);
	}

	/* consumed: the delete-vector pass leaves these alone */
	for (i = 0; i < nsrc; i++)
		src[i].rg->nrows = 0;
	c->res.rows_written += n;
	c->res.groups_rewritten += nsrc;
	c->res.groups_written += n > 0 ? 1 : 0;
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * Fold the rows of rg that died to everybody into its delete vector: a new
 * tuple for the same bytes with the vector, and their deletion and lock
 * records deleted, so that scans no longer hash them.
 */
static void
fold_deletions(Compactor *c, ColfileRowGroup *rg)
{
	uint8	   *bits = palloc0((rg->nrows + 7) / 8);
	int			ndead = 0,
				fresh = 0,
				pos;
	ColfileRowGroup repl;

	for (pos = 0; pos < rg->nrows; pos++)
	{
		ItemPointerData tid;

		ColfileGroupTid(rg, pos, &tid);
		if (ColfileGroupRowGone(rg, pos))
			ndead++;
		else if (c->dead(c->arg, &tid))
			ndead++, fresh++;
		else
			continue;
		bits[pos / 8] |= 1 << (pos % 8);
	}
	if (fresh == 0 || ndead == rg->nrows)
	{
		/* nothing new, or all dead: VACUUM drops such a group itself */
		pfree(bits);
		return;
	}
	repl = *rg;
	repl.directory = with_ext(rg->directory,
							  rg->rowids_off ? VARDATA(rg->directory) + rg->rowids_off : NULL,
							  rg->rowids_off ? rg->nrows : 0, bits, rg->nrows, ndead);
	repl.seq = ColfileNextSeq();
	/* same rows at the same positions: column files stay bound (by first_block) */
	ColfileReplaceRowGroups(c->rel, list_make1(rg), &repl);
	ColfileDeleteRowStatesWhere(c->rel->rd_node.relNode, rg, c->dead, c->arg);
	c->res.groups_vectored++;
	pfree(repl.directory);
	pfree(bits);
}

/*
 * Rewrite a batch, remembering its sources (as they were) for the check
 * at the end of the compaction (ColfileCompact)
 */
static void
rewrite_and_remember(Compactor *c, CompactSource *src, int nsrc, int total)
{
	MemoryContext old = MemoryContextSwitchTo(c->cxt);

	for (int i = 0; i < nsrc; i++)
	{
		ColfileRowGroup *copy = palloc(sizeof(ColfileRowGroup));

		*copy = *src[i].rg;		/* rewrite() marks it consumed (nrows 0) */
		c->touched = lappend(c->touched, copy);
	}
	MemoryContextSwitchTo(old);
	rewrite(c, src, nsrc, total);
}

/* Was this group named by the caller (or were none named)? */
static bool
group_named(Compactor *c, const ColfileRowGroup *rg)
{
	if (c->rules->only == NULL)
		return true;
	for (int i = 0; i < c->rules->nonly; i++)
		if (c->rules->only[i] == rg->first_block)
			return true;
	return false;
}

/*
 * Rewrite a batch when that merges groups, drops enough dead rows, or folds
 * enough column file bytes (the rules); a named group whenever it has dead
 * rows or files.
 */
static void
finish_batch(Compactor *c, CompactSource *batch, int nbatch, int live, int rows)
{
	const ColfileCompactRules *rules = c->rules;
	bool		rewrite_it = nbatch >= 2;

	if (nbatch == 1)
	{
		CompactSource *s = &batch[0];

		if (rows > live && (rows - live) >= rules->dead_fraction * rows)
			rewrite_it = true;
		if (s->files != NIL && s->file_bytes >= rules->file_fraction * s->rg->data_length)
			rewrite_it = true;
		if (rules->only != NULL && (rows > live || s->files != NIL))
			rewrite_it = true;
	}
	if (rewrite_it)
		rewrite_and_remember(c, batch, nbatch, live);
}

static void compact_groups(Compactor *c, Relation rel, TransactionId oldest_xmin,
						   int64 limit);

/*
 * Compact the row groups of rel (VACUUM, after index cleanup and after
 * dropping groups whose rows are all dead; or mvinc.colfile_compact).
 * dead(arg, tid) says whether a row is dead to everybody; oldest_xmin is
 * the horizon; only groups below TID block limit (ColfileMarkLimit; 0: none
 * yet) are merged or rewritten. False when it backed off (an update in
 * place met a group it rewrote): nothing is changed then.
 */
bool
ColfileCompact(Relation rel, TransactionId oldest_xmin, int64 limit,
			   ColfileRowDead dead, void *arg, const ColfileCompactRules *rules,
			   ColfileCompactResult *result)
{
	Compactor	c;
	ResourceOwner owner = CurrentResourceOwner;
	ListCell   *lc;
	bool		backed_off = false;

	memset(&c, 0, sizeof(c));
	c.rel = rel;
	c.dead = dead;
	c.arg = arg;
	c.rules = rules;
	c.oldest_xmin = oldest_xmin;
	c.cxt = CurrentMemoryContext;
	memset(result, 0, sizeof(*result));

	/*
	 * All of it in one subtransaction, kept only if no group it rewrote got
	 * an update in place meanwhile (a column-update record not older than
	 * the horizon; merging a group's files keeps their order and minds no
	 * updates, ColfileMergeColumnFiles): an updater that
	 * claimed a row before the check makes us back off, one that claims
	 * later finds its group being replaced and waits for us
	 * (colfile_column.c). One for the whole compaction, not one per group:
	 * more than 64 subtransaction ids would overflow every snapshot's
	 * cache while VACUUM runs.
	 */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(c.cxt);
	PG_TRY();
	{
		compact_groups(&c, rel, oldest_xmin, limit);
		foreach(lc, c.touched)
		{
			if (ColfileGroupRecentlyUpdated(rel->rd_node.relNode, lfirst(lc), oldest_xmin))
			{
				backed_off = true;
				break;
			}
		}
	}
	PG_CATCH();
	{
		/* leave no subtransaction open behind a manual VACUUM's error */
		ErrorData  *edata;

		MemoryContextSwitchTo(c.cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(c.cxt);
		CurrentResourceOwner = owner;
		ReThrowError(edata);
	}
	PG_END_TRY();
	if (backed_off)
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(c.cxt);
		CurrentResourceOwner = owner;
		return false;
	}
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(c.cxt);
	CurrentResourceOwner = owner;
	*result = c.res;
	if (c.touched != NIL)
		ColfileColumnForgetBinding();
	return true;
}

/* ColfileCompact's work, in its subtransaction */
static void
compact_groups(Compactor *c, Relation rel, TransactionId oldest_xmin, int64 limit)
{
	Oid			relfilenode = rel->rd_node.relNode;
	List	   *groups;
	ListCell   *lc;
	CompactSource *batch;
	int			nbatch = 0,
				batch_live = 0,
				batch_rows = 0,
				cap = Max(colfile_rows_per_group, 1);

	groups = ColfileListGroups(rel, SnapshotAny);
	batch = palloc(sizeof(CompactSource) * (list_length(groups) + 1));

	/*
	 * Walk the groups in TID order. A batch collects consecutive small
	 * groups (under a quarter of cap live rows) up to cap live rows; a
	 * larger group is a batch of its own. A batch is rewritten when it
	 * merges two or more groups, or when its only group has enough dead
	 * rows or column file bytes. (Merging only small groups bounds how
	 * often a row is rewritten: a merged group of a quarter of cap rows or
	 * more is left alone until its rows die or its columns are updated.)
	 * A group whose column files some snapshot may not see yet, or whose
	 * rows a running transaction may be updating in place, stays as it is.
	 */
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);
		bool		mergeable;
		int			nlive = 0;
		List	   *files = NIL;
		List	   *file_tids = NIL;
		int64		file_bytes = 0;

		mergeable = rg->nrows > 0 &&
			group_named(c, rg) &&
			ColfileGroupLastBlock(rg) < limit &&
			!TransactionIdIsCurrentTransactionId(rg->xmin) &&
			TransactionIdPrecedes(rg->xmin, oldest_xmin) &&
			TransactionIdDidCommit(rg->xmin) &&
			!ColfileGroupRecentlyUpdated(relfilenode, rg, oldest_xmin) &&
			ColfileSettledColumnFiles(rel, rg, oldest_xmin, &files, &file_tids, &file_bytes);
		if (mergeable)
			nlive = live_rows(c, rg);
		if (nbatch > 0 &&
			(!mergeable || nlive * 4 >= cap || batch_live + nlive > cap))
		{
			finish_batch(c, batch, nbatch, batch_live, batch_rows);
			nbatch = batch_live = batch_rows = 0;
		}
		if (!mergeable)
			continue;
		batch[nbatch].rg = rg;
		batch[nbatch].nlive = nlive;
		batch[nbatch].files = files;
		batch[nbatch].file_tids = file_tids;
		batch[nbatch].file_bytes = file_bytes;
		if (nlive * 4 >= cap)
		{
			finish_batch(c, &batch[nbatch], 1, nlive, rg->nrows);
			continue;
		}
		nbatch++;
		batch_live += nlive;
		batch_rows += rg->nrows;
	}
	if (nbatch > 0)
		finish_batch(c, batch, nbatch, batch_live, batch_rows);

	/*
	 * The groups left as they are get their newly dead rows in their delete
	 * vectors, and their settled column files merged into one. (Not
	 * limited by the mark: the TID range does not change.)
	 */
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);

		if (rg->nrows > 0 &&
			group_named(c, rg) &&
			!TransactionIdIsCurrentTransactionId(rg->xmin) &&
			TransactionIdDidCommit(rg->xmin))
		{
			fold_deletions(c, rg);
			/* in-place updates meanwhile are fine: see ColfileMergeColumnFiles */
			if (ColfileMergeColumnFiles(rel, rg, oldest_xmin, 2))
				c->res.groups_vectored++;
		}
	}
}

/* No row of a writer's own groups is dead to everybody yet */
static bool
keep_every_row(void *arg, ItemPointer tid)
{
	return false;
}

/*
 * Merge groups (n >= 2 of them, TID order, all written by this transaction
 * over adjacent TID space) into one, every row kept under its TID; files[i]
 * and file_tids[i] list the column files of groups[i], all this
 * transaction's, which are folded in (colfile_commit_merge.c batches them)
 */
void
ColfileMergeGroupsOfWriter(Relation rel, ColfileRowGroup *groups,
						   List **files, List **file_tids, int n)
{
	Compactor	c;
	CompactSource *src = palloc0(sizeof(CompactSource) * n);
	int			rows = 0;

	memset(&c, 0, sizeof(c));
	c.rel = rel;
	c.dead = keep_every_row;
	c.writer = true;
	c.cxt = CurrentMemoryContext;
	for (int i = 0; i < n; i++)
	{
		src[i].rg = &groups[i];
		src[i].nlive = groups[i].nrows;
		src[i].files = files[i];
		src[i].file_tids = file_tids[i];
		rows += groups[i].nrows;
	}
	rewrite(&c, src, n, rows);
	pfree(src);
	ColfileColumnForgetBinding();
}
