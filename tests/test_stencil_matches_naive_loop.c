/* test_stencil_matches_naive_loop.c - the backend's stencil on tiny and odd grids against a
 * naive triple loop, for every operator's coefficients, kernel variant, tile factor, region and
 * several masks of deferred faces (interior/shell split);
 * outputs poisoned first, so every point of the region is written and no other point is.
 * Also field initialisation and norms against direct evaluation, the z-range restriction
 * (be_stencil_zrange: per-range coefficients compose to the same bits, nothing outside the
 * planes is written), the point source (be_add_point) and the L2 rules of the GPU z-marching
 * kernel (fd_l2_alternates, fd_l2_keeps). */
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

static be_stream s;

static const fd_grid *cur; /* the layout at() indexes */

static size_t at(const int n[3], int i, int j, int k)
{
  (void)n;
  return (size_t)fd_grid_index(cur, i, j, k);
}

/* Independent of fd_interior_box: a point is in the shell when it sits in the one-point layer
 * next to a deferred face (its stencil reads that face's ghost). */
static int in_region(const int n[3], fd_region r, unsigned deferred, int i, int j, int k)
{
  int inside = i >= 1 && i <= n[0] && j >= 1 && j <= n[1] && k >= 1 && k <= n[2];
  int ijk[3] = {i, j, k}, shell = 0;
  for (int d = 0; d < 3; d++) {
    if ((deferred >> (2 * d)) & 1u && ijk[d] == 1) shell = 1;
    if ((deferred >> (2 * d + 1)) & 1u && ijk[d] == n[d]) shell = 1;
  }
  return r == FD_REGION_ALL ? inside : (r == FD_REGION_INTERIOR ? inside && !shell : inside && shell);
}

static void naive(const int n[3], const fd_coeffs *c, const real_t *u, const real_t *f, real_t *out)
{
  const size_t py = (size_t)cur->sx, pz = (size_t)cur->sxy;
  for (int k = 1; k <= n[2]; k++)
    for (int j = 1; j <= n[1]; j++)
      for (int i = 1; i <= n[0]; i++) {
        size_t p = at(n, i, j, k);
        double v = (double)c->cc * u[p] + (double)c->cx * ((double)u[p - 1] + u[p + 1]) +
                   (double)c->cy * ((double)u[p - py] + u[p + py]) +
                   (double)c->cz * ((double)u[p - pz] + u[p + pz]);
        if (f) v += (double)c->cf * f[p];
        out[p] = (real_t)v;
      }
}

