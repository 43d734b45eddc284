/*-------------------------------------------------------------------------
 * mvinc_snapshot_key.c
 *	  What an MVCC snapshot sees, kept as a key: memos of answers that
 *	  depend only on visibility (the read path's branch decision, colfile's
 *	  row-group lookups) are reused for a later snapshot that sees exactly
 *	  the same transactions.
 *
 * Equal contents, equal visibility (GetSnapshotDataReuse relies on it):
 * xmin, xmax, the in-progress top-level ids (xip), the subtransaction ids
 * when the snapshot keeps them (not when it overflowed outside recovery:
 * CopySnapshot leaves subxip unread then, and pg_subtrans answers through
 * the top-level ids), and curcid for our own transaction's changes.
 * snapXactCompletionCount is no help: copies have it 0.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/snapshot.h"

#include "mvinc.h"

/* The subtransaction ids snap's visibility depends on: see the header */
static int32
kept_subxcnt(Snapshot snap)
{
	if (snap->subxip == NULL || (snap->suboverflowed && !snap->takenDuringRecovery))
		return 0;
	return Max(snap->subxcnt, 0);
}

/* Make key snap's contents, its ids in cxt (an earlier key's are freed) */
void
MvincSnapshotKeySet(MvincSnapshotKey *key, Snapshot snap, MemoryContext cxt)
{
	int32		subxcnt = kept_subxcnt(snap);

	MvincSnapshotKeyFree(key);
	if (snap->xcnt + subxcnt > 0)
	{
		key->xids = MemoryContextAlloc(cxt, (snap->xcnt + subxcnt) * sizeof(TransactionId));
		if (snap->xcnt > 0)
			memcpy(key->xids, snap->xip, snap->xcnt * sizeof(TransactionId));
		if (subxcnt > 0)
			memcpy(key->xids + snap->xcnt, snap->subxip, subxcnt * sizeof(TransactionId));
	}
	key->xmin = snap->xmin;
	key->xmax = snap->xmax;
	key->curcid = snap->curcid;
	key->suboverflowed = snap->suboverflowed;
	key->takenDuringRecovery = snap->takenDuringRecovery;
	key->xcnt = snap->xcnt;
	key->subxcnt = subxcnt;
}

/* Does snap see exactly what the snapshot key was made of sees? */
bool
MvincSnapshotKeyMatches(const MvincSnapshotKey *key, Snapshot snap)
{
	int32		subxcnt = kept_subxcnt(snap);

	return key->xmin == snap->xmin && key->xmax == snap->xmax &&
		key->curcid == snap->curcid &&
		key->suboverflowed == snap->suboverflowed &&
		key->takenDuringRecovery == snap->takenDuringRecovery &&
		key->xcnt == snap->xcnt && key->subxcnt == subxcnt &&
		(snap->xcnt == 0 ||
		 memcmp(key->xids, snap->xip, snap->xcnt * sizeof(TransactionId)) == 0) &&
		(subxcnt == 0 ||
		 memcmp(key->xids + snap->xcnt, snap->subxip, subxcnt * sizeof(TransactionId)) == 0);
}

/* Free the key's ids (it matches no snapshot with any in progress then) */
void
MvincSnapshotKeyFree(MvincSnapshotKey *key)
{
	if (key->xids)
		pfree(key->xids);
	key->xids = NULL;
	key->xcnt = 0;
	key->subxcnt = 0;
}
