/* pointwise.h - the per-point formulas every backend evaluates: the stencil expression and
 * the analytic fields. One source for host C and device code, so that the host backend is a
 * true reference (HPCG's "_ref" role) and a point's arithmetic never depends on the kernel:
 * every initial field is bitwise the same on the host and on a GPU (the sine's factors come
 * from the C library on both: fd_sine_factor).
 */
#ifndef FDMINI_POINTWISE_H
#define FDMINI_POINTWISE_H

#include <math.h>
#include <stdint.h>

#include "backend.h"

#if defined(__HIPCC__) || defined(__CUDACC__)
#define FD_HD __host__ __device__ __forceinline__
#else
#define FD_HD static inline
#endif

/* The stencil of backend.h, in this operand order and no other:
 *   cc*uc + cx*(xm + xp) + cy*(ym + yp) + cz*(zm + zp) [+ cf*fc]
 * FMA contraction is off for the device code (-fmad=false, -ffp-contract=off): nvcc contracted
 * this expression differently in different kernels, which broke bitwise equality between
 * variants, tiles and region splits, and so between multi-rank and single-rank runs. It is off
 * for every host C file too (CMakeLists.txt, FDMINI_C_NO_CONTRACT: -ffp-contract=off or the
 * compiler's spelling), so the host backend rounds every product wherever FMA exists (an
 * x86-64 with -march=native, aarch64) and stays the bitwise reference. */
FD_HD real_t fd_stencil_point(real_t cc, real_t cx, real_t cy, real_t cz, real_t uc, real_t xm,
                              real_t xp, real_t ym, real_t yp, real_t zm, real_t zp)
{
  return cc * uc + cx * (xm + xp) + cy * (ym + yp) + cz * (zm + zp);
}

/* The same with the right-hand-side term: stencil + cf*fc. */
FD_HD real_t fd_stencil_point_f(real_t cc, real_t cx, real_t cy, real_t cz, real_t cf,
                                real_t uc, real_t xm, real_t xp, real_t ym, real_t yp,
                                real_t zm, real_t zp, real_t fc)
{
  return fd_stencil_point(cc, cx, cy, cz, uc, xm, xp, ym, yp, zm, zp) + cf * fc;
}

/* splitmix64: a well-mixed 64-bit hash (Steele, Lea, Flood 2014). */
FD_HD uint64_t fd_mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#if defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__)
#define FD_DEVICE_PASS 1 /* the device half of a GPU compilation */
#endif

#ifndef FD_DEVICE_PASS
/* The factor of FD_FIELD_SINE along one dimension at global index g: sin(pi x / L), x = h g.
 * Host only: the C library's sin. A device's sin differs from it in the last bits, so GPU
 * backends never evaluate it: they read it from tables the host filled with this function
 * (fd_field_sine_table), and the host backend and fd_field_value call it directly. */
static inline double fd_sine_factor(double h, double L, long long g)
{
  const double pi = 3.14159265358979323846;
  return sin(pi * (h * (double)g) / L);
}
#endif

/* FD_FIELD_SINE's value from its three factors, multiplied in this order everywhere. */
FD_HD double fd_sine_value(double scale, double sx, double sy, double sz) { return scale * sx * sy * sz; }

/* Value of an analytic field at global index (gi, gj, gk); see fd_field_kind. Device code takes
 * FD_FIELD_SINE's factors from the host's tables (fd_sine_value of them) and gets NaN here, so
 * that any other use fails its test. */
FD_HD double fd_field_eval(fd_field_kind kind, double scale, const double h[3], const double L[3],
                           uint64_t seed, long long gi, long long gj, long long gk)
{
  double x = h[0] * (double)gi, y = h[1] * (double)gj, z = h[2] * (double)gk;
  switch (kind) {
  case FD_FIELD_CONST:
    return scale;
  case FD_FIELD_QUADRATIC:
    return scale * 0.5 * (x * (x - L[0]) + y * (y - L[1]) + z * (z - L[2]));
  case FD_FIELD_SINE:
#ifdef FD_DEVICE_PASS
    return NAN;
#else
    return fd_sine_value(scale, fd_sine_factor(h[0], L[0], gi), fd_sine_factor(h[1], L[1], gj),
                         fd_sine_factor(h[2], L[2], gk));
#endif
  case FD_FIELD_RANDOM: {
    uint64_t r = fd_mix64(seed ^ fd_mix64((uint64_t)gi ^ fd_mix64((uint64_t)gj ^
                                                                   fd_mix64((uint64_t)gk))));
    return scale * ((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  }
  }
  return 0.0;
}

#endif
