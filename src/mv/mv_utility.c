/*-------------------------------------------------------------------------
 * mv_utility.c
 *	  The ProcessUtility hook that takes over the native SQL of incremental
 *	  views: CREATE MATERIALIZED VIEW ... WITH (mvinc.incremental = true),
 *	  REFRESH MATERIALIZED VIEW [CONCURRENTLY], and the refusals of
 *	  TRUNCATE and COPY into a view or its storage.  Everything else (and
 *	  every materialized view without mvinc.incremental) goes to PostgreSQL
 *	  unchanged.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"
#include "history/history.h"
#include "mv/mv.h"

static void run_adding_no_checks(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
								 ProcessUtilityContext context, ParamListInfo params,
								 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc);
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Pass a statement on down the hook chain */
static void
call_next(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		  ProcessUtilityContext context, ParamListInfo params,
		  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/* Options of a CREATE MATERIALIZED VIEW that concern incremental views */
typedef struct MvOptions
{
	bool		present;		/* mvinc.incremental was given */
	bool		incremental;
	char	   *cluster_by;
	char	   *refresh_interval;
	bool		history;		/* mvinc.history = true */
	bool		history_given;	/* any of the history options */
	HistOptions hist;
	List	   *rest;			/* the options for PostgreSQL */
} MvOptions;

/* Split the WITH options into mvinc.* and the rest */
static MvOptions
split_options(List *options)
{
	MvOptions	o = {0};
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *d = lfirst(lc);

		if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
			strcmp(d->defname, "incremental") == 0)
		{
			o.present = true;
			o.incremental = defGetBoolean(d);
		}
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "cluster_by") == 0)
			o.cluster_by = defGetString(d);
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "refresh_interval") == 0)
			o.refresh_interval = defGetString(d);
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "history") == 0)
		{
			o.history_given = true;
			o.history = defGetBoolean(d);
		}
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "key") == 0)
		{
			o.history_given = true;
			o.hist.key = defGetString(d);
		}
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "history_start") == 0)
		{
			o.history_given = true;
			o.hist.history_start = defGetString(d);
		}
		else if (d->defnamespace && strcmp(d->defnamespace, "mvinc") == 0 &&
				 strcmp(d->defname, "history_retention") == 0)
		{
			o.history_given = true;
			o.hist.retention = defGetString(d);
		}
		else
			o.rest = lappend(o.rest, d);
	}
	return o;
}

/*
 * ALTER MATERIALIZED VIEW v SET / RESET (mvinc.refresh_interval ..): the
 * mvinc options are applied here and taken out of the statement, which
 * PostgreSQL would refuse (it knows no "mvinc" namespace).  Returns false
 * when the statement has none; else *pstmt becomes what is left for
 * PostgreSQL, or NULL when nothing is.
 */
static bool
take_mvinc_options(PlannedStmt **pstmt)
{
	PlannedStmt *copy = copyObject(*pstmt);
	AlterTableStmt *stmt = (AlterTableStmt *) copy->utilityStmt;
	List	   *cmds = NIL;
	bool		found = false;
	bool		history = false;
	Oid			viewid = InvalidOid;
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		List	   *rest = NIL;
		ListCell   *lo;

		if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
		{
			cmds = lappend(cmds, cmd);
			continue;
		}
		foreach(lo, (List *) cmd->def)
		{
			DefElem    *d = lfirst(lo);

			if (d->defnamespace == NULL || strcmp(d->defnamespace, "mvinc") != 0)
			{
				rest = lappend(rest, d);
				continue;
			}
			if (!found)
			{
				found = true;
				if (stmt->objtype != OBJECT_MATVIEW)
					return false;	/* PostgreSQL refuses the namespace */
				viewid = RangeVarGetRelidExtended(stmt->relation, ShareUpdateExclusiveLock,
												  stmt->missing_ok ? RVR_MISSING_OK : 0,
												  RangeVarCallbackOwnsRelation, NULL);
				if (!OidIsValid(viewid))
					return false;	/* IF EXISTS: PostgreSQL says so */
				if (MvIsHistoryView(viewid) && strcmp(d->defname, "history_retention") == 0)
					history = true;
				else if (!MvIsIncrementalView(viewid))
					ereport(ERROR,
							(errcode(ERRCODE_WRONG_OBJECT_TYPE),
							 errmsg("option \"mvinc.%s\" is only for incremental materialized views",
									d->defname),
							 errdetail("\"%s\" is not one.", stmt->relation->relname)));
			}
			if (history && strcmp(d->defname, "history_retention") == 0)
				HistSetRetention(viewid, cmd->subtype == AT_SetRelOptions ?
								 defGetString(d) : NULL);
			else if (history)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("option \"mvinc.%s\" cannot be changed on a history view", d->defname),
						 errhint("History views take \"mvinc.history_retention\" in ALTER MATERIALIZED VIEW .. SET.")));
			else if (strcmp(d->defname, "refresh_interval") == 0)
				MvSetRefreshInterval(viewid, cmd->subtype == AT_SetRelOptions ?
									 defGetString(d) : NULL);
			else if (strcmp(d->defname, "cluster_by") == 0)
				MvSetClusterBy(viewid, cmd->subtype == AT_SetRelOptions ?
							   defGetString(d) : NULL);
			else if (strcmp(d->defname, "incremental") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change option \"mvinc.%s\" of an existing materialized view",
								d->defname),
						 errhint("Drop the view and create it again with the option you want.")));
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unrecognized parameter \"mvinc.%s\"", d->defname),
						 errhint("Incremental materialized views take \"mvinc.refresh_interval\" in ALTER MATERIALIZED VIEW .. SET.")));
		}
		if (rest != NIL)
		{
			cmd->def = (Node *) rest;
			cmds = lappend(cmds, cmd);
		}
	}
	if (!found)
		return false;
	stmt->cmds = cmds;
	*pstmt = cmds != NIL ? copy : NULL;
	return true;
}