static void test_every_variant_tile_region_and_operator(void **state)
{
  (void)state;
  /* 130 along x: rows padded to 128-byte boundaries (backend.h) */
  int sizes[][3] = {{2, 2, 2}, {3, 5, 7}, {8, 3, 2}, {13, 11, 9}, {37, 23, 19}, {1, 4, 4}, {130, 3, 4}};
  fd_coeffs sets[3] = {
    {-6.0, 1.0, 1.0, 1.0, 0.0},          /* laplacian, unit spacing */
    {0.5, 1.0 / 12, 1.0 / 12, 1.0 / 12, 0}, /* heat */
    {0.0, 1.0 / 6, 1.0 / 6, 1.0 / 6, -1.0 / 6}, /* jacobi */
  };
  const int tiles[] = {1, 2, 4, 8, 16};
  /* deferred faces: all six, none, one axis, alternating sides, a random-looking mix */
  const unsigned masks[] = {FD_FACES_ALL, 0u, 0x0cu, 0x15u, 0x2au, 0x31u};
  const double tol = sizeof(real_t) == 8 ? 1e-14 : 1e-5;
  for (size_t sz = 0; sz < sizeof sizes / sizeof sizes[0]; sz++) {
    const int *n = sizes[sz];
    fd_grid g;
    assert_int_equal(fd_grid_init(&g, n, 1), 0);
    cur = &g;
    size_t pts = g.elems;
    real_t *u, *f, *ref, *out, *all;
    be_malloc((void **)&u, pts * sizeof(real_t));
    be_malloc((void **)&f, pts * sizeof(real_t));
    ref = malloc(pts * sizeof(real_t));
    be_malloc((void **)&out, pts * sizeof(real_t));
    be_malloc((void **)&all, pts * sizeof(real_t));
    fd_field ru = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 7 + sz};
    fd_field rf = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 99 + sz};
    fd_field nan_field = {.kind = FD_FIELD_CONST, .scale = NAN};
    be_fill(&g, &ru, u, s);
    be_fill(&g, &rf, f, s);
    for (int op = 0; op < 3; op++) {
      const real_t *fp = op == 2 ? f : NULL;
      naive(n, &sets[op], u, fp, ref);
      for (int kid = 0; kid < FD_KERNEL_COUNT; kid++)
        for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
          fd_kernel kern = {.id = (fd_kernel_id)kid, .tile = tiles[t]};
          /* ALL in one call */
          be_fill(&g, &nan_field, all, s);
          assert_int_equal(be_stencil(&g, FD_REGION_ALL, 0x3f, &sets[op], u, fp, all, kern, s), BE_OK);
          /* INTERIOR and SHELL separately for each mask, each checked for what it leaves
           * alone; together they must give ALL */
          for (size_t mi = 0; mi < sizeof masks / sizeof masks[0]; mi++)
            for (int r = FD_REGION_INTERIOR; r <= FD_REGION_SHELL; r++) {
              be_fill(&g, &nan_field, out, s);
              assert_int_equal(be_stencil(&g, (fd_region)r, masks[mi], &sets[op], u, fp, out, kern, s), BE_OK);
              for (int k = 0; k <= n[2] + 1; k++)
                for (int j = 0; j <= n[1] + 1; j++)
                  for (int i = 0; i <= n[0] + 1; i++) {
                    real_t v = out[at(n, i, j, k)];
                    if (in_region(n, (fd_region)r, masks[mi], i, j, k)) {
                      if (!(v == all[at(n, i, j, k)]))
                        fail_msg("size %zu op %d kernel %d tile %d region %d mask 0x%x: (%d,%d,%d) differs from ALL",
                                 sz, op, kid, tiles[t], r, masks[mi], i, j, k);
                    } else if (!isnan(v)) {
                      fail_msg("region %d mask 0x%x wrote outside itself at (%d,%d,%d)", r, masks[mi], i, j, k);
                    }
                  }
            }
          for (int k = 0; k <= n[2] + 1; k++)
            for (int j = 0; j <= n[1] + 1; j++)
              for (int i = 0; i <= n[0] + 1; i++) {
                size_t p = at(n, i, j, k);
                if (in_region(n, FD_REGION_ALL, 0, i, j, k)) {
                  double scale = fabs((double)ref[p]) + 1.0;
                  if (!(fabs((double)all[p] - (double)ref[p]) <= tol * scale))
                    fail_msg("size %zu op %d kernel %d tile %d: (%d,%d,%d) = %.17g, naive %.17g",
                             sz, op, kid, tiles[t], i, j, k, (double)all[p], (double)ref[p]);
                } else {
                  assert_true(isnan(all[p])); /* ghosts untouched */
                }
              }
        }
    }
    be_free(u);
    be_free(f);
    free(ref);
    be_free(out);
    be_free(all);
  }
}

/* Two z-ranges with the same coefficients give be_stencil's field bit for bit, for every region
 * and split plane; a range writes only its planes; different coefficients per range give each
 * plane its own set (the two-layer wave); be_add_point adds at exactly one point. */
