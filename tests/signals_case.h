/* signals_case.h - one case of the exchange signalled inside the pass's launch (backend.h,
 * be_signals_pass), shared by the host test (test_faces_pack_unpack.c) and the GPU test
 * (gpu/test_gpu_regions.c). Test-only, header-only.
 *
 * Two blocks of one process stand for two ranks split along z: A (planes 1..nza of a global
 * nx x ny x (nza + nzb) grid) below B (the planes above), each with its own words, slots and
 * field buffers, A's high-z face and B's low-z face exchanged; their exchanged ghosts start as
 * NaN. After be_signals_prime of both, `steps` passes (be_signals_pass, each rank's buffers
 * rotating) must give, point for point and bit for bit, the global grid's `steps` steps of
 * be_stencil over the whole block (the same random start, the same Dirichlet ghosts). Passes go
 * A, B, A, B, ... on stream sa, or (concurrent, GPUs) every pass of A on sa and every pass of B
 * on sb, so that A's launches wait on the device for B's words. `fault` drops A's unpack (its
 * ghosts stay NaN): the comparison must then fail. Returns the number of points of the two
 * blocks that differ, or -1 where a backend call failed (*why: its message). With out == NULL
 * (copy = 1), one exchange alone instead: A's ghosts must then hold B's lowest layer and B's
 * A's highest. `store`: the faces go as the sender's stores into the receiver's slots, else
 * the receiver loads them from the sender's (be_signals.in, .out). `var` (or NULL) adds what
 * the operators beyond heat and jacobi need (be_sig_stencil): see sig_variant. */
#ifndef FDMINI_TEST_SIGNALS_CASE_H
#define FDMINI_TEST_SIGNALS_CASE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

