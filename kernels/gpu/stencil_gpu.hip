/* stencil_gpu.hip - the stencil family of the GPU backend (be_stencil, be_kernel_default and the
 * gpu_tuning.h launcher): baseline (lab-notes kernel 1), reordered per-plane (lab-notes
 * kernels 3-5 with the y-split re-indexing of kernel 7) and reordered z-marching, each with
 * tile factor m in {1, 2, 4, 8, 16} instantiated at compile time and chosen at run time, plus
 * the one-launch boundary-shell kernel. Every point is evaluated by fd_stencil_point[_f]
 * (pointwise.h), so every variant, tile, block shape and region split gives bitwise the same
 * field. Any extents work: loads and stores are guarded, nothing needs divisibility.
 *
 * Field layout (backend.h): (nx+2) x (ny+2) x (nz+2) points, x fastest; point (i,j,k) at
 * p = i + sx*j + sxy*k with sx = nx+2, sxy = (nx+2)(ny+2). The neighbours of p are p-+1 (x),
 * p-+sx (y), p-+sxy (z). A box is lo..hi (inclusive) per dimension: ALL = 1..n, INTERIOR =
 * fd_interior_box of the deferred faces (2..n-1 when all six are); SHELL = ALL minus
 * INTERIOR, up to six disjoint slabs.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "pointwise.h"

namespace {

/* ---- kernel arguments -------------------------------------------------------------------- */

struct st_args {
  const real_t *u;  /* input field */
  const real_t *f;  /* right-hand side, or NULL */
  real_t *out;      /* output field */
  real_t cc, cx, cy, cz, cf;
  long long sx, sxy; /* strides of y and z */
  int lo[3], hi[3];  /* box of points to update, inclusive */
  int ntx, nty;      /* tiles (blocks) along x and y */
  int tps, nzb;      /* PLANE: y-tiles per strip; planes in the box */
  int chunk;         /* ZMARCH: planes per chunk */
  int xbase;         /* ZMARCH: x index of a tile's first point (even when vec = 2) */
  int pf;            /* prefetch distance in planes (0 = none) */
  int kpf_max;       /* last plane that may be prefetched (nz+1: the array's last) */
};

/* The ONE expression (pointwise.h); p indexes f. */
template <bool HAS_F>
__device__ __forceinline__ real_t stencil_at(const st_args &a, long long p, real_t uc, real_t xm,
                                             real_t xp, real_t ym, real_t yp, real_t zm,
                                             real_t zp)
{
  if (HAS_F)
    return fd_stencil_point_f(a.cc, a.cx, a.cy, a.cz, a.cf, uc, xm, xp, ym, yp, zm, zp,
                              gpu_ldg(a.f + p));
  return fd_stencil_point(a.cc, a.cx, a.cy, a.cz, uc, xm, xp, ym, yp, zm, zp);
}

/* ---- baseline: lab-notes kernel 1 ----------------------------------------------------------
 * block (bx, by), grid (ceil(ex/bx), ceil(ey/by), ez): thread -> point
 * (lo0 + blockIdx.x*bx + tx, lo1 + blockIdx.y*by + ty, lo2 + blockIdx.z); seven loads. */
template <bool HAS_F>
__global__ void __launch_bounds__(GPU_MAX_BLOCK) k_baseline(const st_args a)
{
  const int i = a.lo[0] + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = a.lo[1] + (int)(blockIdx.y * blockDim.y + threadIdx.y);
  const int k = a.lo[2] + (int)blockIdx.z;
  if (i > a.hi[0] || j > a.hi[1]) return;
  const long long p = i + a.sx * j + a.sxy * k;
  const real_t *u = a.u;
  if (a.pf > 0 && k + a.pf <= a.kpf_max) gpu_prefetch_l2(u + p + a.pf * a.sxy);
  a.out[p] = stencil_at<HAS_F>(a, p, gpu_ldg(u + p), gpu_ldg(u + p - 1), gpu_ldg(u + p + 1),
                               gpu_ldg(u + p - a.sx), gpu_ldg(u + p + a.sx),
                               gpu_ldg(u + p - a.sxy), gpu_ldg(u + p + a.sxy));
}

/* ---- reordered, per plane: lab-notes kernels 3-5 and the y-split of kernel 7 ----------------
 * A tile is bx x (by*M) points of one plane; thread (tx, ty) owns the M points
 * (i, j0..j0+M-1, k), i = lo0 + tile_x*bx + tx, j0 = lo1 + M*(tile_y*by + ty).
 * 1D grid, block b -> (tile_x, tile_y within strip, plane, strip), strip slowest: all planes
 * of one strip of tps y-tiles are swept before the next strip, so the planes k-1, k, k+1 of a
 * strip are still in L2 when read again (kernel 7's fix for planes that outgrow L2).
 * Loads in ascending address order: z-1 rows, y-1 row, the x rows (x-1, x, x+1), y+M row,
 * z+1 rows; the centre values double as the y neighbours of the adjacent rows. */
template <typename T> struct vec2_of;
template <> struct vec2_of<double> {
  typedef double2 type;
};
template <> struct vec2_of<float> {
  typedef float2 type;
};

