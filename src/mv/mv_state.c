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

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "mv/mv.h"

/* True when the aggregate can be stored as a mergeable state; else why not */
bool
MvAggSupported(Oid aggfnoid, const char **why)
{
	HeapTuple	tup;
	Form_pg_aggregate agg;
	bool		ok = true;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	if (!OidIsValid(agg->aggcombinefn))
	{
		*why = "has no combine function";
		ok = false;
	}
	else if (agg->aggtranstype == INTERNALOID &&
			 (!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn)))
	{
		*why = "has an internal state without serialization functions";
		ok = false;
	}
	else if (get_func_nargs(aggfnoid) > 1)
	{
		*why = "takes more than one argument";
		ok = false;
	}
	ReleaseSysCache(tup);
	return ok;
}

/* True when a delete or update can be retracted from the aggregate's state */
bool
MvAggRetractable(Oid aggfnoid)
{
	HeapTuple	tup;
	bool		ok;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	ok = OidIsValid(((Form_pg_aggregate) GETSTRUCT(tup))->aggminvtransfn);
	ReleaseSysCache(tup);
	return ok;
}

/* The aggregate as a regprocedure literal */
static char *
agg_literal(MvColumn *col)
{
	return psprintf("%u::pg_catalog.regprocedure", col->aggfnoid);
}

/* SQL of the aggregate's argument over the relation alias (NULL for f(*)) */
static char *
agg_arg_sql(MvColumn *col, const char *alias)
{
	Aggref	   *agg = (Aggref *) col->expr;

	if (agg->aggstar || agg->args == NIL)
		return NULL;
	return MvExprSql(col->sourceid, (Node *) ((TargetEntry *) linitial(agg->args))->expr, alias);
}

/* Aggregate expression computing the state of col over rows of alias */
char *
MvStateAggSql(MvColumn *col, const char *alias)
{
	char	   *arg = agg_arg_sql(col, alias);

	if (arg == NULL)
		return psprintf("mvinc.agg_state(%s)", agg_literal(col));
	return psprintf("mvinc.agg_state(%s, %s)", agg_literal(col), arg);
}

/* Expression merging two states of col */
char *
MvStateMergeSql(MvColumn *col, const char *left, const char *right)
{
	return psprintf("mvinc.agg_merge(%s, %s, %s)", agg_literal(col), left, right);
}

/* Aggregate expression combining many states of col */
char *
MvStateCombineSql(MvColumn *col, const char *state)
{
	return psprintf("mvinc.agg_combine(%s, %s)", agg_literal(col), state);
}

/* Expression finalizing a state of col into the aggregate's result */
char *
MvStateFinalSql(MvColumn *col, const char *state)
{
	return psprintf("mvinc.agg_final(%s, %s, NULL::%s)", agg_literal(col), state,
					format_type_with_typemod(col->typid, col->typmod));
}

/*
 * Expression applying one change-log row of alias to a state: insert images
 * ('n') add, old images ('o') retract.
 */
char *
MvStateRetractSql(MvColumn *col, const char *state, const char *alias)
{
	char	   *arg = agg_arg_sql(col, alias);

	return psprintf("mvinc.agg_apply(%s, %s, %s._mvinc_image = 'o', %s)",
					agg_literal(col), state, alias, arg ? arg : "NULL::int4");
}
