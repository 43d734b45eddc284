/*-------------------------------------------------------------------------
 * colfile_aggscan.c
 *	  "Colfile Aggregate": plain aggregates of a whole colfile table computed
 *	  over its decoded columns, not row by row through the executor.
 *
 *	  PostgreSQL 15 hands a table AM's rows to the executor one slot at a
 *	  time; for SELECT sum(b) FROM t that per-row work (slot, scan node,
 *	  the aggregate's transition call) costs more than reading the column.
 *	  When a query aggregates one colfile table with no GROUP BY, a WHERE
 *	  of conditions "column op value" (value free of the table's columns and
 *	  of volatile functions, op strict; evaluated once per execution) and
 *	  "column IS [NOT] NULL" (RLS policies' included, applied first), and
 *	  every aggregate is one
 *	  of count(*), count(col), and sum/min/max/avg of integer, float or
 *	  date/time columns (no DISTINCT, ORDER BY or FILTER), the
 *	  create_upper_paths_hook offers a CustomPath that does the table scan
 *	  and the aggregation in one node.  It reads the table through the
 *	  table AM's own scan (same snapshot, row groups, deletions, column
 *	  files, own buffered rows and SSI locks as a sequential scan; row
 *	  groups whose min/max refute a condition are skipped), a group's
 *	  columns whole, marks the rows the conditions refuse, and folds each
 *	  column with a tight loop that
 *	  reproduces the built-in aggregate exactly: same result types, the
 *	  rows in the scan's order (float sums add in the same order), NaN
 *	  ordered as float8_gt orders it, overflow errors of float sums,
 *	  sum(int8) and avg(int8) through a 128-bit sum, avg(int2/int4) as
 *	  numeric_div of the sum by the count.  HAVING is the node's qual; the
 *	  select list is projected over the aggregates' values, as
 *	  postgres_fdw's pushed-down aggregates are (custom_scan_tlist).
 *
 *	  mvinc.colfile_aggregate_scan turns it off.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "port/pg_bitutils.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/fmgroids.h"
#include "utils/numeric.h"
#include "utils/ruleutils.h"
#include "utils/rel.h"

#include "colfile/colfile.h"

bool		colfile_aggregate_scan = true;

/* What an aggregate folds, and how */
typedef enum AggKind
{
	AK_COUNT_STAR,
	AK_COUNT,
	AK_SUM_INT,					/* int2/int4 -> int8 */
	AK_SUM_INT8,				/* int8 -> numeric (128-bit sum) */
	AK_SUM_FLOAT4,
	AK_SUM_FLOAT8,
	AK_MIN_INT,					/* int2/int4/int8/date/timestamp(tz) */
	AK_MAX_INT,
	AK_MIN_FLOAT4,
	AK_MAX_FLOAT4,
	AK_MIN_FLOAT8,
	AK_MAX_FLOAT8,
	AK_AVG_INT,					/* int2/int4 -> numeric */
	AK_AVG_INT8					/* int8 -> numeric (128-bit sum) */
} AggKind;

/* The aggregate functions folded here, with the argument type they take */
typedef struct AggRule
{
	Oid			aggfnoid;
	AggKind		kind;
	Oid			argtype;		/* InvalidOid: count(*) and count(any) */
} AggRule;

static const AggRule agg_rules[] = {
	{F_COUNT_, AK_COUNT_STAR, InvalidOid},
	{F_COUNT_ANY, AK_COUNT, InvalidOid},
	{F_SUM_INT2, AK_SUM_INT, INT2OID},
	{F_SUM_INT4, AK_SUM_INT, INT4OID},
#ifdef HAVE_INT128
	{F_SUM_INT8, AK_SUM_INT8, INT8OID},
	{F_AVG_INT8, AK_AVG_INT8, INT8OID},
#endif
	{F_SUM_FLOAT4, AK_SUM_FLOAT4, FLOAT4OID},
	{F_SUM_FLOAT8, AK_SUM_FLOAT8, FLOAT8OID},
	{F_MIN_INT2, AK_MIN_INT, INT2OID},
	{F_MIN_INT4, AK_MIN_INT, INT4OID},
	{F_MIN_INT8, AK_MIN_INT, INT8OID},
	{F_MIN_DATE, AK_MIN_INT, DATEOID},
	{F_MIN_TIMESTAMP, AK_MIN_INT, TIMESTAMPOID},
	{F_MIN_TIMESTAMPTZ, AK_MIN_INT, TIMESTAMPTZOID},
	{F_MAX_INT2, AK_MAX_INT, INT2OID},
	{F_MAX_INT4, AK_MAX_INT, INT4OID},
	{F_MAX_INT8, AK_MAX_INT, INT8OID},
	{F_MAX_DATE, AK_MAX_INT, DATEOID},
	{F_MAX_TIMESTAMP, AK_MAX_INT, TIMESTAMPOID},
	{F_MAX_TIMESTAMPTZ, AK_MAX_INT, TIMESTAMPTZOID},
	{F_MIN_FLOAT4, AK_MIN_FLOAT4, FLOAT4OID},
	{F_MAX_FLOAT4, AK_MAX_FLOAT4, FLOAT4OID},
	{F_MIN_FLOAT8, AK_MIN_FLOAT8, FLOAT8OID},
	{F_MAX_FLOAT8, AK_MAX_FLOAT8, FLOAT8OID},
	{F_AVG_INT2, AK_AVG_INT, INT2OID},
	{F_AVG_INT4, AK_AVG_INT, INT4OID},
};

