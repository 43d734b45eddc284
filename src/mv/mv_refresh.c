/*-------------------------------------------------------------------------
 * mv_refresh.c
 *	  Refresh of incremental views, by mode: initial, noop, incremental,
 *	  merge, regroup and full.
 *
 *	  Checkpoint rule (docs/internals.md): the catalog keeps a snapshot S of
 *	  the source and an LSN L such that every change-log row of a
 *	  transaction invisible in S has lsn > L.  A refresh reads the insert
 *	  LSN B, takes a snapshot S', reads the insert LSN T, waits until
 *	  capture has everything up to T and consumes the change-log rows with
 *	  L < lsn <= T that are visible in S' and not in S.  Source reads
 *	  (regroup, full) use S'.  The new bound is
 *	  L' = min(B, lowest lsn > L of a row invisible in S'): a transaction
 *	  still running in S' may have written its commit record before B, and
 *	  it has been captured by then if its commit is below T.  The initial
 *	  computation holds a SHARE lock on the source from before tracking
 *	  starts until commit, so no source writer is running in S' and L' = B.
 *
 *	  Everything runs through SPI in the caller's transaction: storage and
 *	  checkpoint commit together, and an error leaves both unchanged.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_attribute.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/matview.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "catalog/pg_inherits.h"
#include "pgstat.h"
#include "utils/resowner.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mv/mv.h"

/* Nesting depth of refreshes: storage may be written while > 0 */
int			mvinc_refresh_depth = 0;

/* Qualified, quoted name of a relation */
char *
MvSourceName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* SQL text of an expression over the source (varno 1) as alias.col */
char *
MvExprSql(Oid sourceid, Node *expr, const char *alias)
{
	List	   *ctx = deparse_context_for(alias ? alias : get_rel_name(sourceid), sourceid);
	int			nest = NewGUCNestLevel();
	char	   *sql;

	/*
	 * Deparse with search_path as internal statements run it, so every
	 * function, operator and type outside pg_catalog comes out qualified.
	 */
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	sql = deparse_expression(expr, ctx, alias != NULL, true);
	AtEOXact_GUC(true, nest);
	return sql;
}

/* Rows of relid the current transaction inserted, updated or deleted */
static int64
xact_changes(Oid relid)
{
	PgStat_TableStatus *tab = find_tabstat_entry(relid);
	PgStat_TableXactStatus *trans;
	int64		n = 0;

	if (tab == NULL)
		return 0;
	for (trans = tab->trans; trans != NULL; trans = trans->upper)
		n += trans->tuples_inserted + trans->tuples_updated + trans->tuples_deleted +
			(trans->truncdropped ? 1 : 0);
	return n;
}

/*
 * Did the current transaction insert, update or delete rows of relid?
 * pgstat's counts say so only while track_counts is on; the locks such
 * changes hold say so always (and also after a write that changed no row).
 */
bool
MvXactModified(Oid relid)
{
	return xact_changes(relid) != 0 || MvXactMayHaveWritten(relid);
}

/*
 * Sources that this transaction modified before refreshing a view from
 * them.  Such a refresh reads the source including the transaction's own
 * changes and marks the transaction as seen in the checkpoint, so the
 * source must not change again before commit (checked at pre-commit)
 * unless the view was marked stale for it.  That mark is a catalog write
 * of the (sub)transaction that made it: rolled back with it, the record
 * asks for a mark again.
 */
typedef struct OwnChanges
{
	Oid			sourceid;
	Oid			viewid;
	int64		changes;
	SubTransactionId subid;		/* the (sub)transaction that refreshed */
	SubTransactionId stale_subid;	/* the one that marked the view stale
									 * since, or InvalidSubTransactionId */
} OwnChanges;

static List *own_changes = NIL;

/* Remember the source's change count at the refresh */
static void
remember_own_changes(Oid sourceid, Oid viewid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	OwnChanges *oc = palloc(sizeof(OwnChanges));

	oc->sourceid = sourceid;
	oc->viewid = viewid;
	oc->changes = xact_changes(sourceid);
	oc->subid = GetCurrentSubTransactionId();
	oc->stale_subid = InvalidSubTransactionId;
	own_changes = lappend(own_changes, oc);
	MemoryContextSwitchTo(old);
}

/*
 * The current transaction is about to write relid: a view refreshed from
 * it (or from one of its partitions or children) earlier in this
 * transaction, with the transaction's own changes, goes stale, so that
 * reads take the live path and the next refresh is full.  Called when a
 * write is planned and when it starts (a cached plan is not planned
 * again).
 */
void
MvNoteSourceWrite(Oid relid)
{
	List	   *family = NIL;
	ListCell   *lc;

	if (own_changes == NIL)
		return;
	/* a write into a parent reaches its partitions and children too */
	if (has_subclass(relid))
		family = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, own_changes)
	{
		OwnChanges *oc = lfirst(lc);

		if (oc->stale_subid == InvalidSubTransactionId &&
			(oc->sourceid == relid || list_member_oid(family, oc->sourceid)))
		{
			MvCatalogMarkStale(oc->viewid);
			oc->stale_subid = GetCurrentSubTransactionId();
		}
	}
}

/*
 * Did this transaction refresh a view with its own source changes, and not
 * mark it stale since?
 */
bool
MvHasOwnChanges(void)
{
	ListCell   *lc;

	foreach(lc, own_changes)
	{
		if (((OwnChanges *) lfirst(lc))->stale_subid == InvalidSubTransactionId)
			return true;
	}
	return false;
}

/* Pre-commit: refuse to commit when such a source changed unnoticed */
static void
own_changes_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	/* (PREPARE TRANSACTION too: its changes are captured at COMMIT PREPARED) */
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
	{
		foreach(lc, own_changes)
		{
			OwnChanges *oc = lfirst(lc);

			if (oc->stale_subid == InvalidSubTransactionId &&
				xact_changes(oc->sourceid) != oc->changes)
			{
				own_changes = NIL;
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("source of materialized view \"%s\" was modified after the view was refreshed in the same transaction",
								get_rel_name(oc->viewid)),
						 errdetail("The refresh included the transaction's earlier changes of the source, so later ones would be lost."),
						 errhint("Refresh the view again after the last change, or in a separate transaction.")));
			}
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		own_changes = NIL;
}

