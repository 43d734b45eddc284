/*-------------------------------------------------------------------------
 * colfile_modify.c
 *	  DELETE, UPDATE (in place as column files, or delete + insert at a new
 *	  TID), row locking, and the row messages that let change capture see a
 *	  tracked table's changes.
 *
 * Locking story: the pages hold no xmax, so the state of a row version is
 * the set of its records in mvinc.colfile_rowstate (see colfile.h), each
 * carrying, as its heap xmin, the transaction that deleted, updated or
 * locked the row. To change or lock a row we take the heavyweight tuple
 * lock on its TID (serialising the check-then-insert among modifiers),
 * read every record of the row with SnapshotAny, and then:
 *	- a deletion by a committed transaction: TM_Updated (with the new TID
 *	  for EvalPlanQual, which follows it under TUPLE_LOCK_FLAG_FIND_LAST_
 *	  VERSION) or TM_Deleted; REPEATABLE READ turns that into a
 *	  serialization failure, as with heap;
 *	- a conflicting deletion or lock by a transaction in progress: release
 *	  the tuple lock, wait for that transaction (XactLockTableWait), retry;
 *	- our own deletion: TM_SelfModified with the deleting command as cmax
 *	  (or TM_Invisible if it predates the command), as heap; tuple_lock
 *	  walking the chain of a committed update passes our own deleted
 *	  versions and reports TM_SelfModified at a version made by our
 *	  command or a later one (heapam_tuple_lock's rule);
 *	- a row inserted by our own command (or a later one): tuple_lock
 *	  reports TM_Invisible with the row and its xmin in the slot, as heap,
 *	  so ON CONFLICT DO UPDATE refuses to change it a second time;
 *	- otherwise insert our own record; it is visible at once to everybody
 *	  checking the row, and ends (for locks) or takes effect (for
 *	  deletions) with our transaction.
 * Lock strengths follow heap's table (FOR KEY SHARE, FOR SHARE, FOR NO KEY
 * UPDATE and an update in place, FOR UPDATE); a deletion or an update that
 * moves the row conflicts with every record. (Unlike heap, a moving update
 * of non-key columns therefore waits for FOR KEY SHARE lockers: more
 * waiting, never less.) An update in place (record 'c') is not a deletion:
 * the row stays, and a snapshot that does not see a committed one holds an
 * older version of the row (docs/internals.md, "colfile column updates").
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/xact.h"
#include "capture/capture.h"
#include "executor/tuptable.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/relcache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

/* Lock strength of a row state kind held by a transaction (-1: not a lock) */
static int
held_strength(char kind)
{
	switch (kind)
	{
		case ROWSTATE_LOCK_KEYSHARE:
			return LockTupleKeyShare;
		case ROWSTATE_LOCK_SHARE:
			return LockTupleShare;
		case ROWSTATE_LOCK_NOKEY:
		case ROWSTATE_COLUMNS:
			return LockTupleNoKeyExclusive;
		case ROWSTATE_LOCK_EXCL:
			return LockTupleExclusive;
	}
	return -1;
}

/* Do two row lock strengths conflict? (heap's table, tupleLockExtraInfo) */
static bool
strengths_conflict(int held, LockTupleMode want)
{
	switch (want)
	{
		case LockTupleKeyShare:
			return held == LockTupleExclusive;
		case LockTupleShare:
			return held >= LockTupleNoKeyExclusive;
		case LockTupleNoKeyExclusive:
			return held >= LockTupleShare;
		case LockTupleExclusive:
			return true;
	}
	return true;
}

/* Did the last check_row find the row updated in place by our command? */
static bool self_columns_update = false;

/*
 * Decide about one row from its records, for a change or lock of strength
 * mode by a statement reading under snapshot. Returns TM_Ok, TM_BeingModified
 * (*wait_xid set), TM_Updated, TM_Deleted, TM_SelfModified or TM_Invisible;
 * fills tmfd for the failures. *own_lock: the strongest lock strength this
 * transaction holds on the row, or -1.
 *
 * Column updates ('c') keep the row at its TID: one committed by a
 * transaction the snapshot does not see means the caller holds an older
 * version (TM_Updated, ctid the same TID), unless the caller takes the
 * newest version anyway (latest_ok: EvalPlanQual's locking walk, or the
 * row is locked by us FOR [NO KEY] UPDATE, which no later update could
 * pass) or only wants FOR KEY SHARE, which a no-key update does not
 * disturb (as heap).
 */
