/*-------------------------------------------------------------------------
 * aggstate.c
 *	  Aggregate states: what an aggregate supports (its kind), and running
 *	  its transition, inverse, combine, serialize and final functions the
 *	  way nodeAgg.c and nodeWindowAgg.c do, on states stored as bytea.
 *
 * The encoding is described in aggstate.h.  The SQL functions are in
 * aggstate_sql.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_agg.h"
#include "parser/parse_coerce.h"
#include "port/pg_bswap.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "mv/aggstate.h"

/* Header of a counted (retractable) state: int8 count, one flag byte */
#define COUNTED_HEADER	9

/* Name of an aggregate kind as SQL shows it */
const char *
MvincAggKindName(MvincAggKind kind)
{
	switch (kind)
	{
		case MVINC_AGG_RETRACTABLE:
			return "retractable";
		case MVINC_AGG_MERGEABLE:
			return "mergeable";
		default:
			return "unsupported";
	}
}

/* True when a type has binary send and receive functions */
static bool
type_has_binary_io(Oid typid)
{
	HeapTuple	tup;
	Form_pg_type typ;
	bool		ok;

	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", typid);
	typ = (Form_pg_type) GETSTRUCT(tup);
	ok = OidIsValid(typ->typsend) && OidIsValid(typ->typreceive);
	ReleaseSysCache(tup);
	return ok;
}

/* True when two nullable text catalog fields hold the same value */
static bool
same_initval(HeapTuple tup, AttrNumber a, AttrNumber b)
{
	bool		anull,
				bnull;
	Datum		ad = SysCacheGetAttr(AGGFNOID, tup, a, &anull);
	Datum		bd = SysCacheGetAttr(AGGFNOID, tup, b, &bnull);

	if (anull || bnull)
		return anull && bnull;
	return strcmp(TextDatumGetCString(ad), TextDatumGetCString(bd)) == 0;
}

/*
 * Is this mvinc's deserialization function of agg_state and agg_merge?
 * Their states name an aggregate and its argument types: taken from a
 * caller, they would reach any aggregate's functions with any types.
 */
static bool
is_own_state_deserialfn(Oid fnoid)
{
	FmgrInfo	flinfo;

	fmgr_info(fnoid, &flinfo);
	return flinfo.fn_addr == mvinc_agg_state_deserialize;
}

/*
 * Classify an aggregate.  For an unsupported one, *detail and *hint say
 * why and what to do; for a mergeable one, *detail says why its inputs
 * cannot be retracted.  Both NULL for a retractable one.
 */
