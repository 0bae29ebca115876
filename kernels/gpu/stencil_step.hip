/* stencil_step.hip - the single-step kernels of the GPU backend: be_stencil[_zrange] and
 * be_stencil_box. Variants (fd_kernel_id): baseline (the lab notes' kernel 1), reordered per
 * plane (kernels 3-5, with the y-strip walk of kernel 7, and a 16-byte pair form), short-chunk
 * z-marching, plus the one-launch boundary-shell kernel. Every point is evaluated by
 * fd_stencil_point[_f] (pointwise.h), so every variant, configuration and region split gives
 * bitwise the same field. Any extents work: loads and stores are guarded, nothing needs
 * divisibility. The configuration rules: stencil_config.hip; the exchange's kernels:
 * stencil_exchange.hip; several steps per pass: stencil_fused.hip.
 *
 * Field layout (backend.h): (nx+2) x (ny+2) x (nz+2) points, x fastest; point (i,j,k) at
 * p = i + sx*j + sxy*k with sx = nx+2, sxy = (nx+2)(ny+2). The neighbours of p are p-+1 (x),
 * p-+sx (y), p-+sxy (z). A box is lo..hi (inclusive) per dimension: ALL = 1..n, INTERIOR =
 * fd_interior_box of the deferred faces; SHELL = ALL minus INTERIOR, up to six slabs.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "pointwise.h"
#include "stencil_common.h"
#include "stencil_device.h"

namespace stencil {
namespace {

/* ---- baseline: lab-notes kernel 1 ----------------------------------------------------------
 * block (bx, by), grid (ceil(ex/bx), min(ceil(ey/by), 65535), min(ez, 65535)): thread ->
 * points (lo0 + blockIdx.x*bx + tx, lo1 + (blockIdx.y + q*gridDim.y)*by + ty, lo2 + blockIdx.z
 * + r*gridDim.z) for q, r >= 0; seven loads each. */
template <bool HAS_F>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_baseline(const st_args a)
{
  const int i = a.lo[0] + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i > a.hi[0]) return;
  const real_t *u = a.u;
  for (int k = a.lo[2] + (int)blockIdx.z; k <= a.hi[2]; k += (int)gridDim.z)
    for (int j = a.lo[1] + (int)(blockIdx.y * blockDim.y + threadIdx.y); j <= a.hi[1];
         j += (int)(gridDim.y * blockDim.y)) {
      const long long p = a.origin + i + a.sx * j + a.sxy * k;
      a.out[p] = stencil_at<HAS_F>(a, gpu_ldg(u + p), gpu_ldg(u + p - 1), gpu_ldg(u + p + 1),
                                   gpu_ldg(u + p - a.sx), gpu_ldg(u + p + a.sx),
                                   gpu_ldg(u + p - a.sxy), gpu_ldg(u + p + a.sxy), f_at<HAS_F>(a, p));
    }
}

/* ---- reordered, per plane: lab-notes kernels 3-5 and the y-split of kernel 7 ----------------
 * A tile is bx x (by*M) points of one plane; thread (tx, ty) owns the M points
 * (i, j0..j0+M-1, k), i = lo0 + tile_x*bx + tx, j0 = lo1 + M*(tile_y*by + ty).
 * 1D grid, block b -> (tile_x, tile_y within strip, plane, strip), strip slowest: all planes
 * of one strip of tps y-tiles are swept before the next strip, so the planes k-1, k, k+1 of a
 * strip are still in L2 when read again (kernel 7's fix for planes that outgrow L2).
 * Loads in ascending address order: z-1 rows, y-1 row, the x rows (x-1, x, x+1), y+M row,
 * z+1 rows; the centre values double as the y neighbours of the adjacent rows. Non-temporal
 * stores. */
