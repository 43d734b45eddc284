/*-------------------------------------------------------------------------
 * mv_append.c
 *	  The append table of an aggregate view with GROUP BY, and compaction.
 *
 *	  Merging an append into the stored states in place dirties every
 *	  storage page that holds a touched group: at 0.1% of a large source
 *	  that is nearly every page, each with a full-page image after a
 *	  checkpoint.  So an append refresh instead inserts the delta's states,
 *	  one row per touched group, into mvinc.mv_<oid>_append (no index, no
 *	  old page touched), and the view's value is the storage merged with
 *	  those rows per group (agg_merge, then agg_combine with the stored
 *	  state).  Reads do that merge while the table is not empty (the
 *	  'merge' read branch); compaction folds the rows into the storage's
 *	  one row per group (mv_merge.c) and deletes them.  A refresh compacts
 *	  when its rows could take the table past mvinc.compact_fraction of the
 *	  storage's rows (and then merges its delta straight into the storage),
 *	  and before every refresh that is not an append (retraction
 *	  and regrouping work on one row per group); mvinc.compact(view) does
 *	  it on demand.  The count of rows, mvinc.mv_view.append_rows, changes
 *	  in the same transaction as the rows, so readers that see the catalog
 *	  row see the matching table contents.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "tcop/dest.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "mv/mv.h"

/* mvinc.compact_fraction */
double		mvinc_compact_fraction = 1.0;

/* Delta rows handed to the table AM's multi-insert at a time */
#define APPEND_BATCH 128

static uint64 insert_states(Oid append_oid, const char *select_sql);

/* Qualified name of a table of schema mvinc */
static char *
mvinc_table(Oid relid)
{
	return psprintf("mvinc.%s", quote_identifier(get_rel_name(relid)));
}

/*
 * SELECT of the append table's rows merged per group (storage column
 * order and names): what compaction folds and reads add.
 */
static char *
append_grouped_sql(MvDef *def, const char *append, const char *where)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		const char *c = quote_identifier(col->physname);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&sql, ", ");
		switch (col->role)
		{
			case MV_COL_AGG:
				appendStringInfo(&sql, "%s AS %s",
								 MvStateCombineSql(col, psprintf("a.%s", c)), c);
				break;
			case MV_COL_COUNT:
				appendStringInfo(&sql, "sum(a.%s)::pg_catalog.int8 AS %s", c, c);
				break;
			default:
				appendStringInfo(&sql, "a.%s", c);
				break;
		}
	}
	appendStringInfo(&sql, " FROM %s a%s%s", append, where ? " WHERE " : "", where ? where : "");
	/* without GROUP BY: one row, whose count is NULL when nothing was appended */
	if (def->has_group_by)
		appendStringInfo(&sql, " GROUP BY %s", MvColumnListSql(def, MV_COL_GROUP, "a."));
	return sql.data;
}

/* The pending sides of the merged rows' usual arm: the append table's states */
static const char *const pending_a[] = {"a"};

/*
 * One arm of the merged rows: from FROM item from, with aliases pending
 * (npending of them: the append table's states, and in a hybrid read the
 * delta's; all NULL in a group without any) merged into t, the stored row;
 * with no pending alias, the rows of alias a alone.  Storage columns in
 * order; with finals the states are replaced by the results f<n> (stored
 * ones where nothing is pending) after them.
 */
