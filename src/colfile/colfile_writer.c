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

#include "colfile/colfile.h"

typedef struct WriteBuffer
{
	Oid			relid;
	Oid			relfilenode;
	CommandId	cid;
	SubTransactionId subid;
	bool		flush_each;		/* exclusion index: flush per insert call */
	bool		reserved;		/* unique index: reservation row written */
	bool		ssi_only;		/* the reservation is only for SERIALIZABLE
								 * readers (no unique index): it may extend */
	int64		first_block;
	int			nblocks;		/* of TID space it may use */
	int			max_rows;		/* rows that fit in them, at most a group */
	struct TidSpace *space;
	int64		run_start;		/* of the space's run when it started */
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
 * it may still point there. Nor are the blocks an aborted reservation
 * tuple covers (a buffer of a table with a unique index records up to a
 * group's blocks of the space): VACUUM takes every TID in an aborted
 * reservation's range for dead, so they are skipped (res_subid, res_end).
 * Every reservation tuple starts at or after the previous one and ends at
 * or after its end, so skipping to the latest one's end skips them all.
 */
typedef struct TidSpace
{
	Oid			relid;
	Oid			relfilenode;
	int64		run_start;		/* first block of our adjacent reservations */
	int64		next;			/* first block no row was given */
	int64		end;			/* end of the last reservation */
	int64		last_size;		/* its blocks */
	SubTransactionId res_subid;	/* innermost subtransaction whose reservation
								 * tuple covers blocks not given yet */
	int64		res_end;		/* end of the latest reservation tuple's range */
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
	ts->res_subid = InvalidSubTransactionId;	/* no reservation covers it yet */
	return ts;
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
	/* readers that missed the group took their locks before: check them */
	ColfileCheckInsertConflictIn(rel);
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

	/*
	 * Not with a reservation tuple for uniqueness checks (unique index):
	 * one for the new blocks would sort inside the group, and could not be
	 * deleted in the command that inserted it. One only for SERIALIZABLE
	 * readers needs none for them: a lookup of a TID there passes over it
	 * still (and finds the group, which sorts after it, once written).
	 */
	if (more <= 0 || b->flush_each || (b->reserved && !b->ssi_only) ||
		ts->next != ts->end)
		return false;
	first = ColfileReserveTidBlocks(rel, more);
	ts->last_size = Max(ts->last_size, more);
	if (first != ts->end)
	{
		ts->run_start = ts->next = first;
		ts->end = first + more;
		ts->res_subid = InvalidSubTransactionId;
		return false;
	}
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
		ColfileRememberOwnGroup(b->relid, b->relfilenode, b->first_block,
								b->run_start, b->nrows, b->reserved);
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
			b->run_start = b->space->run_start;
			b->first_block = b->space->next;
			b->nblocks = (int) (b->space->end - b->space->next);
			/*
			 * Also under SERIALIZABLE, for readers that find a buffered
			 * row's index entry (the executor makes it at once) and lock
			 * its TID: the check when the group is written looks at the
			 * relation's locks only, so they must meet the reservation
			 * and conflict out to us, as heap's fetch meets the running
			 * inserter's tuple (colfile_ssi.c)
			 */
			if ((unique || IsolationIsSerializable()) && !exclusion)
			{
				/* a group's blocks at most: see TidSpace */
				b->nblocks = Min(b->nblocks, (colfile_rows_per_group + COLFILE_ROWS_PER_BLOCK - 1) /
								 COLFILE_ROWS_PER_BLOCK);
				insert_reservation(rel, b->first_block, b->nblocks, cid);
				b->space->res_subid = GetCurrentSubTransactionId();
				b->space->res_end = b->first_block + b->nblocks;
				b->reserved = true;
				b->ssi_only = !unique;
			}
			b->max_rows = Min(colfile_rows_per_group, b->nblocks * COLFILE_ROWS_PER_BLOCK);
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
	ColfileForgetOwnGroups(relid);
	/* a truncated file's allocator starts again: so does our space */
	foreach(lc, tid_spaces)
	{
		if (((TidSpace *) lfirst(lc))->relid == relid)
			tid_spaces = foreach_delete_current(tid_spaces, lc);
	}
	ColfileColumnDiscardRel(relid);
}

/* Transaction end: pre-commit flushes were done; forget everything */
void
ColfileWriterXactCallback(bool commit)
{
	buffers = NIL;				/* memory goes with TopTransactionContext */
	tid_spaces = NIL;
	ColfileOwnGroupsXactEnd();
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
	foreach(lc, tid_spaces)
	{
		TidSpace   *ts = lfirst(lc);

		if (ts->res_subid != mySubid)
			continue;
		if (commit)
			ts->res_subid = parentSubid;
		else
		{
			/* its reservation tuples are aborted: see TidSpace */
			ts->next = Max(ts->next, ts->res_end);
			ts->res_subid = InvalidSubTransactionId;
		}
	}
	/*
	 * (Our groups of an aborted subtransaction stay listed: the merge before
	 * commit no longer finds them, and merges around them.)
	 */
	ColfileColumnSubXact(commit, mySubid, parentSubid);
}
