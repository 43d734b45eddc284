/*-------------------------------------------------------------------------
 * colfile.h
 *	  Interface of the colfile subsystem: the colfile table access method.
 *
 * Storage model (see DESIGN.md, "colfile table access method"):
 *
 *  - The relation's main fork is a byte stream. Block 0 is a metapage
 *	  (TID-space and byte allocators, free extents); blocks 1.. hold payload bytes
 *	  after a standard page header. Pages carry no transaction ids; every
 *	  change is WAL-logged with generic WAL.
 *  - A row group (a "data file") is a run of column chunks, each a run of
 *	  frames, one per mini-block of 512 rows (and one for a dictionary
 *	  shared by the chunk's blocks). A frame's header says how its block
 *	  is encoded (plain, or a random-access encoding of colfile_encode.c)
 *	  and whether zstd compresses it. The group's directory (chunk offsets,
 *	  sizes, min/max, frame offsets) lives in the heap table
 *	  mvinc.colfile_rowgroup, keyed by (relfilenode, first_block), so its
 *	  visibility is plain MVCC.
 *  - TIDs are logical: a row group owns TID blocks [first_block,
 *	  first_block + ceil(rows_per_group / 291)); row p of the group has TID
 *	  (first_block + p / 291, p % 291 + 1).
 *  - Row states (deleted, updated to a new TID, updated in place, locked)
 *	  are tuples of the heap table mvinc.colfile_rowstate, whose own xmin
 *	  says who did it: that is how MVCC, waiting and EvalPlanQual work
 *	  without xids in our pages.
 *  - An UPDATE that changes no indexed column keeps the row's TID and
 *	  writes the changed columns' values as a column file bound to the row
 *	  group (mvinc.colfile_colfile), overlaid by row position on read
 *	  (colfile_column.c).
 *  - VACUUM (colfile_vacuum.c, colfile_compact.c) drops groups whose rows
 *	  are all dead, merges small groups and rewrites groups with many dead
 *	  rows (a compacted group lists its rows' TIDs, which never change),
 *	  folds other dead rows into per-group delete vectors, and lists bytes
 *	  no group tuple references as free for new groups (colfile_storage.c).
 *  - Rows per group: the GUC mvinc.colfile_rows_per_group (default 10000),
 *	  read when a group is written (PG15 has no reloptions for table AMs).
 *	  Chunks are cut into mini-blocks of 512 rows so that an index fetch
 *	  reads one block per needed column, and decodes only its own value
 *	  when the block has a random-access encoding.
 *
 * SERIALIZABLE: colfile takes SSI's SIREAD locks on the table as heap does
 * and none on the shared metadata, which it reads without them but with
 * heap's conflict-out check on every tuple it meets (colfile_ssi.c).
 *
 * Not supported (refused with an error): unlogged tables. TABLESAMPLE
 * samples runs of 291 rows in row-group order as its blocks.
 * Planned away: bitmap scans, TID range scans. Known differences from heap:
 * an UPDATE that moves the row (an indexed column changed, or AFTER UPDATE
 * triggers) waits for FOR KEY SHARE lockers; no TOAST table; no
 * speculative insertion tokens (ON CONFLICT waits for the inserting
 * transaction); scans give no xmin, xmax, cmin or cmax (fetches by TID give
 * xmin, the transaction that wrote the row group); VACUUM FULL, CLUSTER
 * and TRUNCATE are not MVCC-safe for older snapshots.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_COLFILE_H
#define MVINC_COLFILE_H

#include "access/htup.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "catalog/pg_attribute.h"
#include "lib/stringinfo.h"
#include "nodes/bitmapset.h"
#include "storage/buf.h"
#include "storage/itemptr.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#ifndef DatumGetItemPointer
#define DatumGetItemPointer(X)	 ((ItemPointer) DatumGetPointer(X))
#define ItemPointerGetDatum(X)	 PointerGetDatum(X)
#endif

#define COLFILE_ROWS_PER_BLOCK	291		/* MaxHeapTuplesPerPage */
#define COLFILE_MAGIC			0xC01F11E1
#define COLFILE_VERSION			1
#define COLFILE_PAYLOAD_START	MAXALIGN(SizeOfPageHeaderData)
#define COLFILE_PAYLOAD_PER_PAGE (BLCKSZ - COLFILE_PAYLOAD_START)

/* Row state kinds (mvinc.colfile_rowstate.kind) */
#define ROWSTATE_DELETED	'd'		/* deleted by its inserter's transaction */
#define ROWSTATE_UPDATED	'u'		/* deleted; new version at new_tid, or the
								 * moved-partitions TID */
#define ROWSTATE_KILLED		'k'		/* failed speculative insert: dead at once */
#define ROWSTATE_COLUMNS	'c'		/* columns updated at the same TID (column
									 * file): a no-key update, not a deletion */
