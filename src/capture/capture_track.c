/*-------------------------------------------------------------------------
 * capture_track.c
 *	  Tracking: which sources are captured (mvinc.tracked) and their change
 *	  log tables (created, kept in step with ALTER TABLE, dropped).
 *
 *	  Change logs are created and altered as the extension's owner, so any
 *	  owner of a source can track it; each change log is a member of the
 *	  extension (DROP EXTENSION drops it, pg_dump skips it).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "mvinc.h"
#include "capture/capture.h"
#include "colfile/colfile.h"

/* OID of mvinc.tracked, or InvalidOid */
Oid
MvincTrackedRelid(void)
{
	Oid			nsp = get_namespace_oid(MVINC_SCHEMA, true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return get_relname_relid(MVINC_TRACKED_TABLE, nsp);
}

/* One column of a source's mvinc.tracked row under snapshot (NULL: catalog snapshot) */
static bool
tracked_column(Oid relid, AttrNumber attnum, Snapshot snapshot, Datum *value)
{
	Oid			tracked = MvincTrackedRelid();
	Oid			nsp;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	bool		found = false;

	if (!OidIsValid(tracked))
		return false;
	nsp = get_namespace_oid(MVINC_SCHEMA, false);
	rel = table_open(tracked, AccessShareLock);
	/* a column an older version's catalog does not have (before its UPDATE) */
	if (attnum > RelationGetDescr(rel)->natts)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	ScanKeyInit(&key, Anum_tracked_relid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, get_relname_relid(MVINC_TRACKED_PKEY, nsp),
							  true, MvincUnlockedSnapshot(snapshot), 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)) &&
		   !MvincUnlockedVisible(scan, tup, snapshot))
		;
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;

		*value = heap_getattr(tup, attnum, RelationGetDescr(rel), &isnull);
		found = !isnull;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* The change log of a tracked source, InvalidOid when not tracked */
Oid
MvincChangeLogRelid(Oid relid)
{
	Datum		d;

	return tracked_column(relid, Anum_tracked_changelog, NULL, &d) ?
		DatumGetObjectId(d) : InvalidOid;
}

/*
 * Per-backend caches of a yes/no answer per relation (is it tracked, must
 * its writers log row messages), which their owners drop from relcache
 * invalidation callbacks.
 */
typedef struct RelFlagEntry
{
	Oid			relid;
	bool		flag;
} RelFlagEntry;

HTAB *
MvincRelFlagCacheCreate(const char *name)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RelFlagEntry);
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* The cached answer for relid, if there is one */
bool
MvincRelFlagGet(HTAB *cache, Oid relid, bool *flag)
{
	RelFlagEntry *e = hash_search(cache, &relid, HASH_FIND, NULL);

	if (e == NULL)
		return false;
	*flag = e->flag;
	return true;
}

void
MvincRelFlagSet(HTAB *cache, Oid relid, bool flag)
{
	RelFlagEntry *e = hash_search(cache, &relid, HASH_ENTER, NULL);

	e->flag = flag;
}

/* Forget relid's answer, or every answer when relid is InvalidOid */
void
MvincRelFlagForget(HTAB *cache, Oid relid)
{
	HASH_SEQ_STATUS status;
	RelFlagEntry *e;

	if (cache == NULL)
		return;
	if (OidIsValid(relid))
	{
		hash_search(cache, &relid, HASH_REMOVE, NULL);
		return;
	}
	hash_seq_init(&status, cache);
	while ((e = hash_seq_search(&status)) != NULL)
		hash_search(cache, &e->relid, HASH_REMOVE, NULL);
}

/*
 * Is the source tracked, as the latest committed state (and our own
 * transaction's) says?  For writers deciding under their lock whether to
 * log row messages (capture_rowmsg.c).
 */
bool
MvincIsTrackedNow(Oid relid)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	Datum		d;
	bool		tracked = tracked_column(relid, Anum_tracked_relid, snapshot, &d);

	UnregisterSnapshot(snapshot);
	return tracked;
}

/*
 * Change-log rows of a source with lsn <= this were removed by retention,
 * as snapshot sees it (a read checks it in the snapshot it reads the
 * change log with); InvalidXLogRecPtr when not tracked.
 */
XLogRecPtr
MvincRetainedFromIn(Oid relid, Snapshot snapshot)
{
	Datum		d;

	return tracked_column(relid, Anum_tracked_retained_from, snapshot, &d) ?
		DatumGetLSN(d) : InvalidXLogRecPtr;
}

