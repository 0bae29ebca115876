/* test_gpu_regions.c - GPU tests (ctest label gpu) of the halo regions' pack and unpack
 * (faces.h: faces, and for width S >= 2 edges and corners, one or two fields per message),
 * plain C without cmocka, against the geometry computed on the host: for widths 1..4, one
 * and two fields, packed and padded row layouts (odd and tiny extents too), every region and
 * a mix of active and inactive ones:
 *   - every packed box holds the field's send box point for point, x fastest, at its offset;
 *     buffer elements of inactive regions keep their poison (NaN);
 *   - a periodic self-exchange (region r receives the opposite region's message) unpacked
 *     into a NaN field writes every receive box with the right points and nothing else;
 *   - be_shell_exchange (the shell with its unpack and the next pack in one launch) writes
 *     the same bits as be_unpack_faces, be_stencil(SHELL) and be_pack_faces one after the
 *     other: the field with its ghosts, the output and the send buffer;
 *   - the exchange signalled inside the pass's launch (be_signals_pass, ../signals_case.h):
 *     two blocks get the bits of one grid, with the one-launch kernel (zmarch) and with two
 *     launches (reordered), passes alternating on one stream or each block's on its own stream
 *     (the launches then wait on the device for the other's words); with the unpack dropped
 *     the comparison FAILs; the exchange alone lands the neighbours' layers.
 * Ends with "N passed, M failed"; exit status 1 on any failure.
 *
 * Usage: test_gpu_regions [--quick]   (--quick: fewer sizes, for compute-sanitizer)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "gpu_check.h"
#include "../signals_case.h"
#include "../signals_deep_case.h"

static void copy(void *dst, const void *src, size_t bytes, be_copy_kind kind)
{
  REQUIRE(be_memcpy_async(dst, src, bytes, kind, S));
  REQUIRE(be_stream_sync(S));
}

static int same_bits(real_t a, real_t b) { return memcmp(&a, &b, sizeof a) == 0; }

/* One case: extents n, width w, `fields` fields, the regions of `active`. */
static void check_case(const int n[3], int w, int fields, const int active[FD_REGIONS])
{
  fd_grid g;
  if (fd_grid_init(&g, n, w) != 0) {
    printf("FATAL: grid %dx%dx%d too large\n", n[0], n[1], n[2]);
    exit(1);
  }
  fd_faces f[2];
  for (int q = 0; q < fields; q++) {
    fd_faces_init_deep(&f[q], n, w, fields, q);
    for (int r = 0; r < FD_REGIONS; r++) f[q].active[r] = active[r];
  }
  const size_t np = g.elems, nb = f[0].total ? f[0].total : 1;
  real_t *u[2], *du[2], *dw[2], *buf = malloc(nb * sizeof(real_t)), *buf2 = malloc(nb * sizeof(real_t));
  real_t *w_host = malloc(np * sizeof(real_t)), *dbuf, *dbuf2;
  REQUIRE(be_malloc((void **)&dbuf, nb * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dbuf2, nb * sizeof(real_t)));
  for (size_t e = 0; e < nb; e++) buf[e] = (real_t)NAN;
  copy(dbuf, buf, nb * sizeof(real_t), BE_COPY_H2D);
  for (int q = 0; q < fields; q++) {
    fd_field fl;
    memset(&fl, 0, sizeof fl);
    fl.kind = FD_FIELD_RANDOM;
    fl.scale = 1.0;
    fl.seed = 900 + (uint64_t)q;
    for (int d = 0; d < 3; d++) fl.h[d] = fl.L[d] = 1.0;
    u[q] = malloc(np * sizeof(real_t));
    REQUIRE(be_malloc((void **)&du[q], np * sizeof(real_t)));
    REQUIRE(be_malloc((void **)&dw[q], np * sizeof(real_t)));
    REQUIRE(be_fill(&g, &fl, du[q], S));
    copy(u[q], du[q], np * sizeof(real_t), BE_COPY_D2H);
    REQUIRE(be_pack_faces(&g, &f[q], du[q], dbuf, S));
  }
  copy(buf, dbuf, nb * sizeof(real_t), BE_COPY_D2H);
  long bad = 0;
  for (int q = 0; q < fields; q++)
    for (int r = 0; r < FD_REGIONS; r++) {
      if (!f[q].count[r]) continue;
      int lo[3], hi[3];
      fd_region_box(n, w, r, 0, lo, hi);
      size_t e = f[q].offset[r];
      for (int k = lo[2]; k <= hi[2]; k++)
        for (int j = lo[1]; j <= hi[1]; j++)
          for (int i = lo[0]; i <= hi[0]; i++, e++) {
            if (active[r]) bad += !same_bits(buf[e], u[q][fd_grid_index(&g, i, j, k)]);
            else bad += buf[e] == buf[e]; /* untouched: NaN */
          }
    }
  if (bad) {
    n_fail++;
    printf("FAIL: %dx%dx%d width %d, %d field(s): pack: %ld wrong buffer elements\n", n[0], n[1], n[2], w, fields, bad);
  } else {
    n_pass++;
  }
  /* periodic self-exchange, then unpack into NaN fields */
  for (size_t e = 0; e < nb; e++) buf2[e] = (real_t)NAN;
  for (int r = 0; r < FD_REGIONS; r++) {
    const int o = fd_region_opposite(r);
    for (size_t e = 0; e < (size_t)fields * f[0].count[r]; e++) buf2[f[0].offset[r] + e] = buf[f[0].offset[o] + e];
  }
  copy(dbuf2, buf2, nb * sizeof(real_t), BE_COPY_H2D);
  bad = 0;
  long written = 0, expected = 0;
  for (int q = 0; q < fields; q++) {
    for (size_t p = 0; p < np; p++) w_host[p] = (real_t)NAN;
    copy(dw[q], w_host, np * sizeof(real_t), BE_COPY_H2D);
    REQUIRE(be_unpack_faces(&g, &f[q], dbuf2, dw[q], S));
    copy(w_host, dw[q], np * sizeof(real_t), BE_COPY_D2H);
    for (size_t p = 0; p < np; p++) written += w_host[p] == w_host[p];
    for (int r = 0; r < FD_REGIONS; r++) {
      if (!active[r] || !f[q].count[r]) continue;
      expected += (long)f[q].count[r];
      if (!active[fd_region_opposite(r)]) continue; /* its message is NaN: not written visibly */
      int dir[3], lo[3], hi[3];
      fd_region_dir(r, dir);
      fd_region_box(n, w, r, 1, lo, hi);
      for (int k = lo[2]; k <= hi[2]; k++)
        for (int j = lo[1]; j <= hi[1]; j++)
          for (int i = lo[0]; i <= hi[0]; i++)
            bad += !same_bits(w_host[fd_grid_index(&g, i, j, k)],
                              u[q][fd_grid_index(&g, i - dir[0] * n[0], j - dir[1] * n[1], k - dir[2] * n[2])]);
    }
  }
  /* regions whose opposite is inactive received NaN: they are written but not visibly */
  for (int q = 0; q < fields; q++)
    for (int r = 0; r < FD_REGIONS; r++)
      if (active[r] && f[q].count[r] && !active[fd_region_opposite(r)]) expected -= (long)f[q].count[r];
  if (bad || written != expected) {
    n_fail++;
    printf("FAIL: %dx%dx%d width %d, %d field(s): unpack: %ld wrong ghosts, %ld points written (expected %ld)\n",
           n[0], n[1], n[2], w, fields, bad, written, expected);
  } else {
    n_pass++;
  }
  for (int q = 0; q < fields; q++) {
    free(u[q]);
    REQUIRE(be_free(du[q]));
    REQUIRE(be_free(dw[q]));
  }
  free(buf), free(buf2), free(w_host);
  REQUIRE(be_free(dbuf));
  REQUIRE(be_free(dbuf2));
}

