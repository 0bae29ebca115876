/* stencil_fused.hip - several time steps per pass through memory: the fused kernel k_fused
 * (temporal blocking), be_stencil_fused, and what asks the runtime about its instances: the
 * blocks one multiprocessor holds (gpu_fused_blocks_per_sm) and the autotune's candidates
 * (be_fused_candidates). Its rule (be_fused_resolve) and its shared memory (fz_smem_bytes):
 * stencil_config.hip. Every live point is fd_stencil_point[_f] (pointwise.h): the same bits as
 * the single steps of stencil_step.hip.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "pointwise.h"
#include "stencil_common.h"
#include "stencil_device.h"

namespace stencil {
namespace {

/* ---- several time steps per pass: the fused kernel ---------------------------------------------
 * Temporal blocking by overlapped tiles in x-y and a pipeline along z. A block is one warp
 * (GPU_WARP_SIZE lanes) along x and BY threads along y, each thread owning R consecutive rows:
 * its footprint is W x (BY*R) columns, W = GPU_WARP_SIZE, of which the inner (W - 2T) x
 * (BY*R - 2T) are its output tile (each level of the T shrinks the valid footprint by one
 * on every side). The block marches up through the planes of its chunk: at input plane kin it
 * loads level 0 of plane kin and computes level t of plane kin - t for t = 1..T, so level T
 * leaves the pipeline T planes behind the loads. Per thread and level the planes z-1, z, z+1
 * of level t-1 are in registers (a window of 3); x neighbours come from the adjacent lanes
 * (shuffles), y neighbours from the thread's own rows or, for its first and last row, from
 * the neighbouring threads' rows through shared memory (one buffer per iteration parity, one
 * barrier per plane). A point outside fix_lo..fix_hi keeps its level-0 value at every level
 * (Dirichlet, or the outermost ghost layer); a point outside the array is "dead" (0, never
 * read by a live result). Values the footprint's border computes from neighbours it does not
 * have (the first and last lane's shuffles, the first and last warp's shared rows) are garbage
 * that no output depends on. Every live point of level t is fd_stencil_point[_f] of level
 * t-1's values, exactly as T single steps compute it: the same bits. No thread returns early:
 * all take part in the shuffles and barriers. */
struct fz_args {
  const real_t *u, *f;
  real_t *out;
  real_t cc, cx, cy, cz, cf;
  long long sx, sxy, origin;
  int lo[3], hi[3];      /* output box */
  int flo[3], fhi[3];    /* fix box: updated points */
  int alo[3], ahi[3];    /* the array: 1-ghost .. n+ghost */
  int tw, th;            /* output tile width (x) and height (y) */
  int chunk;             /* output planes per block */
};

/* r[0..V-1] = p[0..V-1] / p[0..V-1] = r[0..V-1] in shared memory (V = 2: one access of the
 * pair, p aligned to it) */
template <int V> __device__ __forceinline__ void smem_get(const real_t *p, real_t (&r)[V])
{
  if (V == 2) {
    const v2 t = *reinterpret_cast<const v2 *>(p);
    r[0] = t.x;
    r[V - 1] = t.y;
  } else
    r[0] = p[0];
}
template <int V> __device__ __forceinline__ void smem_put(real_t *p, const real_t (&r)[V])
{
  if (V == 2)
    gpu_store2(p, r[0], r[V - 1]);
  else
    p[0] = r[0];
}

/* How k_fused reads f, the operator's source term (jacobi), at its T levels: 0, at every level
 * from memory (L1 and L2 hits after the first level's load); 1, through a queue of T planes in
 * registers, each plane loaded once at the iteration whose level 1 first needs it; 2, the same
 * queue loaded a plane ahead (latency hidden like u's). A queue where T >= 2 and its registers
 * fit under the kernel's cap (128) without spilling on sm_90: 2 where (T + 1) R V <= 12, else
 * 1 where T R V <= 12. Measured in bench/results/README.md ("f through a queue"). */
__host__ __device__ constexpr int fz_f_queue(int T, int R, int V, bool has_f)
{
  return !has_f || T < 2 ? 0 : (T + 1) * R * V <= 12 ? 2 : T * R * V <= 12 ? 1 : 0;
}

