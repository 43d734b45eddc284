/*-------------------------------------------------------------------------
 * colfile_modify.c
 *	  DELETE, UPDATE (delete + insert at a new TID), row locking, and the
 *	  row messages that let change capture see a tracked table's changes.
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
 * Lock strength: FOR KEY SHARE and FOR SHARE take a shared record; FOR NO
 * KEY UPDATE, FOR UPDATE, UPDATE and DELETE conflict with every record.
 * (Unlike heap, a non-key UPDATE therefore waits for FOR KEY SHARE lockers
 * such as foreign key checks: more waiting, never less.)
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "capture/capture.h"
#include "executor/tuptable.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

/*
 * Decide about one row from its records. Returns TM_Ok, TM_BeingModified
 * (*wait_xid set), TM_Updated, TM_Deleted, TM_SelfModified or
 * TM_Invisible; fills tmfd for the failures.
 */
static TM_Result
check_row_internal(Relation rel, ItemPointer tid, CommandId cid, bool exclusive,
				   TM_FailureData *tmfd, TransactionId *wait_xid, char *own_lock)
{
	List	   *states = ColfileRowStatesFor(rel->rd_node.relNode, tid);
	ListCell   *lc;
	TM_Result	result = TM_Ok;
	ColfileRowGroup rg;

	*wait_xid = InvalidTransactionId;
	*own_lock = 0;

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

		if (rs->kind != ROWSTATE_DELETED && rs->kind != ROWSTATE_UPDATED &&
			rs->kind != ROWSTATE_KILLED)
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

	/* then locks */
	foreach(lc, states)
	{
		ColfileRowState *rs = lfirst(lc);

		if (rs->kind != ROWSTATE_LOCK_EXCL && rs->kind != ROWSTATE_LOCK_SHARE)
			continue;
		if (TransactionIdIsCurrentTransactionId(rs->xmin))
		{
			if (*own_lock != ROWSTATE_LOCK_EXCL)
				*own_lock = rs->kind;
			continue;
		}
		if (!TransactionIdIsInProgress(rs->xmin))
			continue;			/* that transaction ended: lock released */
		if (exclusive || rs->kind == ROWSTATE_LOCK_EXCL)
		{
			*wait_xid = rs->xmin;
			tmfd->ctid = *tid;
			tmfd->xmax = rs->xmin;
			tmfd->cmax = InvalidCommandId;
			result = TM_BeingModified;
			goto done;
		}
	}
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
check_row(Relation rel, ItemPointer tid, CommandId cid, bool exclusive,
		  TM_FailureData *tmfd, TransactionId *wait_xid, char *own_lock)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "colfile row check",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	TM_Result	r;

	r = check_row_internal(rel, tid, cid, exclusive, tmfd, wait_xid, own_lock);
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
 * Claim a row for deletion or update: on TM_Ok the caller holds the tuple
 * lock and must record its change, then release it.
 */
static TM_Result
claim_row(Relation rel, ItemPointer tid, CommandId cid, Snapshot crosscheck,
		  bool wait, TM_FailureData *tmfd)
{
	TM_Result	r;
	TransactionId xwait;
	char		own_lock;

	ColfileFlushAllForRead(RelationGetRelid(rel));
	ColfileFlushForTid(RelationGetRelid(rel), tid);
	for (;;)
	{
		LockTuple(rel, tid, ExclusiveLock);
		r = check_row(rel, tid, cid, true, tmfd, &xwait, &own_lock);
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

		if (!ColfileRowVisible(rel, tid, crosscheck, &rg))
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
	 * SIREAD locks on the relation (a view's stored read takes one) after.
	 */
	(void) GetCurrentTransactionId();
	r = claim_row(rel, tid, cid, crosscheck, wait, tmfd);
	if (r != TM_Ok)
		return r;
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	if (changingPart)
	{
		/* as heap: whoever finds the row moved gets an error, not nothing */
		ItemPointerData moved;

		ItemPointerSetMovedPartitions(&moved);
		ColfileInsertRowState(rel, tid, ROWSTATE_UPDATED, &moved, cid);
	}
	else
		ColfileInsertRowState(rel, tid, ROWSTATE_DELETED, NULL, cid);
	UnlockTuple(rel, tid, ExclusiveLock);
	ColfileLogRowChange(rel, 'd', tid, NULL);
	pgstat_count_heap_delete(rel);
	return TM_Ok;
}

/* UPDATE: insert the new version, record the old one as updated */
TM_Result
colfile_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
					 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
					 bool wait, TM_FailureData *tmfd,
					 LockTupleMode *lockmode, bool *update_indexes)
{
	TM_Result	r;
	ItemPointerData old = *otid;

	*lockmode = LockTupleExclusive;
	*update_indexes = false;
	(void) GetCurrentTransactionId();	/* as in colfile_tuple_delete */
	r = claim_row(rel, &old, cid, crosscheck, wait, tmfd);
	if (r != TM_Ok)
		return r;
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	PG_TRY();
	{
		ColfileBufferInsert(rel, slot, cid);
		ColfileInsertCallDone(rel);
		ColfileInsertRowState(rel, &old, ROWSTATE_UPDATED, &slot->tts_tid, cid);
	}
	PG_FINALLY();
	{
		UnlockTuple(rel, &old, ExclusiveLock);
	}
	PG_END_TRY();
	*update_indexes = true;
	ColfileLogRowChange(rel, 'u', &old, slot);
	pgstat_count_heap_update(rel, false);
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
	bool		exclusive = (mode == LockTupleExclusive ||
							 mode == LockTupleNoKeyExclusive);
	TM_Result	r;
	TransactionId xwait;
	char		own_lock;
	CommandId	chain_cid = InvalidCommandId;
	TransactionId chain_xid = InvalidTransactionId;

	ColfileFlushAllForRead(RelationGetRelid(rel));
	ColfileFlushForTid(RelationGetRelid(rel), tid);
	tmfd->traversed = false;

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
		r = check_row(rel, &cur, cid, exclusive, tmfd, &xwait, &own_lock);
		if (r == TM_BeingModified)
		{
			UnlockTuple(rel, &cur, ExclusiveLock);
			if (!wait_for(rel, &cur, xwait, wait_policy, XLTW_Lock))
				return TM_WouldBlock;
			continue;
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
		if (own_lock != ROWSTATE_LOCK_EXCL &&
			(exclusive || own_lock != ROWSTATE_LOCK_SHARE))
			ColfileInsertRowState(rel, &cur,
								  exclusive ? ROWSTATE_LOCK_EXCL : ROWSTATE_LOCK_SHARE,
								  NULL, cid);
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
	return TM_Ok;
}

/* A speculative insertion lost: the row is dead to everybody at once */
void
colfile_kill_row(Relation rel, ItemPointer tid)
{
	ColfileInsertRowState(rel, tid, ROWSTATE_KILLED, NULL,
						  GetCurrentCommandId(true));
}
