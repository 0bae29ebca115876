/* stencil_exchange.hip - the stencil with the halo exchange's device work in its launch:
 * be_shell_exchange (the shell, unpacking the received faces and packing the ones to send,
 * k_shell_x) and the exchange signalled inside the launch (be_signals_prime and
 * be_signals_pass: k_sig, and k_zmarch_x, z-marching over the interior in the same launch).
 * Every point is evaluated by fd_stencil_point[_f] as in stencil_step.hip, whose launch_box
 * runs the interior where it has a launch of its own; the rules: stencil_config.hip.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"
#include "pointwise.h"
#include "stencil_common.h"
#include "stencil_device.h"

namespace stencil {
namespace {

/* ---- the shell with its exchange's device work (be_shell_exchange) ---------------------------
 * k_shell's launch, and per point: the neighbour across face fc comes from recv where fc is in
 * unpack and the point lies in fc's layer (which also writes it into u's ghost there: every
 * ghost of a face is the neighbour of exactly one layer point), and the point's new value (or,
 * without STENCIL, its value in u) goes to send where fc is in pack. Plain loads of u: the
 * kernel writes u's ghosts (never one it reads). */
struct shell_xargs {
  const real_t *recv;
  real_t *send;
  unsigned unpack, pack;
  int n[3];
  long long off[FD_FACES];
};

template <bool HAS_F, bool STENCIL>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_shell_x(const st_args a, const shell_slabs sl,
                                                             const shell_xargs x)
{
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= sl.start[sl.nb]) return;
  int b = 0;
  for (int q = 1; q < sl.nb; q++)
    if (t >= sl.start[q]) b = q;
  long long r = t - sl.start[b];
  const long long ex = sl.hi[b][0] - sl.lo[b][0] + 1, ey = sl.hi[b][1] - sl.lo[b][1] + 1;
  const int c3[3] = {(int)(sl.lo[b][0] + r % ex), (int)(sl.lo[b][1] + (r / ex) % ey),
                     (int)(sl.lo[b][2] + r / ex / ey)};
  const long long p = a.origin + c3[0] + a.sx * c3[1] + a.sxy * c3[2];
  const long long stride[3] = {1, a.sx, a.sxy};
  real_t *u = const_cast<real_t *>(a.u);
  real_t nb[FD_FACES];
  long long idx[FD_FACES];
  unsigned on = 0;
#pragma unroll
  for (int fc = 0; fc < FD_FACES; fc++) {
    const int d = fc >> 1, side = fc & 1, ia = d == 0 ? 1 : 0, ib = d == 2 ? 1 : 2;
    idx[fc] = x.off[fc] + (c3[ia] - 1) + (long long)x.n[ia] * (c3[ib] - 1);
    const bool layer = c3[d] == (side ? x.n[d] : 1);
    on |= (unsigned)layer << fc;
    nb[fc] = layer && (x.unpack >> fc & 1u) ? x.recv[idx[fc]] : u[p + (side ? stride[d] : -stride[d])];
  }
  real_t v = u[p];
  if (STENCIL) {
    v = stencil_at<HAS_F>(a, v, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5], f_at<HAS_F>(a, p));
    a.out[p] = v;
  }
#pragma unroll
  for (int fc = 0; fc < FD_FACES; fc++) {
    if (!(on >> fc & 1u)) continue;
    if (x.pack >> fc & 1u) x.send[idx[fc]] = v;
    if (x.unpack >> fc & 1u) u[p + ((fc & 1) ? stride[fc >> 1] : -stride[fc >> 1])] = nb[fc];
  }
}

/* ---- the exchange signalled inside the launch (be_signals_pass, be_signals_prime) -----------
 * backend.h has the protocol. The exchange's work is done by the launch's first nb blocks
 * (exchange blocks: where a neighbour shares this device, since each of them waits and the
 * waiting blocks of every rank on the device must leave room for the launches they wait for,
 * the device's multiprocessors over the ranks sharing it, between XG_MAX_BLOCKS and
 * XG_MAX_BLOCKS_PEERS; XG_MAX_BLOCKS_PEERS where every neighbour has its own device), over
 * the shell of the exchanged faces point by point as k_shell_x, in a grid-stride loop; in a one-launch pass (k_zmarch_x) the other blocks update the interior. An exchange
 * block's first thread waits until every neighbour's word says it has packed this exchange,
 * then the block reads the faces (in[f]); after its writes (out[f]) it counts itself in
 * `arrivals`, and the last block sets seq and the neighbours' words. The interior blocks read
 * no ghost of an exchanged face and write none of the shell's points: the two parts of the
 * launch are independent. No arrays per point (six named neighbours): no stack. The
 * one-launch kernel takes more registers than k_zmarch (64 against 32-40 on sm_90), which
 * costs the interior occupancy on large blocks: the path trial (src/solver/startup.c) weighs it
 * against the two-stream schedule.
 * Memory ordering, where a neighbour is on another device (remote): its words are polled in
 * this device's memory with system-scope loads, then a system-scope acquire fence (AMD: cache
 * invalidates) orders the block's reads of the faces after them: on NVIDIA each exchange
 * block's first thread waits and acquires; on AMD (GPU_ACQUIRE_ONCE) only the first block does,
 * then tells the others by `go`, a word of this device, since LLVM lowers a system-scope
 * acquire on gfx90a with an L2 writeback too, which 64 blocks would repeat while the interior
 * writes (on the H200 the single acquire cost 0.3 us per step: bench/results/README.md); where a
 * face goes through the host proxy (its word polled in host memory), so on NVIDIA too: one
 * poller on the bus, not one per block; each block's writes are ordered by a device-wide
 * fence before it counts itself, and the last block alone fences at system scope (release)
 * before it stores the neighbours' words: on AMD that fence writes the whole L2 back
 * (buffer_wbl2), so it is taken once per launch, not per block, and it covers the other
 * blocks' writes, which its atomic observed. On NVIDIA fence.sc.sys is cumulative in the same
 * way. ROCm maps a peer's memory imported by IPC coarse-grained (ROCR-Runtime's IPCAttach), so
 * the stores through it (the faces, the words) may wait in this device's L2: the release fence
 * writes the faces back, and gpu_push_system after the words writes them back too.
 * Neighbours on this device only: device-wide fences. */
