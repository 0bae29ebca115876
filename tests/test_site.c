/* test_site.c - the checks a supercomputer's job setup calls for (src/run/site.c): --halo-path ipc is
 * refused where every rank of a host sees one GPU and the ranks drive different GPUs (LUMI-G's
 * select_gpu.sh, Frontier's --gpus-per-task=1), and only there; no GTL is loaded into this test
 * (so the GTL check has nothing to find) and MPICH_GPU_SUPPORT_ENABLED means nothing outside
 * Cray MPICH (the refusal itself is tests/site/test_cray_pe_mock.sh's); the launcher's own
 * process count (mpirun, Hydra, an srun step; never an allocation's) against the world. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  char why[1024];
  ranks_of(r, 8, bus, count);
  assert_int_equal(site_ipc_refusal(r, 8, why, sizeof why), 1);
  assert_non_null(strstr(why, "--halo-path ipc: each rank on host nid005163 sees only its own GPU"));
  assert_non_null(strstr(why, "0000:c1:00.0 and 0000:c6:00.0"));
  assert_non_null(strstr(why, "use --halo-path auto or mpi"));
  /* what breaks GPU IPC for MPI is Slurm's per-task cgroup, not ROCR_VISIBLE_DEVICES (LUMI) */
  assert_non_null(strstr(why, "but not under Slurm's per-task GPU binding (--gpus-per-task, --gpu-bind"));
  assert_non_null(strstr(why, "ROCR_VISIBLE_DEVICES (select_gpu.sh)"));
  assert_non_null(strstr(why, "every GPU of the node visible to every rank"));
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
  assert_int_equal(bind_node(MPI_COMM_WORLD, 0, &node), FD_OK);
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
  /* this MPI is not Cray MPICH: the variable means nothing, whatever the build (the refusal
   * under a played Cray MPICH is tests/site/test_cray_pe_mock.sh's) */
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1), 0);
  assert_int_equal(site_check_gtl(stderr), FD_OK);
  assert_int_equal(setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1), 0);
  assert_int_equal(site_check_gtl(stderr), FD_OK);
  unsetenv("MPICH_GPU_SUPPORT_ENABLED");
  assert_int_equal(site_check_gtl(stderr), FD_OK);
}

/* The launcher variables this test may have been started with, saved and cleared. */
static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS",
                                            "SLURM_STEP_ID", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                            "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID",
                                            "SLURM_NTASKS"};
#define NLAUNCHER (sizeof launcher_vars / sizeof launcher_vars[0])
static char *saved_vars[NLAUNCHER];

static int clear_launcher(void **state)
{
  (void)state;
  for (size_t i = 0; i < NLAUNCHER; i++) {
    const char *v = getenv(launcher_vars[i]);
    saved_vars[i] = v ? strdup(v) : NULL;
    unsetenv(launcher_vars[i]);
  }
  return 0;
}

static int restore_launcher(void **state)
{
  (void)state;
  for (size_t i = 0; i < NLAUNCHER; i++) {
    if (saved_vars[i]) setenv(launcher_vars[i], saved_vars[i], 1);
    else unsetenv(launcher_vars[i]);
    free(saved_vars[i]);
    saved_vars[i] = NULL;
  }
  return 0;
}

/* mpirun's, Hydra's and srun's own counts against the world each process sees */
static void test_launcher_counts_against_the_world(void **state)
{
  (void)state;
  site_launcher l;
  char why[512];
  const char *lib = "MPICH Version:\t4.0.2\nMPICH Release date: Thu Apr  7 12:34:45 CDT 2022";
  site_launcher_read(&l);
  assert_int_equal(l.size, 0);
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 0); /* a singleton */
  assert_string_equal(why, "");
  /* an MPICH build started by Open MPI's mpirun -n 4: each process is a world of 1 */
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 4);
  assert_string_equal(l.size_var, "OMPI_COMM_WORLD_SIZE");
  assert_int_equal(l.rank_zero, 0);
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 1);
  assert_string_equal(
      why, "the launcher started 4 processes (OMPI_COMM_WORLD_SIZE=4) but MPI_COMM_WORLD "
           "holds 1: fdmini's MPI library (MPICH Version: 4.0.2) is not the launcher's "
           "(e.g. an MPICH build started by Open MPI's mpirun, or srun without the --mpi "
           "plugin this MPI needs); start fdmini with its own MPI's launcher");
  assert_int_equal(site_launcher_mismatch(&l, 4, lib, why, sizeof why), 0); /* the right MPI */
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  /* Hydra: PMI_SIZE, and the node's count */
  setenv("PMI_SIZE", "3", 1);
  setenv("PMI_RANK", "0", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 3);
  assert_int_equal(l.rank_zero, 1);
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 1);
  assert_int_equal(site_launcher_mismatch(&l, 3, lib, why, sizeof why), 0);
  unsetenv("PMI_SIZE");
  setenv("MPI_LOCALNRANKS", "2", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 0);
  assert_int_equal(l.local, 2);
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 1);
  assert_non_null(strstr(why, "the launcher started 2 processes on this node (MPI_LOCALNRANKS=2)"));
  assert_int_equal(site_launcher_mismatch(&l, 8, lib, why, sizeof why), 0); /* 2 of 8 on this node */
  unsetenv("MPI_LOCALNRANKS");
  unsetenv("PMI_RANK");
  /* srun: its step's count, only inside a step */
  setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 0);
  setenv("SLURM_STEP_ID", "0", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 8);
  assert_string_equal(l.size_var, "SLURM_STEP_NUM_TASKS");
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 1);
  /* mpirun inside an srun step of one task: the closer launcher counts */
  setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 2);
  assert_int_equal(site_launcher_mismatch(&l, 2, lib, why, sizeof why), 0);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("SLURM_STEP_NUM_TASKS");
  unsetenv("SLURM_STEP_ID");
  /* salloc or sbatch without srun: the allocation's SLURM_NTASKS is never read */
  setenv("SLURM_NTASKS", "8", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 0);
  assert_int_equal(site_launcher_mismatch(&l, 1, lib, why, sizeof why), 0);
  unsetenv("SLURM_NTASKS");
  /* values that are no count are ignored */
  setenv("PMI_SIZE", "x", 1);
  site_launcher_read(&l);
  assert_int_equal(l.size, 0);
  unsetenv("PMI_SIZE");
}

