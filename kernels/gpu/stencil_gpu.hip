/* stencil_gpu.hip - the stencil family of the GPU backend: be_stencil[_zrange] and the
 * kernel configuration calls of backend.h (be_kernel_default, _resolve, _candidates).
 * Variants (fd_kernel_id): baseline (the lab notes' kernel 1), reordered per plane (kernels
 * 3-5, with the y-strip walk of kernel 7, and a 16-byte pair form), short-chunk z-marching,
 * plus the one-launch boundary-shell kernel. Every point is evaluated by fd_stencil_point[_f]
 * (pointwise.h), so every variant, configuration and region split gives bitwise the same
 * field. Any extents work: loads and stores are guarded, nothing needs divisibility.
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

namespace {

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

/* The ONE expression (pointwise.h); fc is f at the point (ignored without f). */
template <bool HAS_F>
__device__ __forceinline__ real_t stencil_at(const st_args &a, real_t uc, real_t xm, real_t xp,
                                             real_t ym, real_t yp, real_t zm, real_t zp,
                                             real_t fc)
{
  if (HAS_F)
    return fd_stencil_point_f(a.cc, a.cx, a.cy, a.cz, a.cf, uc, xm, xp, ym, yp, zm, zp, fc);
  return fd_stencil_point(a.cc, a.cx, a.cy, a.cz, uc, xm, xp, ym, yp, zm, zp);
}

template <bool HAS_F> __device__ __forceinline__ real_t f_at(const st_args &a, long long p)
{
  return HAS_F ? gpu_ldg(a.f + p) : (real_t)0;
}

template <typename T> struct vec2_of;
template <> struct vec2_of<double> {
  typedef double2 type;
};
template <> struct vec2_of<float> {
  typedef float2 type;
};
typedef vec2_of<real_t>::type v2;

/* r[0..V-1] = p[0..V-1] (V = 2: one 16-byte load, p aligned to the pair). */
template <int V> __device__ __forceinline__ void load_row(const real_t *p, real_t (&r)[V]);
template <> __device__ __forceinline__ void load_row<1>(const real_t *p, real_t (&r)[1])
{
  r[0] = gpu_ldg(p);
}
template <> __device__ __forceinline__ void load_row<2>(const real_t *p, real_t (&r)[2])
{
  const v2 t = gpu_ldg(reinterpret_cast<const v2 *>(p));
  r[0] = t.x;
  r[1] = t.y;
}

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

/* ---- short-chunk z-marching --------------------------------------------------------------------
 * 2D blocks (bx, by) over x-y; grid (x: tiles along x; y: tiles along y within a strip; z:
 * strip*nchunks + chunk). Thread (tx, ty) of tile (X, Y) owns the V x R points i0..i0+V-1,
 * j0..j0+R-1 with i0 = xbase + V*(X*bx + tx), j0 = lo1 + R*(Y*by + ty), and marches up through
 * the planes k0..k1 of its chunk (k0 = lo2 + chunk*`chunk`), keeping planes k-1, k and k+1 of
 * its points in registers: per plane one new load of its rows of plane k+1, the y-1 and y+R
 * rows and the x-1 / x+V neighbours of
 * plane k through the read-only path (lines the block's other threads load: L1 hits), one
 * store. Blocks are launched in grid order, so the device works through each y-strip chunk
 * by chunk in address order, strip after strip (the strips keep the planes a chunk shares
 * with the next in L2 when a plane is large); a short chunk keeps every block short-lived.
 * V = 2: 16-byte loads and stores of the pairs (even row pitch, 16-byte aligned arrays, xbase
 * on an even element); a pair point outside the box is neither computed nor stored. Plain
 * stores, except where the field nearly fills the rank's share of L2 (a.keep, l2_keep): there
 * the stores ask L2 to keep their lines, so that more of this pass's output is still there when
 * the next pass reads it. The launch may mirror z (sxy < 0, origin at the box's top plane:
 * march_down): the same code then starts on the top chunk and marches down; "z-1" and "z+1"
 * swap, and the stencil's sum zm + zp gives the same bits in either order. */

/* z-marching's stores: *p = v, plain or, with keep, asking L2 to keep the line (l2_keep) */
__device__ __forceinline__ void store_out(real_t *p, real_t v, bool keep)
{
  if (keep) gpu_store_keep(p, v);
  else *p = v;
}
/* the same for an aligned pair: p[0] = x, p[1] = y, one 16-byte store */
__device__ __forceinline__ void store_out2(real_t *p, real_t x, real_t y, bool keep)
{
  if (keep) gpu_store_keep2(p, x, y);
  else gpu_store2(p, x, y);
}

template <int R, int V, bool HAS_F>
__device__ __forceinline__ void zmarch_body(const st_args &a, unsigned bx, unsigned by, unsigned bz)
{
  int chunk = (int)bz, ty = (int)by;
  if (a.tps < a.nty) { /* several strips: blockIdx.z = strip * nchunks + chunk */
    const int strip = chunk / a.nchunks;
    chunk -= strip * a.nchunks;
    ty += strip * a.tps;
  }
  const int i0 = a.xbase + V * (int)(bx * blockDim.x + threadIdx.x);
  const int j0 = a.lo[1] + R * (ty * (int)blockDim.y + (int)threadIdx.y);
  const int k0 = a.lo[2] + chunk * a.chunk;
  if (i0 > a.hi[0] || j0 > a.hi[1]) return;
  const int k1 = min(a.hi[2], k0 + a.chunk - 1);
  /* rows of this thread inside the box (R = 1: always 1) */
  const int nrows = R == 1 ? 1 : min(R, a.hi[1] - j0 + 1);
  /* V = 1: xbase = lo0, so i0 is inside; V = 2: only the pair's first point can lie below
   * lo0 and only its second above hi0 */
  const bool ok0 = V == 1 || i0 >= a.lo[0], ok1 = V == 1 || i0 + 1 <= a.hi[0];
  const long long sx = a.sx, sxy = a.sxy;
  const real_t *u = a.u;
  long long p = a.origin + i0 + sx * j0 + sxy * k0;

  real_t zm[R][V], c[R][V], zp[R][V];
#pragma unroll
  for (int n = 0; n < R; n++)
#pragma unroll
    for (int v = 0; v < V; v++) zm[n][v] = c[n][v] = zp[n][v] = (real_t)0;
#pragma unroll
  for (int n = 0; n < R; n++)
    if (n < nrows) {
      load_row<V>(u + p - sxy + n * sx, zm[n]);
      load_row<V>(u + p + n * sx, c[n]);
    }

  for (int k = k0; k <= k1; k++, p += sxy) {
#pragma unroll
    for (int n = 0; n < R; n++)
      if (n < nrows) load_row<V>(u + p + sxy + n * sx, zp[n]);
    real_t ym[V], yp[V];
    load_row<V>(u + p - sx, ym);
    load_row<V>(u + p + nrows * sx, yp);
#pragma unroll
    for (int n = 0; n < R; n++) {
      if (n < nrows) {
        const long long q = p + n * sx;
        const real_t xlo = ok0 ? gpu_ldg(u + q - 1) : (real_t)0;
        const real_t xhi = ok1 ? gpu_ldg(u + q + V) : (real_t)0;
        real_t fv[V];
#pragma unroll
        for (int v = 0; v < V; v++) fv[v] = (real_t)0;
        if (HAS_F) load_row<V>(a.f + q, fv);
        real_t o[V];
#pragma unroll
        for (int v = 0; v < V; v++) {
          const real_t xl = v > 0 ? c[n][v > 0 ? v - 1 : 0] : xlo;
          const real_t xh = v + 1 < V ? c[n][v + 1 < V ? v + 1 : V - 1] : xhi;
          const real_t yl = n > 0 ? c[n > 0 ? n - 1 : 0][v] : ym[v];
          const real_t yh = n + 1 < nrows ? c[n + 1 < R ? n + 1 : R - 1][v] : yp[v];
          o[v] = stencil_at<HAS_F>(a, c[n][v], xl, xh, yl, yh, zm[n][v], zp[n][v], fv[v]);
        }
        if (V == 1) store_out(a.out + q, o[0], a.keep);
        else if (ok0 && ok1) store_out2(a.out + q, o[0], o[V - 1], a.keep);
        else if (ok0) store_out(a.out + q, o[0], a.keep);
        else store_out(a.out + q + V - 1, o[V - 1], a.keep);
      }
    }
#pragma unroll
    for (int n = 0; n < R; n++)
#pragma unroll
      for (int v = 0; v < V; v++) {
        zm[n][v] = c[n][v];
        c[n][v] = zp[n][v];
      }
  }
}

