/*-------------------------------------------------------------------------
 * colfile_compress.c
 *	  Column chunk encoding: values laid out with their type's alignment,
 *	  an optional null bitmap, zstd compression (kept raw when it does not
 *	  shrink), and per-chunk min/max in the row group directory.
 *
 * Stored chunk: uint32 block count, a ColfileBlockDesc per mini-block of
 * COLFILE_ROWS_PER_MINIBLOCK rows, then each block's frame. A block's
 * descriptor says how its bytes are compressed (zstd, or raw) and encoded
 * once unpacked: BLOCK_PLAIN is [null bitmap, one bit per row, MAXALIGNed,
 * only when the chunk has nulls][non-null values, each aligned to
 * typalign; varlenas with a 4-byte header]; the random-access encodings
 * are in colfile_encode.c, and store_block() below says which form a block
 * takes. Decoded byref Datums point into the unpacked buffer, which is
 * palloc'd and so MAXALIGNed. Scans decode whole chunks; index fetches
 * decode single values, or single blocks when they read a block twice.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "catalog/pg_attribute.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "storage/bufmgr.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "colfile/colfile.h"

#define MINMAX_MAX_BYTES 256

/* zstd contexts, made once per backend (creating one per frame is costly) */
static ZSTD_CCtx *cctx = NULL;
static ZSTD_DCtx *dctx = NULL;

