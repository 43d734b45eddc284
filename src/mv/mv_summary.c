/*-------------------------------------------------------------------------
 * mv_summary.c
 *	  What a refresh is about to consume: one pass over the change log's
 *	  rows between the checkpoint L and the target T, through its lsn index,
 *	  that counts the delta's inserts, update and delete old images,
 *	  truncations and key-only old images (they choose the refresh mode),
 *	  and finds the lowest lsn of a row whose transaction the refresh
 *	  snapshot S' does not see yet (it bounds the next checkpoint).  The
 *	  delta is the rows visible in S' and not in the checkpoint's S, as in
 *	  pg_visible_in_snapshot().  This was an aggregate query; every refresh
 *	  runs it, and in C it is a heap fetch and two snapshot lookups per row.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mv/mv.h"

/* The change log's index on _mvinc_lsn alone */
static Oid
lsn_index(Relation rel, AttrNumber lsnatt)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	irel = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ind = irel->rd_index;

		if (ind->indisvalid && ind->indnkeyatts >= 1 && ind->indkey.values[0] == lsnatt &&
			irel->rd_rel->relam == BTREE_AM_OID &&
			RelationGetIndexPredicate(irel) == NIL)
			found = lfirst_oid(lc);
		index_close(irel, AccessShareLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);
	return found;
}

/* Attribute number of a change-log column, which must exist */
static AttrNumber
required_attnum(Relation rel, const char *name)
{
	AttrNumber	att = get_attnum(RelationGetRelid(rel), name);

	if (att == InvalidAttrNumber)
		elog(ERROR, "change log \"%s\" has no column %s", RelationGetRelationName(rel), name);
	return att;
}

/*
 * Summarize the rows of change log changelog with from < lsn <= to, read
 * with the latest snapshot; new_snap is S' and old_snap S (pg_snapshot
 * text).
 */
void
MvSummarizeDelta(Oid changelog, XLogRecPtr from, XLogRecPtr to,
				 const char *new_snap, const char *old_snap, MvDeltaSummary *sum)
{
	Relation	rel = table_open(changelog, AccessShareLock);
	AttrNumber	lsnatt = required_attnum(rel, "_mvinc_lsn");
	AttrNumber	xidatt = required_attnum(rel, "_mvinc_xid");
	AttrNumber	opatt = required_attnum(rel, "_mvinc_op");
	AttrNumber	imageatt = required_attnum(rel, "_mvinc_image");
	Oid			indexid = lsn_index(rel, lsnatt);
	Datum		snew = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(new_snap));
	Datum		sold = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(old_snap));
	Relation	irel;
	Snapshot	snap;
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;

	if (!OidIsValid(indexid))
		elog(ERROR, "change log \"%s\" has no index on _mvinc_lsn", RelationGetRelationName(rel));
	memset(sum, 0, sizeof(MvDeltaSummary));
	irel = index_open(indexid, AccessShareLock);
	ScanKeyInit(&keys[0], 1, BTGreaterStrategyNumber, F_PG_LSN_GT, LSNGetDatum(from));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_PG_LSN_LE, LSNGetDatum(to));
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = index_beginscan(rel, irel, snap, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	slot = table_slot_create(rel, NULL);

	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		xid = slot_getattr(slot, xidatt, &isnull);
		char		op;
		char		image;

		CHECK_FOR_INTERRUPTS();
		if (!DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, snew)))
		{
			XLogRecPtr	lsn = DatumGetLSN(slot_getattr(slot, lsnatt, &isnull));

			if (!sum->has_invisible || lsn < sum->min_invisible)
				sum->min_invisible = lsn;
			sum->has_invisible = true;
			continue;
		}
		/* consumed by an earlier refresh */
		if (DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, sold)))
			continue;
		op = DatumGetChar(slot_getattr(slot, opatt, &isnull));
		image = DatumGetChar(slot_getattr(slot, imageatt, &isnull));
		if (op == 'i')
			sum->inserts++;
		else if ((op == 'u' || op == 'd') && image != 'n')
			sum->others++;
		else if (op == 't')
			sum->truncates++;
		if (image == 'k')
			sum->keyonly++;
	}

	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	UnregisterSnapshot(snap);
	index_close(irel, AccessShareLock);
	table_close(rel, AccessShareLock);
	pfree(DatumGetPointer(snew));
	pfree(DatumGetPointer(sold));
}

/*
 * What does the change log hold past from (lsn > from) of the transactions
 * that the snapshot query_snap sees and the checkpoint's old_snap does not
 * (both pg_snapshot text)? Read with snapshot latest. The read path's
 * question "is the storage the answer, or the storage and the inserts of
 * the delta?", asked without SPI. Without want_kind it stops at the first
 * such row (MV_DELTA_OTHER then means "some"); a fresh view usually has
 * none after its checkpoint.
 */
MvDeltaKind
MvDeltaVisible(Oid changelog, XLogRecPtr from, const char *query_snap,
			   const char *old_snap, Snapshot latest, bool want_kind)
{
	Relation	rel = table_open(changelog, AccessShareLock);
	AttrNumber	lsnatt = required_attnum(rel, "_mvinc_lsn");
	AttrNumber	xidatt = required_attnum(rel, "_mvinc_xid");
	AttrNumber	opatt = required_attnum(rel, "_mvinc_op");
	Oid			indexid = lsn_index(rel, lsnatt);
	Datum		squery = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(query_snap));
	Datum		sold = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(old_snap));
	Relation	irel;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	MvDeltaKind kind = MV_DELTA_NONE;

	if (!OidIsValid(indexid))
		elog(ERROR, "change log \"%s\" has no index on _mvinc_lsn", RelationGetRelationName(rel));
	irel = index_open(indexid, AccessShareLock);
	ScanKeyInit(&key, 1, BTGreaterStrategyNumber, F_PG_LSN_GT, LSNGetDatum(from));
	scan = index_beginscan(rel, irel, latest, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	slot = table_slot_create(rel, NULL);
	while (kind != MV_DELTA_OTHER && index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		xid = slot_getattr(slot, xidatt, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (!DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, squery)) ||
			DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, sold)))
			continue;
		if (want_kind && DatumGetChar(slot_getattr(slot, opatt, &isnull)) == 'i')
			kind = MV_DELTA_INSERTS;
		else
			kind = MV_DELTA_OTHER;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	index_close(irel, AccessShareLock);
	table_close(rel, AccessShareLock);
	pfree(DatumGetPointer(squery));
	pfree(DatumGetPointer(sold));
	return kind;
}