/* Levels 1..T of one plane iteration of k_fused (input plane kin, level t computing plane
 * kin - t) on the thread's windows L, level 0 already shifted in. lo / hi: the slots of the
 * threads below and above in the previous iteration's parity, at this lane's columns (the
 * thread's own slot for the first / last warp). KFIX: some level's plane lies outside the fix
 * box along z, so the per-point test is needed; without it most iterations are free of it. */
template <int T, int R, int V, bool HAS_F, bool INNER, bool KFIX, int FQ>
__device__ __forceinline__ void fused_levels(const fz_args &a, real_t (&L)[T][R][V][3],
                                             const real_t *lo, const real_t *hi, int kin,
                                             const bool (&xfix)[V], const bool (&yfix)[R],
                                             const bool (&xout)[V], const bool (&yout)[R],
                                             const real_t *fcol, const real_t (&fq)[FQ ? T : 1][R][V],
                                             real_t *ocol, int kc0, int kc1)
{
  constexpr int WV = GPU_WARP_SIZE * V;
  const long long sx = a.sx, sxy = a.sxy;
#pragma unroll
  for (int t = 1; t <= T; t++) {
    const int kc = kin - t;
    const bool kfix = KFIX && (kc < a.flo[2] || kc > a.fhi[2]);
    real_t below[V], above[V]; /* level t-1: last row of the thread below, first of the one above */
    smem_get<V>(lo + (T + t - 1) * WV, below);
    smem_get<V>(hi + (t - 1) * WV, above);
    real_t res[R][V];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const real_t left = gpu_shfl_up1(L[t - 1][r][V - 1][1]);  /* x0 - 1 */
      const real_t right = gpu_shfl_down1(L[t - 1][r][0][1]);   /* x0 + V */
#pragma unroll
      for (int v = 0; v < V; v++) {
        const real_t c = L[t - 1][r][v][1];
        const real_t xm = v > 0 ? L[t - 1][r][v > 0 ? v - 1 : 0][1] : left;
        const real_t xp = v + 1 < V ? L[t - 1][r][v + 1 < V ? v + 1 : V - 1][1] : right;
        const real_t ym = r > 0 ? L[t - 1][r > 0 ? r - 1 : 0][v][1] : below[v];
        const real_t yp = r + 1 < R ? L[t - 1][r + 1 < R ? r + 1 : R - 1][v][1] : above[v];
        const bool fixed = (!INNER && (xfix[v] || yfix[r])) || kfix;
        if (HAS_F) { /* f of plane kc: from the queue (fz_f_queue), or read at this level */
          const real_t fv = FQ ? fq[FQ ? t - 1 : 0][r][v]
                               : (fixed ? (real_t)0 : gpu_ldg(fcol + v + sx * r + sxy * kc));
          const real_t st = fd_stencil_point_f(a.cc, a.cx, a.cy, a.cz, a.cf, c, xm, xp, ym, yp,
                                               L[t - 1][r][v][0], L[t - 1][r][v][2], fv);
          res[r][v] = fixed ? c : st;
        } else {
          const real_t st = fd_stencil_point(a.cc, a.cx, a.cy, a.cz, c, xm, xp, ym, yp,
                                             L[t - 1][r][v][0], L[t - 1][r][v][2]);
          res[r][v] = fixed ? c : st;
        }
      }
    }
    if (t < T) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++) {
          L[t][r][v][0] = L[t][r][v][1];
          L[t][r][v][1] = L[t][r][v][2];
          L[t][r][v][2] = res[r][v];
        }
    } else if (kc >= kc0 && kc <= kc1) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++)
          if (yout[r] && xout[v]) ocol[v + sx * r + sxy * kc] = res[r][v];
    }
  }
}

