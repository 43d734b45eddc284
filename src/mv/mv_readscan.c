/*-------------------------------------------------------------------------
 * mv_readscan.c
 *	  The plan node of a read of an incremental view: "Mvinc View Read".
 *
 *	  mv_read.c turns every reference to an incremental view into a UNION
 *	  ALL of arms (fresh, merge, hybrid, live), each guarded by
 *	  mvinc._read_branch(oid) = '<arm>'.  The planner flattens that union
 *	  into an append relation; here, once its children are planned
 *	  (set_rel_pathlist_hook), its paths are replaced by one CustomPath
 *	  holding every arm's cheapest path.  The node:
 *
 *	  - is costed, and its row count estimated, as the arm the catalog
 *	    expects now (not the sum of the arms, which made a fresh read of a
 *	    large view look as costly as the defining query: JIT compiled every
 *	    read, and joins were planned for the wrong size);
 *	  - decides at executor start, per execution, which arm runs (the
 *	    same decision _read_branch() memoizes for the statement's
 *	    snapshot), and initializes only that arm;
 *	  - shows in EXPLAIN the view, the candidate arms and the expected one,
 *	    and with ANALYZE the arm taken and the delta's state rows.
 *
 *	  Each arm keeps its one-time filter: where the union is not flattened
 *	  (the planner declines), the Append of guarded arms still answers
 *	  right, only slower.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "mv/mv.h"

/* Names of the arms, indexed by MvReadBranch */
static const char *const arm_names[] = {"live", "fresh", "merge", "hybrid"};
#define N_ARMS lengthof(arm_names)

/* The order in which the node holds (and EXPLAIN lists) them */
static const MvReadBranch arm_order[] = {MV_READ_FRESH, MV_READ_MERGE, MV_READ_HYBRID, MV_READ_LIVE};

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

