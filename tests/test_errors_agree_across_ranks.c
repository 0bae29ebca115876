/* test_errors_agree_across_ranks.c - fd_agree (base/fd_error.h) under mpiexec -n P (P = 1, 3):
 * every rank returns the highest code any rank passed, with the message of the lowest rank
 * that passed that code (never a message of a lower code: issue 25, item 11), marked agreed;
 * and FD_OK when no rank failed, the local message untouched. fd_agree_first: the message of
 * the smallest key among the ranks with that code (a stall's line names the first stall). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "fd_error.h"
#include "mr_test.h"

static int rank, size;

/* This rank passes `mine` with the message "code C from rank R"; checks what comes back
 * against the expected code and the rank whose message it must carry. */
static void agree_case(int mine, int want_code, int want_rank)
{
  if (mine != FD_OK) fd_set_error(mine, "code %d from rank %d", mine, rank);
  else fd_set_error(FD_OK, "untouched on rank %d", rank);
  const int got = fd_agree(MPI_COMM_WORLD, mine);
  assert_int_equal(got, want_code);
  char want[64];
  if (want_code == FD_OK) snprintf(want, sizeof want, "untouched on rank %d", rank);
  else snprintf(want, sizeof want, "code %d from rank %d", want_code, want_rank);
  assert_string_equal(fd_error_message(), want);
  assert_int_equal(fd_error_agreed(), want_code != FD_OK);
}

static void test_nothing_failed(void **state)
{
  (void)state;
  agree_case(FD_OK, FD_OK, -1);
}

/* Rank 0 fails with a usage error, every other rank with a runtime failure: the runtime
 * failure is agreed with the message of rank 1 (the lowest rank that had it), not rank 0's. */
static void test_message_belongs_to_the_agreed_code(void **state)
{
  (void)state;
  if (size == 1) agree_case(FD_ERR_USAGE, FD_ERR_USAGE, 0);
  else agree_case(rank == 0 ? FD_ERR_USAGE : FD_ERR_RUNTIME, FD_ERR_RUNTIME, 1);
}

/* The highest code on the last rank only, lower codes and FD_OK on the ranks before it. */
static void test_highest_code_on_the_last_rank(void **state)
{
  (void)state;
  const int mine = rank == size - 1 ? FD_ERR_IO : (rank % 2 ? FD_ERR_USAGE : FD_OK);
  agree_case(mine, FD_ERR_IO, size - 1);
}

/* Every rank fails with the same code: the lowest rank's message. */
static void test_same_code_everywhere(void **state)
{
  (void)state;
  agree_case(FD_ERR_VERIFY, FD_ERR_VERIFY, 0);
}

/* fd_agree_first: every rank fails, rank 0 with a lower code and the least key, the others
 * with keys falling as the rank grows: the message of the last rank (the least key among those
 * with the highest code; fd_agree would give rank 1's). */
static void test_first_by_key(void **state)
{
  (void)state;
  const int code = rank == 0 && size > 1 ? FD_ERR_USAGE : FD_ERR_RUNTIME;
  const unsigned long long key = rank == 0 && size > 1 ? 0 : (unsigned long long)(size - rank) << 32 | 7u;
  fd_set_error(code, "code %d from rank %d", code, rank);
  assert_int_equal(fd_agree_first(MPI_COMM_WORLD, code, key), FD_ERR_RUNTIME);
  char want[64];
  snprintf(want, sizeof want, "code %d from rank %d", FD_ERR_RUNTIME, size - 1);
  assert_string_equal(fd_error_message(), want);
  assert_int_equal(fd_error_agreed(), 1);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mr_init();
  const struct CMUnitTest tests[] = {
    mr_unit_test(test_nothing_failed),
    mr_unit_test(test_message_belongs_to_the_agreed_code),
    mr_unit_test(test_highest_code_on_the_last_rank),
    mr_unit_test(test_same_code_everywhere),
    mr_unit_test(test_first_by_key),
  };
  int failed = mr_exit_status(cmocka_run_group_tests(tests, NULL, NULL), (int)(sizeof tests / sizeof tests[0]));
  MPI_Finalize();
  return failed;
}
