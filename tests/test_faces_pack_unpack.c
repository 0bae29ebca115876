/* test_faces_pack_unpack.c - halo region geometry (faces.h: directions, opposites, which
 * regions a width needs, boxes, counts, offsets, layers) and the backend's pack and unpack:
 * width 1, a packed face holds the send layer, an unpacked face lands in the ghost layer,
 * inactive faces, edges and corners are never touched; widths 2..4 with one and two fields,
 * padded and packed row layouts, every region (faces, edges, corners) in a periodic
 * self-exchange lands exactly in its receive box and nothing else is written; and every
 * message an exchange would send fits MPI's count (halo_check_counts); be_shell_exchange (the
 * shell with its unpack and the next pack in one launch) writes the same bits as the unpack,
 * the shell and the pack one after the other, and refuses a face whose layer is not in the
 * shell; the exchange signalled inside the pass's launch (be_signals_pass, signals_case.h)
 * gives two blocks the bits of one grid, FAILs with the unpack dropped, and refuses (the host
 * cannot wait) a pass whose neighbour has not packed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "backend.h"
#include "fd_error.h"
#include "halo.h"
#include "signals_case.h"
#include "signals_deep_case.h"

static be_stream s;

static void test_geometry_counts_offsets_layers(void **state)
{
  (void)state;
  int n[3] = {5, 4, 3};
  fd_faces f;
  fd_faces_init(&f, n);
  size_t expect[6] = {12, 12, 15, 15, 20, 20}; /* ny*nz, nx*nz, nx*ny */
  size_t off = 0;
  for (int face = 0; face < 6; face++) {
    assert_int_equal(f.count[face], expect[face]);
    assert_int_equal(f.offset[face], off);
    assert_int_equal(f.active[face], 0);
    off += expect[face];
  }
  assert_int_equal(f.total, off);
  assert_int_equal(fd_face_layer(&f, 0, 0), 1);     /* x low sends i = 1 */
  assert_int_equal(fd_face_layer(&f, 0, 1), 0);     /* and receives into i = 0 */
  assert_int_equal(fd_face_layer(&f, 3, 0), 4);     /* y high sends j = ny */
  assert_int_equal(fd_face_layer(&f, 3, 1), 5);     /* receives into j = ny+1 */
  assert_int_equal(fd_face_layer(&f, 5, 1), 4);     /* z high ghost k = nz+1 */
}

/* Element (p, q) of face `face` at the given layer: the element of u it maps to. */
static size_t face_point(const fd_grid *g, int face, int layer, int p, int q)
{
  int d = face / 2, a, b, ijk[3];
  fd_face_plane_dims(d, &a, &b);
  ijk[d] = layer;
  ijk[a] = p + 1;
  ijk[b] = q + 1;
  return (size_t)fd_grid_index(g, ijk[0], ijk[1], ijk[2]);
}

static void check_round_trip(const int n[3], const int active[6])
{
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  fd_faces f;
  fd_faces_init(&f, n);
  for (int face = 0; face < 6; face++) f.active[face] = active[face];
  size_t pts = g.elems;
  real_t *u, *w, *buf, *buf2;
  assert_int_equal(be_malloc((void **)&u, pts * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&w, pts * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&buf, f.total * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&buf2, f.total * sizeof(real_t)), BE_OK);
  fd_field rnd = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 42};
  fd_field poison = {.kind = FD_FIELD_CONST, .scale = -999.0};
  assert_int_equal(be_fill(&g, &rnd, u, s), BE_OK);
  assert_int_equal(be_fill(&g, &poison, w, s), BE_OK);
  for (size_t i = 0; i < f.total; i++) buf[i] = buf2[i] = (real_t)-777.0;

  assert_int_equal(be_pack_faces(&g, &f, u, buf, s), BE_OK);
  for (int face = 0; face < 6; face++) {
    int a, b;
    fd_face_plane_dims(face / 2, &a, &b);
    for (int q = 0; q < n[b]; q++)
      for (int p = 0; p < n[a]; p++) {
        real_t got = buf[f.offset[face] + p + (size_t)n[a] * q];
        real_t want = f.active[face] ? u[face_point(&g, face, fd_face_layer(&f, face, 0), p, q)] : (real_t)-777.0;
        assert_true(got == want);
      }
  }
  /* a periodic self-exchange: face f receives what face f^1 sent */
  for (int face = 0; face < 6; face++)
    for (size_t e = 0; e < f.count[face]; e++) buf2[f.offset[face] + e] = buf[f.offset[face ^ 1] + e];
  assert_int_equal(be_unpack_faces(&g, &f, buf2, w, s), BE_OK);
  size_t written = 0;
  for (int face = 0; face < 6; face++) {
    if (!f.active[face] || !f.active[face ^ 1]) continue;
    int a, b;
    fd_face_plane_dims(face / 2, &a, &b);
    for (int q = 0; q < n[b]; q++)
      for (int p = 0; p < n[a]; p++) {
        real_t got = w[face_point(&g, face, fd_face_layer(&f, face, 1), p, q)];
        real_t want = u[face_point(&g, face ^ 1, fd_face_layer(&f, face ^ 1, 0), p, q)];
        assert_true(got == want);
      }
  }
  /* nothing else changed: count the points that are no longer poison */
  for (int k = 0; k <= n[2] + 1; k++)
    for (int j = 0; j <= n[1] + 1; j++)
      for (int i = 0; i <= n[0] + 1; i++) written += w[fd_grid_index(&g, i, j, k)] != (real_t)-999.0;
  size_t expect = 0;
  for (int face = 0; face < 6; face++) expect += f.active[face] ? f.count[face] : 0;
  assert_int_equal(written, expect);
  be_free(u);
  be_free(w);
  be_free(buf);
  be_free(buf2);
}

