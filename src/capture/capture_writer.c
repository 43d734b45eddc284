/*-------------------------------------------------------------------------
 * capture_writer.c
 *	  Writes the capture worker's buffer of decoded changes into the change
 *	  log tables, and records the applied position in mvinc.capture_progress
 *	  in the same transaction.
 *
 *	  Source columns are matched to change log columns by attribute number,
 *	  through the source column's name now (the change log's columns follow
 *	  the source's by name), so a change decoded before an ALTER TABLE of
 *	  its source lands in the change log as it is now: a column that is
 *	  gone is left out, a new one is NULL, a renamed one (even renamed by
 *	  the transaction that wrote the change) keeps its values, and a column
 *	  dropped and added again under its name does not get the old one's.  A value whose type differs from the change log column is
 *	  converted through its text form.  Unchanged TOASTed values that the
 *	  decoder could not fill from the old row image are fetched here from
 *	  the source's TOAST table by their TOAST pointer.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "mvinc.h"
#include "capture/capture.h"

/*
 * Rows per table_multi_insert call: as COPY does, a batch of some 64 kB
 * (also a bound on how long the worker runs without yielding the CPU)
 */
#define MULTI_INSERT_ROWS	128
#define MULTI_INSERT_BYTES	(64 * 1024)

/* A change log opened for the current batch */
typedef struct Target
{
	int			spi_nest;
	Oid			relid;			/* source */
	Relation	rel;			/* change log, NULL when not tracked */
	ResultRelInfo *rri;
	TupleDesc	desc;			/* unpinned copy of the change log's descriptor */
	TupleTableSlot **slots;		/* rows waiting for table_multi_insert */
	int			nbuffered;
	Size		buffered_bytes;
	BulkInsertState bistate;
	int			nmapped;
	int		   *column_of;		/* source attnum - 1 -> change log column
								 * (0-based), -1 for none, -2 not looked up */
} Target;

/* Read the applied position (progress table) */
XLogRecPtr
MvincWriterReadProgress(void)
{
	int			spi_nest;
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	bool		isnull;

	spi_nest = MvincSpiConnect();
	if (SPI_execute("SELECT applied_lsn FROM mvinc.capture_progress", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			lsn = DatumGetLSN(d);
	}
	MvincSpiFinish(spi_nest);
	return lsn;
}

/*
 * Record the applied position.  Once per batch, up to a hundred times a
 * second: the plan is kept, parsing and planning it each time was a tenth
 * of the worker's time.
 */
static void
write_progress(XLogRecPtr lsn)
{
	static SPIPlanPtr plan = NULL;
	int			spi_nest;
	Datum		args[1] = {LSNGetDatum(lsn)};

	spi_nest = MvincSpiConnect();
	if (plan == NULL)
	{
		Oid			argtypes[1] = {PG_LSNOID};

		plan = SPI_prepare("UPDATE mvinc.capture_progress SET applied_lsn = $1", 1, argtypes);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the update of mvinc.capture_progress");
	}
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.capture_progress");
	MvincSpiFinish(spi_nest);
}

/* A worker stopping for good: the next one starts afresh (no position) */
void
MvincWriterResetProgress(void)
{
	write_progress(InvalidXLogRecPtr);
}

/* Open the change log of a source for this batch */
static Target *
get_target(HTAB *targets, EState *estate, Oid relid)
{
	Target	   *t;
	bool		found;
	Oid			logid;

	t = hash_search(targets, &relid, HASH_ENTER, &found);
	if (found)
		return t;
	t->relid = relid;
	t->rel = NULL;
	t->nmapped = 0;
	t->column_of = NULL;
	logid = MvincChangeLogRelid(relid);
	if (!OidIsValid(logid))
		return t;
	t->rel = try_relation_open(logid, RowExclusiveLock);
	if (t->rel == NULL)
		return t;
	/* Untracked while we waited for the lock? */
	if (MvincChangeLogRelid(relid) != logid)
	{
		table_close(t->rel, RowExclusiveLock);
		t->rel = NULL;
		return t;
	}
	t->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(t->rri, t->rel, 0, NULL, 0);
	ExecOpenIndices(t->rri, false);
	/* Slots of a copy pin nothing: no resource owner work per slot */
	t->desc = CreateTupleDescCopy(RelationGetDescr(t->rel));
	t->slots = palloc0(sizeof(TupleTableSlot *) * MULTI_INSERT_ROWS);
	t->nbuffered = 0;
	t->buffered_bytes = 0;
	t->bistate = GetBulkInsertState();
	return t;
}

/* Insert the buffered rows of a change log, then their index entries */
static void
flush_target(Target *t, EState *estate, CommandId cid)
{
	if (t->nbuffered == 0)
		return;
	table_multi_insert(t->rel, t->slots, t->nbuffered, cid, 0, t->bistate);
	for (int i = 0; i < t->nbuffered; i++)
	{
		if (t->rri->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(t->rri, t->slots[i], estate, false, false, NULL, NIL));
		ResetPerTupleExprContext(estate);
		ExecClearTuple(t->slots[i]);
		MvincCaptureYield();
	}
	t->nbuffered = 0;
	t->buffered_bytes = 0;
}

/* Change log column (0-based) for a source attribute, or -1 */
static int
find_column(Target *t, AttrNumber attnum)
{
	if (attnum < 1)
		return -1;
	if (attnum > t->nmapped)
	{
		int			n = Max(attnum, 2 * t->nmapped);

		t->column_of = t->column_of == NULL
			? MemoryContextAlloc(TopTransactionContext, n * sizeof(int))
			: repalloc(t->column_of, n * sizeof(int));
		for (int k = t->nmapped; k < n; k++)
			t->column_of[k] = -2;
		t->nmapped = n;
	}
	if (t->column_of[attnum - 1] == -2)
	{
		TupleDesc	desc = RelationGetDescr(t->rel);
		HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(t->relid),
										  Int16GetDatum(attnum));
		int			col = -1;

		if (HeapTupleIsValid(tup))
		{
			Form_pg_attribute source_att = (Form_pg_attribute) GETSTRUCT(tup);

			for (int j = MVINC_META_COLUMNS; j < desc->natts && !source_att->attisdropped; j++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, j);

				if (!att->attisdropped &&
					strcmp(NameStr(att->attname), NameStr(source_att->attname)) == 0)
				{
					col = j;
					break;
				}
			}
			ReleaseSysCache(tup);
		}
		t->column_of[attnum - 1] = col;
	}
	return t->column_of[attnum - 1];
}