MvincAggKind
MvincAggGetKind(Oid aggfnoid, const char **detail, const char **hint)
{
	HeapTuple	proctup;
	HeapTuple	aggtup;
	Form_pg_aggregate agg;
	char		prokind;
	MvincAggKind kind = MVINC_AGG_UNSUPPORTED;
	const char *d = NULL;
	const char *h = NULL;

	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(proctup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", aggfnoid)));
	prokind = ((Form_pg_proc) GETSTRUCT(proctup))->prokind;
	ReleaseSysCache(proctup);

	if (prokind != PROKIND_AGGREGATE)
	{
		d = _("It is not an aggregate function.");	/* agg_kind_detail only */
		h = _("Pass an aggregate function, such as 'sum(integer)'::regprocedure.");
		goto done;
	}

	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(aggtup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(aggtup);

	if (agg->aggkind == AGGKIND_ORDERED_SET)
	{
		d = _("It is an ordered-set aggregate (WITHIN GROUP).");
		h = _("Compute it from the source rows instead.");
	}
	else if (agg->aggkind == AGGKIND_HYPOTHETICAL)
	{
		d = _("It is a hypothetical-set aggregate (WITHIN GROUP).");
		h = _("Compute it from the source rows instead.");
	}
	else if (!OidIsValid(agg->aggcombinefn))
	{
		d = _("It has no combine function, so its partial states cannot be merged.");
		h = _("Use an aggregate that supports partial aggregation, or define one with CREATE AGGREGATE ... (COMBINEFUNC = ...).");
	}
	else if (agg->aggtranstype == INTERNALOID &&
			 (!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn)))
	{
		d = _("Its transition type is internal and it has no serialization and deserialization functions.");
		h = _("Define the aggregate with SERIALFUNC and DESERIALFUNC.");
	}
	else if (OidIsValid(agg->aggdeserialfn) &&
			 is_own_state_deserialfn(agg->aggdeserialfn))
	{
		d = _("It is one of mvinc's own aggregates over states, whose states name another aggregate.");
		h = _("Keep the state of the inner aggregate instead.");
	}
	else if (agg->aggtranstype != INTERNALOID &&
			 !IsPolymorphicType(agg->aggtranstype) &&
			 !type_has_binary_io(agg->aggtranstype))
	{
		d = psprintf(_("Its transition type %s has no binary send and receive functions."),
					 format_type_be(agg->aggtranstype));
		h = _("Compute it from the source rows instead.");
	}
	else if (!OidIsValid(agg->aggminvtransfn))
	{
		kind = MVINC_AGG_MERGEABLE;
		d = _("It has no inverse transition function.");
	}
	else if (agg->aggmtransfn != agg->aggtransfn ||
			 agg->aggmtranstype != agg->aggtranstype ||
			 agg->aggmfinalfn != agg->aggfinalfn ||
			 agg->aggmfinalextra != agg->aggfinalextra ||
			 !same_initval(aggtup, Anum_pg_aggregate_agginitval,
						   Anum_pg_aggregate_aggminitval))
	{
		kind = MVINC_AGG_MERGEABLE;
		d = _("Its inverse transition function works on a different state than its combine function.");
	}
	else
		kind = MVINC_AGG_RETRACTABLE;

	ReleaseSysCache(aggtup);

done:
	if (detail)
		*detail = d;
	if (hint)
		*hint = h;
	return kind;
}

/* Report an error unless the aggregate can be stored (and retracted) */
void
MvincAggCheck(Oid aggfnoid, bool need_retract)
{
	const char *detail;
	const char *hint;
	MvincAggKind kind = MvincAggGetKind(aggfnoid, &detail, &hint);

	if (kind == MVINC_AGG_UNSUPPORTED)
	{
		bool		notagg = get_func_prokind(aggfnoid) != PROKIND_AGGREGATE;

		ereport(ERROR,
				(errcode(notagg ? ERRCODE_WRONG_OBJECT_TYPE : ERRCODE_FEATURE_NOT_SUPPORTED),
				 notagg ?
				 errmsg("function \"%s\" is not an aggregate function",
						format_procedure(aggfnoid)) :
				 errmsg("aggregate function \"%s\" cannot be stored as a partial state",
						format_procedure(aggfnoid)),
				 notagg ? 0 : errdetail_internal("%s", detail),
				 errhint("%s", hint)));
	}
	if (need_retract && kind != MVINC_AGG_RETRACTABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function \"%s\" cannot retract inputs from its state",
						format_procedure(aggfnoid)),
				 errdetail_internal("%s", detail),
				 errhint("Recompute the group's state from its source rows with mvinc.agg_state().")));
}

/*
 * True when two aggregates keep the same state from the same arguments
 * (sum and avg of numeric): a state built for one can be merged, retracted
 * and finished as the other, so a view can store it once.
 */
bool
MvincAggSameState(Oid agg1, Oid agg2)
{
	HeapTuple	t1,
				t2,
				p1,
				p2;
	Form_pg_aggregate a1,
				a2;
	Form_pg_proc f1,
				f2;
	bool		same;

	if (agg1 == agg2)
		return MvincAggGetKind(agg1, NULL, NULL) != MVINC_AGG_UNSUPPORTED;
	if (MvincAggGetKind(agg1, NULL, NULL) == MVINC_AGG_UNSUPPORTED ||
		MvincAggGetKind(agg2, NULL, NULL) != MvincAggGetKind(agg1, NULL, NULL))
		return false;

	t1 = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg1));
	t2 = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg2));
	p1 = SearchSysCache1(PROCOID, ObjectIdGetDatum(agg1));
	p2 = SearchSysCache1(PROCOID, ObjectIdGetDatum(agg2));
	if (!HeapTupleIsValid(t1) || !HeapTupleIsValid(t2) ||
		!HeapTupleIsValid(p1) || !HeapTupleIsValid(p2))
		elog(ERROR, "cache lookup failed for aggregate %u or %u", agg1, agg2);
	a1 = (Form_pg_aggregate) GETSTRUCT(t1);
	a2 = (Form_pg_aggregate) GETSTRUCT(t2);
	f1 = (Form_pg_proc) GETSTRUCT(p1);
	f2 = (Form_pg_proc) GETSTRUCT(p2);

	same = a1->aggtransfn == a2->aggtransfn &&
		a1->aggtranstype == a2->aggtranstype &&
		a1->aggcombinefn == a2->aggcombinefn &&
		a1->aggserialfn == a2->aggserialfn &&
		a1->aggdeserialfn == a2->aggdeserialfn &&
		a1->aggminvtransfn == a2->aggminvtransfn &&
		f1->pronargs == f2->pronargs &&
		memcmp(f1->proargtypes.values, f2->proargtypes.values,
			   f1->pronargs * sizeof(Oid)) == 0;
	if (same)
	{
		bool		n1,
					n2;
		Datum		d1 = SysCacheGetAttr(AGGFNOID, t1, Anum_pg_aggregate_agginitval, &n1);
		Datum		d2 = SysCacheGetAttr(AGGFNOID, t2, Anum_pg_aggregate_agginitval, &n2);

		same = (n1 && n2) ||
			(!n1 && !n2 && strcmp(TextDatumGetCString(d1), TextDatumGetCString(d2)) == 0);
	}
	ReleaseSysCache(t1);
	ReleaseSysCache(t2);
	ReleaseSysCache(p1);
	ReleaseSysCache(p2);
	return same;
}

