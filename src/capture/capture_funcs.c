/*-------------------------------------------------------------------------
 * capture_funcs.c
 *	  SQL-callable functions of the capture subsystem: mvinc.track,
 *	  mvinc.untrack, mvinc.wait_for_capture, the mvinc.capture view's
 *	  status function, and the worker start run by CREATE EXTENSION.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "mvinc.h"
#include "capture/capture.h"

PG_FUNCTION_INFO_V1(mvinc_track);
PG_FUNCTION_INFO_V1(mvinc_untrack);
PG_FUNCTION_INFO_V1(mvinc_wait_for_capture);
PG_FUNCTION_INFO_V1(mvinc_capture_status);
PG_FUNCTION_INFO_V1(mvinc_start_worker);

/* mvinc.track(rel regclass, full_old_rows boolean) returns regclass */
Datum
mvinc_track(PG_FUNCTION_ARGS)
{
	Oid			logid = MvincTrack(PG_GETARG_OID(0), PG_GETARG_BOOL(1));

	MvincMarkRequested(PG_GETARG_OID(0));
	PG_RETURN_OID(logid);
}

/* mvinc.untrack(rel regclass) */
Datum
mvinc_untrack(PG_FUNCTION_ARGS)
{
	MvincUntrack(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/* This database's captured position (InvalidXLogRecPtr until the slot is ready) */
XLogRecPtr
MvincCapturedLsn(void)
{
	CaptureWorkerSlot *s;
	XLogRecPtr	captured = InvalidXLogRecPtr;

	if (MvincCaptureShared == NULL)
		return InvalidXLogRecPtr;
	LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
	s = MvincCaptureSlotFor(MyDatabaseId, false);
	if (s != NULL && s->slot_ready)
		captured = s->captured_lsn;
	LWLockRelease(MvincCaptureShared->lock);
	return captured;
}

/*
 * p moved back over a page header that it points just after: no record
 * ends there (records end at the page boundary), XLogFlush cannot reach it,
 * and the WAL insert position (pg_current_wal_insert_lsn(), the default
 * wait position) can be there.
 */
XLogRecPtr
MvincRecordEndFloor(XLogRecPtr p)
{
	if (XLogSegmentOffset(p, wal_segment_size) == SizeOfXLogLongPHD)
		p -= SizeOfXLogLongPHD;
	else if (p % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		p -= SizeOfXLogShortPHD;
	return p;
}

/*
 * The wait shared by MvincWaitForCapture and MvincTryWaitForCapture: sleep
 * on the progress condition variable until this database's captured
 * position reaches lsn, timeout_ms passes, or (with stop_if_not_running)
 * no worker runs.  Returns the captured position; *running and err (the
 * worker's last error) describe why it fell short.  Raises no error of its
 * own, writes nothing and starts no (sub)transaction, so it may run in
 * parallel mode; only a query cancel interrupts it.
 */
static XLogRecPtr
wait_for_captured(XLogRecPtr lsn, int timeout_ms, bool stop_if_not_running,
				  bool *running, char *err)
{
	TimestampTz start = GetCurrentTimestamp();
	XLogRecPtr	captured = InvalidXLogRecPtr;
	XLogRecPtr	reachable;
	CaptureWorkerSlot *s;

	*running = false;
	err[0] = '\0';
	lsn = MvincRecordEndFloor(lsn);

	/* The worker reads only flushed WAL (a flush is not a data write) */
	reachable = MvincRecordEndFloor(Min(lsn, GetXLogInsertRecPtr()));
	XLogFlush(reachable);

	/*
	 * Tell the worker that someone waits (it then defers its other work)
	 * up to a position it will reach, not a future one
	 */
	LWLockAcquire(MvincCaptureShared->lock, LW_EXCLUSIVE);
	s = MvincCaptureSlotFor(MyDatabaseId, false);
	if (s != NULL && s->wanted_lsn < reachable)
		s->wanted_lsn = reachable;
	LWLockRelease(MvincCaptureShared->lock);
	MvincWakeWorker(MyDatabaseId);

	ConditionVariablePrepareToSleep(&MvincCaptureShared->progress_cv);
	for (;;)
	{
		long		left;

		LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
		s = MvincCaptureSlotFor(MyDatabaseId, false);
		if (s != NULL)
		{
			captured = s->slot_ready ? s->captured_lsn : InvalidXLogRecPtr;
			*running = s->pid != 0;
			strlcpy(err, s->last_error, MVINC_ERRMSG_LEN);
		}
		LWLockRelease(MvincCaptureShared->lock);
		if (captured >= lsn)
			break;
		if (stop_if_not_running && !*running)
			break;

		left = timeout_ms - (long) ((GetCurrentTimestamp() - start) / 1000);
		if (left <= 0)
			break;
		(void) ConditionVariableTimedSleep(&MvincCaptureShared->progress_cv,
										   Min(left, 100), PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	return captured;
}

/*
 * Wait until every transaction that committed at or before lsn is in the
 * change logs; returns the captured position.  Errors after timeout_ms.
 */
XLogRecPtr
MvincWaitForCapture(XLogRecPtr lsn, int timeout_ms)
{
	XLogRecPtr	captured;
	bool		running;
	char		err[MVINC_ERRMSG_LEN];

	if (MvincCaptureShared == NULL)
		MvincCheckServerSetup();

	captured = wait_for_captured(lsn, timeout_ms, false, &running, err);
	if (captured < MvincRecordEndFloor(lsn))
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("timed out waiting for change capture to reach %X/%X",
						LSN_FORMAT_ARGS(lsn)),
				 errdetail("Captured up to %X/%X; the capture worker is %s.%s%s",
						   LSN_FORMAT_ARGS(captured),
						   running ? "running" : "not running",
						   err[0] ? " Its last error: " : "", err),
				 errhint("See mvinc.capture.")));
	return captured;
}

/*
 * Like MvincWaitForCapture, but returns whether capture reached lsn: false
 * after timeout_ms, at once when no capture worker runs for this database
 * (or mvinc is not preloaded, or the server is a standby).  Never raises an
 * error for those and starts no subtransaction, so a reader in parallel
 * mode (the leader) can call it.
 */
bool
MvincTryWaitForCapture(XLogRecPtr lsn, int timeout_ms)
{
	bool		running;
	char		err[MVINC_ERRMSG_LEN];

	if (MvincCaptureShared == NULL || RecoveryInProgress())
		return false;
	if (MvincCapturedLsn() >= MvincRecordEndFloor(lsn))
		return true;			/* the common case: no flush, no sleep */
	return wait_for_captured(lsn, Max(timeout_ms, 0), true, &running, err) >=
		MvincRecordEndFloor(lsn);
}

/* mvinc.wait_for_capture(lsn pg_lsn, timeout interval) returns pg_lsn */
Datum
mvinc_wait_for_capture(PG_FUNCTION_ARGS)
{
	XLogRecPtr	lsn = PG_GETARG_LSN(0);
	Interval   *timeout = PG_GETARG_INTERVAL_P(1);
	int64		ms;

	ms = (timeout->time + (int64) (timeout->day * USECS_PER_DAY) +
		  (int64) timeout->month * DAYS_PER_MONTH * USECS_PER_DAY) / 1000;
	if (ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout must not be negative")));
	/* nothing is tracked (and no worker may run): nothing to wait for */
	if (!MvincAnyTracked())
		PG_RETURN_LSN(lsn);
	PG_RETURN_LSN(MvincWaitForCapture(lsn, (int) Min(ms, INT_MAX)));
}

/* One row for mvinc.capture: the state of this database's capture */
Datum
mvinc_capture_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {0};
	char		name[NAMEDATALEN];
	CaptureWorkerSlot copy;
	bool		have = false;
	ReplicationSlot *slot;
	XLogRecPtr	confirmed = InvalidXLogRecPtr;
	bool		slot_exists = false;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	MvincCaptureSlotName(MyDatabaseId, name);
	if (MvincCaptureShared != NULL)
	{
		CaptureWorkerSlot *s;

		LWLockAcquire(MvincCaptureShared->lock, LW_SHARED);
		s = MvincCaptureSlotFor(MyDatabaseId, false);
		if (s != NULL)
		{
			copy = *s;
			have = true;
		}
		LWLockRelease(MvincCaptureShared->lock);
	}

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	slot = SearchNamedReplicationSlot(name, false);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		confirmed = slot->data.confirmed_flush;
		SpinLockRelease(&slot->mutex);
		slot_exists = true;
	}
	LWLockRelease(ReplicationSlotControlLock);

	values[0] = CStringGetDatum(name);
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(name));
	nulls[0] = !slot_exists;
	values[1] = LSNGetDatum(confirmed);
	nulls[1] = !slot_exists;
	values[2] = LSNGetDatum(have ? copy.captured_lsn : InvalidXLogRecPtr);
	nulls[2] = !have || copy.captured_lsn == InvalidXLogRecPtr;
	if (slot_exists)
	{
		XLogRecPtr	cur = GetXLogWriteRecPtr();

		values[3] = DirectFunctionCall1(int8_numeric,
										Int64GetDatum(cur > confirmed ? (int64) (cur - confirmed) : 0));
	}
	else
		nulls[3] = true;
	values[4] = Int32GetDatum(have ? copy.pid : 0);
	nulls[4] = !have || copy.pid == 0;
	nulls[5] = !have || copy.last_error[0] == '\0';
	if (!nulls[5])
		values[5] = CStringGetTextDatum(copy.last_error);
	nulls[6] = nulls[5];
	if (!nulls[6])
		values[6] = TimestampTzGetDatum(copy.last_error_time);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* mvinc._start_worker(): run by CREATE EXTENSION (best effort) */
Datum
mvinc_start_worker(PG_FUNCTION_ARGS)
{
	MvincStartWorkerForExtension();
	PG_RETURN_VOID();
}
