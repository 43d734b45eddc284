/*-------------------------------------------------------------------------
 * aggstate_sql.c
 *	  SQL interface of aggregate states: the aggregates mvinc.agg_state,
 *	  mvinc.agg_merge and mvinc.agg_apply, and the functions
 *	  mvinc.agg_combine, mvinc.agg_final, mvinc.agg_kind and
 *	  mvinc.agg_kind_detail.  Thin wrappers over aggstate.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"

#include "mv/aggstate.h"

PG_FUNCTION_INFO_V1(mvinc_agg_state_trans);
PG_FUNCTION_INFO_V1(mvinc_agg_merge_trans);
PG_FUNCTION_INFO_V1(mvinc_agg_apply_trans);
PG_FUNCTION_INFO_V1(mvinc_agg_state_final);
PG_FUNCTION_INFO_V1(mvinc_agg_combine);
PG_FUNCTION_INFO_V1(mvinc_agg_final);
PG_FUNCTION_INFO_V1(mvinc_agg_kind);
PG_FUNCTION_INFO_V1(mvinc_agg_kind_detail);

/* One aggregate known to a call site */
typedef struct SiteEntry
{
	Oid			aggfnoid;
	Oid			collation;
	Oid			resulttype;		/* agg_final: checked result type */
	int16		resultLen;
	bool		resultByVal;
	MvincAggInfo *info;
} SiteEntry;

#define SITE_ENTRIES 16

/* What one call site keeps across calls (in fn_extra) */
typedef struct SiteCache
{
	int			nentries;
	int			next;			/* slot to reuse when full */
	SiteEntry	entries[SITE_ENTRIES];
	MemoryContext tmpcxt;		/* scalar functions: reset every call */
} SiteCache;

/* Per-group state of mvinc.agg_state, agg_merge and agg_apply */
typedef struct AccState
{
	MvincAggInfo *info;
	MvincAggValue v;
	bool		failed;			/* agg_apply: a retraction was refused */
} AccState;

/* The aggregate function argument, which must not be NULL */
static Oid
aggfn_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("aggregate function argument must not be null"),
				 errhint("Pass an aggregate function, such as 'sum(integer)'::regprocedure.")));
	return PG_GETARG_OID(argno);
}

/* The call site's cache, created on first use */
static SiteCache *
site_cache(FunctionCallInfo fcinfo)
{
	SiteCache  *site = (SiteCache *) fcinfo->flinfo->fn_extra;

	if (site == NULL)
	{
		site = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(SiteCache));
		site->tmpcxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
											 "mvinc aggregate state",
											 ALLOCSET_DEFAULT_SIZES);
		fcinfo->flinfo->fn_extra = site;
	}
	return site;
}

/*
 * The call site's info about an aggregate: built on first use from the
 * actual types of the arguments from firstarg on (firstarg < 0: declared
 * types), checked for retraction when asked.  Infos are never freed while
 * the query runs (group states point to them).
 */
static SiteEntry *
site_info(FunctionCallInfo fcinfo, Oid aggfnoid, int firstarg, bool retract)
{
	SiteCache  *site = site_cache(fcinfo);
	Oid			collation = PG_GET_COLLATION();
	SiteEntry  *e;
	int			i;

	/* states of collatable inputs merge under the default collation */
	if (!OidIsValid(collation))
		collation = DEFAULT_COLLATION_OID;

	for (i = 0; i < site->nentries; i++)
	{
		e = &site->entries[i];
		if (e->aggfnoid == aggfnoid && e->collation == collation)
			return e;
	}

	if (site->nentries < SITE_ENTRIES)
		e = &site->entries[site->nentries++];
	else
	{
		e = &site->entries[site->next];
		site->next = (site->next + 1) % SITE_ENTRIES;
	}
	memset(e, 0, sizeof(SiteEntry));

	if (retract)
		MvincAggCheck(aggfnoid, true);
	if (firstarg >= 0)
	{
		Oid			argtypes[FUNC_MAX_ARGS];
		int			nargs = PG_NARGS() - firstarg;

		if (get_fn_expr_variadic(fcinfo->flinfo))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate arguments cannot be passed as a VARIADIC array"),
					 errhint("Pass the aggregate's arguments one by one.")));
		for (i = 0; i < nargs; i++)
			argtypes[i] = get_fn_expr_argtype(fcinfo->flinfo, firstarg + i);
		e->info = MvincAggInfoCreate(aggfnoid, nargs, argtypes, collation,
									 fcinfo->flinfo->fn_mcxt);
	}
	else
		e->info = MvincAggInfoCreate(aggfnoid, -1, NULL, collation,
									 fcinfo->flinfo->fn_mcxt);
	e->aggfnoid = aggfnoid;
	e->collation = collation;
	return e;
}