static void test_round_trip_all_faces_odd_sizes(void **state)
{
  (void)state;
  int all[6] = {1, 1, 1, 1, 1, 1};
  /* 130 and 300 along x: rows padded to 128-byte boundaries (backend.h) */
  int sizes[][3] = {{5, 4, 3}, {2, 2, 2}, {37, 23, 19}, {1, 7, 2}, {16, 1, 9}, {130, 3, 2}, {300, 2, 3}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) check_round_trip(sizes[k], all);
}

static void test_inactive_faces_untouched(void **state)
{
  (void)state;
  int n[3] = {6, 5, 4};
  int some[6] = {1, 0, 0, 1, 1, 1};
  check_round_trip(n, some);
  int none[6] = {0, 0, 0, 0, 0, 0};
  check_round_trip(n, none);
}

/* ---- regions: faces, edges and corners ---- */

static void test_region_directions_and_opposites(void **state)
{
  (void)state;
  int seen[27] = {0}, faces = 0, edges = 0, corners = 0;
  for (int r = 0; r < FD_REGIONS; r++) {
    int dir[3], opp[3];
    fd_region_dir(r, dir);
    const int nz = (dir[0] != 0) + (dir[1] != 0) + (dir[2] != 0);
    assert_true(nz >= 1);
    faces += nz == 1, edges += nz == 2, corners += nz == 3;
    /* faces 0..5, edges 6..17, corners 18..25; face f = 2*d + side as ever */
    assert_int_equal(nz, r < 6 ? 1 : (r < 18 ? 2 : 3));
    if (r < 6) assert_int_equal(dir[r / 2], r % 2 ? 1 : -1);
    const int key = (dir[0] + 1) + 3 * (dir[1] + 1) + 9 * (dir[2] + 1);
    assert_int_equal(seen[key]++, 0); /* every direction once */
    assert_int_equal(fd_region_of_dir(dir), r);
    const int o = fd_region_opposite(r);
    fd_region_dir(o, opp);
    for (int d = 0; d < 3; d++) assert_int_equal(opp[d], -dir[d]);
    assert_int_equal(fd_region_opposite(o), r);
    /* a width needs faces, edges from 2, corners from 3 */
    for (int w = 1; w <= 4; w++) assert_int_equal(fd_region_used(r, w), w >= nz);
  }
  assert_int_equal(faces, 6);
  assert_int_equal(edges, 12);
  assert_int_equal(corners, 8);
}

static void test_region_boxes_counts_offsets(void **state)
{
  (void)state;
  const int n[3] = {7, 5, 4};
  for (int w = 1; w <= 4; w++)
    for (int fields = 1; fields <= 2; fields++) {
      fd_faces f[2];
      for (int q = 0; q < fields; q++) fd_faces_init_deep(&f[q], n, w, fields, q);
      size_t off = 0;
      for (int r = 0; r < FD_REGIONS; r++) {
        int dir[3], slo[3], shi[3], rlo[3], rhi[3], olo[3], ohi[3];
        fd_region_dir(r, dir);
        fd_region_box(n, w, r, 0, slo, shi);
        fd_region_box(n, w, r, 1, rlo, rhi);
        fd_region_box(n, w, fd_region_opposite(r), 0, olo, ohi);
        size_t pts = 1;
        for (int d = 0; d < 3; d++) {
          /* send boxes lie in 1..n next to the border, receive boxes in the ghosts beyond it */
          assert_true(slo[d] >= 1 && shi[d] <= n[d]);
          if (dir[d] < 0) assert_true(rlo[d] == 1 - w && rhi[d] == 0 && slo[d] == 1 && shi[d] == w);
          if (dir[d] > 0) assert_true(rlo[d] == n[d] + 1 && rhi[d] == n[d] + w && slo[d] == n[d] - w + 1 && shi[d] == n[d]);
          if (dir[d] == 0) assert_true(rlo[d] == 1 && rhi[d] == n[d] && slo[d] == 1 && shi[d] == n[d]);
          /* what r receives has the shape of what the opposite region sends */
          assert_int_equal(rhi[d] - rlo[d], ohi[d] - olo[d]);
          assert_int_equal(shi[d] - slo[d], rhi[d] - rlo[d]);
          pts *= (size_t)(shi[d] - slo[d] + 1);
        }
        const size_t want = fd_region_used(r, w) ? pts : 0;
        for (int q = 0; q < fields; q++) {
          assert_int_equal(f[q].count[r], want);
          assert_int_equal(f[q].offset[r], off + (size_t)q * want);
          assert_int_equal(f[q].active[r], 0);
          assert_int_equal(fd_region_count(n, w, r), want);
        }
        off += (size_t)fields * want;
      }
      for (int q = 0; q < fields; q++) assert_int_equal(f[q].total, off);
    }
  /* width 1, one field: the six-face layout */
  fd_faces a, b;
  fd_faces_init(&a, n);
  fd_faces_init_deep(&b, n, 1, 1, 0);
  assert_memory_equal(&a, &b, sizeof a);
  assert_int_equal(a.total, 2 * (5 * 4 + 7 * 4 + 7 * 5));
}