/*
 * True when merging or finishing the aggregate's states outside agg_state
 * needs a sample of its argument (agg_merge/agg_combine's last argument):
 * its state type is polymorphic, or an argument may carry a collation
 * (min/max of text compare under it).
 */
bool
MvincAggNeedsSample(Oid aggfnoid)
{
	HeapTuple	proctup;
	Form_pg_proc proc;
	bool		needs;
	int			i;

	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(proctup))
		elog(ERROR, "cache lookup failed for function %u", aggfnoid);
	proc = (Form_pg_proc) GETSTRUCT(proctup);
	needs = false;
	for (i = 0; i < proc->pronargs && !needs; i++)
	{
		Oid			t = proc->proargtypes.values[i];

		needs = IsPolymorphicType(t) || type_is_collatable(t);
	}
	if (proc->prokind == PROKIND_AGGREGATE && !needs)
	{
		HeapTuple	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));

		if (HeapTupleIsValid(aggtup))
		{
			needs = IsPolymorphicType(((Form_pg_aggregate) GETSTRUCT(aggtup))->aggtranstype);
			ReleaseSysCache(aggtup);
		}
	}
	ReleaseSysCache(proctup);
	return needs;
}

/* Check that the actual argument types fit the aggregate's signature */
static void
check_arg_types(Oid aggfnoid, Form_pg_proc proc, int nargs, const Oid *argtypes)
{
	bool		polymorphic = false;
	int			i;

	if (nargs != proc->pronargs)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("wrong number of arguments for aggregate function \"%s\"",
						format_procedure(aggfnoid)),
				 errdetail_plural("The aggregate takes %d argument, the call passes %d.",
								  "The aggregate takes %d arguments, the call passes %d.",
								  proc->pronargs, proc->pronargs, nargs),
				 errhint("Pass the aggregate's arguments after the aggregate function itself.")));

	for (i = 0; i < nargs; i++)
	{
		Oid			declared = proc->proargtypes.values[i];

		if (argtypes[i] == declared || declared == ANYOID)
			continue;
		if (IsPolymorphicType(declared))
		{
			polymorphic = true;
			continue;
		}
		if (argtypes[i] == UNKNOWNOID || !IsBinaryCoercible(argtypes[i], declared))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("argument %d of aggregate function \"%s\" has type %s, not %s",
							i + 1, format_procedure(aggfnoid),
							format_type_be(argtypes[i]), format_type_be(declared)),
					 errhint("Cast the argument to %s.", format_type_be(declared))));
	}
	if (polymorphic &&
		!check_generic_type_consistency(argtypes, proc->proargtypes.values, nargs))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("arguments of aggregate function \"%s\" do not match its polymorphic signature",
						format_procedure(aggfnoid)),
				 errhint("Cast the arguments to matching types.")));
}

/* Look up a support function and attach the expression it is called with */
static void
setup_fn(FmgrInfo *fn, Oid fnoid, Expr *expr, MemoryContext mcxt)
{
	fmgr_info_cxt(fnoid, fn, mcxt);
	if (expr)
		fmgr_info_set_expr((Node *) expr, fn);
}

/* Check that the aggregate's owner may run one of its support functions */
static void
check_support_acl(Oid fnoid, Oid owner)
{
	AclResult	aclresult;

	if (!OidIsValid(fnoid))
		return;
	aclresult = pg_proc_aclcheck(fnoid, owner, ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(fnoid));
}

/*
 * Look up everything needed to run an aggregate's support functions.
 * nargs < 0 takes the declared argument types, which is enough to merge,
 * serialize and finalize states; building states from rows needs the
 * actual types (a polymorphic transition function reads them).  Errors
 * when the aggregate cannot be stored.  Everything lives in mcxt.
 */
