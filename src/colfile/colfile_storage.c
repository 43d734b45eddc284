/*-------------------------------------------------------------------------
 * colfile_storage.c
 *	  The relation's pages: a metapage (block 0) with the TID-block and byte
 *	  allocators and the free-extent list, then a byte stream of column
 *	  chunks.
 *
 * Every page change is WAL-logged with generic WAL, so redo needs no
 * library and data checksums apply as for any buffer. Writers serialise on
 * the metapage's exclusive buffer lock while they allocate and copy bytes;
 * metadata rows that reference the bytes are inserted afterwards, so a
 * crash leaves at worst unreferenced bytes (never a reference to missing
 * ones).
 *
 * Space reuse (docs/internals.md, "colfile space reuse"): the free-extent
 * list is derived, never maintained by deletes. VACUUM recomputes it as the
 * gaps between the byte extents of every row group tuple still present in
 * mvinc.colfile_rowgroup (aborted inserts excepted), so a crash, an aborted
 * VACUUM or an aborted writer can only leave space unlisted until the next
 * VACUUM, never listed twice. A row group's bytes are reused only once its
 * tuple is physically gone from the heap (pruned), so no snapshot, not even
 * SnapshotAny or a standby's, can still reach them. Writers hold the space
 * lock (ColfileLockSpace) from taking bytes until their row group tuple is
 * inserted; VACUUM takes it in ExclusiveLock mode to see no allocation in
 * flight while it recomputes.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colfile/colfile.h"

typedef struct ColfileMetaPage
{
	uint32		magic;
	uint32		version;
	uint64		next_tid_block;
	uint64		next_byte;
	/* compaction's horizon (colfile_compact.c); zero on pages of 0.1 */
	uint64		mark_tid_block;
	TransactionId mark_xid;
	uint32		nfree;			/* free extents listed */
	ColfileExtent free[FLEXIBLE_ARRAY_MEMBER];	/* by offset */
} ColfileMetaPage;

static int
int64_desc_cmp(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x > y ? -1 : x < y ? 1 : 0;
}

#define MetaOf(page) ((ColfileMetaPage *) PageGetContents(page))

/*
 * The metapage's special space holds the id of the transaction that wrote
 * the relation's rows again (VACUUM FULL, CLUSTER), if any (see
 * ColfileCheckRewrite), then the TID floor: the first TID block of this
 * file's rows. Metadata naming TIDs below it was left behind by an earlier
 * life of the relfilenode (an unlogged table emptied by crash recovery,
 * whose metadata lives in logged tables): readers ignore it, VACUUM
 * deletes it, and new rows never get its TIDs. Metapages made before the
 * floor have a special space of one id, or none: their floor is 0.
 */
typedef struct ColfileMetaSpecial
{
	FullTransactionId rewrite_xid;
	uint64		tid_floor;
} ColfileMetaSpecial;

#define META_SPECIAL MAXALIGN(sizeof(ColfileMetaSpecial))
#define MetaRewriteXid(page) \
	(PageGetSpecialSize(page) >= sizeof(FullTransactionId) ? \
	 (FullTransactionId *) PageGetSpecialPointer(page) : NULL)
#define MetaTidFloor(page) \
	(PageGetSpecialSize(page) >= sizeof(ColfileMetaSpecial) ? \
	 &((ColfileMetaSpecial *) PageGetSpecialPointer(page))->tid_floor : NULL)

/* Most free extents the metapage lists; the largest are kept */
#define MAX_FREE_EXTENTS 384
StaticAssertDecl(offsetof(ColfileMetaPage, free) + MAX_FREE_EXTENTS * sizeof(ColfileExtent) <=
				 BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - META_SPECIAL,
				 "colfile free-extent list must fit the metapage");

/*
 * pd_lower covers the listed extents: generic WAL keeps only the bytes
 * below pd_lower (and zeroes the hole up to pd_upper).
 */
static void
set_meta_lower(Page page)
{
	ColfileMetaPage *m = MetaOf(page);

	((PageHeader) page)->pd_lower =
		((char *) &m->free[m->nfree]) - (char *) page;
}

