/*-------------------------------------------------------------------------
 * hll.c
 *	  mvinc.approx_count_distinct(anyelement): a HyperLogLog aggregate with
 *	  2^12 registers (standard error about 1.6 %), mergeable and
 *	  serializable, so aggregate states store and merge it like any other.
 *
 * Values are hashed with their type's extended (64-bit) hash function.
 * The first 12 bits of the hash pick a register, which keeps the largest
 * position of the first set bit in the other 52.  Small sketches stay
 * sparse (sorted index/value pairs) and turn dense past SPARSE_MAX
 * entries.  The estimate is Ertl's improved raw estimator ("New
 * cardinality estimation algorithms for HyperLogLog sketches", 2017),
 * which needs no bias tables and is accurate from 0 up.
 *
 * Serialized form: version byte, precision byte, layout byte (0 sparse,
 * 1 dense); sparse: uint16 count, then per entry a uint16 index and a
 * value byte, by index; dense: one byte per register.  Big-endian.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#define HLL_VERSION		1
#define HLL_P			12
#define HLL_M			(1 << HLL_P)
#define HLL_Q			(64 - HLL_P)	/* bits left for the rank */
#define SPARSE_MAX		512		/* past this, 4 KB of registers are smaller */

/* In-memory sketch: sparse entries (index << 8 | rank) or dense registers */
typedef struct HllState
{
	bool		dense;
	int			nsparse;
	int			cap;			/* allocated sparse entries */
	uint32	   *sparse;			/* sorted by index */
	uint8	   *regs;			/* HLL_M bytes when dense */
} HllState;

/* Per call site: the input type's extended hash function */
typedef struct HllHashCache
{
	Oid			typid;
	FmgrInfo	hashfn;
} HllHashCache;

PG_FUNCTION_INFO_V1(mvinc_hll_trans);
PG_FUNCTION_INFO_V1(mvinc_hll_combine);
PG_FUNCTION_INFO_V1(mvinc_hll_serialize);
PG_FUNCTION_INFO_V1(mvinc_hll_deserialize);
PG_FUNCTION_INFO_V1(mvinc_hll_final);

/* A new empty sketch in the current memory context */
static HllState *
hll_new(void)
{
	return palloc0(sizeof(HllState));
}

/* Switch a sparse sketch to dense registers (in the current context) */
static void
hll_densify(HllState *h)
{
	int			i;

	h->regs = palloc0(HLL_M);
	for (i = 0; i < h->nsparse; i++)
	{
		uint32		idx = h->sparse[i] >> 8;
		uint8		rank = h->sparse[i] & 0xff;

		if (rank > h->regs[idx])
			h->regs[idx] = rank;
	}
	if (h->sparse)
		pfree(h->sparse);
	h->sparse = NULL;
	h->cap = 0;
	h->dense = true;
	h->nsparse = 0;
}

/* Raise register idx to rank (allocating in the current context) */
static void
hll_set(HllState *h, uint32 idx, uint8 rank)
{
	int			lo,
				hi;

	if (h->dense)
	{
		if (rank > h->regs[idx])
			h->regs[idx] = rank;
		return;
	}

	/* binary search for idx among the sorted sparse entries */
	lo = 0;
	hi = h->nsparse;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if ((h->sparse[mid] >> 8) < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nsparse && (h->sparse[lo] >> 8) == idx)
	{
		if (rank > (h->sparse[lo] & 0xff))
			h->sparse[lo] = (idx << 8) | rank;
		return;
	}
	if (h->nsparse == SPARSE_MAX)
	{
		hll_densify(h);
		h->regs[idx] = Max(h->regs[idx], rank);
		return;
	}
	if (h->nsparse == h->cap)
	{
		h->cap = h->cap ? h->cap * 2 : 16;
		h->sparse = h->sparse ? repalloc(h->sparse, h->cap * sizeof(uint32))
			: palloc(h->cap * sizeof(uint32));
	}
	memmove(&h->sparse[lo + 1], &h->sparse[lo], (h->nsparse - lo) * sizeof(uint32));
	h->sparse[lo] = (idx << 8) | rank;
	h->nsparse++;
}