template <int R, int V, bool HAS_F>
__global__ void __launch_bounds__(FD_KERNEL_MAX_BLOCK) k_zmarch(const st_args a)
{
  zmarch_body<R, V, HAS_F>(a, blockIdx.x, blockIdx.y, blockIdx.z);
}

/* ---- boundary shell: one launch over up to six disjoint slabs --------------------------------
 * Slab b holds points start[b] .. start[b+1]-1 of the flattened launch, x fastest inside the
 * slab. The shell is 1..n minus the interior box lo..hi: z slabs (k < lo_z, k > hi_z) are whole
 * planes, y slabs (j < lo_y, j > hi_y) span k = lo_z..hi_z, x slabs span j = lo_y..hi_y and
 * k = lo_z..hi_z. */
struct shell_slabs {
  int nb;
  int lo[6][3], hi[6][3];
  long long start[7];
};

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

/* ---- the shell with its exchange's device work (be_shell_exchange) ---------------------------
 * k_shell's launch, and per point: the neighbour across face fc comes from recv where fc is in
 * unpack and the point lies in fc's layer (which also writes it into u's ghost there: every
 * ghost of a face is the neighbour of exactly one layer point), and the point's new value (or,
 * without STENCIL, its value in u) goes to send where fc is in pack. Plain loads of u: the
 * kernel writes u's ghosts (never one it reads). */
struct shell_xargs {
  const real_t *recv;
  real_t *send;
  unsigned unpack, pack;
  int n[3];
  long long off[FD_FACES];
};

template <bool HAS_F, bool STENCIL>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_shell_x(const st_args a, const shell_slabs sl,
                                                             const shell_xargs x)
{
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= sl.start[sl.nb]) return;
  int b = 0;
  for (int q = 1; q < sl.nb; q++)
    if (t >= sl.start[q]) b = q;
  long long r = t - sl.start[b];
  const long long ex = sl.hi[b][0] - sl.lo[b][0] + 1, ey = sl.hi[b][1] - sl.lo[b][1] + 1;
  const int c3[3] = {(int)(sl.lo[b][0] + r % ex), (int)(sl.lo[b][1] + (r / ex) % ey),
                     (int)(sl.lo[b][2] + r / ex / ey)};
  const long long p = a.origin + c3[0] + a.sx * c3[1] + a.sxy * c3[2];
  const long long stride[3] = {1, a.sx, a.sxy};
  real_t *u = const_cast<real_t *>(a.u);
  real_t nb[FD_FACES];
  long long idx[FD_FACES];
  unsigned on = 0;
#pragma unroll
  for (int fc = 0; fc < FD_FACES; fc++) {
    const int d = fc >> 1, side = fc & 1, ia = d == 0 ? 1 : 0, ib = d == 2 ? 1 : 2;
    idx[fc] = x.off[fc] + (c3[ia] - 1) + (long long)x.n[ia] * (c3[ib] - 1);
    const bool layer = c3[d] == (side ? x.n[d] : 1);
    on |= (unsigned)layer << fc;
    nb[fc] = layer && (x.unpack >> fc & 1u) ? x.recv[idx[fc]] : u[p + (side ? stride[d] : -stride[d])];
  }
  real_t v = u[p];
  if (STENCIL) {
    v = stencil_at<HAS_F>(a, v, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], f_at<HAS_F>(a, p));
    a.out[p] = v;
  }
#pragma unroll
  for (int fc = 0; fc < FD_FACES; fc++) {
    if (!(on >> fc & 1u)) continue;
    if (x.pack >> fc & 1u) x.send[idx[fc]] = v;
    if (x.unpack >> fc & 1u) u[p + ((fc & 1) ? stride[fc >> 1] : -stride[fc >> 1])] = nb[fc];
  }
}

/* ---- the exchange signalled inside the launch (be_signals_pass, be_signals_prime) -----------
 * backend.h has the protocol. The exchange's work is done by the launch's first nb blocks
 * (exchange blocks, at most XG_MAX_BLOCKS: each of them waits, and the waiting blocks of every
 * rank sharing the device must leave room for the launches they wait for), over the shell of
 * the exchanged faces point by point as k_shell_x, in a grid-stride loop; in a one-launch pass
 * (k_zmarch_x) the other blocks update the interior. An exchange block's first thread waits
 * until every neighbour's word says it has packed this exchange, then the block reads the
 * neighbours' slots; after its writes it counts itself in `arrivals`, and the last block sets
 * seq and the neighbours' words behind a device-wide fence (the neighbours share the device).
 * The interior blocks read no ghost of an exchanged face and write none of the shell's
 * points: the two parts of the launch are independent. No arrays per point (six named
 * neighbours): no stack. The one-launch kernel takes more registers than k_zmarch (64 against
 * 32-40 on sm_90), which costs the interior occupancy on large blocks: the path trial
 * (src/solver/solver.c) weighs it against the two-stream schedule. */
constexpr unsigned XG_MAX_BLOCKS = 16;
enum { XG_PRIME = 0, XG_COPY = 1, XG_PASS = 2 };