/*
 * A rolled-back savepoint takes its refreshes along (the storage and the
 * checkpoint they wrote are gone with it), so their records go too, and
 * the stale marks it wrote (their records ask for a mark again); a
 * released one hands both to its parent.
 */
static void
own_changes_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, own_changes)
	{
		OwnChanges *oc = lfirst(lc);

		if (oc->stale_subid == mySubid)
			oc->stale_subid = event == SUBXACT_EVENT_ABORT_SUB ? InvalidSubTransactionId : parentSubid;
		if (oc->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			own_changes = foreach_delete_current(own_changes, lc);
		else
			oc->subid = parentSubid;
	}
}

/* Install the pre-commit check */
void
MvRefreshInit(void)
{
	RegisterXactCallback(own_changes_callback, NULL);
	RegisterSubXactCallback(own_changes_subxact_callback, NULL);
}

/* Run SQL; with a snapshot, under it (its command id advanced) */
static uint64
run(const char *sql, Snapshot snap, int expect)
{
	int			rc;

	if (snap != InvalidSnapshot)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, 0, NULL);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		rc = SPI_execute_snapshot(plan, NULL, NULL, snap, InvalidSnapshot, false, false, 0);
		SPI_freeplan(plan);
	}
	else
		rc = SPI_execute(sql, false, 0);
	if (rc < 0 || (expect != 0 && rc != expect))
		elog(ERROR, "refresh statement failed (%d): %s", rc, sql);
	return SPI_processed;
}

#ifdef USE_ASSERT_CHECKING
/* Single text value of the first row of the last SPI result */
static char *
first_value(int col)
{
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
}
#endif

#ifdef USE_ASSERT_CHECKING
/*
 * MvSnapshotText (mv_snapshot.c) as SQL over pg_current_snapshot(), to
 * check it against in assertion-enabled builds.
 */
static char *
snapshot_text_sql(Snapshot snap, bool own_seen)
{
	SPIPlanPtr	plan;

	if (own_seen)
		/* own xid >= xmax: raise xmax past it, xids in between stay running */
		plan = SPI_prepare("WITH z AS (SELECT pg_current_snapshot() s, pg_current_xact_id_if_assigned() x) "
						   "SELECT CASE WHEN x IS NULL OR pg_visible_in_snapshot(x, s) THEN s::text "
						   "ELSE pg_snapshot_xmin(s)::text || ':' || (x::text::numeric + 1)::text || ':' || "
						   "coalesce((SELECT string_agg(v::text, ',' ORDER BY v) FROM "
						   "  (SELECT pg_snapshot_xip(s)::text::numeric v UNION "
						   "   SELECT generate_series(pg_snapshot_xmax(s)::text::numeric, x::text::numeric - 1)) q), '') "
						   "END FROM z", 0, NULL);
	else
		plan = SPI_prepare("WITH z AS (SELECT pg_current_snapshot() s, pg_current_xact_id_if_assigned() x) "
					   "SELECT CASE WHEN x IS NULL OR NOT pg_visible_in_snapshot(x, s) THEN s::text "
					   "ELSE least(pg_snapshot_xmin(s)::text::numeric, x::text::numeric)::text || ':' || "
					   "pg_snapshot_xmax(s)::text || ':' || "
					   "(SELECT string_agg(v::text, ',' ORDER BY v::text::numeric) "
					   "   FROM (SELECT pg_snapshot_xip(s) v UNION ALL SELECT x) q) END FROM z",
					   0, NULL);
	if (SPI_execute_snapshot(plan, NULL, NULL, snap, InvalidSnapshot, true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the refresh snapshot");
	SPI_freeplan(plan);
	return first_value(1);
}
#endif

/* Comma-separated list of column names of one role (or all when role < 0) */
char *
MvColumnListSql(MvDef *def, int role, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (role >= 0 && col->role != (MvColRole) role)
			continue;
		appendStringInfo(&buf, "%s%s%s", buf.len ? ", " : "", prefix ? prefix : "",
						 quote_identifier(col->physname));
	}
	return buf.data;
}

/* Group key expressions over alias, comma separated (named kN with as_names) */
char *
MvGroupExprsSql(MvDef *def, const char *alias, bool as_names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_GROUP)
		{
			appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
							 MvExprSql(def->sourceid, (Node *) col->expr, alias));
			if (as_names)
				appendStringInfo(&buf, " AS %s", quote_identifier(col->physname));
		}
	}
	return buf.data;
}

#define group_exprs_as(def, alias, as_names) MvGroupExprsSql(def, alias, as_names)
#define group_exprs(def, alias) MvGroupExprsSql(def, alias, false)

/*
 * SELECT list producing storage rows from rows of alias: for aggregate
 * views the group keys, states and count (to be grouped by the keys); for
 * projection views the expressions and row identity.
 */
static char *
storage_select(MvDef *def, const char *alias)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		char	   *item;

		switch (col->role)
		{
			case MV_COL_AGG:
				item = MvStateAggSql(col, alias);
				break;
			case MV_COL_COUNT:
				item = "count(*)";
				break;
			default:
				item = MvExprSql(def->sourceid, (Node *) col->expr, alias);
				break;
		}
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", item);
	}
	return buf.data;
}

/* WHERE clause of the view over alias, or "true" */
char *
MvWhereSql(MvDef *def, const char *alias)
{
	if (def->where == NULL)
		return "true";
	return psprintf("(%s)", MvExprSql(def->sourceid, def->where, alias));
}

#define where_sql(def, alias) MvWhereSql(def, alias)

/* SELECT of the storage rows (in storage column order) computed from a FROM item */
static char *select_from(MvDef *def, const char *from, const char *extra_where);

/* State rows (storage columns, one per group) of the rows of from that pass cond */
char *
MvDeltaStatesSql(MvDef *def, const char *from, const char *cond)
{
	return select_from(def, from, cond);
}

static char *
select_from(MvDef *def, const char *from, const char *extra_where)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s FROM %s WHERE %s%s",
					 storage_select(def, "s"), from, where_sql(def, "s"),
					 extra_where ? extra_where : "");
	if (def->kind == MV_KIND_AGGREGATE && def->has_group_by)
		appendStringInfo(&sql, " GROUP BY %s", group_exprs(def, "s"));
	return sql.data;
}

