/*-------------------------------------------------------------------------
 * capture.h
 *	  Interface of the capture subsystem: the "mvinc" output plugin, the
 *	  capture worker that drains slot mvinc_<dboid> into one change log
 *	  table per tracked source, tracking, retention and the SQL surface.
 *
 *	  The exported C API (Mvinc*) is the contract of docs/internals.md; the
 *	  rest is shared between the files of src/capture only.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_CAPTURE_H
#define MVINC_CAPTURE_H

#include "access/xlogdefs.h"
#include "replication/logical.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lockdefs.h"
#include "storage/lwlock.h"
#include "replication/output_plugin.h"
#include "executor/tuptable.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"

/* ---- Exported C API (docs/internals.md) ---- */
extern Oid	MvincTrack(Oid relid, bool full_old_rows);
extern LOCKMODE MvincTrackLockMode(Oid relid, bool full_old_rows);
extern void MvincLockForTracking(Oid relid, bool full_old_rows);
extern void MvincUntrack(Oid relid);
extern Oid	MvincChangeLogRelid(Oid relid);
extern XLogRecPtr MvincWaitForCapture(XLogRecPtr lsn, int timeout_ms);
extern bool MvincTryWaitForCapture(XLogRecPtr lsn, int timeout_ms);
extern XLogRecPtr MvincCapturedLsn(void);
extern XLogRecPtr MvincRecordEndFloor(XLogRecPtr p);
extern void MvincSetConsumer(Oid relid, const char *consumer, XLogRecPtr needed_lsn);
extern void MvincDropConsumer(Oid relid, const char *consumer);
extern XLogRecPtr MvincRetainedFromIn(Oid relid, Snapshot snapshot);
extern XLogRecPtr MvincCaptureTarget(Oid relid, XLogRecPtr insert_lsn);

/*
 * Called by each capture worker between batches, outside any transaction,
 * at most every 100 ms; it must not raise errors (automatic refresh).
 */
typedef void (*MvincCaptureTickFn) (void);
extern MvincCaptureTickFn mvinc_capture_tick;

/*
 * Does anything but a tracked table need this database's capture worker
 * (views refreshed on a schedule)?  Asked by an idle worker, in a
 * transaction, before it stops.  Whoever makes the answer true calls
 * MvincRequireCaptureWorker in the same transaction.
 */
typedef bool (*MvincCaptureWantedFn) (void);
extern MvincCaptureWantedFn mvinc_capture_wanted;
extern void MvincRequireCaptureWorker(bool error_if_none);
extern void MvincAwaitCaptureSlot(void);
extern void MvincMarkRequested(Oid relid);
extern void MvincReleaseSource(Oid relid);
extern bool MvincXactMayHaveWritten(Oid relid);

/*
 * Sources whose WAL logical decoding cannot read (colfile) log each changed
 * row as a transactional logical message while tracked (capture_rowmsg.c).
 */
extern bool MvincRowMessagesWanted(Relation rel);
extern void MvincLogRowChange(Relation rel, char op, TupleTableSlot *oldslot,
							  TupleTableSlot *newslot);

/* ---- Internal to src/capture ---- */

#define MVINC_SCHEMA			"mvinc"
#define MVINC_TRACKED_TABLE		"tracked"
#define MVINC_TRACKED_PKEY		"tracked_pkey"
#define MVINC_CONSUMERS_TABLE	"consumers"
#define MVINC_PROGRESS_TABLE	"capture_progress"
#define MVINC_CHANGELOG_PREFIX	"changelog_"
#define MVINC_META_COLUMNS		6	/* _mvinc_lsn .. _mvinc_image */
#define MVINC_ERRMSG_LEN		512

/* Columns of mvinc.tracked, in order */
#define Anum_tracked_relid			1
#define Anum_tracked_changelog		2
#define Anum_tracked_full_old_rows	3
#define Anum_tracked_retained_from	4
#define Anum_tracked_requested		5
#define Natts_tracked				4