/*
 * Code attached to a table of schema mvinc (a view's storage or append
 * table, which the view's owner owns; change logs; the catalog) would run
 * inside refreshes and compactions, which write those tables as the
 * bootstrap superuser: a view owner's trigger, rule, index expression or
 * column default there would run with superuser rights.  Only superusers
 * (and mvinc itself, which acts as one) may add or change them.
 */
/*
 * The name was looked up here without a lock; the command looks it up again
 * under its lock, after any concurrent DROP or CREATE it waited for.  With
 * mvinc's schema on the search path, an unqualified name could then find a
 * table of mvinc's (a decoy of the same name dropped meanwhile): qualify it
 * with the schema it was found in (not found: the first other schema of the
 * path), so that the command acts on what was checked.
 */
static void
pin_name(RangeVar *rv, Oid relid)
{
	List	   *path;
	ListCell   *lc;
	Oid			mvinc = MvincSchemaOid();

	if (rv->schemaname != NULL)
		return;
	path = fetch_search_path(true);
	if (!list_member_oid(path, mvinc))
		return;
	if (OidIsValid(relid))
		rv->schemaname = get_namespace_name(get_rel_namespace(relid));
	else
		foreach(lc, path)
		{
			if (lfirst_oid(lc) != mvinc)
			{
				rv->schemaname = get_namespace_name(lfirst_oid(lc));
				break;
			}
		}
	list_free(path);
}

static void
refuse_if_mvinc_table(RangeVar *rv, const char *what)
{
	Oid			relid;

	if (rv == NULL)
		return;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid) || get_rel_namespace(relid) != MvincSchemaOid())
	{
		pin_name(rv, relid);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot %s \"mvinc.%s\"", what, get_rel_name(relid)),
			 errdetail("mvinc writes the tables of its schema with its own rights; code attached to them would run with those rights."),
			 errhint("Only a superuser may change them.")));
}

/*
 * The same for a table of the user's own that would take part in writes
 * of a table of schema mvinc: a child by inheritance (statements on the
 * parent reach it, its triggers fire), or a partitioned table of which the
 * mvinc table would become a partition (its row triggers are cloned onto
 * the partition).
 */
static void
refuse_mvinc_relatives(Node *parsetree)
{
	ListCell   *lc;

	if (IsA(parsetree, CreateStmt) || IsA(parsetree, CreateForeignTableStmt))
	{
		/* (CreateForeignTableStmt begins with a CreateStmt) */
		foreach(lc, ((CreateStmt *) parsetree)->inhRelations)
			refuse_if_mvinc_table(lfirst_node(RangeVar, lc), "inherit from");
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
		{
			AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

			if (cmd->subtype == AT_AddInherit)
				refuse_if_mvinc_table((RangeVar *) cmd->def, "inherit from");
			else if (cmd->subtype == AT_AttachPartition)
				refuse_if_mvinc_table(((PartitionCmd *) cmd->def)->name,
									  "attach as a partition");
		}
	}
}

/*
 * Is this a statement refuse_mvinc_table_ddl judges (and may qualify names
 * in)?  *rv: the table it attaches code to or changes (NULL: none, or only
 * the relatives refuse_mvinc_relatives looks at), *what: for the message.
 */
static bool
guarded_statement(Node *parsetree, RangeVar **rv, const char **what)
{
	*rv = NULL;
	*what = NULL;
	switch (nodeTag(parsetree))
	{
		case T_CreateStmt:
		case T_CreateForeignTableStmt:
			break;
		case T_CreateTrigStmt:
			*rv = ((CreateTrigStmt *) parsetree)->relation;
			*what = "create a trigger on";
			break;
		case T_RuleStmt:
			*rv = ((RuleStmt *) parsetree)->relation;
			*what = "create a rule on";
			break;
		case T_IndexStmt:
			*rv = ((IndexStmt *) parsetree)->relation;
			*what = "create an index on";
			break;
		case T_CreateStatsStmt:
			if (list_length(((CreateStatsStmt *) parsetree)->relations) == 1 &&
				IsA(linitial(((CreateStatsStmt *) parsetree)->relations), RangeVar))
				*rv = linitial(((CreateStatsStmt *) parsetree)->relations);
			*what = "create statistics on";
			break;
		case T_CreatePolicyStmt:
			*rv = ((CreatePolicyStmt *) parsetree)->table;
			*what = "create a policy on";
			break;
		case T_AlterTableStmt:
			*rv = ((AlterTableStmt *) parsetree)->relation;
			*what = "alter";
			break;
		case T_RenameStmt:
			*rv = ((RenameStmt *) parsetree)->relation;
			*what = "rename";
			break;
		case T_AlterObjectSchemaStmt:
			*rv = ((AlterObjectSchemaStmt *) parsetree)->relation;
			*what = "move";
			break;
		default:
			return false;
	}
	return true;
}

static void
refuse_mvinc_table_ddl(Node *parsetree)
{
	RangeVar   *rv;
	const char *what;

	if (!guarded_statement(parsetree, &rv, &what) || superuser() || !MvincExtensionReady())
		return;
	refuse_mvinc_relatives(parsetree);
	refuse_if_mvinc_table(rv, what);
}

