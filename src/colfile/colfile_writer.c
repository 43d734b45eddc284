/*-------------------------------------------------------------------------
 * colfile_writer.c
 *	  The insert path: a per-relation write buffer of one statement's rows,
 *	  flushed as a row group.
 *
 * Each buffered row gets its final TID at insert time (the buffer reserves
 * a row group's TID range up front), so index entries can be made at once.
 * A buffer holds rows of one command id and one subtransaction; it is
 * flushed when full, when another command inserts, at the end of the
 * statement (ExecutorEnd, finish_bulk_insert), before anything in this
 * backend reads the relation (scans, index fetches, locks, deletes), and
 * before commit. The metadata row is inserted with the buffered rows'
 * command id, so the rows stay invisible to their own statement. Tables
 * with a unique or exclusion index are flushed after every insert call so
 * that other sessions' uniqueness checks find (and wait for) the rows.
 * A subtransaction abort discards the buffers it owns.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "utils/relcache.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

typedef struct WriteBuffer
{
	Oid			relid;
	Oid			relfilenode;
	CommandId	cid;
	SubTransactionId subid;
	bool		flush_each;		/* exclusion index: flush per insert call */
	bool		reserved;		/* unique index: reservation row written */
	int64		first_block;
	int			nblocks;		/* of TID space it may use */
	int			max_rows;		/* rows that fit in them, at most a group */
	struct TidSpace *space;
	int			nrows;
	int			natts;
	int			cap;
	Datum	  **values;
	bool	  **isnull;
	MemoryContext cxt;
} WriteBuffer;

static List *buffers = NIL;		/* in TopTransactionContext */

/*
 * The TID space this transaction reserved for a table. A new buffer takes
 * what its predecessors left of it before reserving more, so that small
 * statements do not each use up a whole group's range, and the groups of
 * one transaction follow one another with nobody else's in between (they
 * are merged before commit). TIDs once given to a row are never given
 * again, even if the row's subtransaction aborted: index entries made for
 * it may still point there.
 */
typedef struct TidSpace
{
	Oid			relid;
	Oid			relfilenode;
	int64		run_start;		/* first block of our adjacent reservations */
	int64		next;			/* first block no row was given */
	int64		end;			/* end of the last reservation */
	int64		last_size;		/* its blocks */
} TidSpace;

static List *tid_spaces = NIL;	/* in TopTransactionContext */

/* The TID space for a new buffer of rel: at least one block */
static TidSpace *
tid_space_for(Relation rel)
{
	TidSpace   *ts = NULL;
	ListCell   *lc;
	int			nblocks = (colfile_rows_per_group + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK;
	int64		first;

	foreach(lc, tid_spaces)
	{
		TidSpace   *t = lfirst(lc);

		if (t->relid == RelationGetRelid(rel) && t->relfilenode == rel->rd_node.relNode)
			ts = t;
	}
	if (ts == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		ts = palloc0(sizeof(TidSpace));
		ts->relid = RelationGetRelid(rel);
		ts->relfilenode = rel->rd_node.relNode;
		tid_spaces = lappend(tid_spaces, ts);
		MemoryContextSwitchTo(old);
	}
	if (ts->next < ts->end)
		return ts;

	/*
	 * A transaction that used up its space reserves twice as much the next
	 * time (up to 32 groups' worth), so that many small statements make few
	 * runs even while others insert too. Each statement uses at least a
	 * block, so no more than about twice the blocks used are reserved.
	 */
	if (ts->last_size > 0)
		nblocks = (int) Min(ts->last_size * 2, (int64) nblocks * 32);
	ts->last_size = nblocks;
	/* the id first: VACUUM's compaction mark relies on the order */
	(void) GetCurrentTransactionId();
	first = ColfileReserveTidBlocks(rel, nblocks);
	if (ts->end == 0 || first != ts->end)
		ts->run_start = first;
	ts->next = first;
	ts->end = first + nblocks;
	return ts;
}

/*
 * The row groups this transaction wrote, in the order written, for the
 * merge before commit (ColfileMergeOwnGroups): every statement's rows make
 * a group of their own, so a loop of small INSERTs would leave as many
 * small groups behind.
 */
typedef struct OwnGroup
{
	Oid			relid;
	Oid			relfilenode;
	int64		first_block;
	int64		run_start;		/* of the TID space it is in (TidSpace) */
	int			nrows;
	bool		reserved;		/* a reservation tuple was written */
	bool		updated;		/* its rows got column files meanwhile */
} OwnGroup;

static List *own_groups = NIL;	/* in TopTransactionContext */

static void
remember_group(WriteBuffer *b)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	OwnGroup   *g = palloc0(sizeof(OwnGroup));

	g->relid = b->relid;
	g->relfilenode = b->relfilenode;
	g->first_block = b->first_block;
	g->run_start = b->space->run_start;
	g->nrows = b->nrows;
	g->reserved = b->reserved;
	own_groups = lappend(own_groups, g);
	MemoryContextSwitchTo(old);
}