/* Format block 0, pinned and exclusively locked, as an empty file's metapage */
static void
format_metapage(Relation rel, Buffer buf, int64 floor)
{
	GenericXLogState *state = GenericXLogStart(rel);
	Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

	PageInit(page, BLCKSZ, META_SPECIAL);
	MetaOf(page)->magic = COLFILE_MAGIC;
	MetaOf(page)->version = COLFILE_VERSION;
	*MetaTidFloor(page) = floor;
	MetaOf(page)->next_tid_block = floor;
	MetaOf(page)->next_byte = 0;
	MetaOf(page)->nfree = 0;
	set_meta_lower(page);
	GenericXLogFinish(state);
}

/*
 * Pin and lock block 0, creating it when the relation is empty.
 *
 * The metapage is created under the relation's extension lock.  A backend
 * that finds block 0 all zeros either came between its creator's extension
 * and formatting (the new buffer is not locked yet), or finds the file of
 * a crash that extended it but never logged the page: it waits for the
 * extension lock to be free and then formats the page itself if it is
 * still new.
 */
static Buffer
lock_metapage(Relation rel, int mode)
{
	Buffer		buf;

	for (;;)
	{
		bool		empty = RelationGetNumberOfBlocks(rel) == 0;
		/* (read before the extension lock: no other lock may be taken under it) */
		int64		floor = empty ? ColfileMetadataTidEnd(rel->rd_node.relNode) : 0;

		if (empty)
		{
			LockRelationForExtension(rel, ExclusiveLock);
			if (RelationGetNumberOfBlocks(rel) == 0)
			{
				buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
				Assert(BufferGetBlockNumber(buf) == 0);
				LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
				format_metapage(rel, buf, floor);
				UnlockReleaseBuffer(buf);
			}
			UnlockRelationForExtension(rel, ExclusiveLock);
		}
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
		LockBuffer(buf, mode);
		if (!PageIsNew(BufferGetPage(buf)))
			break;
		UnlockReleaseBuffer(buf);

		/*
		 * Wait for its creator, but hold no extension lock while waiting for
		 * the page: writers lock the metapage before extending the file.
		 */
		floor = ColfileMetadataTidEnd(rel->rd_node.relNode);
		LockRelationForExtension(rel, ExclusiveLock);
		UnlockRelationForExtension(rel, ExclusiveLock);
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (PageIsNew(BufferGetPage(buf)))
			format_metapage(rel, buf, floor);
		UnlockReleaseBuffer(buf);
	}
	if (MetaOf(BufferGetPage(buf))->magic != COLFILE_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\" has an invalid metapage",
						RelationGetRelationName(rel))));
	return buf;
}

/* A copy of the metapage's fixed fields (zeros for an empty relation) */
static void
read_meta_fields(Relation rel, ColfileMetaPage *out)
{
	Buffer		buf;

	memset(out, 0, sizeof(ColfileMetaPage));
	if (RelationGetNumberOfBlocks(rel) == 0)
		return;
	buf = lock_metapage(rel, BUFFER_LOCK_SHARE);
	memcpy(out, MetaOf(BufferGetPage(buf)), offsetof(ColfileMetaPage, free));
	UnlockReleaseBuffer(buf);
}

/*
 * The TID floor of rel's file (see ColfileMetaSpecial), or -1 when the
 * file is empty: then no metadata of its relfilenode names a row of it.
 */
int64
ColfileTidFloor(Relation rel)
{
	Buffer		buf;
	uint64	   *floor;
	int64		v;

	if (RelationGetNumberOfBlocks(rel) == 0)
		return -1;
	buf = lock_metapage(rel, BUFFER_LOCK_SHARE);
	floor = MetaTidFloor(BufferGetPage(buf));
	v = floor ? (int64) *floor : 0;
	UnlockReleaseBuffer(buf);
	return v;
}

/*
 * The same, kept in the relation's cache entry once the metapage exists
 * (the floor is fixed from then on for this relfilenode; a crash resets
 * every backend, a new relfilenode the cache entry): for per-row checks.
 */
int64
ColfileTidFloorCached(Relation rel)
{
	int64		floor;

	if (rel->rd_amcache != NULL)
		return *(int64 *) rel->rd_amcache;
	floor = ColfileTidFloor(rel);
	if (floor >= 0)
	{
		rel->rd_amcache = MemoryContextAlloc(CacheMemoryContext, sizeof(int64));
		*(int64 *) rel->rd_amcache = floor;
	}
	return floor;
}

/* Forget the cached floor (the file was emptied in place) */
void
ColfileForgetTidFloor(Relation rel)
{
	if (rel->rd_amcache != NULL)
		pfree(rel->rd_amcache);
	rel->rd_amcache = NULL;
}