/*
 * SPI_connect with search_path = pg_catalog, pg_temp for the statements we
 * generate, so that no object of the caller's search_path can stand in
 * for a function or operator they use.  Pair with MvincSpiFinish.
 */
int
MvincSpiConnect(void)
{
	int			nestlevel;

	SPI_connect();
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	/* change logs are heap tables whatever the user's default is */
	(void) set_config_option("default_table_access_method", "heap", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/* Undo MvincSpiConnect */
void
MvincSpiFinish(int nestlevel)
{
	AtEOXact_GUC(true, nestlevel);
	SPI_finish();
}

/* Run a statement through SPI, erroring out on failure */
static void
run_sql(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/* Run a statement with one oid argument */
static void
run_sql_oid(const char *sql, Oid arg, int expected)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(arg)};
	int			rc = SPI_execute_with_args(sql, 1, argtypes, args, NULL, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/* Become the extension's owner for DDL on change logs; returns the old state */
static void
become_extension_owner(Oid *save_userid, int *save_sec)
{
	Oid			extoid = get_extension_oid("mvinc", false);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	Oid			owner;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "extension mvinc not found");
	owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	GetUserIdAndSecContext(save_userid, save_sec);
	SetUserIdAndSecContext(owner, *save_sec | SECURITY_LOCAL_USERID_CHANGE);
}

/* Column definition "name type [COLLATE c]" of a source column */
/*
 * " COLLATE x" when the column's collation is not its type's default: the
 * change log's copy must sort and compare as the source does, or Hybrid
 * reads and refreshes would merge groups and min/max by another order.
 */
static void
append_collate_clause(StringInfo s, Form_pg_attribute att)
{
	if (OidIsValid(att->attcollation) &&
		att->attcollation != get_typcollation(att->atttypid))
	{
		HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(att->attcollation));
		Form_pg_collation coll;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for collation %u", att->attcollation);
		coll = (Form_pg_collation) GETSTRUCT(tup);
		appendStringInfo(s, " COLLATE %s",
						 quote_qualified_identifier(get_namespace_name(coll->collnamespace),
													NameStr(coll->collname)));
		ReleaseSysCache(tup);
	}
}

static void
append_column_def(StringInfo s, Form_pg_attribute att)
{
	appendStringInfo(s, "%s %s", quote_identifier(NameStr(att->attname)),
					 format_type_extended(att->atttypid, att->atttypmod,
										  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
	append_collate_clause(s, att);
}

/* Refuse sources that cannot be captured */
static void
check_trackable(Relation rel, bool full_old_rows)
{
	const char *name = RelationGetRelationName(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	char		relkind = rel->rd_rel->relkind;

	if (relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track partitioned table \"%s\"", name),
				 errdetail("Changes of a partitioned table are decoded per partition."),
				 errhint("Track each partition instead.")));
	if (relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot track \"%s\"", name),
				 errdetail("\"%s\" is not a table; only ordinary tables have changes in the WAL.", name)));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track temporary table \"%s\"", name),
				 errdetail("Changes of temporary tables are not decoded.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track unlogged table \"%s\"", name),
				 errdetail("Changes of unlogged tables are not written to the WAL."),
				 errhint("Make it logged with ALTER TABLE ... SET LOGGED.")));
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID && !ColfileIsColfileRel(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track table \"%s\"", name),
				 errdetail("The table uses access method \"%s\"; only the changes of heap and colfile tables can be captured.",
						   get_am_name(rel->rd_rel->relam)),
				 errhint("Move the table to heap with ALTER TABLE ... SET ACCESS METHOD heap.")));
	if (IsCatalogRelation(rel) || RelationGetRelid(rel) < FirstNormalObjectId)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track system catalog \"%s\"", name)));
	if (RelationGetNamespace(rel) == get_namespace_oid(MVINC_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track \"%s\"", name),
				 errdetail("Tables in schema \"%s\" belong to mvinc itself.", MVINC_SCHEMA)));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strncmp(NameStr(att->attname), "_mvinc_", 7) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("cannot track table \"%s\"", name),
					 errdetail("Column \"%s\" uses the prefix \"_mvinc_\", which is reserved for change log columns.",
							   NameStr(att->attname)),
					 errhint("Rename the column.")));
	}
	if (!full_old_rows && rel->rd_rel->relreplident != REPLICA_IDENTITY_FULL &&
		(rel->rd_rel->relreplident == REPLICA_IDENTITY_NOTHING ||
		 !OidIsValid(RelationGetReplicaIndex(rel))))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot track table \"%s\"", name),
				 errdetail("The table has no primary key and no replica identity, so updated and deleted rows cannot be identified."),
				 errhint("Add a primary key, or call mvinc.track('%s', full_old_rows => true).",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), name))));
}

