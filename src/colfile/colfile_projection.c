/*-------------------------------------------------------------------------
 * colfile_projection.c
 *	  Projection pushdown: at executor start we work out, top down through
 *	  the plan, which output columns of every node its parent really uses,
 *	  and tell each sequential or index scan of a colfile table which table
 *	  columns it must decode. Scans started any other way (COPY TO,
 *	  EvalPlanQual, maintenance) decode every column.
 *
 * Why top down: the planner gives scans the "physical" target list (every
 * column) whenever the parent can project, so a scan's own target list
 * says little. A node's column references are its target list entries the
 * parent needs, its quals and its node-specific expressions and column
 * indexes; Vars in them with varno OUTER_VAR / INNER_VAR name output
 * columns of the left / right child. Node types not handled here make
 * their children produce every column (always correct, only slower).
 *
 * Non-parallel scans get their descriptor here, as SeqNext / IndexNext
 * would create it on first use. Parallel scans are begun by the executor's
 * DSM set-up, out of reach: their needs are registered per query (leader
 * and workers both run ExecutorStart) and scan_begin takes the union of
 * the running queries' needs for the relation.
 *
 * The hooks also note the columns each UPDATE assigns (colfile_column.c)
 * and flush write buffers at the end of each statement.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colfile/colfile.h"

typedef struct ParallelNeed
{
	QueryDesc  *query;
	Oid			relid;
	Bitmapset  *needed;			/* NULL: all */
} ParallelNeed;

static List *parallel_needs = NIL;	/* in TopMemoryContext */

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

typedef struct SetupContext
{
	QueryDesc  *query;
	EState	   *estate;
} SetupContext;

/* Output columns of the children referenced by expressions */
typedef struct ChildRefs
{
	Bitmapset  *outer;
	Bitmapset  *inner;
	bool		outer_all;
	bool		inner_all;
} ChildRefs;

static bool
child_refs_walker(Node *node, ChildRefs *refs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varno == OUTER_VAR)
		{
			if (v->varattno <= 0)
				refs->outer_all = true;
			else
				refs->outer = bms_add_member(refs->outer, v->varattno);
		}
		else if (v->varno == INNER_VAR)
		{
			if (v->varattno <= 0)
				refs->inner_all = true;
			else
				refs->inner = bms_add_member(refs->inner, v->varattno);
		}
		return false;
	}
	return expression_tree_walker(node, child_refs_walker, (void *) refs);
}

/* Table columns (1-based) referenced through scan relation relid; NULL = all */
static Bitmapset *
columns_of(List *exprs, Index relid)
{
	Bitmapset  *vars = NULL;
	Bitmapset  *needed = NULL;
	int			x = -1;

	pull_varattnos((Node *) exprs, relid, &vars);
	while ((x = bms_next_member(vars, x)) >= 0)
	{
		int			attno = x + FirstLowInvalidHeapAttributeNumber;

		if (attno == 0)
			return NULL;		/* whole-row reference */
		if (attno > 0)
			needed = bms_add_member(needed, attno);
	}
	if (needed == NULL)
		needed = bms_make_singleton(0); /* no column: not "all" */
	return needed;
}

/* Column needs of parallel scans of relid (NULL: all, or none registered) */
Bitmapset *
ColfileParallelNeeded(Oid relid)
{
	ListCell   *lc;
	Bitmapset  *result = NULL;
	bool		any = false;

	foreach(lc, parallel_needs)
	{
		ParallelNeed *pn = lfirst(lc);

		if (pn->relid != relid)
			continue;
		if (pn->needed == NULL)
			return NULL;
		result = bms_union(result, pn->needed);
		any = true;
	}
	return any ? result : NULL;
}

/* Forget the registrations of one query (or of all, query == NULL) */
static void
forget_parallel_needs(QueryDesc *query)
{
	ListCell   *lc;

	foreach(lc, parallel_needs)
	{
		ParallelNeed *pn = lfirst(lc);

		if (query == NULL || pn->query == query)
		{
			parallel_needs = foreach_delete_current(parallel_needs, lc);
			bms_free(pn->needed);
			pfree(pn);
		}
	}
}

/* Transaction end: no query runs any more */
void
ColfileProjectionXactEnd(void)
{
	forget_parallel_needs(NULL);
}