/* Read the allocators (zero for an empty relation) */
void
ColfileReadMeta(Relation rel, int64 *next_tid_block, int64 *next_byte)
{
	ColfileMetaPage m;

	read_meta_fields(rel, &m);
	*next_tid_block = m.next_tid_block;
	*next_byte = m.next_byte;
}

/* Reserve nblocks of TID space; returns the first block */
int64
ColfileReserveTidBlocks(Relation rel, int nblocks)
{
	Buffer		buf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state;
	Page		page;
	int64		first;

	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	first = MetaOf(page)->next_tid_block;
	if (first + nblocks >= (int64) MaxBlockNumber)
	{
		GenericXLogAbort(state);
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("colfile table \"%s\" has used up its row identifiers",
						RelationGetRelationName(rel)),
				 errdetail("Every row group reserves row identifiers for mvinc.colfile_rows_per_group rows."),
				 errhint("Rewrite the table with VACUUM FULL.")));
	}
	MetaOf(page)->next_tid_block = first + nblocks;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return first;
}

/*
 * Take len bytes from the free-extent list (best fit): the offset, or -1.
 * The caller holds the metapage exclusively and has registered it.
 */
static int64
take_free_extent(Page metapage, int64 len)
{
	ColfileMetaPage *m = MetaOf(metapage);
	int			best = -1;
	int64		start;
	uint32		i;

	for (i = 0; i < m->nfree; i++)
		if (m->free[i].length >= len &&
			(best < 0 || m->free[i].length < m->free[best].length))
			best = i;
	if (best < 0)
		return -1;
	start = m->free[best].offset;
	m->free[best].offset += len;
	m->free[best].length -= len;
	if (m->free[best].length == 0)
	{
		memmove(&m->free[best], &m->free[best + 1],
				sizeof(ColfileExtent) * (m->nfree - best - 1));
		m->nfree--;
		set_meta_lower(metapage);
	}
	return start;
}

/*
 * Store len bytes in the byte stream, in a listed free extent when one is
 * large enough, else at the end; returns their logical offset. The caller
 * holds the space lock (ColfileLockSpace) until the row group that
 * references the bytes is inserted.
 */
int64
ColfileWriteBytes(Relation rel, const char *data, int64 len)
{
	Buffer		metabuf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state;
	Page		page;
	int64		start;
	int64		done = 0;
	bool		reused;

	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, metabuf, 0);
	start = take_free_extent(page, len);
	reused = start >= 0;
	if (!reused)
	{
		start = MetaOf(page)->next_byte;
		MetaOf(page)->next_byte = start + len;
	}
	/* allocation first: the data pages' records follow it in the WAL */
	GenericXLogFinish(state);

	while (done < len)
	{
		int64		pos = start + done;
		BlockNumber blk = 1 + pos / COLFILE_PAYLOAD_PER_PAGE;
		int			off = pos % COLFILE_PAYLOAD_PER_PAGE;
		int			n = Min(len - done, COLFILE_PAYLOAD_PER_PAGE - off);
		Buffer		buf;
		bool		isnew = false;

		if (blk >= RelationGetNumberOfBlocks(rel))
		{
			/* (a reused extent too, in a file cut short by a crash) */
			LockRelationForExtension(rel, ExclusiveLock);
			for (;;)
			{
				buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
				if (BufferGetBlockNumber(buf) >= blk)
					break;
				/* a page left by a crashed writer's gap: keep it empty */
				LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
				state = GenericXLogStart(rel);
				page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
				PageInit(page, BLCKSZ, 0);
				GenericXLogFinish(state);
				UnlockReleaseBuffer(buf);
			}
			UnlockRelationForExtension(rel, ExclusiveLock);
			isnew = true;
		}
		else
			buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(rel);

		/*
		 * A page is started afresh when it is new, or when an append begins
		 * it (nothing referenced lies at or past the end); a reused extent
		 * shares its first and last pages with live row groups.
		 */
		if (isnew || PageIsNew(BufferGetPage(buf)) || (!reused && off == 0))
		{
			page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
			PageInit(page, BLCKSZ, 0);
		}
		else
			page = GenericXLogRegisterBuffer(state, buf, 0);
		memcpy((char *) page + COLFILE_PAYLOAD_START + off, data + done, n);
		((PageHeader) page)->pd_lower =
			Max(((PageHeader) page)->pd_lower, COLFILE_PAYLOAD_START + off + n);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		done += n;
	}
	UnlockReleaseBuffer(metabuf);
	return start;
}

