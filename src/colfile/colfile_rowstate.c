/*-------------------------------------------------------------------------
 * colfile_rowstate.c
 *	  Per-row records of mvinc.colfile_rowstate (deletions, moves, column
 *	  updates) and of the unlogged row lock table: writing them, finding a
 *	  row's, the deleted set a scan hashes, and pruning them (VACUUM).
 *	  Their tuples carry the xids, so a deletion's visibility is plain MVCC.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/itemptr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mvinc.h"
#include "colfile/colfile.h"

/*
 * Delete row state records that no longer matter (VACUUM): locks of
 * finished transactions, and column updates every snapshot sees (they
 * only told later writers to wait or to re-check the row)
 */
int64
ColfilePruneRowStates(Oid relfilenode, TransactionId oldest_xmin)
{
	ColfileRowRecordScan s;
	HeapTuple	tup;
	int64		n = 0;

	ColfileRowRecordScanBegin(&s, relfilenode, NULL, GetLatestSnapshot(), RowExclusiveLock);
	while ((tup = ColfileRowRecordScanNext(&s)) != NULL)
	{
		char		kind = ColfileRowRecordKind(&s, tup);
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

		if ((ROWSTATE_IS_LOCK(kind) &&
			 !TransactionIdIsCurrentTransactionId(xmin) &&
			 !TransactionIdIsInProgress(xmin)) ||
			(kind == ROWSTATE_COLUMNS &&
			 TransactionIdPrecedes(xmin, oldest_xmin) &&
			 !TransactionIdIsCurrentTransactionId(xmin)))
		{
			simple_heap_delete(s.meta, &tup->t_self);
			n++;
		}
	}
	ColfileRowRecordScanEnd(&s);
	CommandCounterIncrement();
	return n;
}

/* One sequence number per (transaction, command): a statement's delete file */
static int64
statement_seq(CommandId cid)
{
	static TransactionId seq_xid = InvalidTransactionId;
	static CommandId seq_cid = InvalidCommandId;
	static int64 seq = 0;
	TransactionId xid = GetCurrentTransactionId();

	if (xid != seq_xid || cid != seq_cid)
	{
		seq = ColfileNextSeq();
		seq_xid = xid;
		seq_cid = cid;
	}
	return seq;
}

/*
 * Relfilenodes this transaction wrote row lock records for (in
 * TopMemoryContext; a superset after subtransaction aborts)
 */
static List *rowlock_written = NIL;

static void
note_rowlock_written(Oid relfilenode)
{
	MemoryContext old;

	if (list_member_oid(rowlock_written, relfilenode))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	rowlock_written = lappend_oid(rowlock_written, relfilenode);
	MemoryContextSwitchTo(old);
}

/* Transaction end: forget which tables had row locks */
void
ColfileRowLocksXactEnd(void)
{
	list_free(rowlock_written);
	rowlock_written = NIL;
}

/*
 * PREPARE TRANSACTION: copy this transaction's row locks and column update
 * records into the (logged) row state table. The row lock table is
 * unlogged and a crash empties it, which ends every other transaction, but
 * a prepared one survives a restart with its locks: as heap's, they must
 * keep others from updating its rows until COMMIT / ROLLBACK PREPARED.
 * VACUUM prunes the copies like any lock or 'c' record.
 */
