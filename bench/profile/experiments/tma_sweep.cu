// tma_sweep.cu - issue 3 experiment: a z-marching stencil fed by the Hopper bulk tensor copy
// engine (TMA, cp.async.bulk.tensor into a ring of shared-memory planes completing on mbarriers)
// against the product's pairs m=2 kernel (k_plane_v2) in the SAME run. The question: the pair
// kernel reads each point ~3.8 times from L2 (its own row, the y halo rows, the z-1/z+1 rows of
// the planes above and below) and on the H200 saturates the L2 (ncu: 97.8% of peak, the fabric
// between the partitions 97.7%); a TMA tile reads each point ~1.1 times from L2 with few
// instructions and tens of KB in flight per SM without registers. Does that reach memcpy speed?
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false tma_sweep.cu -lcuda -o t && ./t [nx ny nz]
//
// Kernel k_tma<R, S>: a CTA of qc*rg threads owns a tile of 2*qc x (R*rg) points of every plane
// of one z chunk and marches along z (qc and rg are run-time values: qc = ceil(pairs per row /
// tiles per row), so that 512-point rows, 257 pairs with the ghost column, split into 4 tiles
// of 65 pairs rather than 4 full tiles and a nearly empty fifth). Plane o of the chunk (o = 0 is
// the plane below the first computed one) is loaded by one TMA box of (2qc+4) x (R*rg+2) x 1
// doubles starting at (xb-2, yb-1, k) into ring stage o % S; the box starts 2 columns left of
// the tile's first pair so that each pair sits 16-byte aligned in shared memory (pairs start on
// an even x, as the product's k_plane_v2; the ghost column x = 0 is in the first pair and not
// stored). Each thread owns one pair column of R rows and keeps the pair centres of planes
// k-1, k, k+1 in registers; per plane it reads the new k+1 centres and, from plane k's stage,
// the y-1 / y+R rows and the x neighbours. One __syncthreads per plane frees the stage of plane
// k, into which thread 0 loads plane k+S; S-2 planes are in flight while a plane is computed.
// Out-of-range box parts (x < 0, beyond the array) are zero-filled by the TMA and never stored.
// Also: k_tmacopy (the same pipeline storing the centre value: the traffic ceiling of the
// schedule), the product's pairs m=2, and a baseline used as the bitwise reference. Every variant
// is checked bitwise against the baseline on the device, with untouched ghosts (0xff fill).
// Timing: median of 20 launches after 2 warm-ups (events around each), % of a device-to-device
// memcpy of the field measured at the start of each round.
#include <cuda.h>
#include "sweep_common.cuh"

// ---- TMA / mbarrier primitives (sm_90) ------------------------------------------------------------
__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
// bounded: a wait that never completes (a schedule bug) traps instead of hanging the GPU
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
  for (long long tries = 0;; tries++) {
    unsigned ok;
    asm volatile("{\n.reg .pred P1;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, P1;\n}\n" : "=r"(ok) : "r"(smem_u32(b)), "r"(parity) : "memory");
    if (ok) return;
    if (tries > (1LL << 24)) { printf("mbar_wait timeout block %d thread %d parity %u\n", blockIdx.x, threadIdx.x, parity); __trap(); }
  }
}
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *tm, int x, int y, int z, uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               ::"r"(smem_u32(dst)), "l"((uint64_t)tm), "r"(x), "r"(y), "r"(z), "r"(smem_u32(bar)) : "memory");
}

// runtime tile: qc pair columns (tile width 2*qc points, x origin 2*qc*tile_x, even), rg row
// groups of R rows (tile height R*rg), rs = 2*qc + 4 doubles of shared row pitch, stage_d doubles
// per ring stage (a multiple of 16: 128-byte aligned stages); blockDim.x = qc*rg.
struct T { int qc, rg, rs, stage_d; unsigned box_bytes; };

