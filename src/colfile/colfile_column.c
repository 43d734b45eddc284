/*-------------------------------------------------------------------------
 * colfile_column.c
 *	  Column files: an UPDATE that changes no indexed column keeps the row's
 *	  TID and writes only the changed columns' new values (docs/internals.md,
 *	  "colfile column updates").
 *
 * Writing: colfile_tuple_update records the row's update (a row state of
 * kind 'c', which locks and orders it like any update) and hands the new
 * values here. They are buffered per (relation, row group, command,
 * subtransaction, column set) and written at the end of the statement, or
 * before this backend reads them, as one column file: the values of those
 * columns for those row positions, encoded like a row group, described by
 * a tuple of mvinc.colfile_colfile inserted with the statement's command
 * id (so the statement does not see its own changes, as with heap).
 *
 * Reading: a scan lists the column files its snapshot sees once, a fetch by
 * TID those of the row's group; a loaded group overlays them on the row
 * group's values by row position, oldest first, so the newest value a
 * snapshot sees wins (the files holding one row follow each other in
 * commit order: each updater waited for the previous one). Non-MVCC
 * snapshots (SnapshotAny, dirty, self) see the files of committed
 * transactions and of this one, never another's uncommitted values.
 *
 * Which columns a statement changes: the columns it assigns (the range
 * table's updatedCols, noted at executor start), narrowed by comparing
 * old and new values where that is needed; every column when the UPDATE
 * does not come through the executor or BEFORE triggers may change more.
 *
 * Storing and listing files (their tuples, positions, the per-backend
 * cache of files read) is in colfile_column_files.c; VACUUM's side
 * (rewrite checks, merging a group's files, deletion) is in
 * colfile_column_vacuum.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"
#include "colfile/colfile_column_int.h"



/* ---- columns a running statement assigns ---- */

typedef struct StatementCols
{
	QueryDesc  *query;
	SubTransactionId subid;		/* an abort forgets what it started */
	Oid			relid;
	Bitmapset  *cols;			/* attnums (1-based) */
	bool		transition;		/* old/new rows go to transition tables */
	bool		routing;		/* the statement updates partitions it routes
								 * rows to (INSERT ... ON CONFLICT DO UPDATE
								 * into a partitioned table): their columns
								 * are unknown */
} StatementCols;

/*
 * The stored generated columns of a relation (attnums): an UPDATE recomputes
 * them, and PostgreSQL 15 no longer lists them in the range table
 * (extraUpdatedCols stays empty), so they count as assigned
 */
static Bitmapset *
stored_generated_columns(Oid relid)
{
	Relation	r = RelationIdGetRelation(relid);
	Bitmapset  *cols = NULL;

	if (r == NULL)
		return NULL;
	if (r->rd_att->constr && r->rd_att->constr->has_generated_stored)
		for (int a = 0; a < r->rd_att->natts; a++)
			if (TupleDescAttr(r->rd_att, a)->attgenerated == ATTRIBUTE_GENERATED_STORED)
				cols = bms_add_member(cols, a + 1);
	RelationClose(r);
	return cols;
}

/*
 * Does the statement capture UPDATE transition tables (REFERENCING OLD /
 * NEW TABLE)? The executor fetches each old row by TID after the update,
 * which would give the new values of a row changed in place. The trigger
 * sits on the target (a partitioned or inheritance parent included), so
 * every relation the statement writes is checked.
 */
static bool
statement_has_transition_tables(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		Relation	r;
		bool		found;

		if (rte->rtekind != RTE_RELATION || rte->rellockmode < RowExclusiveLock)
			continue;
		r = RelationIdGetRelation(rte->relid);
		if (r == NULL)
			continue;
		found = r->trigdesc != NULL &&
			(r->trigdesc->trig_update_old_table || r->trigdesc->trig_update_new_table);
		RelationClose(r);
		if (found)
			return true;
	}
	return false;
}

static List *statement_cols = NIL;	/* in TopMemoryContext, innermost last */