/* One aggregate's running state */
typedef struct AggAccum
{
	AggKind		kind;
	int			col;			/* 0-based column; -1 for count(*) */
	Oid			argtype;
	int64		count;			/* rows (count(*)) or non-null values */
	int64		isum;
#ifdef HAVE_INT128
	int128		bigsum;
#endif
	int64		ival;			/* min/max so far (valid once count > 0) */
	float4		f4;
	float8		f8;
} AggAccum;

/* A condition of the WHERE: "column op value" or "column IS [NOT] NULL" */
typedef enum CondKind
{
	COND_OP,
	COND_IS_NULL,
	COND_IS_NOT_NULL
} CondKind;

typedef struct AggCond
{
	CondKind	kind;
	int			col;			/* 0-based column */
	Oid			opno;			/* COND_OP: the operator, */
	bool		var_left;		/* the column its left argument? */
	Oid			collation;		/* its input collation */
	ExprState  *value_state;	/* and the value, evaluated per execution */
	FunctionCallInfo fcinfo;	/* the operator's call, value filled in */
	bool		eager;			/* value computed before the scan (no
								 * subquery in it)? */
	bool		evaluated;		/* value computed in this execution? */
	bool		value_null;		/* it was NULL: the condition refuses all */
	Expr	   *skip_key;		/* "column op constant" for skipping groups */
} AggCond;

typedef struct AggScanState
{
	CustomScanState css;
	int			naggs;
	AggAccum   *accums;			/* [naggs], in custom_scan_tlist order */
	int			nconds;
	AggCond    *conds;			/* [nconds] */
	Bitmapset  *needed;			/* 1-based attnums read */
	bool		done;
	char	   *conditions;		/* for EXPLAIN, "" when none */
	int64		groups_read;	/* over all executions (EXPLAIN ANALYZE) */
	int64		groups_skipped;
	MemoryContext result_cxt;	/* by-reference results */
	MemoryContext value_cxt;	/* conditions' values and skip keys */
} AggScanState;

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_agg_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);
static Node *create_agg_scan_state(CustomScan *cscan);
static void begin_agg_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_agg_scan(CustomScanState *node);
static void end_agg_scan(CustomScanState *node);
static void rescan_agg_scan(CustomScanState *node);
static void explain_agg_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods agg_path_methods = {
	.CustomName = "Colfile Aggregate",
	.PlanCustomPath = plan_agg_scan,
};

static const CustomScanMethods agg_scan_methods = {
	.CustomName = "Colfile Aggregate",
	.CreateCustomScanState = create_agg_scan_state,
};

static const CustomExecMethods agg_exec_methods = {
	.CustomName = "Colfile Aggregate",
	.BeginCustomScan = begin_agg_scan,
	.ExecCustomScan = exec_agg_scan,
	.EndCustomScan = end_agg_scan,
	.ReScanCustomScan = rescan_agg_scan,
	.ExplainCustomScan = explain_agg_scan,
};

/* The rule for an aggregate call, or NULL when it is not folded here */
static const AggRule *
rule_for(Aggref *agg, Index relid)
{
	Var		   *var = NULL;

	if (agg->aggfilter != NULL || agg->aggdistinct != NIL || agg->aggorder != NIL ||
		agg->agglevelsup != 0 || agg->aggsplit != AGGSPLIT_SIMPLE ||
		agg->aggkind != AGGKIND_NORMAL || agg->aggvariadic)
		return NULL;
	if (list_length(agg->args) == 1)
	{
		TargetEntry *te = linitial(agg->args);

		if (!IsA(te->expr, Var))
			return NULL;
		var = (Var *) te->expr;
		if (var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
			return NULL;
	}
	else if (agg->args != NIL)
		return NULL;
	for (int i = 0; i < lengthof(agg_rules); i++)
	{
		const AggRule *r = &agg_rules[i];

		if (r->aggfnoid != agg->aggfnoid)
			continue;
		if (r->kind == AK_COUNT_STAR)
			return agg->aggstar && var == NULL ? r : NULL;
		if (var == NULL || (OidIsValid(r->argtype) && var->vartype != r->argtype))
			return NULL;
		return r;
	}
	return NULL;
}

typedef struct AggWalk
{
	Index		relid;
	List	   *aggrefs;		/* distinct Aggrefs met */
	bool		ok;
} AggWalk;

/* Collect the aggregates of the output; refuse Vars outside them */
static bool
collect_aggs_walker(Node *node, AggWalk *w)
{
	if (node == NULL || !w->ok)
		return false;
	if (IsA(node, Aggref))
	{
		if (rule_for((Aggref *) node, w->relid) == NULL)
			w->ok = false;
		else if (!list_member(w->aggrefs, node))
			w->aggrefs = lappend(w->aggrefs, node);
		return false;
	}
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) || IsA(node, GroupingFunc) ||
		IsA(node, WindowFunc))
	{
		w->ok = false;
		return false;
	}
	return expression_tree_walker(node, collect_aggs_walker, (void *) w);
}

