/*-------------------------------------------------------------------------
 * mv_verify.c
 *	  mvinc.verify_view(view): checks that an incremental view holds
 *	  everything its checkpoint claims, so that a lost change shows up as a
 *	  finding instead of a view that reads "fresh" and is wrong (issue 19).
 *
 *	  The invariant checked: every change of the source that committed
 *	  after the view's checkpoint snapshot S and before the captured
 *	  position is either applied (in the storage) or still in the change
 *	  log above the checkpoint's LSN L.  The cheap part checks what keeps
 *	  it: capture has reached the present, the view is a consumer that holds retention at or below L, retention has
 *	  not removed rows above L, no change is logged twice above L.  The
 *	  content part checks the invariant itself: in a subtransaction that is
 *	  rolled back, it refreshes the view incrementally (applying what the
 *	  change log still holds) and compares the stored contents with the
 *	  view's query under the refresh's snapshot S'.  A change that was
 *	  neither applied nor left in the change log makes them differ.
 *
 *	  With mvinc.debug_keep_change_log = on, retention deletes nothing, so
 *	  the change-log rows of a finding are still there to look at.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "access/table.h"

#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_verify_view);

/* How long the check waits for capture to reach the present */
#define VERIFY_CAPTURE_WAIT_MS	10000

/* Rows of a difference shown in the detail, per side */
#define VERIFY_SAMPLE_ROWS		5

static void
finding(ReturnSetInfo *rsinfo, const char *problem, const char *detail)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CStringGetTextDatum(problem);
	values[1] = CStringGetTextDatum(detail);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* First column of the first row of the last SPI result, as text (or NULL) */
static char *
spi_value(int col)
{
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
}

/*
 * The view's columns, each as text, of the rows of alias x with columns
 * c1..cn.  Floating-point columns are compared at float4 precision: states
 * merged in another order can differ from a recomputation in the last
 * digits (README, "Status and limits").
 */
static char *
normalized_columns(Oid viewid, int *ncols)
{
	Relation	rel = table_open(viewid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	int			n = 0;

	initStringInfo(&buf);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		n++;
		appendStringInfo(&buf, "%s(x.c%d)%s::pg_catalog.text", n > 1 ? ", " : "", n,
						 att->atttypid == FLOAT4OID || att->atttypid == FLOAT8OID
						 ? "::pg_catalog.float4" : "");
	}
	table_close(rel, AccessShareLock);
	*ncols = n;
	return buf.data;
}

/* Alias list c1..cn */
static char *
column_aliases(int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 1; i <= n; i++)
		appendStringInfo(&buf, "%sc%d", i > 1 ? ", " : "", i);
	return buf.data;
}

/*
 * The cheap checks, in the caller's transaction (internal SQL as the
 * extension's user).  Returns false when capture is not where the content
 * check needs it.
 */