struct xg_args {
  st_args s;                       /* the shell's stencil: u (written: its ghosts), f, out */
  shell_slabs sl;                  /* the shell of the exchanged faces */
  int n[3];
  long long off[FD_FACES];         /* this rank's regions in a slot */
  const real_t *peer[FD_FACES][2]; /* the neighbours' regions for this rank, by slot */
  real_t *send[2];
  uint32_t *words, *peer_in[FD_FACES];
  unsigned exchange, unpack;
  unsigned nb;                     /* exchange blocks */
  unsigned gx, gy;                 /* k_zmarch_x: the interior grid's x and y extents */
};

template <bool HAS_F, int MODE> __device__ __forceinline__ void xg_block(const xg_args &x, unsigned b)
{
  const uint32_t e = *(volatile const uint32_t *)(x.words + BE_SIG_SEQ);
  const unsigned tid = threadIdx.x + blockDim.x * threadIdx.y, nt = blockDim.x * blockDim.y;
  if (MODE != XG_PRIME) {
    if (tid == 0) {
      for (int fc = 0; fc < FD_FACES; fc++)
        if (x.exchange >> fc & 1u)
          while ((int32_t)(*(volatile const uint32_t *)(x.words + fc) - (e + 1u)) < 0) {
          }
      __threadfence();
    }
    __syncthreads();
  }
  const unsigned rs = e & 1u, ws = MODE == XG_PRIME ? rs : rs ^ 1u;
  const shell_slabs &sl = x.sl;
  const st_args &a = x.s;
  real_t *u = const_cast<real_t *>(a.u);
  /* 32-bit within a slab (signals_args: a slab holds fewer than 2^31 points) */
  for (long long t = (long long)b * nt + tid; t < sl.start[sl.nb]; t += (long long)x.nb * nt) {
    int q = 0;
    for (int r = 1; r < sl.nb; r++)
      if (t >= sl.start[r]) q = r;
    const unsigned r = (unsigned)(t - sl.start[q]);
    const unsigned ex = (unsigned)(sl.hi[q][0] - sl.lo[q][0] + 1), ey = (unsigned)(sl.hi[q][1] - sl.lo[q][1] + 1);
    const unsigned rx = r / ex;
    const int c0 = sl.lo[q][0] + (int)(r - rx * ex), c1 = sl.lo[q][1] + (int)(rx % ey),
              c2 = sl.lo[q][2] + (int)(rx / ey);
    const long long p = a.origin + c0 + a.sx * c1 + a.sxy * c2;
    /* the faces whose layer holds the point */
    const unsigned on = (unsigned)(c0 == 1) | (unsigned)(c0 == x.n[0]) << 1 | (unsigned)(c1 == 1) << 2 |
                        (unsigned)(c1 == x.n[1]) << 3 | (unsigned)(c2 == 1) << 4 | (unsigned)(c2 == x.n[2]) << 5;
    const unsigned from_peer = MODE == XG_PRIME ? 0u : on & x.unpack;
    /* the point's place in the regions of x, y and z faces (no arrays: registers) */
    const long long at_x = (c1 - 1) + (long long)x.n[1] * (c2 - 1), at_y = (c0 - 1) + (long long)x.n[0] * (c2 - 1),
                    at_z = (c0 - 1) + (long long)x.n[0] * (c1 - 1);
    const real_t n0 = from_peer & 1u ? gpu_ld_shared_l2(x.peer[0][rs] + at_x) : u[p - 1];
    const real_t n1 = from_peer >> 1 & 1u ? gpu_ld_shared_l2(x.peer[1][rs] + at_x) : u[p + 1];
    const real_t n2 = from_peer >> 2 & 1u ? gpu_ld_shared_l2(x.peer[2][rs] + at_y) : u[p - a.sx];
    const real_t n3 = from_peer >> 3 & 1u ? gpu_ld_shared_l2(x.peer[3][rs] + at_y) : u[p + a.sx];
    const real_t n4 = from_peer >> 4 & 1u ? gpu_ld_shared_l2(x.peer[4][rs] + at_z) : u[p - a.sxy];
    const real_t n5 = from_peer >> 5 & 1u ? gpu_ld_shared_l2(x.peer[5][rs] + at_z) : u[p + a.sxy];
    real_t v = u[p];
    if (MODE == XG_PASS) {
      v = stencil_at<HAS_F>(a, v, n0, n1, n2, n3, n4, n5, f_at<HAS_F>(a, p));
      a.out[p] = v;
    }
    const unsigned packs = on & x.exchange;
    real_t *send = x.send[ws];
    if (packs & 1u) send[x.off[0] + at_x] = v;
    if (packs >> 1 & 1u) send[x.off[1] + at_x] = v;
    if (packs >> 2 & 1u) send[x.off[2] + at_y] = v;
    if (packs >> 3 & 1u) send[x.off[3] + at_y] = v;
    if (packs >> 4 & 1u) send[x.off[4] + at_z] = v;
    if (packs >> 5 & 1u) send[x.off[5] + at_z] = v;
    if (from_peer & 1u) u[p - 1] = n0;
    if (from_peer >> 1 & 1u) u[p + 1] = n1;
    if (from_peer >> 2 & 1u) u[p - a.sx] = n2;
    if (from_peer >> 3 & 1u) u[p + a.sx] = n3;
    if (from_peer >> 4 & 1u) u[p - a.sxy] = n4;
    if (from_peer >> 5 & 1u) u[p + a.sxy] = n5;
  }
  __threadfence();
  __syncthreads();
  if (tid == 0 && atomicAdd(x.words + BE_SIG_ARRIVALS, 1u) == x.nb - 1) {
    x.words[BE_SIG_ARRIVALS] = 0;
    if (MODE != XG_PRIME) *(volatile uint32_t *)(x.words + BE_SIG_SEQ) = e + 1u;
    __threadfence(); /* the neighbours share the device: a device-wide fence orders it */
    const uint32_t packed = MODE == XG_PRIME ? e + 1u : e + 2u;
    for (int fc = 0; fc < FD_FACES; fc++)
      if (x.exchange >> fc & 1u) *(volatile uint32_t *)x.peer_in[fc] = packed;
  }
}

template <bool HAS_F, int MODE>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_sig(const xg_args x)
{
  xg_block<HAS_F, MODE>(x, blockIdx.x);
}

/* A pass in one launch: blocks 0..nb-1 the exchange, the rest k_zmarch's grid (gx x gy x
 * the rest), flattened. */
template <int R, int V, bool HAS_F>
__global__ void __launch_bounds__(FD_KERNEL_MAX_BLOCK) k_zmarch_x(const st_args a, const xg_args x)
{
  if (blockIdx.x < x.nb) {
    xg_block<HAS_F, XG_PASS>(x, blockIdx.x);
    return;
  }
  const unsigned L = blockIdx.x - x.nb;
  zmarch_body<R, V, HAS_F>(a, L % x.gx, L / x.gx % x.gy, L / (x.gx * x.gy));
}

