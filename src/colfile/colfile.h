/*-------------------------------------------------------------------------
 * colfile.h
 *	  Interface of the colfile subsystem: the colfile table access method.
 *-------------------------------------------------------------------------
 */
#ifndef MVINC_COLFILE_H
#define MVINC_COLFILE_H

#endif							/* MVINC_COLFILE_H */