#define ROWSTATE_LOCK_EXCL	'x'		/* FOR UPDATE */
#define ROWSTATE_LOCK_NOKEY 'n'		/* FOR NO KEY UPDATE */
#define ROWSTATE_LOCK_SHARE 's'		/* FOR SHARE */
#define ROWSTATE_LOCK_KEYSHARE 'K'	/* FOR KEY SHARE */

/* Is a row state kind a lock that ends with its transaction? */
#define ROWSTATE_IS_LOCK(k) ((k) == ROWSTATE_LOCK_EXCL || (k) == ROWSTATE_LOCK_NOKEY || \
							 (k) == ROWSTATE_LOCK_SHARE || (k) == ROWSTATE_LOCK_KEYSHARE)
/* Columns of mvinc.colfile_rowstate (and of the row lock table) */
#define Natts_rowstate 5
/* Records that end with their transaction or soon after: row locks and 'c' */
#define ROWSTATE_IS_TRANSIENT(k) (ROWSTATE_IS_LOCK(k) || (k) == ROWSTATE_COLUMNS)
/* Does a row state kind end the row version (deletion, update elsewhere)? */
#define ROWSTATE_IS_DELETION(k) ((k) == ROWSTATE_DELETED || (k) == ROWSTATE_UPDATED || \
								 (k) == ROWSTATE_KILLED)

/* Chunk compression kinds */
#define CHUNK_RAW		0
#define CHUNK_ZSTD		1

/* Chunk flags */
#define CHUNK_HAS_NULLS		0x01
#define CHUNK_ALL_NULL		0x02
#define CHUNK_HAS_MINMAX	0x04
#define CHUNK_HAS_DICT		0x08	/* block table entry nblocks: dictionary */
#define CHUNK_MINMAX_ORDER	0x10	/* min/max followed by the ColfileMinMaxOrder
									 * they were taken in */

/*
 * The type and collation a chunk's min and max were ordered by, stored
 * after them.  ALTER COLUMN ... TYPE keeps the groups when the new type is
 * binary-coercible (text to citext, int4 to oid) or only the collation
 * changes, and those order the same bytes otherwise: min/max are of use
 * only under the order they were taken in.
 */
typedef struct ColfileMinMaxOrder
{
	Oid			typid;
	Oid			collation;
} ColfileMinMaxOrder;

/* One column chunk in a row group directory (stored in the metadata row) */
typedef struct ColfileChunkDesc
{
	uint64		offset;			/* from the row group's data_offset */
	uint32		stored_len;		/* bytes in the pages */
	uint32		raw_len;		/* bytes after decompression */
	uint32		minmax_off;		/* into the directory's min/max area */
	uint16		min_len;
	uint16		max_len;
	uint8		compression;
	uint8		flags;
	uint16		pad;
	uint32		blocks_off;		/* directory offset of the frame offsets */
	uint32		pad2;
} ColfileChunkDesc;

#define COLFILE_ROWS_PER_MINIBLOCK 512

/*
 * Mini-block encodings (colfile_encode.c): the layout of a block's bytes
 * once unpacked. All but BLOCK_PLAIN read a single value in place.
 */
#define BLOCK_PLAIN		0		/* values laid out with their alignment */
#define BLOCK_FOR		1		/* integers: line + bit-packed residuals */
#define BLOCK_DECIMAL	2		/* float4/float8 decimals as scaled integers */
#define BLOCK_NUMERIC	3		/* numeric of one scale as scaled integers */
#define BLOCK_DICT		4		/* dictionary + bit-packed codes */
#define BLOCK_CODES		5		/* bit-packed codes into the chunk dictionary */
#define BLOCK_CHUNK_DICT 6		/* the chunk dictionary itself (not a block) */

/*
 * A chunk is a run of frames: one per mini-block, then the chunk
 * dictionary when CHUNK_HAS_DICT. Each frame is a ColfileFrameHeader and
 * the block's stored bytes. The directory holds, for every stored chunk,
 * nframes + 1 uint32 offsets (from the chunk's start; the last is the
 * chunk's length) at blocks_off, so a lookup reads only its own frame.
 */
typedef struct ColfileFrameHeader
{
	uint32		raw_len;		/* bytes once unpacked */
	uint8		compression;	/* CHUNK_RAW or CHUNK_ZSTD */
	uint8		encoding;		/* BLOCK_* of the unpacked bytes */
	uint16		pad;
} ColfileFrameHeader;

