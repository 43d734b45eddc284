/*-------------------------------------------------------------------------
 * mv_merge.c
 *	  The incremental (append-only) refresh of aggregate views with GROUP
 *	  BY, merged in C: the delta's states per group come from one SQL
 *	  aggregation over the change log (read through an SPI cursor); each
 *	  delta group is looked up in the storage's unique key index, its
 *	  stored states are combined with the delta's through the aggregate's
 *	  own combine function (aggstate.c), and the row is updated in place
 *	  (HOT when the page has room) or, for a new group, inserted.
 *
 *	  This is what INSERT .. ON CONFLICT DO UPDATE SET s = agg_combine(..)
 *	  did, minus the executor per row, the speculative insertion machinery
 *	  and the tuple lock (and its WAL record) before each update: refreshes
 *	  of one view are serialized by the ExclusiveLock on the view, and only
 *	  a refresh writes the storage, so no other writer can touch the rows.
 *	  The storage is an ordinary heap table: heap_update and heap_insert
 *	  WAL-log the writes as any UPDATE or INSERT would, index entries go in
 *	  through ExecInsertIndexTuples (unique checks included), and the pgstat
 *	  counters that drive autovacuum are kept by the heap functions.
 *
 *	  The states written are byte for byte those of agg_combine: the same
 *	  deserialize, combine and serialize calls with the same argument type
 *	  and collation (mv_state.c's merge_sample).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/skey.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mv/aggstate.h"
#include "mv/mv.h"

/* Delta rows fetched from the cursor at a time */
#define MERGE_BATCH 1000

/* What merging one storage column takes */
typedef struct MergeColumn
{
	MvColRole	role;
	MvincAggInfo *info;			/* MV_COL_AGG: combine/serialize */
} MergeColumn;

/*
 * The storage's unique key index: the one unique btree index on exactly
 * the group key columns k1..kn in order, or InvalidOid.
 */
static Oid
key_index(Relation rel, int nkeys)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	irel = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ind = irel->rd_index;
		bool		ok;
		int			i;

		ok = ind->indisunique && ind->indisvalid && ind->indisready &&
			ind->indnullsnotdistinct && ind->indnkeyatts == nkeys &&
			ind->indnatts == nkeys && irel->rd_rel->relam == BTREE_AM_OID &&
			RelationGetIndexExpressions(irel) == NIL &&
			RelationGetIndexPredicate(irel) == NIL;
		for (i = 0; ok && i < nkeys; i++)
			ok = ind->indkey.values[i] == i + 1;
		index_close(irel, AccessShareLock);
		if (ok)
		{
			found = lfirst_oid(lc);
			break;
		}
	}
	list_free(indexes);
	return found;
}

/*
 * Can the storage be merged in C?  It must be a heap table without
 * triggers whose columns are the definition's, in order, followed only by
 * generated columns (the stored results), with the unique key index;
 * anything else keeps the SQL path.
 */
static bool
merge_possible(Relation rel, MvDef *def, int nkeys, Oid *indexid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	int			i = 0;

	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID || rel->trigdesc != NULL ||
		desc->natts < list_length(def->columns) || nkeys == 0)
		return false;
	for (i = list_length(def->columns); i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attgenerated != ATTRIBUTE_GENERATED_STORED)
			return false;
	i = 0;
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		Form_pg_attribute att = TupleDescAttr(desc, i++);

		if (att->attisdropped || strcmp(NameStr(att->attname), col->physname) != 0)
			return false;
		if (col->role == MV_COL_AGG && att->atttypid != BYTEAOID)
			return false;
		if (col->role == MV_COL_COUNT && att->atttypid != INT8OID)
			return false;
	}
	*indexid = key_index(rel, nkeys);
	return OidIsValid(*indexid);
}

/* The info to combine states of col, as agg_combine with its sample gets it */
static MvincAggInfo *
combine_info(MvColumn *col, MemoryContext mcxt)
{
	Aggref	   *agg = (Aggref *) col->expr;
	Oid			sampletype = InvalidOid;
	Oid			collation = InvalidOid;

	if (!agg->aggstar && agg->args != NIL)
	{
		Node	   *arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;

		sampletype = exprType(arg);
		collation = exprCollation(arg);
	}
	/* states of collatable inputs merge under the default collation */
	if (!OidIsValid(collation))
		collation = DEFAULT_COLLATION_OID;
	return MvincAggInfoCreateLike(col->aggfnoid, sampletype, false, collation, mcxt);
}