/* The collective check on this job: its own launcher agrees with its world. */
static void test_check_launcher_passes_for_this_job(void **state)
{
  (void)state;
  site_launcher l;
  site_launcher_read(&l);
  assert_int_equal(site_check_launcher(&l, MPI_COMM_WORLD, stderr), FD_OK);
  l.size = 5;
  snprintf(l.size_var, sizeof l.size_var, "PMI_SIZE");
  l.rank_zero = 0; /* say nothing here */
  assert_int_equal(site_check_launcher(&l, MPI_COMM_WORLD, stderr), FD_ERR_USAGE);
}

/* The advice line: only Lustre, only one OST, only large files. */
static void test_lustre_advice_for_a_large_file_on_one_ost(void **state)
{
  (void)state;
  char line[8192];
  const long lustre = 0x0BD00BD0L, ext4 = 0xEF53L;
  const unsigned long long big = 128ULL << 30, small = 512ULL << 20;
  assert_int_equal(site_lustre_advice("--snapshot-dir", "/scratch/p/snaps", lustre, 1, big, line, sizeof line), 1);
  assert_string_equal(line, "fdmini: advice: --snapshot-dir writes one 128.0 GiB file per write into "
                            "/scratch/p/snaps, a Lustre directory striped over 1 OST: stripe the "
                            "directory first, e.g. `lfs setstripe -c 8 /scratch/p/snaps` (LUMI user "
                            "guide, Lustre; or LUMI's /flash), which also applies to the files already "
                            "there only when rewritten");
  assert_int_equal(site_lustre_advice("--dump", "/scratch/p", lustre, 8, big, line, sizeof line), 0);
  assert_string_equal(line, "");
  assert_int_equal(site_lustre_advice("--dump", "/scratch/p", lustre, -1, big, line, sizeof line), 0); /* all OSTs */
  assert_int_equal(site_lustre_advice("--dump", "/scratch/p", lustre, 0, big, line, sizeof line), 0); /* PFL */
  assert_int_equal(site_lustre_advice("--dump", "/home/u", ext4, 1, big, line, sizeof line), 0);
  assert_int_equal(site_lustre_advice("--dump", "/scratch/p", lustre, 1, small, line, sizeof line), 0);
  /* not on Lustre here: nothing printed for this machine's folders */
  site_check_lustre("--dump", "/tmp", big, stderr);
}

/* The stripe count from `lfs getstripe -d DIR`, with a fake lfs first on PATH. */
static void test_lustre_stripe_count_from_lfs(void **state)
{
  (void)state;
  char dir[] = "/tmp/fdmini-lfs-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], script[512], args[256];
  snprintf(path, sizeof path, "%s/lfs", dir);
  snprintf(args, sizeof args, "%s/args", dir);
  const char *old_path = getenv("PATH");
  char *saved = strdup(old_path ? old_path : "/usr/bin:/bin");
  char new_path[4096];
  snprintf(new_path, sizeof new_path, "%s:%s", dir, saved);
  assert_int_equal(setenv("PATH", new_path, 1), 0);
  const char *outputs[] = {
    "stripe_count:  1 stripe_size:   1048576 pattern:       raid0 stripe_offset: -1",  /* LUMI default */
    "stripe_count:  8 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1",
    "  lcm_layout_gen:    0\n  lcm_mirror_count:  1\n  lcm_entry_count:   3\n    lcme_id: N/A\n"
    "      stripe_count:  1       stripe_size:   1048576",                               /* Orion PFL */
  };
  const int want[] = {1, 8, 0};
  for (int i = 0; i < 3; i++) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nprintf '%%s\\n' \"$3\" > '%s'\nprintf '%s\\n'\n", args, outputs[i]);
    fclose(f);
    chmod(path, 0755);
    assert_int_equal(site_lustre_stripe_count("/scratch/it's here"), want[i]);
  }
  /* the folder reaches lfs as one argument, quote and space kept */
  FILE *a = fopen(args, "r");
  assert_non_null(a);
  char got[256] = "";
  assert_non_null(fgets(got, sizeof got, a));
  fclose(a);
  assert_string_equal(got, "/scratch/it's here\n");
  /* lfs failing (not Lustre): unknown */
  snprintf(script, sizeof script, "#!/bin/sh\necho 'lfs: not a Lustre file system' >&2\nexit 2\n");
  FILE *f = fopen(path, "w");
  fputs(script, f);
  fclose(f);
  assert_int_equal(site_lustre_stripe_count("/tmp"), -1);
  setenv("PATH", saved, 1);
  free(saved);
  unlink(path);
  unlink(args);
  rmdir(dir);
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
      cmocka_unit_test(test_check_launcher_passes_for_this_job),
      cmocka_unit_test_setup_teardown(test_launcher_counts_against_the_world, clear_launcher,
                                      restore_launcher),
      cmocka_unit_test(test_lustre_advice_for_a_large_file_on_one_ost),
      cmocka_unit_test(test_lustre_stripe_count_from_lfs),
  };
  int failed = cmocka_run_group_tests_name("site", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