/* Write one row group and record it */
void
ColfileWriteGroup(Relation rel, int64 first_block, int nrows,
				  Datum **values, bool **isnull, CommandId cid)
{
	StringInfoData data;
	ColfileRowGroup rg;

	initStringInfo(&data);
	rg.directory = ColfileEncodeGroup(rel, RelationGetDescr(rel), nrows,
									  values, isnull, &data);
	rg.first_block = first_block;
	rg.nrows = nrows;
	rg.seq = ColfileNextSeq();
	rg.data_length = data.len;
	/* VACUUM must not list the bytes as free before the tuple exists */
	ColfileLockSpace(rel, RowExclusiveLock);
	rg.data_offset = data.len > 0 ? ColfileWriteBytes(rel, data.data, data.len) : 0;
	ColfileInsertRowGroup(rel, &rg, cid);
	ColfileUnlockSpace(rel, RowExclusiveLock);
	pfree(data.data);
	pfree(rg.directory);
}

/* Does the relation have a unique index, or an exclusion constraint? */
static void
checking_indexes(Relation rel, bool *unique, bool *exclusion)
{
	List	   *idx;
	ListCell   *lc;

	*unique = *exclusion = false;
	if (!rel->rd_rel->relhasindex)
		return;
	idx = RelationGetIndexList(rel);
	foreach(lc, idx)
	{
		Relation	i = index_open(lfirst_oid(lc), AccessShareLock);

		if (i->rd_index->indisexclusion)
			*exclusion = true;
		else if (i->rd_index->indisunique)
			*unique = true;
		index_close(i, AccessShareLock);
	}
	list_free(idx);
}

/*
 * Record TID blocks [first_block, +nblocks) as rows still being buffered,
 * for other sessions' uniqueness checks (see ColfileRowGroup)
 */
static void
insert_reservation(Relation rel, int64 first_block, int nblocks, CommandId cid)
{
	ColfileRowGroup rg;

	memset(&rg, 0, sizeof(rg));
	rg.first_block = first_block;
	rg.nrows = -(nblocks * COLFILE_ROWS_PER_BLOCK);
	rg.directory = palloc0(VARHDRSZ + sizeof(ColfileDirHeader));
	SET_VARSIZE(rg.directory, VARHDRSZ + sizeof(ColfileDirHeader));
	ColfileInsertRowGroup(rel, &rg, cid);
	pfree(rg.directory);
}

/*
 * A buffer that filled what was left of our TID space before reaching a
 * group's rows grows into a new reservation when that one follows on (no
 * other writer reserved in between), so that a large statement after
 * small ones is not cut in two. Otherwise the new reservation is left for
 * the next buffer, and this one is flushed (false).
 */