/* INSERT ... SELECT of the storage rows computed from a FROM item */
static char *
insert_from(MvDef *def, const char *storage, const char *from, const char *extra_where)
{
	return psprintf("INSERT INTO %s (%s) %s", storage, MvColumnListSql(def, -1, NULL),
					select_from(def, from, extra_where));
}

/* State of one refresh in progress */
typedef struct RefreshCtx
{
	Oid			viewid;
	MvDef	   *def;
	MvCatalog  *cat;
	char	   *storage;		/* qualified storage name */
	char	   *changelog;		/* qualified change log name */
	Snapshot	snap;			/* S' */
	char	   *snaptext;		/* S' as pg_snapshot text */
	XLogRecPtr	before;			/* B */
	XLogRecPtr	target;			/* T */
	char	   *delta;			/* WHERE of the consumed change-log rows (alias s) */
	bool		own_modified;	/* this transaction changed the source */
	TimestampTz started;		/* when the refresh began (after its lock) */
	int64		delta_rows;		/* change-log rows of the delta (progress) */
} RefreshCtx;

/* Rebuild the storage from the source under S' */
static void
rebuild(RefreshCtx *rc)
{
	MvProgressSetPhase(MV_PHASE_REBUILD, -1);
	run(psprintf("DELETE FROM %s", rc->storage), InvalidSnapshot, SPI_OK_DELETE);
	if (OidIsValid(rc->cat->append_oid))
		run(psprintf("DELETE FROM mvinc.%s", quote_identifier(get_rel_name(rc->cat->append_oid))),
			InvalidSnapshot, SPI_OK_DELETE);
	rc->cat->append_rows = 0;
	MvProgressSetRows(run(insert_from(rc->def, rc->storage,
									  psprintf("ONLY %s s", MvSourceName(rc->def->sourceid)), NULL),
						  rc->snap, SPI_OK_INSERT));
	run(psprintf("ANALYZE %s", rc->storage), InvalidSnapshot, 0);
}

/* incremental: merge the states (or rows) of inserted rows */
static void
apply_inserts(RefreshCtx *rc, int64 inserts)
{
	MvDef	   *def = rc->def;
	char	   *from = psprintf("%s s", rc->changelog);
	char	   *cond = psprintf(" AND %s AND s._mvinc_image = 'n'", rc->delta);
	StringInfoData sql;
	ListCell   *lc;

	if (def->kind == MV_KIND_PROJECTION || !def->has_group_by)
	{
		if (def->kind == MV_KIND_PROJECTION)
		{
			run(insert_from(def, rc->storage, from, cond), InvalidSnapshot, SPI_OK_INSERT);
			return;
		}
		/* One state row: merge the delta's states into it */
		initStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET ", rc->storage);
		foreach(lc, def->columns)
		{
			MvColumn   *col = lfirst(lc);
			const char *c = quote_identifier(col->physname);

			if (col->role == MV_COL_AGG)
				appendStringInfo(&sql, "%s = %s, ", c,
								 MvStateMergeSql(col, psprintf("t.%s", c), psprintf("d.%s", c)));
		}
		appendStringInfo(&sql, "_mvinc_count = t._mvinc_count + d._mvinc_count "
						 "FROM (SELECT %s FROM %s WHERE %s%s) d(%s) WHERE d._mvinc_count > 0",
						 storage_select(def, "s"), from, where_sql(def, "s"), cond,
						 MvColumnListSql(def, -1, NULL));
		run(sql.data, InvalidSnapshot, SPI_OK_UPDATE);
		return;
	}

	/* Groups: the delta's states go beside the storage (mv_append.c) */
	if (!MvAppendStates(def, rc->cat, select_from(def, from, cond), inserts))
		MvMergeIntoStorage(def, rc->cat->storage_oid, select_from(def, from, cond));
}

/*
 * Merge state rows (select_sql: storage columns, one row per group) into
 * the storage of an aggregate view with GROUP BY: in C through the
 * storage's key index (mv_merge.c) or, when the storage does not allow
 * it, with INSERT .. ON CONFLICT.
 */
void
MvMergeIntoStorage(MvDef *def, Oid storage_oid, const char *select_sql)
{
	StringInfoData sql;
	ListCell   *lc;

	if (mvinc_direct_merge && MvMergeDelta(def, storage_oid, select_sql))
		return;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO mvinc.%s AS t (%s) %s ON CONFLICT (%s) DO UPDATE SET ",
					 quote_identifier(get_rel_name(storage_oid)), MvColumnListSql(def, -1, NULL),
					 select_sql, MvColumnListSql(def, MV_COL_GROUP, NULL));
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		const char *c = quote_identifier(col->physname);

		if (col->role == MV_COL_AGG)
			appendStringInfo(&sql, "%s = %s, ", c,
							 MvStateMergeSql(col, psprintf("t.%s", c), psprintf("excluded.%s", c)));
	}
	appendStringInfoString(&sql, "_mvinc_count = t._mvinc_count + excluded._mvinc_count");
	run(sql.data, InvalidSnapshot, SPI_OK_INSERT);
}

/* Equality of the row identity of storage alias t and change-log alias d */
static char *
rowid_match(MvDef *def)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_ROWID)
			appendStringInfo(&buf, "%st.%s = d.%s", buf.len ? " AND " : "",
							 quote_identifier(col->physname),
							 quote_identifier(get_attname(def->sourceid, col->srcattnum, false)));
	}
	return buf.data;
}

/* Source columns of the row identity over alias */
static char *
rowid_source_cols(MvDef *def, const char *alias)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_ROWID)
			appendStringInfo(&buf, "%s%s%s", buf.len ? ", " : "", alias ? psprintf("%s.", alias) : "",
							 quote_identifier(get_attname(def->sourceid, col->srcattnum, false)));
	}
	return buf.data;
}

/*
 * merge: apply a projection view's changes by source row identity.  Every
 * identity the delta touches is deleted from storage, then its last image
 * is inserted when that is a new image (insert or update) that passes WHERE.
 */
/*
 * FROM item (alias s) of the change-log rows of changelog that pass cond
 * (over alias s), each with _mvinc_rn = 1 on the last image of its source
 * row identity (by commit lsn, then order in the transaction, the new
 * image of an update last).
 */