/* Packs field q of every region of u (a random field with w ghost layers; fields >= 1) with
 * the regions of `active`, then a periodic self-exchange: region r receives what the opposite
 * region sent; unpacks into a poisoned field and checks every receive box point by point
 * against u (a ghost point beyond a low border is the point n layers up, ...) and that
 * nothing else was written. Buffer elements of inactive regions and other fields stay
 * untouched. */
static void check_regions_round_trip(const int n[3], int w, int fields, const int active[FD_REGIONS])
{
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, w), 0);
  fd_faces f[2];
  for (int q = 0; q < fields; q++) {
    fd_faces_init_deep(&f[q], n, w, fields, q);
    for (int r = 0; r < FD_REGIONS; r++) f[q].active[r] = active[r];
  }
  const size_t total = f[0].total ? f[0].total : 1;
  real_t *u[2], *wv[2], *buf, *buf2;
  for (int q = 0; q < fields; q++) {
    assert_int_equal(be_malloc((void **)&u[q], g.elems * sizeof(real_t)), BE_OK);
    assert_int_equal(be_malloc((void **)&wv[q], g.elems * sizeof(real_t)), BE_OK);
    fd_field rnd = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 42 + (uint64_t)q};
    fd_field poison = {.kind = FD_FIELD_CONST, .scale = -999.0};
    assert_int_equal(be_fill(&g, &rnd, u[q], s), BE_OK);
    assert_int_equal(be_fill(&g, &poison, wv[q], s), BE_OK);
  }
  assert_int_equal(be_malloc((void **)&buf, total * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&buf2, total * sizeof(real_t)), BE_OK);
  for (size_t i = 0; i < total; i++) buf[i] = buf2[i] = (real_t)-777.0;
  for (int q = 0; q < fields; q++) assert_int_equal(be_pack_faces(&g, &f[q], u[q], buf, s), BE_OK);
  /* the packed boxes, x fastest, every field in its place; inactive regions untouched */
  for (int q = 0; q < fields; q++)
    for (int r = 0; r < FD_REGIONS; r++) {
      int lo[3], hi[3];
      fd_region_box(n, w, r, 0, lo, hi);
      size_t e = f[q].offset[r];
      if (!f[q].count[r]) continue;
      for (int k = lo[2]; k <= hi[2]; k++)
        for (int j = lo[1]; j <= hi[1]; j++)
          for (int i = lo[0]; i <= hi[0]; i++, e++) {
            real_t want = active[r] ? u[q][fd_grid_index(&g, i, j, k)] : (real_t)-777.0;
            if (buf[e] != want) fail_msg("width %d field %d region %d: packed (%d,%d,%d) wrong", w, q, r, i, j, k);
          }
    }
  /* periodic self-exchange: region r's message is the opposite region's */
  for (int r = 0; r < FD_REGIONS; r++) {
    const int o = fd_region_opposite(r);
    for (size_t e = 0; e < (size_t)fields * f[0].count[r]; e++) buf2[f[0].offset[r] + e] = buf[f[0].offset[o] + e];
  }
  for (int q = 0; q < fields; q++) assert_int_equal(be_unpack_faces(&g, &f[q], buf2, wv[q], s), BE_OK);
  size_t expect = 0;
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!active[r] || !f[0].count[r]) continue;
    const int o = fd_region_opposite(r);
    if (!active[o]) continue; /* its message is poison: only the written count is checked */
    int dir[3], lo[3], hi[3];
    fd_region_dir(r, dir);
    fd_region_box(n, w, r, 1, lo, hi);
    for (int q = 0; q < fields; q++)
      for (int k = lo[2]; k <= hi[2]; k++)
        for (int j = lo[1]; j <= hi[1]; j++)
          for (int i = lo[0]; i <= hi[0]; i++) {
            real_t got = wv[q][fd_grid_index(&g, i, j, k)];
            real_t want = u[q][fd_grid_index(&g, i - dir[0] * n[0], j - dir[1] * n[1], k - dir[2] * n[2])];
            if (got != want) fail_msg("width %d field %d region %d: ghost (%d,%d,%d) wrong", w, q, r, i, j, k);
          }
  }
  for (int r = 0; r < FD_REGIONS; r++) expect += active[r] ? f[0].count[r] : 0;
  for (int q = 0; q < fields; q++) {
    size_t written = 0;
    for (int k = 1 - w; k <= n[2] + w; k++)
      for (int j = 1 - w; j <= n[1] + w; j++)
        for (int i = 1 - w; i <= n[0] + w; i++) written += wv[q][fd_grid_index(&g, i, j, k)] != (real_t)-999.0;
    assert_int_equal(written, expect);
  }
  for (int q = 0; q < fields; q++) {
    be_free(u[q]);
    be_free(wv[q]);
  }
  be_free(buf);
  be_free(buf2);
}

