/*-------------------------------------------------------------------------
 * mv_readquery.c
 *	  The read query of a view: what a reference to an incremental view is
 *	  replaced by (a UNION ALL of guarded arms over its storage, append
 *	  table, pending changes and defining query, read as the view's owner),
 *	  cached per backend and locked at each use; and a history view's read
 *	  of its storage.  mv_read.c decides where to splice it in.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "catalog/heap.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "history/history.h"
#include "mv/aggstate.h"
#include "mv/mv.h"

/* Walker: set checkAsUser on every relation read by the redirect query */
static bool
set_owner_walker(Node *node, Oid *owner)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			rte->checkAsUser = *owner;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, set_owner_walker, owner,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, set_owner_walker, owner);
}

/* SQL of the view's query (pg_get_viewdef without the final semicolon) */
static char *
view_query_sql(Oid viewid)
{
	char	   *def = pg_get_querydef(MvDefForView(viewid)->query, false);
	int			len = strlen(def);

	while (len > 0 && (def[len - 1] == ';' || isspace((unsigned char) def[len - 1])))
		def[--len] = '\0';
	return def;
}

/* Does the storage hold every aggregate's result (f<n> columns)? */
static bool
has_stored_finals(Oid storage_oid, MvDef *def)
{
	ListCell   *lc;

	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);

		if (col->role == MV_COL_AGG && !col->derived_count &&
			get_attnum(storage_oid, MvStoredFinalName(col)) == InvalidAttrNumber)
			return false;
	}
	return true;
}

/*
 * SELECT of the view's columns from the state rows of FROM item from
 * (alias t): the stored results when there are (finals), else each state
 * finalized; expression columns one level up, over columns that carry
 * their parts (MvPartsColumnsSql).
 */
static char *
view_rows_sql(Oid viewid, MvDef *def, bool finals, const char *from)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *parts = MvPartsColumnsSql(def, finals);

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, def->viewcols)
	{
		MvColumn   *col = lfirst(lc);
		char	   *phys = col->physname ? psprintf("t.%s", quote_identifier(col->physname)) : NULL;
		char	   *type = MvTypeSql(col->typid, col->typmod);

		if (col->role == MV_COL_AGG && !col->derived_count)
			phys = finals ? psprintf("t.%s", quote_identifier(MvStoredFinalName(col))) :
				MvStateFinalSql(col, phys);
		else if (col->role == MV_COL_EXPR)
			phys = MvPartsExprSql(def, col);
		appendStringInfo(&sql, "%s(%s)::%s AS %s", foreach_current_index(lc) ? ", " : "",
						 phys, type, quote_identifier(get_attname(viewid, col->attnum, false)));
	}
	if (parts[0] == '\0')
		appendStringInfo(&sql, " FROM %s t", from);
	else
		appendStringInfo(&sql, " FROM (SELECT t.*%s FROM %s t) t", parts, from);
	return sql.data;
}

/*
 * SQL of the view's contents as stored: the storage (merged with the
 * append table when the view has one), finalized into the view's columns.
 * Used by mvinc.verify_view, which compares it with the view's query.
 */
char *
MvStoredContentSql(Oid viewid, MvCatalog *cat)
{
	MvDef	   *def = MvDefForView(viewid);
	bool		finals = has_stored_finals(cat->storage_oid, def);

	char	   *sql;

	if (OidIsValid(cat->append_oid))
		sql = view_rows_sql(viewid, def, finals,
							psprintf("(%s)", MvAppendMergedSql(def, cat->storage_oid,
															   cat->append_oid, finals)));
	else
		sql = view_rows_sql(viewid, def, finals,
							psprintf("mvinc.%s", quote_identifier(get_rel_name(cat->storage_oid))));
	if (def->having)
		sql = psprintf("SELECT * FROM (%s) v WHERE %s", sql, MvExprSql(viewid, def->having, "v"));
	return sql;
}

/* SQL of the view's defining query */
char *
MvViewQuerySql(Oid viewid)
{
	return view_query_sql(viewid);
}