static void test_zrange_and_point_source(void **state)
{
  (void)state;
  const int n[3] = {7, 6, 9};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  cur = &g;
  const size_t all = g.elems;
  real_t *u, *f, *ref, *out, *lay;
  assert_int_equal(be_malloc((void **)&u, all * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&f, all * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&ref, all * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&out, all * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&lay, all * sizeof(real_t)), BE_OK);
  fd_field fl = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = 7, .h = {1, 1, 1}, .L = {1, 1, 1}};
  assert_int_equal(be_fill(&g, &fl, u, s), BE_OK);
  fl.seed = 8;
  assert_int_equal(be_fill(&g, &fl, f, s), BE_OK);
  const fd_coeffs c1 = {1.7, 0.11, 0.13, 0.17, -1.0}, c2 = {1.1, 0.31, 0.37, 0.41, -1.0};
  const fd_kernel kern = {.id = FD_KERNEL_REORDERED, .tile = 1};
  for (int region = FD_REGION_ALL; region <= FD_REGION_SHELL; region++)
    for (int split = 0; split <= n[2]; split++) {
      fd_field poison = {.kind = FD_FIELD_CONST, .scale = NAN};
      assert_int_equal(be_fill(&g, &poison, ref, s), BE_OK);
      assert_int_equal(be_fill(&g, &poison, out, s), BE_OK);
      assert_int_equal(be_fill(&g, &poison, lay, s), BE_OK);
      assert_int_equal(be_stencil(&g, (fd_region)region, FD_FACES_ALL, &c1, u, f, ref, kern, s), BE_OK);
      assert_int_equal(be_stencil_zrange(&g, (fd_region)region, FD_FACES_ALL, 1, split, &c1, u, f, out, kern, s), BE_OK);
      for (int k = split + 1; k <= n[2] + 1; k++) /* planes above split untouched */
        for (int j = 0; j <= n[1] + 1; j++)
          for (int i = 0; i <= n[0] + 1; i++) assert_true(isnan(out[at(n, i, j, k)]));
      assert_int_equal(be_stencil_zrange(&g, (fd_region)region, FD_FACES_ALL, split + 1, n[2] + 5, &c1, u, f, out, kern, s), BE_OK);
      assert_memory_equal(ref, out, all * sizeof(real_t));
      /* two layers: each plane matches the one-range stencil with its own coefficients */
      assert_int_equal(be_stencil_zrange(&g, (fd_region)region, FD_FACES_ALL, 1, split, &c1, u, f, lay, kern, s), BE_OK);
      assert_int_equal(be_stencil_zrange(&g, (fd_region)region, FD_FACES_ALL, split + 1, n[2], &c2, u, f, lay, kern, s), BE_OK);
      assert_int_equal(be_fill(&g, &poison, out, s), BE_OK);
      assert_int_equal(be_stencil(&g, (fd_region)region, FD_FACES_ALL, &c2, u, f, out, kern, s), BE_OK);
      for (int k = split + 1; k <= n[2]; k++)
        for (int j = 0; j <= n[1] + 1; j++)
          for (int i = 0; i <= n[0] + 1; i++)
            assert_memory_equal(&lay[at(n, i, j, k)], &out[at(n, i, j, k)], sizeof(real_t));
      for (int k = 1; k <= split; k++)
        for (int j = 0; j <= n[1] + 1; j++)
          for (int i = 0; i <= n[0] + 1; i++)
            assert_memory_equal(&lay[at(n, i, j, k)], &ref[at(n, i, j, k)], sizeof(real_t));
    }
  /* the point source */
  assert_int_equal(be_memcpy_async(out, u, all * sizeof(real_t), BE_COPY_D2D, s), BE_OK);
  assert_int_equal(be_add_point(&g, 3, 2, 5, (real_t)0.25, out, s), BE_OK);
  assert_int_equal(be_stream_sync(s), BE_OK);
  for (int k = 0; k <= n[2] + 1; k++)
    for (int j = 0; j <= n[1] + 1; j++)
      for (int i = 0; i <= n[0] + 1; i++) {
        size_t p = at(n, i, j, k);
        real_t want = (i == 3 && j == 2 && k == 5) ? u[p] + (real_t)0.25 : u[p];
        assert_memory_equal(&want, &out[p], sizeof(real_t));
      }
  assert_int_not_equal(be_add_point(&g, 9, 0, 0, 1, out, s), BE_OK);
  be_free(u);
  be_free(f);
  be_free(ref);
  be_free(out);
  be_free(lay);
}

static void test_fill_and_norms_match_direct_evaluation(void **state)
{
  (void)state;
  int n[3] = {9, 7, 5};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  cur = &g;
  size_t pts = g.elems;
  real_t *a, *b;
  be_malloc((void **)&a, pts * sizeof(real_t));
  be_malloc((void **)&b, pts * sizeof(real_t));
  fd_field q = {.kind = FD_FIELD_QUADRATIC, .scale = 1.0, .h = {1, 1, 1}, .L = {10, 8, 6},
                .offset = {3, 0, 2}};
  fd_field sn = {.kind = FD_FIELD_SINE, .scale = 2.0, .h = {0.1, 0.125, 1.0 / 6}, .L = {1, 1, 1}};
  be_fill(&g, &q, a, s);
  be_fill(&g, &sn, b, s);
  double sum = 0, mx = 0;
  for (int k = 0; k <= n[2] + 1; k++)
    for (int j = 0; j <= n[1] + 1; j++)
      for (int i = 0; i <= n[0] + 1; i++) {
        double x = 3 + i, y = j, z = 2 + k;
        double want = 0.5 * (x * (x - 10) + y * (y - 8) + z * (z - 6));
        assert_true(a[at(n, i, j, k)] == (real_t)want);
        double ws = 2.0 * sin(3.14159265358979323846 * 0.1 * i) * sin(3.14159265358979323846 * 0.125 * j) * sin(3.14159265358979323846 * k / 6.0);
        assert_true(fabs(b[at(n, i, j, k)] - ws) <= 1e-6);
        if (i >= 1 && i <= n[0] && j >= 1 && j <= n[1] && k >= 1 && k <= n[2]) {
          double d = (double)a[at(n, i, j, k)] - (double)b[at(n, i, j, k)] - 0.5;
          sum += d * d;
          if (fabs(d) > mx) mx = fabs(d);
        }
      }
  fd_field half = {.kind = FD_FIELD_CONST, .scale = 0.5};
  fd_norms nm;
  assert_int_equal(be_norms(&g, a, b, &half, &nm, s), BE_OK);
  assert_int_equal(nm.count, n[0] * n[1] * n[2]);
  assert_true(fabs(nm.sum_sq - sum) <= 1e-12 * sum);
  assert_true(nm.max_abs == mx);
  /* a NaN anywhere in the interior makes the max infinite */
  a[at(n, 4, 3, 2)] = NAN;
  assert_int_equal(be_norms(&g, a, NULL, NULL, &nm, s), BE_OK);
  assert_true(isinf(nm.max_abs));
  be_free(a);
  be_free(b);
}

