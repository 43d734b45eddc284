/*-------------------------------------------------------------------------
 * mv_read.c
 *	  Read redirection: the planner hook replaces every range-table entry
 *	  of an incremental view by a subquery (built in mv_readquery.c)
 *
 *	    SELECT finalized storage columns FROM mvinc.mv_<oid>
 *	      WHERE mvinc._read_branch(oid) = 'fresh'
 *	    UNION ALL
 *	    SELECT finalized merged columns FROM (mvinc.mv_<oid> merged per group
 *	      with mvinc.mv_<oid>_append) WHERE mvinc._read_branch(oid) = 'merge'
 *	    UNION ALL
 *	    SELECT * FROM (original query) q WHERE mvinc._read_branch(oid) = 'live'
 *
 *	  Once the planner has planned the arms, mv_readscan.c replaces the
 *	  union by one plan node that decides at executor start which arm runs
 *	  and is costed as the arm it expects.  The guards stay as a safety
 *	  net: _read_branch() is stable and its pseudo-constant quals become
 *	  one-time filters, so the branch is chosen when the query executes,
 *	  not when it is planned: cached plans and prepared statements stay
 *	  correct even where the union is planned as a plain Append.  It
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
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "catalog/heap.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "mvinc.h"
#include "history/history.h"
#include "mv/mv.h"

static planner_hook_type prev_planner_hook = NULL;
static get_relation_info_hook_type prev_get_relation_info_hook = NULL;
static ExecutorStart_hook_type prev_executor_start_hook = NULL;


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
	if (mvinc_refresh_depth == 0 && !mvinc_history_manual_edit && rte->relkind == RELKIND_RELATION &&
		get_rel_namespace(rte->relid) == MvincSchemaOid() && HistIsStorageTable(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot change storage table \"%s\" of a history view",
						get_rel_name(rte->relid)),
				 errdetail("The storage table is written only by refresh and mvinc.history_load()."),
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

/*
 * Turn the range-table entry of an incremental or history view into its
 * read subquery; false when it stays as it is.  When the entry is number
 * rti of a query level whose conditions are conds (MvLevelConditions), the
 * key conditions among them go into the read's delta (mv_keyfilter.c).
 */
static bool
redirect_rte(RangeTblEntry *rte, List *conds, int rti)
{
	Oid			viewid = rte->relid;
	bool		history = MvIsHistoryView(viewid);
	Query	   *sub = history ? MvHistoryReadQuery(viewid, rte) : MvReadQuery(viewid, rte);
	MvDef	   *def;

	if (sub == NULL)
		return false;
	if (rte->tablesample != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TABLESAMPLE is not supported on %s materialized view \"%s\"",
						history ? "history" : "incremental", get_rel_name(viewid)),
				 errdetail("Its rows are read from its storage and the source's changes, not from its own pages."),
				 errhint("Sample in a subquery instead, for example WHERE random() < 0.1.")));
	def = history ? NULL : MvDefForView(viewid);
	if (def && conds != NIL)
		MvPushKeyConditions(conds, rti, viewid, def, sub);

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

	/*
	 * A native matview does not store the groups its HAVING hides; here
	 * they are filtered at read time, so the reader's conditions that are
	 * not leakproof must run above that filter (leakproof ones still go
	 * down).
	 */
	rte->security_barrier = def && def->having != NULL;
	return true;
}

/*
 * The rows of a redirected view are computed, not stored in its relation:
 * it has no ctid, xmin or tableoid to show (the planner would fail with
 * an internal error).
 */
typedef struct SysColumnSearch
{
	int			rti;
	int			depth;			/* query levels below the view's */
	AttrNumber	found;
} SysColumnSearch;

static bool
system_column_walker(Node *node, SysColumnSearch *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == ctx->rti && var->varlevelsup == ctx->depth && var->varattno < 0)
		{
			ctx->found = var->varattno;
			return true;
		}
		return false;
	}
	if (IsA(node, Query))
	{
		bool		r;

		ctx->depth++;
		r = query_tree_walker((Query *) node, system_column_walker, ctx, 0);
		ctx->depth--;
		return r;
	}
	return expression_tree_walker(node, system_column_walker, ctx);
}

static void
refuse_system_columns(Query *q, int rti, Oid viewid)
{
	SysColumnSearch ctx = {rti, 0, 0};

	if (query_tree_walker(q, system_column_walker, &ctx, 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read system column \"%s\" of materialized view \"%s\"",
						NameStr(SystemAttributeDefinition(ctx.found)->attname),
						get_rel_name(viewid)),
				 errdetail("Its rows are computed from its storage and its source's changes."),
				 errhint("Select the view's own columns.")));
}

/*
 * Replace the incremental views read by one query level; recurse.  A
 * query level in FROM gets (context) the key conditions its enclosing
 * level applies to its rows.
 */