/* One mini-block (or the dictionary) of a chunk, as read */
typedef struct ColfileBlockDesc
{
	uint32		offset;			/* of its stored bytes, from the chunk's start */
	uint32		stored_len;
	uint32		raw_len;		/* bytes once unpacked */
	uint8		compression;	/* CHUNK_RAW or CHUNK_ZSTD */
	uint8		encoding;		/* BLOCK_* of the unpacked bytes */
	uint16		pad;
} ColfileBlockDesc;

/*
 * Directory header; followed by natts ColfileChunkDesc, then min/max
 * bytes, then (4-aligned) the chunks' frame offsets
 */
typedef struct ColfileDirHeader
{
	int32		natts;
	int32		ext_off;		/* a ColfileDirExt's offset, or 0 */
} ColfileDirHeader;

/*
 * Directories written by VACUUM (colfile_compact.c) end with an extension,
 * at ext_off from the start of the directory's data (8-aligned there; read
 * with memcpy):
 *  - a compacted group holds rows of several earlier groups under their own
 *    TIDs: nrowids (= nrows) int64 row ids (block * COLFILE_ROWS_PER_BLOCK +
 *    offset - 1), ascending. A plain group's row p has row id first_block *
 *    COLFILE_ROWS_PER_BLOCK + p.
 *  - a delete vector: when ndead > 0, a bitmap of nrows bits after the row
 *    ids; a set bit is a row dead to everybody, gone from the group (its
 *    deletion records were deleted with the same VACUUM).
 * A tuple with an extension never holds rows of its own: they are those of
 * the tuples it replaced.
 */
typedef struct ColfileDirExt
{
	int32		nrowids;
	int32		ndead;
} ColfileDirExt;

/*
 * A row group as read from mvinc.colfile_rowgroup. nrows < 0 marks a
 * reservation: a write buffer of a table with a unique index records its
 * TID range (-nrows rows) before its rows are written, so that other
 * sessions' uniqueness checks find the in-progress rows and wait. The real
 * row has the same first_block and sorts after it (index on relfilenode,
 * first_block, row_count), so lookups find it first; VACUUM removes
 * reservations of finished transactions.
 */
typedef struct ColfileRowGroup
{
	int64		first_block;
	int32		nrows;
	int64		seq;
	int64		data_offset;
	int64		data_length;
	bytea	   *directory;		/* detoasted copy */
	int32		ext_off;		/* written by VACUUM: see ColfileDirExt */
	int32		rowids_off;		/* compacted group: its row ids, or 0 */
	int32		dead_off;		/* delete vector, or 0 */
	int32		ndead;			/* rows set in the delete vector */
	TransactionId xmin;
	CommandId	cmin;			/* when xmin is this transaction's, else invalid */
	ItemPointerData self;		/* the metadata tuple */
} ColfileRowGroup;

/* Decoded chunk of one column */
typedef struct ColfileDecoded
{
	Datum	   *values;
	bool	   *isnull;
	char	   *raw;			/* keeps byref values alive */
} ColfileDecoded;

/* A row group loaded for reading, with per-column decoded chunks */
typedef struct ColfileGroupCache
{
	ColfileRowGroup rg;
	int			natts;			/* of the table now */
	ColfileDecoded **cols;		/* [natts], NULL until decoded */
	bool		by_block;		/* decode single mini-blocks (index fetches) */
	ColfileDecoded ***blocks;	/* [natts][nblocks] when by_block */
	int		   *touched;		/* [natts] block last read for one value, or -1 */
	MemoryContext cxt;
	/* column files (colfile_column.c) */
	struct HTAB *files_loaded;	/* ColfileLoadedFile by file, any snapshot */
	int			nvisible;		/* files overlaid, oldest first */
	int			visible_cap;
	int			nvisible_from;	/* ColfileOverlayChunk: oldest file to apply */
	struct ColfileLoadedFile **visible;
} ColfileGroupCache;

/* The columns a scan decodes, as an array; NULL means every column */
typedef struct ColfileProj
{
	int			ncols;
	int		   *cols;			/* 0-based attribute numbers */
	bool	   *want;			/* [natts]: is column i in cols? */
	TupleTableSlot *primed;		/* slot whose other columns are already NULL */
} ColfileProj;

/* Metadata relation ids, resolved once per call site */
typedef struct ColfileMetaRels
{
	Oid			rowgroup;
	Oid			rowgroup_idx;
	Oid			rowstate;
	Oid			rowstate_idx;
	Oid			rowstate_del_idx;	/* partial: deletion records only */
	Oid			rowlock;		/* unlogged: locks and 'c' (else = rowstate) */
	Oid			rowlock_idx;
	Oid			colfile;
	Oid			colfile_idx;
	Oid			seq;
} ColfileMetaRels;

/* GUCs */
extern int	colfile_rows_per_group;
extern int	colfile_compression_level;
extern int	colfile_zstd_min_gain;
extern double colfile_compact_dead_fraction;
extern bool colfile_column_updates;