/* The L2 rules of the GPU z-marching kernel (backend.h: fd_l2_alternates, fd_l2_keeps) on the
 * grids of the small-block study in double, with an H100's L2 (50 MiB) shared by 1, 2 and 8
 * ranks, and at the band's edges: a rule moved by a factor or an edge taken the other way
 * fails it. */
static double field_bytes(int n)
{
  fd_grid g = {.ghost = 0};
  const int e[3] = {n, n, n};
  assert_int_equal(fd_grid_init(&g, e, 1), 0);
  return (double)g.elems * sizeof(real_t);
}

static void test_l2_rules_of_the_gpu_kernel(void **state)
{
  (void)state;
  const double l2 = 52428800.0;
  const struct {
    int n, sharers, keeps, alternates_heat, alternates_jacobi;
  } cell[] = {
    {64, 1, 0, 0, 0},  {96, 1, 0, 0, 0},  {128, 1, 1, 0, 1}, {160, 1, 1, 1, 1}, {192, 1, 0, 1, 1},
    {256, 1, 0, 1, 1}, {64, 2, 0, 0, 0},  {96, 2, 1, 0, 0},  {128, 2, 1, 1, 1}, {48, 8, 0, 0, 0},
    {64, 8, 1, 0, 1},  {96, 8, 0, 1, 1},
  };
  const size_t ncell = sizeof(real_t) == sizeof(double) ? sizeof cell / sizeof cell[0] : 0;
  for (size_t q = 0; q < ncell; q++) {
    const double f = field_bytes(cell[q].n), share = l2 / cell[q].sharers;
    if (fd_l2_keeps(f, share) != cell[q].keeps || fd_l2_alternates(2 * f, share) != cell[q].alternates_heat ||
        fd_l2_alternates(3 * f, share) != cell[q].alternates_jacobi)
      fail_msg("%d^3 on %d ranks (field %.1f MB, share %.1f MB): keeps %d, alternates %d / %d",
               cell[q].n, cell[q].sharers, f / 1e6, share / 1e6, fd_l2_keeps(f, share),
               fd_l2_alternates(2 * f, share), fd_l2_alternates(3 * f, share));
  }
  assert_true(fd_l2_keeps(l2, l2));
  assert_false(fd_l2_keeps(l2 + 1, l2));
  assert_false(fd_l2_keeps(l2 / 4, l2));
  assert_true(fd_l2_keeps(l2 / 4 + 1, l2));
  assert_false(fd_l2_alternates(l2, l2));
  assert_true(fd_l2_alternates(l2 + 1, l2));
  assert_false(fd_l2_keeps(1e6, 0) || fd_l2_alternates(1e12, 0)); /* L2 unknown */
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  be_info info;
  if (be_init(0, &info) != BE_OK || be_stream_create(&s, BE_PRIORITY_NORMAL) != BE_OK) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_variant_tile_region_and_operator),
    cmocka_unit_test(test_fill_and_norms_match_direct_evaluation),
    cmocka_unit_test(test_zrange_and_point_source),
    cmocka_unit_test(test_l2_rules_of_the_gpu_kernel),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  be_stream_destroy(s);
  be_finalize();
  MPI_Finalize();
  return failed;
}