/* Convert a value to another type through text */
static Datum
convert_value(Datum value, Oid from, Oid to, int32 typmod)
{
	Oid			out,
				in,
				ioparam;
	bool		isvarlena;
	char	   *str;

	getTypeOutputInfo(from, &out, &isvarlena);
	str = OidOutputFunctionCall(out, value);
	getTypeInputInfo(to, &in, &ioparam);
	return OidInputFunctionCall(in, str, ioparam, typmod);
}

/*
 * Fetch an unchanged TOASTed value by its pointer.  The slot's xmin keeps
 * VACUUM from removing the chunks (capture_worker.c), but a TRUNCATE,
 * VACUUM FULL or CLUSTER of the source before the change was captured still
 * removes them: then the value is written as NULL with a WARNING rather
 * than stopping capture for the whole database.  A source tracked with
 * full_old_rows never needs this (the old image carries the value).
 */
static Datum
fetch_unchanged_toast(struct varlena *pointer, const char *column, Oid relid, bool *isnull)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile Datum result = (Datum) 0;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		result = PointerGetDatum(detoast_external_attr(pointer));
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		*isnull = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errmsg("unchanged TOASTed value of column \"%s\" of table %u could not be fetched; it is logged as NULL",
						column, relid),
				 errdetail("%s", edata->message),
				 errhint("Track the table with full_old_rows => true to log complete old rows.")));
		*isnull = true;
	}
	PG_END_TRY();
	return result;
}

/* Decode one change record into the target's slot */
static void
fill_slot(Target *t, const char *p, TupleTableSlot *slot)
{
	TupleDesc	desc = RelationGetDescr(t->rel);
	int16		natts;

	memcpy(&natts, p, sizeof(natts));
	p += sizeof(natts);

	for (int i = 0; i < natts; i++)
	{
		uint8		namelen = (uint8) *p++;
		char		name[NAMEDATALEN];
		AttrNumber	attnum;
		Oid			typid;
		int16		typlen;
		char		byval;
		char		flag;
		Datum		value = (Datum) 0;
		bool		isnull = true;
		int			col;

		memcpy(name, p, namelen);
		name[namelen] = '\0';
		p += namelen;
		memcpy(&attnum, p, sizeof(AttrNumber));
		p += sizeof(AttrNumber);
		memcpy(&typid, p, sizeof(Oid));
		p += sizeof(Oid);
		memcpy(&typlen, p, sizeof(typlen));
		p += sizeof(typlen);
		byval = *p++;
		flag = *p++;
		col = find_column(t, attnum);

		if (flag == 'v' && byval)
		{
			memcpy(&value, p, sizeof(Datum));
			p += sizeof(Datum);
			isnull = false;
		}
		else if (flag == 'v' || flag == 'u')
		{
			uint32		len;
			char	   *copy;

			memcpy(&len, p, sizeof(len));
			p += sizeof(len);
			if (col < 0)
			{
				p += len;		/* a column the change log no longer has */
				continue;
			}
			copy = palloc(len);
			memcpy(copy, p, len);
			p += len;
			if (flag == 'u')
				value = fetch_unchanged_toast((struct varlena *) copy, name, t->relid, &isnull);
			else
			{
				value = PointerGetDatum(copy);
				isnull = false;
			}
		}

		if (col < 0)
			continue;
		if (!isnull)
		{
			Form_pg_attribute att = TupleDescAttr(desc, col);

			if (att->atttypid != typid)
				value = convert_value(value, typid, att->atttypid, att->atttypmod);
		}
		slot->tts_values[col] = value;
		slot->tts_isnull[col] = isnull;
	}
}

