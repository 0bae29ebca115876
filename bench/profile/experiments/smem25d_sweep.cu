// zexp.cu - exploration of z-marching stencil schedules for issue 3 (not part of the build)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <string>
typedef double real;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
struct A { const real *u; real *out; long long sx, sxy; int nx, ny, nz; int chunk; real cc, cx, cy, cz; };
__device__ __forceinline__ real pt(const A &a, real c, real xm, real xp, real ym, real yp, real zm, real zp)
{ return a.cc * c + a.cx * (xm + xp) + a.cy * (ym + yp) + a.cz * (zm + zp); }
template <bool NT> __device__ __forceinline__ void st(real *p, real v) { if (NT) __stcs(p, v); else *p = v; }

__global__ void k_base(A a) {
  int i = 1 + blockIdx.x * blockDim.x + threadIdx.x, j = 1 + blockIdx.y * blockDim.y + threadIdx.y, k = 1 + blockIdx.z;
  if (i > a.nx || j > a.ny) return;
  long long p = i + a.sx * j + a.sxy * k; const real *u = a.u;
  a.out[p] = pt(a, __ldg(u + p), __ldg(u + p - 1), __ldg(u + p + 1), __ldg(u + p - a.sx), __ldg(u + p + a.sx), __ldg(u + p - a.sxy), __ldg(u + p + a.sxy));
}
// simple z-march, D planes loaded ahead in registers (D >= 1)
template <int D, bool NT, bool LDG> __global__ void __launch_bounds__(512) k_zs(A a) {
  int i = 1 + blockIdx.x * blockDim.x + threadIdx.x, j = 1 + blockIdx.y * blockDim.y + threadIdx.y;
  int k0 = 1 + blockIdx.z * a.chunk; if (i > a.nx || j > a.ny || k0 > a.nz) return;
  int k1 = min(a.nz, k0 + a.chunk - 1);
  const real *u = a.u; long long p = i + a.sx * j + a.sxy * k0; const long long sxy = a.sxy, sx = a.sx;
  real zm = __ldg(u + p - sxy), c = __ldg(u + p), q[D];
#pragma unroll
  for (int d = 0; d < D; d++) q[d] = (k0 + 1 + d <= a.nz + 1) ? __ldg(u + p + (1 + d) * sxy) : 0;
  for (int k = k0; k <= k1; k++) {
    real fresh = (k + 1 + D <= a.nz + 1 && k + 1 + D <= k1 + 1) ? __ldg(u + p + (1 + D) * sxy) : 0;
    real xm, xp, ym, yp;
    if (LDG) { ym = __ldg(u + p - sx); xm = __ldg(u + p - 1); xp = __ldg(u + p + 1); yp = __ldg(u + p + sx); }
    else { ym = u[p - sx]; xm = u[p - 1]; xp = u[p + 1]; yp = u[p + sx]; }
    st<NT>(a.out + p, pt(a, c, xm, xp, ym, yp, zm, q[0]));
    zm = c; c = q[0];
#pragma unroll
    for (int d = 0; d + 1 < D; d++) q[d] = q[d + 1];
    q[D - 1] = fresh;
    p += sxy;
  }
}
// 2.5D shared-memory tile: block BX x BY, plane tile with halo in smem
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
  // halo role: x halo for tx==0 / tx==BX-1 (or last valid), y halo for ty==0 / ty==BY-1
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