/* Is e a plain column of relation relid? */
static bool
is_column_of(Node *e, Index relid)
{
	Var		   *v = (Var *) e;

	return e != NULL && IsA(e, Var) && v->varno == relid && v->varlevelsup == 0 &&
		v->varattno > 0;
}

/* Is e a value computable once per execution (no column, nothing volatile)? */
static bool
is_run_time_value(Node *e)
{
	return !contain_var_clause(e) && !contain_volatile_functions(e) &&
		!contain_subplans(e) && !contain_agg_clause(e);
}

/*
 * A WHERE condition the node evaluates itself: "column op value" with a
 * strict operator returning boolean, or "column IS [NOT] NULL"
 */
static bool
cond_ok(RestrictInfo *ri, Index relid)
{
	Node	   *clause = (Node *) ri->clause;

	if (ri->pseudoconstant)
		return false;
	if (IsA(clause, NullTest))
	{
		NullTest   *nt = (NullTest *) clause;

		return !nt->argisrow && is_column_of((Node *) nt->arg, relid);
	}
	if (IsA(clause, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *l,
				   *r;

		if (list_length(op->args) != 2 || op->opresulttype != BOOLOID || op->opretset)
			return false;
		set_opfuncid(op);
		if (!func_strict(op->opfuncid))
			return false;
		l = linitial(op->args);
		r = lsecond(op->args);
		return (is_column_of(l, relid) && is_run_time_value(r)) ||
			(is_column_of(r, relid) && is_run_time_value(l));
	}
	return false;
}

/* The plain sequential scan path of a base relation, or NULL */
static Path *
seq_scan_path(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->pathtype == T_SeqScan && p->param_info == NULL)
			return p;
	}
	return NULL;
}

/* create_upper_paths_hook: offer the node for a whole-table aggregate */
static void
colfile_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
					RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	RangeTblEntry *rte;
	Relation	rel;
	bool		is_colfile;
	AggWalk		w;
	Path	   *seq;
	CustomPath *cpath;
	double		rows;
	Cost		run;
	ListCell   *lc;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || !colfile_aggregate_scan || !parse->hasAggs ||
		parse->groupClause != NIL || parse->groupingSets != NIL ||
		parse->hasWindowFuncs || parse->hasTargetSRFs || parse->rowMarks != NIL)
		return;
	if (input_rel->reloptkind != RELOPT_BASEREL || input_rel->rtekind != RTE_RELATION ||
		IS_DUMMY_REL(input_rel))
		return;
	foreach(lc, input_rel->baserestrictinfo)
		if (!cond_ok(lfirst(lc), input_rel->relid))
			return;
	rte = planner_rt_fetch(input_rel->relid, root);
	if (rte->inh || rte->tablesample != NULL || rte->relkind != RELKIND_RELATION)
		return;
	/* (the planner holds a lock on the table) */
	rel = relation_open(rte->relid, NoLock);
	is_colfile = ColfileIsColfileRel(rel);
	relation_close(rel, NoLock);
	if (!is_colfile)
		return;

	w.relid = input_rel->relid;
	w.aggrefs = NIL;
	w.ok = true;
	collect_aggs_walker((Node *) output_rel->reltarget->exprs, &w);
	collect_aggs_walker(parse->havingQual, &w);
	if (!w.ok || w.aggrefs == NIL)
		return;
	seq = seq_scan_path(input_rel);
	if (seq == NULL)
		return;

	/*
	 * Cost: the scan's I/O and a fraction of its per-row CPU (a tight loop
	 * per column instead of a slot per row and a call per aggregate).
	 */
	rows = Max(input_rel->tuples, 1);
	run = seq->total_cost - seq->startup_cost;
	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = 1;
	cpath->path.startup_cost = seq->startup_cost +
		Max(run - rows * cpu_tuple_cost * 0.75, run * 0.25) +
		rows * list_length(w.aggrefs) * cpu_operator_cost * 0.1;
	cpath->path.total_cost = cpath->path.startup_cost + cpu_tuple_cost;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = list_make3(makeInteger(input_rel->relid), w.aggrefs,
									   input_rel->baserestrictinfo);
	cpath->methods = &agg_path_methods;
	add_path(output_rel, (Path *) cpath);
}

/*
 * Conditions in the order they are applied, as the planner orders a scan's
 * quals (order_qual_clauses): a row-level security policy's (lower
 * security_level) before the query's own, so that no function of the
 * query sees a row the policy hides, and cheaper ones first within a
 * level.  Each is applied to a whole group before the next one.
 */
typedef struct CondOrder
{
	RestrictInfo *ri;
	Index		level;			/* security_level, 0 for a cheap leakproof one */
	Cost		cost;
	int			index;
} CondOrder;

static int
cond_order_cmp(const void *a, const void *b)
{
	const CondOrder *x = a;
	const CondOrder *y = b;

	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return x->index - y->index;
}

static List *
order_conditions(PlannerInfo *root, List *conds)
{
	int			n = list_length(conds);
	CondOrder  *items = palloc(sizeof(CondOrder) * Max(n, 1));
	List	   *sorted = NIL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, conds)
	{
		QualCost	qc;

		items[i].ri = lfirst(lc);
		cost_qual_eval_node(&qc, (Node *) items[i].ri->clause, root);
		items[i].cost = qc.per_tuple;
		/* as order_qual_clauses: a cheap leakproof qual may go first */
		items[i].level = items[i].ri->leakproof && qc.per_tuple < 10 * cpu_operator_cost ?
			0 : items[i].ri->security_level;
		items[i].index = i;
		i++;
	}
	qsort(items, n, sizeof(CondOrder), cond_order_cmp);
	for (i = 0; i < n; i++)
		sorted = lappend(sorted, items[i].ri);
	pfree(items);
	return sorted;
}

