/*-------------------------------------------------------------------------
 * mv_keyfilter.c
 *	  Key conditions of a reader's query pushed into a hybrid read's delta.
 *
 * A hybrid read computes the states of the changes past the view's
 * checkpoint once per statement (mv_hybrid.c), for every group they touch,
 * whatever the reader then keeps: a query for one region paid for the
 * delta of all of them.  Here, when an aggregate view with GROUP BY is
 * redirected (mv_read.c), the conjuncts of the reader's WHERE (and of inner
 * joins' ON) of the form "group key = value" or "group key = ANY (array)"
 * are found, and the read's delta functions are called with them:
 * mvinc._delta_states(view, keys, ops, VARIADIC arrays), which compute the
 * delta of the change-log rows whose group keys pass them alone.
 *
 * Why that is exact: the reader's condition stays where it is and is
 * applied to the read's rows; a group key is a group's identity, so the
 * change-log rows (old and new images alike) whose keys pass the condition
 * are all the changes of the groups that pass it, and the delta rows of
 * the other groups would be removed by the condition anyway.  Groups of
 * the storage that the narrower delta leaves unreplaced are such groups.
 * Only a value the statement computes once (constants, parameters, stable
 * functions of them: no column, sublink or volatile function) is moved,
 * only for btree equality of the key's own type (its leakproof operator,
 * in the key's collation), and only conditions that remove rows of the
 * view wherever it stands (WHERE, inner joins: strict operators).
 *
 * mvinc._delta_* are callable by PUBLIC (readers' queries call them): the
 * operators they are given are checked again here, so no caller can make
 * them run an operator of its choosing over the change log.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "mv/mv.h"

/* The group key column of view column attno, and its number among the keys */
static MvColumn *
group_key_of(MvDef *def, AttrNumber attno, int *keyno)
{
	MvColumn   *viewcol;
	ListCell   *lc;
	int			n = 0;

	if (attno < 1 || attno > list_length(def->viewcols))
		return NULL;
	viewcol = list_nth(def->viewcols, attno - 1);
	if (viewcol->role != MV_COL_GROUP)
		return NULL;
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role != MV_COL_GROUP)
			continue;
		n++;
		if (strcmp(col->physname, viewcol->physname) == 0)
		{
			*keyno = n;
			return col;
		}
	}
	return NULL;
}

/* The group key keyno (1-based, in storage order), or NULL */
static MvColumn *
group_key_by_number(MvDef *def, int keyno)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_GROUP && ++n == keyno)
			return col;
	}
	return NULL;
}

/*
 * Can a group key expression run on any row without failing or showing its
 * input?  Columns, constants, relabelings and collations, boolean tests
 * and leakproof functions and operators of them; nothing else (casts
 * through text, CASE, domain checks, array constructors and subscripts:
 * PostgreSQL's own contain_leaked_vars lets multidimensional ARRAY[] by,
 * which fails on arrays of unlike sizes).
 */
static bool leaky_key_walker(Node *node, void *context);

static bool
harmless_key(Node *node, void *context)
{
	if (node == NULL)
		return true;
	switch (nodeTag(node))
	{
		case T_Var:
		case T_Const:
			return true;
		case T_RelabelType:
		case T_CollateExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_BoolExpr:
			break;
		case T_FuncExpr:
			if (!get_func_leakproof(((FuncExpr *) node)->funcid))
				return false;
			break;
		case T_OpExpr:
			set_opfuncid((OpExpr *) node);
			if (!get_func_leakproof(((OpExpr *) node)->opfuncid))
				return false;
			break;
		case T_List:
			break;
		default:
			return false;
	}
	return !expression_tree_walker(node, leaky_key_walker, context);
}

/* expression_tree_walker's callback: true on a part that is not harmless */
static bool
leaky_key_walker(Node *node, void *context)
{
	return !harmless_key(node, context);
}

/*
 * May operator opno, with a right operand of type righttype, filter the
 * delta by group key key?  The btree equality of the key type's default
 * operator family (the key's identity: what GROUP BY and the storage's
 * unique index use), with a leakproof function (it runs on change-log rows
 * the view's WHERE may hide) that is strict (NULL matches nothing); and a
 * key expression that runs nothing that may fail or show its input (a
 * column, or leakproof functions of columns): the condition may be
 * evaluated before the view's WHERE, on rows it would have dropped.
 */