static void test_regions_round_trip_every_width(void **state)
{
  (void)state;
  int all[FD_REGIONS];
  for (int r = 0; r < FD_REGIONS; r++) all[r] = 1;
  /* packed rows (5 + 2w wide) and padded ones (130 + 2w: rows aligned to 128 bytes) */
  const int sizes[][3] = {{5, 4, 6}, {7, 9, 4}, {130, 5, 4}, {4, 4, 4}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int w = 1; w <= 4; w++)
      for (int fields = 1; fields <= 2; fields++) check_regions_round_trip(sizes[k], w, fields, all);
}

static void test_regions_inactive_untouched(void **state)
{
  (void)state;
  const int n[3] = {6, 5, 7};
  int some[FD_REGIONS], none[FD_REGIONS] = {0};
  for (int r = 0; r < FD_REGIONS; r++) some[r] = (r * 7 + 3) % 3 != 0; /* a mix of every kind */
  for (int w = 2; w <= 3; w++) {
    check_regions_round_trip(n, w, 1, some);
    check_regions_round_trip(n, w, 2, some);
    check_regions_round_trip(n, w, 2, none);
  }
}

/* be_shell_exchange on extents n with the faces of `deferred` (bit f: face f), the ghosts of
 * `unpack` from a buffer, the layers of `pack` packed, jacobi's f or none, the stencil or
 * (stencil 0) the copy: u (ghosts included), out and the send buffer bitwise equal to
 * be_unpack_faces, be_stencil(SHELL) and be_pack_faces one after the other. */
static void check_shell_exchange(const int n[3], unsigned deferred, unsigned unpack, unsigned pack,
                                 int with_f, int stencil)
{
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  fd_faces fu, fp, fx; /* the unpack's, the pack's and the fused call's active faces */
  fd_faces_init(&fu, n);
  fd_faces_init(&fp, n);
  fd_faces_init(&fx, n);
  for (int f = 0; f < 6; f++) {
    fu.active[f] = (int)(unpack >> f & 1u);
    fp.active[f] = (int)(pack >> f & 1u);
    fx.active[f] = (int)(deferred >> f & 1u);
  }
  const size_t pts = g.elems, nb = fx.total;
  real_t *u[2], *out[2], *send[2], *fr, *recv;
  for (int q = 0; q < 2; q++) {
    assert_int_equal(be_malloc((void **)&u[q], pts * sizeof(real_t)), BE_OK);
    assert_int_equal(be_malloc((void **)&out[q], pts * sizeof(real_t)), BE_OK);
    assert_int_equal(be_malloc((void **)&send[q], nb * sizeof(real_t)), BE_OK);
  }
  assert_int_equal(be_malloc((void **)&fr, pts * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&recv, nb * sizeof(real_t)), BE_OK);
  fd_field rnd = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 7}, rf = rnd, poison = {.kind = FD_FIELD_CONST, .scale = -999.0};
  rf.seed = 8;
  assert_int_equal(be_fill(&g, &rnd, u[0], s), BE_OK);
  assert_int_equal(be_fill(&g, &rnd, u[1], s), BE_OK);
  assert_int_equal(be_fill(&g, &rf, fr, s), BE_OK);
  for (int q = 0; q < 2; q++) assert_int_equal(be_fill(&g, &poison, out[q], s), BE_OK);
  for (size_t e = 0; e < nb; e++) {
    recv[e] = (real_t)(0.001 * (double)((e * 7919) % 1000) - 0.5);
    send[0][e] = send[1][e] = (real_t)-555.0;
  }
  const fd_coeffs c = {.cc = (real_t)-5.5, .cx = (real_t)1.25, .cy = (real_t)0.75, .cz = (real_t)1.5, .cf = (real_t)0.125};
  const real_t *f = with_f ? fr : NULL;
  /* the three calls */
  assert_int_equal(be_unpack_faces(&g, &fu, recv, u[0], s), BE_OK);
  if (stencil) assert_int_equal(be_stencil(&g, FD_REGION_SHELL, deferred, &c, u[0], f, out[0], (fd_kernel){0}, s), BE_OK);
  assert_int_equal(be_pack_faces(&g, &fp, stencil ? out[0] : u[0], send[0], s), BE_OK);
  /* the one */
  assert_int_equal(be_shell_exchange(&g, deferred, &c, u[1], f, stencil ? out[1] : NULL, &fx, recv, unpack,
                                     send[1], pack, s),
                   BE_OK);
  assert_memory_equal(u[0], u[1], pts * sizeof(real_t));
  assert_memory_equal(out[0], out[1], pts * sizeof(real_t));
  assert_memory_equal(send[0], send[1], nb * sizeof(real_t));
  for (int q = 0; q < 2; q++) {
    be_free(u[q]);
    be_free(out[q]);
    be_free(send[q]);
  }
  be_free(fr);
  be_free(recv);
}