/* The body of k_fused; INNER: the footprint lies inside the fix box (hence inside the array). */
template <int T, int R, int V, bool HAS_F, bool INNER, bool SPLIT, int FQ>
__device__ __forceinline__ void fused_body(const fz_args &a)
{
  extern __shared__ unsigned char fz_smem_raw[];
  real_t *smem = reinterpret_cast<real_t *>(fz_smem_raw); /* [2][BY][2 T W V] (fz_smem_bytes) */
  constexpr int W = GPU_WARP_SIZE, WV = W * V, SLOT = 2 * T * WV;
  const int BY = (int)blockDim.y;
  const int lane = (int)threadIdx.x, ty = (int)threadIdx.y;
  const int xt = a.lo[0] + (int)blockIdx.x * a.tw; /* the output tile's first column */
  const int x0 = xt - T + V * lane;                 /* this thread's first column */
  const int yt = a.lo[1] + (int)blockIdx.y * a.th;
  const int y0 = yt - T + ty * R;
  const int kc0 = a.lo[2] + (int)blockIdx.z * a.chunk;
  const int kc1 = min(a.hi[2], kc0 + a.chunk - 1);
  bool xin[V], xfix[V], xout[V];
#pragma unroll
  for (int v = 0; v < V; v++) {
    const int x = x0 + v;
    xin[v] = INNER || (x >= a.alo[0] && x <= a.ahi[0]);
    xfix[v] = !INNER && (x < a.flo[0] || x > a.fhi[0]);
    xout[v] = x >= xt && x < xt + a.tw && x <= a.hi[0];
  }
  bool yin[R], yfix[R], yout[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int y = y0 + r;
    yin[r] = INNER || (y >= a.alo[1] && y <= a.ahi[1]);
    yfix[r] = !INNER && (y < a.flo[1] || y > a.fhi[1]);
    yout[r] = y >= yt && y < yt + a.th && y <= a.hi[1];
  }
  const long long sx = a.sx, sxy = a.sxy;
  const long long col = a.origin + x0 + sx * y0; /* element of (x0, y0, 0) */
  const real_t *ucol = a.u + col, *fcol = HAS_F ? a.f + col : a.u;
  real_t *ocol = a.out + col;
  /* window L[t][r][v][0..2]: level t, row r, column v, planes (newest-2, newest-1, newest) */
  real_t L[T][R][V][3];
#pragma unroll
  for (int t = 0; t < T; t++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int v = 0; v < V; v++) L[t][r][v][0] = L[t][r][v][1] = L[t][r][v][2] = (real_t)0;
  const int kstart = max(kc0 - T, a.alo[2]);
  /* this thread's slot at its lane's columns, in parity 0; the other parity lies `half` above */
  real_t *own = smem + ty * SLOT + V * lane;
  const int half = BY * SLOT;
  /* the slots of the threads below and above; the first and last warp read their own (their
   * border rows feed no output, and the read stays inside the buffer) */
  const int dlo = ty > 0 ? -SLOT : 0, dhi = ty + 1 < BY ? SLOT : 0;
  /* level 0 comes through a queue one plane deep: plane kin+1 is loaded while the levels of
   * plane kin are computed, so the loads' latency hides behind that work */
  real_t ahead[R][V];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int v = 0; v < V; v++)
      ahead[r][v] = kstart <= a.ahi[2] && xin[v] && yin[r] ? gpu_ldg(ucol + v + sx * r + sxy * kstart) : (real_t)0;
  /* f (FQ > 0): fq[t-1] holds f of plane kin - t, the plane level t computes at iteration kin,
   * so that each plane of f is loaded once per point rather than once per level; 0 where the
   * point is not updated (outside the fix box), and planes below kstart feed no output. FQ = 2:
   * loaded a plane ahead into fnext, like u. */
  real_t fq[FQ ? T : 1][R][V], fnext[R][V];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int v = 0; v < V; v++) {
      fnext[r][v] = (real_t)0;
#pragma unroll
      for (int t = 0; t < (FQ ? T : 1); t++) fq[t][r][v] = (real_t)0;
    }
  int par = 0;
#pragma unroll 1
  for (int kin = kstart; kin <= kc1 + T; kin++) {
    if (FQ) { /* the queue moves up a plane and takes f of plane kf at its bottom */
      const int kf = FQ == 2 ? kin : kin - 1;
      const bool zin = kf >= a.flo[2] && kf <= a.fhi[2];
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int v = 0; v < V; v++) {
#pragma unroll
          for (int t = (FQ ? T : 1) - 1; t > 0; t--) fq[t][r][v] = fq[t - 1][r][v];
          const real_t x = zin && (INNER || (!xfix[v] && !yfix[r])) ? gpu_ldg(fcol + v + sx * r + sxy * kf)
                                                                    : (real_t)0;
          if (FQ == 2) {
            fq[0][r][v] = fnext[r][v];
            fnext[r][v] = x;
          } else
            fq[0][r][v] = x;
        }
    }
    /* level 0: plane kin (0 beyond the array), and the load of plane kin+1 */
    const bool knext = kin + 1 <= a.ahi[2];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int v = 0; v < V; v++) {
        L[0][r][v][0] = L[0][r][v][1];
        L[0][r][v][1] = L[0][r][v][2];
        L[0][r][v][2] = ahead[r][v];
        ahead[r][v] = knext && xin[v] && yin[r] ? gpu_ldg(ucol + v + sx * r + sxy * (kin + 1)) : (real_t)0;
      }
    /* levels 1..T (planes kin-T..kin-1) from the rows the neighbours wrote in the previous
     * iteration; the test against the fix box along z only where one of the planes is outside */
    const real_t *rd = own + par * half;
    if (!SPLIT || kin - T < a.flo[2] || kin - 1 > a.fhi[2])
      fused_levels<T, R, V, HAS_F, INNER, true, FQ>(a, L, rd + dlo, rd + dhi, kin, xfix, yfix,
                                                    xout, yout, fcol, fq, ocol, kc0, kc1);
    else
      fused_levels<T, R, V, HAS_F, INNER, false, FQ>(a, L, rd + dlo, rd + dhi, kin, xfix, yfix,
                                                     xout, yout, fcol, fq, ocol, kc0, kc1);
    /* this iteration's newest planes of levels 0..T-1, first and last row, for the threads
     * above and below */
    real_t *wr = own + (par ^ 1) * half;