MvincAggInfo *
MvincAggInfoCreate(Oid aggfnoid, int nargs, const Oid *argtypes, Oid collation,
				   MemoryContext mcxt)
{
	MemoryContext oldcxt;
	MvincAggInfo *info;
	HeapTuple	proctup;
	HeapTuple	aggtup;
	Form_pg_proc proc;
	Form_pg_aggregate agg;
	AclResult	aclresult;
	Datum		textInitVal;
	Expr	   *transexpr = NULL;
	Expr	   *invexpr = NULL;
	Expr	   *combexpr = NULL;
	Expr	   *serexpr = NULL;
	Expr	   *deserexpr = NULL;
	Expr	   *finalexpr = NULL;
	int			maxargs;

	MvincAggCheck(aggfnoid, false);

	/* our wrappers are parallel safe; the aggregate they run must be too */
	if (IsParallelWorker() && func_parallel(aggfnoid) != PROPARALLEL_SAFE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function \"%s\" is not parallel safe",
						format_procedure(aggfnoid)),
				 errdetail("A parallel worker was asked to run it."),
				 errhint("Recreate the aggregate with PARALLEL = SAFE, or set max_parallel_workers_per_gather to 0.")));

	aclresult = pg_proc_aclcheck(aggfnoid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_AGGREGATE, get_func_name(aggfnoid));

	oldcxt = MemoryContextSwitchTo(mcxt);
	info = palloc0(sizeof(MvincAggInfo));
	info->mcxt = mcxt;
	info->aggfnoid = aggfnoid;
	info->kind = MvincAggGetKind(aggfnoid, NULL, NULL);
	info->counted = (info->kind == MVINC_AGG_RETRACTABLE);
	info->collation = collation;

	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(proctup))
		elog(ERROR, "cache lookup failed for function %u", aggfnoid);
	proc = (Form_pg_proc) GETSTRUCT(proctup);
	if (nargs >= 0)
	{
		check_arg_types(aggfnoid, proc, nargs, argtypes);
		info->nargs = nargs;
		memcpy(info->argtypes, argtypes, nargs * sizeof(Oid));
	}
	else
	{
		info->nargs = proc->pronargs;
		memcpy(info->argtypes, proc->proargtypes.values, proc->pronargs * sizeof(Oid));
	}
	info->rettype = proc->prorettype;

	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(aggtup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(aggtup);

	/* nodeAgg checks that the aggregate's owner may run its parts */
	check_support_acl(agg->aggtransfn, proc->proowner);
	check_support_acl(agg->aggcombinefn, proc->proowner);
	check_support_acl(agg->aggserialfn, proc->proowner);
	check_support_acl(agg->aggdeserialfn, proc->proowner);
	check_support_acl(agg->aggfinalfn, proc->proowner);
	if (info->counted)
		check_support_acl(agg->aggminvtransfn, proc->proowner);

	/* a polymorphic state type follows the actual argument types */
	if (IsPolymorphicType(agg->aggtranstype))
	{
		int			i;

		for (i = 0; i < info->nargs; i++)
			if (IsPolymorphicType(info->argtypes[i]))
				ereport(ERROR,
						(errcode(ERRCODE_INDETERMINATE_DATATYPE),
						 errmsg("could not determine the state type of aggregate function \"%s\"",
								format_procedure(aggfnoid)),
						 errdetail("Its transition type %s is polymorphic.",
								   format_type_be(agg->aggtranstype)),
						 errhint("Pass a value of the aggregate's argument type as the last argument, such as NULL::integer[].")));
	}
	info->transtype = resolve_aggregate_transtype(aggfnoid, agg->aggtranstype,
												  info->argtypes, info->nargs);
	get_typlenbyval(info->transtype, &info->transtypeLen, &info->transtypeByVal);
	if (info->transtype != INTERNALOID && !type_has_binary_io(info->transtype))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate function \"%s\" cannot be stored as a partial state",
						format_procedure(aggfnoid)),
				 errdetail("Its transition type %s has no binary send and receive functions.",
						   format_type_be(info->transtype)),
				 errhint("Compute it from the source rows instead.")));

	textInitVal = SysCacheGetAttr(AGGFNOID, aggtup, Anum_pg_aggregate_agginitval,
								  &info->initvalIsNull);
	if (!info->initvalIsNull)
	{
		Oid			typinput,
					typioparam;

		getTypeInputInfo(info->transtype, &typinput, &typioparam);
		info->initval = OidInputFunctionCall(typinput,
											 TextDatumGetCString(textInitVal),
											 typioparam, -1);
	}

	build_aggregate_transfn_expr(info->argtypes, info->nargs, 0, false,
								 info->transtype, collation,
								 agg->aggtransfn,
								 info->counted ? agg->aggminvtransfn : InvalidOid,
								 &transexpr, &invexpr);
	setup_fn(&info->transfn, agg->aggtransfn, transexpr, mcxt);
	if (info->counted)
		setup_fn(&info->invtransfn, agg->aggminvtransfn, invexpr, mcxt);
	else
		info->invtransfn.fn_oid = InvalidOid;

	build_aggregate_transfn_expr(&info->transtype, 1, 0, false,
								 info->transtype, collation,
								 agg->aggcombinefn, InvalidOid,
								 &combexpr, NULL);
	setup_fn(&info->combinefn, agg->aggcombinefn, combexpr, mcxt);
	if (info->transtype == INTERNALOID && info->combinefn.fn_strict)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("combine function with transition type %s must not be declared STRICT",
						format_type_be(info->transtype))));

	if (info->transtype == INTERNALOID)
	{
		build_aggregate_serialfn_expr(agg->aggserialfn, &serexpr);
		setup_fn(&info->serialfn, agg->aggserialfn, serexpr, mcxt);
		build_aggregate_deserialfn_expr(agg->aggdeserialfn, &deserexpr);
		setup_fn(&info->deserialfn, agg->aggdeserialfn, deserexpr, mcxt);
		info->statecheck = MvincAggStateCheckFor(&info->deserialfn);
	}
	else
	{
		Oid			sendoid,
					recvoid;
		bool		isvarlena;

		getTypeBinaryOutputInfo(info->transtype, &sendoid, &isvarlena);
		getTypeBinaryInputInfo(info->transtype, &recvoid, &info->recvioparam);
		fmgr_info_cxt(sendoid, &info->sendfn, mcxt);
		fmgr_info_cxt(recvoid, &info->recvfn, mcxt);
		info->statecheck = MVINC_STATE_RECV;
	}

	info->numFinalArgs = 1;
	if (OidIsValid(agg->aggfinalfn))
	{
		if (agg->aggfinalextra)
			info->numFinalArgs += info->nargs;
		build_aggregate_finalfn_expr(info->argtypes, info->numFinalArgs,
									 info->transtype, info->rettype, collation,
									 agg->aggfinalfn, &finalexpr);
		setup_fn(&info->finalfn, agg->aggfinalfn, finalexpr, mcxt);
	}
	else
		info->finalfn.fn_oid = InvalidOid;

	ReleaseSysCache(aggtup);
	ReleaseSysCache(proctup);

	maxargs = Max(Max(info->nargs + 1, info->numFinalArgs), 2);
	info->fcinfo = palloc0(SizeForFunctionCallInfo(maxargs));

	/* AggCheckCallContext() hands out econtext's per-tuple memory */
	info->aggstate = makeNode(AggState);
	info->econtext = makeNode(ExprContext);
	info->aggstate->curaggcontext = info->econtext;

	MemoryContextSwitchTo(oldcxt);
	return info;
}