__global__ void k_cmp(const real *x, const real *y, long long sx, long long sxy, int nx, int ny, int nz, unsigned long long *bad) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; long long n = (long long)nx * ny * nz; if (t >= n) return;
  int i = 1 + (int)(t % nx); long long r = t / nx; int j = 1 + (int)(r % ny); int k = 1 + (int)(r / ny);
  long long p = i + sx * j + sxy * k; if (__double_as_longlong(x[p]) != __double_as_longlong(y[p])) atomicAdd(bad, 1ull);
}
int main(int argc, char **argv) {
  int nx = 512, ny = 512, nz = 512; if (argc > 3) { nx = atoi(argv[1]); ny = atoi(argv[2]); nz = atoi(argv[3]); }
  long long sx = nx + 2, sxy = sx * (ny + 2), N = sxy * (nz + 2);
  size_t bytes = N * sizeof(real);
  real *u, *o, *ref; CK(cudaMalloc(&u, bytes)); CK(cudaMalloc(&o, bytes)); CK(cudaMalloc(&ref, bytes));
  std::vector<real> h(N); unsigned long long s = 88172645463325252ull;
  for (long long n = 0; n < N; n++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; h[n] = (double)(s >> 11) / 9007199254740992.0 - 0.5; }
  CK(cudaMemcpy(u, h.data(), bytes, cudaMemcpyHostToDevice));
  cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
  A a{u, ref, sx, sxy, nx, ny, nz, nz, 0.5, 0.1, 0.2, 0.15};
  double rd = (double)N - 8 - 4.0 * (nx + ny + nz), wr = (double)nx * ny * nz;
  double eff_bytes = (rd + wr) * sizeof(real);
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto timeit = [&](auto launch) { std::vector<float> t; for (int r = 0; r < 22; r++) { CK(cudaEventRecord(e0)); launch(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 2) t.push_back(ms); } CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return (double)t[t.size() / 2]; };
  double tm = timeit([&] { CK(cudaMemcpyAsync(o, u, bytes, cudaMemcpyDeviceToDevice)); });
  double mbw = 2.0 * bytes / tm / 1e6;
  printf("device %s, %dx%dx%d double, memcpy %.0f GB/s (%.3f ms)\n", pr.name, nx, ny, nz, mbw, tm);
  { dim3 b(256, 1), g((nx + 255) / 256, ny, nz); double t = timeit([&] { k_base<<<g, b>>>(a); });
    printf("%-34s %.3f ms %6.0f GB/s %5.1f%%\n", "baseline 256x1", t, eff_bytes / t / 1e6, 100 * eff_bytes / t / 1e6 / mbw); }
  CK(cudaDeviceSynchronize());
  unsigned long long *dbad; CK(cudaMalloc(&dbad, 8));
  auto check = [&](const char *name, double t) {
    unsigned long long bad = 0; CK(cudaMemset(dbad, 0, 8)); long long n = (long long)nx * ny * nz; k_cmp<<<(n + 255) / 256, 256>>>(o, ref, sx, sxy, nx, ny, nz, dbad); CK(cudaMemcpy(&bad, dbad, 8, cudaMemcpyDeviceToHost));
    printf("%-34s %.3f ms %6.0f GB/s %5.1f%% %s\n", name, t, eff_bytes / t / 1e6, 100 * eff_bytes / t / 1e6 / mbw, bad ? "MISMATCH" : "ok"); fflush(stdout); };
  A b = a; b.out = o;
  int shapes[][2] = {{32, 8}, {64, 4}, {128, 2}, {256, 1}, {32, 4}, {64, 2}, {32, 16}, {64, 8}, {128, 4}};
  int chunks[] = {1, 4, 16, 32, 64};
#define ZS(D, NT, LDG) do { for (auto &sh : shapes) for (int ch : chunks) { b.chunk = (nz + ch - 1) / ch; dim3 bl(sh[0], sh[1]), g((nx + sh[0] - 1) / sh[0], (ny + sh[1] - 1) / sh[1], ch); \
   CK(cudaMemset(o, 0xff, bytes)); double t = timeit([&] { k_zs<D, NT, LDG><<<g, bl>>>(b); }); char nm[80]; snprintf(nm, 80, "zs D=%d nt=%d ldg=%d %dx%d ch=%d", D, NT, LDG, sh[0], sh[1], ch); check(nm, t);} } while (0)

#define SM(BX, BY, D) do { for (int ch : chunks) { b.chunk = (nz + ch - 1) / ch; dim3 bl(BX, BY), g((nx + BX - 1) / BX, (ny + BY - 1) / BY, ch); \
   CK(cudaMemset(o, 0xff, bytes)); double t = timeit([&] { k_sm<BX, BY, D, true><<<g, bl>>>(b); }); char nm[80]; snprintf(nm, 80, "sm D=%d %dx%d ch=%d", D, BX, BY, ch); check(nm, t);} } while (0)
  SM(32, 8, 1); SM(32, 8, 2); SM(64, 4, 1); SM(64, 4, 2); SM(32, 16, 1); SM(32, 16, 2); SM(64, 8, 2); SM(128, 4, 2);
  return 0;
}