/* Set up a scan of a colfile table that reads the given columns */
static void
setup_scan(PlanState *ps, Bitmapset *needed, SetupContext *sc)
{
	EState	   *estate = sc->estate;

	if (IsA(ps, SeqScanState))
	{
		SeqScanState *ss = (SeqScanState *) ps;
		Relation	rel = ss->ss.ss_currentRelation;

		if (rel == NULL || !ColfileIsColfileRel(rel))
			return;
		if (ps->plan->parallel_aware)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
			ParallelNeed *pn = palloc(sizeof(ParallelNeed));

			pn->query = sc->query;
			pn->relid = RelationGetRelid(rel);
			pn->needed = bms_copy(needed);
			parallel_needs = lappend(parallel_needs, pn);
			MemoryContextSwitchTo(old);
		}
		else if (ss->ss.ss_currentScanDesc == NULL)
		{
			ss->ss.ss_currentScanDesc = table_beginscan(rel, estate->es_snapshot, 0, NULL);
			ColfileScanSetNeeded(ss->ss.ss_currentScanDesc, needed);
			ColfileScanSetSkipQuals(ss->ss.ss_currentScanDesc, ps->plan->qual,
									((Scan *) ps->plan)->scanrelid);
		}
	}
	else if (IsA(ps, IndexScanState) && !ps->plan->parallel_aware)
	{
		IndexScanState *is = (IndexScanState *) ps;
		Relation	rel = is->ss.ss_currentRelation;

		if (rel == NULL || !ColfileIsColfileRel(rel) || is->iss_ScanDesc != NULL ||
			is->iss_RelationDesc == NULL)
			return;
		/* as IndexNext would do on its first call */
		is->iss_ScanDesc = index_beginscan(rel, is->iss_RelationDesc,
										   estate->es_snapshot,
										   is->iss_NumScanKeys,
										   is->iss_NumOrderByKeys);
		if (is->iss_NumRuntimeKeys == 0 || is->iss_RuntimeKeysReady)
			index_rescan(is->iss_ScanDesc, is->iss_ScanKeys, is->iss_NumScanKeys,
						 is->iss_OrderByKeys, is->iss_NumOrderByKeys);
		if (needed)
			ColfileIndexFetchSetNeeded(is->iss_ScanDesc->xs_heapfetch, needed);
	}
	else if (IsA(ps, IndexOnlyScanState) && !ps->plan->parallel_aware)
	{
		IndexOnlyScanState *is = (IndexOnlyScanState *) ps;
		Relation	rel = is->ss.ss_currentRelation;

		if (rel == NULL || !ColfileIsColfileRel(rel) || is->ioss_ScanDesc != NULL ||
			is->ioss_RelationDesc == NULL)
			return;
		/* as IndexOnlyNext would do; the table is read for visibility only */
		is->ioss_ScanDesc = index_beginscan(rel, is->ioss_RelationDesc,
											estate->es_snapshot,
											is->ioss_NumScanKeys,
											is->ioss_NumOrderByKeys);
		is->ioss_ScanDesc->xs_want_itup = true;
		is->ioss_VMBuffer = InvalidBuffer;
		if (is->ioss_NumRuntimeKeys == 0 || is->ioss_RuntimeKeysReady)
			index_rescan(is->ioss_ScanDesc, is->ioss_ScanKeys, is->ioss_NumScanKeys,
						 is->ioss_OrderByKeys, is->ioss_NumOrderByKeys);
		ColfileIndexFetchSetNeeded(is->ioss_ScanDesc->xs_heapfetch, NULL);
	}
}

/* Add column indexes (into the child's output) to a set */
static Bitmapset *
add_cols(Bitmapset *set, int n, AttrNumber *cols)
{
	int			i;

	for (i = 0; i < n; i++)
		set = bms_add_member(set, cols[i]);
	return set;
}

static void propagate(PlanState *ps, Bitmapset *needed_out, bool all,
					  SetupContext *sc);

/* Everything below ps produces every column */
static bool
propagate_all_walker(PlanState *ps, void *context)
{
	propagate(ps, NULL, true, (SetupContext *) context);
	return false;
}

/*
 * ps's parent uses the output columns needed_out of ps (all: every one);
 * set up ps's colfile scans and recurse.
 */
