/* stencil_config.hip - the configuration rules of the stencil kernels, host code only: the
 * validation, fallbacks and tiling of a single-step configuration (resolve, setup_tiles), the
 * L2 rules of z-marching (march_down, l2_keep), the shell's slabs, the kernel calls of
 * backend.h that launch nothing (be_kernel_default, _resolve, _candidates) and the fused
 * kernel's rule and shared memory (be_fused_resolve, gpu_fused_resolve_within,
 * gpu_fused_smem_bytes). Compiled with the kernels (HIP or CUDA) for the device's properties
 * and wavefront width; the launches are in stencil_step.hip, stencil_exchange.hip and
 * stencil_fused.hip.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "pointwise.h"
#include "stencil_common.h"

namespace stencil {

/* ---- configuration: rules, fallbacks, tiling -------------------------------------------------- */

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

int tile_index(int m)
{
  switch (m) {
  case 1: return 0;
  case 2: return 1;
  case 4: return 2;
  case 8: return 3;
  case 16: return 4;
  default: return -1;
  }
}

/* Reordered, the y-strip rule (lab-notes kernel 7): split y into strips so that one strip of
 * a plane takes at most L2/8 bytes; then the ~3 planes a strip sweep touches at once, plus the
 * planes in flight, stay in L2. 1 strip when the whole plane fits that share. */
int plane_strips(const fd_grid *g, int nty)
{
  const double plane = (double)g->sxy * sizeof(real_t);
  const double share = gpu_props_private.l2_bytes > 0 ? gpu_props_private.l2_bytes / 8.0 : 1e30;
  long long strips = (long long)((plane + share - 1) / share);
  if (strips < 1) strips = 1;
  if (strips > nty) strips = nty;
  return (int)strips;
}

/* The first x index of a 16-byte pair at or before x = lo: pairs start on even elements
 * (even row pitch, 16-byte aligned allocation). */
int pair_start(const fd_grid *g, int lo) { return lo - (int)((g->origin + lo) & 1); }

/* Validates *k and fills its zero fields with the rules' values for the box lo..hi of grid g,
 * replacing values that cannot run there by their fallbacks. `aligned`: u, f and out are
 * 16-byte aligned. *k is then exactly what launch_box runs. */
int resolve(const fd_grid *g, fd_kernel *k, const int lo[3], const int hi[3], bool aligned)
{
  const bool even_pitch = g->sx % 2 == 0;
  const int ey = hi[1] - lo[1] + 1, ez = hi[2] - lo[2] + 1;
  if (k->vec < 0 || k->vec > 2 || k->chunk < 0 || k->strips < 0 || k->block[0] < 0 ||
      k->block[1] < 0)
    return gpu_failf_private(BE_ERROR, "stencil: invalid configuration (vec %d, chunk %d, strips %d, block %dx%d)",
                             k->vec, k->chunk, k->strips, k->block[0], k->block[1]);
  switch (k->id) {
  case FD_KERNEL_BASELINE:
    if (k->tile > 1 || k->vec > 1)
      return gpu_failf_private(BE_ERROR, "stencil: baseline takes tile 1 and vec 1 only");
    k->tile = k->vec = 1;
    k->chunk = k->strips = 0;
    if (!k->block[0] || !k->block[1]) k->block[0] = 256, k->block[1] = 1;
    break;
  case FD_KERNEL_REORDERED: {
    if (!k->tile) k->tile = sizeof(real_t) == 8 && even_pitch ? 2 : 4;
    if (tile_index(k->tile) < 0)
      return gpu_failf_private(BE_ERROR, "stencil: tile %d is not one of 1, 2, 4, 8, 16", k->tile);
    if (!k->block[0] || !k->block[1]) k->block[0] = 256, k->block[1] = 1;
    const int threads = k->block[0] * k->block[1];
    /* pairs wherever they can run: even row pitch, aligned arrays, tile <= 8 (registers),
     * whole 64-thread groups per block (the shuffles), 32-bit thread indices, grid.y planes */
    const long long pair_threads = (long long)((hi[0] - pair_start(g, lo[0])) / 2 + 1) * ceil_div(ey, k->tile);
    const bool pairs_ok = even_pitch && aligned && k->tile <= 8 && threads % 64 == 0 &&
                          threads <= PLANE_MAX_BLOCK && pair_threads < 0xffff0000LL && ez <= 65535;
    if (!k->vec || (k->vec == 2 && !pairs_ok)) k->vec = pairs_ok ? 2 : 1;
    k->chunk = 0;
    break;
  }
  case FD_KERNEL_ZMARCH:
    if (!k->tile) k->tile = 1;
    if (k->tile != 1 && k->tile != 2)
      return gpu_failf_private(BE_ERROR, "stencil: zmarch takes tile 1 or 2, not %d", k->tile);
    if (!k->block[0] || !k->block[1]) k->block[0] = 64, k->block[1] = 4;
    if (!k->vec || (k->vec == 2 && !(even_pitch && aligned))) k->vec = even_pitch && aligned ? 2 : 1;
    if (!k->chunk) k->chunk = 16;
    break;
  default:
    return gpu_failf_private(BE_ERROR, "stencil: unknown kernel id %d", (int)k->id);
  }
  const int limit = k->id == FD_KERNEL_ZMARCH ? FD_KERNEL_MAX_BLOCK : PLANE_MAX_BLOCK;
  if (k->block[0] * k->block[1] > limit)
    return gpu_failf_private(BE_ERROR, "stencil: block %dx%d exceeds %d threads for %s",
                             k->block[0], k->block[1], limit, fd_kernel_name(k->id));
  return BE_OK;
}

