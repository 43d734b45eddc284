/*-------------------------------------------------------------------------
 * mv_analyze.c
 *	  Query analysis of incremental views: decides whether a definition can
 *	  be maintained incrementally (refusing every other shape with an error
 *	  that names the construct) and derives the physical schema: group keys,
 *	  one bytea state column per aggregate and a hidden count, or projected
 *	  columns plus the source row identity.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "miscadmin.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mv/aggstate.h"
#include "mv/mv.h"

static const char *refused_view;
static bool analyzing_history = false;	/* MvAnalyzeHistoryQuery */

/* Refuse the definition: the detail names the construct */
static void
refuse(const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("materialized view \"%s\" cannot be %s", refused_view,
					analyzing_history ? "kept as a history view" : "maintained incrementally"),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

/* The kind of view refused, for refusals shared by both kinds */
static const char *
a_view(void)
{
	return analyzing_history ? "a history view" : "an incremental view";
}

static const char *
kind_option(void)
{
	return analyzing_history ? "mvinc.history" : "mvinc.incremental";
}

static Node *keep_explicit_collation(Node *key, Node *repl);
static Oid	type_checked_domain(Oid typid, int depth);

/* Walker state: finds the first offending node in an expression */
typedef struct CheckCtx
{
	Oid			mutable_func;
	Oid			user_func;		/* first function that is not built in */
	bool		system_column;
	bool		whole_row;
	bool		nested_agg;
	int			agg_depth;
	Oid			setting_func;	/* an output function that reads a setting */
} CheckCtx;

/*
 * Output functions marked immutable whose text depends on a setting
 * (bytea_output; extra_float_digits for floats and the geometric types,
 * which print their coordinates as floats): the refresh's text and each
 * reader's would mix.  (array_out, record_out and range_out are stable:
 * refused as such.)
 */
static bool
setting_dependent_output(Oid func_id)
{
	switch (func_id)
	{
		case F_BYTEAOUT:
		case F_FLOAT4OUT:
		case F_FLOAT8OUT:
		case F_POINT_OUT:
		case F_LSEG_OUT:
		case F_LINE_OUT:
		case F_PATH_OUT:
		case F_BOX_OUT:
		case F_POLY_OUT:
		case F_CIRCLE_OUT:
			return true;
		default:
			return false;
	}
}

/*
 * Does an mvinc function take an aggregate and its states (agg_merge,
 * _agg_final_stored, ...)?  Refresh would run it as a superuser on the
 * definition's bytes: for a non-superuser's view it counts as
 * user-defined (aggstate_check.c trusts a superuser's states).
 */
static bool
takes_agg_states(Oid func_id)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(func_id));
	Form_pg_proc proc;
	bool		found = false;

	if (!HeapTupleIsValid(tup))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	for (int i = 0; i < proc->pronargs && !found; i++)
		found = proc->proargtypes.values[i] == REGPROCEDUREOID ||
			proc->proargtypes.values[i] == BYTEAOID;
	ReleaseSysCache(tup);
	return found;
}

/* Remember the first function that is not immutable */
static bool
mutable_func_checker(Oid func_id, void *context)
{
	CheckCtx   *ctx = (CheckCtx *) context;

	if (setting_dependent_output(func_id) && !OidIsValid(ctx->setting_func))
		ctx->setting_func = func_id;
	if (func_id >= FirstNormalObjectId && !OidIsValid(ctx->user_func) &&
		(getExtensionOfObject(ProcedureRelationId, func_id) != get_extension_oid("mvinc", true) ||
		 takes_agg_states(func_id)))
		ctx->user_func = func_id;
	if (func_volatile(func_id) != PROVOLATILE_IMMUTABLE)
	{
		if (!OidIsValid(ctx->mutable_func))
			ctx->mutable_func = func_id;
		return true;
	}
	return false;
}

/*
 * Do equal values of this type (in this collation) always have the same
 * binary image?  Not numeric (1.0 = 1.00), the floats (0 = -0), interval
 * (1 mon = 30 days), timetz, jsonb, unbounded bpchar, nondeterministic
 * collations and the like: a group keyed by such a value shows the
 * spelling of a row it had, which may be gone while the group stays; a
 * history view's change from one spelling to another is a change; the
 * rewrite cannot take a condition on a group's key to hold for its rows.
 */
bool
MvTypeImageStable(Oid typid, int32 typmod, Oid collation)
{
	Oid			elem;

	typid = getBaseTypeAndTypmod(typid, &typmod);
	/* (an array's typmod is its elements') */
	if (OidIsValid(elem = get_element_type(typid)))
		return MvTypeImageStable(elem, typmod, collation);
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case BOOLOID:
		case CHAROID:
		case NAMEOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
		case BYTEAOID:
		case CASHOID:
		case MACADDROID:
		case MACADDR8OID:
		case INETOID:
		case CIDROID:
			return true;
		case NUMERICOID:
			/* numeric(p, s): every value has scale s, so 1.0 and 1.00 cannot both be */
			return typmod >= 0;
		case BPCHAROID:
			if (typmod < 0)
				return false;
			/* FALLTHROUGH */
		case TEXTOID:
		case VARCHAROID:
			return !OidIsValid(collation) || get_collation_isdeterministic(collation);
		default:
			return type_is_enum(typid);
	}
}