void
ColfileKeepRowLocksForPrepare(void)
{
	ColfileMetaRels ids;
	Relation	locks,
				states;
	CommandId	cid;
	ListCell   *lc;

	if (rowlock_written == NIL)
		return;
	ColfileMetaRelIds(&ids);
	if (ids.rowlock == ids.rowstate)
		return;
	cid = GetCurrentCommandId(true);
	locks = table_open(ids.rowlock, AccessShareLock);
	states = table_open(ids.rowstate, RowExclusiveLock);
	foreach(lc, rowlock_written)
	{
		SysScanDesc scan;
		ScanKeyData key[1];
		HeapTuple	tup;

		ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(lfirst_oid(lc)));
		scan = systable_beginscan(locks, ids.rowlock_idx, true, SnapshotAny, 1, key);
		while ((tup = systable_getnext(scan)) != NULL)
		{
			Datum		values[Natts_rowstate];
			bool		nulls[Natts_rowstate];
			HeapTuple	copy;

			/* ours (aborted subtransactions' are not), and not removed */
			if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)) ||
				ColfileMetaTupleRemoved(tup->t_data))
				continue;
			heap_deform_tuple(tup, RelationGetDescr(locks), values, nulls);
			copy = heap_form_tuple(RelationGetDescr(states), values, nulls);
			ColfileMetaInsert(states, ids.rowstate_idx, copy, cid, values, nulls, false);
			heap_freetuple(copy);
		}
		systable_endscan(scan);
	}
	table_close(states, RowExclusiveLock);
	table_close(locks, AccessShareLock);
	CommandCounterIncrement();
}

/* Record a row state (deletion, update, lock, kill) with a command id */
void
ColfileInsertRowState(Relation rel, ItemPointer tid, char kind,
					  ItemPointer new_tid, CommandId cid)
{
	ColfileMetaRels ids;
	Relation	meta;
	Datum		values[Natts_rowstate];
	bool		nulls[Natts_rowstate] = {0};
	HeapTuple	tup;
	bool		transient = ROWSTATE_IS_TRANSIENT(kind);

	ColfileMetaRelIds(&ids);
	if (transient && ids.rowlock != ids.rowstate)
		note_rowlock_written(rel->rd_node.relNode);
	meta = table_open(transient ? ids.rowlock : ids.rowstate, RowExclusiveLock);
	values[0] = ObjectIdGetDatum(rel->rd_node.relNode);
	values[1] = ItemPointerGetDatum(tid);
	values[2] = CharGetDatum(kind);
	if (new_tid)
		values[3] = ItemPointerGetDatum(new_tid);
	else
		nulls[3] = true;
	if (ROWSTATE_IS_DELETION(kind))
		values[4] = Int64GetDatum(statement_seq(cid));
	else
		nulls[4] = true;
	tup = heap_form_tuple(RelationGetDescr(meta), values, nulls);
	ColfileMetaInsert(meta, transient ? ids.rowlock_idx : ids.rowstate_idx,
					  tup, cid, values, nulls, false);
	if (ROWSTATE_IS_DELETION(kind))
		ColfileMetaIndexEntry(meta, ids.rowstate_del_idx, tup, values, nulls);
	heap_freetuple(tup);
	table_close(meta, RowExclusiveLock);
}

/*
 * Every live record of one row (all versions, any transaction): what
 * tuple_lock, tuple_delete and dirty-snapshot fetches decide from. Records
 * of aborted transactions and records removed by committed transactions
 * are left out.
 */
static List *row_states_in(Oid tab, Oid idx, Oid relfilenode, ItemPointer tid,
						   List *result);

List *
ColfileRowStatesFor(Oid relfilenode, ItemPointer tid)
{
	ColfileMetaRels ids;
	Oid			tabs[2],
				idxs[2];
	int			ntabs;
	List	   *result = NIL;

	ColfileMetaRelIds(&ids);
	ntabs = ColfileRowStateTables(&ids, tabs, idxs);
	for (int i = 0; i < ntabs; i++)
		result = row_states_in(tabs[i], idxs[i], relfilenode, tid, result);
	return result;
}