/*
 * Executor start: note the columns each UPDATE result relation assigns (of
 * any statement: a data-modifying WITH in a SELECT included; two UPDATEs of
 * one table in one statement get the union)
 */
void
ColfileColumnNoteStatement(QueryDesc *query)
{
	PlannedStmt *stmt = query->plannedstmt;
	ListCell   *lc;
	List	   *mine = NIL;
	bool		transition;
	bool		routing = false;

	if (stmt == NULL || stmt->resultRelations == NIL)
		return;
	transition = statement_has_transition_tables(stmt);
	foreach(lc, stmt->resultRelations)
	{
		RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);
		MemoryContext old;
		StatementCols *sc = NULL;
		ListCell   *lc2;
		int			x = -1;

		if (rte->rtekind != RTE_RELATION || bms_is_empty(rte->updatedCols))
			continue;
		foreach(lc2, mine)
			if (((StatementCols *) lfirst(lc2))->relid == rte->relid)
				sc = lfirst(lc2);
		old = MemoryContextSwitchTo(TopMemoryContext);
		if (sc == NULL)
		{
			sc = palloc0(sizeof(StatementCols));
			sc->query = query;
			sc->subid = GetCurrentSubTransactionId();
			sc->relid = rte->relid;
			sc->transition = transition;
			mine = lappend(mine, sc);
		}
		if (rte->relkind == RELKIND_PARTITIONED_TABLE)
			routing = true;
		while ((x = bms_next_member(rte->updatedCols, x)) >= 0)
			sc->cols = bms_add_member(sc->cols, x + FirstLowInvalidHeapAttributeNumber);
		x = -1;
		while ((x = bms_next_member(rte->extraUpdatedCols, x)) >= 0)
			sc->cols = bms_add_member(sc->cols, x + FirstLowInvalidHeapAttributeNumber);
		sc->cols = bms_add_members(sc->cols, stored_generated_columns(rte->relid));
		MemoryContextSwitchTo(old);
	}
	if (mine != NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		/* every entry says so: the innermost statement met decides */
		foreach(lc, mine)
			((StatementCols *) lfirst(lc))->routing = routing;

		statement_cols = list_concat(statement_cols, mine);
		MemoryContextSwitchTo(old);
		list_free(mine);
	}
}

static void
free_statement_cols(StatementCols *sc)
{
	bms_free(sc->cols);
	pfree(sc);
}

/* Executor end: forget what the statement noted */
void
ColfileColumnForgetStatement(QueryDesc *query)
{
	ListCell   *lc;

	foreach(lc, statement_cols)
	{
		StatementCols *sc = lfirst(lc);

		if (sc->query == query)
		{
			statement_cols = foreach_delete_current(statement_cols, lc);
			free_statement_cols(sc);
		}
	}
}

/*
 * May the innermost running statement updating rel change rows in place?
 * Not when it captures transition tables (statement_has_transition_tables).
 * A statement that routes updates to partitions may be updating rel
 * without naming it.
 */
bool
ColfileStatementAllowsInPlace(Relation rel)
{
	for (int i = list_length(statement_cols) - 1; i >= 0; i--)
	{
		StatementCols *sc = list_nth(statement_cols, i);

		if (sc->relid == RelationGetRelid(rel) || sc->routing)
			return !sc->transition;
	}
	return true;
}

/*
 * The columns the innermost running statement updating rel assigns
 * (attnums), or NULL when unknown (no executor statement, or BEFORE UPDATE
 * row triggers, which may change any column)
 */
Bitmapset *
ColfileUpdatedColumns(Relation rel)
{
	if (rel->trigdesc && rel->trigdesc->trig_update_before_row)
		return NULL;
	for (int i = list_length(statement_cols) - 1; i >= 0; i--)
	{
		StatementCols *sc = list_nth(statement_cols, i);

		if (sc->routing)
			return NULL;		/* rel may be a partition it routes to */
		if (sc->relid == RelationGetRelid(rel))
			return sc->cols;
	}
	return NULL;
}

/* ---- write buffers ---- */

