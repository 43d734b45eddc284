/*-------------------------------------------------------------------------
 * mv_funcdeps.c
 *	  CREATE OR REPLACE of a function (or aggregate) that views call.
 *
 *	  A view's stored rows were computed with the function's body as it
 *	  was; once replaced, the defining query computes others.  An
 *	  incremental view then reads its query until its next refresh, which
 *	  recomputes it, as after ALTER TABLE of its source (the generation is
 *	  bumped); a history view, whose stored versions cannot be recomputed,
 *	  refuses the replacement.  A replacement that changes nothing (the same
 *	  definition run again, as deployment scripts do) is let through.  The
 *	  views found are those whose rule depends on the function, or on an
 *	  operator or aggregate built on it; a function called only from
 *	  another function's body leaves no dependency to follow.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "mv/mv.h"

/* The views whose rules depend on function $1, or on what is built on it */
#define VIEWS_CALLING \
	"WITH o AS (SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid AS classid, $1 AS objid " \
	"           UNION SELECT d.classid, d.objid FROM pg_catalog.pg_depend d " \
	"           WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.refobjid = $1 " \
	"             AND d.classid IN ('pg_catalog.pg_proc'::pg_catalog.regclass, " \
	"                               'pg_catalog.pg_operator'::pg_catalog.regclass)) " \
	"SELECT DISTINCT r.ev_class FROM o " \
	"JOIN pg_catalog.pg_depend d ON d.refclassid = o.classid AND d.refobjid = o.objid " \
	" AND d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass " \
	"JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid"

/*
 * Is mvinc there to follow a replacement?  Also while another extension's
 * script runs, where MvincExtensionReady() says no: ALTER EXTENSION ..
 * UPDATE replaces the extension's functions with CREATE OR REPLACE, and
 * views calling them must follow as after the statement typed by hand.
 * Not in mvinc's own scripts (its catalog may be half made).
 */
bool
MvFollowFunctionReplace(void)
{
	Oid			schema;
	Oid			ext;

	if (!creating_extension)
		return MvincExtensionReady();
	schema = MvincSchemaOid();
	if (!OidIsValid(schema) ||
		!OidIsValid(get_relname_relid("mv_view", schema)) ||
		!OidIsValid(get_relname_relid("history_view", schema)))
		return false;
	ext = get_extension_oid("mvinc", true);
	return OidIsValid(ext) && ext != CurrentExtensionObject;
}

/* The input argument types of a parameter list (FunctionParameter) */
static List *
input_types(List *parameters)
{
	List	   *types = NIL;
	ListCell   *lc;

	foreach(lc, parameters)
	{
		FunctionParameter *fp = lfirst(lc);

		if (fp->mode != FUNC_PARAM_OUT && fp->mode != FUNC_PARAM_TABLE)
			types = lappend(types, fp->argType);
	}
	return types;
}

/*
 * Columns of pg_proc that guide the planner but leave results alone: a
 * replacement changing only these (COST, ROWS, PARALLEL, LEAKPROOF,
 * SUPPORT) keeps the views as they are
 */
static bool
planner_only_column(Oid catalog, AttrNumber attnum)
{
	return catalog == ProcedureRelationId &&
		(attnum == Anum_pg_proc_procost || attnum == Anum_pg_proc_prorows ||
		 attnum == Anum_pg_proc_proparallel || attnum == Anum_pg_proc_proleakproof ||
		 attnum == Anum_pg_proc_prosupport);
}

/* Do two versions of a catalog row differ in a column that matters to results? */
static bool
rows_differ(Oid catalog, HeapTuple a, HeapTuple b)
{
	Relation	rel = table_open(catalog, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		differ = false;

	for (int i = 1; i <= desc->natts && !differ; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i - 1);
		bool		anull,
					bnull;
		Datum		av = heap_getattr(a, i, desc, &anull);
		Datum		bv = heap_getattr(b, i, desc, &bnull);

		if (planner_only_column(catalog, i))
			continue;
		differ = anull != bnull ||
			(!anull && !datum_image_eq(av, bv, att->attbyval, att->attlen));
	}
	table_close(rel, AccessShareLock);
	return differ;
}

