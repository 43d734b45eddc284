/*-------------------------------------------------------------------------
 * capture_plugin.c
 *	  The "mvinc" logical decoding output plugin.
 *
 *	  Two modes.  In the capture worker (MvincCaptureWorkerMode) every
 *	  change of a tracked table is serialised into MvincCaptureBuffer, a
 *	  tuplestore that spills to disk, and the worker writes the buffer into
 *	  the change logs after the decoding call returns (a decoding callback
 *	  runs inside a transaction that the reorder buffer aborts, so it cannot
 *	  write).  Anywhere else (pg_logical_slot_get_changes on a slot created
 *	  with plugin 'mvinc') it prints the changes as text, for debugging.
 *
 *	  Changes of colfile tables arrive as logical messages written by their
 *	  writers while the table is tracked (capture_rowmsg.c) and become the
 *	  same records.
 *
 *	  Which tables are tracked: mvinc.tracked is a user_catalog_table, read
 *	  here under the historic snapshot of the transaction being decoded.
 *	  That snapshot sees the row of track() iff track() committed before the
 *	  decoded transaction did, so every change made after track() committed
 *	  is captured, in WAL order, with no shared state.  Lookups are cached
 *	  per relation; track()/untrack() register a relcache invalidation of the
 *	  source, which logical decoding replays at the commit of their
 *	  transaction, and our relcache callback then drops the cached answer.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/output_plugin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "mvinc.h"
#include "capture/capture.h"
#include "colfile/colfile.h"

bool		MvincCaptureWorkerMode = false;
Tuplestorestate *MvincCaptureBuffer = NULL;
int64		MvincCaptureBufferedRows = 0;
TupleDesc	MvincCaptureBufferDesc = NULL;

typedef struct PluginState
{
	MemoryContext change_cxt;	/* reset after each change */
	StringInfoData record;		/* worker mode: the record being built */
	bool		include_untracked;	/* text mode: print every table */
	bool		began;			/* BEGIN emitted for the current txn */
	int32		seq;			/* order of the change within the txn */
} PluginState;

static HTAB *tracked_cache = NULL;
static Oid	tracked_table_oid = InvalidOid;

/* Relcache invalidation: forget what we knew about the relation */
static void
tracked_cache_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == tracked_table_oid)
	{
		MvincRelFlagForget(tracked_cache, InvalidOid);
		tracked_table_oid = InvalidOid;
	}
	else
		MvincRelFlagForget(tracked_cache, relid);
}

