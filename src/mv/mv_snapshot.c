/*-------------------------------------------------------------------------
 * mv_snapshot.c
 *	  The text (pg_snapshot form) of a refresh's snapshot S', as the
 *	  checkpoint keeps it: computed in C the way pg_current_snapshot() does
 *	  (xids widened to 64 bits against the next xid, in-progress xids sorted
 *	  and unique), plus the refresh's own transaction where the checkpoint
 *	  rule needs it.  A query did this before; every refresh takes one, so
 *	  the parse, plan and executor start-up were worth saving.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "lib/stringinfo.h"
#include "utils/snapshot.h"

#include "mv/mv.h"

/* xid of a snapshot taken now, widened as pg_current_snapshot() does */
static FullTransactionId
widen_xid(TransactionId xid, FullTransactionId next)
{
	uint32		epoch = EpochFromFullTransactionId(next);

	if (!TransactionIdIsNormal(xid))
		return FullTransactionIdFromEpochAndXid(0, xid);
	/* every xid of the snapshot is from next's epoch or the one before */
	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Is xid visible in the snapshot (xmin, xmax, sorted xip)? */
static bool
visible(uint64 xid, uint64 xmin, uint64 xmax, const uint64 *xip, int nxip)
{
	if (xid < xmin)
		return true;
	if (xid >= xmax)
		return false;
	return bsearch(&xid, xip, nxip, sizeof(uint64), cmp_u64) == NULL;
}

/*
 * The text of snapshot snap as pg_snapshot.  Unless own_seen, the current
 * transaction is added as running: its changes reach the change log after
 * it commits, and a later refresh must consume them.  With own_seen (the
 * refresh read the transaction's own changes of the source) it is made
 * visible (xmax raised past it, the xids in between running), so they are
 * not applied twice.
 */
char *
MvSnapshotText(Snapshot snap, bool own_seen)
{
	FullTransactionId next = ReadNextFullTransactionId();
	FullTransactionId own = GetTopFullTransactionIdIfAny();
	uint64		xmin = U64FromFullTransactionId(widen_xid(snap->xmin, next));
	uint64		xmax = U64FromFullTransactionId(widen_xid(snap->xmax, next));
	uint64		x = U64FromFullTransactionId(own);
	uint64	   *xip;
	int			nxip = 0;
	StringInfoData buf;

	/* room for the snapshot's xids, own xid, and those up to it */
	xip = palloc(sizeof(uint64) * (snap->xcnt + 1 +
									(own_seen && x > xmax ? x - xmax : 0)));
	for (int i = 0; i < snap->xcnt; i++)
		xip[nxip++] = U64FromFullTransactionId(widen_xid(snap->xip[i], next));
	qsort(xip, nxip, sizeof(uint64), cmp_u64);
	/* unique, as pg_current_snapshot() makes them */
	if (nxip > 1)
	{
		int			n = 1;

		for (int i = 1; i < nxip; i++)
			if (xip[i] != xip[n - 1])
				xip[n++] = xip[i];
		nxip = n;
	}

	if (FullTransactionIdIsValid(own))
	{
		bool		vis = visible(x, xmin, xmax, xip, nxip);

		if (!own_seen && vis)
		{
			/* own xid runs: it is in xip and xmin is at most it */
			xip[nxip++] = x;
			qsort(xip, nxip, sizeof(uint64), cmp_u64);
			xmin = Min(xmin, x);
		}
		else if (own_seen && !vis)
		{
			/* own xid becomes visible: the xids from xmax up to it run */
			int			sorted = nxip;

			for (uint64 v = xmax; v < x; v++)
				if (bsearch(&v, xip, sorted, sizeof(uint64), cmp_u64) == NULL)
					xip[nxip++] = v;
			qsort(xip, nxip, sizeof(uint64), cmp_u64);
			xmax = x + 1;
		}
	}

	initStringInfo(&buf);
	appendStringInfo(&buf, UINT64_FORMAT ":" UINT64_FORMAT ":", xmin, xmax);
	for (int i = 0; i < nxip; i++)
		appendStringInfo(&buf, "%s" UINT64_FORMAT, i > 0 ? "," : "", xip[i]);
	pfree(xip);
	return buf.data;
}