#pragma unroll
    for (int t = 0; t < T; t++) {
      real_t first[V], last[V];
#pragma unroll
      for (int v = 0; v < V; v++) first[v] = L[t][0][v][2], last[v] = L[t][R - 1][v][2];
      smem_put<V>(wr + t * WV, first);
      smem_put<V>(wr + (T + t) * WV, last);
    }
    __syncthreads();
    par ^= 1;
  }
}

template <int T, int R, int V, bool HAS_F>
__global__ void GPU_REGISTER_CAP(128) k_fused(const fz_args a) /* blocks <= FD_KERNEL_MAX_BLOCK */
{
  /* Blocks whose whole footprint lies inside the fix box (most blocks) run a body without the
   * per-point array and fix tests along x and y, and each body runs the planes that need no
   * fix test along z (most planes) without it: fewer instructions. The largest instances with
   * f keep one body and one path (a second one spills there). */
  constexpr bool SPLIT = !(HAS_F && T * R * V >= 16);
  constexpr int FQ = fz_f_queue(T, R, V, HAS_F);
  const int BY = (int)blockDim.y;
  const int fx0 = a.lo[0] + (int)blockIdx.x * a.tw - T, fy0 = a.lo[1] + (int)blockIdx.y * a.th - T;
  const bool inner = fx0 >= a.flo[0] && fx0 + GPU_WARP_SIZE * V - 1 <= a.fhi[0] &&
                     fy0 >= a.flo[1] && fy0 + BY * R - 1 <= a.fhi[1];
  if (SPLIT && inner)
    fused_body<T, R, V, HAS_F, true, SPLIT, FQ>(a);
  else
    fused_body<T, R, V, HAS_F, false, SPLIT, FQ>(a);
}

/* ---- the kernel instances -------------------------------------------------------------------- */

typedef void (*fzfn)(fz_args);

template <bool F> fzfn fused_fn_t(int steps, int rows, int vec)
{
  static const fzfn k[4][2][2] = {
      {{k_fused<1, 1, 1, F>, k_fused<1, 1, 2, F>}, {k_fused<1, 2, 1, F>, k_fused<1, 2, 2, F>}},
      {{k_fused<2, 1, 1, F>, k_fused<2, 1, 2, F>}, {k_fused<2, 2, 1, F>, k_fused<2, 2, 2, F>}},
      {{k_fused<3, 1, 1, F>, k_fused<3, 1, 2, F>}, {k_fused<3, 2, 1, F>, k_fused<3, 2, 2, F>}},
      {{k_fused<4, 1, 1, F>, k_fused<4, 1, 2, F>}, {k_fused<4, 2, 1, F>, k_fused<4, 2, 2, F>}}};
  /* four rows per thread only up to 2 steps and with pairs (registers) */
  static const fzfn k4[2] = {k_fused<1, 4, 2, F>, k_fused<2, 4, 2, F>};
  if (rows == 4) return k4[steps - 1];
  return k[steps - 1][rows == 2][vec == 2];
}
fzfn fused_fn(bool f, int steps, int rows, int vec)
{
  return f ? fused_fn_t<true>(steps, rows, vec) : fused_fn_t<false>(steps, rows, vec);
}

} /* namespace */
} /* namespace stencil */

using namespace stencil;

