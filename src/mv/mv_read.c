/*-------------------------------------------------------------------------
 * mv_read.c
 *	  Read redirection: the planner hook replaces every range-table entry
 *	  of an incremental view by a subquery
 *
 *	    SELECT finalized storage columns FROM mvinc.mv_<oid>
 *	      WHERE mvinc._read_branch(oid) = 'fresh'
 *	    UNION ALL
 *	    SELECT finalized merged columns FROM (mvinc.mv_<oid> merged per group
 *	      with mvinc.mv_<oid>_append) WHERE mvinc._read_branch(oid) = 'merge'
 *	    UNION ALL
 *	    SELECT * FROM (original query) q WHERE mvinc._read_branch(oid) = 'live'
 *
 *	  _read_branch() is stable and its pseudo-constant quals become one-time
 *	  filters, so the branch is chosen when the query executes, not when it
 *	  is planned: cached plans and prepared statements stay correct.  It
 *	  answers once per statement (cached), so exactly one branch runs.  A
 *	  view without an append table when the plan is made gets no merge
 *	  branch, and its live branch also answers 'merge'.  Permissions are
 *	  checked on the view, as for
 *	  a plain view: the view's entry stays in the subquery's range table and
 *	  the storage and source are read with the view owner's rights.
 *
 *	  The hook also refuses writes into a view or its storage table.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mv/mv.h"

static planner_hook_type prev_planner_hook = NULL;
static ExecutorStart_hook_type prev_executor_start_hook = NULL;

static Oid	get_rel_owner_oid(Oid relid);

/* Refuse a write into an incremental view or a storage table */
static void
refuse_write(Query *q)
{
	RangeTblEntry *rte;

	if (q->resultRelation == 0)
		return;
	rte = rt_fetch(q->resultRelation, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return;
	MvNoteSourceWrite(rte->relid);
	if (rte->relkind == RELKIND_MATVIEW && MvIsIncrementalView(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot change materialized view \"%s\"", get_rel_name(rte->relid)),
				 errdetail("An incremental materialized view is maintained from its source table."),
				 errhint("Change the source table and refresh the view.")));
	if (mvinc_refresh_depth == 0 && rte->relkind == RELKIND_RELATION &&
		get_rel_namespace(rte->relid) == MvincSchemaOid() && MvIsStorageTable(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot change storage table \"%s\" of an incremental materialized view",
						get_rel_name(rte->relid)),
				 errdetail("The storage table is written only by refresh."),
				 errhint("Change the source table and refresh the view.")));
}

/* Walker: set checkAsUser on every relation read by the redirect query */
static bool
set_owner_walker(Node *node, Oid *owner)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			rte->checkAsUser = *owner;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, set_owner_walker, owner,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, set_owner_walker, owner);
}

/* SQL of the view's query (pg_get_viewdef without the final semicolon) */
static char *
view_query_sql(Oid viewid)
{
	char	   *def = pg_get_querydef(MvDefForView(viewid)->query, false);
	int			len = strlen(def);

	while (len > 0 && (def[len - 1] == ';' || isspace((unsigned char) def[len - 1])))
		def[--len] = '\0';
	return def;
}

/* Does the storage hold every aggregate's result (f<n> columns)? */
static bool
has_stored_finals(Oid storage_oid, MvDef *def)
{
	ListCell   *lc;

	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_AGG && !col->derived_count &&
			get_attnum(storage_oid, MvStoredFinalName(col)) == InvalidAttrNumber)
			return false;
	}
	return true;
}

/*
 * SELECT list of the view's columns from the state rows of alias t: the
 * stored results when there are (finals), else each state finalized.
 */
static char *
finalized_columns(Oid viewid, MvDef *def, bool finals)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);
		char	   *phys = psprintf("t.%s", quote_identifier(col->physname));
		char	   *type = format_type_with_typemod(col->typid, col->typmod);

		if (col->role == MV_COL_AGG && !col->derived_count)
			phys = finals ? psprintf("t.%s", quote_identifier(MvStoredFinalName(col))) :
				MvStateFinalSql(col, phys);
		appendStringInfo(&sql, "%s(%s)::%s AS %s", foreach_current_index(lc) ? ", " : "",
						 phys, type, quote_identifier(get_attname(viewid, col->attnum, false)));
	}
	return sql.data;
}

/*
 * SQL of the view's contents as stored: the storage (merged with the
 * append table when the view has one), finalized into the view's columns.
 * Used by mvinc.verify_view, which compares it with the view's query.
 */
char *
MvStoredContentSql(Oid viewid, MvCatalog *cat)
{
	MvDef	   *def = MvDefForView(viewid);
	bool		finals = has_stored_finals(cat->storage_oid, def);

	if (OidIsValid(cat->append_oid))
		return psprintf("%s FROM (%s) t", finalized_columns(viewid, def, finals),
						MvAppendMergedSql(def, cat->storage_oid, cat->append_oid, finals));
	return psprintf("%s FROM mvinc.%s t", finalized_columns(viewid, def, finals),
					quote_identifier(get_rel_name(cat->storage_oid)));
}

