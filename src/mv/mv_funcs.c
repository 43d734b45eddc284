/*-------------------------------------------------------------------------
 * mv_funcs.c
 *	  SQL-callable functions of incremental views: mvinc.refresh,
 *	  mvinc.compact, mvinc.recluster, mvinc.read_path, the helpers of the mvinc.views view, and the event
 *	  triggers that follow DROP (views and sources) and ALTER (sources).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"

#include "mv/mv.h"

PG_FUNCTION_INFO_V1(mvinc_refresh);
PG_FUNCTION_INFO_V1(mvinc_read_path);
PG_FUNCTION_INFO_V1(mvinc_read_branch);
PG_FUNCTION_INFO_V1(mvinc_compact);
PG_FUNCTION_INFO_V1(mvinc_recluster);
PG_FUNCTION_INFO_V1(mvinc_pending_changes);
PG_FUNCTION_INFO_V1(mvinc_storage_rows);
PG_FUNCTION_INFO_V1(mvinc_on_sql_drop);
PG_FUNCTION_INFO_V1(mvinc_on_ddl_end);

/* Error unless relid is an incremental view */
static MvCatalog *
require_view(Oid relid)
{
	MvCatalog  *cat = MvCatalogLookup(relid, MV_LOOKUP_NEW);

	if (cat == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an incremental materialized view",
						get_rel_name(relid) ? get_rel_name(relid) : "?"),
				 errhint("Create it WITH (mvinc.incremental = true).")));
	return cat;
}

/* mvinc.refresh(view, full): refresh and report mode and changes */
Datum
mvinc_refresh(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	bool		full = PG_GETARG_BOOL(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MvRefreshResult res;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	/* the refresh itself refuses what is not an incremental view */
	if (!pg_class_ownercheck(viewid, GetUserId()))
	{
		require_view(viewid);
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(viewid));
	}
	res = MvRefresh(viewid, full, false);

	InitMaterializedSRF(fcinfo, 0);
	values[0] = CStringGetTextDatum(res.mode);
	values[1] = Int64GetDatum(res.changes);
	values[2] = LSNGetDatum(res.from_lsn);
	nulls[2] = XLogRecPtrIsInvalid(res.from_lsn);
	values[3] = LSNGetDatum(res.to_lsn);
	nulls[3] = XLogRecPtrIsInvalid(res.to_lsn);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* Error unless the current user may read the view (see MvMayReadView) */
static void
require_read_right(Oid viewid)
{
	if (!MvMayReadView(viewid))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_MATVIEW, get_rel_name(viewid));
}

/* mvinc.read_path(view): the path a read of the view takes now */
Datum
mvinc_read_path(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);

	require_view(viewid);
	require_read_right(viewid);
	switch (MvDecideReadBranch(viewid))
	{
		case MV_READ_LIVE:
			PG_RETURN_TEXT_P(cstring_to_text("live"));
		case MV_READ_HYBRID:
			PG_RETURN_TEXT_P(cstring_to_text("hybrid"));
		default:
			PG_RETURN_TEXT_P(cstring_to_text("fresh"));
	}
}

/*
 * mvinc._read_branch(view oid): used by the redirected read, which calls it
 * with the reader's rights; so PUBLIC may call it, and it answers only for
 * views the current user may read (or a running query of this transaction
 * reads: a plain view's owner may have the right, not the reader).
 */
Datum
mvinc_read_branch(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"live", "fresh", "merge", "hybrid"};
	Oid			viewid = PG_GETARG_OID(0);

	/* (a read node's arm asks for its node, whose reader the executor checked) */
	if (!OidIsValid(MvRunningReadUser(viewid)) && !MvMayReadView(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for materialized view %s",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?"),
				 errdetail("mvinc._read_branch() is internal to the reads of incremental views.")));
	PG_RETURN_TEXT_P(cstring_to_text(names[MvGetReadBranch(viewid)]));
}

/* An incremental view the caller owns (what maintaining it by hand asks) */
static void
require_owned_view(Oid viewid)
{
	require_view(viewid);
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(viewid));
}

/* mvinc.compact(view): fold appended state rows into the storage */
Datum
mvinc_compact(PG_FUNCTION_ARGS)
{
	require_owned_view(PG_GETARG_OID(0));
	PG_RETURN_INT64(MvCompact(PG_GETARG_OID(0)));
}

/* mvinc.recluster(view): rewrite the storage in cluster order */
Datum
mvinc_recluster(PG_FUNCTION_ARGS)
{
	require_owned_view(PG_GETARG_OID(0));
	PG_RETURN_INT64(MvRecluster(PG_GETARG_OID(0)));
}

/* Run a count query, returning its bigint */
static int64
count_query(const char *sql)
{
	int64		n = 0;
	bool		isnull;

	MvSpiConnect();
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not run: %s", sql);
	if (SPI_processed > 0)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		n = isnull ? 0 : DatumGetInt64(d);
	}
	MvSpiFinish();
	return n;
}

