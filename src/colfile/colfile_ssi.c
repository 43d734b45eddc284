/*-------------------------------------------------------------------------
 * colfile_ssi.c
 *	  colfile under SERIALIZABLE: SSI's predicate locks taken on the user's
 *	  table as heap takes them, and none on colfile's shared metadata.
 *
 * Every colfile table's row groups, row states and column files are tuples
 * of the same few heap tables in schema mvinc. Read under a SERIALIZABLE
 * transaction's snapshot like any table, they would get SIREAD locks on
 * their index pages and tuples, and an index page stands for many colfile
 * tables' rows at once: two transactions on unrelated colfile tables would
 * fail to serialize, and locks would run out many times sooner than heap's.
 * So metadata is read without SIREAD locks (MvincUnlockedSnapshot and
 * MvincUnlockedVisible, src/mvinc_unlocked.c). Heap's conflict-out check
 * on the tuples a read meets is kept: a metadata tuple's inserter or
 * deleter is the writer of the rows it describes (a row group's rows, a
 * row's deletion or column update), so a reader that does not see it has
 * read before that writer.
 *
 * The SIREAD locks go on the user's table instead, at heap's granularity:
 * the relation for sequential (and sample and TID range) scans, the TID
 * for rows fetched by TID (index scans, EvalPlanQual, TID scans). Writers
 * check them as heap's do: inserts against the relation, deletes and
 * updates against the row's TID. Compaction keeps every row's TID, so a
 * TID lock stays on its row.
 *
 * Order. Heap checks for SIREAD locks and makes its change visible under
 * one buffer lock, and a reader locks and judges a tuple under the same
 * lock, so a reader either holds its lock before the check or sees the
 * change (and conflicts out). colfile has no such lock, and its changes
 * reach the metadata later than the statement's call: inserts wait in a
 * buffer, in-place column updates until the statement's end. So readers
 * take their SIREAD lock before they read the metadata, and writers check
 * again after the change is in the metadata (a row group, a deletion
 * record, a column file): a reader that did not see the change took its
 * lock before that check, which then finds it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/xact.h"
#include "storage/predicate.h"

#include "mvinc.h"
#include "colfile/colfile.h"

/*
 * A scan of rel begins: sequential, sample and TID range scans lock the
 * whole relation (heap locks no TID range finer either), which also makes
 * them conflict with later inserts.
 */
void
ColfilePredicateLockScan(Relation rel, Snapshot snapshot, uint32 flags)
{
	if (flags & (SO_TYPE_SEQSCAN | SO_TYPE_SAMPLESCAN | SO_TYPE_TIDRANGESCAN))
		PredicateLockRelation(rel, snapshot);
}

/*
 * Row tid of rel is about to be read by TID under snapshot: locked before
 * its metadata is (see the file header), whether or not it turns out
 * visible.
 */
void
ColfilePredicateLockRow(Relation rel, ItemPointer tid, Snapshot snapshot)
{
	PredicateLockTID(rel, tid, snapshot, InvalidTransactionId);
}

/* Row tid of rel was just deleted or updated (its record written) */
void
ColfileCheckRowConflictIn(Relation rel, ItemPointer tid)
{
	CheckForSerializableConflictIn(rel, tid, ItemPointerGetBlockNumber(tid));
}

/* The rows at positions of row group rg were updated in place (a column file) */
void
ColfileCheckRowsConflictIn(Relation rel, const ColfileRowGroup *rg,
						   const int32 *positions, int n)
{
	if (!IsolationIsSerializable())
		return;
	for (int i = 0; i < n; i++)
	{
		ItemPointerData tid;

		ColfileGroupTid(rg, positions[i], &tid);
		ColfileCheckRowConflictIn(rel, &tid);
	}
}

/* New rows of rel were just made visible (a row group written) */
void
ColfileCheckInsertConflictIn(Relation rel)
{
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
}
