/*-------------------------------------------------------------------------
 * mv_recluster.c
 *	  mvinc.recluster(view): rewrite an incremental view's storage in its
 *	  cluster order (mvinc.cluster_by, else the group keys) while readers
 *	  go on reading it; and the validation of mvinc.cluster_by.
 *
 *	  PostgreSQL's CLUSTER holds ACCESS EXCLUSIVE on the table for the
 *	  whole rewrite.  Here the rewrite runs under the view's refresh lock
 *	  (refreshes and compactions wait, so the storage's content cannot
 *	  change) and SHARE UPDATE EXCLUSIVE on the storage (VACUUM waits;
 *	  readers do not): the rows are copied into a transient heap by the
 *	  heap AM's copy-for-cluster (which keeps each version's xmin and xmax
 *	  and the versions that running snapshots may still see, so a reader
 *	  whose snapshot predates the recluster reads the same rows after it),
 *	  sorted by a btree index on the cluster columns; the storage's indexes
 *	  are built on the transient heap.  Only then does the recluster take
 *	  ACCESS EXCLUSIVE, briefly, to exchange the files of the storage, its
 *	  TOAST table and its indexes with the transient ones (pg_class rows of
 *	  the storage keep their oids: plans, the catalog and grants stay), and
 *	  drops the transient relations, which now hold the old files.
 *
 *	  The swap lock is never waited for at length (a queued ACCESS
 *	  EXCLUSIVE request makes every new reader wait behind the longest
 *	  holder): it is tried without waiting, and now and then with a wait in
 *	  line of SWAP_QUEUE_MS, doubled each time up to SWAP_QUEUE_MAX_MS (so
 *	  that a steady stream of overlapping readers, each holding its lock
 *	  until its transaction ends, cannot starve it: a first version waited
 *	  50 ms each time and starved for a minute under REPEATABLE READ
 *	  readers of 100 ms), until mvinc.recluster_swap_timeout; then the
 *	  recluster fails, as
 *	  it does at once when a holder waits for the view's refresh lock, which
 *	  the recluster holds (a deadlock).
 *
 *	  The copy runs in a subtransaction and is retried (RECLUSTER_COPY_TRIES)
 *	  when a TOAST value is missing: readers prune TOAST pages with their own
 *	  horizon, which may pass the copy's OldestXmin, so the values of a row
 *	  version the copy still takes for recently dead can go meanwhile (CLUSTER
 *	  holds ACCESS EXCLUSIVE on the TOAST table to prevent it; we cannot).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/multixact.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/toast_internals.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/cluster.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "storage/proc.h"
#include "storage/sinvaladt.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "mv/mv.h"

/* mvinc.recluster_swap_timeout: how long the swap tries for its lock */
int			mvinc_recluster_swap_timeout = 60000;

/* The swap's first and longest waits in line for its lock (readers wait behind) */
#define SWAP_QUEUE_MS 50
#define SWAP_QUEUE_MAX_MS 1000
/* Tries without waiting between two waits in line, 20 ms apart */
#define SWAP_TRIES_PER_QUEUE 10
/* Copies tried before a missing TOAST value is an error */
#define RECLUSTER_COPY_TRIES 3

/* A storage index and its copy on the transient heap */
typedef struct IndexPair
{
	Oid			old_index;
	Oid			new_index;
} IndexPair;

/* The view column named name, or NULL */
static MvColumn *
view_column(Oid viewid, MvDef *def, const char *name)
{
	ListCell   *lc;

	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);
		char	   *attname = get_attname(viewid, foreach_current_index(lc) + 1, true);

		if (attname && strcmp(attname, name) == 0)
			return col;
	}
	return NULL;
}

/*
 * The storage columns (physical names) that mvinc.cluster_by = cluster_by
 * names, in order; refuses what cannot order the storage.  NIL for NULL.
 */