static ZSTD_CCtx *
get_cctx(void)
{
	if (cctx == NULL && (cctx = ZSTD_createCCtx()) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	return cctx;
}

static ZSTD_DCtx *
get_dctx(void)
{
	if (dctx == NULL && (dctx = ZSTD_createDCtx()) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	return dctx;
}

/* Bytes a value takes in a chunk (varlena: with a 4-byte header) */
static Size
value_size(Form_pg_attribute att, Datum v)
{
	if (att->attlen > 0)
		return att->attlen;
	if (att->attlen == -1)
		return VARSIZE_ANY_EXHDR(DatumGetPointer(v)) + VARHDRSZ;
	return strlen(DatumGetCString(v)) + 1;
}

/* Store a value at dst (already aligned) */
static void
store_value(Form_pg_attribute att, Datum v, char *dst)
{
	if (att->attbyval)
		store_att_byval(dst, v, att->attlen);
	else if (att->attlen > 0)
		memcpy(dst, DatumGetPointer(v), att->attlen);
	else if (att->attlen == -1)
	{
		Size		n = VARSIZE_ANY_EXHDR(DatumGetPointer(v));

		SET_VARSIZE(dst, n + VARHDRSZ);
		memcpy(dst + VARHDRSZ, VARDATA_ANY(DatumGetPointer(v)), n);
	}
	else
		strcpy(dst, DatumGetCString(v));
}

/* Find the directory entry of attnum (1-based); NULL past the group's natts */
ColfileChunkDesc *
ColfileDirChunk(bytea *dir, int attnum, int *natts)
{
	ColfileDirHeader *h = (ColfileDirHeader *) VARDATA(dir);
	ColfileChunkDesc *d = (ColfileChunkDesc *) (h + 1);

	if (natts)
		*natts = h->natts;
	if (attnum < 1 || attnum > h->natts)
		return NULL;
	return &d[attnum - 1];
}

/*
 * Read a chunk's min and max from the directory, when they were taken in
 * the order of att's present type and collation (groups written before
 * that order was recorded have none to offer)
 */
bool
ColfileDirMinMax(bytea *dir, int attnum, Form_pg_attribute att,
				 Datum *min, Datum *max)
{
	int			natts;
	ColfileChunkDesc *c = ColfileDirChunk(dir, attnum, &natts);
	char	   *area;
	ColfileMinMaxOrder order;

	if (c == NULL || !(c->flags & CHUNK_HAS_MINMAX) || !(c->flags & CHUNK_MINMAX_ORDER))
		return false;
	area = (char *) ((ColfileChunkDesc *) ((ColfileDirHeader *) VARDATA(dir) + 1) + natts);
	/* (the column's type or collation changed since: another order) */
	memcpy(&order, area + c->minmax_off + c->min_len + c->max_len, sizeof(order));
	if (order.typid != att->atttypid || order.collation != att->attcollation)
		return false;
	if (att->attbyval)
	{
		memcpy(min, area + c->minmax_off, sizeof(Datum));
		memcpy(max, area + c->minmax_off + c->min_len, sizeof(Datum));
	}
	else
	{
		char	   *a = palloc(c->min_len);
		char	   *b = palloc(c->max_len);

		memcpy(a, area + c->minmax_off, c->min_len);
		memcpy(b, area + c->minmax_off + c->min_len, c->max_len);
		*min = PointerGetDatum(a);
		*max = PointerGetDatum(b);
	}
	return true;
}

/* Compress len bytes into frames if zstd shrinks them; returns the size or 0 */
static size_t
try_zstd(const char *src, Size len, StringInfo frames)
{
	size_t		bound = ZSTD_compressBound(len);
	size_t		z;

	enlargeStringInfo(frames, bound);
	z = ZSTD_compressCCtx(get_cctx(), frames->data + frames->len, bound,
						  src, len, colfile_compression_level);
	if (ZSTD_isError(z) || z >= len)
		return 0;
	return z;
}

/*
 * Append one mini-block to frames, choosing its form: a random-access
 * encoding (colfile_encode.c) stored as it is, unless zstd (over it or
 * over the plain layout, whichever is smaller) saves at least
 * mvinc.colfile_zstd_min_gain percent of the plain layout's size more
 * than the encoding does: a point read of a zstd block decompresses the
 * whole block, so a few bytes saved are not worth it. Without such an
 * encoding: zstd over the plain layout when that is smaller, else the
 * plain layout. plain holds the block's plain layout; enc is scratch.
 */
static void
store_block(Form_pg_attribute att, Datum *values, bool *isnull, int n,
			bool hasnulls, StringInfo plain, StringInfo enc,
			ColfileBlockDesc *bd, StringInfo frames)
{
	int			encoding = ColfileEncodeBlock(att, values, isnull, n, hasnulls,
											  plain->len, enc);
	size_t		zplain,
				zenc = 0;

	bd->compression = CHUNK_RAW;
	bd->encoding = BLOCK_PLAIN;
	if (encoding != BLOCK_PLAIN &&
		(double) enc->len < (double) plain->len * colfile_zstd_min_gain / 100.0)
	{
		/* the encoding saves so much that zstd cannot win: don't try it */
		bd->encoding = encoding;
		bd->raw_len = bd->stored_len = enc->len;
		appendBinaryStringInfo(frames, enc->data, enc->len);
		return;
	}
	zplain = try_zstd(plain->data, plain->len, frames);
	if (encoding != BLOCK_PLAIN)
	{
		size_t		best;

		/* zstd over the encoded bytes: tried after the plain frame, kept apart */
		if (zplain > 0)
		{
			StringInfoData tmp;

			initStringInfo(&tmp);
			zenc = try_zstd(enc->data, enc->len, &tmp);
			if (zenc > 0 && zenc < zplain)
				memcpy(frames->data + frames->len, tmp.data, zenc);
			else
				zenc = 0;
			pfree(tmp.data);
		}
		else
			zenc = try_zstd(enc->data, enc->len, frames);
		best = zenc > 0 ? zenc : zplain;
		if (best > 0 &&
			best < (size_t) enc->len &&
			(double) enc->len - (double) best >= (double) plain->len * colfile_zstd_min_gain / 100.0)
		{
			/* zstd wins clearly; frames already holds the smaller frame */
			bd->compression = CHUNK_ZSTD;
			bd->encoding = zenc > 0 ? encoding : BLOCK_PLAIN;
			bd->raw_len = zenc > 0 ? enc->len : plain->len;
			bd->stored_len = best;
			frames->len += best;
			return;
		}
		bd->compression = CHUNK_RAW;
		bd->encoding = encoding;
		bd->raw_len = bd->stored_len = enc->len;
		appendBinaryStringInfo(frames, enc->data, enc->len);
		return;
	}
	bd->encoding = BLOCK_PLAIN;
	bd->raw_len = plain->len;
	if (zplain > 0)
	{
		bd->compression = CHUNK_ZSTD;
		bd->stored_len = zplain;
		frames->len += zplain;
	}
	else
	{
		bd->compression = CHUNK_RAW;
		bd->stored_len = plain->len;
		appendBinaryStringInfo(frames, plain->data, plain->len);
	}
}

/*
 * Encode one row group: compress every column into data (appended) and
 * return the directory.
 */
bytea *
ColfileEncodeGroup(Relation rel, TupleDesc desc, int nrows,
				   Datum **values, bool **isnull, StringInfo data)
{
	int			natts = desc->natts;
	ColfileChunkDesc *chunks = palloc0(sizeof(ColfileChunkDesc) * natts);
	StringInfoData minmax;
	StringInfoData raw;
	StringInfoData offsets;
	int64		base = data->len;
	bytea	   *dir;
	Size		dirlen;
	int			a;

	initStringInfo(&minmax);
	initStringInfo(&raw);
	initStringInfo(&offsets);

	for (a = 0; a < natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		ColfileChunkDesc *c = &chunks[a];
		int			nnull = 0;
		int			r;
		TypeCacheEntry *tc = NULL;
		Datum		mn = 0,
					mx = 0;
		bool		have = false;

		for (r = 0; r < nrows; r++)
			if (isnull[a][r])
				nnull++;
		c->offset = data->len - base;
		if (att->attisdropped || nnull == nrows)
		{
			c->flags = CHUNK_ALL_NULL | CHUNK_HAS_NULLS;
			continue;
		}

		if (nnull > 0)
			c->flags |= CHUNK_HAS_NULLS;

		/* min/max over the chunk */
		if (OidIsValid(att->atttypid))
		{
			tc = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC_FINFO);
			if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
				tc = NULL;
		}
		for (r = 0; tc != NULL && r < nrows; r++)
		{
			Datum		v = values[a][r];

			if (isnull[a][r])
				continue;
			if (!have)
			{
				mn = mx = v;
				have = true;
			}
			else
			{
				if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
													att->attcollation, v, mn)) < 0)
					mn = v;
				if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
													att->attcollation, v, mx)) > 0)
					mx = v;
			}
		}
		if (have)
		{
			Size		l1 = att->attbyval ? sizeof(Datum) : value_size(att, mn);
			Size		l2 = att->attbyval ? sizeof(Datum) : value_size(att, mx);

			if (l1 <= MINMAX_MAX_BYTES && l2 <= MINMAX_MAX_BYTES)
			{
				ColfileMinMaxOrder order = {att->atttypid, att->attcollation};

				c->flags |= CHUNK_HAS_MINMAX | CHUNK_MINMAX_ORDER;
				c->minmax_off = minmax.len;
				c->min_len = l1;
				c->max_len = l2;
				if (att->attbyval)
				{
					appendBinaryStringInfo(&minmax, (char *) &mn, sizeof(Datum));
					appendBinaryStringInfo(&minmax, (char *) &mx, sizeof(Datum));
				}
				else
				{
					char	   *tmp = palloc(Max(l1, l2));

					store_value(att, mn, tmp);
					appendBinaryStringInfo(&minmax, tmp, l1);
					store_value(att, mx, tmp);
					appendBinaryStringInfo(&minmax, tmp, l2);
					pfree(tmp);
				}
				appendBinaryStringInfo(&minmax, (char *) &order, sizeof(order));
			}
		}

		/*
		 * The chunk: one independently compressed frame per mini-block of
		 * COLFILE_ROWS_PER_MINIBLOCK rows, so that a single row can be read
		 * without decompressing the whole chunk; the directory says where
		 * each frame starts, so that a lookup reads only its frame.
		 */
		{
			int			nblocks = (nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;
			int			ntab = nblocks;
			ColfileBlockDesc *blocks = palloc0(sizeof(ColfileBlockDesc) * (nblocks + 1));
			StringInfoData frames;
			StringInfoData enc;
			int			bno;
			int64		chunk_start;
			bool		anyzstd = false;

			initStringInfo(&frames);
			initStringInfo(&enc);
			c->raw_len = 0;
			for (bno = 0; bno < nblocks; bno++)
			{
				int			first = bno * COLFILE_ROWS_PER_MINIBLOCK;
				int			n = Min(COLFILE_ROWS_PER_MINIBLOCK, nrows - first);
				Size		off = (nnull > 0) ? MAXALIGN((n + 7) / 8) : 0;
				Size		total = off;

				for (r = 0; r < n; r++)
				{
					if (isnull[a][first + r])
						continue;
					total = att_align_nominal(total, att->attalign);
					total += value_size(att, values[a][first + r]);
				}
				resetStringInfo(&raw);
				enlargeStringInfo(&raw, total);
				memset(raw.data, 0, total);
				raw.len = total;
				for (r = 0; r < n; r++)
				{
					if (isnull[a][first + r])
					{
						raw.data[r / 8] |= (1 << (r % 8));
						continue;
					}
					off = att_align_nominal(off, att->attalign);
					store_value(att, values[a][first + r], raw.data + off);
					off += value_size(att, values[a][first + r]);
				}
				c->raw_len += raw.len;
				blocks[bno].offset = frames.len;
				store_block(att, values[a] + first, isnull[a] + first, n, nnull > 0,
							&raw, &enc, &blocks[bno], &frames);
				if (blocks[bno].compression == CHUNK_ZSTD)
					anyzstd = true;
			}

			/*
			 * A dictionary of the whole chunk instead, when that is smaller
			 * (values repeated across mini-blocks): blocks of codes, and the
			 * dictionary as an extra entry of the block table.
			 */
			{
				StringInfoData dict;
				uint64	   *codes;
				int			bits;

				initStringInfo(&dict);
				if (ColfileEncodeChunkDict(att, values[a], isnull[a], nrows, frames.len,
										   &dict, &codes, &bits))
				{
					ntab = nblocks + 1;
					memset(blocks, 0, sizeof(ColfileBlockDesc) * ntab);
					resetStringInfo(&frames);
					blocks[nblocks].offset = frames.len;
					blocks[nblocks].stored_len = blocks[nblocks].raw_len = dict.len;
					blocks[nblocks].compression = CHUNK_RAW;
					blocks[nblocks].encoding = BLOCK_CHUNK_DICT;
					appendBinaryStringInfo(&frames, dict.data, dict.len);
					for (bno = 0; bno < nblocks; bno++)
					{
						int			first = bno * COLFILE_ROWS_PER_MINIBLOCK;
						int			n = Min(COLFILE_ROWS_PER_MINIBLOCK, nrows - first);

						ColfileEncodeCodes(codes + first, isnull[a] + first, n, nnull > 0,
										   bits, &enc);
						blocks[bno].offset = frames.len;
						blocks[bno].stored_len = blocks[bno].raw_len = enc.len;
						blocks[bno].compression = CHUNK_RAW;
						blocks[bno].encoding = BLOCK_CODES;
						appendBinaryStringInfo(&frames, enc.data, enc.len);
					}
					c->flags |= CHUNK_HAS_DICT;
					anyzstd = false;
					pfree(codes);
				}
				pfree(dict.data);
			}
			/*
			 * Emit the frames (blocks, then the dictionary), each a
			 * ColfileFrameHeader and the block's bytes; where each starts
			 * goes into the directory.
			 */
			chunk_start = data->len;
			while (offsets.len % sizeof(uint32))
				appendStringInfoChar(&offsets, '\0');
			c->blocks_off = offsets.len;	/* made relative to the directory below */
			for (bno = 0; bno < ntab; bno++)
			{
				ColfileFrameHeader fh;
				uint32		o = data->len - chunk_start;

				memset(&fh, 0, sizeof(fh));
				fh.raw_len = blocks[bno].raw_len;
				fh.compression = blocks[bno].compression;
				fh.encoding = blocks[bno].encoding;
				appendBinaryStringInfo(&offsets, (char *) &o, sizeof(uint32));
				appendBinaryStringInfo(data, (char *) &fh, sizeof(fh));
				appendBinaryStringInfo(data, frames.data + blocks[bno].offset,
									   blocks[bno].stored_len);
			}
			{
				uint32		o = data->len - chunk_start;

				appendBinaryStringInfo(&offsets, (char *) &o, sizeof(uint32));
			}
			c->stored_len = data->len - chunk_start;
			c->compression = anyzstd ? CHUNK_ZSTD : CHUNK_RAW;
			pfree(frames.data);
			pfree(enc.data);
			pfree(blocks);
		}
	}

	/* header, chunks, min/max bytes, then (4-aligned) the frame offsets */
	{
		Size		offsets_at = sizeof(ColfileDirHeader) + sizeof(ColfileChunkDesc) * natts +
			minmax.len;

		offsets_at = TYPEALIGN(sizeof(uint32), offsets_at);
		for (a = 0; a < natts; a++)
			if (!(chunks[a].flags & CHUNK_ALL_NULL))
				chunks[a].blocks_off += offsets_at;
		dirlen = offsets_at + offsets.len;
		dir = palloc0(VARHDRSZ + dirlen);
		SET_VARSIZE(dir, VARHDRSZ + dirlen);
		((ColfileDirHeader *) VARDATA(dir))->natts = natts;
		memcpy(VARDATA(dir) + sizeof(ColfileDirHeader), chunks,
			   sizeof(ColfileChunkDesc) * natts);
		memcpy(VARDATA(dir) + sizeof(ColfileDirHeader) + sizeof(ColfileChunkDesc) * natts,
			   minmax.data, minmax.len);
		memcpy(VARDATA(dir) + offsets_at, offsets.data, offsets.len);
	}
	pfree(raw.data);
	pfree(minmax.data);
	pfree(offsets.data);
	pfree(chunks);
	return dir;
}

