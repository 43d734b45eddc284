/*-------------------------------------------------------------------------
 * capture_worker.c
 *	  The capture launcher and the per-database capture worker.
 *
 *	  The launcher runs once at server start: it starts a worker for every
 *	  database that accepts connections, and the worker exits at once where
 *	  the extension is not installed.  CREATE EXTENSION starts the worker of
 *	  its database (mvinc._start_worker); that worker first waits for the
 *	  creating transaction to end.
 *
 *	  The worker owns slot mvinc_<dboid>.  It keeps one decoding context
 *	  alive and feeds it record by record (as the walsender does), reading
 *	  only WAL that is flushed.  The output plugin buffers the changes of
 *	  tracked tables; the worker writes them, with the new applied position,
 *	  in one local transaction per batch (capture_writer.c), flushes that
 *	  commit, and only then confirms the slot.  A batch ends at a record
 *	  boundary once it holds mvinc.capture_batch_rows rows or the worker has
 *	  read all flushed WAL, so a source transaction is never split.
 *
 *	  Visibility of the worker's own writes: the worker is a logical decoding
 *	  process only while it decodes, an ordinary backend in its own
 *	  transactions (MvincWorkerLeaveDecoding, issue 19).
 *
 *	  Exactly once: a restart re-decodes from the slot's confirmed position;
 *	  transactions whose commit ends at or before the applied position read
 *	  back from mvinc.capture_progress are skipped.  The worker's own
 *	  transactions carry origin DoNotReplicateId and are filtered out.
 *
 *	  Errors: the message is recorded in shared memory (mvinc.capture) and
 *	  the worker exits; the postmaster restarts it and it sleeps 2^n seconds
 *	  (at most 60) after n consecutive failures before it starts again.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>
#include <sys/resource.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogutils.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "mvinc.h"
#include "capture/capture.h"

/*
 * How long a batch may wait for more changes once all WAL is read.  Each
 * batch and wake-up has a cost of its own: at 11k inserts/s, 10 ms windows
 * took a third more of the worker's CPU than 40 ms ones.  But with 40 ms
 * saturated updates of a tracked table fell from ~0.88 to 0.79 of the
 * untracked rate, likely because the held VACUUM horizon moves once per
 * batch (capture_horizon.c) and trailed further.  A backend that waits for
 * capture ends the window at once (someone_waits).
 */
#define BATCH_GATHER_MS		20

/* Records decoded or rows written between two yields of the CPU */
#define CAPTURE_YIELD_EVERY	8

/* Time between two retention batches while rows wait to be deleted */
#define RETENTION_BATCH_GAP_MS	200

CaptureWorkerSlot *MyCaptureSlot = NULL;

/*
 * PROC_IN_LOGICAL_DECODING, which CreateDecodingContext sets, tells
 * PostgreSQL that this process only decodes: GetSnapshotData leaves its xid
 * out of every other backend's snapshot and ComputeXidHorizons its xmin out
 * of the horizons (a decoding process never writes, and its slot holds the
 * xmin it needs).  This worker also writes: change-log rows and the
 * progress row in every batch, retention's deletions.  With the flag on,
 * a backend that took a snapshot while a batch was being written, after
 * some later transaction had ended, held an xmax past the batch's xid
 * without the xid among its running ones: it took the batch for finished.
 * Reading a row of the batch before the commit (a refresh's scan of the
 * change log, mvinc.views, a read of a view) it found the xid not
 * committed, concluded "aborted" and set the row's xmin-invalid hint bit.
 * Once the batch committed its rows were invisible to everyone while the
 * captured position covered them, and the next refresh moved the view's
 * checkpoint past changes it never saw (issue 19).
 *
 * So the flag is on only while the worker decodes (no xid is assigned
 * there, and the historic snapshots of decoding must not hold back VACUUM
 * of other tables), and off in every transaction of the worker's own:
 * MvincWorkerLeaveDecoding runs before each of them, enter_decoding before
 * a record is decoded.  Each switch takes ProcArrayLock, about twice per
 * batch.  worker_xact_callback refuses to commit a write made with the flag
 * on, so a caller that forgets the switch fails loudly instead of losing
 * rows silently.
 */
static void
set_decoding_flag(bool on)
{
	/* as logical.c: an xid or snapshot of a transaction must not be hidden */
	Assert(!on || (MyProc->statusFlags & PROC_IN_LOGICAL_DECODING) ||
		   !IsTransactionOrTransactionBlock());
	MvincSetProcStatusFlag(PROC_IN_LOGICAL_DECODING, on);
}