/* Is any table of this database tracked (under the active snapshot)? */
bool
MvincAnyTracked(void)
{
	Oid			tracked = MvincTrackedRelid();
	Relation	rel;
	TableScanDesc scan;
	bool		any;

	if (!OidIsValid(tracked))
		return false;
	rel = table_open(tracked, AccessShareLock);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	any = heap_getnext(scan, ForwardScanDirection) != NULL;
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return any;
}

/* Free replication slots (in_use == false), counted */
int
MvincFreeReplicationSlots(void)
{
	int			n = 0;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
		if (!ReplicationSlotCtl->replication_slots[i].in_use)
			n++;
	LWLockRelease(ReplicationSlotControlLock);
	return n;
}

/*
 * This transaction needs this database's capture worker: keep it from
 * stopping until we end (ROW EXCLUSIVE on mvinc.tracked: see
 * nothing_to_capture in capture_worker.c) and start it unless it runs.
 * With error_if_none, a server without a free worker or replication slot
 * gets an ERROR that names the setting, before anything is created; else
 * a WARNING (a restore must not fail for it: the next table tracked or
 * the next server start tries again).
 */
void
MvincRequireCaptureWorker(bool error_if_none)
{
	char		name[NAMEDATALEN];
	CaptureWorkerSlot *s;
	bool		running;

	if (MvincCaptureShared == NULL)
	{
		if (!error_if_none)
			return;
		MvincCheckServerSetup();
	}
	LockRelationOid(MvincTrackedRelid(), RowExclusiveLock);

	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	s = MvincCaptureSlotFor(MyDatabaseId, false);
	running = s != NULL && s->pid != 0;
	LWLockRelease(MvincCaptureShared->lock);
	if (running)
		return;

	MvincCaptureSlotName(MyDatabaseId, name);
	if (SearchNamedReplicationSlot(name, true) == NULL && MvincFreeReplicationSlots() == 0)
	{
		ereport(error_if_none ? ERROR : WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free replication slot for the mvinc capture worker of database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errdetail("All %d replication slots are in use; each database with tracked tables needs one.",
						   max_replication_slots),
				 errhint("Drop an unused slot or increase \"max_replication_slots\" and restart the server.")));
		return;
	}
	MvincStartWorker(MyDatabaseId, error_if_none);
}

/*
 * Make sure a change committed after track() is decoded.  When the
 * worker's slot is consistent before our commit, it is.  Otherwise the
 * worker, once its new slot is consistent, records the tables tracked
 * before that as having lost their earlier changes (capture_loop), so
 * their views read live and rebuild at their first refresh: exact, but
 * slower until then.  So a transaction without an xid waits a little for
 * the slot; one with an xid does not (creating a slot waits for every
 * running xid, ours too), nor does anyone longer than CAPTURE_SLOT_WAIT_MS
 * (a long transaction elsewhere holds the slot back; waiting longer only
 * stalls, and whoever waits for our locks with it).  A worker that keeps
 * failing is an error.  Whatever will track a table calls this before it
 * locks the table or writes (MvAwaitCapture).
 */
#define CAPTURE_SLOT_WAIT_MS	2000

