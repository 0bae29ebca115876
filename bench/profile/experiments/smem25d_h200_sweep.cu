// smem25d_h200_sweep.cu - issue 3 experiment: the 2.5D shared-memory kernel of smem25d_sweep.cu
// (z-marching, plane tile + halo in shared memory, z-1 / z / z+1 .. z+D in a register queue)
// against the product's pairs m=2 kernel (k_plane_v2) in the SAME run, for the H200 question:
// does loading each point ~1.x times from L2 (2.5D) instead of ~4 times (pairs) pay on the H200?
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false smem25d_h200_sweep.cu -o s && ./s [nx ny nz]
//
// Field: random doubles, one ghost layer, row pitch sx = nx+2 (as the other harnesses). Every
// stencil variant's interior is compared bitwise with the baseline kernel (one point per thread)
// on the device, and its ghost cells must be untouched (0xff fill). Timing: median of 20
// launches after 2 warm-ups (events around each), % of a device-to-device memcpy of the field
// measured at the start of the round. Two rounds per run.
// References: "pairs" m=2 bs=256 lb=4 = the product default k_plane_v2 (copied from
// quads_sweep.cu, hint set H0 = all ld.global.nc: 32-bit math, plane in grid.y, y-strips when a
// plane exceeds L2/8), timed at the start and the end of each round; "p2ref" = k_p2<2, shuffled>
// of pairs_sweep.cu.
// 2.5D: "sm" = k_sm of smem25d_sweep.cu unchanged (two __syncthreads per plane), D = register
// queue depth (planes loaded ahead), ch = z chunks (grid.z); "sm2" = the same with a double-
// buffered tile (one __syncthreads per plane). Shapes: 64x4 (best on the H100), 32x8, 128x4.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
typedef double real;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
struct A { const real *u; real *out; long long sx, sxy; int nx, ny, nz; int chunk; real cc, cx, cy, cz; int qlo, nq, nty; int tps; };
__device__ __forceinline__ real pt(const A &a, real c, real xm, real xp, real ym, real yp, real zm, real zp)
{ return a.cc * c + a.cx * (xm + xp) + a.cy * (ym + yp) + a.cz * (zm + zp); }
__device__ __forceinline__ double2 ld2(const real *p) { return __ldg(reinterpret_cast<const double2 *>(p)); }
template <bool NT> __device__ __forceinline__ void st(real *p, real v) { if (NT) __stcs(p, v); else *p = v; }

__global__ void k_base(A a) {
  int i = 1 + blockIdx.x * blockDim.x + threadIdx.x, j = 1 + blockIdx.y * blockDim.y + threadIdx.y, k = 1 + blockIdx.z;
  if (i > a.nx || j > a.ny) return;
  long long p = i + a.sx * j + a.sxy * k; const real *u = a.u;
  a.out[p] = pt(a, __ldg(u + p), __ldg(u + p - 1), __ldg(u + p + 1), __ldg(u + p - a.sx), __ldg(u + p + a.sx), __ldg(u + p - a.sxy), __ldg(u + p + a.sxy));
}

// ---- reference 1: k_p2<2, true> of pairs_sweep.cu, unchanged (64-bit index math) ----------------
template <int M, bool SHFL> __global__ void __launch_bounds__(256) k_p2(A a) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int qi = (int)(t % a.nq); const long long r = t / a.nq; const int jt = (int)(r % a.nty); const int k = 1 + (int)(r / a.nty);
  const bool live = k <= a.nz;
  const int q = a.qlo + qi; const int i0 = 2 * q;
  const int j0 = 1 + jt * M; const int nrows = live ? min(M, a.ny - j0 + 1) : 0;
  const long long sx = a.sx, sxy = a.sxy; const long long p = i0 + sx * j0 + sxy * (live ? k : 1);
  const real *u = a.u;
  double2 zm[M], c[M], zp[M], ym, yp; real xm[M], xp[M];
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) zm[n] = ld2(u + p - sxy + n * sx);
  if (live) ym = ld2(u + p - sx);
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) c[n] = ld2(u + p + n * sx);
  if (live) yp = ld2(u + p + nrows * sx);