// COPY = true: store the centre value (traffic ceiling of the schedule)
template <int R, int S, bool COPY>
__global__ void __launch_bounds__(512) k_tma(const __grid_constant__ CUtensorMap tm, A a, T g) {
  extern __shared__ __align__(128) real sm[];
  __shared__ __align__(8) uint64_t bar[S];
  const int t = threadIdx.x, q = t % g.qc, rg = t / g.qc;
  unsigned b = blockIdx.x;
  const int tx = (int)(b % (unsigned)a.ntx); b /= (unsigned)a.ntx;
  const int ty = (int)(b % (unsigned)a.nty);
  const int chunk = (int)(b / (unsigned)a.nty);
  const int xb = 2 * g.qc * tx;          // first pair's x (even); interior lo = 1
  const int yb = 1 + R * g.rg * ty;
  const int kc0 = 1 + chunk * a.chunk;
  const int kc1 = min(a.nz, kc0 + a.chunk - 1);
  const int nk = kc1 - kc0 + 1;          // planes computed; planes o = 0..nk+1 are loaded
  if (t == 0) {
    for (int s = 0; s < S; s++) mbar_init(&bar[s], 1);
    mbar_fence_init();
  }
  __syncthreads();
  if (t == 0) {
    for (int o = 0; o < S && o <= nk + 1; o++) {
      mbar_expect_tx(&bar[o], g.box_bytes);
      tma_load_3d(sm + o * g.stage_d, &tm, xb - 2, yb - 1, kc0 - 1 + o, &bar[o]);
    }
  }
  const int i0 = xb + 2 * q;
  const bool v0 = i0 >= 1 && i0 <= a.nx, v1 = i0 + 1 <= a.nx;
  const int jr = rg * R;                 // first row of this thread in the tile (0-based)
  const int rs = g.rs;
  const int off = (jr + 1) * rs + 2 + 2 * q;  // shared offset of this thread's first pair
  double2 prv[R], cur[R], nxt[R];
  mbar_wait(&bar[0], 0);
  mbar_wait(&bar[1 % S], (1 / S) & 1);
  {
    const real *s0 = sm + off, *s1 = sm + (1 % S) * g.stage_d + off;
#pragma unroll
    for (int n = 0; n < R; n++) {
      prv[n] = *reinterpret_cast<const double2 *>(s0 + n * rs);
      cur[n] = *reinterpret_cast<const double2 *>(s1 + n * rs);
    }
  }
  __syncthreads();  // every thread has read plane 0: its stage takes plane S
  if (t == 0 && S <= nk + 1) {
    mbar_expect_tx(&bar[0], g.box_bytes);
    tma_load_3d(sm, &tm, xb - 2, yb - 1, kc0 - 1 + S, &bar[0]);
  }
  const long long sx = a.sx;
  const int nrows = min(R, a.ny - (yb + jr) + 1);   // rows of this thread inside the grid (may be <= 0)
  long long p = i0 + sx * (yb + jr) + a.sxy * kc0;
  for (int s = 0; s < nk; s++) {
    const int oc = s + 1, on = s + 2;
    mbar_wait(&bar[on % S], (unsigned)((on / S) & 1));
    const real *sc = sm + (oc % S) * g.stage_d + off, *sn = sm + (on % S) * g.stage_d + off;
#pragma unroll
    for (int n = 0; n < R; n++) nxt[n] = *reinterpret_cast<const double2 *>(sn + n * rs);
    const double2 ylo = *reinterpret_cast<const double2 *>(sc - rs);
    const double2 yhi = *reinterpret_cast<const double2 *>(sc + R * rs);
#pragma unroll
    for (int n = 0; n < R; n++) {
      if (n < nrows) {
        const real *row = sc + n * rs;
        double2 o;
        if (COPY) o = cur[n];
        else {
          const real xl = row[-1], xh = row[2];
          const double2 yl = n > 0 ? cur[n > 0 ? n - 1 : 0] : ylo;
          const double2 yh = n + 1 < R ? cur[n + 1 < R ? n + 1 : 0] : yhi;
          o.x = pt(a, cur[n].x, xl, cur[n].y, yl.x, yh.x, prv[n].x, nxt[n].x);
          o.y = pt(a, cur[n].y, cur[n].x, xh, yl.y, yh.y, prv[n].y, nxt[n].y);
        }
        store_pair<true>(a.out + p + n * sx, o, v0, v1);
      }
    }
#pragma unroll
    for (int n = 0; n < R; n++) { prv[n] = cur[n]; cur[n] = nxt[n]; }
    p += a.sxy;
    __syncthreads();  // every thread is done with stage oc % S
    const int ol = oc + S;
    if (t == 0 && ol <= nk + 1) {
      mbar_expect_tx(&bar[oc % S], g.box_bytes);
      tma_load_3d(sm + (oc % S) * g.stage_d, &tm, xb - 2, yb - 1, kc0 - 1 + ol, &bar[oc % S]);
    }
  }
}