/* colfile_init.c */
extern bool ColfileIsColfileRel(Relation rel);
extern bool ColfileIsColfileAm(Oid amoid);

/* colfile_tableam.c */
extern void ColfileSlotSetXmin(TupleTableSlot *slot, TransactionId xmin);

/* colfile_group_memo.c */
#define COLFILE_NO_GROUP PG_INT64_MIN
typedef struct ColfileGroupMemoPlan
{
	bool		use;			/* the snapshot may use the memo */
	bool		absent;			/* known: no group it sees owns the block */
	int64		from;			/* else scan groups starting at or below */
	int64		above;			/* and above this (COLFILE_NO_GROUP: no bound) */
	uint64		generation;
} ColfileGroupMemoPlan;
extern void ColfileGroupMemoPlanFor(Oid relfilenode, int64 block, Snapshot snapshot,
									ColfileGroupMemoPlan *plan);
extern bool ColfileGroupMemoNote(const ColfileGroupMemoPlan *plan, Oid relfilenode,
								 Snapshot snapshot, int64 block, int64 met, int64 met_last);
extern void ColfileGroupMemoForget(void);

/* colfile_meta.c */
extern void ColfileMetaRelIds(ColfileMetaRels *ids);
extern void ColfileMetaInsert(Relation heap, Oid indexoid, HeapTuple tup, CommandId cid,
							  Datum *keys, bool *keynulls, bool check_unique);
extern void ColfileMetaIndexEntry(Relation heap, Oid indexoid, HeapTuple tup, Datum *keys,
								  bool *keynulls);
extern bool ColfileMetaTupleRemoved(HeapTupleHeader h);
extern bool ColfileInserterAborted(HeapTupleHeader h);
extern void ColfileInsertRowGroup(Relation rel, ColfileRowGroup *rg, CommandId cid);
extern void ColfileCopyMetadata(Oid from, Oid to);
extern void ColfilePruneReservations(Oid relfilenode);
extern void ColfileDeleteOwnReservation(Oid relfilenode, int64 first_block);
extern bool ColfileFindRowGroup(Oid relfilenode, int64 block, Snapshot snapshot,
								ColfileRowGroup *rg);
extern TransactionId ColfileGroupTupleBusy(const ColfileRowGroup *rg);
extern bool ColfileGroupTupleReplaced(const ColfileRowGroup *rg);
extern uint64 ColfileCompletionMark(void);
extern bool ColfileCompletedSince(uint64 mark);
extern List *ColfileListRowGroups(Oid relfilenode, Snapshot snapshot);
extern List *ColfileListGroups(Relation rel, Snapshot snapshot);
extern void ColfileDeleteAllMetadata(Oid relfilenode);
extern int64 ColfileMetadataTidEnd(Oid relfilenode);
extern void ColfileDeleteMetadataBelow(Oid relfilenode, int64 floor);
extern bool ColfileDeleteRowGroupMeta(Oid relfilenode, ColfileRowGroup *rg);
extern void ColfileReplaceRowGroups(Relation rel, List *sources,
									ColfileRowGroup *merged);
/* Is the row at tid dead to everybody? (VACUUM's answer) */
typedef bool (*ColfileRowDead) (void *arg, ItemPointer tid);
extern void ColfileDeleteRowStatesWhere(Oid relfilenode, ColfileRowGroup *rg,
										ColfileRowDead dead, void *arg);
extern int64 ColfilePruneRowStates(Oid relfilenode, TransactionId oldest_xmin);
extern void ColfileInsertRowState(Relation rel, ItemPointer tid, char kind,
								  ItemPointer new_tid, CommandId cid);
extern List *ColfileRowStatesFor(Oid relfilenode, ItemPointer tid);
extern int	ColfileRowStateTables(const ColfileMetaRels *ids, Oid tabs[2], Oid idxs[2]);

/*
 * A scan of the row records of a relation (or of one row group's TID
 * range) in every row state table: begin, next until NULL (meta is the
 * current tuple's table, open with the scan's lock mode), end.
 */
typedef struct ColfileRowRecordScan
{
	Oid			tabs[2];
	Oid			idxs[2];
	int			ntabs;
	int			cur;
	int			nkeys;
	ScanKeyData key[3];
	ItemPointerData lo;
	ItemPointerData hi;
	Snapshot	snapshot;
	LOCKMODE	lockmode;
	Relation	meta;
	struct SysScanDescData *scan;
} ColfileRowRecordScan;

extern void ColfileRowRecordScanBegin(ColfileRowRecordScan *s, Oid relfilenode,
									  const ColfileRowGroup *rg, Snapshot snapshot,
									  LOCKMODE lockmode);