/*
 * Shared start of CREATE of an incremental or history view: the extension
 * must be there; with IF NOT EXISTS and an existing relation, PostgreSQL
 * gives its notice (true: nothing more to do).
 */
static bool
create_exists(PlannedStmt *pcopy, CreateTableAsStmt *copy, MvOptions *o,
			  const char *queryString, ProcessUtilityContext context,
			  ParamListInfo params, QueryEnvironment *queryEnv, DestReceiver *dest,
			  QueryCompletion *qc)
{
	if (!MvincExtensionReady())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"mvinc\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION mvinc.")));
	if (!copy->if_not_exists || !OidIsValid(RangeVarGetRelid(copy->into->rel, NoLock, true)))
		return false;
	copy->into->options = o->rest;
	pcopy->utilityStmt = (Node *) copy;
	call_next(pcopy, queryString, false, context, params, queryEnv, dest, qc);
	return true;
}

/* CREATE MATERIALIZED VIEW ... WITH (mvinc.incremental = true) */
static void
create_incremental(PlannedStmt *pstmt, CreateTableAsStmt *stmt, MvOptions *o,
				   const char *queryString, bool readOnlyTree,
				   ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	CreateTableAsStmt *copy = copyObject(stmt);
	PlannedStmt *pcopy = copyObject(pstmt);
	IntoClause *into = copy->into;
	Query	   *query = castNode(Query, copy->query);
	bool		skipData = into->skipData;
	MvDef	   *def;
	Oid			viewid;

	if (create_exists(pcopy, copy, o, queryString, context, params, queryEnv, dest, qc))
		return;

	mv_analyzing_create = true;
	PG_TRY();
	{
		def = MvAnalyzeQuery(query, into->rel->relname, true);
	}
	PG_FINALLY();
	{
		mv_analyzing_create = false;
	}
	PG_END_TRY();

	/*
	 * What a native matview asks of its creator: SELECT on what the query
	 * reads (PostgreSQL checks CREATE on the schema below). The view's rows
	 * are computed with mvinc's rights, so this is the check that counts.
	 */
	(void) ExecCheckRTPerms(query->rtable, true);

	/*
	 * Start tracking before this transaction writes anything (a capture
	 * slot cannot be created by a transaction that has written), under the
	 * SHARE lock (stronger if tracking needs it, taken at once) that the
	 * initial computation holds until commit.
	 */
	if (!OidIsValid(MvChangeLogRelid(def->sourceid)))
		MvAwaitCapture();		/* before any lock: see MvAwaitCapture */
	if (!skipData)
	{
		MvLockForTracking(def->sourceid, def->kind == MV_KIND_AGGREGATE);
		MvRefuseChildrenAfterLock(def->sourceid, MvQueryReadsChildren(query, def->sourceid));
	}
	MvTrack(def->sourceid, def->kind == MV_KIND_AGGREGATE);

	/* PostgreSQL creates the matview, always empty; we keep its rows */
	into->options = o->rest;
	into->skipData = true;
	pcopy->utilityStmt = (Node *) copy;
	call_next(pcopy, queryString, false, context, params, queryEnv, dest, qc);
	CommandCounterIncrement();

	viewid = RangeVarGetRelid(into->rel, AccessExclusiveLock, false);
	(void) MvClusterColumns(viewid, def, o->cluster_by);	/* refuses bad ones */
	MvCatalogInsert(viewid, def, pg_get_querydef(query, false), o->cluster_by);
	if (o->refresh_interval)
		MvSetRefreshInterval(viewid, o->refresh_interval);
	CommandCounterIncrement();
	MvCreateStorage(viewid, def);
	CommandCounterIncrement();
	if (!skipData)
		(void) MvRefresh(viewid, false, true);
}

/*
 * CREATE MATERIALIZED VIEW ... WITH (mvinc.history = true, mvinc.key = ..):
 * the matview gets the projection plus valid_from and valid_to (NULL: its
 * own relation stays empty); src/history keeps the versions.
 */
static void
create_history(PlannedStmt *pstmt, CreateTableAsStmt *stmt, MvOptions *o,
			   const char *queryString, ProcessUtilityContext context,
			   ParamListInfo params, QueryEnvironment *queryEnv, DestReceiver *dest,
			   QueryCompletion *qc)
{
	CreateTableAsStmt *copy = copyObject(stmt);
	PlannedStmt *pcopy = copyObject(pstmt);
	IntoClause *into = copy->into;
	Query	   *query = castNode(Query, copy->query);
	bool		skipData = into->skipData;
	HistDef    *def;
	Oid			viewid;

	if (create_exists(pcopy, copy, o, queryString, context, params, queryEnv, dest, qc))
		return;

	mv_analyzing_create = true;
	PG_TRY();
	{
		def = HistAnalyze(query, into->colNames, into->rel->relname, &o->hist);
	}
	PG_FINALLY();
	{
		mv_analyzing_create = false;
	}
	PG_END_TRY();
	/* what a native matview asks of its creator */
	(void) ExecCheckRTPerms(query->rtable, true);
	if (!skipData)
	{
		/* track before this transaction writes (see create_incremental) */
		if (!OidIsValid(MvChangeLogRelid(def->sourceid)))
			MvAwaitCapture();
		MvLockForTracking(def->sourceid, def->full_old_rows);
		MvRefuseChildrenAfterLock(def->sourceid, MvQueryReadsChildren(query, def->sourceid));
		MvTrack(def->sourceid, def->full_old_rows);
	}

	copy->query = (Node *) HistAddIntervalColumns(query);
	into->viewQuery = (Node *) copyObject(copy->query);
	if (into->colNames != NIL)
	{
		ListCell   *lc;

		/* names not given keep the query's; then the interval's */
		for_each_from(lc, query->targetList, list_length(into->colNames))
			into->colNames = lappend(into->colNames,
									 makeString(pstrdup(((TargetEntry *) lfirst(lc))->resname)));
		into->colNames = lappend(into->colNames, makeString(pstrdup("valid_from")));
		into->colNames = lappend(into->colNames, makeString(pstrdup("valid_to")));
	}
	into->options = o->rest;
	into->skipData = true;
	pcopy->utilityStmt = (Node *) copy;
	call_next(pcopy, queryString, false, context, params, queryEnv, dest, qc);
	CommandCounterIncrement();

	viewid = RangeVarGetRelid(into->rel, AccessExclusiveLock, false);
	HistCreateFinish(viewid, def, &o->hist, skipData);
}