static TM_Result
check_row_internal(Relation rel, ItemPointer tid, CommandId cid, LockTupleMode mode,
				   Snapshot snapshot, bool latest_ok, TM_FailureData *tmfd,
				   TransactionId *wait_xid, int *own_lock)
{
	List	   *states = ColfileRowStatesFor(rel->rd_node.relNode, tid);
	ListCell   *lc;
	TM_Result	result = TM_Ok;
	ColfileRowGroup rg;
	CommandId	own_first = InvalidCommandId;
	CommandId	own_last = InvalidCommandId;
	TransactionId own_xid = InvalidTransactionId;
	bool		walking = latest_ok;	/* the caller walks to the newest version */

	*wait_xid = InvalidTransactionId;
	*own_lock = -1;
	self_columns_update = false;

	if (!ColfileFindRowGroup(rel->rd_node.relNode, ItemPointerGetBlockNumber(tid),
							 SnapshotAny, &rg) ||
		ColfileGroupPos(&rg, tid) < 0)
	{
		tmfd->ctid = *tid;
		tmfd->xmax = InvalidTransactionId;
		tmfd->cmax = InvalidCommandId;
		return TM_Deleted;
	}

	/* deletions first: they decide for good */
	foreach(lc, states)
	{
		ColfileRowState *rs = lfirst(lc);

		if (!ROWSTATE_IS_DELETION(rs->kind))
			continue;
		tmfd->ctid = rs->kind == ROWSTATE_UPDATED ? rs->new_tid : *tid;
		tmfd->xmax = rs->xmin;
		tmfd->cmax = InvalidCommandId;
		if (rs->kind == ROWSTATE_KILLED)
		{
			result = TM_Deleted;
			goto done;
		}
		if (TransactionIdIsCurrentTransactionId(rs->xmin))
		{
			tmfd->cmax = rs->cmin;
			result = rs->cmin >= cid ? TM_SelfModified : TM_Invisible;
			goto done;
		}
		if (TransactionIdIsInProgress(rs->xmin))
		{
			*wait_xid = rs->xmin;
			result = TM_BeingModified;
			goto done;
		}
		/* committed (aborted records are left out) */
		result = rs->kind == ROWSTATE_UPDATED ? TM_Updated : TM_Deleted;
		goto done;
	}

	/*
	 * What we hold ourselves, and our own column updates by this command or
	 * a later one (the earliest and the latest of them)
	 */
	foreach(lc, states)
	{
		ColfileRowState *rs = lfirst(lc);

		if (!TransactionIdIsCurrentTransactionId(rs->xmin))
			continue;
		if (rs->kind == ROWSTATE_COLUMNS && rs->cmin >= cid)
		{
			if (own_first == InvalidCommandId || rs->cmin < own_first)
				own_first = rs->cmin;
			if (own_last == InvalidCommandId || rs->cmin > own_last)
				own_last = rs->cmin;
			own_xid = rs->xmin;
		}
		if (rs->kind != ROWSTATE_COLUMNS)
			*own_lock = Max(*own_lock, held_strength(rs->kind));
	}
	/*
	 * A lock of ours does not make the caller's version the newest: it may
	 * have been taken on a newer version than the caller read (a subquery's
	 * FOR UPDATE, a cursor, a function). Callers that did lock the version
	 * they hold pass latest_ok (see newest_locked).
	 */
	/*
	 * Then others' locks and column updates. A committed one the snapshot
	 * does not see came before any of ours (we would have held the row),
	 * so it is what superseded the caller's version: TM_Updated.
	 */
	foreach(lc, states)
	{
		ColfileRowState *rs = lfirst(lc);
		int			held = held_strength(rs->kind);

		if (held < 0 || TransactionIdIsCurrentTransactionId(rs->xmin))
			continue;
		if (TransactionIdIsInProgress(rs->xmin))
		{
			/*
			 * Our own update in place is newer than any lock that could
			 * coexist with it (FOR KEY SHARE): heap reports TM_SelfModified
			 * without waiting
			 */
			if (own_first != InvalidCommandId)
				continue;
			if (strengths_conflict(held, mode))
			{
				*wait_xid = rs->xmin;
				tmfd->ctid = *tid;
				tmfd->xmax = rs->xmin;
				tmfd->cmax = InvalidCommandId;
				result = TM_BeingModified;
				goto done;
			}
			continue;
		}
		/* ended: a lock is over; a committed column update may be news */
		if (rs->kind == ROWSTATE_COLUMNS && !latest_ok && mode != LockTupleKeyShare &&
			snapshot != NULL && IsMVCCSnapshot(snapshot) &&
			XidInMVCCSnapshot(rs->xmin, snapshot))
		{
			tmfd->ctid = *tid;
			tmfd->xmax = rs->xmin;
			tmfd->cmax = InvalidCommandId;
			result = TM_Updated;
			/* keep looking: a running conflicting lock still makes us wait */
		}
	}
	if (result != TM_Ok || own_first == InvalidCommandId)
		goto done;

	/*
	 * Our own update by this command or a later one superseded the caller's
	 * version: TM_SelfModified with the command that made the next version
	 * (heap's cmax), or, for a caller walking to the newest version
	 * (EvalPlanQual's lock), the command that made the newest one
	 */
	self_columns_update = true;
	tmfd->ctid = *tid;
	tmfd->xmax = own_xid;
	tmfd->cmax = walking ? own_last : own_first;
	result = TM_SelfModified;
done:
	list_free_deep(states);
	return result;
}