constexpr unsigned XG_MAX_BLOCKS = 16, XG_MAX_BLOCKS_PEERS = 64;
enum { XG_PRIME = 0, XG_COPY = 1, XG_PASS = 2 };

struct xg_args {
  st_args s;                       /* the shell's stencil: u (written: its ghosts), f, out */
  st_args s2;                      /* the coefficients of planes k > k1 (be_sig_stencil) */
  int k1;                          /* planes k <= k1: s's coefficients */
  unsigned pack_u;                 /* the layers packed are u's (be_sig_stencil.pack_u) */
  long long src_p;                 /* the source point (its element), -1: none */
  const real_t *src_vals;          /* its value by exchange, src_len of them */
  unsigned src_len;
  shell_slabs sl;                  /* the shell of the exchanged faces */
  int n[3];
  const real_t *in[FD_FACES][2];   /* face f's values from the neighbour, by slot */
  real_t *out[FD_FACES][2];        /* this rank's layer for the neighbour across f, by slot */
  uint32_t *words, *peer_in[FD_FACES];
  const uint32_t *hin;             /* the proxy's words (host memory): proxied faces wait on them */
  unsigned exchange, unpack, remote, test, proxied;
  unsigned once;                   /* GPU_ACQUIRE_ONCE: one block acquires, tells the others */
  unsigned long long wait_ticks;   /* the longest wait for a word, gpu_wall_ticks */
  unsigned nb;                     /* exchange blocks */
  unsigned gx, gy;                 /* k_zmarch_x: the interior grid's x and y extents */
};

/* Thread 0 of a block that reads the neighbours' values (an exchange block of a signalled
 * pass, an unpack block of the deep exchange): waits until the word of every region q < NR in
 * mask says its neighbour has packed exchange e (the proxy's word hin[q] for a proxied region,
 * polled in host memory: backend.h), at most wait_ticks per word (a longer wait records the
 * stall, the first one: region + 1 and exchange, and ends the waiting of this launch and of
 * every later one), then acquires. Each block acquires for itself, or, where a neighbour is
 * remote and once (GPU_ACQUIRE_ONCE) is set, block 0 alone does at system scope and tells the
 * others by `go` (see above). */
template <int NR>
__device__ __forceinline__ void sig_wait_acquire(uint32_t *words, const uint32_t *hin, unsigned proxied, unsigned mask,
                                                 unsigned test, unsigned remote, unsigned once,
                                                 unsigned long long wait_ticks, uint32_t e, unsigned b)
{
  if (remote && once && b != 0) {
    while ((int32_t)(gpu_ld_sys(words + BE_SIG_GO) - (e + 1u)) < 0) {
    }
    __threadfence();
    return;
  }
  if (!(test & BE_SIG_TEST_NOWAIT) && gpu_ld_sys(words + BE_SIG_STALL) == 0u)
    for (int q = 0; q < NR; q++) {
      if (!(mask >> q & 1u)) continue;
      const uint32_t *w = (proxied >> q & 1u ? hin : words) + q;
      if ((int32_t)(gpu_ld_sys(w) - (e + 1u)) >= 0) continue;
      const unsigned long long t0 = gpu_wall_ticks();
      bool stalled = false;
      while ((int32_t)(gpu_ld_sys(w) - (e + 1u)) < 0)
        if (gpu_wall_ticks() - t0 > wait_ticks) {
          if (atomicCAS(words + BE_SIG_STALL, 0u, (unsigned)q + 1u) == 0u) gpu_st_sys(words + BE_SIG_STALL_AT, e);
          stalled = true;
          break;
        }
      if (stalled) break;
    }
  if (!remote) {
    __threadfence();
    return;
  }
  gpu_acquire_system();
  if (once) gpu_st_sys(words + BE_SIG_GO, e + 1u);
}

