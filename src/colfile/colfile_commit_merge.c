/*-------------------------------------------------------------------------
 * colfile_commit_merge.c
 *	  Before commit, the small row groups a transaction wrote are merged.
 *
 * Every statement's rows are a row group of their own (colfile_writer.c
 * flushes its buffer when the statement ends), so a loop of small INSERTs
 * would leave as many small groups behind. This file remembers the groups
 * this transaction wrote (OwnGroup) and, at XACT_EVENT_PRE_COMMIT and
 * PRE_PREPARE after the last flush, merges runs of them into groups of up
 * to mvinc.colfile_rows_per_group rows, as VACUUM's compaction merges
 * committed ones (ColfileMergeGroupsOfWriter, colfile_compact.c): every
 * row keeps its TID, and the transaction's own column files on them are
 * folded in.
 *
 * Only groups over adjacent TID reservations of ours are merged (the
 * writer's TidSpace: run_start): no other transaction can have a group
 * tuple between them, so a lookup of any of their TIDs (the nearest group
 * tuple at or below its block) finds the merged group. Nobody else sees
 * our groups before we commit, and lookups that are not MVCC read the
 * replaced tuples while the merged one's inserter runs (colfile_meta.c,
 * compaction_in_progress), so a uniqueness check still waits for us. The
 * merge runs in a subtransaction and gives up, with a WARNING, on any
 * error: it tidies up, and must never make the commit fail.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "colfile/colfile.h"

/* Bytes (decompressed) one merge may gather: its values are held in memory */
#define MERGE_MAX_BYTES		((int64) 64 * 1024 * 1024)

typedef struct OwnGroup
{
	Oid			relid;
	Oid			relfilenode;
	int64		first_block;
	int64		run_start;		/* of the writer's TID space it is in */
	int			nrows;
	bool		reserved;		/* a reservation tuple at first_block */
} OwnGroup;

static List *own_groups = NIL;	/* in TopTransactionContext, order written */
static List *updated_rels = NIL;	/* relids whose groups of ours got column
									 * files (TopTransactionContext) */

/* A group the writer just wrote */
void
ColfileRememberOwnGroup(Oid relid, Oid relfilenode, int64 first_block,
						int64 run_start, int nrows, bool reserved)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	OwnGroup   *g = palloc0(sizeof(OwnGroup));

	g->relid = relid;
	g->relfilenode = relfilenode;
	g->first_block = first_block;
	g->run_start = run_start;
	g->nrows = nrows;
	g->reserved = reserved;
	own_groups = lappend(own_groups, g);
	MemoryContextSwitchTo(old);
}

/*
 * Column files are being written for rows of a group of ours: the merge
 * looks for the files of this relation's groups (and folds them in). Per
 * relation, not per group: this runs per column buffer, and a transaction
 * may have written many groups.
 */
void
ColfileNoteOwnGroupUpdated(Oid relid)
{
	if (!list_member_oid(updated_rels, relid))
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		updated_rels = lappend_oid(updated_rels, relid);
		MemoryContextSwitchTo(old);
	}
}

/* The relation's storage is going away (TRUNCATE, DROP) */
void
ColfileForgetOwnGroups(Oid relid)
{
	ListCell   *lc;

	foreach(lc, own_groups)
	{
		if (((OwnGroup *) lfirst(lc))->relid == relid)
			own_groups = foreach_delete_current(own_groups, lc);
	}
}

void
ColfileOwnGroupsXactEnd(void)
{
	own_groups = NIL;			/* memory goes with TopTransactionContext */
	updated_rels = NIL;
}

static int
own_group_cmp(const ListCell *a, const ListCell *b)
{
	const OwnGroup *x = lfirst(a);
	const OwnGroup *y = lfirst(b);

	if (x->relid != y->relid)
		return x->relid < y->relid ? -1 : 1;
	if (x->first_block != y->first_block)
		return x->first_block < y->first_block ? -1 : 1;
	return 0;
}

/* Bytes of a group's values once decompressed (what a merge reads) */
static int64
group_raw_bytes(const ColfileRowGroup *rg)
{
	int			natts;
	int64		bytes = 0;

	ColfileDirChunk(rg->directory, 1, &natts);
	for (int a = 1; a <= natts; a++)
		bytes += ColfileDirChunk(rg->directory, a, NULL)->raw_len;
	return bytes;
}

/*
 * Our group g, as it is now, and its column files (ours): false unless it
 * is still there (its subtransaction did not abort) and plain (not
 * replaced)
 */
static bool
own_group_now(Relation rel, const OwnGroup *g, ColfileRowGroup *rg,
			  List **files, List **file_tids, int64 *bytes)
{
	int64		file_bytes = 0;

	*files = *file_tids = NIL;
	if (!ColfileFindRowGroup(g->relfilenode, g->first_block, SnapshotSelf, rg) ||
		rg->first_block != g->first_block || rg->nrows <= 0 || rg->ext_off != 0 ||
		!TransactionIdIsCurrentTransactionId(rg->xmin))
		return false;
	if (list_member_oid(updated_rels, g->relid) &&
		!ColfileOwnColumnFiles(rel, rg, files, file_tids, &file_bytes))
		return false;
	*bytes = group_raw_bytes(rg) + file_bytes;
	return true;
}

