/*-------------------------------------------------------------------------
 * mv_compactor.c
 *	  Background compaction of append tables.
 *
 *	  An append refresh adds the delta's states beside the storage (cheap
 *	  to write), and every read then merges them per group until they are
 *	  folded in: many times the cost of reading the storage alone.  The
 *	  refresh itself folds only past mvinc.compact_fraction (so that it
 *	  stays fast); past the much smaller mvinc.background_compact_fraction
 *	  of the storage's rows, a refresh that commits instead starts a
 *	  background worker that folds them (mvinc.compact()) in a transaction
 *	  of its own.  Readers are not blocked (compaction takes the view's
 *	  refresh lock, which reads do not conflict with) and keep reading the
 *	  merged rows until the fold commits.  The worker then vacuums the
 *	  storage, whose folded groups it updated.
 *
 *	  A worker is started after the commit, unless one is already queued
 *	  for the view (not yet started: it will fold these rows too; mv_stats.c
 *	  keeps the flag): it waits for any refresh or compaction of the view
 *	  that holds the lock, then folds whatever is still appended (nothing,
 *	  when another compaction or a refresh already did).  When no worker
 *	  slot is free, the rows wait for the next refresh (and its foreground
 *	  fold).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "commands/vacuum.h"
#include "parser/parse_node.h"
#include "parser/parser.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mv/mv.h"

/* mvinc.background_compact_fraction (0: off) */
double		mvinc_background_compact_fraction = 0.05;

/* Views whose refresh in this transaction left enough rows to fold */
static List *pending_views = NIL;

static bool
worth_folding(int64 append_rows, Oid storage_oid)
{
	return mvinc_background_compact_fraction > 0 && append_rows > 0 &&
		append_rows > mvinc_background_compact_fraction * MvStorageRows(storage_oid);
}

/*
 * A refresh of viewid leaves append_rows rows beside its storage: have
 * them folded in the background once the transaction commits.
 */
void
MvCompactLater(Oid viewid, Oid storage_oid, int64 append_rows)
{
	MemoryContext old;

	if (!OidIsValid(storage_oid) || !worth_folding(append_rows, storage_oid) ||
		list_member_oid(pending_views, viewid))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	pending_views = lappend_oid(pending_views, viewid);
	MemoryContextSwitchTo(old);
}

static void
compactor_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (pending_views == NIL)
		return;
	if (event == XACT_EVENT_COMMIT)
	{
		foreach(lc, pending_views)
		{
			/* one queued at a time: a queued one folds this refresh's rows too */
			if (!MvClaimCompactor(lfirst_oid(lc)))
				continue;
			if (MvStartViewWorker(lfirst_oid(lc), "MvincCompactorMain", "mvinc compactor"))
				continue;
			MvReleaseCompactor(MyDatabaseId, lfirst_oid(lc));
			ereport(LOG,
					(errmsg("could not start background compaction of incremental view %u",
							lfirst_oid(lc)),
					 errdetail("No background worker slot is free; the next refresh compacts past \"mvinc.compact_fraction\"."),
					 errhint("Increase \"max_worker_processes\".")));
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		list_free(pending_views);
		pending_views = NIL;
	}
}

/* Worker entry point: fold the append rows of one view */
void
MvincCompactorMain(Datum arg)
{
	Oid			viewid = DatumGetObjectId(arg);
	Oid			dboid;
	int64		rows = 0;
	char	   *storage = NULL;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/*
	 * No longer queued once started: a refresh that commits from now on may
	 * queue another, since this one may have folded before its rows were.
	 */
	MvReleaseCompactor(dboid, viewid);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("mvinc compactor");
	/* one row in mvinc.refresh_progress from the fold to the VACUUM */
	MvProgressBegin(MV_PROGRESS_COMPACT, viewid);
	/* compaction runs at READ COMMITTED, whatever the server's default */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "mvinc background compaction");
	if (MvincExtensionReady() && MvIsIncrementalView(viewid))
	{
		MvCatalog  *cat;

		rows = MvCompact(viewid);
		cat = MvCatalogLookup(viewid, MV_LOOKUP_NEW);
		/* kept past the commit, which frees the transaction's memory */
		if (rows > 0 && cat != NULL && OidIsValid(cat->storage_oid))
			storage = MemoryContextStrdup(TopMemoryContext,
										  quote_qualified_identifier("mvinc", cat->storage_name));
		ereport(DEBUG1,
				(errmsg_internal("background compaction of \"%s\": %lld rows folded",
								 get_rel_name(viewid), (long long) rows)));
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	/*
	 * The fold updated a row per folded group: vacuum the storage now, so
	 * that reads do not walk the old versions until autovacuum comes.
	 */
	if (storage != NULL)
	{
		char	   *sql = psprintf("VACUUM (SKIP_LOCKED) %s", storage);
		RawStmt    *raw;

		/*
		 * While capture holds the database's VACUUM horizon (a tracked
		 * table with TOAST), the old versions become removable once it
		 * has passed the fold's commit.
		 */
		MvProgressSetPhase(MV_PHASE_WAIT_CAPTURE, -1);
		(void) MvTryWaitForCapture(XactLastCommitEnd, 2000);

		MvProgressSetPhase(MV_PHASE_VACUUM, -1);
		pgstat_report_activity(STATE_RUNNING, sql);
		StartTransactionCommand();
		raw = linitial_node(RawStmt, raw_parser(sql, RAW_PARSE_DEFAULT));
		ExecVacuum(make_parsestate(NULL), castNode(VacuumStmt, raw->stmt), true);
		CommitTransactionCommand();
	}
	MvProgressEnd();
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}

/* Install the GUC and the commit callback */
void
MvCompactorInit(void)
{
	DefineCustomRealVariable("mvinc.background_compact_fraction",
							 "A refresh that leaves more appended state rows than this fraction of the storage's rows has them folded in the background.",
							 "A background worker compacts the view after the refresh commits; 0 turns this off "
							 "(the refresh then folds only past \"mvinc.compact_fraction\").",
							 &mvinc_background_compact_fraction, 0.05, 0.0, 1000.0,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	RegisterXactCallback(compactor_xact_callback, NULL);
}