template <bool HAS_F, int MODE> __device__ __forceinline__ void xg_block(const xg_args &x, unsigned b)
{
  const uint32_t e = gpu_ld_sys(x.words + BE_SIG_SEQ);
  const unsigned tid = threadIdx.x + blockDim.x * threadIdx.y, nt = blockDim.x * blockDim.y;
  if (MODE != XG_PRIME) {
    if (tid == 0)
      sig_wait_acquire<FD_FACES>(x.words, x.hin, x.proxied, x.exchange, x.test, x.remote, x.once, x.wait_ticks, e, b);
    __syncthreads();
  }
  const unsigned rs = e & 1u, ws = MODE == XG_PRIME ? rs : rs ^ 1u;
  const shell_slabs &sl = x.sl;
  const st_args &a = x.s;
  real_t *u = const_cast<real_t *>(a.u);
  /* 32-bit within a slab (signals_args: a slab holds fewer than 2^31 points) */
  for (long long t = (long long)b * nt + tid; t < sl.start[sl.nb]; t += (long long)x.nb * nt) {
    int q = 0;
    for (int r = 1; r < sl.nb; r++)
      if (t >= sl.start[r]) q = r;
    const unsigned r = (unsigned)(t - sl.start[q]);
    const unsigned ex = (unsigned)(sl.hi[q][0] - sl.lo[q][0] + 1), ey = (unsigned)(sl.hi[q][1] - sl.lo[q][1] + 1);
    const unsigned rx = r / ex;
    const int c0 = sl.lo[q][0] + (int)(r - rx * ex), c1 = sl.lo[q][1] + (int)(rx % ey),
              c2 = sl.lo[q][2] + (int)(rx / ey);
    const long long p = a.origin + c0 + a.sx * c1 + a.sxy * c2;
    /* the faces whose layer holds the point */
    const unsigned on = (unsigned)(c0 == 1) | (unsigned)(c0 == x.n[0]) << 1 | (unsigned)(c1 == 1) << 2 |
                        (unsigned)(c1 == x.n[1]) << 3 | (unsigned)(c2 == 1) << 4 | (unsigned)(c2 == x.n[2]) << 5;
    const unsigned from_peer = MODE == XG_PRIME ? 0u : on & x.unpack;
    /* the point's place in the regions of x, y and z faces (no arrays: registers) */
    const long long at_x = (c1 - 1) + (long long)x.n[1] * (c2 - 1), at_y = (c0 - 1) + (long long)x.n[0] * (c2 - 1),
                    at_z = (c0 - 1) + (long long)x.n[0] * (c1 - 1);
    const real_t n0 = from_peer & 1u ? gpu_ld_shared_l2(x.in[0][rs] + at_x) : u[p - 1];
    const real_t n1 = from_peer >> 1 & 1u ? gpu_ld_shared_l2(x.in[1][rs] + at_x) : u[p + 1];
    const real_t n2 = from_peer >> 2 & 1u ? gpu_ld_shared_l2(x.in[2][rs] + at_y) : u[p - a.sx];
    const real_t n3 = from_peer >> 3 & 1u ? gpu_ld_shared_l2(x.in[3][rs] + at_y) : u[p + a.sx];
    const real_t n4 = from_peer >> 4 & 1u ? gpu_ld_shared_l2(x.in[4][rs] + at_z) : u[p - a.sxy];
    const real_t n5 = from_peer >> 5 & 1u ? gpu_ld_shared_l2(x.in[5][rs] + at_z) : u[p + a.sxy];
    const real_t up = u[p];
    real_t v = up;
    if (MODE == XG_PASS) {
      const bool l2 = c2 > x.k1; /* the second layer's coefficients (scalars: no copy of a struct) */
      const real_t kc = l2 ? x.s2.cc : a.cc, kx = l2 ? x.s2.cx : a.cx, ky = l2 ? x.s2.cy : a.cy,
                   kz = l2 ? x.s2.cz : a.cz, kf = l2 ? x.s2.cf : a.cf;
      v = HAS_F ? fd_stencil_point_f(kc, kx, ky, kz, kf, v, n0, n1, n2, n3, n4, n5, f_at<HAS_F>(a, p))
                : fd_stencil_point(kc, kx, ky, kz, v, n0, n1, n2, n3, n4, n5);
      if (p == x.src_p) { /* be_add_point's sum, where the value is not 0 */
        const real_t sv = e < x.src_len ? x.src_vals[e] : (real_t)0;
        if (sv != (real_t)0) v += sv;
      }
      if (!(x.test & BE_SIG_TEST_NOSHELL)) a.out[p] = v;
    }
    const real_t sent = x.pack_u ? up : v;
    const unsigned packs = on & x.exchange;
    if (packs & 1u) x.out[0][ws][at_x] = sent;
    if (packs >> 1 & 1u) x.out[1][ws][at_x] = sent;
    if (packs >> 2 & 1u) x.out[2][ws][at_y] = sent;
    if (packs >> 3 & 1u) x.out[3][ws][at_y] = sent;
    if (packs >> 4 & 1u) x.out[4][ws][at_z] = sent;
    if (packs >> 5 & 1u) x.out[5][ws][at_z] = sent;
    if (from_peer & 1u) u[p - 1] = n0;
    if (from_peer >> 1 & 1u) u[p + 1] = n1;
    if (from_peer >> 2 & 1u) u[p - a.sx] = n2;
    if (from_peer >> 3 & 1u) u[p + a.sx] = n3;
    if (from_peer >> 4 & 1u) u[p - a.sxy] = n4;
    if (from_peer >> 5 & 1u) u[p + a.sxy] = n5;
  }
  __threadfence();
  __syncthreads();
  if (tid == 0 && atomicAdd(x.words + BE_SIG_ARRIVALS, 1u) == x.nb - 1) {
    x.words[BE_SIG_ARRIVALS] = 0;
    if (MODE != XG_PRIME) gpu_st_sys(x.words + BE_SIG_SEQ, e + 1u);
    if (x.remote) __threadfence_system(); /* once per launch (see above) */
    else __threadfence();
    const uint32_t packed = MODE == XG_PRIME ? e + 1u : e + 2u;
    for (int fc = 0; fc < FD_FACES && !(x.test & BE_SIG_TEST_MUTE); fc++)
      if (x.exchange >> fc & 1u) gpu_st_sys(x.peer_in[fc], packed);
    if (x.remote) gpu_push_system(); /* the words leave this device's caches now */
  }
}

