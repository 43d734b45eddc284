/*-------------------------------------------------------------------------
 * history.h
 *	  Interface of the history subsystem: history views (zipper tables,
 *	  slowly changing dimensions of type 2).
 *
 *	  A history view is a real materialized view (relkind 'm', kept empty,
 *	  its query the user's projection plus two NULL timestamptz columns
 *	  valid_from and valid_to) plus a storage table mvinc.hv_<oid> holding
 *	  the versions, plus one row in mvinc.history_view.  Reads of the view
 *	  are redirected by mv's planner hook to the storage.  Versions are
 *	  kept from the source's captured changes (REFRESH) or from full
 *	  snapshot extracts (mvinc.history_load); both end in hist_apply.c.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_HISTORY_H
#define MVINC_HISTORY_H

#include "access/xlogdefs.h"
#include "nodes/parsenodes.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "mv/mv.h"			/* MvDeltaSummary */

/* One column of a history view (valid_from and valid_to aside) */
typedef struct HistColumn
{
	char	   *name;			/* the view's column name */
	Expr	   *expr;			/* over the source (varno 1) */
	Oid			typid;
	int32		typmod;
	Oid			collation;
	bool		is_key;
	AttrNumber	srcattnum;		/* key columns: the source column */
} HistColumn;

/* A validated history view definition */
typedef struct HistDef
{
	Oid			sourceid;
	Node	   *where;			/* over the source (varno 1), or NULL */
	List	   *columns;		/* HistColumn *, in view order */
	List	   *keys;			/* HistColumn *, in key order */
	bool		full_old_rows;	/* the replica identity lacks the key */
} HistDef;

/* The catalog row of mvinc.history_view */
typedef struct HistCatalog
{
	Oid			viewid;
	Oid			sourceid;
	char	   *key_list;		/* mvinc.key: quoted names, comma-separated */
	char	   *storage_name;
	Oid			storage_oid;	/* InvalidOid when the table is missing */
	bool		populated;		/* refreshed or loaded at least once */
	char	   *feed;			/* NULL, "stream" or "snapshot" */
	bool		has_start;
	TimestampTz history_start;
	char	   *retention;		/* interval text or NULL */
	char	   *checkpoint_snapshot;	/* NULL until the first refresh */
	XLogRecPtr	checkpoint_lsn;
} HistCatalog;

/* Options of CREATE MATERIALIZED VIEW ... WITH (mvinc.history = true, ...) */
typedef struct HistOptions
{
	char	   *key;
	char	   *history_start;
	char	   *retention;
} HistOptions;

/* What one application of changes or of a snapshot did */
typedef struct HistApplied
{
	int64		opened;			/* versions inserted */
	int64		closed;			/* current versions ended */
	int64		new_keys;		/* snapshot loads: NEW / CHANGE / CLOSE */
	int64		changed_keys;
	int64		closed_keys;
	int64		rows;			/* rows of the snapshot */
} HistApplied;

/* hist_init.c: superusers may write the storage by hand */
extern bool mvinc_history_manual_edit;

/* hist_analyze.c */
extern HistDef *HistAnalyze(Query *query, List *colnames, const char *viewname,
							HistOptions *opts);
extern HistDef *HistDefForView(Oid viewid, HistCatalog *cat);
extern Query *HistAddIntervalColumns(Query *query);
extern void HistCheckReplicaIdentity(Oid relid, ReplicaIdentityStmt *ri);
extern void HistCheckSourceKeys(Oid relid);
extern void HistCheckSourceKeysWithout(Oid relid, Oid index);
extern List *HistViewsOfSource(Oid relid);

/* hist_catalog.c */
extern HistCatalog *HistCatalogLookup(Oid viewid, bool adopt_storage);
extern void HistCatalogInsert(Oid viewid, HistDef *def, HistOptions *opts);
extern Oid	HistCreateStorage(Oid viewid, HistDef *def);
extern void HistCatalogSetCheckpoint(Oid viewid, const char *snapshot, XLogRecPtr lsn,
									 int64 changes);
extern void HistCatalogSetFeed(Oid viewid, const char *feed);
extern bool HistIsStorageTable(Oid relid);
extern char *HistStorageSql(HistCatalog *cat);
extern char *HistConsumerName(Oid viewid);
extern char *HistReadSql(Oid viewid, bool *reads_changes);
extern void HistSetRetention(Oid viewid, const char *retention);

/* hist_apply.c */
extern char *HistColumnListSql(HistDef *def, bool keys, bool values, const char *prefix);
extern void HistSetState(HistDef *def, Oid storage_oid, const char *storage, const char *state_sql,
						 Snapshot snap, TimestampTz t, TimestampTz u, bool in_order,
						 bool unique, HistApplied *out);
extern bool HistKeyIsUnique(HistDef *def, Oid relid);
extern char *HistKeysEqualSql(HistDef *def, const char *lalias, const char *ralias);
extern char *HistDeltaRowsSql(HistDef *def, const char *changelog, const char *delta,
							  bool raw);
extern char *HistStatesSql(HistDef *def, const char *storage, const char *rows, bool truncates);
extern char *HistEventsSql(HistDef *def, const char *storage, const char *states,
						   const char *extra_ctes);
extern void HistApplyEvents(HistDef *def, Oid storage_oid, const char *storage,
							const char *changelog, const char *delta, bool truncates,
							HistApplied *out);
extern void HistKeyMissing(HistDef *def);
extern bool HistStateUnchanged(HistDef *def, const char *storage, const char *state_sql,
							   bool unique, HistApplied *out);
extern char *HistStateJoinCurrentSql(HistDef *def, const char *storage, const char *state_sql,
									 bool with_ctid);
extern int	HistPreferMergeJoin(void);

/* hist_keywalk.c: the latest versions of many keys, in one walk */
typedef struct HistKeyWalk HistKeyWalk;
extern HistKeyWalk *HistKeyWalkBegin(Relation rel, Relation index, Snapshot snap, int nkeys);
extern bool HistKeyWalkTo(HistKeyWalk *k, Datum *key, Snapshot snap, TupleTableSlot *slot);
extern bool HistKeyWalkBroken(HistKeyWalk *k);
extern void HistKeyWalkEnd(HistKeyWalk *k);

/* hist_direct.c */
extern bool HistApplyEventsDirect(HistDef *def, Oid storage_oid, const char *changelog,
								  XLogRecPtr from, XLogRecPtr to, const char *new_snap,
								  const char *old_snap, MvDeltaSummary *sum, HistApplied *out);
extern void HistSetStateInOrderDirect(HistDef *def, Oid storage_oid, const char *storage,
									  const char *state_sql, Snapshot snap, TimestampTz t,
									  const char *values_equal, bool count_rows,
									  HistApplied *out);
extern void HistApplyRetention(HistCatalog *cat, const char *storage);

/* hist_refresh.c */
extern void HistCreateFinish(Oid viewid, HistDef *def, HistOptions *opts, bool skip_data);
extern void HistRefresh(Oid viewid, bool skip_data);

#endif							/* MVINC_HISTORY_H */