/* Add one 64-bit hash */
static void
hll_add_hash(HllState *h, uint64 hash)
{
	uint32		idx = (uint32) (hash >> HLL_Q);
	uint64		rest = hash << HLL_P;
	uint8		rank;

	if (rest == 0)
		rank = HLL_Q + 1;
	else
		rank = 64 - pg_leftmost_one_pos64(rest);
	hll_set(h, idx, rank);
}

/* The sketch's aggregate memory, for the state to live in */
static MemoryContext
hll_aggcontext(FunctionCallInfo fcinfo)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "approx_count_distinct support function called in non-aggregate context");
	return aggcxt;
}

/* Transition: hash one non-NULL value into the sketch */
Datum
mvinc_hll_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = hll_aggcontext(fcinfo);
	MemoryContext oldcxt;
	HllState   *h = PG_ARGISNULL(0) ? NULL : (HllState *) PG_GETARG_POINTER(0);
	HllHashCache *cache = (HllHashCache *) fcinfo->flinfo->fn_extra;
	Oid			collation = PG_GET_COLLATION();
	uint64		hash;

	oldcxt = MemoryContextSwitchTo(aggcxt);
	if (h == NULL)
		h = hll_new();
	MemoryContextSwitchTo(oldcxt);
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(h);

	if (cache == NULL)
	{
		Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, 1);
		TypeCacheEntry *tc;

		if (!OidIsValid(typid))
			elog(ERROR, "could not determine the input type of approx_count_distinct");
		tc = lookup_type_cache(typid, TYPECACHE_HASH_EXTENDED_PROC);
		if (!OidIsValid(tc->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify an extended hash function for type %s",
							format_type_be(typid)),
					 errdetail("approx_count_distinct hashes its input with the type's hash operator class."),
					 errhint("Cast the input to a type with a hash operator class, such as text.")));
		cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(HllHashCache));
		cache->typid = typid;
		fmgr_info_cxt(tc->hash_extended_proc, &cache->hashfn, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = cache;
	}

	/* deterministic collations hash alike; text needs one */
	if (!OidIsValid(collation))
		collation = DEFAULT_COLLATION_OID;
	hash = DatumGetUInt64(FunctionCall2Coll(&cache->hashfn, collation,
											PG_GETARG_DATUM(1), Int64GetDatum(0)));

	oldcxt = MemoryContextSwitchTo(aggcxt);
	hll_add_hash(h, hash);
	MemoryContextSwitchTo(oldcxt);
	PG_RETURN_POINTER(h);
}

/* Combine: register-wise maximum, into a copy when the first is NULL */
Datum
mvinc_hll_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = hll_aggcontext(fcinfo);
	MemoryContext oldcxt;
	HllState   *a = PG_ARGISNULL(0) ? NULL : (HllState *) PG_GETARG_POINTER(0);
	HllState   *b = PG_ARGISNULL(1) ? NULL : (HllState *) PG_GETARG_POINTER(1);
	int			i;

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}

	oldcxt = MemoryContextSwitchTo(aggcxt);
	if (a == NULL)
		a = hll_new();
	if (b->dense)
	{
		if (!a->dense)
			hll_densify(a);
		for (i = 0; i < HLL_M; i++)
			if (b->regs[i] > a->regs[i])
				a->regs[i] = b->regs[i];
	}
	else
	{
		for (i = 0; i < b->nsparse; i++)
			hll_set(a, b->sparse[i] >> 8, b->sparse[i] & 0xff);
	}
	MemoryContextSwitchTo(oldcxt);
	PG_RETURN_POINTER(a);
}

/* Serialize a sketch to bytea */
Datum
mvinc_hll_serialize(PG_FUNCTION_ARGS)
{
	HllState   *h = (HllState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	int			i;

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, HLL_VERSION);
	pq_sendbyte(&buf, HLL_P);
	pq_sendbyte(&buf, h->dense ? 1 : 0);
	if (h->dense)
		pq_sendbytes(&buf, (char *) h->regs, HLL_M);
	else
	{
		pq_sendint16(&buf, (uint16) h->nsparse);
		for (i = 0; i < h->nsparse; i++)
		{
			pq_sendint16(&buf, (uint16) (h->sparse[i] >> 8));
			pq_sendbyte(&buf, (uint8) (h->sparse[i] & 0xff));
		}
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Report a malformed serialized sketch */
static void
hll_bad_state(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid approx_count_distinct state"),
			 errdetail_internal("%s", why)));
}