/* Walk an expression looking for what incremental views cannot keep */
static bool
check_walker(Node *node, CheckCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varattno < 0)
			ctx->system_column = true;
		else if (var->varattno == 0)
			ctx->whole_row = true;
		return false;
	}
	if (IsA(node, Aggref))
	{
		bool		r;

		if (ctx->agg_depth > 0)
			ctx->nested_agg = true;
		ctx->agg_depth++;
		r = expression_tree_walker(node, check_walker, ctx);
		ctx->agg_depth--;
		return r;
	}
	check_functions_in_node(node, mutable_func_checker, ctx);
	return expression_tree_walker(node, check_walker, ctx);
}

/* Check an expression for system columns and mutable functions */
static void
check_expr(Node *node, const char *where)
{
	CheckCtx	ctx = {0};

	check_walker(node, &ctx);
	if (ctx.system_column)
		refuse(psprintf("The %s references a system column.", where),
			   "Use only ordinary columns of the source table.");
	if (ctx.whole_row)
		refuse(psprintf("The %s references a whole row of the source table.", where),
			   "List the columns instead.");
	/* (at CREATE: a view made before the check keeps working) */
	if (OidIsValid(ctx.setting_func) && mv_analyzing_create)
		refuse(psprintf("The %s converts a %s value to text, whose form depends on the setting %s.", where,
						ctx.setting_func == F_BYTEAOUT ? "bytea" :
						ctx.setting_func == F_FLOAT4OUT || ctx.setting_func == F_FLOAT8OUT ?
						"float" : "geometric (float coordinates)",
						ctx.setting_func == F_BYTEAOUT ? "bytea_output" : "extra_float_digits"),
			   ctx.setting_func == F_BYTEAOUT ?
			   "Use encode(value, 'hex') instead of a cast to text." :
			   ctx.setting_func == F_FLOAT4OUT || ctx.setting_func == F_FLOAT8OUT ?
			   "Cast to numeric first (value::numeric::text)." :
			   "Convert the coordinates to numeric first (for a point p: p[0]::numeric, p[1]::numeric).");
	if (OidIsValid(ctx.mutable_func))
		refuse(psprintf("The %s calls %s, which is not immutable.", where,
						format_procedure(ctx.mutable_func)),
			   psprintf("Use only immutable functions and operators in %s.", a_view()));
	if (OidIsValid(ctx.user_func) && mv_analyzing_create && !superuser())
		refuse(psprintf("The %s calls the user-defined function %s.", where,
						format_procedure(ctx.user_func)),
			   psprintf("Only a superuser can create %s that calls user-defined functions, because refresh runs them with elevated rights.", a_view()));
	if (contain_mutable_functions(node))
		refuse(psprintf("The %s uses an expression that is not immutable.", where),
			   psprintf("Use only immutable functions and operators in %s.", a_view()));
}

/*
 * Is a CHECK constraint run when a value of type typid is cast or input:
 * a domain with one, or a domain under it, or the domains its elements,
 * fields or range bounds are?  Refresh, reads and capture compute, cast
 * and store values with elevated rights, and a CHECK may run any code
 * (a user's function, a cast to another domain, query_to_xml), so views a
 * non-superuser creates stay away from such types.  The domain found, or
 * InvalidOid.
 */
Oid
MvTypeCheckedDomain(Oid typid)
{
	return type_checked_domain(typid, 0);
}

static Oid
type_checked_domain(Oid typid, int depth)
{
	HeapTuple	tup;
	Form_pg_type typ;
	Oid			found = InvalidOid;

	check_stack_depth();
	if (depth > 32 || typid < FirstGenbkiObjectId)
		return InvalidOid;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	typ = (Form_pg_type) GETSTRUCT(tup);
	if (typ->typtype == TYPTYPE_DOMAIN)
	{
		Relation	con = table_open(ConstraintRelationId, AccessShareLock);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	ctup;

		ScanKeyInit(&key, Anum_pg_constraint_contypid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(typid));
		scan = systable_beginscan(con, ConstraintTypidIndexId, true, NULL, 1, &key);
		while (!OidIsValid(found) && HeapTupleIsValid(ctup = systable_getnext(scan)))
			if (((Form_pg_constraint) GETSTRUCT(ctup))->contype == CONSTRAINT_CHECK)
				found = typid;
		systable_endscan(scan);
		table_close(con, AccessShareLock);
		if (!OidIsValid(found))
			found = type_checked_domain(typ->typbasetype, depth + 1);
	}
	else if (IsTrueArrayType(typ))
		found = type_checked_domain(typ->typelem, depth + 1);
	else if (typ->typtype == TYPTYPE_COMPOSITE && OidIsValid(typ->typrelid))
	{
		Relation	rel = relation_open(typ->typrelid, AccessShareLock);
		TupleDesc	desc = RelationGetDescr(rel);
		int			i;

		for (i = 0; i < desc->natts && !OidIsValid(found); i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				found = type_checked_domain(TupleDescAttr(desc, i)->atttypid, depth + 1);
		relation_close(rel, AccessShareLock);
	}
	else if (typ->typtype == TYPTYPE_RANGE)
		found = type_checked_domain(get_range_subtype(typid), depth + 1);
	else if (typ->typtype == TYPTYPE_MULTIRANGE)
		found = type_checked_domain(get_multirange_range(typid), depth + 1);
	ReleaseSysCache(tup);
	return found;
}

/* The first column of relid whose type runs a domain CHECK (MvTypeCheckedDomain) */
Oid
MvRelationCheckedDomain(Oid relid, AttrNumber *attnum)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			found = InvalidOid;
	int			i;

	for (i = 0; i < desc->natts && !OidIsValid(found); i++)
	{
		if (TupleDescAttr(desc, i)->attisdropped)
			continue;
		found = MvTypeCheckedDomain(TupleDescAttr(desc, i)->atttypid);
		if (OidIsValid(found) && attnum)
			*attnum = i + 1;
	}
	relation_close(rel, AccessShareLock);
	return found;
}