static bool
redirect_walker(Node *node, void *context)
{
	Query	   *q;
	ListCell   *lc;
	List	   *extra = (List *) context;
	List	   *conds = NIL;
	bool		have_conds = false;

	if (node == NULL)
		return false;
	if (!IsA(node, Query))
		return expression_tree_walker(node, redirect_walker, NULL);
	q = (Query *) node;
	refuse_write(q);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		int			rti = foreach_current_index(lc) + 1;

		/* (the level's conditions, once, where a view or subquery may take some) */
		if (!have_conds && (rte->rtekind == RTE_SUBQUERY || rte->rtekind == RTE_RELATION))
		{
			conds = MvLevelConditions(q, extra);
			have_conds = true;
		}
		/* a subquery in FROM (a plain view, say), with what this level keeps of it */
		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
		{
			(void) redirect_walker((Node *) rte->subquery,
								   MvKeyConditionsForSubquery(conds, rti, rte->subquery));
			continue;
		}
		if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
			!rte->inFromCl || rti == q->resultRelation)
			continue;
		if (!MvIsIncrementalView(rte->relid) && !MvIsHistoryView(rte->relid))
			continue;
		if (get_parse_rowmark(q, rti) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot lock rows of materialized view \"%s\"", get_rel_name(rte->relid)),
					 errhint("Remove FOR UPDATE or FOR SHARE.")));
		refuse_system_columns(q, rti, rte->relid);
		(void) redirect_rte(rte, conds, rti);
	}
	return query_tree_walker(q, redirect_walker, NULL, QTW_IGNORE_RT_SUBQUERIES);
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

/* Views the query being planned reads in place of their source */
List	   *mv_rewritten_views = NIL;

/* Planner hook: rewrite onto views, redirect reads of incremental views */
static PlannedStmt *
mv_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	Oid			schema = MvincSchemaOid();
	List	   *rewritten = NIL;
	bool		role_dependent = false;
	List	   *outer = mv_rewritten_views;
	PlannedStmt *stmt;

	/*
	 * First what views can answer, then every read of a view redirected.
	 * A query of a source must never read stale: not under
	 * mvinc.read_path = stale_ok, which would take the storage as last
	 * refreshed (changing the setting resets cached plans); nor inside a
	 * parallel worker, which cannot take the snapshots a read decides with.
	 */
	if (OidIsValid(schema) && mvinc_enable_rewrite &&
		mvinc_read_path_mode != MV_READ_PATH_STALE_OK && !IsInParallelMode() &&
		MvincExtensionReady())
		rewritten = MvRewriteQuery(parse, &role_dependent);
	if (OidIsValid(schema) &&
		((MvHasOwnChanges() && (parse->commandType != CMD_SELECT || parse->hasModifyingCTE)) ||
		 needs_work_walker((Node *) parse, &schema)) &&
		MvincExtensionReady())
		redirect_walker((Node *) parse, NULL);
	mv_rewritten_views = rewritten;
	PG_TRY();
	{
		if (prev_planner_hook)
			stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		mv_rewritten_views = outer;
	}
	PG_END_TRY();
	/* the rewrite checked whether the planning role may read views */
	if (role_dependent)
		stmt->dependsOnRole = true;
	return stmt;
}

/*
 * The planner builds a base relation for an incremental view that the
 * planner hook never saw: one inside a SQL function body that the planner
 * inlined (set-returning or scalar), which it parses only now. Redirect it
 * here, before any path is made: the entry becomes the same read subquery
 * and the relation a subquery relation, planned by set_subquery_pathlist.
 * Without this the view's own (empty) relation was scanned.
 */
static void
mv_get_relation_info(PlannerInfo *root, Oid relid, bool inhparent, RelOptInfo *rel)
{
	RangeTblEntry *rte;

	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relid, inhparent, rel);
	if (rel->reloptkind != RELOPT_BASEREL || inhparent)
		return;
	rte = root->simple_rte_array[rel->relid];
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
		!OidIsValid(MvincSchemaOid()) || !MvincExtensionReady() ||
		(!MvIsIncrementalView(relid) && !MvIsHistoryView(relid)))
		return;
	if (root->parse->resultRelation == (Index) rel->relid ||
		get_plan_rowmark(root->rowMarks, rel->relid) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot lock rows of materialized view \"%s\"", get_rel_name(relid)),
				 errhint("Remove FOR UPDATE or FOR SHARE.")));
	if (!redirect_rte(rte, NIL, 0))
		return;
	rel->rtekind = RTE_SUBQUERY;
	rel->indexlist = NIL;
	rel->statlist = NIL;
	rel->pages = 0;
	rel->tuples = 0;
	rel->allvisfrac = 0;
	rel->amflags = 0;
	rel->rel_parallel_workers = -1;
	rel->serverid = InvalidOid;
	rel->fdwroutine = NULL;
}

