/*-------------------------------------------------------------------------
 * hist_direct.c
 *	  Versions written in one pass, without intermediate tables: the
 *	  refresh's captured changes (HistApplyEventsDirect) and an in-order
 *	  snapshot load (HistSetStateInOrderDirect).
 *
 *	  A query streams its rows into a DestReceiver that ends and opens
 *	  versions through the executor's simple-relation routines (the ones
 *	  logical replication applies changes with: constraints, index entries
 *	  and triggers as an INSERT or UPDATE would).  The query runs under a
 *	  snapshot whose command id is the one the writes use, so it never sees
 *	  them.
 *
 *	  A refresh reads its change-log rows once: the receiver judges each
 *	  row's transaction (the refresh's summary comes out of the same pass),
 *	  drops the key-only old images of updates that kept their key, and
 *	  sorts the rest by key and commit order; the writes follow the sort.
 *
 *	  The refresh's rule is HistEventsSql's, computed per key in order:
 *	  the key's latest stored version (an index probe, backward, on the
 *	  storage's unique index; for a delta touching many keys, a walk along
 *	  that index: hist_keywalk.c) is the state before; of the states after
 *	  each source transaction, those that change presence or values are
 *	  kept; the k-th kept one takes effect at max over j <= k of (time_j -
 *	  j us) + k us, so the times of a key strictly increase; each ends
 *	  where the next kept one takes effect.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "history/history.h"
#include "mv/mv.h"

/* Writes versions into the storage */
typedef struct VersionWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	EPQState	epq;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	int			ncols;			/* view columns */
	AttrNumber *colatt;			/* storage attnum of each, view order */
	AttrNumber	from_att;
	AttrNumber	to_att;
	Snapshot	snap;			/* the reading query's: where ends are fetched */
	int64		opened;
	int64		closed;
} VersionWriter;

static AttrNumber
storage_attnum(Relation rel, const char *name)
{
	AttrNumber	att = attnameAttNum(rel, name, false);

	if (att <= 0)
		elog(ERROR, "history storage \"%s\" lacks column \"%s\"",
			 RelationGetRelationName(rel), name);
	return att;
}

static void
writer_begin(VersionWriter *w, HistDef *def, Oid storage_oid, Snapshot snap)
{
	RangeTblEntry *rte;
	ListCell   *lc;

	memset(w, 0, sizeof(*w));
	w->rel = table_open(storage_oid, RowExclusiveLock);
	w->ncols = list_length(def->columns);
	w->colatt = palloc(sizeof(AttrNumber) * w->ncols);
	foreach(lc, def->columns)
		w->colatt[foreach_current_index(lc)] =
			storage_attnum(w->rel, ((HistColumn *) lfirst(lc))->name);
	w->from_att = storage_attnum(w->rel, "valid_from");
	w->to_att = storage_attnum(w->rel, "valid_to");
	w->snap = snap;

	w->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = storage_oid;
	rte->relkind = RELKIND_RELATION;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(w->estate, list_make1(rte));
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
	w->estate->es_opened_result_relations = list_make1(w->rri);
	w->estate->es_output_cid = GetCurrentCommandId(true);
	w->estate->es_snapshot = snap;
	ExecOpenIndices(w->rri, false);
	EvalPlanQualInit(&w->epq, w->estate, NULL, NIL, -1);
	AfterTriggerBeginQuery();
	w->oldslot = table_slot_create(w->rel, NULL);
	w->newslot = MakeSingleTupleTableSlot(RelationGetDescr(w->rel), &TTSOpsVirtual);
}

/* Open a version: view columns' values (view order), [from, to) */
static void
writer_open(VersionWriter *w, Datum *values, bool *nulls, TimestampTz from, TimestampTz to)
{
	TupleTableSlot *slot = w->newslot;
	int			i;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (i = 0; i < w->ncols; i++)
	{
		slot->tts_values[w->colatt[i] - 1] = values[i];
		slot->tts_isnull[w->colatt[i] - 1] = nulls[i];
	}
	slot->tts_values[w->from_att - 1] = TimestampTzGetDatum(from);
	slot->tts_isnull[w->from_att - 1] = false;
	slot->tts_values[w->to_att - 1] = TimestampTzGetDatum(to);
	slot->tts_isnull[w->to_att - 1] = false;
	ExecStoreVirtualTuple(slot);
	ExecSimpleRelationInsert(w->rri, w->estate, slot);
	ResetPerTupleExprContext(w->estate);
	w->opened++;
}

/*
 * End the current version at tid (visible in the query's snapshot) at to;
 * current: a slot that holds it already (nothing written since), or NULL
 */
