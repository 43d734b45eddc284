/*-------------------------------------------------------------------------
 * colfile_encode.c
 *	  Random-access encodings of a mini-block, so that an index fetch
 *	  decodes one value without decompressing the block:
 *
 *	  BLOCK_FOR      integers (any by-value type of 1, 2, 4 or 8 bytes):
 *	                 value of row r = base + slope * r + mult * residual[r],
 *	                 the residuals bit-packed (frame of reference on a line:
 *	                 sequences and constants take no bits at all; mult is
 *	                 the residuals' greatest common divisor)
 *	  BLOCK_DECIMAL  float4/float8 whose every value is k / 10^scale exactly
 *	                 (bit for bit, checked when encoding): k as BLOCK_FOR
 *	  BLOCK_NUMERIC  numeric of one display scale whose every value is
 *	                 k / 10^scale with k in int64, rebuilt byte-identical
 *	                 (checked when encoding): k as BLOCK_FOR
 *	  BLOCK_DICT     distinct values (compared byte for byte, never by
 *	                 collation) and bit-packed codes; varlenas that are all
 *	                 lower-case hex strings of one even length are packed
 *	                 two characters to a byte
 *
 * An encoded block is [null bitmap, as in a plain block][header][data].
 * Every row has a slot, NULL rows included (their slot holds 0), so row r
 * is slot r. Packed bits are little-endian and followed by 8 spare bytes,
 * so a slot is read with one unaligned 8-byte load (plus one byte).
 * colfile_compress.c decides, per mini-block, between an encoding stored
 * as it is, zstd over it, and zstd over the plain layout (see
 * mvinc.colfile_zstd_min_gain); the choice is in the block's descriptor.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "colfile/colfile.h"

#define DECIMAL_MAX_SCALE	10
#define SCALED_NUMERIC_MAX_SCALE	18
#define PACK_SPARE			8

/* Header of BLOCK_FOR, BLOCK_DECIMAL and BLOCK_NUMERIC */
typedef struct ForHeader
{
	int64		base;
	int64		slope;
	uint64		mult;			/* common factor of the residuals (0: 1) */
	uint8		bits;
	uint8		scale;
	uint8		pad[6];
} ForHeader;

/* Header of BLOCK_CODES: codes into the chunk's dictionary */
typedef struct CodesHeader
{
	uint8		bits;
	uint8		pad[7];
} CodesHeader;

/* Header of BLOCK_DICT, and of a chunk dictionary */
typedef struct DictHeader
{
	uint32		ndict;
	uint8		bits;
	uint8		hex;			/* entries are packed hex strings */
	uint16		pad;
	uint32		hexlen;			/* characters per entry when hex */
	uint32		arealen;		/* bytes of the value area when not hex */
} DictHeader;

static const double pow10_tab[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10
};

/* Bytes of n packed values of 'bits' bits, with the spare bytes */
static inline Size
packed_size(int n, int bits)
{
	return ((Size) n * bits + 7) / 8 + PACK_SPARE;
}

/* Read slot r of 'bits' bits */
static inline uint64
get_packed(const char *p, int r, int bits)
{
	uint64		bit = (uint64) r * bits;
	const unsigned char *b = (const unsigned char *) p + bit / 8;
	int			sh = bit % 8;
	uint64		w;

	if (bits == 0)
		return 0;
	memcpy(&w, b, sizeof(uint64));
#ifdef WORDS_BIGENDIAN
	w = pg_bswap64(w);
#endif
	w >>= sh;
	if (bits + sh > 64)
		w |= (uint64) b[8] << (64 - sh);
	if (bits < 64)
		w &= (((uint64) 1) << bits) - 1;
	return w;
}

/* Append n values of 'bits' bits each, then the spare bytes */
static void
put_packed(StringInfo out, const uint64 *v, int n, int bits)
{
	Size		len = packed_size(n, bits);
	unsigned char *dst;
	uint64		acc = 0;
	int			nacc = 0;
	int			r;

	enlargeStringInfo(out, len);
	dst = (unsigned char *) out->data + out->len;
	memset(dst, 0, len);
	for (r = 0; bits > 0 && r < n; r++)
	{
		uint64		x = v[r];
		int			left = bits;

		while (left > 0)
		{
			int			take = Min(left, 64 - nacc);

			acc |= (take == 64 ? x : (x & ((((uint64) 1) << take) - 1))) << nacc;
			nacc += take;
			left -= take;
			x = (take == 64) ? 0 : x >> take;
			while (nacc >= 8)
			{
				*dst++ = (unsigned char) (acc & 0xFF);
				acc >>= 8;
				nacc -= 8;
			}
		}
	}
	if (nacc > 0)
		*dst = (unsigned char) (acc & 0xFF);
	out->len += len;
	out->data[out->len] = '\0';
}

/* Bits needed for values 0..range */
static inline int
bits_for(uint64 range)
{
	return range == 0 ? 0 : pg_leftmost_one_pos64(range) + 1;
}

/* Pad out->len to a multiple of MAXIMUM_ALIGNOF with zero bytes */
static void
pad_maxalign(StringInfo out)
{
	while (out->len % MAXIMUM_ALIGNOF)
		appendStringInfoChar(out, '\0');
}