#pragma unroll
  for (int n = 0; n < M; n++) if (n < nrows) zp[n] = ld2(u + p + sxy + n * sx);
  const int lane = threadIdx.x & 31;
  const bool okm = SHFL && lane > 0 && qi > 0, okp = SHFL && lane < 31 && qi + 1 < a.nq;
#pragma unroll
  for (int n = 0; n < M; n++) {
    real a1 = __shfl_up_sync(0xffffffffu, c[n].y, 1), b1 = __shfl_down_sync(0xffffffffu, c[n].x, 1);
    xm[n] = okm ? a1 : 0; xp[n] = okp ? b1 : 0;
  }
  const bool v0 = i0 >= 1, v1 = i0 + 1 <= a.nx;
#pragma unroll
  for (int n = 0; n < M; n++) {
    if (n < nrows) {
      if (!okm && v0) xm[n] = __ldg(u + p + n * sx - 1);
      if (!okp && v1) xp[n] = __ldg(u + p + n * sx + 2);
      const real yl0 = n > 0 ? c[n > 0 ? n - 1 : 0].x : ym.x, yl1 = n > 0 ? c[n > 0 ? n - 1 : 0].y : ym.y;
      const real yh0 = n + 1 < nrows ? c[n + 1 < M ? n + 1 : 0].x : yp.x, yh1 = n + 1 < nrows ? c[n + 1 < M ? n + 1 : 0].y : yp.y;
      double2 o;
      o.x = pt(a, c[n].x, xm[n], c[n].y, yl0, yh0, zm[n].x, zp[n].x);
      o.y = pt(a, c[n].y, c[n].x, xp[n], yl1, yh1, zm[n].y, zp[n].y);
      real *w = a.out + p + n * sx;
      if (v0 && v1) __stcs(reinterpret_cast<double2 *>(w), o);
      else if (v0) __stcs(w, o.x);
      else if (v1) __stcs(w + 1, o.y);
    }
  }
}

// ---- reference 2: the product's k_plane_v2 (copy of quads_sweep.cu k_pairs, hint set H0) --------
// grid (threads of one y-strip of one plane, plane, strip); nq = pairs per row, tps = y-tiles per
// strip; 32-bit index math; 4 blocks of 256 (64 registers) as the product.
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