/*
 * MvincAggInfoCreate for merging and finishing when only a sample type is
 * known: a value of the aggregate's argument type (sample_is_result
 * false), or its result type (true).  An aggregate with a polymorphic
 * state type (max(anyarray), max(anyenum)) needs it to know its state
 * type; other aggregates ignore it.
 */
MvincAggInfo *
MvincAggInfoCreateLike(Oid aggfnoid, Oid sampletype, bool sample_is_result,
					   Oid collation, MemoryContext mcxt)
{
	HeapTuple	proctup;
	HeapTuple	aggtup;
	Form_pg_proc proc;
	Oid			argtypes[FUNC_MAX_ARGS];
	Oid			transtype;
	bool		substituted = false;
	int			nargs;
	int			i;

	MvincAggCheck(aggfnoid, false);
	if (!OidIsValid(sampletype))
		return MvincAggInfoCreate(aggfnoid, -1, NULL, collation, mcxt);

	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(aggtup) || !HeapTupleIsValid(proctup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	transtype = ((Form_pg_aggregate) GETSTRUCT(aggtup))->aggtranstype;
	proc = (Form_pg_proc) GETSTRUCT(proctup);
	nargs = proc->pronargs;
	memcpy(argtypes, proc->proargtypes.values, nargs * sizeof(Oid));
	if (IsPolymorphicType(transtype) &&
		(!sample_is_result || proc->prorettype == transtype))
	{
		for (i = 0; i < nargs; i++)
			if (IsPolymorphicType(argtypes[i]) &&
				(!sample_is_result || argtypes[i] == transtype))
			{
				argtypes[i] = sampletype;
				substituted = true;
			}
	}
	ReleaseSysCache(aggtup);
	ReleaseSysCache(proctup);
	return MvincAggInfoCreate(aggfnoid, substituted ? nargs : -1, argtypes,
							  collation, mcxt);
}

/* Call one support function with the state's context as aggregate context */
static Datum
call_support(MvincAggInfo *info, FmgrInfo *fn, MvincAggValue *v, Oid collation,
			 int nargs, bool *isnull)
{
	FunctionCallInfo fcinfo = info->fcinfo;
	Datum		result;

	fcinfo->flinfo = fn;
	fcinfo->context = (Node *) info->aggstate;
	fcinfo->resultinfo = NULL;
	fcinfo->fncollation = collation;
	fcinfo->isnull = false;
	fcinfo->nargs = nargs;
	info->econtext->ecxt_per_tuple_memory = v->cxt;
	info->econtext->ecxt_per_query_memory = v->cxt;

	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/* Store a new state value in v's context and free the old one (nodeAgg) */
static void
set_state(MvincAggInfo *info, MvincAggValue *v, Datum newval, bool newnull)
{
	if (!info->transtypeByVal &&
		(v->isnull || newnull || DatumGetPointer(newval) != DatumGetPointer(v->value)))
	{
		if (!newnull)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(v->cxt);

			if (!(DatumIsReadWriteExpandedObject(newval, false, info->transtypeLen) &&
				  MemoryContextGetParent(DatumGetEOHP(newval)->eoh_context) == v->cxt))
				newval = datumCopy(newval, false, info->transtypeLen);
			MemoryContextSwitchTo(oldcxt);
		}
		if (!v->isnull)
		{
			if (DatumIsReadWriteExpandedObject(v->value, false, info->transtypeLen))
				DeleteExpandedObject(v->value);
			else
				pfree(DatumGetPointer(v->value));
		}
	}
	v->value = newnull ? (Datum) 0 : newval;
	v->isnull = newnull;
	v->noTransValue = false;
}

/* Start an empty state (the aggregate's initial value) living in cxt */
void
MvincAggValueInit(MvincAggInfo *info, MvincAggValue *v, MemoryContext cxt)
{
	v->cxt = cxt;
	v->count = 0;
	v->isnull = info->initvalIsNull;
	v->noTransValue = info->initvalIsNull;
	if (info->initvalIsNull)
		v->value = (Datum) 0;
	else
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		v->value = datumCopy(info->initval, info->transtypeByVal, info->transtypeLen);
		MemoryContextSwitchTo(oldcxt);
	}
}