/* One capture worker's state in shared memory (one per database). */
typedef struct CaptureWorkerSlot
{
	Oid			dboid;			/* InvalidOid when the entry is free */
	int			pid;			/* 0 when no worker runs */
	Latch	   *latch;			/* the running worker's latch */
	bool		slot_ready;		/* slot exists and is consistent */
	XLogRecPtr	captured_lsn;	/* every commit ending <= this is applied */
	XLogRecPtr	confirmed_lsn;	/* slot's confirmed_flush as we set it */
	XLogRecPtr	wanted_lsn;		/* a backend waits for capture up to here */
	int			failures;		/* consecutive failed runs (for backoff) */
	uint64		hold_requests;	/* MvincHoldHorizonFor calls (capture_horizon.c) */
	bool		db_dropped;		/* DROP DATABASE stopped it: never restart */
	TimestampTz start_requested;	/* a worker was registered, not yet running */
	TimestampTz last_error_time;
	char		last_error[MVINC_ERRMSG_LEN];
} CaptureWorkerSlot;

typedef struct CaptureShared
{
	LWLock	   *lock;
	ConditionVariable progress_cv;	/* broadcast when captured_lsn moves */
	int			nslots;
	CaptureWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} CaptureShared;

extern CaptureShared *MvincCaptureShared;

/* capture_init.c */
extern int	mvinc_capture_batch_rows;
extern int	mvinc_capture_naptime_ms;
extern int	mvinc_capture_idle_stop_ms;
extern int	mvinc_retention_interval_ms;
extern bool mvinc_debug_keep_change_log;
extern int	mvinc_capture_nice;
extern CaptureWorkerSlot *MvincCaptureSlotFor(Oid dboid, bool create);
extern void MvincCaptureSlotName(Oid dboid, char *name);

/* capture_plugin.c: decoding output is buffered here in worker mode */
extern bool MvincCaptureWorkerMode;
extern Tuplestorestate *MvincCaptureBuffer;
extern int64 MvincCaptureBufferedRows;
extern TupleDesc MvincCaptureBufferDesc;

/* Kinds of record in the worker's buffer */
#define CAPREC_BEGIN	'B'
#define CAPREC_CHANGE	'C'

/* capture_writer.c */
extern void MvincWriterApplyBuffer(XLogRecPtr applied_lsn, XLogRecPtr new_applied);
extern void MvincCaptureYield(void);
extern XLogRecPtr MvincWriterReadProgress(void);
extern void MvincWriterResetProgress(void);

/* capture_worker.c */
extern CaptureWorkerSlot *MyCaptureSlot;
extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);
extern PGDLLEXPORT void MvincLauncherMain(Datum arg);
extern PGDLLEXPORT void MvincWorkerMain(Datum arg);
extern void MvincStartWorker(Oid dboid, bool error_if_none);
extern void MvincStartWorkerForExtension(void);
extern int	MvincFreeReplicationSlots(void);
extern void MvincWakeWorker(Oid dboid);
extern bool MvincStopWorkerForDropdb(Oid dboid);
extern void MvincResumeWorker(Oid dboid);
extern void MvincWorkerLeaveDecoding(void);

/* capture_rowmsg.c */
#define MVINC_ROW_MESSAGE_PREFIX "mvinc.row"
extern bool MvincParseRowMessage(const char *msg, Size size, Oid *relid, char *op,
								 HeapTuple *oldtup, HeapTuple *newtup);
extern bool MvincRowImageValid(HeapTuple tup, TupleDesc desc);

/* capture_track.c */
extern bool MvincIsTrackedNow(Oid relid);
extern HTAB *MvincRelFlagCacheCreate(const char *name);
extern bool MvincRelFlagGet(HTAB *cache, Oid relid, bool *flag);
extern void MvincRelFlagSet(HTAB *cache, Oid relid, bool flag);
extern void MvincRelFlagForget(HTAB *cache, Oid relid);
extern int	MvincSpiConnect(void);
extern void MvincSpiFinish(int nestlevel);
extern Oid	MvincTrackedRelid(void);
extern bool MvincAnyTracked(void);
extern void MvincSyncChangeLog(Oid relid);
extern void MvincRenameChangeLogColumn(Oid relid, const char *oldname, const char *newname);
extern void MvincForgetDroppedSource(Oid relid);
extern void MvincDropTracking(Oid relid, Oid logid);

/* capture_commits.c */
extern void MvincCommitsInit(void);

/* capture_horizon.c */
extern void MvincHoldHorizonFor(Oid relid);
extern void MvincHorizonAdvance(bool start);
extern void MvincHorizonRecheck(void);

/* capture_retention.c */
extern bool MvincRetentionPass(void);
extern void MvincMarkChangesLost(XLogRecPtr upto);

#endif							/* MVINC_CAPTURE_H */