/* The stored state a combined with the delta's b (either may be empty) */
static Datum
combine_states(MvincAggInfo *info, Datum a, bool anull, Datum b, bool bnull,
			   bool *isnull)
{
	MvincAggValue v;
	bytea	   *result;

	*isnull = false;
	if (bnull)
	{
		*isnull = anull;
		return a;
	}
	if (anull)
		return b;
	v.cxt = CurrentMemoryContext;
	/* the storage's state and the delta's, both serialized by refresh */
	MvincAggDeserialize(info, &v, DatumGetByteaPP(a), true);
	MvincAggCombine(info, &v, DatumGetByteaPP(b), true);
	result = MvincAggSerialize(info, &v);
	if (result == NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	return PointerGetDatum(result);
}

/*
 * Store the row whose first ncols values newslot holds, with the stored
 * results (generated columns after them) computed as the executor would.
 */
static void
store_with_results(ResultRelInfo *rri, EState *estate, TupleTableSlot *newslot, int ncols)
{
	TupleDesc	desc = newslot->tts_tupleDescriptor;

	for (int i = ncols; i < desc->natts; i++)
	{
		newslot->tts_values[i] = (Datum) 0;
		newslot->tts_isnull[i] = true;
	}
	ExecStoreVirtualTuple(newslot);
	if (desc->constr && desc->constr->has_generated_stored)
		/* every result anew: all states may have changed */
		ExecComputeStoredGenerated(rri, estate, newslot, CMD_INSERT);
}

/* Equality scan keys of the index for one group key (NULLs searched) */
static void
init_scankeys(Relation irel, int nkeys, ScanKey keys)
{
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		Oid			opfamily = irel->rd_opfamily[i];
		Oid			opcintype = irel->rd_opcintype[i];
		Oid			op = get_opfamily_member(opfamily, opcintype, opcintype,
											 BTEqualStrategyNumber);

		if (!OidIsValid(op))
			elog(ERROR, "missing equality operator for index column %d of \"%s\"",
				 i + 1, RelationGetRelationName(irel));
		ScanKeyEntryInitialize(&keys[i], 0, i + 1, BTEqualStrategyNumber,
							   opcintype, irel->rd_indcollation[i],
							   get_opcode(op), (Datum) 0);
	}
}

/* Point the scan keys at one group's key values */
static void
set_scankeys(int nkeys, ScanKey keys, const Datum *values, const bool *nulls)
{
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		if (nulls[i])
		{
			/* NULLS NOT DISTINCT: the group of NULL is found by IS NULL */
			keys[i].sk_flags = SK_ISNULL | SK_SEARCHNULL;
			keys[i].sk_argument = (Datum) 0;
		}
		else
		{
			keys[i].sk_flags = 0;
			keys[i].sk_argument = values[i];
		}
	}
}

/*
 * Merge the delta's storage rows, produced by select_sql (columns in
 * storage order, one row per group), into the storage table.  Returns
 * false, having written nothing, when the storage does not allow it; the
 * caller then takes the SQL path.  Runs inside the refresh's SPI
 * connection, as the internal user.
 */