/*
 * Incremental views read by the queries started in this transaction, whose
 * rights the executor has checked (the view's own entry that read_query
 * keeps in the range table), each with the user who ran the query:
 * _read_branch() answers that user for these, and for views the caller
 * may SELECT, and refuses the others (a SECURITY DEFINER function's read
 * answers its owner, not its caller).  Reset at the next transaction; it
 * only grows by the views a transaction reads.
 */
static List *read_views = NIL;	/* viewid, userid, viewid, userid, ... */
static LocalTransactionId read_views_lxid = InvalidLocalTransactionId;

/* Did a query of this transaction run by userid read viewid? */
static bool
read_by_user(Oid viewid, Oid userid)
{
	if (read_views_lxid != MyProc->lxid)
		return false;
	for (int i = 0; i + 1 < list_length(read_views); i += 2)
		if (list_nth_oid(read_views, i) == viewid &&
			list_nth_oid(read_views, i + 1) == userid)
			return true;
	return false;
}

/* Remember the views whose entries a plan keeps for their rights check */
static void
note_read_views(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		MemoryContext old;

		if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_MATVIEW ||
			rte->inFromCl || !(rte->requiredPerms & ACL_SELECT))
			continue;
		if (read_views_lxid != MyProc->lxid)
		{
			list_free(read_views);
			read_views = NIL;
			read_views_lxid = MyProc->lxid;
		}
		if (read_by_user(rte->relid, GetUserId()))
			continue;
		old = MemoryContextSwitchTo(TopMemoryContext);
		read_views = lappend_oid(read_views, rte->relid);
		read_views = lappend_oid(read_views, GetUserId());
		MemoryContextSwitchTo(old);
	}
}

/*
 * May the current user learn (and make this backend compute) the read
 * branch of viewid?  Yes when a query of this transaction reads the view
 * (perhaps through a plain view whose owner may read it), or when the user
 * may SELECT it.
 */
bool
MvMayReadView(Oid viewid)
{
	if (read_by_user(viewid, GetUserId()))
		return true;
	return pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
}

/*
 * Per-snapshot memo of _read_branch(): all branches of a statement must see
 * one answer.  Keyed on what the snapshot sees (MvincSnapshotKey: xmin,
 * xmax, the in-progress xids and subxids, the command id) in this
 * transaction (lxid), not on xmin, xmax
 * and the command id alone: two READ COMMITTED statements can share those
 * and still see different transactions (one in progress for the first has
 * committed for the second).  Snapshots that see the same transactions
 * get the same answer, which is then still right.
 */
/* Filtered deltas kept per decision (the last ones computed) */
#define FILTERED_DELTAS 4

typedef struct FreshMemo
{
	Oid			viewid;
	Oid			userid;			/* the reader: hybrid only for direct readers */
	LocalTransactionId lxid;
	MvincSnapshotKey snapshot;	/* what its snapshot sees (ids in TopMemoryContext) */
	MvReadBranch branch;
	bool		delta_changes;	/* a hybrid read's delta has updates or deletes */
	Snapshot	delta_snapshot; /* ... the one to compute it in (keep_snapshot) */
	MvDeltaKey *delta_key;		/* ... what a delta of inserts is known by, or NULL */
	MemoryContext delta_cxt;	/* a hybrid read's delta computed ahead, or NULL */
	MvDeltaRows *delta;
	bool		delta_kept;		/* ... found in mv_deltacache.c */
	/* deltas of the groups that key conditions keep (mv_keyfilter.c) */
	MemoryContext filtered_cxt[FILTERED_DELTAS];
	char	   *filtered_ident[FILTERED_DELTAS];
	MvDeltaRows *filtered[FILTERED_DELTAS];
	int			filtered_next;
	bool		shown;			/* a delta was used (EXPLAIN's counts below) */
	bool		shown_kept;		/* ... kept from an earlier statement */
	int64		shown_delta_rows;	/* the last delta's rows, or -1 */
	int64		shown_replaced_rows;
	int			pins;			/* read nodes running on this decision */
	int			read_path;		/* mvinc.read_path when it was made */
	uint64		decision;		/* which decision it holds (MvReadPin) */
} FreshMemo;

/*
 * A ring of entries; pinned ones are skipped when one is reused, and the
 * ring grows when all are pinned: a read node's arm asks again (its guard)
 * while it runs, perhaps after many other decisions (a cursor), and must
 * get the node's answer.
 */
#define FRESH_MEMO_SIZE 16
static FreshMemo **fresh_memo = NULL;
static int	fresh_memo_size = 0;
static int	fresh_memo_next = 0;
static uint64 last_decision = 0;

/*
 * The read nodes whose arm runs now, innermost last.  An arm's guards and
 * delta functions answer from its node's decision, whoever runs it: a
 * cursor fetched after SET ROLE, or by the caller of the SECURITY DEFINER
 * function that opened it, runs as a user whose own decision may name
 * another arm (the arm that runs then found its guard false and returned
 * no rows).  An arm that fails leaves its entry behind: the abort of the
 * (sub)transaction it ran in removes it.
 */