template <int V> __device__ __forceinline__ void load_row(const real_t *p, real_t (&r)[V]);
template <> __device__ __forceinline__ void load_row<1>(const real_t *p, real_t (&r)[1])
{
  r[0] = gpu_ldg(p);
}
template <> __device__ __forceinline__ void load_row<2>(const real_t *p, real_t (&r)[2])
{
  typedef vec2_of<real_t>::type v2;
  const v2 t = gpu_ldg(reinterpret_cast<const v2 *>(p));
  r[0] = t.x;
  r[1] = t.y;
}

template <int M, int V, bool HAS_F>
__global__ void __launch_bounds__(GPU_MAX_BLOCK) k_plane(const st_args a)
{
  unsigned b = blockIdx.x;
  const int tx = (int)(b % (unsigned)a.ntx);
  b /= (unsigned)a.ntx;
  const int tyl = (int)(b % (unsigned)a.tps);
  b /= (unsigned)a.tps;
  const int kk = (int)(b % (unsigned)a.nzb);
  const int ty = (int)(b / (unsigned)a.nzb) * a.tps + tyl;
  if (ty >= a.nty) return;
  const int i0 = a.xbase + V * (tx * (int)blockDim.x + (int)threadIdx.x);
  const int j0 = a.lo[1] + M * (ty * (int)blockDim.y + (int)threadIdx.y);
  if (i0 > a.hi[0] || j0 > a.hi[1]) return;
  const int nrows = min(M, a.hi[1] - j0 + 1);
  bool xok[V];
#pragma unroll
  for (int v = 0; v < V; v++) xok[v] = i0 + v >= a.lo[0] && i0 + v <= a.hi[0];
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = i0 + sx * j0 + sxy * (a.lo[2] + kk);
  const real_t *u = a.u + p0;
  /* the rows of plane k+pf, needed by blocks a few planes later: into L2 now */
  if (a.pf > 0 && a.lo[2] + kk + a.pf <= a.kpf_max) {
#pragma unroll
    for (int n = 0; n < M; n++)
      if (n < nrows) gpu_prefetch_l2(u + a.pf * sxy + n * sx);
  }

  real_t zm[M][V], c[M][V], zp[M][V], xm[M], xp[M], ym[V], yp[V];
#pragma unroll
  for (int n = 0; n < M; n++)
#pragma unroll
    for (int v = 0; v < V; v++) zm[n][v] = c[n][v] = zp[n][v] = (real_t)0;
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) load_row<V>(u - sxy + n * sx, zm[n]);
  load_row<V>(u - sx, ym);
#pragma unroll
  for (int n = 0; n < M; n++) {
    xm[n] = (n < nrows && xok[0]) ? gpu_ldg(u + n * sx - 1) : (real_t)0;
    if (n < nrows) load_row<V>(u + n * sx, c[n]);
    xp[n] = (n < nrows && xok[V - 1]) ? gpu_ldg(u + n * sx + V) : (real_t)0;
  }
  load_row<V>(u + nrows * sx, yp);
#pragma unroll
  for (int n = 0; n < M; n++)
    if (n < nrows) load_row<V>(u + sxy + n * sx, zp[n]);

#pragma unroll
  for (int n = 0; n < M; n++) {
    if (n < nrows) {
#pragma unroll
      for (int v = 0; v < V; v++) {
        if (!xok[v]) continue;
        const real_t xl = v > 0 ? c[n][v > 0 ? v - 1 : 0] : xm[n];
        const real_t xh = v + 1 < V ? c[n][v + 1 < V ? v + 1 : V - 1] : xp[n];
        const real_t yl = n > 0 ? c[n > 0 ? n - 1 : 0][v] : ym[v];
        const real_t yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1][v] : yp[v];
        const long long p = p0 + n * sx + v;
        gpu_store_nt(a.out + p, stencil_at<HAS_F>(a, p, c[n][v], xl, xh, yl, yh, zm[n][v], zp[n][v]));
      }
    }
  }
}

/* ---- reordered, per plane, pairs: vec = 2 ------------------------------------------------------
 * The per-plane schedule with 16-byte loads (double2; float2 in single precision): thread owns
 * the pair x = i0, i0+1 (i0 = xbase + 2*qi, even, so a pair never straddles a row start) of the
 * M rows j0..j0+M-1 of one plane. Grid (x: the threads of one y-strip of one plane, y: plane,
 * z: strip); along x the threads are linear, not row-aligned blocks: t -> (qi, y-tile in the
 * strip), pair fastest, so a row of nq pairs is followed by the next row without padding (a row-aligned 2D block wasted up to half a block per row:
 * 257 pairs cover 512 points plus the ghost columns). Loads in ascending address order, as the
 * per-plane kernel: z-1 rows, y-1 row, the M centre rows, y+M row, z+1 rows; the x neighbours
 * come from the adjacent lanes (the lane below holds x = i0-1 of the same row, the lane above
 * x = i0+2) and are loaded only at a warp or row edge. Points of a pair outside the box (the
 * ghost column, or x = lo-1 of the interior box) are neither computed nor stored. No thread
 * returns early: every lane takes part in the shuffles. Needs an even row pitch, 16-byte
 * aligned arrays, a block that is a whole number of warps, fewer than 2^32 threads per plane
 * (32-bit index arithmetic: 64-bit divisions cost 4% of the bandwidth on an H100) and at most
 * 65535 planes; resolve() falls back to k_plane otherwise. */