/* ---- several time steps per pass ------------------------------------------------------------ */

/* Dynamic shared memory beyond the default share needs the kernel's consent: raised once per
 * kernel instance to the largest size asked for (the 64-lane test build adds static shared
 * memory). Synchronous. */
static int fz_allow_smem(fzfn k, size_t smem)
{
  static struct {
    const void *k;
    size_t smem;
  } raised[64];
  static int nraised = 0;
  int i = 0;
  while (i < nraised && raised[i].k != (const void *)k) i++;
  if (smem > 16 * 1024 && (i == nraised || raised[i].smem < smem)) {
    GPU(hipFuncSetAttribute((const void *)k, hipFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (i == nraised && nraised < 64) raised[nraised++].k = (const void *)k;
    if (i < 64) raised[i].smem = smem;
  }
  return BE_OK;
}

/* The output tiles of one plane of a pass of resolved configuration c over extent[0..1]
 * points along x and y: the blocks of each chunk. */
static long long fz_tiles(const fd_fused *c, const int extent[3])
{
  const int tw = GPU_WARP_SIZE * c->vec - 2 * c->steps, th = c->block_y * c->tile - 2 * c->steps;
  return ceil_div(extent[0], tw) * ceil_div(extent[1], th);
}

extern "C" int gpu_fused_blocks_per_sm(const fd_fused *c, int has_f, int *per_sm)
{
  *per_sm = 0;
  const fzfn k = fused_fn(has_f != 0, c->steps, c->tile, c->vec);
  const size_t smem = fz_smem_bytes(c->steps, c->vec, c->block_y);
  const int rc = fz_allow_smem(k, smem);
  if (rc) return rc;
  GPU(hipOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, (const void *)k, GPU_WARP_SIZE * c->block_y, smem));
  return BE_OK;
}

/* The chunk that keeps a pass of c (resolved; its chunk ignored) over extent within one wave:
 * the fewest planes per block such that every block is resident at once (the device's
 * multiprocessors times the blocks of c's kernel instance each holds). 0 where the output
 * tiles of one plane alone exceed a wave, or the instance cannot be resident. Synchronous. */
static int fz_wave_chunk(const fd_fused *c, const int extent[3], int has_f)
{
  int per_sm = 0;
  if (gpu_fused_blocks_per_sm(c, has_f, &per_sm) != BE_OK || per_sm < 1) return 0;
  const long long per_column = (long long)per_sm * gpu_props_private.sm_count / fz_tiles(c, extent);
  return per_column < 1 ? 0 : (int)ceil_div(extent[2], per_column);
}

/* {tile, vec, block_y, chunk} around the H200's fastest at 512^3, shorter chunks that keep
 * the GPU busy on smaller blocks (256^3 and below), and chunks of 4 to 16 planes for blocks of
 * 32^3 to 128^3, where a pass is bound by the latency of marching through its planes, not by
 * memory; four rows only resolve up to 2 steps. The last three take one column per thread: a
 * footprint one warp wide (32 columns with 32-lane warps) wastes fewer columns of a small
 * block than one of two warps' width (at T = 3 a 128-column row takes 5 footprints of 26
 * outputs, 160 columns, against 3 of 58, 192 columns) and gives more blocks. Then, with a
 * trial, {tile, vec, block_y} whose chunk is the wave's (fz_wave_chunk): where one wave holds
 * the pass, its time is that of one block marching through chunk + 2T planes, so the shortest
 * chunk that still fits is the fastest (bench/results/README.md, "One wave per pass"). Where
 * none fits the device (64-lane wavefronts from 3 steps), the rule's shape. */
extern "C" int be_fused_candidates(int steps, const fd_fused_trial *t, fd_fused *list, int max)
{
  static const int shapes[][4] = {{4, 2, 4, 128}, {4, 2, 4, 32}, {4, 2, 4, 16}, {4, 2, 4, 8},
                                  {4, 2, 4, 4},   {4, 2, 8, 128}, {2, 2, 8, 128}, {2, 2, 8, 64},
                                  {2, 2, 8, 16},  {2, 2, 8, 8},   {2, 2, 8, 4},   {2, 2, 16, 128},
                                  {2, 2, 16, 64}, {2, 2, 16, 32}, {2, 2, 16, 16}, {2, 2, 16, 8},
                                  {2, 1, 8, 32},  {2, 1, 8, 16},  {2, 1, 8, 6}};
  static const int wave_shapes[][3] = {{2, 1, 16}, {2, 1, 8}, {2, 2, 16}, {2, 2, 8}};
  int n = 0;
  for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]) && n < max; i++) {
    fd_fused c = {steps, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]};
    if (be_fused_resolve(&c) == BE_OK) list[n++] = c;
  }
  int extent[3];
  for (int d = 0; t && d < 3; d++) extent[d] = t->hi[d] - t->lo[d] + 1;
  for (int i = 0; t && i < (int)(sizeof wave_shapes / sizeof wave_shapes[0]) && n < max; i++) {
    fd_fused c = {steps, wave_shapes[i][0], wave_shapes[i][1], wave_shapes[i][2], 1};
    if (extent[0] < 1 || extent[1] < 1 || extent[2] < 1 || be_fused_resolve(&c) != BE_OK) continue;
    c.chunk = fz_wave_chunk(&c, extent, t->f != NULL);
    int seen = c.chunk < 1;
    for (int j = 0; j < n && !seen; j++) seen = memcmp(&list[j], &c, sizeof c) == 0;
    if (!seen) list[n++] = c;
  }
  if (n == 0 && max > 0) {
    fd_fused c = {steps, 0, 0, 0, 0};
    if (be_fused_resolve(&c) == BE_OK) list[n++] = c;
  }
  return n;
}