/* ---- several time steps per pass: the fused kernel ---------------------------------------------
 * Temporal blocking by overlapped tiles in x-y and a pipeline along z. A block is one warp
 * (GPU_WARP_SIZE lanes) along x and BY threads along y, each thread owning R consecutive rows:
 * its footprint is W x (BY*R) columns, W = GPU_WARP_SIZE, of which the inner (W - 2T) x
 * (BY*R - 2T) are its output tile (each level of the T shrinks the valid footprint by one
 * on every side). The block marches up through the planes of its chunk: at input plane kin it
 * loads level 0 of plane kin and computes level t of plane kin - t for t = 1..T, so level T
 * leaves the pipeline T planes behind the loads. Per thread and level the planes z-1, z, z+1
 * of level t-1 are in registers (a window of 3); x neighbours come from the adjacent lanes
 * (shuffles), y neighbours from the thread's own rows or, for its first and last row, from
 * the neighbouring threads' rows through shared memory (one buffer per iteration parity, one
 * barrier per plane). A point outside fix_lo..fix_hi keeps its level-0 value at every level
 * (Dirichlet, or the outermost ghost layer); a point outside the array is "dead" (0, never
 * read by a live result). Values the footprint's border computes from neighbours it does not
 * have (the first and last lane's shuffles, the first and last warp's shared rows) are garbage
 * that no output depends on. Every live point of level t is fd_stencil_point[_f] of level
 * t-1's values, exactly as T single steps compute it: the same bits. No thread returns early:
 * all take part in the shuffles and barriers. */
struct fz_args {
  const real_t *u, *f;
  real_t *out;
  real_t cc, cx, cy, cz, cf;
  long long sx, sxy, origin;
  int lo[3], hi[3];      /* output box */
  int flo[3], fhi[3];    /* fix box: updated points */
  int alo[3], ahi[3];    /* the array: 1-ghost .. n+ghost */
  int tw, th;            /* output tile width (x) and height (y) */
  int chunk;             /* output planes per block */
};

/* Shared rows of k_fused: per iteration parity, per thread (ty) a slot of 2 x T rows of the
 * warp's W*V columns: its first row (d = 0) and last row (d = 1) of levels 0..T-1. */
size_t fz_smem_bytes(int T, int V, int by)
{
  return (size_t)2 * by * 2 * T * GPU_WARP_SIZE * V * sizeof(real_t);
}

/* r[0..V-1] = p[0..V-1] / p[0..V-1] = r[0..V-1] in shared memory (V = 2: one access of the
 * pair, p aligned to it) */
template <int V> __device__ __forceinline__ void smem_get(const real_t *p, real_t (&r)[V])
{
  if (V == 2) {
    const v2 t = *reinterpret_cast<const v2 *>(p);
    r[0] = t.x;
    r[V - 1] = t.y;
  } else
    r[0] = p[0];
}
template <int V> __device__ __forceinline__ void smem_put(real_t *p, const real_t (&r)[V])
{
  if (V == 2)
    gpu_store2(p, r[0], r[V - 1]);
  else
    p[0] = r[0];
}

/* How k_fused reads f, the operator's source term (jacobi), at its T levels: 0, at every level
 * from memory (L1 and L2 hits after the first level's load); 1, through a queue of T planes in
 * registers, each plane loaded once at the iteration whose level 1 first needs it; 2, the same
 * queue loaded a plane ahead (latency hidden like u's). A queue where T >= 2 and its registers
 * fit under the kernel's cap (128) without spilling on sm_90: 2 where (T + 1) R V <= 12, else
 * 1 where T R V <= 12. Measured in bench/results/README.md ("f through a queue"). */
__host__ __device__ constexpr int fz_f_queue(int T, int R, int V, bool has_f)
{
  return !has_f || T < 2 ? 0 : (T + 1) * R * V <= 12 ? 2 : T * R * V <= 12 ? 1 : 0;
}

/* Levels 1..T of one plane iteration of k_fused (input plane kin, level t computing plane
 * kin - t) on the thread's windows L, level 0 already shifted in. lo / hi: the slots of the
 * threads below and above in the previous iteration's parity, at this lane's columns (the
 * thread's own slot for the first / last warp). KFIX: some level's plane lies outside the fix
 * box along z, so the per-point test is needed; without it most iterations are free of it. */
template <int T, int R, int V, bool HAS_F, bool INNER, bool KFIX, int FQ>
__device__ __forceinline__ void fused_levels(const fz_args &a, real_t (&L)[T][R][V][3],
                                             const real_t *lo, const real_t *hi, int kin,
                                             const bool (&xfix)[V], const bool (&yfix)[R],
                                             const bool (&xout)[V], const bool (&yout)[R],
                                             const real_t *fcol, const real_t (&fq)[FQ ? T : 1][R][V],
                                             real_t *ocol, int kc0, int kc1)
{
  constexpr int WV = GPU_WARP_SIZE * V;
  const long long sx = a.sx, sxy = a.sxy;
#pragma unroll
  for (int t = 1; t <= T; t++) {
    const int kc = kin - t;
    const bool kfix = KFIX && (kc < a.flo[2] || kc > a.fhi[2]);
    real_t below[V], above[V]; /* level t-1: last row of the thread below, first of the one above */
    smem_get<V>(lo + (T + t - 1) * WV, below);
    smem_get<V>(hi + (t - 1) * WV, above);
    real_t res[R][V];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const real_t left = gpu_shfl_up1(L[t - 1][r][V - 1][1]);  /* x0 - 1 */
      const real_t right = gpu_shfl_down1(L[t - 1][r][0][1]);   /* x0 + V */
#pragma unroll
      for (int v = 0; v < V; v++) {
        const real_t c = L[t - 1][r][v][1];
        const real_t xm = v > 0 ? L[t - 1][r][v > 0 ? v - 1 : 0][1] : left;
        const real_t xp = v + 1 < V ? L[t - 1][r][v + 1 < V ? v + 1 : V - 1][1] : right;
        const real_t ym = r > 0 ? L[t - 1][r > 0 ? r - 1 : 0][v][1] : below[v];
        const real_t yp = r + 1 < R ? L[t - 1][r + 1 < R ? r + 1 : R - 1][v][1] : above[v];
        const bool fixed = (!INNER && (xfix[v] || yfix[r])) || kfix;
        if (HAS_F) { /* f of plane kc: from the queue (fz_f_queue), or read at this level */
          const real_t fv = FQ ? fq[FQ ? t - 1 : 0][r][v]
                               : (fixed ? (real_t)0 : gpu_ldg(fcol + v + sx * r + sxy * kc));
          const real_t st = fd_stencil_point_f(a.cc, a.cx, a.cy, a.cz, a.cf, c, xm, xp, ym, yp,
                                               L[t - 1][r][v][0], L[t - 1][r][v][2], fv);
          res[r][v] = fixed ? c : st;
        } else {
          const real_t st = fd_stencil_point(a.cc, a.cx, a.cy, a.cz, c, xm, xp, ym, yp,
                                             L[t - 1][r][v][0], L[t - 1][r][v][2]);
          res[r][v] = fixed ? c : st;
        }
      }
    }
    if (t < T) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++) {
          L[t][r][v][0] = L[t][r][v][1];
          L[t][r][v][1] = L[t][r][v][2];
          L[t][r][v][2] = res[r][v];
        }
    } else if (kc >= kc0 && kc <= kc1) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++)
          if (yout[r] && xout[v]) ocol[v + sx * r + sxy * kc] = res[r][v];
    }
  }
}