typedef struct RunningArm
{
	Oid			viewid;
	MvReadPin	pin;
	SubTransactionId subid;		/* where it began running */
	Oid			runner;			/* the user running it (fetching) */
} RunningArm;

static RunningArm *running_arms = NULL;
static int	n_running_arms = 0;
static int	max_running_arms = 0;

static FreshMemo *running_decision(Oid viewid);

/*
 * The entry to fill with a new decision: the next unpinned one.  Entries
 * are allocated one by one and never move: a caller may hold one while
 * the delta it computes makes other decisions (a nested read) that grow
 * the memo.
 */
static FreshMemo *
memo_reuse(void)
{
	int			old_size = fresh_memo_size;

	if (fresh_memo == NULL)
	{
		fresh_memo = MemoryContextAlloc(TopMemoryContext, FRESH_MEMO_SIZE * sizeof(FreshMemo *));
		for (int i = 0; i < FRESH_MEMO_SIZE; i++)
			fresh_memo[i] = MemoryContextAllocZero(TopMemoryContext, sizeof(FreshMemo));
		fresh_memo_size = FRESH_MEMO_SIZE;
		old_size = fresh_memo_size;
	}
	for (int n = 0; n < fresh_memo_size; n++)
	{
		int			i = (fresh_memo_next + n) % fresh_memo_size;

		if (fresh_memo[i]->pins == 0)
		{
			fresh_memo_next = (i + 1) % fresh_memo_size;
			return fresh_memo[i];
		}
	}
	fresh_memo_size = old_size * 2;
	fresh_memo = repalloc(fresh_memo, fresh_memo_size * sizeof(FreshMemo *));
	for (int i = old_size; i < fresh_memo_size; i++)
		fresh_memo[i] = MemoryContextAllocZero(TopMemoryContext, sizeof(FreshMemo));
	fresh_memo_next = (old_size + 1) % fresh_memo_size;
	return fresh_memo[old_size];
}

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

/*
 * A copy of snap in cxt, registered nowhere: a hybrid
 * decision's latest snapshot, in which its delta is computed later, also
 * once the statement runs in parallel mode (which may take no new
 * snapshot).  Being older than the decision, the statement's own
 * snapshot, which stays registered while the statement runs, holds the
 * backend's xmin at or below this one's: the change-log rows it sees
 * cannot be pruned meanwhile.  Computing the delta in it is what the
 * decision checked: capture had caught up and retention had not begun
 * past the checkpoint in it.  (copied stays false: SPI's use pushes a
 * copy of its own.)
 */
static Snapshot
keep_snapshot(Snapshot snap, MemoryContext cxt)
{
	Size		size = sizeof(SnapshotData) + sizeof(TransactionId) * (snap->xcnt + Max(snap->subxcnt, 0));
	Snapshot	copy = MemoryContextAlloc(cxt, size);

	memcpy(copy, snap, sizeof(SnapshotData));
	copy->xip = (TransactionId *) (copy + 1);
	if (snap->xcnt > 0)
		memcpy(copy->xip, snap->xip, sizeof(TransactionId) * snap->xcnt);
	copy->subxip = copy->xip + snap->xcnt;
	/* (an overflowed snapshot's subxip is not read: CopySnapshot's rule) */
	if (snap->subxcnt > 0 && snap->subxip != NULL &&
		(!snap->suboverflowed || snap->takenDuringRecovery))
		memcpy(copy->subxip, snap->subxip, sizeof(TransactionId) * snap->subxcnt);
	copy->copied = false;
	copy->regd_count = 0;
	copy->active_count = 0;
	return copy;
}

/*
 * Decide the read branch for the active snapshot (uncached). Every read
 * of a view pays this once per statement, so it runs no SQL (catalog and
 * change log through their indexes) unless SERIALIZABLE asks for the
 * change log's writers.
 */
