/*-------------------------------------------------------------------------
 * mv.h
 *	  Interface of the mv subsystem: incremental materialized views.
 *
 *	  An incremental view is a real materialized view (relkind 'm', kept
 *	  empty but marked populated) plus a storage table mvinc.mv_<oid> that
 *	  holds its physical rows, plus one row in mvinc.mv_view.  Reads of the
 *	  view are redirected by the planner hook to the storage (when fresh) or
 *	  to the original query (live); see mv_read.c.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_MV_H
#define MVINC_MV_H

#include "access/xlogdefs.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* What a view materializes */
typedef enum MvKind
{
	MV_KIND_AGGREGATE,			/* GROUP BY and/or aggregates: state rows */
	MV_KIND_PROJECTION			/* filtered projection: one row per source row */
} MvKind;

/* Role of one physical column of the storage table */
typedef enum MvColRole
{
	MV_COL_GROUP,				/* group key (k<n>) */
	MV_COL_AGG,					/* aggregate state, bytea (s<n>) */
	MV_COL_PLAIN,				/* projected expression (c<n>) */
	MV_COL_COUNT,				/* hidden count(*) of the group */
	MV_COL_ROWID,				/* hidden source row identity column */
	MV_COL_EXPR					/* view column computed on read from its parts */
} MvColRole;

typedef struct MvColumn
{
	MvColRole	role;
	AttrNumber	attnum;			/* view column number, 0 when hidden */
	char	   *physname;		/* column of the storage table */
	Oid			typid;			/* logical type (result type for aggs) */
	int32		typmod;
	Oid			collation;
	Expr	   *expr;			/* over the source (varno 1); Aggref for aggs */
	Oid			aggfnoid;		/* MV_COL_AGG only */
	Oid			sourceid;		/* the source table (for deparsing expr) */
	AttrNumber	srcattnum;		/* MV_COL_ROWID only: source column */
	bool		derived_count;	/* MV_COL_AGG count(*): read _mvinc_count */
	bool		shared;			/* MV_COL_AGG: reads another column's state */
	List	   *parts;			/* MV_COL_EXPR: the key and aggregate columns
								 * its parameters MV_PART_PARAM + i stand for */
} MvColumn;

/* A validated view definition */
/* First parameter number of the parts of an expression column */
#define MV_PART_PARAM 10001

typedef struct MvDef
{
	MvKind		kind;
	Oid			sourceid;
	Query	   *query;
	Node	   *where;			/* WHERE over the source, or NULL */
	bool		has_group_by;
	List	   *columns;		/* MvColumn *, in storage column order */
	List	   *viewcols;		/* MvColumn * for view column 1..n, in order */
	bool		retractable;	/* every aggregate can retract (agg_apply) */
	Node	   *having;			/* HAVING over the view's own columns, or NULL */
} MvDef;

/* A catalog row of mvinc.mv_view */
typedef struct MvCatalog
{
	Oid			viewid;
	Oid			sourceid;
	MvKind		kind;
	char	   *storage_name;
	Oid			storage_oid;	/* InvalidOid when the table is missing */
	bool		populated;
	int32		source_generation;
	int32		built_generation;
	char	   *checkpoint_snapshot;	/* pg_snapshot text or NULL */
	XLogRecPtr	checkpoint_lsn;
	Oid			append_oid;		/* its append table, or InvalidOid */
	int64		append_rows;	/* state rows in the append table */
} MvCatalog;

/* Result of one refresh */
typedef struct MvRefreshResult
{
	const char *mode;
	int64		changes;
	XLogRecPtr	from_lsn;
	XLogRecPtr	to_lsn;
} MvRefreshResult;

/* mv_init.c */
extern int	mvinc_fresh_wait;

/* mvinc.read_path */
#define MV_READ_PATH_AUTO		0
#define MV_READ_PATH_LIVE		1
#define MV_READ_PATH_STALE_OK	2
extern int	mvinc_read_path_mode;
extern bool mvinc_direct_merge;
typedef struct MvInternal
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
} MvInternal;
extern void MvBecomeInternal(MvInternal *save);
extern void MvEndInternal(MvInternal *save);
extern void MvSpiConnect(void);
extern void MvSpiFinish(void);
extern void MvSpiOids(const char *sql, int nargs, Oid *args, bool read_only,
					  List **first, List **second);