template <int M, bool HAS_F>
/* min 4 blocks for m <= 2: without it nvcc gave the f-variant of m = 2 48 registers and a
 * 16-byte spill */
__global__ void __launch_bounds__(GPU_MAX_BLOCK, M <= 2 ? 4 : 1) k_plane_v2(const st_args a)
{
  typedef vec2_of<real_t>::type v2;
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
  const long long p0 = i0 + sx * j0 + sxy * (a.lo[2] + (live ? kk : 0));
  const real_t *u = a.u + p0;
  if (a.pf > 0 && live && a.lo[2] + kk + a.pf <= a.kpf_max) {
#pragma unroll
    for (int n = 0; n < M; n++)
      if (n < nrows) gpu_prefetch_l2(u + a.pf * sxy + n * sx);
  }

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
      if (v0) o.x = stencil_at<HAS_F>(a, p, c[n].x, xl, c[n].y, yl.x, yh.x, zm[n].x, zp[n].x);
      if (v1) o.y = stencil_at<HAS_F>(a, p + 1, c[n].y, c[n].x, xh, yl.y, yh.y, zm[n].y, zp[n].y);
      if (v0 && v1) gpu_store_nt2(a.out + p, o.x, o.y);
      else if (v0) gpu_store_nt(a.out + p, o.x);
      else if (v1) gpu_store_nt(a.out + p + 1, o.y);
    }
  }
}

/* ---- reordered, z-marching ------------------------------------------------------------------
 * A tile is (bx*V) x (by*M) points of every plane of one z-chunk; thread (tx, ty) owns the
 * V x M points i0..i0+V-1, j0..j0+M-1 with i0 = xbase + V*(tile_x*bx + tx),
 * j0 = lo1 + M*(tile_y*by + ty), and marches through the chunk's planes. 1D grid, block
 * b -> (tile_x, tile_y, chunk), chunk slowest; even chunks march up, odd chunks down, so two
 * chunks sharing a boundary plane read it at the same time (start or end) and it comes from L2.
 * Registers hold the centre values of planes k-dir (prv), k (cur), k+dir (nxt) and the
 * prefetched k+2dir (pf); per plane the thread loads, ascending, the y-1 row, the x-1 / x+V
 * neighbours of its rows, the y+M row (all of plane k, cache hits), then plane k+2dir.
 * With V = 2 the centre loads are 16-byte vectors (double2): needs an even sx so that every
 * row starts on an even element and xbase even. */