/* REFRESH MATERIALIZED VIEW of an incremental view */
static void
refresh_incremental(RefreshMatViewStmt *stmt, Oid viewid)
{
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(viewid));
	if (stmt->skipData && stmt->concurrent)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s and %s options cannot be used together",
						"CONCURRENTLY", "WITH NO DATA")));
	if (stmt->skipData)
		MvRefreshNoData(viewid);
	else
		(void) MvRefresh(viewid, false, false);
}

/* Refuse TRUNCATE or COPY FROM into a view or a storage table */
static void
refuse_into(RangeVar *rv, const char *what)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);

	if (!OidIsValid(relid))
		return;
	MvNoteSourceWrite(relid);
	if (MvIsIncrementalView(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot %s materialized view \"%s\"", what, get_rel_name(relid)),
				 errdetail("An incremental materialized view is maintained from its source table."),
				 errhint("Change the source table and refresh the view.")));
	if (mvinc_refresh_depth == 0 && !mvinc_history_manual_edit && HistIsStorageTable(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot %s storage table \"%s\" of a history view", what, get_rel_name(relid)),
				 errdetail("The storage table is written only by refresh and mvinc.history_load()."),
				 errhint("Change the source table and refresh the view.")));
	if (mvinc_refresh_depth == 0 && MvIsStorageTable(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot %s storage table \"%s\" of an incremental materialized view",
						what, get_rel_name(relid)),
				 errdetail("The storage table is written only by refresh."),
				 errhint("Change the source table and refresh the view.")));
}

/*
 * Refuse to give a new inheritance child to a table that an incremental
 * view reads with its children (no ONLY): the child's rows would be in the
 * defining query but its changes would never be captured.  The parent is
 * locked first, as CREATE TABLE ... INHERITS and ALTER TABLE ... INHERIT
 * are about to, and the views are read in the latest snapshot: a view
 * created in a transaction still open holds a SHARE lock on its source
 * (MvLockForTracking), so once we hold ours it has committed or aborted.
 * A view that takes its lock after ours looks for children again
 * (MvRefuseChildrenAfterLock).
 */
static void
refuse_new_child(RangeVar *parent_rv, const char *child)
{
	Oid			parent = RangeVarGetRelidExtended(parent_rv, ShareUpdateExclusiveLock,
												  RVR_MISSING_OK, NULL, NULL);
	ListCell   *lc;

	if (!OidIsValid(parent))
		return;
	PushActiveSnapshot(GetLatestSnapshot());
	foreach(lc, list_concat(MvViewsOfSourceIn(parent, MV_LOOKUP_ACTIVE),
							HistViewsOfSource(parent)))
	{
		Oid			viewid = lfirst_oid(lc);

		if (MvViewReadsChildren(viewid, parent))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot make \"%s\" an inheritance child of \"%s\"",
							child, get_rel_name(parent)),
					 errdetail("%s \"%s\" reads \"%s\" with its inheritance children, whose changes are not captured.",
							   MvIsHistoryView(viewid) ? "History view" :
							   "Incremental materialized view",
							   get_rel_name(viewid), get_rel_name(parent)),
					 errhint("Define the view with FROM ONLY %s, or drop it first.",
							 quote_identifier(get_rel_name(parent)))));
	}
	PopActiveSnapshot();
}

/* Has the table a primary key? */
static bool
has_primary_key(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	bool		result = OidIsValid(RelationGetPrimaryKeyIndex(rel));

	relation_close(rel, NoLock);
	return result;
}

/*
 * The types of the columns of a primary key that ALTER TABLE ... ADD
 * PRIMARY KEY (or ... USING INDEX) would give relid, in key order; NIL
 * when they cannot be told (a column added by the same statement)
 */
static List *
new_primary_key_types(Oid relid, Constraint *con)
{
	List	   *types = NIL;
	ListCell   *lc;

	if (con->indexname != NULL)
	{
		Oid			index = get_relname_relid(con->indexname, get_rel_namespace(relid));
		Relation	irel;

		if (!OidIsValid(index))
			return NIL;
		irel = index_open(index, AccessShareLock);
		for (int i = 0; i < irel->rd_index->indnkeyatts; i++)
		{
			AttrNumber	attnum = irel->rd_index->indkey.values[i];

			if (attnum <= 0)
			{
				index_close(irel, AccessShareLock);
				return NIL;
			}
			types = lappend_oid(types, get_atttype(relid, attnum));
		}
		index_close(irel, AccessShareLock);
		return types;
	}
	foreach(lc, con->keys)
	{
		AttrNumber	attnum = get_attnum(relid, strVal(lfirst(lc)));

		if (attnum == InvalidAttrNumber)
			return NIL;
		types = lappend_oid(types, get_atttype(relid, attnum));
	}
	return types;
}

