/*-------------------------------------------------------------------------
 * mv_hybrid.c
 *	  The delta side of the hybrid read of an aggregate view.
 *
 * When the changes a reader's snapshot sees past the view's checkpoint are
 * inserts, the view's rows are the storage merged per group with the
 * append table's state rows and with the states of those inserts (a view
 * without GROUP BY: its one row merged with the inserts' states): far
 * cheaper than the defining query when the delta is small.  When they are
 * updates and deletes too, the groups those touch are replaced: their
 * stored states with the delta applied (retraction), or, where an
 * aggregate cannot retract, the groups as the source has them.  The read
 * path decides it (mv_read.c: 'hybrid'); the read's plan then calls
 * mvinc._delta_states(view) and mvinc._delta_replaced(view), whose rows
 * are computed here once per decision (kept in mv_read.c's memo), or,
 * when the reader's query keeps some group keys only, with those key
 * conditions (mv_keyfilter.c), for those groups alone.
 *
 * Snapshots, as for the decision: the checkpoint under the statement's
 * snapshot, the change log under the latest one (capture writes rows of
 * transactions the statement sees after its snapshot was taken; the
 * decision waited for capture first), the retention bound in that same
 * latest snapshot.  The decision keeps its latest snapshot, in which the
 * delta is computed whenever the read asks (a statement in parallel mode
 * may take no new snapshot): retention had not begun past the checkpoint
 * in it, and the statement's older snapshot keeps the rows it sees from
 * being pruned.  Computed in a snapshot of its own (a direct call), the
 * delta is checked again: when a refresh moved the checkpoint and
 * retention began since the decision, the read fails to serialize
 * instead of answering without them.  Replacing groups needs the change
 * log (latest snapshot) and the storage and source (the statement's) in
 * one query: the change-log rows are fetched first and passed to it as an
 * ephemeral named relation.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/queryenvironment.h"

#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_delta_states);
PG_FUNCTION_INFO_V1(mvinc_delta_replaced);

/*
 * Can reads of the view take the hybrid path?  An aggregate view (with
 * GROUP BY or not) merges the inserts' states; a projection view replaces
 * the rows the delta touched by their last images.
 */
bool
MvHybridCapable(MvDef *def)
{
	return def->kind == MV_KIND_AGGREGATE || def->kind == MV_KIND_PROJECTION;
}

/*
 * Can reads of the view take the hybrid path when the delta has updates
 * or deletes?  With GROUP BY, the groups they touch are replaced (by
 * retraction, or from the source); without, the one row is, and only
 * retraction makes that cheaper than the query.
 */
bool
MvHybridCanReplace(MvDef *def)
{
	if (def->kind == MV_KIND_PROJECTION)
		return true;
	return MvHybridCapable(def) && (def->has_group_by || def->retractable);
}

/*
 * May userid see what a hybrid read's delta functions return?
 * An aggregate view's delta is its own groups (the caller may read the
 * view: checked apart); a projection view's also holds the source's row
 * identities, of rows the view's WHERE may hide, so the caller must be
 * able to read those columns of the source.
 */
bool
MvHybridReaderMaySee(MvDef *def, Oid userid)
{
	ListCell   *lc;

	if (def->kind != MV_KIND_PROJECTION ||
		pg_class_aclcheck(def->sourceid, userid, ACL_SELECT) == ACLCHECK_OK)
		return true;
	/* (column rights add to the table's: no ACL on a column is no right) */
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_ROWID &&
			pg_attribute_aclcheck(def->sourceid, col->srcattnum, userid,
								  ACL_SELECT) != ACLCHECK_OK)
			return false;
	}
	return true;
}

/*
 * Most change-log rows a hybrid read takes on: past about an eighth of the
 * source's rows the defining query is cheaper (a delta row costs several
 * times a source row: fetched, copied, merged or retracted per group).
 * 0 (no bound) while the source was never analyzed.
 */