static char *
last_images_sql(MvDef *def, const char *changelog, const char *cond)
{
	return psprintf("(SELECT s.*, row_number() OVER (PARTITION BY %s ORDER BY s._mvinc_lsn DESC, "
					"s._mvinc_seq DESC, (s._mvinc_image = 'n') DESC) AS _mvinc_rn "
					"FROM %s s WHERE %s) s", rowid_source_cols(def, "s"), changelog, cond);
}

static void
apply_merge(RefreshCtx *rc)
{
	MvDef	   *def = rc->def;
	char	   *ids = rowid_source_cols(def, "s");

	MvProgressSetPhase(MV_PHASE_APPLY_CHANGES, rc->delta_rows);
	run(psprintf("DELETE FROM %s t USING (SELECT DISTINCT %s FROM %s s WHERE %s) d WHERE %s",
				 rc->storage, ids, rc->changelog, rc->delta, rowid_match(def)),
		InvalidSnapshot, SPI_OK_DELETE);
	run(insert_from(def, rc->storage, last_images_sql(def, rc->changelog, rc->delta),
					" AND s._mvinc_rn = 1 AND s._mvinc_image = 'n'"),
		InvalidSnapshot, SPI_OK_INSERT);
	MvProgressSetRows(rc->delta_rows);
}

/*
 * SELECT, for each source row identity that the change-log rows of
 * changelog passing cond (alias s) touch, its storage row as the last of
 * them leaves it (storage columns), and _mvinc_present: whether the row is
 * there (a new image that passes the view's WHERE); the other columns are
 * NULL when it is not (a key-only old image has nothing else).
 */
char *
MvLastImagesSql(MvDef *def, const char *changelog, const char *cond)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *present = psprintf("(s._mvinc_image = 'n' AND %s)", where_sql(def, "s"));

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		char	   *expr = MvExprSql(def->sourceid, (Node *) col->expr, "s");

		/*
		 * (a CASE of a domain type gives its base type, which the reader
		 * takes for the domain, put_rows: a NOT NULL domain would refuse
		 * the NULLs of removed rows)
		 */
		if (col->role == MV_COL_ROWID)
			appendStringInfo(&sql, "%s, ", expr);
		else
			appendStringInfo(&sql, "CASE WHEN %s THEN %s END::%s, ", present, expr,
							 MvStorageColumnTypeNullable(col));
	}
	appendStringInfo(&sql, "%s AS _mvinc_present FROM %s WHERE s._mvinc_rn = 1",
					 present, last_images_sql(def, changelog, cond));
	return sql.data;
}

/* Equality of the row identities of storage aliases lalias and ralias */
char *
MvRowidEqSql(MvDef *def, const char *lalias, const char *ralias)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_ROWID)
			appendStringInfo(&buf, "%s%s.%s = %s.%s", buf.len ? " AND " : "",
							 lalias, quote_identifier(col->physname),
							 ralias, quote_identifier(col->physname));
	}
	return buf.data;
}

/* Is column attnum of relid NOT NULL? */
static bool
attr_not_null(Oid relid, AttrNumber attnum)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
	bool		notnull = false;

	if (HeapTupleIsValid(tup))
	{
		notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
		ReleaseSysCache(tup);
	}
	return notnull;
}

/* Can this group key not be NULL (a NOT NULL column of the source)? */
static bool
key_not_null(MvDef *def, MvColumn *col)
{
	Var		   *var = (Var *) col->expr;

	return IsA(var, Var) && var->varattno > 0 &&
		attr_not_null(def->sourceid, var->varattno);
}

/*
 * Condition: the group key of lalias (its group expressions when lexprs,
 * else its storage columns kN) equals the storage columns of ralias.
 * Plain equality (hashable, indexable) for a key that cannot be NULL,
 * else a NULL-safe one that is still hashable: one-element arrays (array
 * equality takes NULL elements as equal, with the element type's default
 * equality, as record equality does; records of a ROW() constructor are
 * not hashable, and a 1% update's refresh joined its delta with the
 * storage by a nested loop, ten times slower than native REFRESH).
 */
char *
MvKeyEqSql(MvDef *def, const char *lalias, bool lexprs, const char *ralias)
{
	StringInfoData eq;
	ListCell   *lc;

	initStringInfo(&eq);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);
		char	   *ls;
		char	   *rs;

		if (col->role != MV_COL_GROUP)
			continue;
		ls = lexprs ? MvExprSql(def->sourceid, (Node *) col->expr, lalias)
			: psprintf("%s.%s", lalias, quote_identifier(col->physname));
		rs = psprintf("%s.%s", ralias, quote_identifier(col->physname));
		if (key_not_null(def, col))
			appendStringInfo(&eq, "%s%s = %s", eq.len ? " AND " : "", ls, rs);
		else if (type_is_array(getBaseType(exprType((Node *) col->expr))))
			/* ARRAY[] of an array nests it: NULL and '{}' would both become '{}' */
			appendStringInfo(&eq, "%s%s IS NOT DISTINCT FROM %s", eq.len ? " AND " : "", ls, rs);
		else
			appendStringInfo(&eq, "%sARRAY[%s] = ARRAY[%s]", eq.len ? " AND " : "", ls, rs);
	}
	return eq.data;
}

/*
 * regroup: recompute from the source (under S') only the groups that the
 * delta touches, from old and new images alike.
 */
static void
apply_regroup(RefreshCtx *rc)
{
	MvDef	   *def = rc->def;
	static int	counter = 0;
	char	   *touched;

	if (!def->has_group_by)
	{
		rebuild(rc);
		return;
	}
	touched = psprintf("pg_temp.mvinc_touched_%u_%d", rc->viewid, ++counter);
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT DISTINCT %s FROM %s s WHERE %s AND %s",
				 touched, group_exprs_as(def, "s", true), rc->changelog, rc->delta, where_sql(def, "s")),
		InvalidSnapshot, 0);
	run(psprintf("ANALYZE %s", touched), InvalidSnapshot, 0);
	MvProgressSetPhase(MV_PHASE_APPLY_CHANGES, rc->delta_rows);
	run(psprintf("DELETE FROM %s t USING %s d WHERE %s",
				 rc->storage, touched, MvKeyEqSql(def, "t", false, "d")),
		InvalidSnapshot, SPI_OK_DELETE);
	run(insert_from(def, rc->storage, psprintf("ONLY %s s", MvSourceName(def->sourceid)),
					psprintf(" AND EXISTS (SELECT 1 FROM %s d WHERE %s)",
							 touched, MvKeyEqSql(def, "s", true, "d"))),
		rc->snap, SPI_OK_INSERT);
	MvProgressSetRows(rc->delta_rows);
}

