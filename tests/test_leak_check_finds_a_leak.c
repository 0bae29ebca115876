/* test_leak_check_finds_a_leak.c - the sanitizer build's leak check can fail: under the test
 * environment of tests/CMakeLists.txt (its ASAN_OPTIONS and the library suppressions of
 * tools/lsan-suppressions.txt) a block that fdmini-side code allocates after MPI_Init and then
 * loses must be reported at exit, with the function that allocated it. Built and run only with
 * FDMINI_SANITIZE; the test passes when LeakSanitizer's report names plant_leak. */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

/* the only reference to the block, dropped below (volatile: kept through the optimizer) */
static void *volatile planted;

/* Allocates 4096 bytes and forgets them: the leak the check must find. */
static __attribute__((noinline)) void plant_leak(void)
{
  planted = malloc(4096);
  if (planted)
    memset(planted, 1, 4096);
  planted = NULL;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  plant_leak();
  MPI_Finalize();
  return 0;
}