/* SQL of the view's defining query */
char *
MvViewQuerySql(Oid viewid)
{
	return view_query_sql(viewid);
}

/* Build the analyzed and rewritten redirect query of a view */
static Query *
read_query(Oid viewid, RangeTblEntry *orig)
{
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_NEW);
	MvDef	   *def = MvDefForView(viewid);
	StringInfoData sql;
	List	   *raw;
	Query	   *q;
	List	   *rewritten;
	Oid			owner = get_rel_owner_oid(viewid);
	RangeTblEntry *placeholder;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT * FROM (");
	if (cat && OidIsValid(cat->storage_oid))
	{
		char	   *branch = psprintf("mvinc._read_branch(%u::pg_catalog.oid)", viewid);
		char	   *storage = psprintf("mvinc.%s", quote_identifier(get_rel_name(cat->storage_oid)));
		bool		finals = has_stored_finals(cat->storage_oid, def);

		appendStringInfo(&sql, "%s FROM %s t WHERE %s = 'fresh' UNION ALL ",
						 finalized_columns(viewid, def, finals), storage, branch);
		if (OidIsValid(cat->append_oid))
			appendStringInfo(&sql, "%s FROM (%s) t WHERE %s = 'merge' UNION ALL ",
							 finalized_columns(viewid, def, finals),
							 MvAppendMergedSql(def, cat->storage_oid, cat->append_oid, finals),
							 branch);
		appendStringInfo(&sql, "SELECT * FROM (%s) q WHERE %s %s",
						 view_query_sql(viewid), branch,
						 OidIsValid(cat->append_oid) ? "= 'live'" : "<> 'fresh'");
	}
	else
		appendStringInfo(&sql, "%s", view_query_sql(viewid));
	appendStringInfoString(&sql, ") v");

	raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql.data, NULL, 0, NULL);
	rewritten = QueryRewrite(q);
	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for incremental view %u", viewid);
	q = linitial_node(Query, rewritten);
	set_owner_walker((Node *) q, &owner);

	/* Keep the view itself in the range table, for permission checks */
	placeholder = copyObject(orig);
	placeholder->inFromCl = false;
	q->rtable = lappend(q->rtable, placeholder);
	return q;
}

/* Owner of a relation */
static Oid
get_rel_owner_oid(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Replace the incremental views read by one query level; recurse */
static bool
redirect_walker(Node *node, void *context)
{
	Query	   *q;
	ListCell   *lc;

	if (node == NULL)
		return false;
	if (!IsA(node, Query))
		return expression_tree_walker(node, redirect_walker, context);
	q = (Query *) node;
	refuse_write(q);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		int			rti = foreach_current_index(lc) + 1;
		Query	   *sub;

		if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
			!rte->inFromCl || rti == q->resultRelation)
			continue;
		if (!MvIsIncrementalView(rte->relid))
			continue;
		if (get_parse_rowmark(q, rti) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot lock rows of materialized view \"%s\"", get_rel_name(rte->relid)),
					 errhint("Remove FOR UPDATE or FOR SHARE.")));
		sub = read_query(rte->relid, rte);
		rte->rtekind = RTE_SUBQUERY;
		rte->subquery = sub;
		rte->relid = InvalidOid;
		rte->relkind = 0;
		rte->rellockmode = 0;
		rte->tablesample = NULL;
		rte->inh = false;
		rte->requiredPerms = 0;
		rte->checkAsUser = InvalidOid;
		rte->selectedCols = NULL;
		rte->insertedCols = NULL;
		rte->updatedCols = NULL;
		rte->extraUpdatedCols = NULL;
		rte->security_barrier = false;
	}
	return query_tree_walker(q, redirect_walker, context, 0);
}

/* Does the query read a materialized view or write into schema mvinc? */
static bool
needs_work_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		return rte->rtekind == RTE_RELATION &&
			(rte->relkind == RELKIND_MATVIEW ||
			 get_rel_namespace(rte->relid) == *(Oid *) context);
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, needs_work_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, needs_work_walker, context);
}

/* Planner hook: redirect reads of incremental views */
static PlannedStmt *
mv_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	Oid			schema = MvincSchemaOid();

	if (OidIsValid(schema) &&
		((MvHasOwnChanges() && (parse->commandType != CMD_SELECT || parse->hasModifyingCTE)) ||
		 needs_work_walker((Node *) parse, &schema)) &&
		MvincExtensionReady())
		redirect_walker((Node *) parse, NULL);
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/* Per-statement memo of _read_branch(): all branches must see one answer */
typedef struct FreshMemo
{
	Oid			viewid;
	LocalTransactionId lxid;
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	MvReadBranch branch;
} FreshMemo;

#define FRESH_MEMO_SIZE 16
static FreshMemo fresh_memo[FRESH_MEMO_SIZE];
static int	fresh_memo_next = 0;

/* When a wait for capture last timed out in this backend */
static TimestampTz last_wait_failure = 0;