/*
 * VACUUM: list the free extents (sorted by offset; the largest
 * MAX_FREE_EXTENTS are kept, the rest wait for the next VACUUM) and, when
 * end < next_byte, move the end of the byte stream back to end. The caller
 * holds the space lock in ExclusiveLock mode. Returns the number of blocks
 * the relation needs.
 */
BlockNumber
ColfileSetFreeSpace(Relation rel, ColfileExtent *ext, int n, int64 end)
{
	Buffer		buf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state = GenericXLogStart(rel);
	Page		page = GenericXLogRegisterBuffer(state, buf, 0);
	ColfileMetaPage *m = MetaOf(page);
	int			i;

	if (n > MAX_FREE_EXTENTS)
	{
		int			kept = 0;
		int64		cutoff;
		int64	   *lens = palloc(sizeof(int64) * n);

		/* the MAX_FREE_EXTENTS-th largest length; ties at it may be dropped */
		for (i = 0; i < n; i++)
			lens[i] = ext[i].length;
		qsort(lens, n, sizeof(int64), int64_desc_cmp);
		cutoff = lens[MAX_FREE_EXTENTS - 1];
		for (i = 0; i < n && kept < MAX_FREE_EXTENTS; i++)
			if (ext[i].length >= cutoff)
				m->free[kept++] = ext[i];
		m->nfree = kept;
		pfree(lens);
	}
	else
	{
		memcpy(m->free, ext, sizeof(ColfileExtent) * n);
		m->nfree = n;
	}
	if (end < (int64) m->next_byte)
		m->next_byte = end;
	set_meta_lower(page);
	end = m->next_byte;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return 1 + (end + COLFILE_PAYLOAD_PER_PAGE - 1) / COLFILE_PAYLOAD_PER_PAGE;
}

/*
 * Compaction's horizon: every row group with TIDs below *tid_block has its
 * tuple once no transaction with an id below *xid runs (zero: none yet).
 */
void
ColfileReadMark(Relation rel, int64 *tid_block, TransactionId *xid)
{
	ColfileMetaPage m;

	read_meta_fields(rel, &m);
	*tid_block = m.mark_tid_block;
	*xid = m.mark_xid;
}

/*
 * The TID block below which every row group has its tuple (or never will),
 * for a VACUUM whose horizon is oldest_xmin: the mark's TID block once
 * every transaction with an id below the mark's has ended; else 0.
 */
int64
ColfileMarkLimit(Relation rel, TransactionId oldest_xmin)
{
	int64		tid_block;
	TransactionId xid;

	ColfileReadMark(rel, &tid_block, &xid);
	if (!TransactionIdIsNormal(xid) || TransactionIdPrecedes(oldest_xmin, xid))
		return 0;
	return tid_block;
}

/*
 * Take a new mark (VACUUM), once the current one has been passed (every id
 * below its id ended before oldest_xmin): a mark replaced at every VACUUM
 * might never be passed while transactions keep overlapping. The TID
 * allocator is read before the next transaction id, under the metapage
 * lock: a writer takes its transaction id before it reserves TID blocks,
 * so every writer that reserved blocks below the mark has an id below the
 * mark's.
 */
void
ColfileSetMark(Relation rel, TransactionId oldest_xmin)
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;
	TransactionId cur;

	if (RelationGetNumberOfBlocks(rel) == 0)
		return;
	buf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	cur = MetaOf(BufferGetPage(buf))->mark_xid;
	if (TransactionIdIsNormal(cur) && TransactionIdPrecedes(oldest_xmin, cur))
	{
		UnlockReleaseBuffer(buf);
		return;
	}
	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	MetaOf(page)->mark_tid_block = MetaOf(page)->next_tid_block;
	MetaOf(page)->mark_xid = XidFromFullTransactionId(ReadNextFullTransactionId());
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/*
 * The transaction that wrote the relation's rows again (VACUUM FULL,
 * CLUSTER, SET TABLESPACE), invalid when none.  Kept as a full id: it is
 * never cleared (a standby's snapshots may predate it however old it is).
 */