/*
 * Did this transaction's command cid, or a later one, insert the row at
 * tid? Heap's HeapTupleSatisfiesUpdate calls such a version invisible.
 */
static bool
inserted_by_command(Relation rel, ItemPointer tid, CommandId cid)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile row check",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	ColfileRowGroup rg;
	bool		result;

	result = ColfileFindRowGroup(rel->rd_node.relNode, ItemPointerGetBlockNumber(tid),
								 SnapshotAny, &rg) &&
		rg.nrows >= 0 && TransactionIdIsCurrentTransactionId(rg.xmin) &&
		rg.cmin != InvalidCommandId && rg.cmin >= cid;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	return result;
}

/* check_row_internal in a memory context of its own (called per row) */
static TM_Result
check_row(Relation rel, ItemPointer tid, CommandId cid, LockTupleMode mode,
		  Snapshot snapshot, bool latest_ok, TM_FailureData *tmfd,
		  TransactionId *wait_xid, int *own_lock)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile row check",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	TM_Result	r;

	r = check_row_internal(rel, tid, cid, mode, snapshot, latest_ok, tmfd, wait_xid,
						   own_lock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	return r;
}

/* Wait for xid per wait policy; false when the caller must give up */
static bool
wait_for(Relation rel, ItemPointer tid, TransactionId xid,
		 LockWaitPolicy policy, XLTW_Oper oper)
{
	switch (policy)
	{
		case LockWaitBlock:
			XactLockTableWait(xid, rel, tid, oper);
			return true;
		case LockWaitSkip:
			return ConditionalXactLockTableWait(xid);
		case LockWaitError:
			if (!ConditionalXactLockTableWait(xid))
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("could not obtain lock on row in relation \"%s\"",
								RelationGetRelationName(rel))));
			return true;
	}
	return true;
}

/* Take the heavyweight tuple lock per wait policy */
static bool
lock_tid(Relation rel, ItemPointer tid, LockWaitPolicy policy)
{
	switch (policy)
	{
		case LockWaitBlock:
			LockTuple(rel, tid, ExclusiveLock);
			return true;
		case LockWaitSkip:
			return ConditionalLockTuple(rel, tid, ExclusiveLock);
		case LockWaitError:
			if (!ConditionalLockTuple(rel, tid, ExclusiveLock))
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("could not obtain lock on row in relation \"%s\"",
								RelationGetRelationName(rel))));
			return true;
	}
	return true;
}

