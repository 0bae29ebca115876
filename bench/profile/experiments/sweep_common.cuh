// sweep_common.cuh - what the 2026-11-22 kernel harnesses tma_sweep.cu, pairs_persist_sweep.cu,
// zwave_sweep.cu and cluster_sweep.cu share: the field arguments, the one stencil expression, a
// baseline kernel (the bitwise reference), a copy of the product's pair kernel (k_plane_v2, the
// timed reference), the pair store, the device-side checks and fill, and the host harness (field
// set-up, event timing, memcpy reference, checks, the pair kernel's launch shape). Not part of the
// build.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
typedef double real;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
struct A { const real *u; real *out; long long sx, sxy; int nx, ny, nz; int chunk; real cc, cx, cy, cz; int qlo, nq, nty; int tps; int ntx; };
__device__ __forceinline__ real pt(const A &a, real c, real xm, real xp, real ym, real yp, real zm, real zp)
{ return a.cc * c + a.cx * (xm + xp) + a.cy * (ym + yp) + a.cz * (zm + zp); }
__device__ __forceinline__ double2 ld2(const real *p) { return __ldg(reinterpret_cast<const double2 *>(p)); }

__global__ void k_base(A a) {
  int i = 1 + blockIdx.x * blockDim.x + threadIdx.x, j = 1 + blockIdx.y * blockDim.y + threadIdx.y, k = 1 + blockIdx.z;
  if (i > a.nx || j > a.ny) return;
  long long p = i + a.sx * j + a.sxy * k; const real *u = a.u;
  a.out[p] = pt(a, __ldg(u + p), __ldg(u + p - 1), __ldg(u + p + 1), __ldg(u + p - a.sx), __ldg(u + p + a.sx), __ldg(u + p - a.sxy), __ldg(u + p + a.sxy));
}

// ---- reference: the product's k_plane_v2 (copied from smem25d_h200_sweep.cu k_pairs) -----------
template <int M, int BS, int MINB> __global__ void __launch_bounds__(BS, MINB) k_pairs(A a) {
  const unsigned tid = threadIdx.x;
  const unsigned t = blockIdx.x * BS + tid;
  const int qi = (int)(t % (unsigned)a.nq);
  const int tyl = (int)(t / (unsigned)a.nq);
  const int kk = (int)blockIdx.y;
  const int ty = (int)blockIdx.z * a.tps + tyl;
  const bool live = tyl < a.tps && ty < a.nty;
  const int i0 = 2 * qi;
  const int j0 = live ? 1 + M * ty : 1;
  const int nrows = live ? min(M, a.ny - j0 + 1) : 0;
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = i0 + sx * j0 + sxy * (1 + (live ? kk : 0));
  const real *u = a.u + p0;
  double2 zm[M], c[M], zp[M], ym, yp;
  const double2 zero = {0.0, 0.0};
  ym = yp = zero;
#pragma unroll
  for (int n = 0; n < M; n++) zm[n] = c[n] = zp[n] = zero;
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) zm[n] = ld2(u - sxy + n * sx);
  if (live) ym = ld2(u - sx);
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) c[n] = ld2(u + n * sx);
  if (live) yp = ld2(u + nrows * sx);
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) zp[n] = ld2(u + sxy + n * sx);
  const int lane = (int)(tid % 32);
  const bool from_below = lane > 0 && qi > 0;
  const bool from_above = lane + 1 < 32 && qi + 1 < a.nq;
  const bool v0 = i0 >= 1 && i0 <= a.nx;
  const bool v1 = i0 + 1 >= 1 && i0 + 1 <= a.nx;
