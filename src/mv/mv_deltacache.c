/*-------------------------------------------------------------------------
 * mv_deltacache.c
 *	  The delta of a hybrid read kept between statements.  A dashboard reads
 *	  a view again and again while the same changes wait to be refreshed,
 *	  and each read computed its delta anew (the inserts' states of the
 *	  transactions its snapshot sees past the checkpoint: most of a whole
 *	  read's time).  Two reads whose snapshots see the change-log rows of
 *	  the same transactions past the same checkpoint of the same storage
 *	  read the same delta.  The decision (mv_read.c) names those
 *	  transactions (MvDeltaVisible); a delta of inserts alone, of all the
 *	  view's groups, is kept here under that name, in this backend, for a
 *	  few views, when it takes less than work_mem (mvinc.keep_hybrid_delta
 *	  turns this off).  A delta is forgotten when a decision about its view
 *	  finds another checkpoint or storage, and when the view or its
 *	  storage is changed or dropped (relcache invalidation).
 *
 *	  Why the name is enough: the change-log rows of a transaction the
 *	  snapshot sees are all there once the decision's wait for capture
 *	  returned (the wait covers every commit the snapshot sees), they never
 *	  change, and the decision found retention not begun past the
 *	  checkpoint; the delta's query reads nothing but them and the view's
 *	  definition, which the storage's oid and the source's generation pin.
 *	  A delta with updates or deletes also reads the storage and the source
 *	  (groups recomputed) and is not kept.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "mv/mv.h"

/* Views whose delta a backend keeps */
#define KEPT_DELTAS 4

typedef struct KeptDelta
{
	MvDeltaKey	key;			/* xids in cxt */
	MemoryContext cxt;			/* NULL: the slot is free */
	MvDeltaRows *rows;
} KeptDelta;

static KeptDelta kept[KEPT_DELTAS];
static int	kept_next = 0;

/* mvinc.keep_hybrid_delta */
static bool keep_hybrid_delta = true;

/* Forget a kept delta */
static void
forget(KeptDelta *k)
{
	MemoryContext cxt = k->cxt;

	k->cxt = NULL;
	if (cxt)
		MemoryContextDelete(cxt);
}

/* Forget every delta kept */
static void
forget_all(void)
{
	for (int i = 0; i < KEPT_DELTAS; i++)
		forget(&kept[i]);
}

static void relation_changed(Datum arg, Oid relid);

/* Turned off: the deltas kept go (their memory with them) */
static void
keep_assign(bool newval, void *extra)
{
	if (!newval)
		forget_all();
}

/* Install the GUC */
void
MvDeltaCacheInit(void)
{
	DefineCustomBoolVariable("mvinc.keep_hybrid_delta",
							 "Keeps a hybrid read's delta of inserts for later reads that see the same changes.",
							 "A later statement whose snapshot sees the same transactions' changes past the "
							 "same checkpoint reuses it instead of computing it again (in each backend, for a "
							 "few views, deltas smaller than work_mem).",
							 &keep_hybrid_delta, true, PGC_USERSET, 0, NULL, keep_assign, NULL);
	CacheRegisterRelcacheCallback(relation_changed, (Datum) 0);
}

static bool
key_equal(const MvDeltaKey *a, const MvDeltaKey *b)
{
	return a->viewid == b->viewid && a->storage_oid == b->storage_oid &&
		a->checkpoint_lsn == b->checkpoint_lsn && a->generation == b->generation &&
		a->visible.rows == b->visible.rows && a->visible.nxids == b->visible.nxids &&
		memcmp(a->visible.xids, b->visible.xids,
			   a->visible.nxids * sizeof(FullTransactionId)) == 0;
}

/* A copy of rows (tuples and descriptor) in the current memory context */
static MvDeltaRows *
copy_rows(MvDeltaRows *rows)
{
	MvDeltaRows *copy = palloc0(sizeof(MvDeltaRows));
	ListCell   *lc;

	copy->desc = CreateTupleDescCopy(rows->desc);
	copy->projection = rows->projection;
	foreach(lc, rows->tuples)
		copy->tuples = lappend(copy->tuples, heap_copytuple(lfirst(lc)));
	Assert(rows->replaced == NIL);
	return copy;
}

/*
 * The delta kept under key, copied into the current memory context (the
 * caller's lifetime is its own), or NULL.
 */
MvDeltaRows *
MvDeltaCacheGet(const MvDeltaKey *key)
{
	if (key == NULL || key->visible.xids == NULL || !keep_hybrid_delta)
		return NULL;
	for (int i = 0; i < KEPT_DELTAS; i++)
		if (kept[i].cxt && key_equal(&kept[i].key, key))
			return copy_rows(kept[i].rows);
	return NULL;
}

/* Keep a copy of rows, the delta of inserts known by key, if small enough */
void
MvDeltaCachePut(const MvDeltaKey *key, MvDeltaRows *rows)
{
	KeptDelta  *k = NULL;
	KeptDelta	made;
	MemoryContext old;

	if (key == NULL || key->visible.xids == NULL || rows->replaced != NIL || rows->projection ||
		!keep_hybrid_delta)
		return;

	/*
	 * The copy is made whole before it takes a slot: an error while copying
	 * (out of memory) leaves every slot as it was
	 */
	made.cxt = AllocSetContextCreate(TopMemoryContext, "mvinc kept delta", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(made.cxt);
	PG_TRY();
	{
		made.key = *key;
		made.key.visible.xids = palloc(key->visible.nxids * sizeof(FullTransactionId));
		memcpy(made.key.visible.xids, key->visible.xids,
			   key->visible.nxids * sizeof(FullTransactionId));
		made.rows = copy_rows(rows);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(made.cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	/* what it takes, all told (each read that uses it copies it again) */
	if (MemoryContextMemAllocated(made.cxt, true) > (Size) work_mem * 1024)
	{
		MemoryContextDelete(made.cxt);
		return;
	}

	/* the view's slot (its older delta is of no use now), else the next */
	for (int i = 0; i < KEPT_DELTAS && k == NULL; i++)
		if (kept[i].cxt && kept[i].key.viewid == key->viewid)
			k = &kept[i];
	if (k == NULL)
	{
		k = &kept[kept_next];
		kept_next = (kept_next + 1) % KEPT_DELTAS;
	}
	if (k->cxt)
		MemoryContextDelete(k->cxt);
	*k = made;
}

/*
 * A decision about viewid found its checkpoint at checkpoint_lsn, its
 * storage storage_oid: a delta kept under another is of no use any more
 * (a refresh moved the checkpoint, the storage was made anew).
 */
void
MvDeltaCacheForgetStale(Oid viewid, Oid storage_oid, XLogRecPtr checkpoint_lsn)
{
	for (int i = 0; i < KEPT_DELTAS; i++)
		if (kept[i].cxt && kept[i].key.viewid == viewid &&
			(kept[i].key.storage_oid != storage_oid ||
			 kept[i].key.checkpoint_lsn != checkpoint_lsn))
			forget(&kept[i]);
}

/* A relation changed or went: forget the deltas of it as a view or storage */
static void
relation_changed(Datum arg, Oid relid)
{
	for (int i = 0; i < KEPT_DELTAS; i++)
		if (kept[i].cxt && (!OidIsValid(relid) || kept[i].key.viewid == relid ||
							kept[i].key.storage_oid == relid))
			forget(&kept[i]);
}