/* Null bitmap prefix, as in a plain block */
static void
put_nullmap(StringInfo out, const bool *isnull, int n, bool hasnulls)
{
	Size		len;
	int			r;

	if (!hasnulls)
		return;
	len = MAXALIGN((n + 7) / 8);
	enlargeStringInfo(out, len);
	memset(out->data + out->len, 0, len);
	for (r = 0; r < n; r++)
		if (isnull[r])
			out->data[out->len + r / 8] |= (1 << (r % 8));
	out->len += len;
	out->data[out->len] = '\0';
}

/* ---- integers on a line: BLOCK_FOR and the scaled kinds ---- */

/*
 * Append a ForHeader and the residuals of k[] (NULL slots ignored). The
 * line through the first and last non-null values is used when it needs
 * fewer bits than a flat base; all arithmetic that could overflow is
 * checked, and decoding works modulo 2^64, which is exact for int64 values.
 */
static void
for_encode(const int64 *k, const bool *isnull, int n, int scale, StringInfo out)
{
	ForHeader	h;
	uint64	   *resid = palloc(sizeof(uint64) * Max(n, 1));
	int			first = -1,
				last = -1;
	int64		mn = 0,
				mx = 0;
	int64		slope = 0;
	uint64		mult = 0;
	int			r;
	int			bits;

	for (r = 0; r < n; r++)
	{
		if (isnull[r])
			continue;
		if (first < 0)
		{
			first = r;
			mn = mx = k[r];
		}
		last = r;
		mn = Min(mn, k[r]);
		mx = Max(mx, k[r]);
	}
	bits = bits_for((uint64) mx - (uint64) mn);

	/* try the line through the first and last values */
	if (bits > 0 && last > first)
	{
		int64		diff,
					s,
					dmn = 0,
					dmx = 0;
		bool		ok = !pg_sub_s64_overflow(k[last], k[first], &diff);

		s = ok ? diff / (last - first) : 0;
		for (r = first; ok && r < n; r++)
		{
			int64		pred,
						d;

			if (isnull[r])
				continue;
			if (pg_mul_s64_overflow(s, (int64) r, &pred) ||
				pg_sub_s64_overflow(k[r], pred, &d))
				ok = false;
			else if (r == first)
				dmn = dmx = d;
			else
			{
				dmn = Min(dmn, d);
				dmx = Max(dmx, d);
			}
		}
		if (ok && s != 0 && bits_for((uint64) dmx - (uint64) dmn) < bits)
		{
			slope = s;
			mn = dmn;
			bits = bits_for((uint64) dmx - (uint64) dmn);
		}
	}

	for (r = 0; r < n; r++)
		resid[r] = isnull[r] ? 0 :
			(uint64) k[r] - (uint64) slope * (uint64) r - (uint64) mn;

	/* a common factor (quarter steps, prices in cents): divide it out */
	if (bits > 1)
	{
		uint64		g = 0,
					mxr = 0;

		for (r = 0; r < n && g != 1; r++)
		{
			uint64		a = resid[r],
						b = g;

			while (b != 0)
			{
				uint64		t = a % b;

				a = b;
				b = t;
			}
			g = a;
		}
		if (g > 1)
		{
			for (r = 0; r < n; r++)
			{
				resid[r] /= g;
				mxr = Max(mxr, resid[r]);
			}
			bits = bits_for(mxr);
			mult = g;
		}
	}

	memset(&h, 0, sizeof(h));
	h.base = mn;
	h.slope = slope;
	h.mult = mult;
	h.bits = bits;
	h.scale = scale;
	appendBinaryStringInfo(out, (char *) &h, sizeof(h));
	put_packed(out, resid, n, bits);
	pfree(resid);
}

/* Integer of slot r of a FOR block */
static inline int64
for_value(const ForHeader *h, const char *packed, int r)
{
	uint64		resid = get_packed(packed, r, h->bits);

	if (h->mult > 1)
		resid *= h->mult;
	return (int64) ((uint64) h->base + (uint64) h->slope * (uint64) r + resid);
}

/* A by-value Datum as the signed integer of its stored bytes */
static inline int64
byval_to_int(Datum v, int len)
{
	switch (len)
	{
		case 1:
			return (int8) DatumGetChar(v);
		case 2:
			return DatumGetInt16(v);
		case 4:
			return DatumGetInt32(v);
		default:
			return DatumGetInt64(v);
	}
}

/* The Datum a plain block would give for stored integer k */
static inline Datum
int_to_byval(int64 k, int len)
{
	switch (len)
	{
		case 1:
			return CharGetDatum((char) (int8) k);	/* as fetch_att() */
		case 2:
			return Int16GetDatum((int16) k);
		case 4:
			return Int32GetDatum((int32) k);
		default:
			return Int64GetDatum(k);
	}
}

/* The float8 a decimal block gives for k and scale */
static inline float8
decimal_float8(int64 k, int scale)
{
	return (float8) k / pow10_tab[scale];
}

/* The float4 a decimal block gives for k and scale */
static inline float4
decimal_float4(int64 k, int scale)
{
	return (float4) ((float8) k / pow10_tab[scale]);
}

