/*-------------------------------------------------------------------------
 * colfile_compress.c
 *	  Column chunk encoding: values laid out with their type's alignment,
 *	  an optional null bitmap, zstd compression (kept raw when it does not
 *	  shrink), and per-chunk min/max in the row group directory.
 *
 * Raw chunk layout: [null bitmap, nrows bits, MAXALIGNed, only with nulls]
 * [non-null values, each aligned to typalign; varlenas with a 4-byte
 * header]. Decoded byref Datums point into the decompressed buffer, which
 * is palloc'd and so MAXALIGNed.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "catalog/pg_attribute.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "colfile/colfile.h"

#define MINMAX_MAX_BYTES 256

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

/* Read a chunk's min and max from the directory */
bool
ColfileDirMinMax(bytea *dir, int attnum, Form_pg_attribute att,
				 Datum *min, Datum *max)
{
	int			natts;
	ColfileChunkDesc *c = ColfileDirChunk(dir, attnum, &natts);
	char	   *area;

	if (c == NULL || !(c->flags & CHUNK_HAS_MINMAX))
		return false;
	area = (char *) ((ColfileChunkDesc *) ((ColfileDirHeader *) VARDATA(dir) + 1) + natts);
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
	int64		base = data->len;
	bytea	   *dir;
	Size		dirlen;
	int			a;

	initStringInfo(&minmax);
	initStringInfo(&raw);

	for (a = 0; a < natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		ColfileChunkDesc *c = &chunks[a];
		int			nnull = 0;
		int			r;
		Size		off;
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

		/* lay the raw chunk out */
		resetStringInfo(&raw);
		off = 0;
		if (nnull > 0)
		{
			c->flags |= CHUNK_HAS_NULLS;
			off = MAXALIGN((nrows + 7) / 8);
		}
		{
			Size		total = off;

			for (r = 0; r < nrows; r++)
			{
				if (isnull[a][r])
					continue;
				total = att_align_nominal(total, att->attalign);
				total += value_size(att, values[a][r]);
			}
			enlargeStringInfo(&raw, total);
			memset(raw.data, 0, total);
			raw.len = total;
		}
		if (nnull > 0)
		{
			for (r = 0; r < nrows; r++)
				if (isnull[a][r])
					raw.data[r / 8] |= (1 << (r % 8));
		}

		if (OidIsValid(att->atttypid))
		{
			tc = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC_FINFO);
			if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
				tc = NULL;
		}
		for (r = 0; r < nrows; r++)
		{
			Datum		v = values[a][r];

			if (isnull[a][r])
				continue;
			off = att_align_nominal(off, att->attalign);
			store_value(att, v, raw.data + off);
			off += value_size(att, v);
			if (tc)
			{
				if (!have)
				{
					mn = mx = v;
					have = true;
				}
				else
				{
					if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
														att->attcollation,
														v, mn)) < 0)
						mn = v;
					if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo,
														att->attcollation,
														v, mx)) > 0)
						mx = v;
				}
			}
		}

		/* min/max into the directory's area */
		if (have)
		{
			Size		l1 = att->attbyval ? sizeof(Datum) : value_size(att, mn);
			Size		l2 = att->attbyval ? sizeof(Datum) : value_size(att, mx);

			if (l1 <= MINMAX_MAX_BYTES && l2 <= MINMAX_MAX_BYTES)
			{
				c->flags |= CHUNK_HAS_MINMAX;
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
			}
		}

		/* compress */
		c->raw_len = raw.len;
		{
			size_t		bound = ZSTD_compressBound(raw.len);
			size_t		n;

			enlargeStringInfo(data, bound);
			n = ZSTD_compress(data->data + data->len, bound, raw.data, raw.len,
							  colfile_compression_level);
			if (!ZSTD_isError(n) && n < (size_t) raw.len)
			{
				c->compression = CHUNK_ZSTD;
				c->stored_len = n;
				data->len += n;
				data->data[data->len] = '\0';
			}
			else
			{
				c->compression = CHUNK_RAW;
				c->stored_len = raw.len;
				appendBinaryStringInfo(data, raw.data, raw.len);
			}
		}
	}

	dirlen = sizeof(ColfileDirHeader) + sizeof(ColfileChunkDesc) * natts + minmax.len;
	dir = palloc0(VARHDRSZ + dirlen);
	SET_VARSIZE(dir, VARHDRSZ + dirlen);
	((ColfileDirHeader *) VARDATA(dir))->natts = natts;
	memcpy(VARDATA(dir) + sizeof(ColfileDirHeader), chunks,
		   sizeof(ColfileChunkDesc) * natts);
	memcpy(VARDATA(dir) + sizeof(ColfileDirHeader) + sizeof(ColfileChunkDesc) * natts,
		   minmax.data, minmax.len);
	pfree(raw.data);
	pfree(minmax.data);
	pfree(chunks);
	return dir;
}