/*
 * The groups one merge gathers: consecutive small groups of a run, up to a
 * group's rows and MERGE_MAX_BYTES. What it looked up lives in cxt, reset
 * after each merge, so memory does not grow with the number of groups.
 */
typedef struct Batch
{
	Relation	rel;
	MemoryContext cxt;
	int			cap;			/* slots in the arrays */
	int			n;
	int			rows;
	int64		bytes;
	OwnGroup  **own;
	ColfileRowGroup *groups;
	List	  **files;
	List	  **file_tids;
} Batch;

/* Merge what the batch holds (when two or more), and empty it */
static void
batch_finish(Batch *b)
{
	if (b->n >= 2)
	{
		MemoryContext old = MemoryContextSwitchTo(b->cxt);

		ColfileMergeGroupsOfWriter(b->rel, b->groups, b->files, b->file_tids, b->n);

		/*
		 * Our reservation tuples inside the merged range would sort before
		 * the merged group's and answer lookups of its later TIDs
		 */
		for (int i = 0; i < b->n; i++)
			if (b->own[i]->reserved)
				ColfileDeleteOwnReservation(b->own[i]->relfilenode, b->own[i]->first_block);
		MemoryContextSwitchTo(old);
	}
	b->n = b->rows = 0;
	b->bytes = 0;
	MemoryContextReset(b->cxt);
}

/* Add g to the batch if it can be merged, else end the batch there */
static void
batch_add(Batch *b, OwnGroup *g)
{
	int			rows_per_group = Max(colfile_rows_per_group, 1);
	MemoryContext old;
	bool		ok;
	int64		bytes = 0;

	/* a large group is left as it is (not worth looking up) */
	if (g->nrows * 4 >= rows_per_group)
	{
		batch_finish(b);
		return;
	}
	if (b->n > 0 && (b->rows + g->nrows > rows_per_group || b->n == b->cap))
		batch_finish(b);
	old = MemoryContextSwitchTo(b->cxt);
	ok = own_group_now(b->rel, g, &b->groups[b->n], &b->files[b->n],
					   &b->file_tids[b->n], &bytes);
	MemoryContextSwitchTo(old);
	if (!ok)
	{
		/* a gap: what is on either side merges on its own */
		batch_finish(b);
		return;
	}
	if (b->n > 0 && b->bytes + bytes > MERGE_MAX_BYTES)
	{
		/* starts the next batch (looked up again: the reset frees it) */
		batch_finish(b);
		batch_add(b, g);
		return;
	}
	b->own[b->n++] = g;
	b->rows += g->nrows;
	b->bytes += bytes;
}

/* The merge's work, in its subtransaction */
static void
merge_own_groups(MemoryContext cxt)
{
	List	   *sorted = list_copy(own_groups);
	int			n = list_length(sorted);
	Batch		b;
	int			i;

	list_sort(sorted, own_group_cmp);
	/* the last statement's metadata tuples become ours to delete */
	CommandCounterIncrement();
	memset(&b, 0, sizeof(b));
	b.cxt = AllocSetContextCreate(cxt, "colfile merge batch", ALLOCSET_DEFAULT_SIZES);
	b.cap = Min(n, Max(colfile_rows_per_group, 1));
	b.own = palloc(sizeof(OwnGroup *) * b.cap);
	b.groups = palloc(sizeof(ColfileRowGroup) * b.cap);
	b.files = palloc(sizeof(List *) * b.cap);
	b.file_tids = palloc(sizeof(List *) * b.cap);
	for (i = 0; i < n;)
	{
		OwnGroup   *first = list_nth(sorted, i);
		Relation	rel = try_relation_open(first->relid, NoLock);
		int64		run_start = -1;
		int			j;

		/* this relation's groups: i .. j-1, in TID order */
		for (j = i; j < n && ((OwnGroup *) list_nth(sorted, j))->relid == first->relid; j++)
			;
		if (rel != NULL)
		{
			b.rel = rel;
			for (int k = i; k < j; k++)
			{
				OwnGroup   *g = list_nth(sorted, k);

				if (g->relfilenode != rel->rd_node.relNode)
					continue;	/* storage since replaced (TRUNCATE) */
				if (g->run_start != run_start)
				{
					/* another run of our reservations: not adjacent */
					batch_finish(&b);
					run_start = g->run_start;
				}
				batch_add(&b, g);
			}
			batch_finish(&b);
			relation_close(rel, NoLock);
		}
		i = j;
	}
}

void
ColfileMergeOwnGroups(void)
{
	MemoryContext old = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	MemoryContext cxt;

	if (list_length(own_groups) < 2)
		return;
	cxt = AllocSetContextCreate(TopTransactionContext, "colfile merge before commit",
								ALLOCSET_DEFAULT_SIZES);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		merge_own_groups(cxt);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("could not merge the row groups this transaction wrote"),
				 errdetail("%s", edata->message),
				 errhint("The rows are committed in one row group per statement; VACUUM merges them.")));
	}
	PG_END_TRY();
	CurrentResourceOwner = owner;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}
