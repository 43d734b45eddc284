/*-------------------------------------------------------------------------
 * colfile_admin.c
 *	  Compaction on the user's terms: per-table thresholds
 *	  (mvinc.colfile_settings, mvinc.colfile_set_compaction), compaction on
 *	  demand (mvinc.colfile_compact), and the row groups a user can name
 *	  to it (mvinc.colfile_row_groups).
 *
 * PostgreSQL 15 gives table access methods no reloptions of their own, so
 * the thresholds live in a small catalog table keyed by the table's oid
 * (they outlive TRUNCATE and VACUUM FULL, which change the relfilenode,
 * and go with DROP TABLE: colfile_init.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

PG_FUNCTION_INFO_V1(colfile_set_compaction);
PG_FUNCTION_INFO_V1(colfile_compact);
PG_FUNCTION_INFO_V1(colfile_row_groups);

double		colfile_compact_file_fraction = 0.25;

#define Natts_settings 3

static Oid
settings_rel(Oid *index)
{
	Oid			nsp = get_namespace_oid("mvinc", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("colfile_settings", nsp) : InvalidOid;

	if (index)
		*index = OidIsValid(nsp) ? get_relname_relid("colfile_settings_pkey", nsp) : InvalidOid;
	return rel;
}

/* The settings tuple of relid, or NULL (scan left open: caller ends it) */
static HeapTuple
find_settings(Relation meta, Oid index, Oid relid, SysScanDesc *scan)
{
	ScanKeyData key[1];

	ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	*scan = systable_beginscan(meta, index, true, NULL, 1, key);
	return systable_getnext(*scan);
}

/* The compaction rules of rel: its settings, else the GUCs' values */
void
ColfileCompactRulesFor(Relation rel, ColfileCompactRules *rules)
{
	Oid			index;
	Oid			metaoid = settings_rel(&index);

	memset(rules, 0, sizeof(*rules));
	rules->dead_fraction = colfile_compact_dead_fraction;
	rules->file_fraction = colfile_compact_file_fraction;
	if (OidIsValid(metaoid) && OidIsValid(index))
	{
		Relation	meta = table_open(metaoid, AccessShareLock);
		SysScanDesc scan;
		HeapTuple	tup = find_settings(meta, index, RelationGetRelid(rel), &scan);

		if (tup != NULL)
		{
			bool		isnull;
			Datum		d;

			d = heap_getattr(tup, 2, RelationGetDescr(meta), &isnull);
			if (!isnull)
				rules->dead_fraction = DatumGetFloat8(d);
			d = heap_getattr(tup, 3, RelationGetDescr(meta), &isnull);
			if (!isnull)
				rules->file_fraction = DatumGetFloat8(d);
		}
		systable_endscan(scan);
		table_close(meta, AccessShareLock);
	}
}

/* DROP TABLE: its settings go with it */
void
ColfileForgetSettings(Oid relid)
{
	Oid			index;
	Oid			metaoid = settings_rel(&index);
	Relation	meta;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(metaoid) || !OidIsValid(index))
		return;
	meta = table_open(metaoid, RowExclusiveLock);
	tup = find_settings(meta, index, relid, &scan);
	if (tup != NULL)
		CatalogTupleDelete(meta, &tup->t_self);
	systable_endscan(scan);
	table_close(meta, RowExclusiveLock);
}

/*
 * Open a colfile table the caller owns (VACUUM's rule) with lockmode;
 * refuse anything else clearly.
 */
static Relation
open_owned_colfile(Oid relid, LOCKMODE lockmode, const char *what)
{
	Relation	rel;

	/* before the lock: others may not queue for it and hold VACUUM up */
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	rel = relation_open(relid, lockmode);
	if (rel->rd_rel->relkind != RELKIND_RELATION || !ColfileIsColfileRel(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a colfile table", RelationGetRelationName(rel)),
				 errdetail("%s applies to tables created with USING colfile.", what),
				 errhint("Pass a colfile table.")));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, RelationGetRelationName(rel));
	return rel;
}

static void
check_fraction(const char *name, double v, double max)
{
	if (isnan(v) || v < 0 || v > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 0 and %g", name, max),
				 errdetail("The value given was %g.", v),
				 errhint("Pass NULL to use the value of the matching mvinc.colfile_compact_* setting.")));
}

/*
 * mvinc.colfile_set_compaction(rel, dead_fraction, file_fraction): the
 * table's thresholds; NULL stands for the GUC's value, both NULL forget
 * the table's row.
 */
Datum
colfile_set_compaction(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	Oid			index;
	Oid			metaoid = settings_rel(&index);
	Relation	meta;
	SysScanDesc scan;
	HeapTuple	old;
	Datum		values[Natts_settings];
	bool		nulls[Natts_settings] = {0};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the table of mvinc.colfile_set_compaction must not be NULL")));
	relid = PG_GETARG_OID(0);
	PreventCommandIfReadOnly("mvinc.colfile_set_compaction()");
	rel = open_owned_colfile(relid, ShareUpdateExclusiveLock, "mvinc.colfile_set_compaction");
	if (!PG_ARGISNULL(1))
		check_fraction("dead_fraction", PG_GETARG_FLOAT8(1), 1.0);
	if (!PG_ARGISNULL(2))
		check_fraction("file_fraction", PG_GETARG_FLOAT8(2), 1000.0);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	nulls[1] = PG_ARGISNULL(1);
	values[2] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[2] = PG_ARGISNULL(2);

	meta = table_open(metaoid, RowExclusiveLock);
	old = find_settings(meta, index, relid, &scan);
	if (old != NULL)
		CatalogTupleDelete(meta, &old->t_self);
	systable_endscan(scan);
	if (!nulls[1] || !nulls[2])
		CatalogTupleInsert(meta, heap_form_tuple(RelationGetDescr(meta), values, nulls));
	table_close(meta, RowExclusiveLock);
	relation_close(rel, NoLock);
	PG_RETURN_VOID();
}