/* be_shell_exchange against the three calls (see the top): extents n, faces `deferred`, the
 * ghosts of `unpack` from a buffer, the layers of `pack`, jacobi's f or none, stencil or copy. */
static void check_shell_exchange(const int n[3], unsigned deferred, unsigned unpack, unsigned pack,
                                 int with_f, int stencil)
{
  fd_grid g;
  if (fd_grid_init(&g, n, 1) != 0) exit(1);
  fd_faces fu, fp, fx;
  fd_faces_init(&fu, n);
  fd_faces_init(&fp, n);
  fd_faces_init(&fx, n);
  for (int f = 0; f < 6; f++) {
    fu.active[f] = (int)(unpack >> f & 1u);
    fp.active[f] = (int)(pack >> f & 1u);
    fx.active[f] = (int)(deferred >> f & 1u);
  }
  const size_t np = g.elems, nb = fx.total;
  real_t *du[2], *dout[2], *dsend[2], *dfr, *drecv;
  real_t *h = malloc(2 * (np > nb ? np : nb) * sizeof(real_t));
  fd_field rnd;
  memset(&rnd, 0, sizeof rnd);
  rnd.kind = FD_FIELD_RANDOM, rnd.scale = 1.0, rnd.seed = 31;
  for (int d = 0; d < 3; d++) rnd.h[d] = rnd.L[d] = 1.0;
  fd_field rf = rnd, nan_field = rnd;
  rf.seed = 32;
  nan_field.kind = FD_FIELD_CONST, nan_field.scale = NAN;
  for (int q = 0; q < 2; q++) {
    REQUIRE(be_malloc((void **)&du[q], np * sizeof(real_t)));
    REQUIRE(be_malloc((void **)&dout[q], np * sizeof(real_t)));
    REQUIRE(be_malloc((void **)&dsend[q], nb * sizeof(real_t)));
    REQUIRE(be_fill(&g, &rnd, du[q], S));
    REQUIRE(be_fill(&g, &nan_field, dout[q], S));
  }
  REQUIRE(be_malloc((void **)&dfr, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&drecv, nb * sizeof(real_t)));
  REQUIRE(be_fill(&g, &rf, dfr, S));
  for (size_t e = 0; e < nb; e++) h[e] = (real_t)(0.001 * (double)((e * 7919) % 1000) - 0.5);
  copy(drecv, h, nb * sizeof(real_t), BE_COPY_H2D);
  for (size_t e = 0; e < nb; e++) h[e] = (real_t)-555.0;
  copy(dsend[0], h, nb * sizeof(real_t), BE_COPY_H2D);
  copy(dsend[1], h, nb * sizeof(real_t), BE_COPY_H2D);
  fd_coeffs c;
  memset(&c, 0, sizeof c);
  c.cc = (real_t)-5.5, c.cx = (real_t)1.25, c.cy = (real_t)0.75, c.cz = (real_t)1.5, c.cf = (real_t)0.125;
  fd_kernel k;
  REQUIRE(be_kernel_default(&g, &k));
  const real_t *f = with_f ? dfr : NULL;
  REQUIRE(be_unpack_faces(&g, &fu, drecv, du[0], S));
  if (stencil) REQUIRE(be_stencil(&g, FD_REGION_SHELL, deferred, &c, du[0], f, dout[0], k, S));
  REQUIRE(be_pack_faces(&g, &fp, stencil ? dout[0] : du[0], dsend[0], S));
  REQUIRE(be_shell_exchange(&g, deferred, &c, du[1], f, stencil ? dout[1] : NULL, &fx, drecv, unpack,
                            dsend[1], pack, S));
  const char *what[3] = {"u", "out", "send"};
  real_t *pair[3][2] = {{du[0], du[1]}, {dout[0], dout[1]}, {dsend[0], dsend[1]}};
  for (int a = 0; a < 3; a++) {
    const size_t len = a == 2 ? nb : np;
    copy(h, pair[a][0], len * sizeof(real_t), BE_COPY_D2H);
    copy(h + len, pair[a][1], len * sizeof(real_t), BE_COPY_D2H);
    long bad = 0;
    for (size_t e = 0; e < len; e++) bad += !same_bits(h[e], h[len + e]);
    check(bad == 0, "be_shell_exchange %dx%dx%d deferred 0x%x unpack 0x%x pack 0x%x f %d stencil %d: %ld elements of %s differ",
          n[0], n[1], n[2], deferred, unpack, pack, with_f, stencil, bad, what[a]);
  }
  for (int q = 0; q < 2; q++) {
    REQUIRE(be_free(du[q]));
    REQUIRE(be_free(dout[q]));
    REQUIRE(be_free(dsend[q]));
  }
  REQUIRE(be_free(dfr));
  REQUIRE(be_free(drecv));
  free(h);
}

