/*-------------------------------------------------------------------------
 * mv_rewrite.c
 *	  Transparent rewrite: an aggregate query over the source of an
 *	  incremental view that the view can answer is planned onto the view.
 *
 *	  The planner hook calls MvRewriteQuery before reads of views are
 *	  redirected, so a rewritten query reads the view through the same
 *	  Fresh / Hybrid / Live node as any read of it and is never stale.
 *	  One query level is rewritten when it reads one table (no join, no
 *	  sublink, no lock, no sample, nothing volatile, no system column, no
 *	  outer reference) and groups or aggregates, and a populated aggregate
 *	  view of that table without HAVING answers it:
 *
 *	  - every conjunct of the view's WHERE is implied by the query's
 *	    (predtest: equal conjuncts, ranges on one column); each conjunct of
 *	    the query either is implied by the view's or is an expression over
 *	    the view's group keys (applied to the view's rows, only for keys of
 *	    types whose equality is identity: otherwise a condition could tell
 *	    apart rows the view grouped together, as 1.0 and 1.00 of numeric);
 *	  - every GROUP BY expression of the query is a group key the view
 *	    shows; with all of the view's keys each view row is one group of
 *	    the query (direct), with fewer the view's rows are combined
 *	    (roll-up: sum of sums and counts, min of mins, ...);
 *	  - every aggregate is one the view shows (FILTER included), or avg
 *	    from a shown sum and count of the same argument; outside aggregates
 *	    only group keys and the view's expressions are used.
 *
 *	  The source's range-table entry stays in the rewritten query, outside
 *	  the join tree, so the executor still checks the reader's SELECT
 *	  rights on the source columns the query names, as without the
 *	  rewrite; the view's entry asks SELECT on the view columns read (the
 *	  rewrite uses only views the planning role may read, and the plan is
 *	  kept for that role).  Aggregates adding floating-point values, views
 *	  converting values through output functions (settings-dependent) and
 *	  groupings by another equality than the view's are not rewritten.  Of the
 *	  views that answer, the one with the fewest stored rows is read.
 *	  mvinc.explain_rewrite(query) reports each candidate's verdict.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteManip.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "access/htup_details.h"
#include "storage/lmgr.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "mv/mv.h"

bool		mvinc_enable_rewrite = true;

/* set while mvinc's internal sections turn the rewrite off and on */
bool		mv_rewrite_internal_change = false;

/*
 * A user's change of mvinc.enable_rewrite replans cached plans, so that
 * turning it off takes rewritten plans out of use at once
 */
void
MvAssignEnableRewrite(bool newval, void *extra)
{
	if (newval != mvinc_enable_rewrite && !mv_rewrite_internal_change)
		ResetPlanCache();
}

/* a view was passed over because the planning role may not read it */
static bool role_refused = false;

/* One view's answer to one query level */
typedef struct Match
{
	Oid			viewid;
	Oid			sourceid;
	Index		srcrti;			/* the source in the query */
	Index		viewrti;		/* the view's entry once added */
	TupleDesc	viewdesc;
	List	   *keys;			/* view group key exprs, over srcrti */
	List	   *keyatts;		/* their view columns (0: not shown) */
	List	   *shown;			/* shown non-key exprs, over srcrti */
	List	   *shownatts;		/* their view columns */
	bool		rollup;
	bool		keys_identity;	/* every key's equality is identity */
	Bitmapset  *cols_used;		/* view columns read, for the rights check */
	const char *why;			/* why not, or NULL */
	/* the rewritten parts */
	List	   *targetList;
	Node	   *quals;
	Node	   *having;
} Match;

typedef struct MapCtx
{
	Match	   *m;
	bool		in_where;		/* a row condition: keys must be identity-safe */
} MapCtx;

static Node *map_mutator(Node *node, MapCtx *ctx);
static bool contains_io_coercion(Node *node);

/* Flatten nested ANDs into a list of conjuncts */
static List *
conjuncts(Node *qual)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (qual == NULL)
		return NIL;
	if (is_andclause(qual))
	{
		foreach(lc, ((BoolExpr *) qual)->args)
			out = list_concat(out, conjuncts(lfirst(lc)));
		return out;
	}
	if (IsA(qual, List))
	{
		foreach(lc, (List *) qual)
			out = list_concat(out, conjuncts(lfirst(lc)));
		return out;
	}
	return list_make1(qual);
}

/* A Var reading view column attnum */
static Node *
view_var(Match *m, AttrNumber attnum)
{
	Form_pg_attribute att = TupleDescAttr(m->viewdesc, attnum - 1);

	m->cols_used = bms_add_member(m->cols_used,
								  attnum - FirstLowInvalidHeapAttributeNumber);

	return (Node *) makeVar(m->viewrti, attnum, att->atttypid, att->atttypmod,
							att->attcollation, 0);
}

/*
 * Does the aggregate add floating-point values (anything but min and max
 * of them)?  Its result would depend on the order the view's states were
 * combined in.
 */
