/* test_site.c - the checks a supercomputer's job setup calls for (src/site.c): --halo-path ipc is
 * refused where every rank of a host sees one GPU and the ranks drive different GPUs (LUMI-G's
 * select_gpu.sh, Frontier's --gpus-per-task=1), and only there; no GTL is loaded into this test
 * (so the GTL check has nothing to find) and MPICH_GPU_SUPPORT_ENABLED means nothing to a
 * build for another MPI. The refusal itself is tests/site/test_cray_pe_mock.sh's. */
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
#include "site.h"

/* n ranks on host h: rank i drives GPU bus[i] and sees count[i] devices */
static void ranks_of(site_gpu *r, int n, const unsigned *bus, const int *count)
{
  memset(r, 0, (size_t)n * sizeof *r);
  for (int i = 0; i < n; i++) {
    snprintf(r[i].host, sizeof r[i].host, "nid005163");
    if (bus[i]) snprintf(r[i].pci, sizeof r[i].pci, "0000:%02x:00.0", bus[i]);
    r[i].device_count = count[i];
  }
}

static void test_one_gcd_per_rank_refuses_ipc_with_the_reason(void **state)
{
  (void)state;
  const unsigned bus[8] = {0xc1, 0xc6, 0xc9, 0xce, 0xd1, 0xd6, 0xd9, 0xde};
  const int count[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  site_gpu r[8];
  char why[512];
  ranks_of(r, 8, bus, count);
  assert_int_equal(site_ipc_refusal(r, 8, why, sizeof why), 1);
  assert_non_null(strstr(why, "--halo-path ipc: each rank on host nid005163 sees only its own GPU"));
  assert_non_null(strstr(why, "0000:c1:00.0 and 0000:c6:00.0"));
  assert_non_null(strstr(why, "use --halo-path auto or mpi"));
  assert_null(strchr(why, '\n'));
}

static void test_ranks_sharing_one_visible_gpu_may_use_ipc(void **state)
{
  (void)state;
  const unsigned bus[2] = {0x65, 0x65};
  const int count[2] = {1, 1};
  site_gpu r[2];
  char why[512];
  ranks_of(r, 2, bus, count);
  assert_int_equal(site_ipc_refusal(r, 2, why, sizeof why), 0);
  assert_string_equal(why, "");
}

static void test_ranks_that_see_every_gpu_may_use_ipc(void **state)
{
  (void)state;
  const unsigned bus[4] = {0x18, 0x2a, 0x3a, 0x5d};
  const int count[4] = {4, 4, 4, 4};
  site_gpu r[4];
  ranks_of(r, 4, bus, count);
  assert_int_equal(site_ipc_refusal(r, 4, NULL, 0), 0);
  /* one rank seeing more than one device: halo_create decides per face */
  const int mixed[4] = {1, 1, 2, 1};
  ranks_of(r, 4, bus, mixed);
  assert_int_equal(site_ipc_refusal(r, 4, NULL, 0), 0);
}

static void test_host_backend_and_single_rank_are_not_refused_here(void **state)
{
  (void)state;
  const unsigned none[2] = {0, 0};
  const int count[2] = {1, 1};
  site_gpu r[2];
  ranks_of(r, 2, none, count);
  assert_int_equal(site_ipc_refusal(r, 2, NULL, 0), 0);
  const unsigned one[1] = {0xc1};
  ranks_of(r, 1, one, count);
  assert_int_equal(site_ipc_refusal(r, 1, NULL, 0), 0);
}

/* Collective check on this job: the host backend and other --halo-path values pass. */
static void test_check_ipc_passes_where_it_does_not_apply(void **state)
{
  (void)state;
  fd_options o;
  memset(&o, 0, sizeof o);
  be_info d;
  memset(&d, 0, sizeof d);
  fd_node node;
  assert_int_equal(bind_node(MPI_COMM_WORLD, &node), FD_OK);
  o.halo_path = FD_HALO_PATH_IPC;
  assert_int_equal(site_check_ipc(MPI_COMM_WORLD, &node, &o, &d), FD_OK); /* host: halo.c says why */
  d.is_accelerator = 1;
  d.device_count = 1;
  snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "0000:c1:00.0");
  o.halo_path = FD_HALO_PATH_AUTO;
  assert_int_equal(site_check_ipc(MPI_COMM_WORLD, &node, &o, &d), FD_OK);
  o.halo_path = FD_HALO_PATH_IPC;
  assert_int_equal(site_check_ipc(MPI_COMM_WORLD, &node, &o, &d), FD_OK); /* one rank, one GPU */
}

static void test_no_gtl_in_this_process_and_the_variable_needs_cray_mpich(void **state)
{
  (void)state;
  char name[64] = "x";
  assert_int_equal(site_gtl_loaded(name, sizeof name), 0);
  assert_string_equal(name, "");
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1), 0);
  /* this build links no GTL; refused only by a build without it or under Cray MPICH */
  assert_int_equal(site_check_gtl(stderr), FDMINI_GTL_WITHOUT ? FD_ERR_USAGE : FD_OK);
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1), 0);
  assert_int_equal(site_check_gtl(stderr), FD_OK);
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  assert_int_equal(site_check_gtl(stderr), FD_OK);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_one_gcd_per_rank_refuses_ipc_with_the_reason),
    cmocka_unit_test(test_ranks_sharing_one_visible_gpu_may_use_ipc),
    cmocka_unit_test(test_ranks_that_see_every_gpu_may_use_ipc),
    cmocka_unit_test(test_host_backend_and_single_rank_are_not_refused_here),
    cmocka_unit_test(test_check_ipc_passes_where_it_does_not_apply),
    cmocka_unit_test(test_no_gtl_in_this_process_and_the_variable_needs_cray_mpich),
  };
  int failed = cmocka_run_group_tests_name("site", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