/*
 * Does a projection view's storage identify rows by a key of these types
 * (its hidden row identity columns, made at CREATE from the primary key)?
 */
static bool
storage_key_fits(Oid storage_oid, List *types)
{
	Relation	rel = relation_open(storage_oid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	int			n = 0;
	bool		fits = true;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strncmp(NameStr(att->attname), "_mvinc_id", 9) != 0)
			continue;
		if (n >= list_length(types) || list_nth_oid(types, n) != att->atttypid)
			fits = false;
		n++;
	}
	relation_close(rel, AccessShareLock);
	return fits && n == list_length(types);
}

/*
 * The projection views of source relid (latest snapshot); with key_types,
 * only those whose storage a primary key of these types does not fit
 */
static List *
projection_views_of(Oid relid, List *key_types)
{
	List	   *views = NIL;
	ListCell   *lv;

	foreach(lv, MvViewsOfSourceIn(relid, MV_LOOKUP_LATEST))
	{
		MvCatalog  *cat = MvCatalogLookup(lfirst_oid(lv), MV_LOOKUP_LATEST);

		if (cat == NULL || cat->kind != MV_KIND_PROJECTION)
			continue;
		if (key_types != NIL &&
			(!OidIsValid(cat->storage_oid) || storage_key_fits(cat->storage_oid, key_types)))
			continue;
		views = lappend_oid(views, lfirst_oid(lv));
	}
	return views;
}

/* Is column attname of relid one of its primary key's columns? */
static bool
in_primary_key(Oid relid, const char *attname)
{
	AttrNumber	attnum = get_attnum(relid, attname);
	Relation	rel;
	Bitmapset  *pk;
	bool		result;

	if (attnum == InvalidAttrNumber)
		return false;
	rel = relation_open(relid, AccessShareLock);
	pk = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	result = bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, pk);
	relation_close(rel, NoLock);
	return result;
}

/* "schema.view", ... for the views of a source */
static char *
view_names(List *views)
{
	StringInfoData names;
	ListCell   *lv;

	initStringInfo(&names);
	foreach(lv, views)
	{
		Oid			v = lfirst_oid(lv);

		appendStringInfo(&names, "%s\"%s.%s\"", foreach_current_index(lv) ? ", " : "",
						 get_namespace_name(get_rel_namespace(v)), get_rel_name(v));
	}
	return names.data;
}

/*
 * Refuse an ALTER TABLE of a source that incremental views cannot follow.
 *
 * ENABLE or FORCE ROW LEVEL SECURITY on the source of incremental views:
 * their stored rows are computed without the policies.
 *
 * On a tracked table, what would make change capture blind (its changes
 * would silently stop reaching the change log, and the views would go
 * wrong): another access method than heap and colfile (logical decoding
 * decodes only heap's WAL; colfile writers log row messages while tracked),
 * SET UNLOGGED (no WAL), or a replica identity that no longer
 * identifies the rows updates and deletes change (NOTHING, or DEFAULT
 * without a primary key).
 */