// ---- 2.5D shared-memory tile: k_sm of smem25d_sweep.cu, unchanged -------------------------------
template <int BX, int BY, int D, bool NT> __global__ void __launch_bounds__(BX * BY) k_sm(A a) {
  __shared__ real t[BY + 2][BX + 2];
  const int tx = threadIdx.x, ty = threadIdx.y;
  int i = 1 + blockIdx.x * BX + tx, j = 1 + blockIdx.y * BY + ty;
  int k0 = 1 + blockIdx.z * a.chunk; int k1 = min(a.nz, k0 + a.chunk - 1);
  const bool in = i <= a.nx && j <= a.ny;
  const int ic = min(i, a.nx + 1), jc = min(j, a.ny + 1);
  const real *u = a.u; const long long sxy = a.sxy, sx = a.sx;
  long long p = ic + sx * jc + sxy * k0;
  real zm = __ldg(u + p - sxy), c = __ldg(u + p), q[D];
#pragma unroll
  for (int d = 0; d < D; d++) q[d] = (k0 + 1 + d <= a.nz + 1) ? __ldg(u + p + (1 + d) * sxy) : 0;
  for (int k = k0; k <= k1; k++) {
    real fresh = (k + 1 + D <= k1 + 1) ? __ldg(u + p + (1 + D) * sxy) : 0;
    real hxl = 0, hxr = 0, hyl = 0, hyr = 0;
    if (tx == 0) hxl = __ldg(u + p - 1);
    if (tx == BX - 1 || i == a.nx) hxr = __ldg(u + p + 1);
    if (ty == 0) hyl = __ldg(u + p - sx);
    if (ty == BY - 1 || j == a.ny) hyr = __ldg(u + p + sx);
    __syncthreads();
    t[ty + 1][tx + 1] = c;
    if (tx == 0) t[ty + 1][0] = hxl;
    if (tx == BX - 1 || i == a.nx) t[ty + 1][tx + 2] = hxr;
    if (ty == 0) t[0][tx + 1] = hyl;
    if (ty == BY - 1 || j == a.ny) t[ty + 2][tx + 1] = hyr;
    __syncthreads();
    if (in) st<NT>(a.out + p, pt(a, c, t[ty + 1][tx], t[ty + 1][tx + 2], t[ty][tx + 1], t[ty + 2][tx + 1], zm, q[0]));
    zm = c; c = q[0];
#pragma unroll
    for (int d = 0; d + 1 < D; d++) q[d] = q[d + 1];
    q[D - 1] = fresh;
    p += sxy;
  }
}
// ---- the same, double-buffered tile: one __syncthreads per plane ---------------------------------
// plane k is written to buffer k&1; a buffer is rewritten two planes later, after the barrier of
// the plane in between, which every reader of its previous contents has passed
template <int BX, int BY, int D> __global__ void __launch_bounds__(BX * BY) k_sm2(A a) {
  __shared__ real t[2][BY + 2][BX + 2];
  const int tx = threadIdx.x, ty = threadIdx.y;
  int i = 1 + blockIdx.x * BX + tx, j = 1 + blockIdx.y * BY + ty;
  int k0 = 1 + blockIdx.z * a.chunk; int k1 = min(a.nz, k0 + a.chunk - 1);
  const bool in = i <= a.nx && j <= a.ny;
  const int ic = min(i, a.nx + 1), jc = min(j, a.ny + 1);
  const bool hx0 = tx == 0, hx1 = tx == BX - 1 || i == a.nx, hy0 = ty == 0, hy1 = ty == BY - 1 || j == a.ny;
  const real *u = a.u; const long long sxy = a.sxy, sx = a.sx;
  long long p = ic + sx * jc + sxy * k0;
  real zm = __ldg(u + p - sxy), c = __ldg(u + p), q[D];
#pragma unroll
  for (int d = 0; d < D; d++) q[d] = (k0 + 1 + d <= a.nz + 1) ? __ldg(u + p + (1 + d) * sxy) : 0;
  int b = 0;
  for (int k = k0; k <= k1; k++) {
    real fresh = (k + 1 + D <= k1 + 1) ? __ldg(u + p + (1 + D) * sxy) : 0;
    real (*s)[BX + 2] = t[b];
    s[ty + 1][tx + 1] = c;
    if (hx0) s[ty + 1][0] = __ldg(u + p - 1);
    if (hx1) s[ty + 1][tx + 2] = __ldg(u + p + 1);
    if (hy0) s[0][tx + 1] = __ldg(u + p - sx);
    if (hy1) s[ty + 2][tx + 1] = __ldg(u + p + sx);
    __syncthreads();
    if (in) __stcs(a.out + p, pt(a, c, s[ty + 1][tx], s[ty + 1][tx + 2], s[ty][tx + 1], s[ty + 2][tx + 1], zm, q[0]));
    zm = c; c = q[0];
#pragma unroll
    for (int d = 0; d + 1 < D; d++) q[d] = q[d + 1];
    q[D - 1] = fresh;
    p += sxy; b ^= 1;
  }
}

__global__ void k_cmp(const real *x, const real *y, long long sx, long long sxy, int nx, int ny, int nz, unsigned long long *bad) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; long long n = (long long)nx * ny * nz; if (t >= n) return;
  int i = 1 + (int)(t % nx); long long r = t / nx; int j = 1 + (int)(r % ny); int k = 1 + (int)(r / ny);
  long long p = i + sx * j + sxy * k; if (__double_as_longlong(x[p]) != __double_as_longlong(y[p])) atomicAdd(bad, 1ull);
}
// ghost cells of the output must still hold the 0xff fill
__global__ void k_ghost(const real *x, long long sx, long long sxy, int nx, int ny, int nz, long long N, unsigned long long *bad) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (p >= N) return;
  int i = (int)(p % sx); long long r = p / sx; int j = (int)(r % (ny + 2)); int k = (int)(r / (ny + 2));
  bool ghost = i == 0 || i == nx + 1 || j == 0 || j == ny + 1 || k == 0 || k == nz + 1;
  if (ghost && __double_as_longlong(x[p]) != -1LL) atomicAdd(bad, 1ull);
}

