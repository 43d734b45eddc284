/*-------------------------------------------------------------------------
 * mvinc.c
 *	  Library entry point: _PG_init, which only records how the library
 *	  was loaded and calls each subsystem's init, plus the server set-up
 *	  check that CREATE EXTENSION runs.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/guc.h"

#include "mvinc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

bool		MvincPreloaded = false;

PG_FUNCTION_INFO_V1(mvinc_check_setup);

/* Module load: set up every subsystem */
void
_PG_init(void)
{
	MvincPreloaded = process_shared_preload_libraries_in_progress;

	MvincCaptureInit();
	MvincMvInit();
	MvincColfileInit();
	MvincHistoryInit();

	MarkGUCPrefixReserved("mvinc");
}

/* Refuse to run on a server that lacks what mvinc needs */
void
MvincCheckServerSetup(void)
{
	if (!MvincPreloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mvinc must be loaded via \"shared_preload_libraries\""),
				 errdetail("The change capture worker and the planner hooks are installed when the server starts."),
				 errhint("Add mvinc to shared_preload_libraries in postgresql.conf and restart the server.")));

	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mvinc requires \"wal_level\" to be \"logical\""),
				 errdetail("Changes to source tables are captured from the WAL by logical decoding."),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
}

/* SQL-callable set-up check, run by the install script */
Datum
mvinc_check_setup(PG_FUNCTION_ARGS)
{
	MvincCheckServerSetup();
	PG_RETURN_VOID();
}

/* See mvinc.h */
void
MvincSetProcStatusFlag(uint8 flag, bool on)
{
	if (((MyProc->statusFlags & flag) != 0) == on)
		return;
	LWLockAcquire(ProcArrayLock, LW_EXCLUSIVE);
	if (on)
		MyProc->statusFlags |= flag;
	else
		MyProc->statusFlags &= ~flag;
	ProcGlobal->statusFlags[MyProc->pgxactoff] = MyProc->statusFlags;
	LWLockRelease(ProcArrayLock);
}