static bool
extend_buffer(Relation rel, WriteBuffer *b)
{
	TidSpace   *ts = b->space;
	int			full = (colfile_rows_per_group + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK;
	int			more = full - b->nblocks;
	int64		first;

	if (more <= 0 || b->flush_each || ts->next != ts->end)
		return false;
	first = ColfileReserveTidBlocks(rel, more);
	ts->last_size = Max(ts->last_size, more);
	if (first != ts->end)
	{
		ts->run_start = ts->next = first;
		ts->end = first + more;
		return false;
	}
	if (b->reserved)
		insert_reservation(rel, first, more, b->cid);
	ts->end += more;
	b->nblocks += more;
	b->max_rows = Min(colfile_rows_per_group, b->nblocks * COLFILE_ROWS_PER_BLOCK);
	return true;
}

static WriteBuffer *
find_buffer(Oid relid)
{
	ListCell   *lc;

	foreach(lc, buffers)
	{
		WriteBuffer *b = lfirst(lc);

		if (b->relid == relid)
			return b;
	}
	return NULL;
}

static void
drop_buffer(WriteBuffer *b)
{
	buffers = list_delete_ptr(buffers, b);
	MemoryContextDelete(b->cxt);
	pfree(b);
}

/* Write out a buffer (which must belong to the current subtransaction) */
static void
flush_buffer(WriteBuffer *b, Relation rel)
{
	bool		opened = false;

	if (b->subid != GetCurrentSubTransactionId())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read colfile table rows buffered by an outer subtransaction"),
				 errdetail("A statement inserted rows into table with OID %u and, before it ended, a subtransaction (an exception block) accessed the table.",
						   b->relid),
				 errhint("Insert and read the table in separate statements.")));
	if (rel == NULL)
	{
		rel = try_relation_open(b->relid, NoLock);
		if (rel == NULL)
		{
			drop_buffer(b);
			return;
		}
		opened = true;
	}
	if (b->nrows > 0 && rel->rd_node.relNode == b->relfilenode)
	{
		ColfileWriteGroup(rel, b->first_block, b->nrows, b->values, b->isnull, b->cid);
		remember_group(b);
	}
	if (opened)
		relation_close(rel, NoLock);
	drop_buffer(b);
}

