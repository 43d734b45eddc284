/*-------------------------------------------------------------------------
 * aggstate.h
 *	  Aggregate states: any aggregate that supports partial aggregation,
 *	  kept as a mergeable partial state, stored as bytea and finished on
 *	  read, driven by the aggregate's own pg_aggregate entry.
 *
 * Encoding of a stored state (bytea):
 *	- mergeable aggregates: the serialization function's output when the
 *	  transition type is internal, else the transition type's binary send
 *	  format; SQL NULL is the empty state (the aggregate's initial value);
 *	- retractable aggregates: an 8-byte big-endian count of the inputs the
 *	  state holds, one flag byte (1: a state follows, 0: the state is SQL
 *	  NULL), then the state as above.  The count lets a retraction of the
 *	  last input reset the state as the window aggregate machinery does.
 *
 * States come from callers of SQL functions: they are checked before a
 * deserialization function reads them (aggstate_check.c).
 *
 * Memory: an MvincAggValue's state lives in its own context (v->cxt);
 * every call below leaves its garbage in CurrentMemoryContext, so call
 * them in a short-lived context (one reset per row where states are
 * rebuilt).
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_AGGSTATE_H
#define MVINC_AGGSTATE_H

#include "fmgr.h"
#include "nodes/execnodes.h"

/* What an aggregate's state can do, from best to worst */
typedef enum MvincAggKind
{
	MVINC_AGG_UNSUPPORTED = 0,	/* cannot be kept as a partial state */
	MVINC_AGG_MERGEABLE,		/* states merge (combine function) */
	MVINC_AGG_RETRACTABLE		/* states merge and inputs can be removed */
} MvincAggKind;

/* How a state is checked before it is deserialized (aggstate_check.c) */
typedef enum MvincAggStateCheck
{
	MVINC_STATE_RECV = 0,		/* not internal: the type's receive function */
	MVINC_STATE_NUMERIC_AVG,	/* numeric_avg_deserialize's layout */
	MVINC_STATE_NUMERIC,		/* numeric_deserialize's */
	MVINC_STATE_NUMERIC_POLY,	/* numeric_poly_deserialize's */
	MVINC_STATE_INT8_AVG,		/* int8_avg_deserialize's */
	MVINC_STATE_SELF,			/* the function checks its input (hll.c) */
	MVINC_STATE_UNCHECKED		/* unknown: trusted states or a superuser */
} MvincAggStateCheck;

/*
 * Type modifier of the aggregate argument (a regprocedure constant) of the
 * state calls in a view's read query: no SQL text can give one.
 */
#define MVINC_READ_AGGFN_TYPMOD	0x6d76

/* Everything needed to run one aggregate's support functions (read-only) */
typedef struct MvincAggInfo
{
	Oid			aggfnoid;
	MvincAggKind kind;
	int			nargs;			/* aggregated arguments */
	Oid			argtypes[FUNC_MAX_ARGS];	/* actual or declared */
	Oid			rettype;		/* declared result type */
	Oid			collation;		/* input collation passed to every call */

	Oid			transtype;		/* resolved */
	int16		transtypeLen;
	bool		transtypeByVal;
	bool		counted;		/* stored with an input count (retractable) */

	Datum		initval;		/* in mcxt */
	bool		initvalIsNull;

	FmgrInfo	transfn;
	FmgrInfo	invtransfn;		/* fn_oid invalid unless retractable */
	FmgrInfo	combinefn;
	FmgrInfo	serialfn;		/* internal states */
	FmgrInfo	deserialfn;
	MvincAggStateCheck statecheck;
	FmgrInfo	sendfn;			/* other states */
	FmgrInfo	recvfn;
	Oid			recvioparam;
	FmgrInfo	finalfn;		/* fn_oid invalid without final function */
	int			numFinalArgs;	/* 1, or 1 + nargs with FINALFUNC_EXTRA */

	FunctionCallInfo fcinfo;	/* room for the largest call */

	/* what AggCheckCallContext() sees: its context is the value's cxt */
	AggState   *aggstate;
	ExprContext *econtext;
	MemoryContext mcxt;			/* where this lives */
} MvincAggInfo;

/* One state being built, merged, retracted or finished */
typedef struct MvincAggValue
{
	Datum		value;
	bool		isnull;
	bool		noTransValue;	/* no input yet: a strict transfn with NULL
								 * initval takes the first input as state */
	int64		count;			/* inputs held (kept for counted states) */
	MemoryContext cxt;			/* where value lives */
} MvincAggValue;

/* aggstate.c */
extern MvincAggKind MvincAggGetKind(Oid aggfnoid, const char **detail,
									const char **hint);
extern void MvincAggCheck(Oid aggfnoid, bool need_retract);
extern bool MvincAggSameState(Oid agg1, Oid agg2);
extern bool MvincAggNeedsSample(Oid aggfnoid);
extern MvincAggInfo *MvincAggInfoCreate(Oid aggfnoid, int nargs,
										const Oid *argtypes, Oid collation,
										MemoryContext mcxt);
extern MvincAggInfo *MvincAggInfoCreateLike(Oid aggfnoid, Oid sampletype,
											bool sample_is_result,
											Oid collation, MemoryContext mcxt);
extern void MvincAggValueInit(MvincAggInfo *info, MvincAggValue *v,
							  MemoryContext cxt);
extern void MvincAggTransition(MvincAggInfo *info, MvincAggValue *v,
							   Datum *args, bool *nulls);
extern bool MvincAggRetract(MvincAggInfo *info, MvincAggValue *v,
							Datum *args, bool *nulls);
extern void MvincAggDeserialize(MvincAggInfo *info, MvincAggValue *v,
								bytea *state, bool trusted);
extern void MvincAggCombine(MvincAggInfo *info, MvincAggValue *v,
							bytea *other, bool trusted);
extern void MvincAggCombineValue(MvincAggInfo *info, MvincAggValue *v,
								 MvincAggValue *o);
extern bytea *MvincAggSerialize(MvincAggInfo *info, MvincAggValue *v);
extern Datum MvincAggFinalize(MvincAggInfo *info, MvincAggValue *v,
							  bool *isnull);
extern const char *MvincAggKindName(MvincAggKind kind);

/* aggstate_check.c */
extern MvincAggStateCheck MvincAggStateCheckFor(FmgrInfo *deserialfn);
extern void MvincAggCheckState(MvincAggInfo *info, const char *data, int len,
							   bool trusted);
extern void MvincAggMarkReadCalls(Node *query);
extern bool MvincAggReadCall(FunctionCallInfo fcinfo);

/* aggstate_sql.c, hll.c: deserialization functions known by address */
extern PGDLLEXPORT Datum mvinc_agg_state_deserialize(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum mvinc_hll_deserialize(PG_FUNCTION_ARGS);

#endif							/* MVINC_AGGSTATE_H */