static void
writer_end(VersionWriter *w, ItemPointer tid, TupleTableSlot *current, TimestampTz to)
{
	TupleTableSlot *slot = w->newslot;
	int			natts = slot->tts_tupleDescriptor->natts;

	if (current == NULL)
	{
		current = w->oldslot;
		if (!table_tuple_fetch_row_version(w->rel, tid, w->snap, current))
			elog(ERROR, "history version (%u,%u) vanished during the refresh",
				 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
	}
	Assert(ItemPointerEquals(tid, &current->tts_tid));
	slot_getallattrs(current);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, current->tts_values, sizeof(Datum) * natts);
	memcpy(slot->tts_isnull, current->tts_isnull, sizeof(bool) * natts);
	slot->tts_values[w->to_att - 1] = TimestampTzGetDatum(to);
	slot->tts_isnull[w->to_att - 1] = false;
	ExecStoreVirtualTuple(slot);
	ExecSimpleRelationUpdate(w->rri, w->estate, &w->epq, current, slot);
	ResetPerTupleExprContext(w->estate);
	w->closed++;
}

static void
writer_finish(VersionWriter *w)
{
	AfterTriggerEndQuery(w->estate);
	EvalPlanQualEnd(&w->epq);
	ExecDropSingleTupleTableSlot(w->oldslot);
	ExecDropSingleTupleTableSlot(w->newslot);
	ExecCloseIndices(w->rri);
	FreeExecutorState(w->estate);
	table_close(w->rel, NoLock);
}

/*
 * Make snap (or a new snapshot) current with the command id the writes
 * will use: the query run under it does not see them.
 */
static Snapshot
begin_stream(Snapshot snap)
{
	CommandCounterIncrement();
	PushCopiedSnapshot(snap ? snap : GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	return GetActiveSnapshot();
}

/* Run sql under the current snapshot, streaming its rows into dest */
static void
run_into(const char *sql, int nargs, Oid *types, Datum *args, DestReceiver *dest)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);
	SPIExecuteOptions opts = {0};
	ParamListInfo params = NULL;
	int			rc;
	int			i;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	if (nargs > 0)
	{
		params = makeParamList(nargs);
		for (i = 0; i < nargs; i++)
		{
			params->params[i].value = args[i];
			params->params[i].isnull = false;
			params->params[i].pflags = PARAM_FLAG_CONST;
			params->params[i].ptype = types[i];
		}
	}
	opts.params = params;
	opts.read_only = true;		/* keeps the snapshot and its command id */
	opts.dest = dest;
	rc = SPI_execute_plan_extended(plan, &opts);
	if (rc < 0)
		elog(ERROR, "history statement failed (%d): %s", rc, sql);
	SPI_freeplan(plan);
}

/* After the writes: later statements see them */
static void
end_stream(void)
{
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * Equality of two values as the SQL's IS NOT DISTINCT FROM with "=" (or by
 * text); by binary image for a value column whose equal values can be
 * spelled differently (hist_apply.c, values_equal_sql)
 */
typedef struct ValueEq
{
	FmgrInfo	eq;
	bool		has_eq;
	bool		by_image;
	bool		key_image;		/* a key whose equal values can be spelled
								 * differently: a new spelling is a change */
	int16		typlen;
	bool		typbyval;
	Oid			collation;
	FmgrInfo	out;
} ValueEq;

static void
value_eq_init(ValueEq *e, HistColumn *col)
{
	Oid			typid = col->typid;
	Oid			collation = col->collation;
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR_FINFO);
	Oid			outfn;
	bool		varlena;

	e->by_image = !col->is_key && !MvTypeImageStable(typid, col->typmod, collation);
	get_typlenbyval(typid, &e->typlen, &e->typbyval);
	e->has_eq = OidIsValid(tc->eq_opr);
	if (e->has_eq)
		fmgr_info(tc->eq_opr_finfo.fn_oid, &e->eq);
	e->collation = collation;
	getTypeOutputInfo(typid, &outfn, &varlena);
	fmgr_info(outfn, &e->out);
}

static bool
value_eq(ValueEq *e, Datum a, bool anull, Datum b, bool bnull)
{
	if (anull || bnull)
		return anull && bnull;
	if (e->by_image)
		return datum_image_eq(a, b, e->typbyval, e->typlen);
	if (e->has_eq)
		return DatumGetBool(FunctionCall2Coll(&e->eq, e->collation, a, b));
	return strcmp(OutputFunctionCall(&e->out, a), OutputFunctionCall(&e->out, b)) == 0;
}