/* Add one input row (info->nargs arguments) to the state, as nodeAgg does */
void
MvincAggTransition(MvincAggInfo *info, MvincAggValue *v, Datum *args, bool *nulls)
{
	FunctionCallInfo fcinfo = info->fcinfo;
	Datum		newval;
	bool		newnull;
	int			i;

	if (info->transfn.fn_strict)
	{
		for (i = 0; i < info->nargs; i++)
			if (nulls[i])
				return;
		if (v->noTransValue)
		{
			/* the first non-NULL input becomes the state */
			MemoryContext oldcxt = MemoryContextSwitchTo(v->cxt);

			Assert(info->nargs >= 1);
			v->value = datumCopy(args[0], info->transtypeByVal, info->transtypeLen);
			v->isnull = false;
			v->noTransValue = false;
			v->count++;
			MemoryContextSwitchTo(oldcxt);
			return;
		}
		if (v->isnull)
			return;
	}

	fcinfo->args[0].value = v->value;
	fcinfo->args[0].isnull = v->isnull;
	for (i = 0; i < info->nargs; i++)
	{
		fcinfo->args[i + 1].value = args[i];
		fcinfo->args[i + 1].isnull = nulls[i];
	}
	newval = call_support(info, &info->transfn, v, info->collation,
						  info->nargs + 1, &newnull);
	if (newnull && info->counted)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("moving-aggregate transition function must not return null")));
	set_state(info, v, newval, newnull);
	v->count++;
}

/*
 * Remove one input row from the state with the inverse transition function,
 * as nodeWindowAgg does.  Returns false when that cannot be done (the
 * inverse refused, or the state does not hold that many inputs): the state
 * is then unusable and must be recomputed from the source rows.
 */