int main(int argc, char **argv) {
  int nx = 512, ny = 512, nz = 512; if (argc > 3) { nx = atoi(argv[1]); ny = atoi(argv[2]); nz = atoi(argv[3]); }
  long long sx = nx + 2, sxy = sx * (ny + 2), N = sxy * (nz + 2);
  if (sx % 2) { printf("need even nx\n"); return 1; }
  if (nz % 64) { printf("need nz a multiple of 64 (z chunks)\n"); return 1; }
  size_t bytes = N * sizeof(real);
  real *u, *o, *ref; unsigned long long *bad; CK(cudaMalloc(&u, bytes)); CK(cudaMalloc(&o, bytes)); CK(cudaMalloc(&ref, bytes)); CK(cudaMalloc(&bad, 8));
  {
    std::vector<real> h(N); unsigned long long s = 88172645463325252ull;
    for (long long n = 0; n < N; n++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; h[n] = (double)(s >> 11) / 9007199254740992.0 - 0.5; }
    CK(cudaMemcpy(u, h.data(), bytes, cudaMemcpyHostToDevice));
  }
  cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
  A a{u, ref, sx, sxy, nx, ny, nz, nz, 0.5, 0.1, 0.2, 0.15, 0, 0, 0, 0};
  const double plane = (double)sx * (ny + 2) * sizeof(real), share = pr.l2CacheSize / 8.0;
  int strips_rule = (int)((plane + share - 1) / share); if (strips_rule < 1) strips_rule = 1;
  double rd = (double)N - 8 - 4.0 * (nx + ny + nz), wr = (double)nx * ny * nz, eff = (rd + wr) * sizeof(real);
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto timeit = [&](auto launch) { std::vector<float> t; for (int r = 0; r < 22; r++) { CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 2) t.push_back(ms); } CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return (double)t[t.size() / 2]; };
  { dim3 b(256, 1), g((nx + 255) / 256, ny, nz); k_base<<<g, b>>>(a); CK(cudaDeviceSynchronize()); }
  printf("device %s (%d SMs, L2 %d MB), %dx%dx%d double, pairs strips %d, effective bytes %.1f MB\n", pr.name, pr.multiProcessorCount, pr.l2CacheSize >> 20, nx, ny, nz, strips_rule, eff / 1e6);
  int nmis = 0;
  double mbw = 0;
  auto rep = [&](const char *nm, double t, bool chk, const void *fn, int bs) {
    char st[64] = "";
    if (chk) {
      unsigned long long nb = 0, ng = 0; long long n = (long long)nx * ny * nz;
      CK(cudaMemset(bad, 0, 8)); k_cmp<<<(unsigned)((n + 255) / 256), 256>>>(o, ref, sx, sxy, nx, ny, nz, bad); CK(cudaMemcpy(&nb, bad, 8, cudaMemcpyDeviceToHost));
      CK(cudaMemset(bad, 0, 8)); k_ghost<<<(unsigned)((N + 255) / 256), 256>>>(o, sx, sxy, nx, ny, nz, N, bad); CK(cudaMemcpy(&ng, bad, 8, cudaMemcpyDeviceToHost));
      if (nb || ng) { snprintf(st, sizeof st, "MISMATCH %llu interior, %llu ghost", nb, ng); nmis++; } else snprintf(st, sizeof st, "bitwise ok");
    }
    char rs[48] = "";
    if (fn) { cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, fn)); int nb = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, bs, 0));
      snprintf(rs, sizeof rs, "%3d regs %3d spill %4d thr/SM", fa.numRegs, (int)fa.localSizeBytes, nb * bs); }
    printf("%-34s %.4f ms %6.0f GB/s %5.1f%%  %-30s %s\n", nm, t, eff / t / 1e6, 100 * eff / t / 1e6 / mbw, rs, st); fflush(stdout); };
  for (int round = 0; round < 2; round++) {
    double tm = timeit([&] { CK(cudaMemcpyAsync(o, u, bytes, cudaMemcpyDeviceToDevice)); }); mbw = 2.0 * bytes / tm / 1e6;
    printf("-- round %d: memcpy %.0f GB/s (%.4f ms)\n", round + 1, mbw, tm);
    { dim3 b(256, 1), g((nx + 255) / 256, ny, nz); double t = timeit([&] { k_base<<<g, b>>>(a); }); rep("baseline 256x1", t, false, (const void *)k_base, 256); }
    A b = a; b.out = o;
    // the product reference (k_plane_v2), grid (threads of one strip of one plane, plane, strip)
    auto pairs = [&](const char *nm) {
      b.nq = (int)((sx + 1) / 2); b.nty = (ny + 1) / 2; int strips = std::min(strips_rule, b.nty);
      b.tps = (b.nty + strips - 1) / strips; strips = (b.nty + b.tps - 1) / b.tps;
      dim3 g((unsigned)(((long long)b.nq * b.tps + 255) / 256), (unsigned)nz, (unsigned)strips);
      CK(cudaMemset(o, 0xff, bytes)); double t = timeit([&] { k_pairs<2, 256, 4><<<g, 256>>>(b); });
      rep(nm, t, true, (const void *)k_pairs<2, 256, 4>, 256); };
    pairs("pairs m=2 bs=256 lb=4 (product)");
    { b.qlo = 0; b.nq = (nx + 1) / 2 + 1; b.nty = (ny + 1) / 2; long long nt = (long long)b.nq * b.nty * nz; CK(cudaMemset(o, 0xff, bytes));
      double t = timeit([&] { k_p2<2, true><<<(unsigned)((nt + 255) / 256), 256>>>(b); }); rep("p2ref (pairs_sweep) m=2 bs=256", t, true, (const void *)k_p2<2, true>, 256); }
#define SM(BX, BY, D, ...) { for (int ch : {__VA_ARGS__}) { b.chunk = (nz + ch - 1) / ch; dim3 bl(BX, BY), g((nx + BX - 1) / BX, (ny + BY - 1) / BY, ch); \
   CK(cudaMemset(o, 0xff, bytes)); double t = timeit([&] { k_sm<BX, BY, D, true><<<g, bl>>>(b); }); char nm[64]; snprintf(nm, 64, "sm  D=%d %dx%d ch=%d", D, BX, BY, ch); \
   rep(nm, t, true, (const void *)k_sm<BX, BY, D, true>, BX * BY); } }