/*
 * FROM item of the view's rows in a hybrid read: the storage and the
 * append table's state rows merged with the states of the inserts of the
 * reader's visible delta, all but the groups that the delta's updates and
 * deletes touched, which come as they now are.  mvinc._delta_states() and
 * mvinc._delta_replaced() compute both sides at run time (mv_hybrid.c).
 * A projection view's: the stored rows that the delta did not touch, and
 * the touched ones as the delta's last images leave them.
 */
static char *
hybrid_rows_sql(Oid viewid, MvDef *def, MvCatalog *cat, bool finals)
{
	StringInfoData cols;
	ListCell   *lc;
	char	   *inserts;
	char	   *replaced;
	char	   *storage = psprintf("mvinc.%s", quote_identifier(get_rel_name(cat->storage_oid)));
	char	   *states;
	char	   *kept;

	initStringInfo(&cols);
	foreach(lc, def->columns)
	{
		MvColumn   *col = lfirst(lc);

		appendStringInfo(&cols, "%s%s %s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(col->physname), MvStorageColumnType(col));
	}
	if (def->kind == MV_KIND_PROJECTION)
	{
		/* the rows the delta touched, as its last images leave them */
		replaced = psprintf("mvinc._delta_replaced(%u::pg_catalog.oid) AS r(%s, "
							"_mvinc_present pg_catalog.bool)", viewid, cols.data);
		return psprintf("SELECT %s FROM mvinc.%s t WHERE NOT EXISTS (SELECT FROM %s WHERE %s) "
						"UNION ALL SELECT %s FROM %s WHERE r._mvinc_present",
						MvColumnListSql(def, -1, "t."), quote_identifier(get_rel_name(cat->storage_oid)),
						replaced, MvRowidEqSql(def, "t", "r"), MvColumnListSql(def, -1, "r."),
						replaced);
	}
	inserts = psprintf("SELECT * FROM mvinc._delta_states(%u::pg_catalog.oid) AS d(%s)",
					   viewid, cols.data);
	replaced = psprintf("mvinc._delta_replaced(%u::pg_catalog.oid) AS r(%s)", viewid, cols.data);

	/* what the stored rows keep: the groups not replaced (without GROUP BY, none when replaced) */
	kept = psprintf("NOT EXISTS (SELECT FROM %s%s%s)", replaced,
					def->has_group_by ? " WHERE " : "",
					def->has_group_by ? MvKeyEqSql(def, "t", false, "r") : "");
	storage = psprintf("(SELECT * FROM %s t WHERE %s)", storage, kept);
	if (def->has_group_by)
		states = MvHybridMergedSql(def, storage,
								   OidIsValid(cat->append_oid) ?
								   psprintf("SELECT * FROM mvinc.%s t WHERE %s",
											quote_identifier(get_rel_name(cat->append_oid)), kept)
								   : NULL,
								   inserts, finals);
	else
	{
		/* a view without GROUP BY has no append table: its one row merged */
		Assert(!OidIsValid(cat->append_oid));
		states = MvMergedSql(def, storage, psprintf("(%s)", inserts), finals);
	}
	return psprintf("%s UNION ALL %s", states,
					MvStateRowsSql(def, finals,
								   psprintf("(SELECT * FROM %s%s) a", replaced,
											def->has_group_by ? " WHERE r._mvinc_count > 0" : "")));
}

/*
 * Each arm of the read's UNION ALL is a security barrier: a condition of
 * the reader's that is not leakproof (it may raise an error or show its
 * argument) runs on the arm's rows, never on the stored, appended or delta
 * rows below its filters (groups left empty, rows about to be replaced).
 * Leakproof ones (equality on a key, say) still go down to the indexes.
 */
static void
barrier_arms(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL)
			continue;
		if (rte->subquery->setOperations != NULL)
			barrier_arms(rte->subquery);
		else
			rte->security_barrier = true;
	}
}

/*
 * Parse, analyze and rewrite the SQL of a read query (one SELECT) with
 * search_path pinned as internal statements run it (mv_init.c): its
 * operators (ARRAY[..] = ARRAY[..], _mvinc_count > 0), functions and casts
 * are meant as pg_catalog's and mvinc's, and an object of the same name
 * in a schema on the reader's path must not stand in for them (it would
 * change the answer, and run as the reader).  Objects of the view's
 * definition come deparsed under the same path, qualified.
 */
