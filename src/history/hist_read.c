/*-------------------------------------------------------------------------
 * hist_read.c
 *	  Reads of history views: never stale.  A read sees every change of the
 *	  source committed before its snapshot, refreshed or not: the stored
 *	  versions, with the pending captured changes applied on the fly.
 *
 *	  The read query (HistReadSql, put in place of the view by mv's
 *	  planner hook) is the storage minus the current versions that pending
 *	  changes end, plus mvinc._history_pending(view): those versions ended,
 *	  and the versions the pending changes open.  Conditions on the view
 *	  reach the storage's index.  _history_pending reads the checkpoint and
 *	  the storage in the statement's snapshot and the change log in the
 *	  latest one (capture may write rows the statement sees after its
 *	  snapshot), as the hybrid reads of incremental views do, after waiting
 *	  for capture to reach the source's last commit.  Under SERIALIZABLE it
 *	  locks and conflicts as a scan of the source would (mv_ssi.c).  A
 *	  read never waits for or shows the reader's own uncommitted changes:
 *	  they have no commit time yet.  A hot standby refuses the read of a
 *	  stream-fed view: capture runs on the primary only, so the standby
 *	  cannot prove the replicated change log holds every commit it sees.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "history/history.h"
#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_history_pending);

/* How long a read waits for capture to reach its source's last commit */
#define HIST_READ_WAIT_MS 10000

/* the pending changes' rows, as the events query reads them */
#define PENDING_ENR "_mvinc_pending"

/*
 * The read query of a history view, or NULL without storage; *reads_changes
 * tells whether it shows the source's changes since the last refresh.  Column
 * names and types are the storage's (by position: the view's names may
 * have been renamed since).  A plan made before a view's first load reads
 * pending changes too (there are none); one made after reads the storage.
 */
char *
HistReadSql(Oid viewid, bool *reads_changes)
{
	HistCatalog *cat = HistCatalogLookup(viewid, false);
	Relation	rel;
	TupleDesc	desc;
	StringInfoData cols;
	StringInfoData types;
	StringInfoData keys;
	char	   *keycopy;
	List	   *keynames;
	ListCell   *lc;
	int			i;

	*reads_changes = false;
	if (cat == NULL || !OidIsValid(cat->storage_oid))
		return NULL;
	/* a snapshot-fed view has no change stream, and never will have */
	if (cat->feed && strcmp(cat->feed, "snapshot") == 0)
		return psprintf("SELECT * FROM %s", HistStorageSql(cat));
	*reads_changes = true;
	rel = relation_open(cat->storage_oid, AccessShareLock);
	desc = RelationGetDescr(rel);
	initStringInfo(&cols);
	initStringInfo(&types);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		appendStringInfo(&cols, "%s%s", cols.len ? ", " : "", quote_identifier(NameStr(att->attname)));
		appendStringInfo(&types, "%s%s %s", types.len ? ", " : "",
						 quote_identifier(NameStr(att->attname)),
						 MvTypeSql(att->atttypid, att->atttypmod));
	}
	relation_close(rel, AccessShareLock);

	initStringInfo(&keys);
	keycopy = pstrdup(cat->key_list);
	if (!SplitIdentifierString(keycopy, ',', &keynames))
		elog(ERROR, "bad key list of history view %u", viewid);
	foreach(lc, keynames)
		appendStringInfo(&keys, " AND p.%s = h.%s", quote_identifier(lfirst(lc)),
						 quote_identifier(lfirst(lc)));

	return psprintf("WITH p AS MATERIALIZED (SELECT * FROM mvinc._history_pending(%u::pg_catalog.oid) "
					"AS p(%s, _mvinc_closes pg_catalog.bool)) "
					"SELECT %s FROM %s h WHERE NOT EXISTS (SELECT FROM p WHERE p._mvinc_closes%s "
					"AND p.valid_from = h.valid_from) "
					"UNION ALL SELECT %s FROM p",
					viewid, types.data, cols.data, HistStorageSql(cat), keys.data, cols.data);
}

/*
 * The checkpoint and storage of a stream-fed history view in a snapshot.
 * *adopted: the catalog row names its storage by oid (false after a
 * restore until the view's first refresh adopts the storage: the
 * checkpoint is then another cluster's).
 */
