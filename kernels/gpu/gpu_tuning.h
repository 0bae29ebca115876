/* gpu_tuning.h - GPU-backend-only extension of backend.h for the kernel sweep (bench/) and the
 * GPU tests (tests/gpu/): launch a stencil variant with an explicit schedule, block shape and
 * vector width, and read back the configuration the default rule picks. src/ and halo/ never
 * include this: they call be_stencil(), which applies gpu_stencil_cfg_default().
 *
 * Schedules of the stencil variants (kernels/gpu/stencil_gpu.hip has the index math):
 *   BASELINE  lab-notes kernel 1: one point per thread, 2D blocks over x-y, grid.z over planes.
 *   PLANE     lab-notes kernels 3-5 (+7): each thread computes m points along y of one plane,
 *             loads in ascending address order (z-1 rows, y-1, x rows, y+m, z+1 rows),
 *             __launch_bounds__, non-temporal stores; a 1D grid re-indexed so that blocks walk
 *             the planes strip by strip ("y-split") when an x-y plane outgrows a share of L2.
 *             vec = 2 (the rule wherever nx is even): each thread owns x pairs (16-byte loads
 *             and stores), the grid is linear in threads along x (no row padding), x neighbours
 *             come by warp shuffle (k_plane_v2).
 *   ZMARCH    reordered loads with z-marching: each thread owns m rows (y) x vec points (x) of
 *             a column of planes and marches along z through one chunk, keeping the planes
 *             z-1, z, z+1 (and a prefetched z+2) in registers; per plane it loads, in ascending
 *             address order, the y-1 row, the x-1/x+1 neighbours, the y+m row; the planes
 *             ahead come through a register queue `depth` planes deep, so that each thread
 *             keeps depth*m*vec loads in flight to DRAM. Chunks alternate direction so that neighbouring chunks touch their shared
 *             planes at the same time (L2 hits). One resident wave of blocks by default.
 * All schedules evaluate every point with fd_stencil_point[_f] (pointwise.h), so results are
 * bitwise identical across schedules, tile factors, block shapes and region splits.
 */
#ifndef FDMINI_GPU_TUNING_H
#define FDMINI_GPU_TUNING_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GPU_SCHED_AUTO = 0, /* the rule of gpu_stencil_cfg_default() */
  GPU_SCHED_BASELINE = 1,
  GPU_SCHED_PLANE = 2,
  GPU_SCHED_ZMARCH = 3,
} gpu_schedule;

typedef struct {
  gpu_schedule schedule;
  int block[2]; /* threads along x and y; x*y <= GPU_MAX_BLOCK; 0 = default */
  int vec;      /* ZMARCH: points per thread along x, 1 or 2 (16-byte loads for double);
                   needs an even row pitch (nx+2) and 16-byte aligned arrays, else 1. 0 = auto */
  int strips;   /* PLANE: number of y-strips of the grid re-indexing; 0 = rule */
  int zchunks;  /* ZMARCH: chunks along z; 0 = rule (fill one resident wave) */
  int depth;    /* ZMARCH: planes loaded ahead into registers (1, 2 or 4; 2 and 4 for m <= 4);
                   0 = rule */
  int prefetch; /* planes ahead each thread prefetches into L2 (its own columns of plane
                   k + prefetch, PTX prefetch.global.L2; no-op on AMD); 0 = rule, -1 = off */
} gpu_stencil_cfg;

#define GPU_MAX_BLOCK 256

/* Fills *cfg with what be_stencil would use for kernel k on grid g (region ALL), schedule and
 * all sizes resolved. Synchronous; needs be_init. */
int gpu_stencil_cfg_default(const fd_grid *g, fd_kernel k, gpu_stencil_cfg *cfg);

/* be_stencil with an explicit configuration (zero fields take the rule's value); *used (may be
 * NULL) receives the resolved configuration. k.id BASELINE forces the baseline schedule; for
 * k.id REORDERED cfg->schedule picks PLANE or ZMARCH. Asynchronous on s. */
int gpu_stencil_launch(const fd_grid *g, fd_region region, unsigned deferred, const fd_coeffs *c,
                       const real_t *u, const real_t *f, real_t *out, fd_kernel k,
                       const gpu_stencil_cfg *cfg, be_stream s, gpu_stencil_cfg *used);

/* One line describing a resolved configuration, e.g. "zmarch m=4 vec=2 block=64x4 zchunks=2". */
void gpu_stencil_cfg_describe(const gpu_stencil_cfg *cfg, fd_kernel k, char *buf, size_t len);

/* Properties of the bound device the rules use. Synchronous. */
typedef struct {
  int sm_count;         /* multiprocessors (CUs on AMD) */
  size_t l2_bytes;      /* L2 cache */
  int max_threads_per_sm;
  int warp_size;
} gpu_device_props;
int gpu_get_device_props(gpu_device_props *p);

#ifdef __cplusplus
}
#endif
#endif
