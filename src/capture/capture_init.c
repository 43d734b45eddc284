/*-------------------------------------------------------------------------
 * capture_init.c
 *	  Start-up of the capture subsystem: its GUCs, its shared memory (one
 *	  entry per database that runs a capture worker), the launcher
 *	  background worker, and the utility hook that keeps change logs in
 *	  step with ALTER TABLE / DROP TABLE of tracked sources.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "mvinc.h"
#include "capture/capture.h"

CaptureShared *MvincCaptureShared = NULL;
MvincCaptureTickFn mvinc_capture_tick = NULL;
MvincCaptureWantedFn mvinc_capture_wanted = NULL;

int			mvinc_capture_batch_rows = 10000;
int			mvinc_capture_naptime_ms = 50;
int			mvinc_capture_idle_stop_ms = 10000;
int			mvinc_retention_interval_ms = 10000;
bool		mvinc_debug_keep_change_log = false;
int			mvinc_capture_nice = 0;
static int	capture_max_databases = 16;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Size of the shared state */
static Size
capture_shmem_size(void)
{
	return add_size(offsetof(CaptureShared, slots),
					mul_size(capture_max_databases, sizeof(CaptureWorkerSlot)));
}

/* Ask for the shared memory and the lock */
static void
capture_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(capture_shmem_size());
	RequestNamedLWLockTranche("mvinc_capture", 1);
}

/* Create or attach to the shared state */
static void
capture_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	MvincCaptureShared = ShmemInitStruct("mvinc_capture", capture_shmem_size(), &found);
	if (!found)
	{
		memset(MvincCaptureShared, 0, capture_shmem_size());
		MvincCaptureShared->lock = &(GetNamedLWLockTranche("mvinc_capture"))->lock;
		ConditionVariableInit(&MvincCaptureShared->progress_cv);
		MvincCaptureShared->nslots = capture_max_databases;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Name of the replication slot of a database: mvinc_<dboid> */
void
MvincCaptureSlotName(Oid dboid, char *name)
{
	snprintf(name, NAMEDATALEN, "mvinc_%u", dboid);
}

/*
 * The shared entry of a database; with create, claim a free one.  Caller
 * holds MvincCaptureShared->lock exclusively when create is true.
 */
CaptureWorkerSlot *
MvincCaptureSlotFor(Oid dboid, bool create)
{
	CaptureWorkerSlot *free_slot = NULL;
	CaptureWorkerSlot *dropped_slot = NULL;

	if (MvincCaptureShared == NULL)
		return NULL;
	for (int i = 0; i < MvincCaptureShared->nslots; i++)
	{
		CaptureWorkerSlot *s = &MvincCaptureShared->slots[i];

		if (s->dboid == dboid)
			return s;
		if (s->dboid == InvalidOid && free_slot == NULL)
			free_slot = s;
		if (s->db_dropped && s->pid == 0 && dropped_slot == NULL)
			dropped_slot = s;
	}
	/* Entries of dropped databases are reused last */
	if (free_slot == NULL)
		free_slot = dropped_slot;
	if (!create || free_slot == NULL)
		return NULL;
	memset(free_slot, 0, sizeof(CaptureWorkerSlot));
	free_slot->dboid = dboid;
	return free_slot;
}

/* Is this the mvinc extension's DROP? */
static bool
is_drop_of_mvinc(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_EXTENSION)
		return false;
	foreach(lc, stmt->objects)
	{
		if (strcmp(strVal(lfirst(lc)), "mvinc") == 0)
			return true;
	}
	return false;
}