/* The group's state, started on its first row */
static AccState *
acc_get(FunctionCallInfo fcinfo, int firstarg, bool retract)
{
	MemoryContext aggcxt;
	AccState   *acc;
	Oid			aggfnoid = aggfn_arg(fcinfo, 1);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "aggregate state function called in non-aggregate context");

	if (!PG_ARGISNULL(0))
	{
		acc = (AccState *) PG_GETARG_POINTER(0);
		if (acc->info->aggfnoid != aggfnoid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("aggregate function argument must be the same for every row of a group"),
					 errdetail("Rows name \"%s\" and \"%s\".",
							   format_procedure(acc->info->aggfnoid),
							   format_procedure(aggfnoid))));
		return acc;
	}

	acc = MemoryContextAllocZero(aggcxt, sizeof(AccState));
	acc->info = site_info(fcinfo, aggfnoid, firstarg, retract)->info;
	MvincAggValueInit(acc->info, &acc->v, aggcxt);
	return acc;
}

/* Gather the aggregated arguments of this row */
static void
row_args(FunctionCallInfo fcinfo, MvincAggInfo *info, int firstarg,
		 Datum *args, bool *nulls)
{
	int			i;

	Assert(PG_NARGS() - firstarg == info->nargs);
	for (i = 0; i < info->nargs; i++)
	{
		args[i] = PG_GETARG_DATUM(firstarg + i);
		nulls[i] = PG_ARGISNULL(firstarg + i);
	}
}

/* agg_state(aggfn, VARIADIC "any"): one row into the target's state */
Datum
mvinc_agg_state_trans(PG_FUNCTION_ARGS)
{
	AccState   *acc = acc_get(fcinfo, 2, false);
	Datum		args[FUNC_MAX_ARGS];
	bool		nulls[FUNC_MAX_ARGS];

	row_args(fcinfo, acc->info, 2, args, nulls);
	MvincAggTransition(acc->info, &acc->v, args, nulls);
	PG_RETURN_POINTER(acc);
}

/* agg_merge(aggfn, state): one stored state combined into the group's */
Datum
mvinc_agg_merge_trans(PG_FUNCTION_ARGS)
{
	AccState   *acc = acc_get(fcinfo, -1, false);

	if (!PG_ARGISNULL(2))
		MvincAggCombine(acc->info, &acc->v, PG_GETARG_BYTEA_PP(2));
	PG_RETURN_POINTER(acc);
}

/*
 * agg_apply(aggfn, base, sign, VARIADIC "any"): start from the base state
 * (first row), add rows with sign > 0, retract rows with sign < 0.
 */
Datum
mvinc_agg_apply_trans(PG_FUNCTION_ARGS)
{
	bool		first = PG_ARGISNULL(0);
	AccState   *acc = acc_get(fcinfo, 4, true);
	Datum		args[FUNC_MAX_ARGS];
	bool		nulls[FUNC_MAX_ARGS];
	int32		sign;

	if (first)
		MvincAggDeserialize(acc->info, &acc->v,
							PG_ARGISNULL(2) ? NULL : PG_GETARG_BYTEA_PP(2));
	if (acc->failed || PG_ARGISNULL(3) || PG_GETARG_INT32(3) == 0)
		PG_RETURN_POINTER(acc);

	sign = PG_GETARG_INT32(3);
	row_args(fcinfo, acc->info, 4, args, nulls);
	if (sign > 0)
		MvincAggTransition(acc->info, &acc->v, args, nulls);
	else if (!MvincAggRetract(acc->info, &acc->v, args, nulls))
		acc->failed = true;
	PG_RETURN_POINTER(acc);
}