/* The plan: a scan of the table whose scan tuple is the aggregates' values */
static Plan *
plan_agg_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Index		relid = intVal(linitial(best_path->custom_private));
	List	   *aggrefs = lsecond(best_path->custom_private);
	List	   *conds = lthird(best_path->custom_private);
	List	   *scan_tlist = NIL;
	List	   *kinds = NIL;
	List	   *cond_info = NIL;
	List	   *values = NIL;
	ListCell   *lc;
	int			resno = 1;
	Oid			relid_oid = planner_rt_fetch(relid, root)->relid;
	StringInfoData shown;

	initStringInfo(&shown);

	foreach(lc, aggrefs)
	{
		Aggref	   *agg = lfirst(lc);
		const AggRule *r = rule_for(agg, relid);
		int			col = -1;

		Assert(r != NULL);
		if (agg->args != NIL)
			col = ((Var *) ((TargetEntry *) linitial(agg->args))->expr)->varattno - 1;
		scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr *) agg, resno++, NULL, false));
		kinds = lappend(kinds, list_make3_int(r->kind, col, (int) r->argtype));
	}

	/*
	 * The conditions: their columns and operators in custom_private, their
	 * values in custom_exprs (free of the table's columns, so setrefs can
	 * fix them against the aggregate tuple: Params and functions only).
	 */
	foreach(lc, order_conditions(root, conds))
	{
		Node	   *clause = (Node *) ((RestrictInfo *) lfirst(lc))->clause;

		/* (shown by EXPLAIN as the query wrote it, in the order applied) */
		if (shown.len > 0)
			appendStringInfoString(&shown, " AND ");
		/* (the deparse context knows the table as range-table entry 1) */
		{
			Node	   *shown_clause = copyObject(clause);

			ChangeVarNodes(shown_clause, relid, 1, 0);
			appendStringInfoString(&shown,
								   deparse_expression(shown_clause,
													  deparse_context_for(get_rel_name(relid_oid), relid_oid),
													  false, false));
		}

		if (IsA(clause, NullTest))
		{
			NullTest   *nt = (NullTest *) clause;

			cond_info = lappend(cond_info,
								list_make5_int(nt->nulltesttype == IS_NULL ? COND_IS_NULL : COND_IS_NOT_NULL,
											   ((Var *) nt->arg)->varattno - 1, InvalidOid, 0, InvalidOid));
			values = lappend(values, makeNullConst(INT4OID, -1, InvalidOid));
		}
		else
		{
			OpExpr	   *op = (OpExpr *) clause;
			bool		var_left = is_column_of(linitial(op->args), relid);
			Var		   *var = var_left ? linitial(op->args) : lsecond(op->args);

			cond_info = lappend(cond_info,
								list_make5_int(COND_OP, var->varattno - 1, (int) op->opno,
											   var_left ? 1 : 0, (int) op->inputcollid));
			values = lappend(values, var_left ? lsecond(op->args) : linitial(op->args));
		}
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = (List *) root->parse->havingQual;
	cscan->scan.scanrelid = relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = values;
	cscan->custom_private = list_make3(kinds, cond_info, makeString(shown.data));
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_make_singleton(relid);
	cscan->methods = &agg_scan_methods;
	return &cscan->scan.plan;
}

static Node *
create_agg_scan_state(CustomScan *cscan)
{
	AggScanState *st = palloc0(sizeof(AggScanState));
	List	   *kinds = linitial(cscan->custom_private);
	List	   *cond_info = lsecond(cscan->custom_private);
	ListCell   *lc;
	int			i = 0;

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &agg_exec_methods;

	st->naggs = list_length(kinds);
	st->accums = palloc0(sizeof(AggAccum) * Max(st->naggs, 1));
	foreach(lc, kinds)
	{
		List	   *k = lfirst(lc);

		st->accums[i].kind = (AggKind) linitial_int(k);
		st->accums[i].col = lsecond_int(k);
		st->accums[i].argtype = (Oid) lthird_int(k);
		if (st->accums[i].col >= 0)
			st->needed = bms_add_member(st->needed, st->accums[i].col + 1);
		i++;
	}
	st->conditions = strVal(lthird(cscan->custom_private));
	st->nconds = list_length(cond_info);
	st->conds = palloc0(sizeof(AggCond) * Max(st->nconds, 1));
	i = 0;
	foreach(lc, cond_info)
	{
		List	   *c = lfirst(lc);

		st->conds[i].kind = (CondKind) linitial_int(c);
		st->conds[i].col = lsecond_int(c);
		st->conds[i].opno = (Oid) lthird_int(c);
		st->conds[i].var_left = lfourth_int(c) != 0;
		st->conds[i].collation = (Oid) list_nth_int(c, 4);
		st->needed = bms_add_member(st->needed, st->conds[i].col + 1);
		i++;
	}
	return (Node *) st;
}

