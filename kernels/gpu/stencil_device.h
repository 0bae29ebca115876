/* stencil_device.h - private to the kernel files of kernels/gpu (stencil_step.hip,
 * stencil_exchange.hip, stencil_fused.hip): the device helpers several of them use, the ONE
 * expression's call, the loads and stores of rows and pairs, and the body of the z-marching
 * kernels (k_zmarch and k_zmarch_x). Forced inline and in an anonymous namespace: every
 * translation unit compiles its own copy, as when they were one file; no relocatable device
 * code. */
#ifndef FDMINI_STENCIL_DEVICE_H
#define FDMINI_STENCIL_DEVICE_H

#include "pointwise.h"
#include "stencil_common.h"

namespace stencil {
namespace {

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

} /* namespace */
} /* namespace stencil */

#endif