FullTransactionId
ColfileRewriteXid(Relation rel)
{
	Buffer		buf;
	FullTransactionId *p;
	FullTransactionId xid = InvalidFullTransactionId;

	if (RelationGetNumberOfBlocks(rel) == 0)
		return InvalidFullTransactionId;
	buf = lock_metapage(rel, BUFFER_LOCK_SHARE);
	p = MetaRewriteXid(BufferGetPage(buf));
	if (p != NULL)
		xid = *p;
	UnlockReleaseBuffer(buf);
	return xid;
}

/* Put the rewriter into a metapage, making room on one made before that */
static void
page_set_rewrite_xid(Page page, FullTransactionId xid)
{
	if (MetaRewriteXid(page) == NULL)
	{
		PageHeader	ph = (PageHeader) page;

		/* the free-extent list never reaches the special space */
		Assert(ph->pd_lower <= BLCKSZ - META_SPECIAL);
		ph->pd_special = ph->pd_upper = BLCKSZ - META_SPECIAL;
		*MetaTidFloor(page) = 0;
	}
	*MetaRewriteXid(page) = xid;
}

/* Record the current transaction as the rewriter of a new relation */
void
ColfileSetRewriteXid(Relation rel)
{
	Buffer		buf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state = GenericXLogStart(rel);
	Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

	page_set_rewrite_xid(page, GetTopFullTransactionId());
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/*
 * The same for a copy of a relation's file not yet open as a relation
 * (SET TABLESPACE): patch its metapage in place, logged as a full page
 * and synced like the copy (RelationCopyStorage) it follows.
 */
void
ColfileSetRewriteXidInCopy(SMgrRelation dst, bool logged)
{
	PGAlignedBlock buf;
	Page		page = (Page) buf.data;

	if (smgrnblocks(dst, MAIN_FORKNUM) == 0)
		return;					/* no rows to hide */
	smgrread(dst, MAIN_FORKNUM, 0, buf.data);
	page_set_rewrite_xid(page, GetTopFullTransactionId());
	if (logged)
		log_newpage(&dst->smgr_rnode.node, MAIN_FORKNUM, 0, page, true);
	PageSetChecksumInplace(page, 0);
	smgrwrite(dst, MAIN_FORKNUM, 0, buf.data, true);
	smgrimmedsync(dst, MAIN_FORKNUM);
}

/*
 * A palloc'd copy of the listed free extents (by offset), and when next_byte
 * is given the byte allocator's end as of the same reading of the metapage
 */
ColfileExtent *
ColfileListFreeExtents(Relation rel, int *n, int64 *next_byte)
{
	Buffer		buf;
	ColfileExtent *ext;

	*n = 0;
	if (RelationGetNumberOfBlocks(rel) == 0)
	{
		if (next_byte)
			*next_byte = 0;
		return palloc(sizeof(ColfileExtent));
	}
	buf = lock_metapage(rel, BUFFER_LOCK_SHARE);
	*n = MetaOf(BufferGetPage(buf))->nfree;
	if (next_byte)
		*next_byte = MetaOf(BufferGetPage(buf))->next_byte;
	ext = palloc(sizeof(ColfileExtent) * (*n + 1));
	memcpy(ext, MetaOf(BufferGetPage(buf))->free, sizeof(ColfileExtent) * (*n));
	UnlockReleaseBuffer(buf);
	return ext;
}

/*
 * The space lock of a relfilenode: writers (RowExclusiveLock, shared among
 * them) hold it from taking bytes until their row group tuple is inserted;
 * VACUUM's recomputation of the free list takes ExclusiveLock.
 */
void
ColfileLockSpace(Relation rel, LOCKMODE mode)
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	LockDatabaseObject(ids.rowgroup, rel->rd_node.relNode, 0, mode);
}

void
ColfileUnlockSpace(Relation rel, LOCKMODE mode)
{
	ColfileMetaRels ids;

	ColfileMetaRelIds(&ids);
	UnlockDatabaseObject(ids.rowgroup, rel->rd_node.relNode, 0, mode);
}

/*
 * Buffers that recently held our pages, per backend, direct-mapped by
 * (relfilenode, block): a point lookup of a wide row pins one page per
 * column, and ReadRecentBuffer() pins a buffer that still holds the page
 * without the buffer mapping table's hashing and partition lock (which
 * were the largest remaining cost of such a lookup). A stale entry costs
 * one failed check; ReadRecentBuffer compares the whole buffer tag.
 */
#define RECENT_SLOTS 8192

typedef struct RecentBuffer
{
	RelFileNode node;
	BlockNumber blk;
	Buffer		buf;
} RecentBuffer;

static RecentBuffer *recent = NULL;

