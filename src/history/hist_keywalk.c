/*-------------------------------------------------------------------------
 * hist_keywalk.c
 *	  A walk along a history storage's unique (keys, valid_from) index that
 *	  finds the latest version of each key of a refresh's delta, for a
 *	  delta that touches many keys (hist_direct.c decides).  The delta's
 *	  keys come sorted in the index's order, so instead of a descent per
 *	  key the walk reads the index's entries once, index-only, and fetches
 *	  from the heap only the touched keys' entries, latest first, as a
 *	  backward probe would.
 *
 *	  The walk's position only moves forward, so it needs the keys strictly
 *	  increasing in the index's order; at the first that is not, it reports
 *	  itself broken and the caller probes from there on.  The refresh's own
 *	  inserts land behind the walk (their keys are done) or on pages it has
 *	  yet to read, where their keys sort before the next key and are passed;
 *	  a split of the page it is on moves only entries it has already read.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "history/history.h"

struct HistKeyWalk
{
	IndexScanDesc scan;			/* whole index, forward, index-only */
	IndexFetchTableData *fetch;
	int			nkeys;
	FmgrInfo   *cmp;			/* the index's order, per key column */
	Oid		   *collations;
	bool		pending;		/* scan->xs_itup: an entry not yet passed */
	bool		done;			/* no entries left */
	bool		broken;			/* keys out of order: probes from here on */
	bool		have_prev;
	Datum	   *prev;			/* the last key walked to, in prevcxt */
	MemoryContext prevcxt;
	ItemPointerData *tids;		/* the key's entries, in index order */
	int			ntids;
	int			maxtids;
};

HistKeyWalk *
HistKeyWalkBegin(Relation rel, Relation index, Snapshot snap, int nkeys)
{
	HistKeyWalk *k = palloc0(sizeof(HistKeyWalk));
	int			i;

	k->nkeys = nkeys;
	k->cmp = palloc(sizeof(FmgrInfo) * nkeys);
	k->collations = palloc(sizeof(Oid) * nkeys);
	for (i = 0; i < nkeys; i++)
	{
		fmgr_info_copy(&k->cmp[i], index_getprocinfo(index, i + 1, BTORDER_PROC),
					   CurrentMemoryContext);
		k->collations[i] = index->rd_indcollation[i];
	}
	k->prev = palloc(sizeof(Datum) * nkeys);
	k->prevcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc history walk",
									   ALLOCSET_SMALL_SIZES);
	k->maxtids = 8;
	k->tids = palloc(sizeof(ItemPointerData) * k->maxtids);
	k->scan = index_beginscan(rel, index, snap, 0, 0);
	k->scan->xs_want_itup = true;
	index_rescan(k->scan, NULL, 0, NULL, 0);
	k->fetch = table_index_fetch_begin(rel);
	return k;
}

void
HistKeyWalkEnd(HistKeyWalk *k)
{
	table_index_fetch_end(k->fetch);
	index_endscan(k->scan);
	MemoryContextDelete(k->prevcxt);
}

/* Order of the index entry scan->xs_itup against key (index order) */
static int
walk_compare(HistKeyWalk *k, Datum *key)
{
	int			i;

	for (i = 0; i < k->nkeys; i++)
	{
		bool		isnull;
		Datum		v = index_getattr(k->scan->xs_itup, i + 1, k->scan->xs_itupdesc, &isnull);
		int32		c;

		if (isnull)
			return 1;			/* (keys are NOT NULL; sorts last) */
		c = DatumGetInt32(FunctionCall2Coll(&k->cmp[i], k->collations[i], v, key[i]));
		if (c != 0)
			return c;
	}
	return 0;
}

/*
 * Walk to key (its columns in key order): the latest of its entries whose
 * version the snapshot sees goes into slot.  False when it has none, or
 * when the walk broke (k->broken: key is not past the previous one).
 */
bool
HistKeyWalkTo(HistKeyWalk *k, Datum *key, Snapshot snap, TupleTableSlot *slot)
{
	MemoryContext old;
	int			i;

	if (k->have_prev)
	{
		int32		c = 0;

		for (i = 0; i < k->nkeys && c == 0; i++)
			c = DatumGetInt32(FunctionCall2Coll(&k->cmp[i], k->collations[i],
												key[i], k->prev[i]));
		if (c <= 0)
		{
			k->broken = true;
			return false;
		}
	}
	MemoryContextReset(k->prevcxt);
	old = MemoryContextSwitchTo(k->prevcxt);
	for (i = 0; i < k->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(k->scan->indexRelation->rd_att, i);

		k->prev[i] = datumCopy(key[i], att->attbyval, att->attlen);
	}
	MemoryContextSwitchTo(old);
	k->have_prev = true;

	/* the key's entries; the first one past it stays pending */
	k->ntids = 0;
	while (!k->done)
	{
		int			c;

		if (!k->pending)
		{
			if (index_getnext_tid(k->scan, ForwardScanDirection) == NULL)
			{
				k->done = true;
				break;
			}
			k->pending = true;
		}
		c = walk_compare(k, key);
		if (c > 0)
			break;
		k->pending = false;
		if (c < 0)
			continue;
		if (k->ntids == k->maxtids)
		{
			k->maxtids *= 2;
			k->tids = repalloc(k->tids, sizeof(ItemPointerData) * k->maxtids);
		}
		k->tids[k->ntids++] = k->scan->xs_heaptid;
	}

	/* the latest version the snapshot sees, as a backward probe finds it */
	for (i = k->ntids - 1; i >= 0; i--)
	{
		bool		call_again = false;
		bool		all_dead = false;

		if (table_index_fetch_tuple(k->fetch, &k->tids[i], snap, slot, &call_again, &all_dead))
			return true;
	}
	return false;
}

/* Did a key out of the index's order end the walk? */
bool
HistKeyWalkBroken(HistKeyWalk *k)
{
	return k->broken;
}