List *
MvClusterColumns(Oid viewid, MvDef *def, const char *cluster_by)
{
	List	   *names;
	List	   *physnames = NIL;
	ListCell   *lc;

	if (cluster_by == NULL)
		return NIL;
	if (!SplitIdentifierString(pstrdup(cluster_by), ',', &names) || names == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"mvinc.cluster_by\": \"%s\"", cluster_by),
				 errdetail("It must be a comma-separated list of the view's column names."),
				 errhint("For example: mvinc.cluster_by = 'region, customer_id'.")));
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		MvColumn   *col = view_column(viewid, def, name);

		if (col == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of option \"mvinc.cluster_by\" is not a column of materialized view \"%s\"",
							name, get_rel_name(viewid)),
					 errhint("Name columns of the view, as its column list or select list names them.")));
		if (col->role != MV_COL_GROUP && col->role != MV_COL_PLAIN)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("option \"mvinc.cluster_by\" cannot name column \"%s\" of materialized view \"%s\"",
							name, get_rel_name(viewid)),
					 errdetail(col->role == MV_COL_AGG ?
							   "It is an aggregate's result, which every refresh may change." :
							   "It is computed when the view is read, not stored."),
					 errhint("Name the view's group keys (its GROUP BY columns), or the columns of a view without aggregates.")));
		physnames = lappend(physnames, col->physname);
	}
	return physnames;
}

/* The view's mvinc.cluster_by setting from the catalog, or NULL */
static char *
catalog_cluster_by(Oid viewid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};
	char	   *result = NULL;
	MemoryContext outer = CurrentMemoryContext;

	MvSpiConnect();
	if (SPI_execute_with_args("SELECT cluster_by FROM mvinc.mv_view WHERE view = $1::pg_catalog.regclass",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the cluster order of materialized view %u", viewid);
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v)
			result = MemoryContextStrdup(outer, v);
	}
	MvSpiFinish();
	return result;
}

/*
 * Is index one a recluster added for mvinc.cluster_by?  (Named after the
 * storage with the label "cluster": mv_<oid>_cluster, _cluster1, ...)
 */
static bool
is_cluster_index(Relation storage, Oid index)
{
	char	   *prefix = psprintf("%s_cluster", RelationGetRelationName(storage));
	char	   *name = get_rel_name(index);

	return name != NULL && get_rel_relkind(index) == RELKIND_INDEX &&
		strncmp(name, prefix, strlen(prefix)) == 0;
}

/* Indexes a recluster added for another cluster order than keep's */
static List *
stale_cluster_indexes(Relation storage, Oid keep)
{
	List	   *stale = NIL;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(storage))
	{
		if (lfirst_oid(lc) != keep && is_cluster_index(storage, lfirst_oid(lc)))
			stale = lappend_oid(stale, lfirst_oid(lc));
	}
	return stale;
}

/* ALTER MATERIALIZED VIEW .. SET / RESET (mvinc.cluster_by) */
void
MvSetClusterBy(Oid viewid, const char *cluster_by)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	/* (the next recluster writes the new order and drops an old index) */
	(void) MvClusterColumns(viewid, MvDefForView(viewid), cluster_by);
	values[0] = ObjectIdGetDatum(viewid);
	values[1] = cluster_by ? CStringGetTextDatum(cluster_by) : (Datum) 0;
	nulls[1] = cluster_by ? ' ' : 'n';
	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET cluster_by = $2 WHERE view = $1::pg_catalog.regclass",
							  2, types, values, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not set the cluster order of materialized view %u", viewid);
	MvSpiFinish();
}

/*
 * A valid btree index of the storage whose leading key columns are the
 * columns attnums, in order (no expressions, no predicate), or InvalidOid.
 */