/* Pin block blk of rel's main fork */
Buffer
ColfileReadPage(Relation rel, BlockNumber blk)
{
	RecentBuffer *e;
	Buffer		buf;

	if (recent == NULL)
		recent = MemoryContextAllocZero(TopMemoryContext,
										sizeof(RecentBuffer) * RECENT_SLOTS);
	e = &recent[(rel->rd_node.relNode * 0x9E3779B1u + blk) & (RECENT_SLOTS - 1)];
	if (BufferIsValid(e->buf) && e->blk == blk &&
		RelFileNodeEquals(e->node, rel->rd_node) &&
		ReadRecentBuffer(rel->rd_node, MAIN_FORKNUM, blk, e->buf))
		return e->buf;
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, NULL);
	e->node = rel->rd_node;
	e->blk = blk;
	e->buf = buf;
	return buf;
}

/*
 * Copy len bytes at a logical offset out of the pages. *keep is a pinned
 * buffer from an earlier call (or InvalidBuffer): reused when it holds the
 * first page, and on return it holds the last page read, still pinned;
 * the caller releases it. Consecutive small reads of one page (an index
 * fetch reads a block table, then the block) cost one buffer lookup.
 */
void
ColfileReadBytesKeep(Relation rel, int64 offset, char *dst, int64 len,
					 Buffer *keep)
{
	int64		done = 0;

	while (done < len)
	{
		int64		pos = offset + done;
		BlockNumber blk = 1 + pos / COLFILE_PAYLOAD_PER_PAGE;
		int			off = pos % COLFILE_PAYLOAD_PER_PAGE;
		int			n = Min(len - done, COLFILE_PAYLOAD_PER_PAGE - off);
		Buffer		buf;
		Page		page;

		if (BufferIsValid(*keep) && BufferGetBlockNumber(*keep) == blk)
			buf = *keep;
		else
		{
			if (BufferIsValid(*keep))
				ReleaseBuffer(*keep);
			*keep = InvalidBuffer;
			/* a block past the end makes ReadBuffer fail: no size check per read */
			buf = ColfileReadPage(rel, blk);
			*keep = buf;
		}
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (((PageHeader) page)->pd_lower < COLFILE_PAYLOAD_START + off + n)
		{
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("colfile table \"%s\" references unwritten bytes in block %u",
							RelationGetRelationName(rel), blk)));
		}
		memcpy(dst + done, (char *) page + COLFILE_PAYLOAD_START + off, n);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		done += n;
	}
}

/*
 * Point at len bytes at a logical offset in place when they lie in one
 * page: the page is pinned in *keep (reused and replaced as by
 * ColfileReadBytesKeep), not locked, and the bytes stay valid while it is
 * pinned. NULL when the bytes span pages.
 *
 * No content lock is needed: payload bytes that a visible row group
 * references were written (under the exclusive lock, before the metadata
 * row that references them was inserted) and never change again; an
 * appender may rewrite the page with generic WAL, but with the same bytes
 * below pd_lower. Only pd_lower, which only grows, is read for the check.
 */
const char *
ColfilePeekBytes(Relation rel, int64 offset, int64 len, Buffer *keep)
{
	BlockNumber blk = 1 + offset / COLFILE_PAYLOAD_PER_PAGE;
	int			off = offset % COLFILE_PAYLOAD_PER_PAGE;
	Page		page;

	if (off + len > COLFILE_PAYLOAD_PER_PAGE)
		return NULL;
	if (!BufferIsValid(*keep) || BufferGetBlockNumber(*keep) != blk)
	{
		if (BufferIsValid(*keep))
			ReleaseBuffer(*keep);
		*keep = InvalidBuffer;
		*keep = ColfileReadPage(rel, blk);
	}
	page = BufferGetPage(*keep);
	if (((volatile PageHeaderData *) page)->pd_lower < COLFILE_PAYLOAD_START + off + len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\" references unwritten bytes in block %u",
						RelationGetRelationName(rel), blk)));
	return (const char *) page + COLFILE_PAYLOAD_START + off;
}

/* Copy len bytes at a logical offset out of the pages */
void
ColfileReadBytes(Relation rel, int64 offset, char *dst, int64 len)
{
	Buffer		keep = InvalidBuffer;

	ColfileReadBytesKeep(rel, offset, dst, len, &keep);
	if (BufferIsValid(keep))
		ReleaseBuffer(keep);
}