static Plan *plan_read_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							List *tlist, List *clauses, List *custom_plans);
static Node *create_read_state(CustomScan *cscan);
static void begin_read(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_read(CustomScanState *node);
static void end_read(CustomScanState *node);
static void rescan_read(CustomScanState *node);
static void explain_read(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods read_path_methods = {
	.CustomName = "Mvinc View Read",
	.PlanCustomPath = plan_read_path,
};

static const CustomScanMethods read_scan_methods = {
	.CustomName = "Mvinc View Read",
	.CreateCustomScanState = create_read_state,
};

static const CustomExecMethods read_exec_methods = {
	.CustomName = "Mvinc View Read",
	.BeginCustomScan = begin_read,
	.ExecCustomScan = exec_read,
	.EndCustomScan = end_read,
	.ReScanCustomScan = rescan_read,
	.ExplainCustomScan = explain_read,
};

/*
 * custom_private of the path and the plan: the view's oid, the expected
 * arm, then the arm of each custom path/plan, in order (Integer nodes).
 */
#define PRIV_VIEW		0
#define PRIV_EXPECTED	1
#define PRIV_REWRITTEN	2		/* read for a query over the source (mv_rewrite.c) */
#define PRIV_ARMS		3

typedef struct ReadScanState
{
	CustomScanState css;
	Oid			viewid;
	int			expected;		/* MvReadBranch the planner expected */
	int			narms;
	int		   *arms;			/* MvReadBranch of each custom plan */
	int			taken;			/* MvReadBranch decided, or -1 (EXPLAIN only) */
	PlanState  *child;			/* the arm that runs */
	int64		delta_rows;		/* a hybrid read's delta state rows, or -1 */
	int64		replaced_rows;	/* ... and its rows that replace stored ones */
	bool		rewritten;		/* read for a query over the source */
	bool		pinned;			/* holds the decision in the memo */
	MvReadPin	pin;			/* ... this one */
} ReadScanState;

/* Oid of mvinc._read_branch(oid), or InvalidOid */
static Oid
read_branch_func(void)
{
	Oid			schema = MvincSchemaOid();
	Oid			argtypes[1] = {OIDOID};

	if (!OidIsValid(schema))
		return InvalidOid;
	return LookupFuncName(list_make2(makeString(get_namespace_name(schema)),
									 makeString("_read_branch")),
						  1, argtypes, true);
}

/* Is expr the call mvinc._read_branch(<const oid>)?  Its view, or InvalidOid */
static Oid
branch_call_view(Node *expr, Oid funcid)
{
	FuncExpr   *f;
	Node	   *arg;

	if (expr == NULL || !IsA(expr, FuncExpr))
		return InvalidOid;
	f = (FuncExpr *) expr;
	if (f->funcid != funcid || list_length(f->args) != 1)
		return InvalidOid;
	/* the parser leaves "<n>::pg_catalog.oid" a relabeled integer */
	arg = linitial(f->args);
	while (arg && IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	if (arg == NULL || !IsA(arg, Const) || ((Const *) arg)->constisnull)
		return InvalidOid;
	return DatumGetObjectId(((Const *) arg)->constvalue);
}

/*
 * The arm an append child's subquery is, from its guard: "_read_branch(v)
 * = '<arm>'", or for the live arm "_read_branch(v) NOT IN (...)".  Sets
 * *viewid; -1 when the subquery is not an arm of a read.
 */
static int
arm_of(Query *sub, Oid funcid, Oid *viewid)
{
	Node	   *qual;

	if (sub == NULL || sub->jointree == NULL)
		return -1;
	qual = sub->jointree->quals;
	if (qual != NULL && IsA(qual, OpExpr) && list_length(((OpExpr *) qual)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) qual;
		Node	   *arg = lsecond(op->args);

		*viewid = branch_call_view(linitial(op->args), funcid);
		if (!OidIsValid(*viewid) || !IsA(arg, Const) || ((Const *) arg)->constisnull ||
			((Const *) arg)->consttype != TEXTOID)
			return -1;
		for (int i = 0; i < N_ARMS; i++)
			if (strcmp(TextDatumGetCString(((Const *) arg)->constvalue), arm_names[i]) == 0)
				return i;
		return -1;
	}
	if (qual != NULL && IsA(qual, ScalarArrayOpExpr) && !((ScalarArrayOpExpr *) qual)->useOr)
	{
		*viewid = branch_call_view(linitial(((ScalarArrayOpExpr *) qual)->args), funcid);
		return OidIsValid(*viewid) ? MV_READ_LIVE : -1;
	}
	return -1;
}

/*
 * The arm the catalog expects now, among those present: what costs and
 * row counts follow.  A guess made at plan time; the node decides again
 * at each execution.
 */
static int
expected_arm(Oid viewid, Path **paths, double *rows)
{
	MvCatalog  *cat;

	*rows = paths[MV_READ_LIVE]->rows;
	if (mvinc_read_path_mode == MV_READ_PATH_LIVE)
		return MV_READ_LIVE;
	cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	if (cat == NULL || !cat->populated || !OidIsValid(cat->storage_oid) ||
		cat->built_generation != cat->source_generation)
		return MV_READ_LIVE;
	if (cat->append_rows > 0 && paths[MV_READ_MERGE] != NULL)
	{
		/*
		 * The append table is rarely analyzed (refreshes fill it, folds
		 * empty it), and the planner takes a never-analyzed table for ten
		 * pages of rows: the catalog's count of its rows bounds the
		 * groups it can add to the storage's.
		 */
		*rows = paths[MV_READ_MERGE]->rows;
		if (paths[MV_READ_FRESH] != NULL)
			*rows = Min(*rows, paths[MV_READ_FRESH]->rows + cat->append_rows);
		return MV_READ_MERGE;
	}
	if (paths[MV_READ_FRESH] == NULL)
		return MV_READ_LIVE;
	*rows = paths[MV_READ_FRESH]->rows;
	return MV_READ_FRESH;
}

/* One CustomPath over the arms' paths (all with the given pathkeys) */
static CustomPath *
make_read_path(RelOptInfo *rel, Oid viewid, int expected, double rows, Path **paths,
			   List *pathkeys)
{
	CustomPath *cp = makeNode(CustomPath);
	List	   *priv = list_make3(makeInteger(viewid), makeInteger(expected),
								  makeInteger(list_member_oid(mv_rewritten_views, viewid)));

	cp->path.pathtype = T_CustomScan;
	cp->path.parent = rel;
	cp->path.pathtarget = rel->reltarget;
	cp->path.param_info = NULL;
	cp->path.parallel_aware = false;
	/* the decision waits for capture and takes the latest snapshot */
	cp->path.parallel_safe = false;
	cp->path.parallel_workers = 0;
	cp->path.rows = rows;
	/* the decision: a few index probes */
	cp->path.startup_cost = paths[expected]->startup_cost + 10 * cpu_operator_cost;
	cp->path.total_cost = paths[expected]->total_cost + 10 * cpu_operator_cost;
	cp->path.pathkeys = pathkeys;
	cp->flags = 0;
	for (int i = 0; i < N_ARMS; i++)
	{
		if (paths[arm_order[i]] == NULL)
			continue;
		cp->custom_paths = lappend(cp->custom_paths, paths[arm_order[i]]);
		priv = lappend(priv, makeInteger(arm_order[i]));
	}
	cp->custom_private = priv;
	cp->methods = &read_path_methods;
	return cp;
}

/*
 * set_rel_pathlist_hook: an append relation whose children are exactly the
 * arms of one view's read gets the CustomPath instead of its Append paths
 * (and an ordered one per sort order every arm can deliver).
 */
static void
mv_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	RelOptInfo *arms[N_ARMS] = {0};
	Path	   *paths[N_ARMS] = {0};
	Oid			viewid = InvalidOid;
	Oid			funcid;
	ListCell   *lc;
	List	   *old_paths;
	int			expected;
	double		rows;
	int			nchildren = 0;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	/* a lateral reference makes every arm's path parameterized: keep Append's */
	if (!rte->inh || rte->rtekind != RTE_SUBQUERY || IS_DUMMY_REL(rel) ||
		rel->pathlist == NIL || !bms_is_empty(rel->lateral_relids) ||
		!MvincExtensionReady())
		return;
	funcid = read_branch_func();
	if (!OidIsValid(funcid))
		return;

	foreach(lc, root->append_rel_list)
	{
		AppendRelInfo *appinfo = lfirst(lc);
		RangeTblEntry *crte;
		RelOptInfo *crel;
		Oid			cview = InvalidOid;
		int			arm;

		if (appinfo->parent_relid != rti)
			continue;
		nchildren++;
		crte = root->simple_rte_array[appinfo->child_relid];
		crel = root->simple_rel_array[appinfo->child_relid];
		if (crte->rtekind != RTE_SUBQUERY || crel == NULL || crel->cheapest_total_path == NULL ||
			PATH_REQ_OUTER(crel->cheapest_total_path) != NULL)
			return;
		arm = arm_of(crte->subquery, funcid, &cview);
		if (arm < 0 || arms[arm] != NULL || (OidIsValid(viewid) && cview != viewid))
			return;
		viewid = cview;
		arms[arm] = crel;
		paths[arm] = crel->cheapest_total_path;
	}
	if (nchildren < 2 || paths[MV_READ_LIVE] == NULL)
		return;

	expected = expected_arm(viewid, paths, &rows);
	old_paths = rel->pathlist;
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	rel->rows = rows;
	add_path(rel, (Path *) make_read_path(rel, viewid, expected, rows, paths, NIL));

	/* Ordered variants, for the sort orders the Append paths offered */
	foreach(lc, old_paths)
	{
		Path	   *old = lfirst(lc);
		Path	   *ordered[N_ARMS] = {0};
		bool		all = true;

		if (old->pathkeys == NIL || old->param_info != NULL)
			continue;
		for (int i = 0; i < N_ARMS && all; i++)
		{
			if (arms[i] == NULL)
				continue;
			ordered[i] = get_cheapest_path_for_pathkeys(arms[i]->pathlist, old->pathkeys,
														NULL, TOTAL_COST, false);
			all = ordered[i] != NULL;
		}
		if (all)
			add_path(rel, (Path *) make_read_path(rel, viewid, expected, rows, ordered,
												  old->pathkeys));
	}
}

/* PlanCustomPath: the arms' plans are made by the planner (custom_plans) */
static Plan *
plan_read_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);

	/*
	 * The rel's restriction clauses were pushed into every arm (as for an
	 * Append); the node only passes the chosen arm's rows on.
	 */
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = tlist;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = NIL;
	cscan->custom_private = best_path->custom_private;
	cscan->custom_relids = NULL;
	cscan->flags = best_path->flags;
	cscan->methods = &read_scan_methods;
	return &cscan->scan.plan;
}

