/*-------------------------------------------------------------------------
 * aggstate_sql.c
 *	  SQL interface of aggregate states: the aggregates mvinc.agg_state,
 *	  mvinc.agg_merge and mvinc.agg_apply (with their own partial
 *	  aggregation support for parallel plans), and the functions
 *	  mvinc.agg_combine, mvinc.agg_final, mvinc.agg_combine_final,
 *	  mvinc.agg_kind,
 *	  mvinc.agg_kind_detail, mvinc.agg_same_state and
 *	  mvinc.agg_needs_sample.  Thin wrappers over
 *	  aggstate.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
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
PG_FUNCTION_INFO_V1(mvinc_agg_state_combine);
PG_FUNCTION_INFO_V1(mvinc_agg_state_serialize);
PG_FUNCTION_INFO_V1(mvinc_agg_state_deserialize);
PG_FUNCTION_INFO_V1(mvinc_agg_combine);
PG_FUNCTION_INFO_V1(mvinc_agg_final);
PG_FUNCTION_INFO_V1(mvinc_agg_combine_final);
PG_FUNCTION_INFO_V1(mvinc_agg_kind);
PG_FUNCTION_INFO_V1(mvinc_agg_kind_detail);
PG_FUNCTION_INFO_V1(mvinc_agg_same_state);
PG_FUNCTION_INFO_V1(mvinc_agg_needs_sample);

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
	bool		trusted;		/* a call of a view's read query */
} SiteCache;

/* Per-group state of mvinc.agg_state, agg_merge and agg_apply */
typedef struct AccState
{
	MvincAggInfo *info;
	MvincAggValue v;
	bool		failed;			/* agg_apply: a retraction was refused */
	bool		trusted;		/* states from a view's read query, or a
								 * worker's (MvincAggDeserialize) */

	/*
	 * agg_merge: the group's only state so far, kept as stored (v still
	 * empty).  Most groups merged on read or in compaction have one state
	 * row: it is returned as is, without deserializing, combining and
	 * serializing it.
	 */
	bytea	   *pending;
} AccState;

/* agg_merge: combine a state kept as stored into v */
static void
acc_flush(AccState *acc)
{
	if (acc->pending == NULL)
		return;
	MvincAggCombine(acc->info, &acc->v, acc->pending, acc->trusted);
	pfree(acc->pending);
	acc->pending = NULL;
}

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
		site->trusted = MvincAggReadCall(fcinfo);
		fcinfo->flinfo->fn_extra = site;
	}
	return site;
}

/* How a call site learns the aggregate's argument types */
typedef struct SiteHow
{
	int			firstarg;		/* >= 0: the actual types of the arguments
								 * from this one on */
	Oid			sampletype;		/* else: a sample type, of an argument or
								 * (sample_is_result) of the result */
	bool		sample_is_result;
	int			nargs;			/* else, with argtypes: these types */
	const Oid  *argtypes;
} SiteHow;

/*
 * The call site's info about an aggregate, built on first use, checked for
 * retraction when asked.  Infos are never freed while the query runs
 * (group states point to them).
 */
static SiteEntry *
site_info(FunctionCallInfo fcinfo, Oid aggfnoid, Oid collation, bool retract,
		  const SiteHow *how)
{
	SiteCache  *site = site_cache(fcinfo);
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
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
	if (how->firstarg >= 0)
	{
		Oid			argtypes[FUNC_MAX_ARGS];
		int			nargs = PG_NARGS() - how->firstarg;

		if (get_fn_expr_variadic(fcinfo->flinfo))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate arguments cannot be passed as a VARIADIC array"),
					 errhint("Pass the aggregate's arguments one by one.")));
		for (i = 0; i < nargs; i++)
			argtypes[i] = get_fn_expr_argtype(fcinfo->flinfo, how->firstarg + i);
		e->info = MvincAggInfoCreate(aggfnoid, nargs, argtypes, collation, mcxt);
	}
	else if (how->argtypes)
		e->info = MvincAggInfoCreate(aggfnoid, how->nargs, how->argtypes,
									 collation, mcxt);
	else
		e->info = MvincAggInfoCreateLike(aggfnoid, how->sampletype,
										 how->sample_is_result, collation, mcxt);
	e->aggfnoid = aggfnoid;
	e->collation = collation;
	return e;
}

/* How a function learns types: from an optional sample argument */
static SiteHow
how_sample(FunctionCallInfo fcinfo, int argno, bool is_result)
{
	SiteHow		how = {-1, InvalidOid, is_result, 0, NULL};

	if (PG_NARGS() > argno)
		how.sampletype = get_fn_expr_argtype(fcinfo->flinfo, argno);
	return how;
}

/* How a function learns types: from its arguments' actual types */
static SiteHow
how_args(int firstarg)
{
	SiteHow		how = {firstarg, InvalidOid, false, 0, NULL};

	return how;
}

