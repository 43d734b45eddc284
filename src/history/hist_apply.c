/*-------------------------------------------------------------------------
 * hist_apply.c
 *	  The set-based SQL that writes versions, for both feeds.
 *
 *	  HistApplyEvents: captured changes.  Per key and source transaction
 *	  the last row image decides the state after it (present with values,
 *	  or absent); a transaction that leaves the state as it was makes no
 *	  version.  The key's latest stored version is the state before the
 *	  first of them.  A version starts and ends at commit times, ordered
 *	  by commit LSN: commit timestamps are taken before the commit record
 *	  is written, so two commits can carry them in the other order (or the
 *	  same microsecond); the times of one key are made strictly increasing
 *	  (each at least a microsecond after the one before), so every version
 *	  has valid_from < valid_to and none overlaps another.
 *
 *	  HistSetState: a full state observed at t holds over [t, u) (u: the
 *	  next observation, or infinity).  Keys whose versions already say so
 *	  are left alone; for the others, the versions overlapping [t, u) are
 *	  cut at t and u, the new state is put in between, and pieces that meet
 *	  with equal values are merged again.  Snapshot loads (in order, late
 *	  or repeated), the initial refresh and a view restored from a dump or
 *	  that lost changes to retention all go through it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "history/history.h"
#include "mv/mv.h"

/* Run SQL with $1 = t and $2 = u (timestamptz), under snap when given */
static uint64
run(const char *sql, Snapshot snap, TimestampTz t, TimestampTz u, int expect)
{
	Oid			types[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2] = {TimestampTzGetDatum(t), TimestampTzGetDatum(u)};
	SPIPlanPtr	plan = SPI_prepare(sql, 2, types);
	int			rc;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	rc = SPI_execute_snapshot(plan, values, NULL, snap ? snap : InvalidSnapshot,
							  InvalidSnapshot, false, false, 0);
	SPI_freeplan(plan);
	if (rc != expect)
		elog(ERROR, "history statement failed (%d): %s", rc, sql);
	return SPI_processed;
}

static int64
first_int8(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/* A new temporary table name, unique in the session */
static char *
temp_name(const char *what)
{
	static int	counter = 0;

	return psprintf("pg_temp.mvinc_h%s_%d", what, ++counter);
}

/*
 * Column list: keys and values in view order (both), the keys in key
 * order (keys only) or the other columns in view order (values only).
 */
char *
HistColumnListSql(HistDef *def, bool keys, bool values, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, keys && !values ? def->keys : def->columns)
	{
		HistColumn *col = lfirst(lc);

		if ((col->is_key && !keys) || (!col->is_key && !values))
			continue;
		appendStringInfo(&buf, "%s%s%s%s", buf.len ? ", " : "",
						 prefix ? prefix : "", prefix ? "." : "", quote_identifier(col->name));
	}
	return buf.data;
}

/* lalias.k1 = ralias.k1 AND ... (keys are NOT NULL) */
char *
HistKeysEqualSql(HistDef *def, const char *lalias, const char *ralias)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->keys)
	{
		const char *name = quote_identifier(((HistColumn *) lfirst(lc))->name);

		appendStringInfo(&buf, "%s%s.%s = %s.%s", buf.len ? " AND " : "",
						 lalias, name, ralias, name);
	}
	return buf.data;
}

/*
 * Do the tracked values of two versions agree?  lfmt and rfmt hold one %s
 * for the quoted column name.  NULLs agree with NULLs; a type without an
 * equality operator is compared by its text; one whose equal values can
 * be spelled differently by binary image (1.5 to 1.50, '1 mon' to
 * '30 days' is a change: the current version shows the source's value).
 * Keys (matched by equality already) are compared by image too when they
 * can be spelled differently: a key updated from 2 to 2.00 makes a version.
 */