/* Does an expression cast to a domain (CoerceToDomain)? */
static bool
domain_cast_walker(Node *node, Oid *domain)
{
	if (node == NULL)
		return false;
	if (IsA(node, CoerceToDomain))
	{
		*domain = ((CoerceToDomain *) node)->resulttype;
		return true;
	}
	return expression_tree_walker(node, domain_cast_walker, domain);
}

/* Set while CREATE analyzes a new view (not when a view's definition is read) */
bool		mv_analyzing_create = false;

/* Find the target entry whose ressortgroupref is ref */
static TargetEntry *
tle_by_ref(List *tlist, Index ref)
{
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->ressortgroupref == ref)
			return tle;
	}
	return NULL;
}

/* True when the target entry's ressortgroupref is one of the GROUP BY items */
static bool
is_group_key(Query *q, TargetEntry *tle)
{
	ListCell   *lc;

	if (tle->ressortgroupref == 0)
		return false;
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);

		if (sgc->tleSortGroupRef == tle->ressortgroupref)
			return true;
	}
	return false;
}

/* Make a storage column */
static MvColumn *
make_column(MvColRole role, const char *physname, Node *expr)
{
	MvColumn   *col = palloc0(sizeof(MvColumn));

	col->role = role;
	col->physname = physname ? pstrdup(physname) : NULL;
	if (expr)
	{
		col->expr = (Expr *) expr;
		col->typid = exprType(expr);
		col->typmod = exprTypmod(expr);
		col->collation = exprCollation(expr);
	}
	return col;
}

/* Check the FROM item and return the source's range table index */
static int
check_from(Query *q)
{
	Node	   *item;
	RangeTblEntry *rte;
	Relation	rel;
	int			rtindex;

	if (q->jointree == NULL || list_length(q->jointree->fromlist) == 0)
		refuse("The query has no FROM clause.",
			   "Select from exactly one table.");
	if (list_length(q->jointree->fromlist) > 1 ||
		IsA(linitial(q->jointree->fromlist), JoinExpr))
		refuse("The query joins two or more tables.",
			   psprintf("Define one %s per table, or drop the %s option.",
						analyzing_history ? "history view" : "incremental view", kind_option()));
	item = linitial(q->jointree->fromlist);
	if (!IsA(item, RangeTblRef))
		elog(ERROR, "unexpected FROM item in incremental view");
	rtindex = ((RangeTblRef *) item)->rtindex;
	rte = rt_fetch(rtindex, q->rtable);
	switch (rte->rtekind)
	{
		case RTE_RELATION:
			break;
		case RTE_SUBQUERY:
			refuse("The query selects from a subquery.",
				   "Select directly from the table.");
			break;
		case RTE_FUNCTION:
		case RTE_TABLEFUNC:
			refuse("The query selects from a function.",
				   "Select from a table.");
			break;
		case RTE_VALUES:
			refuse("The query selects from a VALUES list.",
				   "Select from a table.");
			break;
		case RTE_CTE:
			refuse("The query uses a WITH clause (common table expression).",
				   "Select directly from the table.");
			break;
		default:
			refuse("The query does not select from a table.",
				   "Select from exactly one table.");
	}
	if (rte->tablesample)
		refuse("The query uses TABLESAMPLE.", "Remove the TABLESAMPLE clause.");

	rel = relation_open(rte->relid, AccessShareLock);
	switch (rel->rd_rel->relkind)
	{
		case RELKIND_RELATION:
			break;
		case RELKIND_PARTITIONED_TABLE:
			refuse(psprintf("The source \"%s\" is a partitioned table.",
							RelationGetRelationName(rel)),
				   psprintf("Define the view on one partition, or drop the %s option.", kind_option()));
			break;
		case RELKIND_FOREIGN_TABLE:
			refuse(psprintf("The source \"%s\" is a foreign table.",
							RelationGetRelationName(rel)),
				   psprintf("Changes of a foreign table cannot be captured; drop the %s option.", kind_option()));
			break;
		case RELKIND_VIEW:
			refuse(psprintf("The source \"%s\" is a view.", RelationGetRelationName(rel)),
				   "Define the view on the view's table.");
			break;
		case RELKIND_MATVIEW:
			refuse(psprintf("The source \"%s\" is a materialized view.",
							RelationGetRelationName(rel)),
				   "Define the view on a table.");
			break;
		default:
			refuse(psprintf("The source \"%s\" is not a table.",
							RelationGetRelationName(rel)),
				   "Define the view on a table.");
	}
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		refuse(psprintf("The source \"%s\" is a temporary table.",
						RelationGetRelationName(rel)),
			   "Use a permanent table as the source.");
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		refuse(psprintf("The source \"%s\" is an unlogged table.",
						RelationGetRelationName(rel)),
			   "Changes of an unlogged table are not in the WAL; use a logged table (ALTER TABLE ... SET LOGGED).");
	if (rel->rd_rel->relrowsecurity)
		refuse(psprintf("The source \"%s\" has row-level security enabled, and %s does not apply its policies to the rows it stores.",
						RelationGetRelationName(rel), a_view()),
			   psprintf("Drop the %s option (a plain materialized view applies the owner's policies), or disable row-level security on the table.",
						kind_option()));
	/* has_subclass() stays true after the last child is dropped */
	if (rte->inh && has_subclass(rte->relid) &&
		find_inheritance_children(rte->relid, NoLock) != NIL)
		refuse(psprintf("The source \"%s\" has inheritance children.",
						RelationGetRelationName(rel)),
			   "Select FROM ONLY the parent table.");
	if (IsCatalogRelation(rel) || get_rel_namespace(rte->relid) == MvincSchemaOid())
		refuse(psprintf("The source \"%s\" is a system or mvinc table.",
						RelationGetRelationName(rel)),
			   "Define the view on a user table.");
	if (mv_analyzing_create && !superuser())
	{
		AttrNumber	attnum = 0;
		Oid			domain = MvRelationCheckedDomain(rte->relid, &attnum);

		if (OidIsValid(domain))
			refuse(psprintf("Column \"%s\" of the source is of a type that runs the CHECK constraint of domain %s.",
							get_attname(rte->relid, attnum, false), format_type_be(domain)),
				   "Only a superuser can create such a view: refresh, reads and capture cast and store values with elevated rights, and a CHECK may run any code.");
	}
	relation_close(rel, AccessShareLock);
	return rtindex;
}