extern HeapTuple ColfileRowRecordScanNext(ColfileRowRecordScan *s);
extern void ColfileRowRecordScanEnd(ColfileRowRecordScan *s);
extern char ColfileRowRecordKind(ColfileRowRecordScan *s, HeapTuple tup);
extern ItemPointer ColfileRowRecordTid(ColfileRowRecordScan *s, HeapTuple tup);
extern void ColfileKeepRowLocksForPrepare(void);
extern void ColfileRowLocksXactEnd(void);
extern bool ColfileRowDeletedFor(Oid relfilenode, ItemPointer tid,
								 Snapshot snapshot);
extern struct HTAB *ColfileDeletedSet(Oid relfilenode, Snapshot snapshot);
extern bool ColfileDeletedSetContains(struct HTAB *set, ItemPointer tid);
extern int64 ColfileNextSeq(void);

/* One row state record, as read with every version visible */
typedef struct ColfileRowState
{
	char		kind;
	ItemPointerData new_tid;
	TransactionId xmin;
	CommandId	cmin;
	bool		xmax_committed;	/* removed by VACUUM or TRUNCATE */
	ItemPointerData self;		/* heap TID of the record */
} ColfileRowState;

/* A run of free bytes of the byte stream */
typedef struct ColfileExtent
{
	int64		offset;
	int64		length;
} ColfileExtent;

/* colfile_ssi.c */
extern void ColfilePredicateLockScan(Relation rel, Snapshot snapshot, uint32 flags);
extern void ColfilePredicateLockRow(Relation rel, ItemPointer tid, Snapshot snapshot);
extern void ColfileCheckRowConflictIn(Relation rel, ItemPointer tid);
extern void ColfileCheckRowsConflictIn(Relation rel, const ColfileRowGroup *rg,
									   const int32 *positions, int n);
extern void ColfileCheckInsertConflictIn(Relation rel);

/* colfile_storage.c */
extern int64 ColfileReserveTidBlocks(Relation rel, int nblocks);
extern int64 ColfileWriteBytes(Relation rel, const char *data, int64 len);
extern BlockNumber ColfileSetFreeSpace(Relation rel, ColfileExtent *ext, int n,
									   int64 end);
extern FullTransactionId ColfileRewriteXid(Relation rel);
extern void ColfileSetRewriteXid(Relation rel);
extern void ColfileSetRewriteXidInCopy(struct SMgrRelationData *dst, bool logged);
extern ColfileExtent *ColfileListFreeExtents(Relation rel, int *n, int64 *next_byte);
extern void ColfileReadMark(Relation rel, int64 *tid_block, TransactionId *xid);
extern void ColfileSetMark(Relation rel, TransactionId oldest_xmin);
extern int64 ColfileMarkLimit(Relation rel, TransactionId oldest_xmin);
extern void ColfileLockSpace(Relation rel, LOCKMODE mode);
extern void ColfileUnlockSpace(Relation rel, LOCKMODE mode);
extern void ColfileReadBytes(Relation rel, int64 offset, char *dst, int64 len);
extern void ColfileReadBytesKeep(Relation rel, int64 offset, char *dst, int64 len,
								 Buffer *keep);
extern Buffer ColfileReadPage(Relation rel, BlockNumber blk);
extern const char *ColfilePeekBytes(Relation rel, int64 offset, int64 len,
									Buffer *keep);
extern void ColfileReadMeta(Relation rel, int64 *next_tid_block, int64 *next_byte);
extern int64 ColfileTidFloor(Relation rel);
extern int64 ColfileTidFloorCached(Relation rel);
extern void ColfileForgetTidFloor(Relation rel);

/* colfile_compress.c */
extern bytea *ColfileEncodeGroup(Relation rel, TupleDesc desc, int nrows,
								 Datum **values, bool **isnull,
								 StringInfo data);
extern ColfileDecoded *ColfileDecodeChunk(Relation rel, ColfileRowGroup *rg,
										  TupleDesc desc, int attnum,
										  MemoryContext cxt);
extern ColfileDecoded *ColfileDecodeBlock(Relation rel, ColfileRowGroup *rg,
										  TupleDesc desc, int attnum,
										  int bno, MemoryContext cxt);
extern Buffer ColfilePrefetchValue(Relation rel, ColfileRowGroup *rg,
								   TupleDesc desc, int attnum, int pos);
extern void ColfileDecodeValue(Relation rel, ColfileRowGroup *rg, TupleDesc desc,
							   int attnum, int pos, Buffer pinned,
							   Datum *value, bool *isnull);
extern ColfileChunkDesc *ColfileDirChunk(bytea *dir, int attnum, int *natts);
extern void ColfileBlockInfo(Relation rel, ColfileRowGroup *rg, int attnum,
							 int i, ColfileBlockDesc *bd);