template <int M, bool HAS_F>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_plane(const st_args a)
{
  unsigned b = blockIdx.x;
  const int tx = (int)(b % (unsigned)a.ntx);
  b /= (unsigned)a.ntx;
  const int tyl = (int)(b % (unsigned)a.tps);
  b /= (unsigned)a.tps;
  const int kk = (int)(b % (unsigned)a.nzb);
  const int ty = (int)(b / (unsigned)a.nzb) * a.tps + tyl;
  if (ty >= a.nty) return;
  const int i0 = a.xbase + tx * (int)blockDim.x + (int)threadIdx.x;
  const int j0 = a.lo[1] + M * (ty * (int)blockDim.y + (int)threadIdx.y);
  if (i0 > a.hi[0] || j0 > a.hi[1]) return;
  const int nrows = min(M, a.hi[1] - j0 + 1);
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = a.origin + i0 + sx * j0 + sxy * (a.lo[2] + kk);
  const real_t *u = a.u + p0;

  real_t zm[M], c[M], zp[M], xm[M], xp[M], ym, yp;
#pragma unroll
  for (int n = 0; n < M; n++) zm[n] = c[n] = zp[n] = xm[n] = xp[n] = (real_t)0;
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) zm[n] = gpu_ldg(u - sxy + n * sx);
  ym = gpu_ldg(u - sx);
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) {
      xm[n] = gpu_ldg(u + n * sx - 1);
      c[n] = gpu_ldg(u + n * sx);
      xp[n] = gpu_ldg(u + n * sx + 1);
    }
  yp = gpu_ldg(u + nrows * sx);
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) zp[n] = gpu_ldg(u + sxy + n * sx);

#pragma unroll
  for (int n = 0; n < M; n++) {
    if (n < nrows) {
      const real_t yl = n > 0 ? c[n > 0 ? n - 1 : 0] : ym;
      const real_t yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1] : yp;
      const long long p = p0 + n * sx;
      gpu_store_nt(a.out + p, stencil_at<HAS_F>(a, c[n], xm[n], xp[n], yl, yh, zm[n], zp[n], f_at<HAS_F>(a, p)));
    }
  }
}

/* ---- reordered, per plane, pairs: vec = 2 ------------------------------------------------------
 * The per-plane schedule with 16-byte loads (double2; float2 in single precision): thread owns
 * the pair x = i0, i0+1 (i0 = xbase + 2*qi, even, so a pair never straddles a row start) of the
 * M rows j0..j0+M-1 of one plane. Grid (x: the threads of one y-strip of one plane, y: plane,
 * z: strip); along x the threads are linear, not row-aligned blocks: t -> (qi, y-tile in the
 * strip), pair fastest, so a row of nq pairs is followed by the next row without padding.
 * Loads in ascending address order, as the per-plane kernel; the x neighbours come from the
 * adjacent lanes (the lane below holds x = i0-1 of the same row, the lane above x = i0+2) and
 * are loaded only at a warp or row edge. Points of a pair outside the box are neither computed
 * nor stored. No thread returns early: every lane takes part in the shuffles. Needs an even row
 * pitch, 16-byte aligned arrays, a block that is a whole number of 64 threads (a wavefront),
 * fewer than 2^32 threads per plane (32-bit index arithmetic) and at most 65535 planes;
 * the launcher falls back to k_plane otherwise. */
template <int M, bool HAS_F>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK, M <= 2 ? 4 : 1) k_plane_v2(const st_args a)
{
  const unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
  const unsigned t = blockIdx.x * (blockDim.x * blockDim.y) + tid; /* within (plane, strip) */
  const int qi = (int)(t % (unsigned)a.ntx); /* ntx = pairs per row */
  const int tyl = (int)(t / (unsigned)a.ntx);
  const int kk = (int)blockIdx.y;
  const int ty = (int)blockIdx.z * a.tps + tyl;
  const bool live = tyl < a.tps && ty < a.nty;
  const int i0 = a.xbase + 2 * qi;
  const int j0 = live ? a.lo[1] + M * ty : a.lo[1];
  const int nrows = live ? min(M, a.hi[1] - j0 + 1) : 0;
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = a.origin + i0 + sx * j0 + sxy * (a.lo[2] + (live ? kk : 0));
  const real_t *u = a.u + p0;

  v2 zm[M], c[M], zp[M], ym, yp;
  const v2 zero = {(real_t)0, (real_t)0};
  ym = yp = zero;
#pragma unroll
  for (int n = 0; n < M; n++) zm[n] = c[n] = zp[n] = zero;
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) zm[n] = gpu_ldg(reinterpret_cast<const v2 *>(u - sxy + n * sx));
  if (live) ym = gpu_ldg(reinterpret_cast<const v2 *>(u - sx));
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) c[n] = gpu_ldg(reinterpret_cast<const v2 *>(u + n * sx));
  if (live) yp = gpu_ldg(reinterpret_cast<const v2 *>(u + nrows * sx));
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) zp[n] = gpu_ldg(reinterpret_cast<const v2 *>(u + sxy + n * sx));

  const int lane = (int)(tid % GPU_WARP_SIZE);
  const bool from_below = lane > 0 && qi > 0;                      /* lane-1 holds pair qi-1 */
  const bool from_above = lane + 1 < GPU_WARP_SIZE && qi + 1 < a.ntx; /* lane+1: pair qi+1 */
  const bool v0 = i0 >= a.lo[0] && i0 <= a.hi[0];
  const bool v1 = i0 + 1 >= a.lo[0] && i0 + 1 <= a.hi[0];