#pragma unroll
  for (int n = 0; n < M; n++) {
    real xl = __shfl_up_sync(0xffffffffu, c[n].y, 1), xh = __shfl_down_sync(0xffffffffu, c[n].x, 1);
    if (n < nrows) {
      if (!from_below && v0) xl = __ldg(u + n * sx - 1);
      if (!from_above && v1) xh = __ldg(u + n * sx + 2);
      const double2 yl = n > 0 ? c[n > 0 ? n - 1 : 0] : ym;
      const double2 yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1] : yp;
      const long long p = p0 + n * sx;
      double2 o = zero;
      if (v0) o.x = pt(a, c[n].x, xl, c[n].y, yl.x, yh.x, zm[n].x, zp[n].x);
      if (v1) o.y = pt(a, c[n].y, c[n].x, xh, yl.y, yh.y, zm[n].y, zp[n].y);
      if (v0 && v1) __stcs(reinterpret_cast<double2 *>(a.out + p), o);
      else if (v0) __stcs(a.out + p, o.x);
      else if (v1) __stcs(a.out + p + 1, o.y);
    }
  }
}

// pair store of a thread's two points (either may lie outside the box): streaming (evict-first,
// as the product) or plain stores
template <bool NT> __device__ __forceinline__ void store_pair(real *w, double2 o, bool v0, bool v1) {
  if (NT) {
    if (v0 && v1) __stcs(reinterpret_cast<double2 *>(w), o);
    else if (v0) __stcs(w, o.x);
    else if (v1) __stcs(w + 1, o.y);
  } else {
    if (v0 && v1) *reinterpret_cast<double2 *>(w) = o;
    else if (v0) *w = o.x;
    else if (v1) w[1] = o.y;
  }
}

__global__ void k_cmp(const real *x, const real *y, long long sx, long long sxy, int nx, int ny, int nz, unsigned long long *bad) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; long long n = (long long)nx * ny * nz; if (t >= n) return;
  int i = 1 + (int)(t % nx); long long r = t / nx; int j = 1 + (int)(r % ny); int k = 1 + (int)(r / ny);
  long long p = i + sx * j + sxy * k; if (__double_as_longlong(x[p]) != __double_as_longlong(y[p])) atomicAdd(bad, 1ull);
}
__global__ void k_ghost(const real *x, long long sx, long long sxy, int nx, int ny, int nz, long long N, unsigned long long *bad) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (p >= N) return;
  int i = (int)(p % sx); long long r = p / sx; int j = (int)(r % (ny + 2)); int k = (int)(r / (ny + 2));
  bool ghost = i == 0 || i == nx + 1 || j == 0 || j == ny + 1 || k == 0 || k == nz + 1;
  if (ghost && __double_as_longlong(x[p]) != -1LL) atomicAdd(bad, 1ull);
}
__global__ void k_fill(real *u, long long N) {
  long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (n >= N) return;
  unsigned long long s = (unsigned long long)n * 0x9E3779B97F4A7C15ull + 88172645463325252ull;
  s ^= s >> 31; s *= 0xBF58476D1CE4E5B9ull; s ^= s >> 27; s *= 0x94D049BB133111EBull; s ^= s >> 31;
  u[n] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
}

// ---- host harness ------------------------------------------------------------------------------
// Field (nx+2) x (ny+2) x (nz+2) doubles, x fastest: u = random input (k_fill), ref = the baseline's
// output (the bitwise reference), o = the output of the kernel under test. Command line of every
// harness: [nx ny nz [rounds]]; nx must be even (pairs: an even row pitch).
struct Harness {
  int nx = 512, ny = 512, nz = 512, rounds;
  long long sx, sxy, N;
  size_t bytes;
  real *u, *o, *ref;
  unsigned long long *bad;
  cudaDeviceProp pr;
  A a;               // the field's arguments, out = ref; copy it and set out = o for a kernel under test
  double eff;        // effective bytes: one read of every point read, one write of every interior point
  double mbw = 0;    // memcpy GB/s (read + write) of the current round
  int strips_rule;   // the product's y-strips: a plane's share of L2 at most 1/8
  int nmis = 0;      // configurations that failed their check
  cudaEvent_t e0, e1;