/* ColfileRowStatesFor's records of one table, appended to result */
static List *
row_states_in(Oid tab, Oid idx, Oid relfilenode, ItemPointer tid, List *result)
{
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[2];
	HeapTuple	tup;

	meta = table_open(tab, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_TIDEQ,
				ItemPointerGetDatum(tid));
	scan = systable_beginscan(meta, idx, true, SnapshotAny, 2, key);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		HeapTupleHeader h = tup->t_data;
		TransactionId xmin = HeapTupleHeaderGetXmin(h);
		ColfileRowState *rs;
		Datum		values[Natts_rowstate];
		bool		nulls[Natts_rowstate];

		if (!TransactionIdIsCurrentTransactionId(xmin) &&
			!TransactionIdIsInProgress(xmin) &&
			!TransactionIdDidCommit(xmin))
			continue;			/* aborted */
		if (ColfileMetaTupleRemoved(h))
			continue;			/* removed */

		heap_deform_tuple(tup, RelationGetDescr(meta), values, nulls);
		rs = palloc0(sizeof(ColfileRowState));
		rs->kind = DatumGetChar(values[2]);
		if (!nulls[3])
			rs->new_tid = *DatumGetItemPointer(values[3]);
		else
			ItemPointerSetInvalid(&rs->new_tid);
		rs->xmin = xmin;
		rs->cmin = TransactionIdIsCurrentTransactionId(xmin) ?
			HeapTupleHeaderGetCmin(h) : InvalidCommandId;
		rs->self = tup->t_self;
		result = lappend(result, rs);
	}
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	return result;
}

/*
 * The next deletion record of a scan of the deletion index that the
 * snapshot sees, or NULL
 */
static HeapTuple
next_deletion(SysScanDesc scan, Snapshot snapshot)
{
	HeapTuple	tup;

	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		if (MvincUnlockedVisible(scan, tup, snapshot) &&
			ROWSTATE_IS_DELETION(DatumGetChar(heap_getattr(tup, 3,
															RelationGetDescr(scan->heap_rel),
															&isnull))))
			return tup;
	}
	return NULL;
}

/*
 * Is the row deleted under an MVCC snapshot? (A deletion record visible
 * to the snapshot deletes the row.)
 */
bool
ColfileRowDeletedFor(Oid relfilenode, ItemPointer tid, Snapshot snapshot)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[2];
	bool		deleted;

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowstate, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	ScanKeyInit(&key[1], 2, BTEqualStrategyNumber, F_TIDEQ,
				ItemPointerGetDatum(tid));
	scan = systable_beginscan(meta, ids.rowstate_del_idx, true,
							  MvincUnlockedSnapshot(snapshot), 2, key);
	deleted = next_deletion(scan, snapshot) != NULL;
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	return deleted;
}

typedef struct DeletedEntry
{
	ItemPointerData tid;
} DeletedEntry;

/* The set of rows deleted under an MVCC snapshot (for scans) */
HTAB *
ColfileDeletedSet(Oid relfilenode, Snapshot snapshot)
{
	ColfileMetaRels ids;
	Relation	meta;
	SysScanDesc scan;
	ScanKeyData key[1];
	HeapTuple	tup;
	HASHCTL		ctl;
	HTAB	   *set;

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(DeletedEntry);
	ctl.hcxt = CurrentMemoryContext;
	set = hash_create("colfile deleted rows", 256, &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	ColfileMetaRelIds(&ids);
	meta = table_open(ids.rowstate, AccessShareLock);
	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relfilenode));
	scan = systable_beginscan(meta, ids.rowstate_del_idx, true,
							  MvincUnlockedSnapshot(snapshot), 1, key);
	while ((tup = next_deletion(scan, snapshot)) != NULL)
	{
		bool		isnull;
		ItemPointer t = DatumGetItemPointer(heap_getattr(tup, 2, RelationGetDescr(meta), &isnull));

		(void) hash_search(set, t, HASH_ENTER, NULL);
	}
	systable_endscan(scan);
	table_close(meta, AccessShareLock);
	return set;
}

/* Membership test for ColfileDeletedSet */
bool
ColfileDeletedSetContains(HTAB *set, ItemPointer tid)
{
	ItemPointerData key = *tid;

	return hash_search(set, &key, HASH_FIND, NULL) != NULL;
}