/* Buffer one row; sets slot->tts_tid */
void
ColfileBufferInsert(Relation rel, TupleTableSlot *slot, CommandId cid)
{
	WriteBuffer *b = find_buffer(RelationGetRelid(rel));
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext old;
	int			a;
	int			pos;

	if (b && (b->cid != cid || b->subid != GetCurrentSubTransactionId() ||
			  b->relfilenode != rel->rd_node.relNode || b->natts != desc->natts))
	{
		flush_buffer(b, rel);
		b = NULL;
	}
	if (b == NULL)
	{
		MemoryContext cxt;

		cxt = AllocSetContextCreate(TopTransactionContext, "colfile write buffer",
									ALLOCSET_DEFAULT_SIZES);
		b = MemoryContextAllocZero(TopTransactionContext, sizeof(WriteBuffer));
		b->cxt = cxt;
		b->relid = RelationGetRelid(rel);
		b->relfilenode = rel->rd_node.relNode;
		b->cid = cid;
		b->subid = GetCurrentSubTransactionId();
		b->natts = desc->natts;
		{
			bool		unique,
						exclusion;

			checking_indexes(rel, &unique, &exclusion);
			b->flush_each = exclusion;
			b->space = tid_space_for(rel);
			b->first_block = b->space->next;
			b->nblocks = (int) (b->space->end - b->space->next);
			b->max_rows = Min(colfile_rows_per_group, b->nblocks * COLFILE_ROWS_PER_BLOCK);
			if (unique && !exclusion)
			{
				insert_reservation(rel, b->first_block, b->nblocks, cid);
				b->reserved = true;
			}
		}
		b->cap = Min(b->max_rows, 64);
		b->values = MemoryContextAlloc(cxt, sizeof(Datum *) * Max(b->natts, 1));
		b->isnull = MemoryContextAlloc(cxt, sizeof(bool *) * Max(b->natts, 1));
		for (a = 0; a < b->natts; a++)
		{
			b->values[a] = MemoryContextAlloc(cxt, sizeof(Datum) * b->cap);
			b->isnull[a] = MemoryContextAlloc(cxt, sizeof(bool) * b->cap);
		}
		old = MemoryContextSwitchTo(TopTransactionContext);
		buffers = lappend(buffers, b);
		MemoryContextSwitchTo(old);
	}

	if (b->nrows == b->cap)
	{
		int			newcap = Min(b->cap * 4, b->max_rows);

		for (a = 0; a < b->natts; a++)
		{
			b->values[a] = repalloc(b->values[a], sizeof(Datum) * newcap);
			b->isnull[a] = repalloc(b->isnull[a], sizeof(bool) * newcap);
		}
		b->cap = newcap;
	}

	slot_getallattrs(slot);
	pos = b->nrows;
	old = MemoryContextSwitchTo(b->cxt);
	for (a = 0; a < b->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Datum		v = slot->tts_values[a];

		b->isnull[a][pos] = slot->tts_isnull[a] || att->attisdropped;
		if (b->isnull[a][pos])
		{
			b->values[a][pos] = (Datum) 0;
			continue;
		}
		/*
		 * Store values, never references: a TOAST pointer (on disk,
		 * indirect or expanded, all "short" headers) or a compressed
		 * value is detoasted. Only inline short values are kept as is.
		 */
		if (att->attlen == -1 && (VARATT_IS_EXTERNAL(DatumGetPointer(v)) ||
								  VARATT_IS_COMPRESSED(DatumGetPointer(v))))
			v = PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(v)));
		else
			v = datumCopy(v, att->attbyval, att->attlen);
		b->values[a][pos] = v;
	}
	MemoryContextSwitchTo(old);
	b->nrows++;
	b->space->next = b->first_block + (b->nrows + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK;

	ColfileTidFor(b->first_block, pos, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(rel);

	if (b->nrows >= b->max_rows && !extend_buffer(rel, b))
		flush_buffer(b, rel);
}

/*
 * End of an insert call (tuple_insert, multi_insert, update): tables with
 * a unique or exclusion index are written out now, before the executor
 * makes the index entries, so that other sessions' uniqueness checks find
 * the rows (and wait for this transaction).
 */
void
ColfileInsertCallDone(Relation rel)
{
	WriteBuffer *b = find_buffer(RelationGetRelid(rel));

	if (b && b->flush_each)
		flush_buffer(b, rel);
}

/* Flush the buffer of one relation, if any */
void
ColfileFlushRel(Relation rel)
{
	WriteBuffer *b = find_buffer(RelationGetRelid(rel));

	if (b)
		flush_buffer(b, rel);
}

/* Flush the buffer of relid before this backend reads it */
void
ColfileFlushAllForRead(Oid relid)
{
	WriteBuffer *b = find_buffer(relid);

	/*
	 * Rows of the current command are invisible to its own reads anyway;
	 * later commands (after CommandCounterIncrement) need them written.
	 */
	if (b && b->cid != GetCurrentCommandId(false))
		flush_buffer(b, NULL);
	ColfileColumnFlushForRead(relid);
}

/*
 * Before a read of single rows by TID (fetches, locks, updates, deletes):
 * only the insert buffer of an earlier command, so that row groups exist;
 * column updates are flushed by ColfileFlushForTid for the row read only
 * (flushing them all would cut a running UPDATE's files into one-row files
 * whenever a function it calls advances the command counter)
 */
void
ColfileFlushInsertsForRead(Oid relid)
{
	WriteBuffer *b = find_buffer(relid);

	if (b && b->cid != GetCurrentCommandId(false))
		flush_buffer(b, NULL);
}

/* Flush the buffer of relid if it holds the row at tid */
void
ColfileFlushForTid(Oid relid, ItemPointer tid)
{
	WriteBuffer *b = find_buffer(relid);
	int64		blk = ItemPointerGetBlockNumberNoCheck(tid);

	if (b && blk >= b->first_block &&
		blk < b->first_block + (b->nrows + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK)
		flush_buffer(b, NULL);
	ColfileColumnFlushForTid(relid, tid);
}

/* Flush the insert buffers of the current subtransaction */
static void
flush_inserts(void)
{
	List	   *mine = NIL;
	ListCell   *lc;

	foreach(lc, buffers)
	{
		WriteBuffer *b = lfirst(lc);

		if (b->subid == GetCurrentSubTransactionId())
			mine = lappend(mine, b);
	}
	foreach(lc, mine)
		flush_buffer(lfirst(lc), NULL);
	list_free(mine);
}

/* Flush every buffer of the current subtransaction (commit) */
void
ColfileFlushAll(void)
{
	flush_inserts();
	ColfileColumnFlushAll(false);
}

/*
 * Statement end: flush the insert buffers, and the column updates of the
 * ending command (cid): a statement run by a function that an UPDATE calls
 * per row must not cut the UPDATE's column files into one-row files
 */
void
ColfileFlushStatementEnd(CommandId cid)
{
	flush_inserts();
	ColfileColumnFlushCommand(cid);
}

/* Forget the buffer of a relation whose storage is going away */
void
ColfileDiscardRel(Oid relid)
{
	WriteBuffer *b = find_buffer(relid);

	ListCell   *lc;

	if (b)
		drop_buffer(b);			/* callers delete the metadata, reservation included */
	foreach(lc, own_groups)
	{
		if (((OwnGroup *) lfirst(lc))->relid == relid)
			own_groups = foreach_delete_current(own_groups, lc);
	}
	ColfileColumnDiscardRel(relid);
}

/*
 * Column files are being written for the rows of a group at first_block:
 * if it is one of ours, the merge before commit looks for them (and folds
 * them in)
 */
void
ColfileNoteOwnGroupUpdated(Oid relid, int64 first_block)
{
	ListCell   *lc;

	foreach(lc, own_groups)
	{
		OwnGroup   *g = lfirst(lc);

		if (g->relid == relid && g->first_block == first_block)
			g->updated = true;
	}
}

static int
own_group_cmp(const ListCell *a, const ListCell *b)
{
	const OwnGroup *x = lfirst(a);
	const OwnGroup *y = lfirst(b);

	if (x->relid != y->relid)
		return x->relid < y->relid ? -1 : 1;
	if (x->first_block != y->first_block)
		return x->first_block < y->first_block ? -1 : 1;
	return 0;
}

/*
 * Our group at g, as it is now, and its column files (ours): false unless
 * it is still there (its subtransaction did not abort) and plain (not
 * replaced)
 */
static bool
own_group_now(Relation rel, const OwnGroup *g, ColfileRowGroup *rg,
			  List **files, List **file_tids)
{
	int64		bytes;

	*files = *file_tids = NIL;
	return ColfileFindRowGroup(g->relfilenode, g->first_block, SnapshotSelf, rg) &&
		rg->first_block == g->first_block &&
		rg->nrows > 0 && rg->ext_off == 0 &&
		TransactionIdIsCurrentTransactionId(rg->xmin) &&
		(!g->updated || ColfileOwnColumnFiles(rel, rg, files, file_tids, &bytes));
}

/* Merge n of our groups of rel (adjacent ones, as they are now) */
static void
merge_groups(Relation rel, OwnGroup **own, ColfileRowGroup *groups,
			 List **files, List **file_tids, int n)
{
	bool	   *merged;

	if (n < 2)
		return;
	merged = palloc0(sizeof(bool) * n);
	if (ColfileMergeGroupsOfWriter(rel, groups, files, file_tids, n, merged) == 0)
		return;

	/*
	 * Our reservation tuples inside a merged range would sort before the
	 * merged group's and answer lookups of its later TIDs
	 */
	for (int i = 0; i < n; i++)
		if (merged[i] && own[i]->reserved)
			ColfileDeleteOwnReservation(own[i]->relfilenode, own[i]->first_block);
}

/* Merge a run of our groups of rel over adjacent reservations */
static void
merge_run(Relation rel, OwnGroup **run, int n)
{
	ColfileRowGroup *groups;
	OwnGroup  **own;
	List	  **files;
	List	  **file_tids;
	int			m = 0;

	if (n < 2)
		return;
	groups = palloc(sizeof(ColfileRowGroup) * n);
	own = palloc(sizeof(OwnGroup *) * n);
	files = palloc(sizeof(List *) * n);
	file_tids = palloc(sizeof(List *) * n);
	for (int i = 0; i <= n; i++)
	{
		/* a large group is left as it is: not worth looking up */
		if (i < n && run[i]->nrows * 4 < Max(colfile_rows_per_group, 1) &&
			own_group_now(rel, run[i], &groups[m], &files[m], &file_tids[m]))
		{
			own[m++] = run[i];
			continue;
		}
		/* a gap (or the end): what is before it merges on its own */
		merge_groups(rel, own, groups, files, file_tids, m);
		m = 0;
	}
}

/*
 * Before commit (after the last flush): the small row groups this
 * transaction wrote into a table, one per statement, are merged into
 * groups of up to mvinc.colfile_rows_per_group rows (as VACUUM's
 * compaction merges committed ones), keeping every row's TID. Only runs of
 * groups whose TID reservations follow one another are merged: no other
 * transaction can have a group between them, so a lookup of any of their
 * TIDs finds the merged group. Other sessions see the merged group only
 * once we commit (lookups that are not MVCC read the groups it replaces
 * until then: colfile_meta.c, compaction_in_progress).
 */
/* ColfileMergeOwnGroups' work, in its subtransaction */
static void
merge_own_groups(void)
{
	List	   *sorted = list_copy(own_groups);
	int			i,
				n;

	list_sort(sorted, own_group_cmp);
	n = list_length(sorted);
	for (i = 0; i < n;)
	{
		OwnGroup   *first = list_nth(sorted, i);
		Relation	rel = try_relation_open(first->relid, NoLock);
		OwnGroup  **run = palloc(sizeof(OwnGroup *) * n);
		int			nrun = 0;
		int			j;

		/* this relation's entries: i .. j-1 */
		for (j = i; j < n && ((OwnGroup *) list_nth(sorted, j))->relid == first->relid; j++)
			;
		if (rel != NULL)
		{
			for (int k = i; k < j; k++)
			{
				OwnGroup   *g = list_nth(sorted, k);

				if (g->relfilenode != rel->rd_node.relNode)
					continue;	/* storage since replaced (TRUNCATE) */
				if (nrun > 0 && run[nrun - 1]->run_start != g->run_start)
				{
					merge_run(rel, run, nrun);
					nrun = 0;
				}
				run[nrun++] = g;
			}
			merge_run(rel, run, nrun);
			relation_close(rel, NoLock);
		}
		i = j;
	}
}

void
ColfileMergeOwnGroups(void)
{
	MemoryContext cxt;
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	if (list_length(own_groups) < 2)
		return;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile merge before commit",
								ALLOCSET_DEFAULT_SIZES);

	/*
	 * In a subtransaction: the merge only tidies up, and must not make the
	 * commit fail (a cancel, a serialization failure of the metadata
	 * writes, a full disk): on an error the groups stay as they are.
	 */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		merge_own_groups();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("could not merge the row groups this transaction wrote"),
				 errdetail("%s", edata->message),
				 errhint("The rows are committed in one row group per statement; VACUUM merges them.")));
	}
	PG_END_TRY();
	CurrentResourceOwner = owner;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* Transaction end: pre-commit flushes were done; forget everything */
void
ColfileWriterXactCallback(bool commit)
{
	buffers = NIL;				/* memory goes with TopTransactionContext */
	own_groups = NIL;
	tid_spaces = NIL;
	ColfileColumnXactEnd();
}

/* Subtransaction end: hand buffers to the parent or discard them */
void
ColfileWriterSubXact(bool commit, SubTransactionId mySubid,
					 SubTransactionId parentSubid)
{
	ListCell   *lc;

	foreach(lc, buffers)
	{
		WriteBuffer *b = lfirst(lc);

		if (b->subid == mySubid)
		{
			if (commit)
				b->subid = parentSubid;
			else
			{
				buffers = foreach_delete_current(buffers, lc);
				MemoryContextDelete(b->cxt);
				pfree(b);
			}
		}
	}
	/*
	 * Our groups of an aborted subtransaction stay listed: the merge before
	 * commit no longer finds them, and merges around them
	 */
	ColfileColumnSubXact(commit, mySubid, parentSubid);
}