/* Read mvinc.tracked under the current (historic) catalog snapshot */
static bool
lookup_tracked(Oid relid)
{
	Oid			nsp = get_namespace_oid(MVINC_SCHEMA, true);
	Oid			idx;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	bool		found;

	if (!OidIsValid(nsp))
		return false;
	tracked_table_oid = get_relname_relid(MVINC_TRACKED_TABLE, nsp);
	idx = get_relname_relid(MVINC_TRACKED_PKEY, nsp);
	if (!OidIsValid(tracked_table_oid) || !OidIsValid(idx))
		return false;

	rel = table_open(tracked_table_oid, AccessShareLock);
	ScanKeyInit(&key, Anum_tracked_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, idx, true, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* Is the relation tracked, as of the transaction being decoded? */
static bool
is_tracked(Relation relation)
{
	Oid			relid = RelationGetRelid(relation);
	bool		tracked;

	if (tracked_cache == NULL)
	{
		tracked_cache = MvincRelFlagCacheCreate("mvinc tracked tables");
		CacheRegisterRelcacheCallback(tracked_cache_invalidate, (Datum) 0);
	}
	if (MvincRelFlagGet(tracked_cache, relid, &tracked))
		return tracked;
	/* Look it up first: the lookup may process invalidations */
	tracked = lookup_tracked(relid);
	MvincRelFlagSet(tracked_cache, relid, tracked);
	return tracked;
}

/* Full transaction id of a recent xid */
static FullTransactionId
full_xid(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

/* ---------------------------------------------------------------------
 * Worker mode: serialise into the buffer
 * ---------------------------------------------------------------------
 */

/*
 * Start a record of the worker's buffer.  Records are built in one reused
 * buffer, as a text varlena (header first), and copied once, into the
 * tuplestore: per change, allocating and copying each record twice was a
 * tenth of the decoding callback's time.
 */
static StringInfo
record_start(PluginState *st, char kind)
{
	StringInfo	buf = &st->record;

	resetStringInfo(buf);
	appendStringInfoSpaces(buf, VARHDRSZ);
	appendStringInfoChar(buf, kind);
	return buf;
}

/* Append the record built to the worker's buffer */
static void
record_put(PluginState *st)
{
	StringInfo	buf = &st->record;
	Datum		value = PointerGetDatum(buf->data);
	bool		isnull = false;

	SET_VARSIZE(buf->data, buf->len);
	tuplestore_putvalues(MvincCaptureBuffer, MvincCaptureBufferDesc, &value, &isnull);
	/* do not keep the memory of one very large row */
	if (buf->maxlen > 1024 * 1024)
	{
		pfree(buf->data);
		initStringInfo(buf);
	}
}

/* Emit the BEGIN record of the transaction, once, before its first change */
static void
emit_begin(PluginState *st, ReorderBufferTXN *txn)
{
	StringInfo	buf;
	FullTransactionId fxid;
	uint64		lsn = txn->end_lsn;
	uint64		xid8;
	int64		ts = txn->xact_time.commit_time;

	if (st->began)
		return;
	st->began = true;
	fxid = full_xid(txn->xid);
	xid8 = U64FromFullTransactionId(fxid);

	buf = record_start(st, CAPREC_BEGIN);
	appendBinaryStringInfo(buf, (char *) &lsn, sizeof(lsn));
	appendBinaryStringInfo(buf, (char *) &xid8, sizeof(xid8));
	appendBinaryStringInfo(buf, (char *) &ts, sizeof(ts));
	record_put(st);
}

/*
 * Serialise one row image.  keys_only keeps only the identity key columns
 * (the others are written as NULL); fill is the old image to take
 * unchanged TOASTed values from, when it has them.
 */
static void
serialize_image(StringInfo buf, Relation rel, HeapTuple tuple, HeapTuple fill,
				Bitmapset *keys_only)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int16		natts = 0;
	int			natts_pos;

	natts_pos = buf->len;
	appendBinaryStringInfo(buf, (char *) &natts, sizeof(natts));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		uint8		namelen = strlen(name);
		int16		typlen = att->attlen;
		char		byval = att->attbyval;
		bool		isnull = true;
		Datum		value = (Datum) 0;
		char		flag;

		if (att->attisdropped)
			continue;
		natts++;
		appendBinaryStringInfo(buf, (char *) &namelen, 1);
		appendBinaryStringInfo(buf, name, namelen);
		appendBinaryStringInfo(buf, (char *) &att->attnum, sizeof(AttrNumber));
		appendBinaryStringInfo(buf, (char *) &att->atttypid, sizeof(Oid));
		appendBinaryStringInfo(buf, (char *) &typlen, sizeof(typlen));
		appendBinaryStringInfo(buf, &byval, 1);

		if (tuple != NULL &&
			(keys_only == NULL ||
			 bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber, keys_only)))
			value = heap_getattr(tuple, i + 1, desc, &isnull);

		if (isnull)
		{
			flag = 'n';
			appendStringInfoChar(buf, flag);
			continue;
		}
		if (typlen == -1 && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
		{
			bool		fnull = true;
			Datum		fvalue = (Datum) 0;

			if (fill != NULL)
				fvalue = heap_getattr(fill, i + 1, desc, &fnull);
			if (!fnull && !VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(fvalue)))
				value = fvalue;
			else
			{
				/* Unchanged TOASTed value: the writer fetches it */
				uint32		len = VARSIZE_ANY(DatumGetPointer(value));

				appendStringInfoChar(buf, 'u');
				appendBinaryStringInfo(buf, (char *) &len, sizeof(len));
				appendBinaryStringInfo(buf, DatumGetPointer(value), len);
				continue;
			}
		}
		appendStringInfoChar(buf, 'v');
		if (byval)
			appendBinaryStringInfo(buf, (char *) &value, sizeof(Datum));
		else
		{
			uint32		len;
			Pointer		p;

			if (typlen == -1)
			{
				/* Reassembled TOAST arrives as an indirect pointer: inline it */
				if (VARATT_IS_EXTERNAL(DatumGetPointer(value)))
					value = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(value)));
				p = DatumGetPointer(value);
				len = VARSIZE_ANY(p);
			}
			else if (typlen == -2)
			{
				p = DatumGetPointer(value);
				len = strlen(p) + 1;
			}
			else
			{
				p = DatumGetPointer(value);
				len = typlen;
			}
			appendBinaryStringInfo(buf, (char *) &len, sizeof(len));
			appendBinaryStringInfo(buf, p, len);
		}
	}
	memcpy(buf->data + natts_pos, &natts, sizeof(natts));
}