void
MvincAwaitCaptureSlot(void)
{
	static LocalTransactionId gave_up_in = InvalidLocalTransactionId;
	TimestampTz start = GetCurrentTimestamp();

	MvincRequireCaptureWorker(true);
	/* (once this transaction has waited in vain, it does not again) */
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()) || gave_up_in == MyProc->lxid)
		return;

	for (;;)
	{
		CaptureWorkerSlot *s;
		bool		ready = false;
		int			failures = 0;
		char		err[MVINC_ERRMSG_LEN] = "";

		LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
		s = MvincCaptureSlotFor(MyDatabaseId, false);
		if (s != NULL)
		{
			ready = s->slot_ready;
			failures = s->failures;
			strlcpy(err, s->last_error, sizeof(err));
		}
		LWLockRelease(MvincCaptureShared->lock);
		if (ready)
			return;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), CAPTURE_SLOT_WAIT_MS))
		{
			if (failures > 0 && err[0])
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the mvinc capture worker of database \"%s\" is not ready",
								get_database_name(MyDatabaseId)),
						 errdetail("Its last error: %s", err),
						 errhint("Check mvinc.capture, then retry.")));
			gave_up_in = MyProc->lxid;
			ereport(NOTICE,
					(errmsg("change capture of database \"%s\" is starting",
							get_database_name(MyDatabaseId)),
					 errdetail("Its replication slot waits for the transactions running now to end."),
					 errhint("Views of the tables tracked meanwhile read their queries until their first refresh, which rebuilds them.")));
			return;
		}
		/* it may have stopped meanwhile (an error): start it again */
		MvincStartWorker(MyDatabaseId, false);
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/*
 * The lock MvincTrack will need on relid: none if it is tracked as asked,
 * else SHARE ROW EXCLUSIVE: it keeps writers out (a new change log, a new
 * replica identity; colfile's writers decide per statement whether to log
 * row messages) and other trackers (self-conflicting), and does not
 * conflict with the ACCESS SHARE that parsing a view's query took.
 * Callers that also lock the source for an initial computation take this
 * mode first: taking SHARE and asking for more later deadlocks with another
 * session doing the same (two views created at once, pg_restore -j).
 */
LOCKMODE
MvincTrackLockMode(Oid relid, bool full_old_rows)
{
	HeapTuple	tup;
	char		replident;

	if (!OidIsValid(MvincChangeLogRelid(relid)))
		return ShareRowExclusiveLock;
	if (!full_old_rows)
		return NoLock;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	replident = ((Form_pg_class) GETSTRUCT(tup))->relreplident;
	ReleaseSysCache(tup);
	return replident == REPLICA_IDENTITY_FULL ? NoLock : ShareRowExclusiveLock;
}

/*
 * REPLICA IDENTITY FULL, as ALTER TABLE sets it, under our lock that keeps
 * writers out (ALTER TABLE's ACCESS EXCLUSIVE would also keep readers out
 * for the whole initial computation, and the upgrade from the ACCESS SHARE
 * of parsing deadlocks with a concurrent creation).  Writers decide what
 * old row to log from their relcache entry, rebuilt by the invalidation
 * when they lock the table after our commit.
 */