/* The key columns of an index */
static Bitmapset *
index_key_columns(Oid indexoid)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	Bitmapset  *cols = NULL;

	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
		cols = bms_add_member(cols, index->rd_index->indkey.values[i]);
	index_close(index, AccessShareLock);
	return cols;
}

/*
 * Do the old rows that the WAL logs for updates and deletes of rel, under
 * replica identity kind (and index, for REPLICA_IDENTITY_INDEX), hold the
 * columns cols?  (FULL holds all; NOTHING is refused elsewhere.)
 */
static bool
identity_holds(Relation rel, char kind, Oid index, Bitmapset *cols)
{
	if (kind == REPLICA_IDENTITY_FULL || kind == REPLICA_IDENTITY_NOTHING)
		return true;
	if (kind == REPLICA_IDENTITY_DEFAULT)
		index = RelationGetPrimaryKeyIndex(rel);
	return OidIsValid(index) && bms_is_subset(cols, index_key_columns(index));
}

/*
 * ALTER TABLE relid REPLICA IDENTITY ...: refuse an identity whose old
 * rows would lack the row identity of a projection view of the table (its
 * deletes and key changes could not be applied).
 */
void
MvCheckReplicaIdentity(Oid relid, ReplicaIdentityStmt *ri)
{
	Relation	rel;
	Oid			index = InvalidOid;
	ListCell   *lc;

	if (ri->identity_type == REPLICA_IDENTITY_INDEX)
	{
		index = get_relname_relid(ri->name, get_rel_namespace(relid));
		if (!OidIsValid(index))
			return;				/* PostgreSQL says so */
	}
	rel = table_open(relid, AccessShareLock);
	/* (under ALTER TABLE's lock: views committed meanwhile too) */
	foreach(lc, MvViewsOfSourceIn(relid, MV_LOOKUP_LATEST))
	{
		Oid			viewid = lfirst_oid(lc);
		MvDef	   *def = MvDefForView(viewid);
		Bitmapset  *rowid = NULL;
		ListCell   *lk;

		if (def->kind != MV_KIND_PROJECTION)
			continue;
		foreach(lk, def->columns)
			if (((MvColumn *) lfirst(lk))->role == MV_COL_ROWID)
				rowid = bms_add_member(rowid, ((MvColumn *) lfirst(lk))->srcattnum);
		if (!identity_holds(rel, ri->identity_type, index, rowid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change the replica identity of table \"%s\"",
							RelationGetRelationName(rel)),
					 errdetail("Incremental view \"%s\" identifies rows by the primary key, which the old rows of updates and deletes would not hold.",
							   get_rel_name(viewid)),
					 errhint("Use REPLICA IDENTITY FULL or DEFAULT, or an index that includes the primary key.")));
	}
	table_close(rel, AccessShareLock);
}