/* Read and decode the chunk of attnum in a row group */
ColfileDecoded *
ColfileDecodeChunk(Relation rel, ColfileRowGroup *rg, Form_pg_attribute att,
				   int attnum, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColfileDecoded *d = palloc(sizeof(ColfileDecoded));
	int			nrows = rg->nrows;
	ColfileChunkDesc *c = ColfileDirChunk(rg->directory, attnum, NULL);
	int			r;

	d->values = palloc(sizeof(Datum) * nrows);
	d->isnull = palloc(sizeof(bool) * nrows);
	d->raw = NULL;

	if (c == NULL || att->attisdropped)
	{
		/* column added after this group was written: its missing value */
		bool		isnull = true;
		Datum		v = 0;

		if (c == NULL && !att->attisdropped)
			v = getmissingattr(RelationGetDescr(rel), attnum, &isnull);
		for (r = 0; r < nrows; r++)
		{
			d->values[r] = v;
			d->isnull[r] = isnull;
		}
		MemoryContextSwitchTo(old);
		return d;
	}
	if (c->flags & CHUNK_ALL_NULL)
	{
		for (r = 0; r < nrows; r++)
		{
			d->values[r] = (Datum) 0;
			d->isnull[r] = true;
		}
		MemoryContextSwitchTo(old);
		return d;
	}

	d->raw = palloc(Max(c->raw_len, 1));
	if (c->compression == CHUNK_RAW)
		ColfileReadBytes(rel, rg->data_offset + c->offset, d->raw, c->stored_len);
	else
	{
		char	   *buf = palloc(c->stored_len);
		size_t		n;

		ColfileReadBytes(rel, rg->data_offset + c->offset, buf, c->stored_len);
		n = ZSTD_decompress(d->raw, c->raw_len, buf, c->stored_len);
		if (ZSTD_isError(n) || n != c->raw_len)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\": cannot decompress column %d of row group %lld",
							RelationGetRelationName(rel), attnum,
							(long long) rg->first_block)));
		pfree(buf);
	}

	{
		Size		off = 0;
		bool		hasnulls = (c->flags & CHUNK_HAS_NULLS) != 0;

		if (hasnulls)
			off = MAXALIGN((nrows + 7) / 8);
		for (r = 0; r < nrows; r++)
		{
			if (hasnulls && (d->raw[r / 8] & (1 << (r % 8))))
			{
				d->values[r] = (Datum) 0;
				d->isnull[r] = true;
				continue;
			}
			if (off >= c->raw_len)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("colfile table \"%s\": column %d of row group %lld is truncated",
								RelationGetRelationName(rel), attnum,
								(long long) rg->first_block)));
			off = att_align_nominal(off, att->attalign);
			d->isnull[r] = false;
			d->values[r] = fetchatt(att, d->raw + off);
			off += value_size(att, d->values[r]);
		}
	}
	MemoryContextSwitchTo(old);
	return d;
}
