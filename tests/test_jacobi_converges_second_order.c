/* test_jacobi_converges_second_order.c - Jacobi iterated to convergence on 16^3 and 32^3:
 * the verification passes (residual down by 1e-6 or more, O(h^2) bound met) and halving h
 * divides the error against the manufactured solution by about 4 ((33/17)^2 = 3.77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "bind.h"
#include "fd_error.h"
#include "solver.h"
#include "test_util.h"

static be_info dev;
static fd_node node;

static double converged_error(long long n)
{
  fd_options o;
  char *argv[] = {"test", NULL};
  fd_options_parse(1, argv, &o);
  o.op = FD_OP_JACOBI;
  o.have_global = 1;
  o.global[0] = o.global[1] = o.global[2] = n;
  o.iters = 5000;
  o.warmup = 0;
  o.progress = 0;
  fd_result r;
  int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
  if (rc != FD_OK) fail_msg("jacobi %lld^3: rc %d: %s / %s", n, rc, fd_error_message(), r.verify.detail);
  assert_true(r.verify.converged);
  assert_true(r.verify.passed);
  print_message("jacobi %lld^3: %s\n", n, r.verify.detail);
  return r.verify.error_max;
}

static void test_jacobi_converges_second_order(void **state)
{
  (void)state;
  if (sizeof(real_t) != sizeof(double)) test_skip(); /* float stalls above the 1e-6 residual drop */
  double e16 = converged_error(16), e32 = converged_error(32);
  double ratio = e16 / e32;
  print_message("error ratio 16^3 / 32^3 = %.3f (second order: (33/17)^2 = 3.768)\n", ratio);
  assert_true(ratio > 3.5 && ratio < 4.1);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int shared;
  if (bind_node(MPI_COMM_WORLD, 0, &node) != FD_OK || bind_device(MPI_COMM_WORLD, &node, NULL, 0, &dev, &shared) != FD_OK) return 3;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_jacobi_converges_second_order),
  };
  int failed = test_exit_status(cmocka_run_group_tests(tests, NULL, NULL), (int)(sizeof tests / sizeof tests[0]));
  be_finalize();
  MPI_Finalize();
  return failed;
}