/*
 * HAVING as a condition over the view's own columns: each aggregate, and
 * each group key outside aggregates, must be one the select list shows
 * (storage keeps every group; reads filter the finalized rows, so a group
 * can leave and come back).
 */
static Node *
having_mutator(Node *node, List *viewcols)
{
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	foreach(lc, viewcols)
	{
		MvColumn   *col = lfirst(lc);

		if (col->attnum > 0 && (col->role == MV_COL_AGG || col->role == MV_COL_GROUP) &&
			equal(node, col->expr))
			return keep_explicit_collation(node,
										   (Node *) makeVar(1, col->attnum, exprType(node),
															exprTypmod(node), exprCollation(node), 0));
	}
	if (IsA(node, Aggref))
		refuse(psprintf("The HAVING clause uses the aggregate %s, which the select list does not show.",
						format_procedure(((Aggref *) node)->aggfnoid)),
			   "Add the aggregate to the select list.");
	if (IsA(node, Var))
		refuse("The HAVING clause uses a column outside aggregates that the select list does not show.",
			   "Add the GROUP BY item to the select list.");
	return expression_tree_mutator(node, having_mutator, viewcols);
}

static Node *
having_over_view(Node *having, List *viewcols)
{
	return having_mutator(having, viewcols);
}

/*
 * The storage column of an aggregate of the select list (or of an
 * expression over aggregates, then hidden): refused when it cannot be
 * kept; count(*) is the hidden group count; aggregates with the same
 * state (sum and avg of one argument and filter) share one.
 */
static MvColumn *
agg_column(MvDef *def, Aggref *agg, List **aggcols, int *ns)
{
	const char *why = NULL;
	char	   *aggname = format_procedure(agg->aggfnoid);
	MvColumn   *col;
	ListCell   *lc;

	if (agg->aggkind != AGGKIND_NORMAL)
		refuse(psprintf("The query uses the ordered-set aggregate %s.", aggname),
			   "Use an aggregate that has a combine function.");
	if (agg->aggdistinct != NIL)
		refuse(psprintf("The query uses DISTINCT in aggregate %s.", aggname),
			   "Use approx_count_distinct(), or GROUP BY the distinct value in a separate view.");
	if (agg->aggorder != NIL)
		refuse(psprintf("The query uses ORDER BY in aggregate %s.", aggname),
			   "Remove ORDER BY from the aggregate call.");
	if (!MvAggSupported(agg->aggfnoid, &why))
		refuse(psprintf("The query uses the aggregate %s. %s", aggname, why),
			   "Use an aggregate that supports partial aggregation (it has a combine function).");
	col = make_column(MV_COL_AGG, NULL, (Node *) agg);
	col->aggfnoid = agg->aggfnoid;
	if (!MvAggRetractable(agg->aggfnoid))
		def->retractable = false;
	if (agg->aggstar && agg->aggfnoid == F_COUNT_ && agg->aggfilter == NULL)
	{
		/* count(*) is the hidden group count itself */
		col->derived_count = true;
		col->physname = "_mvinc_count";
		return col;
	}
	foreach(lc, *aggcols)
	{
		MvColumn   *other = lfirst(lc);
		Aggref	   *oagg = (Aggref *) other->expr;

		if (equal(oagg->args, agg->args) && equal(oagg->aggfilter, agg->aggfilter) &&
			MvincAggSameState(other->aggfnoid, agg->aggfnoid))
		{
			col->shared = true;
			col->physname = other->physname;
			return col;
		}
	}
	col->physname = psprintf("s%d", ++*ns);
	*aggcols = lappend(*aggcols, col);
	return col;
}

/*
 * An expression of the select list over aggregates and group keys: each
 * aggregate and each group key in it becomes a parameter $MV_PART_PARAM + i
 * of the i-th of its parts (the key's column, or the aggregate's, hidden
 * when the select list does not show it), which reads put back as SQL.
 */
typedef struct PartsCtx
{
	Query	   *q;
	MvDef	   *def;
	List	  **aggcols;
	int		   *ns;
	List	   *parts;
	MvColumn  **shown;			/* the select list's keys and aggregates, by position */
	int			nshown;
} PartsCtx;

/*
 * What replaces a group key's expression: repl, under the key's own COLLATE
 * clause when it has one, so that the collation stays explicit where the
 * query had it so (a column read from a subquery is implicitly collated)
 */
static Node *
keep_explicit_collation(Node *key, Node *repl)
{
	CollateExpr *c;

	if (!IsA(key, CollateExpr))
		return repl;
	c = copyObject((CollateExpr *) key);
	c->arg = (Expr *) repl;
	return (Node *) c;
}

static Node *
part_param(PartsCtx *ctx, MvColumn *part, Node *node)
{
	Param	   *p = makeNode(Param);
	ListCell   *lc;
	int			i = -1;

	foreach(lc, ctx->parts)
		if (lfirst(lc) == part)
			i = foreach_current_index(lc);
	if (i < 0)
	{
		ctx->parts = lappend(ctx->parts, part);
		i = list_length(ctx->parts) - 1;
	}

	p->paramkind = PARAM_EXTERN;
	p->paramid = MV_PART_PARAM + i;
	p->paramtype = exprType(node);
	p->paramtypmod = exprTypmod(node);
	p->paramcollid = exprCollation(node);
	p->location = -1;
	return (Node *) p;
}

