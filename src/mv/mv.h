/*-------------------------------------------------------------------------
 * mv.h
 *	  Interface of the mv subsystem: incremental materialized views.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_MV_H
#define MVINC_MV_H

#endif							/* MVINC_MV_H */