/* The group's state, started on its first row */
static AccState *
acc_get(FunctionCallInfo fcinfo, const SiteHow *how, bool retract)
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
	acc->info = site_info(fcinfo, aggfnoid, PG_GET_COLLATION(), retract, how)->info;
	acc->trusted = site_cache(fcinfo)->trusted;
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
	SiteHow		how = how_args(2);
	AccState   *acc = acc_get(fcinfo, &how, false);
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
	bool		first = PG_ARGISNULL(0);
	SiteHow		how = how_sample(fcinfo, 3, false);
	AccState   *acc = acc_get(fcinfo, &how, false);
	MemoryContext aggcxt;

	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(acc);
	if (first)
	{
		bytea	   *state = PG_GETARG_BYTEA_PP(2);

		(void) AggCheckCallContext(fcinfo, &aggcxt);
		acc->pending = MemoryContextAlloc(aggcxt, VARSIZE_ANY(state));
		memcpy(acc->pending, state, VARSIZE_ANY(state));
		PG_RETURN_POINTER(acc);
	}
	acc_flush(acc);
	MvincAggCombine(acc->info, &acc->v, PG_GETARG_BYTEA_PP(2), acc->trusted);
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
	SiteHow		how = how_args(4);
	AccState   *acc = acc_get(fcinfo, &how, true);
	Datum		args[FUNC_MAX_ARGS];
	bool		nulls[FUNC_MAX_ARGS];
	int32		sign;

	if (first)
		MvincAggDeserialize(acc->info, &acc->v,
							PG_ARGISNULL(2) ? NULL : PG_GETARG_BYTEA_PP(2),
							acc->trusted);
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
	if (acc->pending)
		PG_RETURN_BYTEA_P(acc->pending);
	result = MvincAggSerialize(acc->info, &acc->v);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(result);
}

/*
 * Partial aggregation of agg_state and agg_merge (parallel plans): the
 * group states of workers are serialized with the aggregate's OID and
 * collation, and combined in the leader.
 */
Datum
mvinc_agg_state_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	AccState   *a = PG_ARGISNULL(0) ? NULL : (AccState *) PG_GETARG_POINTER(0);
	AccState   *b = PG_ARGISNULL(1) ? NULL : (AccState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "aggregate state function called in non-aggregate context");
	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
	{
		a = MemoryContextAllocZero(aggcxt, sizeof(AccState));
		a->info = b->info;
		MvincAggValueInit(a->info, &a->v, aggcxt);
	}
	else if (a->info->aggfnoid != b->info->aggfnoid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("aggregate function argument must be the same for every row of a group"),
				 errdetail("Rows name \"%s\" and \"%s\".",
						   format_procedure(a->info->aggfnoid),
						   format_procedure(b->info->aggfnoid))));
	a->failed |= b->failed;
	acc_flush(a);
	acc_flush(b);
	MvincAggCombineValue(a->info, &a->v, &b->v);
	PG_RETURN_POINTER(a);
}

/* Serialize a group state for the leader: OIDs, then the stored state */
Datum
mvinc_agg_state_serialize(PG_FUNCTION_ARGS)
{
	AccState   *acc = (AccState *) PG_GETARG_POINTER(0);
	bytea	   *state;
	StringInfoData buf;
	int			i;

	acc_flush(acc);
	state = MvincAggSerialize(acc->info, &acc->v);
	pq_begintypsend(&buf);
	pq_sendint32(&buf, acc->info->aggfnoid);
	pq_sendint32(&buf, acc->info->collation);
	pq_sendint16(&buf, acc->info->nargs);
	for (i = 0; i < acc->info->nargs; i++)
		pq_sendint32(&buf, acc->info->argtypes[i]);
	pq_sendbyte(&buf, (acc->failed ? 2 : 0) | (state ? 1 : 0));
	if (state)
		pq_sendbytes(&buf, VARDATA_ANY(state), VARSIZE_ANY_EXHDR(state));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Rebuild a worker's group state, in the current memory context */
Datum
mvinc_agg_state_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	Oid			aggfnoid;
	Oid			collation;
	int			flags;
	bytea	   *state = NULL;
	AccState   *acc;
	Oid			argtypes[FUNC_MAX_ARGS];
	SiteHow		how = {-1, InvalidOid, false, 0, NULL};
	int			i;

	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	aggfnoid = pq_getmsgint(&buf, 4);
	collation = pq_getmsgint(&buf, 4);
	how.nargs = pq_getmsgint(&buf, 2);
	if (how.nargs < 0 || how.nargs > FUNC_MAX_ARGS)
		elog(ERROR, "invalid partial aggregate state");
	for (i = 0; i < how.nargs; i++)
		argtypes[i] = pq_getmsgint(&buf, 4);
	how.argtypes = argtypes;
	flags = pq_getmsgbyte(&buf);
	if (flags & 1)
	{
		int			len = buf.len - buf.cursor;

		state = palloc(VARHDRSZ + len);
		SET_VARSIZE(state, VARHDRSZ + len);
		pq_copymsgbytes(&buf, VARDATA(state), len);
	}

	acc = palloc0(sizeof(AccState));
	acc->info = site_info(fcinfo, aggfnoid, collation, false, &how)->info;
	acc->failed = (flags & 2) != 0;
	acc->v.cxt = CurrentMemoryContext;
	/* a worker serialized it (a caller's states were checked there) */
	MvincAggDeserialize(acc->info, &acc->v, state, true);
	PG_RETURN_POINTER(acc);
}