template <bool HAS_F, int MODE>
__global__ void __launch_bounds__(PLANE_MAX_BLOCK) k_sig(const xg_args x)
{
  xg_block<HAS_F, MODE>(x, blockIdx.x);
}

/* A pass in one launch: blocks 0..nb-1 the exchange, the rest k_zmarch's grid (gx x gy x
 * the rest), flattened. */
template <int R, int V, bool HAS_F>
__global__ void __launch_bounds__(FD_KERNEL_MAX_BLOCK) k_zmarch_x(const st_args a, const xg_args x)
{
  if (blockIdx.x < x.nb) {
    xg_block<HAS_F, XG_PASS>(x, blockIdx.x);
    return;
  }
  const unsigned L = blockIdx.x - x.nb;
  zmarch_body<R, V, HAS_F>(a, L % x.gx, L / x.gx % x.gy, L / (x.gx * x.gy));
}

/* ---- the deep exchange signalled on the device (be_signals_pack, _unpack, _exchange) ---------
 * backend.h has the protocol. The exchanged regions' elements (each field's box, one after
 * the other: the region's message) flattened into one list that the launch's nb blocks stride
 * over: the pack (SIGD_PACK) stores them into the slots, and its last block (the count
 * BE_SIG_PACKS) fences once and sets the neighbours' words, as xg_block's last block; the
 * unpack (SIGD_UNPACK) waits and acquires as the exchange blocks of a signalled pass
 * (xg_block: each block for itself, or on AMD block 0 for all through `go`), loads the
 * neighbours' values into the ghosts, and its last block (BE_SIG_ARRIVALS) sets seq. One
 * launch may do both (SIGD_BOTH: each block packs its share, counts itself, then waits): a
 * block then waits for the neighbours' packs while blocks of the same launch may not have
 * packed yet, so every block of the launch must be resident at once. be_signals_exchange takes
 * it only where this rank is alone on its device and every neighbour is on another (nothing
 * else on the device waits), with nb at most 4 x the multiprocessors, 256 threads each (28
 * registers on sm_90: half of what a multiprocessor holds), and at most what the device holds
 * at once by its occupancy query (a build with more registers gets fewer blocks, not a stall);
 * elsewhere the pack and the unpack are two launches, and the unpack's waiting blocks, which
 * wait only for packs (which never wait), leave room as the exchange blocks of signals_args
 * do (waiting_room). */
enum { SIGD_PACK = 1, SIGD_UNPACK = 2, SIGD_BOTH = 3 };

struct xd_args {
  real_t *u, *u2;                  /* field 0 and field 1 (u2: NULL with one field) */
  long long sx, sxy, origin;
  int nr;                          /* regions in the list (those of exchange) */
  unsigned unpack;                 /* bit q: list entry q is unpacked */
  int lo_s[FD_REGIONS][3], lo_r[FD_REGIONS][3]; /* entry q's send box and receive box origins */
  int e0[FD_REGIONS], e1[FD_REGIONS];
  unsigned count[FD_REGIONS];      /* points of one field's box */
  unsigned long long start[FD_REGIONS + 1]; /* first element of each in the flattened list */
  real_t *out[FD_REGIONS][2];      /* by slot */
  const real_t *in[FD_REGIONS][2];
  uint32_t *words, *peer_in[FD_REGIONS];
  const uint32_t *hin;             /* as xg_args */
  unsigned exchange, remote, test, once, proxied;
  unsigned long long wait_ticks;
  unsigned nb;
};

/* Element t of the list: its entry *q, its place l in the entry's message and its field's
 * element in the box of origin lo (lo_s or lo_r). */
__device__ __forceinline__ long long xd_point(const xd_args &x, unsigned long long t, bool recv, int *q, unsigned *l,
                                              real_t **fld)
{
  int e = 0;
  for (int r = 1; r < x.nr; r++)
    if (t >= x.start[r]) e = r;
  const unsigned m = (unsigned)(t - x.start[e]);
  const unsigned field = m >= x.count[e] ? 1u : 0u, pt = m - field * x.count[e];
  const unsigned e0 = (unsigned)x.e0[e], plane = e0 * (unsigned)x.e1[e];
  const unsigned k = pt / plane, rest = pt - k * plane, j = rest / e0, i = rest - j * e0;
  const int *lo = recv ? x.lo_r[e] : x.lo_s[e];
  *q = e, *l = m, *fld = field ? x.u2 : x.u;
  return x.origin + (lo[0] + (int)i) + x.sx * (long long)(lo[1] + (int)j) + x.sxy * (long long)(lo[2] + (int)k);
}

