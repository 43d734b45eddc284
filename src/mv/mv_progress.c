/*-------------------------------------------------------------------------
 * mv_progress.c
 *	  Progress of the refreshes and compactions running now, for
 *	  mvinc.refresh_progress (as pg_stat_progress_* do for PostgreSQL's own
 *	  commands, which an extension cannot add to).
 *
 *	  Shared memory holds one entry per backend (indexed by MyBackendId,
 *	  so background workers have one too).  Only its backend writes an
 *	  entry, under a change counter: odd while a write is under way; a
 *	  reader copies the entry and retries until the counter was the same
 *	  even number before and after the copy.  Writes take no lock and are
 *	  made once per phase or statement, never per row.
 *
 *	  MvProgressBegin/End bracket a command (End in PG_FINALLY); nested
 *	  commands (the compaction inside a background compactor's run) report
 *	  into the outermost one's entry.  The entry is also cleared when the
 *	  transaction aborts and when the process exits, so that no row
 *	  outlives its command.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "mv/mv.h"

#define MODE_LEN 16

/* One backend's running command; pid 0 when there is none */
typedef struct ProgressEntry
{
	uint32		changecount;	/* odd while the owner writes */
	int			pid;
	Oid			dboid;
	Oid			viewid;
	MvProgressCommand command;
	MvProgressPhase phase;
	char		mode[MODE_LEN]; /* "" until known */
	int64		rows_done;
	int64		rows_total;		/* -1: unknown */
	TimestampTz started;
	TimestampTz phase_started;
} ProgressEntry;

static ProgressEntry *progress = NULL;	/* MaxBackends entries */
static int	depth = 0;			/* nesting of this backend's commands */
static bool exit_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static const char *const command_names[] = {
	[MV_PROGRESS_REFRESH] = "refresh",
	[MV_PROGRESS_COMPACT] = "compact",
	[MV_PROGRESS_RECLUSTER] = "recluster",
};

static const char *const phase_names[] = {
	[MV_PHASE_INITIALIZING] = "initializing",
	[MV_PHASE_WAIT_LOCK] = "waiting for lock",
	[MV_PHASE_WAIT_CAPTURE] = "waiting for capture",
	[MV_PHASE_READ_CHANGES] = "reading changes",
	[MV_PHASE_COMPUTE_DELTA] = "computing delta",
	[MV_PHASE_APPLY_INSERTS] = "applying inserts",
	[MV_PHASE_APPLY_CHANGES] = "applying updates and deletes",
	[MV_PHASE_REBUILD] = "rebuilding",
	[MV_PHASE_FOLD] = "folding append rows",
	[MV_PHASE_VACUUM] = "vacuuming storage",
	[MV_PHASE_REWRITE] = "rewriting storage",
	[MV_PHASE_BUILD_INDEXES] = "building indexes",
	[MV_PHASE_SWAP] = "swapping files",
};

PG_FUNCTION_INFO_V1(mvinc_refresh_progress);

static Size
progress_size(void)
{
	return mul_size(MaxBackends, sizeof(ProgressEntry));
}

static void
progress_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(progress_size());
}

static void
progress_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	progress = ShmemInitStruct("mvinc_progress", progress_size(), &found);
	if (!found)
		memset(progress, 0, progress_size());
	LWLockRelease(AddinShmemInitLock);
}

/* This backend's entry, or NULL (no shared memory, or not a backend) */
static volatile ProgressEntry *
my_entry(void)
{
	if (progress == NULL || MyBackendId == InvalidBackendId ||
		MyBackendId > MaxBackends)
		return NULL;
	return &progress[MyBackendId - 1];
}

/*
 * A write of one's own entry: no error can come in between (a critical
 * section would turn one into a PANIC), so the counter is never left odd.
 */
#define BEGIN_WRITE(e) \
	do { START_CRIT_SECTION(); (e)->changecount++; pg_write_barrier(); } while (0)
#define END_WRITE(e) \
	do { pg_write_barrier(); (e)->changecount++; END_CRIT_SECTION(); } while (0)

/* Clear this backend's entry */
static void
clear_entry(void)
{
	volatile ProgressEntry *e = my_entry();

	if (e == NULL || e->pid == 0)
		return;
	BEGIN_WRITE(e);
	e->pid = 0;
	e->viewid = InvalidOid;
	END_WRITE(e);
}

static void
progress_exit(int code, Datum arg)
{
	depth = 0;
	clear_entry();
}

/* An aborted transaction ends the commands it ran (PG_FINALLY has too) */
static void
progress_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		depth = 0;
		clear_entry();
	}
}

