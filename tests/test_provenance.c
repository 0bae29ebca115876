/* test_provenance.c - what a run records about its software stack (src/run/provenance.c): which
 * environment variables count as MPI settings (and which launcher bookkeeping does not), that
 * they are recorded sorted with their values, cut values marked, odd names skipped; the Slurm
 * job where set and null where not; the MPI library's first line; the report lines and the
 * JSON members. */
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

#include "fd_error.h"
#include "provenance.h"
#include "test_util.h"

static void test_mpi_settings_are_selected_and_launcher_bookkeeping_is_not(void **state)
{
  (void)state;
  static const char *const yes[] = {"MPICH_GPU_SUPPORT_ENABLED", "MPICH_OFI_NIC_POLICY",
                                    "OMPI_MCA_btl", "OMPI_MCA_pml", "UCX_TLS", "FI_CXI_RX_MATCH_MODE",
                                    "OMPI_MCA_rmaps_base_oversubscribe"};
  static const char *const no[] = {"OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_vpid", "OMPI_MCA_ess",
                                   "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                                   "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "PATH", "MPICH", "OMPI_COMM_WORLD_RANK",
                                   "SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES", "XUCX_TLS"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    if (!prov_env_selected(yes[i])) fail_msg("%s not selected", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (prov_env_selected(no[i])) fail_msg("%s selected", no[i]);
}

static int find_env(const fd_provenance *p, const char *name)
{
  for (int i = 0; i < p->nenv; i++)
    if (strcmp(p->env_name[i], name) == 0) return i;
  return -1;
}

static void test_collect_records_the_environment_sorted_and_cut(void **state)
{
  (void)state;
  char big[400];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(setenv("UCX_FDMINI_TEST_B", "2", 1), 0);
  assert_int_equal(setenv("MPICH_FDMINI_TEST_A", "1", 1), 0);
  assert_int_equal(setenv("FI_FDMINI_TEST_LONG", big, 1), 0);
  assert_int_equal(setenv("OMPI_MCA_orte_fdmini_test", "launcher", 1), 0);
  assert_int_equal(setenv("MPICH_FDMINI\"TEST", "bad name", 1), 0);
  assert_int_equal(setenv("SLURM_JOB_ID", "4242", 1), 0);
  assert_int_equal(setenv("SLURM_JOB_NODELIST", "nid[005163-005164]", 1), 0);
  fd_provenance p;
  prov_start(&p);
  assert_int_equal(strlen(p.start_time), 20); /* 2026-11-30T12:00:00Z */
  assert_int_equal(p.start_time[19], 'Z');
  assert_int_equal(prov_collect(&p), FD_OK);
  int a = find_env(&p, "MPICH_FDMINI_TEST_A"), b = find_env(&p, "UCX_FDMINI_TEST_B");
  int l = find_env(&p, "FI_FDMINI_TEST_LONG");
  assert_true(a >= 0 && b > a && l >= 0 && l < a); /* sorted: FI_ < MPICH_ < UCX_ */
  assert_string_equal(p.env_value[a], "1");
  assert_int_equal(strlen(p.env_value[l]), PROV_ENV_VALUE - 1);
  assert_string_equal(p.env_value[l] + PROV_ENV_VALUE - 4, "...");
  assert_int_equal(find_env(&p, "OMPI_MCA_orte_fdmini_test"), -1);
  for (int i = 0; i < p.nenv; i++) assert_null(strchr(p.env_name[i], '"'));
  for (int i = 1; i < p.nenv; i++) assert_true(strcmp(p.env_name[i - 1], p.env_name[i]) < 0);
  assert_string_equal(p.slurm_job_id, "4242");
  assert_string_equal(p.slurm_nodelist, "nid[005163-005164]");
  /* the library's first line: non-empty, one line */
  assert_true(p.mpi_library[0] != '\0');
  assert_null(strchr(p.mpi_library, '\n'));
  if (strcmp(FDMINI_BACKEND_NAME, "host") == 0) {
    assert_string_equal(p.gpu_runtime, "none");
    assert_string_equal(p.gpu_driver, "none");
  } else {
    assert_true(p.gpu_runtime[0] != '\0' && p.gpu_driver[0] != '\0');
  }

  FILE *f = tmpfile();
  assert_non_null(f);
  prov_print(f, &p);
  char *text = read_all(f);
  fclose(f);
  assert_non_null(strstr(text, "  built       " FDMINI_COMPILER ", " FDMINI_BUILD_TYPE));
  assert_non_null(strstr(text, "  job         started "));
  assert_non_null(strstr(text, ", Slurm job 4242 on nid[005163-005164]\n"));
  assert_non_null(strstr(text, " MPICH_FDMINI_TEST_A=1 "));
  free(text);

  f = tmpfile();
  assert_non_null(f);
  fd_json j;
  json_open(&j, f);
  prov_json(&j, &p);
  json_close(&j);
  char *json = read_all(f);
  fclose(f);
  assert_non_null(strstr(json, "\"slurm_job_id\": \"4242\""));
  assert_non_null(strstr(json, "\"mpi_env\": {"));
  assert_non_null(strstr(json, "\"MPICH_FDMINI_TEST_A\": \"1\""));
  assert_non_null(strstr(json, "\"build_flags\": \""));
  assert_non_null(strstr(json, "\"gtl\": \"" FDMINI_GTL_STATUS "\""));
  free(json);

  unsetenv("UCX_FDMINI_TEST_B");
  unsetenv("MPICH_FDMINI_TEST_A");
  unsetenv("FI_FDMINI_TEST_LONG");
  unsetenv("OMPI_MCA_orte_fdmini_test");
  unsetenv("MPICH_FDMINI\"TEST");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JOB_NODELIST");
}

static void test_outside_slurm_the_job_is_null(void **state)
{
  (void)state;
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JOB_NODELIST");
  fd_provenance p;
  prov_start(&p);
  assert_int_equal(prov_collect(&p), FD_OK);
  FILE *f = tmpfile();
  assert_non_null(f);
  fd_json j;
  json_open(&j, f);
  prov_json(&j, &p);
  json_close(&j);
  char *json = read_all(f);
  fclose(f);
  assert_non_null(strstr(json, "\"slurm_job_id\": null"));
  assert_non_null(strstr(json, "\"slurm_nodelist\": null"));
  free(json);
  f = tmpfile();
  assert_non_null(f);
  prov_print(f, &p);
  char *text = read_all(f);
  fclose(f);
  assert_non_null(strstr(text, ", not under Slurm\n"));
  free(text);
}

/* More variables than the record holds: the first PROV_ENV_MAX by name, the rest counted. */
static void test_too_many_variables_are_counted(void **state)
{
  (void)state;
  char name[64];
  for (int i = 0; i < PROV_ENV_MAX + 5; i++) {
    snprintf(name, sizeof name, "UCX_FDMINI_MANY_%03d", i);
    assert_int_equal(setenv(name, "v", 1), 0);
  }
  fd_provenance p;
  prov_start(&p);
  assert_int_equal(prov_collect(&p), FD_OK);
  assert_int_equal(p.nenv, PROV_ENV_MAX);
  assert_true(p.nenv_left_out >= 5);
  FILE *f = tmpfile();
  assert_non_null(f);
  prov_print(f, &p);
  char *text = read_all(f);
  fclose(f);
  assert_non_null(strstr(text, " more)\n"));
  free(text);
  for (int i = 0; i < PROV_ENV_MAX + 5; i++) {
    snprintf(name, sizeof name, "UCX_FDMINI_MANY_%03d", i);
    unsetenv(name);
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mpi_settings_are_selected_and_launcher_bookkeeping_is_not),
    cmocka_unit_test(test_collect_records_the_environment_sorted_and_cut),
    cmocka_unit_test(test_outside_slurm_the_job_is_null),
    cmocka_unit_test(test_too_many_variables_are_counted),
  };
  int failed = cmocka_run_group_tests_name("provenance", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
