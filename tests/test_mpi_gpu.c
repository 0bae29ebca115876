/* test_mpi_gpu.c - what fdmini believes the MPI library can do with device memory
 * (base/mpi_gpu.c, compiled into this test with its MPI_Get_library_version replaced by one the
 * test sets, so that Cray MPICH can be played on any machine):
 *   - MPICH_GPU_SUPPORT_ENABLED counts only under Cray MPICH and only as "1": with the variable
 *     exported under this (not GPU-aware) Open MPI or MPICH, --mpi-gpu auto stays staged and
 *     --mpi-gpu aware is refused on every rank (halo_choose_mode);
 *   - under (played) Cray MPICH the variable decides;
 *   - the library's name as one line of text (mpi_library_name: the report, --version, the
 *     launcher check, the line about an ignored MPICH_GPU_SUPPORT_ENABLED);
 *   - MPICH is asked with MPIX_GPU_query_support per backend. Built a second time with
 *     FDMINI_TEST_MPICH40_HEADER, MPIX_GPU_SUPPORT_HIP is removed after mpi.h, as in an MPICH 4.0
 *     header: the CUDA query must still be made (a guard that needed both constants staged a
 *     CUDA-aware MPICH 4.0). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#ifdef FDMINI_TEST_MPICH40_HEADER
#undef MPIX_GPU_SUPPORT_HIP
#endif

/* the library string mpi_gpu.c sees: the real one unless the test plays another */
static char played_library[MPI_MAX_LIBRARY_VERSION_STRING];
static int test_library_version(char *version, int *len)
{
  if (!played_library[0]) return PMPI_Get_library_version(version, len);
  snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "%s", played_library);
  *len = (int)strlen(version);
  return MPI_SUCCESS;
}
#define MPI_Get_library_version test_library_version
#include "../base/mpi_gpu.c"
#undef MPI_Get_library_version

#include "fd_error.h"
#include "halo.h"

static const char *const cray_lib = "MPI VERSION    : CRAY MPICH version 8.1.32.2 (ANL base 3.4a2)\nMPI BUILD INFO : Sun Feb 02 2025";

static be_info device(const char *backend)
{
  be_info d;
  memset(&d, 0, sizeof d);
  d.is_accelerator = 1;
  snprintf(d.backend, sizeof d.backend, "%s", backend);
  return d;
}

static void test_the_value_rule_is_exactly_1(void **state)
{
  (void)state;
  assert_true(mpi_gpu_cray_value_enables("1"));
  const char *no[] = {NULL, "", "0", "yes", "true", "2", " 1", "1 ", "01"};
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) assert_false(mpi_gpu_cray_value_enables(no[i]));
}

static void test_the_library_rule_is_cray_mpich_only(void **state)
{
  (void)state;
  assert_true(mpi_gpu_is_cray_library(cray_lib));
  assert_false(mpi_gpu_is_cray_library("MPICH Version:\t4.0.2\nMPICH Release date: Thu Apr  7 12:34:45 CDT 2022"));
  assert_false(mpi_gpu_is_cray_library("Open MPI v4.1.4, package: Debian OpenMPI"));
  assert_false(mpi_gpu_is_cray_library(NULL));
}

/* Item 3 of issue 25: this machine's MPI is not GPU-aware; the exported Cray variable must not
 * make it so. */
static void test_the_variable_means_nothing_outside_cray_mpich(void **state)
{
  (void)state;
  played_library[0] = '\0';
  char why[256];
  const char *value = NULL;
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  assert_int_equal(mpi_gpu_cray_enabled(&value, why, sizeof why), 0);
  assert_null(value);
  assert_string_equal(why, "");
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1), 0);
  assert_int_equal(mpi_gpu_cray_enabled(&value, why, sizeof why), 0);
  assert_string_equal(value, "1");
  assert_non_null(strstr(why, "MPICH_GPU_SUPPORT_ENABLED=1 ignored: it applies to Cray MPICH only"));
  const char *backends[] = {"hip", "cuda"};
  for (int b = 0; b < 2; b++) {
    be_info d = device(backends[b]);
    assert_int_equal(mpi_gpu_aware(&d, why, sizeof why), 0);
    assert_null(strstr(why, "MPICH_GPU_SUPPORT_ENABLED"));
    int staged = -1;
    assert_int_equal(halo_choose_mode(MPI_COMM_WORLD, FD_MPI_GPU_AUTO, &d, &staged), FD_OK);
    assert_int_equal(staged, 1); /* auto: staged, no device pointer reaches this MPI */
    staged = -1;
    assert_int_equal(halo_choose_mode(MPI_COMM_WORLD, FD_MPI_GPU_AWARE, &d, &staged), FD_ERR_USAGE);
    assert_non_null(strstr(fd_error_message(), "--mpi-gpu aware: this MPI is not GPU-aware"));
    assert_int_equal(halo_choose_mode(MPI_COMM_WORLD, FD_MPI_GPU_STAGED, &d, &staged), FD_OK);
    assert_int_equal(staged, 1);
  }
  be_info host;
  memset(&host, 0, sizeof host);
  snprintf(host.backend, sizeof host.backend, "host");
  int staged = -1;
  assert_int_equal(halo_choose_mode(MPI_COMM_WORLD, FD_MPI_GPU_AWARE, &host, &staged), FD_OK);
  assert_int_equal(staged, 0); /* host memory: any MPI takes it */
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
}