static void test_shell_exchange_matches_three_calls(void **state)
{
  (void)state;
  const int sizes[][3] = {{5, 4, 3}, {1, 7, 2}, {2, 2, 2}, {9, 1, 6}, {37, 23, 19}, {130, 3, 2}};
  /* deferred faces, the unpacked and the packed ones among them */
  const unsigned masks[][3] = {{0x3f, 0x3f, 0x3f}, {0x30, 0x30, 0x30}, {0x2d, 0x0c, 0x21}, {0x3f, 0x1e, 0x3f}, {0x0a, 0, 0x0a}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
      for (int v = 0; v < 3; v++) check_shell_exchange(sizes[k], masks[m][0], masks[m][1], masks[m][2], v == 1, v < 2);
}

/* A face whose layer is not in the shell (not deferred), or that is not active, is refused. */
static void test_shell_exchange_refuses_faces_outside_the_shell(void **state)
{
  (void)state;
  const int n[3] = {4, 4, 4};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  fd_faces fx;
  fd_faces_init(&fx, n);
  for (int f = 0; f < 6; f++) fx.active[f] = f != 2;
  real_t *u, *out, *buf;
  assert_int_equal(be_malloc((void **)&u, g.elems * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&out, g.elems * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&buf, fx.total * sizeof(real_t)), BE_OK);
  const fd_coeffs c = {.cc = 1};
  assert_int_equal(be_shell_exchange(&g, 0x30, &c, u, NULL, out, &fx, buf, 0x10, buf, 0x01, s), BE_ERROR);
  assert_non_null(strstr(be_error_message(), "face 0 is not deferred"));
  assert_int_equal(be_shell_exchange(&g, 0x3f, &c, u, NULL, out, &fx, buf, 0x04, buf, 0, s), BE_ERROR);
  assert_non_null(strstr(be_error_message(), "face 2 is not active"));
  fd_faces deep;
  fd_faces_init_deep(&deep, n, 2, 1, 0);
  assert_int_equal(be_shell_exchange(&g, 0x3f, &c, u, NULL, out, &deep, buf, 0, buf, 0, s), BE_ERROR);
  assert_non_null(strstr(be_error_message(), "width 1 only"));
  be_free(u);
  be_free(out);
  be_free(buf);
}

/* halo_check_counts: a message of more than INT_MAX elements (MPI's count) is refused, with
 * its region named, before anything is allocated (fd_grid_init is pure); regions without a
 * neighbour do not count; two fields per message count twice. */
static void test_message_counts_fit_mpi(void **state)
{
  (void)state;
  int nbr[FD_REGIONS];
  fd_grid g;
  for (int r = 0; r < FD_REGIONS; r++) nbr[r] = MPI_PROC_NULL;
  nbr[5] = 1; /* z high */
  const int fits[3] = {46340, 46340, 4}, over[3] = {46341, 46341, 4}; /* 46341^2 > 2^31 - 1 */
  assert_int_equal(fd_grid_init(&g, fits, 1), 0);
  assert_int_equal(halo_check_counts(&g, 1, nbr, 0), FD_OK);
  assert_int_equal(fd_grid_init(&g, over, 1), 0);
  assert_int_equal(halo_check_counts(&g, 1, nbr, 3), FD_ERR_RUNTIME);
  assert_non_null(strstr(fd_error_message(), "rank 3: the halo exchange of the local block 46341 x 46341 x 4 does "
                                              "not fit in MPI messages: the region towards (+0,+0,+1) holds 2147488281"));
  nbr[5] = MPI_PROC_NULL; /* no neighbour there: nothing to send */
  assert_int_equal(halo_check_counts(&g, 1, nbr, 0), FD_OK);
  /* 2^30 points per face fit one field, not two */
  const int half[3] = {32768, 32768, 4};
  nbr[4] = 0; /* z low */
  assert_int_equal(fd_grid_init(&g, half, 1), 0);
  assert_int_equal(halo_check_counts(&g, 1, nbr, 0), FD_OK);
  assert_int_equal(halo_check_counts(&g, 2, nbr, 0), FD_ERR_RUNTIME);
  /* an edge of width 2 along x, with a neighbour only across it */
  nbr[4] = MPI_PROC_NULL;
  int dir[3] = {0, -1, -1};
  const int edge = fd_region_of_dir(dir), thin[3] = {600000000, 2, 2};
  nbr[edge] = 2;
  assert_int_equal(fd_grid_init(&g, thin, 2), 0);
  assert_int_equal(halo_check_counts(&g, 1, nbr, 0), FD_ERR_RUNTIME);
  assert_non_null(strstr(fd_error_message(), "towards (+0,-1,-1) holds 2400000000 values"));
  assert_non_null(strstr(fd_error_message(), "or a smaller --halo-width"));
}

static void test_signalled_passes_match_one_grid(void **state)
{
  (void)state;
  char why[256] = "";
  const int sizes[][4] = {{5, 4, 3, 4}, {7, 6, 1, 2}, {16, 9, 6, 5}};
  for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++)
    for (int v = 0; v < 4; v++) { /* f off/on; loads / stores */
      const int *n = sizes[q], with_f = v & 1, store = v >> 1;
      long bad = signals_case(n[0], n[1], n[2], n[3], with_f, FD_KERNEL_REORDERED, 5, 0, 0, store, NULL, s, NULL, why, sizeof why);
      if (bad != 0)
        fail_msg("%dx%dx(%d+%d) f %d store %d: %ld points differ %s", n[0], n[1], n[2], n[3], with_f, store, bad, why);
      /* the planted fault: A's ghosts never unpacked */
      bad = signals_case(n[0], n[1], n[2], n[3], with_f, FD_KERNEL_REORDERED, 5, 1, 0, store, NULL, s, NULL, why, sizeof why);
      if (bad <= 0)
        fail_msg("%dx%dx(%d+%d) f %d store %d: the dropped unpack went unseen (%ld, %s)", n[0], n[1], n[2], n[3], with_f,
                 store, bad, why);
    }
  assert_int_equal(signals_case(6, 5, 3, 4, 0, FD_KERNEL_REORDERED, 0, 0, 1, 0, NULL, s, NULL, why, sizeof why), 0);
  assert_int_equal(signals_case(6, 5, 3, 4, 0, FD_KERNEL_REORDERED, 0, 0, 1, 1, NULL, s, NULL, why, sizeof why), 0);
  /* the laplacian, two layers, the source (be_sig_stencil) */
  for (int store = 0; store < 2; store++)
    if (signals_variant_cases(7, 6, 5, 4, FD_KERNEL_REORDERED, 6, store, s, NULL, why, sizeof why) != 0)
      fail_msg("store %d: %s", store, why);
}