static char *
values_equal_sql(HistDef *def, const char *lfmt, const char *rfmt)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);
		const char *name = quote_identifier(col->name);
		TypeCacheEntry *tc;
		bool		has_eq;

		if (!MvTypeImageStable(col->typid, col->typmod, col->collation))
		{
			appendStringInfo(&buf, "%s(ROW(", buf.len ? " AND " : "");
			appendStringInfo(&buf, lfmt, name);
			appendStringInfoString(&buf, ")::pg_catalog.record OPERATOR(pg_catalog.*=) ROW(");
			appendStringInfo(&buf, rfmt, name);
			appendStringInfoString(&buf, ")::pg_catalog.record)");
			continue;
		}
		if (col->is_key)
			continue;
		tc = lookup_type_cache(col->typid, TYPECACHE_EQ_OPR);
		has_eq = OidIsValid(tc->eq_opr);
		appendStringInfo(&buf, "%sNOT ((", buf.len ? " AND " : "");
		appendStringInfo(&buf, lfmt, name);
		appendStringInfo(&buf, ")%s IS DISTINCT FROM (", has_eq ? "" : "::text");
		appendStringInfo(&buf, rfmt, name);
		appendStringInfo(&buf, ")%s)", has_eq ? "" : "::text");
	}
	return buf.len ? buf.data : "true";
}

/* NULL::type of each value column, for the rows a TRUNCATE makes */
static char *
null_values_sql(HistDef *def)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);

		/* (a domain's base type: a NOT NULL domain refuses the NULL) */
		if (!col->is_key)
		{
			int32		typmod = col->typmod;
			Oid			typid = getBaseTypeAndTypmod(col->typid, &typmod);

			appendStringInfo(&buf, ", NULL::%s", MvTypeSql(typid, typmod));
		}
	}
	return buf.data;
}

/* ", a.v1, a.v2" (or "" without value columns) */
static char *
values_with_comma(HistDef *def, const char *prefix)
{
	char	   *v = HistColumnListSql(def, false, true, prefix);

	return *v ? psprintf(", %s", v) : "";
}

/*
 * Refuse a state with several rows for one key, naming up to five keys;
 * returns its number of rows.
 */
static int64
check_duplicates(HistDef *def, const char *state_sql, Snapshot snap)
{
	char	   *keys = HistColumnListSql(def, true, false, NULL);
	bool		isnull;
	Datum		dups;
	int64		rows;

	run(psprintf("SELECT coalesce(sum(_mvinc_n), 0)::int8, array_to_string((array_agg(ROW(%s)::text "
				 "ORDER BY ROW(%s)::text) FILTER (WHERE _mvinc_n > 1))[1:6], ', ') "
				 "FROM (SELECT %s, count(*) AS _mvinc_n FROM (%s) s GROUP BY %s) g",
				 keys, keys, keys, state_sql, keys), snap, 0, 0, SPI_OK_SELECT);
	rows = first_int8(1);
	dups = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (!isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("the snapshot holds more than one row for some keys (%s)", keys),
				 errdetail("Keys with several rows (at most six shown): %s.", TextDatumGetCString(dups)),
				 errhint("Remove the duplicates from the snapshot; nothing was loaded.")));
	return rows;
}

/* NEW / CHANGE / CLOSE counts of the keys in a table of changed keys */
static void
count_keys(const char *changed, HistApplied *out)
{
	run(psprintf("SELECT count(*) FILTER (WHERE _mvinc_in AND NOT _mvinc_covered), "
				 "count(*) FILTER (WHERE _mvinc_in AND _mvinc_covered), "
				 "count(*) FILTER (WHERE NOT _mvinc_in) FROM %s", changed),
		NULL, 0, 0, SPI_OK_SELECT);
	out->new_keys = first_int8(1);
	out->changed_keys = first_int8(2);
	out->closed_keys = first_int8(3);
}

/*
 * Does state_sql's extract (every view column, by name) already hold, as
 * the current versions of the storage, with nothing to change?  For a
 * load repeating the newest one (no version then starts or ends after
 * its time, and only current versions reach past it): an unchanged
 * extract equals the current versions key by key, one each.  Checks the
 * extract for duplicate keys first (unless unique) and counts its rows
 * into out->rows.  A merge join, as the in-order load's diff.
 */
bool
HistStateUnchanged(HistDef *def, const char *storage, const char *state_sql, bool unique,
				   HistApplied *out)
{
	const char *values_equal = values_equal_sql(def, "f.%s", "o.%s");
	int			nestlevel;
	int64		differing;
	int64		matched;

	if (unique)
	{
		run(psprintf("SELECT count(*) FROM (%s) s", state_sql), NULL, 0, 0, SPI_OK_SELECT);
		out->rows = first_int8(1);
	}
	else
		out->rows = check_duplicates(def, state_sql, NULL);
	nestlevel = HistPreferMergeJoin();
	run(psprintf("SELECT count(*) FILTER (WHERE f._mvinc_f IS NULL OR o._mvinc_o IS NULL OR NOT (%s)), "
				 "count(*) FILTER (WHERE f._mvinc_f AND o._mvinc_o) FROM %s",
				 values_equal, HistStateJoinCurrentSql(def, storage, state_sql, false)),
		NULL, 0, 0, SPI_OK_SELECT);
	differing = first_int8(1);
	matched = first_int8(2);
	AtEOXact_GUC(true, nestlevel);
	return differing == 0 && matched == out->rows;
}