/* Does the expression use a subquery's value (PARAM_EXEC)? */
static bool
contains_exec_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind == PARAM_EXEC;
	return expression_tree_walker(node, contains_exec_param, context);
}

static void
begin_agg_scan(CustomScanState *node, EState *estate, int eflags)
{
	AggScanState *st = (AggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	ListCell   *lc;
	int			i = 0;

	st->result_cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile aggregate results",
										   ALLOCSET_SMALL_SIZES);
	st->value_cxt = AllocSetContextCreate(CurrentMemoryContext, "colfile aggregate conditions",
										  ALLOCSET_SMALL_SIZES);
	foreach(lc, cscan->custom_exprs)
	{
		AggCond    *c = &st->conds[i++];

		if (c->kind != COND_OP)
			continue;
		c->value_state = ExecInitExpr(lfirst(lc), &node->ss.ps);
		c->eager = !contains_exec_param(lfirst(lc), NULL);
		c->fcinfo = palloc0(SizeForFunctionCallInfo(2));
		InitFunctionCallInfoData(*c->fcinfo, palloc0(sizeof(FmgrInfo)), 2, c->collation,
								 NULL, NULL);
		fmgr_info(get_opcode(c->opno), c->fcinfo->flinfo);
	}
}

/* Column value as int64, by the argument's type */
static inline int64
int_value(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
		case DATEOID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

static inline Datum
int_datum(int64 v, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return Int16GetDatum((int16) v);
		case INT4OID:
		case DATEOID:
			return Int32GetDatum((int32) v);
		default:
			return Int64GetDatum(v);
	}
}

#define ROW_SKIPPED(skip, pos) ((skip) != NULL && ((skip)[(pos) >> 3] & (1 << ((pos) & 7))) != 0)

/*
 * For each row of the group that is neither skipped (skip: a bool per row,
 * or NULL) nor NULL, BODY with v = its Datum; count counts them.  (skip ==
 * NULL is tested first: a group without rows to skip reads no bitmap.)
 */
#define FOLD_ROWS(BODY) \
	do { \
		for (int pos = 0; pos < nrows; pos++) \
			if (!isnull[pos] && (skip == NULL || !skip[pos])) \
			{ \
				Datum		v = values[pos]; \
				BODY; \
				count++; \
			} \
	} while (0)

/* Fold the visible rows of one loaded group into one aggregate */
static void
fold_column(AggAccum *a, const ColfileDecoded *d, int nrows, const bool *skip)
{
	const Datum *values = d->values;
	const bool *isnull = d->isnull;
	int64		count = 0;

	switch (a->kind)
	{
		case AK_COUNT_STAR:
			return;				/* counted per group */
		case AK_COUNT:
			FOLD_ROWS((void) v);
			break;
		case AK_SUM_INT:
		case AK_AVG_INT:
			{
				int64		sum = a->isum;

				if (a->argtype == INT2OID)
					FOLD_ROWS(sum += DatumGetInt16(v));
				else
					FOLD_ROWS(sum += DatumGetInt32(v));
				a->isum = sum;
			}
			break;
		case AK_SUM_INT8:
		case AK_AVG_INT8:
#ifdef HAVE_INT128
			{
				int128		sum = a->bigsum;

				FOLD_ROWS(sum += (int128) DatumGetInt64(v));
				a->bigsum = sum;
			}
#else
			elog(ERROR, "colfile aggregate without 128-bit integers");
#endif
			break;
		case AK_SUM_FLOAT4:
			{
				float4		sum = a->f4;
				bool		first = a->count == 0;

				/* (the first value is the state, as in the strict float4pl) */
				FOLD_ROWS(sum = first ? DatumGetFloat4(v) : float4_pl(sum, DatumGetFloat4(v));
						  first = false);
				a->f4 = sum;
			}
			break;
		case AK_SUM_FLOAT8:
			{
				float8		sum = a->f8;
				bool		first = a->count == 0;

				FOLD_ROWS(sum = first ? DatumGetFloat8(v) : float8_pl(sum, DatumGetFloat8(v));
						  first = false);
				a->f8 = sum;
			}
			break;
		case AK_MIN_INT:
		case AK_MAX_INT:
			{
				bool		is_min = a->kind == AK_MIN_INT;
				bool		first = a->count == 0;
				int64		m = a->ival;

				FOLD_ROWS(int64 x = int_value(v, a->argtype);

						  if (first || (is_min ? x < m : x > m))
							  m = x;
						  first = false);
				a->ival = m;
			}
			break;
		case AK_MIN_FLOAT4:
		case AK_MAX_FLOAT4:
			{
				bool		is_min = a->kind == AK_MIN_FLOAT4;
				bool		first = a->count == 0;
				float4		m = a->f4;

				/* float4smaller / float4larger: the new value unless the state wins */
				FOLD_ROWS(float4 x = DatumGetFloat4(v);

						  if (first || !(is_min ? float4_lt(m, x) : float4_gt(m, x)))
							  m = x;
						  first = false);
				a->f4 = m;
			}
			break;
		case AK_MIN_FLOAT8:
		case AK_MAX_FLOAT8:
			{
				bool		is_min = a->kind == AK_MIN_FLOAT8;
				bool		first = a->count == 0;
				float8		m = a->f8;

				FOLD_ROWS(float8 x = DatumGetFloat8(v);

						  if (first || !(is_min ? float8_lt(m, x) : float8_gt(m, x)))
							  m = x;
						  first = false);
				a->f8 = m;
			}
			break;
	}
	a->count += count;
}