#pragma unroll
  for (int n = 0; n < M; n++) {
    real_t xl = gpu_shfl_up1(c[n].y), xh = gpu_shfl_down1(c[n].x);
    if (n < nrows) {
      if (!from_below && v0) xl = gpu_ldg(u + n * sx - 1);
      if (!from_above && v1) xh = gpu_ldg(u + n * sx + 2);
      const v2 yl = n > 0 ? c[n > 0 ? n - 1 : 0] : ym;
      const v2 yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1] : yp;
      const long long p = p0 + n * sx;
      v2 o = zero;
      if (v0) o.x = stencil_at<HAS_F>(a, c[n].x, xl, c[n].y, yl.x, yh.x, zm[n].x, zp[n].x, f_at<HAS_F>(a, p));
      if (v1) o.y = stencil_at<HAS_F>(a, c[n].y, c[n].x, xh, yl.y, yh.y, zm[n].y, zp[n].y, f_at<HAS_F>(a, p + 1));
      if (v0 && v1) gpu_store_nt2(a.out + p, o.x, o.y);
      else if (v0) gpu_store_nt(a.out + p, o.x);
      else if (v1) gpu_store_nt(a.out + p + 1, o.y);
    }
  }
}

/* ---- short-chunk z-marching (described with its body, zmarch_body: stencil_device.h) ------ */

template <int R, int V, bool HAS_F>
__global__ void __launch_bounds__(FD_KERNEL_MAX_BLOCK) k_zmarch(const st_args a)
{
  zmarch_body<R, V, HAS_F>(a, blockIdx.x, blockIdx.y, blockIdx.z);
}

/* ---- boundary shell: one launch over up to six disjoint slabs (stencil_common.h) ----------- */

template <bool HAS_F>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_shell(const st_args a, const shell_slabs sl)
{
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= sl.start[sl.nb]) return;
  int b = 0;
  for (int q = 1; q < sl.nb; q++)
    if (t >= sl.start[q]) b = q;
  long long r = t - sl.start[b];
  const long long ex = sl.hi[b][0] - sl.lo[b][0] + 1, ey = sl.hi[b][1] - sl.lo[b][1] + 1;
  const long long i = sl.lo[b][0] + r % ex;
  r /= ex;
  const long long j = sl.lo[b][1] + r % ey, k = sl.lo[b][2] + r / ey;
  const long long p = a.origin + i + a.sx * j + a.sxy * k;
  const real_t *u = a.u;
  a.out[p] = stencil_at<HAS_F>(a, gpu_ldg(u + p), gpu_ldg(u + p - 1), gpu_ldg(u + p + 1),
                               gpu_ldg(u + p - a.sx), gpu_ldg(u + p + a.sx),
                               gpu_ldg(u + p - a.sxy), gpu_ldg(u + p + a.sxy), f_at<HAS_F>(a, p));
}

/* ---- the kernel instances -------------------------------------------------------------------- */

typedef void (*kfn)(st_args);

