/*-------------------------------------------------------------------------
 * hist_refresh.c
 *	  Feeding history views: CREATE's first computation, REFRESH from the
 *	  captured changes, mvinc.history_load from snapshot extracts, and the
 *	  sql_drop event trigger.
 *
 *	  The change-stream feed follows the checkpoint rule of incremental
 *	  views (docs/internals.md, "Refresh checkpoints"): a snapshot S of the
 *	  source and an LSN L below every change of a transaction invisible in
 *	  S; a refresh takes S' (insert LSN B before it, T after it), waits for
 *	  capture up to T and applies the change-log rows with L < lsn <= T
 *	  visible in S' and not in S; the new bound is min(B, lowest lsn of a
 *	  row invisible in S' - 1).  Everything runs in the caller's
 *	  transaction: versions and checkpoint commit together.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/matview.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "history/history.h"
#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_history_load);
PG_FUNCTION_INFO_V1(mvinc_on_history_drop);

/* mv_refresh.c: storage tables may be written while > 0 */
extern int	mvinc_refresh_depth;

/* The view's columns computed over alias s of from, rows passing WHERE */
static char *
state_sql(HistDef *def, const char *from)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);

		appendStringInfo(&sql, "%s%s AS %s", foreach_current_index(lc) ? ", " : "",
						 MvExprSql(def->sourceid, (Node *) col->expr, "s"),
						 quote_identifier(col->name));
	}
	appendStringInfo(&sql, " FROM %s s", from);
	if (def->where)
		appendStringInfo(&sql, " WHERE %s", MvExprSql(def->sourceid, def->where, "s"));
	return sql.data;
}

/* Refuse to feed a view under a snapshot that may predate changes */
static void
require_read_committed(Oid viewid, const char *action)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s history view \"%s\" in a %s transaction", action,
						get_rel_name(viewid),
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("It must see every change committed before it started, which the transaction's snapshot may predate."),
				 errhint("Run it in a READ COMMITTED transaction.")));
}

/*
 * Become mvinc (save must be ended by the caller), lock the view and read
 * its catalog row (adopting restored storage); refuse the other feed.
 */
static HistCatalog *
begin_feed(Oid viewid, MvInternal *save, const char *feed)
{
	HistCatalog *cat;

	MvBecomeInternal(save);
	/*
	 * A change-fed view whose source is not tracked (restored): have
	 * capture running before this transaction takes a lock or writes (see
	 * MvAwaitCapture).  Snapshot loads need no capture.
	 */
	if (strcmp(feed, "stream") == 0)
	{
		HistCatalog *peek = HistCatalogLookup(viewid, false);

		if (peek != NULL && !OidIsValid(MvChangeLogRelid(peek->sourceid)))
			MvAwaitCapture();
	}
	if (work_mem < 65536)
		(void) set_config_option("work_mem", "64MB", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	/* two feeds of one view serialize here; readers are not blocked */
	LockRelationOid(viewid, ExclusiveLock);
	cat = HistCatalogLookup(viewid, true);
	if (cat == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a history view", get_rel_name(viewid)),
				 errhint("Create it WITH (mvinc.history = true, mvinc.key = '...').")));
	if (cat->feed && strcmp(cat->feed, feed) != 0 && strcmp(feed, "stream") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("history view \"%s\" is fed by snapshot loads", get_rel_name(viewid)),
				 errdetail("Its versions come from mvinc.history_load(), not from its source's changes."),
				 errhint("Load the next snapshot with mvinc.history_load().")));
	if (cat->feed && strcmp(cat->feed, feed) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("history view \"%s\" is fed by its source's changes", get_rel_name(viewid)),
				 errdetail("It has been refreshed; a view takes either refreshes or snapshot loads."),
				 errhint("Create the view WITH NO DATA over a table of the extract's shape and load snapshots into that one.")));
	return cat;
}