int64
MvHybridMaxDeltaRows(Oid sourceid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(sourceid));
	float4		reltuples;

	if (!HeapTupleIsValid(tup))
		return 0;
	reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return reltuples > 0 ? Max((int64) (reltuples / 8), 1000) : 0;
}

/* Name under which the delta's change-log rows reach the replacing query */
#define DELTA_ENR "mvinc_hybrid_delta"

/* SELECT of the state rows of the delta's inserts alone (alias s) */
static char *
inserts_sql(MvDef *def, const char *changelog, const char *cond)
{
	return MvDeltaStatesSql(def, psprintf("%s s", changelog),
							psprintf("%s AND s._mvinc_op = 'i'", cond));
}

/*
 * SELECT of the state rows of a delta with updates or deletes, from its
 * change-log rows (the ephemeral relation DELTA_ENR, rows that pass the
 * view's WHERE), each tagged in a first column _mvinc_part: 'i' for the
 * inserts' states of groups that nothing else touched (merged on read),
 * 'r' for groups as they are after the delta (replacing what storage and
 * append table hold for them; a count of 0 when the group is gone).
 *
 * When every aggregate retracts, every group the delta touches is
 * replaced: its stored state (storage merged with the append table, FROM
 * item base) with the delta applied (agg_apply: old images retract, new
 * ones add).  Where a retraction is refused, and for every group an update
 * or delete touched when some aggregate cannot retract (min, max), the
 * group comes from the source, with a marker row of count 0 in case the
 * source no longer has it.  Read in the statement's snapshot, as the
 * storage.
 */
static char *
replacing_sql(MvDef *def, const char *base)
{
	const char *source = psprintf("ONLY %s s", MvSourceName(def->sourceid));
	StringInfoData sql;
	StringInfoData marker;
	ListCell   *lc;
	char	   *refused;

	initStringInfo(&sql);
	if (def->retractable)
	{
		appendStringInfo(&sql, "WITH a AS MATERIALIZED (%s) ",
						 MvRetractStatesSql(def, base, DELTA_ENR " d", "a", &refused));
		/* without GROUP BY the one row, from the source when refused */
		if (!def->has_group_by)
		{
			appendStringInfo(&sql, "SELECT 'r'::pg_catalog.\"char\", %s FROM a WHERE NOT (%s) "
							 "UNION ALL SELECT 'r', x.* FROM (%s) x WHERE EXISTS (SELECT FROM a WHERE %s)",
							 MvColumnListSql(def, -1, "a."), refused,
							 MvDeltaStatesSql(def, source, NULL), refused);
			return sql.data;
		}
		appendStringInfo(&sql, "SELECT 'r'::pg_catalog.\"char\", %s FROM a WHERE NOT (%s) UNION ALL ",
						 MvColumnListSql(def, -1, "a."), refused);
	}
	else
	{
		/* a: the group keys an update or delete touched, all refused */
		Assert(def->has_group_by);
		appendStringInfo(&sql, "WITH a AS MATERIALIZED (SELECT DISTINCT %s FROM " DELTA_ENR " s "
						 "WHERE s._mvinc_op <> 'i') ",
						 MvGroupExprsSql(def, "s", true));
		refused = "true";
		/* the inserts of untouched groups */
		appendStringInfo(&sql, "SELECT 'i'::pg_catalog.\"char\", x.* FROM (%s) x UNION ALL ",
						 inserts_sql(def, DELTA_ENR,
									 psprintf(" AND NOT EXISTS (SELECT FROM a WHERE %s)",
											  MvKeyEqSql(def, "s", true, "a"))));
	}
	/* groups to recompute: a marker row (count 0) in case they are gone... */
	initStringInfo(&marker);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_GROUP)
			appendStringInfo(&marker, ", a.%s", quote_identifier(col->physname));
		else if (col->role == MV_COL_AGG)
			appendStringInfo(&marker, ", NULL::%s", MvStorageColumnType(col));
		else
			appendStringInfoString(&marker, ", 0::pg_catalog.int8");
	}
	appendStringInfo(&sql, "SELECT 'r'%s FROM a WHERE %s UNION ALL ", marker.data, refused);
	/* ...and their rows as the source has them */
	appendStringInfo(&sql, "SELECT 'r', x.* FROM (%s) x",
					 MvDeltaStatesSql(def, source,
									  psprintf(" AND EXISTS (SELECT FROM a WHERE (%s) AND %s)",
											   refused, MvKeyEqSql(def, "s", true, "a"))));
	return sql.data;
}

