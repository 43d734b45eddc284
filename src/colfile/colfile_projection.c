/*-------------------------------------------------------------------------
 * colfile_projection.c
 *	  Projection pushdown: at executor start, every sequential scan and
 *	  index scan of a colfile table gets its scan descriptor early, told
 *	  which columns the plan node reads (target list and quals); scans then
 *	  decode only those chunks. Scans started any other way (COPY TO,
 *	  parallel workers, EvalPlanQual) decode every column.
 *
 * Also flushes the write buffers at the end of every statement.
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
#include "utils/rel.h"

#include "colfile/colfile.h"


static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

/* Columns (1-based) referenced by these expressions of scan relation relid; NULL = all */
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
			return NULL;
		if (attno > 0)
			needed = bms_add_member(needed, attno);
	}
	if (needed == NULL)
		needed = bms_make_singleton(0);	/* no column: not "all" */
	return needed;
}

static bool
setup_scans(PlanState *ps, void *context)
{
	EState	   *estate = (EState *) context;

	if (ps == NULL)
		return false;
	if (!ps->plan->parallel_aware)
	{
		if (IsA(ps, SeqScanState))
		{
			SeqScanState *ss = (SeqScanState *) ps;
			Relation	rel = ss->ss.ss_currentRelation;

			if (rel && ColfileIsColfileRel(rel) && ss->ss.ss_currentScanDesc == NULL)
			{
				Scan	   *plan = (Scan *) ps->plan;
				Bitmapset  *needed = columns_of(list_concat_copy(plan->plan.targetlist,
																 plan->plan.qual),
												plan->scanrelid);

				ss->ss.ss_currentScanDesc = table_beginscan(rel, estate->es_snapshot, 0, NULL);
				ColfileScanSetNeeded(ss->ss.ss_currentScanDesc, needed);
			}
		}
		else if (IsA(ps, IndexScanState))
		{
			IndexScanState *is = (IndexScanState *) ps;
			Relation	rel = is->ss.ss_currentRelation;

			if (rel && ColfileIsColfileRel(rel) && is->iss_ScanDesc == NULL &&
				is->iss_RelationDesc != NULL)
			{
				IndexScan  *plan = (IndexScan *) ps->plan;
				List	   *exprs = list_concat_copy(plan->scan.plan.targetlist,
													 plan->scan.plan.qual);
				Bitmapset  *needed;

				exprs = list_concat(exprs, plan->indexqualorig);
				exprs = list_concat(exprs, plan->indexorderbyorig);
				needed = columns_of(exprs, plan->scan.scanrelid);
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
		}
		else if (IsA(ps, IndexOnlyScanState))
		{
			IndexOnlyScanState *is = (IndexOnlyScanState *) ps;
			Relation	rel = is->ss.ss_currentRelation;

			if (rel && ColfileIsColfileRel(rel) && is->ioss_ScanDesc == NULL &&
				is->ioss_RelationDesc != NULL)
			{
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
	}
	return planstate_tree_walker(ps, setup_scans, context);
}

static void
colfile_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && queryDesc->planstate)
		setup_scans(queryDesc->planstate, queryDesc->estate);
}

static void
colfile_ExecutorEnd(QueryDesc *queryDesc)
{
	ColfileFlushAll();
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
