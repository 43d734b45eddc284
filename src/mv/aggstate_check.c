/*-------------------------------------------------------------------------
 * aggstate_check.c
 *	  Checks of stored aggregate states before they reach a deserialization
 *	  function.  The SQL functions over states take the bytes from their
 *	  caller, but core PostgreSQL's deserialization functions take
 *	  internal, are never callable from SQL and trust their input: a
 *	  crafted numeric state (a weight of INT_MIN, a digit count past the
 *	  bytes) crashed the server.  So each state is checked first, in the
 *	  exact layout its deserialization function reads:
 *
 *	- numeric_avg_deserialize, numeric_deserialize,
 *	  numeric_poly_deserialize and int8_avg_deserialize (every aggregate
 *	  of PostgreSQL 15 with a deserialization function): parsed here
 *	  field by field (numeric.c's numericvar_serialize and its callers);
 *	- mvinc's own approx_count_distinct checks its input itself (hll.c);
 *	- any other deserialization function (a user's C function) is not
 *	  known to be safe: its states are taken only from a superuser, from
 *	  mvinc's own paths (parallel workers, refresh) and from the calls of
 *	  a view's read query (aggstate_sql.c, MvincAggMarkReadCalls).
 *
 * States of other transition types go through the type's binary receive
 * function, which checks its input as it must for COPY BINARY.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "mv/aggstate.h"

/* numeric.c's NumericVar: base 10000 digits, these signs and limits */
#define NUM_NBASE			10000
#define NUM_POS				0x0000
#define NUM_NEG				0x4000
#define NUM_DSCALE_MAX		0x3FFF
#define NUM_WEIGHT_MAX		PG_INT16_MAX

/*
 * Where a digit of a summed value may be: a sum of squares (sumX2) of
 * numerics reaches twice a numeric's weight, and its scale twice the
 * scale, plus a few carry digits from adding up to 2^63 values.  The
 * bound keeps the accumulators numeric.c sizes from them small.
 */
#define NUMVAR_POS_MAX		(2 * (NUM_WEIGHT_MAX + 1) + 8)
#define NUMVAR_POS_MIN		(-NUMVAR_POS_MAX)

/* A state being read */
typedef struct StateReader
{
	const unsigned char *p;
	int			len;
	int			pos;
	Oid			aggfnoid;
} StateReader;

static void pg_attribute_noreturn()
bad_state(StateReader *r, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid state of aggregate function \"%s\"",
					format_procedure(r->aggfnoid)),
			 errdetail_internal("%s", detail)));
}

/* The next n bytes as a big-endian unsigned integer (n <= 8) */
static uint64
get_uint(StateReader *r, int n)
{
	uint64		v = 0;

	if (r->len - r->pos < n)
		bad_state(r, "The state ends early.");
	while (n-- > 0)
		v = (v << 8) | r->p[r->pos++];
	return v;
}

static int64
get_count(StateReader *r, const char *what)
{
	int64		v = (int64) get_uint(r, 8);

	if (v < 0)
		bad_state(r, psprintf("The state's %s is negative.", what));
	return v;
}

/* numericvar_serialize's output: ndigits, weight, sign, dscale, digits */
static void
check_numericvar(StateReader *r, int dscale_max)
{
	int32		ndigits = (int32) get_uint(r, 4);
	int32		weight = (int32) get_uint(r, 4);
	int32		sign = (int32) get_uint(r, 4);
	int32		dscale = (int32) get_uint(r, 4);
	int			i;

	if (ndigits < 0 || ndigits > (r->len - r->pos) / 2)
		bad_state(r, "A numeric value's digit count does not fit the state.");
	if (weight > NUMVAR_POS_MAX || (int64) weight - ndigits + 1 < NUMVAR_POS_MIN)
		bad_state(r, "A numeric value's weight is out of range.");
	if (sign != NUM_POS && sign != NUM_NEG)
		bad_state(r, "A numeric value's sign is invalid.");
	if (dscale < 0 || dscale > dscale_max)
		bad_state(r, "A numeric value's display scale is out of range.");
	for (i = 0; i < ndigits; i++)
		if (get_uint(r, 2) >= NUM_NBASE)
			bad_state(r, "A numeric value's digit is out of range.");
}

/* The tail of NumericAggState: maxScale, maxScaleCount and special counts */
static void
check_numeric_tail(StateReader *r)
{
	int32		maxscale = (int32) get_uint(r, 4);

	if (maxscale < 0 || maxscale > NUM_DSCALE_MAX)
		bad_state(r, "The state's maximum scale is out of range.");
	(void) get_count(r, "count of values at the maximum scale");
	(void) get_count(r, "NaN count");
	(void) get_count(r, "infinity count");
	(void) get_count(r, "infinity count");
}