/* A command on viewid starts (in phase 'initializing') */
void
MvProgressBegin(MvProgressCommand command, Oid viewid)
{
	volatile ProgressEntry *e = my_entry();
	TimestampTz now;

	if (depth++ > 0 || e == NULL)
		return;
	if (!exit_registered)
	{
		before_shmem_exit(progress_exit, (Datum) 0);
		exit_registered = true;
	}
	now = GetCurrentTimestamp();
	BEGIN_WRITE(e);
	e->pid = MyProcPid;
	e->dboid = MyDatabaseId;
	e->viewid = viewid;
	e->command = command;
	e->phase = MV_PHASE_INITIALIZING;
	e->mode[0] = '\0';
	e->rows_done = 0;
	e->rows_total = -1;
	e->started = now;
	e->phase_started = now;
	END_WRITE(e);
}

/* The command ends (also on error: called from PG_FINALLY) */
void
MvProgressEnd(void)
{
	if (depth == 0)
		return;
	if (--depth == 0)
		clear_entry();
}

/* A new phase begins with rows_total rows to do (-1: unknown) */
void
MvProgressSetPhase(MvProgressPhase phase, int64 rows_total)
{
	volatile ProgressEntry *e = my_entry();
	TimestampTz now;

	if (depth == 0 || e == NULL)
		return;
	now = GetCurrentTimestamp();
	BEGIN_WRITE(e);
	e->phase = phase;
	e->rows_done = 0;
	e->rows_total = rows_total;
	e->phase_started = now;
	END_WRITE(e);
}

/* rows rows of the phase are done */
void
MvProgressSetRows(int64 rows)
{
	volatile ProgressEntry *e = my_entry();

	if (depth == 0 || e == NULL)
		return;
	BEGIN_WRITE(e);
	e->rows_done = rows;
	END_WRITE(e);
}

/* The refresh's mode is known */
void
MvProgressSetMode(const char *mode)
{
	volatile ProgressEntry *e = my_entry();

	if (depth == 0 || e == NULL)
		return;
	BEGIN_WRITE(e);
	strlcpy((char *) e->mode, mode, MODE_LEN);
	END_WRITE(e);
}

/* A consistent copy of entry i; false when it has no command */
static bool
read_entry(int i, ProgressEntry *copy)
{
	volatile ProgressEntry *e = &progress[i];

	for (;;)
	{
		uint32		before = e->changecount;

		pg_read_barrier();
		memcpy(copy, (ProgressEntry *) e, sizeof(ProgressEntry));
		pg_read_barrier();
		if (before == e->changecount && (before & 1) == 0)
			break;
		/* the owner is writing: it takes no lock, so this is short */
		CHECK_FOR_INTERRUPTS();
	}
	return copy->pid != 0;
}

/*
 * mvinc._refresh_progress(): the refreshes and compactions running in this
 * database, of views the caller may SELECT (the rule of mvinc.views'
 * counters), so PUBLIC may call it.
 */
Datum
mvinc_refresh_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			user = GetUserId();

	InitMaterializedSRF(fcinfo, 0);
	if (progress == NULL)
		return (Datum) 0;
	for (int i = 0; i < MaxBackends; i++)
	{
		ProgressEntry c;
		Datum		values[10];
		bool		nulls[10] = {0};
		bool		missing = false;

		if (!read_entry(i, &c) || c.dboid != MyDatabaseId)
			continue;
		/* a view dropped since is shown to nobody */
		if (pg_class_aclcheck_ext(c.viewid, user, ACL_SELECT, &missing) != ACLCHECK_OK ||
			missing)
			continue;
		values[0] = Int32GetDatum(c.pid);
		values[1] = ObjectIdGetDatum(c.dboid);
		values[2] = ObjectIdGetDatum(c.viewid);
		values[3] = CStringGetTextDatum(command_names[c.command]);
		c.mode[MODE_LEN - 1] = '\0';
		nulls[4] = c.mode[0] == '\0';
		values[4] = nulls[4] ? (Datum) 0 : CStringGetTextDatum(c.mode);
		values[5] = CStringGetTextDatum(phase_names[c.phase]);
		values[6] = Int64GetDatum(c.rows_done);
		nulls[7] = c.rows_total < 0;
		values[7] = Int64GetDatum(c.rows_total);
		values[8] = TimestampTzGetDatum(c.started);
		values[9] = TimestampTzGetDatum(c.phase_started);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Ask for the shared memory (only while preloading); clear on abort */
void
MvProgressInit(void)
{
	RegisterXactCallback(progress_xact_callback, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_shmem_startup;
}