template <int M, int V, int D, bool HAS_F>
__global__ void __launch_bounds__(GPU_MAX_BLOCK) k_zmarch(const st_args a)
{
  unsigned b = blockIdx.x;
  const int tx = (int)(b % (unsigned)a.ntx);
  b /= (unsigned)a.ntx;
  const int ty = (int)(b % (unsigned)a.nty);
  const int chunk = (int)(b / (unsigned)a.nty);
  const int i0 = a.xbase + V * (tx * (int)blockDim.x + (int)threadIdx.x);
  const int j0 = a.lo[1] + M * (ty * (int)blockDim.y + (int)threadIdx.y);
  const int kc0 = a.lo[2] + chunk * a.chunk;
  if (i0 > a.hi[0] || j0 > a.hi[1] || kc0 > a.hi[2]) return;
  const int kc1 = min(a.hi[2], kc0 + a.chunk - 1);
  const int nk = kc1 - kc0 + 1;
  const bool up = (chunk & 1) == 0;
  const int nrows = min(M, a.hi[1] - j0 + 1);
  bool xok[V];
#pragma unroll
  for (int v = 0; v < V; v++) xok[v] = i0 + v >= a.lo[0] && i0 + v <= a.hi[0];
  const long long sx = a.sx, dz = up ? a.sxy : -a.sxy;
  const real_t *u = a.u;
  /* (i0, j0) of the first plane of the march; plane offset o (0..nk) is at p0 + o*dz, and
   * offset -1 is the plane before it. Offsets 0..nk-1 are computed, -1 and nk only read. */
  const long long p0 = i0 + sx * j0 + a.sxy * (up ? kc0 : kc1);

  /* window: planes o-1 (prv), o (cur), o+1 (nxt); queue q[d] = plane o+2+d, loaded D steps
   * before it is needed (the bytes in flight per thread are D*M*V*sizeof(real_t)) */
  real_t prv[M][V], cur[M][V], nxt[M][V], q[D][M][V];
#pragma unroll
  for (int n = 0; n < M; n++) {
#pragma unroll
    for (int v = 0; v < V; v++) {
      prv[n][v] = cur[n][v] = nxt[n][v] = (real_t)0;
#pragma unroll
      for (int d = 0; d < D; d++) q[d][n][v] = (real_t)0;
    }
    if (n < nrows) {
      load_row<V>(u + p0 - dz + n * sx, prv[n]);
      load_row<V>(u + p0 + n * sx, cur[n]);
      load_row<V>(u + p0 + dz + n * sx, nxt[n]);
#pragma unroll
      for (int d = 0; d < D; d++)
        if (2 + d <= nk) load_row<V>(u + p0 + (2 + d) * dz + n * sx, q[d][n]);
    }
  }

  long long p = p0;
  for (int s = 0; s < nk; s++) {
    /* plane offset s+2+D: the newest element of the queue, first so it is longest in flight */
    real_t fresh[M][V];
    const bool more = s + 2 + D <= nk;
#pragma unroll
    for (int n = 0; n < M; n++) {
#pragma unroll
      for (int v = 0; v < V; v++) fresh[n][v] = (real_t)0;
      if (n < nrows && more) load_row<V>(u + p + (2 + D) * dz + n * sx, fresh[n]);
    }
    /* plane offset s+pf into L2 */
    if (a.pf > 0 && s + a.pf <= nk) {
#pragma unroll
      for (int n = 0; n < M; n++)
        if (n < nrows) gpu_prefetch_l2(u + p + a.pf * dz + n * sx);
    }
    /* the current plane: y-1 row, per row its x neighbours, y+nrows row (cache hits; the x
     * neighbours are loaded row by row so that m = 16 stays within the registers) */
    real_t ylo[V], yhi[V];
    load_row<V>(u + p - sx, ylo);
    load_row<V>(u + p + nrows * sx, yhi);

#pragma unroll
    for (int n = 0; n < M; n++) {
      if (n < nrows) {
        const real_t xlo = xok[0] ? gpu_ldg(u + p + n * sx - 1) : (real_t)0;
        const real_t xhi = xok[V - 1] ? gpu_ldg(u + p + n * sx + V) : (real_t)0;
#pragma unroll
        for (int v = 0; v < V; v++) {
          if (!xok[v]) continue;
          const real_t xl = v > 0 ? cur[n][v > 0 ? v - 1 : 0] : xlo;
          const real_t xh = v + 1 < V ? cur[n][v + 1 < V ? v + 1 : V - 1] : xhi;
          const real_t yl = n > 0 ? cur[n > 0 ? n - 1 : 0][v] : ylo[v];
          const real_t yh = n + 1 < nrows ? cur[n + 1 < M ? n + 1 : M - 1][v] : yhi[v];
          const real_t zl = up ? prv[n][v] : nxt[n][v];
          const real_t zh = up ? nxt[n][v] : prv[n][v];
          const long long r = p + n * sx + v;
          gpu_store_nt(a.out + r, stencil_at<HAS_F>(a, r, cur[n][v], xl, xh, yl, yh, zl, zh));
        }
      }
    }

#pragma unroll
    for (int n = 0; n < M; n++) {
#pragma unroll
      for (int v = 0; v < V; v++) {
        prv[n][v] = cur[n][v];
        cur[n][v] = nxt[n][v];
        nxt[n][v] = q[0][n][v];
#pragma unroll
        for (int d = 0; d + 1 < D; d++) q[d][n][v] = q[d + 1][n][v];
        q[D - 1][n][v] = fresh[n][v];
      }
    }
    p += dz;
  }
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
__global__ void __launch_bounds__(GPU_MAX_BLOCK) k_shell(const st_args a, const shell_slabs sl)
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
  const long long p = i + a.sx * j + a.sxy * k;
  const real_t *u = a.u;
  a.out[p] = stencil_at<HAS_F>(a, p, gpu_ldg(u + p), gpu_ldg(u + p - 1), gpu_ldg(u + p + 1),
                               gpu_ldg(u + p - a.sx), gpu_ldg(u + p + a.sx),
                               gpu_ldg(u + p - a.sxy), gpu_ldg(u + p + a.sxy));
}

/* ---- host side ------------------------------------------------------------------------------ */

int ceil_div(long long a, long long b) { return (int)((a + b - 1) / b); }

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

/* Resident blocks per multiprocessor of `kernel` at `threads` per block, cached (the
 * occupancy query costs microseconds; be_stencil runs every step). */
template <typename K> int blocks_per_sm(K kernel, int threads, int *out)
{
  struct entry {
    const void *k;
    int threads, blocks;
  };
  static entry cache[128];
  static int used = 0;
  for (int e = 0; e < used; e++)
    if (cache[e].k == (const void *)kernel && cache[e].threads == threads) {
      *out = cache[e].blocks;
      return BE_OK;
    }
  int nb = 0;
  GPU(hipOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, threads, 0));
  if (nb < 1) nb = 1;
  if (used < 128) cache[used++] = entry{(const void *)kernel, threads, nb};
  *out = nb;
  return BE_OK;
}

/* Default block shapes (threads x, y); documented in gpu_tuning.h's users' notes and in
 * bench/results/README.md. */
void default_block(gpu_schedule sched, int m, int vec, int block[2])
{
  (void)m;
  (void)vec;
  switch (sched) {
  case GPU_SCHED_BASELINE: block[0] = 256; block[1] = 1; break;
  case GPU_SCHED_PLANE: block[0] = 256; block[1] = 1; break;
  default: block[0] = 64; block[1] = 4; break;
  }
}

/* PLANE rule (lab-notes kernel 7): split y into strips so that one strip of a plane takes at
 * most L2/8 bytes; then the ~3 planes a strip sweep touches at once, plus the planes in flight,
 * stay in L2. 1 strip when the whole plane fits that share. */