/* The tiling fields of a for the resolved configuration k over lo..hi. */
int setup_tiles(const fd_grid *g, fd_kernel *k, const int lo[3], const int hi[3], st_args *a)
{
  const int ex = hi[0] - lo[0] + 1, ey = hi[1] - lo[1] + 1, ez = hi[2] - lo[2] + 1;
  const int bx = k->block[0], by = k->block[1];
  for (int d = 0; d < 3; d++) a->lo[d] = lo[d], a->hi[d] = hi[d];
  a->nzb = ez;
  switch (k->id) {
  case FD_KERNEL_BASELINE:
    a->xbase = lo[0];
    a->ntx = (int)ceil_div(ex, bx);
    a->nty = (int)ceil_div(ey, by);
    break;
  case FD_KERNEL_REORDERED:
    a->xbase = k->vec == 2 ? pair_start(g, lo[0]) : lo[0];
    if (k->vec == 2) { /* k_plane_v2: ntx = pairs per row, nty = tiles of m rows */
      a->ntx = (hi[0] - a->xbase) / 2 + 1;
      a->nty = (int)ceil_div(ey, k->tile);
    } else {
      a->ntx = (int)ceil_div(hi[0] - a->xbase + 1, bx);
      a->nty = (int)ceil_div(ey, (long long)by * k->tile);
    }
    if (!k->strips) k->strips = plane_strips(g, a->nty);
    if (k->strips > a->nty) k->strips = a->nty;
    a->tps = (int)ceil_div(a->nty, k->strips);
    k->strips = (int)ceil_div(a->nty, a->tps);
    break;
  case FD_KERNEL_ZMARCH: {
    a->xbase = k->vec == 2 ? pair_start(g, lo[0]) : lo[0];
    a->ntx = (int)ceil_div(hi[0] - a->xbase + 1, (long long)bx * k->vec);
    a->nty = (int)ceil_div(ey, (long long)by * k->tile);
    /* strips rule: the chunk layer of one strip, with the planes it shares with the next
     * chunk, takes at most half of L2 */
    if (!k->strips) {
      const double l2 = gpu_props_private.l2_bytes > 0 ? gpu_props_private.l2_bytes : 1e30;
      const double layer = (double)g->sxy * sizeof(real_t) * (k->chunk + 2);
      k->strips = (int)(layer / (0.5 * l2)) + 1;
    }
    if (k->strips > a->nty) k->strips = a->nty;
    a->tps = (int)ceil_div(a->nty, k->strips);
    if (a->tps > 65535) a->tps = 65535;
    k->strips = (int)ceil_div(a->nty, a->tps);
    /* grid.z = strips * chunks <= 65535: longer chunks where needed */
    if ((long long)k->strips * ceil_div(ez, k->chunk) > 65535)
      k->chunk = (int)ceil_div(ez, 65535 / k->strips);
    a->chunk = k->chunk;
    a->nchunks = (int)ceil_div(ez, k->chunk);
    break;
  }
  default:
    return gpu_failf_private(BE_ERROR, "stencil: unknown kernel id %d", (int)k->id);
  }
  return BE_OK;
}