/* How states of an aggregate with this deserialization function are checked */
MvincAggStateCheck
MvincAggStateCheckFor(FmgrInfo *deserialfn)
{
	PGFunction	f = deserialfn->fn_addr;

	/* by address: also a user's LANGUAGE internal alias of one of them */
	if (f == numeric_avg_deserialize)
		return MVINC_STATE_NUMERIC_AVG;
	if (f == numeric_deserialize)
		return MVINC_STATE_NUMERIC;
	if (f == numeric_poly_deserialize)
		return MVINC_STATE_NUMERIC_POLY;
	if (f == int8_avg_deserialize)
		return MVINC_STATE_INT8_AVG;
	if (f == mvinc_hll_deserialize)
		return MVINC_STATE_SELF;
	return MVINC_STATE_UNCHECKED;
}

/*
 * Check a state (len bytes at data, without mvinc's count header) of
 * info's aggregate before its deserialization function reads it.
 * trusted: the bytes come from a serialization function of this server
 * (see the file header); else an unchecked layout needs a superuser.
 */
void
MvincAggCheckState(MvincAggInfo *info, const char *data, int len, bool trusted)
{
	StateReader r = {(const unsigned char *) data, len, 0, info->aggfnoid};

	switch (info->statecheck)
	{
		case MVINC_STATE_RECV:
		case MVINC_STATE_SELF:
			return;
		case MVINC_STATE_UNCHECKED:
			if (!trusted && !superuser())
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to pass a state of aggregate function \"%s\"",
								format_procedure(info->aggfnoid)),
						 errdetail("Its deserialization function %s is not known to check its input.",
								   format_procedure(info->deserialfn.fn_oid)),
						 errhint("Only a superuser may pass such states to mvinc's functions; incremental views read them as usual.")));
			return;
		case MVINC_STATE_NUMERIC_AVG:	/* N, sumX, tail */
			(void) get_count(&r, "count");
			check_numericvar(&r, NUM_DSCALE_MAX);
			check_numeric_tail(&r);
			break;
		case MVINC_STATE_NUMERIC:	/* N, sumX, sumX2, tail */
			(void) get_count(&r, "count");
			check_numericvar(&r, NUM_DSCALE_MAX);
			check_numericvar(&r, 2 * NUM_DSCALE_MAX);
			check_numeric_tail(&r);
			break;
		case MVINC_STATE_NUMERIC_POLY:	/* N, sumX, sumX2 (integers) */
			(void) get_count(&r, "count");
			check_numericvar(&r, NUM_DSCALE_MAX);
			check_numericvar(&r, 2 * NUM_DSCALE_MAX);
			break;
		case MVINC_STATE_INT8_AVG:	/* N, sumX (an integer) */
			(void) get_count(&r, "count");
			check_numericvar(&r, NUM_DSCALE_MAX);
			break;
	}
	if (r.pos != r.len)
		bad_state(&r, r.len - r.pos == 1 ? "The state has 1 byte left over." :
				  psprintf("The state has %d bytes left over.", r.len - r.pos));
}

/* Walker: mark the aggregate argument of the state calls of a read query */
static bool
mark_walker(Node *node, Oid *nsp)
{
	Oid			funcid = InvalidOid;
	Node	   *first = NULL;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, mark_walker, nsp, 0);
	if (IsA(node, FuncExpr))
	{
		funcid = ((FuncExpr *) node)->funcid;
		if (((FuncExpr *) node)->args != NIL)
			first = linitial(((FuncExpr *) node)->args);
	}
	else if (IsA(node, Aggref) && ((Aggref *) node)->args != NIL)
	{
		funcid = ((Aggref *) node)->aggfnoid;
		first = (Node *) linitial_node(TargetEntry, ((Aggref *) node)->args)->expr;
	}
	if (first && IsA(first, Const) && ((Const *) first)->consttype == REGPROCEDUREOID &&
		get_func_namespace(funcid) == *nsp)
		((Const *) first)->consttypmod = MVINC_READ_AGGFN_TYPMOD;
	return expression_tree_walker(node, mark_walker, nsp);
}

/*
 * Mark the state calls of a view's read query (mv_readquery.c) as taking
 * their states from the view's storage: their aggregate argument, a
 * regprocedure constant, gets a type modifier no SQL text can give one
 * (regprocedure takes none), which survives planning and parallel plans.
 * The definitions of views cannot call these functions (mv_analyze.c).
 */
void
MvincAggMarkReadCalls(Node *query)
{
	Oid			nsp = get_namespace_oid("mvinc", true);

	if (OidIsValid(nsp))
		(void) mark_walker(query, &nsp);
}

/* Is the call's aggregate argument one MvincAggMarkReadCalls marked? */
bool
MvincAggReadCall(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	Node	   *expr = fcinfo->flinfo ? fcinfo->flinfo->fn_expr : NULL;
	Node	   *first = NULL;

	if (aggref != NULL)
	{
		if (aggref->args != NIL)
			first = (Node *) linitial_node(TargetEntry, aggref->args)->expr;
	}
	else if (expr && IsA(expr, FuncExpr) && ((FuncExpr *) expr)->args != NIL)
		first = linitial(((FuncExpr *) expr)->args);
	return first && IsA(first, Const) &&
		((Const *) first)->consttype == REGPROCEDUREOID &&
		((Const *) first)->consttypmod == MVINC_READ_AGGFN_TYPMOD;
}