/*
 * How long a read waits for capture to catch up before it takes the live
 * path: mvinc.fresh_wait, but only 10 ms for a minute after a wait failed
 * (capture down or far behind), so that reads do not all stall.
 */
static int
fresh_wait_timeout(void)
{
	if (last_wait_failure != 0 &&
		!TimestampDifferenceExceeds(last_wait_failure, GetCurrentTimestamp(), 60000))
		return Min(mvinc_fresh_wait, 10);
	return mvinc_fresh_wait;
}

/* Decide the read branch for the active snapshot (uncached) */
static MvReadBranch
compute_branch_internal(Oid viewid)
{
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	Oid			changelog;
	XLogRecPtr	target;
	char	   *query_snap;
	bool		fresh;
	SPIPlanPtr	plan;

	if (cat == NULL || !cat->populated || !OidIsValid(cat->storage_oid) ||
		cat->checkpoint_snapshot == NULL ||
		cat->built_generation != cat->source_generation)
		return MV_READ_LIVE;
	if (MvXactModified(cat->sourceid))
		return MV_READ_LIVE;
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog) || MvRetainedFrom(cat->sourceid) > cat->checkpoint_lsn)
		return MV_READ_LIVE;
	target = MvInsertLsn();
	if (!MvTryWaitForCapture(target, fresh_wait_timeout()))
	{
		last_wait_failure = GetCurrentTimestamp();
		return MV_READ_LIVE;
	}

	MvSpiConnect();
	if (SPI_execute("SELECT pg_current_snapshot()::text", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the current snapshot");
	query_snap = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	plan = SPI_prepare(psprintf("SELECT 1 FROM %s s WHERE s._mvinc_lsn > '%X/%X' "
								"AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
								"AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) LIMIT 1",
								MvSourceName(changelog), LSN_FORMAT_ARGS(cat->checkpoint_lsn),
								query_snap, cat->checkpoint_snapshot),
					   0, NULL);
	if (SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the change log");
	fresh = (SPI_processed == 0);
	MvSpiFinish();
	if (!fresh)
		return MV_READ_LIVE;
	return cat->append_rows > 0 && OidIsValid(cat->append_oid) ? MV_READ_MERGE : MV_READ_FRESH;
}

/* compute_branch_internal with the subsystem's own rights */
static MvReadBranch
compute_branch(Oid viewid)
{
	MvInternal	save;
	MvReadBranch branch;

	MvBecomeInternal(&save);
	branch = compute_branch_internal(viewid);
	MvEndInternal(&save);
	return branch;
}

/* Is the view's storage (with its append table) the answer now? */
bool
MvIsFresh(Oid viewid)
{
	return MvGetReadBranch(viewid) != MV_READ_LIVE;
}

/* Which branch answers a read of the view for the active snapshot? */
MvReadBranch
MvGetReadBranch(Oid viewid)
{
	Snapshot	snap = GetActiveSnapshot();
	FreshMemo  *m;
	int			i;

	if (snap == NULL)
		return MV_READ_LIVE;
	for (i = 0; i < FRESH_MEMO_SIZE; i++)
	{
		m = &fresh_memo[i];
		if (m->viewid == viewid && m->lxid == MyProc->lxid &&
			m->xmin == snap->xmin && m->xmax == snap->xmax && m->curcid == snap->curcid)
			return m->branch;
	}
	m = &fresh_memo[fresh_memo_next];
	fresh_memo_next = (fresh_memo_next + 1) % FRESH_MEMO_SIZE;
	m->viewid = InvalidOid;
	m->branch = compute_branch(viewid);
	m->viewid = viewid;
	m->lxid = MyProc->lxid;
	m->xmin = snap->xmin;
	m->xmax = snap->xmax;
	m->curcid = snap->curcid;
	return m->branch;
}

/*
 * Executor start: a statement that runs in parallel mode cannot take the
 * latest snapshot or wait for capture once the executor has entered that
 * mode, so decide the freshness of every redirected view it reads first
 * (the view's own entry stays in the range table); _read_branch() then answers
 * from the memo.
 */
static void
mv_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (stmt->parallelModeNeeded && !(eflags & EXEC_FLAG_EXPLAIN_ONLY) &&
		!IsInParallelMode() && queryDesc->snapshot != NULL &&
		OidIsValid(MvincSchemaOid()) && MvincExtensionReady())
	{
		ListCell   *lc;
		bool		pushed = false;

		foreach(lc, stmt->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);

			if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
				rte->inFromCl || !MvIsIncrementalView(rte->relid))
				continue;
			if (!pushed)
			{
				PushActiveSnapshot(queryDesc->snapshot);
				pushed = true;
			}
			(void) MvGetReadBranch(rte->relid);
		}
		if (pushed)
			PopActiveSnapshot();
	}
	if (prev_executor_start_hook)
		prev_executor_start_hook(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* Install the planner and executor-start hooks */
void
MvReadInit(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = mv_planner;
	prev_executor_start_hook = ExecutorStart_hook;
	ExecutorStart_hook = mv_executor_start;
}
