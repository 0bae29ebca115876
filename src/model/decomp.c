/* decomp.c - the 3D Cartesian decomposition, the resolution of the global and process grids,
 * and the node-aware layout of the process grid over the nodes (decomp.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
                          "subdomain too thin: %lld point%s over %d rank%s in %c leaves %lld per rank, need at least 2",
                          N[d], N[d] == 1 ? "" : "s", P[d], P[d] == 1 ? "" : "s", axis[d], smallest);
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
      return fd_set_error(FD_ERR_USAGE, "--procs %d,%d,%d has %lld rank%s but the job has %d",
                          o->procs[0], o->procs[1], o->procs[2], prod, prod == 1 ? "" : "s", ranks);
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
    /* an axis of 1 point (--global takes 1 or more) fits no grid, not even one rank's, and
     * no --halo-width: only a larger grid helps. Otherwise one rank always fits (one block,
     * no split dimension), so fewer ranks do, as may a larger grid or a smaller width. */
    char thin[sizeof "x, y and z"] = ""; /* the 1-point axes, "x", "x and z", "x, y and z" */
    const int count = (N[0] < 2) + (N[1] < 2) + (N[2] < 2);
    for (int d = 0, k = 0; d < 3; d++)
      if (N[d] < 2) {
        const char *sep = k == 0 ? "" : k == count - 1 ? " and " : ", ";
        const size_t at = strlen(thin);
        snprintf(thin + at, sizeof thin - at, "%s%c", sep, "xyz"[d]);
        k++;
      }
    if (count)
      return fd_set_error(FD_ERR_USAGE,
                          "subdomain too thin: the %lld x %lld x %lld grid has 1 point along %s, and every block needs 2 or more per dimension on any number of ranks; give --global 2 or more points along %s",
                          N[0], N[1], N[2], thin, thin);
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

/* ---- the nodes ---- */