/* ---------------------------------------------------------------------
 * The refresh: captured changes in key and commit order
 * ---------------------------------------------------------------------
 */

typedef enum LastKind
{
	LAST_NONE,					/* nothing before */
	LAST_CURRENT,				/* the stored current version */
	LAST_ENDED,					/* the latest stored version, ended */
	LAST_STATE					/* a kept state of the delta */
} LastKind;

typedef struct EventReceiver
{
	DestReceiver pub;
	HistDef    *def;
	VersionWriter *w;
	int			ncols;
	int			nkeys;
	int		   *keycol;			/* view column index of each key, key order */
	bool	   *is_key;			/* per view column */
	ValueEq    *eqs;			/* per view column (keys: the index's equality) */
	AttrNumber	lsn_att;		/* in the query's rows */
	AttrNumber	time_att;
	AttrNumber	present_att;
	AttrNumber	seq_att;
	AttrNumber	new_att;
	AttrNumber	xid_att;
	AttrNumber	op_att;
	AttrNumber	image_att;

	/* which rows are the delta, and what it holds */
	MvDeltaJudge judge;
	MvDeltaSummary *sum;
	bool		truncated;		/* a TRUNCATE: stopped, nothing written */

	/* the query's rows, sorted by key and commit order here */
	Tuplesortstate *sort;
	int64		sorted;			/* rows put into it */
	TupleTableSlot *out;		/* a row out of the sort */
	TupleTableSlot *held;		/* a key-only old image, until its new one */
	MemoryContext heldcxt;		/* its values */
	bool		has_held;
	XLogRecPtr	held_lsn;
	int32		held_seq;

	/* the probe of a key's latest version */
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData *skeys;
	TupleTableSlot *probe;
	HistKeyWalk *walk;			/* or a walk along the index, when dense */
	Datum	   *walkkey;		/* its key, in key order */

	MemoryContext scancxt;		/* the caller's: the probe allocates as it
								 * goes, the sort outlives the query */
	MemoryContext keycxt;		/* reset per key */
	MemoryContext rowcxt;		/* reset per row */

	/* the key being read */
	bool		have_key;
	Datum	   *keyvals;		/* per view column (keys only) */
	XLogRecPtr	last_lsn;

	/* the last kept row of the key */
	LastKind	last;
	bool		last_present;
	Datum	   *last_values;
	bool	   *last_nulls;
	TimestampTz last_eff;
	ItemPointerData last_tid;
	int			rn;
	TimestampTz running;		/* max of time_j - j us */
} EventReceiver;

/* The storage's unique btree index on (keys, valid_from), or NULL */
static Relation
open_key_index(Relation rel, HistDef *def, VersionWriter *w, int *keycol)
{
	List	   *indexes = RelationGetIndexList(rel);
	int			nkeys = list_length(def->keys);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = index->rd_index;
		bool		ok = ix->indisunique && ix->indisvalid && index->rd_rel->relam == BTREE_AM_OID &&
			ix->indnkeyatts == nkeys + 1 && RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL;
		int			i;

		for (i = 0; ok && i < nkeys; i++)
			ok = ix->indkey.values[i] == w->colatt[keycol[i]];
		if (ok && ix->indkey.values[nkeys] == w->from_att)
			return index;
		index_close(index, AccessShareLock);
	}
	return NULL;
}

static void
no_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
no_shutdown(DestReceiver *self)
{
}

static void
events_destroy(DestReceiver *self)
{
}

/* The kept row before one that takes effect at eff is written */
static void
flush_last(EventReceiver *r, TimestampTz eff)
{
	/* the probe still holds the current version: the key's first write */
	if (r->last == LAST_CURRENT)
		writer_end(r->w, &r->last_tid, r->probe, eff);
	else if (r->last == LAST_STATE && r->last_present)
		writer_open(r->w, r->last_values, r->last_nulls, r->last_eff, eff);
}

/* A row is kept: number it, give it its effective time */
static TimestampTz
take_effect(EventReceiver *r, TimestampTz time)
{
	TimestampTz candidate;

	r->rn++;
	candidate = time - r->rn;
	if (r->rn == 1 || candidate > r->running)
		r->running = candidate;
	return r->running + r->rn;
}

/* Remember values (view order) as the last kept row's, in keycxt */
static void
keep_values(EventReceiver *r, Datum *values, bool *nulls)
{
	MemoryContext old = MemoryContextSwitchTo(r->keycxt);
	int			i;

	for (i = 0; i < r->ncols; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(r->w->rel), r->w->colatt[i] - 1);

		r->last_nulls[i] = nulls[i];
		r->last_values[i] = nulls[i] ? (Datum) 0 : datumCopy(values[i], att->attbyval, att->attlen);
	}
	MemoryContextSwitchTo(old);
}

