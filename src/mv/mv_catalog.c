/*-------------------------------------------------------------------------
 * mv_catalog.c
 *	  The catalog of incremental views (mvinc.mv_view, mvinc.mv_column) and
 *	  their storage tables: creation, lookup, checkpoint updates and the
 *	  clean-up when a view goes away.  Everything runs in the caller's
 *	  transaction, so a failed DDL leaves nothing behind.
 *
 *	  A storage table mvinc.mv_<viewoid> is a member of the extension (so
 *	  pg_dump skips it and nobody can drop it by hand), and so is the append
 *	  table mvinc.mv_<viewoid>_append of an aggregate view with GROUP BY
 *	  (state rows that append refreshes add, see mv_append.c); the view itself
 *	  depends on the extension, so DROP EXTENSION needs CASCADE and then
 *	  takes the views along.  DROP of a view reaches the sql_drop event
 *	  trigger, which drops the storage and forgets the catalog rows.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "utils/fmgroids.h"
#include "access/table.h"
#include "access/genam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mv/mv.h"

/* Run a catalog query with one oid parameter; returns SPI_processed */
static uint64
spi_oid_query(const char *sql, Oid arg, int how)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(arg)};
	int			rc;

	if (how == MV_LOOKUP_LATEST)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, 1, argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", sql);
		rc = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
								  InvalidSnapshot, true, false, 0);
	}
	else
		rc = SPI_execute_with_args(sql, 1, argtypes, values, NULL,
								   how == MV_LOOKUP_ACTIVE, 0);
	if (rc < 0)
		elog(ERROR, "SPI failed (%d): %s", rc, sql);
	return SPI_processed;
}

/* Is storage_oid still the storage table called storage_name? */
static bool
storage_exists(Oid storage_oid, const char *storage_name)
{
	char	   *name = get_rel_name(storage_oid);

	return name != NULL && strcmp(name, storage_name) == 0 &&
		get_rel_namespace(storage_oid) == MvincSchemaOid();
}

/*
 * The catalog row of a view, or NULL.  With latest, read with the latest
 * snapshot (refresh, after it has locked the view).
 */
/* Columns of mvinc.mv_view (sql/0.2/30_mv.sql) that lookups read */
#define Anum_mv_view_view				1
#define Anum_mv_view_source				2
#define Anum_mv_view_kind				3
#define Anum_mv_view_storage_name		7
#define Anum_mv_view_storage_oid		8
#define Anum_mv_view_source_generation	9
#define Anum_mv_view_built_generation	10
#define Anum_mv_view_populated			11
#define Anum_mv_view_checkpoint_snapshot 12
#define Anum_mv_view_checkpoint_lsn		13
#define Anum_mv_view_append_rows		14

/*
 * MvCatalogLookup under the statement's snapshot through the primary key
 * index, without SPI: every read of a view decides its path with it, so it
 * must cost a few microseconds, not a parse and a plan.
 */