extern "C" int be_stencil_fused(const fd_grid *g, const fd_fused *cin, const int lo[3],
                                const int hi[3], const int fix_lo[3], const int fix_hi[3],
                                const fd_coeffs *cf, const real_t *u, const real_t *f,
                                real_t *out, be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_stencil_fused: be_init was not called");
  if (u == out) return gpu_failf_private(BE_ERROR, "be_stencil_fused: u and out must differ");
  fd_fused c = *cin;
  int rc = be_fused_resolve(&c);
  if (rc) return rc;
  const int G = g->ghost;
  for (int d = 0; d < 3; d++) {
    if (hi[d] < lo[d]) return BE_OK; /* nothing to update */
    if (lo[d] < fix_lo[d] || hi[d] > fix_hi[d] || fix_lo[d] < 2 - G || fix_hi[d] > g->n[d] + G - 1)
      return gpu_failf_private(BE_ERROR, "be_stencil_fused: box %d..%d / fix box %d..%d outside the grid along %d",
                               lo[d], hi[d], fix_lo[d], fix_hi[d], d);
  }
  const int T = c.steps, W = GPU_WARP_SIZE;
  fz_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  a.cc = cf->cc, a.cx = cf->cx, a.cy = cf->cy, a.cz = cf->cz, a.cf = cf->cf;
  a.sx = g->sx, a.sxy = g->sxy, a.origin = g->origin;
  for (int d = 0; d < 3; d++) {
    a.lo[d] = lo[d], a.hi[d] = hi[d], a.flo[d] = fix_lo[d], a.fhi[d] = fix_hi[d];
    a.alo[d] = 1 - G, a.ahi[d] = g->n[d] + G;
  }
  a.tw = W * c.vec - 2 * T;
  a.th = c.block_y * c.tile - 2 * T;
  const long long gx = ceil_div(hi[0] - lo[0] + 1, a.tw), gy = ceil_div(hi[1] - lo[1] + 1, a.th);
  const int ez = hi[2] - lo[2] + 1;
  if (ceil_div(ez, c.chunk) > 65535) c.chunk = (int)ceil_div(ez, 65535);
  a.chunk = c.chunk;
  const long long gz = ceil_div(ez, c.chunk);
  if (gx > 0x7fffffffLL || gy > 65535)
    return gpu_failf_private(BE_ERROR, "k_fused: grid %lld x %lld x %lld too large", gx, gy, gz);
  const size_t smem = fz_smem_bytes(T, c.vec, c.block_y);
  const fzfn k = fused_fn(f != NULL, T, c.tile, c.vec);
  rc = fz_allow_smem(k, smem);
  if (rc) return rc;
  const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)gz), block((unsigned)W, (unsigned)c.block_y);
  k<<<grid, block, smem, gpu_stream(s)>>>(a);
  char name[64];
  snprintf(name, sizeof name, "k_fused<T=%d,rows=%d,vec=%d,f=%d>", T, c.tile, c.vec, (int)(f != NULL));
  GPU_LAUNCHED(name);
  return BE_OK;
}