static void test_signalled_pass_refuses_an_unpacked_neighbour(void **state)
{
  (void)state;
  char why[200];
  const int n[3] = {4, 3, 2};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  fd_faces fc;
  fd_faces_init(&fc, n);
  fc.active[5] = 1;
  real_t *u = calloc(g.elems, sizeof(real_t)), *out = calloc(g.elems, sizeof(real_t));
  real_t *slots = calloc(2 * fc.total, sizeof(real_t)), *peer = calloc(2 * fc.total, sizeof(real_t));
  uint32_t words[BE_SIG_WORDS] = {0}, peer_words[BE_SIG_WORDS] = {0};
  be_signals x;
  memset(&x, 0, sizeof x);
  x.faces = &fc;
  x.exchange = x.unpack = 1u << 5;
  x.wait_s = 1.0;
  for (int q = 0; q < 2; q++) {
    x.out[5][q] = slots + q * fc.total + fc.offset[5];
    x.in[5][q] = peer + q * fc.total;
  }
  x.words = words;
  x.peer_in[5] = peer_words + 4;
  fd_coeffs c = {0};
  fd_kernel k = {0};
  k.id = FD_KERNEL_REORDERED;
  assert_int_equal(be_signals_prime(&g, &x, u, s), BE_OK);
  assert_int_equal(peer_words[4], 1u);
  assert_int_not_equal(be_signals_pass(&g, &c, u, NULL, out, k, &x, NULL, s), BE_OK); /* in[5] = 0 */
  assert_non_null(strstr(be_error_message(), "has not packed exchange 0"));
  words[5] = 1; /* the neighbour packed exchange 0 */
  assert_int_equal(be_signals_pass(&g, &c, u, NULL, out, k, &x, NULL, s), BE_OK);
  assert_int_equal(words[BE_SIG_SEQ], 1u);
  assert_int_equal(peer_words[4], 2u);
  assert_int_not_equal(be_signals_pass(&g, &c, out, NULL, u, k, &x, NULL, s), BE_OK); /* exchange 1: not yet */
  /* the test bits: NOWAIT goes on without the word, MUTE leaves the neighbour's word alone */
  x.test = BE_SIG_TEST_NOWAIT | BE_SIG_TEST_MUTE;
  assert_int_equal(be_signals_pass(&g, &c, out, NULL, u, k, &x, NULL, s), BE_OK);
  assert_int_equal(words[BE_SIG_SEQ], 2u);
  assert_int_equal(peer_words[4], 2u);
  x.test = 0;
  /* the stall record: none, then the one a launch left (face 5, exchange 7) */
  int face = 0;
  uint32_t at = 0;
  assert_int_equal(be_signals_stall(&x, &face, &at), BE_OK);
  assert_int_equal(face, -1);
  words[BE_SIG_STALL] = 6, words[BE_SIG_STALL_AT] = 7;
  assert_int_equal(be_signals_stall(&x, &face, &at), BE_OK);
  assert_int_equal(face, 5);
  assert_int_equal(at, 7u);
  /* the source must lie in the shell (here plane 2, next to face 5), with its values */
  be_sig_stencil v;
  memset(&v, 0, sizeof v);
  v.src_on = 1, v.src[0] = 2, v.src[1] = 2, v.src[2] = 1;
  assert_int_not_equal(fd_sig_stencil_check(&g, &x, &v, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "is not in the shell"));
  v.src[2] = 2, v.src_len = 3;
  assert_int_not_equal(fd_sig_stencil_check(&g, &x, &v, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "no array"));
  v.src_vals = out;
  assert_int_equal(fd_sig_stencil_check(&g, &x, &v, "t", why, sizeof why), 0);
  v.src[0] = 5; /* beyond the block */
  assert_int_not_equal(be_signals_pass(&g, &c, u, NULL, out, k, &x, &v, s), BE_OK);
  assert_non_null(strstr(be_error_message(), "is not in the shell"));
  x.wait_s = 0;
  assert_int_not_equal(be_signals_prime(&g, &x, u, s), BE_OK);
  x.wait_s = 1.0;
  x.in[5][1] = NULL;
  assert_int_not_equal(be_signals_prime(&g, &x, u, s), BE_OK);
  free(u);
  free(out);
  free(slots);
  free(peer);
}