/* Deserialize a sketch, in the current memory context (as nodeAgg expects) */
Datum
mvinc_hll_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	HllState   *h;
	int			layout;
	int			i;

	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < 3)
		hll_bad_state("The state is too short.");
	if (pq_getmsgbyte(&buf) != HLL_VERSION)
		hll_bad_state("Unknown format version.");
	if (pq_getmsgbyte(&buf) != HLL_P)
		hll_bad_state("Unknown precision.");
	layout = pq_getmsgbyte(&buf);

	h = hll_new();
	if (layout == 1)
	{
		if (buf.len - buf.cursor != HLL_M)
			hll_bad_state("Wrong number of dense registers.");
		h->regs = palloc(HLL_M);
		pq_copymsgbytes(&buf, (char *) h->regs, HLL_M);
		h->dense = true;
		for (i = 0; i < HLL_M; i++)
			if (h->regs[i] > HLL_Q + 1)
				hll_bad_state("A register value is out of range.");
	}
	else if (layout == 0)
	{
		int			n;
		uint32		prev = 0;

		if (buf.len - buf.cursor < 2)
			hll_bad_state("The state is too short.");
		n = pq_getmsgint(&buf, 2);
		if (n > SPARSE_MAX || buf.len - buf.cursor != n * 3)
			hll_bad_state("Wrong number of sparse entries.");
		h->cap = Max(n, 16);
		h->sparse = palloc(h->cap * sizeof(uint32));
		for (i = 0; i < n; i++)
		{
			uint32		idx = pq_getmsgint(&buf, 2);
			uint8		rank = pq_getmsgbyte(&buf);

			if (idx >= HLL_M || rank == 0 || rank > HLL_Q + 1 ||
				(i > 0 && idx <= prev))
				hll_bad_state("A sparse entry is out of range or order.");
			h->sparse[i] = (idx << 8) | rank;
			prev = idx;
		}
		h->nsparse = n;
	}
	else
		hll_bad_state("Unknown layout.");
	PG_RETURN_POINTER(h);
}

/* Ertl's sigma function (small-range part of the estimator) */
static double
hll_sigma(double x)
{
	double		y = 1.0;
	double		z = x;
	double		zprev;

	if (x == 1.0)
		return INFINITY;
	do
	{
		x = x * x;
		zprev = z;
		z += x * y;
		y += y;
	} while (z != zprev);
	return z;
}

/* Ertl's tau function (large-range part of the estimator) */
static double
hll_tau(double x)
{
	double		y = 1.0;
	double		z = 1.0 - x;
	double		zprev;

	if (x == 0.0 || x == 1.0)
		return 0.0;
	do
	{
		x = sqrt(x);
		zprev = z;
		y *= 0.5;
		z -= pow(1.0 - x, 2) * y;
	} while (z != zprev);
	return z / 3.0;
}

/* The estimated number of distinct values */
static int64
hll_estimate(HllState *h)
{
	int			c[HLL_Q + 2] = {0};
	double		m = HLL_M;
	double		z;
	int			k;
	int			i;

	if (h == NULL)
		return 0;
	if (h->dense)
		for (i = 0; i < HLL_M; i++)
			c[h->regs[i]]++;
	else
	{
		c[0] = HLL_M - h->nsparse;
		for (i = 0; i < h->nsparse; i++)
			c[h->sparse[i] & 0xff]++;
	}
	if (c[0] == HLL_M)
		return 0;

	z = m * hll_tau(1.0 - c[HLL_Q + 1] / m);
	for (k = HLL_Q; k >= 1; k--)
		z = 0.5 * (z + c[k]);
	z += m * hll_sigma(c[0] / m);
	return (int64) llround((m * m / (2.0 * log(2.0))) / z);
}

/* Final: the estimate (0 over no rows) */
Datum
mvinc_hll_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(hll_estimate(PG_ARGISNULL(0) ? NULL : (HllState *) PG_GETARG_POINTER(0)));
}
