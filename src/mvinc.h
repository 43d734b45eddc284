/*-------------------------------------------------------------------------
 * mvinc.h
 *	  What every mvinc subsystem may rely on: the library-wide state set
 *	  up in _PG_init and the entry points of each subsystem's init.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_H
#define MVINC_H

/* True when the library was loaded through shared_preload_libraries. */
extern bool MvincPreloaded;

/* Reports an error unless the server is set up as mvinc needs. */
extern void MvincCheckServerSetup(void);

/* Subsystem initialisation, called from _PG_init in this order. */
extern void MvincCaptureInit(void);
extern void MvincMvInit(void);
extern void MvincColfileInit(void);

#endif							/* MVINC_H */