static bool
key_operator_ok(MvColumn *key, Oid opno, Oid righttype)
{
	Oid			keytype = getBaseType(key->typid);
	Oid			opclass = GetDefaultOpClass(keytype, BTREE_AM_OID);
	Oid			opfamily;
	Oid			lefttype;
	Oid			rtype;
	int			strategy;
	RegProcedure opcode;

	if (!OidIsValid(opclass) || !harmless_key((Node *) key->expr, NULL))
		return false;
	opfamily = get_opclass_family(opclass);
	if (!op_in_opfamily(opno, opfamily))
		return false;
	get_op_opfamily_properties(opno, opfamily, false, &strategy, &lefttype, &rtype);
	/* (a varchar key compares as text) */
	if (strategy != BTEqualStrategyNumber || rtype != righttype ||
		(lefttype != keytype && !IsBinaryCoercible(keytype, lefttype)))
		return false;
	opcode = get_opcode(opno);
	/* (immutable: kept deltas are told apart by the values' bytes alone) */
	return OidIsValid(opcode) && get_func_leakproof(opcode) && func_strict(opcode) &&
		func_volatile(opcode) == PROVOLATILE_IMMUTABLE;
}

/* Is expr a value the statement computes once, with nothing of any row? */
static bool
movable_value_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) || IsA(node, SubLink) ||
		IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc) ||
		IsA(node, CurrentOfExpr) || IsA(node, NextValueExpr))
		return true;
	if (IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN)
		return true;
	return expression_tree_walker(node, movable_value_walker, context);
}

static bool
movable_value(Node *expr)
{
	return !movable_value_walker(expr, NULL) && !contain_volatile_functions(expr);
}

/* The column of the view read at range-table index rti that node is, or 0 */
static AttrNumber
view_column(Node *node, int rti)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node && IsA(node, Var) && ((Var *) node)->varno == rti &&
		((Var *) node)->varlevelsup == 0 && ((Var *) node)->varattno > 0)
		return ((Var *) node)->varattno;
	return 0;
}

/* Conditions found so far */
typedef struct KeyConds
{
	List	   *keys;			/* int: key number */
	List	   *ops;			/* Oid */
	List	   *arrays;			/* Node *: array of the right operand's type */
} KeyConds;

/* Note clause when it is a key condition on the view read at rti */
static void
note_clause(MvDef *def, int rti, Node *clause, KeyConds *found)
{
	AttrNumber	attno = 0;
	Oid			opno = InvalidOid;
	Oid			inputcollid = InvalidOid;
	Node	   *value = NULL;
	Node	   *array;
	Oid			righttype;
	MvColumn   *key;
	int			keyno;

	if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) clause;

		/* key = value, or value = key (then its commutator) */
		if ((attno = view_column(linitial(op->args), rti)) > 0)
		{
			opno = op->opno;
			value = lsecond(op->args);
		}
		else if ((attno = view_column(lsecond(op->args), rti)) > 0)
		{
			opno = get_commutator(op->opno);
			value = linitial(op->args);
		}
		inputcollid = op->inputcollid;
		if (value == NULL || !OidIsValid(opno))
			return;
		righttype = exprType(value);
		if (!OidIsValid(get_array_type(righttype)))
			return;
		array = (Node *) makeNode(ArrayExpr);
		((ArrayExpr *) array)->array_typeid = get_array_type(righttype);
		((ArrayExpr *) array)->array_collid = exprCollation(value);
		((ArrayExpr *) array)->element_typeid = righttype;
		((ArrayExpr *) array)->elements = list_make1(value);
		((ArrayExpr *) array)->multidims = false;
		((ArrayExpr *) array)->location = -1;
	}
	else if (IsA(clause, ScalarArrayOpExpr) && ((ScalarArrayOpExpr *) clause)->useOr)
	{
		ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) clause;

		/* key = ANY (array) */
		if ((attno = view_column(linitial(saop->args), rti)) == 0)
			return;
		opno = saop->opno;
		inputcollid = saop->inputcollid;
		array = value = lsecond(saop->args);
		righttype = get_element_type(exprType(array));
		if (!OidIsValid(righttype))
			return;
	}
	else
		return;

	key = group_key_of(def, attno, &keyno);
	if (key == NULL || !movable_value(value) || inputcollid != key->collation ||
		!key_operator_ok(key, opno, righttype))
		return;
	found->keys = lappend_int(found->keys, keyno);
	found->ops = lappend_oid(found->ops, opno);
	found->arrays = lappend(found->arrays, copyObject(array));
}

/* Note the key conditions among the conjuncts of quals (an expression or a list) */
static void
note_conjuncts(MvDef *def, int rti, Node *quals, KeyConds *found)
{
	ListCell   *lc;

	if (quals == NULL)
		return;
	if (is_andclause(quals))
	{
		foreach(lc, ((BoolExpr *) quals)->args)
			note_conjuncts(def, rti, lfirst(lc), found);
		return;
	}
	if (IsA(quals, List))
	{
		foreach(lc, (List *) quals)
			note_conjuncts(def, rti, lfirst(lc), found);
		return;
	}
	note_clause(def, rti, quals, found);
}

