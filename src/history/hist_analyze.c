/*-------------------------------------------------------------------------
 * hist_analyze.c
 *	  Query analysis of history views: the shapes incremental views refuse
 *	  are refused here too (mv_analyze.c), plus aggregates; the key named by
 *	  mvinc.key must be plain NOT NULL columns that a primary key or unique
 *	  constraint of the source covers.  Also adds the interval columns to
 *	  the matview's query and rebuilds the definition of an existing view.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "history/history.h"
#include "mv/mv.h"

/* Is the column NOT NULL? */
static bool
column_not_null(Oid relid, AttrNumber attnum)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
	bool		notnull;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for attribute %d of relation %u", attnum, relid);
	notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
	ReleaseSysCache(tup);
	return notnull;
}

static void
refuse(const char *viewname, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("materialized view \"%s\" cannot be kept as a history view", viewname),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

/*
 * An index a DROP INDEX CONCURRENTLY is about to drop: the checks below
 * judge the source without it (HistCheckSourceKeysWithout)
 */
static Oid	index_going = InvalidOid;

static void check_source_keys(Oid relid);

/*
 * Is every key column of index (on relid) one of the view's key columns
 * (matched by attnum on the source, by name on another table, e.g. a
 * snapshot)?  Under a nondeterministic collation the index must compare
 * as the key does: one unique by bytes may hold two rows the view's key
 * calls equal.
 */
static bool
index_within_keys(Relation index, Oid relid, HistDef *def)
{
	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attno = index->rd_index->indkey.values[i];
		const char *name = relid == def->sourceid ? NULL : get_attname(relid, attno, false);
		HistColumn *key = NULL;
		ListCell   *lc;

		foreach(lc, def->keys)
		{
			HistColumn *col = lfirst(lc);

			if (name == NULL ? col->srcattnum == attno :
				strcmp(get_attname(def->sourceid, col->srcattnum, false), name) == 0)
				key = col;
		}
		if (key == NULL)
			return false;
		if (OidIsValid(key->collation) && !get_collation_isdeterministic(key->collation) &&
			index->rd_indcollation[i] != key->collation)
			return false;
	}
	return true;
}

/* Is an index usable as proof of one row per key: unique, valid, immediate, on plain columns? */
static bool
index_is_plain_unique(Relation index)
{
	return index->rd_index->indisunique && index->rd_index->indisvalid &&
		index->rd_index->indimmediate &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL);
}

/*
 * Does a unique, valid, non-partial index on plain columns of relid lie
 * within the key?  Then relid holds at most one row per key.
 */
