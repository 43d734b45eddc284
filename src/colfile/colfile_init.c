/*-------------------------------------------------------------------------
 * colfile_init.c
 *	  Start-up of the colfile subsystem (the colfile table access method):
 *	  GUCs, transaction callbacks (write buffer flush and discard) and the
 *	  drop hook that removes a dropped table's metadata.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "mvinc.h"
#include "colfile/colfile.h"

int			colfile_rows_per_group = 10000;
double		colfile_compact_dead_fraction = 0.3;
int			colfile_compression_level = 3;
int			colfile_zstd_min_gain = 25;
bool		colfile_column_updates = true;

static object_access_hook_type prev_object_access_hook = NULL;

/* Write buffers: flush before commit, forget at the end */
static void
colfile_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			ColfileFlushAll();
			ColfileMergeOwnGroups();
			if (event == XACT_EVENT_PRE_PREPARE)
				ColfileKeepRowLocksForPrepare();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			ColfileWriterXactCallback(event == XACT_EVENT_COMMIT);
			ColfileRowLocksXactEnd();
			ColfileProjectionXactEnd();
			ColfileReaderXactEnd();
			ColfileGroupMemoForget();
			break;
		default:
			break;
	}
}

static void
colfile_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		ColfileWriterSubXact(true, mySubid, parentSubid);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		ColfileWriterSubXact(false, mySubid, parentSubid);
		/* our group tuples it inserted or deleted are seen otherwise now */
		ColfileGroupMemoForget();
	}
}

/* DROP TABLE: remove the table's metadata with the drop */
static void
colfile_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		get_rel_relkind(objectId) == RELKIND_RELATION)
	{
		Relation	rel = try_relation_open(objectId, NoLock);

		if (rel == NULL)
			return;
		if (ColfileIsColfileRel(rel))
		{
			Oid			nsp = get_namespace_oid("mvinc", true);

			ColfileDiscardRel(objectId);
			ColfileForgetSettings(objectId);
			if (OidIsValid(nsp) &&
				OidIsValid(get_relname_relid("colfile_rowgroup", nsp)) &&
				OidIsValid(get_relname_relid("colfile_rowstate", nsp)) &&
				OidIsValid(get_relname_relid("colfile_colfile", nsp)))
				ColfileDeleteAllMetadata(rel->rd_node.relNode);
		}
		relation_close(rel, NoLock);
	}
}

/* Install the colfile subsystem's GUCs and hooks */
void
MvincColfileInit(void)
{
	DefineCustomIntVariable("mvinc.colfile_rows_per_group",
							"Rows per row group written to colfile tables.",
							"A statement's rows are written as row groups of at most this many rows.",
							&colfile_rows_per_group,
							10000, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.colfile_compression_level",
							"zstd compression level of colfile column chunks.",
							NULL,
							&colfile_compression_level,
							3, 1, 19,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("mvinc.colfile_zstd_min_gain",
							"Saving that zstd must add to a colfile mini-block's random-access encoding to replace it, in percent of the block's uncompressed size.",
							"A mini-block with a random-access encoding (frame of reference, decimal, numeric, dictionary) keeps it unless zstd saves at least this many percent of the plain layout's size more; 0 takes whichever is smaller, 100 never compresses such blocks.",
							&colfile_zstd_min_gain,
							25, 0, 100,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("mvinc.colfile_compact_dead_fraction",
							 "Share of dead rows at which VACUUM rewrites a colfile row group.",
							 "VACUUM rewrites a row group without its rows dead to everybody once they are at least this share of its rows (0 rewrites at any dead row, 1 never); small row groups are merged regardless.",
							 &colfile_compact_dead_fraction,
							 0.3, 0.0, 1.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("mvinc.colfile_compact_file_fraction",
							 "Size of a colfile row group's column files, as a share of its own, at which VACUUM folds them into it.",
							 "VACUUM rewrites a row group with the values of its column files (written by UPDATEs in place, all seen by every snapshot) once their bytes reach this share of the group's; below it they are merged into one file.",
							 &colfile_compact_file_fraction,
							 0.25, 0.0, 1000.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("mvinc.colfile_column_updates",
							 "Lets an UPDATE of a colfile table write only the columns it changes.",
							 "When on, an UPDATE that changes no indexed column of a table without AFTER UPDATE row triggers keeps each row's TID and writes the changed columns' values to a column file; when off, every UPDATE deletes the row and inserts it again.",
							 &colfile_column_updates,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	RegisterXactCallback(colfile_xact_callback, NULL);
	RegisterSubXactCallback(colfile_subxact_callback, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = colfile_object_access;
	ColfileProjectionInit();
	ColfileAggScanInit();
}
