/*-------------------------------------------------------------------------
 * colfile_storage.c
 *	  The relation's pages: a metapage (block 0) with the TID-block and byte
 *	  allocators, then an append-only byte stream of column chunks.
 *
 * Every page change is WAL-logged with generic WAL, so redo needs no
 * library and data checksums apply as for any buffer. Writers serialise on
 * the metapage's exclusive buffer lock while they allocate and copy bytes;
 * metadata rows that reference the bytes are inserted afterwards, so a
 * crash leaves at worst unreferenced bytes (never a reference to missing
 * ones), and the allocators only move forward until the relfilenode is
 * replaced (TRUNCATE, VACUUM FULL, CLUSTER).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colfile/colfile.h"

typedef struct ColfileMetaPage
{
	uint32		magic;
	uint32		version;
	uint64		next_tid_block;
	uint64		next_byte;
} ColfileMetaPage;

#define MetaOf(page) ((ColfileMetaPage *) PageGetContents(page))

/* Pin and lock block 0, creating it when the relation is empty */
static Buffer
lock_metapage(Relation rel, int mode)
{
	Buffer		buf;

	if (RelationGetNumberOfBlocks(rel) == 0)
	{
		LockRelationForExtension(rel, ExclusiveLock);
		if (RelationGetNumberOfBlocks(rel) == 0)
		{
			GenericXLogState *state;
			Page		page;

			buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
			Assert(BufferGetBlockNumber(buf) == 0);
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			state = GenericXLogStart(rel);
			page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
			PageInit(page, BLCKSZ, 0);
			MetaOf(page)->magic = COLFILE_MAGIC;
			MetaOf(page)->version = COLFILE_VERSION;
			MetaOf(page)->next_tid_block = 0;
			MetaOf(page)->next_byte = 0;
			((PageHeader) page)->pd_lower =
				((char *) MetaOf(page) + sizeof(ColfileMetaPage)) - (char *) page;
			GenericXLogFinish(state);
			UnlockReleaseBuffer(buf);
		}
		UnlockRelationForExtension(rel, ExclusiveLock);
	}
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(buf, mode);
	if (MetaOf(BufferGetPage(buf))->magic != COLFILE_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("colfile table \"%s\" has an invalid metapage",
						RelationGetRelationName(rel))));
	return buf;
}

/* Read the allocators (zero for an empty relation) */
void
ColfileReadMeta(Relation rel, int64 *next_tid_block, int64 *next_byte)
{
	Buffer		buf;

	if (RelationGetNumberOfBlocks(rel) == 0)
	{
		*next_tid_block = 0;
		*next_byte = 0;
		return;
	}
	buf = lock_metapage(rel, BUFFER_LOCK_SHARE);
	*next_tid_block = MetaOf(BufferGetPage(buf))->next_tid_block;
	*next_byte = MetaOf(BufferGetPage(buf))->next_byte;
	UnlockReleaseBuffer(buf);
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

/* Append len bytes to the byte stream; returns their logical offset */
int64
ColfileAppendBytes(Relation rel, const char *data, int64 len)
{
	Buffer		metabuf = lock_metapage(rel, BUFFER_LOCK_EXCLUSIVE);
	GenericXLogState *state;
	Page		page;
	int64		start = MetaOf(BufferGetPage(metabuf))->next_byte;
	int64		done = 0;

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
		if (isnew || PageIsNew(BufferGetPage(buf)) || off == 0)
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

	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, metabuf, 0);
	MetaOf(page)->next_byte = start + len;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
	return start;
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