static HistCatalog *
lookup_in_snapshot(Oid viewid, Snapshot snap, bool *adopted)
{
	HistCatalog *cat = NULL;
	MemoryContext outer = CurrentMemoryContext;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};
	static SPIPlanPtr plan = NULL;	/* kept: every read of a history view asks */

	if (plan == NULL)
	{
		plan = SPI_prepare("SELECT source::oid, "
						   "(SELECT string_agg(quote_ident(k), ', ' ORDER BY o) "
						   "   FROM unnest(key_columns) WITH ORDINALITY u(k, o)), "
						   "storage_name::text, checkpoint_snapshot::text, checkpoint_lsn, storage_oid "
						   "FROM mvinc.history_view WHERE view = $1::regclass "
						   "AND feed = 'stream' AND checkpoint_lsn IS NOT NULL", 1, types);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the lookup of mvinc.history_view");
	}
	if (SPI_execute_snapshot(plan, values, NULL, snap, InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read mvinc.history_view");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext spicxt = MemoryContextSwitchTo(outer);

		cat = palloc0(sizeof(HistCatalog));
		cat->viewid = viewid;
		cat->sourceid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		cat->key_list = SPI_getvalue(tup, desc, 2);
		cat->storage_name = SPI_getvalue(tup, desc, 3);
		cat->storage_oid = get_relname_relid(cat->storage_name, MvincSchemaOid());
		cat->checkpoint_snapshot = SPI_getvalue(tup, desc, 4);
		cat->checkpoint_lsn = DatumGetLSN(SPI_getbinval(tup, desc, 5, &isnull));
		*adopted = OidIsValid(cat->storage_oid) &&
			DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull)) == cat->storage_oid;
		MemoryContextSwitchTo(spicxt);
	}
	return cat;
}

/*
 * The caller's column list must be the storage's columns and a boolean:
 * the rows are stored as they come.
 */
static void
check_result_type(TupleDesc desc, Oid storage)
{
	Relation	rel = relation_open(storage, AccessShareLock);
	TupleDesc	sdesc = RelationGetDescr(rel);
	bool		ok = desc->natts == sdesc->natts + 1 &&
		TupleDescAttr(desc, desc->natts - 1)->atttypid == BOOLOID;
	int			i;

	for (i = 0; ok && i < sdesc->natts; i++)
		ok = !TupleDescAttr(sdesc, i)->attisdropped &&
			TupleDescAttr(desc, i)->atttypid == TupleDescAttr(sdesc, i)->atttypid &&
			TupleDescAttr(desc, i)->atttypmod == TupleDescAttr(sdesc, i)->atttypmod;
	relation_close(rel, AccessShareLock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the column definition list does not match the history view's columns"),
				 errhint("mvinc._history_pending is called by reads of history views; query the view instead.")));
}

/* Type of the i-th column of HistDeltaRowsSql's rows */
static char *
delta_column_type(HistDef *def, int i)
{
	static const char *fixed[] = {"pg_lsn", "timestamptz", "int4", "bool", "bool"};
	HistColumn *col;
	Oid			typid;
	int32		typmod;

	if (i < 5)
		return (char *) fixed[i];
	if (i == 5 + list_length(def->columns))
		return "bool";
	col = list_nth(def->columns, i - 5);
	/*
	 * A domain's base type: key-only old images hold NULL in the other
	 * columns, which a NOT NULL domain refuses (the values are the
	 * domain's all the same); in the column's collation: keys group and
	 * compare as the view's do
	 */
	typmod = col->typmod;
	typid = getBaseTypeAndTypmod(col->typid, &typmod);
	if (OidIsValid(col->collation))
		return psprintf("%s COLLATE %s", MvTypeSql(typid, typmod),
						MvCollationSql(col->collation));
	return MvTypeSql(typid, typmod);
}

/*
 * mvinc._history_pending(view): the versions that the captured changes
 * past the view's checkpoint end (_mvinc_closes) or open, as the
 * statement's snapshot sees them.  Empty when there are none, or when the
 * view is not fed by the change stream.
 */
