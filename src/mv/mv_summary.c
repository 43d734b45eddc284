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
#include "utils/xid8.h"

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
 * A scan of a change log's rows with from < lsn (<= to, when to is valid)
 * through its lsn index, under snapshot, that returns the rows whose
 * transaction new_snap sees and old_snap does not (pg_snapshot text),
 * as pg_visible_in_snapshot() decides; rows new_snap does not see are
 * reported apart (their lowest lsn bounds the next checkpoint).
 */
typedef struct DeltaScan
{
	Relation	rel;
	Relation	irel;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	AttrNumber	lsnatt;
	AttrNumber	xidatt;
	AttrNumber	opatt;
	AttrNumber	imageatt;
	ScanKeyData keys[2];
	MvDeltaJudge judge;
} DeltaScan;

/* Judge rows by new_snap and old_snap (pg_snapshot text) */
void
MvDeltaJudgeInit(MvDeltaJudge *judge, const char *new_snap, const char *old_snap)
{
	judge->snew = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(new_snap));
	judge->sold = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(old_snap));
	judge->last_xid = InvalidFullTransactionId;
	judge->last_new = judge->last_old = false;
}

void
MvDeltaJudgeEnd(MvDeltaJudge *judge)
{
	pfree(DatumGetPointer(judge->snew));
	pfree(DatumGetPointer(judge->sold));
}

/* Is a row of transaction xid (xid8) in the delta, consumed, or unseen? */
MvDeltaRow
MvDeltaJudgeRow(MvDeltaJudge *judge, Datum xid)
{
	if (!FullTransactionIdEquals(DatumGetFullTransactionId(xid), judge->last_xid))
	{
		judge->last_xid = DatumGetFullTransactionId(xid);
		judge->last_new = DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, judge->snew));
		judge->last_old = judge->last_new &&
			DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, xid, judge->sold));
	}
	if (!judge->last_new)
		return MV_DELTA_ROW_UNSEEN;
	/* consumed by an earlier refresh */
	if (judge->last_old)
		return MV_DELTA_ROW_CONSUMED;
	return MV_DELTA_ROW_DELTA;
}

/* Count a delta row of op and image into sum */
void
MvDeltaSummaryAdd(MvDeltaSummary *sum, char op, char image)
{
	if (op == 'i')
		sum->inserts++;
	else if ((op == 'u' || op == 'd') && image != 'n')
		sum->others++;
	else if (op == 't')
		sum->truncates++;
	if (image == 'k')
		sum->keyonly++;
}

/* A row new_snap does not see, at lsn: the lowest bounds the next checkpoint */
void
MvDeltaSummaryUnseen(MvDeltaSummary *sum, XLogRecPtr lsn)
{
	if (!sum->has_invisible || lsn < sum->min_invisible)
		sum->min_invisible = lsn;
	sum->has_invisible = true;
}

static void
delta_scan_begin(DeltaScan *ds, Oid changelog, XLogRecPtr from, XLogRecPtr to,
				 const char *new_snap, const char *old_snap, Snapshot snapshot)
{
	Oid			indexid;
	int			nkeys = 1;

	ds->rel = table_open(changelog, AccessShareLock);
	ds->lsnatt = required_attnum(ds->rel, "_mvinc_lsn");
	ds->xidatt = required_attnum(ds->rel, "_mvinc_xid");
	ds->opatt = required_attnum(ds->rel, "_mvinc_op");
	ds->imageatt = required_attnum(ds->rel, "_mvinc_image");
	indexid = lsn_index(ds->rel, ds->lsnatt);
	if (!OidIsValid(indexid))
		elog(ERROR, "change log \"%s\" has no index on _mvinc_lsn",
			 RelationGetRelationName(ds->rel));
	MvDeltaJudgeInit(&ds->judge, new_snap, old_snap);
	ds->irel = index_open(indexid, AccessShareLock);
	ScanKeyInit(&ds->keys[0], 1, BTGreaterStrategyNumber, F_PG_LSN_GT, LSNGetDatum(from));
	if (!XLogRecPtrIsInvalid(to))
		ScanKeyInit(&ds->keys[nkeys++], 1, BTLessEqualStrategyNumber, F_PG_LSN_LE, LSNGetDatum(to));
	ds->scan = index_beginscan(ds->rel, ds->irel, snapshot, nkeys, 0);
	index_rescan(ds->scan, ds->keys, nkeys, NULL, 0);
	ds->slot = table_slot_create(ds->rel, NULL);
}

/*
 * Next row of the delta (in ds->slot): true; false at the end. A row
 * that new_snap does not see sets *invisible_lsn (when given) and is
 * skipped.
 */
static bool
delta_scan_next(DeltaScan *ds, XLogRecPtr *invisible_lsn)
{
	while (index_getnext_slot(ds->scan, ForwardScanDirection, ds->slot))
	{
		bool		isnull;
		MvDeltaRow row = MvDeltaJudgeRow(&ds->judge, slot_getattr(ds->slot, ds->xidatt, &isnull));

		CHECK_FOR_INTERRUPTS();
		if (row == MV_DELTA_ROW_UNSEEN)
		{
			XLogRecPtr	lsn = DatumGetLSN(slot_getattr(ds->slot, ds->lsnatt, &isnull));

			if (invisible_lsn && (XLogRecPtrIsInvalid(*invisible_lsn) || lsn < *invisible_lsn))
				*invisible_lsn = lsn;
			continue;
		}
		if (row == MV_DELTA_ROW_CONSUMED)
			continue;
		return true;
	}
	return false;
}