static MvCatalog *
catalog_lookup_direct(Oid viewid, Snapshot snapshot)
{
	Oid			schema = MvincSchemaOid();
	Relation	rel = table_open(get_relname_relid("mv_view", schema), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	MvCatalog  *cat = NULL;

	Assert(strcmp(NameStr(TupleDescAttr(desc, Anum_mv_view_append_rows - 1)->attname),
				  "append_rows") == 0);
	ScanKeyInit(&key, Anum_mv_view_view, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(viewid));
	scan = systable_beginscan(rel, get_relname_relid("mv_view_pkey", schema), true,
							  snapshot, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d;

		cat = palloc0(sizeof(MvCatalog));
		cat->viewid = viewid;
		cat->sourceid = DatumGetObjectId(heap_getattr(tup, Anum_mv_view_source, desc, &isnull));
		cat->kind = strcmp(TextDatumGetCString(heap_getattr(tup, Anum_mv_view_kind, desc, &isnull)),
						   "aggregate") == 0 ? MV_KIND_AGGREGATE : MV_KIND_PROJECTION;
		cat->storage_name = pstrdup(NameStr(*DatumGetName(heap_getattr(tup, Anum_mv_view_storage_name,
																	   desc, &isnull))));
		cat->storage_oid = DatumGetObjectId(heap_getattr(tup, Anum_mv_view_storage_oid, desc, &isnull));
		cat->populated = DatumGetBool(heap_getattr(tup, Anum_mv_view_populated, desc, &isnull));
		cat->source_generation = DatumGetInt32(heap_getattr(tup, Anum_mv_view_source_generation,
															desc, &isnull));
		d = heap_getattr(tup, Anum_mv_view_built_generation, desc, &isnull);
		cat->built_generation = isnull ? -1 : DatumGetInt32(d);
		d = heap_getattr(tup, Anum_mv_view_checkpoint_snapshot, desc, &isnull);
		cat->checkpoint_snapshot = isnull ? NULL :
			DatumGetCString(DirectFunctionCall1(pg_snapshot_out, d));
		d = heap_getattr(tup, Anum_mv_view_checkpoint_lsn, desc, &isnull);
		cat->checkpoint_lsn = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
		cat->append_rows = DatumGetInt64(heap_getattr(tup, Anum_mv_view_append_rows, desc, &isnull));
		if (!storage_exists(cat->storage_oid, cat->storage_name))
			cat->storage_oid = InvalidOid;
		else
			cat->append_oid = get_relname_relid(MvAppendTableName(cat->storage_name), schema);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return cat;
}

MvCatalog *
MvCatalogLookup(Oid viewid, int how)
{
	MvCatalog  *cat = NULL;
	MemoryContext outer = CurrentMemoryContext;

	if (!MvincExtensionReady())
		return NULL;
	if (how == MV_LOOKUP_ACTIVE && ActiveSnapshotSet())
		return catalog_lookup_direct(viewid, GetActiveSnapshot());
	MvSpiConnect();
	if (spi_oid_query("SELECT source::oid, kind, storage_name::text, storage_oid, populated, "
					  "source_generation, coalesce(built_generation, -1), "
					  "checkpoint_snapshot::text, checkpoint_lsn, append_rows "
					  "FROM mvinc.mv_view WHERE view = $1::regclass",
					  viewid, how) > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext spicxt = MemoryContextSwitchTo(outer);
		char	   *kind;
		Datum		d;

		cat = palloc0(sizeof(MvCatalog));
		cat->viewid = viewid;
		cat->sourceid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		kind = SPI_getvalue(tup, desc, 2);
		cat->kind = strcmp(kind, "aggregate") == 0 ? MV_KIND_AGGREGATE : MV_KIND_PROJECTION;
		cat->storage_name = SPI_getvalue(tup, desc, 3);
		cat->storage_oid = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
		cat->populated = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
		cat->source_generation = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
		cat->built_generation = DatumGetInt32(SPI_getbinval(tup, desc, 7, &isnull));
		cat->checkpoint_snapshot = SPI_getvalue(tup, desc, 8);
		d = SPI_getbinval(tup, desc, 9, &isnull);
		cat->checkpoint_lsn = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
		cat->append_rows = DatumGetInt64(SPI_getbinval(tup, desc, 10, &isnull));
		if (!storage_exists(cat->storage_oid, cat->storage_name))
			cat->storage_oid = InvalidOid;
		else
			cat->append_oid = get_relname_relid(MvAppendTableName(cat->storage_name),
												MvincSchemaOid());
		MemoryContextSwitchTo(spicxt);
	}
	MvSpiFinish();
	return cat;
}

/*
 * Per backend: is a matview incremental, a history view, or neither?
 * Every read and every planning of a query over a matview asks; the
 * answer only changes when the view's catalog row is written (at CREATE,
 * with the matview itself) or deleted (at DROP), and both send a relcache
 * invalidation of the matview.
 */
#define MATVIEW_PLAIN		0
#define MATVIEW_INCREMENTAL 1
#define MATVIEW_HISTORY		2

typedef struct IncrementalEntry
{
	Oid			relid;
	int			kind;			/* MATVIEW_* */
} IncrementalEntry;

static HTAB *incremental_cache = NULL;

static void
incremental_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	IncrementalEntry *entry;

	if (OidIsValid(relid))
	{
		hash_search(incremental_cache, &relid, HASH_REMOVE, NULL);
		return;
	}
	hash_seq_init(&status, incremental_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		hash_search(incremental_cache, &entry->relid, HASH_REMOVE, NULL);
}

/* Which kind of matview relid is (MATVIEW_*) */
static int
matview_kind(Oid relid)
{
	bool		hit;
	bool		latest;
	int			kind = MATVIEW_PLAIN;
	IncrementalEntry *entry;

	if (get_rel_relkind(relid) != RELKIND_MATVIEW || !MvincExtensionReady())
		return MATVIEW_PLAIN;
	if (incremental_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(IncrementalEntry);
		incremental_cache = hash_create("mvinc incremental views", 64, &ctl,
										HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(incremental_cache_inval, (Datum) 0);
	}
	entry = hash_search(incremental_cache, &relid, HASH_FIND, &hit);
	if (hit)
		return entry->kind;
	/*
	 * In the latest snapshot, not the transaction's: a REPEATABLE READ
	 * transaction older than the view's creation has already processed
	 * its invalidation, and would keep "not incremental" for good.  (A
	 * parallel operation cannot take the latest snapshot: its answer is
	 * not kept when negative.)
	 */
	latest = !IsInParallelMode();
	MvSpiConnect();
	if (spi_oid_query("SELECT 1 FROM mvinc.mv_view WHERE view = $1::regclass "
					  "UNION ALL SELECT 2 FROM mvinc.history_view WHERE view = $1::regclass",
					  relid, latest ? MV_LOOKUP_LATEST : MV_LOOKUP_NEW) > 0)
	{
		bool		isnull;

		kind = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										   1, &isnull));
	}
	MvSpiFinish();
	if (latest || kind != MATVIEW_PLAIN)
	{
		entry = hash_search(incremental_cache, &relid, HASH_ENTER, &hit);
		entry->kind = kind;
	}
	return kind;
}

/* Is relid an incremental view of this database? */
bool
MvIsIncrementalView(Oid relid)
{
	return matview_kind(relid) == MATVIEW_INCREMENTAL;
}

/* Is relid a history view of this database (src/history)? */
bool
MvIsHistoryView(Oid relid)
{
	return matview_kind(relid) == MATVIEW_HISTORY;
}

/*
 * A view's catalog row is written or deleted: forget what this backend
 * knew, and have every backend forget it at commit (the matview's relcache
 * invalidation drives incremental_cache).
 */
static void
incremental_changed(Oid viewid)
{
	if (incremental_cache != NULL)
		hash_search(incremental_cache, &viewid, HASH_REMOVE, NULL);
	/* a dropped matview sent its own invalidation */
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(viewid)))
		CacheInvalidateRelcacheByRelid(viewid);
}