static char *
merged_arm(MvDef *def, bool finals, const char *const *pending, int npending,
		   const char *from)
{
	StringInfoData sql;
	StringInfoData none;
	ListCell   *lc;
	bool		first = true;

	/* a pending side's count is NULL exactly when it has no rows for the group */
	initStringInfo(&none);
	for (int i = 0; i < npending; i++)
		appendStringInfo(&none, "%s%s._mvinc_count IS NULL", i ? " AND " : "", pending[i]);

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		const char *c = quote_identifier(col->physname);
		char	   *state;

		if (col->role == MV_COL_AGG && finals && !MvStateReadRaw(def, col))
			continue;
		appendStringInfoString(&sql, first ? "" : ", ");
		first = false;
		if (npending == 0)
		{
			appendStringInfo(&sql, "a.%s", c);
			continue;
		}
		switch (col->role)
		{
			case MV_COL_AGG:
				state = psprintf("t.%s", c);
				for (int i = 0; i < npending; i++)
					state = MvStateMergeSql(col, state, psprintf("%s.%s", pending[i], c));
				appendStringInfo(&sql, "CASE WHEN %s THEN t.%s ELSE %s END AS %s",
								 none.data, c, state, c);
				break;
			case MV_COL_COUNT:
				appendStringInfo(&sql, "t.%s", c);
				for (int i = 0; i < npending; i++)
					appendStringInfo(&sql, " + coalesce(%s.%s, 0)", pending[i], c);
				appendStringInfo(&sql, " AS %s", c);
				break;
			default:
				appendStringInfo(&sql, "t.%s", c);
				break;
		}
	}
	if (finals)
	{
		foreach(lc, def->viewcols)
		{
			MvColumn   *col = lfirst(lc);
			const char *f;
			const char *c;
			const char *states[2] = {"NULL::pg_catalog.bytea", "NULL::pg_catalog.bytea"};

			if (col->role != MV_COL_AGG || col->derived_count)
				continue;
			f = quote_identifier(MvStoredFinalName(col));
			c = quote_identifier(col->physname);
			if (npending == 0)
			{
				appendStringInfo(&sql, ", %s AS %s", MvStateFinalSql(col, psprintf("a.%s", c)), f);
				continue;
			}
			Assert(npending <= 2);
			for (int i = 0; i < npending; i++)
				states[i] = psprintf("%s.%s", pending[i], c);
			/* the result of the three states at once: no combined state serialized */
			appendStringInfo(&sql, ", CASE WHEN %s THEN t.%s ELSE %s END AS %s", none.data, f,
							 MvStateCombineFinalSql(col, psprintf("t.%s", c), states[0], states[1]),
							 f);
		}
	}
	appendStringInfo(&sql, " FROM %s", from);
	return sql.data;
}

/*
 * The rows of groups whose states are complete in FROM item from (alias a,
 * storage columns): as merged rows, which replace the stored ones.
 */
char *
MvStateRowsSql(MvDef *def, bool finals, const char *from)
{
	return merged_arm(def, finals, NULL, 0, from);
}

/*
 * SELECT of the view's rows, one per group, as state rows (or, with
 * finals, keys, count and stored results): the storage t merged with the
 * append table's rows.  Groups of the storage left-join their appended
 * states; groups only appended come from an anti-join.  Unlike a full
 * join, both arms let a condition on the group key reach the storage's
 * key index and the append table.
 */
char *
MvAppendMergedSql(MvDef *def, Oid storage_oid, Oid append_oid, bool finals)
{
	return MvMergedSql(def, mvinc_table(storage_oid), mvinc_table(append_oid), finals);
}

/*
 * The same over any FROM items of storage rows (storage) and of state
 * rows in the storage's columns (appended): the append table, or it and
 * the states of a reader's visible delta (the hybrid read, whose storage
 * leaves out the groups the delta replaces).
 */
char *
MvMergedSql(MvDef *def, const char *storage, const char *appended, bool finals)
{
	char	   *match;
	char	   *grouped = append_grouped_sql(def, appended, NULL);
	char	   *unmatched;

	/* without GROUP BY the storage holds the one row: merge into it */
	if (!def->has_group_by)
		return merged_arm(def, finals, pending_a, 1,
						  psprintf("%s t LEFT JOIN (%s) a ON true", storage, grouped));
	match = MvKeyEqSql(def, "t", false, "a");
	/* only the rows of groups the storage lacks are grouped there */
	unmatched = append_grouped_sql(def, appended,
								   psprintf("NOT EXISTS (SELECT FROM %s t WHERE %s)",
											storage, match));
	return psprintf("%s UNION ALL %s",
					merged_arm(def, finals, pending_a, 1,
							   psprintf("%s t LEFT JOIN (%s) a ON %s", storage, grouped, match)),
					merged_arm(def, finals, NULL, 0, psprintf("(%s) a", unmatched)));
}

/*
 * The rows of a hybrid read of a view with GROUP BY: as MvMergedSql, the
 * reader's delta (SELECT delta: state rows, one per group) kept apart
 * from the append table's (SELECT appended, NULL without an append
 * table).  A stored group joins the append table's states, regrouped, and
 * the delta's row, and takes its results from the three states at once;
 * only the groups the storage lacks regroup both.  (Regrouping every delta
 * row with the appended ones, for each of the two arms, cost more than
 * the merge itself when a 1 % append had touched every group.)
 */