static Query *
analyze_read_sql(const char *sql, const char *what, Oid viewid)
{
	List	   *raw;
	Query	   *q;
	List	   *rewritten;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, NULL, 0, NULL);
	rewritten = QueryRewrite(q);
	AtEOXact_GUC(true, nest);
	if (list_length(rewritten) != 1)
		elog(ERROR, "unexpected rewrite result for %s %u", what, viewid);
	return linitial_node(Query, rewritten);
}

/* Build the analyzed and rewritten read query of a view (cat: its catalog row) */
static Query *
build_read_query(Oid viewid, MvCatalog *cat)
{
	MvDef	   *def = MvDefForView(viewid);
	StringInfoData sql;
	Query	   *q;
	Oid			owner = MvRelOwner(viewid);
	int			nest = NewGUCNestLevel();

	/*
	 * Deparse (the defining query, HAVING, the state expressions) under the
	 * pinned search_path too, so that whatever is not pg_catalog's comes
	 * out schema-qualified and the text means the same when analyzed.
	 */
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT * FROM (");
	if (cat && OidIsValid(cat->storage_oid))
	{
		char	   *branch = psprintf("mvinc._read_branch(%u::pg_catalog.oid)", viewid);
		char	   *storage = psprintf("mvinc.%s", quote_identifier(get_rel_name(cat->storage_oid)));
		bool		finals = has_stored_finals(cat->storage_oid, def);

		StringInfoData taken;

		initStringInfo(&taken);
		appendStringInfo(&sql, "%s WHERE %s = 'fresh' UNION ALL ",
						 view_rows_sql(viewid, def, finals, storage), branch);
		appendStringInfoString(&taken, "'fresh'");
		if (OidIsValid(cat->append_oid))
		{
			appendStringInfo(&sql, "%s WHERE %s = 'merge' UNION ALL ",
							 view_rows_sql(viewid, def, finals,
										   psprintf("(%s)", MvAppendMergedSql(def, cat->storage_oid,
																			  cat->append_oid, finals))),
							 branch);
			appendStringInfoString(&taken, ", 'merge'");
		}
		if (MvHybridCapable(def))
		{
			appendStringInfo(&sql, "%s WHERE %s = 'hybrid' UNION ALL ",
							 view_rows_sql(viewid, def, finals,
										   psprintf("(%s)", hybrid_rows_sql(viewid, def, cat, finals))),
							 branch);
			appendStringInfoString(&taken, ", 'hybrid'");
		}
		/* the query answers whatever no branch above takes */
		appendStringInfo(&sql, "SELECT * FROM (%s) q WHERE %s NOT IN (%s)",
						 view_query_sql(viewid), branch, taken.data);
	}
	else
		appendStringInfo(&sql, "%s", view_query_sql(viewid));
	appendStringInfoString(&sql, ") v");
	/* HAVING on the view's rows (the defining query applied it already: harmless) */
	if (def->having)
		appendStringInfo(&sql, " WHERE %s", MvExprSql(viewid, def->having, "v"));

	q = analyze_read_sql(sql.data, "incremental view", viewid);
	AtEOXact_GUC(true, nest);
	set_owner_walker((Node *) q, &owner);
	/* its states come from the storage: any aggregate's may be read */
	MvincAggMarkReadCalls((Node *) q);
	barrier_arms(q);
	return q;
}

/*
 * Per backend: the analyzed read query of each view, as last built.  It
 * depends on the view (its definition, columns and owner: changes to them
 * send the view's relcache invalidation) and on its storage and append
 * tables (checked against the catalog at each use); rebuilding it meant
 * deparsing, parsing and analyzing the SQL above at every planning.
 */
typedef struct ReadQueryEntry
{
	Oid			viewid;
	Oid			storage_oid;
	Oid			append_oid;
	MemoryContext cxt;			/* holds query */
	Query	   *query;
} ReadQueryEntry;

static HTAB *read_query_cache = NULL;

static void
forget_read_query(ReadQueryEntry *entry)
{
	if (entry->cxt)
		MemoryContextDelete(entry->cxt);
	hash_search(read_query_cache, &entry->viewid, HASH_REMOVE, NULL);
}

static void
read_query_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	ReadQueryEntry *entry;

	if (OidIsValid(relid))
	{
		entry = hash_search(read_query_cache, &relid, HASH_FIND, NULL);
		if (entry)
			forget_read_query(entry);
		return;
	}
	hash_seq_init(&status, read_query_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		forget_read_query(entry);
}

/* The read query of a view, with the view's own entry for its rights check */
Query *
MvReadQuery(Oid viewid, RangeTblEntry *orig)
{
	/* the statement's snapshot when planning has one: no SQL */
	MvCatalog  *cat = MvCatalogLookup(viewid, MV_LOOKUP_ACTIVE);
	Oid			storage_oid = cat ? cat->storage_oid : InvalidOid;
	Oid			append_oid = cat ? cat->append_oid : InvalidOid;
	ReadQueryEntry *entry;
	bool		found;
	Query	   *q;
	RangeTblEntry *placeholder;

	if (read_query_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ReadQueryEntry);
		read_query_cache = hash_create("mvinc read queries", 64, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(read_query_inval, (Datum) 0);
	}
	entry = hash_search(read_query_cache, &viewid, HASH_FIND, NULL);
	if (entry && (entry->storage_oid != storage_oid || entry->append_oid != append_oid))
	{
		forget_read_query(entry);
		entry = NULL;
	}
	if (entry)
		q = copyObject(entry->query);
	else
	{
		MemoryContext cxt;
		MemoryContext old;

		q = build_read_query(viewid, cat);
		cxt = AllocSetContextCreate(CacheMemoryContext, "mvinc read query",
									ALLOCSET_SMALL_SIZES);
		old = MemoryContextSwitchTo(cxt);
		entry = hash_search(read_query_cache, &viewid, HASH_ENTER, &found);
		entry->storage_oid = storage_oid;
		entry->append_oid = append_oid;
		entry->cxt = cxt;
		entry->query = copyObject(q);
		MemoryContextSwitchTo(old);
	}

	/*
	 * Lock what it reads (storage, append table, source, change log) as
	 * parse analysis would: a cached copy was analyzed by an earlier
	 * statement, whose locks are gone, and the planner and executor lock
	 * only what they are told is already locked.  Unlocked, a scan met a
	 * recluster's or VACUUM FULL's new file half made (no rows), and
	 * readers deadlocked with a recluster (they held only an index).
	 */
	AcquireRewriteLocks(q, true, false);

	/* Keep the view itself in the range table, for permission checks */
	placeholder = copyObject(orig);
	placeholder->inFromCl = false;
	q->rtable = lappend(q->rtable, placeholder);
	return q;
}



/* Owner of a relation */
Oid
MvRelOwner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Append to q, unreferenced, the relations the view's defining query
 * reads, with that query's rights checks (its owner's, the columns it
 * reads): a read showing changes of the source made since the last
 * refresh requires what a refresh requires.  (Incremental views' read
 * queries hold the defining query itself.)
 */