/* agg_combine(aggfn, a, b): two stored states merged */
Datum
mvinc_agg_combine(PG_FUNCTION_ARGS)
{
	SiteCache  *site;
	SiteHow		how;
	MvincAggInfo *info;
	MvincAggValue v;
	MemoryContext oldcxt;
	bytea	   *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	how = how_sample(fcinfo, 3, false);
	info = site_info(fcinfo, PG_GETARG_OID(0), PG_GET_COLLATION(), false, &how)->info;
	site = site_cache(fcinfo);
	if (PG_ARGISNULL(1) && PG_ARGISNULL(2))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(2));
	if (PG_ARGISNULL(2))
		PG_RETURN_DATUM(PG_GETARG_DATUM(1));

	oldcxt = MemoryContextSwitchTo(site->tmpcxt);
	v.cxt = site->tmpcxt;
	MvincAggDeserialize(info, &v, PG_GETARG_BYTEA_PP(1), site->trusted);
	MvincAggCombine(info, &v, PG_GETARG_BYTEA_PP(2), site->trusted);
	MemoryContextSwitchTo(oldcxt);
	result = MvincAggSerialize(info, &v);
	MemoryContextReset(site->tmpcxt);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(result);
}

/*
 * The call site's entry, its result type (of argument argno, a sample
 * value) checked against the aggregate's on first use.
 */
static void
check_result_type(FunctionCallInfo fcinfo, SiteEntry *e, int argno)
{
	Oid			resulttype;

	if (e->resulttype != InvalidOid)
		return;
	resulttype = get_fn_expr_argtype(fcinfo->flinfo, argno);
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

/*
 * The aggregate's result over nstates stored states from argument first on
 * combined (NULL is the empty state), its types from the result's sample,
 * argument resultarg, checked against a polymorphic signature.  With an
 * argument's sample instead, a result sample of another type would have
 * the result copied as that type (a pointer read as an integer).
 */
static Datum
final_of_states(FunctionCallInfo fcinfo, int resultarg, int first, int nstates)
{
	SiteCache  *site;
	SiteHow		how;
	SiteEntry  *e;
	MvincAggValue v;
	MemoryContext oldcxt;
	Datum		result;
	bool		isnull;
	bool		started = false;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	how = how_sample(fcinfo, resultarg, true);
	e = site_info(fcinfo, PG_GETARG_OID(0), PG_GET_COLLATION(), false, &how);
	site = site_cache(fcinfo);
	check_result_type(fcinfo, e, resultarg);

	oldcxt = MemoryContextSwitchTo(site->tmpcxt);
	v.cxt = site->tmpcxt;
	for (int i = first; i < first + nstates; i++)
	{
		if (PG_ARGISNULL(i))
			continue;
		if (!started)
			MvincAggDeserialize(e->info, &v, PG_GETARG_BYTEA_PP(i), site->trusted);
		else
			MvincAggCombine(e->info, &v, PG_GETARG_BYTEA_PP(i), site->trusted);
		started = true;
	}
	if (!started)
		MvincAggDeserialize(e->info, &v, NULL, true);
	result = MvincAggFinalize(e->info, &v, &isnull);
	MemoryContextSwitchTo(oldcxt);
	if (!isnull)
		result = datumCopy(result, e->resultByVal, e->resultLen);
	MemoryContextReset(site->tmpcxt);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* agg_final(aggfn, state, NULL::resulttype): the aggregate's result */
Datum
mvinc_agg_final(PG_FUNCTION_ARGS)
{
	return final_of_states(fcinfo, 2, 1, 1);
}

/*
 * agg_combine_final(aggfn, a, b, c, NULL::resulttype [, NULL::argtype COLLATE ...]):
 * the aggregate's result over three stored states combined, what
 * agg_final(agg_combine(agg_combine(a, b), c)) gives, without serializing
 * the combined states only to read them again (reads of a view merge each
 * stored row's state with what waits for its group).  The optional last
 * argument brings only its collation.
 */
Datum
mvinc_agg_combine_final(PG_FUNCTION_ARGS)
{
	return final_of_states(fcinfo, 4, 1, 3);
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

/* agg_same_state(a, b): a state of a can be merged and finished as b */
Datum
mvinc_agg_same_state(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(MvincAggSameState(PG_GETARG_OID(0), PG_GETARG_OID(1)));
}

/* agg_needs_sample(aggfn): merging needs agg_merge's sample argument */
Datum
mvinc_agg_needs_sample(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(MvincAggNeedsSample(PG_GETARG_OID(0)));
}
