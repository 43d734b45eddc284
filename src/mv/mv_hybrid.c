/*-------------------------------------------------------------------------
 * mv_hybrid.c
 *	  The delta side of the hybrid read of an aggregate view.
 *
 * When the only changes a reader's snapshot sees past the view's
 * checkpoint are inserts, the view's rows are the storage merged per group
 * with the append table's state rows and with the states of those
 * inserts (a view without GROUP BY: its one row merged with the inserts'
 * states): far cheaper than the defining query when the delta is small.
 * The read path decides it (mv_read.c: 'hybrid'); the read's plan then
 * calls mvinc._delta_states(view), which computes the delta's state rows
 * here, with the view's WHERE and GROUP BY, as an append refresh would.
 * A statement that runs in parallel mode cannot take the latest snapshot
 * once it is in that mode: the executor-start hook computes its delta
 * ahead and keeps it with the decision (mv_read.c's memo).
 *
 * Snapshots, as for the decision: the checkpoint under the statement's
 * snapshot, the change log under the latest one (capture writes rows of
 * transactions the statement sees after its snapshot was taken; the
 * decision waited for capture first), the retention bound in that same
 * latest snapshot. Retention cannot remove rows past the checkpoint that
 * this read sees while the read runs unless a refresh moved the
 * checkpoint after the decision; then the read fails to serialize
 * instead of answering without them.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_delta_states);

/*
 * Can reads of the view take the hybrid path?  An aggregate view (with
 * GROUP BY or not) merges the inserts' states; a projection view reads
 * live.  compute_branch() asks the same of the catalog's kind.
 */
bool
MvHybridCapable(MvDef *def)
{
	return def->kind == MV_KIND_AGGREGATE;
}

/*
 * The state rows of the visible inserts past the checkpoint, copied into
 * the current memory context.
 */
MvDeltaRows *
MvComputeDeltaRows(Oid viewid)
{
	MemoryContext outer = CurrentMemoryContext;
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	MvDeltaRows *rows = palloc0(sizeof(MvDeltaRows));
	MvDef	   *def;
	Oid			changelog;
	char	   *query_snap;
	char	   *sql;
	Snapshot	latest;
	SPIPlanPtr	plan;

	if (cat == NULL || !OidIsValid(cat->storage_oid) || cat->checkpoint_snapshot == NULL)
		elog(ERROR, "materialized view %u has no checkpoint for a hybrid read", viewid);
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog))
		elog(ERROR, "the source of materialized view %u is not tracked", viewid);
	def = MvDefForView(viewid);
	query_snap = MvSnapshotText(GetActiveSnapshot(), false);
	sql = MvDeltaStatesSql(def, psprintf("%s s", MvSourceName(changelog)),
						   psprintf(" AND s._mvinc_lsn > '%X/%X' "
									"AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
									"AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
									"AND s._mvinc_op = 'i'",
									LSN_FORMAT_ARGS(cat->checkpoint_lsn), query_snap,
									cat->checkpoint_snapshot));

	latest = RegisterSnapshot(GetLatestSnapshot());
	MvSpiConnect();
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, NULL, NULL, latest, InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not compute the delta of materialized view %u", viewid);
	{
		MemoryContext spicxt = MemoryContextSwitchTo(outer);

		rows->desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		for (uint64 i = 0; i < SPI_processed; i++)
			rows->tuples = lappend(rows->tuples, heap_copytuple(SPI_tuptable->vals[i]));
		MemoryContextSwitchTo(spicxt);
	}
	MvSpiFinish();

	/* the rows read were all still there only if retention had not begun on them */
	if (MvRetainedFromIn(cat->sourceid, latest) > cat->checkpoint_lsn)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not read the changes of materialized view \"%s\"",
						get_rel_name(viewid)),
				 errdetail("A refresh and change-log retention passed the view's checkpoint that this read sees while it read them."),
				 errhint("Retry the statement.")));
	UnregisterSnapshot(latest);
	return rows;
}

/* Put delta rows into the function's result, in the read's column types */
static void
put_rows(MvDeltaRows *rows, ReturnSetInfo *rsinfo, Oid viewid)
{
	TupleDesc	out = rsinfo->setDesc;
	Datum	   *values = palloc(sizeof(Datum) * Max(out->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(out->natts, 1));
	ListCell   *lc;

	bool		same = rows->desc->natts == out->natts;
	int			i;

	/* the values go in as they are: the caller's column list must be theirs */
	for (i = 0; same && i < out->natts; i++)
		same = TupleDescAttr(rows->desc, i)->atttypid == TupleDescAttr(out, i)->atttypid;
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the column definition list does not match the delta of materialized view \"%s\"",
						get_rel_name(viewid)),
				 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));
	foreach(lc, rows->tuples)
	{
		heap_deform_tuple(lfirst(lc), rows->desc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, out, values, nulls);
	}
}

/*
 * mvinc._delta_states(view oid): the state rows (storage columns) of the
 * inserts past the view's checkpoint that the statement's snapshot sees.
 * Called by the redirected read with the reader's rights, so PUBLIC may
 * call it; it answers only for views the reader may read, and only with
 * state rows of the view's own groups.
 */
Datum
mvinc_delta_states(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcxt;
	MvDeltaRows *rows;

	/*
	 * The delta's state rows are the whole view's: only for a caller who
	 * may read the view itself (a reader through a plain view reads the
	 * defining query instead, see compute_branch).
	 */
	if (pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for materialized view %s",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?")));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	/* computed ahead by the executor-start hook for a parallel statement? */
	rows = MvMemoDeltaRows(viewid, GetActiveSnapshot());
	if (rows == NULL)
	{
		if (IsInParallelMode())
			elog(ERROR, "the delta of materialized view %u was not computed before parallel mode",
				 viewid);
		rows = MvHybridDeltaRows(viewid, GetActiveSnapshot());
	}
	put_rows(rows, rsinfo, viewid);
	MemoryContextSwitchTo(oldcxt);
	return (Datum) 0;
}