static bool
float_sum(Aggref *agg)
{
	ListCell   *lc;
	char	   *name;

	foreach(lc, agg->aggargtypes)
	{
		Oid			t = getBaseType(lfirst_oid(lc));

		if (t == FLOAT4OID || t == FLOAT8OID)
		{
			name = get_func_name(agg->aggfnoid);
			return !(strcmp(name, "min") == 0 || strcmp(name, "max") == 0);
		}
	}
	return false;
}

/*
 * min or max of a type whose equal values can differ (numeric 1.0 and
 * 1.00, -0 and 0, 'a' and 'A' under a nondeterministic collation): which
 * one it returns depends on the order rows and states were combined in
 */
static bool
picks_among_equals(Aggref *agg)
{
	char	   *name = get_func_name(agg->aggfnoid);
	Node	   *arg;

	if (strcmp(name, "min") != 0 && strcmp(name, "max") != 0)
		return false;
	/* the argument's typmod: min of a numeric(p, s) column is of scale s */
	arg = list_length(agg->args) == 1 ?
		(Node *) ((TargetEntry *) linitial(agg->args))->expr : NULL;
	return !MvTypeImageStable(agg->aggtype, arg ? exprTypmod(arg) : -1, agg->aggcollid);
}

/*
 * Does the expression hold an aggregate whose value the rewrite never
 * takes from a view (float_sum, picks_among_equals)?  A view's expression
 * over one holds the view's value of it.
 */
static bool
order_dependent_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) &&
		(float_sum((Aggref *) node) || picks_among_equals((Aggref *) node)))
		return true;
	return expression_tree_walker(node, order_dependent_walker, context);
}

/* A plain aggregate call fn(arg) returning restype, collations assigned */
static Node *
make_agg(Oid fn, Node *arg, Oid restype)
{
	Aggref	   *a = makeNode(Aggref);
	Oid			argtype = exprType(arg);
	ParseState *pstate = make_parsestate(NULL);

	a->aggfnoid = fn;
	a->aggtype = restype;
	a->aggargtypes = list_make1_oid(argtype);
	a->args = list_make1(makeTargetEntry((Expr *) arg, 1, NULL, false));
	a->aggkind = AGGKIND_NORMAL;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	assign_expr_collations(pstate, (Node *) a);
	free_parsestate(pstate);
	return (Node *) a;
}

static Oid
catalog_agg(const char *name, Oid argtype)
{
	return LookupFuncName(list_make2(makeString("pg_catalog"), makeString(pstrdup(name))),
						  1, &argtype, true);
}

/* expr cast to typid (explicit), or NULL */
static Node *
cast_to(Node *expr, Oid typid, int32 typmod)
{
	if (exprType(expr) == typid && typmod < 0)
		return expr;
	return coerce_to_target_type(NULL, expr, exprType(expr), typid, typmod,
								 COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);
}

/*
 * The value of the query's aggregate over the rows of view groups: the
 * view column's value itself (direct), or a combination of the column
 * over the groups that roll up into one (sum of sums and counts, min of
 * mins, ...).  NULL when the aggregate cannot be combined.
 */
static Node *
combine(Match *m, Aggref *agg, AttrNumber attnum)
{
	Node	   *v = view_var(m, attnum);
	char	   *name;
	Node	   *out;

	if (!m->rollup)
		return v;
	if (get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE)
		return NULL;
	name = get_func_name(agg->aggfnoid);
	if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0 ||
		strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
		strcmp(name, "every") == 0 || strcmp(name, "bit_and") == 0 ||
		strcmp(name, "bit_or") == 0)
	{
		/* the same function: its argument type is its result type */
		if (list_length(agg->aggargtypes) != 1 ||
			linitial_oid(agg->aggargtypes) != agg->aggtype)
			return NULL;
		return make_agg(agg->aggfnoid, v, agg->aggtype);
	}
	if (strcmp(name, "sum") == 0 || strcmp(name, "count") == 0)
	{
		Oid			fn = catalog_agg("sum", exprType(v));

		if (!OidIsValid(fn))
			return NULL;
		out = cast_to(make_agg(fn, v, get_func_rettype(fn)), agg->aggtype, -1);
		if (out != NULL && strcmp(name, "count") == 0)
		{
			/* no groups at all (no GROUP BY, nothing read): count is 0 */
			CoalesceExpr *c = makeNode(CoalesceExpr);

			c->coalescetype = INT8OID;
			c->args = list_make2(out, makeConst(INT8OID, -1, InvalidOid, 8,
												Int64GetDatum(0), false, true));
			c->location = -1;
			out = (Node *) c;
		}
		return out;
	}
	return NULL;
}

/* The shown view column holding exactly this aggregate call, or 0 */
static AttrNumber
shown_agg(Match *m, Aggref *agg)
{
	ListCell   *lc,
			   *la;

	forboth(lc, m->shown, la, m->shownatts)
		if (IsA(lfirst(lc), Aggref) && equal(lfirst(lc), agg))
			return lfirst_int(la);
	return 0;
}