typedef struct ColumnBuffer
{
	Oid			relid;
	Oid			relfilenode;
	int64		first_block;	/* the row group's key */
	int64		group_seq;		/* the group's seq when buffered (informational) */
	ColfileRowGroup group;		/* the row group, directory in cxt */
	CommandId	cid;
	SubTransactionId subid;
	int			nattrs;
	AttrNumber *attnums;		/* ascending */
	Bitmapset  *posset;			/* positions held */
	int			n;
	int			cap;
	int32	   *positions;
	Datum	  **values;			/* [nattrs][cap] */
	bool	  **isnull;
	MemoryContext cxt;
} ColumnBuffer;

static List *column_buffers = NIL;	/* in TopTransactionContext */

static void
drop_column_buffer(ColumnBuffer *b)
{
	column_buffers = list_delete_ptr(column_buffers, b);
	MemoryContextDelete(b->cxt);
	pfree(b);
}

/* Sort helper: positions with their buffer index */
typedef struct PosIdx
{
	int32		pos;
	int			idx;
} PosIdx;

static int
posidx_cmp(const void *a, const void *b)
{
	int32		x = ((const PosIdx *) a)->pos;
	int32		y = ((const PosIdx *) b)->pos;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Write out a column buffer as one column file; at a statement's end
 * (may_merge), then merge the group's files if it holds many
 */
static void
flush_column_buffer(ColumnBuffer *b, Relation rel, bool may_merge)
{
	bool		opened = false;
	MemoryContext old;
	PosIdx	   *order;
	FileContent fc;

	if (b->subid != GetCurrentSubTransactionId())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read colfile table rows updated by an outer subtransaction"),
				 errdetail("A statement updated rows of table with OID %u and, before it ended, a subtransaction (an exception block) accessed the table.",
						   b->relid),
				 errhint("Update and read the table in separate statements.")));
	if (rel == NULL)
	{
		rel = try_relation_open(b->relid, NoLock);
		if (rel == NULL)
		{
			drop_column_buffer(b);
			return;
		}
		opened = true;
	}
	if (b->n == 0 || b->nattrs == 0 || rel->rd_node.relNode != b->relfilenode)
	{
		if (opened)
			relation_close(rel, NoLock);
		drop_column_buffer(b);
		return;
	}
	old = MemoryContextSwitchTo(b->cxt);
	order = palloc(sizeof(PosIdx) * b->n);
	for (int i = 0; i < b->n; i++)
	{
		order[i].pos = b->positions[i];
		order[i].idx = i;
	}
	qsort(order, b->n, sizeof(PosIdx), posidx_cmp);
	fc.relfilenode = b->relfilenode;
	fc.first_block = b->first_block;
	fc.group_seq = b->group_seq;
	fc.seq = 0;
	fc.cid = b->cid;
	fc.n = b->n;
	fc.nattrs = b->nattrs;
	fc.attnums = b->attnums;
	fc.positions = palloc(sizeof(int32) * b->n);
	fc.values = palloc(sizeof(Datum *) * b->nattrs);
	fc.isnull = palloc(sizeof(bool *) * b->nattrs);
	for (int a = 0; a < b->nattrs; a++)
	{
		fc.values[a] = palloc(sizeof(Datum) * b->n);
		fc.isnull[a] = palloc(sizeof(bool) * b->n);
		for (int i = 0; i < b->n; i++)
		{
			fc.values[a][i] = b->values[a][order[i].idx];
			fc.isnull[a][i] = b->isnull[a][order[i].idx];
		}
	}
	for (int i = 0; i < b->n; i++)
		fc.positions[i] = order[i].pos;
	ColfileWriteColumnFile(rel, &fc);
	/* readers that missed the file took their locks before: check them */
	ColfileCheckRowsConflictIn(rel, &b->group, fc.positions, fc.n);
	MemoryContextSwitchTo(old);
	if (may_merge)
		ColfileMergeManyColumnFiles(rel, &b->group);
	if (opened)
		relation_close(rel, NoLock);
	drop_column_buffer(b);
}