char *
MvHybridMergedSql(MvDef *def, const char *storage, const char *appended, const char *delta,
				  bool finals)
{
	static const char *const pending_ad[] = {"a", "d"};
	static const char *const pending_d[] = {"d"};
	char	   *from;
	char	   *unmatched;

	Assert(def->has_group_by);
	if (appended)
		from = psprintf("%s t LEFT JOIN (%s) a ON %s LEFT JOIN (%s) d ON %s", storage,
						append_grouped_sql(def, psprintf("(%s)", appended), NULL),
						MvKeyEqSql(def, "t", false, "a"), delta, MvKeyEqSql(def, "t", false, "d"));
	else
		from = psprintf("%s t LEFT JOIN (%s) d ON %s", storage, delta,
						MvKeyEqSql(def, "t", false, "d"));
	unmatched = append_grouped_sql(def,
								   appended ? psprintf("(%s UNION ALL %s)", appended, delta)
								   : psprintf("(%s)", delta),
								   psprintf("NOT EXISTS (SELECT FROM %s t WHERE %s)", storage,
											MvKeyEqSql(def, "t", false, "a")));
	return psprintf("%s UNION ALL %s",
					merged_arm(def, finals, appended ? pending_ad : pending_d, appended ? 2 : 1, from),
					merged_arm(def, finals, NULL, 0, psprintf("(%s) a", unmatched)));
}

/*
 * Fold the append table of a view into its storage and empty it; runs in
 * a refresh (or compaction) holding the view's refresh lock.  Returns the
 * rows folded.
 */
int64
MvFoldAppend(MvDef *def, MvCatalog *cat)
{
	char	   *append;
	int64		rows;

	/*
	 * The count in the catalog row, kept in the same transactions as the
	 * rows, says whether there is anything to fold (scanning a table just
	 * emptied would walk all its dead rows to find none).
	 */
	if (!OidIsValid(cat->append_oid) || cat->append_rows == 0)
		return 0;
	append = mvinc_table(cat->append_oid);
	MvProgressSetPhase(MV_PHASE_FOLD, cat->append_rows);
	MvSpiConnect();
	MvMergeIntoStorage(def, cat->storage_oid, append_grouped_sql(def, append, NULL));
	if (SPI_execute(psprintf("DELETE FROM %s", append), false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not empty the append table %s", append);
	rows = SPI_processed;
	MvSpiFinish();
	Assert(rows == cat->append_rows);
	MvProgressSetRows(rows);
	cat->append_rows = 0;
	return rows;
}

/*
 * Add the delta's states (select_sql: storage columns, one row per group,
 * from at most inserts rows) to the append table.  When that could take
 * the table past mvinc.compact_fraction of the storage's rows, fold instead:
 * the table's rows, then the delta straight into the storage.  Returns
 * false when the view has no append table (the caller merges).
 */
bool
MvAppendStates(MvDef *def, MvCatalog *cat, const char *select_sql, int64 inserts)
{
	if (!OidIsValid(cat->append_oid) || mvinc_compact_fraction <= 0)
		return false;

	if (cat->append_rows + inserts > mvinc_compact_fraction * MvStorageRows(cat->storage_oid))
	{
		if (MvFoldAppend(def, cat) > 0)
			MvProgressSetPhase(MV_PHASE_APPLY_INSERTS, inserts);
		MvMergeIntoStorage(def, cat->storage_oid, select_sql);
		return true;
	}
	MvSpiConnect();
	cat->append_rows += insert_states(cat->append_oid, select_sql);
	MvSpiFinish();
	return true;
}

/*
 * Where the delta's rows go: straight from the executor into the append
 * table, a batch at a time through the table AM's multi-insert (one WAL
 * record per page, a bulk-insert buffer ring).  The table has no index
 * and no trigger, and only refresh writes it.
 */
typedef struct AppendReceiver
{
	DestReceiver pub;
	Relation	rel;
	BulkInsertState bistate;
	CommandId	cid;
	MemoryContext slotcxt;		/* the slots and the rows they hold */
	TupleTableSlot *slots[APPEND_BATCH];
	int			nslots;			/* slots made so far */
	int			n;				/* slots holding a row */
	uint64		total;
} AppendReceiver;

/* Insert the rows held, then forget them */
static void
append_flush(AppendReceiver *r)
{
	if (r->n == 0)
		return;
	table_multi_insert(r->rel, r->slots, r->n, r->cid, 0, r->bistate);
	for (int i = 0; i < r->n; i++)
		ExecClearTuple(r->slots[i]);
	r->total += r->n;
	r->n = 0;
}

static bool
append_receive(TupleTableSlot *slot, DestReceiver *self)
{
	AppendReceiver *r = (AppendReceiver *) self;
	TupleTableSlot *dst;

	if (r->n == r->nslots)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(r->slotcxt);

		r->slots[r->nslots++] = MakeSingleTupleTableSlot(RelationGetDescr(r->rel),
														  &TTSOpsHeapTuple);
		MemoryContextSwitchTo(oldcxt);
	}
	dst = r->slots[r->n++];
	ExecCopySlot(dst, slot);
	if (r->n == APPEND_BATCH)
		append_flush(r);
	return true;
}

static void
append_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	AppendReceiver *r = (AppendReceiver *) self;

	if (typeinfo->natts != RelationGetDescr(r->rel)->natts)
		elog(ERROR, "delta of materialized view has %d columns, its append table %d",
			 typeinfo->natts, RelationGetDescr(r->rel)->natts);
	/* the delta query's own command: it does not see the rows it adds */
	r->cid = GetCurrentCommandId(true);
}