/* Before decoding a record: outside any transaction of our own */
static void
enter_decoding(void)
{
	set_decoding_flag(true);
}

/*
 * Before a transaction of the worker's own (it may write or take
 * snapshots): be an ordinary backend, seen in others' snapshots.
 */
void
MvincWorkerLeaveDecoding(void)
{
	set_decoding_flag(false);
}

/* The safety net described above set_decoding_flag */
static void
worker_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT &&
		(MyProc->statusFlags & PROC_IN_LOGICAL_DECODING) != 0 &&
		FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
		elog(ERROR, "mvinc capture worker: a write in a transaction hidden from other snapshots");
}

static void start_worker(Oid dboid, int elevel, bool linger, bool wait_for_us);

/* Fill in the registration of a database's capture worker */
static void
worker_registration(BackgroundWorker *bgw, Oid dboid, TransactionId xid, bool linger)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = 1;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "mvinc");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "MvincWorkerMain");
	snprintf(bgw->bgw_name, BGW_MAXLEN, "mvinc capture worker for database %u", dboid);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "mvinc capture worker");
	bgw->bgw_main_arg = ObjectIdGetDatum(dboid);
	memcpy(bgw->bgw_extra, &xid, sizeof(xid));
	memcpy(bgw->bgw_extra + sizeof(xid), &linger, sizeof(linger));
	bgw->bgw_notify_pid = 0;
}

/* Launcher: register a worker, false when no worker slot is free */
static bool
try_start_worker(Oid dboid)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	worker_registration(&bgw, dboid, InvalidTransactionId, false);
	return RegisterDynamicBackgroundWorker(&bgw, &handle);
}

/*
 * Start the capture worker of a database unless it runs or was asked for
 * in the last few seconds (registered, not running yet).  Started from
 * its own database, the worker waits for this transaction to end first.
 * With error_if_none, no free worker slot or shared entry is an ERROR;
 * else a WARNING.
 */
void
MvincStartWorker(Oid dboid, bool error_if_none)
{
	/* a worker of our own database waits for our transaction */
	start_worker(dboid, error_if_none ? ERROR : WARNING, false, dboid == MyDatabaseId);
}

/*
 * CREATE EXTENSION: start the worker, which waits for this transaction,
 * creates the slot and runs for mvinc.capture_idle_stop even with nothing
 * tracked, so that views created right after, even in a transaction that
 * has written first, are captured from their start.  Best effort: without
 * a free worker slot the first table tracked starts it (or says why not).
 */
void
MvincStartWorkerForExtension(void)
{
	if (MvincFreeReplicationSlots() > 0)
		start_worker(MyDatabaseId, DEBUG1, true, true);
}

static void
start_worker(Oid dboid, int elevel, bool linger, bool wait_for_us)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	TransactionId xid = InvalidTransactionId;
	CaptureWorkerSlot *s;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	s = MvincCaptureSlotFor(dboid, true);
	if (s != NULL && s->db_dropped && s->pid == 0 && dboid == MyDatabaseId)
		s->db_dropped = false;	/* we are in it: a new database with a recycled oid */
	if (s != NULL && (s->pid != 0 ||
					  (s->start_requested != 0 &&
					   !TimestampDifferenceExceeds(s->start_requested, now, 10000))))
	{
		LWLockRelease(MvincCaptureShared->lock);
		return;
	}
	if (s != NULL)
		s->start_requested = now;
	LWLockRelease(MvincCaptureShared->lock);

	if (s == NULL)
	{
		ereport(elevel,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the mvinc capture worker for database %u", dboid),
				 errdetail("Capture workers run in %d databases, the most \"mvinc.capture_max_databases\" allows.",
						   MvincCaptureShared->nslots),
				 errhint("Increase \"mvinc.capture_max_databases\" and restart the server, or stop tracking tables in another database.")));
		return;
	}

	if (wait_for_us)
		xid = GetTopTransactionIdIfAny();
	worker_registration(&bgw, dboid, xid, linger);
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
		s->start_requested = 0;
		LWLockRelease(MvincCaptureShared->lock);
		ereport(elevel,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the mvinc capture worker for database %u", dboid),
				 errdetail("All background worker slots are in use."),
				 errhint("Increase \"max_worker_processes\" (now %d) and restart the server; each database with tracked tables runs one capture worker.",
						 max_worker_processes)));
	}
}