int plane_strips(const fd_grid *g, int nty)
{
  const double plane = (double)(g->n[0] + 2) * (g->n[1] + 2) * sizeof(real_t);
  const double share = gpu_props_private.l2_bytes > 0 ? gpu_props_private.l2_bytes / 8.0 : 1e30;
  int strips = (int)((plane + share - 1) / share);
  if (strips < 1) strips = 1;
  if (strips > nty) strips = nty;
  return strips;
}

/* The kernel instantiation for (schedule, m, vec, f). NULL-free: every combination the
 * launcher can ask for exists (vec = 2 only up to m = 4: larger tiles spill registers). */
template <bool F> struct kernels {
  typedef void (*kfn)(st_args);
  /* depth 1 for every m; depths 2 and 4 up to m = 4 (registers) */
  static kfn zmarch(int m, int vec, int depth)
  {
    static const kfn v1[5] = {k_zmarch<1, 1, 1, F>, k_zmarch<2, 1, 1, F>, k_zmarch<4, 1, 1, F>,
                              k_zmarch<8, 1, 1, F>, k_zmarch<16, 1, 1, F>};
    static const kfn v[2][2][3] = {
        {{k_zmarch<1, 1, 2, F>, k_zmarch<2, 1, 2, F>, k_zmarch<4, 1, 2, F>},
         {k_zmarch<1, 1, 4, F>, k_zmarch<2, 1, 4, F>, k_zmarch<4, 1, 4, F>}},
        {{k_zmarch<1, 2, 2, F>, k_zmarch<2, 2, 2, F>, k_zmarch<4, 2, 2, F>},
         {k_zmarch<1, 2, 4, F>, k_zmarch<2, 2, 4, F>, k_zmarch<4, 2, 4, F>}}};
    static const kfn v2d1[3] = {k_zmarch<1, 2, 1, F>, k_zmarch<2, 2, 1, F>, k_zmarch<4, 2, 1, F>};
    const int t = tile_index(m);
    if (t >= 3) return v1[t];
    if (depth <= 1) return vec == 2 ? v2d1[t] : v1[t];
    return v[vec == 2][depth >= 4][t];
  }
  static kfn plane(int m, int vec)
  {
    static const kfn p[5] = {k_plane<1, 1, F>, k_plane<2, 1, F>, k_plane<4, 1, F>,
                             k_plane<8, 1, F>, k_plane<16, 1, F>};
    static const kfn p2[4] = {k_plane_v2<1, F>, k_plane_v2<2, F>, k_plane_v2<4, F>,
                              k_plane_v2<8, F>};
    const int t = tile_index(m);
    return vec == 2 && t < 4 ? p2[t] : p[t];
  }
};

typedef void (*kfn)(st_args);

kfn zmarch_fn(bool f, int m, int vec, int depth)
{
  return f ? kernels<true>::zmarch(m, vec, depth) : kernels<false>::zmarch(m, vec, depth);
}
kfn plane_fn(bool f, int m, int vec)
{
  return f ? kernels<true>::plane(m, vec) : kernels<false>::plane(m, vec);
}

/* Resolves every zero field of cfg for kernel k over box extents ex, ey, ez and fills the
 * tiling fields of a. */
