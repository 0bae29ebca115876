/* test_faces_pack_unpack.c - face geometry (counts, offsets, layers) and the backend's pack
 * and unpack: a packed face holds the send layer, an unpacked face lands in the ghost layer,
 * inactive faces, edges and corners are never touched. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <mpi.h>

#include "backend.h"

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

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  be_info info;
  if (be_init(0, &info) != BE_OK || be_stream_create(&s, BE_PRIORITY_HIGH) != BE_OK) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_geometry_counts_offsets_layers),
    cmocka_unit_test(test_round_trip_all_faces_odd_sizes),
    cmocka_unit_test(test_inactive_faces_untouched),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  be_stream_destroy(s);
  be_finalize();
  MPI_Finalize();
  return failed;
}