/* Decompress one mini-block frame into raw (b->raw_len bytes) */
static char *
unpack_block_into(Relation rel, ColfileRowGroup *rg, int attnum, ColfileBlockDesc *b,
				  const char *stored, char *raw)
{

	if (b->compression == CHUNK_RAW)
		memcpy(raw, stored, b->raw_len);
	else
	{
		size_t		n = ZSTD_decompressDCtx(get_dctx(), raw, b->raw_len,
											stored, b->stored_len);

		if (ZSTD_isError(n) || n != b->raw_len)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\": cannot decompress column %d of row group %lld",
							RelationGetRelationName(rel), attnum,
							(long long) rg->first_block)));
	}
	return raw;
}

/* Decompress one mini-block frame into a new buffer in the current context */
static char *
unpack_block(Relation rel, ColfileRowGroup *rg, int attnum, ColfileBlockDesc *b,
			 const char *stored)
{
	return unpack_block_into(rel, rg, attnum, b, stored,
							 palloc(Max(b->raw_len, 1)));
}

/*
 * Decode the first 'stop' of the n rows of an unpacked mini-block into
 * values/isnull (stop < n: a single-value fetch needs rows up to its own)
 */
static void
decode_rows(Relation rel, ColfileRowGroup *rg, Form_pg_attribute att, int attnum,
			const char *raw, uint32 raw_len, int n, int stop, bool hasnulls,
			Datum *values, bool *isnull)
{
	Size		off = hasnulls ? MAXALIGN((n + 7) / 8) : 0;
	int			r;

	/* fast path: fixed-width by-value values without nulls are a plain array */
	if (!hasnulls && att->attbyval && att->attlen > 0)
	{
		Size		stride = att_align_nominal(att->attlen, att->attalign);

		if (stride * n > raw_len)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\": column %d of row group %lld is truncated",
							RelationGetRelationName(rel), attnum,
							(long long) rg->first_block)));
		switch (att->attlen)
		{
			case 8:
				for (r = 0; r < stop; r++)
					values[r] = *(const Datum *) (raw + r * stride);
				break;
			case 4:
				for (r = 0; r < stop; r++)
					values[r] = Int32GetDatum(*(const int32 *) (raw + r * stride));
				break;
			default:
				for (r = 0; r < stop; r++)
					values[r] = fetch_att(raw + r * stride, true, att->attlen);
				break;
		}
		memset(isnull, 0, sizeof(bool) * stop);
		return;
	}

	for (r = 0; r < stop; r++)
	{
		if (hasnulls && (raw[r / 8] & (1 << (r % 8))))
		{
			values[r] = (Datum) 0;
			isnull[r] = true;
			continue;
		}
		off = att_align_nominal(off, att->attalign);
		if (off >= raw_len || (att->attlen > 0 && off + att->attlen > raw_len) ||
			(att->attlen == -1 && (off + VARHDRSZ > raw_len ||
								   off + VARSIZE(raw + off) > raw_len)))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\": column %d of row group %lld is truncated",
							RelationGetRelationName(rel), attnum,
							(long long) rg->first_block)));
		isnull[r] = false;
		values[r] = fetchatt(att, raw + off);
		off += value_size(att, values[r]);
	}
}