/* The body of k_fused; INNER: the footprint lies inside the fix box (hence inside the array). */
template <int T, int R, int V, bool HAS_F, bool INNER, bool SPLIT, int FQ>
__device__ __forceinline__ void fused_body(const fz_args &a)
{
  extern __shared__ unsigned char fz_smem_raw[];
  real_t *smem = reinterpret_cast<real_t *>(fz_smem_raw); /* [2][BY][2 T W V] (fz_smem_bytes) */
  constexpr int W = GPU_WARP_SIZE, WV = W * V, SLOT = 2 * T * WV;
  const int BY = (int)blockDim.y;
  const int lane = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int xt = a.lo[0] + (int)blockIdx.x * a.tw; /* the output tile's first column */
  const int x0 = xt - T + V * lane;                 /* this thread's first column */
  const int yt = a.lo[1] + (int)blockIdx.y * a.th;
  const int y0 = yt - T + ty * R;
  const int kc0 = a.lo[2] + (int)blockIdx.z * a.chunk;
  const int kc1 = min(a.hi[2], kc0 + a.chunk - 1);
  bool xin[V], xfix[V], xout[V];
#pragma unroll
  for (int v = 0; v < V; v++) {
    const int x = x0 + v;
    xin[v] = INNER || (x >= a.alo[0] && x <= a.ahi[0]);
    xfix[v] = !INNER && (x < a.flo[0] || x > a.fhi[0]);
    xout[v] = x >= xt && x < xt + a.tw && x <= a.hi[0];
  }
  bool yin[R], yfix[R], yout[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int y = y0 + r;
    yin[r] = INNER || (y >= a.alo[1] && y <= a.ahi[1]);
    yfix[r] = !INNER && (y < a.flo[1] || y > a.fhi[1]);
    yout[r] = y >= yt && y < yt + a.th && y <= a.hi[1];
  }
  const long long sx = a.sx, sxy = a.sxy;
  const long long col = a.origin + x0 + sx * y0; /* element of (x0, y0, 0) */
  const real_t *ucol = a.u + col, *fcol = HAS_F ? a.f + col : a.u;
  real_t *ocol = a.out + col;
  /* window L[t][r][v][0..2]: level t, row r, column v, planes (newest-2, newest-1, newest) */
  real_t L[T][R][V][3];
#pragma unroll
  for (int t = 0; t < T; t++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int v = 0; v < V; v++) L[t][r][v][0] = L[t][r][v][1] = L[t][r][v][2] = (real_t)0;
  const int kstart = max(kc0 - T, a.alo[2]);
  /* this thread's slot at its lane's columns, in parity 0; the other parity lies `half` above */
  real_t *own = smem + ty * SLOT + V * lane;
  const int half = BY * SLOT;
  /* the slots of the threads below and above; the first and last warp read their own (their
   * border rows feed no output, and the read stays inside the buffer) */
  const int dlo = ty > 0 ? -SLOT : 0, dhi = ty + 1 < BY ? SLOT : 0;
  /* level 0 comes through a queue one plane deep: plane kin+1 is loaded while the levels of
   * plane kin are computed, so the loads' latency hides behind that work */
  real_t ahead[R][V];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int v = 0; v < V; v++)
      ahead[r][v] = kstart <= a.ahi[2] && xin[v] && yin[r] ? gpu_ldg(ucol + v + sx * r + sxy * kstart) : (real_t)0;
  /* f (FQ > 0): fq[t-1] holds f of plane kin - t, the plane level t computes at iteration kin,
   * so that each plane of f is loaded once per point rather than once per level; 0 where the
   * point is not updated (outside the fix box), and planes below kstart feed no output. FQ = 2:
   * loaded a plane ahead into fnext, like u. */
  real_t fq[FQ ? T : 1][R][V], fnext[R][V];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int v = 0; v < V; v++) {
      fnext[r][v] = (real_t)0;
#pragma unroll
      for (int t = 0; t < (FQ ? T : 1); t++) fq[t][r][v] = (real_t)0;
    }
  int par = 0;
#pragma unroll 1
  for (int kin = kstart; kin <= kc1 + T; kin++) {
    if (FQ) { /* the queue moves up a plane and takes f of plane kf at its bottom */
      const int kf = FQ == 2 ? kin : kin - 1;
      const bool zin = kf >= a.flo[2] && kf <= a.fhi[2];
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++) {
#pragma unroll
          for (int t = (FQ ? T : 1) - 1; t > 0; t--) fq[t][r][v] = fq[t - 1][r][v];
          const real_t x = zin && (INNER || (!xfix[v] && !yfix[r])) ? gpu_ldg(fcol + v + sx * r + sxy * kf)
                                                                    : (real_t)0;
          if (FQ == 2) {
            fq[0][r][v] = fnext[r][v];
            fnext[r][v] = x;
          } else
            fq[0][r][v] = x;
        }
    }
    /* level 0: plane kin (0 beyond the array), and the load of plane kin+1 */
    const bool knext = kin + 1 <= a.ahi[2];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int v = 0; v < V; v++) {
        L[0][r][v][0] = L[0][r][v][1];
        L[0][r][v][1] = L[0][r][v][2];
        L[0][r][v][2] = ahead[r][v];
        ahead[r][v] = knext && xin[v] && yin[r] ? gpu_ldg(ucol + v + sx * r + sxy * (kin + 1)) : (real_t)0;
      }
    /* levels 1..T (planes kin-T..kin-1) from the rows the neighbours wrote in the previous
     * iteration; the test against the fix box along z only where one of the planes is outside */
    const real_t *rd = own + par * half;
    if (!SPLIT || kin - T < a.flo[2] || kin - 1 > a.fhi[2])
      fused_levels<T, R, V, HAS_F, INNER, true, FQ>(a, L, rd + dlo, rd + dhi, kin, xfix, yfix,
                                                    xout, yout, fcol, fq, ocol, kc0, kc1);
    else
      fused_levels<T, R, V, HAS_F, INNER, false, FQ>(a, L, rd + dlo, rd + dhi, kin, xfix, yfix,
                                                     xout, yout, fcol, fq, ocol, kc0, kc1);
    /* this iteration's newest planes of levels 0..T-1, first and last row, for the threads
     * above and below */
    real_t *wr = own + (par ^ 1) * half;