static Oid
find_order_index(Relation storage, List *attnums)
{
	List	   *indexes = RelationGetIndexList(storage);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool		match = index->rd_rel->relam == BTREE_AM_OID && form->indisvalid &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			list_length(attnums) <= form->indnkeyatts;
		ListCell   *la;

		foreach(la, attnums)
		{
			if (!match)
				break;
			match = form->indkey.values[foreach_current_index(la)] == lfirst_int(la) &&
				(index->rd_indoption[foreach_current_index(la)] & INDOPTION_DESC) == 0;
		}
		index_close(index, AccessShareLock);
		if (match)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/*
 * The index whose order the storage is rewritten in: the one on the
 * cluster_by columns (created now, kept for later range reads, when there
 * is none), else the unique index on the group keys (or row identity);
 * InvalidOid when the storage has no key (one row).
 */
static Oid
order_index(Oid viewid, MvDef *def, Oid storage_oid)
{
	List	   *physnames = MvClusterColumns(viewid, def, catalog_cluster_by(viewid));
	List	   *attnums = NIL;
	Relation	storage;
	Oid			index;
	ListCell   *lc;
	StringInfoData sql;

	storage = table_open(storage_oid, AccessShareLock);
	if (physnames == NIL)
	{
		foreach(lc, def->columns)
		{
			MvColumn   *col = lfirst(lc);

			if (col->role == MV_COL_GROUP || col->role == MV_COL_ROWID)
				physnames = lappend(physnames, col->physname);
		}
	}
	foreach(lc, physnames)
		attnums = lappend_int(attnums, get_attnum(storage_oid, lfirst(lc)));
	index = attnums ? find_order_index(storage, attnums) : InvalidOid;
	table_close(storage, NoLock);
	if (attnums == NIL || OidIsValid(index))
		return index;

	/*
	 * An index on the cluster_by columns: the sort's and range reads' (one
	 * made for another order goes at the swap, under its lock).
	 */
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE INDEX %s ON mvinc.%s (",
					 quote_identifier(ChooseRelationName(get_rel_name(storage_oid), NULL, "cluster",
														 MvincSchemaOid(), false)),
					 quote_identifier(get_rel_name(storage_oid)));
	foreach(lc, physnames)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(lfirst(lc)));
	appendStringInfoChar(&sql, ')');
	MvSpiConnect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the cluster index: %s", sql.data);
	MvSpiFinish();
	CommandCounterIncrement();
	storage = table_open(storage_oid, AccessShareLock);
	index = find_order_index(storage, attnums);
	table_close(storage, NoLock);
	if (!OidIsValid(index))
		elog(ERROR, "cluster index of storage %u was not created", storage_oid);
	return index;
}

/*
 * Copy the storage into the transient heap, in index order; the freeze
 * cutoffs the copy used come back in *frozen_xid, *cutoff_multi.  Returns
 * the rows copied that no snapshot has seen deleted.
 */
static double
copy_rows(Relation old_heap, Relation new_heap, Oid index_oid,
		  TransactionId *frozen_xid, MultiXactId *cutoff_multi)
{
	Relation	index = OidIsValid(index_oid) ? index_open(index_oid, AccessShareLock) : NULL;
	TransactionId oldest_xmin;
	MultiXactId oldest_mxact;
	double		num_tuples = 0,
				tups_vacuumed = 0,
				tups_recently_dead = 0;
	bool		use_sort;

	/*
	 * Swapping the TOAST tables by content (as CLUSTER does) keeps the
	 * storage's TOAST table's oid, so the copied rows' TOAST pointers must
	 * name it.
	 */
	if (OidIsValid(old_heap->rd_rel->reltoastrelid) != OidIsValid(new_heap->rd_rel->reltoastrelid))
		elog(ERROR, "storage %u and its copy differ in having a TOAST table",
			 RelationGetRelid(old_heap));
	new_heap->rd_toastoid = old_heap->rd_rel->reltoastrelid;

	/* Rewriting everything anyway: freeze what every snapshot sees */
	vacuum_set_xid_limits(old_heap, 0, 0, 0, 0, &oldest_xmin, &oldest_mxact,
						  frozen_xid, cutoff_multi);
	if (TransactionIdIsValid(old_heap->rd_rel->relfrozenxid) &&
		TransactionIdPrecedes(*frozen_xid, old_heap->rd_rel->relfrozenxid))
		*frozen_xid = old_heap->rd_rel->relfrozenxid;
	if (MultiXactIdIsValid(old_heap->rd_rel->relminmxid) &&
		MultiXactIdPrecedes(*cutoff_multi, old_heap->rd_rel->relminmxid))
		*cutoff_multi = old_heap->rd_rel->relminmxid;

	use_sort = index != NULL && plan_cluster_use_sort(RelationGetRelid(old_heap), index_oid);
	table_relation_copy_for_cluster(old_heap, new_heap, index, use_sort, oldest_xmin,
									frozen_xid, cutoff_multi, &num_tuples,
									&tups_vacuumed, &tups_recently_dead);
	new_heap->rd_toastoid = InvalidOid;
	if (index)
		index_close(index, NoLock);
	return num_tuples - tups_recently_dead;
}