extern bool ColfileDirMinMax(bytea *dir, int attnum, Form_pg_attribute att,
							 Datum *min, Datum *max);

/* colfile_encode.c */
extern int	ColfileEncodeBlock(Form_pg_attribute att, Datum *values, bool *isnull,
							   int n, bool hasnulls, Size plain_len, StringInfo out);
extern bool ColfileDecodeEncoded(Form_pg_attribute att, int encoding,
								 const char *raw, uint32 raw_len, int n,
								 bool hasnulls, Datum *values, bool *isnull);
extern bool ColfileDecodeEncodedValue(Form_pg_attribute att, int encoding,
									  const char *raw, uint32 raw_len, int n,
									  int r, bool hasnulls, Datum *value,
									  bool *isnull);
typedef void (*ColfileReadFn) (void *arg, Size offset, char *dst, Size len);
extern bool ColfileEncodeChunkDict(Form_pg_attribute att, Datum *values,
								   bool *isnull, int nrows, Size limit,
								   StringInfo dict, uint64 **codes, int *bits);
extern void ColfileEncodeCodes(const uint64 *codes, bool *isnull, int n,
							   bool hasnulls, int bits, StringInfo out);
extern bool ColfileDecodeChunkDict(Form_pg_attribute att, const char *dict,
								   Size dictlen, Datum **entries,
								   uint32 *nentries);
extern bool ColfileDecodeCodes(const char *raw, uint32 raw_len, int n,
							   bool hasnulls, const Datum *entries,
							   uint32 nentries, Datum *values, bool *isnull);
extern bool ColfileDecodeCode(const char *raw, uint32 raw_len, int n, int r,
							  bool hasnulls, uint32 *code, bool *isnull);
extern bool ColfileChunkDictValue(Form_pg_attribute att, ColfileReadFn read,
								  void *arg, Size dictlen, uint32 code,
								  Datum *value);
extern const char *ColfileEncodingName(int encoding);

/* colfile_writer.c */
extern void ColfileBufferInsert(Relation rel, TupleTableSlot *slot, CommandId cid);
extern void ColfileFlushRel(Relation rel);
extern void ColfileInsertCallDone(Relation rel);
extern void ColfileFlushAll(void);
extern void ColfileFlushStatementEnd(CommandId cid);
extern void ColfileFlushAllForRead(Oid relid);
extern void ColfileFlushInsertsForRead(Oid relid);
extern void ColfileFlushForTid(Oid relid, ItemPointer tid);
extern void ColfileDiscardRel(Oid relid);
extern void ColfileWriterXactCallback(bool commit);
extern void ColfileWriterSubXact(bool commit, SubTransactionId mySubid,
								 SubTransactionId parentSubid);
extern void ColfileWriteGroup(Relation rel, int64 first_block, int nrows,
							  Datum **values, bool **isnull, CommandId cid);

/* colfile_commit_merge.c */
extern void ColfileRememberOwnGroup(Oid relid, Oid relfilenode, int64 first_block,
									int64 run_start, int nrows, bool reserved);
extern void ColfileNoteOwnGroupUpdated(Oid relid);
extern void ColfileForgetOwnGroups(Oid relid);
extern void ColfileOwnGroupsXactEnd(void);
extern void ColfileMergeOwnGroups(void);

/* colfile_reader.c */
extern ColfileGroupCache *ColfileLoadGroup(Relation rel, ColfileRowGroup *rg,
										   MemoryContext parent);
extern void ColfileFreeGroup(ColfileGroupCache *gc);
extern void ColfileFillSlot(Relation rel, ColfileGroupCache *gc, int pos,
							TupleTableSlot *slot, ColfileProj *proj);
extern ColfileDecoded *ColfileGroupColumn(Relation rel, ColfileGroupCache *gc, int a,
										  TupleDesc desc);
extern void ColfileFillSlotScan(Relation rel, ColfileGroupCache *gc, int pos,
								TupleTableSlot *slot, ColfileProj *proj);
extern ColfileProj *ColfileMakeProj(Bitmapset *needed, int natts);
extern void ColfileTidFor(int64 first_block, int pos, ItemPointer tid);
extern int	ColfilePosFor(int64 first_block, ItemPointer tid);
extern void ColfileGroupTid(const ColfileRowGroup *rg, int pos, ItemPointer tid);
extern int	ColfileGroupPos(const ColfileRowGroup *rg, ItemPointer tid);
extern int64 ColfileGroupLastBlock(const ColfileRowGroup *rg);
extern bool ColfileGroupRowGone(const ColfileRowGroup *rg, int pos);
extern bool ColfileRowVisible(Relation rel, ItemPointer tid, Snapshot snapshot,
							  ColfileRowGroup *rg);