template <int MODE> __global__ void __launch_bounds__(256) k_sigd(const xd_args x)
{
  const uint32_t e = gpu_ld_sys(x.words + BE_SIG_SEQ);
  const unsigned tid = threadIdx.x, b = blockIdx.x, slot = e & 1u;
  const unsigned long long total = x.start[x.nr], stride = (unsigned long long)x.nb * 256u;
  if (MODE & SIGD_PACK) {
    for (unsigned long long t = (unsigned long long)b * 256u + tid; t < total; t += stride) {
      int q;
      unsigned l;
      real_t *fld;
      const long long fi = xd_point(x, t, false, &q, &l, &fld);
      x.out[q][slot][l] = fld[fi];
    }
    __threadfence();
    __syncthreads();
    if (tid == 0 && atomicAdd(x.words + BE_SIG_PACKS, 1u) == x.nb - 1) {
      x.words[BE_SIG_PACKS] = 0;
      if (x.remote) __threadfence_system(); /* once per launch (see xg_block) */
      else __threadfence();
      for (int q = 0; q < x.nr && !(x.test & BE_SIG_TEST_MUTE); q++) gpu_st_sys(x.peer_in[q], e + 1u);
      if (x.remote) gpu_push_system();
    }
  }
  if (MODE & SIGD_UNPACK) {
    if (tid == 0)
      sig_wait_acquire<FD_REGIONS>(x.words, x.hin, x.proxied, x.exchange, x.test, x.remote, x.once, x.wait_ticks, e, b);
    __syncthreads();
    for (unsigned long long t = (unsigned long long)b * 256u + tid; t < total; t += stride) {
      int q;
      unsigned l;
      real_t *fld;
      const long long fi = xd_point(x, t, true, &q, &l, &fld);
      if (x.unpack >> q & 1u) fld[fi] = gpu_ld_shared_l2(x.in[q][slot] + l);
    }
    __threadfence();
    __syncthreads();
    if (tid == 0 && atomicAdd(x.words + BE_SIG_ARRIVALS, 1u) == x.nb - 1) {
      x.words[BE_SIG_ARRIVALS] = 0;
      gpu_st_sys(x.words + BE_SIG_SEQ, e + 1u);
    }
  }
}

/* ---- the kernel instances -------------------------------------------------------------------- */

typedef void (*kxfn)(st_args, xg_args);
template <bool F> kxfn zmarch_x_t(int rows, int vec)
{
  static const kxfn z[2][2] = {{k_zmarch_x<1, 1, F>, k_zmarch_x<1, 2, F>}, {k_zmarch_x<2, 1, F>, k_zmarch_x<2, 2, F>}};
  return z[rows == 2][vec == 2];
}
kxfn zmarch_x_fn(bool f, int rows, int vec) { return f ? zmarch_x_t<true>(rows, vec) : zmarch_x_t<false>(rows, vec); }

} /* namespace */
} /* namespace stencil */

using namespace stencil;

/* ---- API -------------------------------------------------------------------------------------- */

extern "C" int be_shell_exchange(const fd_grid *g, unsigned deferred, const fd_coeffs *c, real_t *u,
                                 const real_t *f, real_t *out, const fd_faces *faces,
                                 const real_t *recv, unsigned unpack, real_t *send, unsigned pack,
                                 be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_shell_exchange: be_init was not called");
  char why[160];
  if (fd_shell_exchange_check(g, deferred, faces, unpack, pack, why, sizeof why))
    return gpu_failf_private(BE_ERROR, "%s", why);
  if (u == out) return gpu_failf_private(BE_ERROR, "be_shell_exchange: u and out must differ");
  if (out && !c) return gpu_failf_private(BE_ERROR, "be_shell_exchange: the stencil needs its coefficients");
  if (g->n[0] < 1 || g->n[1] < 1 || g->n[2] < 1) return BE_OK;
  st_args a;
  memset(&a, 0, sizeof a);
  a.u = u, a.f = f, a.out = out;
  if (c) a.cc = c->cc, a.cx = c->cx, a.cy = c->cy, a.cz = c->cz, a.cf = c->cf;
  a.sx = g->sx, a.sxy = g->sxy, a.origin = g->origin;
  shell_xargs x;
  memset(&x, 0, sizeof x);
  x.recv = recv, x.send = send, x.unpack = unpack, x.pack = pack;
  for (int d = 0; d < 3; d++) x.n[d] = g->n[d];
  for (int fc = 0; fc < FD_FACES; fc++) x.off[fc] = (long long)faces->offset[fc];
  shell_slabs sl;
  shell_plan(g, deferred, 1, g->n[2], &sl);
  const long long total = sl.start[sl.nb];
  if (total == 0) return BE_OK;
  const unsigned blocks = (unsigned)((total + PLANE_MAX_BLOCK - 1) / PLANE_MAX_BLOCK);
  const hipStream_t st = gpu_stream(s);
  if (!out) k_shell_x<false, false><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  else if (f) k_shell_x<true, true><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  else k_shell_x<false, true><<<blocks, PLANE_MAX_BLOCK, 0, st>>>(a, sl, x);
  GPU_LAUNCHED("k_shell_x");
  return BE_OK;
}