/* Serialise one change log row */
static void
emit_row(PluginState *st, Relation rel, char op, char image,
		 HeapTuple tuple, HeapTuple fill, Bitmapset *keys_only)
{
	StringInfo	buf = record_start(st, CAPREC_CHANGE);
	Oid			relid = RelationGetRelid(rel);

	appendBinaryStringInfo(buf, (char *) &relid, sizeof(relid));
	appendStringInfoChar(buf, op);
	appendStringInfoChar(buf, image);
	appendBinaryStringInfo(buf, (char *) &st->seq, sizeof(st->seq));
	serialize_image(buf, rel, tuple, fill, keys_only);
	record_put(st);
	MvincCaptureBufferedRows++;
	/* a large transaction's changes all come out of its commit record */
	MvincCaptureYield();
}

/* ---------------------------------------------------------------------
 * Text mode
 * ---------------------------------------------------------------------
 */

/* Print a row image as name[type]:value pairs */
static void
print_tuple(StringInfo s, Relation rel, HeapTuple tuple)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		isnull;
		Datum		value;

		if (att->attisdropped)
			continue;
		value = heap_getattr(tuple, i + 1, desc, &isnull);
		appendStringInfo(s, " %s[%s]:", quote_identifier(NameStr(att->attname)),
						 format_type_be(att->atttypid));
		if (isnull)
			appendStringInfoString(s, "null");
		else if (att->attlen == -1 && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
			appendStringInfoString(s, "unchanged-toast-datum");
		else
		{
			Oid			out;
			bool		isvarlena;

			getTypeOutputInfo(att->atttypid, &out, &isvarlena);
			appendStringInfoString(s, quote_literal_cstr(OidOutputFunctionCall(out, value)));
		}
	}
}

/* ---------------------------------------------------------------------
 * Callbacks
 * ---------------------------------------------------------------------
 */

/* Set up the plugin's state; the only option is include-untracked (text mode) */
static void
mvinc_decode_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt,
					 bool is_init)
{
	PluginState *st = palloc0(sizeof(PluginState));
	ListCell   *lc;

	st->change_cxt = AllocSetContextCreate(ctx->context, "mvinc change",
										   ALLOCSET_DEFAULT_SIZES);
	initStringInfo(&st->record);
	foreach(lc, ctx->output_plugin_options)
	{
		DefElem    *elem = lfirst(lc);

		if (strcmp(elem->defname, "include-untracked") == 0)
			st->include_untracked = elem->arg == NULL || defGetBoolean(elem);
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" is not recognized by output plugin \"mvinc\"",
							elem->defname),
					 errhint("The only option is \"include-untracked\".")));
	}
	ctx->output_plugin_private = st;
	opt->output_type = OUTPUT_PLUGIN_TEXTUAL_OUTPUT;
	opt->receive_rewrites = false;
}