/*
 * Is column attnum of relid declared NOT NULL, and was it so for every row
 * the query's snapshot sees?  Under a transaction snapshot the constraint
 * counts only when the catalog row saying so was committed before it.
 */
static bool
column_not_null(Oid relid, AttrNumber attnum)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
	bool		notnull = false;

	if (HeapTupleIsValid(tup))
	{
		notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
		if (notnull && IsolationUsesXactSnapshot() &&
			!HeapTupleHeaderXminFrozen(tup->t_data))
		{
			TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

			notnull = TransactionIdIsNormal(xmin) &&
				!TransactionIdIsCurrentTransactionId(xmin) &&
				!XidInMVCCSnapshot(xmin, GetTransactionSnapshot());
		}
		ReleaseSysCache(tup);
	}
	return notnull;
}

/*
 * avg(x) as the view's sum(x) / count(x) (numeric and float arguments:
 * PostgreSQL's avg divides the same sum by the same count); NULL when the
 * view does not show both
 */
static Node *
derive_avg(Match *m, Aggref *agg)
{
	Aggref	   *sum,
			   *cnt;
	AttrNumber	sumatt,
				cntatt;
	Oid			argtype;
	Node	   *s,
			   *c;
	ParseState *pstate;
	Node	   *out;

	if (get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE ||
		strcmp(get_func_name(agg->aggfnoid), "avg") != 0 ||
		list_length(agg->args) != 1 || agg->aggorder != NIL || agg->aggdistinct != NIL)
		return NULL;
	argtype = linitial_oid(agg->aggargtypes);
	if (argtype != INT2OID && argtype != INT4OID && argtype != INT8OID &&
		argtype != NUMERICOID)
		return NULL;
	sum = copyObject(agg);
	sum->aggfnoid = catalog_agg("sum", argtype);
	sum->aggtype = get_func_rettype(sum->aggfnoid);
	cnt = copyObject(agg);
	cnt->aggfnoid = catalog_agg("count", ANYOID);
	cnt->aggtype = INT8OID;
	sumatt = shown_agg(m, sum);
	if (sumatt == 0)
		return NULL;
	cntatt = shown_agg(m, cnt);
	if (cntatt == 0)
	{
		/* of a NOT NULL column, count(x) is count(*) */
		Node	   *arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;

		if (!IsA(arg, Var) || ((Var *) arg)->varno != m->srcrti ||
			!column_not_null(m->sourceid, ((Var *) arg)->varattno))
			return NULL;
		cnt->aggfnoid = LookupFuncName(list_make2(makeString("pg_catalog"), makeString("count")),
									   0, NULL, false);
		cnt->aggargtypes = NIL;
		cnt->args = NIL;
		cnt->aggstar = true;
		cnt->inputcollid = InvalidOid;
		cntatt = shown_agg(m, cnt);
		if (cntatt == 0)
			return NULL;
	}
	if ((s = combine(m, sum, sumatt)) == NULL || (c = combine(m, cnt, cntatt)) == NULL)
		return NULL;
	/* sum is NULL exactly when count is 0: the strict division gives NULL */
	pstate = make_parsestate(NULL);
	out = (Node *) make_op(pstate, list_make2(makeString("pg_catalog"), makeString("/")),
						   cast_to(s, NUMERICOID, -1), cast_to(c, NUMERICOID, -1),
						   NULL, -1);
	free_parsestate(pstate);
	if (exprType(out) != agg->aggtype)
		return NULL;
	return out;
}

static Node *
fail(MapCtx *ctx, const char *why)
{
	if (ctx->m->why == NULL)
		ctx->m->why = why;
	return NULL;
}