/*
 * SELECT of the states of the groups that the change-log rows of FROM item
 * delta (alias d, rows that pass the view's WHERE) touch, applied to their
 * states in FROM item base (storage columns): old images retract, new ones
 * add.  Columns: the group keys, the states, _mvinc_count (the group's rows
 * after the delta) and _mvinc_new (base had no such group).  *refused is
 * a condition over alias ralias of these rows: a retraction was refused
 * (agg_apply gave NULL), and the group must be recomputed from the source.
 */
char *
MvRetractStatesSql(MvDef *def, const char *base, const char *delta, const char *ralias,
				   char **refused)
{
	StringInfoData sql;
	StringInfoData ref;
	ListCell   *lc;
	char	   *keys = def->has_group_by ? group_exprs(def, "d") : NULL;

	initStringInfo(&sql);
	initStringInfo(&ref);
	appendStringInfoString(&sql, "SELECT ");
	if (keys)
		appendStringInfo(&sql, "%s, ", group_exprs_as(def, "d", true));
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role != MV_COL_AGG)
			continue;
		appendStringInfo(&sql, "%s AS %s, ",
						 MvStateRetractSql(col, psprintf("t.%s", quote_identifier(col->physname)), "d",
										   true),
						 quote_identifier(col->physname));
		appendStringInfo(&ref, "%s%s.%s IS NULL", ref.len ? " OR " : "", ralias,
						 quote_identifier(col->physname));
	}
	/* without GROUP BY the one row comes even from no delta rows: sum is NULL */
	appendStringInfo(&sql, "coalesce(max(t._mvinc_count), 0) + "
					 "coalesce(sum(CASE d._mvinc_image WHEN 'n' THEN 1 WHEN 'o' THEN -1 END), 0) "
					 "AS _mvinc_count, max(t._mvinc_count) IS NULL AS _mvinc_new ");
	/*
	 * Per group of the delta, its stored row if any; without GROUP BY the
	 * one stored row, with the delta's rows if any (none pass the WHERE:
	 * the row as stored, not a row of nothing)
	 */
	if (keys)
		appendStringInfo(&sql, "FROM %s LEFT JOIN %s t ON %s GROUP BY %s",
						 delta, base, MvKeyEqSql(def, "d", true, "t"), keys);
	else
		appendStringInfo(&sql, "FROM %s t LEFT JOIN %s ON true", base, delta);
	*refused = ref.len ? ref.data : "false";
	return sql.data;
}

/*
 * regroup by retraction (every aggregate retractable): apply the delta's
 * old images (retract) and new images (add) to the stored states with
 * agg_apply; groups whose count drops to zero go away; groups where a
 * retraction was refused (agg_apply gave NULL) are recomputed from the
 * source under S'.
 */
static void
apply_retract(RefreshCtx *rc)
{
	MvDef	   *def = rc->def;
	static int	counter = 0;
	char	   *applied = psprintf("pg_temp.mvinc_applied_%u_%d", rc->viewid, ++counter);
	StringInfoData sql;
	char	   *refused;
	ListCell   *lc;
	char	   *keys = def->has_group_by ? group_exprs(def, "d") : NULL;
	int			nestlevel;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TEMP TABLE %s ON COMMIT DROP AS %s", applied,
					 MvRetractStatesSql(def, rc->storage,
										psprintf("(SELECT * FROM %s s WHERE %s AND %s) d",
												 rc->changelog, rc->delta, where_sql(def, "s")),
										"a", &refused));

	/*
	 * The delta is read once, straight from the change log (a copy into a
	 * temporary table took a fifth of a 1% update's refresh), whose
	 * statistics lag far behind: the planner would take the delta for a
	 * few rows and probe the storage's index once per row.  Hash it.
	 */
	MvProgressSetPhase(MV_PHASE_COMPUTE_DELTA, -1);
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("enable_nestloop", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	run(sql.data, InvalidSnapshot, 0);
	AtEOXact_GUC(true, nestlevel);
	MvProgressSetPhase(MV_PHASE_APPLY_CHANGES, rc->delta_rows);

	if (!keys)
	{
		/* The one state row: replace it, or recompute when refused */
		run(psprintf("SELECT 1 FROM %s a WHERE %s", applied, refused), InvalidSnapshot, SPI_OK_SELECT);
		if (SPI_processed > 0)
		{
			rebuild(rc);
			return;
		}
		run(psprintf("DELETE FROM %s", rc->storage), InvalidSnapshot, SPI_OK_DELETE);
		run(psprintf("INSERT INTO %s (%s) SELECT %s FROM %s a", rc->storage,
					 MvColumnListSql(def, -1, NULL), MvColumnListSql(def, -1, "a."), applied),
			InvalidSnapshot, SPI_OK_INSERT);
		MvProgressSetRows(rc->delta_rows);
		return;
	}
	run(psprintf("ANALYZE %s", applied), InvalidSnapshot, 0);
	/* groups that still have rows: new states in place (HOT, keys unchanged) */
	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s t SET ", rc->storage);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_AGG || col->role == MV_COL_COUNT)
			appendStringInfo(&sql, "%s = a.%s, ", quote_identifier(col->physname),
							 quote_identifier(col->physname));
	}
	sql.data[sql.len -= 2] = '\0';
	appendStringInfo(&sql, " FROM %s a WHERE %s AND NOT a._mvinc_new AND a._mvinc_count > 0 AND NOT (%s)",
					 applied, MvKeyEqSql(def, "t", false, "a"), refused);
	run(sql.data, InvalidSnapshot, SPI_OK_UPDATE);
	/* groups that lost all rows, or whose retraction was refused */
	run(psprintf("DELETE FROM %s t USING %s a WHERE %s AND NOT a._mvinc_new "
				 "AND (a._mvinc_count = 0 OR %s)",
				 rc->storage, applied, MvKeyEqSql(def, "t", false, "a"), refused),
		InvalidSnapshot, SPI_OK_DELETE);
	/* new groups */
	run(psprintf("INSERT INTO %s (%s) SELECT %s FROM %s a WHERE a._mvinc_new AND a._mvinc_count > 0 AND NOT (%s)",
				 rc->storage, MvColumnListSql(def, -1, NULL), MvColumnListSql(def, -1, "a."),
				 applied, refused),
		InvalidSnapshot, SPI_OK_INSERT);
	/* groups whose retraction was refused, from the source (when there are any) */
	if (run(psprintf("SELECT 1 FROM %s a WHERE a._mvinc_count > 0 AND (%s) LIMIT 1",
					 applied, refused), InvalidSnapshot, SPI_OK_SELECT) == 0)
	{
		MvProgressSetRows(rc->delta_rows);
		return;
	}
	run(insert_from(def, rc->storage, psprintf("ONLY %s s", MvSourceName(def->sourceid)),
					psprintf(" AND EXISTS (SELECT 1 FROM %s a WHERE a._mvinc_count > 0 AND (%s) "
							 "AND %s)",
							 applied, refused, MvKeyEqSql(def, "s", true, "a"))),
		rc->snap, SPI_OK_INSERT);
	MvProgressSetRows(rc->delta_rows);
}