/*
 * The row version the executor holds. Heap tells it through the TID: a
 * lock that follows an update chain (EvalPlanQual's, ON CONFLICT's, a
 * BEFORE trigger's) writes the newest version's TID into the caller's
 * variable, and the update or delete that follows names that version. An
 * update in place keeps every version of a row at one TID, so the lock
 * remembers which caller's variable it answered with a version newer than
 * the caller's snapshot, and the update or delete (or another lock) through
 * that same variable, for that TID, in the same command, takes the newest
 * version (latest_ok). A lock taken through any other variable (a subquery's or a
 * cursor's FOR UPDATE, a function's) says nothing about the version the
 * statement's own scan read: that one is checked against the snapshot and
 * goes through EvalPlanQual when superseded, as heap's.
 */
typedef struct NewestLocked
{
	const ItemPointerData *caller;	/* the executor's TID variable */
	Oid			relid;
	ItemPointerData tid;
	CommandId	cid;
	TransactionId xid;
} NewestLocked;

/*
 * A few at once: EvalPlanQual's recheck may lock rows of other tables (a
 * subquery's FOR UPDATE) between its lock of the row and the update
 */
#define N_NEWEST_LOCKED 8
static NewestLocked newest_locked[N_NEWEST_LOCKED];
static int	newest_locked_next = 0;

static void
note_newest_locked(Relation rel, const ItemPointerData *caller, ItemPointer tid,
				   CommandId cid)
{
	NewestLocked *e = &newest_locked[newest_locked_next];

	newest_locked_next = (newest_locked_next + 1) % N_NEWEST_LOCKED;
	e->caller = caller;
	e->relid = RelationGetRelid(rel);
	e->tid = *tid;
	e->cid = cid;
	e->xid = GetTopTransactionIdIfAny();
}

/*
 * Did a lock through caller's variable take this row's newest version?
 * take: the update or delete that uses it forgets it; another lock through
 * the same variable (a BEFORE trigger's after EvalPlanQual's) keeps it.
 */
static bool
newest_locked_by(Relation rel, const ItemPointerData *caller, ItemPointer tid,
				 CommandId cid, bool take)
{
	for (int i = 0; i < N_NEWEST_LOCKED; i++)
	{
		NewestLocked *e = &newest_locked[i];

		if (e->caller == caller && e->relid == RelationGetRelid(rel) &&
			ItemPointerEquals(&e->tid, tid) && e->cid == cid &&
			TransactionIdEquals(e->xid, GetTopTransactionIdIfAny()))
		{
			if (take)
				e->caller = NULL;
			return true;
		}
	}
	return false;
}

/*
 * Claim a row for deletion or update (of strength mode): on TM_Ok the
 * caller holds the tuple lock and must record its change, then release it.
 * caller: the executor's TID variable (newest_locked_by).
 */
static TM_Result
claim_row(Relation rel, const ItemPointerData *caller, ItemPointer tid, CommandId cid,
		  LockTupleMode mode, Snapshot snapshot, Snapshot crosscheck, bool wait,
		  TM_FailureData *tmfd)
{
	TM_Result	r;
	TransactionId xwait;
	int			own_lock;
	bool		latest_ok = newest_locked_by(rel, caller, tid, cid, true);

	ColfileFlushInsertsForRead(RelationGetRelid(rel));
	ColfileFlushForTid(RelationGetRelid(rel), tid);
	for (;;)
	{
		LockTuple(rel, tid, ExclusiveLock);
		r = check_row(rel, tid, cid, mode, snapshot, latest_ok, tmfd, &xwait, &own_lock);
		if (r != TM_BeingModified)
			break;
		UnlockTuple(rel, tid, ExclusiveLock);
		if (!wait)
			return TM_BeingModified;
		XactLockTableWait(xwait, rel, tid, XLTW_Update);
	}
	if (r == TM_Ok && crosscheck != InvalidSnapshot)
	{
		ColfileRowGroup rg;

		if (!ColfileRowVisible(rel, tid, crosscheck, &rg) ||
			(check_row(rel, tid, cid, mode, crosscheck, false, tmfd, &xwait,
					   &own_lock) == TM_Updated))
		{
			tmfd->ctid = *tid;
			tmfd->xmax = InvalidTransactionId;
			tmfd->cmax = InvalidCommandId;
			r = TM_Updated;
		}
	}
	if (r != TM_Ok)
		UnlockTuple(rel, tid, ExclusiveLock);
	return r;
}

