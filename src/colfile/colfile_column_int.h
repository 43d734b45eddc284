/*-------------------------------------------------------------------------
 * colfile_column_int.h
 *	  What colfile_column.c (writing and reading column files) shares with
 *	  colfile_column_files.c (storing and listing them) and
 *	  colfile_column_vacuum.c (VACUUM's side of them). Not for other files.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_COLFILE_COLUMN_INT_H
#define MVINC_COLFILE_COLUMN_INT_H

#include "colfile/colfile.h"

#define Natts_colfile 10		/* mvinc.colfile_colfile */

/* What a column file holds: n rows (positions ascending) of nattrs columns */
typedef struct FileContent
{
	Oid			relfilenode;
	int64		first_block;
	int64		group_seq;
	int64		seq;			/* 0: a new sequence number */
	CommandId	cid;
	int			n;
	int32	   *positions;
	int			nattrs;
	AttrNumber *attnums;		/* ascending */
	Datum	  **values;			/* [nattrs][n] */
	bool	  **isnull;
} FileContent;

/* A file as a loaded group uses it: its columns decoded there */
typedef struct ColfileLoadedFile
{
	ColfileColumnFile *f;		/* in the file cache */
	TupleDesc	desc;			/* of its columns, from the reading slot */
	ColfileDecoded **cols;		/* [nattrs], NULL until decoded */
} ColfileLoadedFile;

extern TupleDesc ColfileSubsetDesc(TupleDesc desc, int nattrs, const AttrNumber *attnums);
extern void ColfileWriteColumnFile(Relation rel, FileContent *fc);
extern bool ColfileFileTupleGone(HeapTupleHeader h);
extern bool ColfileFileTupleBeingDeleted(HeapTupleHeader h);
extern ColfileColumnFile *ColfileFileFromTuple(Relation meta, HeapTuple tup);
extern void ColfileGroupSetFiles(ColfileGroupCache *gc, ColfileColumnFile **files, int n);
extern void ColfileFileCacheXactEnd(void);

#endif							/* MVINC_COLFILE_COLUMN_INT_H */