/*
 * Run fn(arg) in an internal subtransaction: kept when it succeeds (NULL
 * comes back), rolled back when it fails, with its error returned for the
 * caller to handle or rethrow.
 */
static ErrorData *
try_in_subtransaction(void (*fn) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}

/* One copy of the storage into a new transient heap */
typedef struct CopyTry
{
	MemoryContext cxt;			/* the try's (the rewrite's and sort's) */
	Relation	old_heap;
	Oid			index_oid;
	Oid			new_oid;		/* out: the transient heap */
	double		rows;			/* out: rows copied no snapshot saw deleted */
	TransactionId frozen_xid;	/* out: its freeze cutoffs */
	MultiXactId cutoff_multi;
} CopyTry;

static void
copy_once(void *arg)
{
	CopyTry    *c = arg;
	Relation	new_heap;
	MemoryContext old = MemoryContextSwitchTo(c->cxt);

	c->new_oid = make_new_heap(RelationGetRelid(c->old_heap), c->old_heap->rd_rel->reltablespace,
							   c->old_heap->rd_rel->relam, c->old_heap->rd_rel->relpersistence,
							   ShareUpdateExclusiveLock);
	new_heap = table_open(c->new_oid, AccessExclusiveLock);
	c->rows = copy_rows(c->old_heap, new_heap, c->index_oid, &c->frozen_xid, &c->cutoff_multi);
	table_close(new_heap, NoLock);
	CommandCounterIncrement();
	MemoryContextSwitchTo(old);
}

/*
 * A transient heap holding the storage's rows in index order; the copy
 * is tried again when a TOAST value went missing under it.
 */
static void
copy_storage(CopyTry *c)
{
	for (int tries = 1;; tries++)
	{
		ErrorData  *edata;

		c->cxt = AllocSetContextCreate(CurrentMemoryContext, "mvinc recluster copy",
									   ALLOCSET_DEFAULT_SIZES);
		edata = try_in_subtransaction(copy_once, c);
		MemoryContextDelete(c->cxt);
		if (edata == NULL)
			return;
		if (edata->sqlerrcode != ERRCODE_DATA_CORRUPTED || tries >= RECLUSTER_COPY_TRIES ||
			!OidIsValid(c->old_heap->rd_rel->reltoastrelid))
			ReThrowError(edata);
		ereport(DEBUG1,
				(errmsg("recluster of \"%s\" copies again: %s",
						RelationGetRelationName(c->old_heap), edata->message)));
		FreeErrorData(edata);
	}
}

/* Give the transient heap a copy of every index of the storage but skip, built */
static List *
build_indexes(Relation old_heap, Relation new_heap, List *skip)
{
	List	   *pairs = NIL;
	List	   *indexes = RelationGetIndexList(old_heap);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			old_index = lfirst_oid(lc);
		IndexPair  *pair;
		Relation	index;

		if (list_member_oid(skip, old_index))
			continue;
		pair = palloc(sizeof(IndexPair));

		pair->old_index = old_index;
		pair->new_index = index_concurrently_create_copy(new_heap, old_index,
														 get_rel_tablespace(old_index),
														 psprintf("pg_temp_%u", old_index));
		CommandCounterIncrement();
		index = index_open(pair->new_index, AccessExclusiveLock);
		/* not a concurrent build: recently dead rows get entries too */
		index_build(new_heap, index, BuildIndexInfo(index), false, true);
		index_close(index, NoLock);
		CommandCounterIncrement();
		pairs = lappend(pairs, pair);
	}
	return pairs;
}

/*
 * Exchange the files of r1 (the storage's) and r2 (the transient copy's)
 * in pg_class, with their sizes; r1 gets the copy's freeze cutoffs.  Both
 * are plain, unmapped relations of one access method.
 */