/* Is relid the source of an incremental view? */
bool
MvIsSource(Oid relid)
{
	bool		found;

	if (!MvincExtensionReady())
		return false;
	MvSpiConnect();
	found = spi_oid_query("SELECT 1 FROM mvinc.mv_view WHERE source = $1::regclass",
						  relid, MV_LOOKUP_NEW) > 0;
	MvSpiFinish();
	return found;
}

/* The incremental views over relid, as a list of oids (view name order) */
List *
MvViewsOfSource(Oid relid)
{
	return MvViewsOfSourceIn(relid, MV_LOOKUP_NEW);
}

/* The same, read as how says (MV_LOOKUP_*) */
List *
MvViewsOfSourceIn(Oid relid, int how)
{
	List	   *views = NIL;
	MemoryContext outer = CurrentMemoryContext;

	if (!MvincExtensionReady())
		return NIL;
	MvSpiConnect();
	spi_oid_query("SELECT view::oid FROM mvinc.mv_view WHERE source = $1::regclass "
				  "ORDER BY view::text", relid, how);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			v = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext spicxt = MemoryContextSwitchTo(outer);

		views = lappend_oid(views, v);
		MemoryContextSwitchTo(spicxt);
	}
	MvSpiFinish();
	return views;
}

/* Name of the append table beside a storage table */
char *
MvAppendTableName(const char *storage_name)
{
	return psprintf("%s_append", storage_name);
}