/*
 * Copy the consumed change-log rows into a temporary table: the statements
 * that follow join it with storage and source, and the change log's own
 * statistics lag far behind.  It is not analyzed (on 1% of 5M rows that
 * was a third of the refresh): a table never analyzed is estimated from
 * its actual size, which is what those joins need.
 */
static void
materialize_delta(RefreshCtx *rc)
{
	static int	counter = 0;
	char	   *delta = psprintf("pg_temp.mvinc_delta_%u_%d", rc->viewid, ++counter);

	MvProgressSetPhase(MV_PHASE_COMPUTE_DELTA, -1);
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT * FROM %s s WHERE %s",
				 delta, rc->changelog, rc->delta), InvalidSnapshot, 0);
	rc->changelog = delta;
	rc->delta = "true";
}

/* Lock, check and load what a refresh of viewid needs */
static RefreshCtx *
refresh_setup(Oid viewid)
{
	RefreshCtx *rc = palloc0(sizeof(RefreshCtx));

	/* Two refreshes of one view serialize here; readers are not blocked */
	MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
	LockRelationOid(viewid, ExclusiveLock);
	MvProgressSetPhase(MV_PHASE_INITIALIZING, -1);
	rc->started = GetCurrentTimestamp();
	rc->viewid = viewid;
	rc->cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
	if (rc->cat == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an incremental materialized view", get_rel_name(viewid)),
				 errhint("Create it WITH (mvinc.incremental = true).")));
	rc->def = MvDefForView(viewid);
	/* Own changes are not in the change log yet: read them from the source */
	rc->own_modified = MvXactModified(rc->def->sourceid);
	if (rc->own_modified)
		remember_own_changes(rc->def->sourceid, viewid);
	return rc;
}

/* Take S' (with B before it and T after it) */
static void
take_snapshot(RefreshCtx *rc)
{
	rc->before = MvInsertLsn();
	rc->snap = RegisterSnapshot(GetLatestSnapshot());
	rc->snaptext = MvSnapshotText(rc->snap, rc->own_modified);
	Assert(strcmp(rc->snaptext, snapshot_text_sql(rc->snap, rc->own_modified)) == 0);
	rc->target = MvInsertLsn();
}

/* Make the matview look populated (pg_dump then emits its REFRESH) */
void
MvMarkPopulated(Oid viewid)
{
	Relation	rel = table_open(viewid, AccessShareLock);

	if (!RelationIsPopulated(rel))
	{
		table_close(rel, NoLock);
		rel = table_open(viewid, AccessExclusiveLock);
		SetMatViewPopulatedState(rel, true);
		CommandCounterIncrement();
	}
	table_close(rel, NoLock);
}

/* initial: first computation, under a SHARE lock on the source */
static void
refresh_initial(RefreshCtx *rc, MvRefreshResult *res)
{
	Oid			source = rc->def->sourceid;

	MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
	MvLockForTracking(source, rc->def->kind == MV_KIND_AGGREGATE);
	MvRefuseChildrenAfterLock(source, MvViewReadsChildren(rc->viewid, source));
	MvProgressSetPhase(MV_PHASE_INITIALIZING, -1);
	if (!OidIsValid(rc->cat->storage_oid) && !MvTryTrack(source, rc->def->kind == MV_KIND_AGGREGATE))
	{
		/*
		 * A restored view whose source cannot be tracked yet (the dump is
		 * restored in the transaction that created the extension): it
		 * stays unadopted, reads answer live, and the next refresh adopts.
		 */
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("materialized view \"%s\" is not refreshed yet", get_rel_name(rc->viewid)),
				 errdetail("Change capture cannot track its source in this transaction."),
				 errhint("Refresh the view again after this transaction commits; until then reads run its query.")));
		MvMarkPopulated(rc->viewid);
		res->mode = "noop";
		MvProgressSetMode(res->mode);
		return;
	}
	MvTrack(source, rc->def->kind == MV_KIND_AGGREGATE);
	if (!OidIsValid(rc->cat->storage_oid))
		rc->cat->storage_oid = MvCreateStorage(rc->viewid, rc->def);
	MvMarkPopulated(rc->viewid);
	rc->storage = psprintf("mvinc.%s", quote_identifier(get_rel_name(rc->cat->storage_oid)));

	MvProgressSetMode("initial");
	take_snapshot(rc);
	rebuild(rc);
	res->mode = "initial";
	res->from_lsn = InvalidXLogRecPtr;
	res->to_lsn = rc->before;
	MvSetConsumer(source, MvConsumerName(rc->viewid), rc->before);
	MvCatalogSetCheckpoint(rc->viewid, rc->snaptext, rc->before, "initial", true, 0,
						   -1, rc->started);
}