/* The deep exchange signalled on the device (be_signals_pack, be_signals_unpack): blocks of a
 * global grid split along every dimension, widths 1 to 4, one and two fields, loads and stores;
 * a region left out of one block's unpack must be seen. */
static void test_deep_signalled_exchange_matches_the_global_field(void **state)
{
  (void)state;
  char why[200];
  const int n[3] = {12, 9, 8}; /* blocks of at least 4 points along a split: S <= 4 */
  const int splits[3][3] = {{2, 2, 2}, {1, 1, 2}, {3, 1, 2}};
  for (int sp = 0; sp < 3; sp++)
    for (int S = 1; S <= 4; S++)
      for (int fields = 1; fields <= 2; fields++)
        for (int store = 0; store < 2; store++) {
          const long bad = signals_deep_case(n, splits[sp], S, fields, 3, store, -1, 0, s, NULL, why, sizeof why);
          if (bad != 0)
            fail_msg("split %dx%dx%d S %d fields %d store %d: %s", splits[sp][0], splits[sp][1], splits[sp][2], S,
                     fields, store, why);
        }
  /* the planted fault: block 0's unpack leaves out a face, an edge, a corner */
  const int drops[3] = {1, 6 + 3, 18 + 7};
  for (int q = 0; q < 3; q++) {
    const long bad = signals_deep_case(n, splits[0], 3, 2, 2, q % 2, drops[q], 0, s, NULL, why, sizeof why);
    if (bad <= 0) fail_msg("region %d left out went unseen (%ld, %s)", drops[q], bad, why);
  }
}

/* be_signals_unpack refuses to go on without the neighbour's word (the host cannot wait),
 * unless the test says NOWAIT; be_signals_pack sets the word (not under MUTE); the checks of
 * the arguments. */
