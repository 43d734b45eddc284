/*-------------------------------------------------------------------------
 * hist_catalog.c
 *	  The catalog of history views (mvinc.history_view) and their storage
 *	  tables mvinc.hv_<view oid>: creation, lookup, adoption after a
 *	  restore, checkpoint updates, and the SQL that reads the versions.
 *
 *	  The storage is an ordinary table owned by the view's owner, dropped
 *	  with the view (automatic dependency) and, unlike an incremental
 *	  view's storage, not a member of the extension: its rows cannot be
 *	  recomputed, so pg_dump must keep them.  A restored view finds its
 *	  storage by name (storage_name) and adopts it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "history/history.h"
#include "mv/mv.h"

/* Run SQL with one oid parameter in the current SPI connection */
static void
exec_oid(const char *sql, Oid arg, int expect)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(arg)};
	int			rc = SPI_execute_with_args(sql, 1, types, values, NULL, false, 0);

	if (rc != expect)
		elog(ERROR, "history catalog statement failed (%d): %s", rc, sql);
}

/*
 * Record the storage as the view's (dropped with it) and the view as
 * depending on the extension (DROP EXTENSION needs CASCADE), then note
 * its oid in the catalog.
 */
static void
attach_storage(Oid viewid, Oid storage)
{
	ObjectAddress self,
				view,
				ext;

	ObjectAddressSet(self, RelationRelationId, storage);
	ObjectAddressSet(view, RelationRelationId, viewid);
	ObjectAddressSet(ext, ExtensionRelationId, get_extension_oid("mvinc", false));
	deleteDependencyRecordsForSpecific(RelationRelationId, storage, DEPENDENCY_AUTO,
									   RelationRelationId, viewid);
	recordDependencyOn(&self, &view, DEPENDENCY_AUTO);
	deleteDependencyRecordsForSpecific(RelationRelationId, viewid, DEPENDENCY_NORMAL,
									   ExtensionRelationId, ext.objectId);
	recordDependencyOn(&view, &ext, DEPENDENCY_NORMAL);
	CommandCounterIncrement();
	MvSpiConnect();
	exec_oid(psprintf("UPDATE mvinc.history_view SET storage_oid = %u WHERE view = $1::regclass",
					  storage), viewid, SPI_OK_UPDATE);
	MvSpiFinish();
	CommandCounterIncrement();
}

/*
 * The catalog row of a history view (latest snapshot; in a parallel
 * operation, which cannot take one, the active snapshot), or NULL.  A row
 * whose storage oid is stale (a restore) finds the table of its storage
 * name, and with adopt_storage adopts it (the caller holds the view's
 * ExclusiveLock).
 */
HistCatalog *
HistCatalogLookup(Oid viewid, bool adopt_storage)
{
	HistCatalog *cat = NULL;
	MemoryContext outer = CurrentMemoryContext;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};
	SPIPlanPtr	plan;
	bool		adopt = false;

	if (!MvincExtensionReady())
		return NULL;
	MvSpiConnect();
	plan = SPI_prepare("SELECT source::oid, "
					   "(SELECT string_agg(quote_ident(k), ', ' ORDER BY o) "
					   "   FROM unnest(key_columns) WITH ORDINALITY u(k, o)), "
					   "storage_name::text, storage_oid, feed, history_start, retention::text, "
					   "checkpoint_snapshot::text, checkpoint_lsn "
					   "FROM mvinc.history_view WHERE view = $1::regclass", 1, types);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, values, NULL,
							 IsInParallelMode() ? GetActiveSnapshot() : GetLatestSnapshot(),
							 InvalidSnapshot, true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read mvinc.history_view");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;
		MemoryContext spicxt = MemoryContextSwitchTo(outer);
		char	   *name;

		cat = palloc0(sizeof(HistCatalog));
		cat->viewid = viewid;
		cat->sourceid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		cat->key_list = SPI_getvalue(tup, desc, 2);
		cat->storage_name = SPI_getvalue(tup, desc, 3);
		cat->storage_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
		cat->feed = SPI_getvalue(tup, desc, 5);
		d = SPI_getbinval(tup, desc, 6, &isnull);
		cat->has_start = !isnull;
		cat->history_start = isnull ? 0 : DatumGetTimestampTz(d);
		cat->retention = SPI_getvalue(tup, desc, 7);
		cat->checkpoint_snapshot = SPI_getvalue(tup, desc, 8);
		d = SPI_getbinval(tup, desc, 9, &isnull);
		cat->checkpoint_lsn = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
		cat->populated = cat->feed != NULL;
		name = get_rel_name(cat->storage_oid);
		if (name == NULL || strcmp(name, cat->storage_name) != 0 ||
			get_rel_namespace(cat->storage_oid) != MvincSchemaOid())
		{
			/* restored: the table came back under its name, with a new oid */
			cat->storage_oid = get_relname_relid(cat->storage_name, MvincSchemaOid());
			adopt = adopt_storage && OidIsValid(cat->storage_oid);
			/* the checkpoint was another cluster's: start over from the source */
			cat->checkpoint_snapshot = NULL;
			cat->checkpoint_lsn = InvalidXLogRecPtr;
		}
		MemoryContextSwitchTo(spicxt);
	}
	MvSpiFinish();
	if (adopt)
		attach_storage(viewid, cat->storage_oid);
	return cat;
}