/* First computation: every current source row opens a version at t */
static void
refresh_initial(Oid viewid, HistCatalog *cat, HistDef *def, const char *storage)
{
	XLogRecPtr	before;
	Snapshot	snap;
	char	   *snaptext;
	HistApplied ap = {0};
	TimestampTz t = GetCurrentStatementStartTimestamp();
	bool		empty;

	/* no source transaction straddles the start of tracking */
	MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
	MvLockForTracking(def->sourceid, def->full_old_rows);
	MvRefuseChildrenAfterLock(def->sourceid, MvViewReadsChildren(viewid, def->sourceid));
	MvProgressSetMode("initial");
	MvProgressSetPhase(MV_PHASE_REBUILD, -1);
	MvTrack(def->sourceid, def->full_old_rows);
	before = MvInsertLsn();
	snap = RegisterSnapshot(GetLatestSnapshot());
	snaptext = MvSnapshotText(snap, false);
	/*
	 * Empty storage: only versions to open, at mvinc.history_start if
	 * given.  A restored storage keeps its history: the source's state now
	 * is set from now on.
	 */
	if (SPI_execute(psprintf("SELECT 1 FROM %s LIMIT 1", storage), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the history storage");
	empty = SPI_processed == 0;
	if (empty && cat->has_start)
		t = cat->history_start;
	HistSetState(def, cat->storage_oid, storage, state_sql(def, psprintf("ONLY %s", MvSourceName(def->sourceid))),
				 snap, t, DT_NOEND, empty, true, &ap);
	UnregisterSnapshot(snap);
	MvSetConsumer(def->sourceid, HistConsumerName(viewid), before);
	HistCatalogSetCheckpoint(viewid, snaptext, before, ap.opened + ap.closed);
	MvMarkPopulated(viewid);
}

/* Apply the captured changes since the checkpoint */
static void
refresh_changes(Oid viewid, HistCatalog *cat, HistDef *def, const char *storage)
{
	Oid			source = def->sourceid;
	Oid			changelog = MvChangeLogRelid(source);
	XLogRecPtr	L = cat->checkpoint_lsn;
	XLogRecPtr	before,
				target,
				newL;
	Snapshot	snap;
	char	   *snaptext;
	MvDeltaSummary sum;
	HistApplied ap = {0};

	if (!OidIsValid(changelog))
		changelog = MvTrack(source, def->full_old_rows);
	before = MvInsertLsn();
	snap = RegisterSnapshot(GetLatestSnapshot());
	snaptext = MvSnapshotText(snap, false);
	target = MvInsertLsn();
	MvProgressSetPhase(MV_PHASE_WAIT_CAPTURE, -1);
	MvWaitForCapture(target);

	if (MvRetainedFrom(source) > L)
	{
		MvProgressSetPhase(MV_PHASE_READ_CHANGES, -1);
		MvSummarizeDelta(changelog, L, target, snaptext, cat->checkpoint_snapshot, &sum);
		/* the changes in between are gone: only their net effect is known */
		ereport(WARNING,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("history view \"%s\" lost changes of its source", get_rel_name(viewid)),
				 errdetail("The change log no longer holds the changes after %X/%X.",
						   LSN_FORMAT_ARGS(L)),
				 errhint("The versions of the rows changed since then start now; the intermediate ones are missing.")));
		MvProgressSetMode("full");
		MvProgressSetPhase(MV_PHASE_REBUILD, -1);
		HistSetState(def, cat->storage_oid, storage,
					 state_sql(def, psprintf("ONLY %s", MvSourceName(source))),
					 snap, GetCurrentStatementStartTimestamp(), DT_NOEND, false, true, &ap);
	}
	/* in one pass, unless a TRUNCATE ends every key present at its time */
	else if (!HistApplyEventsDirect(def, cat->storage_oid, MvSourceName(changelog), L, target,
									snaptext, cat->checkpoint_snapshot, &sum, &ap))
	{
		MvProgressSetPhase(MV_PHASE_READ_CHANGES, -1);
		MvSummarizeDelta(changelog, L, target, snaptext, cat->checkpoint_snapshot, &sum);
		if (sum.inserts + sum.others + sum.truncates > 0)
		{
			MvProgressSetMode("incremental");
			MvProgressSetPhase(MV_PHASE_APPLY_CHANGES, sum.inserts + sum.others + sum.truncates);
			HistApplyEvents(def, cat->storage_oid, storage, MvSourceName(changelog),
							psprintf("s._mvinc_lsn > '%X/%X' AND s._mvinc_lsn <= '%X/%X' "
									 "AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
									 "AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
									 LSN_FORMAT_ARGS(L), LSN_FORMAT_ARGS(target),
									 snaptext, cat->checkpoint_snapshot),
							sum.truncates > 0, &ap);
			MvProgressSetRows(sum.inserts + sum.others + sum.truncates);
		}
		else
			MvProgressSetMode("noop");
	}
	newL = before;
	if (sum.has_invisible && sum.min_invisible - 1 < newL)
		newL = sum.min_invisible - 1;
	UnregisterSnapshot(snap);
	MvSetConsumer(source, HistConsumerName(viewid), newL);
	HistCatalogSetCheckpoint(viewid, snaptext, newL, ap.opened + ap.closed);
}

/*
 * REFRESH MATERIALIZED VIEW of a history view (and CREATE ... WITH DATA):
 * the first one opens the current rows, later ones apply what changed.
 */
static void
refresh_view(Oid viewid, bool skip_data)
{
	HistCatalog *cat;
	HistDef    *def;
	char	   *storage;
	MvInternal	save;

	if (skip_data)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot discard the history of history view \"%s\"", get_rel_name(viewid)),
				 errdetail("REFRESH ... WITH NO DATA would empty it, and its versions cannot be recomputed."),
				 errhint("Drop the view to discard its history.")));
	require_read_committed(viewid, "refresh");
	/* before the rights check's lock: the first refresh upgrades it (populated) */
	MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
	LockRelationOid(viewid, ExclusiveLock);
	MvProgressSetPhase(MV_PHASE_INITIALIZING, -1);
	MvCheckOwnerCanRead(viewid);
	cat = begin_feed(viewid, &save, "stream");
	def = HistDefForView(viewid, cat);
	/*
	 * The transaction's own changes to the source (before or after this
	 * refresh) are applied by a refresh after it commits: the checkpoint
	 * counts its xid as running.  The initial computation reads them,
	 * and they stay unchanged at commit.
	 */
	if (!OidIsValid(cat->storage_oid))
		cat->storage_oid = HistCreateStorage(viewid, def);
	storage = HistStorageSql(cat);

	MvSpiConnect();
	mvinc_refresh_depth++;
	PG_TRY();
	{
		if (cat->checkpoint_snapshot == NULL)
			refresh_initial(viewid, cat, def, storage);
		else
			refresh_changes(viewid, cat, def, storage);
		HistApplyRetention(cat, storage);
	}
	PG_FINALLY();
	{
		mvinc_refresh_depth--;
	}
	PG_END_TRY();
	MvSpiFinish();
	MvEndInternal(&save);
}