static int
int64_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * mvinc.colfile_compact(rel [, VARIADIC row_groups]): compact now, in this
 * transaction, under SHARE UPDATE EXCLUSIVE (readers and writers go on;
 * VACUUM and another compaction of the table wait, and so does an update
 * in place of a row whose group it replaced, until this transaction ends). Without row groups,
 * the groups that pass the table's thresholds, as VACUUM would; with, those
 * groups (first blocks, as mvinc.colfile_row_groups shows them) whenever
 * they have dead rows or column files, small neighbours among them merged.
 */
Datum
colfile_compact(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	ColfileCompactRules rules;
	ColfileCompactResult res;
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {0};
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	bool		done;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	relid = PG_GETARG_OID(0);
	PreventCommandIfReadOnly("mvinc.colfile_compact()");
	PreventCommandDuringRecovery("mvinc.colfile_compact()");
	rel = open_owned_colfile(relid, ShareUpdateExclusiveLock, "mvinc.colfile_compact");
	ColfileCompactRulesFor(rel, &rules);
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the table of mvinc.colfile_compact must not be NULL")));
	if (!PG_ARGISNULL(1))
	{
		ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
		Datum	   *elems;
		bool	   *enulls;
		int			n;

		deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &enulls, &n);
		rules.only = palloc(sizeof(int64) * Max(n, 1));
		for (int i = 0; i < n; i++)
		{
			if (enulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("row group numbers must not be NULL"),
						 errhint("Name row groups as mvinc.colfile_row_groups shows them.")));
			rules.only[rules.nonly++] = DatumGetInt64(elems[i]);
		}
		qsort(rules.only, rules.nonly, sizeof(int64), int64_cmp);
	}
	/*
	 * As VACUUM: the owner's rights, in a restricted operation (encoding
	 * calls the columns' types' functions)
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(rel->rd_rel->relowner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	done = ColfileCompactNow(rel, &rules, &res);
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (!done)
		ereport(NOTICE,
				(errmsg("compaction of \"%s\" backed off", RelationGetRelationName(rel)),
				 errdetail("A transaction updated rows of a row group in place while it ran."),
				 errhint("Run it again when that transaction has ended.")));
	values[0] = Int64GetDatum(res.groups_rewritten);
	values[1] = Int64GetDatum(res.groups_written);
	values[2] = Int64GetDatum(res.files_folded);
	values[3] = Int64GetDatum(res.rows_written);
	values[4] = Int64GetDatum(res.rows_dropped);
	relation_close(rel, NoLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* mvinc.colfile_row_groups(rel): the row groups this snapshot sees */
Datum
colfile_row_groups(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel;
	Snapshot	snap = GetActiveSnapshot();
	struct HTAB *deleted;
	List	   *groups;
	ListCell   *lc;
	ColfileFileSet *files;
	int			f = 0;

	rel = ColfileOpenReadable(relid);
	InitMaterializedSRF(fcinfo, 0);
	groups = ColfileListGroups(rel, snap);
	deleted = ColfileDeletedSet(rel->rd_node.relNode, snap);
	files = ColfileListColumnFiles(rel, snap, CurrentMemoryContext);
	foreach(lc, groups)
	{
		ColfileRowGroup *rg = lfirst(lc);
		Datum		values[6];
		bool		nulls[6] = {0};
		int			ndeleted = rg->ndead;
		int			nfiles = 0;
		int64		file_bytes = 0;

		for (int pos = 0; pos < rg->nrows; pos++)
		{
			ItemPointerData tid;

			if (ColfileGroupRowGone(rg, pos))
				continue;
			ColfileGroupTid(rg, pos, &tid);
			if (ColfileDeletedSetContains(deleted, &tid))
				ndeleted++;
		}
		/* both lists are by first block: walk them together */
		while (f < ColfileFileSetCount(files) &&
			   ColfileFileSetGet(files, f)->rg.first_block < rg->first_block)
			f++;
		for (; f < ColfileFileSetCount(files) &&
			 ColfileFileSetGet(files, f)->rg.first_block == rg->first_block; f++)
		{
			nfiles++;
			file_bytes += ColfileFileSetGet(files, f)->rg.data_length;
		}
		values[0] = Int64GetDatum(rg->first_block);
		values[1] = Int32GetDatum(rg->nrows);
		values[2] = Int32GetDatum(ndeleted);
		values[3] = Int64GetDatum(rg->data_length);
		values[4] = Int32GetDatum(nfiles);
		values[5] = Int64GetDatum(file_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}