/* The key's latest stored version: the state before its changes */
static void
probe_key(EventReceiver *r, Datum *values)
{
	MemoryContext old;
	bool		found = false;
	int			i;

	r->last = LAST_NONE;
	r->last_present = false;
	r->rn = 0;
	if (r->index == NULL)
		elog(ERROR, "history storage has no index on its key");
	for (i = 0; i < r->nkeys; i++)
		r->skeys[i].sk_argument = values[r->keycol[i]];
	old = MemoryContextSwitchTo(r->scancxt);
	if (r->walk != NULL && !HistKeyWalkBroken(r->walk))
	{
		for (i = 0; i < r->nkeys; i++)
			r->walkkey[i] = values[r->keycol[i]];
		found = HistKeyWalkTo(r->walk, r->walkkey, r->w->snap, r->probe);
	}
	if (r->walk == NULL || HistKeyWalkBroken(r->walk))
	{
		index_rescan(r->scan, r->skeys, r->nkeys, NULL, 0);
		found = index_getnext_slot(r->scan, BackwardScanDirection, r->probe);
	}
	MemoryContextSwitchTo(old);
	if (found)
	{
		bool		isnull;
		TimestampTz from = DatumGetTimestampTz(slot_getattr(r->probe, r->w->from_att, &isnull));
		TimestampTz to = DatumGetTimestampTz(slot_getattr(r->probe, r->w->to_att, &isnull));

		if (TIMESTAMP_IS_NOEND(to))
		{
			Datum	   *vals = palloc(sizeof(Datum) * r->ncols);
			bool	   *nulls = palloc(sizeof(bool) * r->ncols);

			for (i = 0; i < r->ncols; i++)
				vals[i] = slot_getattr(r->probe, r->w->colatt[i], &nulls[i]);
			keep_values(r, vals, nulls);
			r->last = LAST_CURRENT;
			r->last_present = true;
			r->last_tid = r->probe->tts_tid;
			r->last_eff = take_effect(r, from);
		}
		else
		{
			r->last = LAST_ENDED;
			r->last_eff = take_effect(r, to - 1);
		}
	}
}

/* The key's last kept state holds until a later change (or for good) */
static void
finish_key(EventReceiver *r)
{
	if (r->have_key && r->last == LAST_STATE && r->last_present)
		writer_open(r->w, r->last_values, r->last_nulls, r->last_eff, DT_NOEND);
	r->have_key = false;
}

static bool
same_key(EventReceiver *r, Datum *values)
{
	int			i;

	for (i = 0; i < r->nkeys; i++)
	{
		int			c = r->keycol[i];

		if (!value_eq(&r->eqs[c], r->keyvals[c], false, values[c], false))
			return false;
	}
	return true;
}

/* One row of the sorted delta: the rule, per key in commit order */
static void
process_row(EventReceiver *r, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(r->rowcxt);
	Datum	   *values;
	bool	   *nulls;
	XLogRecPtr	lsn;
	TimestampTz time;
	bool		present;
	bool		isnull;
	bool		kept;
	int			i;

	slot_getallattrs(slot);
	values = slot->tts_values;
	nulls = slot->tts_isnull;
	for (i = 0; i < r->nkeys; i++)
		if (nulls[r->keycol[i]])
			HistKeyMissing(r->def);
	lsn = DatumGetLSN(slot_getattr(slot, r->lsn_att, &isnull));
	time = DatumGetTimestampTz(slot_getattr(slot, r->time_att, &isnull));
	present = DatumGetBool(slot_getattr(slot, r->present_att, &isnull));

	if (!r->have_key || !same_key(r, values))
	{
		finish_key(r);
		MemoryContextReset(r->keycxt);
		MemoryContextSwitchTo(r->keycxt);
		for (i = 0; i < r->nkeys; i++)
		{
			int			c = r->keycol[i];
			Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor, c);

			r->keyvals[c] = datumCopy(values[c], att->attbyval, att->attlen);
		}
		MemoryContextSwitchTo(r->rowcxt);
		r->have_key = true;
		r->last_lsn = InvalidXLogRecPtr;
		probe_key(r, values);
	}
	else if (lsn == r->last_lsn)
	{
		/* the transaction's last image came first */
		MemoryContextSwitchTo(old);
		MemoryContextReset(r->rowcxt);
		return;
	}
	r->last_lsn = lsn;

	kept = present != r->last_present;
	if (!kept && present)
	{
		for (i = 0; i < r->ncols && !kept; i++)
			if (!r->is_key[i])
				kept = !value_eq(&r->eqs[i], r->last_values[i], r->last_nulls[i],
								 values[i], nulls[i]);
			else if (r->eqs[i].key_image)
				kept = !datum_image_eq(r->last_values[i], values[i],
									   r->eqs[i].typbyval, r->eqs[i].typlen);
	}
	if (kept)
	{
		TimestampTz eff = take_effect(r, time);

		flush_last(r, eff);
		r->last = LAST_STATE;
		r->last_present = present;
		r->last_eff = eff;
		if (present)
			keep_values(r, values, nulls);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->rowcxt);
}