bool
HistKeyIsUnique(HistDef *def, Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	bool		unique = false;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		unique |= index_is_plain_unique(index) && index_within_keys(index, relid, def);
		index_close(index, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	return unique;
}

/*
 * Check that keys identify a source row (some unique, non-partial index
 * on plain columns lies within them) and find whether the replica
 * identity's old images carry them (else capture logs whole old rows).
 */
static void
check_key_unique(HistDef *def, const char *viewname, const char *keytext)
{
	Relation	rel = table_open(def->sourceid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	Oid			replica = RelationGetReplicaIndex(rel);
	bool		unique = false;
	ListCell   *lc;

	def->full_old_rows = rel->rd_rel->relreplident != REPLICA_IDENTITY_FULL;
	foreach(lc, indexes)
	{
		Relation	index;

		if (lfirst_oid(lc) == index_going)
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);

		/* a deferrable one lets two rows share a key within a transaction */
		if (index_is_plain_unique(index) && index_within_keys(index, def->sourceid, def))
			unique = true;
		/* key-only old images hold the identity columns: enough if they hold the key */
		if (lfirst_oid(lc) == replica && rel->rd_rel->relreplident != REPLICA_IDENTITY_FULL)
		{
			int			i;
			int			found = 0;

			for (i = 0; i < index->rd_index->indnkeyatts; i++)
			{
				ListCell   *lk;

				foreach(lk, def->keys)
					if (((HistColumn *) lfirst(lk))->srcattnum == index->rd_index->indkey.values[i])
						found++;
			}
			if (found == list_length(def->keys))
				def->full_old_rows = false;
		}
		index_close(index, AccessShareLock);
	}
	if (!unique)
		refuse(viewname,
			   psprintf("No primary key or unique constraint of \"%s\" lies within the key (%s), so it may not identify one row.",
						RelationGetRelationName(rel), keytext),
			   "Name in mvinc.key the columns of a primary key or unique constraint of the source, or add one.");
	table_close(rel, AccessShareLock);
}

/*
 * Validate a history view's query and options.  colnames: the column
 * names given in CREATE (may be shorter than the select list).
 */
HistDef *
HistAnalyze(Query *query, List *colnames, const char *viewname, HistOptions *opts)
{
	MvDef	   *mv = MvAnalyzeHistoryQuery(query, viewname);
	HistDef    *def = palloc0(sizeof(HistDef));
	char	   *keycopy;
	List	   *keynames;
	ListCell   *lc;
	ListCell   *ln = list_head(colnames);

	if (mv->kind == MV_KIND_AGGREGATE)
		refuse(viewname, "The query uses aggregates or GROUP BY.",
			   "A history view keeps versions of source rows; define an incremental view for aggregates.");
	def->sourceid = mv->sourceid;
	def->where = mv->where;
	foreach(lc, mv->viewcols)
	{
		MvColumn   *mc = lfirst(lc);
		HistColumn *col = palloc0(sizeof(HistColumn));
		TargetEntry *tle = list_nth(query->targetList, mc->attnum - 1);

		col->name = ln ? strVal(lfirst(ln)) : tle->resname;
		if (ln)
			ln = lnext(colnames, ln);
		col->expr = mc->expr;
		col->typid = mc->typid;
		col->typmod = mc->typmod;
		col->collation = mc->collation;
		if (strcmp(col->name, "valid_from") == 0 || strcmp(col->name, "valid_to") == 0 ||
			strncmp(col->name, "_mvinc_", 7) == 0)
			refuse(viewname, psprintf("The query selects a column named \"%s\".", col->name),
				   "A history view adds valid_from and valid_to itself; rename the column.");
		def->columns = lappend(def->columns, col);
	}

	if (opts->key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("history view \"%s\" needs option \"mvinc.key\"", viewname),
				 errhint("Name the columns that identify a source row, e.g. WITH (mvinc.history = true, mvinc.key = 'id').")));
	keycopy = pstrdup(opts->key);
	if (!SplitIdentifierString(keycopy, ',', &keynames) || keynames == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"mvinc.key\": \"%s\"", opts->key),
				 errhint("Give a comma-separated list of the view's column names.")));
	foreach(lc, keynames)
	{
		char	   *name = lfirst(lc);
		HistColumn *found = NULL;
		ListCell   *lcol;

		foreach(lcol, def->columns)
			if (strcmp(((HistColumn *) lfirst(lcol))->name, name) == 0)
				found = lfirst(lcol);
		if (found == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of history view \"%s\" is not a column of the view",
							name, viewname),
					 errhint("Name in mvinc.key columns that the query selects.")));
		if (found->is_key)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("key column \"%s\" appears twice in option \"mvinc.key\"", name)));
		if (!IsA(found->expr, Var) || ((Var *) found->expr)->varattno <= 0)
			refuse(viewname, psprintf("Key column \"%s\" is an expression.", name),
				   "Select the source's key columns themselves and name them in mvinc.key.");
		found->is_key = true;
		found->srcattnum = ((Var *) found->expr)->varattno;
		if (!column_not_null(def->sourceid, found->srcattnum))
			refuse(viewname,
				   psprintf("Key column \"%s\" may be NULL in \"%s\".", name,
							get_rel_name(def->sourceid)),
				   "Use NOT NULL columns (a primary key) as the key.");
		def->keys = lappend(def->keys, found);
	}
	check_key_unique(def, viewname, opts->key);
	return def;
}

/*
 * The matview's query: the projection plus valid_from and valid_to, NULL
 * (the matview's own relation stays empty; reads go to the storage).
 */
Query *
HistAddIntervalColumns(Query *query)
{
	Query	   *q = copyObject(query);
	int			n = list_length(q->targetList);
	ListCell   *lc;

	foreach(lc, q->targetList)
		if (((TargetEntry *) lfirst(lc))->resjunk)
			elog(ERROR, "unexpected hidden column in a history view's query");
	q->targetList = lappend(q->targetList,
							makeTargetEntry((Expr *) makeNullConst(TIMESTAMPTZOID, -1, InvalidOid),
											n + 1, pstrdup("valid_from"), false));
	q->targetList = lappend(q->targetList,
							makeTargetEntry((Expr *) makeNullConst(TIMESTAMPTZOID, -1, InvalidOid),
											n + 2, pstrdup("valid_to"), false));
	return q;
}

/*
 * The definition of an existing history view: its rule's query without
 * the interval columns, the columns named as in its storage (whose names
 * never change; a RENAME of the view's columns renames only the view's).
 */
HistDef *
HistDefForView(Oid viewid, HistCatalog *cat)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	Query	   *q = MvMatviewQuery(rel);
	List	   *colnames = NIL;
	HistOptions opts = {0};
	HistDef    *def;
	int			n;
	int			i;

	n = list_length(q->targetList) - 2;
	q->targetList = list_truncate(q->targetList, n);
	for (i = 1; i <= n; i++)
	{
		char	   *name = OidIsValid(cat->storage_oid) ? get_attname(cat->storage_oid, i, false)
			: NameStr(TupleDescAttr(RelationGetDescr(rel), i - 1)->attname);

		colnames = lappend(colnames, makeString(pstrdup(name)));
	}
	opts.key = cat->key_list;
	def = HistAnalyze(q, colnames, RelationGetRelationName(rel), &opts);
	relation_close(rel, NoLock);
	return def;
}