/* Map an expression of the query onto the view's columns */
static Node *
map_mutator(Node *node, MapCtx *ctx)
{
	Match	   *m = ctx->m;
	ListCell   *lc,
			   *la;

	if (node == NULL || m->why != NULL)
		return NULL;
	/*
	 * One of the view's expressions over aggregates, as it is; not over an
	 * aggregate the view's value of which may differ from the query's
	 * (sum(f) * 1 of a float f: the view added in another order), whose
	 * parts are then mapped and refused below
	 */
	if (!m->rollup && !ctx->in_where && m->keys_identity &&
		!IsA(node, Var) && !IsA(node, Const))
	{
		forboth(lc, m->shown, la, m->shownatts)
			if (!IsA(lfirst(lc), Aggref) && equal(lfirst(lc), node) &&
				!order_dependent_walker(node, NULL))
				return view_var(m, lfirst_int(la));
	}
	forboth(lc, m->keys, la, m->keyatts)
	{
		Form_pg_attribute att;

		if (!equal(lfirst(lc), node))
			continue;
		if (lfirst_int(la) == 0)
			return fail(ctx, "it uses a group key the view does not show");
		att = TupleDescAttr(m->viewdesc, lfirst_int(la) - 1);
		/*
		 * The view keeps one value per group: the query may use it (show,
		 * test, compute with it) only when equal values are identical,
		 * else it could tell apart rows the view grouped together
		 */
		if (!MvTypeImageStable(att->atttypid, att->atttypmod, att->attcollation))
			return fail(ctx, psprintf("it uses group key \"%s\" of type %s, whose equal values can differ",
									  NameStr(att->attname), format_type_be(att->atttypid)));
		return view_var(m, lfirst_int(la));
	}
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		AttrNumber	att;
		Node	   *out = NULL;

		if (agg->agglevelsup != 0)
			return fail(ctx, "it uses an aggregate of an outer query");
		if (ctx->in_where)
			return fail(ctx, "an aggregate in WHERE");
		if (float_sum(agg))
			return fail(ctx, "a sum or average of floating-point values depends on the order of addition");
		if (picks_among_equals(agg))
			return fail(ctx, psprintf("%s of type %s picks one of equal values that can differ",
									  get_func_name(agg->aggfnoid), format_type_be(agg->aggtype)));
		att = shown_agg(m, agg);
		if (att != 0 && (out = combine(m, agg, att)) != NULL)
			return out;
		out = derive_avg(m, agg);
		if (out != NULL)
			return out;
		if (att != 0)
			return fail(ctx, psprintf("aggregate %s cannot be combined over the view's groups",
									  get_func_name(agg->aggfnoid)));
		return fail(ctx, psprintf("the view shows no %s aggregate equal to the query's",
								  get_func_name(agg->aggfnoid)));
	}
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0)
			return fail(ctx, "it references an outer query");
		return fail(ctx, "it reads a source column outside the view's group keys and aggregates");
	}
	if (IsA(node, Query) || IsA(node, SubLink) || IsA(node, GroupingFunc))
		return fail(ctx, "it uses a subquery or GROUPING");
	return expression_tree_mutator(node, map_mutator, (void *) ctx);
}

/* Does the expression read a system column or a whole row of varno? */
static bool
system_column_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno <= 0 || ((Var *) node)->varlevelsup != 0;
	if (IsA(node, Query))
		return true;
	return expression_tree_walker(node, system_column_walker, context);
}

/*
 * The source table read by one query level, when the level can be
 * rewritten at all; else InvalidOid and *why
 */
static Oid
qualifying_source(Query *q, Index *rti, const char **why)
{
	RangeTblEntry *rte;
	Node	   *item;

	*why = NULL;
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		*why = "it is not a SELECT";
	else if (!q->hasAggs && q->groupClause == NIL)
		*why = "it has no aggregate and no GROUP BY";
	else if (q->groupingSets != NIL)
		*why = "it uses GROUPING SETS, ROLLUP or CUBE";
	else if (q->hasWindowFuncs || q->hasTargetSRFs || q->hasSubLinks || q->setOperations)
		*why = "it uses window functions, set-returning functions, subqueries in expressions or set operations";
	else if (q->rowMarks != NIL || q->hasForUpdate)
		*why = "it locks rows";
	else if (q->hasModifyingCTE)
		*why = "it has a data-modifying WITH";
	else if (list_length(q->jointree->fromlist) != 1 ||
			 !IsA((item = linitial(q->jointree->fromlist)), RangeTblRef))
		*why = "it does not read exactly one table";
	if (*why)
		return InvalidOid;
	*rti = ((RangeTblRef *) item)->rtindex;
	rte = rt_fetch(*rti, q->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION)
		*why = "it does not read exactly one table";
	else if (rte->tablesample)
		*why = "it uses TABLESAMPLE";
	else if (contain_volatile_functions((Node *) q))
		*why = "it calls a volatile function";
	else if (query_tree_walker(q, system_column_walker, NULL, 0))
		*why = "it reads a system column, a whole row or an outer query's column";
	if (*why)
		return InvalidOid;
	return rte->relid;
}

/*
 * What a view offers to the rewrite, kept per backend until the view's
 * relcache entry is invalidated (a definition, populated or rights change
 * sends one): its keys and shown columns and its WHERE, over the source at
 * range-table index rti of its query
 */
typedef struct ViewShape
{
	Oid			viewid;			/* hash key */
	MemoryContext cxt;
	const char *why;			/* why it answers nothing, or NULL */
	Oid			sourceid;
	bool		inh;
	Index		rti;
	List	   *keys;
	List	   *keyatts;
	List	   *keyeqops;		/* each key's grouping equality operator */
	List	   *shown;
	List	   *shownatts;
	List	   *where;
	Bitmapset  *where_cols;		/* columns its WHERE reads (pull_varattnos) */
	List	   *reads;			/* its query's relation entries (rights) */
	TupleDesc	desc;
} ViewShape;

static HTAB *shape_cache = NULL;

static void
shape_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	ViewShape  *shape;

	if (shape_cache == NULL)
		return;
	hash_seq_init(&status, shape_cache);
	while ((shape = hash_seq_search(&status)) != NULL)
	{
		if (OidIsValid(relid) && shape->viewid != relid)
			continue;
		if (shape->cxt)
			MemoryContextDelete(shape->cxt);
		hash_search(shape_cache, &shape->viewid, HASH_REMOVE, NULL);
	}
}