/* Whether k_zmarch runs mirrored (top chunk first, marching down; see k_zmarch). Where the
 * arrays a pass touches (u, out and f) exceed this rank's share of L2 (the device's, divided
 * among the ranks sharing it: be_set_device_sharers), passes that alternate u and out
 * alternate the direction, so each pass begins on the planes the previous one touched last,
 * which L2 still holds (of the first y-strip, where a plane is split into several); where they
 * fit, always up (down measured slower there). A ping-pong of two fields thus alternates
 * without the caller knowing; either direction gives the same bits. Measured in
 * bench/results/README.md ("Experiments"). */
bool march_down(const fd_grid *g, const st_args &a)
{
  const double pass = (double)g->elems * sizeof(real_t) * (a.f ? 3 : 2);
  const double l2 = (double)gpu_props_private.l2_bytes / gpu_sharers_private;
  return fd_l2_alternates(pass, l2) && (uintptr_t)a.out < (uintptr_t)a.u;
}

/* Whether k_zmarch's stores ask L2 to keep their lines (gpu_store_keep): where one field (the
 * grid's allocation) fits in this rank's share of L2 (as march_down counts it) but is more than
 * a quarter of it. There the output's lines then outlast the input's, so that the next pass,
 * which reads that output, finds more of it in L2. On larger fields the kept lines crowd out the
 * input rows that neighbouring blocks read again; on smaller ones u, out and f fit in L2
 * together and stay there without the hint. The field decides, not the arrays of the pass (f
 * too): every z-marching launch of a run on one grid then keeps or not alike, so that no launch
 * outside the loop (jacobi's residual, with no f) leaves lines at the kept priority for the
 * loop to find. Measured in bench/results/README.md, "Output kept in L2". NVIDIA only: on AMD
 * the stores are plain either way. */
bool l2_keep(const fd_grid *g)
{
  const double l2 = (double)gpu_props_private.l2_bytes / gpu_sharers_private;
  return fd_l2_keeps((double)g->elems * sizeof(real_t), l2);
}

/* A z-marching launch's use of L2, set in its arguments m (built for the box lo..hi): stores
 * kept (l2_keep) and the direction mirrored (march_down: z' = lo + hi - z, the box maps onto
 * itself). k_zmarch and k_zmarch_x alike. */
void zmarch_l2(const fd_grid *g, const int lo[3], const int hi[3], st_args &m)
{
  m.keep = l2_keep(g);
  if (march_down(g, m)) {
    m.origin += m.sxy * (lo[2] + hi[2]);
    m.sxy = -m.sxy;
  }
}

/* The slabs of the shell of `deferred` restricted to the planes kz0..kz1 (already clamped to
 * 1..nz) into *out. */
void shell_plan(const fd_grid *g, unsigned deferred, int kz0, int kz1, shell_slabs *out)
{
  const int nx = g->n[0], ny = g->n[1], nz = g->n[2];
  int lo[3], hi[3];
  fd_interior_box(g, deferred, lo, hi);
  shell_slabs sl;
  memset(&sl, 0, sizeof sl);
  auto add = [&](int i0, int i1, int j0, int j1, int k0, int k1) {
    if (k0 < kz0) k0 = kz0;
    if (k1 > kz1) k1 = kz1;
    if (i1 < i0 || j1 < j0 || k1 < k0) return;
    const int b = sl.nb++;
    sl.lo[b][0] = i0, sl.hi[b][0] = i1;
    sl.lo[b][1] = j0, sl.hi[b][1] = j1;
    sl.lo[b][2] = k0, sl.hi[b][2] = k1;
    sl.start[b + 1] = sl.start[b] + (long long)(i1 - i0 + 1) * (j1 - j0 + 1) * (k1 - k0 + 1);
  };
  /* below the box and above it (starting no lower than lo, so n = 1 is never counted twice),
   * then the middle ranges of the slower dimensions */
  const int zh = hi[2] + 1 > lo[2] ? hi[2] + 1 : lo[2], yh = hi[1] + 1 > lo[1] ? hi[1] + 1 : lo[1];
  const int xh = hi[0] + 1 > lo[0] ? hi[0] + 1 : lo[0];
  add(1, nx, 1, ny, 1, lo[2] - 1);
  add(1, nx, 1, ny, zh, nz);
  add(1, nx, 1, lo[1] - 1, lo[2], hi[2]);
  add(1, nx, yh, ny, lo[2], hi[2]);
  add(1, lo[0] - 1, lo[1], hi[1], lo[2], hi[2]);
  add(xh, nx, lo[1], hi[1], lo[2], hi[2]);
  *out = sl;
}