static void
mark_replica_identity_full(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	Relation	catalog;
	HeapTuple	tup;
	ListCell   *lc;

	catalog = table_open(RelationRelationId, RowExclusiveLock);
	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	((Form_pg_class) GETSTRUCT(tup))->relreplident = REPLICA_IDENTITY_FULL;
	CatalogTupleUpdate(catalog, &tup->t_self, tup);
	heap_freetuple(tup);
	table_close(catalog, RowExclusiveLock);

	/* no index is the identity any more */
	catalog = table_open(IndexRelationId, RowExclusiveLock);
	foreach(lc, RelationGetIndexList(rel))
	{
		Oid			indexid = lfirst_oid(lc);

		tup = SearchSysCacheCopy1(INDEXRELID, ObjectIdGetDatum(indexid));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", indexid);
		if (((Form_pg_index) GETSTRUCT(tup))->indisreplident)
		{
			((Form_pg_index) GETSTRUCT(tup))->indisreplident = false;
			CatalogTupleUpdate(catalog, &tup->t_self, tup);
		}
		heap_freetuple(tup);
	}
	table_close(catalog, RowExclusiveLock);
	InvokeObjectPostAlterHook(RelationRelationId, relid, 0);
	CacheInvalidateRelcache(rel);
	relation_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * Lock relid for an initial computation that reads it (SHARE: no writer
 * straddles it) and for tracking it, in one step (see MvincTrackLockMode).
 */
void
MvincLockForTracking(Oid relid, bool full_old_rows)
{
	LOCKMODE	mode = MvincTrackLockMode(relid, full_old_rows);

	LockRelationOid(relid, mode == NoLock ? ShareLock : mode);
}

/* Start capturing a table's changes; returns its change log (idempotent) */
Oid
MvincTrack(Oid relid, bool full_old_rows)
{
	int			spi_nest;
	Relation	rel;
	Oid			logid;
	Oid			save_userid;
	int			save_sec;
	StringInfoData sql;
	TupleDesc	desc;
	char		logname[NAMEDATALEN];
	char		replident;
	bool		row_messages;
	LOCKMODE	mode;

	/*
	 * Keep the lock (until commit), not the relation.  A table tracked as
	 * asked needs no more than the caller's lock.
	 */
	mode = MvincTrackLockMode(relid, full_old_rows);
	rel = relation_open(relid, mode == NoLock ? AccessShareLock : mode);
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	check_trackable(rel, full_old_rows);
	row_messages = ColfileIsColfileRel(rel);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	replident = rel->rd_rel->relreplident;
	relation_close(rel, NoLock);
	/* untracked while we waited for the lock: take what tracking needs */
	if (mode == NoLock && (mode = MvincTrackLockMode(relid, full_old_rows)) != NoLock)
		LockRelationOid(relid, mode);

	MvincAwaitCaptureSlot();
	MvincHoldHorizonFor(relid);

	logid = MvincChangeLogRelid(relid);

	/*
	 * colfile writers log row messages only while the table is tracked, and
	 * decide it per statement under their ROW EXCLUSIVE lock: wait out the
	 * writers that may have decided otherwise and keep new ones out until
	 * our commit (capture_rowmsg.c).
	 */
	if (!OidIsValid(logid) && row_messages)
		LockRelationOid(relid, ShareLock);
	if (OidIsValid(logid) && (!full_old_rows || replident == REPLICA_IDENTITY_FULL))
		return logid;

	become_extension_owner(&save_userid, &save_sec);
	spi_nest = MvincSpiConnect();
	initStringInfo(&sql);

	if (full_old_rows && replident != REPLICA_IDENTITY_FULL)
		mark_replica_identity_full(relid);

	if (!OidIsValid(logid))
	{
		snprintf(logname, sizeof(logname), MVINC_CHANGELOG_PREFIX "%u", relid);
		appendStringInfo(&sql, "CREATE TABLE %s ("
						 "_mvinc_lsn pg_catalog.pg_lsn NOT NULL, "
						 "_mvinc_xid pg_catalog.xid8 NOT NULL, "
						 "_mvinc_time pg_catalog.timestamptz NOT NULL, "
						 "_mvinc_seq pg_catalog.int4 NOT NULL, "
						 "_mvinc_op pg_catalog.\"char\" NOT NULL, "
						 "_mvinc_image pg_catalog.\"char\" NOT NULL",
						 quote_qualified_identifier(MVINC_SCHEMA, logname));
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped)
				continue;
			appendStringInfoString(&sql, ", ");
			append_column_def(&sql, att);
		}
		appendStringInfoString(&sql, ")");
		run_sql(sql.data, SPI_OK_UTILITY);
		resetStringInfo(&sql);
		appendStringInfo(&sql, "CREATE INDEX ON %s (_mvinc_lsn)",
						 quote_qualified_identifier(MVINC_SCHEMA, logname));
		run_sql(sql.data, SPI_OK_UTILITY);
		CommandCounterIncrement();
		logid = get_relname_relid(logname, get_namespace_oid(MVINC_SCHEMA, false));

		/* A member of the extension, as ALTER EXTENSION ADD would make it */
		if (!creating_extension)
		{
			ObjectAddress obj,
						ext;

			ObjectAddressSet(obj, RelationRelationId, logid);
			ObjectAddressSet(ext, ExtensionRelationId, get_extension_oid("mvinc", false));
			recordDependencyOn(&obj, &ext, DEPENDENCY_EXTENSION);
		}
		{
			Oid			argtypes[3] = {OIDOID, OIDOID, BOOLOID};
			Datum		args[3] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(logid),
			BoolGetDatum(full_old_rows)};

			if (SPI_execute_with_args("INSERT INTO mvinc.tracked (relid, changelog, full_old_rows) "
									  "VALUES ($1, $2, $3)", 3, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into mvinc.tracked");
		}
	}
	else
		run_sql_oid("UPDATE mvinc.tracked SET full_old_rows = true WHERE relid = $1",
					relid, SPI_OK_UPDATE);

	MvincSpiFinish(spi_nest);
	SetUserIdAndSecContext(save_userid, save_sec);

	/* Decoding learns about the change at our commit, in WAL order */
	CacheInvalidateRelcacheByRelid(relid);
	return logid;
}