extern void ColfileReaderXactEnd(void);
extern void ColfileCheckRewrite(Relation rel, Snapshot snapshot);
extern bool ColfileFetchRow(Relation rel, ItemPointer tid, Snapshot snapshot,
							TupleTableSlot *slot);
extern bool ColfileFetchRowVersion(Relation rel, ItemPointer tid, Snapshot snapshot,
								   TupleTableSlot *slot);

/* colfile_modify.c */
extern void ColfileLogRowChange(Relation rel, char op, ItemPointer oldtid,
								TupleTableSlot *newslot);
extern TM_Result colfile_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
									  Snapshot snapshot, Snapshot crosscheck, bool wait,
									  TM_FailureData *tmfd, bool changingPart);
extern TM_Result colfile_tuple_update(Relation rel, ItemPointer otid,
									  TupleTableSlot *slot, CommandId cid,
									  Snapshot snapshot, Snapshot crosscheck,
									  bool wait, TM_FailureData *tmfd,
									  LockTupleMode *lockmode, bool *update_indexes);
extern TM_Result colfile_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
									TupleTableSlot *slot, CommandId cid,
									LockTupleMode mode, LockWaitPolicy wait_policy,
									uint8 flags, TM_FailureData *tmfd);
extern void colfile_kill_row(Relation rel, ItemPointer tid);

/* colfile_vacuum.c */
extern void colfile_relation_vacuum(Relation rel, struct VacuumParams *params,
									BufferAccessStrategy bstrategy);
extern void colfile_copy_for_cluster(Relation OldTable, Relation NewTable,
									 Relation OldIndex, bool use_sort,
									 TransactionId OldestXmin,
									 TransactionId *xid_cutoff,
									 MultiXactId *multi_cutoff,
									 double *num_tuples,
									 double *tups_vacuumed,
									 double *tups_recently_dead);
extern double colfile_index_build_range_scan(Relation table_rel, Relation index_rel,
											 struct IndexInfo *index_info,
											 bool allow_sync, bool anyvisible,
											 bool progress, BlockNumber start_blockno,
											 BlockNumber numblocks,
											 IndexBuildCallback callback,
											 void *callback_state,
											 TableScanDesc scan);
extern void colfile_index_validate_scan(Relation table_rel, Relation index_rel,
										struct IndexInfo *index_info,
										Snapshot snapshot,
										struct ValidateIndexState *state);

/* colfile_column.c: column files (UPDATE of unindexed columns in place) */
struct QueryDesc;

typedef struct ColfileColumnFile
{
	int64		seq;
	int64		group_seq;
	int			nrows;
	int32	   *positions;		/* [nrows], ascending */
	int			nattrs;
	AttrNumber *attnums;		/* [nattrs], ascending */
	ColfileRowGroup rg;			/* bytes and directory, as a row group */
	TransactionId xmin;
	CommandId	cmin;			/* the command that wrote it, when xmin is
								 * this transaction's (else invalid) */
} ColfileColumnFile;

/* A relation's column files visible to one snapshot, by group */
typedef struct ColfileFileSet ColfileFileSet;

extern bool ColfileColumnUpdate(Relation rel, ItemPointer tid,
								TupleTableSlot *slot, CommandId cid,
								Bitmapset *changed);
extern Bitmapset *ColfileUpdatedColumns(Relation rel);
extern bool ColfileStatementAllowsInPlace(Relation rel);
extern void ColfileColumnNoteStatement(struct QueryDesc *query);
extern void ColfileColumnForgetStatement(struct QueryDesc *query);
extern void ColfileColumnFlushAll(bool all_subxacts);
extern void ColfileColumnFlushCommand(CommandId cid);
extern void ColfileColumnFlushForRead(Oid relid);
extern void ColfileColumnFlushForTid(Oid relid, ItemPointer tid);
extern void ColfileColumnDiscardRel(Oid relid);
extern void ColfileColumnForgetBinding(void);
extern void ColfileColumnXactEnd(void);
extern void ColfileColumnSubXact(bool commit, SubTransactionId mySubid,
								 SubTransactionId parentSubid);
extern ColfileFileSet *ColfileListColumnFiles(Relation rel, Snapshot snapshot,
											  MemoryContext cxt);
extern void ColfileGroupUseFiles(Relation rel, ColfileGroupCache *gc,
								 ColfileFileSet *set);
extern int	ColfileFileSetCount(ColfileFileSet *set);
extern ColfileColumnFile *ColfileFileSetGet(ColfileFileSet *set, int i);
extern bool ColfileFileSetTouches(ColfileFileSet *set, const ColfileRowGroup *rg,
								  AttrNumber attnum);