/*
 * Run the SELECT sql, its parameters the filter's arrays (if any), under
 * snapshot.  Inside an SPI connection; the rows are in SPI_tuptable.
 */
static void
run_delta_sql(const char *sql, MvDeltaFilter *filter, Snapshot snapshot)
{
	SPIPlanPtr	plan = SPI_prepare(sql, filter ? filter->nconds : 0,
								   filter ? filter->arraytype : NULL);

	if (plan == NULL ||
		SPI_execute_snapshot(plan, filter ? filter->values : NULL, NULL, snapshot,
							 InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the delta of a materialized view");
}

/* The tuple descriptor of desc without its first column */
static TupleDesc
without_first_column(TupleDesc desc)
{
	TupleDesc	out = CreateTemplateTupleDesc(desc->natts - 1);

	for (int i = 1; i < desc->natts; i++)
		TupleDescCopyEntry(out, i, desc, i + 1);
	return out;
}

/*
 * Make store's rows (desc, nrows of them) readable by name in the SPI
 * connection's later queries, as an ephemeral named relation
 */
void
MvRegisterRows(const char *name, TupleDesc desc, Tuplestorestate *store, uint64 nrows)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));

	enr->md.name = pstrdup(name);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = CreateTupleDescCopy(desc);
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = nrows;
	enr->reldata = store;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "could not register the rows of \"%s\"", name);
}

/*
 * Run the replacing query (replacing_sql) over the delta's change-log rows,
 * fetched by query fetch (its parameters the filter's arrays) under
 * snapshot latest; the rows go into *rows,
 * copied into context outer.  Runs inside an SPI connection.
 */
static bool
compute_replacing(MvDef *def, MvCatalog *cat, const char *fetch, MvDeltaFilter *filter,
				  Snapshot latest, MvDeltaRows *rows, MemoryContext outer)
{
	Tuplestorestate *store;
	char	   *base;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;

	run_delta_sql(fetch, filter, latest);
	/* every change outside the view's WHERE: nothing to replace */
	if (SPI_processed == 0)
		return false;
	store = tuplestore_begin_heap(false, false, work_mem);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(store, SPI_tuptable->vals[i]);
	MvRegisterRows(DELTA_ENR, SPI_tuptable->tupdesc, store, SPI_processed);

	/*
	 * The stored states: the storage, merged with appended ones if any,
	 * of the groups in the delta alone (a join with the merge would merge
	 * every group first)
	 */
	base = psprintf("mvinc.%s", quote_identifier(get_rel_name(cat->storage_oid)));
	if (OidIsValid(cat->append_oid) && cat->append_rows > 0)
	{
		char	   *in_delta = "(SELECT * FROM mvinc.%s t WHERE EXISTS "
			"(SELECT FROM " DELTA_ENR " d WHERE %s))";

		base = psprintf("(%s)",
						MvMergedSql(def, psprintf(in_delta, quote_identifier(get_rel_name(cat->storage_oid)),
												  MvKeyEqSql(def, "d", true, "t")),
									psprintf(in_delta, quote_identifier(get_rel_name(cat->append_oid)),
											 MvKeyEqSql(def, "d", true, "t")),
									false));
	}
	run_delta_sql(replacing_sql(def, base), NULL, GetActiveSnapshot());

	desc = SPI_tuptable->tupdesc;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	{
		MemoryContext spicxt = MemoryContextSwitchTo(outer);

		rows->desc = without_first_column(desc);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup;

			heap_deform_tuple(SPI_tuptable->vals[i], desc, values, nulls);
			tup = heap_form_tuple(rows->desc, values + 1, nulls + 1);
			if (DatumGetChar(values[0]) == 'i')
				rows->tuples = lappend(rows->tuples, tup);
			else
				rows->replaced = lappend(rows->replaced, tup);
		}
		MemoryContextSwitchTo(spicxt);
	}
	tuplestore_end(store);
	return true;
}