#pragma unroll
    for (int t = 0; t < T; t++) {
      real_t first[V], last[V];
#pragma unroll
      for (int v = 0; v < V; v++) first[v] = L[t][0][v][2], last[v] = L[t][R - 1][v][2];
      smem_put<V>(wr + t * WV, first);
      smem_put<V>(wr + (T + t) * WV, last);
    }
    __syncthreads();
    par ^= 1;
  }
}

template <int T, int R, int V, bool HAS_F>
__global__ void GPU_REGISTER_CAP(128) k_fused(const fz_args a) /* blocks <= FD_KERNEL_MAX_BLOCK */
{
  /* Blocks whose whole footprint lies inside the fix box (most blocks) run a body without the
   * per-point array and fix tests along x and y, and each body runs the planes that need no
   * fix test along z (most planes) without it: fewer instructions. The largest instances with
   * f keep one body and one path (a second one spills there). */
  constexpr bool SPLIT = !(HAS_F && T * R * V >= 16);
  constexpr int FQ = fz_f_queue(T, R, V, HAS_F);
  const int BY = (int)blockDim.y;
  const int fx0 = a.lo[0] + (int)blockIdx.x * a.tw - T, fy0 = a.lo[1] + (int)blockIdx.y * a.th - T;
  const bool inner = fx0 >= a.flo[0] && fx0 + GPU_WARP_SIZE * V - 1 <= a.fhi[0] &&
                     fy0 >= a.flo[1] && fy0 + BY * R - 1 <= a.fhi[1];
  if (SPLIT && inner)
    fused_body<T, R, V, HAS_F, true, SPLIT, FQ>(a);
  else
    fused_body<T, R, V, HAS_F, false, SPLIT, FQ>(a);
}

/* ---- the kernel instances -------------------------------------------------------------------- */

typedef void (*kfn)(st_args);

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

typedef void (*kxfn)(st_args, xg_args);
template <bool F> kxfn zmarch_x_t(int rows, int vec)
{
  static const kxfn z[2][2] = {{k_zmarch_x<1, 1, F>, k_zmarch_x<1, 2, F>}, {k_zmarch_x<2, 1, F>, k_zmarch_x<2, 2, F>}};
  return z[rows == 2][vec == 2];
}
kxfn zmarch_x_fn(bool f, int rows, int vec) { return f ? zmarch_x_t<true>(rows, vec) : zmarch_x_t<false>(rows, vec); }

typedef void (*fzfn)(fz_args);

template <bool F> fzfn fused_fn_t(int steps, int rows, int vec)
{
  static const fzfn k[4][2][2] = {
      {{k_fused<1, 1, 1, F>, k_fused<1, 1, 2, F>}, {k_fused<1, 2, 1, F>, k_fused<1, 2, 2, F>}},
      {{k_fused<2, 1, 1, F>, k_fused<2, 1, 2, F>}, {k_fused<2, 2, 1, F>, k_fused<2, 2, 2, F>}},
      {{k_fused<3, 1, 1, F>, k_fused<3, 1, 2, F>}, {k_fused<3, 2, 1, F>, k_fused<3, 2, 2, F>}},
      {{k_fused<4, 1, 1, F>, k_fused<4, 1, 2, F>}, {k_fused<4, 2, 1, F>, k_fused<4, 2, 2, F>}}};
  /* four rows per thread only up to 2 steps and with pairs (registers) */
  static const fzfn k4[2] = {k_fused<1, 4, 2, F>, k_fused<2, 4, 2, F>};
  if (rows == 4) return k4[steps - 1];
  return k[steps - 1][rows == 2][vec == 2];
}
fzfn fused_fn(bool f, int steps, int rows, int vec)
{
  return f ? fused_fn_t<true>(steps, rows, vec) : fused_fn_t<false>(steps, rows, vec);
}

/* ---- configuration: rules, fallbacks, tiling -------------------------------------------------- */

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

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

extern "C" int be_shell_exchange(const fd_grid *g, unsigned deferred, const fd_coeffs *c, real_t *u,
                                 const real_t *f, real_t *out, const fd_faces *faces,
                                 const real_t *recv, unsigned unpack, real_t *send, unsigned pack,
                                 be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_shell_exchange: be_init was not called");
  char why[160];
  if (fd_shell_exchange_check(g, deferred, faces, unpack, pack, why, sizeof why))
    return gpu_failf_private(BE_ERROR, "%s", why);
  if (u == out) return gpu_failf_private(BE_ERROR, "be_shell_exchange: u and out must differ");
  if (out && !c) return gpu_failf_private(BE_ERROR, "be_shell_exchange: the stencil needs its coefficients");
  if (g->n[0] < 1 || g->n[1] < 1 || g->n[2] < 1) return BE_OK;
  st_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  if (c) a.cc = c->cc, a.cx = c->cx, a.cy = c->cy, a.cz = c->cz, a.cf = c->cf;
  a.sx = g->sx, a.sxy = g->sxy, a.origin = g->origin;
  shell_xargs x;
  memset(&x, 0, sizeof x);
  x.recv = recv, x.send = send, x.unpack = unpack, x.pack = pack;
  for (int d = 0; d < 3; d++) x.n[d] = g->n[d];
  for (int fc = 0; fc < FD_FACES; fc++) x.off[fc] = (long long)faces->offset[fc];
  shell_slabs sl;
  shell_plan(g, deferred, 1, g->n[2], &sl);
  const long long total = sl.start[sl.nb];
  if (total == 0) return BE_OK;
  const unsigned blocks = (unsigned)((total + PLANE_MAX_BLOCK - 1) / PLANE_MAX_BLOCK);
  const hipStream_t st = gpu_stream(s);
  if (!out) k_shell_x<false, false><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  else if (f) k_shell_x<true, true><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  else k_shell_x<false, true><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  GPU_LAUNCHED("k_shell_x");
  return BE_OK;
}

/* be_signals' arguments as the kernels take them, the exchange blocks sized for `threads`
 * threads each; BE_ERROR for arguments no backend takes. */