static int cmp_int(const void *a, const void *b)
{
  const int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int decomp_nodes_of(const int *ids, int n, int me, fd_decomp_nodes *nodes)
{
  memset(nodes, 0, sizeof *nodes);
  int *sorted = malloc((size_t)n * sizeof *sorted);
  if (!sorted) return fd_set_error(FD_ERR_RUNTIME, "rank %d: no memory for the node ids of %d ranks", me, n);
  memcpy(sorted, ids, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_int);
  nodes->id = ids[me];
  nodes->size_min = n;
  for (int i = 0; i < n;) { /* runs of equal ids: the nodes, by id */
    int j = i + 1;
    while (j < n && sorted[j] == sorted[i]) j++;
    if (sorted[i] < ids[me]) nodes->index++;
    if (j - i < nodes->size_min) nodes->size_min = j - i;
    if (j - i > nodes->size_max) nodes->size_max = j - i;
    nodes->count++;
    i = j;
  }
  free(sorted);
  for (int i = 0; i < me; i++) nodes->local += ids[i] == ids[me];
  nodes->mode = DECOMP_NODES_ONE;
  return FD_OK;
}

int decomp_node_block(const long long N[3], const int P[3], int K, int B[3])
{
  double A[3];
  for (int d = 0; d < 3; d++) {
    A[d] = 1.0;
    for (int e = 0; e < 3; e++)
      if (e != d) A[d] *= (double)N[e] / (double)P[e];
  }
  int found = 0;
  double best = 0;
  for (int bx = K; bx >= 1; bx--) {
    if (K % bx) continue;
    for (int by = K / bx; by >= 1; by--) {
      if ((K / bx) % by) continue;
      const int c[3] = {bx, by, K / bx / by};
      if (P[0] % c[0] || P[1] % c[1] || P[2] % c[2]) continue;
      double cost = 0;
      for (int d = 0; d < 3; d++)
        if (P[d] / c[d] > 1) cost += (double)(K / c[d]) * A[d];
      if (!found || cost < best) {
        memcpy(B, c, sizeof c);
        best = cost;
        found = 1;
      }
    }
  }
  return found;
}

void decomp_node_coords(const int P[3], const int B[3], int m, int l, int coords[3])
{
  const int Q[3] = {P[0] / B[0], P[1] / B[1], P[2] / B[2]};
  const int mq[3] = {m / (Q[1] * Q[2]), (m / Q[2]) % Q[1], m % Q[2]};
  const int lq[3] = {l / (B[1] * B[2]), (l / B[2]) % B[1], l % B[2]};
  for (int d = 0; d < 3; d++) coords[d] = mq[d] * B[d] + lq[d];
}

int decomp_cart_rank(const int P[3], const int coords[3])
{
  return (coords[0] * P[1] + coords[1]) * P[2] + coords[2];
}

void decomp_nodes_plan(const long long N[3], const int P[3], fd_decomp_nodes *nodes)
{
  memset(nodes->block, 0, sizeof nodes->block);
  if (nodes->count <= 1) nodes->mode = DECOMP_NODES_ONE;
  else if (nodes->size_min != nodes->size_max) nodes->mode = DECOMP_NODES_UNEQUAL;
  else if (nodes->size_min == 1) nodes->mode = DECOMP_NODES_SINGLE;
  else nodes->mode = decomp_node_block(N, P, nodes->size_min, nodes->block) ? DECOMP_NODES_BLOCKS : DECOMP_NODES_NO_FIT;
}

const char *decomp_nodes_mode_name(decomp_nodes_mode mode)
{
  static const char *const names[] = {[DECOMP_NODES_BLOCKS] = "blocks", [DECOMP_NODES_ONE] = "one_node",
                                      [DECOMP_NODES_SINGLE] = "one_rank_per_node",
                                      [DECOMP_NODES_UNEQUAL] = "unequal", [DECOMP_NODES_NO_FIT] = "no_fit"};
  return (unsigned)mode < sizeof names / sizeof names[0] ? names[mode] : "?";
}

void decomp_nodes_describe(const fd_decomp_nodes *nodes, const int P[3], char *buf, size_t len)
{
  const int *B = nodes->block;
  switch (nodes->mode) {
  case DECOMP_NODES_BLOCKS:
    snprintf(buf, len, "each node a %d x %d x %d block of the process grid", B[0], B[1], B[2]);
    break;
  case DECOMP_NODES_ONE:
    snprintf(buf, len, "the ranks in order (one node)");
    break;
  case DECOMP_NODES_SINGLE:
    snprintf(buf, len, "the ranks in order (one rank per node)");
    break;
  case DECOMP_NODES_UNEQUAL:
    snprintf(buf, len, "the ranks in order (node-aware grid: nodes of %d to %d ranks)", nodes->size_min,
             nodes->size_max);
    break;
  case DECOMP_NODES_NO_FIT:
    snprintf(buf, len, "the ranks in order (node-aware grid: none fits %d ranks per node in %d x %d x %d)",
             nodes->size_min, P[0], P[1], P[2]);
    break;
  }
}

/* ---- the decomposition ---- */

/* d->nodes from every rank's node id over comm (one MPI_Allgather), planned for N over P.
 * Collective. */
static int gather_nodes(MPI_Comm comm, int node, const long long N[3], const int P[3], fd_decomp *d)
{
  int size, rank;
  FD_MPI(MPI_Comm_size(comm, &size));
  FD_MPI(MPI_Comm_rank(comm, &rank));
  int *ids = malloc((size_t)size * sizeof *ids);
  FD_CALL(fd_agree(comm, ids ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: no memory for the node ids of %d ranks", rank, size)));
  int rc = MPI_Allgather(&node, 1, MPI_INT, ids, 1, MPI_INT, comm);
  int err = rc == MPI_SUCCESS ? decomp_nodes_of(ids, size, rank, &d->nodes)
                              : fd_mpi_failed(__FILE__, __LINE__, "MPI_Allgather(node ids)", rc);
  free(ids);
  FD_CALL(fd_agree(comm, err));
  decomp_nodes_plan(N, P, &d->nodes);
  return FD_OK;
}

int decomp_create(MPI_Comm comm, const long long N[3], const int P[3], int node, fd_decomp *d)
{
  int periods[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) {
    d->P[k] = P[k];
    d->N[k] = N[k];
  }
  FD_CALL(gather_nodes(comm, node, N, P, d));
  if (d->nodes.mode == DECOMP_NODES_BLOCKS) {
    /* the node-aware order: MPI_Comm_split's key is the Cartesian rank of this rank's place
     * in its node's block, so that the Cartesian communicator (no reordering) puts it there;
     * world rank 0 (node 0, local rank 0) stays rank 0 */
    int c[3];
    MPI_Comm ordered;
    decomp_node_coords(P, d->nodes.block, d->nodes.index, d->nodes.local, c);
    FD_MPI(MPI_Comm_split(comm, 0, decomp_cart_rank(P, c), &ordered));
    int rc = MPI_Cart_create(ordered, 3, d->P, periods, 0, &d->cart);
    MPI_Comm_free(&ordered);
    if (rc != MPI_SUCCESS) return fd_mpi_failed(__FILE__, __LINE__, "MPI_Cart_create(node-aware order)", rc);
  } else {
    FD_MPI(MPI_Cart_create(comm, 3, d->P, periods, 0, &d->cart));
  }
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