/*
 * Decode the n rows of an unpacked mini-block (any encoding) into
 * values/isnull; dv holds the ndv decoded entries of the chunk dictionary
 * (BLOCK_CODES)
 */
static void
decode_block(Relation rel, ColfileRowGroup *rg, Form_pg_attribute att, int attnum,
			 const ColfileBlockDesc *bd, const char *raw, int n, bool hasnulls,
			 const Datum *dv, uint32 ndv, Datum *values, bool *isnull)
{
	bool		ok;

	if (bd->encoding == BLOCK_PLAIN)
	{
		decode_rows(rel, rg, att, attnum, raw, bd->raw_len, n, n, hasnulls, values, isnull);
		return;
	}
	if (bd->encoding == BLOCK_CODES)
		ok = dv != NULL && ColfileDecodeCodes(raw, bd->raw_len, n, hasnulls, dv, ndv,
											  values, isnull);
	else
		ok = ColfileDecodeEncoded(att, bd->encoding, raw, bd->raw_len, n, hasnulls,
								  values, isnull);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\": column %d of row group %lld has a malformed %s block",
						RelationGetRelationName(rel), attnum,
						(long long) rg->first_block, ColfileEncodingName(bd->encoding))));
}

/* Frames of a chunk: a chunk with a dictionary has one more */
static inline uint32
chunk_frames(ColfileChunkDesc *c, uint32 nblocks)
{
	return nblocks + ((c->flags & CHUNK_HAS_DICT) ? 1 : 0);
}