/* The most blocks one launch of this rank may keep waiting for its neighbours: where every
 * neighbour is on another device (all_remote) and no other rank runs on this one, no launch on
 * this device waits for this rank's blocks: XG_MAX_BLOCKS_PEERS; else the ranks sharing the
 * device (be_set_device_sharers) share its multiprocessors' worth of waiting blocks,
 * XG_MAX_BLOCKS to XG_MAX_BLOCKS_PEERS each (a neighbour through the proxy counts as remote,
 * but under MPS it may be one of those ranks: emulated nodes). */
static long long waiting_room(bool all_remote)
{
  if (all_remote && gpu_sharers_private == 1) return XG_MAX_BLOCKS_PEERS;
  const long long most = (long long)gpu_props_private.sm_count / gpu_sharers_private;
  return most < (long long)XG_MAX_BLOCKS ? (long long)XG_MAX_BLOCKS : most > (long long)XG_MAX_BLOCKS_PEERS ? (long long)XG_MAX_BLOCKS_PEERS : most;
}

/* be_signals' arguments as the kernels take them, the exchange blocks sized for `threads`
 * threads each; BE_ERROR for arguments no backend takes. */
static int signals_args(const fd_grid *g, const be_signals *x, const fd_coeffs *c, const be_sig_stencil *v,
                        const real_t *u, const real_t *f, real_t *out, unsigned threads, xg_args *a, const char *who)
{
  char why[160];
  if (!gpu_initialized_private) return gpu_failf_private(BE_ERROR, "%s: be_init was not called", who);
  if (fd_signals_check(g, x, who, why, sizeof why)) return gpu_failf_private(BE_ERROR, "%s", why);
  if (out && v && fd_sig_stencil_check(g, x, v, who, why, sizeof why)) return gpu_failf_private(BE_ERROR, "%s", why);
  if (u == out) return gpu_failf_private(BE_ERROR, "%s: u and out must differ", who);
  if (out && !c) return gpu_failf_private(BE_ERROR, "%s: the stencil needs its coefficients", who);
  memset(a, 0, sizeof *a);
  a->s.u = u, a->s.f = f, a->s.out = out;
  if (c) a->s.cc = c->cc, a->s.cx = c->cx, a->s.cy = c->cy, a->s.cz = c->cz, a->s.cf = c->cf;
  a->s.sx = g->sx, a->s.sxy = g->sxy, a->s.origin = g->origin;
  a->s2 = a->s, a->k1 = INT_MAX, a->src_p = -1;
  if (out && v) {
    const fd_coeffs *c2 = v->c2;
    if (c2) a->s2.cc = c2->cc, a->s2.cx = c2->cx, a->s2.cy = c2->cy, a->s2.cz = c2->cz, a->s2.cf = c2->cf, a->k1 = v->k1;
    a->pack_u = v->pack_u != 0;
    if (v->src_on) {
      a->src_p = fd_grid_index(g, v->src[0], v->src[1], v->src[2]);
      a->src_vals = v->src_vals, a->src_len = v->src_len;
    }
  }
  shell_plan(g, x->exchange, 1, g->n[2], &a->sl);
  for (int d = 0; d < 3; d++) a->n[d] = g->n[d];
  for (int fc = 0; fc < FD_FACES; fc++) {
    for (int q = 0; q < 2; q++) a->in[fc][q] = x->in[fc][q], a->out[fc][q] = x->out[fc][q];
    a->peer_in[fc] = x->peer_in[fc];
  }
  a->words = x->words;
  a->hin = x->hin, a->proxied = x->proxied & x->exchange;
  a->exchange = x->exchange, a->unpack = x->unpack, a->remote = x->remote & x->exchange, a->test = x->test;
  static double hz = 0; /* the clock's rate: one query per process */
  if (hz == 0) hz = gpu_wall_hz();
  a->wait_ticks = (unsigned long long)(x->wait_s * hz);
  const long long most = waiting_room(a->remote == a->exchange);
  /* a proxied face's word is host memory: one block polls it (many would crowd the bus that
   * MPI's own copies use), the others wait for `go` in this device's memory */
  a->once = GPU_ACQUIRE_ONCE || a->proxied;
  const long long need = (a->sl.start[a->sl.nb] + threads - 1) / threads;
  a->nb = need < 1 ? 1u : (need > most ? (unsigned)most : (unsigned)need);
  return BE_OK;
}

extern "C" int be_signals_prime(const fd_grid *g, const be_signals *x, const real_t *u, be_stream s)
{
  xg_args a;
  memset(&a, 0, sizeof a);
  const int rc = signals_args(g, x, NULL, NULL, u, NULL, NULL, PLANE_MAX_BLOCK, &a, "be_signals_prime");
  if (rc) return rc;
  k_sig<false, XG_PRIME><<<a.nb, PLANE_MAX_BLOCK, 0, gpu_stream(s)>>>(a);
  GPU_LAUNCHED("k_sig<prime>");
  return BE_OK;
}

