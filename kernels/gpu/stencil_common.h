/* stencil_common.h - private to the stencil files of kernels/gpu: what the single-step
 * kernels (stencil_step.hip), the kernels with the exchange's device work
 * (stencil_exchange.hip), the fused kernel (stencil_fused.hip) and the configuration rules
 * (stencil_config.hip) share: the kernel arguments, the shell's slabs, and the host functions
 * of the rules and of launch_box (their contracts beside their code). No device code: that is
 * stencil_device.h's. Everything is in namespace stencil.
 *
 * Field layout (backend.h): (nx+2) x (ny+2) x (nz+2) points, x fastest; point (i,j,k) at
 * p = i + sx*j + sxy*k with sx = nx+2, sxy = (nx+2)(ny+2). The neighbours of p are p-+1 (x),
 * p-+sx (y), p-+sxy (z). A box is lo..hi (inclusive) per dimension: ALL = 1..n, INTERIOR =
 * fd_interior_box of the deferred faces; SHELL = ALL minus INTERIOR, up to six slabs.
 */
#ifndef FDMINI_STENCIL_COMMON_H
#define FDMINI_STENCIL_COMMON_H

#include "gpu_internal.h"

namespace stencil {

/* Threads per block of the per-plane and baseline kernels (their launch bounds). */
constexpr int PLANE_MAX_BLOCK = 256;

/* ---- kernel arguments -------------------------------------------------------------------- */

struct st_args {
  const real_t *u;  /* input field */
  const real_t *f;  /* right-hand side, or NULL */
  real_t *out;      /* output field */
  real_t cc, cx, cy, cz, cf;
  long long sx, sxy; /* strides of y and z */
  long long origin;  /* element of point (0,0,0) */
  int lo[3], hi[3];  /* box of points to update, inclusive */
  int ntx, nty;      /* tiles along x and y */
  int tps, nzb;      /* y-tiles per strip; planes in the box */
  int chunk, nchunks; /* ZMARCH: planes per block, chunks per strip */
  int xbase;         /* x index of a tile's first point (even when vec = 2) */
  int keep;          /* ZMARCH: stores ask L2 to keep their lines (l2_keep, store_out) */
};

/* ---- the boundary shell: up to six disjoint slabs (k_shell, k_shell_x, the signalled exchange)
 * Slab b holds points start[b] .. start[b+1]-1 of the flattened launch, x fastest inside the
 * slab. The shell is 1..n minus the interior box lo..hi: z slabs (k < lo_z, k > hi_z) are whole
 * planes, y slabs (j < lo_y, j > hi_y) span k = lo_z..hi_z, x slabs span j = lo_y..hi_y and
 * k = lo_z..hi_z. */
struct shell_slabs {
  int nb;
  int lo[6][3], hi[6][3];
  long long start[7];
};

/* ---- stencil_config.hip: rules, fallbacks, tiling ---- */

long long ceil_div(long long a, long long b);
/* The index of m among the tiles 1, 2, 4, 8, 16; -1 for another m. */
int tile_index(int m);
int plane_strips(const fd_grid *g, int nty);
int pair_start(const fd_grid *g, int lo);
int resolve(const fd_grid *g, fd_kernel *k, const int lo[3], const int hi[3], bool aligned);
int setup_tiles(const fd_grid *g, fd_kernel *k, const int lo[3], const int hi[3], st_args *a);
bool march_down(const fd_grid *g, const st_args &a);
bool l2_keep(const fd_grid *g);
void zmarch_l2(const fd_grid *g, const int lo[3], const int hi[3], st_args &m);
void shell_plan(const fd_grid *g, unsigned deferred, int kz0, int kz1, shell_slabs *out);
size_t fz_smem_bytes(int T, int V, int by);

/* ---- stencil_step.hip ---- */

/* Resolves *k for the box lo..hi (resolve), sets a's tiling (setup_tiles) and launches the
 * single-step kernel k names over the box on stream st. Asynchronous; BE_OK or BE_ERROR. */
int launch_box(const fd_grid *g, const int lo[3], const int hi[3], st_args &a, fd_kernel *k,
               hipStream_t st);

} /* namespace stencil */

#endif
