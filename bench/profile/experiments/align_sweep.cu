// throw-away experiment harness (not committed): row alignment and FMA for the stencil kernels.
// Layout A: pitch nx+2, (0,0,0) at the allocation start (fdmini today).
// Layout B: pitch round_up(nx+2, 16), (0,0,0) at allocation + 15 doubles: every (1,j,k) 128-B aligned.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
typedef double real;
struct Args { const real *u; real *out; real cc, cx, cy, cz; long long sx, sxy; int lo[3], hi[3]; int ntx, nty, chunk, xbase; };

template <bool FMA> __device__ __forceinline__ real pt(const Args &a, real uc, real xm, real xp, real ym, real yp, real zm, real zp) {
  if (FMA) return __fma_rn(a.cz, zm + zp, __fma_rn(a.cy, ym + yp, __fma_rn(a.cx, xm + xp, __dmul_rn(a.cc, uc))));
  return __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(a.cc, uc), __dmul_rn(a.cx, xm + xp)), __dmul_rn(a.cy, ym + yp)), __dmul_rn(a.cz, zm + zp));
}
template <int V> __device__ __forceinline__ void ld(const real *p, real (&r)[V]);
template <> __device__ __forceinline__ void ld<1>(const real *p, real (&r)[1]) { r[0] = __ldg(p); }
template <> __device__ __forceinline__ void ld<2>(const real *p, real (&r)[2]) { double2 t = __ldg((const double2 *)p); r[0] = t.x; r[1] = t.y; }

// short-chunk z-marching, 2D block, R rows x V points per thread
template <int R, int V, bool FMA>
__global__ void __launch_bounds__(512) kz(const Args a) {
  const int i0 = a.xbase + V * (int)(blockIdx.x * blockDim.x + threadIdx.x);
  const int j0 = a.lo[1] + R * (int)(blockIdx.y * blockDim.y + threadIdx.y);
  const int k0 = a.lo[2] + (int)blockIdx.z * a.chunk;
  if (i0 > a.hi[0] || j0 > a.hi[1]) return;
  const int k1 = min(a.hi[2], k0 + a.chunk - 1);
  bool ok[V];
  for (int v = 0; v < V; v++) ok[v] = i0 + v >= a.lo[0] && i0 + v <= a.hi[0];
  const long long sx = a.sx, sxy = a.sxy;
  const real *u = a.u;
  long long p = i0 + sx * j0 + sxy * k0;
  real zm[R][V], c[R][V], zp[R][V];
#pragma unroll
  for (int n = 0; n < R; n++) { ld<V>(u + p - sxy + n * sx, zm[n]); ld<V>(u + p + n * sx, c[n]); }
  for (int k = k0; k <= k1; k++, p += sxy) {
#pragma unroll
    for (int n = 0; n < R; n++) ld<V>(u + p + sxy + n * sx, zp[n]);
    real ym[V], yp[V];
    ld<V>(u + p - sx, ym); ld<V>(u + p + R * sx, yp);
#pragma unroll
    for (int n = 0; n < R; n++) {
      const long long q = p + n * sx;
      const real xlo = ok[0] ? __ldg(u + q - 1) : 0, xhi = ok[V - 1] ? __ldg(u + q + V) : 0;
      real o[V];
#pragma unroll
      for (int v = 0; v < V; v++) {
        real xl = v > 0 ? c[n][v > 0 ? v - 1 : 0] : xlo, xh = v + 1 < V ? c[n][v + 1 < V ? v + 1 : V - 1] : xhi;
        real yl = n > 0 ? c[n > 0 ? n - 1 : 0][v] : ym[v], yh = n + 1 < R ? c[n + 1 < R ? n + 1 : R - 1][v] : yp[v];
        o[v] = pt<FMA>(a, c[n][v], xl, xh, yl, yh, zm[n][v], zp[n][v]);
      }
      if (V == 2 && ok[0] && ok[V - 1]) *(double2 *)(a.out + q) = make_double2(o[0], o[V - 1]);
      else for (int v = 0; v < V; v++) if (ok[v]) a.out[q + v] = o[v];
    }
#pragma unroll
    for (int n = 0; n < R; n++)
#pragma unroll
      for (int v = 0; v < V; v++) { zm[n][v] = c[n][v]; c[n][v] = zp[n][v]; }
  }
}