/*
 * Change capture: logical decoding cannot read colfile's generic WAL, so
 * while the table is tracked each changed row is logged as a row message
 * (capture_rowmsg.c): op 'i' (newslot), 'u' (old row at oldtid, newslot)
 * or 'd' (old row at oldtid).  Called after the change succeeded.  Rows
 * never change in place, so the old row is read by TID with SnapshotAny.
 */
void
ColfileLogRowChange(Relation rel, char op, ItemPointer oldtid,
					TupleTableSlot *newslot)
{
	TupleTableSlot *oldslot = NULL;

	if (!MvincRowMessagesWanted(rel))
		return;
	if (oldtid != NULL)
	{
		oldslot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
		if (!ColfileFetchRow(rel, oldtid, SnapshotAny, oldslot))
			elog(ERROR, "could not read row (%u,%u) of \"%s\" for change capture",
				 ItemPointerGetBlockNumber(oldtid), ItemPointerGetOffsetNumber(oldtid),
				 RelationGetRelationName(rel));
	}
	MvincLogRowChange(rel, op, oldslot, newslot);
	if (oldslot != NULL)
		ExecDropSingleTupleTableSlot(oldslot);
}

/* DELETE: record the deletion of the row at tid */
TM_Result
colfile_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
					 Snapshot snapshot, Snapshot crosscheck, bool wait,
					 TM_FailureData *tmfd, bool changingPart)
{
	TM_Result	r;

	/*
	 * As heap: an xid before waiting (so that SERIALIZABLE readers meeting
	 * us as a running writer can conflict out to us), and the check for
	 * SIREAD locks on the row (index reads) or the relation (scans, and a
	 * view's stored read) once the deletion is recorded (colfile_ssi.c).
	 */
	(void) GetCurrentTransactionId();
	r = claim_row(rel, tid, tid, cid, LockTupleExclusive, snapshot, crosscheck, wait, tmfd);
	if (r != TM_Ok)
		return r;
	if (changingPart)
	{
		/* as heap: whoever finds the row moved gets an error, not nothing */
		ItemPointerData moved;

		ItemPointerSetMovedPartitions(&moved);
		ColfileInsertRowState(rel, tid, ROWSTATE_UPDATED, &moved, cid);
	}
	else
		ColfileInsertRowState(rel, tid, ROWSTATE_DELETED, NULL, cid);
	/* after the record: a reader that missed it took its lock before */
	ColfileCheckRowConflictIn(rel, tid);
	UnlockTuple(rel, tid, ExclusiveLock);
	ColfileLogRowChange(rel, 'd', tid, NULL);
	pgstat_count_heap_delete(rel);
	return TM_Ok;
}

/*
 * May an UPDATE of rel change a row at its TID (column files)? Not with
 * AFTER UPDATE row triggers (foreign keys' included) or transition tables
 * (on rel or on the statement's target): the executor reads the old and
 * the new row by TID after the update. Nor with AFTER INSERT row triggers:
 * one that fires later (deferred, or after another trigger changed the
 * row) reads the inserted row by TID, which would show the update.
 */
static bool
column_updates_allowed(Relation rel)
{
	return colfile_column_updates &&
		!(rel->trigdesc && (rel->trigdesc->trig_update_after_row ||
							rel->trigdesc->trig_insert_after_row ||
							rel->trigdesc->trig_update_old_table ||
							rel->trigdesc->trig_update_new_table)) &&
		ColfileStatementAllowsInPlace(rel);
}

