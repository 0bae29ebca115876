/* test_decomposition.c - block extents, starts and neighbours of the 3D decomposition for many
 * (N, P), uneven splits included, and the subdomain-thickness check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "decomp.h"
#include "fd_error.h"

/* Blocks tile 0..N-1 exactly, in order; sizes differ by at most one; larger first. */
static void test_split_tiles_the_line_for_many_N_and_P(void **state)
{
  (void)state;
  for (long long N = 2; N <= 200; N += 7)
    for (int P = 1; P <= N / 2 && P <= 40; P++) {
      long long next = 0, prev_n = -1;
      for (int c = 0; c < P; c++) {
        long long n, s;
        decomp_split(N, P, c, &n, &s);
        assert_int_equal(s, next);
        assert_true(n == N / P || n == N / P + 1);
        if (prev_n >= 0) assert_true(n <= prev_n);
        assert_int_equal(n == N / P + 1, c < N % P);
        prev_n = n;
        next = s + n;
      }
      assert_int_equal(next, N);
    }
}

static void test_split_known_uneven_values(void **state)
{
  (void)state;
  long long n, s;
  decomp_split(37, 4, 0, &n, &s); /* 37 = 4*9 + 1: 10 9 9 9 */
  assert_int_equal(n, 10);
  assert_int_equal(s, 0);
  decomp_split(37, 4, 1, &n, &s);
  assert_int_equal(n, 9);
  assert_int_equal(s, 10);
  decomp_split(37, 4, 3, &n, &s);
  assert_int_equal(n, 9);
  assert_int_equal(s, 28);
  decomp_split(23, 3, 2, &n, &s); /* 8 8 7 */
  assert_int_equal(n, 7);
  assert_int_equal(s, 16);
}

static void test_check_rejects_thin_subdomains(void **state)
{
  (void)state;
  long long N[3] = {37, 23, 19};
  int ok[3] = {4, 3, 2};
  assert_int_equal(decomp_check(N, ok), FD_OK);
  int thin[3] = {1, 12, 1}; /* 23 / 12 = 1 point */
  assert_int_equal(decomp_check(N, thin), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "subdomain too thin"));
  assert_non_null(strstr(fd_error_message(), " y "));
  long long N2[3] = {3, 64, 64};
  int P2[3] = {2, 1, 1}; /* 2 + 1 points: the second block is too thin */
  assert_int_equal(decomp_check(N2, P2), FD_ERR_USAGE);
  int P3[3] = {1, 1, 1};
  assert_int_equal(decomp_check(N2, P3), FD_OK);
}

/* On one rank: the whole grid, no neighbours. */
static void test_create_single_rank_owns_everything(void **state)
{
  (void)state;
  long long N[3] = {37, 23, 19};
  int P[3] = {1, 1, 1};
  fd_decomp d;
  assert_int_equal(decomp_create(MPI_COMM_SELF, N, P, &d), FD_OK);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(d.n[k], N[k]);
    assert_int_equal(d.start[k], 0);
    assert_int_equal(d.nmin[k], N[k]);
    assert_int_equal(d.nbr[2 * k], MPI_PROC_NULL);
    assert_int_equal(d.nbr[2 * k + 1], MPI_PROC_NULL);
  }
  assert_int_equal(decomp_destroy(&d), FD_OK);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_split_tiles_the_line_for_many_N_and_P),
    cmocka_unit_test(test_split_known_uneven_values),
    cmocka_unit_test(test_check_rejects_thin_subdomains),
    cmocka_unit_test(test_create_single_rank_owns_everything),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