/* Nothing to release: our memory lives in the decoding context */
static void
mvinc_decode_shutdown(LogicalDecodingContext *ctx)
{
}

/* Start of a transaction: BEGIN is emitted lazily, before its first tracked change */
static void
mvinc_decode_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PluginState *st = ctx->output_plugin_private;

	st->began = false;
	st->seq = 0;
}

/* End of a transaction: text mode prints COMMIT if anything was printed */
static void
mvinc_decode_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					XLogRecPtr commit_lsn)
{
	PluginState *st = ctx->output_plugin_private;

	if (MvincCaptureWorkerMode || !st->began)
		return;
	OutputPluginPrepareWrite(ctx, true);
	appendStringInfo(ctx->out, "COMMIT %u (lsn %X/%X)", txn->xid,
					 LSN_FORMAT_ARGS(txn->end_lsn));
	OutputPluginWrite(ctx, true);
}

/* Text mode: print BEGIN once before the first printed change */
static void
text_begin(LogicalDecodingContext *ctx, PluginState *st, ReorderBufferTXN *txn)
{
	if (st->began)
		return;
	st->began = true;
	OutputPluginPrepareWrite(ctx, true);
	appendStringInfo(ctx->out, "BEGIN %u", txn->xid);
	OutputPluginWrite(ctx, true);
}

/*
 * One row change of a tracked table (or of any, in text mode with
 * include-untracked): buffer or print it.  oldtuple is the old row (whole
 * or its key, as the replica identity logged it; NULL when an UPDATE kept
 * the key), newtuple the new one.
 */
static void
capture_row_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				   Relation relation, char op, HeapTuple oldtuple,
				   HeapTuple newtuple)
{
	PluginState *st = ctx->output_plugin_private;
	bool		full = relation->rd_rel->relreplident == REPLICA_IDENTITY_FULL;

	if (!MvincCaptureWorkerMode && st->include_untracked)
		;
	else if (!is_tracked(relation))
		return;
	st->seq++;

	if (MvincCaptureWorkerMode)
	{
		Bitmapset  *keys = NULL;

		emit_begin(st, txn);
		if (op != 'i' && (!full || oldtuple == NULL))
			keys = RelationGetIndexAttrBitmap(relation, INDEX_ATTR_BITMAP_IDENTITY_KEY);

		if (op == 'u' || op == 'd')
		{
			/* An UPDATE that kept the key logs no old key: take it from the new row */
			if (oldtuple != NULL)
				emit_row(st, relation, op, (full ? 'o' : 'k'), oldtuple, NULL,
						 full ? NULL : keys);
			else
				emit_row(st, relation, op, 'k', newtuple, NULL, keys);
		}
		if (op == 'i' || op == 'u')
			emit_row(st, relation, op, 'n', newtuple, oldtuple, NULL);
	}
	else
	{
		text_begin(ctx, st, txn);
		OutputPluginPrepareWrite(ctx, true);
		appendStringInfo(ctx->out, "table %s: %s:",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(relation)),
													RelationGetRelationName(relation)),
						 op == 'i' ? "INSERT" : op == 'u' ? "UPDATE" : "DELETE");
		if (oldtuple != NULL)
		{
			appendStringInfoString(ctx->out, " old-key:");
			print_tuple(ctx->out, relation, oldtuple);
			if (newtuple != NULL)
				appendStringInfoString(ctx->out, " new-tuple:");
		}
		if (newtuple != NULL)
			print_tuple(ctx->out, relation, newtuple);
		OutputPluginWrite(ctx, true);
	}
}

