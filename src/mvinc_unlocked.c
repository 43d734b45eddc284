/*-------------------------------------------------------------------------
 * mvinc_unlocked.c
 *	  Reads of mvinc's own tables that take no SSI predicate locks.
 *
 * Under SERIALIZABLE, a read of a table with an MVCC snapshot takes SIREAD
 * locks on the index pages and tuples it meets. Some of mvinc's own tables
 * are read on behalf of many user tables at once (colfile's metadata, the
 * list of tracked sources): locks on their index pages would make
 * transactions on unrelated tables conflict. These reads scan with
 * SnapshotAny and judge each tuple under the real snapshot themselves; the
 * conflict-out check heap makes on a tuple it meets is kept (its writer is
 * the writer of what the tuple describes). Where the user's data needs
 * SIREAD locks, the caller takes them on the user's table (colfile_ssi.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/snapmgr.h"

#include "mvinc.h"

/*
 * The snapshot to give a scan (systable_beginscan) of one of mvinc's
 * tables that is to be judged under snapshot: SnapshotAny when SSI would
 * lock what the scan reads.
 */
Snapshot
MvincUnlockedSnapshot(Snapshot snapshot)
{
	if (snapshot != NULL && snapshot->snapshot_type == SNAPSHOT_MVCC &&
		IsolationIsSerializable())
		return SnapshotAny;
	return snapshot;
}

/*
 * Does snapshot see tup, just returned by scan (begun with
 * MvincUnlockedSnapshot(snapshot))? Conflicts out to its writer as heap's
 * read of it would.
 */
bool
MvincUnlockedVisible(SysScanDesc scan, HeapTuple tup, Snapshot snapshot)
{
	Buffer		buf;
	bool		visible;

	if (MvincUnlockedSnapshot(snapshot) == snapshot)
		return true;			/* the scan judged it */
	buf = ((BufferHeapTupleTableSlot *) scan->slot)->buffer;
	Assert(BufferIsValid(buf));
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	visible = HeapTupleSatisfiesVisibility(tup, snapshot, buf);
	HeapCheckForSerializableConflictOut(visible, scan->heap_rel, tup, buf, snapshot);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return visible;
}