/*
 * Where frame i of attnum's chunk lies, from the directory: its offset
 * from the chunk's start and its length (header included)
 */
static void
frame_span(Relation rel, ColfileRowGroup *rg, ColfileChunkDesc *c, int attnum,
		   uint32 i, uint32 *off, uint32 *len)
{
	uint32		nframes = chunk_frames(c, (rg->nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) /
									   COLFILE_ROWS_PER_MINIBLOCK);
	Size		dirlen = VARSIZE(rg->directory) - VARHDRSZ;
	uint32		o[2];

	if (i >= nframes || c->blocks_off % sizeof(uint32) != 0 ||
		(Size) c->blocks_off + sizeof(uint32) * (nframes + 1) > dirlen)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\": column %d of row group %lld has no block %u",
						RelationGetRelationName(rel), attnum,
						(long long) rg->first_block, i)));
	memcpy(o, VARDATA(rg->directory) + c->blocks_off + sizeof(uint32) * i, sizeof(o));
	if (o[0] > o[1] || o[1] - o[0] < sizeof(ColfileFrameHeader) || o[1] > c->stored_len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\": column %d of row group %lld overruns its chunk",
						RelationGetRelationName(rel), attnum,
						(long long) rg->first_block)));
	*off = o[0];
	*len = o[1] - o[0];
}

/* Descriptor of a frame from its header and span */
static void
frame_desc(const char *header, uint32 off, uint32 len, ColfileBlockDesc *bd)
{
	ColfileFrameHeader fh;

	memcpy(&fh, header, sizeof(fh));
	bd->offset = off + sizeof(ColfileFrameHeader);
	bd->stored_len = len - sizeof(ColfileFrameHeader);
	bd->raw_len = fh.raw_len;
	bd->compression = fh.compression;
	bd->encoding = fh.encoding;
	bd->pad = 0;
}

/* Descriptor of frame i of attnum's chunk (for statistics) */
void
ColfileBlockInfo(Relation rel, ColfileRowGroup *rg, int attnum, int i,
				 ColfileBlockDesc *bd)
{
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	uint32		off,
				len;
	char		header[sizeof(ColfileFrameHeader)];

	frame_span(rel, rg, c, attnum, i, &off, &len);
	ColfileReadBytes(rel, rg->data_offset + c->offset + off, header, sizeof(header));
	frame_desc(header, off, len, bd);
}