/*
 * Write every buffered change of transactions that end after applied_lsn,
 * and set the applied position to new_applied.  Runs in the caller's
 * transaction, with an active snapshot.
 */
void
MvincWriterApplyBuffer(XLogRecPtr applied_lsn, XLogRecPtr new_applied)
{
	HASHCTL		ctl;
	HTAB	   *targets;
	HASH_SEQ_STATUS hs;
	Target	   *t;
	EState	   *estate = CreateExecutorState();
	TupleTableSlot *bslot = MakeSingleTupleTableSlot(MvincCaptureBufferDesc, &TTSOpsMinimalTuple);
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc row",
												 ALLOCSET_DEFAULT_SIZES);
	CommandId	cid = GetCurrentCommandId(true);
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	uint64		xid8 = 0;
	TimestampTz ts = 0;
	bool		skip = true;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(Target);
	ctl.hcxt = CurrentMemoryContext;
	targets = hash_create("mvinc change logs", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	while (tuplestore_gettupleslot(MvincCaptureBuffer, true, false, bslot))
	{
		bool		isnull;
		bytea	   *rec = DatumGetByteaPP(slot_getattr(bslot, 1, &isnull));
		const char *p = VARDATA_ANY(rec);
		MemoryContext old;

		if (*p == CAPREC_BEGIN)
		{
			p++;
			memcpy(&lsn, p, sizeof(lsn));
			memcpy(&xid8, p + 8, sizeof(xid8));
			memcpy(&ts, p + 16, sizeof(ts));
			skip = lsn <= applied_lsn;
		}
		else if (!skip)
		{
			Oid			relid;
			char		op,
						image;
			int32		seq;
			TupleTableSlot *slot;

			p++;
			memcpy(&relid, p, sizeof(relid));
			p += sizeof(relid);
			op = *p++;
			image = *p++;
			memcpy(&seq, p, sizeof(seq));
			p += sizeof(seq);

			t = get_target(targets, estate, relid);
			if (t->rel == NULL)
				continue;

			/* Slots live as long as the batch; the row's values only until materialized */
			if (t->slots[t->nbuffered] == NULL)
				t->slots[t->nbuffered] = MakeSingleTupleTableSlot(t->desc,
																  table_slot_callbacks(t->rel));
			slot = t->slots[t->nbuffered];
			old = MemoryContextSwitchTo(rowcxt);
			ExecClearTuple(slot);
			for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
			{
				slot->tts_values[i] = (Datum) 0;
				slot->tts_isnull[i] = true;
			}
			slot->tts_values[0] = LSNGetDatum(lsn);
			slot->tts_values[1] = FullTransactionIdGetDatum(FullTransactionIdFromU64(xid8));
			slot->tts_values[2] = TimestampTzGetDatum(ts);
			slot->tts_values[3] = Int32GetDatum(seq);
			slot->tts_values[4] = CharGetDatum(op);
			slot->tts_values[5] = CharGetDatum(image);
			for (int i = 0; i < MVINC_META_COLUMNS; i++)
				slot->tts_isnull[i] = false;
			fill_slot(t, p, slot);
			ExecStoreVirtualTuple(slot);

			/* The slot keeps its own copy: the row's memory can go */
			ExecMaterializeSlot(slot);
			t->buffered_bytes += ExecFetchSlotHeapTuple(slot, false, NULL)->t_len;
			MemoryContextSwitchTo(old);
			MemoryContextReset(rowcxt);
			MvincCaptureYield();
			if (++t->nbuffered == MULTI_INSERT_ROWS || t->buffered_bytes > MULTI_INSERT_BYTES)
				flush_target(t, estate, cid);
		}
	}

	hash_seq_init(&hs, targets);
	while ((t = hash_seq_search(&hs)) != NULL)
		if (t->rel != NULL)
			flush_target(t, estate, cid);

	write_progress(new_applied);

	hash_seq_init(&hs, targets);
	while ((t = hash_seq_search(&hs)) != NULL)
	{
		if (t->rel == NULL)
			continue;
		for (int i = 0; i < MULTI_INSERT_ROWS && t->slots[i] != NULL; i++)
			ExecDropSingleTupleTableSlot(t->slots[i]);
		FreeBulkInsertState(t->bistate);
		ExecCloseIndices(t->rri);
		table_close(t->rel, NoLock);
	}
	ExecDropSingleTupleTableSlot(bslot);
	FreeExecutorState(estate);
	MemoryContextDelete(rowcxt);
}