int resolve(const fd_grid *g, fd_kernel k, const int lo[3], const int hi[3], bool has_f,
            const real_t *u, gpu_stencil_cfg *cfg, st_args *a)
{
  const int ex = hi[0] - lo[0] + 1, ey = hi[1] - lo[1] + 1, ez = hi[2] - lo[2] + 1;
  const int m = k.id == FD_KERNEL_BASELINE ? 1 : k.tile;
  if (k.id == FD_KERNEL_BASELINE) cfg->schedule = GPU_SCHED_BASELINE;
  else if (cfg->schedule == GPU_SCHED_AUTO || cfg->schedule == GPU_SCHED_BASELINE)
    cfg->schedule = GPU_SCHED_PLANE; /* the rule: per-plane reordered kernel (bench/results) */

  const bool even_pitch = (g->n[0] + 2) % 2 == 0;
  const bool aligned = ((uintptr_t)u % (2 * sizeof(real_t))) == 0;
  if (cfg->block[0] <= 0 || cfg->block[1] <= 0) default_block(cfg->schedule, m, cfg->vec, cfg->block);
  if (cfg->schedule == GPU_SCHED_PLANE) {
    /* the rule: pairs (16-byte loads) wherever they can run: even row pitch, aligned arrays,
     * m <= 8 (registers) and whole warps per block (the shuffles; 64 covers AMD wavefronts) */
    const long long pair_threads = /* of one plane: 32-bit index arithmetic */
        (long long)((hi[0] - (lo[0] & ~1)) / 2 + 1) * ceil_div(ey, m);
    const bool pairs_ok = even_pitch && aligned && m <= 8 &&
                          (cfg->block[0] * cfg->block[1]) % 64 == 0 &&
                          pair_threads < 0xffff0000LL && ez <= 65535;
    if (cfg->vec == 0) cfg->vec = pairs_ok ? 2 : 1;
    if (cfg->vec != 1 && !(cfg->vec == 2 && pairs_ok)) cfg->vec = 1;
    cfg->depth = 0;
  } else if (cfg->schedule == GPU_SCHED_ZMARCH) {
    if (cfg->vec == 0) cfg->vec = 2;
    if (cfg->vec != 1 && !(cfg->vec == 2 && even_pitch && aligned && m <= 4)) cfg->vec = 1;
    if (cfg->depth <= 0) cfg->depth = m <= 4 ? 4 : 1;
    cfg->depth = m > 4 ? 1 : cfg->depth >= 4 ? 4 : cfg->depth >= 2 ? 2 : 1;
  } else {
    cfg->vec = 1;
    cfg->depth = 0;
  }
  const int bx = cfg->block[0], by = cfg->block[1];
  if (bx * by > GPU_MAX_BLOCK || bx < 1 || by < 1)
    return gpu_failf_private(BE_ERROR, "stencil: block %dx%d exceeds %d threads", bx, by,
                             GPU_MAX_BLOCK);

  /* prefetch rule: off. Measured on an H100 (bench/results): every distance from 1 to 8
   * planes made the per-plane and baseline kernels 3-25% slower (the prefetches add L2 requests
   * and evict planes still in use); kept for the sweep. */
  if (cfg->prefetch == 0) cfg->prefetch = -1;
  a->pf = cfg->prefetch > 0 ? cfg->prefetch : 0;
  a->kpf_max = g->n[2] + 1;
  a->lo[0] = lo[0], a->lo[1] = lo[1], a->lo[2] = lo[2];
  a->hi[0] = hi[0], a->hi[1] = hi[1], a->hi[2] = hi[2];
  a->nzb = ez;
  switch (cfg->schedule) {
  case GPU_SCHED_BASELINE:
    a->ntx = ceil_div(ex, bx);
    a->nty = ceil_div(ey, by);
    cfg->strips = 0;
    cfg->zchunks = 0;
    break;
  case GPU_SCHED_PLANE: {
    a->xbase = cfg->vec == 2 ? (lo[0] & ~1) : lo[0];
    if (cfg->vec == 2) { /* k_plane_v2: ntx = pairs per row, nty = tiles of m rows */
      a->ntx = (hi[0] - a->xbase) / 2 + 1;
      a->nty = ceil_div(ey, m);
    } else {
      a->ntx = ceil_div(hi[0] - a->xbase + 1, bx);
      a->nty = ceil_div(ey, (long long)by * m);
    }
    if (cfg->strips <= 0) cfg->strips = plane_strips(g, a->nty);
    if (cfg->strips > a->nty) cfg->strips = a->nty;
    a->tps = ceil_div(a->nty, cfg->strips);
    cfg->strips = ceil_div(a->nty, a->tps);
    cfg->zchunks = 0;
    break;
  }
  case GPU_SCHED_ZMARCH: {
    const int v = cfg->vec;
    a->xbase = v == 2 ? (lo[0] & ~1) : lo[0];
    a->ntx = ceil_div(hi[0] - a->xbase + 1, (long long)bx * v);
    a->nty = ceil_div(ey, (long long)by * m);
    if (cfg->zchunks <= 0) {
      /* the rule: one resident wave. capacity = resident blocks of this kernel on the whole
       * device; as many chunks as fit beside the tiles, none shorter than 4 planes. */
      int per_sm = 1;
      int rc = blocks_per_sm(zmarch_fn(has_f, m, v, cfg->depth), bx * by, &per_sm);
      if (rc) return rc;
      const long long capacity = (long long)per_sm * gpu_props_private.sm_count;
      const long long tiles = (long long)a->ntx * a->nty;
      long long nc = capacity / tiles;
      if (nc < 1) nc = 1;
      if (nc > (ez + 3) / 4) nc = (ez + 3) / 4;
      if (nc < 1) nc = 1;
      cfg->zchunks = (int)nc;
    }
    if (cfg->zchunks > ez) cfg->zchunks = ez;
    a->chunk = ceil_div(ez, cfg->zchunks);
    cfg->zchunks = ceil_div(ez, a->chunk);
    cfg->strips = 0;
    break;
  }
  default:
    return gpu_failf_private(BE_ERROR, "stencil: unknown schedule %d", (int)cfg->schedule);
  }
  return BE_OK;
}

