/*-------------------------------------------------------------------------
 * colfile_init.c
 *	  Start-up of the colfile subsystem (the colfile table access method): GUCs and hooks.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mvinc.h"
#include "colfile/colfile.h"

/* Install the colfile subsystem's GUCs and hooks */
void
MvincColfileInit(void)
{
}