  Harness(int argc, char **argv, int default_rounds) : rounds(argc > 4 ? atoi(argv[4]) : default_rounds) {
    if (argc > 3) { nx = atoi(argv[1]); ny = atoi(argv[2]); nz = atoi(argv[3]); }
    sx = nx + 2; sxy = sx * (ny + 2); N = sxy * (nz + 2);
    if (sx % 2) { printf("need even nx\n"); exit(1); }
    bytes = N * sizeof(real);
    CK(cudaMalloc(&u, bytes)); CK(cudaMalloc(&o, bytes)); CK(cudaMalloc(&ref, bytes)); CK(cudaMalloc(&bad, 8));
    k_fill<<<(unsigned)((N + 255) / 256), 256>>>(u, N); CK(cudaDeviceSynchronize());
    CK(cudaGetDeviceProperties(&pr, 0));
    a = A{u, ref, sx, sxy, nx, ny, nz, nz, 0.5, 0.1, 0.2, 0.15, 0, 0, 0, 0, 0};
    const double plane = (double)sx * (ny + 2) * sizeof(real), share = pr.l2CacheSize / 8.0;
    strips_rule = (int)((plane + share - 1) / share); if (strips_rule < 1) strips_rule = 1;
    const double rd = (double)N - 8 - 4.0 * (nx + ny + nz), wr = (double)nx * ny * nz;
    eff = (rd + wr) * sizeof(real);
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    dim3 b(256, 1), g((nx + 255) / 256, ny, nz); k_base<<<g, b>>>(a); CK(cudaDeviceSynchronize());
  }
  // median of 20 launches after 2 warm-ups, events around each
  template <class F> double timeit(F launch) {
    std::vector<float> t;
    for (int r = 0; r < 22; r++) {
      CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 2) t.push_back(ms);
    }
    CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return (double)t[t.size() / 2];
  }
  // the reference of the round: device-to-device memcpy of the field
  void memcpy_round(int round) {
    const double tm = timeit([&] { CK(cudaMemcpyAsync(o, u, bytes, cudaMemcpyDeviceToDevice)); });
    mbw = 2.0 * bytes / tm / 1e6;
    printf("-- round %d: memcpy %.0f GB/s (%.4f ms)\n", round + 1, mbw, tm);
  }
  double gbs(double ms) const { return eff / ms / 1e6; }
  double pct(double ms) const { return 100 * gbs(ms) / mbw; }
  // o against ref (what = 1) or against the input u (what = 2: a copy), ghosts untouched (0xff);
  // writes the verdict into st and counts a failure
  void check(int what, char *st, size_t len) {
    unsigned long long nb = 0, ng = 0; const long long n = (long long)nx * ny * nz;
    CK(cudaMemset(bad, 0, 8)); k_cmp<<<(unsigned)((n + 255) / 256), 256>>>(o, what == 2 ? u : ref, sx, sxy, nx, ny, nz, bad); CK(cudaMemcpy(&nb, bad, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemset(bad, 0, 8)); k_ghost<<<(unsigned)((N + 255) / 256), 256>>>(o, sx, sxy, nx, ny, nz, N, bad); CK(cudaMemcpy(&ng, bad, 8, cudaMemcpyDeviceToHost));
    if (nb || ng) { snprintf(st, len, "MISMATCH %llu interior, %llu ghost", nb, ng); nmis++; }
    else snprintf(st, len, what == 2 ? "copy ok" : "bitwise ok");
  }
  // the product's pairs m=2 on o: arguments (nq pairs per row, y-tiles, tiles per strip) and grid
  A pairs_args(dim3 &grid) const {
    A b = a; b.out = o;
    b.nq = (int)((sx + 1) / 2); b.nty = (ny + 1) / 2; int strips = std::min(strips_rule, b.nty);
    b.tps = (b.nty + strips - 1) / strips; strips = (b.nty + b.tps - 1) / b.tps;
    grid = dim3((unsigned)(((long long)b.nq * b.tps + 255) / 256), (unsigned)nz, (unsigned)strips);
    return b;
  }
  int finish(const char *all_ok) const {
    printf("%s\n", nmis ? "SOME VARIANTS MISMATCH" : all_ok);
    return nmis ? 2 : 0;
  }
};
