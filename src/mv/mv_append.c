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
 *	  when the rows would exceed mvinc.compact_fraction of the storage's
 *	  rows, and before every refresh that is not an append (retraction
 *	  and regrouping work on one row per group); mvinc.compact(view) does
 *	  it on demand.  The count of rows, mvinc.mv_view.append_rows, changes
 *	  in the same transaction as the rows, so readers that see the catalog
 *	  row see the matching table contents.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "mv/mv.h"

/* mvinc.compact_fraction */
double		mvinc_compact_fraction = 0.5;

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
append_grouped_sql(MvDef *def, const char *append)
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
	appendStringInfo(&sql, " FROM %s a GROUP BY %s", append,
					 MvColumnListSql(def, MV_COL_GROUP, "a."));
	return sql.data;
}

/*
 * SELECT of the view's state rows, one per group: the storage t merged
 * with the append table's rows (storage column order and names).
 */
char *
MvAppendMergedSql(MvDef *def, Oid storage_oid, Oid append_oid)
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
				/* a._mvinc_count is NULL exactly when the group has no appended rows */
				appendStringInfo(&sql, "CASE WHEN a._mvinc_count IS NULL THEN t.%s ELSE %s END AS %s",
								 c, MvStateMergeSql(col, psprintf("t.%s", c), psprintf("a.%s", c)), c);
				break;
			case MV_COL_COUNT:
				appendStringInfo(&sql, "coalesce(t.%s, 0) + coalesce(a.%s, 0) AS %s", c, c, c);
				break;
			default:
				/* equal keys (NULL-safe) when both sides have the group */
				appendStringInfo(&sql, "coalesce(t.%s, a.%s) AS %s", c, c, c);
				break;
		}
	}
	appendStringInfo(&sql, " FROM %s t FULL JOIN (%s) a ON %s",
					 mvinc_table(storage_oid), append_grouped_sql(def, mvinc_table(append_oid)),
					 MvKeyEqSql(def, "t", false, "a"));
	return sql.data;
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

	if (!OidIsValid(cat->append_oid))
		return 0;
	append = mvinc_table(cat->append_oid);
	MvSpiConnect();
	/* not read-only: the check must see rows this refresh just added */
	if (SPI_execute(psprintf("SELECT 1 FROM %s LIMIT 1", append), false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the append table %s", append);
	if (SPI_processed > 0)
	{
		MvMergeIntoStorage(def, cat->storage_oid, append_grouped_sql(def, append));
		if (SPI_execute(psprintf("DELETE FROM %s", append), false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not empty the append table %s", append);
		rows = SPI_processed;
	}
	else
		rows = 0;
	MvSpiFinish();
	cat->append_rows = 0;
	return rows;
}

/*
 * Add the delta's states (select_sql: storage columns, one row per group)
 * to the append table, or fold everything into the storage when the
 * append table would grow past mvinc.compact_fraction of the storage.
 * Returns false when the view has no append table (the caller merges).
 */
bool
MvAppendStates(MvDef *def, MvCatalog *cat, const char *select_sql)
{
	Relation	rel;
	double		stored;
	char	   *append;
	uint64		added;

	if (!OidIsValid(cat->append_oid) || mvinc_compact_fraction <= 0)
		return false;

	/* the storage's row count as of its last VACUUM or ANALYZE */
	rel = table_open(cat->storage_oid, AccessShareLock);
	stored = Max(rel->rd_rel->reltuples, 0);
	table_close(rel, NoLock);

	append = mvinc_table(cat->append_oid);
	MvSpiConnect();
	if (SPI_execute(psprintf("INSERT INTO %s (%s) %s", append,
							 MvColumnListSql(def, -1, NULL), select_sql),
					false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not add to the append table %s", append);
	added = SPI_processed;
	MvSpiFinish();
	cat->append_rows += added;
	if (cat->append_rows > mvinc_compact_fraction * stored)
		MvFoldAppend(def, cat);
	return true;
}

/* Compact a view now: fold its append table into the storage */
int64
MvCompact(Oid viewid)
{
	MvCatalog  *cat;
	MvInternal	save;
	int64		rows = 0;

	MvBecomeInternal(&save);
	/* the refresh lock: refreshes and compactions of one view serialize */
	LockRelationOid(viewid, ExclusiveLock);
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