extern bool MvincExtensionReady(void);
extern bool MvStartViewWorker(Oid viewid, const char *function, const char *type);
extern Oid	MvincSchemaOid(void);

/* mv_analyze.c */
extern MvDef *MvAnalyzeQuery(Query *query, const char *viewname, bool report);
extern MvDef *MvDefForView(Oid viewid);
extern void MvCheckReplicaIdentity(Oid relid, ReplicaIdentityStmt *ri);
extern MvDef *MvAnalyzeHistoryQuery(Query *query, const char *viewname);
extern Query *MvMatviewQuery(Relation rel);
extern bool MvQueryReadsChildren(Query *query, Oid sourceid);
extern bool MvTypeImageStable(Oid typid, int32 typmod, Oid collation);
extern bool MvViewReadsChildren(Oid viewid, Oid sourceid);
extern void MvRefuseChildrenAfterLock(Oid sourceid, bool reads_children);
extern void MvCheckOwnerCanRead(Oid viewid);
extern char *MvConsumerName(Oid viewid);
extern Oid	MvTypeCheckedDomain(Oid typid);
extern Oid	MvRelationCheckedDomain(Oid relid, AttrNumber *attnum);
extern bool mv_analyzing_create;

/* mv_catalog.c */
#define MV_LOOKUP_NEW		0	/* a new snapshot (read committed) */
#define MV_LOOKUP_LATEST	1	/* the latest snapshot (refresh, view locked) */
#define MV_LOOKUP_ACTIVE	2	/* the statement's snapshot (reads) */
extern MvCatalog *MvCatalogLookup(Oid viewid, int how);
extern bool MvIsIncrementalView(Oid relid);
extern bool MvIsHistoryView(Oid relid);
extern bool MvIsStorageTable(Oid relid);
extern bool MvIsSource(Oid relid);
extern List *MvViewsOfSource(Oid relid);
extern List *MvViewsOfSourceIn(Oid relid, int how);
extern void MvCatalogInsert(Oid viewid, MvDef *def, const char *definition,
							const char *cluster_by);
extern void MvCatalogSetCheckpoint(Oid viewid, const char *snapshot, XLogRecPtr lsn,
								   const char *mode, bool populated, int64 append_rows,
								   int64 changes, TimestampTz started);
extern void MvCatalogSetAppendRows(Oid viewid, int64 append_rows);
extern char *MvAppendTableName(const char *storage_name);
extern Oid	MvCreateStorage(Oid viewid, MvDef *def);
extern void MvCatalogSetStorage(Oid viewid, Oid storage_oid, const char *storage_name);
extern void MvForgetView(Oid viewid, Oid sourceid);
extern void MvCatalogMarkStale(Oid viewid);
extern char *MvTypeSql(Oid typid, int32 typmod);
extern void MvSyncStorageOwners(void);
extern char *MvCollationSql(Oid collid);
extern char *MvStorageColumnType(MvColumn *col);
extern char *MvStorageColumnTypeNullable(MvColumn *col);

/* mv_ssi.c */
extern void MvSsiLockSource(Oid sourceid, Snapshot snap);
extern void MvSsiCheckLoggedWriters(Oid sourceid, const char *changelog, XLogRecPtr checkpoint_lsn,
									const char *query_snap, Snapshot snap);

