/*-------------------------------------------------------------------------
 * capture_init.c
 *	  Start-up of the capture subsystem (change capture (output plugin, capture worker, change log)): GUCs and hooks.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mvinc.h"
#include "capture/capture.h"

/* Install the capture subsystem's GUCs and hooks */
void
MvincCaptureInit(void)
{
}