/* One heap INSERT/UPDATE/DELETE */
static void
mvinc_decode_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					Relation relation, ReorderBufferChange *change)
{
	PluginState *st = ctx->output_plugin_private;
	MemoryContext old;
	HeapTuple	newtuple = NULL;
	HeapTuple	oldtuple = NULL;
	char		op;

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			op = 'i';
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			op = 'u';
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			op = 'd';
			break;
		default:
			return;
	}
	if (change->data.tp.newtuple)
		newtuple = &change->data.tp.newtuple->tuple;
	if (change->data.tp.oldtuple)
		oldtuple = &change->data.tp.oldtuple->tuple;

	old = MemoryContextSwitchTo(st->change_cxt);
	capture_row_change(ctx, txn, relation, op, oldtuple, newtuple);
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/*
 * A logical message: ours carry one row change of a table whose own WAL
 * decoding cannot read (capture_rowmsg.c).  Transactional ones only: they
 * arrive in the transaction's order under its historic snapshot, so the
 * relation is opened as it was when the row was written.
 */
static void
mvinc_decode_message(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					 XLogRecPtr message_lsn, bool transactional,
					 const char *prefix, Size message_size,
					 const char *message)
{
	PluginState *st = ctx->output_plugin_private;
	MemoryContext old;
	Relation	relation;
	Oid			relid;
	char		op;
	HeapTuple	oldtuple;
	HeapTuple	newtuple;

	if (!transactional || strcmp(prefix, MVINC_ROW_MESSAGE_PREFIX) != 0)
		return;
	old = MemoryContextSwitchTo(st->change_cxt);

	/*
	 * Only our colfile writers emit these; anything else carrying the
	 * prefix (somebody granted pg_logical_emit_message) is skipped with a
	 * warning, never an error: an error here would stop capture at this
	 * record for good.
	 */
	relation = NULL;
	if (MvincParseRowMessage(message, message_size, &relid, &op,
							 &oldtuple, &newtuple))
		relation = RelationIdGetRelation(relid);
	if (RelationIsValid(relation) && ColfileIsColfileRel(relation) &&
		(oldtuple == NULL || MvincRowImageValid(oldtuple, RelationGetDescr(relation))) &&
		(newtuple == NULL || MvincRowImageValid(newtuple, RelationGetDescr(relation))))
		capture_row_change(ctx, txn, relation, op, oldtuple, newtuple);
	else
		ereport(WARNING,
				(errmsg("skipped a malformed \"%s\" logical decoding message at %X/%X",
						MVINC_ROW_MESSAGE_PREFIX, LSN_FORMAT_ARGS(message_lsn)),
				 errdetail("Messages with this prefix carry row changes of tracked colfile tables and are written by mvinc only.")));
	if (RelationIsValid(relation))
		RelationClose(relation);
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/* TRUNCATE: one row with op 't' per tracked table */
static void
mvinc_decode_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					  int nrelations, Relation relations[],
					  ReorderBufferChange *change)
{
	PluginState *st = ctx->output_plugin_private;
	MemoryContext old = MemoryContextSwitchTo(st->change_cxt);

	for (int i = 0; i < nrelations; i++)
	{
		Relation	rel = relations[i];

		if (!(!MvincCaptureWorkerMode && st->include_untracked) && !is_tracked(rel))
			continue;
		st->seq++;
		if (MvincCaptureWorkerMode)
		{
			emit_begin(st, txn);
			emit_row(st, rel, 't', 'n', NULL, NULL, NULL);
		}
		else
		{
			text_begin(ctx, st, txn);
			OutputPluginPrepareWrite(ctx, true);
			appendStringInfo(ctx->out, "table %s: TRUNCATE",
							 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
														RelationGetRelationName(rel)));
			OutputPluginWrite(ctx, true);
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->change_cxt);
}

/* Skip the capture worker's own transactions (they carry DoNotReplicateId) */
static bool
mvinc_decode_filter_origin(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	return origin_id == DoNotReplicateId;
}

/* Output plugin entry point, found by library name "mvinc" */
void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = mvinc_decode_startup;
	cb->begin_cb = mvinc_decode_begin;
	cb->change_cb = mvinc_decode_change;
	cb->truncate_cb = mvinc_decode_truncate;
	cb->message_cb = mvinc_decode_message;
	cb->commit_cb = mvinc_decode_commit;
	cb->filter_by_origin_cb = mvinc_decode_filter_origin;
	cb->shutdown_cb = mvinc_decode_shutdown;
}