extern "C" int be_signals_pass(const fd_grid *g, const fd_coeffs *c, real_t *u, const real_t *f, real_t *out,
                               fd_kernel k, const be_signals *x, const be_sig_stencil *v, be_stream s)
{
  const hipStream_t st = gpu_stream(s);
  xg_args a;
  memset(&a, 0, sizeof a);
  if (!out) { /* the exchange alone */
    const int rc = signals_args(g, x, NULL, NULL, u, NULL, NULL, PLANE_MAX_BLOCK, &a, "be_signals_pass");
    if (rc) return rc;
    k_sig<false, XG_COPY><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
    GPU_LAUNCHED("k_sig<copy>");
    return BE_OK;
  }
  int lo[3], hi[3];
  fd_interior_box(g, x->exchange, lo, hi);
  const bool empty = hi[0] < lo[0] || hi[1] < lo[1] || hi[2] < lo[2];
  /* the interior's coefficients: c, or v's second layer's where all its planes lie beyond
   * v->k1; planes on both sides (split) take two launches of their own */
  const fd_coeffs *ci = c;
  bool split = false;
  if (v && v->c2 && c) {
    if (lo[2] > v->k1) ci = v->c2;
    else if (hi[2] > v->k1) split = true;
  }
  st_args m; /* the interior's */
  memset(&m, 0, sizeof m);
  m.u = u, m.f = f, m.out = out;
  m.cc = ci ? ci->cc : 0, m.cx = ci ? ci->cx : 0, m.cy = ci ? ci->cy : 0, m.cz = ci ? ci->cz : 0, m.cf = ci ? ci->cf : 0;
  m.sx = g->sx, m.sxy = g->sxy, m.origin = g->origin;
  const bool aligned = ((uintptr_t)u | (uintptr_t)out | (uintptr_t)f) % (2 * sizeof(real_t)) == 0;
  if (!empty && !split && k.id == FD_KERNEL_ZMARCH) { /* one launch */
    int rc = resolve(g, &k, lo, hi, aligned);
    if (!rc) rc = setup_tiles(g, &k, lo, hi, &m);
    if (!rc) rc = signals_args(g, x, c, v, u, f, out, (unsigned)(k.block[0] * k.block[1]), &a, "be_signals_pass");
    if (rc) return rc;
    const long long gz = (long long)k.strips * m.nchunks, blocks = (long long)m.ntx * m.tps * gz + a.nb;
    if (gz > 65535 || m.tps > 65535 || blocks > 0x7fffffffLL)
      return gpu_failf_private(BE_ERROR, "k_zmarch_x: grid %d x %d x %lld too large", m.ntx, m.tps, gz);
    a.gx = (unsigned)m.ntx, a.gy = (unsigned)m.tps;
    zmarch_l2(g, lo, hi, m);
    const dim3 block((unsigned)k.block[0], (unsigned)k.block[1]);
    zmarch_x_fn(f != NULL, k.tile, k.vec)<<<(unsigned)blocks, block, 0, st>>>(m, a);
    GPU_LAUNCHED("k_zmarch_x");
    return BE_OK;
  }
  /* the interior in its own launch (two: planes to v->k1, then the rest, where split), then
   * the exchange (the same stream: no edge) */
  const int rc = signals_args(g, x, c, v, u, f, out, PLANE_MAX_BLOCK, &a, "be_signals_pass");
  if (rc) return rc;
  if (empty) {
    const int all_lo[3] = {1, 1, 1}, all_hi[3] = {g->n[0], g->n[1], g->n[2]};
    const int r2 = resolve(g, &k, all_lo, all_hi, true);
    if (r2) return r2;
  } else if (split) {
    int hi1[3] = {hi[0], hi[1], v->k1}, lo2[3] = {lo[0], lo[1], v->k1 + 1};
    st_args m2 = m;
    m2.cc = v->c2->cc, m2.cx = v->c2->cx, m2.cy = v->c2->cy, m2.cz = v->c2->cz, m2.cf = v->c2->cf;
    fd_kernel k2 = k;
    int r2 = launch_box(g, lo, hi1, m, &k, st);
    if (!r2) r2 = launch_box(g, lo2, hi, m2, &k2, st);
    if (r2) return r2;
  } else {
    const int r2 = launch_box(g, lo, hi, m, &k, st);
    if (r2) return r2;
  }
  if (f) k_sig<true, XG_PASS><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
  else k_sig<false, XG_PASS><<<a.nb, PLANE_MAX_BLOCK, 0, st>>>(a);
  GPU_LAUNCHED("k_sig<pass>");
  return BE_OK;
}

extern "C" int be_signals_stall(const be_signals *x, int *face, uint32_t *exchange)
{
  uint32_t w[2] = {0, 0};
  *face = -1, *exchange = 0;
  GPU(hipMemcpy(w, x->words + BE_SIG_STALL, sizeof w, hipMemcpyDeviceToHost));
  *face = w[0] ? (int)w[0] - 1 : -1;
  *exchange = w[1];
  return BE_OK;
}