/* The history views of a source table */
List *
HistViewsOfSource(Oid relid)
{
	List	   *views = NIL;

	if (MvincExtensionReady())
		MvSpiOids("SELECT view::oid FROM mvinc.history_view WHERE source = $1::regclass",
				  1, &relid, true, &views, NULL);
	return views;
}

/* Attribute numbers of the key columns of an index of relid */
static Bitmapset *
index_columns(Oid indexoid)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	Bitmapset  *cols = NULL;
	int			i;

	for (i = 0; i < index->rd_index->indnkeyatts; i++)
		cols = bms_add_member(cols, index->rd_index->indkey.values[i]);
	index_close(index, AccessShareLock);
	return cols;
}

/*
 * ALTER TABLE relid REPLICA IDENTITY ...: refuse an identity whose old
 * rows would lack the key of a history view of the table (its deletes
 * and key changes could not be told apart).  FULL always holds it.
 */
void
HistCheckReplicaIdentity(Oid relid, ReplicaIdentityStmt *ri)
{
	Bitmapset  *identity = NULL;
	List	   *views;
	ListCell   *lc;

	if (ri->identity_type == REPLICA_IDENTITY_FULL || ri->identity_type == REPLICA_IDENTITY_NOTHING)
		return;
	if (ri->identity_type == REPLICA_IDENTITY_DEFAULT)
	{
		Relation	rel = table_open(relid, AccessShareLock);
		Oid			pk = RelationGetPrimaryKeyIndex(rel);

		table_close(rel, AccessShareLock);
		if (OidIsValid(pk))
			identity = index_columns(pk);
	}
	else
	{
		Oid			index = get_relname_relid(ri->name, get_rel_namespace(relid));

		if (!OidIsValid(index))
			return;				/* PostgreSQL says so */
		identity = index_columns(index);
	}

	views = HistViewsOfSource(relid);
	foreach(lc, views)
	{
		Oid			viewid = lfirst_oid(lc);
		HistCatalog *cat = HistCatalogLookup(viewid, false);
		HistDef    *def;
		ListCell   *lk;

		if (cat == NULL)
			continue;
		def = HistDefForView(viewid, cat);
		foreach(lk, def->keys)
			if (!bms_is_member(((HistColumn *) lfirst(lk))->srcattnum, identity))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change the replica identity of table \"%s\"", get_rel_name(relid)),
						 errdetail("History view \"%s\" needs the key (%s) in the old rows of updates and deletes, which the new identity does not hold.",
								   get_rel_name(viewid), cat->key_list),
						 errhint("Use REPLICA IDENTITY FULL, or an index that includes the key.")));
	}
}

/*
 * After an ALTER TABLE or DROP INDEX on relid: each of its history views
 * still has its key unique (a primary key or unique constraint covers it;
 * HistDefForView checks) and in the replica identity (the old rows of updates and deletes carry
 * it).  An error undoes the statement: without them the view could never
 * be refreshed or read again.
 */
void
HistCheckSourceKeys(Oid relid)
{
	HistCheckSourceKeysWithout(relid, InvalidOid);
}

/*
 * The same, judging relid as if index were gone: before a DROP INDEX
 * CONCURRENTLY, whose drop has committed by the time HistCheckSourceKeys
 * could object.
 */
void
HistCheckSourceKeysWithout(Oid relid, Oid index)
{
	PG_TRY();
	{
		index_going = index;
		check_source_keys(relid);
	}
	PG_FINALLY();
	{
		index_going = InvalidOid;
	}
	PG_END_TRY();
}

static void
check_source_keys(Oid relid)
{
	List	   *views = HistViewsOfSource(relid);
	ListCell   *lc;

	foreach(lc, views)
	{
		Oid			viewid = lfirst_oid(lc);
		HistCatalog *cat = HistCatalogLookup(viewid, false);
		HistDef    *def;
		Relation	rel;
		char		ident;
		Oid			index;
		ListCell   *lk;

		if (cat == NULL)
			continue;
		/* (refuses a source whose key lost its last unique index) */
		def = HistDefForView(viewid, cat);
		rel = table_open(relid, AccessShareLock);
		ident = rel->rd_rel->relreplident;
		index = RelationGetReplicaIndex(rel);
		table_close(rel, AccessShareLock);
		if (index == index_going)
			index = InvalidOid;
		if (ident == REPLICA_IDENTITY_FULL)
			continue;
		foreach(lk, def->keys)
			if (!OidIsValid(index) ||
				!bms_is_member(((HistColumn *) lfirst(lk))->srcattnum, index_columns(index)))
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("history view \"%s\" needs its key (%s) in the replica identity of table \"%s\"",
								get_rel_name(viewid), cat->key_list, get_rel_name(relid)),
						 errdetail("Without it, the old rows of updates and deletes would not say which key they change."),
						 errhint("Set REPLICA IDENTITY FULL or USING INDEX on an index that includes the key first, or drop the history view.")));
	}
}