/* mv_capture.c */
extern XLogRecPtr MvInsertLsn(void);
extern Oid	MvTrack(Oid relid, bool full_old_rows);
extern bool MvTryTrack(Oid relid, bool full_old_rows);
extern void MvLockForTracking(Oid relid, bool full_old_rows);
extern Oid	MvChangeLogRelid(Oid relid);
extern void MvWaitForCapture(XLogRecPtr lsn);
extern bool MvTryWaitForCapture(XLogRecPtr lsn, int timeout_ms);
extern bool MvXactMayHaveWritten(Oid relid);
extern XLogRecPtr MvCaptureTarget(Oid relid, XLogRecPtr insert_lsn);
extern void MvOnCaptureTick(void (*tick) (void), bool (*wanted) (void));
extern void MvRequireCaptureWorker(bool error_if_none);
extern void MvAwaitCapture(void);
extern void MvReleaseSource(Oid sourceid);
extern bool MvXactModified(Oid relid);
extern void MvSetConsumer(Oid relid, const char *consumer, XLogRecPtr lsn);
extern void MvDropConsumer(Oid relid, const char *consumer);
extern void MvForgetDroppedSource(Oid relid);
extern XLogRecPtr MvRetainedFrom(Oid relid);
extern XLogRecPtr MvRetainedFromIn(Oid relid, Snapshot snapshot);

/* mv_state.c */
extern char *MvStateAggSql(MvColumn *col, const char *alias);
extern char *MvStateMergeSql(MvColumn *col, const char *left, const char *right);
extern char *MvStateCombineSql(MvColumn *col, const char *state);
extern char *MvStateFinalSql(MvColumn *col, const char *state);
extern char *MvStateCombineFinalSql(MvColumn *col, const char *a, const char *b, const char *c);
extern char *MvStateStoredFinalSql(MvColumn *col, const char *state);
extern char *MvStoredFinalName(MvColumn *col);
extern bool MvStateReadRaw(MvDef *def, MvColumn *col);
extern char *MvPartsColumnsSql(MvDef *def, bool finals);
extern char *MvPartsExprSql(MvDef *def, MvColumn *col);
extern char *MvStateRetractSql(MvColumn *col, const char *state, const char *alias,
							   bool ordered);
extern bool MvAggSupported(Oid aggfnoid, const char **why);
extern bool MvAggRetractable(Oid aggfnoid);

/* mv_refresh.c */
extern int	mvinc_refresh_depth;
extern MvRefreshResult MvRefresh(Oid viewid, bool full, bool initial);
extern void MvRefreshNoData(Oid viewid);
extern void MvMarkPopulated(Oid viewid);
extern Oid	MvRelOwner(Oid relid);
extern MvRefreshResult MvRefreshKeepSnapshot(Oid viewid, Snapshot *snap);
extern char *MvExprSql(Oid sourceid, Node *expr, const char *alias);
extern void MvRefreshInit(void);
extern void MvRequireReadCommitted(Oid viewid, const char *action);
extern void MvNoteSourceWrite(Oid relid);
extern bool MvHasOwnChanges(void);
extern char *MvDeltaStatesSql(MvDef *def, const char *from, const char *cond);
extern char *MvColumnListSql(MvDef *def, int role, const char *prefix);
extern char *MvKeyEqSql(MvDef *def, const char *lalias, bool lexprs, const char *ralias);
extern char *MvGroupExprsSql(MvDef *def, const char *alias, bool as_names);
extern char *MvWhereSql(MvDef *def, const char *alias);
extern char *MvLastImagesSql(MvDef *def, const char *changelog, const char *cond);
extern char *MvRowidEqSql(MvDef *def, const char *lalias, const char *ralias);
extern char *MvRetractStatesSql(MvDef *def, const char *base, const char *delta,
								const char *ralias, char **refused);
extern void MvMergeIntoStorage(MvDef *def, Oid storage_oid, const char *select_sql);
extern char *MvSourceName(Oid relid);

/* mv_merge.c */
extern bool MvMergeDelta(MvDef *def, Oid storage_oid, const char *select_sql);

/* mv_append.c */
extern double mvinc_compact_fraction;
extern char *MvAppendMergedSql(MvDef *def, Oid storage_oid, Oid append_oid, bool finals);
extern char *MvMergedSql(MvDef *def, const char *storage, const char *appended, bool finals);
extern char *MvHybridMergedSql(MvDef *def, const char *storage, const char *appended,
							   const char *delta, bool finals);
extern char *MvStateRowsSql(MvDef *def, bool finals, const char *from);
extern int64 MvFoldAppend(MvDef *def, MvCatalog *cat);
extern bool MvAppendStates(MvDef *def, MvCatalog *cat, const char *select_sql,
						   int64 inserts);