template <bool F> struct kernels {
  static kfn plane(int m, int vec) /* vec 2 up to m = 8 (registers) */
  {
    static const kfn p1[5] = {k_plane<1, F>, k_plane<2, F>, k_plane<4, F>, k_plane<8, F>,
                              k_plane<16, F>};
    static const kfn p2[4] = {k_plane_v2<1, F>, k_plane_v2<2, F>, k_plane_v2<4, F>,
                              k_plane_v2<8, F>};
    const int t = tile_index(m);
    return vec == 2 && t < 4 ? p2[t] : p1[t];
  }
  static kfn zmarch(int rows, int vec)
  {
    static const kfn z[2][2] = {{k_zmarch<1, 1, F>, k_zmarch<1, 2, F>},
                                {k_zmarch<2, 1, F>, k_zmarch<2, 2, F>}};
    return z[rows == 2][vec == 2];
  }
};

kfn plane_fn(bool f, int m, int vec)
{
  return f ? kernels<true>::plane(m, vec) : kernels<false>::plane(m, vec);
}
kfn zmarch_fn(bool f, int rows, int vec)
{
  return f ? kernels<true>::zmarch(rows, vec) : kernels<false>::zmarch(rows, vec);
}

/* ---- launches -------------------------------------------------------------------------------- */

/* The shell of `deferred` restricted to the planes kz0..kz1 (already clamped to 1..nz). */
int launch_shell(const fd_grid *g, unsigned deferred, int kz0, int kz1, st_args &a,
                 hipStream_t st)
{
  shell_slabs sl;
  shell_plan(g, deferred, kz0, kz1, &sl);
  const long long total = sl.start[sl.nb];
  if (total == 0) return BE_OK;
  const long long blocks = (total + PLANE_MAX_BLOCK - 1) / PLANE_MAX_BLOCK;
  if (a.f) k_shell<true><<<(unsigned)blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl);
  else k_shell<false><<<(unsigned)blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl);
  GPU_LAUNCHED(a.f ? "k_shell<f=1>" : "k_shell<f=0>");
  return BE_OK;
}

} /* namespace */

int launch_box(const fd_grid *g, const int lo[3], const int hi[3], st_args &a, fd_kernel *k,
               hipStream_t st)
{
  const bool has_f = a.f != NULL;
  const bool aligned = ((uintptr_t)a.u | (uintptr_t)a.out | (uintptr_t)a.f) % (2 * sizeof(real_t)) == 0;
  int rc = resolve(g, k, lo, hi, aligned);
  if (!rc) rc = setup_tiles(g, k, lo, hi, &a);
  if (rc) return rc;
  const dim3 block((unsigned)k->block[0], (unsigned)k->block[1]);
  char name[96];
  switch (k->id) {
  case FD_KERNEL_BASELINE: {
    const dim3 grid((unsigned)a.ntx, (unsigned)(a.nty < 65535 ? a.nty : 65535),
                    (unsigned)(a.nzb < 65535 ? a.nzb : 65535));
    if (has_f) k_baseline<true><<<grid, block, 0, st>>>(a);
    else k_baseline<false><<<grid, block, 0, st>>>(a);
    snprintf(name, sizeof name, "k_baseline<f=%d>", (int)has_f);
    break;
  }
  case FD_KERNEL_REORDERED: {
    if (k->vec == 2) { /* grid: (threads of one strip of one plane, planes, strips) */
      const long long threads = (long long)k->block[0] * k->block[1];
      const long long bx2 = ((long long)a.ntx * a.tps + threads - 1) / threads;
      if (bx2 * threads > 0xffffffffLL || a.nzb > 65535 || k->strips > 65535)
        return gpu_failf_private(BE_ERROR, "k_plane_v2: grid %lld x %d x %d too large", bx2,
                                 a.nzb, k->strips);
      const dim3 grid((unsigned)bx2, (unsigned)a.nzb, (unsigned)k->strips);
      plane_fn(has_f, k->tile, 2)<<<grid, block, 0, st>>>(a);
    } else {
      const long long blocks = (long long)a.ntx * a.tps * a.nzb * k->strips;
      if (blocks > 0x7fffffffLL)
        return gpu_failf_private(BE_ERROR, "k_plane: %lld blocks exceed the grid", blocks);
      plane_fn(has_f, k->tile, 1)<<<(unsigned)blocks, block, 0, st>>>(a);
    }
    snprintf(name, sizeof name, "k_plane<m=%d,vec=%d,f=%d>", k->tile, k->vec, (int)has_f);
    break;
  }
  case FD_KERNEL_ZMARCH: {
    if ((long long)k->strips * a.nchunks > 65535 || a.tps > 65535)
      return gpu_failf_private(BE_ERROR, "k_zmarch: grid %d x %d x %lld too large", a.ntx, a.tps,
                               (long long)k->strips * a.nchunks);
    const dim3 grid((unsigned)a.ntx, (unsigned)a.tps, (unsigned)(k->strips * a.nchunks));
    st_args m = a; /* a copy: the caller's a stays as it built it */
    zmarch_l2(g, lo, hi, m);
    zmarch_fn(has_f, k->tile, k->vec)<<<grid, block, 0, st>>>(m);
    snprintf(name, sizeof name, "k_zmarch<rows=%d,vec=%d,f=%d>", k->tile, k->vec, (int)has_f);
    break;
  }
  default:
    return gpu_failf_private(BE_ERROR, "stencil: unknown kernel id %d", (int)k->id);
  }
  GPU_LAUNCHED(name);
  return BE_OK;
}

} /* namespace stencil */