static void
append_definition_perms(Query *q, Oid viewid)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	ListCell   *lc;

	foreach(lc, MvMatviewQuery(rel)->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind != RTE_RELATION || rte->requiredPerms == 0)
			continue;
		LockRelationOid(rte->relid, rte->rellockmode);
		rte = copyObject(rte);
		rte->inFromCl = false;
		rte->inh = false;
		q->rtable = lappend(q->rtable, rte);
	}
	relation_close(rel, NoLock);
}

/*
 * The read query of a history view: its storage, read as the view's
 * owner, with the view's own entry kept for the reader's rights check and,
 * unless it is fed by snapshots, the source's for the owner's.  NULL when
 * the view has no storage (restored, not adopted yet).
 */
Query *
MvHistoryReadQuery(Oid viewid, RangeTblEntry *orig)
{
	bool		reads_changes;
	char	   *sql = HistReadSql(viewid, &reads_changes);
	Oid			owner = MvRelOwner(viewid);
	Query	   *q;
	RangeTblEntry *placeholder;

	if (sql == NULL)
		return NULL;
	/* (its key and valid_from comparisons are pg_catalog's operators) */
	q = analyze_read_sql(sql, "history view", viewid);
	set_owner_walker((Node *) q, &owner);
	placeholder = copyObject(orig);
	placeholder->inFromCl = false;
	q->rtable = lappend(q->rtable, placeholder);
	if (reads_changes)
		append_definition_perms(q, viewid);
	return q;
}