bool
MvMergeDelta(MvDef *def, Oid storage_oid, const char *select_sql)
{
	Relation	rel;
	Relation	irel;
	Oid			indexid;
	int			ncols = list_length(def->columns);
	int			nkeys = 0;
	MergeColumn *cols;
	ListCell   *lc;
	int			i;
	MemoryContext mergecxt;
	MemoryContext rowcxt;
	MemoryContext oldcxt;
	EState	   *estate;
	ResultRelInfo *rri;
	RangeTblEntry *rte;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	IndexScanDesc scan;
	ScanKeyData *skeys;
	SPIPlanPtr	plan;
	Portal		portal;
	CommandId	cid;
	Datum	   *dvalues;
	bool	   *dnulls;

	foreach(lc, def->columns)
		if (((MvColumn *) lfirst(lc))->role == MV_COL_GROUP)
			nkeys++;

	rel = table_open(storage_oid, RowExclusiveLock);
	if (!merge_possible(rel, def, nkeys, &indexid))
	{
		elog(DEBUG1, "storage \"%s\" cannot be merged directly: using INSERT .. ON CONFLICT",
			 RelationGetRelationName(rel));
		table_close(rel, NoLock);
		return false;
	}

	mergecxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc merge",
									 ALLOCSET_DEFAULT_SIZES);
	rowcxt = AllocSetContextCreate(mergecxt, "mvinc merge row",
								   ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(mergecxt);

	cols = palloc0(sizeof(MergeColumn) * ncols);
	i = 0;
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		cols[i].role = col->role;
		if (col->role == MV_COL_AGG)
			cols[i].info = combine_info(col, mergecxt);
		i++;
	}

	/* An executor state for the index insertions, as logical apply has */
	estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = storage_oid;
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	for (i = 0; i < ncols; i++)
		if (cols[i].role != MV_COL_GROUP)
			rte->updatedCols = bms_add_member(rte->updatedCols,
											  i + 1 - FirstLowInvalidHeapAttributeNumber);
	ExecInitRangeTable(estate, list_make1(rte));
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	cid = GetCurrentCommandId(true);
	estate->es_output_cid = cid;

	oldslot = table_slot_create(rel, NULL);
	newslot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	dvalues = palloc(sizeof(Datum) * ncols);
	dnulls = palloc(sizeof(bool) * ncols);

	/*
	 * Probes see the latest committed row of each group and this
	 * transaction's own writes (an earlier refresh in it): nobody else
	 * writes the storage while we hold the view's lock.
	 */
	irel = index_open(indexid, AccessShareLock);
	skeys = palloc(sizeof(ScanKeyData) * nkeys);
	init_scankeys(irel, nkeys, skeys);
	scan = index_beginscan(rel, irel, SnapshotSelf, nkeys, 0);

	MemoryContextSwitchTo(oldcxt);
	plan = SPI_prepare(select_sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", select_sql);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);

	for (;;)
	{
		uint64		n;

		SPI_cursor_fetch(portal, true, MERGE_BATCH);
		n = SPI_processed;
		if (n == 0)
			break;
		if (SPI_tuptable->tupdesc->natts != ncols)
			elog(ERROR, "delta of materialized view has %d columns, storage %d",
				 SPI_tuptable->tupdesc->natts, ncols);
		for (uint64 r = 0; r < n; r++)
		{
			bool		found;

			CHECK_FOR_INTERRUPTS();
			MemoryContextReset(rowcxt);
			MemoryContextSwitchTo(rowcxt);
			heap_deform_tuple(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, dvalues, dnulls);

			ExecClearTuple(newslot);
			set_scankeys(nkeys, skeys, dvalues, dnulls);

			/* the index AM keeps scan-lifetime allocations: not per row */
			MemoryContextSwitchTo(mergecxt);
			index_rescan(scan, skeys, nkeys, NULL, 0);
			found = index_getnext_slot(scan, ForwardScanDirection, oldslot);
			MemoryContextSwitchTo(rowcxt);
			if (found)
			{
				bool		update_indexes;

				slot_getallattrs(oldslot);
				for (i = 0; i < ncols; i++)
				{
					Datum		ov = oldslot->tts_values[i];
					bool		on = oldslot->tts_isnull[i];

					switch (cols[i].role)
					{
						case MV_COL_AGG:
							newslot->tts_values[i] =
								combine_states(cols[i].info, ov, on, dvalues[i], dnulls[i],
											   &newslot->tts_isnull[i]);
							break;
						case MV_COL_COUNT:
							newslot->tts_values[i] =
								Int64GetDatum(DatumGetInt64(ov) + DatumGetInt64(dvalues[i]));
							newslot->tts_isnull[i] = false;
							break;
						default:
							/* the group key as stored */
							newslot->tts_values[i] = ov;
							newslot->tts_isnull[i] = on;
							break;
					}
				}
				store_with_results(rri, estate, newslot, ncols);
				simple_table_tuple_update(rel, &oldslot->tts_tid, newslot,
										  estate->es_snapshot, &update_indexes);
				if (update_indexes)
					ExecInsertIndexTuples(rri, newslot, estate, true, false, NULL, NIL);
			}
			else
			{
				/* a new group: the delta row is the stored row */
				memcpy(newslot->tts_values, dvalues, sizeof(Datum) * ncols);
				memcpy(newslot->tts_isnull, dnulls, sizeof(bool) * ncols);
				store_with_results(rri, estate, newslot, ncols);
				table_tuple_insert(rel, newslot, cid, 0, NULL);
				ExecInsertIndexTuples(rri, newslot, estate, false, false, NULL, NIL);
			}
			/* drop the pin on the old row's page before the next probe */
			ExecClearTuple(oldslot);
			ExecClearTuple(newslot);
			ResetPerTupleExprContext(estate);
			MemoryContextSwitchTo(oldcxt);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);

	index_endscan(scan);
	index_close(irel, NoLock);
	ExecDropSingleTupleTableSlot(oldslot);
	ExecDropSingleTupleTableSlot(newslot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(mergecxt);
	/* later statements of the refresh see the merged rows */
	CommandCounterIncrement();
	return true;
}