/* Drop a change log and the tracking row (no checks) */
void
MvincDropTracking(Oid relid, Oid logid)
{
	int			spi_nest;
	Oid			save_userid;
	int			save_sec;

	become_extension_owner(&save_userid, &save_sec);
	spi_nest = MvincSpiConnect();
	run_sql_oid("DELETE FROM mvinc.consumers WHERE relid = $1", relid, SPI_OK_DELETE);
	run_sql_oid("DELETE FROM mvinc.tracked WHERE relid = $1", relid, SPI_OK_DELETE);
	MvincSpiFinish(spi_nest);
	if (OidIsValid(logid) && get_rel_name(logid) != NULL)
	{
		ObjectAddress obj;

		ObjectAddressSet(obj, RelationRelationId, logid);
		performDeletion(&obj, DROP_RESTRICT,
						PERFORM_DELETION_INTERNAL | PERFORM_DELETION_SKIP_EXTENSIONS |
						PERFORM_DELETION_QUIETLY);
	}
	SetUserIdAndSecContext(save_userid, save_sec);
	/* a dropped source has no relcache entry left to invalidate */
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		CacheInvalidateRelcacheByRelid(relid);
}

/* Consumers of a source, as a comma-separated list (NULL when none) */
static char *
consumer_list(Oid relid)
{
	int			spi_nest;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	char	   *result = NULL;

	spi_nest = MvincSpiConnect();
	if (SPI_execute_with_args("SELECT string_agg(pg_catalog.quote_ident(consumer), ', ' ORDER BY consumer) "
							  "FROM mvinc.consumers WHERE relid = $1",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			result = MemoryContextStrdup(TopTransactionContext, v);
	}
	MvincSpiFinish(spi_nest);
	return result;
}

/* Stop capturing a table's changes and drop its change log */
void
MvincUntrack(Oid relid)
{
	Oid			logid;
	char	   *consumers;
	Relation	rel = relation_open(relid, ShareUpdateExclusiveLock);

	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	logid = MvincChangeLogRelid(relid);
	if (!OidIsValid(logid))
	{
		relation_close(rel, NoLock);
		return;
	}
	consumers = consumer_list(relid);
	if (consumers != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot untrack table \"%s\"", RelationGetRelationName(rel)),
				 errdetail("Its changes are still consumed by: %s.", consumers),
				 errhint("Drop the views that read it first.")));
	MvincDropTracking(relid, logid);
	relation_close(rel, NoLock);
}

/* mvinc.track() asked for this source: its views' drops leave it tracked */
void
MvincMarkRequested(Oid relid)
{
	int			spi_nest;
	Oid			save_userid;
	int			save_sec;
	Relation	rel = table_open(MvincTrackedRelid(), AccessShareLock);
	bool		has_column = RelationGetDescr(rel)->natts >= Anum_tracked_requested;

	table_close(rel, AccessShareLock);
	/* 0.1's catalog, before ALTER EXTENSION mvinc UPDATE: no such column */
	if (!has_column)
		return;
	become_extension_owner(&save_userid, &save_sec);
	spi_nest = MvincSpiConnect();
	run_sql_oid("UPDATE mvinc.tracked SET requested = true WHERE relid = $1 AND NOT requested",
				relid, SPI_OK_UPDATE);
	MvincSpiFinish(spi_nest);
	SetUserIdAndSecContext(save_userid, save_sec);
}

/*
 * The last view of a source is gone: stop capturing it unless mvinc.track()
 * asked for it.  Else its change log would keep every row from now on, its
 * writers would pay for capture, and its database would keep a capture
 * worker.
 */
void
MvincReleaseSource(Oid relid)
{
	Oid			logid;
	Datum		requested;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return;
	/* as untrack: not while a tracker or writer decides on it */
	LockRelationOid(relid, ShareUpdateExclusiveLock);
	InvalidateCatalogSnapshot();	/* mvinc.tracked as committed now */
	logid = MvincChangeLogRelid(relid);
	if (!OidIsValid(logid) ||
		!tracked_column(relid, Anum_tracked_requested, NULL, &requested) ||
		DatumGetBool(requested))
		return;
	MvincDropTracking(relid, logid);
}