static bool
same_attnums(ColumnBuffer *b, Bitmapset *changed)
{
	int			x = -1,
				i = 0;

	if (bms_num_members(changed) != b->nattrs)
		return false;
	while ((x = bms_next_member(changed, x)) >= 0)
		if (b->attnums[i++] != x)
			return false;
	return true;
}

/*
 * A column file binds to its row group by first_block, positions counting
 * the group's rows. Compaction (VACUUM, mvinc.colfile_compact) only
 * merges or rewrites a group whose files every snapshot sees, folding them
 * in, and none whose rows a transaction newer than its horizon updated in
 * place (checked again after the rewrite, before it is kept); a delete
 * vector keeps the group's rows where they are. An updater that meets its row's group
 * being replaced by a running VACUUM waits for it, then binds to what it
 * left: so either VACUUM sees the updater's row state and backs off, or the
 * updater sees VACUUM's replacement. The group found last is cached per
 * transaction: while an update of ours in it runs, VACUUM leaves it alone.
 */
static ColfileRowGroup *bound_group = NULL;	/* in TopTransactionContext */
static Oid	bound_group_rel = InvalidOid;
static TransactionId bound_group_xid = InvalidTransactionId;

/*
 * Do two tuples of a group put its rows at the same positions (the same
 * TID at every position: a delete vector or a fold that dropped no row
 * changes none)?
 */
static bool
same_positions(const ColfileRowGroup *a, const ColfileRowGroup *b)
{
	ItemPointerData self_a = a->self,
				self_b = b->self;

	if (a->first_block != b->first_block || a->nrows != b->nrows)
		return false;
	/* the same tuple, or both uncompacted (rows at first_block onwards) */
	if (ItemPointerEquals(&self_a, &self_b) ||
		(a->rowids_off == 0 && b->rowids_off == 0))
		return true;
	for (int pos = 0; pos < a->nrows; pos++)
	{
		ItemPointerData ta,
					tb;

		ColfileGroupTid(a, pos, &ta);
		ColfileGroupTid(b, pos, &tb);
		if (!ItemPointerEquals(&ta, &tb))
			return false;
	}
	return true;
}

static bool
bind_row_group(Relation rel, ItemPointer tid, ColfileRowGroup *rg)
{
	Oid			relfilenode = rel->rd_node.relNode;

	if (bound_group != NULL && bound_group_rel == relfilenode &&
		bound_group_xid == GetTopTransactionId() &&
		ColfileGroupPos(bound_group, tid) >= 0)
	{
		*rg = *bound_group;
		return true;
	}
	for (;;)
	{
		TransactionId busy;

		if (!ColfileFindRowGroup(relfilenode, ItemPointerGetBlockNumber(tid),
								 SnapshotAny, rg) || rg->nrows <= 0)
			return false;
		busy = ColfileGroupTupleBusy(rg);
		if (TransactionIdIsValid(busy))
		{
			XactLockTableWait(busy, rel, tid, XLTW_Update);
			continue;
		}
		/*
		 * A compaction that replaced the group committed since it was
		 * found: bound to the old tuple, the values would be orphaned (or
		 * land on other rows of a new group at the same block).
		 */
		if (!ColfileGroupTupleReplaced(rg))
			break;
	}

	/*
	 * A transaction snapshot taken before a compaction rewrote the group
	 * with other positions still reads the old one: positions in the new
	 * group would put this transaction's values on other rows of the old
	 * one when it reads them back. Heap's answer to an update its snapshot
	 * cannot see. (READ COMMITTED statements read with a snapshot of their
	 * own, except rule actions and SPI statement lists that share one:
	 * README, "Status and limits".)
	 */
	if (IsolationUsesXactSnapshot())
	{
		ColfileRowGroup seen;

		if (ColfileFindRowGroup(relfilenode, ItemPointerGetBlockNumber(tid),
								GetTransactionSnapshot(), &seen) &&
			!same_positions(&seen, rg))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent compaction"),
					 errdetail("The row group of a row being updated in \"%s\" was rewritten after this transaction's snapshot was taken.",
							   RelationGetRelationName(rel)),
					 errhint("The transaction might succeed if retried.")));
	}
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		bound_group = palloc(sizeof(ColfileRowGroup));
		*bound_group = *rg;
		bound_group->directory = palloc(VARSIZE(rg->directory));
		memcpy(bound_group->directory, rg->directory, VARSIZE(rg->directory));
		bound_group_rel = relfilenode;
		bound_group_xid = GetTopTransactionId();
		MemoryContextSwitchTo(old);
	}
	return true;
}