/*
 * The rows of query sql (its parameters the filter's arrays) run under
 * snapshot, copied into context outer (their descriptor into rows->desc).
 * Runs inside an SPI connection.
 */
static List *
fetch_rows(const char *sql, MvDeltaFilter *filter, Snapshot snapshot, MvDeltaRows *rows,
		   MemoryContext outer)
{
	MemoryContext spicxt;
	List	   *tuples = NIL;

	run_delta_sql(sql, filter, snapshot);
	spicxt = MemoryContextSwitchTo(outer);
	rows->desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuples = lappend(tuples, heap_copytuple(SPI_tuptable->vals[i]));
	MemoryContextSwitchTo(spicxt);
	return tuples;
}

/*
 * The state rows of the visible delta past the checkpoint, copied into the
 * current memory context: with changes (the delta has updates or deletes,
 * MvHybridCanReplace), the inserts of untouched groups and the replaced
 * groups; else the inserts' states alone, straight from the change log.
 * With a filter (mv_keyfilter.c), of the groups whose keys pass it alone.
 * The change log is read in the decision's latest snapshot (mv_read.c's
 * keep_snapshot), or in a new one when latest is NULL.
 */
MvDeltaRows *
MvComputeDeltaRows(Oid viewid, bool changes, MvDeltaFilter *filter, Snapshot latest)
{
	MemoryContext outer = CurrentMemoryContext;
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	MvDeltaRows *rows = palloc0(sizeof(MvDeltaRows));
	MvDef	   *def;
	Oid			changelog;
	char	   *query_snap;
	char	   *cond;
	bool		own_latest = latest == NULL;

	if (cat == NULL || !OidIsValid(cat->storage_oid) || cat->checkpoint_snapshot == NULL)
		elog(ERROR, "materialized view %u has no checkpoint for a hybrid read", viewid);
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog))
		elog(ERROR, "the source of materialized view %u is not tracked", viewid);
	def = MvDefForView(viewid);
	if (changes && !MvHybridCanReplace(def))
		elog(ERROR, "materialized view %u cannot replace groups on read", viewid);
	Assert(MvHybridCapable(def));
	/* groups may come from the source: with the owner's rights, as a refresh */
	if (changes)
		MvCheckOwnerCanRead(viewid);
	query_snap = MvSnapshotText(GetActiveSnapshot(), false);
	if (filter)
		MvDeltaFilterCheck(def, filter, get_rel_name(viewid));
	/* (the key conditions first: they are cheaper than the visibility tests) */
	cond = psprintf("%s AND s._mvinc_lsn > '%X/%X' "
					"AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
					"AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
					MvDeltaFilterSql(def, filter, "s", 1),
					LSN_FORMAT_ARGS(cat->checkpoint_lsn), query_snap,
					cat->checkpoint_snapshot);

	if (own_latest)
		latest = RegisterSnapshot(GetLatestSnapshot());
	MvSpiConnect();

	/*
	 * The planner takes the change-log rows that pass the visibility tests
	 * (functions: a third each) for a handful, and sorts them to group them;
	 * hashing them took 30 ms where sorting took 56 (50k rows)
	 */
	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	rows->projection = def->kind == MV_KIND_PROJECTION;
	if (rows->projection)
	{
		/* each touched row as the delta leaves it: all from the change log */
		rows->replaced = fetch_rows(MvLastImagesSql(def, MvSourceName(changelog),
													psprintf("true%s", cond)),
									NULL, latest, rows, outer);
	}
	else if (!changes ||
			 !compute_replacing(def, cat,
								psprintf("SELECT * FROM %s s WHERE %s%s", MvSourceName(changelog),
										 MvWhereSql(def, "s"), cond),
								filter, latest, rows, outer))
	{
		rows->tuples = fetch_rows(inserts_sql(def, MvSourceName(changelog), cond),
								  filter, latest, rows, outer);
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
	if (own_latest)
		UnregisterSnapshot(latest);
	return rows;
}