/*
 * Can a's state take a row back?  Integer sums and counts can, exactly: a
 * group with a few rows to skip is folded whole by the loop that tests no
 * bitmap, then those rows are taken back (int64 and int128 sums of one
 * group cannot overflow where the sum without them does not).
 */
static bool
retractable_kind(AggKind kind)
{
	return kind == AK_COUNT || kind == AK_SUM_INT || kind == AK_AVG_INT ||
		kind == AK_SUM_INT8 || kind == AK_AVG_INT8;
}

/* Take back from a the non-null values of the rows marked in skip (a bitmap) */
static void
unfold_skipped(AggAccum *a, const ColfileDecoded *d, int nrows, const uint8 *skip)
{
	int			nbytes = (nrows + 7) / 8;
	int64		count = a->count;
	int64		isum = a->isum;
#ifdef HAVE_INT128
	int128		bigsum = a->bigsum;
#endif

	/* eight bytes of the bitmap at a time: most are zero */
	for (int byte = 0; byte < nbytes; byte += 8)
	{
		uint64		bits = 0;

		for (int k = 0; k < Min(8, nbytes - byte); k++)
			bits |= (uint64) skip[byte + k] << (8 * k);
		while (bits != 0)
		{
			int			pos = byte * 8 + pg_rightmost_one_pos64(bits);

			bits &= bits - 1;
			if (pos >= nrows || d->isnull[pos])
				continue;
			count--;
			if (a->kind == AK_SUM_INT || a->kind == AK_AVG_INT)
				isum -= a->argtype == INT2OID ?
					DatumGetInt16(d->values[pos]) : DatumGetInt32(d->values[pos]);
#ifdef HAVE_INT128
			else if (a->kind == AK_SUM_INT8 || a->kind == AK_AVG_INT8)
				bigsum -= (int128) DatumGetInt64(d->values[pos]);
#endif
		}
	}
	a->count = count;
	a->isum = isum;
#ifdef HAVE_INT128
	a->bigsum = bigsum;
#endif
}

/* Mark in skip the rows of a group that condition c refuses */
static void
apply_cond(AggCond *c, const ColfileDecoded *d, int nrows, uint8 *skip)
{
	FunctionCallInfo fcinfo = c->fcinfo;
	int			arg = c->var_left ? 0 : 1;

	for (int pos = 0; pos < nrows; pos++)
	{
		bool		pass;

		if (ROW_SKIPPED(skip, pos))
			continue;
		switch (c->kind)
		{
			case COND_IS_NULL:
				pass = d->isnull[pos];
				break;
			case COND_IS_NOT_NULL:
				pass = !d->isnull[pos];
				break;
			default:
				if (d->isnull[pos])
					pass = false;	/* a strict operator gives NULL */
				else
				{
					Datum		r;

					fcinfo->args[arg].value = d->values[pos];
					fcinfo->args[arg].isnull = false;
					fcinfo->isnull = false;
					r = FunctionCallInvoke(fcinfo);
					pass = !fcinfo->isnull && DatumGetBool(r);
				}
				break;
		}
		if (!pass)
			skip[pos >> 3] |= 1 << (pos & 7);
	}
}