extern int64 MvCompact(Oid viewid);
extern int64 MvCompactLocked(Oid viewid);
extern double MvStorageRows(Oid storage_oid);

/* mv_scheduler.c */
extern void MvSchedulerInit(void);
extern void MvSetRefreshInterval(Oid viewid, const char *interval);
extern PGDLLEXPORT void MvincRefresherMain(Datum arg);

/* mv_recluster.c */
extern int	mvinc_recluster_swap_timeout;
extern List *MvClusterColumns(Oid viewid, MvDef *def, const char *cluster_by);
extern void MvSetClusterBy(Oid viewid, const char *cluster_by);
extern int64 MvRecluster(Oid viewid);

/* mv_compactor.c */
extern double mvinc_background_compact_fraction;
extern void MvCompactorInit(void);
extern void MvCompactLater(Oid viewid, Oid storage_oid, int64 append_rows);
extern PGDLLEXPORT void MvincCompactorMain(Datum arg);

/* mv_summary.c */

/* What the change log holds between two checkpoints (see mv_summary.c) */
typedef struct MvDeltaSummary
{
	int64		inserts;		/* inserted rows of the delta */
	int64		others;			/* old images of its updates and deletes */
	int64		truncates;
	int64		keyonly;		/* old images that carry only the key */
	bool		has_invisible;	/* rows of the range S' does not see */
	XLogRecPtr	min_invisible;	/* the lowest lsn of those */
} MvDeltaSummary;

extern void MvSummarizeDelta(Oid changelog, XLogRecPtr from, XLogRecPtr to,
							 const char *new_snap, const char *old_snap,
							 MvDeltaSummary *sum);
extern void MvDeltaSummaryAdd(MvDeltaSummary *sum, char op, char image);
extern void MvDeltaSummaryUnseen(MvDeltaSummary *sum, XLogRecPtr lsn);

/*
 * A change-log row's transaction against the refresh's snapshot S'
 * (new) and the checkpoint's S (old), as pg_visible_in_snapshot()
 * decides; a transaction's rows are adjacent, so the last one is kept
 */
typedef enum MvDeltaRow
{
	MV_DELTA_ROW_DELTA,			/* S' sees it, S does not */
	MV_DELTA_ROW_CONSUMED,		/* both see it: an earlier refresh's */
	MV_DELTA_ROW_UNSEEN			/* S' does not see it (yet) */
} MvDeltaRow;
typedef struct MvDeltaJudge
{
	Datum		snew;			/* pg_snapshot */
	Datum		sold;
	FullTransactionId last_xid;
	bool		last_new;
	bool		last_old;
} MvDeltaJudge;
extern void MvDeltaJudgeInit(MvDeltaJudge *judge, const char *new_snap, const char *old_snap);
extern MvDeltaRow MvDeltaJudgeRow(MvDeltaJudge *judge, Datum xid);
extern void MvDeltaJudgeEnd(MvDeltaJudge *judge);
/* What the change log holds past a checkpoint for a reader (MvDeltaVisible) */
typedef enum MvDeltaKind
{
	MV_DELTA_NONE,				/* nothing the reader sees */
	MV_DELTA_INSERTS,			/* only inserts */
	MV_DELTA_CHANGES,			/* updates or deletes too, with whole old rows */
	MV_DELTA_KEYONLY,			/* ... or with old rows of their key alone */
	MV_DELTA_OTHER				/* truncations too, or too many rows */
} MvDeltaKind;
/*
 * The transactions whose change-log rows a reader's delta holds (sorted,
 * distinct), and how many rows: two readers with the same ones read the
 * same delta (mv_deltacache.c).  xids NULL when there were too many to keep.
 */
typedef struct MvVisibleXids
{
	int			nxids;
	FullTransactionId *xids;
	int64		rows;
} MvVisibleXids;
/* What a reader's delta is known by: the same one for the same key */
typedef struct MvDeltaKey
{
	Oid			viewid;
	Oid			storage_oid;
	XLogRecPtr	checkpoint_lsn;
	int32		generation;		/* the source's, the storage built for it */
	MvVisibleXids visible;
} MvDeltaKey;
extern MvDeltaKind MvDeltaVisible(Oid changelog, XLogRecPtr from, const char *query_snap,
								  const char *old_snap, Snapshot latest, bool want_kind,
								  int64 max_rows, MvVisibleXids *visible);