/*
 * FROM items of an extract (state_sql's rows, alias f, with _mvinc_f
 * true) joined by key to the storage's current versions (alias o, with
 * _mvinc_o true, and their ctid as _mvinc_ctid if with_ctid): a row per
 * key either side has, the other side's columns NULL where it lacks it.
 */
char *
HistStateJoinCurrentSql(HistDef *def, const char *storage, const char *state_sql, bool with_ctid)
{
	return psprintf("(SELECT s.*, true AS _mvinc_f FROM (%s) s) f "
					"FULL JOIN (SELECT h.*,%s true AS _mvinc_o FROM %s h "
					"           WHERE h.valid_to = 'infinity') o USING (%s)",
					state_sql, with_ctid ? " h.ctid AS _mvinc_ctid," : "", storage,
					HistColumnListSql(def, true, false, NULL));
}

/*
 * Plan the next statements' joins of an extract with the current
 * versions as merge joins: the storage's key index gives the current
 * versions in key order, the extract's key index (or a sort) the
 * extract's.  The planner prefers hashing a side, which took 2-2.5x as
 * long for 1M keys (the hash table's cache misses), more with deeper
 * history.  Returns the GUC nest level to end with AtEOXact_GUC.
 */
int
HistPreferMergeJoin(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/*
 * The state over [t, u) becomes state_sql's rows (every view column, by
 * name; read under snap when given).  unique: a unique index proves that
 * the state has one row per key (else it is checked).  in_order: no
 * version starts or ends after t.  Fills out's key counts.
 */
void
HistSetState(HistDef *def, Oid storage_oid, const char *storage, const char *state_sql,
			 Snapshot snap, TimestampTz t, TimestampTz u, bool in_order, bool unique,
			 HistApplied *out)
{
	char	   *state = temp_name("state");
	char	   *changed = temp_name("changed");
	char	   *pieces = temp_name("pieces");
	char	   *keys = HistColumnListSql(def, true, false, NULL);
	char	   *all = HistColumnListSql(def, true, true, NULL);

	if (in_order)
	{
		/*
		 * Only current versions can change: in one pass (hist_direct.c),
		 * which counts the rows itself when a unique index spares the
		 * duplicate check.
		 */
		if (!unique)
			out->rows = check_duplicates(def, state_sql, snap);
		HistSetStateInOrderDirect(def, storage_oid, storage, state_sql, snap, t,
								  values_equal_sql(def, "f.%s", "o.%s"), unique, out);
		return;
	}
	if (unique)
	{
		run(psprintf("SELECT count(*) FROM (%s) s", state_sql), snap, t, u, SPI_OK_SELECT);
		out->rows = first_int8(1);
	}
	else
		out->rows = check_duplicates(def, state_sql, snap);
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", state, state_sql),
		snap, t, u, SPI_OK_UTILITY);

	/* keys whose versions over [t, u) are not already exactly the state */
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS "
				 "SELECT %s, coalesce(bool_or(f._mvinc_f), false) AS _mvinc_in, "
				 "coalesce(bool_or(o.valid_from <= $1 AND o.valid_to > $1), false) AS _mvinc_covered "
				 "FROM (SELECT s.*, true AS _mvinc_f FROM %s s) f "
				 "FULL JOIN (SELECT h.*, true AS _mvinc_o FROM %s h "
				 "           WHERE h.valid_from < $2 AND h.valid_to > $1) o USING (%s) "
				 "GROUP BY %s "
				 "HAVING count(o._mvinc_o) <> 1 OR NOT coalesce(bool_and(f._mvinc_f "
				 "AND o.valid_from <= $1 AND o.valid_to >= $2 AND %s), false)",
				 changed, keys, state, storage, keys, keys,
				 values_equal_sql(def, "f.%s", "o.%s")),
		NULL, t, u, SPI_OK_UTILITY);
	count_keys(changed, out);
	if (out->new_keys + out->changed_keys + out->closed_keys == 0)
	{
		run(psprintf("DROP TABLE %s, %s", state, changed), NULL, t, u, SPI_OK_UTILITY);
		return;
	}

	/* their versions that overlap or touch [t, u), cut at t and u, plus the state */
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT * FROM %s LIMIT 0",
				 pieces, storage), NULL, t, u, SPI_OK_UTILITY);
	out->closed = run(psprintf("WITH aff AS (DELETE FROM %s h USING %s c WHERE %s "
							   "AND h.valid_from <= $2 AND h.valid_to >= $1 RETURNING h.*) "
							   "INSERT INTO %s "
							   "SELECT %s, valid_from, $1 FROM aff WHERE valid_from < $1 "
							   "UNION ALL SELECT %s, $2, valid_to FROM aff WHERE valid_to > $2 "
							   "UNION ALL SELECT %s, $1, $2 FROM %s f JOIN %s c USING (%s) "
							   "WHERE c._mvinc_in",
							   storage, changed, HistKeysEqualSql(def, "h", "c"), pieces,
							   all, all, HistColumnListSql(def, true, true, "f"), state,
							   changed, keys),
					  NULL, t, u, SPI_OK_INSERT);

	/* pieces that meet with equal values become one version again */
	out->opened = run(psprintf("INSERT INTO %s (%s, valid_from, valid_to) "
							   "SELECT %s, valid_from, _mvinc_end FROM ("
							   " SELECT y.*, max(valid_to) OVER (PARTITION BY %s, _mvinc_island) AS _mvinc_end FROM ("
							   "  SELECT x.*, sum(_mvinc_brk) OVER (PARTITION BY %s ORDER BY valid_from) AS _mvinc_island FROM ("
							   "   SELECT p.*, CASE WHEN lag(p.valid_to) OVER w = p.valid_from AND %s "
							   "          THEN 0 ELSE 1 END AS _mvinc_brk "
							   "   FROM %s p WINDOW w AS (PARTITION BY %s ORDER BY p.valid_from)) x) y) z "
							   "WHERE _mvinc_brk = 1",
							   storage, all, all, keys, keys,
							   values_equal_sql(def, "lag(p.%s) OVER w", "p.%s"),
							   pieces, HistColumnListSql(def, true, false, "p")),
					  NULL, t, u, SPI_OK_INSERT);
	run(psprintf("DROP TABLE %s, %s, %s", state, changed, pieces), NULL, t, u, SPI_OK_UTILITY);
}