static void
refuse_source_alter(AlterTableStmt *stmt)
{
	Oid			relid;
	char	   *relname;
	bool		tracked;
	ListCell   *lc;
	bool		refusable = false;

	if (stmt->objtype != OBJECT_TABLE || !MvincExtensionReady())
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableType t = ((AlterTableCmd *) lfirst(lc))->subtype;

		if (t == AT_EnableRowSecurity || t == AT_ForceRowSecurity ||
			t == AT_SetAccessMethod || t == AT_SetUnLogged || t == AT_ReplicaIdentity ||
			t == AT_AlterColumnType || t == AT_AddConstraint)
			refusable = true;
	}
	if (!refusable)
		return;

	/*
	 * Lock the table as ALTER TABLE is about to (checking the user's right
	 * to alter it before waiting, as it does), then read its views and
	 * tracking in the latest snapshot.  A CREATE MATERIALIZED VIEW over
	 * the table in a transaction still open holds a lock on it (it read
	 * the table): once we have ours, that transaction has committed (its
	 * view is in the latest snapshot, if not in the statement's, taken
	 * before the wait) or aborted.  Looked up before the lock, such a view
	 * was missed, and ended over a table with row-level security (or one
	 * that capture cannot follow), every read and refresh failing.
	 */
	relid = AlterTableLookupRelation(stmt, AlterTableGetLockLevel(stmt->cmds));
	if (!OidIsValid(relid))
		return;
	PushActiveSnapshot(GetLatestSnapshot());
	relname = get_rel_name(relid);
	tracked = OidIsValid(MvChangeLogRelid(relid));

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		const char *msg = NULL;
		const char *why = NULL;

		if (cmd->subtype == AT_EnableRowSecurity || cmd->subtype == AT_ForceRowSecurity)
		{
			List	   *views = HistViewsOfSource(relid);

			if (views != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot %s row-level security on table \"%s\"",
								cmd->subtype == AT_EnableRowSecurity ? "enable" : "force",
								relname),
						 errdetail("The table is the source of history %s %s; history views do not apply row-level security policies to the versions they keep.",
								   list_length(views) > 1 ? "views" : "view", view_names(views)),
						 errhint("Drop the history views of the table first.")));
			views = MvViewsOfSourceIn(relid, MV_LOOKUP_LATEST);

			if (views != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot %s row-level security on table \"%s\"",
								cmd->subtype == AT_EnableRowSecurity ? "enable" : "force",
								relname),
						 errdetail("The table is the source of incremental materialized %s %s; incremental views do not apply row-level security policies to the rows they store.",
								   list_length(views) > 1 ? "views" : "view", view_names(views)),
						 errhint("Drop the incremental views of the table first (plain materialized views apply the owner's policies).")));
			continue;
		}
		if (cmd->subtype == AT_AlterColumnType)
		{
			/*
			 * A projection view stores its rows' primary key in hidden
			 * columns of the key's type at CREATE: a key of another type
			 * would no longer fit them (values out of range, or equal
			 * after the cast, and every refresh fails).
			 */
			List	   *views;

			if (!in_primary_key(relid, cmd->name))
				continue;
			views = projection_views_of(relid, NIL);
			if (views != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change the type of column \"%s\" of table \"%s\"",
								cmd->name, relname),
						 errdetail("The column is in the table's primary key, by which incremental materialized %s %s %s the rows %s stores.",
								   list_length(views) > 1 ? "views" : "view", view_names(views),
								   list_length(views) > 1 ? "identify" : "identifies",
								   list_length(views) > 1 ? "each" : "it"),
						 errhint("Drop the %s, change the column, and create the %s again.",
								 list_length(views) > 1 ? "views" : "view",
								 list_length(views) > 1 ? "views" : "view")));
			continue;
		}
		if (cmd->subtype == AT_AddConstraint && IsA(cmd->def, Constraint) &&
			((Constraint *) cmd->def)->contype == CONSTR_PRIMARY)
		{
			/*
			 * A new primary key (after the old one was dropped) must fit the
			 * hidden columns by which projection views identify their rows
			 * (made at CREATE): one of other types or another number of
			 * columns left them unreadable and unrefreshable for good.
			 */
			List	   *types = new_primary_key_types(relid, (Constraint *) cmd->def);
			List	   *views;

			if (types == NIL)
				continue;
			views = projection_views_of(relid, types);
			if (views != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot add this primary key to table \"%s\"", relname),
						 errdetail("Incremental materialized %s %s %s the rows %s stores by a primary key of other columns or types, made when %s created.",
								   list_length(views) > 1 ? "views" : "view", view_names(views),
								   list_length(views) > 1 ? "identify" : "identifies",
								   list_length(views) > 1 ? "each" : "it",
								   list_length(views) > 1 ? "they were" : "it was"),
						 errhint("Add a primary key of as many columns of the same types, or drop the %s, change the key, and create the %s again.",
								 list_length(views) > 1 ? "views" : "view",
								 list_length(views) > 1 ? "views" : "view")));
			continue;
		}
		if (!tracked)
			continue;
		if (cmd->subtype == AT_SetAccessMethod)
		{
			Oid			amoid = get_table_am_oid(cmd->name, true);

			/* a missing access method is PostgreSQL's error to raise */
			if (OidIsValid(amoid) && amoid != HEAP_TABLE_AM_OID &&
				!ColfileIsColfileAm(amoid))
			{
				msg = psprintf("cannot change the access method of table \"%s\"", relname);
				why = psprintf("only the changes of heap and colfile tables can be captured, not those of access method \"%s\"",
							   cmd->name);
			}
		}
		else if (cmd->subtype == AT_SetUnLogged)
		{
			msg = psprintf("cannot make table \"%s\" unlogged", relname);
			why = "the changes of unlogged tables are not written to the WAL";
		}
		else if (cmd->subtype == AT_ReplicaIdentity)
		{
			ReplicaIdentityStmt *ri = (ReplicaIdentityStmt *) cmd->def;

			HistCheckReplicaIdentity(relid, ri);
			MvCheckReplicaIdentity(relid, ri);

			if (ri->identity_type == REPLICA_IDENTITY_NOTHING ||
				(ri->identity_type == REPLICA_IDENTITY_DEFAULT &&
				 !has_primary_key(relid)))
			{
				msg = psprintf("cannot set the replica identity of table \"%s\" to identify no row", relname);
				why = "the WAL would not tell which rows its updates and deletes change";
			}
		}
		if (msg != NULL)
		{
			/* (history views too: the latest snapshot is the active one here) */
			List	   *views = list_concat(MvViewsOfSourceIn(relid, MV_LOOKUP_LATEST),
											HistViewsOfSource(relid));
			char	   *qualified =
				quote_literal_cstr(quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
															  relname));

			if (views != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s", msg),
						 errdetail("The table's changes are captured from the WAL for materialized %s %s; %s.",
								   list_length(views) > 1 ? "views" : "view", view_names(views), why),
						 errhint("Drop the %s and call mvinc.untrack(%s) first.",
								 list_length(views) > 1 ? "views" : "view", qualified)));
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s", msg),
					 errdetail("The table's changes are captured from the WAL (mvinc.track); %s.", why),
					 errhint("Call mvinc.untrack(%s) first.", qualified)));
		}
	}
	PopActiveSnapshot();
}

/*
 * DROP OWNED BY: drop the roles' incremental views first, by themselves.
 * Their storage (owned like the view, a member of the extension) would
 * otherwise be among the objects DROP OWNED drops one by one, which the
 * extension refuses; dropped with its view it goes along.
 */
static void
drop_owned_views(DropOwnedStmt *stmt)
{
	List	   *views = NIL;
	List	   *sources = NIL;
	ListCell   *lc,
			   *ls;

	foreach(lc, stmt->roles)
	{
		Oid			role = get_rolespec_oid(lfirst(lc), false);

		MvSpiOids("SELECT v.view::oid, v.source::oid FROM mvinc.mv_view v "
				  "JOIN pg_catalog.pg_class c ON c.oid = v.view WHERE c.relowner = $1",
				  1, &role, false, &views, &sources);
	}
	forboth(lc, views, ls, sources)
	{
		ObjectAddress obj;

		ObjectAddressSet(obj, RelationRelationId, lfirst_oid(lc));
		performDeletion(&obj, stmt->behavior, 0);
		CommandCounterIncrement();
		/* now, not at the statement's end (sql_drop): DROP OWNED looks next */
		MvForgetView(lfirst_oid(lc), get_rel_name(lfirst_oid(ls)) ? lfirst_oid(ls) : InvalidOid);
		CommandCounterIncrement();
	}
}