static void
propagate(PlanState *ps, Bitmapset *needed_out, bool all, SetupContext *sc)
{
	Plan	   *plan;
	List	   *exprs = NIL;
	ChildRefs	refs;
	ListCell   *lc;
	bool		known = true;

	if (ps == NULL)
		return;
	plan = ps->plan;
	memset(&refs, 0, sizeof(refs));

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (all || bms_is_member(tle->resno, needed_out))
			exprs = lappend(exprs, tle->expr);
	}
	exprs = list_concat(exprs, plan->qual);

	switch (nodeTag(plan))
	{
		case T_SeqScan:
			setup_scan(ps, columns_of(exprs, ((Scan *) plan)->scanrelid), sc);
			break;
		case T_IndexScan:
			{
				IndexScan  *p = (IndexScan *) plan;

				exprs = list_concat(exprs, p->indexqualorig);
				exprs = list_concat(exprs, p->indexorderbyorig);
				setup_scan(ps, columns_of(exprs, p->scan.scanrelid), sc);
				break;
			}
		case T_IndexOnlyScan:
			setup_scan(ps, NULL, sc);
			break;
		case T_Agg:
			{
				Agg		   *p = (Agg *) plan;

				if (p->groupingSets != NIL || p->chain != NIL)
					known = false;
				refs.outer = add_cols(refs.outer, p->numCols, p->grpColIdx);
				break;
			}
		case T_Group:
			refs.outer = add_cols(refs.outer, ((Group *) plan)->numCols,
								  ((Group *) plan)->grpColIdx);
			break;
		case T_Sort:
		case T_IncrementalSort:
			refs.outer = add_cols(refs.outer, ((Sort *) plan)->numCols,
								  ((Sort *) plan)->sortColIdx);
			break;
		case T_Unique:
			refs.outer = add_cols(refs.outer, ((Unique *) plan)->numCols,
								  ((Unique *) plan)->uniqColIdx);
			break;
		case T_GatherMerge:
			refs.outer = add_cols(refs.outer, ((GatherMerge *) plan)->numCols,
								  ((GatherMerge *) plan)->sortColIdx);
			break;
		case T_Limit:
			{
				Limit	   *p = (Limit *) plan;

				exprs = lappend(exprs, p->limitOffset);
				exprs = lappend(exprs, p->limitCount);
				refs.outer = add_cols(refs.outer, p->uniqNumCols, p->uniqColIdx);
				break;
			}
		case T_Gather:
		case T_Material:
			break;
		case T_Result:
			exprs = lappend(exprs, ((Result *) plan)->resconstantqual);
			break;
		case T_Hash:
			exprs = list_concat(exprs, ((Hash *) plan)->hashkeys);
			break;
		case T_HashJoin:
			exprs = list_concat(exprs, ((HashJoin *) plan)->hashclauses);
			exprs = list_concat(exprs, ((HashJoin *) plan)->hashkeys);
			exprs = list_concat(exprs, ((Join *) plan)->joinqual);
			break;
		case T_MergeJoin:
			exprs = list_concat(exprs, ((MergeJoin *) plan)->mergeclauses);
			exprs = list_concat(exprs, ((Join *) plan)->joinqual);
			break;
		case T_NestLoop:
			exprs = list_concat(exprs, ((Join *) plan)->joinqual);
			foreach(lc, ((NestLoop *) plan)->nestParams)
				exprs = lappend(exprs, ((NestLoopParam *) lfirst(lc))->paramval);
			break;
		default:
			known = false;
			break;
	}

	if (known)
	{
		(void) child_refs_walker((Node *) exprs, &refs);
		propagate(outerPlanState(ps), refs.outer, refs.outer_all, sc);
		propagate(innerPlanState(ps), refs.inner, refs.inner_all, sc);
		/* subplans in expressions produce what they produce */
		foreach(lc, ps->initPlan)
			propagate(((SubPlanState *) lfirst(lc))->planstate, NULL, true, sc);
		foreach(lc, ps->subPlan)
			propagate(((SubPlanState *) lfirst(lc))->planstate, NULL, true, sc);
	}
	else
		planstate_tree_walker(ps, propagate_all_walker, sc);
}

static void
colfile_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		ColfileColumnNoteStatement(queryDesc);
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && queryDesc->planstate)
	{
		SetupContext sc;

		sc.query = queryDesc;
		sc.estate = queryDesc->estate;
		propagate(queryDesc->planstate, NULL, true, &sc);
	}
}

static void
colfile_ExecutorEnd(QueryDesc *queryDesc)
{
	/* a plain SELECT writes nothing (its es_output_cid is not its own) */
	if (queryDesc->estate != NULL &&
		(queryDesc->operation != CMD_SELECT || queryDesc->plannedstmt->hasModifyingCTE))
		ColfileFlushStatementEnd(queryDesc->estate->es_output_cid);
	else
		ColfileFlushStatementEnd(InvalidCommandId);
	ColfileColumnForgetStatement(queryDesc);
	forget_parallel_needs(queryDesc);
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/* Install the executor hooks */
void
ColfileProjectionInit(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = colfile_ExecutorStart;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = colfile_ExecutorEnd;
}