int main(int argc, char **argv) {
  Harness h(argc, argv, 2);
  const int nx = h.nx, ny = h.ny, nz = h.nz;
  const long long sx = h.sx, sxy = h.sxy;
  const size_t bytes = h.bytes;
  real *const u = h.u, *const o = h.o;
  const cudaDeviceProp &pr = h.pr;
  printf("device %s (%d SMs, L2 %d MB, smem/SM %zu KB), %dx%dx%d double, pairs strips %d, effective bytes %.1f MB\n", pr.name, pr.multiProcessorCount,
         pr.l2CacheSize >> 20, pr.sharedMemPerMultiprocessor >> 10, nx, ny, nz, h.strips_rule, h.eff / 1e6);
  auto rep = [&](const char *nm, double t, int chk, const void *fn, int bs, size_t dsm) {
    char st[64] = "";
    if (chk) h.check(chk, st, sizeof st);
    char rs[64] = "";
    if (fn) { cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, fn)); int nb = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, bs, dsm));
      snprintf(rs, sizeof rs, "%3d regs %3d spill %4d thr/SM %2d blk/SM", fa.numRegs, (int)fa.localSizeBytes, nb * bs, nb); }
    printf("%-40s %.4f ms %6.0f GB/s %5.1f%%  %-40s %s\n", nm, t, h.gbs(t), h.pct(t), rs, st); fflush(stdout); };

  // tensor map of the input field: dims (sx, ny+2, nz+2), box set per kernel
  auto make_map = [&](int boxx, int boxy) {
    CUtensorMap tm;
    cuuint64_t dims[3] = {(cuuint64_t)sx, (cuuint64_t)(ny + 2), (cuuint64_t)(nz + 2)};
    cuuint64_t strides[2] = {(cuuint64_t)(sx * 8), (cuuint64_t)(sxy * 8)};
    cuuint32_t box[3] = {(cuuint32_t)boxx, (cuuint32_t)boxy, 1}, es[3] = {1, 1, 1};
    CUresult r = cuTensorMapEncodeTiled(&tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 3, (void *)u, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled failed: %d (box %d x %d)\n", (int)r, boxx, boxy); exit(1); }
    return tm;
  };

  for (int round = 0; round < h.rounds; round++) {
    h.memcpy_round(round);
    dim3 pgrid;
    const A b = h.pairs_args(pgrid);
    auto pairs = [&](const char *nm) {
      CK(cudaMemset(o, 0xff, bytes)); double t = h.timeit([&] { k_pairs<2, 256, 4><<<pgrid, 256>>>(b); });
      rep(nm, t, 1, (const void *)k_pairs<2, 256, 4>, 256, 0); };
    pairs("pairs m=2 (product)");
    // tiles: tpr = tiles per row (qc = ceil(pairs per row / tpr)); chunks: 0 = the rule (fill the
    // resident slots), else the given count
    const int npairs = (int)(sx / 2);
#define TMA(R, S, COPY, TPR, RG, ...) { \
      const int tpr = (TPR); const int qc = (npairs + tpr - 1) / tpr; T g{qc, (RG), 2 * qc + 4, 0, 0}; \
      if (g.rs > 256 || R * g.rg + 2 > 256 || qc * g.rg > 512) { printf("skip tpr=%d rg=%d: box or block too large\n", tpr, g.rg); } else { \
      g.stage_d = ((g.rs * (R * g.rg + 2)) + 15) / 16 * 16; g.box_bytes = (unsigned)(g.rs * (R * g.rg + 2) * 8); \
      auto kf = k_tma<R, S, COPY>; const size_t dsm = (size_t)S * g.stage_d * 8; const int nt = qc * g.rg; \
      CK(cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dsm)); \
      CUtensorMap map = make_map(g.rs, R * g.rg + 2); \
      int per = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kf, nt, dsm)); \
      A c = b; c.ntx = (npairs + qc - 1) / qc; c.nty = (ny + R * g.rg - 1) / (R * g.rg); const long long tiles = (long long)c.ntx * c.nty; \
      for (int ch : {__VA_ARGS__}) { \
        int nc = ch; if (nc == 0) { long long cap = (long long)per * pr.multiProcessorCount; nc = (int)std::max(1LL, cap / tiles); } \
        nc = std::min(nc, nz); c.chunk = (nz + nc - 1) / nc; nc = (nz + c.chunk - 1) / c.chunk; \
        CK(cudaMemset(o, 0xff, bytes)); \
        double t = h.timeit([&] { kf<<<(unsigned)(tiles * nc), nt, dsm>>>(map, c, g); }); \
        char nm[96]; snprintf(nm, 96, "%s %dx%d (R=%d rg=%d) S=%d ch=%d%s", COPY ? "tmacopy" : "tma", 2 * qc, R * g.rg, R, g.rg, S, nc, ch == 0 ? "(rule)" : ""); \
        rep(nm, t, COPY ? 2 : 1, (const void *)kf, nt, dsm); } } }
    const int t1 = (npairs + 125) / 126, t2 = (npairs + 64) / 65, t3 = (npairs + 32) / 33;
    TMA(4, 4, true, t2, 4, 0)
    TMA(4, 4, false, t2, 4, 0, 1, 2, 4)
    TMA(4, 3, false, t2, 4, 0, 2)
    TMA(4, 5, false, t2, 4, 0, 2)
    TMA(4, 6, false, t2, 4, 0)
    TMA(2, 4, false, t2, 4, 0, 2)
    TMA(4, 4, false, t2, 2, 0, 2)
    TMA(4, 4, false, t1, 2, 0, 1)
    TMA(4, 4, false, t1, 4, 0, 1)
    TMA(4, 4, true, t3, 8, 0)
    TMA(4, 4, false, t3, 8, 0, 1, 2)
    TMA(4, 4, false, t3, 4, 0, 2)
    pairs("pairs m=2 (product, end)");
  }
  return h.finish("all checked variants bitwise equal to the baseline (copies: to the input), ghosts untouched");
}