/* Final function of agg_state, agg_merge and agg_apply: the stored state */
Datum
mvinc_agg_state_final(PG_FUNCTION_ARGS)
{
	AccState   *acc;
	bytea	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	acc = (AccState *) PG_GETARG_POINTER(0);
	if (acc->failed)
		PG_RETURN_NULL();
	result = MvincAggSerialize(acc->info, &acc->v);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(result);
}

/* agg_combine(aggfn, a, b): two stored states merged */
Datum
mvinc_agg_combine(PG_FUNCTION_ARGS)
{
	SiteCache  *site;
	MvincAggInfo *info;
	MvincAggValue v;
	MemoryContext oldcxt;
	bytea	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	info = site_info(fcinfo, PG_GETARG_OID(0), -1, false)->info;
	site = site_cache(fcinfo);
	if (PG_ARGISNULL(1) && PG_ARGISNULL(2))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(2));
	if (PG_ARGISNULL(2))
		PG_RETURN_DATUM(PG_GETARG_DATUM(1));

	oldcxt = MemoryContextSwitchTo(site->tmpcxt);
	v.cxt = site->tmpcxt;
	MvincAggDeserialize(info, &v, PG_GETARG_BYTEA_PP(1));
	MvincAggCombine(info, &v, PG_GETARG_BYTEA_PP(2));
	MemoryContextSwitchTo(oldcxt);
	result = MvincAggSerialize(info, &v);
	MemoryContextReset(site->tmpcxt);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(result);
}

/* agg_final(aggfn, state, NULL::resulttype): the aggregate's result */
Datum
mvinc_agg_final(PG_FUNCTION_ARGS)
{
	SiteCache  *site;
	SiteEntry  *e;
	MvincAggValue v;
	MemoryContext oldcxt;
	Datum		result;
	bool		isnull;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	e = site_info(fcinfo, PG_GETARG_OID(0), -1, false);
	site = site_cache(fcinfo);
	if (e->resulttype == InvalidOid)
	{
		Oid			resulttype = get_fn_expr_argtype(fcinfo->flinfo, 2);

		if (resulttype != e->info->rettype &&
			!IsPolymorphicType(e->info->rettype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("aggregate function \"%s\" returns %s, not %s",
							format_procedure(e->info->aggfnoid),
							format_type_be(e->info->rettype),
							format_type_be(resulttype)),
					 errhint("Pass NULL::%s as the result type argument.",
							 format_type_be(e->info->rettype))));
		get_typlenbyval(resulttype, &e->resultLen, &e->resultByVal);
		e->resulttype = resulttype;
	}

	oldcxt = MemoryContextSwitchTo(site->tmpcxt);
	v.cxt = site->tmpcxt;
	MvincAggDeserialize(e->info, &v, PG_ARGISNULL(1) ? NULL : PG_GETARG_BYTEA_PP(1));
	result = MvincAggFinalize(e->info, &v, &isnull);
	MemoryContextSwitchTo(oldcxt);
	if (!isnull)
		result = datumCopy(result, e->resultByVal, e->resultLen);
	MemoryContextReset(site->tmpcxt);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* agg_kind(aggfn): 'retractable', 'mergeable' or 'unsupported' */
Datum
mvinc_agg_kind(PG_FUNCTION_ARGS)
{
	MvincAggKind kind = MvincAggGetKind(PG_GETARG_OID(0), NULL, NULL);

	PG_RETURN_TEXT_P(cstring_to_text(MvincAggKindName(kind)));
}

/* agg_kind_detail(aggfn): why the aggregate is not retractable, or NULL */
Datum
mvinc_agg_kind_detail(PG_FUNCTION_ARGS)
{
	const char *detail;

	MvincAggGetKind(PG_GETARG_OID(0), &detail, NULL);
	if (detail == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(detail));
}