// per-plane pairs (fdmini's k_plane_v2 schedule, M rows, linear threads along x), NT stores
template <int M, bool FMA>
__global__ void __launch_bounds__(256, M <= 2 ? 4 : 1) kp(const Args a) {
  const unsigned tid = threadIdx.x;
  const unsigned t = blockIdx.x * blockDim.x + tid;
  const int qi = (int)(t % (unsigned)a.ntx), ty = (int)(t / (unsigned)a.ntx);
  const int kk = blockIdx.y;
  const bool live = ty < a.nty;
  const int i0 = a.xbase + 2 * qi, j0 = live ? a.lo[1] + M * ty : a.lo[1];
  const int nrows = live ? min(M, a.hi[1] - j0 + 1) : 0;
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = i0 + sx * j0 + sxy * (a.lo[2] + kk);
  const real *u = a.u + p0;
  double2 zm[M], c[M], zp[M], ym = {0, 0}, yp = {0, 0};
  const double2 zero = {0, 0};
  for (int n = 0; n < M; n++) zm[n] = c[n] = zp[n] = zero;
  for (int n = 0; n < M; n++) if (n < nrows) zm[n] = __ldg((const double2 *)(u - sxy + n * sx));
  if (live) ym = __ldg((const double2 *)(u - sx));
  for (int n = 0; n < M; n++) if (n < nrows) c[n] = __ldg((const double2 *)(u + n * sx));
  if (live) yp = __ldg((const double2 *)(u + nrows * sx));
  for (int n = 0; n < M; n++) if (n < nrows) zp[n] = __ldg((const double2 *)(u + sxy + n * sx));
  const int lane = tid % 32;
  const bool fb = lane > 0 && qi > 0, fa = lane < 31 && qi + 1 < a.ntx;
  const bool v0 = i0 >= a.lo[0] && i0 <= a.hi[0], v1 = i0 + 1 >= a.lo[0] && i0 + 1 <= a.hi[0];
#pragma unroll
  for (int n = 0; n < M; n++) {
    real xl = __shfl_up_sync(~0u, c[n].y, 1), xh = __shfl_down_sync(~0u, c[n].x, 1);
    if (n < nrows) {
      if (!fb && v0) xl = __ldg(u + n * sx - 1);
      if (!fa && v1) xh = __ldg(u + n * sx + 2);
      double2 yl = n > 0 ? c[n > 0 ? n - 1 : 0] : ym, yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1] : yp;
      double2 o = zero;
      if (v0) o.x = pt<FMA>(a, c[n].x, xl, c[n].y, yl.x, yh.x, zm[n].x, zp[n].x);
      if (v1) o.y = pt<FMA>(a, c[n].y, c[n].x, xh, yl.y, yh.y, zm[n].y, zp[n].y);
      real *q = a.out + p0 + n * sx;
      if (v0 && v1) __stcs((double2 *)q, o); else if (v0) __stcs(q, o.x); else if (v1) __stcs(q + 1, o.y);
    }
  }
}

__global__ void kfill(real *p, size_t n) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) { uint64_t x = i * 0x9e3779b97f4a7c15ull; x ^= x >> 29; p[i] = (double)(x % 1000003) * 1e-6; } }

struct Layout { long long sx, sxy; long long origin; size_t elems; };
static Layout layout(int nx, int ny, int nz, int pad) {
  Layout L; L.sx = pad ? ((nx + 2 + 15) / 16) * 16 : nx + 2; L.sxy = L.sx * (ny + 2); L.origin = pad ? 15 : 0;
  L.elems = (size_t)L.origin + (size_t)L.sxy * (nz + 2) + 32; return L;
}