/*
 * Decode a chunk dictionary (stored bytes dict, described by dd) into
 * dv and ndv, in the current memory context; the values point into a
 * MAXALIGNed copy kept there
 */
static void
decode_chunk_dict(Relation rel, ColfileRowGroup *rg, Form_pg_attribute att,
				  int attnum, const ColfileBlockDesc *dd, const char *dict,
				  Datum **dv, uint32 *ndv)
{
	char	   *copy = palloc(Max(dd->stored_len, 1));

	memcpy(copy, dict, dd->stored_len);
	if (dd->encoding != BLOCK_CHUNK_DICT || dd->compression != CHUNK_RAW ||
		!ColfileDecodeChunkDict(att, copy, dd->stored_len, dv, ndv))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\": column %d of row group %lld has a malformed dictionary",
						RelationGetRelationName(rel), attnum,
						(long long) rg->first_block)));
}

/* A chunk that has no stored bytes (dropped, all NULL, added later) */
static bool
decode_constant(TupleDesc desc, ColfileChunkDesc *c, Form_pg_attribute att,
				int attnum, int nrows, Datum *values, bool *isnull)
{
	bool		null = true;
	Datum		v = 0;
	int			r;

	if (c != NULL && !att->attisdropped && !(c->flags & CHUNK_ALL_NULL))
		return false;
	if (c == NULL && !att->attisdropped)
	{
		/* copied: the relcache's copy may go away while ours is in use */
		v = getmissingattr(desc, attnum, &null);
		if (!null)
			v = datumCopy(v, att->attbyval, att->attlen);
	}
	for (r = 0; r < nrows; r++)
	{
		values[r] = v;
		isnull[r] = null;
	}
	return true;
}