/* mv_snapshot.c */
extern char *MvSnapshotText(Snapshot snap, bool own_seen);

/* mv_readquery.c */
extern Query *MvReadQuery(Oid viewid, RangeTblEntry *orig);
extern Query *MvHistoryReadQuery(Oid viewid, RangeTblEntry *orig);

/* mv_read.c */
extern void MvReadInit(void);
extern bool MvMayReadView(Oid viewid);
typedef enum MvReadBranch
{
	MV_READ_LIVE,				/* the view's query over the source */
	MV_READ_FRESH,				/* the storage */
	MV_READ_MERGE,				/* the storage merged with its append table */
	MV_READ_HYBRID				/* ... and with the states of the visible delta */
} MvReadBranch;
/* A read node's hold on its decision (mv_read.c's memo entry) */
typedef struct MvReadPin
{
	int			memo;			/* the entry, or -1 */
	uint64		decision;		/* ... while it still holds this decision */
} MvReadPin;
extern MvReadBranch MvGetReadBranch(Oid viewid);
extern MvReadBranch MvDecideReadBranch(Oid viewid);
extern void MvForgetReadDecisions(SubTransactionId subid);
extern MvReadPin MvPinReadBranch(Oid viewid, Snapshot snap);
extern void MvUnpinReadBranch(MvReadPin pin);
extern void MvUnpinReadBranches(void);
extern void MvEnterReadArm(Oid viewid, MvReadPin pin);
extern void MvLeaveReadArm(void);
extern Oid	MvRunningReadUser(Oid viewid);

/* mv_rewrite.c */
extern bool mvinc_enable_rewrite;
extern bool mv_rewrite_internal_change;
extern void MvAssignEnableRewrite(bool newval, void *extra);
extern List *MvRewriteQuery(Query *parse, bool *role_dependent);
extern List *mv_rewritten_views;
extern void MvRewriteSourceChanged(Oid relid);
/* mv_readscan.c */
extern void MvReadScanInit(void);

/* mv_stats.c */
extern void MvStatsInit(void);
extern void MvCountRead(Oid viewid, MvReadBranch path);
extern void MvForgetReadCounts(Oid viewid);
extern bool MvClaimCompactor(Oid viewid);
extern void MvReleaseCompactor(Oid dboid, Oid viewid);
typedef enum MvClaim
{
	MV_CLAIM_OK,
	MV_CLAIM_BUSY,				/* one is queued or running for the view */
	MV_CLAIM_FULL				/* the limits are reached */
} MvClaim;
extern bool MvRefresherBusy(Oid viewid);
extern MvClaim MvClaimRefresher(Oid viewid, int max_total, int max_db);
extern void MvSetRefresher(Oid dboid, Oid viewid, int pid);
extern void MvStopRefreshersOf(Oid dboid);
extern void MvReleaseStats(Oid viewid);

/* mv_progress.c: what mvinc.refresh_progress shows of a running command */
typedef enum MvProgressCommand
{
	MV_PROGRESS_REFRESH,
	MV_PROGRESS_COMPACT,
	MV_PROGRESS_RECLUSTER
} MvProgressCommand;

typedef enum MvProgressPhase
{
	MV_PHASE_INITIALIZING,
	MV_PHASE_WAIT_LOCK,			/* for the view's refresh lock or the source's */
	MV_PHASE_WAIT_CAPTURE,		/* for capture to reach the refresh's target */
	MV_PHASE_READ_CHANGES,		/* summarizing the change log's delta */
	MV_PHASE_COMPUTE_DELTA,		/* copying or aggregating the delta */
	MV_PHASE_APPLY_INSERTS,
	MV_PHASE_APPLY_CHANGES,		/* updates and deletes (with inserts) */
	MV_PHASE_REBUILD,			/* recomputing the storage from the source */
	MV_PHASE_FOLD,				/* folding append rows into the storage */
	MV_PHASE_VACUUM,			/* background compaction's VACUUM */
	MV_PHASE_REWRITE,			/* recluster: copying the storage in order */
	MV_PHASE_BUILD_INDEXES,		/* recluster: indexes of the copy */
	MV_PHASE_SWAP				/* recluster: waiting to swap the files */
} MvProgressPhase;