/* The same, shown in mvinc.refresh_progress while it runs */
void
HistRefresh(Oid viewid, bool skip_data)
{
	MvProgressBegin(MV_PROGRESS_REFRESH, viewid);
	PG_TRY();
	{
		refresh_view(viewid, skip_data);
	}
	PG_FINALLY();
	{
		MvProgressEnd();
	}
	PG_END_TRY();
}

/* The rest of CREATE: catalog, storage, and the first computation */
void
HistCreateFinish(Oid viewid, HistDef *def, HistOptions *opts, bool skip_data)
{
	HistCatalogInsert(viewid, def, opts);
	CommandCounterIncrement();
	(void) HistCreateStorage(viewid, def);
	CommandCounterIncrement();
	if (!skip_data)
		HistRefresh(viewid, false);
}

/*
 * Check that the snapshot table has every source column the view reads,
 * with the same type (the view's expressions are applied to it by name).
 */
static void
check_snapshot_shape(HistDef *def, Oid snapshot, Oid viewid)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;
	int			attno = -1;

	foreach(lc, def->columns)
		pull_varattnos((Node *) ((HistColumn *) lfirst(lc))->expr, 1, &attrs);
	if (def->where)
		pull_varattnos(def->where, 1, &attrs);
	while ((attno = bms_next_member(attrs, attno)) >= 0)
	{
		AttrNumber	src = attno + FirstLowInvalidHeapAttributeNumber;
		char	   *name = get_attname(def->sourceid, src, false);
		AttrNumber	snap = get_attnum(snapshot, name);
		Oid			type;
		int32		typmod;
		Oid			srctype;
		int32		srctypmod;
		Oid			coll;

		if (snap == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("snapshot \"%s\" has no column \"%s\"", get_rel_name(snapshot), name),
					 errdetail("History view \"%s\" reads it from \"%s\".", get_rel_name(viewid),
							   get_rel_name(def->sourceid)),
					 errhint("Load a table of the same shape as the view's source.")));
		get_atttypetypmodcoll(snapshot, snap, &type, &typmod, &coll);
		get_atttypetypmodcoll(def->sourceid, src, &srctype, &srctypmod, &coll);
		/* with another typmod, values the source could not hold would be stored */
		if (type != srctype || (srctypmod >= 0 && typmod != srctypmod))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of snapshot \"%s\" has type %s, not %s", name,
							get_rel_name(snapshot), format_type_with_typemod(type, typmod),
							format_type_with_typemod(srctype, srctypmod)),
					 errhint("Load a table of the same shape as the view's source (cast the column when you fill it).")));
	}
}