/* Is relid the storage table (or append table) of an incremental view? */
bool
MvIsStorageTable(Oid relid)
{
	bool		found;
	char	   *name;

	if (!MvincExtensionReady() || get_rel_namespace(relid) != MvincSchemaOid())
		return false;
	/* Named mv_<view oid>[_append] (MvCreateStorage): others need no lookup */
	name = get_rel_name(relid);
	if (name == NULL || strncmp(name, "mv_", 3) != 0 || !isdigit((unsigned char) name[3]))
		return false;
	MvSpiConnect();
	found = spi_oid_query("SELECT 1 FROM mvinc.mv_view WHERE storage_oid = $1 "
						  "OR storage_name::text || '_append' = "
						  "(SELECT relname::text FROM pg_catalog.pg_class WHERE oid = $1)",
						  relid, MV_LOOKUP_NEW) > 0;
	MvSpiFinish();
	return found;
}

/* Text of a storage column's role in mvinc.mv_column */
static const char *
role_name(MvColRole role)
{
	switch (role)
	{
		case MV_COL_GROUP:
			return "group";
		case MV_COL_AGG:
			return "aggregate";
		case MV_COL_PLAIN:
			return "column";
		case MV_COL_COUNT:
			return "count";
		case MV_COL_ROWID:
			return "rowid";
		case MV_COL_EXPR:
			break;				/* computed on read: no storage column, no row */
	}
	return "column";
}