static MvReadBranch
compute_branch(Oid viewid, bool *changes, Snapshot *delta_snapshot, MvDeltaKey *key)
{
	Snapshot	active = GetActiveSnapshot();
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	Oid			changelog;
	XLogRecPtr	target;
	char	   *query_snap;
	MvDeltaKind delta;
	Snapshot	latest;
	MvVisibleXids visible = {0, NULL, 0};

	/* (in parallel mode no snapshot can be taken: the source answers) */
	if (mvinc_read_path_mode == MV_READ_PATH_LIVE || IsInParallelMode() ||
		cat == NULL || !cat->populated || !OidIsValid(cat->storage_oid) ||
		cat->checkpoint_snapshot == NULL ||
		cat->built_generation != cat->source_generation)
		return MV_READ_LIVE;
	/* asked for: the storage as the last refresh left it */
	if (mvinc_read_path_mode == MV_READ_PATH_STALE_OK)
		return cat->append_rows > 0 && OidIsValid(cat->append_oid) ? MV_READ_MERGE : MV_READ_FRESH;
	/* a delta kept for another checkpoint or storage is of no use now */
	MvDeltaCacheForgetStale(viewid, cat->storage_oid, cat->checkpoint_lsn);
	if (MvXactMayHaveWritten(cat->sourceid))
		return MV_READ_LIVE;
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog))
		return MV_READ_LIVE;
	/* SERIALIZABLE: before the wait, so that the wait covers the writers */
	MvSsiLockSource(cat->sourceid, active);

	/*
	 * Every commit the snapshot sees ends before the insert position now;
	 * capture need only reach the last of them that changed the source
	 * (not other tables' WAL).  SERIALIZABLE also asks the change log for
	 * writers the snapshot does not see, committed up to now: all of it.
	 */
	target = MvInsertLsn();
	if (!IsolationIsSerializable())
		target = MvCaptureTarget(cat->sourceid, target);
	if (!MvTryWaitForCapture(target, fresh_wait_timeout()))
	{
		last_wait_failure = GetCurrentTimestamp();
		return MV_READ_LIVE;
	}

	/*
	 * The checkpoint (and the storage) are read in the statement's snapshot,
	 * the change log in the latest one: capture may have written the rows
	 * of transactions the statement sees after the statement's snapshot was
	 * taken.  Retention may have removed rows since, too, once other
	 * refreshes moved the checkpoint past them (a REPEATABLE READ snapshot
	 * older than those refreshes still sees the old checkpoint).  It records
	 * how far in the same transaction (mvinc.tracked.retained_from), so read
	 * that bound in the same latest snapshot: when rows after the
	 * checkpoint may be gone, their absence proves nothing, and the read
	 * goes live.
	 */
	query_snap = MvSnapshotText(active, false);
	latest = RegisterSnapshot(GetLatestSnapshot());
	if (MvRetainedFromIn(cat->sourceid, latest) > cat->checkpoint_lsn)
		delta = MV_DELTA_OTHER;
	else
		delta = MvDeltaVisible(changelog, cat->checkpoint_lsn, query_snap,
							   cat->checkpoint_snapshot, latest, true,
							   MvHybridMaxDeltaRows(cat->sourceid), key ? &visible : NULL);
	/* a hybrid read computes its delta in this same one (see keep_snapshot) */
	if (delta != MV_DELTA_NONE && delta != MV_DELTA_OTHER && delta_snapshot)
		*delta_snapshot = keep_snapshot(latest, CurrentMemoryContext);
	UnregisterSnapshot(latest);
	if (delta == MV_DELTA_OTHER)
		return MV_READ_LIVE;
	if (IsolationIsSerializable())
	{
		MvSpiConnect();
		MvSsiCheckLoggedWriters(cat->sourceid, MvSourceName(changelog), cat->checkpoint_lsn,
								query_snap, active);
		MvSpiFinish();
	}
	if (delta != MV_DELTA_NONE)
	{
		/* (the definition only where it matters: analyzing it costs) */
		bool		projection = cat->kind == MV_KIND_PROJECTION;
		MvDef	   *def = projection || delta >= MV_DELTA_CHANGES ? MvDefForView(viewid) : NULL;

		/*
		 * An aggregate view retracts whole old rows (or recomputes groups);
		 * a projection view takes each row's last image, a key alone
		 * included.  The hybrid arm's delta is the whole view's: for a
		 * reader who may read the view only through a plain view (which may
		 * hide rows or columns), the defining query instead.
		 */
		if ((delta == MV_DELTA_KEYONLY && !projection) ||
			(delta >= MV_DELTA_CHANGES && !MvHybridCanReplace(def)) ||
			pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
			(projection && !MvHybridReaderMaySee(def, GetUserId())))
			return MV_READ_LIVE;
		*changes = delta >= MV_DELTA_CHANGES;
		/* a delta of inserts is known by its transactions (mv_deltacache.c) */
		if (key && !*changes && !projection)
		{
			key->viewid = viewid;
			key->storage_oid = cat->storage_oid;
			key->checkpoint_lsn = cat->checkpoint_lsn;
			key->generation = cat->built_generation;
			key->visible = visible;
		}
		return MV_READ_HYBRID;
	}
	return cat->append_rows > 0 && OidIsValid(cat->append_oid) ? MV_READ_MERGE : MV_READ_FRESH;
}

/* Does the memo entry's snapshot see exactly what snap sees? */
static bool
memo_matches(FreshMemo *m, Oid viewid, Snapshot snap)
{
	return m->viewid == viewid && m->userid == GetUserId() && m->lxid == MyProc->lxid &&
		MvincSnapshotKeyMatches(&m->snapshot, snap);
}

