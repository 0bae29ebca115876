/* decomp.c - the 3D Cartesian decomposition and the resolution of the global and process
 * grids (decomp.h). */
#include <limits.h>
#include <string.h>

#include "decomp.h"
#include "fd_error.h"

void decomp_split(long long N, int P, int c, long long *n, long long *start)
{
  long long base = N / P, rem = N % P;
  *n = base + (c < rem ? 1 : 0);
  *start = (long long)c * base + (c < rem ? c : rem);
}

int decomp_check(const long long N[3], const int P[3])
{
  static const char axis[3] = {'x', 'y', 'z'};
  for (int d = 0; d < 3; d++) {
    if (N[d] < 1 || P[d] < 1)
      return fd_set_error(FD_ERR_USAGE, "grid and process grid must be positive in %c", axis[d]);
    long long smallest = N[d] / P[d]; /* the last blocks are the small ones */
    if (smallest < 2)
      return fd_set_error(FD_ERR_USAGE,
                          "subdomain too thin: %lld points over %d ranks in %c leaves %lld per rank, need at least 2",
                          N[d], P[d], axis[d], smallest);
    if ((N[d] + P[d] - 1) / P[d] > INT_MAX - 2)
      return fd_set_error(FD_ERR_USAGE, "subdomain too large in %c: %lld points per rank", axis[d],
                          (N[d] + P[d] - 1) / P[d]);
  }
  return FD_OK;
}

int decomp_resolve_grid(const fd_options *o, int ranks, int accelerator, long long N[3], int P[3])
{
  if (o->have_procs) {
    long long prod = (long long)o->procs[0] * o->procs[1] * o->procs[2];
    if (prod != ranks)
      return fd_set_error(FD_ERR_USAGE, "--procs %d,%d,%d has %lld ranks but the job has %d",
                          o->procs[0], o->procs[1], o->procs[2], prod, ranks);
    memcpy(P, o->procs, sizeof o->procs);
  } else {
    /* MPI_Dims_create's factors come largest first; give the largest to z, then y: z and y
     * faces are whole planes and rows in memory (x fastest), cheap to pack, while an x face
     * is a gather with stride nx+2 */
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(ranks, 3, dims);
    P[0] = dims[2];
    P[1] = dims[1];
    P[2] = dims[0];
  }
  if (o->have_global) {
    memcpy(N, o->global, 3 * sizeof N[0]);
  } else if (o->have_local || accelerator) {
    /* weak scaling: --local per rank; GPUs default to 512^3 per rank */
    for (int d = 0; d < 3; d++) {
      long long n = o->have_local ? o->local[d] : 512;
      if (n > (1LL << 40) / P[d]) return fd_set_error(FD_ERR_USAGE, "--local: global grid too large");
      N[d] = n * P[d];
    }
  } else {
    N[0] = N[1] = N[2] = 128; /* host default: a short run for 8 ranks on a small machine */
  }
  return decomp_check(N, P);
}

int decomp_create(MPI_Comm comm, const long long N[3], const int P[3], fd_decomp *d)
{
  int periods[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) {
    d->P[k] = P[k];
    d->N[k] = N[k];
  }
  FD_MPI(MPI_Cart_create(comm, 3, d->P, periods, 0, &d->cart));
  FD_MPI(MPI_Comm_set_errhandler(d->cart, MPI_ERRORS_RETURN));
  FD_MPI(MPI_Comm_rank(d->cart, &d->rank));
  FD_MPI(MPI_Comm_size(d->cart, &d->size));
  FD_MPI(MPI_Cart_coords(d->cart, d->rank, 3, d->coords));
  for (int k = 0; k < 3; k++) {
    long long n, s;
    decomp_split(N[k], P[k], d->coords[k], &n, &s);
    d->n[k] = (int)n;
    d->start[k] = s;

    /* block 0 is the largest, block P-1 the smallest */
    long long nlo, nhi, s0;
    decomp_split(N[k], P[k], P[k] - 1, &nlo, &s0);
    decomp_split(N[k], P[k], 0, &nhi, &s0);
    d->nmin[k] = (int)nlo;
    d->nmax[k] = (int)nhi;
  }
  /* the neighbour in each region's direction: faces, edges and corners (none beyond an edge
   * of the process grid: not periodic) */
  for (int r = 0; r < FD_REGIONS; r++) {
    int dir[3], c[3], inside = 1;
    fd_region_dir(r, dir);
    for (int k = 0; k < 3; k++) {
      c[k] = d->coords[k] + dir[k];
      inside &= c[k] >= 0 && c[k] < d->P[k];
    }
    d->nbr[r] = MPI_PROC_NULL;
    if (inside) FD_MPI(MPI_Cart_rank(d->cart, c, &d->nbr[r]));
  }
  return FD_OK;
}

int decomp_destroy(fd_decomp *d)
{
  if (d->cart != MPI_COMM_NULL) FD_MPI(MPI_Comm_free(&d->cart));
  return FD_OK;
}