static void
append_shutdown(DestReceiver *self)
{
	append_flush((AppendReceiver *) self);
}

static void
append_destroy(DestReceiver *self)
{
}

/*
 * Insert the rows of select_sql (storage columns in order) into the
 * append table.  The delta is aggregated over sorted input, whatever the
 * planner estimates from the change log's lagging statistics: an append
 * touches about as many groups as it has rows, and a hash table of that
 * many aggregate states is fresh memory to fault in (a 1% append of the
 * benchmark: 22 MB, 7,000 page faults, 65-71 ms; sorted: 2,800 faults,
 * 46-50 ms).  Runs in the caller's SPI connection; returns the rows
 * inserted.
 */
static uint64
insert_states(Oid append_oid, const char *select_sql)
{
	AppendReceiver r;
	SPIExecuteOptions options;
	SPIPlanPtr	plan;
	int			nestlevel;
	int			rc;

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = append_receive;
	r.pub.rStartup = append_startup;
	r.pub.rShutdown = append_shutdown;
	r.pub.rDestroy = append_destroy;
	r.pub.mydest = DestNone;
	r.rel = table_open(append_oid, RowExclusiveLock);
	r.bistate = GetBulkInsertState();
	r.slotcxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc append rows",
									  ALLOCSET_DEFAULT_SIZES);

	nestlevel = NewGUCNestLevel();
	(void) set_config_option("enable_hashagg", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	plan = SPI_prepare(select_sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", select_sql);
	memset(&options, 0, sizeof(options));
	options.dest = &r.pub;
	rc = SPI_execute_plan_extended(plan, &options);
	AtEOXact_GUC(true, nestlevel);
	/* SPI reports a SELECT into a DestNone receiver as a utility command */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "could not compute the delta (%d): %s", rc, select_sql);
	SPI_freeplan(plan);

	FreeBulkInsertState(r.bistate);
	for (int i = 0; i < r.nslots; i++)
		ExecDropSingleTupleTableSlot(r.slots[i]);
	MemoryContextDelete(r.slotcxt);
	table_close(r.rel, NoLock);
	/* later statements of the refresh (a fold) see the rows */
	CommandCounterIncrement();
	return r.total;
}

/*
 * The storage's row count as of its last VACUUM or ANALYZE: what the
 * compaction fractions (foreground and background) are fractions of.
 */
double
MvStorageRows(Oid storage_oid)
{
	Relation	rel = table_open(storage_oid, AccessShareLock);
	double		rows = Max(rel->rd_rel->reltuples, 0);

	table_close(rel, NoLock);
	return rows;
}

/* Fold the append table of viewid into its storage; the rows folded */
int64
MvCompactLocked(Oid viewid)
{
	MvCatalog  *cat;
	MvInternal	save;
	int64		rows = 0;

	MvRequireReadCommitted(viewid, "compact");
	MvBecomeInternal(&save);
	/* the refresh lock: refreshes and compactions of one view serialize */
	MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
	LockRelationOid(viewid, ExclusiveLock);
	MvProgressSetPhase(MV_PHASE_INITIALIZING, -1);
	cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
	if (cat != NULL && cat->populated && OidIsValid(cat->storage_oid) &&
		OidIsValid(cat->append_oid))
	{
		mvinc_refresh_depth++;
		PG_TRY();
		{
			rows = MvFoldAppend(MvDefForView(viewid), cat);
			MvCatalogSetAppendRows(viewid, 0);
		}
		PG_FINALLY();
		{
			mvinc_refresh_depth--;
		}
		PG_END_TRY();
	}
	MvEndInternal(&save);
	return rows;
}

/* Compact a view now, shown in mvinc.refresh_progress while it runs */
int64
MvCompact(Oid viewid)
{
	int64		rows = 0;

	MvProgressBegin(MV_PROGRESS_COMPACT, viewid);
	PG_TRY();
	{
		rows = MvCompactLocked(viewid);
	}
	PG_FINALLY();
	{
		MvProgressEnd();
	}
	PG_END_TRY();
	return rows;
}