/* A compaction replaced row groups: the cached binding may name one */
void
ColfileColumnForgetBinding(void)
{
	bound_group = NULL;
	bound_group_rel = InvalidOid;
}

/*
 * Buffer the new values of the changed columns (attnums) of the row at tid
 * (whose row state the caller recorded). Returns false, buffering nothing,
 * when the row's group is not found.
 */
bool
ColfileColumnUpdate(Relation rel, ItemPointer tid, TupleTableSlot *slot,
					CommandId cid, Bitmapset *changed)
{
	ColfileRowGroup rg;
	ColumnBuffer *b = NULL;
	ListCell   *lc;
	MemoryContext old;
	TupleDesc	desc = RelationGetDescr(rel);
	int			pos;

	if (!bind_row_group(rel, tid, &rg))
		return false;
	pos = ColfileGroupPos(&rg, tid);
	if (pos < 0)
		return false;
	if (bms_is_empty(changed))
		return true;			/* nothing to write; the row state says it all */

	foreach(lc, column_buffers)
	{
		ColumnBuffer *c = lfirst(lc);

		if (c->relid == RelationGetRelid(rel) && c->first_block == rg.first_block &&
			c->cid == cid &&
			c->subid == GetCurrentSubTransactionId() &&
			c->relfilenode == rel->rd_node.relNode && same_attnums(c, changed))
		{
			b = c;
			break;
		}
	}
	if (b == NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(TopTransactionContext,
												  "colfile column buffer",
												  ALLOCSET_DEFAULT_SIZES);
		int			x = -1;

		if (TransactionIdIsCurrentTransactionId(rg.xmin))
			ColfileNoteOwnGroupUpdated(RelationGetRelid(rel));
		b = MemoryContextAllocZero(TopTransactionContext, sizeof(ColumnBuffer));
		b->cxt = cxt;
		b->relid = RelationGetRelid(rel);
		b->relfilenode = rel->rd_node.relNode;
		b->first_block = rg.first_block;
		b->group_seq = rg.seq;
		b->group = rg;
		b->group.directory = MemoryContextAlloc(cxt, VARSIZE(rg.directory));
		memcpy(b->group.directory, rg.directory, VARSIZE(rg.directory));
		b->cid = cid;
		b->subid = GetCurrentSubTransactionId();
		b->nattrs = bms_num_members(changed);
		b->attnums = MemoryContextAlloc(cxt, sizeof(AttrNumber) * b->nattrs);
		while ((x = bms_next_member(changed, x)) >= 0)
			b->attnums[b->n++] = x;
		b->n = 0;
		b->cap = 64;
		b->positions = MemoryContextAlloc(cxt, sizeof(int32) * b->cap);
		b->values = MemoryContextAlloc(cxt, sizeof(Datum *) * b->nattrs);
		b->isnull = MemoryContextAlloc(cxt, sizeof(bool *) * b->nattrs);
		for (int a = 0; a < b->nattrs; a++)
		{
			b->values[a] = MemoryContextAlloc(cxt, sizeof(Datum) * b->cap);
			b->isnull[a] = MemoryContextAlloc(cxt, sizeof(bool) * b->cap);
		}
		old = MemoryContextSwitchTo(TopTransactionContext);
		column_buffers = lappend(column_buffers, b);
		MemoryContextSwitchTo(old);
	}
	if (b->n == b->cap)
	{
		int			newcap = b->cap * 4;

		b->positions = repalloc(b->positions, sizeof(int32) * newcap);
		for (int a = 0; a < b->nattrs; a++)
		{
			b->values[a] = repalloc(b->values[a], sizeof(Datum) * newcap);
			b->isnull[a] = repalloc(b->isnull[a], sizeof(bool) * newcap);
		}
		b->cap = newcap;
	}
	slot_getallattrs(slot);
	old = MemoryContextSwitchTo(b->cxt);
	for (int a = 0; a < b->nattrs; a++)
	{
		int			i = b->attnums[a] - 1;
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Datum		v = slot->tts_values[i];

		b->isnull[a][b->n] = slot->tts_isnull[i] || att->attisdropped;
		if (b->isnull[a][b->n])
			v = (Datum) 0;
		else if (att->attlen == -1 && (VARATT_IS_EXTERNAL(DatumGetPointer(v)) ||
									   VARATT_IS_COMPRESSED(DatumGetPointer(v))))
			v = PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(v)));
		else
			v = datumCopy(v, att->attbyval, att->attlen);
		b->values[a][b->n] = v;
	}
	b->positions[b->n] = pos;
	b->posset = bms_add_member(b->posset, pos);
	MemoryContextSwitchTo(old);
	b->n++;
	return true;
}