static double wall_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The bounded wait: a pass whose neighbour never packs waits wait_s (0.2 s), records the stall
 * (face 5, exchange 0), still sets the neighbour's word and completes; a later pass does not
 * wait at all. Without the bound it would hang. */
static void check_signals_stall(be_stream st)
{
  const int n[3] = {8, 6, 4};
  fd_grid g;
  fd_faces fc;
  if (fd_grid_init(&g, n, 1)) {
    check(0, "stall: fd_grid_init");
    return;
  }
  fd_faces_init(&fc, n);
  fc.active[5] = 1;
  real_t *u = NULL, *out = NULL, *slots = NULL;
  uint32_t *words = NULL, *peer_words = NULL;
  const uint32_t zero[BE_SIG_WORDS] = {0};
  uint32_t peer_h[BE_SIG_WORDS];
  REQUIRE(be_malloc((void **)&u, g.elems * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&out, g.elems * sizeof(real_t)));
  REQUIRE(be_malloc_peer((void **)&slots, 4 * fc.total * sizeof(real_t)));
  REQUIRE(be_malloc_peer((void **)&words, sizeof zero));
  REQUIRE(be_malloc_peer((void **)&peer_words, sizeof zero));
  REQUIRE(be_memcpy_async(words, zero, sizeof zero, BE_COPY_H2D, st));
  REQUIRE(be_memcpy_async(peer_words, zero, sizeof zero, BE_COPY_H2D, st));
  be_signals x;
  memset(&x, 0, sizeof x);
  x.faces = &fc;
  x.exchange = x.unpack = 1u << 5;
  x.remote = 1u << 5;
  x.wait_s = 0.2;
  for (int q = 0; q < 2; q++) {
    x.out[5][q] = slots + q * fc.total + fc.offset[5];
    x.in[5][q] = slots + (2 + q) * fc.total + fc.offset[5];
  }
  x.words = words;
  x.peer_in[5] = peer_words + 4;
  fd_coeffs c = {0};
  fd_kernel k = {0};
  k.id = FD_KERNEL_ZMARCH;
  REQUIRE(be_signals_prime(&g, &x, u, st));
  const double t0 = wall_s();
  REQUIRE(be_signals_pass(&g, &c, u, NULL, out, k, &x, NULL, st));
  REQUIRE(be_signals_pass(&g, &c, out, NULL, u, k, &x, NULL, st));
  REQUIRE(be_stream_sync(st));
  const double took = wall_s() - t0;
  int face = -1;
  uint32_t at = 99;
  REQUIRE(be_signals_stall(&x, &face, &at));
  REQUIRE(be_memcpy_async(peer_h, peer_words, sizeof peer_h, BE_COPY_D2H, st));
  REQUIRE(be_stream_sync(st));
  check(face == 5 && at == 0, "stall: recorded face %d exchange %u, expected 5 and 0", face, at);
  check(took >= 0.2 && took < 2.0, "stall: two passes took %.3f s, expected 0.2 s and not much more", took);
  check(peer_h[4] == 3u, "stall: the neighbour's word is %u after two passes, expected 3", peer_h[4]);
  REQUIRE(be_free(u));
  REQUIRE(be_free(out));
  REQUIRE(be_free(slots));
  REQUIRE(be_free(words));
  REQUIRE(be_free(peer_words));
}