/*
 * mvinc.history_load(view, snapshot, as_of): the snapshot's rows are the
 * state at as_of, which holds until the next load (infinity for the
 * newest).  Returns the keys NEW, CHANGE(d), CLOSE(d) and UNCHANGED.
 */
Datum
mvinc_history_load(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	Oid			snapshot = PG_GETARG_OID(1);
	TimestampTz as_of = PG_GETARG_TIMESTAMPTZ(2);
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	HistCatalog *cat;
	HistDef    *def;
	HistApplied ap = {0};
	TimestampTz until = DT_NOEND;
	MvInternal	save;
	char	   *storage;
	AclResult	acl;

	PreventCommandDuringRecovery("mvinc.history_load()");
	if (get_rel_relkind(viewid) != RELKIND_MATVIEW || !MvIsHistoryView(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a history view", get_rel_name(viewid)),
				 errhint("Create it WITH (mvinc.history = true, mvinc.key = '...') AS ... WITH NO DATA.")));
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(viewid));
	acl = pg_class_aclcheck(snapshot, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, get_relkind_objtype(get_rel_relkind(snapshot)), get_rel_name(snapshot));

	/*
	 * The extract is read with mvinc's rights: only from a relation whose
	 * rows the caller sees all of (no row-level security applies to them;
	 * not a view, whose invoker's rights would be mvinc's).
	 */
	if (get_rel_relkind(snapshot) == RELKIND_VIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot load snapshot \"%s\": it is a view", get_rel_name(snapshot)),
				 errhint("Load from a table or a materialized view (CREATE TABLE ... AS SELECT from the view first).")));
	if (check_enable_rls(snapshot, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot load snapshot \"%s\": row-level security applies to it",
						get_rel_name(snapshot)),
				 errdetail("A load reads every row of the snapshot."),
				 errhint("Load from a table without row-level security, or as a role that bypasses it.")));
	if (TIMESTAMP_NOT_FINITE(as_of))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("as_of must be a finite time")));
	require_read_committed(viewid, "load a snapshot into");

	cat = begin_feed(viewid, &save, "snapshot");
	def = HistDefForView(viewid, cat);
	check_snapshot_shape(def, snapshot, viewid);
	if (!OidIsValid(cat->storage_oid))
		cat->storage_oid = HistCreateStorage(viewid, def);
	storage = HistStorageSql(cat);

	MvSpiConnect();
	mvinc_refresh_depth++;
	PG_TRY();
	{
		Oid			types[2] = {OIDOID, TIMESTAMPTZOID};
		Datum		args[2] = {ObjectIdGetDatum(viewid), TimestampTzGetDatum(as_of)};
		bool		isnull;

		bool		in_order;

		/*
		 * The next observation after as_of ends what this one says.  Every
		 * version starts and ends at a load's time: after a load newer than
		 * all others only current versions change.
		 */
		SPIPlanPtr	plan = SPI_prepare("SELECT min(as_of) FILTER (WHERE as_of > $2), "
									   "coalesce(max(as_of) < $2, true) FROM mvinc.history_loads "
									   "WHERE view = $1::regclass", 2, types);

		/* in the latest snapshot: a load may have committed while we waited for the lock */
		if (plan == NULL ||
			SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
								 true, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read mvinc.history_loads");
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
				until = DatumGetTimestampTz(d);
			in_order = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												  2, &isnull));
		}
		/*
		 * A repeat of the newest load (a daily job run again) usually
		 * changes nothing: find that with one join before the set-based
		 * rule, which copies and groups the whole extract.
		 */
		if (in_order || !TIMESTAMP_IS_NOEND(until) ||
			!HistStateUnchanged(def, storage, state_sql(def, MvSourceName(snapshot)),
								HistKeyIsUnique(def, snapshot), &ap))
			HistSetState(def, cat->storage_oid, storage, state_sql(def, MvSourceName(snapshot)), NULL, as_of, until,
						 in_order, HistKeyIsUnique(def, snapshot), &ap);
		{
			Oid			ltypes[6] = {OIDOID, TIMESTAMPTZOID, INT8OID, INT8OID, INT8OID, INT8OID};
			Datum		largs[6] = {ObjectIdGetDatum(viewid), TimestampTzGetDatum(as_of),
				Int64GetDatum(ap.rows), Int64GetDatum(ap.new_keys),
			Int64GetDatum(ap.changed_keys), Int64GetDatum(ap.closed_keys)};

			if (SPI_execute_with_args("INSERT INTO mvinc.history_loads "
									  "VALUES ($1::regclass, $2, now(), $3, $4, $5, $6) "
									  "ON CONFLICT (view, as_of) DO UPDATE SET loaded_at = now(), "
									  "rows = $3, new = $4, changed = $5, closed = $6",
									  6, ltypes, largs, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not record the load");
		}
		HistCatalogSetFeed(viewid, "snapshot");
		HistApplyRetention(cat, storage);
	}
	PG_FINALLY();
	{
		mvinc_refresh_depth--;
	}
	PG_END_TRY();
	MvSpiFinish();
	MvEndInternal(&save);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(ap.new_keys);
	values[1] = Int64GetDatum(ap.changed_keys);
	values[2] = Int64GetDatum(ap.closed_keys);
	values[3] = Int64GetDatum(ap.rows - ap.new_keys - ap.changed_keys);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* sql_drop: forget dropped history views and stop consuming their changes */
Datum
mvinc_on_history_drop(PG_FUNCTION_ARGS)
{
	List	   *views = NIL;
	List	   *sources = NIL;
	ListCell   *lc,
			   *lc2;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "not fired by event trigger manager");
	if (!MvincExtensionReady())
		return (Datum) 0;
	MvSpiOids("DELETE FROM mvinc.history_view v "
			  "USING pg_catalog.pg_event_trigger_dropped_objects() d "
			  "WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
			  "AND d.objid = v.view::oid AND d.objsubid = 0 "
			  "RETURNING v.view::oid, v.source::oid", 0, NULL, false, &views, &sources);
	forboth(lc, views, lc2, sources)
	{
		MvDropConsumer(lfirst_oid(lc2), HistConsumerName(lfirst_oid(lc)));
		if (get_rel_name(lfirst_oid(lc2)) != NULL)
			MvReleaseSource(lfirst_oid(lc2));
	}
	return (Datum) 0;
}