extern void MvProgressInit(void);
extern void MvProgressBegin(MvProgressCommand command, Oid viewid);
extern void MvProgressEnd(void);
extern void MvProgressSetPhase(MvProgressPhase phase, int64 rows_total);
extern void MvProgressSetRows(int64 rows);
extern void MvProgressSetMode(const char *mode);

/* The state rows of a hybrid read's delta (mv_hybrid.c) */
typedef struct MvDeltaRows
{
	TupleDesc	desc;
	List	   *tuples;			/* HeapTuple: inserts' states, merged */
	List	   *replaced;		/* HeapTuple: groups (rows) as they now are */
	bool		projection;		/* a projection view's: rows, no states */
} MvDeltaRows;
extern bool MvHybridCapable(MvDef *def);
extern bool MvHybridCanReplace(MvDef *def);
extern bool MvHybridReaderMaySee(MvDef *def, Oid userid);
extern void MvRegisterRows(const char *name, TupleDesc desc, Tuplestorestate *store,
						   uint64 nrows);
extern int64 MvHybridMaxDeltaRows(Oid sourceid);

/*
 * Conditions on the group keys that a reader's query applies to a hybrid
 * read (mv_keyfilter.c): its delta need only hold the groups that pass.
 * Condition i: group key keyno[i] (1-based, storage order) OPERATOR(opno[i])
 * ANY (values[i], an array of type arraytype[i]).
 */
typedef struct MvDeltaFilter
{
	int			nconds;
	int		   *keyno;
	Oid		   *opno;
	Oid		   *arraytype;
	Datum	   *values;
	char	   *ident;			/* the conditions and values as text (memo key) */
} MvDeltaFilter;

extern MvDeltaRows *MvComputeDeltaRows(Oid viewid, bool changes, MvDeltaFilter *filter,
									   Snapshot latest);
extern MvDeltaRows *MvHybridDeltaRows(Oid viewid, Snapshot snap, MvDeltaFilter *filter);
extern bool MvMemoDeltaCounts(MvReadPin pin, int64 *delta_rows, int64 *replaced_rows,
							  bool *kept);

/* mv_deltacache.c */
extern void MvDeltaCacheInit(void);
extern MvDeltaRows *MvDeltaCacheGet(const MvDeltaKey *key);
extern void MvDeltaCachePut(const MvDeltaKey *key, MvDeltaRows *rows);
extern void MvDeltaCacheForgetStale(Oid viewid, Oid storage_oid, XLogRecPtr checkpoint_lsn);

/* mv_keyfilter.c */
extern List *MvLevelConditions(Query *q, List *extra);
extern void MvPushKeyConditions(List *conds, int rti, Oid viewid, MvDef *def, Query *readq);
extern List *MvKeyConditionsForSubquery(List *conds, int rti, Query *sub);
extern MvDeltaFilter *MvDeltaFilterFromArgs(FunctionCallInfo fcinfo, const char *viewname);
extern void MvDeltaFilterCheck(MvDef *def, MvDeltaFilter *f, const char *viewname);
extern char *MvDeltaFilterSql(MvDef *def, MvDeltaFilter *f, const char *alias, int firstparam);
extern char *MvStoredContentSql(Oid viewid, MvCatalog *cat);
extern char *MvViewQuerySql(Oid viewid);

/* mv_funcdeps.c */
typedef struct MvFunctionRows
{
	Oid			funcid;
	HeapTuple	proc;			/* its pg_proc row */
	HeapTuple	agg;			/* its pg_aggregate row, for an aggregate */
} MvFunctionRows;

extern bool MvFollowFunctionReplace(void);
extern MvFunctionRows *MvFunctionBeingReplaced(Node *parsetree);
extern void MvFunctionReplaced(MvFunctionRows *before);

/* mv_utility.c */
extern void MvUtilityInit(void);

#endif							/* MVINC_MV_H */