int main(int argc, char **argv)
{
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  be_info info;
  REQUIRE(be_init(0, &info));
  REQUIRE(be_stream_create(&S, BE_PRIORITY_HIGH));
  printf("test_gpu_regions on %s (%s, %s)\n", info.name, info.backend, FDMINI_REAL_NAME);
  int all[FD_REGIONS], some[FD_REGIONS];
  for (int r = 0; r < FD_REGIONS; r++) {
    all[r] = 1;
    some[r] = (r * 7 + 3) % 3 != 0; /* faces, edges and corners, some with an inactive opposite */
  }
  /* packed rows (small x), padded ones (130 + 2w: rows aligned to 128 bytes), tiny extents */
  const int sizes[][3] = {{5, 4, 6}, {130, 9, 7}, {4, 4, 4}, {37, 23, 19}, {300, 5, 4}};
  const int nsizes = quick ? 2 : (int)(sizeof sizes / sizeof sizes[0]);
  for (int s = 0; s < nsizes; s++)
    for (int w = 1; w <= 4; w++) {
      if (w > sizes[s][0] || w > sizes[s][1] || w > sizes[s][2]) continue;
      for (int fields = 1; fields <= 2; fields++) {
        check_case(sizes[s], w, fields, all);
        check_case(sizes[s], w, fields, some);
      }
    }
  const int xsizes[][3] = {{5, 4, 3}, {1, 7, 2}, {2, 2, 2}, {37, 23, 19}, {130, 3, 2}, {64, 64, 64}};
  const unsigned masks[][3] = {{0x3f, 0x3f, 0x3f}, {0x30, 0x30, 0x30}, {0x2d, 0x0c, 0x21}, {0x3f, 0x1e, 0x3f}};
  const int nx = quick ? 2 : (int)(sizeof xsizes / sizeof xsizes[0]);
  for (int s = 0; s < nx; s++)
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
      for (int v = 0; v < 3; v++) check_shell_exchange(xsizes[s], masks[m][0], masks[m][1], masks[m][2], v == 1, v < 2);
  be_stream s2;
  REQUIRE(be_stream_create(&s2, BE_PRIORITY_NORMAL));
  const int ssizes[][4] = {{64, 64, 64, 64}, {37, 23, 19, 11}, {5, 4, 3, 4}, {7, 6, 1, 2}, {130, 3, 2, 5}};
  const fd_kernel_id kids[2] = {FD_KERNEL_ZMARCH, FD_KERNEL_REORDERED};
  const int nss = quick ? 2 : (int)(sizeof ssizes / sizeof ssizes[0]);
  char why[256];
  for (int q = 0; q < nss; q++)
    for (int kq = 0; kq < 2; kq++)
      for (int v = 0; v < 8; v++) { /* f off/on, one stream / two, loads / stores */
        const int *n = ssizes[q], with_f = v & 1, store = v >> 2 & 1;
        be_stream sb = v & 2 ? s2 : NULL;
        why[0] = '\0';
        long bad = signals_case(n[0], n[1], n[2], n[3], with_f, kids[kq], 7, 0, 0, store, NULL, S, sb, why, sizeof why);
        check(bad == 0, "signalled %dx%dx(%d+%d) %s f %d streams %d store %d: %ld points differ %s", n[0], n[1], n[2],
              n[3], fd_kernel_name(kids[kq]), with_f, sb ? 2 : 1, store, bad, why);
        bad = signals_case(n[0], n[1], n[2], n[3], with_f, kids[kq], 7, 1, 0, store, NULL, S, sb, why, sizeof why);
        check(bad > 0, "signalled %dx%dx(%d+%d) %s f %d streams %d store %d: the dropped unpack went unseen (%ld %s)",
              n[0], n[1], n[2], n[3], fd_kernel_name(kids[kq]), with_f, sb ? 2 : 1, store, bad, why);
      }
  check(signals_case(6, 5, 3, 4, 0, FD_KERNEL_ZMARCH, 0, 0, 1, 0, NULL, S, NULL, why, sizeof why) == 0, "signalled exchange alone: %s", why);
  check(signals_case(6, 5, 3, 4, 0, FD_KERNEL_ZMARCH, 0, 0, 1, 1, NULL, S, NULL, why, sizeof why) == 0,
        "signalled exchange alone (stores): %s", why);
  /* the laplacian, two layers, the source (be_sig_stencil): both kernels (ZMARCH in one launch
   * where the layers do not split the interior), one stream and two, loads and stores */
  for (int kq = 0; kq < 2; kq++)
    for (int v = 0; v < 4; v++) {
      why[0] = '\0';
      const int rc = signals_variant_cases(37, 23, 19, 11, kids[kq], 7, v >> 1, S, v & 1 ? s2 : NULL, why, sizeof why);
      check(rc == 0, "signalled variants %s streams %d store %d: %s", fd_kernel_name(kids[kq]), v & 1 ? 2 : 1, v >> 1,
            why);
    }
  /* the deep exchange signalled on the device (be_signals_pack, be_signals_unpack): blocks of a
   * global grid split along every dimension, widths 1..4, one and two fields, one stream and
   * two (unpacks that wait on the device), loads and stores; a region one block's unpack leaves
   * out (a face, an edge, a corner) must be seen */
  const int dsizes[][3] = {{12, 9, 8}, {37, 23, 19}, {130, 9, 16}};
  const int dsplits[][3] = {{2, 2, 2}, {1, 1, 2}, {3, 1, 2}};
  const int nds = quick ? 1 : (int)(sizeof dsizes / sizeof dsizes[0]);
  for (int q = 0; q < nds; q++)
    for (int sp = 0; sp < 3; sp++)
      for (int w = 1; w <= 4; w++)
        for (int v = 0; v < 12; v++) { /* fields 1/2, one stream / two / one launch a block on its own, loads / stores */
          const int fields = 1 + (v & 1), store = v >> 1 & 1, streams = v >> 2, one = streams == 2;
          be_stream sb = streams == 1 ? s2 : NULL;
          why[0] = '\0';
          const long bad = signals_deep_case(dsizes[q], dsplits[sp], w, fields, 3, store, -1, one, S, sb, why, sizeof why);
          check(bad == 0, "deep signalled %dx%dx%d split %dx%dx%d S %d fields %d %s store %d: %s", dsizes[q][0],
                dsizes[q][1], dsizes[q][2], dsplits[sp][0], dsplits[sp][1], dsplits[sp][2], w, fields,
                one ? "one launch each" : (sb ? "two streams" : "one stream"), store, why);
        }
  const int drops[3] = {1, 6 + 3, 18 + 7};
  for (int q = 0; q < 6; q++) {
    why[0] = '\0';
    const long bad = signals_deep_case(dsizes[1], dsplits[0], 3, 2, 2, q % 2, drops[q % 3], q >= 3, S, s2, why, sizeof why);
    check(bad > 0, "deep signalled: region %d left out of an unpack went unseen (%ld %s)", drops[q % 3], bad, why);
  }
  check_signals_stall(S);
  REQUIRE(be_stream_destroy(s2));
  REQUIRE(be_stream_destroy(S));
  REQUIRE(be_finalize());
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