static void
swap_files(Oid r1, Oid r2, TransactionId frozen_xid, MultiXactId cutoff_multi)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup1 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r1));
	HeapTuple	tup2 = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(r2));
	Form_pg_class f1,
				f2;
	Relation	rel1,
				rel2;
	CatalogIndexState indstate;

	if (!HeapTupleIsValid(tup1) || !HeapTupleIsValid(tup2))
		elog(ERROR, "cache lookup failed for relation %u or %u", r1, r2);
	f1 = (Form_pg_class) GETSTRUCT(tup1);
	f2 = (Form_pg_class) GETSTRUCT(tup2);
	if (!OidIsValid(f1->relfilenode) || !OidIsValid(f2->relfilenode) ||
		f1->relam != f2->relam || f1->relpersistence != f2->relpersistence)
		elog(ERROR, "cannot swap the files of relations %u and %u", r1, r2);

#define SWAP_FIELD(type, field) \
	do { type tmp_ = f1->field; f1->field = f2->field; f2->field = tmp_; } while (0)
	SWAP_FIELD(Oid, relfilenode);
	SWAP_FIELD(Oid, reltablespace);
	SWAP_FIELD(int32, relpages);
	SWAP_FIELD(float4, reltuples);
	SWAP_FIELD(int32, relallvisible);
#undef SWAP_FIELD
	if (f1->relkind != RELKIND_INDEX)
	{
		f1->relfrozenxid = frozen_xid;
		f1->relminmxid = cutoff_multi;
	}
	indstate = CatalogOpenIndexes(pg_class);
	CatalogTupleUpdateWithInfo(pg_class, &tup1->t_self, tup1, indstate);
	CatalogTupleUpdateWithInfo(pg_class, &tup2->t_self, tup2, indstate);
	CatalogCloseIndexes(indstate);
	InvokeObjectPostAlterHookArg(RelationRelationId, r1, 0, InvalidOid, true);
	InvokeObjectPostAlterHookArg(RelationRelationId, r2, 0, InvalidOid, true);

	/* r1's file is new in this transaction now (as CLUSTER records it) */
	rel1 = relation_open(r1, NoLock);
	rel2 = relation_open(r2, NoLock);
	rel2->rd_createSubid = rel1->rd_createSubid;
	rel2->rd_newRelfilenodeSubid = rel1->rd_newRelfilenodeSubid;
	rel2->rd_firstRelfilenodeSubid = rel1->rd_firstRelfilenodeSubid;
	RelationAssumeNewRelfilenode(rel1);
	relation_close(rel1, NoLock);
	relation_close(rel2, NoLock);

	heap_freetuple(tup1);
	heap_freetuple(tup2);
	table_close(pg_class, RowExclusiveLock);
	/* both relcache entries' smgr links go stale at the next CCI */
	RelationCloseSmgrByOid(r1);
	RelationCloseSmgrByOid(r2);
}

/*
 * Refuse when this session has the storage open in a running query (a
 * cursor, an outer query of the call): its scan would go on in the new
 * files at the old positions.  storage is open once, by the caller.
 */
static void
check_not_in_use(Relation storage, Oid viewid)
{
	if (storage->rd_refcnt != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot recluster materialized view \"%s\" because it is being read by active queries in this session",
						get_rel_name(viewid)),
				 errhint("Close the cursors that read it, and call mvinc.recluster in a statement that does not read it.")));
}

/*
 * Does a transaction holding a lock on the storage wait for a lock on the
 * view (the refresh lock the recluster holds)?  Then waiting for it is a
 * deadlock.  (Its wait is read without the lock manager's locks: a hint,
 * enough to give up early.)
 */
static bool
holder_waits_for_view(Oid storage_oid, Oid viewid)
{
	LOCKTAG		tag;
	VirtualTransactionId *holders;

	bool		waits = false;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, storage_oid);
	holders = GetLockConflicts(&tag, AccessExclusiveLock, NULL);
	for (int i = 0; !waits && VirtualTransactionIdIsValid(holders[i]); i++)
	{
		volatile PGPROC *proc = BackendIdGetProc(holders[i].backendId);
		LOCK	   *wait = proc ? proc->waitLock : NULL;

		/* (still the holder's transaction: its backend may have moved on) */
		waits = wait != NULL && proc->lxid == holders[i].localTransactionId &&
			wait->tag.locktag_type == LOCKTAG_RELATION &&
			wait->tag.locktag_field1 == MyDatabaseId && wait->tag.locktag_field2 == viewid;
	}
	pfree(holders);
	return waits;
}

