/*-------------------------------------------------------------------------
 * mv_state.c
 *	  State columns of aggregate views: which aggregates can be kept as
 *	  mergeable partial states, and the SQL that computes, merges, retracts
 *	  and finalizes them through the aggstate functions (mvinc.agg_state,
 *	  agg_combine, agg_merge, agg_apply, agg_final).  Every other file goes
 *	  through here, so the state representation is decided in one place.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "mv/aggstate.h"
#include "mv/mv.h"

/* True when the aggregate can be stored as a mergeable state; else why not */
bool
MvAggSupported(Oid aggfnoid, const char **why)
{
	const char *detail = NULL;
	const char *hint = NULL;

	if (MvincAggGetKind(aggfnoid, &detail, &hint) == MVINC_AGG_UNSUPPORTED)
	{
		*why = detail ? detail : "cannot be kept as a partial state";
		return false;
	}
	return true;
}

/* True when a delete or update can be retracted from the aggregate's state */
bool
MvAggRetractable(Oid aggfnoid)
{
	return MvincAggGetKind(aggfnoid, NULL, NULL) == MVINC_AGG_RETRACTABLE;
}

/* The aggregate as a regprocedure literal */
static char *
agg_literal(MvColumn *col)
{
	return psprintf("%u::pg_catalog.regprocedure", col->aggfnoid);
}

/*
 * SQL of the aggregate's arguments over the relation alias, separated by
 * commas (NULL for f(*)): all of them, as agg_state and agg_apply take them
 * after the aggregate (corr(y, x) has two).  With guard, each is computed
 * only where guard holds (CASE WHEN guard THEN arg END).
 */
static char *
agg_arg_sql(MvColumn *col, const char *alias, const char *guard)
{
	Aggref	   *agg = (Aggref *) col->expr;
	StringInfoData sql;
	ListCell   *lc;

	if (agg->aggstar || agg->args == NIL)
		return NULL;
	initStringInfo(&sql);
	foreach(lc, agg->args)
	{
		char	   *arg = MvExprSql(col->sourceid, (Node *) ((TargetEntry *) lfirst(lc))->expr,
									alias);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&sql, ", ");
		if (guard)
			appendStringInfo(&sql, "CASE WHEN %s THEN %s END", guard, arg);
		else
			appendStringInfoString(&sql, arg);
	}
	return sql.data;
}

/*
 * The aggregate's FILTER condition over rows of alias, or NULL.  (A group
 * where no row passes it keeps the empty state, NULL.)
 */
static char *
agg_filter_sql(MvColumn *col, const char *alias)
{
	Aggref	   *agg = (Aggref *) col->expr;

	if (agg->aggfilter == NULL)
		return NULL;
	return MvExprSql(col->sourceid, (Node *) agg->aggfilter, alias);
}

/* Aggregate expression computing the state of col over rows of alias */
char *
MvStateAggSql(MvColumn *col, const char *alias)
{
	char	   *arg = agg_arg_sql(col, alias, NULL);
	char	   *filter = agg_filter_sql(col, alias);
	char	   *call = arg == NULL ? psprintf("mvinc.agg_state(%s)", agg_literal(col)) :
		psprintf("mvinc.agg_state(%s, %s)", agg_literal(col), arg);

	return filter ? psprintf("%s FILTER (WHERE %s)", call, filter) : call;
}

/* NULL of a type, with its collation when it has one */
static char *
typed_null(Oid typid, int32 typmod, Oid collation)
{
	char	   *s = psprintf("NULL::%s", MvTypeSql(typid, typmod));

	if (OidIsValid(collation))
		s = psprintf("%s COLLATE %s", s, MvCollationSql(collation));
	return s;
}

/*
 * The sample argument of agg_combine/agg_merge: a NULL of the argument's
 * type and collation, which polymorphic states and min/max of text need.
 */
static char *
merge_sample(MvColumn *col)
{
	Aggref	   *agg = (Aggref *) col->expr;
	Node	   *arg;

	if (agg->aggstar || agg->args == NIL)
		return "";
	arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;
	return psprintf(", %s", typed_null(exprType(arg), exprTypmod(arg), exprCollation(arg)));
}

/* Expression combining two states of col (NULL is the empty state) */
char *
MvStateMergeSql(MvColumn *col, const char *left, const char *right)
{
	return psprintf("mvinc.agg_combine(%s, %s, %s%s)", agg_literal(col), left, right,
					merge_sample(col));
}

/* Aggregate expression combining many states of col */
char *
MvStateCombineSql(MvColumn *col, const char *state)
{
	return psprintf("mvinc.agg_merge(%s, %s%s)", agg_literal(col), state, merge_sample(col));
}

/* Expression finalizing a state of col into the aggregate's result */
char *
MvStateFinalSql(MvColumn *col, const char *state)
{
	return psprintf("mvinc.agg_final(%s, %s, %s)", agg_literal(col), state,
					typed_null(col->typid, col->typmod, col->collation));
}

/*
 * Is mvinc.agg_combine_final installed?  Not while the extension's objects
 * are those of a version before it (the library is already the new one
 * until ALTER EXTENSION mvinc UPDATE).
 */
static bool
have_combine_final(void)
{
	Oid			args[5] = {REGPROCEDUREOID, BYTEAOID, BYTEAOID, BYTEAOID, ANYELEMENTOID};

	return OidIsValid(LookupFuncName(list_make2(makeString("mvinc"),
												makeString("agg_combine_final")),
									 5, args, true));
}

/*
 * Expression of col's result over three states combined (NULL is the
 * empty state): agg_final of agg_combine's, in one call when it can
 */
