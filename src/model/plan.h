/* plan.h - what a run of N ranks will be, from the options alone: the global and process grids
 * as the run resolves them (decomp_resolve_grid), how the process grid lies over the nodes
 * (decomp_nodes_plan), each rank's block, the memory a rank holds, the halo traffic per step
 * and the faces that leave each node. No MPI call, no device: `fdmini --plan` prints it for
 * any rank count (src/io/header.c), and the run's start-up header its first part.
 *
 * Where ranks sit: a node holds K consecutive ranks of the launcher (K = node_max; the last
 * node fewer where K does not divide N), as srun and mpirun place them by default. Where the
 * grid lays its node blocks (DECOMP_NODES_BLOCKS) node m's rank l takes decomp_node_coords(P,
 * B, m, l), as decomp_create does; otherwise the Cartesian rank is the launcher's rank. */
#ifndef FDMINI_PLAN_H
#define FDMINI_PLAN_H

#include "decomp.h"
#include "options.h"

/* min, avg, max of a figure over the ranks or the nodes */
typedef struct {
  double min, avg, max;
} fd_plan_stat;

typedef struct {
  int ranks;                  /* N */
  int nodes, node_min, node_max; /* nodes; ranks of the smallest and of the largest */
  long long N[3];             /* global interior grid */
  int P[3];                   /* process grid */
  fd_decomp_nodes layout;     /* count, size_min, size_max, mode and block (decomp_nodes_plan) */
  char layout_words[128];     /* decomp_nodes_describe */
  int nmin[3], nmax[3];       /* smallest and largest block */
  int iters, warmup;          /* plan_resolve_steps */
  int width, fields;          /* S; fields per halo message (the wave's two levels at S > 1) */
  /* memory of the rank with the largest block, bytes */
  int field_buffers;          /* device fields: the levels read, the output, the spare a
                                 snapshot holds, the right-hand side (state_create's pool) */
  double field_bytes;         /* one field: (nx+2S) x (ny+2S) x (nz+2S) real_t */
  double halo_device_bytes;   /* halo buffers, up to: send slots (4 where the exchange may be
                                 signalled: GPU backends, else 2), two receive blocks, the NaN
                                 block (halo.c's allocate_buffers) */
  double halo_staged_bytes;   /* pinned host buffers where MPI is not GPU-aware (GPU backends;
                                 0 on the host backend) */
  double dump_bytes;          /* --dump: the host copy of the field and of its interior (0
                                 without --dump) */
  /* the halo, per step (one exchange every S steps) */
  double bytes_step_max;      /* bytes one rank sends, the rank that sends most */
  double msgs_step_max;       /* messages (faces; edges from S = 2, corners from S = 3) */
  double bytes_exchange_max;  /* of one exchange */
  int msgs_exchange_max;
  /* faces (not edges or corners) with a neighbour on another node: per rank, and per node
     those that leave it with the bytes they carry per step (edges and corners included) */
  fd_plan_stat faces_off_rank, faces_off_node, bytes_off_node;
  long long faces_total;      /* faces with a neighbour over all ranks (each counted at both) */
} fd_plan;

/* The timed and untimed steps of a run: --iters, or 100; --warmup, or 10 on accelerators and 2
 * on the host backend rounded up to a multiple of S and T (of S and 12 for --fuse auto), so that
 * the timed steps start with whole windows and passes. Pure. */
void plan_resolve_steps(const fd_options *o, int accelerator, int *iters, int *warmup);

/* The plan of the run o on `ranks` ranks in `nodes` nodes of node_min..node_max ranks
 * (node_min = node_max except a last, smaller node), accelerator (GPU backends: the default
 * sizes, the halo's signalled slots and staged buffers). FD_OK, FD_ERR_USAGE where the run
 * would refuse the grid (decomp_resolve_grid's message, or --halo-width thicker than a block),
 * FD_ERR_RUNTIME without memory for the nodes' sums. Pure (no MPI call but MPI_Dims_create,
 * through decomp_resolve_grid); O(ranks) time, O(nodes) memory. */
int plan_make(const fd_options *o, int ranks, int nodes, int node_min, int node_max, int accelerator,
              fd_plan *p);

/* What the options ask of a run on `ranks` ranks over the global grid N in the process grid P
 * (decomp_resolve_grid's), accelerator as for plan_make, that nothing else decides (no device,
 * file or MPI library): the wave's --source and parameters on this grid, blocks at least
 * --halo-width thick, fused passes that do not span an exchange, and the test options naming
 * what the run has. fd_run refuses with these lines before it allocates anything, and --plan
 * with the same ones, so that a plan is refused exactly where its run would be. FD_OK or
 * FD_ERR_USAGE. Pure. */
int plan_check_run(const fd_options *o, int ranks, int accelerator, const long long N[3], const int P[3]);

#endif
