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

/* MPI_Dims_create's factors come largest first; give the largest to z, then y: z and y faces
 * are whole planes and rows in memory (x fastest), cheap to pack, while an x face is a gather
 * with stride nx+2. Pure. */
static void default_grid(int ranks, int P[3])
{
  int dims[3] = {0, 0, 0};
  MPI_Dims_create(ranks, 3, dims);
  P[0] = dims[2];
  P[1] = dims[1];
  P[2] = dims[0];
}

/* 1 when N over P leaves every block as thick as the run needs: 2 points per dimension
 * (decomp_check), and along a split dimension the `width` layers a neighbour receives (the
 * --halo-width check of fd_run). Pure. */
static int thick_enough(const long long N[3], const int P[3], int width)
{
  for (int d = 0; d < 3; d++) {
    long long need = P[d] > 1 && width > 2 ? width : 2;
    if (N[d] / P[d] < need) return 0;
  }
  return 1;
}

/* Among the process grids px*py*pz = ranks whose blocks of N are thick enough (thick_enough),
 * the one with the least cut area, sum over d of (P[d]-1) planes of N[e]*N[f] points: what the
 * exchange moves over all ranks. Candidates go largest pz first, then largest py, and a tie
 * keeps the first, so that equal areas go the way of the default (large factors to z, then
 * y). 1 and *P set when one is found, else 0 and *P untouched. Pure. */
static int least_cut_grid(const long long N[3], int ranks, int width, int P[3])
{
  int found = 0;
  double best = 0;
  for (int pz = ranks; pz >= 1; pz--) {
    if (ranks % pz) continue;
    for (int py = ranks / pz; py >= 1; py--) {
      if ((ranks / pz) % py) continue;
      const int c[3] = {ranks / pz / py, py, pz};
      if (!thick_enough(N, c, width)) continue;
      double area = (c[0] - 1) * ((double)N[1] * N[2]) + (c[1] - 1) * ((double)N[0] * N[2]) +
                    (c[2] - 1) * ((double)N[0] * N[1]);
      if (!found || area < best) {
        memcpy(P, c, sizeof c);
        best = area;
        found = 1;
      }
    }
  }
  return found;
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
    default_grid(ranks, P);
  }
  const int weak = !o->have_global && (o->have_local || accelerator);
  if (o->have_global) {
    memcpy(N, o->global, 3 * sizeof N[0]);
  } else if (weak) {
    /* weak scaling: --local per rank; GPUs default to 512^3 per rank */
    for (int d = 0; d < 3; d++) {
      long long n = o->have_local ? o->local[d] : 512;
      if (n > (1LL << 40) / P[d]) return fd_set_error(FD_ERR_USAGE, "--local: global grid too large");
      N[d] = n * P[d];
    }
  } else {
    N[0] = N[1] = N[2] = 128; /* host default: a short run for 8 ranks on a small machine */
  }
  /* a fixed global grid that the default grid cuts too thin (2 x 2 x 1000 on 4 ranks): the
   * thick enough grid with the least cut area instead; the default stays wherever it fits.
   * (Weak scaling gives every rank its --local block whatever the grid: nothing to choose.) */
  if (!o->have_procs && !weak && !thick_enough(N, P, o->halo_width) &&
      !least_cut_grid(N, ranks, o->halo_width, P)) {
    if (o->halo_width > 1)
      return fd_set_error(FD_ERR_USAGE,
                          "subdomain too thin: no process grid of %d rank%s (default or --procs PX,PY,PZ) leaves every block of the %lld x %lld x %lld grid 2 or more points per dimension and %d (--halo-width) along each split one; use fewer ranks, a larger grid or a smaller --halo-width",
                          ranks, ranks == 1 ? "" : "s", N[0], N[1], N[2], o->halo_width);
    return fd_set_error(FD_ERR_USAGE,
                        "subdomain too thin: no process grid of %d rank%s (default or --procs PX,PY,PZ) leaves every block of the %lld x %lld x %lld grid 2 or more points per dimension; use fewer ranks or a larger grid",
                        ranks, ranks == 1 ? "" : "s", N[0], N[1], N[2]);
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