static Node *
parts_mutator(Node *node, PartsCtx *ctx)
{
	ListCell   *lc;

	if (node == NULL)
		return NULL;

	foreach(lc, ctx->def->columns)
	{
		MvColumn   *key = lfirst(lc);

		if (key->role == MV_COL_GROUP && equal(node, key->expr))
			return keep_explicit_collation(node, part_param(ctx, key, node));
	}
	if (IsA(node, Aggref))
	{
		/* a shown aggregate's column (its stored result), else one hidden per call */
		for (int i = 1; i <= ctx->nshown; i++)
		{
			MvColumn   *shown = ctx->shown[i];

			if (shown && shown->role == MV_COL_AGG && equal(node, shown->expr))
				return part_param(ctx, shown, node);
		}
		foreach(lc, ctx->parts)
		{
			MvColumn   *part = lfirst(lc);

			if (part->role == MV_COL_AGG && equal(node, part->expr))
				return part_param(ctx, part, node);
		}
		return part_param(ctx, agg_column(ctx->def, (Aggref *) node, ctx->aggcols, ctx->ns), node);
	}
	if (IsA(node, Var))
		refuse("The query computes an expression over a column that is neither aggregated nor a GROUP BY item.",
			   "Group by the column, or aggregate it.");
	return expression_tree_mutator(node, parts_mutator, ctx);
}

/* Add the hidden row identity columns of a projection view */
static void
add_rowid_columns(MvDef *def, const char *relname)
{
	Relation	rel = table_open(def->sourceid, AccessShareLock);
	Oid			indexoid = RelationGetPrimaryKeyIndex(rel);
	Relation	index;
	int			i;

	if (!OidIsValid(indexoid))
		indexoid = RelationGetReplicaIndex(rel);
	if (!OidIsValid(indexoid))
		refuse(psprintf("The source \"%s\" has no primary key or replica identity index, which a projection view needs to identify its rows.",
						relname),
			   "Add a primary key to the source table, or add GROUP BY to the view.");
	if (!identity_holds(rel, rel->rd_rel->relreplident, RelationGetReplicaIndex(rel),
						index_key_columns(indexoid)))
		refuse(psprintf("The replica identity index of \"%s\" does not hold its primary key, which a projection view identifies rows by: the WAL would not tell which rows deletes and updates change.",
						relname),
			   "Use ALTER TABLE ... REPLICA IDENTITY DEFAULT or FULL on the source first.");
	index = index_open(indexoid, AccessShareLock);
	for (i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attno = index->rd_index->indkey.values[i];
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attno - 1);
		MvColumn   *col;

		if (attno <= 0)
			refuse("The source's identity index uses an expression.",
				   "Add a primary key on plain columns to the source table.");
		col = make_column(MV_COL_ROWID, psprintf("_mvinc_id%d", i + 1),
						  (Node *) makeVar(1, attno, att->atttypid, att->atttypmod,
										   att->attcollation, 0));
		col->srcattnum = attno;
		def->columns = lappend(def->columns, col);
	}
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * Validate a view query and derive its physical schema.  Errors out (with
 * the refusal message) on every unsupported shape.
 */
