/*-------------------------------------------------------------------------
 * capture_rowmsg.c
 *	  Row change messages: how changes of tables whose WAL logical decoding
 *	  cannot read (colfile writes generic WAL) still reach the change log.
 *
 *	  A writer of such a table, while the table is tracked, writes one
 *	  transactional logical message per changed row (prefix
 *	  MVINC_ROW_MESSAGE_PREFIX) holding the relation, the operation and the
 *	  whole old and new rows, TOAST inlined.  Transactional messages are
 *	  decoded in the transaction's order, at its commit, and dropped with
 *	  an aborted subtransaction, as heap changes are; the output plugin
 *	  turns them into the same change-log rows a heap change gives.
 *
 *	  Whether to write them is decided per statement, after the writer's
 *	  ROW EXCLUSIVE lock: track() of such a table takes a SHARE lock, so a
 *	  writer either ended before track() (decoding then sees the table as
 *	  untracked for its commit) or locks after track() committed and reads
 *	  the tracked row (the cached answer is dropped by the relcache
 *	  invalidation track() sends).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/xlog.h"
#include "executor/tuptable.h"
#include "replication/message.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capture/capture.h"

/* The message: this header, then the old row's and the new row's bytes */
typedef struct RowMessageHeader
{
	uint8		version;		/* ROW_MESSAGE_VERSION */
	char		op;				/* 'i', 'u' or 'd' */
	Oid			relid;
	uint32		old_len;		/* 0: no old row */
	uint32		new_len;		/* 0: no new row */
} RowMessageHeader;

#define ROW_MESSAGE_VERSION 1

static HTAB *wanted_cache = NULL;

/* Relcache invalidation (track, untrack, ALTER TABLE): forget the answer */
static void
wanted_cache_invalidate(Datum arg, Oid relid)
{
	MvincRelFlagForget(wanted_cache, relid);
}

/*
 * Must changes of rel be written as row messages?  Call with the writer's
 * lock on rel held (see the file header).
 */
bool
MvincRowMessagesWanted(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	bool		wanted;

	if (!XLogLogicalInfoActive() || !RelationNeedsWAL(rel))
		return false;
	if (wanted_cache == NULL)
	{
		wanted_cache = MvincRelFlagCacheCreate("mvinc row messages");
		CacheRegisterRelcacheCallback(wanted_cache_invalidate, (Datum) 0);
	}
	if (MvincRelFlagGet(wanted_cache, relid, &wanted))
		return wanted;
	/* the lookup may process invalidations: enter the answer after it */
	wanted = MvincIsTrackedNow(relid);
	MvincRelFlagSet(wanted_cache, relid, wanted);
	return wanted;
}

/*
 * A row image whose out-of-line values are inlined: the message must
 * carry the values themselves (a TOAST pointer would name another
 * table's chunks, which may be gone when the message is decoded).
 */
static HeapTuple
flat_row(TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	Datum	   *values = palloc(desc->natts * sizeof(Datum));

	slot_getallattrs(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		values[i] = slot->tts_values[i];
		if (!slot->tts_isnull[i] && TupleDescAttr(desc, i)->attlen == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer(values[i])))
			values[i] = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(values[i])));
	}
	return heap_form_tuple(desc, values, slot->tts_isnull);
}

/*
 * Write the row message of one change of rel: op 'i' (newslot), 'u' (both)
 * or 'd' (oldslot).  The caller checked MvincRowMessagesWanted.
 */
void
MvincLogRowChange(Relation rel, char op, TupleTableSlot *oldslot,
				  TupleTableSlot *newslot)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext,
											  "mvinc row message",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	HeapTuple	oldtup = oldslot ? flat_row(oldslot) : NULL;
	HeapTuple	newtup = newslot ? flat_row(newslot) : NULL;
	RowMessageHeader hdr;
	StringInfoData buf;

	memset(&hdr, 0, sizeof(hdr));
	hdr.version = ROW_MESSAGE_VERSION;
	hdr.relid = RelationGetRelid(rel);
	hdr.op = op;
	hdr.old_len = oldtup ? oldtup->t_len : 0;
	hdr.new_len = newtup ? newtup->t_len : 0;
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (char *) &hdr, sizeof(hdr));
	if (oldtup)
		appendBinaryStringInfo(&buf, (char *) oldtup->t_data, oldtup->t_len);
	if (newtup)
		appendBinaryStringInfo(&buf, (char *) newtup->t_data, newtup->t_len);
	(void) LogLogicalMessage(MVINC_ROW_MESSAGE_PREFIX, buf.data, buf.len, true);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/* A row of a message, copied to aligned memory */