#ifdef USE_ASSERT_CHECKING
/* Does MvSummarizeDelta's summary agree with the same summary in SQL? */
static bool
summary_matches_sql(RefreshCtx *rc, XLogRecPtr L, MvDeltaSummary *sum)
{
	char	   *v;

	run(psprintf("SELECT count(*) FILTER (WHERE d AND op = 'i'), "
				 "count(*) FILTER (WHERE d AND op IN ('u', 'd') AND image <> 'n'), "
				 "count(*) FILTER (WHERE d AND op = 't'), "
				 "count(*) FILTER (WHERE d AND image = 'k'), "
				 "min(lsn) FILTER (WHERE NOT v) "
				 "FROM (SELECT s._mvinc_op AS op, s._mvinc_image AS image, s._mvinc_lsn AS lsn, "
				 "pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) AS v, "
				 "pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) AS o "
				 "FROM %s s WHERE s._mvinc_lsn > '%X/%X' AND s._mvinc_lsn <= '%X/%X' OFFSET 0) s, "
				 "LATERAL (SELECT v AND NOT o AS d) x",
				 rc->snaptext, rc->cat->checkpoint_snapshot, rc->changelog,
				 LSN_FORMAT_ARGS(L), LSN_FORMAT_ARGS(rc->target)),
		InvalidSnapshot, SPI_OK_SELECT);
	v = first_value(5);
	return atol(first_value(1)) == sum->inserts && atol(first_value(2)) == sum->others &&
		atol(first_value(3)) == sum->truncates && atol(first_value(4)) == sum->keyonly &&
		(v != NULL) == sum->has_invisible &&
		(v == NULL ||
		 DatumGetLSN(DirectFunctionCall1(pg_lsn_in, CStringGetDatum(v))) == sum->min_invisible);
}
#endif

/*
 * Refuse to consume changes or append rows in a REPEATABLE READ or
 * SERIALIZABLE transaction.  The statements of a refresh or compaction
 * read the change log, the storage and the append table with the
 * transaction's snapshot.  Under those levels it was taken when the
 * transaction's first statement started, before S' and the wait for
 * capture (and before a refresh that committed while we waited for the
 * view's lock): rows committed since are invisible to it, while the
 * checkpoint would move to S' (or the append count to zero), so the
 * changes would be skipped silently.  (The initial computation reads only
 * the source, under S', into new storage.)
 */
void
MvRequireReadCommitted(Oid viewid, const char *action)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s incremental materialized view \"%s\" in a %s transaction",
						action, get_rel_name(viewid),
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("It must see every change committed before it started, which the transaction's snapshot may predate."),
				 errhint("Run it in a READ COMMITTED transaction.")));
}

/* Apply the delta: appended or merged states, a merge, or a regroup */
static void
apply_delta(RefreshCtx *rc, int64 nins, int64 nother, MvRefreshResult *res)
{
	if (nother == 0)
	{
		/*
		 * Inserts only: the delta's states per group, straight from the
		 * change log (no temporary table, no ANALYZE), go to the append
		 * table or are merged into the storage through its key index.
		 */
		MvProgressSetMode("incremental");
		MvProgressSetPhase(MV_PHASE_APPLY_INSERTS, nins);
		apply_inserts(rc, nins);
		MvProgressSetRows(nins);
		res->mode = "incremental";
	}
	else if (rc->def->kind == MV_KIND_PROJECTION)
	{
		MvProgressSetMode("merge");
		materialize_delta(rc);
		apply_merge(rc);
		res->mode = "merge";
	}
	else
	{
		/* retraction and regrouping work on one row per group */
		MvProgressSetMode("regroup");
		MvFoldAppend(rc->def, rc->cat);
		if (rc->def->retractable)
			apply_retract(rc);
		else
		{
			materialize_delta(rc);
			apply_regroup(rc);
		}
		res->mode = "regroup";
	}
}

/*
 * Apply the delta; if evaluating the view's expressions on a change fails
 * with a data error (a row whose value the view's WHERE or aggregates
 * cannot take, that existed only between two refreshes: the defining
 * query never meets it now), rebuild from the source instead, as a full
 * refresh would, with a WARNING.  Without this every later refresh failed
 * the same way until someone asked for a full one.
 */
static void
apply_or_rebuild(RefreshCtx *rc, int64 nins, int64 nother, MvRefreshResult *res)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		apply_delta(rc, nins, nother, res);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* any error: the subtransaction goes first, or the session is left in it */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			ReThrowError(edata);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("incremental refresh of materialized view \"%s\" failed: %s",
						get_rel_name(rc->viewid), edata->message),
				 errdetail("A captured change has a value the view's expressions cannot take; the view is computed from its source instead.")));
		FreeErrorData(edata);
		MvProgressSetMode("full");
		rebuild(rc);
		res->mode = "full";
	}
	PG_END_TRY();
}

/* Every other mode: consume the change log between checkpoint and S' */
static void
refresh_changes(RefreshCtx *rc, bool full, MvRefreshResult *res)
{
	Oid			source = rc->def->sourceid;
	Oid			changelog;
	XLogRecPtr	L = rc->cat->checkpoint_lsn;
	XLogRecPtr	newL;
	int64		nins,
				nother,
				ntrunc,
				nkeyonly;
	MvDeltaSummary sum;
	TimestampTz started = GetCurrentTimestamp();
	TimestampTz waited;

	MvRequireReadCommitted(rc->viewid, "refresh");

	rc->storage = psprintf("mvinc.%s", quote_identifier(get_rel_name(rc->cat->storage_oid)));
	changelog = MvChangeLogRelid(source);
	if (!OidIsValid(changelog))
		changelog = MvTrack(source, rc->def->kind == MV_KIND_AGGREGATE);
	rc->changelog = MvSourceName(changelog);

	take_snapshot(rc);
	MvProgressSetPhase(MV_PHASE_WAIT_CAPTURE, -1);
	waited = GetCurrentTimestamp();
	MvWaitForCapture(rc->target);
	waited = GetCurrentTimestamp() - waited;
	MvProgressSetPhase(MV_PHASE_READ_CHANGES, -1);

	rc->delta = psprintf("s._mvinc_lsn > '%X/%X' AND s._mvinc_lsn <= '%X/%X' "
						 "AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
						 "AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
						 LSN_FORMAT_ARGS(L), LSN_FORMAT_ARGS(rc->target),
						 rc->snaptext, rc->cat->checkpoint_snapshot);

	/*
	 * One scan of the change log between L and T (read with the latest
	 * snapshot): what changed in the delta, and for the new bound
	 * L' = min(B, lowest lsn > L of a row of a transaction invisible in S')
	 */
	MvSummarizeDelta(changelog, L, rc->target, rc->snaptext, rc->cat->checkpoint_snapshot, &sum);
	Assert(summary_matches_sql(rc, L, &sum));
	nins = sum.inserts;
	nother = sum.others;
	ntrunc = sum.truncates;
	nkeyonly = sum.keyonly;

	newL = rc->before;
	/* rows at the lowest invisible lsn must still be consumed: the bound is below it */
	if (sum.has_invisible && sum.min_invisible - 1 < newL)
		newL = sum.min_invisible - 1;

	res->from_lsn = L;
	res->to_lsn = rc->target;
	res->changes = nins + nother;
	rc->delta_rows = nins + nother;
	MvProgressSetRows(nins + nother + ntrunc);

	if (full || rc->own_modified || ntrunc > 0 || MvRetainedFrom(source) > L ||
		rc->cat->built_generation != rc->cat->source_generation ||
		(nkeyonly > 0 && rc->def->kind == MV_KIND_AGGREGATE))
	{
		MvProgressSetMode("full");
		rebuild(rc);
		res->mode = "full";
	}
	else if (nins + nother == 0)
	{
		res->mode = "noop";
		MvProgressSetMode(res->mode);
	}
	else
		apply_or_rebuild(rc, nins, nother, res);
	MvSetConsumer(source, MvConsumerName(rc->viewid), newL);
	MvCatalogSetCheckpoint(rc->viewid, rc->snaptext, newL, res->mode, true,
						   rc->cat->append_rows, res->changes, rc->started);
	MvCompactLater(rc->viewid, rc->cat->storage_oid, rc->cat->append_rows);
	ereport(DEBUG1,
			(errmsg_internal("refresh of \"%s\": %s, %lld changes, %.1f ms waiting for capture, %.1f ms in all",
							 get_rel_name(rc->viewid), res->mode, (long long) res->changes,
							 waited / 1000.0, (GetCurrentTimestamp() - started) / 1000.0)));
}