/*
 * The delta's change-log rows (alias s, condition delta), projected: the
 * key of every image, the values and the WHERE of new ones.  Columns:
 * _mvinc_lsn, _mvinc_time, _mvinc_seq, _mvinc_trunc, _mvinc_new, the
 * view's columns, _mvinc_in; with raw, the row's _mvinc_xid, _mvinc_op and
 * _mvinc_image last.
 */
char *
HistDeltaRowsSql(HistDef *def, const char *changelog, const char *delta, bool raw)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *where = def->where ?
		psprintf("coalesce((%s), false)", MvExprSql(def->sourceid, def->where, "s")) : "true";

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT s._mvinc_lsn, s._mvinc_time, s._mvinc_seq, "
						   "s._mvinc_op = 't' AS _mvinc_trunc, "
						   "s._mvinc_image = 'n' AND s._mvinc_op <> 't' AS _mvinc_new");
	foreach(lc, def->columns)
	{
		HistColumn *col = lfirst(lc);
		char	   *expr = MvExprSql(def->sourceid, (Node *) col->expr, "s");

		if (col->is_key)
			appendStringInfo(&sql, ", %s AS %s", expr, quote_identifier(col->name));
		else
			/* only for rows the view has: the query would not compute it for others */
			appendStringInfo(&sql, ", CASE WHEN s._mvinc_image = 'n' AND s._mvinc_op <> 't' "
							 "AND %s THEN %s END AS %s", where, expr, quote_identifier(col->name));
	}
	appendStringInfo(&sql, ", s._mvinc_image = 'n' AND s._mvinc_op <> 't' AND %s AS _mvinc_in%s "
					 "FROM %s s WHERE %s", where,
					 raw ? ", s._mvinc_xid, s._mvinc_op, s._mvinc_image" : "",
					 changelog, delta);
	return sql.data;
}