/* Oids of the filtered delta functions, and of the unfiltered ones */
static void
delta_funcs(Oid *states1, Oid *replaced1, Oid *states4, Oid *replaced4)
{
	Oid			schema = MvincSchemaOid();
	char	   *nsp = get_namespace_name(schema);
	Oid			one[1] = {OIDOID};
	Oid			four[4] = {OIDOID, INT2ARRAYOID, OIDARRAYOID, ANYOID};

	*states1 = LookupFuncName(list_make2(makeString(nsp), makeString("_delta_states")), 1, one, true);
	*replaced1 = LookupFuncName(list_make2(makeString(nsp), makeString("_delta_replaced")), 1, one, true);
	*states4 = LookupFuncName(list_make2(makeString(nsp), makeString("_delta_states")), 4, four, true);
	*replaced4 = LookupFuncName(list_make2(makeString(nsp), makeString("_delta_replaced")), 4, four, true);
}

typedef struct PushCtx
{
	Oid			viewid;
	Oid			states1,
				replaced1,
				states4,
				replaced4;
	List	   *extra_args;		/* keys, ops, then the arrays */
} PushCtx;

/* Is arg the constant oid viewid (the parser leaves it a relabeled integer)? */
static bool
is_view_oid(Node *arg, Oid viewid)
{
	while (arg && IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	return arg && IsA(arg, Const) && !((Const *) arg)->constisnull &&
		DatumGetObjectId(((Const *) arg)->constvalue) == viewid;
}

/* Give every call of the delta functions in the read query the conditions */
static bool
push_walker(Node *node, PushCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, push_walker, ctx, QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;
		ListCell   *lc;

		if (rte->rtekind != RTE_FUNCTION)
			return false;
		foreach(lc, rte->functions)
		{
			RangeTblFunction *rtf = lfirst(lc);
			FuncExpr   *f = (FuncExpr *) rtf->funcexpr;

			if (f == NULL || !IsA(f, FuncExpr) || list_length(f->args) != 1 ||
				(f->funcid != ctx->states1 && f->funcid != ctx->replaced1) ||
				!is_view_oid(linitial(f->args), ctx->viewid))
				continue;
			f->funcid = f->funcid == ctx->states1 ? ctx->states4 : ctx->replaced4;
			f->args = list_concat(f->args, copyObject(ctx->extra_args));
			f->funcvariadic = false;
		}
		return false;
	}
	return expression_tree_walker(node, push_walker, ctx);
}

/*
 * The conditions that remove rows of query level q: the conjuncts of its
 * WHERE and of its inner joins' ON, then extra (those an enclosing level
 * applies to q's rows).  A new list of the query's own nodes, which the
 * callers copy before they change anything.
 */
List *
MvLevelConditions(Query *q, List *extra)
{
	List	   *conds = list_copy(extra);
	List	   *items;

	/* (MERGE's jointree quals are its ON, which removes no source row) */
	if (q->jointree == NULL ||
		(q->commandType != CMD_SELECT && q->commandType != CMD_UPDATE &&
		 q->commandType != CMD_DELETE))
		return conds;
	conds = list_concat(conds, make_ands_implicit((Expr *) q->jointree->quals));
	items = list_copy(q->jointree->fromlist);
	for (int i = 0; i < list_length(items); i++)
	{
		JoinExpr   *j = list_nth(items, i);

		if (j == NULL || !IsA(j, JoinExpr) || j->jointype != JOIN_INNER)
			continue;
		conds = list_concat(conds, make_ands_implicit((Expr *) j->quals));
		items = lappend(items, j->larg);
		items = lappend(items, j->rarg);
	}
	return conds;
}

/*
 * The key conditions a reader's query level applies to the rows of its
 * subquery at range-table index rti (sub: a plain view over an incremental
 * view, or a subquery in FROM), over sub's own range table: each
 * "column = value" of the level's conditions (conds, MvLevelConditions)
 * whose column sub takes as it is from one of its relations.  They
 * remove every row of sub in which that column does not pass; unless sub
 * groups, aggregates, limits or otherwise combines rows, the rows of the
 * incremental views it reads that do not pass them make only such rows.
 * (Values are checked by the caller: none with a column moves down.)
 */