/* Columns (attnums) whose values differ between two full slots */
static Bitmapset *
changed_columns(TupleDesc desc, TupleTableSlot *oldslot, TupleTableSlot *newslot,
				Bitmapset *among)
{
	Bitmapset  *changed = NULL;

	slot_getallattrs(oldslot);
	slot_getallattrs(newslot);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		bool		n1 = oldslot->tts_isnull[a],
					n2 = newslot->tts_isnull[a];

		if (att->attisdropped || (among != NULL && !bms_is_member(a + 1, among)))
			continue;
		if (n1 != n2 ||
			(!n1 && !datum_image_eq(oldslot->tts_values[a], newslot->tts_values[a],
									att->attbyval, att->attlen)))
			changed = bms_add_member(changed, a + 1);
	}
	return changed;
}

/*
 * UPDATE. When no indexed column changes (and column_updates_allowed), the
 * row keeps its TID: a row state 'c' records the update, the changed
 * columns' values go to a column file (colfile_column.c), no index entry
 * is made and the lock is FOR NO KEY UPDATE strength, as a heap HOT
 * update. Otherwise: insert the new version, record the old one as updated.
 */
TM_Result
colfile_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
					 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
					 bool wait, TM_FailureData *tmfd,
					 LockTupleMode *lockmode, bool *update_indexes)
{
	TM_Result	r;
	ItemPointerData old = *otid;
	TupleDesc	desc = RelationGetDescr(rel);
	bool		possible = column_updates_allowed(rel);
	Bitmapset  *assigned = possible ? ColfileUpdatedColumns(rel) : NULL;
	Bitmapset  *indexed = NULL;
	Bitmapset  *changed = NULL;
	bool		sure = false;
	bool		in_place = false;
	TupleTableSlot *oldslot = NULL;
	int			x = -1;

	if (possible)
	{
		Bitmapset  *ia = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);

		while ((x = bms_next_member(ia, x)) >= 0)
		{
			int			attno = x + FirstLowInvalidHeapAttributeNumber;

			/* a whole-row or system column reference: every column */
			if (attno <= 0)
				indexed = bms_add_range(indexed, 1, Max(desc->natts, 1));
			else
				indexed = bms_add_member(indexed, attno);
		}
		bms_free(ia);
		sure = assigned != NULL && !bms_overlap(assigned, indexed);
	}

	*lockmode = sure ? LockTupleNoKeyExclusive : LockTupleExclusive;
	*update_indexes = false;
	(void) GetCurrentTransactionId();	/* as in colfile_tuple_delete */
	r = claim_row(rel, otid, &old, cid, *lockmode, snapshot, crosscheck, wait, tmfd);
	if (r != TM_Ok)
	{
		bms_free(indexed);
		return r;
	}
	ColfileCheckRowConflictIn(rel, otid);
	PG_TRY();
	{
		if (possible && (!sure || MvincRowMessagesWanted(rel)))
		{
			oldslot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
			if (!ColfileFetchRow(rel, &old, SnapshotAny, oldslot))
				elog(ERROR, "could not read row (%u,%u) of \"%s\" to update it",
					 ItemPointerGetBlockNumber(&old), ItemPointerGetOffsetNumber(&old),
					 RelationGetRelationName(rel));
		}
		if (sure)
		{
			in_place = true;
			x = -1;
			while ((x = bms_next_member(assigned, x)) >= 0)
				if (x >= 1 && x <= desc->natts && !TupleDescAttr(desc, x - 1)->attisdropped)
					changed = bms_add_member(changed, x);
		}
		else if (possible)
		{
			changed = changed_columns(desc, oldslot, slot, assigned);
			in_place = !bms_overlap(changed, indexed);
		}
		if (in_place)
		{
			ColfileInsertRowState(rel, &old, ROWSTATE_COLUMNS, NULL, cid);
			if (!ColfileColumnUpdate(rel, &old, slot, cid, changed))
				elog(ERROR, "could not find the row group of row (%u,%u) of \"%s\"",
					 ItemPointerGetBlockNumber(&old), ItemPointerGetOffsetNumber(&old),
					 RelationGetRelationName(rel));
			slot->tts_tid = old;
			slot->tts_tableOid = RelationGetRelid(rel);
		}
		else
		{
			ColfileBufferInsert(rel, slot, cid);
			ColfileInsertCallDone(rel);
			ColfileInsertRowState(rel, &old, ROWSTATE_UPDATED, &slot->tts_tid, cid);
			ColfileCheckRowConflictIn(rel, &old);	/* as in colfile_tuple_delete */
		}
	}
	PG_FINALLY();
	{
		UnlockTuple(rel, &old, ExclusiveLock);
	}
	PG_END_TRY();
	if (in_place)
	{
		*lockmode = LockTupleNoKeyExclusive;
		if (oldslot != NULL && MvincRowMessagesWanted(rel))
			MvincLogRowChange(rel, 'u', oldslot, slot);
		pgstat_count_heap_update(rel, true);
	}
	else
	{
		*update_indexes = true;
		ColfileLogRowChange(rel, 'u', &old, slot);
		pgstat_count_heap_update(rel, false);
	}
	if (oldslot != NULL)
		ExecDropSingleTupleTableSlot(oldslot);
	bms_free(indexed);
	bms_free(changed);
	return TM_Ok;
}

