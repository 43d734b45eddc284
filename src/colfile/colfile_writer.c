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
	int64		first_block;
	int			nrows;
	int			natts;
	int			cap;
	Datum	  **values;
	bool	  **isnull;
	MemoryContext cxt;
} WriteBuffer;

static List *buffers = NIL;		/* in TopTransactionContext */

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
		ColfileWriteGroup(rel, b->first_block, b->nrows, b->values, b->isnull, b->cid);
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
			int			nblocks = (colfile_rows_per_group + COLFILE_ROWS_PER_BLOCK - 1) / COLFILE_ROWS_PER_BLOCK;

			checking_indexes(rel, &unique, &exclusion);
			b->flush_each = exclusion;
			/* the id first: VACUUM's compaction mark relies on the order */
			(void) GetCurrentTransactionId();
			b->first_block = ColfileReserveTidBlocks(rel, nblocks);
			if (unique && !exclusion)
			{
				ColfileRowGroup rg;

				memset(&rg, 0, sizeof(rg));
				rg.first_block = b->first_block;
				rg.nrows = -(nblocks * COLFILE_ROWS_PER_BLOCK);
				rg.directory = palloc0(VARHDRSZ + sizeof(ColfileDirHeader));
				SET_VARSIZE(rg.directory, VARHDRSZ + sizeof(ColfileDirHeader));
				ColfileInsertRowGroup(rel, &rg, cid);
				b->reserved = true;
			}
		}
		b->cap = Min(colfile_rows_per_group, 64);
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
		int			newcap = Min(b->cap * 4, colfile_rows_per_group);

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

	ColfileTidFor(b->first_block, pos, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(rel);

	if (b->nrows >= colfile_rows_per_group)
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

	if (b)
		drop_buffer(b);			/* callers delete the metadata, reservation included */
	ColfileColumnDiscardRel(relid);
}

/* Transaction end: pre-commit flushes were done; forget everything */
void
ColfileWriterXactCallback(bool commit)
{
	buffers = NIL;				/* memory goes with TopTransactionContext */
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
	ColfileColumnSubXact(commit, mySubid, parentSubid);
}