List *
MvKeyConditionsForSubquery(List *conds, int rti, Query *sub)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (sub->commandType != CMD_SELECT || sub->hasAggs || sub->groupClause != NIL ||
		sub->groupingSets != NIL || sub->havingQual != NULL || sub->hasWindowFuncs ||
		sub->hasTargetSRFs || sub->distinctClause != NIL || sub->limitCount != NULL ||
		sub->limitOffset != NULL || sub->setOperations != NULL || sub->hasModifyingCTE ||
		sub->jointree == NULL)
		return NIL;
	foreach(lc, conds)
	{
		Node	   *clause = lfirst(lc);
		List	   *args;
		int			side = -1;
		AttrNumber	attno;
		TargetEntry *tle;
		Node	   *inner;

		if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
			args = ((OpExpr *) clause)->args;
		else if (IsA(clause, ScalarArrayOpExpr))
			args = ((ScalarArrayOpExpr *) clause)->args;
		else
			continue;
		if ((attno = view_column(linitial(args), rti)) > 0)
			side = 0;
		else if (IsA(clause, OpExpr) && (attno = view_column(lsecond(args), rti)) > 0)
			side = 1;
		else
			continue;
		tle = get_tle_by_resno(sub->targetList, attno);
		if (tle == NULL || tle->resjunk || !IsA(tle->expr, Var) ||
			((Var *) tle->expr)->varlevelsup != 0)
			continue;
		/* the same condition on sub's column (its type is the column's) */
		clause = copyObject(clause);
		args = IsA(clause, OpExpr) ? ((OpExpr *) clause)->args : ((ScalarArrayOpExpr *) clause)->args;
		inner = list_nth(args, side);
		if (IsA(inner, RelabelType))
		{
			RelabelType *r = (RelabelType *) inner;

			while (IsA(r->arg, RelabelType))
				r = (RelabelType *) r->arg;
			r->arg = (Expr *) copyObject(tle->expr);
		}
		else
			list_nth_cell(args, side)->ptr_value = copyObject(tle->expr);
		out = lappend(out, clause);
	}
	return out;
}

/*
 * The view viewid (definition def), read at range-table index rti of a
 * query level whose conditions are conds (MvLevelConditions), is about to
 * be replaced by its read query readq: give readq's delta functions the
 * key conditions among them, if any.
 */
void
MvPushKeyConditions(List *conds, int rti, Oid viewid, MvDef *def, Query *readq)
{
	KeyConds	found = {NIL, NIL, NIL};
	PushCtx		ctx;
	Datum	   *keys;
	Datum	   *ops;
	ListCell   *lc;
	int			n;

	if (def->kind != MV_KIND_AGGREGATE || !def->has_group_by)
		return;
	foreach(lc, conds)
		note_conjuncts(def, rti, lfirst(lc), &found);
	if (found.keys == NIL)
		return;
	delta_funcs(&ctx.states1, &ctx.replaced1, &ctx.states4, &ctx.replaced4);
	ctx.viewid = viewid;
	if (!OidIsValid(ctx.states4) || !OidIsValid(ctx.replaced4))
		return;					/* the extension's SQL is older than the library */

	n = list_length(found.keys);
	keys = palloc(sizeof(Datum) * n);
	ops = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		keys[i] = Int16GetDatum((int16) list_nth_int(found.keys, i));
		ops[i] = ObjectIdGetDatum(list_nth_oid(found.ops, i));
	}
	ctx.extra_args = list_make2(makeConst(INT2ARRAYOID, -1, InvalidOid, -1,
										  PointerGetDatum(construct_array(keys, n, INT2OID, 2, true, TYPALIGN_SHORT)),
										  false, false),
								makeConst(OIDARRAYOID, -1, InvalidOid, -1,
										  PointerGetDatum(construct_array(ops, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT)),
										  false, false));
	ctx.extra_args = list_concat(ctx.extra_args, found.arrays);
	(void) push_walker((Node *) readq, &ctx);
}

/*
 * The key conditions passed to mvinc._delta_*(view, keys, ops, VARIADIC
 * arrays), not checked yet (MvDeltaFilterCheck, before they are used: a
 * delta kept with the decision was computed with conditions of the same
 * ident, which passed); NULL when the call has none.
 */