/* SELECT FOR UPDATE/SHARE, EvalPlanQual, foreign keys, ON CONFLICT */
TM_Result
colfile_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
				   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
				   LockWaitPolicy wait_policy, uint8 flags,
				   TM_FailureData *tmfd)
{
	ItemPointerData cur = *tid;
	TM_Result	r;
	TransactionId xwait;
	int			own_lock;
	bool		latest_ok;
	CommandId	chain_cid = InvalidCommandId;
	TransactionId chain_xid = InvalidTransactionId;

	ColfileFlushInsertsForRead(RelationGetRelid(rel));
	ColfileFlushForTid(RelationGetRelid(rel), tid);
	tmfd->traversed = false;
	/* heap would lock the version *tid already leads to: no traversal */
	latest_ok = newest_locked_by(rel, tid, tid, cid, false);

	/*
	 * A row our own command inserted, such as the first of two rows that
	 * ON CONFLICT DO UPDATE proposes with the same key: TM_Invisible, as
	 * heap, with the row and its xmin in the slot, from which the executor
	 * tells "command cannot affect row a second time".
	 */
	if (inserted_by_command(rel, tid, cid))
	{
		tmfd->ctid = *tid;
		tmfd->xmax = InvalidTransactionId;
		tmfd->cmax = InvalidCommandId;
		ColfileFetchRow(rel, tid, SnapshotAny, slot);
		return TM_Invisible;
	}

	for (;;)
	{
		if (!lock_tid(rel, &cur, wait_policy))
		{
			tmfd->ctid = cur;
			tmfd->xmax = InvalidTransactionId;
			tmfd->cmax = InvalidCommandId;
			return TM_WouldBlock;
		}
		r = check_row(rel, &cur, cid, mode, snapshot, latest_ok, tmfd, &xwait,
					  &own_lock);

		/*
		 * Our own command changed the row in place: ON CONFLICT DO UPDATE
		 * found it through the index as the newest version, which heap
		 * would call invisible (made by this command), with its xmin ours:
		 * "command cannot affect row a second time". (EvalPlanQual's walk
		 * gets TM_SelfModified below, as for a version our command made.)
		 */
		if (r == TM_SelfModified && self_columns_update && !tmfd->traversed &&
			tmfd->cmax == cid && !(flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION))
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (ColfileFetchRow(rel, &cur, SnapshotAny, slot))
				ColfileSlotSetXmin(slot, GetCurrentTransactionId());
			return TM_Invisible;
		}
		if (r == TM_BeingModified)
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (!wait_for(rel, &cur, xwait, wait_policy, XLTW_Lock))
				return TM_WouldBlock;
			continue;
		}

		/*
		 * The newest version, at the same TID, was made by our own command
		 * or a later one: as heap, TM_SelfModified with that command (the
		 * executor skips the row for its own command, and raises "already
		 * modified by an operation triggered by the current command" for a
		 * later one)
		 */
		if (tmfd->traversed && r == TM_SelfModified && self_columns_update)
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			return TM_SelfModified;
		}

		/*
		 * Following the update chain (as heapam_tuple_lock's SnapshotDirty
		 * walk): a version this transaction deleted or updated itself is
		 * dead whatever its command id, so go on to our newer version, or
		 * stop at our deletion.
		 */
		if (tmfd->traversed && (r == TM_SelfModified || r == TM_Invisible))
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (!ItemPointerIsValid(&tmfd->ctid) ||
				ItemPointerIndicatesMovedPartitions(&tmfd->ctid) ||
				ItemPointerEquals(&tmfd->ctid, &cur))
			{
				tmfd->ctid = cur;
				tmfd->cmax = InvalidCommandId;
				return TM_Deleted;
			}
			chain_cid = tmfd->cmax; /* the command that made the next version */
			chain_xid = tmfd->xmax;
			cur = tmfd->ctid;
			*tid = cur;
			continue;
		}

		/*
		 * A live version reached through our own update: if a command at
		 * or after ours made it, our command cannot see it and must not
		 * lock it; as heap, report TM_SelfModified with that command id
		 * (the executor skips the row when it is its own command, and
		 * raises "already modified by an operation triggered by the
		 * current command" otherwise).
		 */
		if (chain_cid != InvalidCommandId && chain_cid >= cid)
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			tmfd->ctid = cur;
			tmfd->xmax = chain_xid;
			tmfd->cmax = chain_cid;
			return TM_SelfModified;
		}
		/*
		 * A column update the snapshot does not see: the newest version is
		 * at the same TID. EvalPlanQual's walk (FIND_LAST_VERSION) locks
		 * it as a followed version; so does READ COMMITTED otherwise (ON
		 * CONFLICT DO UPDATE found the row through the index, as the
		 * newest version, which heap would lock without complaint). Under
		 * REPEATABLE READ the caller gets TM_Updated (a serialization
		 * failure), as heap's would for a newer version.
		 */
		if (r == TM_Updated && ItemPointerEquals(&tmfd->ctid, &cur) && !latest_ok &&
			((flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) || !IsolationUsesXactSnapshot()))
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION)
				tmfd->traversed = true;
			latest_ok = true;
			continue;
		}
		if (r == TM_Updated && (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) &&
			ItemPointerIsValid(&tmfd->ctid) &&
			!ItemPointerEquals(&tmfd->ctid, &cur))
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (ItemPointerIndicatesMovedPartitions(&tmfd->ctid))
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("tuple to be locked was already moved to another partition due to concurrent update")));
			cur = tmfd->ctid;
			*tid = cur;			/* as heap: the caller's TID follows the chain */
			tmfd->traversed = true;
			chain_cid = InvalidCommandId;	/* made by another transaction */
			chain_xid = InvalidTransactionId;
			continue;
		}
		break;
	}
	if (r != TM_Ok)
	{
		UnlockTuple(rel, &cur, ExclusiveLock);
		return r;
	}
	PG_TRY();
	{
		static const char kinds[] = {
			[LockTupleKeyShare] = ROWSTATE_LOCK_KEYSHARE,
			[LockTupleShare] = ROWSTATE_LOCK_SHARE,
			[LockTupleNoKeyExclusive] = ROWSTATE_LOCK_NOKEY,
			[LockTupleExclusive] = ROWSTATE_LOCK_EXCL,
		};

		if (own_lock < (int) mode)
			ColfileInsertRowState(rel, &cur, kinds[mode], NULL, cid);
	}
	PG_FINALLY();
	{
		UnlockTuple(rel, &cur, ExclusiveLock);
	}
	PG_END_TRY();

	if (!ColfileFetchRow(rel, &cur, SnapshotAny, slot))
	{
		tmfd->ctid = cur;
		tmfd->xmax = InvalidTransactionId;
		tmfd->cmax = InvalidCommandId;
		return TM_Deleted;
	}
	if (latest_ok)
		note_newest_locked(rel, tid, &cur, cid);
	return TM_Ok;
}

/* A speculative insertion lost: the row is dead to everybody at once */
void
colfile_kill_row(Relation rel, ItemPointer tid)
{
	ColfileInsertRowState(rel, tid, ROWSTATE_KILLED, NULL,
						  GetCurrentCommandId(true));
}