/* Free the deltas an entry keeps */
static void
memo_forget_deltas(FreshMemo *m)
{
	if (m->delta_cxt)
		MemoryContextDelete(m->delta_cxt);
	m->delta_cxt = NULL;
	m->delta = NULL;
	if (m->delta_snapshot)
		pfree(m->delta_snapshot);
	m->delta_snapshot = NULL;
	if (m->delta_key)
	{
		if (m->delta_key->visible.xids)
			pfree(m->delta_key->visible.xids);
		pfree(m->delta_key);
	}
	m->delta_key = NULL;
	for (int i = 0; i < FILTERED_DELTAS; i++)
	{
		if (m->filtered_cxt[i])
			MemoryContextDelete(m->filtered_cxt[i]);
		m->filtered_cxt[i] = NULL;
		m->filtered_ident[i] = NULL;
		m->filtered[i] = NULL;
	}
	m->filtered_next = 0;
	m->delta_kept = false;
	m->shown = false;
	m->shown_kept = false;
	m->shown_delta_rows = -1;
	m->shown_replaced_rows = 0;
}

/*
 * Which branch answers a read of the view for the active snapshot?  A
 * decision is reused under the same snapshot and mvinc.read_path; a read
 * node's arms (guard) also take the decision of a node running under
 * another mvinc.read_path (a cursor fetched after SET).
 */
static MvReadBranch
get_read_branch(Oid viewid, bool guard)
{
	Snapshot	snap = GetActiveSnapshot();
	FreshMemo  *m;
	int			i;
	MvReadBranch branch;
	bool		changes = false;
	Snapshot	delta_snapshot = NULL;
	MvDeltaKey	key = {InvalidOid};

	if (snap == NULL)
		return MV_READ_LIVE;
	for (i = 0; i < fresh_memo_size; i++)
	{
		if (memo_matches(fresh_memo[i], viewid, snap) &&
			fresh_memo[i]->read_path == mvinc_read_path_mode)
			return fresh_memo[i]->branch;
	}
	for (i = 0; guard && i < fresh_memo_size; i++)
	{
		if (memo_matches(fresh_memo[i], viewid, snap) && fresh_memo[i]->pins > 0)
			return fresh_memo[i]->branch;
	}
	branch = compute_branch(viewid, &changes, &delta_snapshot, &key);

	m = memo_reuse();
	m->viewid = InvalidOid;
	memo_forget_deltas(m);
	if (branch == MV_READ_HYBRID && delta_snapshot)
		m->delta_snapshot = keep_snapshot(delta_snapshot, TopMemoryContext);
	if (branch == MV_READ_HYBRID && OidIsValid(key.viewid) && key.visible.xids)
	{
		FullTransactionId *xids = MemoryContextAlloc(TopMemoryContext,
													 key.visible.nxids * sizeof(FullTransactionId));
		MvDeltaKey *kept = MemoryContextAlloc(TopMemoryContext, sizeof(MvDeltaKey));

		memcpy(xids, key.visible.xids, key.visible.nxids * sizeof(FullTransactionId));
		*kept = key;
		kept->visible.xids = xids;
		m->delta_key = kept;
	}
	MvincSnapshotKeySet(&m->snapshot, snap, TopMemoryContext);
	m->lxid = MyProc->lxid;
	m->branch = branch;
	m->delta_changes = changes;
	m->userid = GetUserId();
	m->read_path = mvinc_read_path_mode;
	m->decision = ++last_decision;
	m->viewid = viewid;
	return branch;
}

/* The decision for a read node that starts (or a read about to start) */
MvReadBranch
MvDecideReadBranch(Oid viewid)
{
	return get_read_branch(viewid, false);
}

/* The decision a read node's arm asks for (mvinc._read_branch) */
MvReadBranch
MvGetReadBranch(Oid viewid)
{
	FreshMemo  *m = running_decision(viewid);

	if (m != NULL)
		return m->branch;
	return get_read_branch(viewid, true);
}

/* The entry a pin holds, or NULL once it holds another decision */
static FreshMemo *
pinned_entry(MvReadPin pin)
{
	if (pin.memo < 0 || pin.memo >= fresh_memo_size ||
		fresh_memo[pin.memo]->decision != pin.decision || fresh_memo[pin.memo]->pins == 0)
		return NULL;
	return fresh_memo[pin.memo];
}

/*
 * Pin the decision for viewid under snap: a read node keeps its decision
 * in the memo while it runs.
 */
MvReadPin
MvPinReadBranch(Oid viewid, Snapshot snap)
{
	MvReadPin	pin = {-1, 0};

	for (int i = 0; i < fresh_memo_size; i++)
	{
		if (memo_matches(fresh_memo[i], viewid, snap) &&
			fresh_memo[i]->read_path == mvinc_read_path_mode)
		{
			fresh_memo[i]->pins++;
			pin.memo = i;
			pin.decision = fresh_memo[i]->decision;
			break;
		}
	}
	return pin;
}

/* A read node ends: let its decision go (whoever ends it) */
void
MvUnpinReadBranch(MvReadPin pin)
{
	FreshMemo  *m = pinned_entry(pin);

	if (m != NULL)
		m->pins--;
}