/* Does v equal k / 10^scale bit for bit? Sets *k. */
static bool
decimal_fits(Datum v, bool is4, int scale, int64 *k)
{
	float8		x = is4 ? (float8) DatumGetFloat4(v) : DatumGetFloat8(v);
	float8		y = x * pow10_tab[scale];

	if (!(fabs(y) < 9007199254740992.0))	/* 2^53; false for NaN */
		return false;
	*k = (int64) rint(y);
	if (is4)
	{
		float4		a = DatumGetFloat4(v),
					b = decimal_float4(*k, scale);

		return memcmp(&a, &b, sizeof(float4)) == 0;
	}
	else
	{
		float8		a = DatumGetFloat8(v),
					b = decimal_float8(*k, scale);

		return memcmp(&a, &b, sizeof(float8)) == 0;
	}
}

/* float4/float8 values that are all decimals of at most DECIMAL_MAX_SCALE digits */
static bool
decimal_encode(Form_pg_attribute att, const Datum *values, const bool *isnull,
			   int n, StringInfo out)
{
	bool		is4 = (att->attlen == 4);
	int64	   *k = palloc0(sizeof(int64) * Max(n, 1));
	int			scale = 0;
	int			r;
	bool		ok = true;

	/* the smallest scale at which every value comes back exactly */
	for (r = 0; r < n && ok; r++)
	{
		if (isnull[r])
			continue;
		while (!decimal_fits(values[r], is4, scale, &k[r]))
		{
			if (++scale > DECIMAL_MAX_SCALE)
			{
				ok = false;
				break;
			}
		}
	}
	/* a larger scale keeps earlier values exact; checked all the same */
	for (r = 0; r < n && ok; r++)
		if (!isnull[r] && !decimal_fits(values[r], is4, scale, &k[r]))
			ok = false;
	if (ok)
		for_encode(k, isnull, n, scale, out);
	pfree(k);
	return ok;
}

/* The numeric a numeric block gives for k and scale (palloc'd) */
static inline Datum
numeric_from_scaled(int64 k, int scale)
{
	return NumericGetDatum(int64_div_fast_to_numeric(k, scale));
}

/*
 * Numerics that print as [-]digits[.digits] with one number of fraction
 * digits, fit int64 once scaled, and are rebuilt byte for byte.
 */
static bool
numeric_encode(const Datum *values, const bool *isnull, int n, StringInfo out)
{
	int64	   *k = palloc0(sizeof(int64) * Max(n, 1));
	int			scale = -1;
	int			r;
	bool		ok = true;

	for (r = 0; r < n && ok; r++)
	{
		char	   *s,
				   *p;
		int			sc = 0;
		bool		neg = false,
					frac = false;
		int64		acc = 0;
		Datum		back;

		if (isnull[r])
			continue;
		s = DatumGetCString(DirectFunctionCall1(numeric_out, values[r]));
		p = s;
		if (*p == '-')
		{
			neg = true;
			p++;
		}
		if (!isdigit((unsigned char) *p))
			ok = false;
		for (; ok && *p; p++)
		{
			if (*p == '.' && !frac)
			{
				frac = true;
				continue;
			}
			if (!isdigit((unsigned char) *p) ||
				pg_mul_s64_overflow(acc, 10, &acc) ||
				(neg ? pg_sub_s64_overflow(acc, *p - '0', &acc) :
				 pg_add_s64_overflow(acc, *p - '0', &acc)))
				ok = false;
			else if (frac)
				sc++;
		}
		pfree(s);
		if (!ok || sc > SCALED_NUMERIC_MAX_SCALE || (scale >= 0 && sc != scale))
		{
			ok = false;
			break;
		}
		scale = sc;
		k[r] = acc;
		back = numeric_from_scaled(acc, sc);
		if (VARSIZE_ANY_EXHDR(DatumGetPointer(back)) !=
			VARSIZE_ANY_EXHDR(DatumGetPointer(values[r])) ||
			memcmp(VARDATA_ANY(DatumGetPointer(back)),
				   VARDATA_ANY(DatumGetPointer(values[r])),
				   VARSIZE_ANY_EXHDR(DatumGetPointer(back))) != 0)
			ok = false;
		pfree(DatumGetPointer(back));
	}
	if (ok)
		for_encode(k, isnull, n, Max(scale, 0), out);
	pfree(k);
	return ok;
}

/* ---- dictionaries ---- */

/* Value of each lower-case hex digit, -1 for any other byte */
static const int8 hex_value[256] = {
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1
};

/* Are all len bytes at p lower-case hex digits? */
static inline bool
is_lower_hex(const char *p, Size len)
{
	int			bad = 0;
	Size		i;

	for (i = 0; i < len; i++)
		bad |= hex_value[(unsigned char) p[i]];
	return bad >= 0;
}

/* Value of a lower-case hex digit */
static inline int
hexval(char c)
{
	return hex_value[(unsigned char) c];
}

static const char hexdigits[] = "0123456789abcdef";

/*
 * Dictionary encoding: worthwhile when there are few distinct values, or
 * when they pack as hex. Values are told apart by their stored bytes (the
 * attlen bytes of a by-value type, a varlena's data), never by a collation
 * or an equality operator. Returns false when it would not take fewer than
 * limit bytes, or would have more than maxdict entries. With codes_out
 * (a chunk dictionary), only the dictionary is written, and the codes
 * (palloc'd) and their bit width are returned instead; limit then counts
 * the packed codes of the whole chunk as well.
 */