/*
 * The state after each transaction, per key (one row per key and
 * _mvinc_lsn, from the projected delta rows in relation rows, see
 * HistDeltaRowsSql): the last image of the key in the transaction, present
 * when it is a new one that passes WHERE; a TRUNCATE ends every key present
 * then (the storage's current keys and the delta's).
 */
char *
HistStatesSql(HistDef *def, const char *storage, const char *rows, bool truncates)
{
	char	   *keys = HistColumnListSql(def, true, false, NULL);
	char	   *vals = values_with_comma(def, NULL);
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT DISTINCT ON (%s, _mvinc_lsn) NULL::tid AS _mvinc_ctid, %s, _mvinc_lsn, "
					 "        _mvinc_time, _mvinc_new AND _mvinc_in AS _mvinc_present%s "
					 "  FROM (SELECT %s, _mvinc_lsn, _mvinc_time, _mvinc_seq, _mvinc_new, _mvinc_in%s "
					 "          FROM %s WHERE NOT _mvinc_trunc",
					 keys, keys, vals, keys, vals, rows);
	if (truncates)
		appendStringInfo(&sql, " UNION ALL SELECT %s, t._mvinc_lsn, t._mvinc_time, t._mvinc_seq, "
						 "false, false%s FROM %s t, "
						 "(SELECT %s FROM %s WHERE valid_to = 'infinity' "
						 " UNION SELECT %s FROM %s WHERE NOT _mvinc_trunc) p WHERE t._mvinc_trunc",
						 HistColumnListSql(def, true, false, "p"), null_values_sql(def), rows,
						 keys, storage, keys, rows);
	appendStringInfo(&sql, ") a ORDER BY %s, _mvinc_lsn, _mvinc_seq DESC, _mvinc_new DESC", keys);
	return sql.data;
}

/*
 * The events, from the states in relation states (HistStatesSql), as one
 * query: the latest stored version before them (lsn 0/0, with the tid of a
 * current one), the transactions that change the state, their times made
 * increasing (_mvinc_eff), and each version's end (_mvinc_next; on the
 * 0/0 row: when the stored version ends).  extra_ctes, if any, go first in
 * its WITH list.
 */
char *
HistEventsSql(HistDef *def, const char *storage, const char *states, const char *extra_ctes)
{
	char	   *keys = HistColumnListSql(def, true, false, NULL);
	StringInfoData sql;

	initStringInfo(&sql);

	/*
	 * The state before: the key's current version (with its tid, for the
	 * update that ends it), else its latest version, ended (looked up by
	 * key, for the few keys without a current one).
	 */
	appendStringInfo(&sql, "WITH %s"
					 "basecur AS (SELECT h.ctid AS _mvinc_ctid, %s, '0/0'::pg_lsn AS _mvinc_lsn, "
					 "  h.valid_from AS _mvinc_time, true AS _mvinc_present%s "
					 "  FROM %s h WHERE h.valid_to = 'infinity' AND (%s) IN (SELECT %s FROM %s)), "
					 "baseold AS (SELECT NULL::tid, %s, '0/0'::pg_lsn, "
					 "  l.valid_to - interval '1 microsecond', false%s "
					 "  FROM (SELECT DISTINCT %s FROM %s e WHERE NOT EXISTS "
					 "        (SELECT FROM basecur c WHERE %s)) k, "
					 "  LATERAL (SELECT * FROM %s h WHERE %s ORDER BY h.valid_from DESC LIMIT 1) l), ",
					 extra_ctes ? extra_ctes : "",
					 HistColumnListSql(def, true, false, "h"), values_with_comma(def, "h"), storage,
					 HistColumnListSql(def, true, false, "h"), keys, states,
					 HistColumnListSql(def, true, false, "k"), values_with_comma(def, "l"),
					 HistColumnListSql(def, true, false, "e"), states, HistKeysEqualSql(def, "c", "e"),
					 storage, HistKeysEqualSql(def, "h", "k"));
	appendStringInfo(&sql, "a AS (SELECT * FROM basecur UNION ALL SELECT * FROM baseold "
					 "      UNION ALL SELECT * FROM %s), "
					 "w AS (SELECT a.*, coalesce(lag(a._mvinc_present) OVER kw, false) AS _mvinc_pp, "
					 "        %s AS _mvinc_same FROM a WINDOW kw AS (PARTITION BY %s ORDER BY a._mvinc_lsn)), "
					 "kept AS (SELECT * FROM w WHERE _mvinc_lsn = '0/0' OR _mvinc_present <> _mvinc_pp "
					 "         OR (_mvinc_present AND NOT _mvinc_same)), "
					 "n AS (SELECT kept.*, row_number() OVER kw AS _mvinc_rn FROM kept "
					 "      WINDOW kw AS (PARTITION BY %s ORDER BY _mvinc_lsn)), "
					 "m AS (SELECT n.*, _mvinc_rn * interval '1 microsecond' + "
					 "        max(_mvinc_time - _mvinc_rn * interval '1 microsecond') OVER "
					 "        (PARTITION BY %s ORDER BY _mvinc_lsn ROWS UNBOUNDED PRECEDING) AS _mvinc_eff "
					 "      FROM n) "
					 "SELECT m.*, lead(_mvinc_eff) OVER (PARTITION BY %s ORDER BY _mvinc_lsn) AS _mvinc_next "
					 "FROM m",
					 states, values_equal_sql(def, "lag(a.%s) OVER kw", "a.%s"), keys,
					 keys, keys, keys);
	return sql.data;
}

