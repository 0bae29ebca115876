/* decomp.h - the 3D Cartesian decomposition: global and process grid from the options, each
 * rank's block of the global grid (uneven splits spread the remainder over the first ranks),
 * and its neighbours in the 26 directions of faces.h. */
#ifndef FDMINI_DECOMP_H
#define FDMINI_DECOMP_H

#include <mpi.h>

#include "options.h"

/* Extent and start of block c (0 <= c < P) when N points are split over P ranks: the first
 * N % P blocks get one point more. Pure. */
void decomp_split(long long N, int P, int c, long long *n, long long *start);

/* Checks that N over P gives every rank at least 2 points per dimension and that local
 * extents fit an int. Returns FD_OK or FD_ERR_USAGE with a message. Pure. */
int decomp_check(const long long N[3], const int P[3]);

/* The global grid N and the process grid P of a job of `ranks` ranks: --procs (its product
 * must be ranks) or MPI_Dims_create's factors, the largest to z, then y; --global, or --local
 * times P, or the default (512^3 per rank on accelerators, 128^3 in all on host). Where the
 * global grid is fixed (not --local) and the default P leaves a block thinner than 2 points,
 * or than --halo-width along a split dimension, P is instead the thick enough grid of `ranks`
 * with the least cut area (ties: the largest factor to z, then y), or FD_ERR_USAGE where
 * there is none. Then decomp_check. FD_OK or FD_ERR_USAGE with a message. Not Collective
 * (every rank gets the same answer: a pure function of o, ranks and accelerator). */
int decomp_resolve_grid(const fd_options *o, int ranks, int accelerator, long long N[3], int P[3]);

typedef struct {
  MPI_Comm cart;      /* Cartesian communicator (not periodic, no reordering) */
  int rank, size;
  int P[3];           /* process grid */
  int coords[3];      /* this rank's coordinates */
  long long N[3];     /* global interior extents */
  int n[3];           /* local interior extents */
  long long start[3]; /* global index of the local point 0 (the low ghost plane); local point i
                         is global point start+i, global point 0 and N+1 are boundary planes */
  int nbr[FD_REGIONS]; /* neighbour in the direction of region r (faces.h; face f = 2*d + side
                         first), MPI_PROC_NULL beyond a global edge */
  int nmin[3], nmax[3]; /* smallest and largest local extent over all ranks */
} fd_decomp;

/* Builds the decomposition of the global grid N over comm with process grid P (all P[d] > 0,
 * product = size of comm; checked by the caller with decomp_check). Collective. */
int decomp_create(MPI_Comm comm, const long long N[3], const int P[3], fd_decomp *d);
/* Frees the Cartesian communicator (none: fine). Collective over it. */
int decomp_destroy(fd_decomp *d);

#endif