static bool
dict_encode(Form_pg_attribute att, Datum *values, const bool *isnull, int n,
			Size limit, StringInfo out, int maxdict, uint64 **codes_out,
			int *bits_out)
{
	int			tabsize = 2;
	int		   *tab;
	int		   *dict = palloc(sizeof(int) * Max(n, 1));	/* row of each entry */
	uint64	   *codes = palloc0(sizeof(uint64) * Max(n, 1));
	const char **ptr = palloc(sizeof(char *) * Max(n, 1));
	Size	   *lens = palloc(sizeof(Size) * Max(n, 1));
	Datum	   *bv = palloc(sizeof(Datum) * Max(n, 1));
	uint32	   *hashes = palloc(sizeof(uint32) * Max(n, 1));	/* of each entry */
	Size		fixed = att->attlen > 0 ? att->attlen : 0;
	int			ndict = 0;
	int			r;
	bool		hex = (att->attlen == -1);
	Size		hexlen = 0;
	Size		area = 0;
	Size		total;
	DictHeader	h;
	int			bits;
	bool		done = false;

	while (tabsize < 2 * n)
		tabsize *= 2;
	tab = palloc(sizeof(int) * tabsize);
	memset(tab, -1, sizeof(int) * tabsize);

	for (r = 0; r < n; r++)
	{
		uint32		hv;
		int			i;

		if (isnull[r])
			continue;
		if (att->attbyval)
		{
			bv[r] = 0;
			store_att_byval(&bv[r], values[r], att->attlen);
			ptr[r] = (const char *) &bv[r];
			lens[r] = att->attlen;
		}
		else if (att->attlen > 0)
		{
			ptr[r] = DatumGetPointer(values[r]);
			lens[r] = att->attlen;
		}
		else
		{
			ptr[r] = VARDATA_ANY(DatumGetPointer(values[r]));
			lens[r] = VARSIZE_ANY_EXHDR(DatumGetPointer(values[r]));
		}
		hv = hash_bytes((const unsigned char *) ptr[r], (int) lens[r]);
		for (i = hv & (tabsize - 1);; i = (i + 1) & (tabsize - 1))
		{
			int			e = tab[i];

			if (e < 0)
			{
				if (ndict >= maxdict)
					goto out;
				tab[i] = ndict;
				hashes[ndict] = hv;
				dict[ndict] = r;
				codes[r] = ndict++;
				if (hex)
				{
					if (ndict == 1)
						hexlen = lens[r];
					if (lens[r] != hexlen || hexlen < 2 || hexlen % 2 != 0 ||
						!is_lower_hex(ptr[r], lens[r]))
						hex = false;
				}
				area = att_align_nominal(area, att->attalign);
				area += fixed ? fixed : lens[r] + VARHDRSZ;
				break;
			}
			if (hashes[e] == hv && lens[dict[e]] == lens[r] &&
				memcmp(ptr[dict[e]], ptr[r], lens[r]) == 0)
			{
				codes[r] = e;
				break;
			}
		}
	}
	bits = bits_for(ndict > 0 ? ndict - 1 : 0);
	if (hex && ndict > 0)
		total = sizeof(DictHeader) + MAXALIGN(ndict * (hexlen / 2)) + packed_size(n, bits);
	else
	{
		hex = false;
		total = sizeof(DictHeader) + MAXALIGN(sizeof(uint32) * (ndict + 1)) +
			MAXALIGN(area) + packed_size(n, bits);
	}
	if (area > PG_UINT32_MAX / 2)
		goto out;				/* offsets are uint32 */
	if (codes_out)
	{
		/* every mini-block: its header and codes (and a null bitmap, not counted) */
		total += (Size) ((n + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK) *
			(sizeof(CodesHeader) + PACK_SPARE);
	}
	if (total < limit)
	{
		int			i;

		memset(&h, 0, sizeof(h));
		h.ndict = ndict;
		h.bits = bits;
		h.hex = hex;
		h.hexlen = hex ? hexlen : 0;
		h.arealen = hex ? 0 : area;
		appendBinaryStringInfo(out, (char *) &h, sizeof(h));
		if (hex)
		{
			char	   *dst;

			enlargeStringInfo(out, ndict * (hexlen / 2));
			dst = out->data + out->len;
			for (i = 0; i < ndict; i++)
			{
				const char *b = ptr[dict[i]];
				Size		j;

				for (j = 0; j < hexlen; j += 2)
					*dst++ = (char) (hexval(b[j]) << 4 | hexval(b[j + 1]));
			}
			out->len += ndict * (hexlen / 2);
			out->data[out->len] = '\0';
		}
		else
		{
			uint32		off = 0;
			char	   *areabuf;

			for (i = 0; i < ndict; i++)
			{
				off = att_align_nominal(off, att->attalign);
				appendBinaryStringInfo(out, (char *) &off, sizeof(uint32));
				off += fixed ? fixed : lens[dict[i]] + VARHDRSZ;
			}
			appendBinaryStringInfo(out, (char *) &off, sizeof(uint32));
			pad_maxalign(out);
			enlargeStringInfo(out, MAXALIGN(area));
			areabuf = out->data + out->len;
			memset(areabuf, 0, MAXALIGN(area));
			off = 0;
			for (i = 0; i < ndict; i++)
			{
				int			e = dict[i];

				off = att_align_nominal(off, att->attalign);
				if (fixed)
				{
					memcpy(areabuf + off, ptr[e], fixed);
					off += fixed;
				}
				else
				{
					SET_VARSIZE(areabuf + off, lens[e] + VARHDRSZ);
					memcpy(areabuf + off + VARHDRSZ, ptr[e], lens[e]);
					off += lens[e] + VARHDRSZ;
				}
			}
			out->len += MAXALIGN(area);
			out->data[out->len] = '\0';
		}
		pad_maxalign(out);
		if (codes_out)
		{
			*codes_out = codes;
			*bits_out = bits;
			codes = NULL;
		}
		else
			put_packed(out, codes, n, bits);
		done = true;
	}
out:
	pfree(tab);
	pfree(dict);
	if (codes)
		pfree(codes);
	pfree(ptr);
	pfree(lens);
	pfree(bv);
	pfree(hashes);
	return done;
}

/*
 * Encode the n rows of a mini-block with the smallest random-access
 * encoding smaller than plain_len bytes, into out (reset first). Returns
 * the encoding, or BLOCK_PLAIN when none applies (out is then empty).
 */
int
ColfileEncodeBlock(Form_pg_attribute att, Datum *values, bool *isnull, int n,
				   bool hasnulls, Size plain_len, StringInfo out)
{
	StringInfoData alt;
	int			best = BLOCK_PLAIN;
	Size		best_len = plain_len;
	Oid			basetype;
	int			r;

	resetStringInfo(out);
	if (att->attlen == -2)
		return BLOCK_PLAIN;
	initStringInfo(&alt);

	/* the scaled-integer kinds */
	put_nullmap(&alt, isnull, n, hasnulls);
	basetype = getBaseType(att->atttypid);
	if (att->attbyval && (basetype == FLOAT8OID || basetype == FLOAT4OID))
	{
		if (decimal_encode(att, values, isnull, n, &alt) && alt.len < best_len)
			best = BLOCK_DECIMAL;
	}
	else if (att->attbyval && (att->attlen == 1 || att->attlen == 2 ||
							   att->attlen == 4 || att->attlen == 8))
	{
		int64	   *k = palloc(sizeof(int64) * Max(n, 1));

		for (r = 0; r < n; r++)
			k[r] = isnull[r] ? 0 : byval_to_int(values[r], att->attlen);
		for_encode(k, isnull, n, 0, &alt);
		pfree(k);
		if (alt.len < best_len)
			best = BLOCK_FOR;
	}
	else if (basetype == NUMERICOID)
	{
		if (numeric_encode(values, isnull, n, &alt) && alt.len < best_len)
			best = BLOCK_NUMERIC;
	}
	if (best != BLOCK_PLAIN)
	{
		appendBinaryStringInfo(out, alt.data, alt.len);
		best_len = alt.len;
	}

	/*
	 * A dictionary, when smaller still. Not for by-value blocks that a
	 * frame of reference already packs in 8 bits or fewer: a dictionary
	 * needs about as many bits per code, plus its entries.
	 */
	if (best != BLOCK_PLAIN && att->attbyval)
	{
		ForHeader	h;

		memcpy(&h, out->data + (hasnulls ? MAXALIGN((n + 7) / 8) : 0), sizeof(h));
		if (h.bits <= 8)
		{
			pfree(alt.data);
			return best;
		}
	}
	resetStringInfo(&alt);
	put_nullmap(&alt, isnull, n, hasnulls);
	if (dict_encode(att, values, isnull, n, best_len - alt.len, &alt, n, NULL, NULL))
	{
		resetStringInfo(out);
		appendBinaryStringInfo(out, alt.data, alt.len);
		best = BLOCK_DICT;
	}
	pfree(alt.data);
	return best;
}

/* ---- decoding ---- */

/* Locate the header after the null bitmap; false when the block is too short */
static inline const char *
enc_header(const char *raw, uint32 raw_len, int n, bool hasnulls, Size hlen)
{
	Size		off = hasnulls ? MAXALIGN((n + 7) / 8) : 0;

	if (off + hlen > raw_len)
		return NULL;
	return raw + off;
}

/* Entry i of a uint32 array at any alignment */
static inline uint32
get_u32(const char *a, uint32 i)
{
	uint32		v;

	memcpy(&v, a + sizeof(uint32) * i, sizeof(uint32));
	return v;
}

/* The parts of a dictionary block, or of a chunk dictionary */
typedef struct DictLayout
{
	DictHeader	h;
	const char *offsets;		/* uint32 [ndict + 1], when !hex */
	const char *entries;		/* value area, or packed hex */
	const char *codes;
} DictLayout;

/* Find the parts of a BLOCK_DICT block of n rows; false when malformed */
static bool
dict_layout(const char *raw, uint32 raw_len, int n, bool hasnulls, DictLayout *l)
{
	const char *p = enc_header(raw, raw_len, n, hasnulls, sizeof(DictHeader));
	Size		need;

	if (p == NULL)
		return false;
	memcpy(&l->h, p, sizeof(DictHeader));
	p += sizeof(DictHeader);
	if (l->h.bits > 32 || l->h.ndict > (uint32) n)
		return false;
	if (l->h.hex)
	{
		l->offsets = NULL;
		l->entries = p;
		p += MAXALIGN((Size) l->h.ndict * (l->h.hexlen / 2));
	}
	else
	{
		l->offsets = p;
		p += MAXALIGN(sizeof(uint32) * (l->h.ndict + 1));
		l->entries = p;
		p += MAXALIGN(l->h.arealen);
	}
	l->codes = p;
	need = (p - raw) + packed_size(n, l->h.bits);
	if (need > raw_len)
		return false;
	if (l->offsets && get_u32(l->offsets, l->h.ndict) > l->h.arealen)
		return false;
	return true;
}

/*
 * Value of dictionary entry i. With copy, by-reference values are
 * palloc'd and the block may lie at any alignment (read in place from a
 * page); without, they point into the block, which must be MAXALIGNed.
 */
static bool
dict_entry(Form_pg_attribute att, const DictLayout *l, uint32 i, bool copy,
		   Datum *value)
{
	if (i >= l->h.ndict)
		return false;
	if (l->h.hex)
	{
		Size		len = l->h.hexlen;
		char	   *v = palloc(len + VARHDRSZ);
		const unsigned char *src = (const unsigned char *) l->entries + (Size) i * (len / 2);
		Size		j;

		SET_VARSIZE(v, len + VARHDRSZ);
		for (j = 0; j < len / 2; j++)
		{
			v[VARHDRSZ + 2 * j] = hexdigits[src[j] >> 4];
			v[VARHDRSZ + 2 * j + 1] = hexdigits[src[j] & 0xF];
		}
		*value = PointerGetDatum(v);
		return true;
	}
	else
	{
		uint32		off = get_u32(l->offsets, i);
		uint32		end = get_u32(l->offsets, i + 1);
		const char *p = l->entries + off;
		uint32		size;

		if (off > end || end > l->h.arealen)
			return false;
		if (att->attlen > 0)
			size = att->attlen;
		else
		{
			if (end - off < VARHDRSZ)
				return false;
			memcpy(&size, p, sizeof(uint32));	/* a 4-byte varlena header */
			size = VARSIZE(&size);
		}
		if (size > end - off)
			return false;
		if (att->attbyval)
		{
			Datum		tmp = 0;

			memcpy(&tmp, p, att->attlen);
			*value = fetch_att(&tmp, true, att->attlen);
		}
		else if (copy)
		{
			char	   *v = palloc(size);

			memcpy(v, p, size);
			*value = PointerGetDatum(v);
		}
		else
			*value = PointerGetDatum(p);
		return true;
	}
}

/*
 * The header and packed values of a for, decimal or numeric block of n
 * rows, checked against the block's length and the column's type; NULL
 * when malformed.
 */
static const char *
for_layout(Form_pg_attribute att, int encoding, const char *raw,
		   uint32 raw_len, int n, bool hasnulls, ForHeader *h)
{
	const char *p = enc_header(raw, raw_len, n, hasnulls, sizeof(ForHeader));
	const char *packed;

	if (p == NULL)
		return NULL;
	memcpy(h, p, sizeof(ForHeader));
	packed = p + sizeof(ForHeader);
	if (h->bits > 64 || (packed - raw) + packed_size(n, h->bits) > raw_len)
		return NULL;
	switch (encoding)
	{
		case BLOCK_FOR:
			return att->attbyval ? packed : NULL;
		case BLOCK_DECIMAL:
			return h->scale <= DECIMAL_MAX_SCALE && att->attbyval ? packed : NULL;
		default:
			return h->scale <= SCALED_NUMERIC_MAX_SCALE && att->attlen == -1 ? packed : NULL;
	}
}

/*
 * Decode all n rows of an encoded block. By-reference values point into
 * raw or are allocated in the current memory context. False when the
 * block is malformed.
 */
bool
ColfileDecodeEncoded(Form_pg_attribute att, int encoding, const char *raw,
					 uint32 raw_len, int n, bool hasnulls,
					 Datum *values, bool *isnull)
{
	int			r;

	for (r = 0; r < n; r++)
		isnull[r] = hasnulls && (raw[r / 8] & (1 << (r % 8)));
	if (hasnulls && MAXALIGN((n + 7) / 8) > raw_len)
		return false;

	switch (encoding)
	{
		case BLOCK_FOR:
		case BLOCK_DECIMAL:
		case BLOCK_NUMERIC:
			{
				ForHeader	h;
				const char *packed = for_layout(att, encoding, raw, raw_len, n,
												hasnulls, &h);

				if (packed == NULL)
					return false;
				if (encoding == BLOCK_FOR)
				{
					if (att->attlen == 8)
						for (r = 0; r < n; r++)
							values[r] = Int64GetDatum(for_value(&h, packed, r));
					else
						for (r = 0; r < n; r++)
							values[r] = int_to_byval(for_value(&h, packed, r), att->attlen);
				}
				else if (encoding == BLOCK_DECIMAL)
				{
					if (att->attlen == 4)
						for (r = 0; r < n; r++)
							values[r] = Float4GetDatum(decimal_float4(for_value(&h, packed, r), h.scale));
					else
						for (r = 0; r < n; r++)
							values[r] = Float8GetDatum(decimal_float8(for_value(&h, packed, r), h.scale));
				}
				else
				{
					for (r = 0; r < n; r++)
						values[r] = isnull[r] ? (Datum) 0 :
							numeric_from_scaled(for_value(&h, packed, r), h.scale);
				}
				break;
			}
		case BLOCK_DICT:
			{
				DictLayout	l;
				Datum	   *dv;
				uint32		i;

				if (!dict_layout(raw, raw_len, n, hasnulls, &l))
					return false;
				dv = palloc(sizeof(Datum) * Max(l.h.ndict, 1));
				for (i = 0; i < l.h.ndict; i++)
					if (!dict_entry(att, &l, i, false, &dv[i]))
						return false;
				for (r = 0; r < n; r++)
				{
					uint64		c = get_packed(l.codes, r, l.h.bits);

					if (isnull[r])
						values[r] = (Datum) 0;
					else if (c >= l.h.ndict)
						return false;
					else
						values[r] = dv[c];
				}
				pfree(dv);
				break;
			}
		default:
			return false;
	}
	for (r = 0; r < n; r++)
		if (isnull[r])
			values[r] = (Datum) 0;
	return true;
}

/*
 * Decode row r of an encoded block of n rows. A by-reference value is
 * allocated in the current memory context. False when malformed.
 */
bool
ColfileDecodeEncodedValue(Form_pg_attribute att, int encoding, const char *raw,
						  uint32 raw_len, int n, int r, bool hasnulls,
						  Datum *value, bool *isnull)
{
	if (r < 0 || r >= n)
		return false;
	if (hasnulls)
	{
		if (MAXALIGN((n + 7) / 8) > raw_len)
			return false;
		if (raw[r / 8] & (1 << (r % 8)))
		{
			*value = (Datum) 0;
			*isnull = true;
			return true;
		}
	}
	*isnull = false;
	switch (encoding)
	{
		case BLOCK_FOR:
		case BLOCK_DECIMAL:
		case BLOCK_NUMERIC:
			{
				ForHeader	h;
				const char *packed = for_layout(att, encoding, raw, raw_len, n,
												hasnulls, &h);
				int64		k;

				if (packed == NULL)
					return false;
				k = for_value(&h, packed, r);
				if (encoding == BLOCK_FOR)
					*value = int_to_byval(k, att->attlen);
				else if (encoding == BLOCK_DECIMAL)
					*value = att->attlen == 4 ?
						Float4GetDatum(decimal_float4(k, h.scale)) :
						Float8GetDatum(decimal_float8(k, h.scale));
				else
					*value = numeric_from_scaled(k, h.scale);
				return true;
			}
		case BLOCK_DICT:
			{
				DictLayout	l;

				if (!dict_layout(raw, raw_len, n, hasnulls, &l))
					return false;
				return dict_entry(att, &l, (uint32) Min(get_packed(l.codes, r, l.h.bits), PG_UINT32_MAX),
								  true, value);
			}
		default:
			return false;
	}
}

/* ---- chunk dictionaries ---- */

/*
 * A dictionary of all nrows values of a chunk, when it is smaller than
 * limit bytes together with the mini-blocks' codes (a value repeated
 * across mini-blocks is then stored once per row group). Writes the
 * dictionary to dict and returns the codes (palloc'd) and their width.
 * Only by-reference types are tried: by-value ones encode well per block.
 */
bool
ColfileEncodeChunkDict(Form_pg_attribute att, Datum *values, bool *isnull,
					   int nrows, Size limit, StringInfo dict,
					   uint64 **codes, int *bits)
{
	resetStringInfo(dict);
	if (att->attbyval || att->attlen == -2 || nrows < 2 * COLFILE_ROWS_PER_MINIBLOCK)
		return false;
	return dict_encode(att, values, isnull, nrows, limit, dict, nrows / 2,
					   codes, bits);
}

/* A BLOCK_CODES mini-block of n rows: null bitmap, header, packed codes */
void
ColfileEncodeCodes(const uint64 *codes, bool *isnull, int n, bool hasnulls,
				   int bits, StringInfo out)
{
	CodesHeader h;
	uint64	   *v = palloc(sizeof(uint64) * Max(n, 1));
	int			r;

	resetStringInfo(out);
	put_nullmap(out, isnull, n, hasnulls);
	memset(&h, 0, sizeof(h));
	h.bits = bits;
	appendBinaryStringInfo(out, (char *) &h, sizeof(h));
	for (r = 0; r < n; r++)
		v[r] = isnull[r] ? 0 : codes[r];
	put_packed(out, v, n, bits);
	pfree(v);
}

/* The layout of a chunk dictionary of dictlen bytes (no codes follow it) */
static bool
chunk_dict_layout(const char *dict, Size dictlen, DictLayout *l)
{
	const char *p = dict + sizeof(DictHeader);

	if (dictlen < sizeof(DictHeader))
		return false;
	memcpy(&l->h, dict, sizeof(DictHeader));
	if (l->h.bits > 32)
		return false;
	if (l->h.hex)
	{
		l->offsets = NULL;
		l->entries = p;
		p += MAXALIGN((Size) l->h.ndict * (l->h.hexlen / 2));
	}
	else
	{
		l->offsets = p;
		p += MAXALIGN(sizeof(uint32) * ((Size) l->h.ndict + 1));
		l->entries = p;
		p += MAXALIGN(l->h.arealen);
	}
	l->codes = NULL;
	if ((Size) (p - dict) > dictlen)
		return false;
	if (l->offsets && get_u32(l->offsets, l->h.ndict) > l->h.arealen)
		return false;
	return true;
}

/*
 * Decode every entry of a chunk dictionary (MAXALIGNed in memory): the
 * Datums point into dict or are allocated in the current context.
 */
bool
ColfileDecodeChunkDict(Form_pg_attribute att, const char *dict, Size dictlen,
					   Datum **entries, uint32 *nentries)
{
	DictLayout	l;
	uint32		i;

	if (!chunk_dict_layout(dict, dictlen, &l))
		return false;
	*entries = palloc(sizeof(Datum) * Max(l.h.ndict, 1));
	*nentries = l.h.ndict;
	for (i = 0; i < l.h.ndict; i++)
		if (!dict_entry(att, &l, i, false, &(*entries)[i]))
			return false;
	return true;
}

/* Decode the n rows of a BLOCK_CODES mini-block through decoded entries */
bool
ColfileDecodeCodes(const char *raw, uint32 raw_len, int n, bool hasnulls,
				   const Datum *entries, uint32 nentries,
				   Datum *values, bool *isnull)
{
	const char *p = enc_header(raw, raw_len, n, hasnulls, sizeof(CodesHeader));
	CodesHeader h;
	int			r;

	if (p == NULL)
		return false;
	memcpy(&h, p, sizeof(h));
	p += sizeof(h);
	if (h.bits > 32 || (p - raw) + packed_size(n, h.bits) > raw_len)
		return false;
	for (r = 0; r < n; r++)
	{
		uint64		c = get_packed(p, r, h.bits);

		isnull[r] = hasnulls && (raw[r / 8] & (1 << (r % 8)));
		if (isnull[r])
			values[r] = (Datum) 0;
		else if (c >= nentries)
			return false;
		else
			values[r] = entries[c];
	}
	return true;
}

/*
 * Row r of a BLOCK_CODES mini-block: NULL, or the code of its value in
 * the chunk dictionary. False when malformed.
 */
bool
ColfileDecodeCode(const char *raw, uint32 raw_len, int n, int r, bool hasnulls,
				  uint32 *code, bool *isnull)
{
	const char *p = enc_header(raw, raw_len, n, hasnulls, sizeof(CodesHeader));
	CodesHeader h;

	if (p == NULL || r < 0 || r >= n)
		return false;
	*isnull = hasnulls && (raw[r / 8] & (1 << (r % 8)));
	memcpy(&h, p, sizeof(h));
	p += sizeof(h);
	if (h.bits > 32 || (p - raw) + packed_size(n, h.bits) > raw_len)
		return false;
	*code = (uint32) get_packed(p, r, h.bits);
	return true;
}

/*
 * Entry 'code' of a chunk dictionary of dictlen bytes that is not in
 * memory: read(arg, offset, dst, len) copies its bytes. A by-reference
 * value is allocated in the current memory context. False when malformed.
 */
bool
ColfileChunkDictValue(Form_pg_attribute att, ColfileReadFn read, void *arg,
					  Size dictlen, uint32 code, Datum *value)
{
	DictHeader	h;
	DictLayout	l;
	Size		head;
	char		offs[2 * sizeof(uint32)];
	char	   *buf;
	uint32		off,
				end;

	if (dictlen < sizeof(DictHeader))
		return false;
	read(arg, 0, (char *) &h, sizeof(DictHeader));
	if (code >= h.ndict)
		return false;
	l.h = h;
	l.codes = NULL;
	if (h.hex)
	{
		Size		at = sizeof(DictHeader) + (Size) code * (h.hexlen / 2);

		if (at + h.hexlen / 2 > dictlen)
			return false;
		buf = palloc(h.hexlen / 2 + 1);
		read(arg, at, buf, h.hexlen / 2);
		/* an entry list of one, at index 0 */
		l.offsets = NULL;
		l.entries = buf;
		l.h.ndict = 1;
		if (!dict_entry(att, &l, 0, true, value))
			return false;
		pfree(buf);
		return true;
	}
	head = sizeof(DictHeader) + MAXALIGN(sizeof(uint32) * ((Size) h.ndict + 1));
	if (sizeof(DictHeader) + sizeof(uint32) * ((Size) code + 2) > dictlen)
		return false;
	read(arg, sizeof(DictHeader) + sizeof(uint32) * code, offs, sizeof(offs));
	off = get_u32(offs, 0);
	end = get_u32(offs, 1);
	if (off > end || end > h.arealen || head + end > dictlen)
		return false;
	buf = palloc(end - off + 1);
	read(arg, head + off, buf, end - off);
	/* the entry as a one-entry dictionary: offsets 0 and its length */
	{
		char		one[2 * sizeof(uint32)];
		uint32		zero = 0,
					len = end - off;

		memcpy(one, &zero, sizeof(uint32));
		memcpy(one + sizeof(uint32), &len, sizeof(uint32));
		l.offsets = one;
		l.entries = buf;
		l.h.ndict = 1;
		l.h.arealen = len;
		if (!dict_entry(att, &l, 0, true, value))
			return false;
	}
	pfree(buf);
	return true;
}

/* Name of an encoding, for colfile_block_stats */
const char *
ColfileEncodingName(int encoding)
{
	switch (encoding)
	{
		case BLOCK_PLAIN:
			return "plain";
		case BLOCK_FOR:
			return "for";
		case BLOCK_DECIMAL:
			return "decimal";
		case BLOCK_NUMERIC:
			return "numeric";
		case BLOCK_DICT:
			return "dict";
		case BLOCK_CODES:
			return "codes";
		case BLOCK_CHUNK_DICT:
			return "chunk dict";
	}
	return "unknown";
}