/* Which buffers a flush writes */
typedef enum FlushWhich
{
	FLUSH_SUBXACT,				/* the current subtransaction's */
	FLUSH_ALL,					/* every one */
	FLUSH_COMMAND,				/* the current subtransaction's of one command */
	FLUSH_FOR_READ				/* one relation's of earlier commands */
} FlushWhich;

static void
flush_buffers(FlushWhich which, CommandId cid, Oid relid)
{
	List	   *mine = NIL;
	ListCell   *lc;

	foreach(lc, column_buffers)
	{
		ColumnBuffer *b = lfirst(lc);
		bool		mysub = b->subid == GetCurrentSubTransactionId();
		bool		take = false;

		switch (which)
		{
			case FLUSH_SUBXACT:
				take = mysub;
				break;
			case FLUSH_ALL:
				take = true;
				break;
			case FLUSH_COMMAND:
				take = mysub && b->cid == cid;
				break;
			case FLUSH_FOR_READ:
				take = b->relid == relid && b->cid != GetCurrentCommandId(false);
				break;
		}
		if (take)
			mine = lappend(mine, b);
	}
	foreach(lc, mine)
		flush_column_buffer(lfirst(lc), NULL, which == FLUSH_COMMAND);
	list_free(mine);
}

/* Flush the current subtransaction's buffers (all: every buffer) */
void
ColfileColumnFlushAll(bool all_subxacts)
{
	flush_buffers(all_subxacts ? FLUSH_ALL : FLUSH_SUBXACT, InvalidCommandId, InvalidOid);
}

/* Statement end: write the buffers of the ending command */
void
ColfileColumnFlushCommand(CommandId cid)
{
	flush_buffers(FLUSH_COMMAND, cid, InvalidOid);
}

/* Before this backend reads relid in a later command: write its buffers */
void
ColfileColumnFlushForRead(Oid relid)
{
	if (column_buffers != NIL)
		flush_buffers(FLUSH_FOR_READ, InvalidCommandId, relid);
}

/* Before a read of the row at tid: write the buffer holding it */
void
ColfileColumnFlushForTid(Oid relid, ItemPointer tid)
{
	ListCell   *lc;

	foreach(lc, column_buffers)
	{
		ColumnBuffer *b = lfirst(lc);
		int			pos;

		if (b->relid != relid)
			continue;
		pos = ColfileGroupPos(&b->group, tid);
		if (pos >= 0 && bms_is_member(pos, b->posset))
		{
			flush_column_buffer(b, NULL, false);
			return;
		}
	}
}

/* Forget the buffers of a relation whose storage is going away */
void
ColfileColumnDiscardRel(Oid relid)
{
	ListCell   *lc;

	foreach(lc, column_buffers)
	{
		ColumnBuffer *b = lfirst(lc);

		if (b->relid == relid)
		{
			column_buffers = foreach_delete_current(column_buffers, lc);
			MemoryContextDelete(b->cxt);
			pfree(b);
		}
	}
}