/* Insert the catalog row of a new history view (storage not yet created) */
void
HistCatalogInsert(Oid viewid, HistDef *def, HistOptions *opts)
{
	StringInfoData keys;
	ListCell   *lc;
	Oid			types[5] = {OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	initStringInfo(&keys);
	appendStringInfoChar(&keys, '{');
	foreach(lc, def->keys)
	{
		HistColumn *col = lfirst(lc);
		const char *p;

		appendStringInfo(&keys, "%s\"", foreach_current_index(lc) ? "," : "");
		for (p = col->name; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				appendStringInfoChar(&keys, '\\');
			appendStringInfoChar(&keys, *p);
		}
		appendStringInfoChar(&keys, '"');
	}
	appendStringInfoChar(&keys, '}');
	values[0] = ObjectIdGetDatum(viewid);
	values[1] = ObjectIdGetDatum(def->sourceid);
	values[2] = CStringGetTextDatum(keys.data);
	values[3] = opts->history_start ? CStringGetTextDatum(opts->history_start) : (Datum) 0;
	nulls[3] = opts->history_start ? ' ' : 'n';
	values[4] = opts->retention ? CStringGetTextDatum(opts->retention) : (Datum) 0;
	nulls[4] = opts->retention ? ' ' : 'n';
	MvSpiConnect();
	if (SPI_execute_with_args("INSERT INTO mvinc.history_view (view, source, key_columns, "
							  "storage_name, storage_oid, history_start, retention) "
							  "VALUES ($1::regclass, $2::regclass, $3::name[], "
							  "'hv_' || $1::text, 0, $4::timestamptz, $5::interval)",
							  5, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into mvinc.history_view");
	MvSpiFinish();
	CacheInvalidateRelcacheByRelid(viewid);
}

/*
 * Create the storage of a history view: its columns, then valid_from and
 * valid_to; one unique index on (key, valid_from) serves the history of a
 * key, a key as of a time, and the refresh's lookups.  valid_to is not
 * indexed, so closing a version can be a HOT update.
 */
Oid
HistCreateStorage(Oid viewid, HistDef *def)
{
	char	   *name = psprintf("hv_%u", viewid);
	StringInfoData sql;
	ListCell   *lc;
	Oid			storage;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE mvinc.%s (", quote_identifier(name));
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);

		appendStringInfo(&sql, "%s %s", quote_identifier(col->name),
						 MvTypeSql(col->typid, col->typmod));
		if (OidIsValid(col->collation))
			appendStringInfo(&sql, " COLLATE %s", MvCollationSql(col->collation));
		appendStringInfoString(&sql, col->is_key ? " NOT NULL, " : ", ");
	}
	/* room on each page for the update that ends a version to be HOT */
	appendStringInfoString(&sql, "valid_from pg_catalog.timestamptz NOT NULL, "
						   "valid_to pg_catalog.timestamptz NOT NULL, "
						   "CHECK (valid_from OPERATOR(pg_catalog.<) valid_to)) "
						   "WITH (fillfactor = 85)");
	MvSpiConnect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create history storage: %s", sql.data);
	resetStringInfo(&sql);
	/*
	 * Room on each leaf too: a refresh or load inserts its new versions
	 * beside their keys' older ones, all over the key range; at the default
	 * fill (90 %) nearly every leaf split in the first refresh that changed
	 * a tenth of the keys.
	 */
	appendStringInfo(&sql, "CREATE UNIQUE INDEX %s ON mvinc.%s (%s, valid_from) WITH (fillfactor = 80)",
					 quote_identifier(psprintf("%s_key", name)), quote_identifier(name),
					 HistColumnListSql(def, true, false, NULL));
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create history storage index: %s", sql.data);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE mvinc.%s OWNER TO %s", quote_identifier(name),
					 quote_identifier(GetUserNameFromId(MvRelOwner(viewid), false)));
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not set the owner of the history storage");
	MvSpiFinish();
	CommandCounterIncrement();
	storage = get_relname_relid(name, MvincSchemaOid());
	if (!OidIsValid(storage))
		elog(ERROR, "history storage %s was not created", name);
	attach_storage(viewid, storage);
	return storage;
}

/* After a refresh: the new checkpoint (S', L') and what it did */
void
HistCatalogSetCheckpoint(Oid viewid, const char *snapshot, XLogRecPtr lsn, int64 changes)
{
	Oid			types[4] = {OIDOID, TEXTOID, TEXTOID, INT8OID};
	Datum		values[4] = {ObjectIdGetDatum(viewid),
		CStringGetTextDatum(snapshot),
		CStringGetTextDatum(psprintf("%X/%X", LSN_FORMAT_ARGS(lsn))),
	Int64GetDatum(changes)};

	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.history_view SET feed = 'stream', "
							  "checkpoint_snapshot = $2::pg_snapshot, checkpoint_lsn = $3::pg_lsn, "
							  "last_refresh = now(), last_changes = $4 "
							  "WHERE view = $1::regclass",
							  4, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.history_view");
	MvSpiFinish();
}

/* A snapshot load: the view is snapshot-fed from now on */
void
HistCatalogSetFeed(Oid viewid, const char *feed)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(viewid), CStringGetTextDatum(feed)};

	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.history_view SET feed = $2, last_refresh = now() "
							  "WHERE view = $1::regclass",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.history_view");
	MvSpiFinish();
}