static Node *
create_read_state(CustomScan *cscan)
{
	ReadScanState *rs = palloc0(sizeof(ReadScanState));
	List	   *priv = cscan->custom_private;
	ListCell   *lc;
	int			i = 0;

	NodeSetTag(rs, T_CustomScanState);
	rs->css.methods = &read_exec_methods;
	rs->viewid = intVal(list_nth(priv, PRIV_VIEW));
	rs->expected = intVal(list_nth(priv, PRIV_EXPECTED));
	rs->rewritten = intVal(list_nth(priv, PRIV_REWRITTEN)) != 0;
	rs->narms = list_length(priv) - PRIV_ARMS;
	rs->arms = palloc(sizeof(int) * rs->narms);
	for_each_from(lc, priv, PRIV_ARMS)
		rs->arms[i++] = intVal(lfirst(lc));
	rs->taken = -1;
	rs->delta_rows = -1;
	return (Node *) rs;
}

/*
 * The arm of the plan that answers a decision: the decided one, or the
 * live arm, which answers whatever no other arm present takes (a plan
 * made before the view had an append table has no merge or hybrid arm).
 */
static int
arm_for(ReadScanState *rs, MvReadBranch branch)
{
	int			live = -1;

	for (int i = 0; i < rs->narms; i++)
	{
		if (rs->arms[i] == (int) branch)
			return i;
		if (rs->arms[i] == MV_READ_LIVE)
			live = i;
	}
	return live;
}