/* Transaction end (flushed before commit): forget everything */
void
ColfileColumnXactEnd(void)
{
	ListCell   *lc;

	column_buffers = NIL;		/* memory goes with TopTransactionContext */
	ColfileFileCacheXactEnd();
	bound_group = NULL;
	bound_group_rel = InvalidOid;
	foreach(lc, statement_cols)
		free_statement_cols(lfirst(lc));
	list_free(statement_cols);
	statement_cols = NIL;
}

/* Subtransaction end: hand buffers to the parent or discard them */
void
ColfileColumnSubXact(bool commit, SubTransactionId mySubid,
					 SubTransactionId parentSubid)
{
	ListCell   *lc;

	foreach(lc, statement_cols)
	{
		StatementCols *sc = lfirst(lc);

		if (sc->subid != mySubid)
			continue;
		if (commit)
			sc->subid = parentSubid;
		else
		{
			statement_cols = foreach_delete_current(statement_cols, lc);
			free_statement_cols(sc);
		}
	}
	/* the row states that kept the cached group in place may be gone */
	if (!commit)
	{
		bound_group = NULL;
		bound_group_rel = InvalidOid;
	}
	foreach(lc, column_buffers)
	{
		ColumnBuffer *b = lfirst(lc);

		if (b->subid != mySubid)
			continue;
		if (commit)
			b->subid = parentSubid;
		else
		{
			column_buffers = foreach_delete_current(column_buffers, lc);
			MemoryContextDelete(b->cxt);
			pfree(b);
		}
	}
}

/* ---- reading: overlaying a group's files (listing them: colfile_column_files.c) ---- */

/* Position index of pos in a file, or -1 */
static int
file_index(ColfileColumnFile *f, int pos)
{
	int			lo = 0,
				hi = f->nrows - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->positions[mid] == pos)
			return mid;
		if (f->positions[mid] < pos)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Which column of a file is attnum (-1: none)? */
static int
file_column(ColfileColumnFile *f, AttrNumber attnum)
{
	for (int k = 0; k < f->nattrs; k++)
		if (f->attnums[k] == attnum)
			return k;
	return -1;
}

/* The descriptor a loaded file decodes with: the reading slot's (see fill_one) */
static TupleDesc
loaded_desc(Relation rel, ColfileGroupCache *gc, ColfileLoadedFile *lf, TupleDesc sdesc)
{
	if (lf->desc == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(gc->cxt);

		for (int k = 0; k < lf->f->nattrs; k++)
			if (lf->f->attnums[k] > sdesc->natts)
				elog(ERROR, "colfile column file of \"%s\" names column %d of %d",
					 RelationGetRelationName(rel), lf->f->attnums[k], sdesc->natts);
		lf->desc = ColfileSubsetDesc(sdesc, lf->f->nattrs, lf->f->attnums);
		MemoryContextSwitchTo(old);
	}
	return lf->desc;
}

/*
 * A scan decoded column a (0-based) of its group into d: put in the newest
 * values its visible files hold. Files are applied newest first, each
 * position once, stopping when every row is covered, so older files of a
 * column updated in full are not even decoded.
 */
void
ColfileOverlayChunk(Relation rel, ColfileGroupCache *gc, int a, ColfileDecoded *d,
					TupleDesc sdesc)
{
	int			nrows = gc->rg.nrows;
	uint8	   *covered = NULL;
	int			ncovered = 0;

	for (int i = gc->nvisible - 1; i >= gc->nvisible_from && ncovered < nrows; i--)
	{
		ColfileLoadedFile *lf = gc->visible[i];
		ColfileColumnFile *f = lf->f;
		int			k = file_column(f, a + 1);
		ColfileDecoded *fd;

		if (k < 0)
			continue;
		if (lf->cols[k] == NULL)
			lf->cols[k] = ColfileDecodeChunk(rel, &f->rg, loaded_desc(rel, gc, lf, sdesc),
											 k + 1, gc->cxt);
		fd = lf->cols[k];
		if (covered == NULL)
			covered = palloc0(nrows);
		for (int r = 0; r < f->nrows; r++)
		{
			int			p = f->positions[r];

			if (p < 0 || p >= nrows || covered[p])
				continue;
			covered[p] = 1;
			ncovered++;
			d->values[p] = fd->values[r];
			d->isnull[p] = fd->isnull[r];
		}
	}
	if (covered)
		pfree(covered);
}