#ifdef HAVE_INT128
/* A 128-bit integer as numeric */
static Datum
int128_numeric(int128 v)
{
	char		buf[48];
	char	   *p = buf + sizeof(buf) - 1;
	bool		neg = v < 0;
	uint128		u = neg ? -(uint128) v : (uint128) v;

	*p = '\0';
	do
	{
		*--p = '0' + (int) (u % 10);
		u /= 10;
	} while (u != 0);
	if (neg)
		*--p = '-';
	return DirectFunctionCall3(numeric_in, CStringGetDatum(p),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}
#endif

/* The aggregate's final value, as the built-in final function gives it */
static Datum
final_value(AggAccum *a, bool *isnull)
{
	*isnull = false;
	switch (a->kind)
	{
		case AK_COUNT_STAR:
		case AK_COUNT:
			return Int64GetDatum(a->count);
		default:
			break;
	}
	if (a->count == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (a->kind)
	{
		case AK_SUM_INT:
			return Int64GetDatum(a->isum);
		case AK_AVG_INT:
			return DirectFunctionCall2(numeric_div,
									   NumericGetDatum(int64_to_numeric(a->isum)),
									   NumericGetDatum(int64_to_numeric(a->count)));
#ifdef HAVE_INT128
		case AK_SUM_INT8:
			return int128_numeric(a->bigsum);
		case AK_AVG_INT8:
			return DirectFunctionCall2(numeric_div, int128_numeric(a->bigsum),
									   NumericGetDatum(int64_to_numeric(a->count)));
#endif
		case AK_SUM_FLOAT4:
		case AK_MIN_FLOAT4:
		case AK_MAX_FLOAT4:
			return Float4GetDatum(a->f4);
		case AK_SUM_FLOAT8:
		case AK_MIN_FLOAT8:
		case AK_MAX_FLOAT8:
			return Float8GetDatum(a->f8);
		case AK_MIN_INT:
		case AK_MAX_INT:
			return int_datum(a->ival, a->argtype);
		default:
			elog(ERROR, "unexpected colfile aggregate kind %d", (int) a->kind);
	}
	return (Datum) 0;
}

/*
 * Evaluate condition c's value (a scan evaluates it when a row first
 * reaches it, so a value that fails is only an error where the scan's
 * would be one), and make it a key for skipping row groups
 */
static void
evaluate_value(AggScanState *st, AggCond *c, TupleDesc desc)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	Form_pg_attribute att = TupleDescAttr(desc, c->col);
	Oid			type = exprType((Node *) c->value_state->expr);
	bool		isnull;
	Datum		v;
	MemoryContext old;
	Var		   *var;
	Const	   *con;
	int16		typlen;
	bool		typbyval;

	v = ExecEvalExprSwitchContext(c->value_state, econtext, &isnull);
	old = MemoryContextSwitchTo(st->value_cxt);
	c->evaluated = true;
	c->value_null = isnull;
	if (!isnull)
	{
		get_typlenbyval(type, &typlen, &typbyval);
		v = datumCopy(v, typbyval, typlen);
		c->fcinfo->args[c->var_left ? 1 : 0].value = v;
		c->fcinfo->args[c->var_left ? 1 : 0].isnull = false;
		var = makeVar(1, c->col + 1, att->atttypid, att->atttypmod, att->attcollation, 0);
		con = makeConst(type, -1, InvalidOid, typlen, v, false, typbyval);
		c->skip_key = make_opclause(c->opno, BOOLOID, false,
									c->var_left ? (Expr *) var : (Expr *) con,
									c->var_left ? (Expr *) con : (Expr *) var,
									InvalidOid, c->collation);
	}
	MemoryContextSwitchTo(old);
}

/* Rows of a group not marked in skip */
static int64
count_unskipped(const uint8 *skip, int nrows)
{
	int			full = nrows / 8;
	int64		n = nrows - (int64) pg_popcount((const char *) skip, full);

	for (int pos = full * 8; pos < nrows; pos++)
		if (ROW_SKIPPED(skip, pos))
			n--;
	return n;
}

/* Skip row groups by the conditions whose values are known */
static void
set_skip_keys(AggScanState *st, TableScanDesc scan)
{
	MemoryContext old = MemoryContextSwitchTo(st->value_cxt);
	List	   *keys = NIL;

	for (int i = 0; i < st->nconds; i++)
		if (st->conds[i].skip_key != NULL)
			keys = lappend(keys, st->conds[i].skip_key);
	MemoryContextSwitchTo(old);
	ColfileScanSetSkipQuals(scan, keys, 1);
}

/* Scan the table once and fold every aggregate */
static void
compute_aggregates(AggScanState *st)
{
	ScanState  *ss = &st->css.ss;
	Relation	rel = ss->ss_currentRelation;
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = ss->ps.state;
	TableScanDesc scan;
	ColfileGroupCache *gc;
	const uint8 *gone;
	bool		per_row;
	uint8	   *checked = NULL;
	int			checked_len = 0;
	bool	   *skip_rows = NULL;
	int			skip_rows_len = 0;
	int64		visible_rows = 0;
	bool		keys_changed = false;
	bool		retract;
	bool		needs_bools;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	for (int i = 0; i < st->naggs; i++)
	{
		AggKind		kind = st->accums[i].kind;
		int			col = st->accums[i].col;
		Oid			argtype = st->accums[i].argtype;

		memset(&st->accums[i], 0, sizeof(AggAccum));
		st->accums[i].kind = kind;
		st->accums[i].col = col;
		st->accums[i].argtype = argtype;
	}

	/* the conditions' values: once, when a row first reaches each */
	ResetExprContext(econtext);
	MemoryContextReset(st->value_cxt);
	for (int i = 0; i < st->nconds; i++)
	{
		st->conds[i].evaluated = false;
		st->conds[i].skip_key = NULL;
	}
	/*
	 * Values without a subquery (constants, parameters, now()) are known
	 * before the scan, so their keys skip groups from the first; a
	 * subquery's value is computed when a row first reaches its condition,
	 * as a scan computes it (its errors, and its cost, only then).
	 */
	for (int i = 0; i < st->nconds; i++)
		if (st->conds[i].kind == COND_OP && st->conds[i].eager)
		{
			evaluate_value(st, &st->conds[i], desc);
			keys_changed = true;
		}
	scan = table_beginscan(rel, estate->es_snapshot, 0, NULL);
	ColfileScanSetNeeded(scan, st->needed ? st->needed : bms_make_singleton(0));
	if (keys_changed)
		set_skip_keys(st, scan);
	keys_changed = false;
	while ((gc = ColfileScanNextLoadedGroup(scan, &gone, &per_row)) != NULL)
	{
		int			nrows = gc->rg.nrows;
		const uint8 *skip = gone;
		int64		nvisible = nrows;

		st->groups_read++;
		CHECK_FOR_INTERRUPTS();
		if (per_row || st->nconds > 0)
		{
			/* rows skipped: hidden, or refused by a condition */
			if (checked_len < (nrows + 7) / 8)
			{
				checked_len = (nrows + 7) / 8;
				checked = checked ? repalloc(checked, checked_len) : palloc(checked_len);
			}
			if (gone != NULL)
				memcpy(checked, gone, (nrows + 7) / 8);
			else
				memset(checked, 0, (nrows + 7) / 8);
			/* (judged one by one: not expected under MVCC) */
			if (per_row)
				for (int pos = 0; pos < nrows; pos++)
					if (!ColfileScanRowVisible(scan, pos))
						checked[pos >> 3] |= 1 << (pos & 7);
			/* the scan's statistics count the rows it returns, before conditions */
			visible_rows += count_unskipped(checked, nrows);
			for (int i = 0; i < st->nconds; i++)
			{
				AggCond    *c = &st->conds[i];

				if (c->kind == COND_OP && !c->evaluated)
				{
					/* reached by a row of this group? */
					bool		reached = false;

					for (int pos = 0; pos < nrows && !reached; pos++)
						reached = !ROW_SKIPPED(checked, pos);
					if (!reached)
						break;
					evaluate_value(st, c, desc);
					keys_changed = true;
				}
				if (c->kind == COND_OP && c->value_null)
					memset(checked, 0xFF, (nrows + 7) / 8);
				else
					apply_cond(c, ColfileGroupColumn(rel, gc, c->col, desc), nrows, checked);
			}
			skip = checked;
			if (keys_changed)
			{
				/* later groups are skipped by the values known now */
				set_skip_keys(st, scan);
				keys_changed = false;
			}
		}
		if (skip != NULL)
			nvisible = count_unskipped(skip, nrows);
		if (!(per_row || st->nconds > 0))
			visible_rows += nvisible;
		/* few rows to skip: folded whole and taken back where the state allows */
		retract = skip != NULL && nvisible > 0 && (nrows - nvisible) * 8 <= nrows;
		needs_bools = false;
		for (int i = 0; i < st->naggs; i++)
			if (st->accums[i].kind != AK_COUNT_STAR &&
				!(retract && retractable_kind(st->accums[i].kind)))
				needs_bools = true;
		/* the bitmap as a bool per row, once per group: the folds test a byte */
		if (needs_bools && skip != NULL && nvisible > 0 && nvisible < nrows)
		{
			if (skip_rows_len < nrows)
			{
				skip_rows_len = nrows;
				skip_rows = skip_rows ? repalloc(skip_rows, nrows) : palloc(nrows);
			}
			for (int pos = 0; pos < nrows; pos++)
				skip_rows[pos] = ROW_SKIPPED(skip, pos);
		}
		for (int i = 0; i < st->naggs; i++)
		{
			AggAccum   *a = &st->accums[i];

			if (a->kind == AK_COUNT_STAR)
				a->count += nvisible;
			else if (nvisible > 0 && nvisible < nrows && retract &&
					 retractable_kind(a->kind))
			{
				const ColfileDecoded *d = ColfileGroupColumn(rel, gc, a->col, desc);

				fold_column(a, d, nrows, NULL);
				unfold_skipped(a, d, nrows, skip);
			}
			else if (nvisible > 0)
				fold_column(a, ColfileGroupColumn(rel, gc, a->col, desc), nrows,
							nvisible < nrows ? skip_rows : NULL);
		}
	}
	if (skip_rows)
		pfree(skip_rows);
	ColfileScanCountRows(scan, visible_rows);
	st->groups_skipped += ColfileScanGroupsSkipped(scan);
	table_endscan(scan);
	if (checked)
		pfree(checked);
}

static TupleTableSlot *
agg_scan_next(ScanState *ss)
{
	AggScanState *st = (AggScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	MemoryContext old;

	ExecClearTuple(slot);
	if (st->done)
		return slot;
	st->done = true;
	compute_aggregates(st);
	MemoryContextReset(st->result_cxt);
	old = MemoryContextSwitchTo(st->result_cxt);
	for (int i = 0; i < st->naggs; i++)
		slot->tts_values[i] = final_value(&st->accums[i], &slot->tts_isnull[i]);
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

static bool
agg_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_agg_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, agg_scan_next, agg_scan_recheck);
}

static void
end_agg_scan(CustomScanState *node)
{
	AggScanState *st = (AggScanState *) node;

	MemoryContextDelete(st->result_cxt);
	MemoryContextDelete(st->value_cxt);
}

static void
rescan_agg_scan(CustomScanState *node)
{
	AggScanState *st = (AggScanState *) node;

	st->done = false;
}

static void
explain_agg_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AggScanState *st = (AggScanState *) node;

	if (st->conditions[0] != '\0')
		ExplainPropertyText("Conditions", st->conditions, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Row Groups Read", NULL, st->groups_read, es);
		if (st->nconds > 0)
			ExplainPropertyInteger("Row Groups Skipped", NULL, st->groups_skipped, es);
	}
}

/* Install the hook and the GUC */
void
ColfileAggScanInit(void)
{
	DefineCustomBoolVariable("mvinc.colfile_aggregate_scan",
							 "Computes whole-table aggregates of colfile tables over decoded columns.",
							 "When on, a query that aggregates one colfile table without GROUP BY, with WHERE conditions of the form column op value or column IS [NOT] NULL, using count, sum, min, max or avg of integer, float or date/time columns, is planned as one Colfile Aggregate node instead of an Aggregate over a sequential scan.",
							 &colfile_aggregate_scan,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	RegisterCustomScanMethods(&agg_scan_methods);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = colfile_upper_paths;
}
