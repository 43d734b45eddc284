/*-------------------------------------------------------------------------
 * capture_retention.c
 *	  Consumers of change logs (mvinc.consumers) and retention.
 *
 *	  A change log whose source has consumers loses the rows with lsn <=
 *	  the smallest needed_lsn of its consumers (once every snapshot sees
 *	  the transactions that set them), deleted by the capture
 *	  worker 10000 per transaction, one such batch per change log per pass
 *	  so that capture goes on in between (a refresh waiting for capture
 *	  must not wait for a whole retention); mvinc.tracked.retained_from records the
 *	  bound first, so a consumer can tell that rows it needs are gone.  A
 *	  source with no consumer (tracked only through mvinc.track) keeps every
 *	  row until it is untracked, and with mvinc.debug_keep_change_log on no
 *	  source loses any (evidence for mvinc.verify_view).  The same pass
 *	  untracks sources dropped in ways the utility hook does not see (DROP
 *	  SCHEMA ... CASCADE, DROP OWNED).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "mvinc.h"
#include "capture/capture.h"

/* Record that a consumer needs the rows of a source with lsn > needed_lsn */
void
MvincSetConsumer(Oid relid, const char *consumer, XLogRecPtr needed_lsn)
{
	int			spi_nest;
	Oid			argtypes[3] = {OIDOID, TEXTOID, PG_LSNOID};
	Datum		args[3] = {ObjectIdGetDatum(relid), CStringGetTextDatum(consumer),
	LSNGetDatum(needed_lsn)};

	if (!OidIsValid(MvincChangeLogRelid(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not tracked", get_rel_name(relid)),
				 errhint("Call mvinc.track first.")));
	spi_nest = MvincSpiConnect();
	if (SPI_execute_with_args("INSERT INTO mvinc.consumers (relid, consumer, needed_lsn) "
							  "VALUES ($1, $2, $3) ON CONFLICT (relid, consumer) "
							  "DO UPDATE SET needed_lsn = EXCLUDED.needed_lsn",
							  3, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record consumer");
	MvincSpiFinish(spi_nest);
}

/* Forget a consumer */
void
MvincDropConsumer(Oid relid, const char *consumer)
{
	int			spi_nest;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(relid), CStringGetTextDatum(consumer)};

	spi_nest = MvincSpiConnect();
	if (SPI_execute_with_args("DELETE FROM mvinc.consumers WHERE relid = $1 AND consumer = $2",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not drop consumer");
	MvincSpiFinish(spi_nest);
}

/*
 * What retention may remove of a source: a refresh moves its consumer's
 * needed_lsn, but a running snapshot that does not see that refresh still
 * sees the view's older checkpoint, and a read of the view under it (a
 * REPEATABLE READ transaction or a cursor that started before the
 * refresh) needs the change-log rows after that checkpoint.  (Deleted rows
 * would stay readable to such a snapshot, but reads take the change log's
 * rows in the latest snapshot, where captured rows newer than the reader's
 * snapshot are.)  So the rows removed are those below what the consumers
 * needed when every snapshot already saw it: each pass notes the
 * consumers' smallest needed_lsn and the newest transaction that wrote a
 * consumer row (a candidate); once that transaction is below the xmin
 * horizon, the candidate's needed_lsn is safe.  Refreshes that keep
 * coming while transactions overlap them move the bound a horizon behind,
 * never hold it (as VACUUM's); when no consumer row is newer than the
 * horizon, the current needed_lsn is safe at once.  Kept in the worker's
 * memory: a new worker starts again from its first pass.
 */
typedef struct RetentionBound
{
	Oid			relid;
	XLogRecPtr	safe;			/* rows with lsn <= this may go */
	bool		has_candidate;
	XLogRecPtr	candidate_lsn;
	TransactionId candidate_xid;
} RetentionBound;

static List *retention_bounds = NIL;	/* in TopMemoryContext */

static RetentionBound *
bound_for(Oid relid)
{
	ListCell   *lc;
	RetentionBound *b;
	MemoryContext old;

	foreach(lc, retention_bounds)
	{
		b = lfirst(lc);
		if (b->relid == relid)
			return b;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	b = palloc0(sizeof(RetentionBound));
	b->relid = relid;
	retention_bounds = lappend(retention_bounds, b);
	MemoryContextSwitchTo(old);
	return b;
}

/*
 * The newest transaction that wrote a consumer row of each source
 * (relids[i] -> newest[i], transaction ids kept in an OID list: both are
 * 32 bits), InvalidTransactionId when all are frozen
 */
static void
newest_consumer_writers(List **relids, List **newest)
{
	*relids = NIL;
	*newest = NIL;
	if (SPI_execute("SELECT relid, xmin FROM mvinc.consumers", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read mvinc.consumers");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		n1,
					n2;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &n1));
		TransactionId xmin = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i],
																 SPI_tuptable->tupdesc, 2, &n2));
		ListCell   *lr,
				   *ln;
		bool		found = false;

		if (!TransactionIdIsNormal(xmin))
			xmin = InvalidTransactionId;
		forboth(lr, *relids, ln, *newest)
		{
			if (lfirst_oid(lr) != relid)
				continue;
			if (TransactionIdIsValid(xmin) &&
				(!TransactionIdIsValid(lfirst_oid(ln)) || TransactionIdFollows(xmin, lfirst_oid(ln))))
				lfirst_oid(ln) = xmin;
			found = true;
		}
		if (!found)
		{
			*relids = lappend_oid(*relids, relid);
			*newest = lappend_oid(*newest, (Oid) xmin);
		}
	}
}

/* The bound of this pass for a source whose consumers now need needed */
static XLogRecPtr
retention_bound(Oid relid, XLogRecPtr needed, List *relids, List *newest,
				TransactionId horizon)
{
	RetentionBound *b = bound_for(relid);
	TransactionId writer = InvalidTransactionId;
	ListCell   *lr,
			   *ln;

	forboth(lr, relids, ln, newest)
		if (lfirst_oid(lr) == relid)
			writer = lfirst_oid(ln);
	if (!TransactionIdIsValid(writer) || TransactionIdPrecedes(writer, horizon))
	{
		/* every snapshot sees the consumers as they are */
		b->safe = needed;
		b->has_candidate = false;
		return b->safe;
	}
	if (b->has_candidate && TransactionIdPrecedes(b->candidate_xid, horizon))
	{
		if (b->candidate_lsn > b->safe)
			b->safe = b->candidate_lsn;
		b->has_candidate = false;
	}
	if (!b->has_candidate)
	{
		b->has_candidate = true;
		b->candidate_lsn = needed;
		b->candidate_xid = writer;
	}
	/* (never past what the consumers need now) */
	return Min(b->safe, needed);
}

/*
 * Worker: delete change log rows no consumer needs, one transaction of at
 * most 10000 per change log (true when some log may have more), and untrack sources that no longer exist (dropped by DROP SCHEMA CASCADE
 * or DROP OWNED, which the utility hook does not see).
 */
bool
MvincRetentionPass(void)
{
	bool		more = false;
	int			spi_nest;
	List	   *work = NIL;
	List	   *consumer_relids;
	List	   *consumer_writers;
	TransactionId horizon;
	ListCell   *lc;
	MemoryContext pass_cxt = AllocSetContextCreate(TopMemoryContext, "mvinc retention",
												   ALLOCSET_SMALL_SIZES);

	/* deletions must be seen as running by others (capture_worker.c) */
	MvincWorkerLeaveDecoding();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	spi_nest = MvincSpiConnect();
	{
		Oid			consumers = get_relname_relid("consumers", get_namespace_oid(MVINC_SCHEMA, false));
		Relation	rel = table_open(consumers, AccessShareLock);
		MemoryContext old = MemoryContextSwitchTo(pass_cxt);

		horizon = GetOldestNonRemovableTransactionId(rel);
		table_close(rel, AccessShareLock);
		newest_consumer_writers(&consumer_relids, &consumer_writers);
		MemoryContextSwitchTo(old);
	}
	if (SPI_execute("SELECT t.relid, t.changelog, "
					"       (SELECT min(c.needed_lsn) FROM mvinc.consumers c WHERE c.relid = t.relid), "
					"       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class r WHERE r.oid = t.relid) "
					"FROM mvinc.tracked t", true, 0) == SPI_OK_SELECT)
	{
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	td = SPI_tuptable->tupdesc;
			bool		n1,
						n2,
						n3,
						n4;
			Oid			relid = DatumGetObjectId(SPI_getbinval(tup, td, 1, &n1));
			Oid			logid = DatumGetObjectId(SPI_getbinval(tup, td, 2, &n2));
			Datum		needed = SPI_getbinval(tup, td, 3, &n3);
			bool		orphan = DatumGetBool(SPI_getbinval(tup, td, 4, &n4));
			MemoryContext old = MemoryContextSwitchTo(pass_cxt);

			if (orphan)
				work = lappend(work, list_make3_oid(relid, logid, InvalidOid));
			else if (!n3 && !mvinc_debug_keep_change_log)
			{
				XLogRecPtr	bound = retention_bound(relid, DatumGetLSN(needed), consumer_relids,
													consumer_writers, horizon);

				if (bound != InvalidXLogRecPtr)
				{
					XLogRecPtr *p = palloc(sizeof(XLogRecPtr));

					*p = bound;
					work = lappend(work, list_make2(list_make2_oid(relid, logid), p));
				}
			}
			MemoryContextSwitchTo(old);
		}
	}
	MvincSpiFinish(spi_nest);
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, work)
	{
		List	   *item = lfirst(lc);

		if (list_length(item) == 3)
		{
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			MvincDropTracking(linitial_oid(item), lsecond_oid(item));
			PopActiveSnapshot();
			CommitTransactionCommand();
		}
		else
		{
			List	   *ids = linitial(item);
			XLogRecPtr	needed = *(XLogRecPtr *) lsecond(item);
			Oid			relid = linitial_oid(ids);
			Oid			logid = lsecond_oid(ids);
			char	   *logname;
			StringInfoData sql;
			uint64		deleted = 0;
			Oid			argtypes[2] = {OIDOID, PG_LSNOID};
			Datum		args[2] = {ObjectIdGetDatum(relid), LSNGetDatum(needed)};

			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			logname = get_rel_name(logid);
			if (logname != NULL)
			{
				spi_nest = MvincSpiConnect();
				/* Publish the bound before any row below it goes */
				SPI_execute_with_args("UPDATE mvinc.tracked SET retained_from = $2 "
									  "WHERE relid = $1 AND retained_from < $2",
									  2, argtypes, args, NULL, false, 0);

				/*
				 * The change log goes with its source's DROP TABLE: lock it
				 * (after the row above, as before) and skip it if a DROP
				 * committed since it was named (the DELETE failed the worker)
				 */
				LockRelationOid(logid, RowExclusiveLock);
				if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(logid)))
				{
					MvincSpiFinish(spi_nest);
					PopActiveSnapshot();
					CommitTransactionCommand();
					continue;
				}
				initStringInfo(&sql);
				appendStringInfo(&sql,
								 "DELETE FROM %s WHERE ctid = ANY (ARRAY("
								 "SELECT ctid FROM %s WHERE _mvinc_lsn <= $2 LIMIT 10000))",
								 quote_qualified_identifier(MVINC_SCHEMA, logname),
								 quote_qualified_identifier(MVINC_SCHEMA, logname));
				if (SPI_execute_with_args(sql.data, 2, argtypes, args, NULL, false, 0) == SPI_OK_DELETE)
					deleted = SPI_processed;
				MvincSpiFinish(spi_nest);
			}
			PopActiveSnapshot();
			CommitTransactionCommand();
			/* a full batch: there may be more, for the next pass */
			more |= (deleted == 10000);
			CHECK_FOR_INTERRUPTS();
		}
	}
	MemoryContextDelete(pass_cxt);
	return more;
}

/*
 * The capture slot had to be recreated: change log rows up to upto may be
 * missing.  Recorded as retention is, in retained_from, and the applied
 * position moves there.
 */
void
MvincMarkChangesLost(XLogRecPtr upto)
{
	int			spi_nest;
	Oid			argtypes[1] = {PG_LSNOID};
	Datum		args[1] = {LSNGetDatum(upto)};

	spi_nest = MvincSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.tracked SET retained_from = $1 WHERE retained_from < $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_execute_with_args("UPDATE mvinc.capture_progress SET applied_lsn = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record lost changes");
	MvincSpiFinish(spi_nest);
}