Datum
mvinc_history_pending(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Snapshot	snap = GetActiveSnapshot();
	HistCatalog *cat;
	HistDef    *def;
	Oid			changelog;
	XLogRecPtr	target;
	Snapshot	latest;
	SPIPlanPtr	plan;
	char	   *sql;
	char	   *query_snap;
	bool		may_select;
	int			ncols;
	TupleDesc	desc;
	Tuplestorestate *store;
	StringInfoData casts;
	uint64		nrows;
	uint64		r;
	int			c;
	bool		truncates = false;
	bool		adopted = false;
	XLogRecPtr	retained_from;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	/*
	 * Rows of the view, for a caller who may read the view itself; one who
	 * reads it through a plain view only (a query of this transaction read
	 * it so) gets nothing or an error: the rows are the whole view's,
	 * which that plain view may not show.
	 */
	/* (column privileges on every column are as good: the rows carry them all) */
	may_select = pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(viewid, GetUserId(), ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK;
	if (!may_select && !MvMayReadView(viewid))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_MATVIEW, get_rel_name(viewid));

	MvSpiConnect();
	cat = lookup_in_snapshot(viewid, snap, &adopted);
	if (cat != NULL && OidIsValid(cat->storage_oid) && !adopted)
	{
		/*
		 * Restored and not refreshed since (a dump restored without its
		 * post-data REFRESH, e.g. --schema-only then --data-only): the
		 * stored versions are the dump's, the checkpoint another
		 * cluster's, so the changes made since cannot be told apart.
		 */
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("history view \"%s\" has not been refreshed since it was restored",
						get_rel_name(viewid)),
				 errdetail("Its versions are the dump's; its first refresh applies the changes of \"%s\" made since.",
						   get_rel_name(cat->sourceid)),
				 errhint("Run REFRESH MATERIALIZED VIEW.")));
	}
	if (cat == NULL || !OidIsValid(cat->storage_oid) ||
		!OidIsValid(changelog = MvChangeLogRelid(cat->sourceid)))
	{
		MvSpiFinish();
		return (Datum) 0;
	}
	check_result_type(rsinfo->setDesc, cat->storage_oid);

	/*
	 * On a hot standby the pending changes cannot be proven complete: the
	 * change log is written by the primary's capture worker and replicated,
	 * so a source commit the standby's snapshot sees may not have its
	 * change-log rows yet, and the standby has no capture position to wait
	 * for (MvTryWaitForCapture proves nothing there).  The versions exist
	 * only in the storage and the change log (no live answer, unlike
	 * incremental views): refuse rather than answer without them.
	 */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot read history view \"%s\" on a standby", get_rel_name(viewid)),
				 errdetail("Its pending changes are captured on the primary; the standby cannot tell whether all changes of \"%s\" its snapshot sees are in the change log.",
						   get_rel_name(cat->sourceid)),
				 errhint("Read it on the primary.")));

	/*
	 * Inside a parallel query (a PARALLEL SAFE or RESTRICTED function that
	 * reads the view, in a worker or in the leader) no newer snapshot can
	 * be taken, and the change-log rows of commits the query sees may have
	 * been captured after its snapshot: no exact answer.
	 */
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read history view \"%s\" in a parallel query", get_rel_name(viewid)),
				 errdetail("Its pending changes are read in a newer snapshot than the query's, which a parallel operation cannot take."),
				 errhint("Mark the function that reads the view PARALLEL UNSAFE.")));
	/*
	 * Values of types without an equality operator are compared by their
	 * text (hist_apply.c, values_equal_sql): print floats exactly, and
	 * times in one style (DateStyle 'SQL' prints zone abbreviations, which
	 * can name another zone: CST, IST).
	 */
	(void) set_config_option("extra_float_digits", "1", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("datestyle", "ISO, YMD", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	/*
	 * SERIALIZABLE: the SIREAD lock and conflicts a scan of the source would
	 * give (mv_ssi.c), and a wait for all WAL, since the change log is then
	 * also asked for writers the snapshot does not see.  Otherwise every
	 * commit the snapshot sees that changed the source is captured.
	 */
	MvSsiLockSource(cat->sourceid, snap);
	target = MvInsertLsn();
	if (!IsolationIsSerializable())
		target = MvCaptureTarget(cat->sourceid, target);
	if (!MvTryWaitForCapture(target, HIST_READ_WAIT_MS))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot read history view \"%s\": change capture is behind",
						get_rel_name(viewid)),
				 errdetail("Changes of \"%s\" committed before this statement are not captured yet.",
						   get_rel_name(cat->sourceid)),
				 errhint("Check mvinc.capture for the capture worker's state, then retry.")));

	/*
	 * The rows past the checkpoint that the statement sees, read in the
	 * latest snapshot; first whether there are any (through the change
	 * log's index, without SQL: usually there are none).
	 */
	latest = RegisterSnapshot(GetLatestSnapshot());
	query_snap = MvSnapshotText(snap, false);
	retained_from = MvRetainedFromIn(cat->sourceid, latest);
	if (retained_from > cat->checkpoint_lsn)
	{
		HistCatalog *now = lookup_in_snapshot(viewid, latest, &adopted);

		/*
		 * Not a refresh that moved the checkpoint meanwhile (a retry would
		 * see it): the changes after the checkpoint are gone (the view was
		 * restored in one transaction, whose capture started only after
		 * its commit, or its consumer lost them), and only a refresh,
		 * which sets the source's state then, can go on.
		 */
		if (now != NULL && now->checkpoint_lsn < retained_from)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("history view \"%s\" lost changes of its source", get_rel_name(viewid)),
					 errdetail("The change log no longer holds the changes after %X/%X.",
							   LSN_FORMAT_ARGS(cat->checkpoint_lsn)),
					 errhint("Run REFRESH MATERIALIZED VIEW: the versions of the rows changed since then start at the refresh.")));
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not read the changes of history view \"%s\"", get_rel_name(viewid)),
				 errdetail("A refresh and change-log retention passed the view's checkpoint that this read sees."),
				 errhint("Retry the statement.")));
	}
	MvSsiCheckLoggedWriters(cat->sourceid, MvSourceName(changelog), cat->checkpoint_lsn,
							query_snap, snap);
	if (MvDeltaVisible(changelog, cat->checkpoint_lsn, query_snap, cat->checkpoint_snapshot,
					   latest, false, 0, NULL) == MV_DELTA_NONE)
	{
		UnregisterSnapshot(latest);
		MvSpiFinish();
		return (Datum) 0;
	}
	if (!may_select)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("history view \"%s\" has changes not refreshed yet, and only its own readers see them",
						get_rel_name(viewid)),
				 errdetail("Applying its pending changes computes every column of its rows, which needs SELECT on all of \"%s\" (this query reads it through another view, or may read only some of its columns).",
						   get_rel_name(viewid)),
				 errhint("Refresh the view (REFRESH MATERIALIZED VIEW), or grant SELECT on it.")));
	def = HistDefForView(viewid, cat);
	sql = HistDeltaRowsSql(def, MvSourceName(changelog),
						   psprintf("s._mvinc_lsn > '%X/%X' "
									"AND pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot) "
									"AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
									LSN_FORMAT_ARGS(cat->checkpoint_lsn),
									query_snap, cat->checkpoint_snapshot), false);
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, NULL, NULL, latest, InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the pending changes of history view %u", viewid);
	SPI_freeplan(plan);
	UnregisterSnapshot(latest);
	nrows = SPI_processed;
	if (nrows == 0)
	{
		MvSpiFinish();
		return (Datum) 0;
	}

	/*
	 * Hand them to the events query as they are, in an ephemeral relation.
	 * (Through text, a value whose text does not keep its binary image
	 * came back as another one, and the events query, which tells changes
	 * by image for such types, saw a change where the source had none: a
	 * numeric[] with a null bitmap but no NULL, a composite written before
	 * ALTER TYPE ... ADD ATTRIBUTE.)
	 */
	desc = SPI_tuptable->tupdesc;
	ncols = desc->natts;
	store = tuplestore_begin_heap(false, false, work_mem);
	for (r = 0; r < nrows; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		bool		isnull;
		bool		trunc = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));	/* _mvinc_trunc */

		if (!isnull && trunc)
			truncates = true;
		for (c = 5; !isnull && !trunc && c < 5 + list_length(def->columns); c++)
		{
			bool		keynull;

			(void) SPI_getbinval(tup, desc, c + 1, &keynull);
			if (keynull && ((HistColumn *) list_nth(def->columns, c - 5))->is_key)
				HistKeyMissing(def);
		}
		/* (read in another snapshot: no pointer into the change log's TOAST) */
		if (HeapTupleHasExternal(tup))
			tup = toast_flatten_tuple(tup, desc);
		tuplestore_puttuple(store, tup);
	}
	MvRegisterRows(PENDING_ENR, desc, store, nrows);
	initStringInfo(&casts);
	for (c = 0; c < ncols; c++)
	{
		const char *name = quote_identifier(SPI_fname(desc, c + 1));

		appendStringInfo(&casts, "%su.%s::%s AS %s", c ? ", " : "", name,
						 delta_column_type(def, c), name);
	}

	/* the current versions they end, and the versions they open */
	{
		char	   *storage = HistStorageSql(cat);
		char	   *all = HistColumnListSql(def, true, true, NULL);
		char	   *events = HistEventsSql(def, storage, "ev",
										   psprintf("d AS (SELECT %s FROM " PENDING_ENR " u), "
													"ev AS (%s), ",
													casts.data,
													HistStatesSql(def, storage, "d", truncates)));

		sql = psprintf("WITH e AS MATERIALIZED (%s) "
					   "SELECT %s, _mvinc_time, _mvinc_next, true FROM e "
					   "WHERE _mvinc_lsn = '0/0' AND _mvinc_present AND _mvinc_next IS NOT NULL "
					   "UNION ALL SELECT %s, _mvinc_eff, coalesce(_mvinc_next, 'infinity'), false "
					   "FROM e WHERE _mvinc_lsn > '0/0' AND _mvinc_present",
					   events, all, all);
	}
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, NULL, NULL, snap, InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not apply the pending changes of history view %u", viewid);
	for (r = 0; r < SPI_processed; r++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[r]);
	SPI_freeplan(plan);
	MvSpiFinish();
	return (Datum) 0;
}