static void test_deep_signalled_exchange_refuses_an_unpacked_neighbour(void **state)
{
  (void)state;
  char why[200];
  const int n[3] = {5, 4, 6};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 3), 0);
  fd_faces fa, fb;
  fd_faces_init_deep(&fa, n, 3, 2, 0);
  fd_faces_init_deep(&fb, n, 3, 2, 1);
  const int r = 18 + 7; /* the high corner */
  fa.active[r] = fb.active[r] = 1;
  real_t *u = calloc(g.elems, sizeof(real_t)), *u2 = calloc(g.elems, sizeof(real_t));
  real_t *slots = calloc(2 * fa.total, sizeof(real_t));
  uint32_t words[BE_SIG_WORDS] = {0}, peer_words[BE_SIG_WORDS] = {0};
  be_signals x;
  memset(&x, 0, sizeof x);
  x.faces = &fa;
  x.faces2 = &fb;
  x.exchange = x.unpack = 1u << r;
  x.wait_s = 1.0;
  for (int q = 0; q < 2; q++) x.in[r][q] = x.out[r][q] = slots + q * fa.total + fa.offset[r];
  x.words = words;
  x.peer_in[r] = peer_words + 18;
  assert_int_equal(be_signals_pack(&g, &x, u, u2, s), BE_OK);
  assert_int_equal(peer_words[18], 1u);
  assert_int_not_equal(be_signals_unpack(&g, &x, u, u2, s), BE_OK);
  assert_non_null(strstr(be_error_message(), "has not packed exchange 0"));
  words[r] = 1;
  assert_int_equal(be_signals_unpack(&g, &x, u, u2, s), BE_OK);
  assert_int_equal(words[BE_SIG_SEQ], 1u);
  x.test = BE_SIG_TEST_NOWAIT | BE_SIG_TEST_MUTE;
  assert_int_equal(be_signals_pack(&g, &x, u, u2, s), BE_OK);
  assert_int_equal(peer_words[18], 1u);
  assert_int_equal(be_signals_unpack(&g, &x, u, u2, s), BE_OK);
  assert_int_equal(words[BE_SIG_SEQ], 2u);
  x.test = 0;
  /* the checks: a second field without its field, one layout too few, a region not active,
   * unpack beyond exchange, a missing slot, a width beyond the grid's ghosts */
  assert_int_not_equal(be_signals_pack(&g, &x, u, NULL, s), BE_OK);
  x.faces2 = NULL;
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "second layout"));
  x.faces2 = &fa; /* field 0's layout twice */
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "not field 1"));
  fd_faces fc = fb;
  fc.count[r]--;
  x.faces2 = &fc;
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "differs between the two fields"));
  x.faces2 = &fb;
  x.exchange |= 1u << 2;
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "region 2 is exchanged but not active"));
  x.exchange = 1u << r;
  x.unpack = 1u << 3;
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "unpacked but not exchanged"));
  x.unpack = 1u << r;
  x.in[r][1] = NULL;
  assert_int_not_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "no neighbour's slots"));
  x.in[r][1] = slots + fa.total + fa.offset[r];
  assert_int_equal(fd_signals_regions_check(&g, &x, "t", why, sizeof why), 0);
  /* both in one call: the pack (exchange 2), then the unpack, which needs the neighbour's */
  assert_int_not_equal(be_signals_exchange(&g, &x, u, u2, s), BE_OK);
  assert_non_null(strstr(be_error_message(), "has not packed exchange 2"));
  assert_int_equal(peer_words[18], 3u);
  words[r] = 3;
  assert_int_equal(be_signals_exchange(&g, &x, u, u2, s), BE_OK);
  assert_int_equal(words[BE_SIG_SEQ], 3u);
  fd_grid g2;
  assert_int_equal(fd_grid_init(&g2, n, 2), 0);
  assert_int_not_equal(fd_signals_regions_check(&g2, &x, "t", why, sizeof why), 0);
  assert_non_null(strstr(why, "ghost layers"));
  free(u);
  free(u2);
  free(slots);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  be_info info;
  if (be_init(0, &info) != BE_OK || be_stream_create(&s, BE_PRIORITY_HIGH) != BE_OK) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_geometry_counts_offsets_layers),
    cmocka_unit_test(test_round_trip_all_faces_odd_sizes),
    cmocka_unit_test(test_inactive_faces_untouched),
    cmocka_unit_test(test_region_directions_and_opposites),
    cmocka_unit_test(test_region_boxes_counts_offsets),
    cmocka_unit_test(test_regions_round_trip_every_width),
    cmocka_unit_test(test_regions_inactive_untouched),
    cmocka_unit_test(test_message_counts_fit_mpi),
    cmocka_unit_test(test_shell_exchange_matches_three_calls),
    cmocka_unit_test(test_shell_exchange_refuses_faces_outside_the_shell),
    cmocka_unit_test(test_signalled_passes_match_one_grid),
    cmocka_unit_test(test_signalled_pass_refuses_an_unpacked_neighbour),
    cmocka_unit_test(test_deep_signalled_exchange_matches_the_global_field),
    cmocka_unit_test(test_deep_signalled_exchange_refuses_an_unpacked_neighbour),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  be_stream_destroy(s);
  be_finalize();
  MPI_Finalize();
  return failed;
}