static int signals_args(const fd_grid *g, const be_signals *x, const fd_coeffs *c, const real_t *u,
                        const real_t *f, real_t *out, unsigned threads, xg_args *a, const char *who)
{
  char why[160];
  if (!gpu_initialized_private) return gpu_failf_private(BE_ERROR, "%s: be_init was not called", who);
  if (fd_signals_check(g, x, who, why, sizeof why)) return gpu_failf_private(BE_ERROR, "%s", why);
  if (u == out) return gpu_failf_private(BE_ERROR, "%s: u and out must differ", who);
  if (out && !c) return gpu_failf_private(BE_ERROR, "%s: the stencil needs its coefficients", who);
  memset(a, 0, sizeof *a);
  a->s.u = u, a->s.f = f, a->s.out = out;
  if (c) a->s.cc = c->cc, a->s.cx = c->cx, a->s.cy = c->cy, a->s.cz = c->cz, a->s.cf = c->cf;
  a->s.sx = g->sx, a->s.sxy = g->sxy, a->s.origin = g->origin;
  shell_plan(g, x->exchange, 1, g->n[2], &a->sl);
  for (int d = 0; d < 3; d++) a->n[d] = g->n[d];
  for (int fc = 0; fc < FD_FACES; fc++) {
    a->off[fc] = (long long)x->faces->offset[fc];
    a->peer[fc][0] = x->peer[fc][0], a->peer[fc][1] = x->peer[fc][1];
    a->peer_in[fc] = x->peer_in[fc];
  }
  a->send[0] = x->send[0], a->send[1] = x->send[1];
  a->words = x->words;
  a->exchange = x->exchange, a->unpack = x->unpack;
  const long long need = (a->sl.start[a->sl.nb] + threads - 1) / threads;
  a->nb = need < 1 ? 1u : (need > (long long)XG_MAX_BLOCKS ? XG_MAX_BLOCKS : (unsigned)need);
  return BE_OK;
}

extern "C" int be_signals_prime(const fd_grid *g, const be_signals *x, const real_t *u, be_stream s)
{
  xg_args a;
  memset(&a, 0, sizeof a);
  const int rc = signals_args(g, x, NULL, u, NULL, NULL, PLANE_MAX_BLOCK, &a, "be_signals_prime");
  if (rc) return rc;
  k_sig<false, XG_PRIME><<<a.nb, PLANE_MAX_BLOCK, 0, gpu_stream(s)>>>(a);
  GPU_LAUNCHED("k_sig<prime>");
  return BE_OK;
}

extern "C" int be_signals_pass(const fd_grid *g, const fd_coeffs *c, real_t *u, const real_t *f, real_t *out,
                               fd_kernel k, const be_signals *x, be_stream s)
{
  const hipStream_t st = gpu_stream(s);
  xg_args a;
  memset(&a, 0, sizeof a);
  if (!out) { /* the exchange alone */
    const int rc = signals_args(g, x, NULL, u, NULL, NULL, PLANE_MAX_BLOCK, &a, "be_signals_pass");
    if (rc) return rc;
    k_sig<false, XG_COPY><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
    GPU_LAUNCHED("k_sig<copy>");
    return BE_OK;
  }
  int lo[3], hi[3];
  fd_interior_box(g, x->exchange, lo, hi);
  const bool empty = hi[0] < lo[0] || hi[1] < lo[1] || hi[2] < lo[2];
  st_args m; /* the interior's */
  memset(&m, 0, sizeof m);
  m.u = u, m.f = f, m.out = out;
  m.cc = c ? c->cc : 0, m.cx = c ? c->cx : 0, m.cy = c ? c->cy : 0, m.cz = c ? c->cz : 0, m.cf = c ? c->cf : 0;
  m.sx = g->sx, m.sxy = g->sxy, m.origin = g->origin;
  const bool aligned = ((uintptr_t)u | (uintptr_t)out | (uintptr_t)f) % (2 * sizeof(real_t)) == 0;
  if (!empty && k.id == FD_KERNEL_ZMARCH) { /* one launch */
    int rc = resolve(g, &k, lo, hi, aligned);
    if (!rc) rc = setup_tiles(g, &k, lo, hi, &m);
    if (!rc) rc = signals_args(g, x, c, u, f, out, (unsigned)(k.block[0] * k.block[1]), &a, "be_signals_pass");
    if (rc) return rc;
    const long long gz = (long long)k.strips * m.nchunks, blocks = (long long)m.ntx * m.tps * gz + a.nb;
    if (gz > 65535 || m.tps > 65535 || blocks > 0x7fffffffLL)
      return gpu_failf_private(BE_ERROR, "k_zmarch_x: grid %d x %d x %lld too large", m.ntx, m.tps, gz);
    a.gx = (unsigned)m.ntx, a.gy = (unsigned)m.tps;
    zmarch_l2(g, lo, hi, m);
    const dim3 block((unsigned)k.block[0], (unsigned)k.block[1]);
    zmarch_x_fn(f != NULL, k.tile, k.vec)<<<(unsigned)blocks, block, 0, st>>>(m, a);
    GPU_LAUNCHED("k_zmarch_x");
    return BE_OK;
  }
  /* the interior in its own launch, then the exchange (the same stream: no edge) */
  const int rc = signals_args(g, x, c, u, f, out, PLANE_MAX_BLOCK, &a, "be_signals_pass");
  if (rc) return rc;
  if (empty) {
    const int all_lo[3] = {1, 1, 1}, all_hi[3] = {g->n[0], g->n[1], g->n[2]};
    const int r2 = resolve(g, &k, all_lo, all_hi, true);
    if (r2) return r2;
  } else {
    const int r2 = launch_box(g, lo, hi, m, &k, st);
    if (r2) return r2;
  }
  if (f) k_sig<true, XG_PASS><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
  else k_sig<false, XG_PASS><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
  GPU_LAUNCHED("k_sig<pass>");
  return BE_OK;
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

/* Dynamic shared memory beyond the default share needs the kernel's consent: raised once per
 * kernel instance to the largest size asked for (the 64-lane test build adds static shared
 * memory). Synchronous. */
static int fz_allow_smem(fzfn k, size_t smem)
{
  static struct {
    const void *k;
    size_t smem;
  } raised[64];
  static int nraised = 0;
  int i = 0;
  while (i < nraised && raised[i].k != (const void *)k) i++;
  if (smem > 16 * 1024 && (i == nraised || raised[i].smem < smem)) {
    GPU(hipFuncSetAttribute((const void *)k, hipFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (i == nraised && nraised < 64) raised[nraised++].k = (const void *)k;
    if (i < 64) raised[i].smem = smem;
  }
  return BE_OK;
}

/* The output tiles of one plane of a pass of resolved configuration c over extent[0..1]
 * points along x and y: the blocks of each chunk. */
static long long fz_tiles(const fd_fused *c, const int extent[3])
{
  const int tw = GPU_WARP_SIZE * c->vec - 2 * c->steps, th = c->block_y * c->tile - 2 * c->steps;
  return ceil_div(extent[0], tw) * ceil_div(extent[1], th);
}

extern "C" int gpu_fused_blocks_per_sm(const fd_fused *c, int has_f, int *per_sm)
{
  *per_sm = 0;
  const fzfn k = fused_fn(has_f != 0, c->steps, c->tile, c->vec);
  const size_t smem = fz_smem_bytes(c->steps, c->vec, c->block_y);
  const int rc = fz_allow_smem(k, smem);
  if (rc) return rc;
  GPU(hipOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, (const void *)k, GPU_WARP_SIZE * c->block_y, smem));
  return BE_OK;
}

/* The chunk that keeps a pass of c (resolved; its chunk ignored) over extent within one wave:
 * the fewest planes per block such that every block is resident at once (the device's
 * multiprocessors times the blocks of c's kernel instance each holds). 0 where the output
 * tiles of one plane alone exceed a wave, or the instance cannot be resident. Synchronous. */
static int fz_wave_chunk(const fd_fused *c, const int extent[3], int has_f)
{
  int per_sm = 0;
  if (gpu_fused_blocks_per_sm(c, has_f, &per_sm) != BE_OK || per_sm < 1) return 0;
  const long long per_column = (long long)per_sm * gpu_props_private.sm_count / fz_tiles(c, extent);
  return per_column < 1 ? 0 : (int)ceil_div(extent[2], per_column);
}

/* {tile, vec, block_y, chunk} around the H200's fastest at 512^3, shorter chunks that keep
 * the GPU busy on smaller blocks (256^3 and below), and chunks of 4 to 16 planes for blocks of
 * 32^3 to 128^3, where a pass is bound by the latency of marching through its planes, not by
 * memory; four rows only resolve up to 2 steps. The last three take one column per thread: a
 * footprint one warp wide (32 columns with 32-lane warps) wastes fewer columns of a small
 * block than one of two warps' width (at T = 3 a 128-column row takes 5 footprints of 26
 * outputs, 160 columns, against 3 of 58, 192 columns) and gives more blocks. Then, with a
 * trial, {tile, vec, block_y} whose chunk is the wave's (fz_wave_chunk): where one wave holds
 * the pass, its time is that of one block marching through chunk + 2T planes, so the shortest
 * chunk that still fits is the fastest (bench/results/README.md, "One wave per pass"). Where
 * none fits the device (64-lane wavefronts from 3 steps), the rule's shape. */
extern "C" int be_fused_candidates(int steps, const fd_fused_trial *t, fd_fused *list, int max)
{
  static const int shapes[][4] = {{4, 2, 4, 128}, {4, 2, 4, 32}, {4, 2, 4, 16}, {4, 2, 4, 8},
                                  {4, 2, 4, 4},   {4, 2, 8, 128}, {2, 2, 8, 128}, {2, 2, 8, 64},
                                  {2, 2, 8, 16},  {2, 2, 8, 8},   {2, 2, 8, 4},   {2, 2, 16, 128},
                                  {2, 2, 16, 64}, {2, 2, 16, 32}, {2, 2, 16, 16}, {2, 2, 16, 8},
                                  {2, 1, 8, 32},  {2, 1, 8, 16},  {2, 1, 8, 6}};
  static const int wave_shapes[][3] = {{2, 1, 16}, {2, 1, 8}, {2, 2, 16}, {2, 2, 8}};
  int n = 0;
  for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]) && n < max; i++) {
    fd_fused c = {steps, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]};
    if (be_fused_resolve(&c) == BE_OK) list[n++] = c;
  }
  int extent[3];
  for (int d = 0; t && d < 3; d++) extent[d] = t->hi[d] - t->lo[d] + 1;
  for (int i = 0; t && i < (int)(sizeof wave_shapes / sizeof wave_shapes[0]) && n < max; i++) {
    fd_fused c = {steps, wave_shapes[i][0], wave_shapes[i][1], wave_shapes[i][2], 1};
    if (extent[0] < 1 || extent[1] < 1 || extent[2] < 1 || be_fused_resolve(&c) != BE_OK) continue;
    c.chunk = fz_wave_chunk(&c, extent, t->f != NULL);
    int seen = c.chunk < 1;
    for (int j = 0; j < n && !seen; j++) seen = memcmp(&list[j], &c, sizeof c) == 0;
    if (!seen) list[n++] = c;
  }
  if (n == 0 && max > 0) {
    fd_fused c = {steps, 0, 0, 0, 0};
    if (be_fused_resolve(&c) == BE_OK) list[n++] = c;
  }
  return n;
}