int main(int argc, char **argv) {
  int reps = 15;
  (void)argv;
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("# %s\n", prop.name);
  int sizes[2][3] = {{512, 512, 512}, {1024, 1024, 512}};
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int si = 0; si < (argc > 1 ? 1 : 2); si++) {
    const int nx = sizes[si][0], ny = sizes[si][1], nz = sizes[si][2];
    for (int pad = 0; pad <= 1; pad++) {
      Layout L = layout(nx, ny, nz, pad);
      real *ub, *ob, *rb; CK(cudaMalloc(&ub, L.elems * 8)); CK(cudaMalloc(&ob, L.elems * 8)); CK(cudaMalloc(&rb, L.elems * 8));
      kfill<<<(L.elems + 255) / 256, 256>>>(ub, L.elems); CK(cudaDeviceSynchronize());
      const real *u = ub + L.origin; real *out = ob + L.origin, *ref = rb + L.origin;
      // memcpy of the field
      size_t fb = (size_t)L.sxy * (nz + 2) * 8;
      std::vector<float> t(reps);
      for (int r = 0; r < 3; r++) CK(cudaMemcpyAsync(ob, ub, fb, cudaMemcpyDeviceToDevice));
      for (int r = 0; r < reps; r++) { cudaEventRecord(e0); cudaMemcpyAsync(ob, ub, fb, cudaMemcpyDeviceToDevice); cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&t[r], e0, e1); }
      std::sort(t.begin(), t.end());
      const double mc = 2.0 * fb / (t[reps / 2] * 1e6);
      // fdmini-style effective bytes: interior + faces read, interior written (pitch-independent)
      const double eff = ((double)(nx + 2) * (ny + 2) * (nz + 2) - 8 - 4.0 * (nx + ny + nz) + (double)nx * ny * nz) * 8;
      printf("\n## %dx%dx%d layout %s (sx %lld, origin %lld): memcpy %.1f GB/s\n", nx, ny, nz, pad ? "B aligned" : "A", L.sx, L.origin, mc);
      Args a; a.u = u; a.cc = -6.1; a.cx = 1.01; a.cy = 0.99; a.cz = 1.02; a.sx = L.sx; a.sxy = L.sxy;
      a.lo[0] = a.lo[1] = a.lo[2] = 1; a.hi[0] = nx; a.hi[1] = ny; a.hi[2] = nz;
      // the first aligned pair start: address parity
      const int pair_x = (int)((L.origin) % 2 == 0 ? 0 : 1);
      auto run = [&](const char *name, auto launch, bool check, bool isref) {
        a.out = isref ? ref : out;
        for (int r = 0; r < 2; r++) launch();
        CK(cudaGetLastError());
        for (int r = 0; r < reps; r++) { cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&t[r], e0, e1); }
        CK(cudaDeviceSynchronize());
        std::sort(t.begin(), t.end());
        double ms = t[reps / 2], gbs = eff / (ms * 1e6);
        const char *chk = "";
        if (check) {
          std::vector<real> h1(L.elems), h2(L.elems);
          CK(cudaMemcpy(h1.data(), rb, L.elems * 8, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(h2.data(), ob, L.elems * 8, cudaMemcpyDeviceToHost));
          long bad = 0;
          for (int k = 1; k <= nz; k++) for (int j = 1; j <= ny; j++) for (int i = 1; i <= nx; i++) { size_t q = L.origin + i + L.sx * j + L.sxy * k; bad += h1[q] != h2[q]; }
          chk = bad ? " MISMATCH" : " ok";
        }
        printf("%-44s %8.4f ms %8.1f GB/s %6.1f%%%s\n", name, ms, gbs, 100 * gbs / mc, chk);
      };
      // reference: pairs m=2 no fma
      for (int fma = 0; fma <= 1; fma++) {
        char nm[96];
        a.xbase = pair_x; a.ntx = (nx - pair_x) / 2 + 1; 
        for (int m : {2, 4}) {
          a.nty = (ny + m - 1) / m;
          const long long thr = (long long)a.ntx * a.nty; dim3 g((unsigned)((thr + 255) / 256), nz);
          snprintf(nm, sizeof nm, "plane pairs m=%d fma=%d", m, fma);
          auto L1 = [&]() { if (m == 2) { if (fma) kp<2, true><<<g, 256>>>(a); else kp<2, false><<<g, 256>>>(a); } else { if (fma) kp<4, true><<<g, 256>>>(a); else kp<4, false><<<g, 256>>>(a); } };
          run(nm, L1, si == 0 && !(m == 2 && fma == 0), m == 2 && fma == 0);
        }
        for (int R = 1; R <= 2; R++) for (int V = 1; V <= 2; V++) for (int bs = 0; bs < 2; bs++) for (int ch : {2, 4, 8, 16}) {
          const int bx = bs ? 32 : 64, by = bs ? 8 : 4;
          a.xbase = V == 2 ? pair_x : 1; a.chunk = ch;
          dim3 blk(bx, by), g((unsigned)((nx - a.xbase + 1 + V * bx - 1) / (V * bx)), (unsigned)((ny + R * by - 1) / (R * by)), (unsigned)((nz + ch - 1) / ch));
          snprintf(nm, sizeof nm, "zmarch R=%d V=%d %dx%d chunk=%d fma=%d", R, V, bx, by, ch, fma);
          auto L2 = [&]() {
#define KZ(r, v) if (R == r && V == v) { if (fma) kz<r, v, true><<<g, blk>>>(a); else kz<r, v, false><<<g, blk>>>(a); }
            KZ(1, 1) KZ(1, 2) KZ(2, 1) KZ(2, 2)
          };
          run(nm, L2, fma == 0 && si == 0 && ch == 4, false);
        }
      }
      CK(cudaFree(ub)); CK(cudaFree(ob)); CK(cudaFree(rb));
    }
  }
  return 0;
}