bool
MvincAggRetract(MvincAggInfo *info, MvincAggValue *v, Datum *args, bool *nulls)
{
	FunctionCallInfo fcinfo = info->fcinfo;
	Datum		newval;
	bool		newnull;
	int			i;

	Assert(info->kind == MVINC_AGG_RETRACTABLE);

	if (info->invtransfn.fn_strict)
		for (i = 0; i < info->nargs; i++)
			if (nulls[i])
				return true;

	if (v->count <= 0 || v->isnull)
		return false;

	/* removing the last input resets the state instead */
	if (v->count == 1)
	{
		if (!info->transtypeByVal && !v->isnull)
		{
			if (DatumIsReadWriteExpandedObject(v->value, false, info->transtypeLen))
				DeleteExpandedObject(v->value);
			else if (info->transtype != INTERNALOID)
				pfree(DatumGetPointer(v->value));
		}
		MvincAggValueInit(info, v, v->cxt);
		return true;
	}

	fcinfo->args[0].value = v->value;
	fcinfo->args[0].isnull = false;
	for (i = 0; i < info->nargs; i++)
	{
		fcinfo->args[i + 1].value = args[i];
		fcinfo->args[i + 1].isnull = nulls[i];
	}
	newval = call_support(info, &info->invtransfn, v, info->collation,
						  info->nargs + 1, &newnull);
	if (newnull)
		return false;
	set_state(info, v, newval, false);
	v->count--;
	return true;
}

/*
 * Replace v (initialized) by a stored state; NULL is the empty state.
 * The state is built in v->cxt.  It is checked first (aggstate_check.c);
 * trusted: it comes from a serialization function of this server, not
 * from a caller.
 */
void
MvincAggDeserialize(MvincAggInfo *info, MvincAggValue *v, bytea *state,
					bool trusted)
{
	char	   *data;
	int			len;
	int64		count = 0;
	MemoryContext oldcxt;

	MvincAggValueInit(info, v, v->cxt);
	if (state == NULL)
		return;

	data = VARDATA_ANY(state);
	len = VARSIZE_ANY_EXHDR(state);
	if (info->counted)
	{
		uint64		n;

		if (len < COUNTED_HEADER || (data[8] != 0 && data[8] != 1))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid state of aggregate function \"%s\"",
							format_procedure(info->aggfnoid)),
					 errdetail("The state is not in the counted format of a retractable aggregate.")));
		memcpy(&n, data, sizeof(n));
		count = (int64) pg_ntoh64(n);
		if (count < 0 || (data[8] == 0 && len != COUNTED_HEADER))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid state of aggregate function \"%s\"",
							format_procedure(info->aggfnoid)),
					 count < 0 ?
					 errdetail("The state's input count is negative.") :
					 errdetail("The state is marked null but has bytes after its count.")));
		if (data[8] == 0)
		{
			/* a NULL state: empty, or a strict function returned NULL */
			if (count != 0)
			{
				v->isnull = true;
				v->noTransValue = false;
				v->value = (Datum) 0;
			}
			v->count = count;
			return;
		}
		data += COUNTED_HEADER;
		len -= COUNTED_HEADER;
	}

	if (info->transtype == INTERNALOID)
		MvincAggCheckState(info, data, len, trusted);

	oldcxt = MemoryContextSwitchTo(v->cxt);
	if (info->transtype == INTERNALOID)
	{
		FunctionCallInfo fcinfo = info->fcinfo;
		bytea	   *payload;
		Datum		newval;
		bool		newnull;

		if (info->counted)
		{
			payload = palloc(VARHDRSZ + len);
			SET_VARSIZE(payload, VARHDRSZ + len);
			memcpy(VARDATA(payload), data, len);
		}
		else
			payload = state;
		fcinfo->args[0].value = PointerGetDatum(payload);
		fcinfo->args[0].isnull = false;
		fcinfo->args[1].value = (Datum) 0;
		fcinfo->args[1].isnull = false;
		newval = call_support(info, &info->deserialfn, v, InvalidOid, 2, &newnull);
		v->value = newval;
		v->isnull = newnull;
	}
	else
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendBinaryStringInfo(&buf, data, len);
		v->value = ReceiveFunctionCall(&info->recvfn, &buf, info->recvioparam, -1);
		if (buf.cursor != buf.len)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid state of aggregate function \"%s\"",
							format_procedure(info->aggfnoid)),
					 errdetail_plural("The state has %d byte left over after its %s value.",
									  "The state has %d bytes left over after its %s value.",
									  buf.len - buf.cursor,
									  buf.len - buf.cursor, format_type_be(info->transtype))));
		/* buf.data stays: a receive function may point into it */
		v->isnull = false;
	}
	MemoryContextSwitchTo(oldcxt);
	v->noTransValue = false;
	v->count = count;
}