/* The ProcessUtility hook */
static void
mv_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				  ProcessUtilityContext context, ParamListInfo params,
				  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	RangeVar   *guarded_rv;
	const char *guarded_what;

	/* (refuse_mvinc_table_ddl may qualify names in the statement) */
	if (readOnlyTree && guarded_statement(parsetree, &guarded_rv, &guarded_what) &&
		!superuser() && MvincExtensionReady())
	{
		pstmt = copyObject(pstmt);
		readOnlyTree = false;
		parsetree = pstmt->utilityStmt;
	}
	refuse_mvinc_table_ddl(parsetree);
	if (IsA(parsetree, CreateTableAsStmt) &&
		((CreateTableAsStmt *) parsetree)->objtype == OBJECT_MATVIEW)
	{
		CreateTableAsStmt *stmt = (CreateTableAsStmt *) parsetree;
		MvOptions	o = split_options(stmt->into->options);

		if (o.history_given)
		{
			if (!o.history)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"mvinc.%s\" requires \"mvinc.history = true\"",
								o.hist.key ? "key" : o.hist.history_start ? "history_start" :
								"history_retention")));
			if (o.incremental || o.cluster_by || o.refresh_interval)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"mvinc.%s\" is not for history views",
								o.incremental ? "incremental" : o.cluster_by ? "cluster_by" :
								"refresh_interval"),
						 errhint("A history view is refreshed by REFRESH MATERIALIZED VIEW or loaded with mvinc.history_load().")));
			create_history(pstmt, stmt, &o, queryString, context, params, queryEnv, dest, qc);
			return;
		}
		if (o.present || o.cluster_by || o.refresh_interval)
		{
			if (!o.incremental && (o.cluster_by || o.refresh_interval))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"mvinc.%s\" requires \"mvinc.incremental = true\"",
								o.cluster_by ? "cluster_by" : "refresh_interval")));
			if (o.incremental)
			{
				create_incremental(pstmt, stmt, &o, queryString, readOnlyTree, context,
								   params, queryEnv, dest, qc);
				return;
			}
			/* mvinc.incremental = false: a plain materialized view */
			pstmt = copyObject(pstmt);
			((CreateTableAsStmt *) pstmt->utilityStmt)->into->options = o.rest;
			readOnlyTree = false;
		}
	}
	else if (IsA(parsetree, RefreshMatViewStmt))
	{
		RefreshMatViewStmt *stmt = (RefreshMatViewStmt *) parsetree;
		Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);

		if (OidIsValid(relid) && MvIsIncrementalView(relid))
		{
			refresh_incremental(stmt, relid);
			if (qc)
				SetQueryCompletion(qc, CMDTAG_REFRESH_MATERIALIZED_VIEW, 0);
			return;
		}
		if (OidIsValid(relid) && MvIsHistoryView(relid))
		{
			if (!pg_class_ownercheck(relid, GetUserId()))
				aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_MATVIEW, get_rel_name(relid));
			HistRefresh(relid, stmt->skipData);
			if (qc)
				SetQueryCompletion(qc, CMDTAG_REFRESH_MATERIALIZED_VIEW, 0);
			return;
		}
	}
	else if (IsA(parsetree, CreateStmt) && ((CreateStmt *) parsetree)->inhRelations != NIL &&
			 MvincExtensionReady())
	{
		CreateStmt *stmt = (CreateStmt *) parsetree;
		ListCell   *lc;

		foreach(lc, stmt->inhRelations)
			refuse_new_child(lfirst(lc), stmt->relation->relname);
	}
	else if (IsA(parsetree, AlterTableStmt) && MvincExtensionReady())
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		ListCell   *lc;

		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			if (cmd->subtype == AT_AddInherit)
			{
				/* the child first, then the parent, as ALTER TABLE locks them */
				(void) AlterTableLookupRelation(stmt, AlterTableGetLockLevel(stmt->cmds));
				refuse_new_child((RangeVar *) cmd->def, stmt->relation->relname);
			}
		}
		refuse_source_alter(stmt);
		if (take_mvinc_options(&pstmt))
		{
			if (pstmt == NULL)
				return;
			readOnlyTree = false;
		}
		if (stmt->objtype == OBJECT_TYPE || stmt->objtype == OBJECT_TABLE)
		{
			Oid			relid = stmt->objtype == OBJECT_TABLE ?
				RangeVarGetRelid(stmt->relation, NoLock, true) : InvalidOid;

			/* (a table's or composite's row type may be a column type anywhere) */
			run_adding_no_checks(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								 dest, qc);
			if (OidIsValid(relid))
			{
				CommandCounterIncrement();
				HistCheckSourceKeys(relid);
			}
			return;
		}
	}
	else if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_INDEX &&
			 MvincExtensionReady())
	{
		List	   *tables = NIL;
		ListCell   *lc;

		/* the tables whose indexes go: a history view's key may lose its unique index */
		foreach(lc, ((DropStmt *) parsetree)->objects)
		{
			Oid			index = RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)), NoLock, true);

			if (OidIsValid(index) && get_rel_relkind(index) == RELKIND_INDEX)
			{
				tables = lappend_oid(tables, IndexGetRelation(index, false));

				/*
				 * CONCURRENTLY commits the drop before we could object: ask
				 * first, under the lock it takes on the table (so that a
				 * second one waits until this index is invalid, and is
				 * judged without it)
				 */
				if (((DropStmt *) parsetree)->concurrent)
				{
					LockRelationOid(llast_oid(tables), ShareUpdateExclusiveLock);
					HistCheckSourceKeysWithout(llast_oid(tables), index);
				}
			}
			else if (OidIsValid(index) && get_rel_relkind(index) == RELKIND_PARTITIONED_INDEX)
				/* its partitions' indexes go too */
				tables = list_concat(tables,
									 find_all_inheritors(IndexGetRelation(index, false), NoLock, NULL));
		}
		call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		if (((DropStmt *) parsetree)->concurrent)
			return;
		CommandCounterIncrement();
		foreach(lc, tables)
			HistCheckSourceKeys(lfirst_oid(lc));
		return;
	}
	else if ((IsA(parsetree, CreateFunctionStmt) || IsA(parsetree, DefineStmt)) &&
			 MvFollowFunctionReplace())
	{
		MvFunctionRows *before = MvFunctionBeingReplaced(parsetree);

		call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		if (before)
		{
			CommandCounterIncrement();
			MvFunctionReplaced(before);
		}
		return;
	}
	else if (IsA(parsetree, AlterDomainStmt) && MvincExtensionReady())
	{
		run_adding_no_checks(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		return;
	}
	else if (IsA(parsetree, DropdbStmt))
	{
		Oid			dboid = get_database_oid(((DropdbStmt *) parsetree)->dbname, true);

		/* its automatic refreshes would keep the database busy */
		if (OidIsValid(dboid))
			MvStopRefreshersOf(dboid);
	}
	else if (IsA(parsetree, DropOwnedStmt) && MvincExtensionReady())
		drop_owned_views((DropOwnedStmt *) parsetree);
	else if (IsA(parsetree, ReassignOwnedStmt) && MvincExtensionReady())
	{
		call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		MvSyncStorageOwners();
		return;
	}
	else if (IsA(parsetree, TruncateStmt))
	{
		ListCell   *lc;

		foreach(lc, ((TruncateStmt *) parsetree)->relations)
			refuse_into(lfirst(lc), "truncate");
	}
	else if (IsA(parsetree, CopyStmt))
	{
		CopyStmt   *stmt = (CopyStmt *) parsetree;

		if (stmt->is_from && stmt->relation)
			refuse_into(stmt->relation, "copy into");
	}
	call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
}