char *
MvStateCombineFinalSql(MvColumn *col, const char *a, const char *b, const char *c)
{
	if (!have_combine_final())
		return MvStateFinalSql(col, MvStateMergeSql(col, MvStateMergeSql(col, a, b), c));
	return psprintf("mvinc.agg_combine_final(%s, %s, %s, %s, %s%s)", agg_literal(col), a, b, c,
					typed_null(col->typid, col->typmod, col->collation), merge_sample(col));
}

/* The stored result's expression (a generated column) over state column state */
char *
MvStateStoredFinalSql(MvColumn *col, const char *state)
{
	return psprintf("mvinc._agg_final_stored(%s, %s, %s)", agg_literal(col), state,
					typed_null(col->typid, col->typmod, col->collation));
}

/* Name of the storage column holding view column col's stored result */
char *
MvStoredFinalName(MvColumn *col)
{
	return psprintf("f%d", col->attnum);
}

/*
 * Aggregate expression applying the change-log rows of alias (a group's)
 * to base: new images add, old images retract, inserts first.  NULL when
 * a retraction is refused (then the group is recomputed).
 */
char *
MvStateRetractSql(MvColumn *col, const char *base, const char *alias, bool ordered)
{
	/* NULL (no row: an outer join's filler; a row the FILTER drops) adds nothing */
	char	   *filter = agg_filter_sql(col, alias);
	/* nor are its arguments computed, as the query would not (a guarding FILTER) */
	char	   *arg = agg_arg_sql(col, alias,
								  filter ? psprintf("coalesce(%s, false)", filter) : NULL);
	char	   *sign = psprintf("CASE %sWHEN %s._mvinc_image = 'n' THEN 1 WHEN %s._mvinc_image = 'o' THEN -1 END",
								filter ? psprintf("WHEN NOT coalesce(%s, false) THEN NULL ", filter) : "",
								alias, alias);
	char	   *order = ordered ? psprintf(" ORDER BY %s DESC", sign) : "";

	if (arg == NULL)
		return psprintf("mvinc.agg_apply(%s, %s, %s%s)", agg_literal(col), base, sign, order);
	return psprintf("mvinc.agg_apply(%s, %s, %s, %s%s)", agg_literal(col), base, sign, arg, order);
}

/*
 * The value an expression column's part stands for, over the state or
 * merged rows of alias t (finals: the stored results f<n> replace the
 * states of the view's own aggregate columns)
 */
static char *
part_sql(MvColumn *part, bool finals)
{
	if (part->role == MV_COL_GROUP || part->derived_count)
		return psprintf("t.%s", quote_identifier(part->physname));
	if (finals && part->attnum > 0)
		return psprintf("t.%s", quote_identifier(MvStoredFinalName(part)));
	return MvStateFinalSql(part, psprintf("t.%s", quote_identifier(part->physname)));
}

/*
 * Does a read need the state of aggregate column col itself although the
 * rows carry stored results (finals)?  Yes when an expression column has
 * a hidden aggregate on that state.
 */
bool
MvStateReadRaw(MvDef *def, MvColumn *col)
{
	ListCell   *lc;
	ListCell   *lp;

	foreach(lc, def->viewcols)
	{
		MvColumn   *expr = lfirst(lc);

		if (expr->role != MV_COL_EXPR)
			continue;
		foreach(lp, expr->parts)
		{
			MvColumn   *part = lfirst(lp);

			if (part->role == MV_COL_AGG && part->attnum == 0 && !part->derived_count &&
				strcmp(part->physname, col->physname) == 0)
				return true;
		}
	}
	return false;
}

/* Name of the column carrying part i of expression column col (MvPartsColumnsSql) */
static char *
part_column(MvColumn *col, int i)
{
	return psprintf("_mvinc_p%d_%d", col->attnum, i + 1);
}

/*
 * Columns that carry the parts of the view's expression columns, for a
 * SELECT over the state or merged rows of alias t: ", value AS name" for
 * each, or "" when the view has none.  The expressions are computed one
 * level up, over these columns, whose collations (implicit there, as the
 * query's columns and aggregates are) are their parts'.
 */
char *
MvPartsColumnsSql(MvDef *def, bool finals)
{
	StringInfoData sql;
	ListCell   *lc;
	ListCell   *lp;

	initStringInfo(&sql);
	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role != MV_COL_EXPR)
			continue;
		foreach(lp, col->parts)
			appendStringInfo(&sql, ", %s AS %s", part_sql(lfirst(lp), finals),
							 part_column(col, foreach_current_index(lp)));
	}
	return sql.data;
}

/*
 * SQL of an expression column over rows of alias t that carry its parts
 * (MvPartsColumnsSql): the expression deparsed with its parts as
 * parameters, each parameter then replaced by its part's column (outside
 * quoted literals and names).
 */
char *
MvPartsExprSql(MvDef *def, MvColumn *col)
{
	char	   *text = MvExprSql(def->sourceid, (Node *) col->expr, "t");
	StringInfoData out;
	char		quote = 0;

	initStringInfo(&out);
	for (const char *p = text; *p; p++)
	{
		if (quote)
		{
			if (*p == quote)
				quote = 0;
		}
		else if (*p == '\'' || *p == '"')
			quote = *p;
		else if (*p == '$' && isdigit((unsigned char) p[1]))
		{
			char	   *end;
			long		n = strtol(p + 1, &end, 10);

			if (n < MV_PART_PARAM || n >= MV_PART_PARAM + list_length(col->parts))
				elog(ERROR, "unexpected parameter $%ld in an expression of an incremental view", n);
			appendStringInfo(&out, "t.%s", part_column(col, n - MV_PART_PARAM));
			p = end - 1;
			continue;
		}
		appendStringInfoChar(&out, *p);
	}
	return out.data;
}