MvDef *
MvAnalyzeQuery(Query *query, const char *viewname, bool report)
{
	MvDef	   *def = palloc0(sizeof(MvDef));
	Query	   *q = copyObject(query);
	int			rtindex;
	ListCell   *lc;
	int			ncols;
	MvColumn  **bycol;
	int			nk = 0,
				ns = 0,
				nc = 0;
	List	   *aggcols = NIL;
	List	   *viewcols = NIL;

	refused_view = viewname;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		refuse("The query is not a SELECT.", "Use a SELECT query.");
	if (q->cteList != NIL)
		refuse("The query uses a WITH clause (common table expression).",
			   "Inline the common table expression into the query.");
	if (q->setOperations != NULL)
		refuse("The query uses a set operation (UNION, INTERSECT or EXCEPT).",
			   psprintf("Define one %s per branch of the set operation.",
						analyzing_history ? "history view" : "incremental view"));
	if (q->hasWindowFuncs)
		refuse("The query uses a window function.",
			   "Compute the window function when reading the view.");
	if (q->hasDistinctOn)
		refuse("The query uses DISTINCT ON.",
			   "Use GROUP BY with aggregates, or drop the mvinc.incremental option.");
	if (q->distinctClause != NIL)
		refuse("The query uses DISTINCT.",
			   "Use GROUP BY over the selected columns instead of DISTINCT.");
	if (q->havingQual != NULL && analyzing_history)
		refuse("The query uses a HAVING clause.",
			   "Filter on the aggregate when reading the view.");
	if (q->groupingSets != NIL)
		refuse("The query uses GROUPING SETS, CUBE or ROLLUP.",
			   "Define one incremental view per grouping.");
	if (q->limitCount != NULL || q->limitOffset != NULL)
		refuse("The query uses LIMIT or OFFSET.",
			   "Apply LIMIT or OFFSET when reading the view.");
	if (q->sortClause != NIL)
		refuse("The query uses ORDER BY.",
			   "Apply ORDER BY when reading the view.");
	if (q->hasSubLinks)
		refuse("The query uses a subquery in an expression (sublink).",
			   psprintf("Replace the subquery with a join outside the view, or drop the %s option.",
						kind_option()));
	if (q->hasTargetSRFs)
		refuse("The query uses a set-returning function in the select list.",
			   "Call the set-returning function when reading the view.");
	if (q->rowMarks != NIL || q->hasForUpdate)
		refuse("The query uses FOR UPDATE or FOR SHARE.",
			   "Remove the locking clause.");

	rtindex = check_from(q);
	if (mv_analyzing_create && !superuser())
	{
		Oid			domain = InvalidOid;

		if (domain_cast_walker((Node *) q->targetList, &domain) ||
			domain_cast_walker(q->jointree->quals, &domain) ||
			domain_cast_walker(q->havingQual, &domain))
			refuse(psprintf("The query casts to domain %s.", format_type_be(domain)),
				   "Only a superuser can create such a view: refresh runs the query with elevated rights, and a domain's constraints may run any code.");
		foreach(lc, q->targetList)
		{
			TargetEntry *tle = lfirst(lc);

			domain = MvTypeCheckedDomain(exprType((Node *) tle->expr));
			if (OidIsValid(domain))
				refuse(psprintf("Column \"%s\" is of a type that runs the CHECK constraint of domain %s.",
								tle->resname ? tle->resname : "?", format_type_be(domain)),
					   "Only a superuser can create such a view: refresh, reads and capture cast and store values with elevated rights, and a CHECK may run any code.");
		}
	}
	def->sourceid = rt_fetch(rtindex, q->rtable)->relid;
	def->query = query;

	/* Put the source at range table index 1 for the expressions we keep */
	if (rtindex != 1)
	{
		ChangeVarNodes((Node *) q->targetList, rtindex, 1, 0);
		ChangeVarNodes((Node *) q->jointree->quals, rtindex, 1, 0);
		ChangeVarNodes(q->havingQual, rtindex, 1, 0);
	}
	def->where = q->jointree->quals;
	if (def->where)
		check_expr(def->where, "WHERE clause");

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		check_expr((Node *) tle->expr, "select list");
	}

	def->has_group_by = (q->groupClause != NIL);
	def->kind = (q->hasAggs || def->has_group_by) ? MV_KIND_AGGREGATE : MV_KIND_PROJECTION;
	if (def->kind == MV_KIND_PROJECTION && q->havingQual != NULL)
		refuse("The query uses HAVING without aggregates or GROUP BY (one group of every row).",
			   "Add the aggregates or the GROUP BY the condition is about, or use WHERE.");

	if (def->kind == MV_KIND_AGGREGATE)
	{
		def->retractable = true;

		/* Group keys first, in GROUP BY order */
		foreach(lc, q->groupClause)
		{
			SortGroupClause *sgc = lfirst(lc);
			TargetEntry *tle = tle_by_ref(q->targetList, sgc->tleSortGroupRef);
			MvColumn   *col;

			col = make_column(MV_COL_GROUP, psprintf("k%d", ++nk), (Node *) tle->expr);
			col->attnum = tle->resjunk ? 0 : tle->resno;
			def->columns = lappend(def->columns, col);

			/*
			 * Retraction keeps a group's stored key: with a key whose equal
			 * values differ in spelling, a group whose rows of the stored
			 * spelling go would show one no row has.  Touched groups are
			 * computed again from the source instead (as with min or max).
			 */
			if (!MvTypeImageStable(exprType((Node *) tle->expr), exprTypmod((Node *) tle->expr),
								  exprCollation((Node *) tle->expr)))
				def->retractable = false;
		}
		/*
		 * The select list: keys and aggregates first, then expressions over
		 * them (which use the shown aggregates' columns, and add hidden
		 * ones for the others); view columns stay in select-list order
		 */
		ncols = list_length(q->targetList);
		bycol = palloc0(sizeof(MvColumn *) * (ncols + 1));
		for (int pass = 1; pass <= 2; pass++)
		{
			foreach(lc, q->targetList)
			{
				TargetEntry *tle = lfirst(lc);
				MvColumn   *col = NULL;
				bool		expr = !is_group_key(q, tle) && !IsA(tle->expr, Aggref);

				if (tle->resjunk || expr != (pass == 2))
					continue;
				if (is_group_key(q, tle))
				{
					ListCell   *lc2;

					foreach(lc2, def->columns)
					{
						MvColumn   *c = lfirst(lc2);

						if (c->attnum == tle->resno)
							col = c;
					}
				}
				else if (!expr)
				{
					col = agg_column(def, (Aggref *) tle->expr, &aggcols, &ns);
					col->attnum = tle->resno;
				}
				else
				{
					/*
					 * An expression over aggregates and group keys: computed
					 * on read from them
					 */
					PartsCtx	ctx = {q, def, &aggcols, &ns, NIL, bycol, ncols};

					col = make_column(MV_COL_EXPR, NULL, (Node *) tle->expr);
					col->expr = (Expr *) parts_mutator((Node *) tle->expr, &ctx);
					col->parts = ctx.parts;
					col->attnum = tle->resno;
				}
				bycol[tle->resno] = col;
			}
		}
		for (int i = 1; i <= ncols; i++)
			if (bycol[i] != NULL)
				viewcols = lappend(viewcols, bycol[i]);
		def->columns = list_concat(def->columns, aggcols);
		if (q->havingQual != NULL)
		{
			check_expr(q->havingQual, "HAVING clause");
			def->having = having_over_view(q->havingQual, viewcols);
		}
		def->columns = lappend(def->columns,
							   make_column(MV_COL_COUNT, "_mvinc_count", NULL));
		((MvColumn *) llast(def->columns))->typid = INT8OID;
		((MvColumn *) llast(def->columns))->typmod = -1;
	}
	else
	{
		foreach(lc, q->targetList)
		{
			TargetEntry *tle = lfirst(lc);
			MvColumn   *col;

			if (tle->resjunk)
				continue;
			col = make_column(MV_COL_PLAIN, psprintf("c%d", ++nc), (Node *) tle->expr);
			col->attnum = tle->resno;
			def->columns = lappend(def->columns, col);
			viewcols = lappend(viewcols, col);
		}
		/* a history view names its own key (src/history) */
		if (!analyzing_history)
			add_rowid_columns(def, get_rel_name(def->sourceid));
	}
	def->viewcols = viewcols;
	foreach(lc, def->columns)
		((MvColumn *) lfirst(lc))->sourceid = def->sourceid;
	return def;
}