/* Read and decode the whole chunk of attnum in a row group */
ColfileDecoded *
ColfileDecodeChunk(Relation rel, ColfileRowGroup *rg, TupleDesc desc,
				   int attnum, MemoryContext cxt)
{
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColfileDecoded *d = palloc(sizeof(ColfileDecoded));
	int			nrows = rg->nrows;
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	char	   *stored;
	uint32		nblocks,
				off,
				len;
	int			bno;
	Datum	   *dv = NULL;
	uint32		ndv = 0;

	d->values = palloc(sizeof(Datum) * Max(nrows, 1));
	d->isnull = palloc(sizeof(bool) * Max(nrows, 1));
	d->raw = NULL;
	if (decode_constant(desc, c, att, attnum, nrows, d->values, d->isnull))
	{
		MemoryContextSwitchTo(old);
		return d;
	}

	stored = palloc(c->stored_len);
	ColfileReadBytes(rel, rg->data_offset + c->offset, stored, c->stored_len);
	nblocks = (nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;
	if (c->flags & CHUNK_HAS_DICT)
	{
		ColfileBlockDesc dd;

		frame_span(rel, rg, c, attnum, nblocks, &off, &len);
		frame_desc(stored + off, off, len, &dd);
		decode_chunk_dict(rel, rg, att, attnum, &dd, stored + dd.offset, &dv, &ndv);
	}
	for (bno = 0; bno < (int) nblocks; bno++)
	{
		int			first = bno * COLFILE_ROWS_PER_MINIBLOCK;
		ColfileBlockDesc bd;
		char	   *raw;

		frame_span(rel, rg, c, attnum, bno, &off, &len);
		frame_desc(stored + off, off, len, &bd);
		raw = unpack_block(rel, rg, attnum, &bd, stored + bd.offset);
		decode_block(rel, rg, att, attnum, &bd, raw,
					 Min(COLFILE_ROWS_PER_MINIBLOCK, nrows - first),
					 (c->flags & CHUNK_HAS_NULLS) != 0, dv, ndv,
					 d->values + first, d->isnull + first);
		/* raw stays allocated in cxt: byref values point into it */
	}
	pfree(stored);
	MemoryContextSwitchTo(old);
	return d;
}

/*
 * Decode one mini-block (rows [bno * COLFILE_ROWS_PER_MINIBLOCK, ...)) of
 * attnum: what an index fetch needs for a single row.
 */
/*
 * Backend-lifetime scratch buffers for index fetches: reading and
 * unpacking a mini-block allocates nothing per fetch. (Allocating and
 * freeing a few kilobytes per column per lookup made the allocator grow
 * and trim the heap on every query: page faults were a third of a wide
 * table's lookup time.)
 */
typedef struct ColfileScratch
{
	char	   *buf;
	Size		cap;
} ColfileScratch;

static ColfileScratch scratch_stored;
static ColfileScratch scratch_raw;
static Datum scratch_values[COLFILE_ROWS_PER_MINIBLOCK];
static bool scratch_isnull[COLFILE_ROWS_PER_MINIBLOCK];

static char *
scratch_get(ColfileScratch *s, Size len)
{
	if (len > s->cap)
	{
		Size		cap = Max(s->cap, 8192);

		while (cap < len)
			cap *= 2;
		if (s->buf)
			pfree(s->buf);
		s->buf = NULL;
		s->cap = 0;
		s->buf = MemoryContextAlloc(TopMemoryContext, cap);
		s->cap = cap;
	}
	return s->buf;
}

/*
 * The stored bytes of frame i of attnum's chunk (a mini-block, or the
 * dictionary): fills *bd from the frame's header and returns the bytes,
 * in place in a pinned page when inplace is true and they lie in one
 * page, else copied into scratch space (valid until the next call).
 * *keep (a pinned buffer or InvalidBuffer) is reused, and left pinned.
 */
static const char *
read_frame(Relation rel, ColfileRowGroup *rg, ColfileChunkDesc *c, int attnum,
		   uint32 i, ColfileBlockDesc *bd, bool inplace, Buffer *keep)
{
	uint32		off,
				len;
	int64		at;
	const char *p = NULL;
	char	   *copy;

	frame_span(rel, rg, c, attnum, i, &off, &len);
	at = rg->data_offset + c->offset + off;
	if (inplace)
		p = ColfilePeekBytes(rel, at, len, keep);
	if (p == NULL)
	{
		copy = scratch_get(&scratch_stored, len);
		ColfileReadBytesKeep(rel, at, copy, len, keep);
		p = copy;
	}
	frame_desc(p, off, len, bd);
	return p + sizeof(ColfileFrameHeader);
}

/*
 * Decode one mini-block (rows [bno * COLFILE_ROWS_PER_MINIBLOCK, ...)) of
 * attnum: what an index fetch needs for several rows of one block.
 */
ColfileDecoded *
ColfileDecodeBlock(Relation rel, ColfileRowGroup *rg, TupleDesc desc,
				   int attnum, int bno, MemoryContext cxt)
{
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColfileDecoded *d = palloc(sizeof(ColfileDecoded));
	int			first = bno * COLFILE_ROWS_PER_MINIBLOCK;
	int			n = Min(COLFILE_ROWS_PER_MINIBLOCK, rg->nrows - first);
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	ColfileBlockDesc bd,
				dd;
	const char *stored;
	Datum	   *dv = NULL;
	uint32		ndv = 0;
	Buffer		keep = InvalidBuffer;

	d->values = palloc(sizeof(Datum) * Max(n, 1));
	d->isnull = palloc(sizeof(bool) * Max(n, 1));
	d->raw = NULL;
	if (decode_constant(desc, c, att, attnum, n, d->values, d->isnull))
	{
		MemoryContextSwitchTo(old);
		return d;
	}
	stored = read_frame(rel, rg, c, attnum, bno, &bd, false, &keep);
	d->raw = unpack_block(rel, rg, attnum, &bd, stored);
	if (bd.encoding == BLOCK_CODES && (c->flags & CHUNK_HAS_DICT))
	{
		uint32		nblocks = (rg->nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;

		stored = read_frame(rel, rg, c, attnum, nblocks, &dd, false, &keep);
		decode_chunk_dict(rel, rg, att, attnum, &dd, stored, &dv, &ndv);
	}
	if (BufferIsValid(keep))
		ReleaseBuffer(keep);
	decode_block(rel, rg, att, attnum, &bd, d->raw, n,
				 (c->flags & CHUNK_HAS_NULLS) != 0, dv, ndv, d->values, d->isnull);
	MemoryContextSwitchTo(old);
	return d;
}

/* Reads a chunk dictionary's bytes for ColfileChunkDictValue */
typedef struct DictReader
{
	Relation	rel;
	int64		at;				/* logical offset of the dictionary */
	Buffer	   *keep;
} DictReader;

static void
dict_read(void *arg, Size offset, char *dst, Size len)
{
	DictReader *dr = (DictReader *) arg;

	ColfileReadBytesKeep(dr->rel, dr->at + offset, dst, len, dr->keep);
}

/*
 * Pin the page where a point read of row pos of attnum starts, and ask
 * the CPU to load the lines it will read: the frame's header and where in
 * the frame the row's packed bits most likely are. Returns the buffer
 * (InvalidBuffer when the column has no stored bytes), to be passed to
 * ColfileDecodeValue. A 200-column lookup waits on ~400 cache misses one
 * after another without this; issued together they overlap.
 */
Buffer
ColfilePrefetchValue(Relation rel, ColfileRowGroup *rg, TupleDesc desc,
					 int attnum, int pos)
{
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	int			bno = pos / COLFILE_ROWS_PER_MINIBLOCK;
	int			r = pos % COLFILE_ROWS_PER_MINIBLOCK;
	int			n = Min(COLFILE_ROWS_PER_MINIBLOCK, rg->nrows - bno * COLFILE_ROWS_PER_MINIBLOCK);
	uint32		off,
				len;
	int64		at;
	BlockNumber blk;
	int			poff;
	Buffer		buf;
	char	   *page;

	if (c == NULL || att->attisdropped || (c->flags & CHUNK_ALL_NULL) || n <= 0 || r >= n)
		return InvalidBuffer;
	frame_span(rel, rg, c, attnum, bno, &off, &len);
	at = rg->data_offset + c->offset + off;
	blk = 1 + at / COLFILE_PAYLOAD_PER_PAGE;
	poff = at % COLFILE_PAYLOAD_PER_PAGE;
	buf = ColfileReadPage(rel, blk);
	page = (char *) BufferGetPage(buf) + COLFILE_PAYLOAD_START;
#ifdef __GNUC__
	__builtin_prefetch(page + poff);
	{
		int64		est = poff + (int64) len * r / n;

		if (est < COLFILE_PAYLOAD_PER_PAGE)
			__builtin_prefetch(page + est);
	}
#endif
	return buf;
}

/*
 * Decode the single value of row pos of attnum (an index fetch's first
 * touch of a mini-block) in scratch space; a by-reference value is copied
 * into the current memory context. pinned is a buffer from
 * ColfilePrefetchValue, or InvalidBuffer; it is released.
 */
void
ColfileDecodeValue(Relation rel, ColfileRowGroup *rg, TupleDesc desc,
				   int attnum, int pos, Buffer pinned, Datum *value, bool *isnull)
{
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	int			bno = pos / COLFILE_ROWS_PER_MINIBLOCK;
	int			r = pos % COLFILE_ROWS_PER_MINIBLOCK;
	int			n = Min(COLFILE_ROWS_PER_MINIBLOCK, rg->nrows - bno * COLFILE_ROWS_PER_MINIBLOCK);
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	ColfileBlockDesc bd;
	const char *stored;
	char	   *raw;
	Buffer		keep = pinned;

	if (decode_constant(desc, c, att, attnum, 1, value, isnull))
	{
		if (BufferIsValid(keep))
			ReleaseBuffer(keep);
		return;
	}
	if (r >= n)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\": column %d of row group %lld has no row %d",
						RelationGetRelationName(rel), attnum,
						(long long) rg->first_block, pos)));
	/* random access: an uncompressed encoded block is read in place */
	stored = read_frame(rel, rg, c, attnum, bno, &bd, true, &keep);
	if (bd.encoding != BLOCK_PLAIN)
	{
		const char *src;
		bool		hasnulls = (c->flags & CHUNK_HAS_NULLS) != 0;
		uint32		code = 0;
		bool		ok;

		src = bd.compression == CHUNK_RAW ? stored :
			unpack_block_into(rel, rg, attnum, &bd, stored,
							  scratch_get(&scratch_raw, Max(bd.raw_len, 1)));
		if (bd.encoding == BLOCK_CODES)
			ok = ColfileDecodeCode(src, bd.raw_len, n, r, hasnulls, &code, isnull);
		else
			ok = ColfileDecodeEncodedValue(att, bd.encoding, src, bd.raw_len, n, r,
										   hasnulls, value, isnull);
		if (ok && bd.encoding == BLOCK_CODES && !*isnull)
		{
			/* the value is entry 'code' of the chunk dictionary */
			uint32		nblocks = (rg->nrows + COLFILE_ROWS_PER_MINIBLOCK - 1) / COLFILE_ROWS_PER_MINIBLOCK;
			uint32		off,
						len;
			char		header[sizeof(ColfileFrameHeader)];
			ColfileBlockDesc dd;
			DictReader	dr;

			ok = (c->flags & CHUNK_HAS_DICT) != 0;
			if (ok)
			{
				frame_span(rel, rg, c, attnum, nblocks, &off, &len);
				ColfileReadBytesKeep(rel, rg->data_offset + c->offset + off, header,
									 sizeof(header), &keep);
				frame_desc(header, off, len, &dd);
				dr.rel = rel;
				dr.at = rg->data_offset + c->offset + dd.offset;
				dr.keep = &keep;
				ok = dd.encoding == BLOCK_CHUNK_DICT && dd.compression == CHUNK_RAW &&
					ColfileChunkDictValue(att, dict_read, &dr, dd.stored_len,
										  code, value);
			}
		}
		else if (ok && bd.encoding == BLOCK_CODES)
			*value = (Datum) 0;
		ReleaseBuffer(keep);
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\": column %d of row group %lld has a malformed %s block",
							RelationGetRelationName(rel), attnum,
							(long long) rg->first_block, ColfileEncodingName(bd.encoding))));
		return;
	}
	raw = unpack_block_into(rel, rg, attnum, &bd, stored,
							scratch_get(&scratch_raw, Max(bd.raw_len, 1)));
	ReleaseBuffer(keep);
	decode_rows(rel, rg, att, attnum, raw, bd.raw_len, n, r + 1,
				(c->flags & CHUNK_HAS_NULLS) != 0, scratch_values, scratch_isnull);
	*isnull = scratch_isnull[r];
	*value = scratch_isnull[r] || att->attbyval ? scratch_values[r] :
		datumCopy(scratch_values[r], false, att->attlen);
}
