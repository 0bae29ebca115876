// zwave_sweep.cu - issue 3 experiment: z-marching in ONE resident wave, paced so that the whole
// grid stays within a few planes, against the product's pairs m=2 kernel (k_plane_v2) in the SAME
// run. Not part of the build.
//
// Why: the per-plane pair kernel reads each point ~3.8 times from L2 (H200: L2 fabric at 97.7%);
// every z-marching schedule measured so far (zmarch, smem25d, TMA) read fewer times from L2 but
// moved its DRAM stream at 65-71% of memcpy even as a bare copy. Two things those schedules had
// in common: (1) more work than one wave of resident blocks, so late blocks marched alone with a
// fraction of the GPU's loads in flight (the product's zmarch rows with zchunks=1 have 262k
// one-column threads: more than fit); (2) nothing kept the marching blocks together, so at any
// moment the DRAM saw small tiles of many different planes. A per-plane sweep touches one window
// of ~2 planes at a time. Here: every thread owns one pair column of M rows for ALL planes, the
// grid is exactly the columns of one plane and must be co-resident (cooperative launch), and with
// pacing on, no block starts group g until every block has finished group g-W (S planes a
// group): the DRAM window stays within about W*S planes, like the per-plane sweep's.
//
// Kernel k_zw<M, D, BS, SYNC, COPY>: thread t owns pair qi = t % nq (x = 2qi, 2qi+1, the ghost
// column x=0 in the first pair, as the product) of rows j0 = 1 + M*(t / nq) .. j0+M-1, and keeps
// per row the pair centres of planes k-1, k and a register queue of planes k+1 .. k+D; per plane
// it loads plane k+D+1 (the one DRAM-missing load, D+1 planes ahead), the y-1 / y+M rows of plane
// k (L2 / L1 hits: other threads' centres), takes the x neighbours from the adjacent lanes (loaded
// at warp and row edges), stores the M pairs with streaming stores. L2 loads per point: 1 + 2/M
// (the pair kernel: ~3.8). COPY stores the centre instead (the schedule's traffic ceiling).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false zwave_sweep.cu -o z && ./z [nx ny nz [rounds]]
#include "sweep_common.cuh"

struct Z { unsigned ncol; unsigned *prog; unsigned target; int S, W; };

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

template <int M, int D, int BS, bool SYNC, bool COPY> __global__ void __launch_bounds__(BS) k_zw(A a, Z z) {
  const unsigned tid = threadIdx.x, t = blockIdx.x * BS + tid;
  const int lane = (int)(tid % 32);
  const bool live = t < z.ncol;
  const int qi = (int)(t % (unsigned)a.nq), g = (int)(t / (unsigned)a.nq);
  const int i0 = 2 * qi, j0 = live ? 1 + M * g : 1;
  const int nrows = live ? min(M, a.ny - j0 + 1) : 0;
  const long long sx = a.sx, sxy = a.sxy;
  const long long p0 = i0 + sx * j0 + sxy; // plane 1
  const real *u = a.u + p0;
  const double2 zero = {0.0, 0.0};
  double2 zm[M], c[M], q[D][M];
#pragma unroll
  for (int n = 0; n < M; n++) {
    zm[n] = n < nrows ? ld2(u - sxy + n * sx) : zero;
    c[n] = n < nrows ? ld2(u + n * sx) : zero;
  }
#pragma unroll
  for (int d = 0; d < D; d++)
#pragma unroll
    for (int n = 0; n < M; n++) q[d][n] = (n < nrows && 2 + d <= a.nz + 1) ? ld2(u + (1 + d) * sxy + n * sx) : zero;
  const bool from_below = lane > 0 && qi > 0;
  const bool from_above = lane + 1 < 32 && qi + 1 < a.nq;
  const bool v0 = i0 >= 1 && i0 <= a.nx, v1 = i0 + 1 >= 1 && i0 + 1 <= a.nx;
  const int nz = a.nz;
#pragma unroll 1
  for (int k = 1; k <= nz; k++) {
    const real *uk = u + (long long)(k - 1) * sxy; // plane k of this column
    double2 fresh[M];
#pragma unroll
    for (int n = 0; n < M; n++) fresh[n] = (n < nrows && k + 1 + D <= nz + 1) ? ld2(uk + (1 + D) * sxy + n * sx) : zero;
    if (COPY) {
#pragma unroll
      for (int n = 0; n < M; n++)
        if (n < nrows) store_pair<true>(a.out + p0 + (long long)(k - 1) * sxy + n * sx, c[n], v0, v1);
    } else {
      double2 ym = zero, yp = zero;
      if (live) { ym = ld2(uk - sx); yp = ld2(uk + nrows * sx); }
#pragma unroll
      for (int n = 0; n < M; n++) {
        real xl = __shfl_up_sync(0xffffffffu, c[n].y, 1), xh = __shfl_down_sync(0xffffffffu, c[n].x, 1);
        if (n < nrows) {
          if (!from_below && v0) xl = __ldg(uk + n * sx - 1);
          if (!from_above && v1) xh = __ldg(uk + n * sx + 2);
          const double2 yl = n > 0 ? c[n > 0 ? n - 1 : 0] : ym;
          const double2 yh = n + 1 < nrows ? c[n + 1 < M ? n + 1 : M - 1] : yp;
          double2 o = zero;
          if (v0) o.x = pt(a, c[n].x, xl, c[n].y, yl.x, yh.x, zm[n].x, q[0][n].x);
          if (v1) o.y = pt(a, c[n].y, c[n].x, xh, yl.y, yh.y, zm[n].y, q[0][n].y);
          store_pair<true>(a.out + p0 + (long long)(k - 1) * sxy + n * sx, o, v0, v1);
        }
      }
    }
#pragma unroll
    for (int n = 0; n < M; n++) {
      zm[n] = c[n];
      c[n] = q[0][n];
#pragma unroll
      for (int d = 0; d + 1 < D; d++) q[d][n] = q[d + 1][n];
      q[D - 1][n] = fresh[n];
    }
    if (SYNC && k % z.S == 0) {
      // pacing: report group k/S done; wait until every block has finished group k/S - W
      __syncthreads();
      if (tid == 0) {
        const int grp = k / z.S;
        __threadfence();
        atomicAdd(z.prog + grp, 1u);
        if (grp > z.W) {
          long long tries = 0;
          while (ld_acquire(z.prog + grp - z.W) < z.target) {
            __nanosleep(64);
            if (++tries > (1LL << 26)) { printf("pacing timeout block %d group %d\n", blockIdx.x, grp); __trap(); }
          }
        }
      }
      __syncthreads();
    }
  }
}