/*
 * Decide, under the statement's snapshot, which arm runs, and initialize
 * only that one (all of them for a plain EXPLAIN, which decides nothing).
 */
static void
begin_read(CustomScanState *node, EState *estate, int eflags)
{
	ReadScanState *rs = (ReadScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	MvReadBranch branch;
	int			which;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
	{
		ListCell   *lc;

		foreach(lc, cscan->custom_plans)
			node->custom_ps = lappend(node->custom_ps,
									  ExecInitNode(lfirst(lc), estate, eflags));
		return;
	}

	/*
	 * The arms' guards ask again, under the same snapshot: the memo answers,
	 * and keeps this decision (pinned) until the node ends or the
	 * transaction does, however many other decisions come in between.
	 */
	PushActiveSnapshot(estate->es_snapshot);
	branch = MvDecideReadBranch(rs->viewid);
	rs->pin = MvPinReadBranch(rs->viewid, GetActiveSnapshot());
	rs->pinned = true;
	PopActiveSnapshot();

	which = arm_for(rs, branch);
	if (which < 0)
		elog(ERROR, "no read arm for incremental view %u", rs->viewid);
	rs->taken = rs->arms[which];
	MvCountRead(rs->viewid, rs->taken);
	rs->child = ExecInitNode(list_nth(cscan->custom_plans, which), estate, eflags);
	node->custom_ps = list_make1(rs->child);
	/* the child's slots pass through: their type is the child's, not fixed */
	node->ss.ps.resultopsset = true;
	node->ss.ps.resultopsfixed = false;
}

static TupleTableSlot *
exec_read(CustomScanState *node)
{
	ReadScanState *rs = (ReadScanState *) node;
	TupleTableSlot *slot;
	ProjectionInfo *proj = node->ss.ps.ps_ProjInfo;

	CHECK_FOR_INTERRUPTS();
	/* the arm's guards and delta take this node's decision, whoever runs it */
	MvEnterReadArm(rs->viewid, rs->pin);
	slot = ExecProcNode(rs->child);
	MvLeaveReadArm();
	if (TupIsNull(slot) || proj == NULL)
		return slot;
	ResetExprContext(node->ss.ps.ps_ExprContext);
	node->ss.ps.ps_ExprContext->ecxt_scantuple = slot;
	return ExecProject(proj);
}

static void
end_read(CustomScanState *node)
{
	ReadScanState *rs = (ReadScanState *) node;
	ListCell   *lc;

	if (rs->pinned)
		MvUnpinReadBranch(rs->pin);
	rs->pinned = false;

	foreach(lc, node->custom_ps)
		ExecEndNode(lfirst(lc));
}

/* A rescan repeats the same arm: the snapshot, hence the decision, holds */
static void
rescan_read(CustomScanState *node)
{
	ReadScanState *rs = (ReadScanState *) node;

	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(rs->child, node->ss.ps.chgParam);
	if (rs->child->chgParam == NULL)
	{
		MvEnterReadArm(rs->viewid, rs->pin);
		ExecReScan(rs->child);
		MvLeaveReadArm();
	}
}

static void
explain_read(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ReadScanState *rs = (ReadScanState *) node;
	char	   *name = get_rel_name(rs->viewid);
	List	   *candidates = NIL;
	bool		kept = false;

	for (int i = 0; i < rs->narms; i++)
		candidates = lappend(candidates, (char *) arm_names[rs->arms[i]]);
	ExplainPropertyText("View", name ? quote_identifier(name) : "?", es);
	if (rs->rewritten)
		ExplainPropertyText("Rewritten onto view", name ? quote_identifier(name) : "?", es);
	ExplainPropertyList("Candidate Paths", candidates, es);
	ExplainPropertyText("Expected Path", arm_names[rs->expected], es);
	if (rs->taken >= 0)
		ExplainPropertyText("Path", arm_names[rs->taken], es);
	/* the arm's delta functions computed (or found) it as they ran */
	if (rs->taken == MV_READ_HYBRID && rs->pinned &&
		!MvMemoDeltaCounts(rs->pin, &rs->delta_rows, &rs->replaced_rows, &kept))
		rs->delta_rows = -1;
	if (rs->delta_rows >= 0)
		ExplainPropertyInteger("Delta State Rows", NULL, rs->delta_rows, es);
	if (rs->delta_rows >= 0 && kept)
		ExplainPropertyText("Delta", "kept from an earlier statement", es);
	if (rs->replaced_rows > 0)
		ExplainPropertyInteger("Replacing Rows", NULL, rs->replaced_rows, es);
}

/* Install the path hook and register the node */
void
MvReadScanInit(void)
{
	RegisterCustomScanMethods(&read_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = mv_set_rel_pathlist;
}