static void
delta_scan_end(DeltaScan *ds)
{
	ExecDropSingleTupleTableSlot(ds->slot);
	index_endscan(ds->scan);
	index_close(ds->irel, AccessShareLock);
	table_close(ds->rel, AccessShareLock);
	MvDeltaJudgeEnd(&ds->judge);
}

/* The op and image of the delta scan's current row */
static char
delta_char(DeltaScan *ds, AttrNumber att)
{
	bool		isnull;

	return DatumGetChar(slot_getattr(ds->slot, att, &isnull));
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
	Snapshot	snap = RegisterSnapshot(GetLatestSnapshot());
	XLogRecPtr	invisible = InvalidXLogRecPtr;
	DeltaScan	ds;

	Assert(!XLogRecPtrIsInvalid(to));
	memset(sum, 0, sizeof(MvDeltaSummary));
	delta_scan_begin(&ds, changelog, from, to, new_snap, old_snap, snap);
	while (delta_scan_next(&ds, &invisible))
		MvDeltaSummaryAdd(sum, delta_char(&ds, ds.opatt), delta_char(&ds, ds.imageatt));
	delta_scan_end(&ds);
	UnregisterSnapshot(snap);
	sum->has_invisible = !XLogRecPtrIsInvalid(invisible);
	sum->min_invisible = invisible;
}

/* Most transactions a reader's delta is known by (mv_deltacache.c) */
#define MAX_VISIBLE_XIDS 4096

/*
 * Note one more row of transaction xid in visible (rows of one are
 * adjacent); past MAX_VISIBLE_XIDS transactions the list is dropped
 * (xids NULL, nxids past the bound): the delta is known by none.
 */
static void
note_visible_xid(MvVisibleXids *visible, int *space, FullTransactionId *last,
				 FullTransactionId xid)
{
	visible->rows++;
	if (visible->nxids > MAX_VISIBLE_XIDS ||
		(visible->nxids > 0 && FullTransactionIdEquals(xid, *last)))
		return;
	*last = xid;
	if (visible->nxids == MAX_VISIBLE_XIDS)
	{
		pfree(visible->xids);
		visible->xids = NULL;
		visible->nxids++;
		return;
	}
	if (visible->nxids == *space)
	{
		*space = Max(*space * 2, 16);
		visible->xids = visible->xids ?
			repalloc(visible->xids, *space * sizeof(FullTransactionId)) :
			palloc(*space * sizeof(FullTransactionId));
	}
	visible->xids[visible->nxids++] = xid;
}

static int
cmp_fxid(const void *a, const void *b)
{
	uint64		x = U64FromFullTransactionId(*(const FullTransactionId *) a);
	uint64		y = U64FromFullTransactionId(*(const FullTransactionId *) b);

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Sorted and distinct (rows of transactions that interleave come apart) */
static void
sort_visible_xids(MvVisibleXids *visible)
{
	int			n = 0;

	qsort(visible->xids, visible->nxids, sizeof(FullTransactionId), cmp_fxid);
	for (int i = 0; i < visible->nxids; i++)
		if (n == 0 || !FullTransactionIdEquals(visible->xids[i], visible->xids[n - 1]))
			visible->xids[n++] = visible->xids[i];
	visible->nxids = n;
}

/*
 * What does the change log hold past from (lsn > from) of the transactions
 * that the snapshot query_snap sees and the checkpoint's old_snap does not
 * (both pg_snapshot text)? Read with snapshot latest. The read path's
 * question "is the storage the answer, or the storage and the delta?",
 * asked without SPI. Without want_kind it stops at the first such row
 * (MV_DELTA_OTHER then means "some"); a fresh view usually has none after
 * its checkpoint.  With it: only inserts; updates and deletes too whose
 * old rows are whole; some of them with old rows of their key alone; or a
 * truncation too, or more than max_rows rows when max_rows > 0 (the kinds
 * in that order).
 */
MvDeltaKind
MvDeltaVisible(Oid changelog, XLogRecPtr from, const char *query_snap,
			   const char *old_snap, Snapshot latest, bool want_kind, int64 max_rows,
			   MvVisibleXids *visible)
{
	MvDeltaKind kind = MV_DELTA_NONE;
	DeltaScan	ds;
	int64		rows = 0;
	int			space = 0;
	FullTransactionId last = InvalidFullTransactionId;

	if (visible)
		memset(visible, 0, sizeof(MvVisibleXids));
	delta_scan_begin(&ds, changelog, from, InvalidXLogRecPtr, query_snap, old_snap, latest);
	while (kind != MV_DELTA_OTHER && delta_scan_next(&ds, NULL))
	{
		char		op = delta_char(&ds, ds.opatt);
		MvDeltaKind row = MV_DELTA_INSERTS;

		if (!want_kind || op == 't' || (max_rows > 0 && ++rows > max_rows))
			row = MV_DELTA_OTHER;
		else if (delta_char(&ds, ds.imageatt) == 'k')
			row = MV_DELTA_KEYONLY;
		else if (op != 'i')
			row = MV_DELTA_CHANGES;
		kind = Max(kind, row);
		if (visible)
			note_visible_xid(visible, &space, &last, ds.judge.last_xid);
	}
	delta_scan_end(&ds);
	if (visible && visible->xids)
		sort_visible_xids(visible);
	return kind;
}