/* A read node runs its arm (until MvLeaveReadArm) */
void
MvEnterReadArm(Oid viewid, MvReadPin pin)
{
	if (n_running_arms == max_running_arms)
	{
		int			size = Max(8, max_running_arms * 2);

		if (running_arms == NULL)
			running_arms = MemoryContextAlloc(TopMemoryContext, size * sizeof(RunningArm));
		else
			running_arms = repalloc(running_arms, size * sizeof(RunningArm));
		max_running_arms = size;
	}
	running_arms[n_running_arms].viewid = viewid;
	running_arms[n_running_arms].pin = pin;
	running_arms[n_running_arms].subid = GetCurrentSubTransactionId();
	running_arms[n_running_arms].runner = GetUserId();
	n_running_arms++;
}

/* ... and returns from it */
void
MvLeaveReadArm(void)
{
	if (n_running_arms > 0)
		n_running_arms--;
}

/*
 * The decision of the innermost node of viewid whose arm runs, or NULL.
 * Only the arm's own guards and delta functions take it: they run as the
 * user who runs the arm, under the snapshot it was decided in.  Other
 * code called while the arm runs (a SECURITY DEFINER function of another
 * user, a statement of a function with a snapshot of its own) asks for
 * itself.
 */
static FreshMemo *
running_decision(Oid viewid)
{
	for (int i = n_running_arms - 1; i >= 0; i--)
		if (running_arms[i].viewid == viewid)
		{
			FreshMemo  *m = pinned_entry(running_arms[i].pin);
			Snapshot	snap = GetActiveSnapshot();

			if (m == NULL || running_arms[i].runner != GetUserId() || snap == NULL ||
				m->lxid != MyProc->lxid || !MvincSnapshotKeyMatches(&m->snapshot, snap))
				return NULL;
			return m;
		}
	return NULL;
}

/*
 * The user a running arm of viewid reads for (the decision's, whose
 * rights the executor checked when the node's query started), or
 * InvalidOid when none runs
 */
Oid
MvRunningReadUser(Oid viewid)
{
	FreshMemo  *m = running_decision(viewid);

	return m != NULL ? m->userid : InvalidOid;
}

/*
 * The transaction ended: no read node runs any more, and no entry will
 * match again (they are the transaction's): free their deltas.
 */
void
MvUnpinReadBranches(void)
{
	for (int i = 0; i < fresh_memo_size; i++)
	{
		FreshMemo  *m = fresh_memo[i];

		m->pins = 0;
		memo_forget_deltas(m);
	}
	n_running_arms = 0;
}

/*
 * A subtransaction rolled back: decisions made in it may rest on a
 * checkpoint, storage or append rows it wrote (a refresh, a compaction)
 * that are gone, under a snapshot that did not change.  Decisions of
 * running read nodes (pinned) were made before it and stay; the arms
 * that ran in subtransaction subid (or below it) no longer run.
 */
void
MvForgetReadDecisions(SubTransactionId subid)
{
	/* the arms that ran in it failed with it */
	while (n_running_arms > 0 && running_arms[n_running_arms - 1].subid >= subid)
		n_running_arms--;
	for (int i = 0; i < fresh_memo_size; i++)
	{
		FreshMemo  *m = fresh_memo[i];

		if (m->pins > 0)
			continue;
		m->viewid = InvalidOid;
		memo_forget_deltas(m);
	}
}