static void test_under_cray_mpich_the_variable_decides(void **state)
{
  (void)state;
  snprintf(played_library, sizeof played_library, "%s", cray_lib);
  char why[256];
  be_info d = device("hip");
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  assert_true(mpi_gpu_is_cray_mpich());
  assert_int_equal(mpi_gpu_aware(&d, why, sizeof why), 0);
  assert_string_equal(why, "Cray MPICH without MPICH_GPU_SUPPORT_ENABLED=1");
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1), 0);
  assert_int_equal(mpi_gpu_aware(&d, why, sizeof why), 0);
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "yes", 1), 0);
  assert_int_equal(mpi_gpu_aware(&d, why, sizeof why), 0);
  assert_non_null(strstr(why, "(only 1 enables GPU support)"));
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1), 0);
  assert_int_equal(mpi_gpu_aware(&d, why, sizeof why), 1);
  assert_string_equal(why, "MPICH_GPU_SUPPORT_ENABLED=1 under Cray MPICH");
  int staged = -1;
  assert_int_equal(halo_choose_mode(MPI_COMM_WORLD, FD_MPI_GPU_AUTO, &d, &staged), FD_OK);
  assert_int_equal(staged, 0);
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  played_library[0] = '\0';
}

/* The name: the first non-blank line, one line of text (no tab or other control character, one
 * space for each run of blanks), cut to the room given, or "unknown". */
static void test_the_library_name_is_one_clean_line(void **state)
{
  (void)state;
  char long_name[201];
  memset(long_name, 'a', 200);
  long_name[200] = '\0';
  char cut[121];
  memset(cut, 'a', 120);
  cut[120] = '\0';
  const struct {
    const char *library, *name;
  } cases[] = {
      {"MPICH Version:\t4.0.2\nMPICH Release date: Thu Apr  7 12:34:45 CDT 2022", "MPICH Version: 4.0.2"},
      {"MPI VERSION    : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2)\nMPI BUILD INFO : x",
       "MPI VERSION : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2)"},
      {"\n \t\r\nOpen MPI  v4.1.4,\t\tpackage:\x01\x7f Debian \r\nident: 4.1.4", "Open MPI v4.1.4, package: Debian"},
      {"Open MPI v4.1.4, package: Debian OpenMPI", "Open MPI v4.1.4, package: Debian OpenMPI"},
      {"ab  cd", "ab"}, /* no room for " c": never a trailing blank */
      {long_name, cut},
      {" \t\n\n", "unknown"},
      {"", "unknown"},
      {NULL, "unknown"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[121];
    mpi_library_name(cases[i].library, name, i == 4 ? 4 : sizeof name);
    if (strcmp(name, cases[i].name)) fail_msg("case %zu: '%s', expected '%s'", i, name, cases[i].name);
  }
  /* this process's library, played as MPICH: the name, and the line of an ignored variable */
  snprintf(played_library, sizeof played_library, "MPICH Version:\t4.0.2\nMPICH Release date: x");
  char name[256], why[256];
  mpi_library_name_here(name, sizeof name);
  assert_string_equal(name, "MPICH Version: 4.0.2");
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1), 0);
  assert_int_equal(mpi_gpu_cray_enabled(NULL, why, sizeof why), 0);
  assert_string_equal(why, "MPICH_GPU_SUPPORT_ENABLED=1 ignored: it applies to Cray MPICH only, this MPI is "
                           "MPICH Version: 4.0.2");
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  played_library[0] = '\0';
}

/* MPICH (not Cray): the GPU query is made per backend, with or without MPIX_GPU_SUPPORT_HIP. */
static void test_mpich_is_asked_per_backend(void **state)
{
  (void)state;
  played_library[0] = '\0';
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  PMPI_Get_library_version(lib, &n);
  if (!strstr(lib, "MPICH")) skip(); /* this build's MPI is not MPICH */
  char why[256];
  be_info cuda = device("cuda"), hip = device("hip");
  assert_int_equal(mpi_gpu_aware(&cuda, why, sizeof why), 0); /* Debian's MPICH: no CUDA */
  assert_string_equal(why, "MPIX_GPU_query_support(CUDA) = 0");
  mpi_gpu_aware(&hip, why, sizeof why);
#ifdef FDMINI_TEST_MPICH40_HEADER
  assert_string_equal(why, "this MPI reports no hip support"); /* no HIP constant to ask with */
#else
  assert_string_equal(why, "MPIX_GPU_query_support(HIP) = 0");
#endif
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_the_value_rule_is_exactly_1),
    cmocka_unit_test(test_the_library_rule_is_cray_mpich_only),
    cmocka_unit_test(test_the_variable_means_nothing_outside_cray_mpich),
    cmocka_unit_test(test_under_cray_mpich_the_variable_decides),
    cmocka_unit_test(test_mpich_is_asked_per_backend),
    cmocka_unit_test(test_the_library_name_is_one_clean_line),
  };
  int failed = cmocka_run_group_tests_name("mpi_gpu", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