/* Shared rows of k_fused: per iteration parity, per thread (ty) a slot of 2 x T rows of the
 * warp's W*V columns: its first row (d = 0) and last row (d = 1) of levels 0..T-1. */
size_t fz_smem_bytes(int T, int V, int by)
{
  return (size_t)2 * by * 2 * T * GPU_WARP_SIZE * V * sizeof(real_t);
}

} /* namespace stencil */

using namespace stencil;

/* ---- API -------------------------------------------------------------------------------------- */

extern "C" int be_kernel_resolve(const fd_grid *g, fd_kernel *k)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_kernel_resolve: be_init was not called");
  const int lo[3] = {1, 1, 1};
  const int hi[3] = {g->n[0] > 0 ? g->n[0] : 1, g->n[1] > 0 ? g->n[1] : 1, g->n[2] > 0 ? g->n[2] : 1};
  int rc = resolve(g, k, lo, hi, true); /* be_malloc returns 256-byte aligned memory */
  if (rc) return rc;
  st_args a;
  memset(&a, 0, sizeof a);
  return setup_tiles(g, k, lo, hi, &a);
}

/* The rule for --tune off (docs/kernels.md): short-chunk z-marching, one row and an x
 * pair per thread, 32x8 blocks, chunks of 6 planes, the strips rule: within a point or two of
 * the best measured configuration on the H100 and the H200 at 512^3 and 1024x1024x512
 * (bench/results/README.md). */
extern "C" int be_kernel_default(const fd_grid *g, fd_kernel *k)
{
  memset(k, 0, sizeof *k);
  k->id = FD_KERNEL_ZMARCH;
  k->tile = 1;
  k->vec = 2;
  k->block[0] = 32, k->block[1] = 8;
  k->chunk = 6;
  return be_kernel_resolve(g, k);
}

/* The autotune's candidates: z-marching around the configurations that won on the H100 and
 * the H200 (x pairs; blocks 32x4, 32x8, 64x4; chunks of 4, 6 and 8 planes; two rows per
 * thread; single points), and the per-plane kernels of the lab notes (pairs with m = 2,
 * m = 4 and m = 8, the seeds' best on MI250X), so that a device whose balance differs finds
 * its own. For blocks of 32^3-64^3, where a step is bound by the latency of a thread's few
 * planes rather than by memory, single points in chunks of 1, 2 and 4 planes and the per-plane
 * kernel with one row of pairs: the most threads, the shortest chains (bench/results/README.md,
 * "Small blocks"). */
extern "C" int be_kernel_candidates(fd_kernel *list, int max)
{
  int n = 0;
  auto add = [&](fd_kernel_id id, int tile, int vec, int bx, int by, int chunk) {
    if (n >= max) return;
    fd_kernel k;
    memset(&k, 0, sizeof k);
    k.id = id, k.tile = tile, k.vec = vec, k.block[0] = bx, k.block[1] = by, k.chunk = chunk;
    list[n++] = k;
  };
  static const int chunks[] = {4, 6, 8};
  static const int shapes[][2] = {{32, 4}, {32, 8}, {64, 4}};
  for (int s = 0; s < 3; s++)
    for (int c = 0; c < 3; c++) add(FD_KERNEL_ZMARCH, 1, 2, shapes[s][0], shapes[s][1], chunks[c]);
  add(FD_KERNEL_ZMARCH, 2, 2, 32, 4, 4);
  add(FD_KERNEL_ZMARCH, 2, 2, 64, 4, 8);
  add(FD_KERNEL_ZMARCH, 1, 1, 64, 4, 8);
  add(FD_KERNEL_ZMARCH, 1, 1, 32, 4, 1); /* small blocks */
  add(FD_KERNEL_ZMARCH, 1, 1, 32, 4, 2);
  add(FD_KERNEL_ZMARCH, 1, 1, 64, 2, 2);
  add(FD_KERNEL_ZMARCH, 1, 1, 32, 4, 4);
  add(FD_KERNEL_ZMARCH, 1, 1, 64, 4, 4);
  add(FD_KERNEL_REORDERED, 1, 2, 256, 1, 0);
  add(FD_KERNEL_REORDERED, 2, 2, 256, 1, 0); /* pairs */
  add(FD_KERNEL_REORDERED, 4, 1, 256, 1, 0); /* the lab notes' kernel 4 */
  add(FD_KERNEL_REORDERED, 8, 1, 256, 1, 0); /* the lab notes' best on MI250X */
  return n;
}