static bool
check_bookkeeping(ReturnSetInfo *rsinfo, MvCatalog *cat)
{
	XLogRecPtr	L = cat->checkpoint_lsn;
	XLogRecPtr	now = MvInsertLsn();
	XLogRecPtr	retained;
	Oid			changelog = MvChangeLogRelid(cat->sourceid);
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2];
	char	   *v;
	bool		capture_ok = true;

	if (!MvTryWaitForCapture(now, VERIFY_CAPTURE_WAIT_MS))
	{
		finding(rsinfo, "capture",
				psprintf("Capture did not reach %X/%X within %d ms (see mvinc.capture); the contents were not checked.",
						 LSN_FORMAT_ARGS(now), VERIFY_CAPTURE_WAIT_MS));
		capture_ok = false;
	}
	if (!OidIsValid(changelog))
	{
		finding(rsinfo, "change log",
				psprintf("The source \"%s\" is not tracked: its changes are not captured.",
						 get_rel_name(cat->sourceid)));
		return false;
	}

	retained = MvRetainedFrom(cat->sourceid);
	if (retained > L)
		finding(rsinfo, "retention",
				psprintf("Change-log rows up to %X/%X were removed, past the checkpoint at %X/%X: changes between them cannot be applied, and the next refresh rebuilds the view.",
						 LSN_FORMAT_ARGS(retained), LSN_FORMAT_ARGS(L)));

	MvSpiConnect();
	args[0] = ObjectIdGetDatum(cat->sourceid);
	args[1] = CStringGetTextDatum(MvConsumerName(cat->viewid));
	if (SPI_execute_with_args("SELECT needed_lsn FROM mvinc.consumers WHERE relid = $1 AND consumer = $2",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read mvinc.consumers");
	v = spi_value(1);
	if (v == NULL)
		finding(rsinfo, "retention",
				"The view is not a consumer of its source's change log: retention may remove rows it still needs.");
	else if (DatumGetLSN(DirectFunctionCall1(pg_lsn_in, CStringGetDatum(v))) > L)
		finding(rsinfo, "retention",
				psprintf("The view lets retention remove change-log rows up to %s, past its checkpoint at %X/%X.",
						 v, LSN_FORMAT_ARGS(L)));

	if (SPI_execute(psprintf("SELECT count(*) FROM (SELECT FROM %s s WHERE s._mvinc_lsn > '%X/%X' "
							 "GROUP BY s._mvinc_lsn, s._mvinc_seq, s._mvinc_image HAVING count(*) > 1) d",
							 MvSourceName(changelog), LSN_FORMAT_ARGS(L)),
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the change log");
	v = spi_value(1);
	if (v != NULL && strcmp(v, "0") != 0)
		finding(rsinfo, "change log",
				psprintf("%s changes after the checkpoint at %X/%X are logged more than once.",
						 v, LSN_FORMAT_ARGS(L)));
	MvSpiFinish();
	return capture_ok;
}

/*
 * Refresh in a subtransaction, compare the stored contents with the query
 * under S', roll back.
 */
static void
check_contents(ReturnSetInfo *rsinfo, Oid viewid)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	char	   *only_view = NULL,
			   *only_query = NULL,
			   *sample_view = NULL,
			   *sample_query = NULL;
	const char *mode = NULL;
	char	   *error = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		Snapshot	snap;
		MvRefreshResult res = MvRefreshKeepSnapshot(viewid, &snap);
		MvCatalog  *cat;
		int			ncols;
		char	   *cols;
		char	   *aliases;
		char	   *sql;
		SPIPlanPtr	plan;

		CommandCounterIncrement();
		mode = pstrdup(res.mode);
		cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
		cols = normalized_columns(viewid, &ncols);
		aliases = column_aliases(ncols);
		/* (the query is deparsed under the pinned search_path: qualified) */
		MvSpiConnect();
		sql = psprintf("WITH v AS MATERIALIZED (SELECT %s FROM (%s) x(%s)), "
					   "q AS MATERIALIZED (SELECT %s FROM (%s) x(%s)), "
					   "d AS (SELECT 1 AS side, r FROM (SELECT * FROM v EXCEPT ALL SELECT * FROM q) r "
					   "      UNION ALL SELECT 2, r FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM v) r), "
					   "n AS (SELECT side, r::pg_catalog.text AS r, "
					   "      pg_catalog.row_number() OVER (PARTITION BY side ORDER BY r::pg_catalog.text) AS i FROM d) "
					   "SELECT (SELECT pg_catalog.count(*) FROM n WHERE side = 1), "
					   "(SELECT pg_catalog.count(*) FROM n WHERE side = 2), "
					   "(SELECT pg_catalog.string_agg(r, ', ' ORDER BY i) FROM n WHERE side = 1 AND i <= %d), "
					   "(SELECT pg_catalog.string_agg(r, ', ' ORDER BY i) FROM n WHERE side = 2 AND i <= %d)",
					   cols, MvStoredContentSql(viewid, cat), aliases,
					   cols, MvViewQuerySql(viewid), aliases,
					   VERIFY_SAMPLE_ROWS, VERIFY_SAMPLE_ROWS);
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		/* S' with the command id advanced: the refresh's own writes count */
		if (SPI_execute_snapshot(plan, NULL, NULL, snap, InvalidSnapshot, false, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not compare the view with its query");
		{
			MemoryContext spicxt = MemoryContextSwitchTo(cxt);

			only_view = spi_value(1);
			only_query = spi_value(2);
			sample_view = spi_value(3);
			sample_query = spi_value(4);
			MemoryContextSwitchTo(spicxt);
		}
		MvSpiFinish();
		if (snap != InvalidSnapshot)
			UnregisterSnapshot(snap);
		/* nothing of the refresh stays: the check writes nothing */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		/* a query cancel or the like is the caller's, not a finding */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		error = edata->message;
	}
	PG_END_TRY();

	if (error != NULL)
	{
		finding(rsinfo, "contents",
				psprintf("The contents were not checked: the refresh that applies the pending changes failed: %s",
						 error));
		return;
	}
	if (only_view == NULL || only_query == NULL ||
		strcmp(only_view, "0") != 0 || strcmp(only_query, "0") != 0)
		finding(rsinfo, "contents",
				psprintf("After applying the changes still in the change log (refresh mode %s), the view differs from its query (rows only in the view: %s, only in the query: %s): some change was neither applied nor kept in the change log. Only in the view: %s. Only in the query: %s.",
						 mode, only_view ? only_view : "?", only_query ? only_query : "?",
						 sample_view ? sample_view : "none", sample_query ? sample_query : "none"));
}

/* mvinc.verify_view(view regclass): the findings, no rows when consistent */
Datum
mvinc_verify_view(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MvCatalog  *cat;

	InitMaterializedSRF(fcinfo, 0);
	cat = MvCatalogLookup(viewid, MV_LOOKUP_NEW);
	if (cat == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an incremental materialized view",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?"),
				 errhint("Create it WITH (mvinc.incremental = true).")));
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(viewid));
	MvRequireReadCommitted(viewid, "verify");

	/* Not computed yet: reads run the query, there is nothing to check */
	if (!cat->populated || !OidIsValid(cat->storage_oid) || cat->checkpoint_snapshot == NULL)
		return (Datum) 0;

	if (!check_bookkeeping(rsinfo, cat))
		return (Datum) 0;
	if (MvXactModified(cat->sourceid))
		finding(rsinfo, "contents",
				"The contents were not checked: this transaction changed the source; verify the view in another transaction.");
	else
		check_contents(rsinfo, viewid);
	return (Datum) 0;
}