/* Do the keys of two rows of the query (slots) compare equal? */
static bool
same_key_rows(EventReceiver *r, TupleTableSlot *a, TupleTableSlot *b)
{
	int			i;

	for (i = 0; i < r->nkeys; i++)
	{
		int			c = r->keycol[i];
		bool		anull;
		bool		bnull;
		Datum		av = slot_getattr(a, c + 1, &anull);
		Datum		bv = slot_getattr(b, c + 1, &bnull);

		if (anull || bnull || !value_eq(&r->eqs[c], av, false, bv, false))
			return false;
	}
	return true;
}

/*
 * Keep a key-only old image until the next row shows whether it is needed
 * (usually not: then nothing was copied into a tuple).  Its by-reference
 * values (the key's) are copied.
 */
static void
hold_row(EventReceiver *r, TupleTableSlot *slot, XLogRecPtr lsn, int32 seq)
{
	TupleDesc	desc = r->held->tts_tupleDescriptor;
	MemoryContext old;
	int			i;

	slot_getallattrs(slot);
	ExecClearTuple(r->held);
	MemoryContextReset(r->heldcxt);
	old = MemoryContextSwitchTo(r->heldcxt);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		r->held->tts_isnull[i] = slot->tts_isnull[i];
		r->held->tts_values[i] = slot->tts_isnull[i] ? (Datum) 0 :
			datumCopy(slot->tts_values[i], att->attbyval, att->attlen);
	}
	MemoryContextSwitchTo(old);
	ExecStoreVirtualTuple(r->held);
	r->has_held = true;
	r->held_lsn = lsn;
	r->held_seq = seq;
}

/*
 * The query's rows go into the sort, but for the key-only old image of an
 * UPDATE that kept the key: capture writes it (from the new row) just
 * before the new image, and the rule would skip it (it follows the new
 * image of its key and transaction in the sort).  Most updates keep
 * their key: this halves what is sorted.
 */
static bool
events_collect(TupleTableSlot *slot, DestReceiver *self)
{
	EventReceiver *r = (EventReceiver *) self;
	bool		isnull;
	XLogRecPtr	lsn = DatumGetLSN(slot_getattr(slot, r->lsn_att, &isnull));
	int32		seq;
	char		op;
	char		image;

	/* the summary MvSummarizeDelta would make, in the same pass */
	switch (MvDeltaJudgeRow(&r->judge, slot_getattr(slot, r->xid_att, &isnull)))
	{
		case MV_DELTA_ROW_UNSEEN:
			MvDeltaSummaryUnseen(r->sum, lsn);
			return true;
		case MV_DELTA_ROW_CONSUMED:
			return true;
		case MV_DELTA_ROW_DELTA:
			break;
	}
	op = DatumGetChar(slot_getattr(slot, r->op_att, &isnull));
	image = DatumGetChar(slot_getattr(slot, r->image_att, &isnull));
	MvDeltaSummaryAdd(r->sum, op, image);
	if (op == 't')
	{
		/* it ends every key present then: the set-based rule's work */
		r->truncated = true;
		return false;
	}
	seq = DatumGetInt32(slot_getattr(slot, r->seq_att, &isnull));

	if (r->has_held)
	{
		r->has_held = false;
		if (!(DatumGetBool(slot_getattr(slot, r->new_att, &isnull)) &&
			  lsn == r->held_lsn && seq == r->held_seq &&
			  same_key_rows(r, r->held, slot)))
		{
			tuplesort_puttupleslot(r->sort, r->held);
			r->sorted++;
		}
	}
	if (op == 'u' && image == 'k')
		hold_row(r, slot, lsn, seq);
	else
	{
		tuplesort_puttupleslot(r->sort, slot);
		r->sorted++;
	}
	return true;
}