/* ---- several time steps per pass ------------------------------------------------------------ */

/* The fused kernel's rule (bench/results/README.md, "Several steps per pass"): x pairs; up to
 * two steps four rows per thread, 4 threads along y, chunks of 128 planes; beyond, two rows per
 * thread, 16 threads along y (8 with 64-lane wavefronts: blocks <= FD_KERNEL_MAX_BLOCK), chunks
 * of 64 planes (four rows would spill). Where the device's shared memory per block is smaller
 * than the rule's shape takes (64 KiB on MI250X: from 3 steps with pairs), one column per
 * thread, then half the threads along y, until it fits. Fields already set are kept. */
extern "C" int gpu_fused_resolve_within(fd_fused *c, size_t smem_bytes)
{
  if (c->steps < 1 || c->steps > FD_FUSE_MAX)
    return gpu_failf_private(BE_ERROR, "fused: %d steps per pass, expected 1..%d", c->steps, FD_FUSE_MAX);
  const int short_pass = c->steps <= 2, set_tile = c->tile, set_vec = c->vec, set_by = c->block_y;
  if (!c->vec) c->vec = 2;
  if (!c->tile) c->tile = short_pass && c->vec == 2 ? 4 : 2;
  if (!c->block_y)
    c->block_y = c->tile == 4 ? 4 : 16 * GPU_WARP_SIZE <= FD_KERNEL_MAX_BLOCK ? 16 : FD_KERNEL_MAX_BLOCK / GPU_WARP_SIZE;
  if (!c->chunk) c->chunk = c->tile == 4 ? 128 : 64;
  if (c->tile != 1 && c->tile != 2 && !(c->tile == 4 && c->steps <= 2 && c->vec == 2))
    return gpu_failf_private(BE_ERROR, "fused: tile %d, expected 1 or 2 rows per thread (4 with vec 2 up to 2 steps)", c->tile);
  if (c->vec != 1 && c->vec != 2)
    return gpu_failf_private(BE_ERROR, "fused: vec %d, expected 1 or 2 columns per thread", c->vec);
  if (c->block_y < 1 || c->block_y * GPU_WARP_SIZE > FD_KERNEL_MAX_BLOCK)
    return gpu_failf_private(BE_ERROR, "fused: %d threads along y exceed %d per block", c->block_y,
                             FD_KERNEL_MAX_BLOCK);
  while (fz_smem_bytes(c->steps, c->vec, c->block_y) > smem_bytes) {
    if (!set_vec && c->vec == 2 && set_tile != 4) {
      c->vec = 1;
      if (!set_tile) c->tile = 2;
    } else if (!set_by && c->block_y > 1) {
      c->block_y /= 2;
    } else {
      return gpu_failf_private(BE_ERROR, "fused: %d steps with %d threads along y of %d columns take %zu bytes of shared memory per block, the device offers %zu",
                               c->steps, c->block_y, c->vec,
                               fz_smem_bytes(c->steps, c->vec, c->block_y), smem_bytes);
    }
  }
  if (GPU_WARP_SIZE * c->vec <= 2 * c->steps || c->block_y * c->tile <= 2 * c->steps)
    return gpu_failf_private(BE_ERROR, "fused: a %dx%d footprint has no output tile at %d steps",
                             GPU_WARP_SIZE * c->vec, c->block_y * c->tile, c->steps);
  if (c->chunk < 1) return gpu_failf_private(BE_ERROR, "fused: chunk %d", c->chunk);
  return BE_OK;
}

extern "C" size_t gpu_fused_smem_bytes(const fd_fused *c)
{
  return fz_smem_bytes(c->steps, c->vec, c->block_y);
}

extern "C" int be_fused_resolve(fd_fused *c)
{
  const size_t dev = gpu_props_private.smem_per_block;
  return gpu_fused_resolve_within(c, !gpu_initialized_private ? (size_t)-1
                                     : dev > GPU_STATIC_SMEM ? dev - GPU_STATIC_SMEM : 0);
}
