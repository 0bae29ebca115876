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
 * the receiver loads them from the sender's (be_signals.in, .out). */
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

static long signals_case(int nx, int ny, int nza, int nzb, int with_f, fd_kernel_id kid, int steps,
                         int fault, int copy, int store, be_stream sa, be_stream sb, char *why, size_t why_len)
{
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
  if (copy) {
    SIG_TRY(be_signals_pass(&ga, NULL, da[0], NULL, NULL, k, &xa, sa));
    SIG_TRY(be_signals_pass(&gb, NULL, db[0], NULL, NULL, k, &xb, sa));
  } else {
    for (int t = 0; t < steps; t++) {
      SIG_TRY(be_stencil(&G, FD_REGION_ALL, 0u, &c, dg[t % 2], with_f ? dfg : NULL, dg[(t + 1) % 2], k, sa));
      SIG_TRY(be_signals_pass(&ga, &c, da[t % 2], with_f ? dfa : NULL, da[(t + 1) % 2], k, &xa, sa));
      if (!sb) SIG_TRY(be_signals_pass(&gb, &c, db[t % 2], with_f ? dfb : NULL, db[(t + 1) % 2], k, &xb, sa));
    }
    for (int t = 0; t < steps && sb; t++)
      SIG_TRY(be_signals_pass(&gb, &c, db[t % 2], with_f ? dfb : NULL, db[(t + 1) % 2], k, &xb, sb));
  }
  if (sb) SIG_TRY(be_stream_sync(sb));
  SIG_TRY(be_stream_sync(sa));
  /* compare: the global result (or, copy, the neighbour's layers) against A's and B's */
  const int r = copy ? 0 : steps % 2;
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
  free(hg);
  free(hx);
  return rc;
}

#endif