/* Is relid the storage table of a history view? */
bool
HistIsStorageTable(Oid relid)
{
	char	   *name;
	bool		found;

	if (!MvincExtensionReady() || get_rel_namespace(relid) != MvincSchemaOid())
		return false;
	name = get_rel_name(relid);
	if (name == NULL || strncmp(name, "hv_", 3) != 0)
		return false;
	MvSpiConnect();
	exec_oid("SELECT 1 FROM mvinc.history_view WHERE storage_oid = $1", relid, SPI_OK_SELECT);
	found = SPI_processed > 0;
	MvSpiFinish();
	return found;
}

/* Qualified name of the storage */
char *
HistStorageSql(HistCatalog *cat)
{
	return psprintf("mvinc.%s", quote_identifier(cat->storage_name));
}

/* Name under which a history view registers as a capture consumer */
char *
HistConsumerName(Oid viewid)
{
	return psprintf("hv_%u", viewid);
}

/* ALTER MATERIALIZED VIEW .. SET / RESET (mvinc.history_retention) */
void
HistSetRetention(Oid viewid, const char *retention)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(viewid),
	retention ? CStringGetTextDatum(retention) : (Datum) 0};
	char		nulls[2] = {' ', retention ? ' ' : 'n'};

	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.history_view SET retention = $2::interval "
							  "WHERE view = $1::regclass",
							  2, types, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.history_view");
	MvSpiFinish();
}