/* The delta rows of an entry computed in a context of their own (*cxt) */
static MvDeltaRows *
compute_delta_in(FreshMemo *m, MvDeltaFilter *filter, MemoryContext *cxt)
{
	MvDeltaRows *rows;
	MemoryContext old;

	*cxt = AllocSetContextCreate(TopMemoryContext, "mvinc hybrid delta", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(*cxt);
	PG_TRY();
	{
		rows = MvComputeDeltaRows(m->viewid, m->delta_changes, filter, m->delta_snapshot);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(*cxt);
		*cxt = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return rows;
}

/*
 * The whole delta of an entry: kept from an earlier statement that saw the
 * same transactions' changes (mv_deltacache.c), else computed, and kept.
 */
static MvDeltaRows *
whole_delta(FreshMemo *m)
{
	MvDeltaRows *rows = NULL;

	m->delta_kept = false;
	if (m->delta_key)
	{
		MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "mvinc hybrid delta",
												  ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		PG_TRY();
		{
			rows = MvDeltaCacheGet(m->delta_key);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			MemoryContextDelete(cxt);
			PG_RE_THROW();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		if (rows)
		{
			m->delta_cxt = cxt;
			m->delta_kept = true;
			return rows;
		}
		MemoryContextDelete(cxt);
	}
	rows = compute_delta_in(m, NULL, &m->delta_cxt);
	if (m->delta_key)
		MvDeltaCachePut(m->delta_key, rows);
	return rows;
}

/* Note rows as the entry's delta that EXPLAIN ANALYZE shows */
static MvDeltaRows *
shown(FreshMemo *m, MvDeltaRows *rows, bool kept)
{
	m->shown = true;
	m->shown_kept = kept;
	m->shown_delta_rows = rows && !rows->projection ? list_length(rows->tuples) : -1;
	m->shown_replaced_rows = rows ? list_length(rows->replaced) : 0;
	return rows;
}

/*
 * The delta rows of entry m, computed once and kept with the decision
 * (both arms of the read's merge use them).  With a filter, those of the
 * groups that pass it: the whole delta when it is already there (it holds
 * them), else kept apart with the filter's conditions and values, the
 * last few of them.
 */
static MvDeltaRows *
memo_delta(FreshMemo *m, MvDeltaFilter *filter)
{
	int			slot;

	if (m->delta != NULL || filter == NULL)
	{
		if (m->delta == NULL)
			m->delta = whole_delta(m);
		return shown(m, m->delta, m->delta_kept);
	}
	for (int j = 0; j < FILTERED_DELTAS; j++)
		if (m->filtered_ident[j] && strcmp(m->filtered_ident[j], filter->ident) == 0)
			return shown(m, m->filtered[j], false);
	slot = m->filtered_next;
	m->filtered_next = (slot + 1) % FILTERED_DELTAS;
	if (m->filtered_cxt[slot])
		MemoryContextDelete(m->filtered_cxt[slot]);
	m->filtered_cxt[slot] = NULL;
	m->filtered_ident[slot] = NULL;
	m->filtered[slot] = compute_delta_in(m, filter, &m->filtered_cxt[slot]);
	m->filtered_ident[slot] = MemoryContextStrdup(m->filtered_cxt[slot], filter->ident);
	return shown(m, m->filtered[slot], false);
}

/*
 * The delta rows of the hybrid read of viewid under snap: those of the
 * decision of the read node whose arm asks, else of the memoized decision
 * for snap, or computed and not kept when the decision is no longer
 * memoized.
 */
MvDeltaRows *
MvHybridDeltaRows(Oid viewid, Snapshot snap, MvDeltaFilter *filter)
{
	FreshMemo  *running = running_decision(viewid);

	/* a read node's arm: its decision's delta */
	if (running != NULL)
		return memo_delta(running, filter);
	for (int i = 0; i < fresh_memo_size; i++)
	{
		if (memo_matches(fresh_memo[i], viewid, snap))
			return memo_delta(fresh_memo[i], filter);
	}
	/* not memoized (a direct call): whether the delta has updates, ask anew */
	{
		bool		changes = false;
		Snapshot	delta_snapshot = NULL;

		if (IsInParallelMode())
			elog(ERROR, "the delta of materialized view %u was not decided before parallel mode",
				 viewid);
		(void) compute_branch(viewid, &changes, &delta_snapshot, NULL);
		return MvComputeDeltaRows(viewid, changes, filter, delta_snapshot);
	}
}

/*
 * The row counts of the delta last used by the hybrid read that holds pin
 * (EXPLAIN ANALYZE); false when none was computed.
 */
bool
MvMemoDeltaCounts(MvReadPin pin, int64 *delta_rows, int64 *replaced_rows, bool *kept)
{
	FreshMemo  *m = pinned_entry(pin);

	if (m == NULL || !m->shown)
		return false;
	*delta_rows = m->shown_delta_rows;
	*replaced_rows = m->shown_replaced_rows;
	*kept = m->shown_kept;
	return true;
}

/*
 * Executor start: note the views whose rights the executor checked (see
 * MvMayReadView).  A statement that runs in parallel mode cannot take the
 * latest snapshot or wait for capture once the executor has entered that
 * mode (ExecutorRun does), so decide the freshness of every redirected view
 * it reads now (the view's own entry stays in the range table);
 * _read_branch() then answers from the memo.
 */
static void
mv_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	/* First the rights checks (InitPlan), then the views they allowed */
	if (prev_executor_start_hook)
		prev_executor_start_hook(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	note_read_views(stmt);

	/* writes of a cached plan are not planned again: note them here */
	if (MvHasOwnChanges() && !(eflags & EXEC_FLAG_EXPLAIN_ONLY))
	{
		ListCell   *lc;

		foreach(lc, stmt->resultRelations)
			MvNoteSourceWrite(rt_fetch(lfirst_int(lc), stmt->rtable)->relid);
	}

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
			/* (a hybrid decision keeps the snapshot its delta is read in) */
			(void) MvDecideReadBranch(rte->relid);
		}
		if (pushed)
			PopActiveSnapshot();
	}
}

/* Install the planner and executor-start hooks */
void
MvReadInit(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = mv_planner;
	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = mv_get_relation_info;
	prev_executor_start_hook = ExecutorStart_hook;
	ExecutorStart_hook = mv_executor_start;
}