static ViewShape *
view_shape(Oid viewid)
{
	ViewShape  *shape;
	bool		found;
	MvDef	   *def;
	MvCatalog  *cat;
	Query	   *vq;
	Relation	viewrel;
	ListCell   *lc;
	MemoryContext old;

	if (shape_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ViewShape);
		shape_cache = hash_create("mvinc view shapes", 64, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(shape_cache_inval, (Datum) 0);
	}
	shape = hash_search(shape_cache, &viewid, HASH_FIND, &found);
	if (found)
		return shape;

	/* never wait for a lock on a view (being dropped, say): pass it over */
	if (!ConditionalLockRelationOid(viewid, AccessShareLock))
		return NULL;
	viewrel = try_relation_open(viewid, NoLock);
	if (viewrel == NULL)
	{
		UnlockRelationOid(viewid, AccessShareLock);
		return NULL;
	}
	def = MvDefForView(viewid);
	cat = MvCatalogLookup(viewid, MV_LOOKUP_NEW);
	shape = hash_search(shape_cache, &viewid, HASH_ENTER, &found);
	memset(((char *) shape) + sizeof(Oid), 0, sizeof(ViewShape) - sizeof(Oid));
	shape->cxt = AllocSetContextCreate(CacheMemoryContext, "mvinc view shape",
									   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(shape->cxt);
	shape->sourceid = def->sourceid;
	if (def->kind != MV_KIND_AGGREGATE)
		shape->why = "it is a projection view";
	else if (def->having != NULL)
		shape->why = "the view has a HAVING clause";
	else if (cat == NULL || !cat->populated)
		shape->why = "the view is not populated";
	vq = copyObject(def->query);
	/*
	 * A value converted through its type's output function (a float or
	 * bytea cast to text) depends on settings (extra_float_digits,
	 * bytea_output) that were the refresh's, not the reader's
	 */
	if (shape->why == NULL && contains_io_coercion((Node *) vq))
		shape->why = "the view converts values to text through output functions, which depend on settings";
	shape->rti = ((RangeTblRef *) linitial(vq->jointree->fromlist))->rtindex;
	shape->inh = rt_fetch(shape->rti, vq->rtable)->inh;
	shape->desc = CreateTupleDescCopy(RelationGetDescr(viewrel));
	foreach(lc, vq->groupClause)
	{
		TargetEntry *tle = get_sortgroupclause_tle(lfirst(lc), vq->targetList);

		shape->keys = lappend(shape->keys, tle->expr);
		shape->keyatts = lappend_int(shape->keyatts, tle->resjunk ? 0 : tle->resno);
		shape->keyeqops = lappend_oid(shape->keyeqops, ((SortGroupClause *) lfirst(lc))->eqop);
	}
	foreach(lc, vq->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk || list_member(shape->keys, tle->expr))
			continue;
		shape->shown = lappend(shape->shown, tle->expr);
		shape->shownatts = lappend_int(shape->shownatts, tle->resno);
	}
	shape->where = conjuncts(vq->jointree->quals);
	foreach(lc, vq->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION)
			shape->reads = lappend(shape->reads, rte);
	}
	/* most queries read their table at index 1: no copy for those */
	if (shape->rti != 1)
	{
		ChangeVarNodes((Node *) shape->keys, shape->rti, 1, 0);
		ChangeVarNodes((Node *) shape->shown, shape->rti, 1, 0);
		ChangeVarNodes((Node *) shape->where, shape->rti, 1, 0);
		shape->rti = 1;
	}
	pull_varattnos((Node *) shape->where, shape->rti, &shape->where_cols);
	MemoryContextSwitchTo(old);
	relation_close(viewrel, AccessShareLock);
	return shape;
}

static bool
io_coercion_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, CoerceViaIO))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, io_coercion_walker, context, 0);
	return expression_tree_walker(node, io_coercion_walker, context);
}

static bool
contains_io_coercion(Node *node)
{
	return io_coercion_walker(node, NULL);
}

/* An expression of the view's query over the source at the query's rti */
static void *
at_rti(ViewShape *shape, void *node, Index rti)
{
	node = copyObject(node);
	if (shape->rti != rti)
		ChangeVarNodes((Node *) node, shape->rti, rti, 0);
	return node;
}

/*
 * Can view answer query level q (which reads the source at srcrti)?
 * Fills m with the rewritten parts, or m->why.
 */