/* Does any object still live in (depend on) schema nspid? */
static bool
schema_has_objects(Oid nspid)
{
	Relation	dep = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(NamespaceRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(nspid));
	scan = systable_beginscan(dep, DependReferenceIndexId, true, NULL, 2, key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(dep, AccessShareLock);
	return found;
}

/*
 * After DROP EXTENSION mvinc: drop schema mvinc, which CREATE EXTENSION made
 * from the control file (so it is no member of the extension), unless
 * something else still lives in it.  pg_dump writes CREATE SCHEMA itself.
 */
static void
drop_empty_mvinc_schema(void)
{
	Oid			nspid = get_namespace_oid(MVINC_SCHEMA, true);
	ObjectAddress schema;

	if (!OidIsValid(nspid))
		return;
	CommandCounterIncrement();
	if (schema_has_objects(nspid))
		return;
	ObjectAddressSet(schema, NamespaceRelationId, nspid);
	performDeletion(&schema, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
}

/*
 * Utility hook: before DROP TABLE of tracked sources, drop their change
 * logs; after ALTER TABLE of a tracked source, make its change log follow.
 * After DROP EXTENSION mvinc, drop its schema when empty and wake the
 * worker so it drops its slot.
 */
static void
capture_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			altered = InvalidOid;
	bool		dropping_mvinc = false;
	Oid			dropping_db = InvalidOid;
	RenameStmt *renamed = NULL;

	/* Only these statements run in a valid transaction and concern us */
	if ((IsA(parsetree, DropStmt) || IsA(parsetree, AlterTableStmt) || IsA(parsetree, RenameStmt)) &&
		!creating_extension && OidIsValid(get_extension_oid("mvinc", true)))
	{
		if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_TABLE)
		{
			ListCell   *lc;

			foreach(lc, ((DropStmt *) parsetree)->objects)
			{
				RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
				Oid			relid = RangeVarGetRelid(rv, NoLock, true);

				if (OidIsValid(relid))
					MvincForgetDroppedSource(relid);
			}
		}
		else if (IsA(parsetree, AlterTableStmt))
		{
			AlterTableStmt *stmt = (AlterTableStmt *) parsetree;

			if (stmt->objtype == OBJECT_TABLE)
				altered = RangeVarGetRelid(stmt->relation, NoLock, true);
		}
		else if (IsA(parsetree, DropStmt))
			dropping_mvinc = is_drop_of_mvinc((DropStmt *) parsetree);
		else if (IsA(parsetree, RenameStmt) &&
				 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
		{
			/*
			 * ALTER VIEW, MATERIALIZED VIEW and FOREIGN TABLE ... RENAME
			 * COLUMN rename a table's column too (PostgreSQL accepts any
			 * relation there): missed, the change log kept the old name and
			 * its next sync took the column for dropped and added, its
			 * pending values NULL in the views
			 */
			renamed = (RenameStmt *) parsetree;
			altered = RangeVarGetRelid(renamed->relation, NoLock, true);
			if (OidIsValid(altered) && get_rel_relkind(altered) != RELKIND_RELATION &&
				get_rel_relkind(altered) != RELKIND_PARTITIONED_TABLE)
			{
				renamed = NULL;
				altered = InvalidOid;
			}
		}
	}

	if (IsA(parsetree, DropdbStmt))
	{
		Oid			dboid = get_database_oid(((DropdbStmt *) parsetree)->dbname, true);

		if (OidIsValid(dboid) && dboid != MyDatabaseId && MvincStopWorkerForDropdb(dboid))
			dropping_db = dboid;
	}

	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		if (OidIsValid(dropping_db))
			MvincResumeWorker(dropping_db);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (OidIsValid(altered))
	{
		RangeVar   *rv = renamed ? renamed->relation : ((AlterTableStmt *) parsetree)->relation;
		List	   *relids;
		ListCell   *lc;

		/*
		 * The statement also changed the inheritors (partitions) unless ONLY
		 * was given: a tracked partition's change log follows its columns
		 * too (a partition's column can only be renamed through its parent).
		 */
		relids = rv->inh ? find_all_inheritors(altered, NoLock, NULL) : list_make1_oid(altered);
		foreach(lc, relids)
		{
			Oid			relid = lfirst_oid(lc);

			if (!OidIsValid(MvincChangeLogRelid(relid)))
				continue;

			/*
			 * Changes committed before the rename but captured after it
			 * find their column by attribute number (capture_writer.c): no
			 * wait.
			 */
			if (renamed != NULL)
				MvincRenameChangeLogColumn(relid, renamed->subname, renamed->newname);
			MvincSyncChangeLog(relid);
			MvincHoldHorizonFor(relid);
		}
	}
	if (dropping_mvinc && !OidIsValid(get_extension_oid("mvinc", true)))
	{
		drop_empty_mvinc_schema();
		MvincWakeWorker(MyDatabaseId);
	}
}

/* Install the capture subsystem's GUCs, shared memory, hooks and launcher */
void
MvincCaptureInit(void)
{
	DefineCustomIntVariable("mvinc.capture_batch_rows",
							"Change log rows the capture worker writes per transaction, at most (whole source transactions are never split).",
							NULL, &mvinc_capture_batch_rows, 10000, 1, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.capture_naptime",
							"How long the capture worker sleeps when it has read all WAL.",
							NULL, &mvinc_capture_naptime_ms, 50, 1, 10000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.capture_idle_stop",
							"How long a database's capture worker runs on with nothing to capture before it stops.",
							"It stops once no table is tracked and no view is refreshed on a schedule, and gives back its replication slot; the next table tracked starts a new one.",
							&mvinc_capture_idle_stop_ms, 10000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.retention_interval",
							"How often the capture worker removes change log rows no consumer needs.",
							NULL, &mvinc_retention_interval_ms, 10000, 100, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("mvinc.debug_keep_change_log",
							 "Keeps every change-log row: retention removes nothing (for debugging).",
							 "So that the rows of a change a view missed are still there when mvinc.verify_view reports it. Change logs grow without bound while it is on.",
							 &mvinc_debug_keep_change_log, false,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.capture_nice",
							"Scheduling niceness of the capture workers (0 = that of the server).",
							"A higher value gives the backends whose writes it decodes precedence on a busy machine; capture then lags while they keep the CPUs busy.",
							&mvinc_capture_nice, 0, 0, 19,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* A PGC_POSTMASTER setting can only be defined while preloading */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("mvinc.capture_max_databases",
								"Databases that can run a capture worker at the same time.",
								NULL, &capture_max_databases, 16, 1, 1024,
								PGC_POSTMASTER, 0, NULL, NULL, NULL);

	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = capture_ProcessUtility;
	MvincCommitsInit();

	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = capture_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = capture_shmem_startup;

	{
		BackgroundWorker bgw;

		memset(&bgw, 0, sizeof(bgw));
		bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
		bgw.bgw_restart_time = 10;
		snprintf(bgw.bgw_library_name, BGW_MAXLEN, "mvinc");
		snprintf(bgw.bgw_function_name, BGW_MAXLEN, "MvincLauncherMain");
		snprintf(bgw.bgw_name, BGW_MAXLEN, "mvinc capture launcher");
		snprintf(bgw.bgw_type, BGW_MAXLEN, "mvinc capture launcher");
		RegisterBackgroundWorker(&bgw);
	}
}