/* Set the latch of a database's capture worker */
void
MvincWakeWorker(Oid dboid)
{
	CaptureWorkerSlot *s;

	if (MvincCaptureShared == NULL)
		return;
	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	s = MvincCaptureSlotFor(dboid, false);
	if (s != NULL && s->pid != 0 && s->latch != NULL)
		SetLatch(s->latch);
	LWLockRelease(MvincCaptureShared->lock);
}

/*
 * DROP DATABASE: a database with a replication slot or a connected worker
 * cannot be dropped, so stop the worker for good (db_dropped keeps the
 * postmaster's restart of it from connecting) and drop the slot.  Returns
 * whether there was anything to stop.
 */
bool
MvincStopWorkerForDropdb(Oid dboid)
{
	CaptureWorkerSlot *s;
	char		name[NAMEDATALEN];
	int			pid = 0;
	TimestampTz start = GetCurrentTimestamp();

	if (MvincCaptureShared == NULL)
		return false;
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	s = MvincCaptureSlotFor(dboid, false);
	if (s != NULL)
	{
		s->db_dropped = true;
		pid = s->pid;
	}
	LWLockRelease(MvincCaptureShared->lock);
	if (s == NULL)
		return false;

	while (pid != 0)
	{
		if (kill(pid, SIGTERM) != 0 && errno == ESRCH)
			break;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), 30000))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the mvinc capture worker of database %u did not stop", dboid)));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
		LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
		pid = s->dboid == dboid ? s->pid : 0;
		LWLockRelease(MvincCaptureShared->lock);
	}
	MvincCaptureSlotName(dboid, name);
	if (SearchNamedReplicationSlot(name, true) != NULL)
		ReplicationSlotDrop(name, true);
	return true;
}

/* After a failed DROP DATABASE: let the worker run again */
void
MvincResumeWorker(Oid dboid)
{
	CaptureWorkerSlot *s;

	if (MvincCaptureShared == NULL)
		return;
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	s = MvincCaptureSlotFor(dboid, false);
	if (s != NULL)
		s->db_dropped = false;
	LWLockRelease(MvincCaptureShared->lock);
	MvincStartWorker(dboid, false);
}