static void
match_view(Query *q, Index srcrti, Bitmapset *qcols, Oid viewid, Match *m)
{
	ViewShape  *shape;
	ListCell   *lc;
	List	   *vwhere;
	List	   *qwhere;
	List	   *kept = NIL;
	Bitmapset  *keys_used = NULL;
	MapCtx		ctx;
	RangeTblEntry *srte = rt_fetch(srcrti, q->rtable);
	List	   *vreads;

	memset(m, 0, sizeof(Match));
	m->viewid = viewid;
	m->srcrti = srcrti;
	m->viewrti = list_length(q->rtable) + 1;
	ctx.m = m;
	ctx.in_where = false;

	shape = view_shape(viewid);
	if (shape == NULL)
	{
		m->why = "the view was dropped";
		return;
	}
	if (shape->why)
	{
		m->why = shape->why;
		return;
	}
	vreads = copyObject(shape->reads);	/* for the owner's rights, below */
	if (shape->inh != srte->inh && has_subclass(shape->sourceid))
	{
		m->why = srte->inh ? "the view reads the table without its inheritance children (ONLY)"
			: "the query reads the table without its inheritance children (ONLY)";
		return;
	}
	/*
	 * GROUP BY: shown keys of the view, grouped by the same equality; all
	 * of them, or a roll-up.  Checked on the cached shape (no catalog
	 * access, which could process an invalidation that frees it), then
	 * the rest works on copies.
	 */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		Node	   *expr = (Node *) tle->expr;
		int			i = 0;
		ListCell   *lk,
				   *le;
		bool		found = false;

		if (srcrti != shape->rti)
		{
			expr = copyObject(expr);
			ChangeVarNodes(expr, srcrti, shape->rti, 0);
		}
		forboth(lk, shape->keys, le, shape->keyeqops)
		{
			if (lfirst_oid(le) == sgc->eqop && equal(lfirst(lk), expr))
			{
				keys_used = bms_add_member(keys_used, i);
				found = true;
			}
			i++;
		}
		if (!found)
		{
			m->why = "a GROUP BY expression of the query is not a group key of the view";
			return;
		}
	}
	/*
	 * The query's WHERE can imply the view's only if it reads every column
	 * the view's reads (a cheap test before the proof)
	 */
	if (shape->where_cols != NULL)
	{
		if (!bms_is_subset(shape->where_cols, qcols))
		{
			m->why = "the query's WHERE does not imply the view's";
			return;
		}
	}
	/*
	 * Only views the user may read, owned by the table's owner or by a role
	 * whose rights the user has: another reader's view must not answer (or
	 * break, or stall) the queries of the table's owner.  The rights check
	 * may process invalidations: the shape is looked up again.
	 */
	if (pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
	{
		m->why = "the user may not read the view";
		role_refused = true;
		return;
	}
	{
		Oid			owner = MvRelOwner(viewid);

		if (owner != MvRelOwner(srte->relid) && !has_privs_of_role(GetUserId(), owner))
		{
			m->why = "the view's owner is neither the table's owner nor a role whose rights the user has";
			role_refused = true;
			return;
		}

		/*
		 * The view is read as its owner (its storage, and the table in its
		 * live arm and in recomputed groups), so an owner who may no longer
		 * read the columns of the table that the view's query reads (a
		 * REVOKE after CREATE) would make the query fail where it runs
		 * without the view.  (A GRANT or REVOKE on the table invalidates
		 * plans that read it.)
		 */
		foreach(lc, vreads)
			((RangeTblEntry *) lfirst(lc))->checkAsUser = owner;
		if (!ExecCheckRTPerms(vreads, false))
		{
			m->why = "the view's owner may not read the columns of the table that the view reads";
			return;
		}
	}
	shape = view_shape(viewid);
	if (shape == NULL || shape->why)
	{
		m->why = shape ? shape->why : "the view was dropped";
		return;
	}
	m->viewdesc = CreateTupleDescCopy(shape->desc);
	m->sourceid = shape->sourceid;
	m->keys = at_rti(shape, shape->keys, srcrti);
	m->keyatts = list_copy(shape->keyatts);
	m->shown = at_rti(shape, shape->shown, srcrti);
	m->shownatts = list_copy(shape->shownatts);
	vwhere = at_rti(shape, shape->where, srcrti);
	shape = NULL;				/* may be freed from here on */
	m->keys_identity = true;
	foreach(lc, m->keys)
		if (!MvTypeImageStable(exprType(lfirst(lc)), exprTypmod(lfirst(lc)),
							   exprCollation(lfirst(lc))))
			m->keys_identity = false;

	/* WHERE: the view's conditions implied, the rest applied over keys */
	qwhere = conjuncts(q->jointree->quals);
	if (vwhere != NIL && !predicate_implied_by(vwhere, qwhere, false))
	{
		m->why = "the query's WHERE does not imply the view's";
		return;
	}
	foreach(lc, qwhere)
	{
		Node	   *c = lfirst(lc);

		/* every row the view was computed from meets it */
		if (vwhere != NIL && predicate_implied_by(list_make1(c), vwhere, false))
			continue;
		ctx.in_where = true;
		c = map_mutator(c, &ctx);
		if (m->why)
		{
			if (strncmp(m->why, "it reads a source column", 24) == 0)
				m->why = "a condition of the query's WHERE is neither one of the view's nor on its group keys";
			return;
		}
		kept = lappend(kept, c);
	}

	/*
	 * Fewer keys than the view's: combine its rows.  So too without GROUP
	 * BY when conditions remain (a view without keys has one row, which
	 * they may filter away; the query still has its one row).
	 */
	m->rollup = bms_num_members(keys_used) < list_length(m->keys) ||
		(q->groupClause == NIL && kept != NIL);

	/* select list, HAVING */
	ctx.in_where = false;
	m->targetList = (List *) map_mutator((Node *) q->targetList, &ctx);
	if (m->why)
		return;
	m->having = map_mutator(q->havingQual, &ctx);
	if (m->why)
		return;
	if (!m->rollup && m->having != NULL)
		kept = list_concat(kept, conjuncts(m->having));
	m->quals = kept == NIL ? NULL : (Node *) make_ands_explicit(kept);
}

