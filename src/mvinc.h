/*-------------------------------------------------------------------------
 * mvinc.h
 *	  What every mvinc subsystem may rely on: the library-wide state set
 *	  up in _PG_init and the entry points of each subsystem's init.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_H
#define MVINC_H

#include "access/htup.h"
#include "utils/snapshot.h"

/* True when the library was loaded through shared_preload_libraries. */
extern bool MvincPreloaded;

/* Reports an error unless the server is set up as mvinc needs. */
extern void MvincCheckServerSetup(void);

/*
 * Set or clear a PGPROC status flag of this backend (PROC_IN_VACUUM,
 * PROC_IN_LOGICAL_DECODING). Both flags leave the backend's xid out of
 * other snapshots, so a backend that writes must clear them before it
 * takes an xid (docs/internals.md, "Who may write colfile metadata").
 */
extern void MvincSetProcStatusFlag(uint8 flag, bool on);

/*
 * Reads of mvinc's own tables without SSI predicate locks (mvinc_unlocked.c):
 * begin the scan with MvincUnlockedSnapshot(snapshot) and keep the tuples
 * MvincUnlockedVisible says snapshot sees.
 */
struct SysScanDescData;
extern Snapshot MvincUnlockedSnapshot(Snapshot snapshot);
extern bool MvincUnlockedVisible(struct SysScanDescData *scan, HeapTuple tup,
								 Snapshot snapshot);

/*
 * What an MVCC snapshot sees, as a key for memos of visibility-dependent
 * answers (mvinc_snapshot_key.c). Zero-initialise before the first Set.
 */
typedef struct MvincSnapshotKey
{
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	bool		suboverflowed;
	bool		takenDuringRecovery;
	uint32		xcnt;
	int32		subxcnt;
	TransactionId *xids;		/* xip, then the subxip it keeps */
} MvincSnapshotKey;

extern void MvincSnapshotKeySet(MvincSnapshotKey *key, Snapshot snapshot,
								MemoryContext cxt);
extern bool MvincSnapshotKeyMatches(const MvincSnapshotKey *key, Snapshot snapshot);
extern void MvincSnapshotKeyFree(MvincSnapshotKey *key);

/* Subsystem initialisation, called from _PG_init in this order. */
extern void MvincCaptureInit(void);
extern void MvincMvInit(void);
extern void MvincColfileInit(void);
extern void MvincHistoryInit(void);

#endif							/* MVINC_H */