/* Launcher: start a worker in every database that may have the extension */
void
MvincLauncherMain(Datum arg)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	List	   *dbs = NIL;
	ListCell   *lc;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate)
			dbs = lappend_oid(dbs, db->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	/*
	 * Workers of databases without the extension exit at once; when all
	 * worker slots are taken, wait for some to free up and retry.
	 */
	foreach(lc, dbs)
	{
		for (int attempt = 0; !try_start_worker(lfirst_oid(lc)); attempt++)
		{
			if (attempt == 60)
			{
				MvincStartWorker(lfirst_oid(lc), false);	/* logs the WARNING */
				break;
			}
			(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
	proc_exit(0);
}

/* Release the shared entry at exit */
static void
worker_shmem_exit(int code, Datum arg)
{
	if (MyCaptureSlot == NULL)
		return;
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	MyCaptureSlot->pid = 0;
	MyCaptureSlot->latch = NULL;
	MyCaptureSlot->slot_ready = false;
	/* A clean exit: no extension here any more, the entry is free again */
	if (code == 0 && !MyCaptureSlot->db_dropped)
		memset(MyCaptureSlot, 0, sizeof(CaptureWorkerSlot));
	LWLockRelease(MvincCaptureShared->lock);
	ConditionVariableBroadcast(&MvincCaptureShared->progress_cv);
}

/* Is the extension (still) installed in this database? */
static bool
extension_exists(void)
{
	bool		exists;

	MvincWorkerLeaveDecoding();
	StartTransactionCommand();
	exists = OidIsValid(get_extension_oid("mvinc", true));
	CommitTransactionCommand();
	return exists;
}

/* Drop this database's slot, if it exists */
static void
drop_own_slot(void)
{
	char		name[NAMEDATALEN];

	MvincCaptureSlotName(MyDatabaseId, name);
	if (MyReplicationSlot != NULL)
		ReplicationSlotRelease();
	if (SearchNamedReplicationSlot(name, true) != NULL)
		ReplicationSlotDrop(name, true);
}

/*
 * Does nothing in this database need capture (no tracked table, and
 * nothing else asks for the worker)?  Decided under ShareLock on
 * mvinc.tracked: whoever starts tracking, or asks for the worker
 * otherwise, holds ROW EXCLUSIVE on it until its transaction ends
 * (MvincRequireCaptureWorker), so none of them is in flight.  When idle,
 * returns inside the transaction, holding that lock; else outside.
 */
static bool
nothing_to_capture(void)
{
	Oid			tracked;
	bool		idle = false;

	MvincWorkerLeaveDecoding();
	StartTransactionCommand();
	tracked = MvincTrackedRelid();
	if (OidIsValid(tracked) && ConditionalLockRelationOid(tracked, ShareLock))
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		idle = !MvincAnyTracked() &&
			(mvinc_capture_wanted == NULL || !mvinc_capture_wanted());
		PopActiveSnapshot();
	}
	if (!idle)
		CommitTransactionCommand();
	return idle;
}

/*
 * Stop for good (nothing_to_capture said so and its transaction is open):
 * give back the replication slot and the shared entry, so that the next
 * table tracked starts a new worker, which creates a new slot (and, from
 * an applied position reset here, takes that for a fresh start).  The
 * entry is freed before the lock on mvinc.tracked is released: a tracker
 * that was waiting for it finds no worker and starts one.
 */
static void
stop_idle_worker(LogicalDecodingContext *ctx)
{
	if (ctx != NULL)
		FreeDecodingContext(ctx);
	drop_own_slot();
	PushActiveSnapshot(GetTransactionSnapshot());
	MvincWriterResetProgress();
	PopActiveSnapshot();
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	/* DROP DATABASE, meanwhile, keeps the entry (and its mark) to itself */
	if (MyCaptureSlot->db_dropped)
	{
		MyCaptureSlot->pid = 0;
		MyCaptureSlot->latch = NULL;
		MyCaptureSlot->slot_ready = false;
	}
	else
		memset(MyCaptureSlot, 0, sizeof(CaptureWorkerSlot));
	MyCaptureSlot = NULL;
	LWLockRelease(MvincCaptureShared->lock);
	ConditionVariableBroadcast(&MvincCaptureShared->progress_cv);
	CommitTransactionCommand();
	ereport(DEBUG1,
			(errmsg("mvinc capture worker for database %u stops: no table is tracked",
					MyDatabaseId)));
	proc_exit(0);
}

/*
 * Acquire this database's slot, creating it if it does not exist (then
 * true, once it is consistent).  A new slot is left ephemeral: the caller
 * first commits what a new slot means (the changes before it recorded as
 * lost, capture_loop) and only then persists it, so that a worker that
 * dies in between leaves no slot behind and the next one does both again
 * (a persistent slot without the record would pass for an old one).
 */
static bool
ensure_slot(void)
{
	char		name[NAMEDATALEN];
	LogicalDecodingContext *ctx;

	MvincCaptureSlotName(MyDatabaseId, name);
	if (SearchNamedReplicationSlot(name, true) != NULL)
	{
		ReplicationSlotAcquire(name, true);
		return false;
	}

	CheckLogicalDecodingRequirements();
	ReplicationSlotCreate(name, true, RS_EPHEMERAL, false);
	ctx = CreateInitDecodingContext("mvinc", NIL, false, InvalidXLogRecPtr,
									XL_ROUTINE(.page_read = read_local_xlog_page,
											   .segment_open = wal_segment_open,
											   .segment_close = wal_segment_close),
									NULL, NULL, NULL);
	DecodingContextFindStartpoint(ctx);
	FreeDecodingContext(ctx);
	/* (releasing would have cleared the flag; we keep the slot) */
	MvincWorkerLeaveDecoding();
	return true;
}

/* Publish the captured position and wake the waiters */
static void
publish_progress(XLogRecPtr captured)
{
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	MyCaptureSlot->captured_lsn = captured;
	MyCaptureSlot->confirmed_lsn = MyReplicationSlot->data.confirmed_flush;
	MyCaptureSlot->failures = 0;
	LWLockRelease(MvincCaptureShared->lock);
	ConditionVariableBroadcast(&MvincCaptureShared->progress_cv);
}

/*
 * Does a backend wait for capture past what is published?  Then the worker
 * neither gathers more WAL into the batch nor starts a retention batch:
 * a refresh or a read waits on it.
 */
static bool
someone_waits(void)
{
	bool		waits;

	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	waits = MyCaptureSlot->wanted_lsn > MyCaptureSlot->captured_lsn;
	LWLockRelease(MvincCaptureShared->lock);
	return waits;
}

/*
 * Page reader of the worker's decoding context.  The worker only starts a
 * record below the flushed position, but the record can go on past it:
 * the WAL writer flushes whole pages, often in the middle of a record.
 * read_local_xlog_page would then poll until the rest is flushed, up to
 * wal_writer_delay later, and a refresh waiting for what the worker had
 * already decoded waited that long too (about 200 ms, every few
 * refreshes, in test/bench/mv).  Here the worker waits on its latch, and
 * when a backend waits for capture it flushes the rest itself.
 */
static int
capture_read_page(XLogReaderState *state, XLogRecPtr targetPagePtr, int reqLen,
				  XLogRecPtr targetRecPtr, char *cur_page)
{
	XLogRecPtr	need = targetPagePtr + reqLen;

	while (!RecoveryInProgress() && GetFlushRecPtr(NULL) < need)
	{
		if (someone_waits())
		{
			XLogFlush(Min(need, GetXLogInsertRecPtr()));
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 BATCH_GATHER_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return read_local_xlog_page(state, targetPagePtr, reqLen, targetRecPtr, cur_page);
}

/*
 * A batch committed asynchronously whose commit record may not be flushed
 * yet: the slot is confirmed up to pending_upto once WAL is flushed up to
 * pending_commit_end (never before: a crash would lose the batch while
 * the slot skipped its changes).
 */
static XLogRecPtr pending_commit_end = InvalidXLogRecPtr;
static XLogRecPtr pending_upto = InvalidXLogRecPtr;

/*
 * Run at the server's niceness plus mvinc.capture_nice.  Capture is
 * background work: on a busy machine the backends whose writes it decodes
 * get the CPU first (wake-up preemption follows the weights), and the
 * worker catches up in the idle time between them.  An unprivileged
 * process can raise its niceness but not lower it again: a smaller value
 * takes effect when the worker restarts.
 */
static void
apply_niceness(void)
{
	static int	base = INT_MIN;
	static int	applied = 0;

	if (base == INT_MIN)
	{
		errno = 0;
		base = getpriority(PRIO_PROCESS, 0);
		if (errno != 0)
			base = 0;
	}
	if (mvinc_capture_nice == applied)
		return;
	if (setpriority(PRIO_PROCESS, 0, Min(base + mvinc_capture_nice, 19)) == 0)
		applied = mvinc_capture_nice;
	else
		ereport(LOG,
				(errmsg("mvinc capture worker keeps niceness %d: %m", base + applied),
				 errdetail("\"mvinc.capture_nice\" = %d takes effect when the worker restarts.",
						   mvinc_capture_nice)));
}

/*
 * Let other processes have the CPU every few records or rows.  A
 * writer woken onto the CPU the worker runs on was seen waiting for the
 * worker's whole time slice (up to 4 ms here: the kernel did not preempt
 * it), every batch, which was most of the tracked writers' latency tail;
 * yielding every 8 records bounds that wait to some 30 microseconds (a
 * tenth of a writer's median latency), and costs a system call that
 * mostly finds nobody waiting (no change in the worker's CPU time
 * measured against every 32).
 */
void
MvincCaptureYield(void)
{
	static uint32 calls = 0;

	if ((++calls % CAPTURE_YIELD_EVERY) == 0)
		sched_yield();
}

/* Confirm the slot up to a position whose batch is durable */
static void
confirm_slot(XLogRecPtr upto)
{
	if (upto > MyReplicationSlot->data.confirmed_flush)
	{
		LogicalConfirmReceivedLocation(upto);
		MvincHorizonAdvance(false);
	}
}

/* Confirm the pending batch if its commit is flushed (with force: flush it) */
static void
confirm_pending(bool force)
{
	if (XLogRecPtrIsInvalid(pending_commit_end))
		return;
	if (force)
		XLogFlush(pending_commit_end);
	else if (GetFlushRecPtr(NULL) < pending_commit_end)
		return;
	confirm_slot(pending_upto);
	pending_commit_end = InvalidXLogRecPtr;
	pending_upto = InvalidXLogRecPtr;
}

/*
 * Write the buffered changes up to position upto and publish them; the
 * slot follows once they are durable.  The batch commits asynchronously:
 * writers' commits and the WAL writer flush it soon enough, and a flush of
 * our own per batch would add a WAL flush (an fsync) every few
 * milliseconds to the writers' own.
 */
static void
apply_batch(XLogRecPtr *applied, XLogRecPtr upto)
{
	confirm_pending(false);
	if (MvincCaptureBufferedRows > 0 || tuplestore_tuple_count(MvincCaptureBuffer) > 0)
	{
		int			save_synchronous_commit = synchronous_commit;

		/* others must see the batch's xid as running until it commits */
		MvincWorkerLeaveDecoding();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		MvincWriterApplyBuffer(*applied, upto);
		PopActiveSnapshot();
		synchronous_commit = SYNCHRONOUS_COMMIT_OFF;
		CommitTransactionCommand();
		synchronous_commit = save_synchronous_commit;
		tuplestore_clear(MvincCaptureBuffer);
		MvincCaptureBufferedRows = 0;
		*applied = upto;
		/* its commit record, not the insert position (that can lie past it) */
		pending_commit_end = Max(pending_commit_end, XactLastCommitEnd);
	}
	if (XLogRecPtrIsInvalid(pending_commit_end))
		confirm_slot(upto);
	else
	{
		/* nothing after the pending batch needs anything but that batch */
		pending_upto = upto;
		confirm_pending(false);
	}
	publish_progress(upto);
}

/* Decode and apply forever */
static void
capture_loop(void)
{
	char		name[NAMEDATALEN];
	LogicalDecodingContext *ctx;
	MemoryContext loop_cxt;
	XLogRecPtr	applied;
	TimestampTz batch_start = 0;
	uint32		records_read = 0;
	bool		decoded_since_nap = false;
	TimestampTz last_check = GetCurrentTimestamp();
	TimestampTz last_retention = 0;
	TimestampTz last_tick = 0;
	TimestampTz idle_since = 0;
	bool		retention_pending = false;
	bool		created;

	MvincCaptureSlotName(MyDatabaseId, name);
	created = ensure_slot();

	/*
	 * The WAL we still needed was removed (max_slot_wal_keep_size): start a
	 * new slot and record, as retention does, that change log rows up to
	 * its start may be missing, so that consumers rebuild.
	 */
	if (XLogRecPtrIsInvalid(MyReplicationSlot->data.restart_lsn))
	{
		XLogRecPtr	lost_from = MyReplicationSlot->data.confirmed_flush;

		ReplicationSlotRelease();
		ReplicationSlotDrop(name, true);
		(void) ensure_slot();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		MvincMarkChangesLost(MyReplicationSlot->data.confirmed_flush);
		PopActiveSnapshot();
		CommitTransactionCommand();
		XLogFlush(XactLastCommitEnd);	/* the record before the slot */
		ReplicationSlotPersist();
		ereport(WARNING,
				(errmsg("replication slot \"%s\" was invalidated: changes committed between %X/%X and %X/%X were not captured",
						name, LSN_FORMAT_ARGS(lost_from),
						LSN_FORMAT_ARGS(MyReplicationSlot->data.confirmed_flush)),
				 errdetail("The WAL they were in was removed before the capture worker read it."),
				 errhint("Consumers of the change logs rebuild; raise \"max_slot_wal_keep_size\" to avoid this.")));
	}

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	applied = MvincWriterReadProgress();

	/* Someone dropped our slot after changes were applied: same loss */
	if (created && applied != InvalidXLogRecPtr)
	{
		ereport(WARNING,
				(errmsg("replication slot \"%s\" was dropped: changes committed between %X/%X and %X/%X were not captured",
						name, LSN_FORMAT_ARGS(applied),
						LSN_FORMAT_ARGS(MyReplicationSlot->data.confirmed_flush)),
				 errhint("Consumers of the change logs rebuild; do not drop the slots named mvinc_<database oid>.")));
		MvincMarkChangesLost(MyReplicationSlot->data.confirmed_flush);
		applied = MyReplicationSlot->data.confirmed_flush;
	}

	/*
	 * A fresh start.  A table whose tracking committed before the slot
	 * became consistent (tracked in a transaction that had an xid, which
	 * does not wait for the slot: see MvincAwaitCaptureSlot) may have changes that
	 * committed before that point too: recorded as lost, its consumers
	 * rebuild.  Tables tracked later need nothing.
	 */
	else if (created)
	{
		MvincMarkChangesLost(MyReplicationSlot->data.confirmed_flush);
		applied = MyReplicationSlot->data.confirmed_flush;
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (created)
	{
		/* durable before the slot is (synchronous_commit may be off) */
		XLogFlush(XactLastCommitEnd);
		ReplicationSlotPersist();
	}

	if (applied > MyReplicationSlot->data.confirmed_flush)
		LogicalConfirmReceivedLocation(applied);
	MvincHorizonAdvance(true);

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "mvinc capture",
									 ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(loop_cxt);
	MvincCaptureBufferDesc = CreateTemplateTupleDesc(1);
	/* text: a varlena the builtin initialiser knows; it holds bytes */
	TupleDescInitBuiltinEntry(MvincCaptureBufferDesc, 1, "rec", TEXTOID, -1, 0);
	MvincCaptureBuffer = tuplestore_begin_heap(false, true, work_mem);
	MvincCaptureBufferedRows = 0;
	MvincCaptureWorkerMode = true;

	ctx = CreateDecodingContext(InvalidXLogRecPtr, NIL, false,
								XL_ROUTINE(.page_read = capture_read_page,
										   .segment_open = wal_segment_open,
										   .segment_close = wal_segment_close),
								NULL, NULL, NULL);
	XLogBeginRead(ctx->reader, MyReplicationSlot->data.restart_lsn);

	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	MyCaptureSlot->slot_ready = true;
	LWLockRelease(MvincCaptureShared->lock);
	publish_progress(Max(applied, MyReplicationSlot->data.confirmed_flush));
	apply_niceness();

	for (;;)
	{
		XLogRecPtr	flush;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_niceness();
		}

		flush = GetFlushRecPtr(NULL);
		if (ctx->reader->EndRecPtr < flush)
		{
			XLogRecord *record;
			char	   *errm = NULL;

			record = XLogReadRecord(ctx->reader, &errm);
			if (errm)
				elog(ERROR, "could not read WAL: %s", errm);
			if (record != NULL)
			{
				enter_decoding();
				LogicalDecodingProcessRecord(ctx, ctx->reader);
			}
			decoded_since_nap = true;
			MvincCaptureYield();

			if (MvincCaptureBufferedRows > 0 && batch_start == 0)
				batch_start = GetCurrentTimestamp();
			/* (the clock is read every 64 records: it showed in profiles) */
			if (MvincCaptureBufferedRows >= mvinc_capture_batch_rows ||
				(batch_start != 0 && (++records_read % 64) == 0 &&
				 TimestampDifferenceExceeds(batch_start, GetCurrentTimestamp(), 200)))
			{
				apply_batch(&applied, ctx->reader->EndRecPtr);
				batch_start = 0;
			}
			continue;
		}

		/*
		 * All flushed WAL is decoded.  Under a steady stream of small
		 * commits this happens after every few of them: gather a few
		 * milliseconds' worth before writing, so that the worker commits
		 * (and flushes WAL) at most about every BATCH_GATHER_MS, not once
		 * per source transaction.
		 */
		if (batch_start != 0)
		{
			long		gathered_ms;

			gathered_ms = TimestampDifferenceMilliseconds(batch_start, GetCurrentTimestamp());
			if (gathered_ms < BATCH_GATHER_MS && !someone_waits())
			{
				/*
				 * One sleep for the rest of the gathering time, not many
				 * short ones: each wake-up of the worker may preempt a
				 * writer, which showed in the writers' latency tail.
				 */
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 BATCH_GATHER_MS - gathered_ms, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				continue;
			}
		}
		apply_batch(&applied, ctx->reader->EndRecPtr);
		batch_start = 0;

		if (TimestampDifferenceExceeds(last_check, GetCurrentTimestamp(), 1000))
		{
			last_check = GetCurrentTimestamp();
			if (!extension_exists())
			{
				FreeDecodingContext(ctx);
				drop_own_slot();
				ereport(LOG,
						(errmsg("mvinc capture worker for database %u stops: the extension was dropped",
								MyDatabaseId)));
				proc_exit(0);
			}
			if (nothing_to_capture())
			{
				if (idle_since == 0)
					idle_since = GetCurrentTimestamp();
				if (TimestampDifferenceExceeds(idle_since, GetCurrentTimestamp(),
											   mvinc_capture_idle_stop_ms))
					stop_idle_worker(ctx);
				CommitTransactionCommand();
			}
			else
				idle_since = 0;
			MvincHorizonRecheck();
		}
		/*
		 * Retention a batch at a time, between capture batches and some way
		 * apart: a refresh waiting for capture then waits for one batch at
		 * most, and deletions do not take a CPU of a small machine for long.
		 */
		if (TimestampDifferenceExceeds(last_retention, GetCurrentTimestamp(),
									   retention_pending ? RETENTION_BATCH_GAP_MS :
									   mvinc_retention_interval_ms) &&
			!someone_waits())
		{
			last_retention = GetCurrentTimestamp();
			retention_pending = MvincRetentionPass();
		}

		/* automatic refresh's look at due views (mv_scheduler.c) */
		if (mvinc_capture_tick != NULL &&
			TimestampDifferenceExceeds(last_tick, GetCurrentTimestamp(), 100) &&
			!someone_waits())
		{
			last_tick = GetCurrentTimestamp();
			MvincWorkerLeaveDecoding();
			mvinc_capture_tick();
		}

		/*
		 * While WAL keeps coming, come back after one gathering window, not
		 * the whole naptime: the work then comes in small slices, where one
		 * long burst of decoding and writing would hold a CPU that writers
		 * wait for on a small machine.  When idle, make the last batch
		 * durable (nobody else may flush WAL) and sleep the naptime.
		 */
		if (!decoded_since_nap)
			confirm_pending(true);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 decoded_since_nap ? BATCH_GATHER_MS :
						 retention_pending ? Min(RETENTION_BATCH_GAP_MS, mvinc_capture_naptime_ms) :
						 mvinc_capture_naptime_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		decoded_since_nap = false;
	}
}

/* Worker entry point: one per database */
void
MvincWorkerMain(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	TransactionId creator;
	bool		linger;
	int			failures;

	memcpy(&creator, MyBgworkerEntry->bgw_extra, sizeof(creator));
	memcpy(&linger, MyBgworkerEntry->bgw_extra + sizeof(creator), sizeof(linger));
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/* Its database is being dropped: do not even connect */
	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	MyCaptureSlot = MvincCaptureSlotFor(dboid, false);
	if (MyCaptureSlot != NULL && MyCaptureSlot->db_dropped)
	{
		LWLockRelease(MvincCaptureShared->lock);
		proc_exit(0);
	}
	LWLockRelease(MvincCaptureShared->lock);
	MyCaptureSlot = NULL;
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	/* Claim the database's entry: one worker per database */
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	MyCaptureSlot = MvincCaptureSlotFor(dboid, true);
	if (MyCaptureSlot == NULL || (MyCaptureSlot->pid != 0 && MyCaptureSlot->pid != MyProcPid))
	{
		bool		full = MyCaptureSlot == NULL;

		MyCaptureSlot = NULL;
		LWLockRelease(MvincCaptureShared->lock);
		if (full)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("no mvinc capture worker for database %u", dboid),
					 errhint("Increase \"mvinc.capture_max_databases\" and restart the server.")));
		proc_exit(0);
	}
	MyCaptureSlot->pid = MyProcPid;
	MyCaptureSlot->latch = MyLatch;
	MyCaptureSlot->start_requested = 0;
	failures = MyCaptureSlot->failures;
	LWLockRelease(MvincCaptureShared->lock);
	/* a restart after an error does not keep an idle database's worker */
	if (failures > 0)
		linger = false;
	on_shmem_exit(worker_shmem_exit, (Datum) 0);
	RegisterXactCallback(worker_xact_callback, NULL);

	/* Back off after failures */
	if (failures > 0)
	{
		long		delay = 1000L << Min(failures, 6);

		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(delay, 60000L), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/* Started by CREATE EXTENSION: wait until it ends */
	if (TransactionIdIsValid(creator))
	{
		StartTransactionCommand();
		XactLockTableWait(creator, NULL, NULL, XLTW_None);
		CommitTransactionCommand();
	}

	/*
	 * Debian's 15.19+ only loads output plugins named in the (superuser)
	 * setting output_plugin_libraries.  This process is mvinc's own, so it
	 * allows its own library for itself only; users who want the textual
	 * output of plugin "mvinc" add it to that setting.
	 */
	if (GetConfigOption("output_plugin_libraries", true, false) != NULL)
		SetConfigOption("output_plugin_libraries", "mvinc", PGC_SUSET, PGC_S_SESSION);

	/* The worker's own writes are not decoded back */
	replorigin_session_origin = DoNotReplicateId;

	PG_TRY();
	{
		if (!extension_exists())
		{
			drop_own_slot();
			proc_exit(0);
		}
		/*
		 * Started at server start, or for a tracker that rolled back: stop
		 * now.  Started by CREATE EXTENSION: the loop stops it once idle
		 * for mvinc.capture_idle_stop.
		 */
		if (!linger && nothing_to_capture())
			stop_idle_worker(NULL);
		capture_loop();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		LWLockReleaseAll();
		/* (no entry left: an error while stopping idle) */
		if (MyCaptureSlot != NULL)
		{
			LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
			strlcpy(MyCaptureSlot->last_error, edata->message ? edata->message : "unknown error",
					MVINC_ERRMSG_LEN);
			MyCaptureSlot->last_error_time = GetCurrentTimestamp();
			MyCaptureSlot->failures++;
			LWLockRelease(MvincCaptureShared->lock);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
}