/* The incremental views over relid, cached per backend */
typedef struct SourceEntry
{
	Oid			relid;
	List	   *views;			/* in CacheMemoryContext */

	/*
	 * Columns of the source that the WHERE of every view that may answer
	 * reads (pull_varattnos), in CacheMemoryContext: no view answers a
	 * query whose WHERE does not read them all, which is then known
	 * without looking at each view (many views filtered on the same
	 * column, and a query that is not).  NULL when some view's WHERE
	 * reads no column, or a view's shape was not at hand.
	 */
	Bitmapset  *common_where_cols;
} SourceEntry;

static HTAB *source_cache = NULL;

static void
source_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SourceEntry *entry;

	if (source_cache == NULL)
		return;
	hash_seq_init(&status, source_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		/* a view's own invalidation may be its drop: forget its source's list */
		if (OidIsValid(relid) && entry->relid != relid &&
			!list_member_oid(entry->views, relid))
			continue;
		list_free(entry->views);
		bms_free(entry->common_where_cols);
		hash_search(source_cache, &entry->relid, HASH_REMOVE, NULL);
	}
}

/*
 * The columns every view of views that may answer reads in its WHERE
 * (SourceEntry), in the current memory context
 */
static Bitmapset *
common_where_cols(List *views)
{
	Bitmapset  *common = NULL;
	bool		first = true;
	ListCell   *lc;

	foreach(lc, views)
	{
		/* (a shape is looked up only now: building one may run invalidations) */
		ViewShape  *shape = view_shape(lfirst_oid(lc));

		if (shape == NULL)
			return NULL;
		if (shape->why)
			continue;			/* answers nothing: constrains nothing */
		if (first)
			common = bms_copy(shape->where_cols);
		else
			common = bms_int_members(common, shape->where_cols);
		first = false;
		if (common == NULL)
			return NULL;
	}
	return common;
}

static List *
views_of_source(Oid relid, Bitmapset **common)
{
	SourceEntry *entry;
	bool		hit;
	List	   *views;
	Bitmapset  *cols;

	if (source_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SourceEntry);
		source_cache = hash_create("mvinc view sources", 64, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(source_cache_inval, (Datum) 0);
	}
	entry = hash_search(source_cache, &relid, HASH_FIND, &hit);
	if (hit)
	{
		*common = entry->common_where_cols;
		return entry->views;
	}
	views = MvIsSource(relid) ? MvViewsOfSource(relid) : NIL;
	cols = common_where_cols(views);
	entry = hash_search(source_cache, &relid, HASH_ENTER, &hit);
	entry->views = NIL;
	entry->common_where_cols = NULL;
	if (views != NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(CacheMemoryContext);

		entry->views = list_copy(views);
		entry->common_where_cols = bms_copy(cols);
		MemoryContextSwitchTo(old);
	}
	*common = entry->common_where_cols;
	return entry->views;
}

/*
 * Match query level q (reading its table at rti) against views; returns
 * the one that answers with the fewest stored rows, or NULL, and each
 * view's Match in *matches when asked
 */
static Match *
best_match(Query *q, Index rti, List *views, List **matches)
{
	Bitmapset  *qcols = NULL;	/* columns the query's WHERE reads */
	Match	   *best = NULL;
	double		best_rows = 0;
	ListCell   *lc;

	pull_varattnos(q->jointree->quals, rti, &qcols);
	foreach(lc, views)
	{
		Match	   *m = palloc(sizeof(Match));
		MvCatalog  *cat;
		double		rows;

		match_view(q, rti, qcols, lfirst_oid(lc), m);
		if (matches)
			*matches = lappend(*matches, m);
		if (m->why != NULL)
			continue;
		cat = MvCatalogLookup(m->viewid, MV_LOOKUP_NEW);
		if (cat == NULL)
			continue;
		rows = OidIsValid(cat->storage_oid) ? MvStorageRows(cat->storage_oid) : 0;
		if (best == NULL || rows < best_rows)
		{
			best = m;
			best_rows = rows;
		}
	}
	return best;
}

