/* decomp.h - the 3D Cartesian decomposition: global and process grid from the options, each
 * rank's block of the global grid (uneven splits spread the remainder over the first ranks),
 * its neighbours in the 26 directions of faces.h, and where the process grid lays each node's
 * ranks (the node-aware grid: a compact block of the grid per node). */
#ifndef FDMINI_DECOMP_H
#define FDMINI_DECOMP_H

#include <stddef.h>

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

/* How the process grid is laid over the nodes (decomp_nodes_plan). */
typedef enum {
  DECOMP_NODES_BLOCKS = 0, /* each node's ranks form one block of the grid (fd_decomp_nodes.block) */
  DECOMP_NODES_ONE,        /* one node: the ranks in order */
  DECOMP_NODES_SINGLE,     /* one rank per node: the ranks in order */
  DECOMP_NODES_UNEQUAL,    /* nodes of different rank counts: the ranks in order */
  DECOMP_NODES_NO_FIT      /* no block of K ranks divides the grid: the ranks in order */
} decomp_nodes_mode;

/* The nodes of a communicator as the decomposition sees them: filled by decomp_nodes_of from
 * every rank's node id, then decomp_nodes_plan. A node is what fd_node.id names (src/run/bind.h):
 * a real node, or an emulated one (--test-node-ranks). */
typedef struct {
  int id;        /* this rank's node id (equal on the ranks of one node, unique per node) */
  int count;     /* nodes among the ranks */
  int index;     /* m: this rank's node among them, ordered by id (the world rank of the node's
                    first process), 0 .. count-1 */
  int local;     /* l: this rank among its node's ranks, in the communicator's order */
  int size_min, size_max; /* ranks of the smallest and of the largest node */
  decomp_nodes_mode mode;
  int block[3];  /* B: with DECOMP_NODES_BLOCKS each node's ranks form a block of bx x by x bz
                    ranks of the process grid; 0 0 0 otherwise */
} fd_decomp_nodes;

/* Fills nodes->id, count, index, local, size_min and size_max of rank `me` from the node ids
 * of the n ranks of a communicator (ids[i]: rank i's); mode ONE and block 0 0 0 (see
 * decomp_nodes_plan). FD_OK, or FD_ERR_RUNTIME without memory for a sorted copy of ids. No
 * MPI; Not Collective. */
int decomp_nodes_of(const int *ids, int n, int me, fd_decomp_nodes *nodes);

/* The node block of K ranks for the process grid P of the global grid N: among the
 * B = (bx, by, bz) with bx * by * bz = K and P[d] % B[d] == 0, the least
 *   cost(B) = sum over d with P[d] / B[d] > 1 of (K / B[d]) * A[d],
 *   A[d] = product over e != d of N[e] / P[e] (a rank's face area across d, as doubles),
 * the area of a node's faces towards other nodes. Candidates go bx from K down to 1, then by
 * from K / bx down to 1; a tie keeps the first (K = 4 on 2 x 2 x 2: 2 x 2 x 1). 1 with B set,
 * 0 when none fits (K does not divide P's product). Pure. */
int decomp_node_block(const long long N[3], const int P[3], int K, int B[3]);

/* The grid coordinates of node-local rank l of node m where each node is a block B of P:
 * Q = P / B, node coordinates mq = (m / (Q1 Q2), (m / Q2) % Q1, m % Q2), local ones
 * lq = (l / (B1 B2), (l / B2) % B1, l % B2), coords[d] = mq[d] B[d] + lq[d]. A bijection of
 * (m, l), 0 <= m < prod Q, 0 <= l < prod B, onto the grid. Pure. */
void decomp_node_coords(const int P[3], const int B[3], int m, int l, int coords[3]);

/* MPI's row-major rank of coords in P (z fastest), as MPI_Cart_rank gives it. Pure. */
int decomp_cart_rank(const int P[3], const int coords[3]);

/* nodes->mode and block for the global grid N over the process grid P (nodes filled by
 * decomp_nodes_of): one node, or one rank per node: the ranks in order (ONE, SINGLE); nodes of
 * different sizes: UNEQUAL; else the block of decomp_node_block for K = nodes->size_min, or
 * NO_FIT where there is none. Pure. */
void decomp_nodes_plan(const long long N[3], const int P[3], fd_decomp_nodes *nodes);

/* The mode's name in the JSON record: "blocks", "one_node", "one_rank_per_node", "unequal",
 * "no_fit". Pure. */
const char *decomp_nodes_mode_name(decomp_nodes_mode mode);

/* The layout in words into buf[len]: "each node a 2 x 2 x 1 block of the process grid", or
 * "the ranks in order (one node)", ... ("node-aware grid: none fits 4 ranks per node in
 * 3 x 1 x 1" for NO_FIT). Pure. */
void decomp_nodes_describe(const fd_decomp_nodes *nodes, const int P[3], char *buf, size_t len);

typedef struct {
  MPI_Comm cart;      /* Cartesian communicator (not periodic): the ranks of comm in order, or
                         where nodes.mode is DECOMP_NODES_BLOCKS in the node-aware order
                         (decomp_create; world rank 0 is Cartesian rank 0 either way) */
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
  fd_decomp_nodes nodes; /* the nodes of comm and how the grid lies over them */
} fd_decomp;

/* Builds the decomposition of the global grid N over comm with process grid P (all P[d] > 0,
 * product = size of comm; checked by the caller with decomp_check). `node` is this rank's
 * node id (fd_node.id of src/run/bind.h: equal on the ranks of one node, unique per node;
 * the same value on every rank: one node). The ranks' ids (one MPI_Allgather) give d->nodes
 * (decomp_nodes_of, decomp_nodes_plan); with DECOMP_NODES_BLOCKS rank l of node m takes the
 * coordinates decomp_node_coords(P, B, m, l) (MPI_Comm_split by decomp_cart_rank, then
 * MPI_Cart_create without reordering), else the Cartesian rank is comm's rank. Collective. */
int decomp_create(MPI_Comm comm, const long long N[3], const int P[3], int node, fd_decomp *d);
/* Frees the Cartesian communicator (none: fine). Collective over it. */
int decomp_destroy(fd_decomp *d);

#endif