/* DROP TABLE of a source: untrack it, whoever consumes it */
void
MvincForgetDroppedSource(Oid relid)
{
	Oid			logid = MvincChangeLogRelid(relid);

	if (OidIsValid(logid))
		MvincDropTracking(relid, logid);
}

/* After ALTER TABLE of a tracked source: add and drop change log columns */
void
MvincSyncChangeLog(Oid relid)
{
	int			spi_nest;
	Oid			logid = MvincChangeLogRelid(relid);
	Relation	src,
				log;
	TupleDesc	sdesc,
				ldesc;
	StringInfoData sql;
	char	   *logname;
	Oid			save_userid;
	int			save_sec;
	bool		any = false;

	if (!OidIsValid(logid))
		return;
	src = relation_open(relid, AccessShareLock);
	log = relation_open(logid, AccessExclusiveLock);
	sdesc = RelationGetDescr(src);
	ldesc = RelationGetDescr(log);
	logname = quote_qualified_identifier(MVINC_SCHEMA, RelationGetRelationName(log));
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s", logname);

	for (int i = 0; i < sdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(sdesc, i);
		bool		found = false;

		if (att->attisdropped)
			continue;
		for (int j = MVINC_META_COLUMNS; j < ldesc->natts; j++)
		{
			Form_pg_attribute latt = TupleDescAttr(ldesc, j);

			if (!latt->attisdropped && strcmp(NameStr(latt->attname), NameStr(att->attname)) == 0)
			{
				found = true;
				/*
				 * A changed type: convert the logged values through text.  A
				 * changed collation (the column unused by any view, else
				 * PostgreSQL refuses) is followed too: a view created later
				 * groups and compares logged values as it does the source's.
				 */
				if (latt->atttypid != att->atttypid || latt->atttypmod != att->atttypmod ||
					latt->attcollation != att->attcollation)
				{
					char	   *type = format_type_extended(att->atttypid, att->atttypmod,
															FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);

					appendStringInfo(&sql, "%s ALTER COLUMN %s TYPE %s",
									 any ? "," : "", quote_identifier(NameStr(att->attname)), type);
					append_collate_clause(&sql, att);
					if (latt->atttypid != att->atttypid || latt->atttypmod != att->atttypmod)
						appendStringInfo(&sql, " USING %s::pg_catalog.text::%s",
										 quote_identifier(NameStr(att->attname)), type);
					any = true;
				}
			}
		}
		if (!found)
		{
			appendStringInfoString(&sql, any ? ", ADD COLUMN " : " ADD COLUMN ");
			append_column_def(&sql, att);
			any = true;
		}
	}
	for (int j = MVINC_META_COLUMNS; j < ldesc->natts; j++)
	{
		Form_pg_attribute latt = TupleDescAttr(ldesc, j);

		if (latt->attisdropped)
			continue;
		if (get_attnum(relid, NameStr(latt->attname)) == InvalidAttrNumber)
		{
			appendStringInfo(&sql, "%s DROP COLUMN %s", any ? "," : "",
							 quote_identifier(NameStr(latt->attname)));
			any = true;
		}
	}
	relation_close(src, NoLock);
	relation_close(log, NoLock);
	if (!any)
		return;

	become_extension_owner(&save_userid, &save_sec);
	spi_nest = MvincSpiConnect();
	run_sql(sql.data, SPI_OK_UTILITY);
	MvincSpiFinish(spi_nest);
	SetUserIdAndSecContext(save_userid, save_sec);
}

/* After ALTER TABLE ... RENAME COLUMN of a tracked source: rename it in the change log */
void
MvincRenameChangeLogColumn(Oid relid, const char *oldname, const char *newname)
{
	int			spi_nest;
	Oid			logid = MvincChangeLogRelid(relid);
	StringInfoData sql;
	Oid			save_userid;
	int			save_sec;

	if (!OidIsValid(logid) || get_attnum(logid, oldname) == InvalidAttrNumber)
		return;
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s RENAME COLUMN %s TO %s",
					 quote_qualified_identifier(MVINC_SCHEMA, get_rel_name(logid)),
					 quote_identifier(oldname), quote_identifier(newname));
	become_extension_owner(&save_userid, &save_sec);
	spi_nest = MvincSpiConnect();
	run_sql(sql.data, SPI_OK_UTILITY);
	MvincSpiFinish(spi_nest);
	SetUserIdAndSecContext(save_userid, save_sec);
}