/* mvinc._pending_changes(view): captured changes not yet in the view */
Datum
mvinc_pending_changes(PG_FUNCTION_ARGS)
{
	MvCatalog  *cat;
	Oid			changelog;

	/* counted as the bootstrap superuser: only for readers of the view */
	if (pg_class_aclcheck(PG_GETARG_OID(0), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		PG_RETURN_NULL();
	cat = MvCatalogLookup(PG_GETARG_OID(0), MV_LOOKUP_NEW);
	if (cat == NULL || cat->checkpoint_snapshot == NULL)
		return (Datum) 0;
	changelog = MvChangeLogRelid(cat->sourceid);
	if (!OidIsValid(changelog))
		return (Datum) 0;
	PG_RETURN_INT64(count_query(psprintf("SELECT count(DISTINCT (s._mvinc_lsn, s._mvinc_seq)) "
										 "FROM %s s WHERE s._mvinc_lsn > '%X/%X' AND NOT "
										 "pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
										 MvSourceName(changelog),
										 LSN_FORMAT_ARGS(cat->checkpoint_lsn),
										 cat->checkpoint_snapshot)));
}

/* mvinc._storage_rows(view): rows of the storage table */
Datum
mvinc_storage_rows(PG_FUNCTION_ARGS)
{
	MvCatalog  *cat;

	/* counted as the bootstrap superuser: only for readers of the view */
	if (pg_class_aclcheck(PG_GETARG_OID(0), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		PG_RETURN_NULL();
	cat = MvCatalogLookup(PG_GETARG_OID(0), MV_LOOKUP_NEW);
	if (cat == NULL || !OidIsValid(cat->storage_oid))
		return (Datum) 0;
	PG_RETURN_INT64(count_query(psprintf("SELECT count(*) FROM mvinc.%s",
										 quote_identifier(cat->storage_name))));
}

/* sql_drop: forget dropped views (storage, consumer, catalog rows) */
Datum
mvinc_on_sql_drop(PG_FUNCTION_ARGS)
{
	List	   *views = NIL;
	List	   *sources = NIL;
	ListCell   *lc,
			   *lc2;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "not fired by event trigger manager");
	if (!MvincExtensionReady())
		return (Datum) 0;

	MvSpiOids("SELECT v.view::oid, v.source::oid FROM mvinc.mv_view v "
			  "JOIN pg_event_trigger_dropped_objects() d "
			  "ON d.classid = 'pg_class'::regclass AND d.objid = v.view::oid "
			  "AND d.objsubid = 0", 0, NULL, true, &views, &sources);

	forboth(lc, views, lc2, sources)
	{
		Oid			source = lfirst_oid(lc2);

		/* A dropped source takes its change log (and consumers) along */
		MvForgetView(lfirst_oid(lc), get_rel_name(source) ? source : InvalidOid);
	}

	/*
	 * Dropped tracked sources, however they went (DROP TABLE, DROP SCHEMA
	 * CASCADE, DROP OWNED): their change logs and tracking rows go in the
	 * same transaction (the utility hook sees only DROP TABLE by name).
	 */
	sources = NIL;
	MvSpiOids("SELECT t.relid FROM mvinc.tracked t "
			  "JOIN pg_catalog.pg_event_trigger_dropped_objects() d "
			  "ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass "
			  "AND d.objid = t.relid AND d.objsubid = 0", 0, NULL, true, &sources, NULL);
	foreach(lc, sources)
		MvForgetDroppedSource(lfirst_oid(lc));
	return (Datum) 0;
}

/*
 * Storage and append tables belong to the view's owner (reads check them
 * as the owner): after ALTER MATERIALIZED VIEW ... OWNER TO (event
 * trigger) or REASSIGN OWNED (utility hook: no event trigger fires for
 * it), give them to the view's new owner.
 */
void
MvSyncStorageOwners(void)
{
	List	   *tables = NIL;
	List	   *owners = NIL;
	ListCell   *lc,
			   *lc2;

	/* a new snapshot (not read-only): it sees the ALTER */
	MvSpiOids("SELECT s.oid, c.relowner FROM mvinc.mv_view v "
			  "JOIN pg_catalog.pg_class c ON c.oid = v.view "
			  "JOIN pg_catalog.pg_class s ON s.relnamespace = 'mvinc'::pg_catalog.regnamespace "
			  " AND (s.oid = v.storage_oid OR s.relname::text = v.storage_name::text || '_append') "
			  "WHERE s.relkind = 'r' AND s.relowner <> c.relowner "
			  "UNION ALL "	/* and the storage of history views (src/history) */
			  "SELECT s.oid, c.relowner FROM mvinc.history_view v "
			  "JOIN pg_catalog.pg_class c ON c.oid = v.view "
			  "JOIN pg_catalog.pg_class s ON s.relnamespace = 'mvinc'::pg_catalog.regnamespace "
			  " AND s.relname::text = v.storage_name::text "
			  "WHERE s.relkind = 'r' AND s.relowner <> c.relowner",
			  0, NULL, false, &tables, &owners);
	forboth(lc, tables, lc2, owners)
		ATExecChangeOwner(lfirst_oid(lc), lfirst_oid(lc2), true, AccessExclusiveLock);
}

/*
 * ddl_command_end (ALTER TABLE, ALTER MATERIALIZED VIEW):
 * bump the generation of altered sources; keep storage owned like views.
 */
Datum
mvinc_on_ddl_end(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "not fired by event trigger manager");
	if (!MvincExtensionReady())
		return (Datum) 0;
	MvSpiConnect();
	if (SPI_execute("UPDATE mvinc.mv_view SET source_generation = source_generation + 1 "
					"WHERE source::oid IN (SELECT objid FROM pg_event_trigger_ddl_commands() "
					"WHERE classid = 'pg_class'::regclass AND object_type = 'table')",
					false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.mv_view");
	MvSpiFinish();
	MvSyncStorageOwners();
	return (Datum) 0;
}