/*
 * The columns of tracked tables and of views (incremental and history)
 * whose types run a domain CHECK (MvTypeCheckedDomain), as "relid:attnum".
 * Refresh, reads and capture cast and store their values with elevated
 * rights; a non-superuser may not add any (see run_adding_no_checks).
 */
static List *
checked_domain_columns(void)
{
	List	   *rels = NIL;
	List	   *found = NIL;
	ListCell   *lc;
	uint64		i;

	MvSpiConnect();
	if (SPI_execute("SELECT relid::oid FROM mvinc.tracked UNION SELECT view::oid FROM mvinc.mv_view "
					"UNION SELECT view::oid FROM mvinc.history_view ORDER BY 1", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the tracked tables and views");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			rels = lappend_oid(rels, DatumGetObjectId(d));
	}
	MvSpiFinish();
	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel;
		TupleDesc	desc;

		if (!OidIsValid(get_rel_type_id(relid)))
			continue;			/* dropped meanwhile */
		rel = relation_open(relid, AccessShareLock);
		desc = RelationGetDescr(rel);
		for (int a = 0; a < desc->natts; a++)
			if (!TupleDescAttr(desc, a)->attisdropped &&
				OidIsValid(MvTypeCheckedDomain(TupleDescAttr(desc, a)->atttypid)))
				found = lappend(found, psprintf("%u:%d", relid, a + 1));
		relation_close(rel, AccessShareLock);
	}
	return found;
}

static bool
string_member(List *list, const char *s)
{
	ListCell   *lc;

	foreach(lc, list)
		if (strcmp(lfirst(lc), s) == 0)
			return true;
	return false;
}

/*
 * Run a non-superuser's ALTER DOMAIN, ALTER TYPE or ALTER TABLE, undoing
 * it with an error if it gave a column of a tracked table or of a view a
 * type that runs a domain CHECK it did not run before (what a superuser
 * set up stays as it was).
 */
static void
run_adding_no_checks(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					 ProcessUtilityContext context, ParamListInfo params,
					 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	List	   *before;
	ListCell   *lc;

	if (superuser())
	{
		call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		return;
	}
	before = checked_domain_columns();
	call_next(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	CommandCounterIncrement();
	foreach(lc, checked_domain_columns())
	{
		Oid			relid;
		int			attnum;

		if (string_member(before, lfirst(lc)))
			continue;
		if (sscanf(lfirst(lc), "%u:%d", &relid, &attnum) != 2)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("column \"%s\" of \"%s\" would be of a type that runs the CHECK constraint of domain %s",
						get_attname(relid, attnum, false), get_rel_name(relid),
						format_type_be(MvTypeCheckedDomain(get_atttype(relid, attnum)))),
				 errdetail("Its values are cast and stored with elevated rights for materialized views, and a CHECK may run any code."),
				 errhint("Only a superuser can do this.")));
	}
}

/* Install the ProcessUtility hook */
void
MvUtilityInit(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = mv_ProcessUtility;
}