using namespace stencil;

/* ---- API -------------------------------------------------------------------------------------- */

extern "C" int be_stencil_zrange(const fd_grid *g, fd_region region, unsigned deferred, int k0,
                                 int k1, const fd_coeffs *c, const real_t *u, const real_t *f,
                                 real_t *out, fd_kernel k, be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_stencil: be_init was not called");
  if (u == out) return gpu_failf_private(BE_ERROR, "be_stencil: u and out must differ");
  if (region != FD_REGION_ALL && region != FD_REGION_INTERIOR && region != FD_REGION_SHELL)
    return gpu_failf_private(BE_ERROR, "be_stencil: unknown region %d", (int)region);
  st_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  a.cc = c->cc, a.cx = c->cx, a.cy = c->cy, a.cz = c->cz, a.cf = c->cf;
  a.sx = g->sx;
  a.sxy = g->sxy;
  a.origin = g->origin;
  const hipStream_t st = gpu_stream(s);
  if (g->n[0] < 1 || g->n[1] < 1 || g->n[2] < 1) return BE_OK; /* nothing to update */
  const int kz0 = k0 > 1 ? k0 : 1, kz1 = k1 < g->n[2] ? k1 : g->n[2];
  if (region == FD_REGION_SHELL) return launch_shell(g, deferred, kz0, kz1, a, st);
  int lo[3], hi[3];
  fd_interior_box(g, region == FD_REGION_ALL ? 0u : deferred, lo, hi);
  if (lo[2] < kz0) lo[2] = kz0;
  if (hi[2] > kz1) hi[2] = kz1;
  if (hi[0] < lo[0] || hi[1] < lo[1] || hi[2] < lo[2]) { /* empty: still check k */
    const int all_lo[3] = {1, 1, 1}, all_hi[3] = {g->n[0], g->n[1], g->n[2]};
    return resolve(g, &k, all_lo, all_hi, true);
  }
  return launch_box(g, lo, hi, a, &k, st);
}

extern "C" int be_stencil_box(const fd_grid *g, const int lo[3], const int hi[3],
                              const fd_coeffs *c, const real_t *u, const real_t *f, real_t *out,
                              fd_kernel k, be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_stencil_box: be_init was not called");
  if (u == out) return gpu_failf_private(BE_ERROR, "be_stencil_box: u and out must differ");
  for (int d = 0; d < 3; d++) {
    if (hi[d] < lo[d]) return BE_OK;
    if (lo[d] < 2 - g->ghost || hi[d] > g->n[d] + g->ghost - 1)
      return gpu_failf_private(BE_ERROR, "be_stencil_box: %d..%d outside the grid along %d", lo[d], hi[d], d);
  }
  st_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  a.cc = c->cc, a.cx = c->cx, a.cy = c->cy, a.cz = c->cz, a.cf = c->cf;
  a.sx = g->sx, a.sxy = g->sxy, a.origin = g->origin;
  return launch_box(g, lo, hi, a, &k, gpu_stream(s));
}

extern "C" int be_stencil(const fd_grid *g, fd_region region, unsigned deferred,
                          const fd_coeffs *c, const real_t *u, const real_t *f, real_t *out,
                          fd_kernel k, be_stream s)
{
  return be_stencil_zrange(g, region, deferred, 1, g->n[2], c, u, f, out, k, s);
}