/*
 * Before a CREATE OR REPLACE FUNCTION or AGGREGATE: the function it
 * replaces and its catalog rows as they are (NULL for another statement,
 * or a function that does not exist yet)
 */
MvFunctionRows *
MvFunctionBeingReplaced(Node *parsetree)
{
	ObjectWithArgs *owa = makeNode(ObjectWithArgs);
	ObjectType	kind;
	MvFunctionRows *rows;

	if (IsA(parsetree, CreateFunctionStmt))
	{
		CreateFunctionStmt *stmt = (CreateFunctionStmt *) parsetree;

		/* (views call no procedures) */
		if (!stmt->replace || stmt->is_procedure)
			return NULL;
		owa->objname = stmt->funcname;
		owa->objargs = input_types(stmt->parameters);
		kind = OBJECT_FUNCTION;
	}
	else if (IsA(parsetree, DefineStmt) && ((DefineStmt *) parsetree)->kind == OBJECT_AGGREGATE)
	{
		DefineStmt *stmt = (DefineStmt *) parsetree;

		/* (the old syntax, with basetype, cannot replace) */
		if (!stmt->replace || stmt->args == NIL)
			return NULL;
		owa->objname = stmt->defnames;
		owa->objargs = input_types(linitial(stmt->args));
		kind = OBJECT_AGGREGATE;
	}
	else
		return NULL;
	rows = palloc0(sizeof(MvFunctionRows));
	rows->funcid = LookupFuncWithArgs(kind, owa, true);
	if (!OidIsValid(rows->funcid))
		return NULL;
	rows->proc = SearchSysCacheCopy1(PROCOID, ObjectIdGetDatum(rows->funcid));
	if (!HeapTupleIsValid(rows->proc))
		return NULL;
	if (kind == OBJECT_AGGREGATE)
		rows->agg = SearchSysCacheCopy1(AGGFNOID, ObjectIdGetDatum(rows->funcid));
	return rows;
}

/*
 * After the statement (its changes made visible): when it changed the
 * function, refuse it under a history view that calls it, and bump the
 * generation of incremental views that call it.
 */
void
MvFunctionReplaced(MvFunctionRows *before)
{
	HeapTuple	proc = SearchSysCacheCopy1(PROCOID, ObjectIdGetDatum(before->funcid));
	HeapTuple	agg = NULL;
	Oid			arg = before->funcid;
	Oid			argtype = OIDOID;
	Datum		argvalue = ObjectIdGetDatum(before->funcid);
	List	   *views = NIL;

	if (!HeapTupleIsValid(proc))
		return;
	if (before->agg)
		agg = SearchSysCacheCopy1(AGGFNOID, ObjectIdGetDatum(before->funcid));
	if (!rows_differ(ProcedureRelationId, before->proc, proc) &&
		(before->agg == NULL || agg == NULL ||
		 !rows_differ(AggregateRelationId, before->agg, agg)))
		return;
	MvSpiOids("SELECT v.ev_class FROM (" VIEWS_CALLING ") v "
			  "JOIN mvinc.history_view h ON h.view::pg_catalog.oid = v.ev_class LIMIT 1",
			  1, &arg, true, &views, NULL);
	if (views != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot replace function %s because history view \"%s\" uses it",
						format_procedure(before->funcid), get_rel_name(linitial_oid(views))),
				 errdetail("The view's stored versions were computed with the function as it was."),
				 errhint("Drop the history view, or create the new function under another name.")));
	MvSpiConnect();
	if (SPI_execute_with_args("UPDATE mvinc.mv_view SET source_generation = source_generation + 1 "
							  "WHERE view::pg_catalog.oid IN (" VIEWS_CALLING ")",
							  1, &argtype, &argvalue, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update mvinc.mv_view");
	MvSpiFinish();
}