/* Insert the catalog rows of a new view (storage not yet created) */
void
MvCatalogInsert(Oid viewid, MvDef *def, const char *definition, const char *cluster_by)
{
	Oid			types[6] = {OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	ListCell   *lc;

	MvSpiConnect();
	values[0] = ObjectIdGetDatum(viewid);
	values[1] = ObjectIdGetDatum(def->sourceid);
	values[2] = CStringGetTextDatum(def->kind == MV_KIND_AGGREGATE ? "aggregate" : "projection");
	values[3] = CStringGetTextDatum(definition);
	values[4] = CStringGetTextDatum(nodeToString(def->query));
	if (cluster_by)
		values[5] = CStringGetTextDatum(cluster_by);
	else
		nulls[5] = 'n';
	if (SPI_execute_with_args("INSERT INTO mvinc.mv_view (view, source, kind, definition, "
							  "query_tree, cluster_by, storage_name, storage_oid) "
							  "VALUES ($1::regclass, $2::regclass, $3, $4, $5, $6, "
							  "'mv_' || $1::text, 0)",
							  6, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into mvinc.mv_view");
	incremental_changed(viewid);
	MvRewriteSourceChanged(def->sourceid);

	foreach(lc, list_concat_copy(def->columns, def->viewcols))
	{
		MvColumn   *col = lfirst(lc);
		Oid			ctypes[7] = {OIDOID, TEXTOID, TEXTOID, INT2OID, OIDOID, TEXTOID, TEXTOID};
		Datum		cvalues[7];
		char		cnulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

		/* viewcols: only those without a storage column of their own */
		if (foreach_current_index(lc) >= list_length(def->columns) &&
			!col->derived_count && !col->shared)
			continue;
		cvalues[0] = ObjectIdGetDatum(viewid);
		cvalues[1] = CStringGetTextDatum(col->physname);
		cvalues[2] = CStringGetTextDatum(role_name(col->role));
		cvalues[3] = Int16GetDatum(col->attnum);
		if (col->attnum == 0)
			cnulls[3] = 'n';
		cvalues[4] = ObjectIdGetDatum(col->aggfnoid);
		if (col->role != MV_COL_AGG)
			cnulls[4] = 'n';
		cvalues[5] = CStringGetTextDatum(col->derived_count ? "bigint" :
										 col->role == MV_COL_AGG ? "bytea" :
										 MvTypeSql(col->typid, col->typmod));
		if (col->expr)
			cvalues[6] = CStringGetTextDatum(MvExprSql(def->sourceid, (Node *) col->expr, NULL));
		else
			cnulls[6] = 'n';
		if (SPI_execute_with_args("INSERT INTO mvinc.mv_column VALUES "
								  "($1::regclass, $2, $3, $4, $5::regprocedure, $6, $7)",
								  7, ctypes, cvalues, cnulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into mvinc.mv_column");
	}
	MvSpiFinish();
	CacheInvalidateRelcacheByRelid(viewid);
}

/* Record the storage table of a view */
void
MvCatalogSetStorage(Oid viewid, Oid storage_oid, const char *storage_name)
{
	Oid			types[3] = {OIDOID, OIDOID, TEXTOID};
	Datum		values[3] = {ObjectIdGetDatum(viewid), ObjectIdGetDatum(storage_oid),
	CStringGetTextDatum(storage_name)};

	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET storage_oid = $2, storage_name = $3 "
							  "WHERE view = $1::regclass",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.mv_view");
	MvSpiFinish();
}

/* Commit point of a refresh: the new checkpoint, in the refresh's transaction */
void
MvCatalogSetCheckpoint(Oid viewid, const char *snapshot, XLogRecPtr lsn,
					   const char *mode, bool populated, int64 append_rows,
					   int64 changes, TimestampTz started)
{
	Oid			types[8] = {OIDOID, TEXTOID, LSNOID, TEXTOID, BOOLOID, INT8OID, INT8OID, FLOAT8OID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(viewid);
	if (snapshot)
		values[1] = CStringGetTextDatum(snapshot);
	else
		nulls[1] = 'n';
	values[2] = LSNGetDatum(lsn);
	if (XLogRecPtrIsInvalid(lsn))
		nulls[2] = 'n';
	values[3] = CStringGetTextDatum(mode);
	values[4] = BoolGetDatum(populated);
	values[5] = Int64GetDatum(append_rows);
	values[6] = Int64GetDatum(changes);
	nulls[6] = changes < 0 ? 'n' : ' ';
	values[7] = Float8GetDatum((GetCurrentTimestamp() - started) / 1000.0);
	nulls[7] = started == 0 ? 'n' : ' ';
	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET checkpoint_snapshot = $2::pg_snapshot, "
							  "checkpoint_lsn = $3, last_refresh = clock_timestamp(), "
							  "last_mode = $4, populated = $5, built_generation = source_generation, "
							  "append_rows = $6, last_changes = $7, last_duration_ms = $8, "
							  "refresh_failures = 0, last_error = NULL, retry_after = NULL "
							  "WHERE view = $1::regclass",
							  8, types, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not update the checkpoint of view %u", viewid);
	MvSpiFinish();
	/* populated now, or no longer: queries over the source are replanned */
	if (strcmp(mode, "initial") == 0 || strcmp(mode, "full") == 0 || !populated)
	{
		MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_NEW);

		if (cat != NULL)
			MvRewriteSourceChanged(cat->sourceid);
		CacheInvalidateRelcacheByRelid(viewid);
	}
}

/* Record how many state rows the append table of a view holds */
void
MvCatalogSetAppendRows(Oid viewid, int64 append_rows)
{
	Oid			types[2] = {OIDOID, INT8OID};
	Datum		values[2] = {ObjectIdGetDatum(viewid), Int64GetDatum(append_rows)};

	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET append_rows = $2 WHERE view = $1::regclass",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not update the append rows of view %u", viewid);
	MvSpiFinish();
}

/* Make the next refresh full and reads live (built generation unknown) */
void
MvCatalogMarkStale(Oid viewid)
{
	MvSpiConnect();
	spi_oid_query("UPDATE mvinc.mv_view SET built_generation = -1 WHERE view::oid = $1",
				  viewid, MV_LOOKUP_NEW);
	MvSpiFinish();
}

/*
 * Type and collation names for generated SQL: always schema-qualified, so
 * that the text means the same under any search_path (internal statements
 * run with it pinned to pg_catalog).
 */
char *
MvTypeSql(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

char *
MvCollationSql(Oid collid)
{
	HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	Form_pg_collation coll;
	char	   *name;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	name = quote_qualified_identifier(get_namespace_name(coll->collnamespace),
									  NameStr(coll->collname));
	ReleaseSysCache(tup);
	return name;
}

/* SQL type of a storage column; a domain's base type with base_of_domain */
static char *
storage_column_type(MvColumn *col, bool base_of_domain)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (col->role == MV_COL_AGG)
		appendStringInfoString(&buf, "bytea");
	else
	{
		int32		typmod = col->typmod;
		Oid			typid = base_of_domain ?
			getBaseTypeAndTypmod(col->typid, &typmod) : col->typid;

		appendStringInfoString(&buf, MvTypeSql(typid, typmod));
		if (OidIsValid(col->collation) && col->role != MV_COL_COUNT)
			appendStringInfo(&buf, " COLLATE %s", MvCollationSql(col->collation));
	}
	return buf.data;
}

/* SQL type of a storage column */
char *
MvStorageColumnType(MvColumn *col)
{
	return storage_column_type(col, false);
}

/*
 * The same with a domain's base type in its place, for values that may be
 * NULL where the source's never are (a row the delta removes): a cast to a
 * NOT NULL domain refuses them.  The values are the domain's all the same.
 */
char *
MvStorageColumnTypeNullable(MvColumn *col)
{
	return storage_column_type(col, true);
}

/*
 * Create table mvinc.name with the storage columns of def, owned by owner,
 * as a member of the extension; with key_index, the unique index on the
 * group keys or row identity.  Returns its oid.
 */
static Oid
create_member_table(const char *name, MvDef *def, Oid owner, const char *options,
					bool key_index)
{
	StringInfoData sql;
	StringInfoData keys;
	ListCell   *lc;
	Oid			relid;
	ObjectAddress self,
				ext;

	initStringInfo(&sql);
	initStringInfo(&keys);
	appendStringInfo(&sql, "CREATE TABLE mvinc.%s (", quote_identifier(name));
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		appendStringInfo(&sql, "%s%s %s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(col->physname), MvStorageColumnType(col));
		if (col->role == MV_COL_COUNT || col->role == MV_COL_ROWID)
			appendStringInfoString(&sql, " NOT NULL");
		if (col->role == MV_COL_GROUP || col->role == MV_COL_ROWID)
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "", quote_identifier(col->physname));
	}
	appendStringInfo(&sql, ") WITH (%s)", options);

	MvSpiConnect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create storage table: %s", sql.data);
	/* Owned like the view: reads check the storage as the view owner */
	resetStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE mvinc.%s OWNER TO %s", quote_identifier(name),
					 quote_identifier(GetUserNameFromId(owner, false)));
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not set the owner of the storage table");
	if (key_index && keys.len > 0)
	{
		/* One row per group (NULL keys included) or per source row */
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE UNIQUE INDEX %s ON mvinc.%s (%s) NULLS NOT DISTINCT",
						 quote_identifier(psprintf("%s_key", name)),
						 quote_identifier(name), keys.data);
		if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not create storage index: %s", sql.data);
	}
	MvSpiFinish();

	relid = get_relname_relid(name, MvincSchemaOid());
	if (!OidIsValid(relid))
		elog(ERROR, "storage table %s was not created", name);
	ObjectAddressSet(self, RelationRelationId, relid);
	ObjectAddressSet(ext, ExtensionRelationId, get_extension_oid("mvinc", false));
	if (getExtensionOfObject(RelationRelationId, relid) == InvalidOid)
		recordDependencyOn(&self, &ext, DEPENDENCY_EXTENSION);
	return relid;
}

/*
 * Give the storage of an aggregate view each aggregate's result, stored
 * beside its state as a generated column f<view column>: a read of a
 * view whose storage holds every change then reads plain values instead
 * of finalizing every state (the append table has none).
 */
static void
add_stored_finals(const char *name, MvDef *def)
{
	ListCell   *lc;

	if (def->kind != MV_KIND_AGGREGATE)
		return;
	MvSpiConnect();
	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);
		char	   *sql;

		if (col->role != MV_COL_AGG || col->derived_count)
			continue;
		sql = psprintf("ALTER TABLE mvinc.%s ADD COLUMN %s %s%s%s GENERATED ALWAYS AS (%s) STORED",
					   quote_identifier(name), quote_identifier(MvStoredFinalName(col)),
					   MvTypeSql(col->typid, col->typmod),
					   OidIsValid(col->collation) ? " COLLATE " : "",
					   OidIsValid(col->collation) ? MvCollationSql(col->collation) : "",
					   MvStateStoredFinalSql(col, quote_identifier(col->physname)));
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not add a stored result to the storage: %s", sql);
	}
	MvSpiFinish();
}