/*
 * Sort by key, then per key and transaction the last image first (a later
 * sequence number; a new image before the old one of the same change).
 * Keys sort as the storage's key index orders them (its operator family
 * and collation), not as the change log's columns would: the rows of a
 * key must be adjacent by the index's equality (same_key, the lookups),
 * and the walk needs the index's order.  The change log's column can
 * differ: a view's key may carry its own COLLATE, and a log made before
 * the log followed ALTER COLUMN ... COLLATE keeps the old collation.
 */
static void
events_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	EventReceiver *r = (EventReceiver *) self;
	int			nsort = r->nkeys + 3;
	AttrNumber *atts;
	Oid		   *ops;
	Oid		   *colls;
	bool	   *nullsfirst;
	MemoryContext old;
	int			i;

	/* the sort outlives the query: the executor's memory is gone by then */
	old = MemoryContextSwitchTo(r->scancxt);
	typeinfo = CreateTupleDescCopy(typeinfo);
	atts = palloc(sizeof(AttrNumber) * nsort);
	ops = palloc(sizeof(Oid) * nsort);
	colls = palloc0(sizeof(Oid) * nsort);
	nullsfirst = palloc0(sizeof(bool) * nsort);
	for (i = 0; i < r->nkeys; i++)
	{
		Oid			intype = r->index->rd_opcintype[i];

		atts[i] = r->keycol[i] + 1;
		ops[i] = get_opfamily_member(r->index->rd_opfamily[i], intype, intype,
									 BTLessStrategyNumber);
		if (!OidIsValid(ops[i]))
			elog(ERROR, "no ordering operator for key column %d of the history storage", i + 1);
		colls[i] = r->index->rd_indcollation[i];
	}
	atts[i] = r->lsn_att;
	ops[i++] = lookup_type_cache(PG_LSNOID, TYPECACHE_LT_OPR)->lt_opr;
	atts[i] = r->seq_att;
	ops[i] = lookup_type_cache(INT4OID, TYPECACHE_GT_OPR)->gt_opr;
	nullsfirst[i++] = true;
	atts[i] = r->new_att;
	ops[i] = lookup_type_cache(BOOLOID, TYPECACHE_GT_OPR)->gt_opr;
	nullsfirst[i++] = true;
	r->sort = tuplesort_begin_heap(typeinfo, nsort, atts, ops, colls, nullsfirst,
								   work_mem, NULL, TUPLESORT_NONE);
	r->out = MakeSingleTupleTableSlot(typeinfo, &TTSOpsMinimalTuple);
	r->held = MakeSingleTupleTableSlot(typeinfo, &TTSOpsVirtual);
	r->heldcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc history held row",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(old);
}

static void
events_shutdown(DestReceiver *self)
{
	EventReceiver *r = (EventReceiver *) self;

	if (r->has_held)
	{
		tuplesort_puttupleslot(r->sort, r->held);
		r->sorted++;
	}
	r->has_held = false;
}

/*
 * Apply the captured changes of changelog with from < lsn <= to whose
 * transactions new_snap sees and old_snap does not (pg_snapshot text) to
 * the storage, and summarize them into sum as MvSummarizeDelta does, in
 * one pass.  False when nothing was written: the storage lacks its key
 * index (sum untouched), or the changes hold a TRUNCATE (sum partial).
 */