/*
 * Merge the state o into v with the combine function, as nodeAgg does
 * when it finalizes partial states.  o is not changed, but v may take
 * over parts of it only through the combine function's own copying.
 */
void
MvincAggCombineValue(MvincAggInfo *info, MvincAggValue *v, MvincAggValue *o)
{
	FunctionCallInfo fcinfo = info->fcinfo;
	Datum		newval;
	bool		newnull;

	if (info->counted && o->count == 0)
		return;

	if (info->combinefn.fn_strict)
	{
		if (o->isnull)
		{
			v->count += o->count;
			return;
		}
		if (v->noTransValue)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(v->cxt);

			v->value = datumCopy(o->value, info->transtypeByVal, info->transtypeLen);
			v->isnull = false;
			v->noTransValue = false;
			v->count += o->count;
			MemoryContextSwitchTo(oldcxt);
			return;
		}
		if (v->isnull)
		{
			v->count += o->count;
			return;
		}
	}

	fcinfo->args[0].value = v->value;
	fcinfo->args[0].isnull = v->isnull;
	fcinfo->args[1].value = o->value;
	fcinfo->args[1].isnull = o->isnull;
	newval = call_support(info, &info->combinefn, v, info->collation, 2, &newnull);
	set_state(info, v, newval, newnull);
	v->count += o->count;
}

/* Merge a stored state into v with the combine function (NULL: nothing) */
void
MvincAggCombine(MvincAggInfo *info, MvincAggValue *v, bytea *other, bool trusted)
{
	MvincAggValue o;

	if (other == NULL)
		return;

	/* the other state is garbage once combined: build it here */
	o.cxt = CurrentMemoryContext;
	MvincAggDeserialize(info, &o, other, trusted);
	MvincAggCombineValue(info, v, &o);
}

/* The stored form of v, in CurrentMemoryContext (NULL: empty state) */
bytea *
MvincAggSerialize(MvincAggInfo *info, MvincAggValue *v)
{
	bytea	   *payload = NULL;
	bytea	   *result;
	int			len;

	if (!v->isnull)
	{
		if (info->transtype == INTERNALOID)
		{
			FunctionCallInfo fcinfo = info->fcinfo;
			bool		isnull;
			Datum		d;

			fcinfo->args[0].value = v->value;
			fcinfo->args[0].isnull = false;
			d = call_support(info, &info->serialfn, v, InvalidOid, 1, &isnull);
			payload = isnull ? NULL : DatumGetByteaPP(d);
		}
		else
			payload = SendFunctionCall(&info->sendfn, v->value);
	}

	if (!info->counted)
		return payload;

	len = payload ? VARSIZE_ANY_EXHDR(payload) : 0;
	result = palloc(VARHDRSZ + COUNTED_HEADER + len);
	SET_VARSIZE(result, VARHDRSZ + COUNTED_HEADER + len);
	{
		uint64		n = pg_hton64((uint64) v->count);

		memcpy(VARDATA(result), &n, sizeof(n));
	}
	VARDATA(result)[8] = payload ? 1 : 0;
	if (payload)
		memcpy(VARDATA(result) + COUNTED_HEADER, VARDATA_ANY(payload), len);
	return result;
}

/*
 * The aggregate's result over the state (its final function, or the state
 * itself).  The result may point into v's memory: copy it before v goes.
 */
Datum
MvincAggFinalize(MvincAggInfo *info, MvincAggValue *v, bool *isnull)
{
	FunctionCallInfo fcinfo = info->fcinfo;
	int			i;

	if (!OidIsValid(info->finalfn.fn_oid))
	{
		*isnull = v->isnull;
		return v->value;
	}
	if (info->finalfn.fn_strict && v->isnull)
	{
		*isnull = true;
		return (Datum) 0;
	}
	fcinfo->args[0].value = v->value;
	fcinfo->args[0].isnull = v->isnull;
	for (i = 1; i < info->numFinalArgs; i++)
	{
		fcinfo->args[i].value = (Datum) 0;
		fcinfo->args[i].isnull = true;
	}
	if (info->finalfn.fn_strict && info->numFinalArgs > 1)
	{
		*isnull = true;
		return (Datum) 0;
	}
	return call_support(info, &info->finalfn, v, info->collation,
						info->numFinalArgs, isnull);
}
