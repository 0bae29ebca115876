/* test_window_boxes.c - the geometry of the steps between deep-halo exchanges (src/model/window.h):
 * the box of each step shrinks by one point per step on the sides with a neighbour only, from
 * S-1 into the ghosts down to 1..n, each step reading nothing outside the previous step's box
 * (or the received ghosts, or a Dirichlet layer); the fix box; the interior of a first pass;
 * and box minus interior as slabs that cover every point of the difference exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "window.h"

static void test_step_boxes_shrink_on_sides_with_neighbours(void **state)
{
  (void)state;
  const int n[3] = {9, 7, 5};
  for (int S = 1; S <= 4; S++)
    for (unsigned sides = 0; sides < 64; sides++) {
      fd_box prev, fix;
      window_fix_box(n, S, sides, &fix);
      for (int s = 0; s < S; s++) {
        fd_box b;
        window_step_box(n, S, sides, s, &b);
        for (int d = 0; d < 3; d++) {
          const int low = (sides >> (2 * d)) & 1u, high = (sides >> (2 * d + 1)) & 1u;
          assert_int_equal(b.lo[d], low ? 1 - (S - 1 - s) : 1);
          assert_int_equal(b.hi[d], high ? n[d] + (S - 1 - s) : n[d]);
          /* every step stays inside the fix box: never the outermost ghost layer, never a
           * Dirichlet layer */
          assert_true(b.lo[d] >= fix.lo[d] && b.hi[d] <= fix.hi[d]);
          assert_int_equal(fix.lo[d], low ? 2 - S : 1);
          assert_int_equal(fix.hi[d], high ? n[d] + S - 1 : n[d]);
          /* what step s reads (its box widened by one on the sides with neighbours) is the
           * previous step's box, or for step 0 the received ghosts 1-S..n+S */
          const int rlo = b.lo[d] - (low ? 1 : 0), rhi = b.hi[d] + (high ? 1 : 0);
          if (s == 0) {
            assert_int_equal(rlo, low ? 1 - S : 1);
            assert_int_equal(rhi, high ? n[d] + S : n[d]);
          } else {
            assert_int_equal(rlo, prev.lo[d]);
            assert_int_equal(rhi, prev.hi[d]);
          }
        }
        prev = b;
      }
      /* the last step updates exactly the block */
      for (int d = 0; d < 3; d++) assert_true(prev.lo[d] == 1 && prev.hi[d] == n[d]);
    }
}

static void test_first_pass_interior(void **state)
{
  (void)state;
  const int n[3] = {9, 7, 5};
  fd_box b;
  window_interior(n, 0x3fu, 2, &b);
  for (int d = 0; d < 3; d++) assert_true(b.lo[d] == 3 && b.hi[d] == n[d] - 2);
  window_interior(n, 0x05u, 1, &b); /* x low and y low */
  assert_true(b.lo[0] == 2 && b.hi[0] == 9 && b.lo[1] == 2 && b.hi[1] == 7 && b.lo[2] == 1 && b.hi[2] == 5);
  window_interior(n, 0u, 4, &b); /* no neighbour: all of it */
  for (int d = 0; d < 3; d++) assert_true(b.lo[d] == 1 && b.hi[d] == n[d]);
  window_interior(n, 0x30u, 3, &b); /* z too thin: empty */
  assert_int_equal(window_box_points(&b), 0);
  assert_true(window_box_contains(&(fd_box){{1, 1, 1}, {2, 2, 2}}, 2, 1, 2));
  assert_false(window_box_contains(&(fd_box){{1, 1, 1}, {2, 2, 2}}, 3, 1, 2));
}

/* b minus inner as slabs: every point of b outside inner exactly once, no point of inner. */
static void check_minus(const fd_box *b, const fd_box *inner)
{
  enum { E = 16, O = 6 }; /* indices -6..9 */
  static unsigned char cover[E][E][E];
  memset(cover, 0, sizeof cover);
  fd_box slab[6];
  const int ns = window_box_minus(b, inner, slab);
  assert_true(ns >= 0 && ns <= 6);
  for (int q = 0; q < ns; q++) {
    assert_true(window_box_points(&slab[q]) > 0);
    for (int k = slab[q].lo[2]; k <= slab[q].hi[2]; k++)
      for (int j = slab[q].lo[1]; j <= slab[q].hi[1]; j++)
        for (int i = slab[q].lo[0]; i <= slab[q].hi[0]; i++) cover[k + O][j + O][i + O]++;
  }
  long long covered = 0;
  for (int k = -O; k < E - O; k++)
    for (int j = -O; j < E - O; j++)
      for (int i = -O; i < E - O; i++) {
        const int want = window_box_contains(b, i, j, k) && !window_box_contains(inner, i, j, k);
        assert_int_equal(cover[k + O][j + O][i + O], want);
        covered += want;
      }
  assert_int_equal(covered, window_box_points(b) - window_box_points(inner));
}

static void test_box_minus_covers_the_rest_once(void **state)
{
  (void)state;
  uint64_t x = 12345;
  for (int t = 0; t < 400; t++) {
    fd_box b, in;
    for (int d = 0; d < 3; d++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      b.lo[d] = -5 + (int)((x >> 33) % 5);
      b.hi[d] = b.lo[d] + (int)((x >> 40) % 9);
      const int w = b.hi[d] - b.lo[d] + 1;
      in.lo[d] = b.lo[d] + (int)((x >> 50) % (unsigned)w);
      in.hi[d] = in.lo[d] + (int)((x >> 20) % (unsigned)(b.hi[d] - in.lo[d] + 2)) - 1; /* may be empty */
    }
    check_minus(&b, &in);
  }
  fd_box b = {{-1, -1, -1}, {5, 5, 5}}, in = {{2, 2, 2}, {3, 3, 3}};
  fd_box slab[6];
  assert_int_equal(window_box_minus(&b, &in, slab), 6);
  assert_int_equal(window_box_minus(&b, &b, slab), 0);
  check_minus(&b, &in);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_step_boxes_shrink_on_sides_with_neighbours),
    cmocka_unit_test(test_first_pass_interior),
    cmocka_unit_test(test_box_minus_covers_the_rest_once),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