extern "C" int be_stencil_fused(const fd_grid *g, const fd_fused *cin, const int lo[3],
                                const int hi[3], const int fix_lo[3], const int fix_hi[3],
                                const fd_coeffs *cf, const real_t *u, const real_t *f,
                                real_t *out, be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_stencil_fused: be_init was not called");
  if (u == out) return gpu_failf_private(BE_ERROR, "be_stencil_fused: u and out must differ");
  fd_fused c = *cin;
  int rc = be_fused_resolve(&c);
  if (rc) return rc;
  const int G = g->ghost;
  for (int d = 0; d < 3; d++) {
    if (hi[d] < lo[d]) return BE_OK; /* nothing to update */
    if (lo[d] < fix_lo[d] || hi[d] > fix_hi[d] || fix_lo[d] < 2 - G || fix_hi[d] > g->n[d] + G - 1)
      return gpu_failf_private(BE_ERROR, "be_stencil_fused: box %d..%d / fix box %d..%d outside the grid along %d",
                               lo[d], hi[d], fix_lo[d], fix_hi[d], d);
  }
  const int T = c.steps, W = GPU_WARP_SIZE;
  fz_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  a.cc = cf->cc, a.cx = cf->cx, a.cy = cf->cy, a.cz = cf->cz, a.cf = cf->cf;
  a.sx = g->sx, a.sxy = g->sxy, a.origin = g->origin;
  for (int d = 0; d < 3; d++) {
    a.lo[d] = lo[d], a.hi[d] = hi[d], a.flo[d] = fix_lo[d], a.fhi[d] = fix_hi[d];
    a.alo[d] = 1 - G, a.ahi[d] = g->n[d] + G;
  }
  a.tw = W * c.vec - 2 * T;
  a.th = c.block_y * c.tile - 2 * T;
  const long long gx = ceil_div(hi[0] - lo[0] + 1, a.tw), gy = ceil_div(hi[1] - lo[1] + 1, a.th);
  const int ez = hi[2] - lo[2] + 1;
  if (ceil_div(ez, c.chunk) > 65535) c.chunk = (int)ceil_div(ez, 65535);
  a.chunk = c.chunk;
  const long long gz = ceil_div(ez, c.chunk);
  if (gx > 0x7fffffffLL || gy > 65535)
    return gpu_failf_private(BE_ERROR, "k_fused: grid %lld x %lld x %lld too large", gx, gy, gz);
  const size_t smem = fz_smem_bytes(T, c.vec, c.block_y);
  const fzfn k = fused_fn(f != NULL, T, c.tile, c.vec);
  rc = fz_allow_smem(k, smem);
  if (rc) return rc;
  const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)gz), block((unsigned)W, (unsigned)c.block_y);
  k<<<grid, block, smem, gpu_stream(s)>>>(a);
  char name[64];
  snprintf(name, sizeof name, "k_fused<T=%d,rows=%d,vec=%d,f=%d>", T, c.tile, c.vec, (int)(f != NULL));
  GPU_LAUNCHED(name);
  return BE_OK;
}