/* A wait in line for ACCESS EXCLUSIVE on relid, at most timeout_ms long */
typedef struct LockTry
{
	Oid			relid;
	int			timeout_ms;
} LockTry;

static void
lock_once(void *arg)
{
	LockTry    *l = arg;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("lock_timeout", psprintf("%d", l->timeout_ms), PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	LockRelationOid(l->relid, AccessExclusiveLock);
	AtEOXact_GUC(true, nestlevel);
}

/* Did the wait in line get the lock? (it goes to the parent transaction) */
static bool
lock_waiting_at_most(Oid relid, int timeout_ms)
{
	LockTry		l = {relid, timeout_ms};
	ErrorData  *edata = try_in_subtransaction(lock_once, &l);

	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/*
 * ACCESS EXCLUSIVE on the storage for the swap, never making readers wait
 * long behind it (see the file's header).
 */
static void
lock_for_swap(Oid storage_oid, Oid viewid)
{
	TimestampTz start = GetCurrentTimestamp();
	int			queue_ms = SWAP_QUEUE_MS;

	for (int tries = 1;; tries++)
	{
		if (ConditionalLockRelationOid(storage_oid, AccessExclusiveLock))
			return;
		if (holder_waits_for_view(storage_oid, viewid))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
					 errmsg("could not swap the storage of materialized view \"%s\": a transaction reading it waits for this recluster",
							get_rel_name(viewid)),
					 errdetail("The transaction read the view, then asked for its refresh lock, which the recluster holds."),
					 errhint("Run mvinc.recluster again when that transaction has ended.")));
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), mvinc_recluster_swap_timeout))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not swap the storage of materialized view \"%s\": it was being read for longer than \"mvinc.recluster_swap_timeout\"",
							get_rel_name(viewid)),
					 errdetail("The swap takes an ACCESS EXCLUSIVE lock for a moment and does not make readers wait for long transactions."),
					 errhint("Run mvinc.recluster again when no long transaction reads the view, or raise \"mvinc.recluster_swap_timeout\".")));
		if (tries % SWAP_TRIES_PER_QUEUE == 0)
		{
			if (lock_waiting_at_most(storage_oid, queue_ms))
				return;
			queue_ms = Min(queue_ms * 2, SWAP_QUEUE_MAX_MS);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 20,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Exchange the storage's files with the transient heap's, then drop it */
static void
swap_storage(Oid viewid, Oid storage_oid, Oid new_oid, List *pairs, List *stale,
			 TransactionId frozen_xid, MultiXactId cutoff_multi)
{
	Relation	storage;
	Oid			old_toast,
				new_toast;
	ListCell   *lc;
	ObjectAddress transient;

	lock_for_swap(storage_oid, viewid);
	storage = table_open(storage_oid, NoLock);
	check_not_in_use(storage, viewid);
	old_toast = storage->rd_rel->reltoastrelid;
	new_toast = InvalidOid;
	if (OidIsValid(old_toast))
	{
		Relation	transient_rel = table_open(new_oid, NoLock);

		new_toast = transient_rel->rd_rel->reltoastrelid;
		table_close(transient_rel, NoLock);
	}
	/* readers' SIREAD locks on pages and rows of the old files */
	TransferPredicateLocksToHeapRelation(storage);
	foreach(lc, pairs)
	{
		IndexPair  *pair = lfirst(lc);
		Relation	index = index_open(pair->old_index, AccessExclusiveLock);

		TransferPredicateLocksToHeapRelation(index);
		index_close(index, NoLock);
	}
	table_close(storage, NoLock);

	swap_files(storage_oid, new_oid, frozen_xid, cutoff_multi);
	if (OidIsValid(old_toast))
	{
		LockRelationOid(old_toast, AccessExclusiveLock);
		swap_files(old_toast, new_toast, frozen_xid, cutoff_multi);
		swap_files(toast_get_valid_index(old_toast, AccessExclusiveLock),
				   toast_get_valid_index(new_toast, AccessExclusiveLock),
				   InvalidTransactionId, InvalidMultiXactId);
	}
	foreach(lc, pairs)
	{
		IndexPair  *pair = lfirst(lc);

		swap_files(pair->old_index, pair->new_index, InvalidTransactionId, InvalidMultiXactId);
	}
	CommandCounterIncrement();

	/* indexes of an earlier cluster order: not copied, not kept */
	foreach(lc, stale)
	{
		ObjectAddress index;

		ObjectAddressSet(index, RelationRelationId, lfirst_oid(lc));
		performDeletion(&index, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}

	/* the transient heap, its indexes and TOAST table now hold the old files */
	ObjectAddressSet(transient, RelationRelationId, new_oid);
	performDeletion(&transient, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
}

/* Rewrite the storage of viewid (the refresh lock held); rows written */
static int64
recluster_storage(Oid viewid, MvCatalog *cat)
{
	MvDef	   *def = MvDefForView(viewid);
	Oid			storage_oid = cat->storage_oid;
	Oid			index_oid;
	Relation	old_heap,
				new_heap;
	CopyTry		copy = {0};
	List	   *pairs;
	List	   *stale;

	index_oid = order_index(viewid, def, storage_oid);

	/* VACUUM (and autovacuum) of the storage or its TOAST table waits */
	old_heap = table_open(storage_oid, ShareUpdateExclusiveLock);
	if (OidIsValid(old_heap->rd_rel->reltoastrelid))
		LockRelationOid(old_heap->rd_rel->reltoastrelid, ShareUpdateExclusiveLock);

	check_not_in_use(old_heap, viewid);

	MvProgressSetPhase(MV_PHASE_REWRITE, (int64) Max(old_heap->rd_rel->reltuples, 0));
	copy.old_heap = old_heap;
	copy.index_oid = index_oid;
	copy_storage(&copy);
	MvProgressSetRows((int64) copy.rows);
	new_heap = table_open(copy.new_oid, AccessExclusiveLock);

	stale = stale_cluster_indexes(old_heap, index_oid);
	MvProgressSetPhase(MV_PHASE_BUILD_INDEXES,
					   list_length(RelationGetIndexList(old_heap)) - list_length(stale));
	pairs = build_indexes(old_heap, new_heap, stale);
	table_close(new_heap, NoLock);
	table_close(old_heap, NoLock);

	MvProgressSetPhase(MV_PHASE_SWAP, -1);
	swap_storage(viewid, storage_oid, copy.new_oid, pairs, stale, copy.frozen_xid, copy.cutoff_multi);
	return (int64) copy.rows;
}

/* mvinc.recluster(view): fold append rows, rewrite the storage in order */
int64
MvRecluster(Oid viewid)
{
	MvCatalog  *cat;
	MvInternal	save;
	int64		rows = 0;

	MvRequireReadCommitted(viewid, "recluster");
	MvProgressBegin(MV_PROGRESS_RECLUSTER, viewid);
	PG_TRY();
	{
		MvBecomeInternal(&save);
		/* refreshes and compactions wait: the storage's content stays */
		MvProgressSetPhase(MV_PHASE_WAIT_LOCK, -1);
		LockRelationOid(viewid, ExclusiveLock);
		MvProgressSetPhase(MV_PHASE_INITIALIZING, -1);
		cat = MvCatalogLookup(viewid, MV_LOOKUP_LATEST);
		if (cat == NULL || !cat->populated || !OidIsValid(cat->storage_oid))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("materialized view \"%s\" has not been populated", get_rel_name(viewid)),
					 errhint("Refresh it first: until then it has no storage to recluster.")));
		/* what an append refresh left beside the storage goes in first */
		(void) MvCompactLocked(viewid);
		CommandCounterIncrement();
		rows = recluster_storage(viewid, cat);
		MvEndInternal(&save);
	}
	PG_FINALLY();
	{
		MvProgressEnd();
	}
	PG_END_TRY();
	return rows;
}