static HeapTuple
message_row(const char *p, uint32 len, Oid relid)
{
	HeapTuple	tup = palloc(HEAPTUPLESIZE + len);

	tup->t_len = len;
	tup->t_data = (HeapTupleHeader) ((char *) tup + HEAPTUPLESIZE);
	ItemPointerSetInvalid(&tup->t_self);
	tup->t_tableOid = relid;
	memcpy(tup->t_data, p, len);
	return tup;
}

/*
 * Read a row message back (in the current memory context).  False when
 * the message is malformed (not one of ours).  The rows are checked
 * against the relation's descriptor by MvincRowImageValid.
 */
bool
MvincParseRowMessage(const char *msg, Size size, Oid *relid, char *op,
					 HeapTuple *oldtup, HeapTuple *newtup)
{
	RowMessageHeader hdr;

	if (size < sizeof(hdr))
		return false;
	memcpy(&hdr, msg, sizeof(hdr));
	if (hdr.version != ROW_MESSAGE_VERSION ||
		size != sizeof(hdr) + (Size) hdr.old_len + hdr.new_len ||
		(hdr.op != 'i' && hdr.op != 'u' && hdr.op != 'd') ||
		(hdr.op != 'd') != (hdr.new_len > 0) ||
		(hdr.op != 'i') != (hdr.old_len > 0))
		return false;
	*relid = hdr.relid;
	*op = hdr.op;
	*oldtup = hdr.old_len ? message_row(msg + sizeof(hdr), hdr.old_len, hdr.relid) : NULL;
	*newtup = hdr.new_len ? message_row(msg + sizeof(hdr) + hdr.old_len, hdr.new_len, hdr.relid) : NULL;
	return true;
}

/*
 * Is tup a well-formed row of a relation with descriptor desc, with every
 * value inline?  Walks the attributes as deforming would, within t_len.
 * Our writers always pass; a message emitted by someone else with our
 * prefix (pg_logical_emit_message is revoked from PUBLIC, but may be
 * granted) must not make the capture worker read past it.
 */
bool
MvincRowImageValid(HeapTuple tup, TupleDesc desc)
{
	HeapTupleHeader h = tup->t_data;
	bool		hasnulls;
	int			natts;
	char	   *tp;
	Size		len;
	Size		off = 0;

	if (tup->t_len < SizeofHeapTupleHeader)
		return false;
	natts = HeapTupleHeaderGetNatts(h);
	hasnulls = HeapTupleHasNulls(tup);
	if (natts > desc->natts || HeapTupleHasExternal(tup) ||
		h->t_hoff < SizeofHeapTupleHeader + (hasnulls ? BITMAPLEN(natts) : 0) ||
		h->t_hoff > tup->t_len)
		return false;
	tp = (char *) h + h->t_hoff;
	len = tup->t_len - h->t_hoff;

	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Size		size;

		if (hasnulls && att_isnull(i, h->t_bits))
			continue;
		if (att->attlen > 0)
		{
			off = att_align_nominal(off, att->attalign);
			size = att->attlen;
		}
		else if (att->attlen == -1)
		{
			if (off >= len)
				return false;
			off = att_align_pointer(off, att->attalign, -1, tp + off);
			if (off >= len || VARATT_IS_EXTERNAL(tp + off))
				return false;
			if (VARATT_IS_1B(tp + off))
				size = VARSIZE_1B(tp + off);
			else
			{
				if (off + VARHDRSZ > len)
					return false;
				size = VARSIZE_4B(tp + off);
				if (size < VARHDRSZ ||
					(VARATT_IS_4B_C(tp + off) && size < VARHDRSZ_COMPRESSED))
					return false;
			}
		}
		else
		{
			off = att_align_nominal(off, att->attalign);
			if (off >= len)
				return false;
			size = strnlen(tp + off, len - off) + 1;
		}
		if (size == 0 || off + size > len)
			return false;
		off += size;
	}
	return true;
}