#define SM2(BX, BY, D, ...) { for (int ch : {__VA_ARGS__}) { b.chunk = (nz + ch - 1) / ch; dim3 bl(BX, BY), g((nx + BX - 1) / BX, (ny + BY - 1) / BY, ch); \
   CK(cudaMemset(o, 0xff, bytes)); double t = timeit([&] { k_sm2<BX, BY, D><<<g, bl>>>(b); }); char nm[64]; snprintf(nm, 64, "sm2 D=%d %dx%d ch=%d", D, BX, BY, ch); \
   rep(nm, t, true, (const void *)k_sm2<BX, BY, D>, BX * BY); } }
    SM(64, 4, 1, 8, 16, 32, 64) SM(64, 4, 2, 8, 16, 32, 64) SM(64, 4, 4, 16, 32, 64)
    SM(32, 8, 1, 16, 32, 64) SM(32, 8, 2, 16, 32, 64) SM(128, 4, 2, 16, 32, 64)
    SM2(64, 4, 1, 8, 16, 32, 64) SM2(64, 4, 2, 8, 16, 32, 64) SM2(64, 4, 4, 16, 32, 64)
    SM2(32, 8, 2, 16, 32, 64) SM2(128, 4, 2, 16, 32, 64)
    pairs("pairs m=2 bs=256 lb=4 (product, end)");
  }
  printf("%s\n", nmis ? "SOME VARIANTS MISMATCH" : "all checked variants bitwise equal to the baseline, ghosts untouched");
  return nmis ? 2 : 0;
}