/* Rewrite query level q onto the view that answers it best, if any */
static Oid
rewrite_level(Query *q)
{
	Index		rti;
	const char *why;
	Oid			source = qualifying_source(q, &rti, &why);
	List	   *views;
	Bitmapset  *common;
	Match	   *best;
	Relation	viewrel;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	RangeTblRef *ref;

	if (!OidIsValid(source))
		return InvalidOid;
	views = views_of_source(source, &common);
	if (views == NIL)
		return InvalidOid;
	/* (match_view's own first test, for every view at once) */
	if (common != NULL)
	{
		Bitmapset  *qcols = NULL;

		pull_varattnos(q->jointree->quals, rti, &qcols);
		if (!bms_is_subset(common, qcols))
			return InvalidOid;
	}
	/* a copy: invalidations may run while matching */
	best = best_match(q, rti, list_copy(views), NULL);
	if (best == NULL)
		return InvalidOid;

	/* the view's entry; the source's stays for the rights check */
	pstate = make_parsestate(NULL);
	if (!ConditionalLockRelationOid(best->viewid, AccessShareLock))
		return InvalidOid;
	viewrel = try_relation_open(best->viewid, NoLock);
	if (viewrel == NULL)
		return InvalidOid;
	nsitem = addRangeTableEntryForRelation(pstate, viewrel, AccessShareLock,
										   NULL, false, true);
	relation_close(viewrel, NoLock);
	nsitem->p_rte->selectedCols = best->cols_used;
	q->rtable = lappend(q->rtable, nsitem->p_rte);
	Assert(list_length(q->rtable) == best->viewrti);
	ref = makeNode(RangeTblRef);
	ref->rtindex = best->viewrti;
	q->jointree->fromlist = list_make1(ref);
	q->jointree->quals = best->quals;
	q->targetList = best->targetList;
	if (best->rollup)
		q->havingQual = best->having;
	else
	{
		q->havingQual = NULL;
		q->groupClause = NIL;
		q->groupDistinct = false;
		q->hasAggs = false;
	}
	free_parsestate(pstate);
	return best->viewid;
}

static bool
rewrite_walker(Node *node, List **views)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		Oid			view = rewrite_level(q);

		if (OidIsValid(view))
			*views = lappend_oid(*views, view);
		return query_tree_walker(q, rewrite_walker, views, 0);
	}
	return expression_tree_walker(node, rewrite_walker, views);
}

/*
 * Planner hook's first step: rewrite what views can answer; returns the
 * views read in place of their source.  A plan so rewritten, or not
 * rewritten for want of the right to read a view, depends on the role
 * that made it (*role_dependent).
 */
List *
MvRewriteQuery(Query *parse, bool *role_dependent)
{
	List	   *views = NIL;

	role_refused = false;
	if (mvinc_enable_rewrite)
		(void) rewrite_walker((Node *) parse, &views);
	*role_dependent = role_refused || views != NIL;
	return views;
}

/* A view over relid was created or dropped: plans over it are replanned */
void
MvRewriteSourceChanged(Oid relid)
{
	CacheInvalidateRelcacheByRelid(relid);
}

PG_FUNCTION_INFO_V1(mvinc_explain_rewrite);

/*
 * mvinc.explain_rewrite(query text): for each incremental view over the
 * table the query's top level reads, whether the query would be rewritten
 * onto it and, if not, why
 */
Datum
mvinc_explain_rewrite(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *raw;
	Query	   *q;
	List	   *rewritten;
	Index		rti;
	const char *why;
	Oid			source;
	Match	   *best;
	List	   *matches = NIL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	raw = pg_parse_query(sql);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mvinc.explain_rewrite takes one statement"),
				 errdetail("The text holds %d statements.", list_length(raw)),
				 errhint("Pass a single SELECT.")));
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, NULL, 0, NULL);
	rewritten = QueryRewrite(q);
	if (list_length(rewritten) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mvinc.explain_rewrite takes a SELECT"),
				 errhint("Pass a single SELECT.")));
	q = linitial_node(Query, rewritten);
	/* as running the query would: the reader must be allowed to read it */
	(void) ExecCheckRTPerms(q->rtable, true);
	source = qualifying_source(q, &rti, &why);
	if (!OidIsValid(source))
	{
		Datum		values[3] = {0, BoolGetDatum(false), CStringGetTextDatum(psprintf("not rewritten: %s", why))};
		bool		nulls[3] = {true, false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		return (Datum) 0;
	}
	best = best_match(q, rti, MvViewsOfSource(source), &matches);
	if (!mvinc_enable_rewrite)
		best = NULL;
	foreach(lc, matches)
	{
		Match	   *m = lfirst(lc);
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		const char *reason;

		if (m == best)
			reason = m->rollup ? "rewritten: the view's groups are combined (roll-up)"
				: "rewritten: one view row per group";
		else if (m->why == NULL)
			reason = mvinc_enable_rewrite ? "answers, but another view has fewer rows"
				: "answers, but mvinc.enable_rewrite is off";
		else
			reason = psprintf("not used: %s", m->why);
		values[0] = ObjectIdGetDatum(m->viewid);
		values[1] = BoolGetDatum(m == best);
		values[2] = CStringGetTextDatum(reason);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