/*
 * A scan's decoded column a (0-based) of its group, with the files' values
 * in. When a visible file updated the column on every row of the group
 * (UPDATE t SET c = ... on all rows), the newest such file is the base
 * instead of the group's own chunk, which is then not even read.
 */
ColfileDecoded *
ColfileDecodeColumn(Relation rel, ColfileGroupCache *gc, int a, TupleDesc sdesc)
{
	ColfileDecoded *d = NULL;
	int			nrows = gc->rg.nrows;

	for (int i = gc->nvisible - 1; i >= 0; i--)
	{
		ColfileLoadedFile *lf = gc->visible[i];
		ColfileColumnFile *f = lf->f;
		int			k = file_column(f, a + 1);
		ColfileDecoded *fd;

		if (k < 0 || f->nrows != nrows)
			continue;
		/* positions are distinct and ascending: all of 0 .. nrows - 1 */
		if (lf->cols[k] == NULL)
			lf->cols[k] = ColfileDecodeChunk(rel, &f->rg, loaded_desc(rel, gc, lf, sdesc),
											 k + 1, gc->cxt);
		fd = lf->cols[k];
		d = MemoryContextAlloc(gc->cxt, sizeof(ColfileDecoded));
		d->values = MemoryContextAlloc(gc->cxt, sizeof(Datum) * Max(nrows, 1));
		d->isnull = MemoryContextAlloc(gc->cxt, sizeof(bool) * Max(nrows, 1));
		d->raw = NULL;
		memcpy(d->values, fd->values, sizeof(Datum) * nrows);
		memcpy(d->isnull, fd->isnull, sizeof(bool) * nrows);
		/* then the newer files only */
		gc->nvisible_from = i + 1;
		ColfileOverlayChunk(rel, gc, a, d, sdesc);
		gc->nvisible_from = 0;
		return d;
	}
	d = ColfileDecodeChunk(rel, &gc->rg, sdesc, a + 1, gc->cxt);
	ColfileOverlayChunk(rel, gc, a, d, sdesc);
	return d;
}

/*
 * A fetch by TID filled row pos of its group into slot (columns of proj;
 * NULL: all): put in, for each column, the value of the newest visible file
 * holding the row, reading that one value.
 */
void
ColfileOverlayRow(Relation rel, ColfileGroupCache *gc, int pos,
				  TupleTableSlot *slot, ColfileProj *proj)
{
	TupleDesc	sdesc = slot->tts_tupleDescriptor;
	Bitmapset  *done = NULL;

	for (int i = gc->nvisible - 1; i >= 0; i--)
	{
		ColfileLoadedFile *lf = gc->visible[i];
		ColfileColumnFile *f = lf->f;
		int			r = file_index(f, pos);

		if (r < 0)
			continue;
		for (int k = 0; k < f->nattrs; k++)
		{
			int			att = f->attnums[k] - 1;

			if (att >= sdesc->natts || (proj != NULL && !proj->want[att]) ||
				bms_is_member(att, done))
				continue;
			done = bms_add_member(done, att);
			if (lf->cols[k] != NULL)
			{
				slot->tts_values[att] = lf->cols[k]->values[r];
				slot->tts_isnull[att] = lf->cols[k]->isnull[r];
			}
			else
				ColfileDecodeValue(rel, &f->rg, loaded_desc(rel, gc, lf, sdesc), k + 1,
								   r, InvalidBuffer, &slot->tts_values[att],
								   &slot->tts_isnull[att]);
		}
	}
	bms_free(done);
}