int launch_box(const fd_grid *g, const int lo[3], const int hi[3], st_args &a, fd_kernel k,
               gpu_stencil_cfg *cfg, hipStream_t st)
{
  const bool has_f = a.f != NULL;
  int rc = resolve(g, k, lo, hi, has_f, a.u, cfg, &a);
  if (rc) return rc;
  const int m = k.id == FD_KERNEL_BASELINE ? 1 : k.tile;
  const dim3 block((unsigned)cfg->block[0], (unsigned)cfg->block[1]);
  char name[96];
  switch (cfg->schedule) {
  case GPU_SCHED_BASELINE: {
    if (a.nzb > 65535)
      return gpu_failf_private(BE_ERROR, "k_baseline: %d planes exceed grid.z 65535", a.nzb);
    const dim3 grid((unsigned)a.ntx, (unsigned)a.nty, (unsigned)a.nzb);
    if (has_f) k_baseline<true><<<grid, block, 0, st>>>(a);
    else k_baseline<false><<<grid, block, 0, st>>>(a);
    snprintf(name, sizeof name, "k_baseline<f=%d>", (int)has_f);
    break;
  }
  case GPU_SCHED_PLANE: {
    if (cfg->vec == 2) { /* grid: (threads of one strip of one plane, planes, strips) */
      const long long threads = (long long)cfg->block[0] * cfg->block[1];
      const long long bx2 = ((long long)a.ntx * a.tps + threads - 1) / threads;
      if (bx2 * threads > 0xffffffffLL || a.nzb > 65535 || cfg->strips > 65535)
        return gpu_failf_private(BE_ERROR, "k_plane_v2: grid %lld x %d x %d too large", bx2,
                                 a.nzb, cfg->strips);
      const dim3 grid((unsigned)bx2, (unsigned)a.nzb, (unsigned)cfg->strips);
      plane_fn(has_f, m, cfg->vec)<<<grid, block, 0, st>>>(a);
    } else {
      const long long blocks = (long long)a.ntx * a.tps * a.nzb * cfg->strips;
      if (blocks > 0x7fffffffLL)
        return gpu_failf_private(BE_ERROR, "k_plane: %lld blocks exceed the grid", blocks);
      plane_fn(has_f, m, cfg->vec)<<<(unsigned)blocks, block, 0, st>>>(a);
    }
    snprintf(name, sizeof name, "k_plane<m=%d,vec=%d,f=%d>", m, cfg->vec, (int)has_f);
    break;
  }
  case GPU_SCHED_ZMARCH: {
    const long long blocks = (long long)a.ntx * a.nty * cfg->zchunks;
    if (blocks > 0x7fffffffLL)
      return gpu_failf_private(BE_ERROR, "k_zmarch: %lld blocks exceed the grid", blocks);
    zmarch_fn(has_f, m, cfg->vec, cfg->depth)<<<(unsigned)blocks, block, 0, st>>>(a);
    snprintf(name, sizeof name, "k_zmarch<m=%d,vec=%d,depth=%d,f=%d>", m, cfg->vec, cfg->depth,
             (int)has_f);
    break;
  }
  default:
    return gpu_failf_private(BE_ERROR, "stencil: unknown schedule %d", (int)cfg->schedule);
  }
  GPU_LAUNCHED(name);
  return BE_OK;
}

/* The shell of `deferred` restricted to the planes kz0..kz1 (already clamped to 1..nz). */
int launch_shell(const fd_grid *g, unsigned deferred, int kz0, int kz1, st_args &a,
                 hipStream_t st)
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
  const long long total = sl.start[sl.nb];
  if (total == 0) return BE_OK;
  const long long blocks = (total + GPU_MAX_BLOCK - 1) / GPU_MAX_BLOCK;
  if (a.f) k_shell<true><<<(unsigned)blocks, GPU_MAX_BLOCK, 0, st>>>(a, sl);
  else k_shell<false><<<(unsigned)blocks, GPU_MAX_BLOCK, 0, st>>>(a, sl);
  GPU_LAUNCHED(a.f ? "k_shell<f=1>" : "k_shell<f=0>");
  return BE_OK;
}

int check_kernel(fd_kernel k)
{
  if (k.id != FD_KERNEL_BASELINE && k.id != FD_KERNEL_REORDERED)
    return gpu_failf_private(BE_ERROR, "stencil: unknown kernel id %d", (int)k.id);
  if (k.id == FD_KERNEL_REORDERED && tile_index(k.tile) < 0)
    return gpu_failf_private(BE_ERROR, "stencil: tile %d is not one of 1, 2, 4, 8, 16", k.tile);
  return BE_OK;
}

} /* namespace */

/* ---- API -------------------------------------------------------------------------------------- */

/* gpu_stencil_launch over the planes k0..k1 only (be_stencil_zrange). */
static int stencil_launch_zrange(const fd_grid *g, fd_region region, unsigned deferred, int k0,
                                 int k1, const fd_coeffs *c, const real_t *u, const real_t *f,
                                 real_t *out, fd_kernel k, const gpu_stencil_cfg *cfg_in,
                                 be_stream s, gpu_stencil_cfg *used)
{
  int rc = check_kernel(k);
  if (rc) return rc;
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_stencil: be_init was not called");
  if (u == out) return gpu_failf_private(BE_ERROR, "be_stencil: u and out must differ");
  gpu_stencil_cfg cfg;
  if (cfg_in) cfg = *cfg_in;
  else memset(&cfg, 0, sizeof cfg);

  st_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  a.cc = c->cc, a.cx = c->cx, a.cy = c->cy, a.cz = c->cz, a.cf = c->cf;
  a.sx = g->n[0] + 2;
  a.sxy = a.sx * (g->n[1] + 2);
  const hipStream_t st = gpu_stream(s);
  if (g->n[0] < 1 || g->n[1] < 1 || g->n[2] < 1) { /* nothing to update */
    if (used) *used = cfg;
    return BE_OK;
  }

  const int kz0 = k0 > 1 ? k0 : 1, kz1 = k1 < g->n[2] ? k1 : g->n[2];
  if (region == FD_REGION_SHELL) {
    rc = launch_shell(g, deferred, kz0, kz1, a, st);
    if (used) *used = cfg;
    return rc;
  }
  if (region != FD_REGION_ALL && region != FD_REGION_INTERIOR)
    return gpu_failf_private(BE_ERROR, "be_stencil: unknown region %d", (int)region);
  int lo[3], hi[3];
  fd_interior_box(g, region == FD_REGION_ALL ? 0u : deferred, lo, hi);
  if (lo[2] < kz0) lo[2] = kz0;
  if (hi[2] > kz1) hi[2] = kz1;
  if (hi[0] < lo[0] || hi[1] < lo[1] || hi[2] < lo[2]) { /* empty interior */
    if (used) *used = cfg;
    return BE_OK;
  }
  rc = launch_box(g, lo, hi, a, k, &cfg, st);
  if (used) *used = cfg;
  return rc;
}