extern bool ColfileGroupFilesUnseenBy(ColfileGroupCache *gc, Snapshot snapshot);
extern void ColfileGroupFilesFor(Relation rel, ColfileGroupCache *gc,
								 Snapshot snapshot);
extern void ColfileOverlayRow(Relation rel, ColfileGroupCache *gc, int pos,
							  TupleTableSlot *slot, ColfileProj *proj);
extern void ColfileOverlayChunk(Relation rel, ColfileGroupCache *gc, int a,
								ColfileDecoded *d, TupleDesc sdesc);
extern ColfileDecoded *ColfileDecodeColumn(Relation rel, ColfileGroupCache *gc, int a,
										   TupleDesc sdesc);
extern bool ColfileMergeColumnFiles(Relation rel, ColfileRowGroup *rg,
									TransactionId oldest_xmin, int min_files);
/* files of a group that make a statement merge them (ColfileMergeManyColumnFiles) */
#define COLFILE_WRITER_MERGE_FILES 64
extern void ColfileMergeManyColumnFiles(Relation rel, ColfileRowGroup *rg);
extern bool ColfileSettledColumnFiles(Relation rel, const ColfileRowGroup *rg,
									  TransactionId oldest_xmin, List **files,
									  List **tids, int64 *bytes);
extern bool ColfileOwnColumnFiles(Relation rel, const ColfileRowGroup *rg,
								  List **files, List **tids, int64 *bytes);
extern void ColfileDeleteColumnFileTuples(List *tids);
extern bool ColfileGroupRecentlyUpdated(Oid relfilenode, const ColfileRowGroup *rg,
										TransactionId oldest_xmin);
extern void ColfileDeleteColumnFiles(Oid relfilenode, const ColfileRowGroup *rg);
extern bool ColfileColumnFilesRecent(Relation rel, Bitmapset *attrs,
									 TransactionId oldest_xmin);

/* colfile_compact.c */

/* When a compaction rewrites a row group (per table: colfile_settings.c) */
typedef struct ColfileCompactRules
{
	double		dead_fraction;	/* of its rows dead to everybody */
	double		file_fraction;	/* its column files' bytes, of its own */
	int64	   *only;			/* NULL, or the first blocks of the groups to
								 * compact whatever their shares */
	int			nonly;
} ColfileCompactRules;

/* What a compaction did */
typedef struct ColfileCompactResult
{
	int64		groups_rewritten;	/* replaced by rewrites */
	int64		groups_written;		/* written by them */
	int64		files_folded;		/* column files folded into rewrites */
	int64		rows_written;
	int64		rows_dropped;		/* dead to everybody, left out */
	int64		groups_vectored;	/* delete vectors and file merges */
} ColfileCompactResult;

extern bool ColfileCompact(Relation rel, TransactionId oldest_xmin, int64 limit,
						   ColfileRowDead dead, void *arg,
						   const ColfileCompactRules *rules,
						   ColfileCompactResult *result);
extern void ColfileMergeGroupsOfWriter(Relation rel, ColfileRowGroup *groups,
									   List **files, List **file_tids, int n);

/* colfile_vacuum.c: compaction on demand */
extern bool ColfileCompactNow(Relation rel, const ColfileCompactRules *rules,
							  ColfileCompactResult *res);

/* colfile_stats.c */
extern Relation ColfileOpenReadable(Oid relid);

/* colfile_admin.c */
extern double colfile_compact_file_fraction;
extern void ColfileCompactRulesFor(Relation rel, ColfileCompactRules *rules);
extern void ColfileForgetSettings(Oid relid);

/* colfile_projection.c */
extern void ColfileProjectionInit(void);
extern Bitmapset *ColfileParallelNeeded(Oid relid);
extern void ColfileProjectionXactEnd(void);
extern void ColfileScanSetNeeded(TableScanDesc scan, Bitmapset *needed);
extern ColfileRowGroup *ColfileScanNextGroup(TableScanDesc scan);
extern void ColfileScanSetSkipQuals(TableScanDesc scan, List *quals, Index scanrelid);
extern ColfileGroupCache *ColfileScanNextLoadedGroup(TableScanDesc scan, const uint8 **gone,
													 bool *per_row);
extern bool ColfileScanRowVisible(TableScanDesc scan, int pos);
extern void ColfileScanCountRows(TableScanDesc scan, int64 nrows);
extern int64 ColfileScanGroupsSkipped(TableScanDesc scan);

/* colfile_aggscan.c */
extern bool colfile_aggregate_scan;
extern void ColfileAggScanInit(void);
extern void ColfileIndexFetchSetNeeded(IndexFetchTableData *fetch, Bitmapset *needed);

#endif							/* MVINC_COLFILE_H */
