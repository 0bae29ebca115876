// pairs_persist_sweep.cu - issue 3 experiment (H100 gap to 97%): two instruction- and launch-
// side changes to the product's pairs m=2 kernel (k_plane_v2), timed against it in the SAME run:
//   md       the per-thread t % nq and t / nq (32-bit divisions by a run-time value: ~20
//            instructions each) replaced by a multiply-high with a precomputed reciprocal
//            (exact: t * (m*nq - 2^32) < 2^32 is checked on the host);
//   persist  a persistent grid (resident blocks x SMs, or x2/x4) looping over the product's
//            virtual blocks in launch order, instead of ~131k short blocks of 1024 points;
//   st       plain stores instead of the streaming (evict-first) __stcs;
// and their combinations. Every variant is checked bitwise against a baseline kernel on the
// device with untouched ghosts (0xff fill); median of 20 launches after 2 warm-ups, % of a
// device-to-device memcpy of the field measured at the start of each round.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false pairs_persist_sweep.cu -o p && ./p [nx ny nz [rounds]]
#include "sweep_common.cuh"

// ---- variants of k_pairs: MD = magic division, PERSIST = grid-stride over virtual blocks, NT =
// streaming stores. Virtual block v = (x chunk, plane, strip) in launch order: v = xc + bx2*(kk +
// nz*strip); a.nq pairs per row, a.tps y-tiles per strip, a.ntx = bx2 (x chunks per plane).
struct P { unsigned mq; int bx2, nvb; };
template <int M, bool MD, bool PERSIST, bool NT> __global__ void __launch_bounds__(256, 4) k_var(A a, P g) {
  const unsigned tid = threadIdx.x;
  const int lane = (int)(tid % 32);
  for (int v = PERSIST ? (int)blockIdx.x : 0; PERSIST ? v < g.nvb : v < 1; v += PERSIST ? (int)gridDim.x : 1) {
    unsigned xc, kk, strip;
    if (PERSIST) { xc = (unsigned)v % (unsigned)g.bx2; unsigned r = (unsigned)v / (unsigned)g.bx2; kk = r % (unsigned)a.nz; strip = r / (unsigned)a.nz; }
    else { xc = blockIdx.x; kk = blockIdx.y; strip = blockIdx.z; }
    const unsigned t = xc * 256 + tid;
    unsigned tyl_u, qi_u;
    if (MD) { tyl_u = __umulhi(t, g.mq); qi_u = t - tyl_u * (unsigned)a.nq; }
    else { qi_u = t % (unsigned)a.nq; tyl_u = t / (unsigned)a.nq; }
    const int qi = (int)qi_u, tyl = (int)tyl_u;
    const int ty = (int)strip * a.tps + tyl;
    const bool live = tyl < a.tps && ty < a.nty;
    const int i0 = 2 * qi;
    const int j0 = live ? 1 + M * ty : 1;
    const int nrows = live ? min(M, a.ny - j0 + 1) : 0;
    const long long sx = a.sx, sxy = a.sxy;
    const long long p0 = i0 + sx * j0 + sxy * (1 + (live ? (int)kk : 0));
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
        store_pair<NT>(a.out + p, o, v0, v1);
      }
    }
  }
}

int main(int argc, char **argv) {
  Harness h(argc, argv, 3);
  const cudaDeviceProp &pr = h.pr;
  printf("device %s (%d SMs, L2 %d MB), %dx%dx%d double, pairs strips %d, effective bytes %.1f MB\n", pr.name, pr.multiProcessorCount,
         pr.l2CacheSize >> 20, h.nx, h.ny, h.nz, h.strips_rule, h.eff / 1e6);
  auto rep = [&](const char *nm, double t, const void *fn) {
    char st[64]; h.check(1, st, sizeof st);
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, fn));
    printf("%-34s %.4f ms %6.0f GB/s %5.1f%%  %3d regs  %s\n", nm, t, h.gbs(t), h.pct(t), fa.numRegs, st); fflush(stdout); };
  dim3 grid;
  const A b = h.pairs_args(grid);
  const int bx2 = (int)grid.x, strips = (int)grid.z;
  P g; g.bx2 = bx2; g.nvb = bx2 * h.nz * strips;
  g.mq = (unsigned)((((unsigned long long)1 << 32) + b.nq - 1) / b.nq);
  const unsigned long long tmax = (unsigned long long)bx2 * 256, err = (unsigned long long)g.mq * b.nq - ((unsigned long long)1 << 32);
  if (tmax * err >= ((unsigned long long)1 << 32)) { printf("magic division not exact for t < %llu (nq %d)\n", tmax, b.nq); return 1; }
  int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k_var<2, true, true, true>, 256, 0));
  const int res = per * pr.multiProcessorCount;
  printf("virtual blocks %d, resident %d (%d per SM)\n", g.nvb, res, per);
  for (int round = 0; round < h.rounds; round++) {
    h.memcpy_round(round);
#define RUN(NAME, LAUNCH, FN) { CK(cudaMemset(h.o, 0xff, h.bytes)); double t = h.timeit([&] { LAUNCH; }); rep(NAME, t, (const void *)FN); }
    RUN("pairs m=2 (product)", (k_pairs<2, 256, 4><<<grid, 256>>>(b)), (k_pairs<2, 256, 4>))
    RUN("var: as product", (k_var<2, false, false, true><<<grid, 256>>>(b, g)), (k_var<2, false, false, true>))
    RUN("var: md", (k_var<2, true, false, true><<<grid, 256>>>(b, g)), (k_var<2, true, false, true>))
    RUN("var: st (plain stores)", (k_var<2, false, false, false><<<grid, 256>>>(b, g)), (k_var<2, false, false, false>))
    RUN("var: md st", (k_var<2, true, false, false><<<grid, 256>>>(b, g)), (k_var<2, true, false, false>))
    for (int mul : {1, 2, 4}) {
      char nm[64]; snprintf(nm, sizeof nm, "var: persist x%d", mul);
      RUN(nm, (k_var<2, false, true, true><<<res * mul, 256>>>(b, g)), (k_var<2, false, true, true>))
      snprintf(nm, sizeof nm, "var: md persist x%d", mul);
      RUN(nm, (k_var<2, true, true, true><<<res * mul, 256>>>(b, g)), (k_var<2, true, true, true>))
    }
    RUN("var: md persist x1 st", (k_var<2, true, true, false><<<res, 256>>>(b, g)), (k_var<2, true, true, false>))
    RUN("pairs m=2 (product, end)", (k_pairs<2, 256, 4><<<grid, 256>>>(b)), (k_pairs<2, 256, 4>))
  }
  return h.finish("all variants bitwise equal to the baseline, ghosts untouched");
}