extern "C" int gpu_stencil_launch(const fd_grid *g, fd_region region, unsigned deferred,
                                  const fd_coeffs *c,
                                  const real_t *u, const real_t *f, real_t *out, fd_kernel k,
                                  const gpu_stencil_cfg *cfg_in, be_stream s,
                                  gpu_stencil_cfg *used)
{
  return stencil_launch_zrange(g, region, deferred, 1, g->n[2], c, u, f, out, k, cfg_in, s,
                               used);
}

extern "C" int be_stencil(const fd_grid *g, fd_region region, unsigned deferred,
                          const fd_coeffs *c, const real_t *u, const real_t *f, real_t *out,
                          fd_kernel k, be_stream s)
{
  return stencil_launch_zrange(g, region, deferred, 1, g->n[2], c, u, f, out, k, NULL, s, NULL);
}

extern "C" int be_stencil_zrange(const fd_grid *g, fd_region region, unsigned deferred, int k0,
                                 int k1, const fd_coeffs *c, const real_t *u, const real_t *f,
                                 real_t *out, fd_kernel k, be_stream s)
{
  return stencil_launch_zrange(g, region, deferred, k0, k1, c, u, f, out, k, NULL, s, NULL);
}

extern "C" int gpu_stencil_cfg_default(const fd_grid *g, fd_kernel k, gpu_stencil_cfg *cfg)
{
  int rc = check_kernel(k);
  if (rc) return rc;
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "gpu_stencil_cfg_default: be_init was not called");
  memset(cfg, 0, sizeof *cfg);
  if (g->n[0] < 1 || g->n[1] < 1 || g->n[2] < 1) return BE_OK;
  st_args a;
  memset(&a, 0, sizeof a);
  const int lo[3] = {1, 1, 1};
  const int hi[3] = {g->n[0], g->n[1], g->n[2]};
  /* assume aligned storage (be_malloc returns at least 256-byte aligned memory) */
  return resolve(g, k, lo, hi, false, (const real_t *)NULL, cfg, &a);
}

extern "C" void gpu_stencil_cfg_describe(const gpu_stencil_cfg *cfg, fd_kernel k, char *buf,
                                         size_t len)
{
  const int m = k.id == FD_KERNEL_BASELINE ? 1 : k.tile;
  switch (cfg->schedule) {
  case GPU_SCHED_BASELINE:
    snprintf(buf, len, "baseline block=%dx%d pf=%d", cfg->block[0], cfg->block[1],
             cfg->prefetch > 0 ? cfg->prefetch : 0);
    break;
  case GPU_SCHED_PLANE:
    snprintf(buf, len, "plane m=%d vec=%d block=%dx%d strips=%d pf=%d", m, cfg->vec,
             cfg->block[0], cfg->block[1], cfg->strips, cfg->prefetch > 0 ? cfg->prefetch : 0);
    break;
  case GPU_SCHED_ZMARCH:
    snprintf(buf, len, "zmarch m=%d vec=%d depth=%d block=%dx%d zchunks=%d pf=%d", m, cfg->vec,
             cfg->depth, cfg->block[0], cfg->block[1], cfg->zchunks,
             cfg->prefetch > 0 ? cfg->prefetch : 0);
    break;
  default:
    snprintf(buf, len, "auto");
    break;
  }
}

/* The default variant (backend.h): reordered, per-plane schedule, with the tile factor m by
 * this rule (see bench/results/README.md for the measurements behind it):
 *   even row pitch (nx even): pairs (vec = 2, k_plane_v2), m = 2 in double and m = 4 in float.
 *   Double: m = 2 was the fastest configuration of the whole sweep at 512^3 and 1024x1024x512
 *   on H100 and H200 (m = 1 re-reads the y neighbours; m = 4 holds 86 registers and fewer
 *   resident threads: 92.0% and 72.6% against 93.6% and 80.3%). Float: m = 4 within 1% of m = 2
 *   at 512^3 and 0.7 (H100) to 9 (H200) points ahead at 1024x1024x512;
 *   odd pitch: single points (vec = 1) with m = 4, the best of that kernel on H100 and H200.
 * The schedule's own rules then pick the block (256 x 1), the y-strips and the L2 prefetch
 * distance (gpu_stencil_cfg_default). */
extern "C" int be_kernel_default(const fd_grid *g, fd_kernel *k)
{
  k->id = FD_KERNEL_REORDERED;
  k->tile = (g->n[0] + 2) % 2 == 0 && sizeof(real_t) == 8 ? 2 : 4;
  return BE_OK;
}