/*
 * The same analysis for a history view (src/history): the same shapes are
 * refused, with the message naming history views, and no row identity is
 * added.  Returns a projection or an aggregate definition; the caller
 * refuses the latter.
 */
MvDef *
MvAnalyzeHistoryQuery(Query *query, const char *viewname)
{
	MvDef	   *def;

	analyzing_history = true;
	PG_TRY();
	{
		def = MvAnalyzeQuery(query, viewname, true);
	}
	PG_FINALLY();
	{
		analyzing_history = false;
	}
	PG_END_TRY();
	return def;
}

/* The defining query of a materialized view, from its rewrite rule */
Query *
MvMatviewQuery(Relation rel)
{
	Query	   *query = NULL;
	int			i;

	if (rel->rd_rules)
	{
		for (i = 0; i < rel->rd_rules->numLocks; i++)
		{
			RewriteRule *rule = rel->rd_rules->rules[i];

			if (rule->event == CMD_SELECT)
				query = copyObject(linitial_node(Query, rule->actions));
		}
	}
	if (query == NULL)
		elog(ERROR, "materialized view %u has no query", RelationGetRelid(rel));
	return query;
}

/* The definition of an existing incremental view, from its rewrite rule */
MvDef *
MvDefForView(Oid viewid)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	MvDef	   *def;

	def = MvAnalyzeQuery(MvMatviewQuery(rel), RelationGetRelationName(rel), true);
	relation_close(rel, NoLock);
	return def;
}

/*
 * Refuse a refresh (or anything that recomputes from the source) when the
 * view's owner may not read what the view's query reads, as PostgreSQL
 * refuses a native REFRESH: the rule's range table checks as the owner.
 */
void
MvCheckOwnerCanRead(Oid viewid)
{
	Relation	rel = relation_open(viewid, AccessShareLock);

	(void) ExecCheckRTPerms(MvMatviewQuery(rel)->rtable, true);
	relation_close(rel, NoLock);
}

/* Does a query read sourceid with its inheritance children (no ONLY)? */
bool
MvQueryReadsChildren(Query *query, Oid sourceid)
{
	ListCell   *lc;

	foreach(lc, query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relid == sourceid && rte->inh)
			return true;
	}
	return false;
}

/* Does the view read its source with the source's inheritance children? */
bool
MvViewReadsChildren(Oid viewid, Oid sourceid)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	bool		inh = MvQueryReadsChildren(MvMatviewQuery(rel), sourceid);

	relation_close(rel, NoLock);
	return inh;
}

/*
 * Once the lock of MvLockForTracking is held on a source that a view reads
 * with its children: refuse if it has children now.  The view's query was
 * checked for children before (at CREATE, or before a WITH NO DATA view's
 * first refresh), while a CREATE TABLE ... INHERITS still open could not
 * see the view and was let through (refuse_new_child): its lock was what
 * we waited for.
 */
void
MvRefuseChildrenAfterLock(Oid sourceid, bool reads_children)
{
	if (!reads_children)
		return;
	InvalidateCatalogSnapshot();
	if (has_subclass(sourceid) && find_inheritance_children(sourceid, NoLock) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot compute an incremental or history view over \"%s\": the table has inheritance children",
						get_rel_name(sourceid)),
				 errdetail("A child of the table was created while the view was being created or before its first refresh; its changes are not captured."),
				 errhint("Define the view with FROM ONLY %s, or drop the children.",
						 quote_identifier(get_rel_name(sourceid)))));
}

/* Name under which a view registers as a capture consumer */
char *
MvConsumerName(Oid viewid)
{
	return psprintf("mv_%u", viewid);
}