/*
 * Create the storage table of a view in schema mvinc (and the append
 * table of an aggregate view with GROUP BY), owned like the view, as
 * members of the extension; returns the storage's oid.
 */
Oid
MvCreateStorage(Oid viewid, MvDef *def)
{
	char	   *name = psprintf("mv_%u", viewid);
	Oid			storage;
	ObjectAddress self,
				ext;
	Oid			view_owner;
	HeapTuple	tup;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(viewid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", viewid);
	view_owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);

	/* room on each page for HOT updates of the states */
	storage = create_member_table(name, def, view_owner,
								  "fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05", true);
	add_stored_finals(name, def);
	if (def->kind == MV_KIND_AGGREGATE && def->has_group_by)
		/* emptied and refilled over and over: keep its pages (no truncation lock) */
		(void) create_member_table(MvAppendTableName(name), def, view_owner,
								   "autovacuum_vacuum_scale_factor = 0.05, vacuum_truncate = false",
								   false);

	/* The view depends on the extension (DROP EXTENSION needs CASCADE) */
	ObjectAddressSet(ext, ExtensionRelationId, get_extension_oid("mvinc", false));
	ObjectAddressSet(self, RelationRelationId, viewid);
	if (getExtensionOfObject(RelationRelationId, viewid) == InvalidOid)
	{
		deleteDependencyRecordsForSpecific(RelationRelationId, viewid, DEPENDENCY_NORMAL,
										   ExtensionRelationId, ext.objectId);
		recordDependencyOn(&self, &ext, DEPENDENCY_NORMAL);
	}
	CommandCounterIncrement();
	MvCatalogSetStorage(viewid, storage, name);
	return storage;
}