namespace stencil {
namespace {
/* The arguments of k_sigd over x's exchanged regions. */
int sigd_args(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, int mode, xd_args *a, const char *who)
{
  char why[192];
  if (!gpu_initialized_private) return gpu_failf_private(BE_ERROR, "%s: be_init was not called", who);
  if (fd_signals_regions_check(g, x, who, why, sizeof why)) return gpu_failf_private(BE_ERROR, "%s", why);
  if (x->faces2 && !u2) return gpu_failf_private(BE_ERROR, "%s: two fields and no second one", who);
  memset(a, 0, sizeof *a);
  a->u = u, a->u2 = x->faces2 ? u2 : NULL;
  a->sx = g->sx, a->sxy = g->sxy, a->origin = g->origin;
  const fd_faces *fa = x->faces;
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!(x->exchange >> r & 1u)) continue;
    int lo[3], hi[3], rlo[3], rhi[3];
    fd_region_box(fa->n, fa->width, r, 0, lo, hi);
    fd_region_box(fa->n, fa->width, r, 1, rlo, rhi);
    const int q = a->nr++;
    for (int d = 0; d < 3; d++) a->lo_s[q][d] = lo[d], a->lo_r[q][d] = rlo[d];
    a->e0[q] = hi[0] - lo[0] + 1, a->e1[q] = hi[1] - lo[1] + 1;
    a->count[q] = (unsigned)fa->count[r];
    a->start[q + 1] = a->start[q] + (unsigned long long)fa->count[r] * (unsigned)fa->fields;
    if (x->unpack >> r & 1u) a->unpack |= 1u << q;
    for (int sl = 0; sl < 2; sl++) a->out[q][sl] = x->out[r][sl], a->in[q][sl] = x->in[r][sl];
    a->peer_in[q] = x->peer_in[r];
  }
  a->words = x->words;
  a->exchange = x->exchange, a->remote = x->remote & x->exchange, a->test = x->test;
  a->hin = x->hin, a->proxied = x->proxied & x->exchange; /* by region, as the wait's mask */
  a->once = GPU_ACQUIRE_ONCE || a->proxied; /* as signals_args */
  static double hz = 0;
  if (hz == 0) hz = gpu_wall_hz();
  a->wait_ticks = (unsigned long long)(x->wait_s * hz);
  /* a pack waits for nothing: 4 x the multiprocessors over the ranks sharing the device; an
   * unpack waits: the exchange blocks' room (waiting_room); the one-launch kernel: every block
   * resident at once (see k_sigd), at most what the device holds of k_sigd<SIGD_BOTH> */
  long long most = 4LL * gpu_props_private.sm_count / gpu_sharers_private;
  if (most < (long long)XG_MAX_BLOCKS) most = XG_MAX_BLOCKS;
  if (mode == SIGD_UNPACK) most = waiting_room(a->remote == a->exchange);
  if (mode == SIGD_BOTH) {
    static int per_sm = -1; /* one query per process: the device is fixed */
    if (per_sm < 0) GPU(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k_sigd<SIGD_BOTH>, 256, 0));
    const long long fits = (long long)per_sm * gpu_props_private.sm_count;
    if (fits < 1) return gpu_failf_private(BE_ERROR, "%s: no block of the exchange fits on the device", who);
    if (most > fits) most = fits;
  }
  const long long need = (long long)((a->start[a->nr] + 255) / 256);
  a->nb = need < 1 ? 1u : (need > most ? (unsigned)most : (unsigned)need);
  return BE_OK;
}

template <int MODE> int sigd_launch(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, be_stream s,
                                    const char *who)
{
  xd_args a;
  const int rc = sigd_args(g, x, u, u2, MODE, &a, who);
  if (rc) return rc;
  k_sigd<MODE><<<a.nb, 256, 0, gpu_stream(s)>>>(a);
  GPU_LAUNCHED(who);
  return BE_OK;
}
} /* namespace */
} /* namespace stencil */

extern "C" int be_signals_pack(const fd_grid *g, const be_signals *x, const real_t *u, const real_t *u2, be_stream s)
{
  return sigd_launch<SIGD_PACK>(g, x, (real_t *)u, (real_t *)u2, s, "be_signals_pack");
}

extern "C" int be_signals_unpack(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, be_stream s)
{
  return sigd_launch<SIGD_UNPACK>(g, x, u, u2, s, "be_signals_unpack");
}

extern "C" int be_signals_exchange(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, be_stream s)
{
  /* one launch only where nothing else on this device waits (see k_sigd): every neighbour on
   * another device, no other rank on this one; else the pack, then the unpack */
  if ((x->remote & x->exchange) == x->exchange && gpu_sharers_private == 1)
    return sigd_launch<SIGD_BOTH>(g, x, u, u2, s, "be_signals_exchange");
  const int rc = sigd_launch<SIGD_PACK>(g, x, u, u2, s, "be_signals_exchange(pack)");
  return rc ? rc : sigd_launch<SIGD_UNPACK>(g, x, u, u2, s, "be_signals_exchange(unpack)");
}

namespace stencil {
namespace {
/* be_test_delay: one thread waits `ticks` of the wall clock */
__global__ void k_test_delay(unsigned long long ticks)
{
  const unsigned long long t0 = gpu_wall_ticks();
  while (gpu_wall_ticks() - t0 < ticks) {
  }
}
} /* namespace */
} /* namespace stencil */

extern "C" int be_test_delay(be_stream s, double us)
{
  if (us <= 0) return BE_OK;
  k_test_delay<<<1, 1, 0, gpu_stream(s)>>>((unsigned long long)(us * 1e-6 * gpu_wall_hz()));
  GPU_LAUNCHED("k_test_delay");
  return BE_OK;
}