MvDeltaFilter *
MvDeltaFilterFromArgs(FunctionCallInfo fcinfo, const char *viewname)
{
	MvDeltaFilter *f;
	ArrayType  *keys;
	ArrayType  *ops;
	Datum	   *keyd;
	Datum	   *opd;
	int			nkeys;
	int			nops;
	StringInfoData ident;

	if (PG_NARGS() < 4)
		return NULL;
	keys = PG_GETARG_ARRAYTYPE_P(1);
	ops = PG_GETARG_ARRAYTYPE_P(2);
	deconstruct_array(keys, INT2OID, 2, true, TYPALIGN_SHORT, &keyd, NULL, &nkeys);
	deconstruct_array(ops, OIDOID, sizeof(Oid), true, TYPALIGN_INT, &opd, NULL, &nops);
	if (ARR_HASNULL(keys) || ARR_HASNULL(ops) || nkeys != nops || nkeys != PG_NARGS() - 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid key conditions for the delta of materialized view \"%s\"", viewname),
				 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));

	f = palloc0(sizeof(MvDeltaFilter));
	f->nconds = nkeys;
	f->keyno = palloc(sizeof(int) * nkeys);
	f->opno = palloc(sizeof(Oid) * nkeys);
	f->arraytype = palloc(sizeof(Oid) * nkeys);
	f->values = palloc(sizeof(Datum) * nkeys);
	initStringInfo(&ident);
	for (int i = 0; i < nkeys; i++)
	{
		Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 3 + i);
		struct varlena *bytes;

		if (!OidIsValid(argtype) || !OidIsValid(get_element_type(argtype)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid key condition for the delta of materialized view \"%s\"", viewname),
					 errdetail("Only the btree equality of a group key's type, with an array of its values, filters the delta."),
					 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));
		f->keyno[i] = DatumGetInt16(keyd[i]);
		f->opno[i] = DatumGetObjectId(opd[i]);
		f->arraytype[i] = argtype;
		f->values[i] = PointerGetDatum(PG_GETARG_ARRAYTYPE_P(3 + i));

		/*
		 * The values' bytes, not their text: two values can print alike
		 * (extra_float_digits, DateStyle) and differ.  Equal values with
		 * other bytes (0.1 and 0.10) only get deltas of their own.
		 */
		bytes = (struct varlena *) DatumGetPointer(f->values[i]);
		appendStringInfo(&ident, "%d %u %u ", f->keyno[i], f->opno[i], argtype);
		for (Size b = 0; b < VARSIZE(bytes) - VARHDRSZ; b++)
			appendStringInfo(&ident, "%02x", (unsigned char) VARDATA(bytes)[b]);
		appendStringInfoChar(&ident, ';');
	}
	f->ident = ident.data;
	return f;
}

/* Refuse key conditions that are not a group key's btree equality with an array */
void
MvDeltaFilterCheck(MvDef *def, MvDeltaFilter *f, const char *viewname)
{
	if (def->kind != MV_KIND_AGGREGATE || !def->has_group_by)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid key conditions for the delta of materialized view \"%s\"", viewname),
				 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));
	for (int i = 0; i < f->nconds; i++)
	{
		MvColumn   *key = group_key_by_number(def, f->keyno[i]);
		Oid			elemtype = get_element_type(f->arraytype[i]);

		if (key == NULL || !OidIsValid(elemtype) || !key_operator_ok(key, f->opno[i], elemtype))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid key condition for the delta of materialized view \"%s\"", viewname),
					 errdetail("Only the btree equality of a group key's type, with an array of its values, filters the delta."),
					 errhint("mvinc._delta_states is called by reads of incremental views; query the view instead.")));
	}
}

/*
 * SQL condition " AND ..." over change-log rows of alias that keeps the
 * rows whose group keys pass the filter, its arrays as parameters
 * $firstparam, $firstparam + 1, ...
 */
char *
MvDeltaFilterSql(MvDef *def, MvDeltaFilter *f, const char *alias, int firstparam)
{
	StringInfoData sql;

	initStringInfo(&sql);
	for (int i = 0; f && i < f->nconds; i++)
	{
		MvColumn   *key = group_key_by_number(def, f->keyno[i]);
		HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(f->opno[i]));
		Form_pg_operator op;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for operator %u", f->opno[i]);
		op = (Form_pg_operator) GETSTRUCT(tup);
		/* both sides of the operator's own types: no other operator can match */
		appendStringInfo(&sql, " AND ((%s)::%s%s%s) OPERATOR(%s.%s) ANY ($%d::%s)",
						 MvExprSql(def->sourceid, (Node *) key->expr, alias),
						 MvTypeSql(op->oprleft, -1),
						 OidIsValid(key->collation) ? " COLLATE " : "",
						 OidIsValid(key->collation) ? MvCollationSql(key->collation) : "",
						 quote_identifier(get_namespace_name(op->oprnamespace)),
						 NameStr(op->oprname), firstparam + i, MvTypeSql(f->arraytype[i], -1));
		ReleaseSysCache(tup);
	}
	return sql.data;
}