/* Drop a storage table (a member of the extension) */
static void
drop_storage(Oid storage)
{
	ObjectAddress obj;

	if (get_rel_name(storage) == NULL)
		return;
	deleteDependencyRecordsForClass(RelationRelationId, storage,
									ExtensionRelationId, DEPENDENCY_EXTENSION);
	CommandCounterIncrement();
	ObjectAddressSet(obj, RelationRelationId, storage);
	performDeletion(&obj, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
}

/*
 * A view was dropped: drop its storage, stop consuming its source's
 * changes and delete its catalog rows.
 */
void
MvForgetView(Oid viewid, Oid sourceid)
{
	Oid			storage = InvalidOid;
	char	   *storage_name = NULL;
	bool		isnull;
	MemoryContext outer = CurrentMemoryContext;

	MvSpiConnect();
	if (spi_oid_query("SELECT storage_oid, storage_name::text FROM mvinc.mv_view "
					  "WHERE view::oid = $1", viewid, MV_LOOKUP_NEW) > 0)
	{
		storage = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1, &isnull));
		storage_name = MemoryContextStrdup(outer,
										   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	}
	spi_oid_query("DELETE FROM mvinc.mv_view WHERE view::oid = $1", viewid, MV_LOOKUP_NEW);
	incremental_changed(viewid);
	if (OidIsValid(sourceid) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(sourceid)))
		MvRewriteSourceChanged(sourceid);
	/* a view created later with the same oid starts from zero */
	MvReleaseStats(viewid);
	MvSpiFinish();
	if (storage_name && storage_exists(storage, storage_name))
	{
		Oid			append = get_relname_relid(MvAppendTableName(storage_name),
											   MvincSchemaOid());

		if (OidIsValid(append))
			drop_storage(append);
		drop_storage(storage);
	}
	if (OidIsValid(sourceid))
	{
		MvInternal	save;

		/* capture's consumer list is not the view owner's to change */
		MvBecomeInternal(&save);
		MvDropConsumer(sourceid, MvConsumerName(viewid));
		MvEndInternal(&save);
		MvReleaseSource(sourceid);
	}
}