bool
HistApplyEventsDirect(HistDef *def, Oid storage_oid, const char *changelog,
					  XLogRecPtr from, XLogRecPtr to, const char *new_snap,
					  const char *old_snap, MvDeltaSummary *sum, HistApplied *out)
{
	EventReceiver r = {0};
	char	   *delta_rows_sql;
	VersionWriter w;
	char	   *sql;
	Snapshot	snap;
	ListCell   *lc;
	int			i;

	r.def = def;
	r.ncols = list_length(def->columns);
	r.nkeys = list_length(def->keys);
	r.keycol = palloc(sizeof(int) * r.nkeys);
	r.is_key = palloc0(sizeof(bool) * r.ncols);
	r.eqs = palloc0(sizeof(ValueEq) * r.ncols);
	foreach(lc, def->keys)
	{
		ListCell   *lv;

		foreach(lv, def->columns)
			if (lfirst(lv) == lfirst(lc))
				r.keycol[foreach_current_index(lc)] = foreach_current_index(lv);
	}

	snap = begin_stream(NULL);
	writer_begin(&w, def, storage_oid, snap);
	r.w = &w;
	r.index = open_key_index(w.rel, def, &w, r.keycol);
	if (r.index == NULL)
	{
		writer_finish(&w);
		end_stream();
		return false;
	}

	/* keys compare as the index does; values as values_equal_sql (hist_apply.c) */
	r.skeys = palloc0(sizeof(ScanKeyData) * r.nkeys);
	for (i = 0; i < r.nkeys; i++)
	{
		Oid			opfamily = r.index->rd_opfamily[i];
		Oid			intype = r.index->rd_opcintype[i];
		Oid			eqop = get_opfamily_member(opfamily, intype, intype, BTEqualStrategyNumber);
		int			c = r.keycol[i];

		if (!OidIsValid(eqop))
			elog(ERROR, "no equality operator for key column %d of the history storage", i + 1);
		r.is_key[c] = true;
		fmgr_info(get_opcode(eqop), &r.eqs[c].eq);
		r.eqs[c].has_eq = true;
		r.eqs[c].collation = r.index->rd_indcollation[i];
		ScanKeyInit(&r.skeys[i], i + 1, BTEqualStrategyNumber, get_opcode(eqop), (Datum) 0);
		r.skeys[i].sk_collation = r.index->rd_indcollation[i];
	}
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);

		ValueEq    *e = &r.eqs[foreach_current_index(lc)];

		if (!col->is_key)
			value_eq_init(e, col);
		else if (!MvTypeImageStable(col->typid, col->typmod, col->collation))
		{
			e->key_image = true;
			get_typlenbyval(col->typid, &e->typlen, &e->typbyval);
		}
	}
	r.lsn_att = r.ncols + 1;
	r.time_att = r.ncols + 2;
	r.present_att = r.ncols + 3;
	r.seq_att = r.ncols + 4;
	r.new_att = r.ncols + 5;
	r.xid_att = r.ncols + 6;
	r.op_att = r.ncols + 7;
	r.image_att = r.ncols + 8;
	memset(sum, 0, sizeof(MvDeltaSummary));
	r.sum = sum;
	MvDeltaJudgeInit(&r.judge, new_snap, old_snap);
	r.keyvals = palloc0(sizeof(Datum) * r.ncols);
	r.last_values = palloc0(sizeof(Datum) * r.ncols);
	r.last_nulls = palloc0(sizeof(bool) * r.ncols);
	r.keycxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc history key", ALLOCSET_DEFAULT_SIZES);
	r.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc history row", ALLOCSET_DEFAULT_SIZES);
	r.scancxt = CurrentMemoryContext;
	r.scan = index_beginscan(w.rel, r.index, snap, r.nkeys, 0);
	r.probe = table_slot_create(w.rel, NULL);
	r.pub.receiveSlot = events_collect;
	r.pub.rStartup = events_startup;
	r.pub.rShutdown = events_shutdown;
	r.pub.rDestroy = events_destroy;
	r.pub.mydest = DestNone;

	/*
	 * Every row of the range, in change-log order: the receiver judges
	 * them and sorts the delta's (events_startup); the writes follow.
	 */
	delta_rows_sql = HistDeltaRowsSql(def, changelog,
									  psprintf("s._mvinc_lsn > '%X/%X' AND s._mvinc_lsn <= '%X/%X'",
											   LSN_FORMAT_ARGS(from), LSN_FORMAT_ARGS(to)),
									  true);
	sql = psprintf("SELECT %s, d._mvinc_lsn, d._mvinc_time, d._mvinc_new AND d._mvinc_in, "
				   "d._mvinc_seq, d._mvinc_new, d._mvinc_xid, d._mvinc_op, d._mvinc_image "
				   "FROM (%s) d",
				   HistColumnListSql(def, true, true, "d"), delta_rows_sql);
	MvProgressSetPhase(MV_PHASE_READ_CHANGES, -1);
	run_into(sql, 0, NULL, NULL, (DestReceiver *) &r);
	MvDeltaJudgeEnd(&r.judge);
	if (!r.truncated)
	{
		int64		changes = sum->inserts + sum->others;

		MvProgressSetMode(changes > 0 ? "incremental" : "noop");
		MvProgressSetPhase(MV_PHASE_APPLY_CHANGES, changes);
		tuplesort_performsort(r.sort);
		/*
		 * A walk when it reads fewer pages than the probes would: a page's
		 * few hundred entries walked cost about what 20 descents do.
		 */
		if (r.sorted >= (int64) 20 * RelationGetNumberOfBlocks(r.index))
		{
			r.walk = HistKeyWalkBegin(w.rel, r.index, snap, r.nkeys);
			r.walkkey = palloc(sizeof(Datum) * r.nkeys);
		}
		while (tuplesort_gettupleslot(r.sort, true, false, r.out, NULL))
			process_row(&r, r.out);
		finish_key(&r);
		if (r.walk)
			HistKeyWalkEnd(r.walk);
		MvProgressSetRows(changes);
	}
	tuplesort_end(r.sort);
	ExecDropSingleTupleTableSlot(r.out);
	ExecDropSingleTupleTableSlot(r.held);
	MemoryContextDelete(r.heldcxt);

	index_endscan(r.scan);
	ExecDropSingleTupleTableSlot(r.probe);
	index_close(r.index, AccessShareLock);
	MemoryContextDelete(r.keycxt);
	MemoryContextDelete(r.rowcxt);
	writer_finish(&w);
	end_stream();
	out->opened = w.opened;
	out->closed = w.closed;
	return !r.truncated;
}

