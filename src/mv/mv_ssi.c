/*-------------------------------------------------------------------------
 * mv_ssi.c
 *	  SERIALIZABLE reads of incremental views answered from the storage.
 *
 * A read of the defining query under SERIALIZABLE scans the source: it
 * takes SIREAD locks there (so later writers of the source conflict in),
 * and every row version it meets that a concurrent transaction wrote and
 * its snapshot does not see is a conflict out to that writer. A read from
 * the storage meets no source row, so both are done here, for the whole
 * source relation, as a sequential scan of the defining query would (never
 * weaker; coarser than an index scan's page locks):
 *
 *  1. a relation SIREAD lock on the source, before anything else, so that
 *	   every write after it conflicts in;
 *	2. a conflict out to every transaction writing the source now (they
 *	   hold RowExclusiveLock on it) that the snapshot does not see,
 *	   prepared transactions included;
 *	3. after capture has caught up, a conflict out to every transaction
 *	   whose changes the change log holds past the checkpoint and the
 *	   snapshot does not see (those that committed before 3 began).
 *
 * A writer that wrote before 1 and was still running at 2 is caught by 2;
 * one that had committed by then is in the change log by 3 (the read waits
 * for capture of every commit before its wait began).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/predicate.h"
#include "storage/sinvaladt.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "mv/mv.h"

/* A conflict out to xid (a writer of rel) when snap does not see it */
static void
conflict_out_if_unseen(Relation rel, TransactionId xid, Snapshot snap)
{
	if (!TransactionIdIsNormal(xid) || TransactionIdIsCurrentTransactionId(xid))
		return;
	if (TransactionIdPrecedes(xid, TransactionXmin))
		return;					/* older than any snapshot of ours: no conflict */
	if (!XidInMVCCSnapshot(xid, snap))
		return;					/* seen: a dependency, not a conflict */
	CheckForSerializableConflictOut(rel, xid, snap);
}

/*
 * The prepared transaction holding a lock under vxid, if any.  A prepared
 * transaction keeps the virtual xid it had (a recovered one gets one of
 * its own), while its backend moves on: asking the backend would give its
 * current transaction, or none.
 */
static TransactionId
prepared_xid(Relation rel, VirtualTransactionId vxid)
{
	bool		more = false;
	TransactionId xid;

	if (max_prepared_xacts == 0)
		return InvalidTransactionId;
	xid = TwoPhaseGetXidByVirtualXID(vxid, &more);
	/* (PostgreSQL gives no two prepared transactions one virtual xid) */
	if (more)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to read/write dependencies among transactions"),
				 errdetail("Prepared transactions writing \"%s\" share a virtual transaction id.",
						   RelationGetRelationName(rel)),
				 errhint("The transaction might succeed if retried.")));
	return xid;
}

/* Steps 1 and 2: lock the source, conflict out to its running writers */
void
MvSsiLockSource(Oid sourceid, Snapshot snap)
{
	Relation	rel;
	LOCKTAG		tag;
	VirtualTransactionId *writers;
	int			n;

	if (!IsolationIsSerializable() || snap == NULL)
		return;
	rel = relation_open(sourceid, AccessShareLock);
	PredicateLockRelation(rel, snap);
	SET_LOCKTAG_RELATION(tag, MyDatabaseId, sourceid);
	writers = GetLockConflicts(&tag, ShareLock, &n);
	for (int i = 0; i < n; i++)
	{
		TransactionId xid;
		TransactionId xmin;

		/*
		 * A prepared writer first: its backend may run another transaction
		 * now.  Then the backend's; when it has none, it may have prepared
		 * meanwhile (the prepared transaction is listed before the backend
		 * lets go of its xid), so look again.
		 */
		xid = prepared_xid(rel, writers[i]);
		if (!TransactionIdIsValid(xid) &&
			!VirtualTransactionIdIsRecoveredPreparedXact(writers[i]))
		{
			BackendIdGetTransactionIds(writers[i].backendId, &xid, &xmin);
			if (!TransactionIdIsValid(xid))
				xid = prepared_xid(rel, writers[i]);
		}
		conflict_out_if_unseen(rel, xid, snap);
	}
	relation_close(rel, NoLock);
}

/*
 * Step 3, inside an open SPI connection: the change log's writers past
 * the checkpoint that the snapshot (query_snap, its text) does not see.
 */
void
MvSsiCheckLoggedWriters(Oid sourceid, const char *changelog, XLogRecPtr checkpoint_lsn,
						const char *query_snap, Snapshot snap)
{
	Relation	rel;
	SPIPlanPtr	plan;

	if (!IsolationIsSerializable() || snap == NULL)
		return;
	plan = SPI_prepare(psprintf("SELECT DISTINCT s._mvinc_xid::text FROM %s s "
								"WHERE s._mvinc_lsn > '%X/%X' "
								"AND NOT pg_visible_in_snapshot(s._mvinc_xid, '%s'::pg_snapshot)",
								changelog, LSN_FORMAT_ARGS(checkpoint_lsn), query_snap),
					   0, NULL);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the writers of the change log");
	rel = relation_open(sourceid, AccessShareLock);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		FullTransactionId fxid = FullTransactionIdFromU64(strtou64(v, NULL, 10));

		conflict_out_if_unseen(rel, XidFromFullTransactionId(fxid), snap);
	}
	relation_close(rel, NoLock);
}