/* Put delta rows into the function's result, in the read's column types */
static void
put_rows(MvDeltaRows *rows, List *tuples, ReturnSetInfo *rsinfo, Oid viewid)
{
	TupleDesc	out = rsinfo->setDesc;
	Datum	   *values = palloc(sizeof(Datum) * Max(out->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(out->natts, 1));
	ListCell   *lc;

	bool		same = rows->desc->natts == out->natts;
	int			i;

	/*
	 * The values go in as they are: the caller's column list must be theirs
	 * (a domain's values are its base type's: MvStorageColumnTypeNullable)
	 */
	for (i = 0; same && i < out->natts; i++)
	{
		Oid			have = TupleDescAttr(rows->desc, i)->atttypid;
		Oid			want = TupleDescAttr(out, i)->atttypid;

		same = have == want || have == getBaseType(want);
	}
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the column definition list does not match the delta of materialized view \"%s\"",
						get_rel_name(viewid)),
				 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));
	foreach(lc, tuples)
	{
		heap_deform_tuple(lfirst(lc), rows->desc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, out, values, nulls);
	}
}

/*
 * The rows of one side of the delta of the view (the function's first
 * argument) for the statement's snapshot.  Called by the redirected read
 * with the reader's rights, so PUBLIC may call it; it answers only for
 * views the reader may read, and only with state rows of the view's own
 * groups.
 */
static Datum
delta_rows_srf(FunctionCallInfo fcinfo, bool replaced)
{
	Oid			viewid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcxt;
	MvDeltaRows *rows;
	MvCatalog  *cat;
	MvDeltaFilter *filter = NULL;
	Oid			reader = MvRunningReadUser(viewid);

	/*
	 * The delta's state rows are the whole view's: only for a caller who
	 * may read the view itself (a reader through a plain view reads the
	 * defining query instead, see compute_branch).  A read node's arm asks
	 * for the user its node decided for, who may be another than the one
	 * running it (a cursor fetched after SET ROLE).
	 */
	if (!OidIsValid(reader))
		reader = GetUserId();
	if (pg_class_aclcheck(viewid, reader, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for materialized view %s",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?")));
	cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	if (cat != NULL && cat->kind == MV_KIND_PROJECTION &&
		!MvHybridReaderMaySee(MvDefForView(viewid), reader))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for the row identity of the source of materialized view %s",
						get_rel_name(viewid))));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (PG_NARGS() > 1)
		filter = MvDeltaFilterFromArgs(fcinfo, get_rel_name(viewid));
	rows = MvHybridDeltaRows(viewid, GetActiveSnapshot(), filter);
	put_rows(rows, replaced ? rows->replaced : rows->tuples, rsinfo, viewid);
	MemoryContextSwitchTo(oldcxt);
	return (Datum) 0;
}

/*
 * mvinc._delta_states(view oid): the state rows (storage columns) of the
 * inserts past the view's checkpoint that the statement's snapshot sees,
 * in groups that no update or delete touched.
 */
Datum
mvinc_delta_states(PG_FUNCTION_ARGS)
{
	return delta_rows_srf(fcinfo, false);
}

/*
 * mvinc._delta_replaced(view oid): the groups that updates or deletes past
 * the checkpoint touched, as the statement's snapshot sees them (state
 * rows; a count of 0 for a group now empty).
 */
Datum
mvinc_delta_replaced(PG_FUNCTION_ARGS)
{
	return delta_rows_srf(fcinfo, true);
}