/* ---------------------------------------------------------------------
 * An in-order snapshot load: the diff against the current versions
 * ---------------------------------------------------------------------
 */

typedef struct DiffReceiver
{
	DestReceiver pub;
	VersionWriter *w;
	TimestampTz t;
	HistApplied *out;
	bool		count_rows;		/* rows arrive unchanged ones too: count */
	MemoryContext rowcxt;		/* reset per row */
} DiffReceiver;

/* Rows: ctid of the current version or NULL, in, covered, same, view columns */
static bool
diff_receive(TupleTableSlot *slot, DestReceiver *self)
{
	DiffReceiver *r = (DiffReceiver *) self;
	MemoryContext old;
	bool		in;
	bool		covered;

	slot_getsomeattrs(slot, 4);
	in = DatumGetBool(slot->tts_values[1]);
	if (r->count_rows && in)
		r->out->rows++;
	if (DatumGetBool(slot->tts_values[3]))
		return true;			/* unchanged */
	old = MemoryContextSwitchTo(r->rowcxt);
	slot_getallattrs(slot);
	covered = DatumGetBool(slot->tts_values[2]);
	if (covered)
		writer_end(r->w, (ItemPointer) DatumGetPointer(slot->tts_values[0]), NULL, r->t);
	if (in)
		writer_open(r->w, slot->tts_values + 4, slot->tts_isnull + 4, r->t, DT_NOEND);
	if (in && covered)
		r->out->changed_keys++;
	else if (in)
		r->out->new_keys++;
	else
		r->out->closed_keys++;
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->rowcxt);
	return true;
}

/*
 * The state at t (state_sql's rows, read under snap when given) holds
 * from t on, and no version starts or ends after t: the current versions
 * of keys that left or changed end at t, new and changed keys open a
 * version at t.  count_rows: count state_sql's rows into out->rows (the
 * unchanged keys then pass through the receiver too).
 */
void
HistSetStateInOrderDirect(HistDef *def, Oid storage_oid, const char *storage,
						  const char *state_sql, Snapshot snap, TimestampTz t,
						  const char *values_equal, bool count_rows, HistApplied *out)
{
	DiffReceiver r = {0};
	VersionWriter w;
	StringInfoData sql;
	Snapshot	fetch;
	ListCell   *lc;
	Oid			types[1] = {TIMESTAMPTZOID};
	Datum		args[1] = {TimestampTzGetDatum(t)};
	int			nestlevel;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT o._mvinc_ctid, f._mvinc_f IS NOT NULL, o._mvinc_o IS NOT NULL, "
					 "f._mvinc_f IS NOT NULL AND o._mvinc_o IS NOT NULL AND (%s)", values_equal);
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);

		appendStringInfo(&sql, ", %s%s", col->is_key ? "" : "f.", quote_identifier(col->name));
	}
	appendStringInfo(&sql, " FROM %s", HistStateJoinCurrentSql(def, storage, state_sql, true));
	if (!count_rows)
		appendStringInfo(&sql, " WHERE f._mvinc_f IS NULL OR o._mvinc_o IS NULL OR NOT (%s)",
						 values_equal);
	if (count_rows)
		out->rows = 0;

	fetch = begin_stream(snap);
	writer_begin(&w, def, storage_oid, fetch);
	r.w = &w;
	r.t = t;
	r.out = out;
	r.count_rows = count_rows;
	r.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc history row", ALLOCSET_DEFAULT_SIZES);
	r.pub.receiveSlot = diff_receive;
	r.pub.rStartup = no_startup;
	r.pub.rShutdown = no_shutdown;
	r.pub.rDestroy = events_destroy;
	r.pub.mydest = DestNone;

	nestlevel = HistPreferMergeJoin();
	run_into(sql.data, 1, types, args, (DestReceiver *) &r);
	AtEOXact_GUC(true, nestlevel);
	MemoryContextDelete(r.rowcxt);
	writer_finish(&w);
	end_stream();
	out->opened = w.opened;
	out->closed = w.closed;
}
