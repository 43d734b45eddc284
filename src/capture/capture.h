/*-------------------------------------------------------------------------
 * capture.h
 *	  Interface of the capture subsystem: change capture (output plugin, capture worker, change log).
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_CAPTURE_H
#define MVINC_CAPTURE_H

#endif							/* MVINC_CAPTURE_H */