/*
 * REFRESH MATERIALIZED VIEW ... WITH NO DATA: empty the storage, forget
 * the checkpoint and the view's claim on the change log, and mark the view
 * unpopulated. Reads then run the defining query (as after CREATE ... WITH
 * NO DATA); the next REFRESH computes the view anew.
 */
void
MvRefreshNoData(Oid viewid)
{
	MvCatalog  *cat;
	MvInternal	save;
	Relation	rel;

	MvBecomeInternal(&save);
	LockRelationOid(viewid, ExclusiveLock);
	cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
	if (cat == NULL)
		elog(ERROR, "\"%s\" is not an incremental materialized view", get_rel_name(viewid));
	MvSpiConnect();
	mvinc_refresh_depth++;
	PG_TRY();
	{
		if (OidIsValid(cat->storage_oid))
			run(psprintf("DELETE FROM mvinc.%s",
						 quote_identifier(get_rel_name(cat->storage_oid))),
				InvalidSnapshot, SPI_OK_DELETE);
		if (OidIsValid(cat->append_oid))
			run(psprintf("DELETE FROM mvinc.%s",
						 quote_identifier(get_rel_name(cat->append_oid))),
				InvalidSnapshot, SPI_OK_DELETE);
	}
	PG_FINALLY();
	{
		mvinc_refresh_depth--;
	}
	PG_END_TRY();
	MvSpiFinish();
	MvDropConsumer(cat->sourceid, MvConsumerName(viewid));
	MvCatalogSetCheckpoint(viewid, NULL, InvalidXLogRecPtr, "no data", false, 0, -1, 0);
	rel = table_open(viewid, AccessExclusiveLock);
	SetMatViewPopulatedState(rel, false);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	MvEndInternal(&save);
}

/*
 * Refresh an incremental view in the current transaction.  initial asks
 * for the first computation (CREATE ... WITH DATA).  With keep, *keep gets
 * the refresh's snapshot S' (registered: the caller unregisters it), or
 * InvalidSnapshot when the refresh took none.
 */
static void
refresh_view_run(Oid viewid, bool full, bool initial, Snapshot *keep, MvRefreshResult *res)
{
	RefreshCtx *rc;
	MvInternal save;

	MvCheckOwnerCanRead(viewid);
	/* SQL is generated and run with search_path pinned (see mv_init.c) */
	MvBecomeInternal(&save);
	if (work_mem < 65536)
		(void) set_config_option("work_mem", "64MB", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	rc = refresh_setup(viewid);
	/* a restored view that will track its source: before any write */
	if (!OidIsValid(MvChangeLogRelid(rc->cat->sourceid)))
		MvAwaitCapture();
	MvSpiConnect();
	mvinc_refresh_depth++;
	PG_TRY();
	{
		if (initial || !rc->cat->populated || !OidIsValid(rc->cat->storage_oid))
			refresh_initial(rc, res);
		else
			refresh_changes(rc, full, res);
	}
	PG_FINALLY();
	{
		mvinc_refresh_depth--;
	}
	PG_END_TRY();

	/*
	 * Without track_counts the pre-commit check cannot count later changes
	 * of the source (one routed through a partitioned parent, or made by a
	 * trigger, is not seen by MvNoteSourceWrite): a refresh that read the
	 * transaction's own changes leaves the view stale, so that reads run
	 * the query and the next refresh is full.
	 */
	if (rc->own_modified && !pgstat_track_counts)
		MvCatalogMarkStale(viewid);
	if (keep)
		*keep = rc->snap;
	else if (rc->snap)
		UnregisterSnapshot(rc->snap);
	MvSpiFinish();
	MvEndInternal(&save);
}

/* The same, shown in mvinc.refresh_progress while it runs */
static MvRefreshResult
refresh_view(Oid viewid, bool full, bool initial, Snapshot *keep)
{
	MvRefreshResult res = {0};

	MvProgressBegin(MV_PROGRESS_REFRESH, viewid);
	PG_TRY();
	{
		refresh_view_run(viewid, full, initial, keep, &res);
	}
	PG_FINALLY();
	{
		MvProgressEnd();
	}
	PG_END_TRY();
	return res;
}

MvRefreshResult
MvRefresh(Oid viewid, bool full, bool initial)
{
	return refresh_view(viewid, full, initial, NULL);
}

/* An incremental refresh that hands its snapshot S' over (mvinc.verify_view) */
MvRefreshResult
MvRefreshKeepSnapshot(Oid viewid, Snapshot *snap)
{
	*snap = InvalidSnapshot;
	return refresh_view(viewid, false, false, snap);
}
