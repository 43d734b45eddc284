/*-------------------------------------------------------------------------
 * hist_init.c
 *	  Set-up of the history subsystem: its settings.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "history/history.h"
#include "mvinc.h"

bool		mvinc_history_manual_edit = false;

void
MvincHistoryInit(void)
{
	DefineCustomBoolVariable("mvinc.history_manual_edit",
							 "Lets a superuser change the versions of history views by hand.",
							 "For repairs: the storage tables are otherwise written only by refresh and mvinc.history_load(); check the result with mvinc.history_check().",
							 &mvinc_history_manual_edit,
							 false, PGC_SUSET, 0, NULL, NULL, NULL);
}