#define SIG_TRY(call)                                                                         \
  do {                                                                                        \
    if ((call) != BE_OK) {                                                                    \
      snprintf(why, why_len, "%s: %s", #call, be_error_message());                            \
      rc = -1;                                                                                \
      goto done;                                                                              \
    }                                                                                         \
  } while (0)

/* laplacian: u stays (every pass out = L(u): the faces packed are u's); k1: the coefficients c
 * for global planes k <= k1, c2 beyond (k1 >= nza + nzb: c only); src_k (0: none): a source at
 * the global point (1 + nx/2, 1 + ny/2, src_k) whose value for step t, src_value(t) (0 every
 * third step), is added to the point's new value, in the launch where the point lies in its
 * rank's shell, else by be_add_point after the pass (the solver's two ways); skip_src plants
 * the fault of a launch that leaves it out (be_add_point after the pass adds it to the point,
 * but the face packed in the launch went without it): the comparison must fail. */
typedef struct {
  int laplacian, k1, src_k, skip_src;
} sig_variant;

static real_t src_value(int t) { return t % 3 == 2 ? (real_t)0 : (real_t)(0.5 + 0.25 * t); }

static long signals_case(int nx, int ny, int nza, int nzb, int with_f, fd_kernel_id kid, int steps,
                         int fault, int copy, int store, const sig_variant *var, be_stream sa, be_stream sb,
                         char *why, size_t why_len)
{
  const sig_variant none = {0, nza + nzb, 0, 0};
  if (!var) var = &none;
  long rc = 0;
  const int ng[3] = {nx, ny, nza + nzb}, na[3] = {nx, ny, nza}, nb[3] = {nx, ny, nzb};
  fd_grid G, ga, gb;
  if (fd_grid_init(&G, ng, 1) || fd_grid_init(&ga, na, 1) || fd_grid_init(&gb, nb, 1)) {
    snprintf(why, why_len, "fd_grid_init");
    return -1;
  }
  fd_faces fa, fb;
  fd_faces_init(&fa, na);
  fd_faces_init(&fb, nb);
  fa.active[5] = fb.active[4] = 1;
  real_t *hg = malloc(2 * G.elems * sizeof(real_t)), *hx = malloc(G.elems * sizeof(real_t));
  real_t *dg[2] = {NULL, NULL}, *da[2] = {NULL, NULL}, *db[2] = {NULL, NULL}, *dfg = NULL, *dfa = NULL, *dfb = NULL;
  real_t *slots_a = NULL, *slots_b = NULL;
  uint32_t *wa = NULL, *wb = NULL;
  const uint32_t zero[BE_SIG_WORDS] = {0};
  fd_field rnd;
  memset(&rnd, 0, sizeof rnd);
  rnd.kind = FD_FIELD_RANDOM, rnd.scale = 1.0, rnd.seed = 77;
  for (int d = 0; d < 3; d++) rnd.h[d] = rnd.L[d] = 1.0;
  fd_field rf = rnd;
  rf.seed = 78;
  fd_coeffs c;
  memset(&c, 0, sizeof c);
  c.cc = (real_t)-5.5, c.cx = (real_t)1.25, c.cy = (real_t)0.75, c.cz = (real_t)1.5, c.cf = (real_t)0.125;
  fd_coeffs c2 = c;
  c2.cc = (real_t)-3.25, c2.cx = (real_t)0.5, c2.cz = (real_t)0.625, c2.cf = (real_t)-1.0;
  real_t *vals = NULL, *dvals = NULL;
  fd_kernel k;
  memset(&k, 0, sizeof k);
  k.id = kid;
  if (!hg || !hx) {
    snprintf(why, why_len, "out of host memory");
    rc = -1;
    goto done;
  }
  SIG_TRY(be_kernel_resolve(&ga, &k));
  for (int q = 0; q < 2; q++) {
    SIG_TRY(be_malloc((void **)&dg[q], G.elems * sizeof(real_t)));
    SIG_TRY(be_malloc((void **)&da[q], ga.elems * sizeof(real_t)));
    SIG_TRY(be_malloc((void **)&db[q], gb.elems * sizeof(real_t)));
    SIG_TRY(be_fill(&G, &rnd, dg[q], sa));
  }
  SIG_TRY(be_malloc((void **)&dfg, G.elems * sizeof(real_t)));
  SIG_TRY(be_malloc((void **)&dfa, ga.elems * sizeof(real_t)));
  SIG_TRY(be_malloc((void **)&dfb, gb.elems * sizeof(real_t)));
  SIG_TRY(be_fill(&G, &rf, dfg, sa));
  SIG_TRY(be_malloc((void **)&slots_a, 2 * fa.total * sizeof(real_t)));
  SIG_TRY(be_malloc((void **)&slots_b, 2 * fb.total * sizeof(real_t)));
  if (steps > 0) {
    if (!(vals = malloc((size_t)steps * sizeof(real_t)))) {
      snprintf(why, why_len, "out of host memory");
      rc = -1;
      goto done;
    }
    for (int t = 0; t < steps; t++) vals[t] = src_value(t);
    SIG_TRY(be_malloc((void **)&dvals, (size_t)steps * sizeof(real_t)));
    SIG_TRY(be_memcpy_async(dvals, vals, (size_t)steps * sizeof(real_t), BE_COPY_H2D, sa));
  }
  SIG_TRY(be_malloc((void **)&wa, sizeof zero));
  SIG_TRY(be_malloc((void **)&wb, sizeof zero));
  SIG_TRY(be_memcpy_async(wa, zero, sizeof zero, BE_COPY_H2D, sa));
  SIG_TRY(be_memcpy_async(wb, zero, sizeof zero, BE_COPY_H2D, sa));
  /* the blocks: planes 0..nza+1 and nza..nza+nzb+1 of the global fields, exchanged ghosts NaN */
  const size_t plane = (size_t)G.sxy;
  for (int q = 0; q < 3; q++) {
    real_t *src = q < 2 ? dg[q] : dfg;
    SIG_TRY(be_memcpy_async(hg, src, G.elems * sizeof(real_t), BE_COPY_D2H, sa));
    SIG_TRY(be_stream_sync(sa));
    memcpy(hx, hg, ga.elems * sizeof(real_t));
    for (int j = 0; j <= ny + 1 && q < 2; j++)
      for (int i = 0; i <= nx + 1; i++) hx[fd_grid_index(&ga, i, j, nza + 1)] = (real_t)NAN;
    SIG_TRY(be_memcpy_async(q < 2 ? da[q] : dfa, hx, ga.elems * sizeof(real_t), BE_COPY_H2D, sa));
    SIG_TRY(be_stream_sync(sa));
    memcpy(hx, hg + (size_t)nza * plane, gb.elems * sizeof(real_t));
    for (int j = 0; j <= ny + 1 && q < 2; j++)
      for (int i = 0; i <= nx + 1; i++) hx[fd_grid_index(&gb, i, j, 0)] = (real_t)NAN;
    SIG_TRY(be_memcpy_async(q < 2 ? db[q] : dfb, hx, gb.elems * sizeof(real_t), BE_COPY_H2D, sa));
    SIG_TRY(be_stream_sync(sa));
  }
  be_signals xa, xb;
  memset(&xa, 0, sizeof xa);
  memset(&xb, 0, sizeof xb);
  xa.faces = &fa, xb.faces = &fb;
  xa.exchange = 1u << 5, xb.exchange = 1u << 4;
  xa.unpack = fault ? 0u : xa.exchange, xb.unpack = xb.exchange;
  /* the faces cross as the receiver's loads from the sender's slot, or (store) as the
   * sender's stores into the receiver's: the same bits either way */
  xa.wait_s = xb.wait_s = 10.0;
  xa.remote = store ? xa.exchange : 0u; /* the fences and words of a neighbour on a peer */
  xb.remote = store ? xb.exchange : 0u;
  for (int s = 0; s < 2; s++) {
    real_t *a_face = slots_a + s * fa.total + fa.offset[5], *b_face = slots_b + s * fb.total + fb.offset[4];
    xa.in[5][s] = store ? a_face : b_face;
    xa.out[5][s] = store ? b_face : a_face;
    xb.in[4][s] = store ? b_face : a_face;
    xb.out[4][s] = store ? a_face : b_face;
  }
  xa.words = wa, xb.words = wb;
  xa.peer_in[5] = wb + 4;
  xb.peer_in[4] = wa + 5;
  SIG_TRY(be_signals_prime(&ga, &xa, da[0], sa));
  SIG_TRY(be_signals_prime(&gb, &xb, db[0], sa));
  SIG_TRY(be_stream_sync(sa));
  /* each block's stencil: its local k1 (clamped), the source where it owns the point */
  be_sig_stencil va, vb;
  memset(&va, 0, sizeof va);
  memset(&vb, 0, sizeof vb);
  va.c2 = vb.c2 = &c2;
  va.k1 = var->k1 < 0 ? 0 : (var->k1 > nza ? nza : var->k1);
  vb.k1 = var->k1 - nza < 0 ? 0 : (var->k1 - nza > nzb ? nzb : var->k1 - nza);
  va.pack_u = vb.pack_u = var->laplacian;
  const int src_i = 1 + nx / 2, src_j = 1 + ny / 2, src_a = var->src_k >= 1 && var->src_k <= nza,
            src_b = var->src_k > nza && var->src_k <= nza + nzb;
  be_sig_stencil *vs = src_a ? &va : &vb;
  const int src_kl = src_a ? var->src_k : var->src_k - nza, src_shell = src_a ? src_kl == nza : src_kl == 1;
  if ((src_a || src_b) && src_shell && !var->skip_src) { /* in the launch */
    vs->src_on = 1;
    vs->src[0] = src_i, vs->src[1] = src_j, vs->src[2] = src_kl;
    vs->src_vals = dvals;
    vs->src_len = (uint32_t)steps;
  }
  const int after = (src_a || src_b) && !vs->src_on; /* be_add_point after the pass */
  if (copy) {
    SIG_TRY(be_signals_pass(&ga, NULL, da[0], NULL, NULL, k, &xa, NULL, sa));
    SIG_TRY(be_signals_pass(&gb, NULL, db[0], NULL, NULL, k, &xb, NULL, sa));
  } else {
    /* buffers: u = [0] and out = [1] every pass for the laplacian, else rotating */
    for (int t = 0; t < steps; t++) {
      const int ui = var->laplacian ? 0 : t % 2, oi = var->laplacian ? 1 : (t + 1) % 2;
      const real_t *fg = with_f ? dfg : NULL;
      if (var->k1 >= 1) SIG_TRY(be_stencil_zrange(&G, FD_REGION_ALL, 0u, 1, var->k1 < ng[2] ? var->k1 : ng[2], &c, dg[ui], fg, dg[oi], k, sa));
      if (var->k1 < ng[2]) SIG_TRY(be_stencil_zrange(&G, FD_REGION_ALL, 0u, var->k1 < 0 ? 1 : var->k1 + 1, ng[2], &c2, dg[ui], fg, dg[oi], k, sa));
      if ((src_a || src_b) && vals[t] != 0) SIG_TRY(be_add_point(&G, src_i, src_j, var->src_k, vals[t], dg[oi], sa));
      SIG_TRY(be_signals_pass(&ga, &c, da[ui], with_f ? dfa : NULL, da[oi], k, &xa, &va, sa));
      if (src_a && after && vals[t] != 0) SIG_TRY(be_add_point(&ga, src_i, src_j, src_kl, vals[t], da[oi], sa));
      if (!sb) {
        SIG_TRY(be_signals_pass(&gb, &c, db[ui], with_f ? dfb : NULL, db[oi], k, &xb, &vb, sa));
        if (src_b && after && vals[t] != 0) SIG_TRY(be_add_point(&gb, src_i, src_j, src_kl, vals[t], db[oi], sa));
      }
    }
    for (int t = 0; t < steps && sb; t++) {
      const int ui = var->laplacian ? 0 : t % 2, oi = var->laplacian ? 1 : (t + 1) % 2;
      SIG_TRY(be_signals_pass(&gb, &c, db[ui], with_f ? dfb : NULL, db[oi], k, &xb, &vb, sb));
      if (src_b && after && vals[t] != 0) SIG_TRY(be_add_point(&gb, src_i, src_j, src_kl, vals[t], db[oi], sb));
    }
  }
  if (sb) SIG_TRY(be_stream_sync(sb));
  SIG_TRY(be_stream_sync(sa));
  /* compare: the global result (or, copy, the neighbour's layers) against A's and B's */
  const int r = copy ? 0 : (var->laplacian ? (steps > 0) : steps % 2);
  SIG_TRY(be_memcpy_async(hg, dg[r], G.elems * sizeof(real_t), BE_COPY_D2H, sa));
  SIG_TRY(be_memcpy_async(hx, da[r], ga.elems * sizeof(real_t), BE_COPY_D2H, sa));
  SIG_TRY(be_memcpy_async(hg + G.elems, db[r], gb.elems * sizeof(real_t), BE_COPY_D2H, sa));
  SIG_TRY(be_stream_sync(sa));
  for (int kk = copy ? 0 : 1; kk <= (copy ? nza + 1 : nza); kk++)
    for (int j = 1; j <= ny; j++)
      for (int i = 1; i <= nx; i++) {
        const real_t a = hx[fd_grid_index(&ga, i, j, kk)], g = hg[fd_grid_index(&G, i, j, kk)];
        if (copy ? (kk == nza + 1 && memcmp(&a, &g, sizeof a) != 0) : memcmp(&a, &g, sizeof a) != 0) rc++;
      }
  for (int kk = copy ? 0 : 1; kk <= (copy ? nzb + 1 : nzb); kk++)
    for (int j = 1; j <= ny; j++)
      for (int i = 1; i <= nx; i++) {
        const real_t b = hg[G.elems + fd_grid_index(&gb, i, j, kk)], g = hg[fd_grid_index(&G, i, j, nza + kk)];
        if (copy ? (kk == 0 && memcmp(&b, &g, sizeof b) != 0) : memcmp(&b, &g, sizeof b) != 0) rc++;
      }
done:
  for (int q = 0; q < 2; q++) {
    (void)be_free(dg[q]);
    (void)be_free(da[q]);
    (void)be_free(db[q]);
  }
  (void)be_free(dfg);
  (void)be_free(dfa);
  (void)be_free(dfb);
  (void)be_free(slots_a);
  (void)be_free(slots_b);
  (void)be_free(wa);
  (void)be_free(wb);
  (void)be_free(dvals);
  free(vals);
  free(hg);
  free(hx);
  return rc;
}

/* The variants of sig_variant on blocks of nza and nzb planes (nza >= 3: A has an interior
 * plane): the laplacian, alone and with two layers; two coefficient sets split inside A's
 * interior, at the interface and inside B; a source in A's shell, in B's, in A's interior;
 * each with f off and on, bitwise equal to the global grid, and the source left out of the
 * launch (skip_src) seen where it lies in a shell. 0, or -1 with the first failure in why. */
static int signals_variant_cases(int nx, int ny, int nza, int nzb, fd_kernel_id kid, int steps, int store,
                                 be_stream sa, be_stream sb, char *why, size_t why_len)
{
  const sig_variant vars[] = {{1, nza + nzb, 0, 0},     {0, nza / 2, 0, 0},      {0, nza, 0, 0},
                              {0, nza + 1, 0, 0},       {0, nza + nzb, nza, 0},  {0, nza + nzb, nza + 1, 0},
                              {0, nza + nzb, 1, 0},     {0, nza / 2, nza + 1, 0},  {1, nza / 2, 0, 0}};
  char sub[200];
  for (size_t q = 0; q < sizeof vars / sizeof vars[0]; q++)
    for (int with_f = 0; with_f < 2; with_f++) {
      const sig_variant *v = &vars[q];
      sub[0] = '\0';
      long bad = signals_case(nx, ny, nza, nzb, with_f, kid, steps, 0, 0, store, v, sa, sb, sub, sizeof sub);
      if (bad != 0) {
        snprintf(why, why_len, "variant laplacian %d k1 %d src_k %d f %d: %ld points differ %s", v->laplacian, v->k1,
                 v->src_k, with_f, bad, sub);
        return -1;
      }
      if (v->src_k != nza && v->src_k != nza + 1) continue; /* the source in a shell: */
      sig_variant skip = *v;
      skip.skip_src = 1;
      bad = signals_case(nx, ny, nza, nzb, with_f, kid, steps, 0, 0, store, &skip, sa, sb, sub, sizeof sub);
      if (bad <= 0) {
        snprintf(why, why_len, "variant src_k %d f %d: the source left out of the launch went unseen (%ld %s)",
                 v->src_k, with_f, bad, sub);
        return -1;
      }
    }
  return 0;
}

#endif