/*
 * Apply the captured changes of changelog that delta selects (a condition
 * on alias s).  truncates: the delta holds TRUNCATE rows.
 */
void
HistApplyEvents(HistDef *def, Oid storage_oid, const char *storage, const char *changelog,
				const char *delta, bool truncates, HistApplied *out)
{
	char	   *rows = temp_name("delta");
	char	   *states = temp_name("states");
	char	   *events = temp_name("events");

	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", rows,
				 HistDeltaRowsSql(def, changelog, delta, false)), NULL, 0, 0, SPI_OK_UTILITY);
	run(psprintf("SELECT 1 FROM %s WHERE NOT _mvinc_trunc AND NOT (ROW(%s) IS NOT NULL) LIMIT 1",
				 rows, HistColumnListSql(def, true, false, NULL)), NULL, 0, 0, SPI_OK_SELECT);
	if (SPI_processed > 0)
		HistKeyMissing(def);
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", states,
				 HistStatesSql(def, storage, rows, truncates)), NULL, 0, 0, SPI_OK_UTILITY);
	/* its size and keys, for the joins below (the change log's statistics lag) */
	run(psprintf("ANALYZE %s", states), NULL, 0, 0, SPI_OK_UTILITY);
	run(psprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS %s", events,
				 HistEventsSql(def, storage, states, NULL)), NULL, 0, 0, SPI_OK_UTILITY);

	/* the current versions end at their key's first change (by tid) */
	out->closed = run(psprintf("UPDATE %s h SET valid_to = x._mvinc_next FROM %s x "
							   "WHERE x._mvinc_lsn = '0/0' AND x._mvinc_present "
							   "AND x._mvinc_next IS NOT NULL AND h.ctid = x._mvinc_ctid",
							   storage, events),
					  NULL, 0, 0, SPI_OK_UPDATE);
	out->opened = run(psprintf("INSERT INTO %s (%s, valid_from, valid_to) "
							   "SELECT %s, _mvinc_eff, coalesce(_mvinc_next, 'infinity') "
							   "FROM %s WHERE _mvinc_lsn > '0/0' AND _mvinc_present",
							   storage, HistColumnListSql(def, true, true, NULL),
							   HistColumnListSql(def, true, true, NULL), events),
					  NULL, 0, 0, SPI_OK_INSERT);
	run(psprintf("DROP TABLE %s, %s, %s", rows, states, events), NULL, 0, 0, SPI_OK_UTILITY);
}

/*
 * A logged change without its key: the source's replica identity was
 * changed to one that does not hold the key since the view was created.
 */
void
HistKeyMissing(HistDef *def)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("a logged change of \"%s\" lacks the key of a history view",
					get_rel_name(def->sourceid)),
			 errdetail("The table's replica identity no longer includes the key (%s).",
					   HistColumnListSql(def, true, false, NULL)),
			 errhint("Run ALTER TABLE %s REPLICA IDENTITY FULL, or go back to an identity that holds the key; changes logged without it cannot be applied.",
					 MvSourceName(def->sourceid))));
}

/* mvinc.history_retention: versions that ended before now() - retention go */
void
HistApplyRetention(HistCatalog *cat, const char *storage)
{
	if (cat->retention == NULL)
		return;
	run(psprintf("DELETE FROM %s WHERE valid_to < now() - %s::interval", storage,
				 quote_literal_cstr(cat->retention)), NULL, 0, 0, SPI_OK_DELETE);
}