int main(int argc, char **argv) {
  Harness h(argc, argv, 2);
  const int nz = h.nz;
  unsigned *prog; CK(cudaMalloc(&prog, (nz + 2) * sizeof(unsigned)));
  const cudaDeviceProp &pr = h.pr;
  printf("device %s (%d SMs, L2 %d MB), %dx%dx%d double, effective bytes %.1f MB\n", pr.name, pr.multiProcessorCount,
         pr.l2CacheSize >> 20, h.nx, h.ny, nz, h.eff / 1e6);
  auto rep = [&](const char *nm, double t, const void *fn, bool copy) {
    char st[64] = "(copy)";
    if (!copy) h.check(1, st, sizeof st);
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, fn));
    printf("%-44s %.4f ms %6.0f GB/s %5.1f%%  %3d regs  %s\n", nm, t, h.gbs(t), h.pct(t), fa.numRegs, st); fflush(stdout); };
  dim3 pgrid;
  const A b = h.pairs_args(pgrid); // the product's pairs m=2; its nq (pairs per row) serves the z-wave too
  auto pairs = [&](const char *nm) {
    CK(cudaMemset(h.o, 0xff, h.bytes)); double t = h.timeit([&] { k_pairs<2, 256, 4><<<pgrid, 256>>>(b); });
    rep(nm, t, (const void *)k_pairs<2, 256, 4>, false); };

  // one z-wave configuration; returns without running when the grid cannot be co-resident
  auto zrun = [&](auto kern, int M, int D, int BS, bool sync, bool copy, int S, int W) {
    Z z; z.ncol = (unsigned)(b.nq * ((h.ny + M - 1) / M)); z.prog = prog; z.S = S; z.W = W; z.target = 0;
    const int G = (int)((z.ncol + BS - 1) / BS);
    int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, BS, 0));
    char nm[96];
    snprintf(nm, sizeof nm, "%s M=%d D=%d bs=%d %s", copy ? "zcopy" : "zwave", M, D, BS,
             sync ? (S == 1 && W == 1 ? "pace1/1" : S == 1 && W == 2 ? "pace1/2" : S == 2 && W == 2 ? "pace2/2" : S == 4 && W == 2 ? "pace4/2" : "pace") : "free");
    if (G > per * pr.multiProcessorCount) {
      if (sync) { printf("%-44s skipped: %d blocks, %d resident\n", nm, G, per * pr.multiProcessorCount); return; }
      printf("  (%s: %d blocks > %d resident: more than one wave)\n", nm, G, per * pr.multiProcessorCount);
    }
    CK(cudaMemset(h.o, 0xff, h.bytes));
    CK(cudaMemset(prog, 0, (nz + 2) * sizeof(unsigned)));
    unsigned epoch = 0;
    double t = h.timeit([&] {
      epoch++;
      Z zz = z; zz.target = epoch * (unsigned)G;
      A bb = b;
      void *args[] = {(void *)&bb, (void *)&zz};
      if (sync) CK(cudaLaunchCooperativeKernel((const void *)kern, dim3(G), dim3(BS), args, 0, 0));
      else kern<<<G, BS>>>(bb, zz);
    });
    rep(nm, t, (const void *)kern, copy);
  };
#define ZW(M, D, BS) do { \
    zrun(k_zw<M, D, BS, false, false>, M, D, BS, false, false, 1, 1); \
    zrun(k_zw<M, D, BS, true, false>, M, D, BS, true, false, 1, 1); \
    zrun(k_zw<M, D, BS, true, false>, M, D, BS, true, false, 1, 2); \
    zrun(k_zw<M, D, BS, true, false>, M, D, BS, true, false, 2, 2); \
    zrun(k_zw<M, D, BS, true, false>, M, D, BS, true, false, 4, 2); } while (0)
#define ZC(M, D, BS) do { \
    zrun(k_zw<M, D, BS, false, true>, M, D, BS, false, true, 1, 1); \
    zrun(k_zw<M, D, BS, true, true>, M, D, BS, true, true, 1, 2); } while (0)
  for (int round = 0; round < h.rounds; round++) {
    h.memcpy_round(round);
    pairs("pairs m=2 (product)");
    ZC(1, 2, 128); ZC(2, 2, 128); ZC(2, 4, 128);
    ZW(1, 1, 128); ZW(1, 2, 128); ZW(1, 4, 128);
    ZW(2, 1, 128); ZW(2, 2, 128); ZW(2, 4, 128);
    ZW(2, 2, 64); ZW(2, 2, 256); ZW(2, 4, 64);
    ZW(4, 1, 128); ZW(4, 2, 128); ZW(4, 2, 64);
    pairs("pairs m=2 (product, end)");
  }
  return h.finish("all stencil variants bitwise equal to the baseline, ghosts untouched");
}
