/* test_binding.c - the binding report (src/run/bind.c) on a LUMI-G node described in hwloc XML
 * (tests/topologies/lumi-g.xml, written by gen_lumi_g.py): GCD <-> NUMA pairing, the documented
 * CPU maps give no warning, wrong maps / shared GCDs / idle GCDs are flagged; plus the real
 * machine's binding, the gather, the table and the JSON.
 *
 * LUMI-G facts used here (sources in tests/topologies/gen_lumi_g.py): the LUMI user guide,
 * "Distribution and binding options" -> "GPU Binding"
 * (https://docs.lumi-supercomputer.eu/runjobs/scheduled-jobs/distribution-binding/): GCDs 0,1 on
 * NUMA 3, 2,3 on NUMA 1, 4,5 on NUMA 0, 6,7 on NUMA 2, and one rank per GCD is bound with
 * `--cpu-bind=map_cpu:49,57,17,25,1,9,33,41`; lumi-CPEtools gpu_check for the bus ids
 * c1 c6 c9 ce d1 d6 d9 de of GCDs 0..7. Built only with hwloc; the OS path (bind_os.c) is
 * test_binding_os.c's, and the two must agree (test_hwloc_and_os_give_the_same_records). */
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

#include "bind.h"
#include "bind_os.h"
#include "fd_error.h"
#include "topologies/lumi_g.h"
#include "test_util.h"

static char topo_path[4096];
static char sysfs_root[4096]; /* the same node as Linux files (sysfs-lumi-g, bind_os.c) */

static void find_topology(void)
{
  lumi_g_path(topo_path, sizeof topo_path, "lumi-g.xml");
  lumi_g_path(sysfs_root, sizeof sysfs_root, "sysfs-lumi-g");
}

static int load_lumi_g(void **state)
{
  hwloc_topology_t topo;
  *state = NULL;
  if (bind_topology_load(&topo, topo_path) != FD_OK) {
    fprintf(stderr, "test_binding: %s (set FDMINI_TEST_TOPOLOGY_DIR)\n", fd_error_message());
    return -1;
  }
  *state = topo;
  return 0;
}

static int destroy_topology(void **state)
{
  if (*state) hwloc_topology_destroy((hwloc_topology_t)*state);
  return 0;
}

/* Record of a rank bound to the CPU list `cpus` (hwloc list syntax) driving dev. */
static void collect(hwloc_topology_t topo, const char *cpus, const be_info *dev, const char *host,
                    int rank, fd_binding *b)
{
  hwloc_cpuset_t set = hwloc_bitmap_alloc();
  assert_non_null(set);
  assert_int_equal(hwloc_bitmap_list_sscanf(set, cpus), 0);
  int rc = bind_collect_with_topology(topo, set, dev, host, rank, b);
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  hwloc_bitmap_free(set);
}

/* Analyses n records; returns the warning count, text in buf. */
static int analyse(const fd_binding *b, int n, char *buf, size_t len)
{
  int nwarn = -1;
  assert_int_equal(bind_analyse(b, n, buf, len, &nwarn), FD_OK);
  return nwarn;
}

/* ---- the documented pairing ---- */

static void test_lumi_g_gcd_numa_matches_documented_pairing(void **state)
{
  hwloc_topology_t topo = *state;
  for (int i = 0; i < 8; i++) {
    be_info d = gpu_dev(gcd[i].bus, 0, 1);
    fd_binding b;
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[i].map_cpu);
    collect(topo, cpu, &d, "nid005163", i, &b);
    assert_int_equal(b.gpu_found, 1);
    assert_string_equal(b.gpu_pci, d.pci_bus_id);
    assert_string_equal(b.gpu_numa, gcd[i].numa);
    assert_string_equal(b.gpu_cpus, gcd[i].numa_cpus);
    /* LUMI's map_cpu core for GCD i sits on the GCD's own NUMA node */
    assert_string_equal(b.cpu_numa, gcd[i].numa);
    assert_int_equal(b.cpus_local, 1);
  }
}

/* ---- correct maps: no warnings ---- */

static void test_lumi_g_map_cpu_one_gcd_per_rank_gives_no_warnings(void **state)
{
  hwloc_topology_t topo = *state;
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r].bus, 0, 1); /* select_gpu.sh: ROCR_VISIBLE_DEVICES=r */
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(topo, cpu, &d, "nid005163", r, &b[r]);
    b[r].local_rank = r;
  }
  int nwarn = analyse(b, 8, text, sizeof text);
  if (nwarn) fprintf(stderr, "%s", text);
  assert_int_equal(nwarn, 0);
  assert_string_equal(text, "");
}

/* LUMI's hybrid map (mask_cpu fe...: cores 1-7 of each CCD) and Frontier's -c7
 * --gpu-bind=closest (rank r on cores 8r+1..8r+7, GCD 4,5,2,3,6,7,0,1) are local too. */
static void test_seven_core_ccd_maps_with_closest_gcd_give_no_warnings(void **state)
{
  hwloc_topology_t topo = *state;
  static const int closest_gcd_of_ccd[8] = {4, 5, 2, 3, 6, 7, 0, 1};
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    int g = closest_gcd_of_ccd[r];
    be_info d = gpu_dev(gcd[g].bus, 0, 1);
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d-%d", 8 * r + 1, 8 * r + 7);
    collect(topo, cpus, &d, "frontier00001", r, &b[r]);
    assert_string_equal(b[r].cpus, cpus);
  }
  int nwarn = analyse(b, 8, text, sizeof text);
  if (nwarn) fprintf(stderr, "%s", text);
  assert_int_equal(nwarn, 0);
}

/* ---- wrong maps are flagged ---- */

/* Ranks bound in order to CCDs 0..7 (cores 8r..8r+7) but driving GCD r: only GCDs 2 and 3 sit
 * on NUMA 1 with CCDs 2 and 3; ranks 0,1 (NUMA 0 vs 3), 4,5 (2 vs 0), 6,7 (3 vs 2) are far. */
static void test_in_order_ccd_binding_flags_the_six_ranks_far_from_their_gcd(void **state)
{
  hwloc_topology_t topo = *state;
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r].bus, 0, 1);
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d-%d", 8 * r, 8 * r + 7);
    collect(topo, cpus, &d, "nid005163", r, &b[r]);
  }
  int expect_far[8] = {1, 1, 0, 0, 1, 1, 1, 1};
  for (int r = 0; r < 8; r++) assert_int_equal(b[r].cpus_local, !expect_far[r]);
  int nwarn = analyse(b, 8, text, sizeof text);
  assert_int_equal(nwarn, 6);
  assert_int_equal(count_lines(text), 6);
  for (int r = 0; r < 8; r++) {
    char who[32];
    snprintf(who, sizeof who, "rank %d (nid005163)", r);
    assert_int_equal(strstr(text, who) != NULL, expect_far[r]);
  }
  assert_non_null(strstr(text, "rank 0 (nid005163): CPUs 0-7 (NUMA 0) are not local to its GPU 0 "
                               "(0000:c1:00.0, NUMA 3, local CPUs 48-63,112-127)"));
}

/* A rank left unbound (all 128 PUs) is not local to any GCD. */
static void test_unbound_rank_is_flagged_as_not_local(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d = gpu_dev(gcd[0].bus, 0, 1);
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(topo, "0-127", &d, "nid005163", 0, &b);
  assert_string_equal(b.cpus, "0-127");
  assert_string_equal(b.cpu_numa, "0-3");
  assert_int_equal(b.cpus_local, 0);
  assert_int_equal(analyse(&b, 1, text, sizeof text), 1);
}

static void test_two_ranks_on_one_gcd_are_flagged_as_sharing(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d = gpu_dev(gcd[0].bus, 0, 1);
  fd_binding b[2];
  char text[BIND_WARNINGS_BYTES(2)];
  collect(topo, "49", &d, "nid005163", 0, &b[0]);
  collect(topo, "50", &d, "nid005163", 1, &b[1]);
  int nwarn = analyse(b, 2, text, sizeof text);
  assert_int_equal(nwarn, 1);
  assert_string_equal(text, "host nid005163: 2 ranks (0,1) share GPU 0000:c1:00.0\n");
}

static void test_same_gcd_bus_on_two_hosts_is_not_sharing(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d = gpu_dev(gcd[0].bus, 0, 1);
  fd_binding b[2];
  char text[BIND_WARNINGS_BYTES(2)];
  collect(topo, "49", &d, "nid005163", 0, &b[0]);
  collect(topo, "49", &d, "nid005164", 1, &b[1]);
  assert_int_equal(analyse(b, 2, text, sizeof text), 0);
}

/* All 8 GCDs visible to every rank, 4 ranks, rank r on GCD r with local CPUs: 4 GCDs idle. */
static void test_four_ranks_on_eight_visible_gcds_flags_idle_gpus(void **state)
{
  hwloc_topology_t topo = *state;
  fd_binding b[4];
  char text[BIND_WARNINGS_BYTES(4)];
  for (int r = 0; r < 4; r++) {
    be_info d = gpu_dev(gcd[r].bus, r, 8);
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(topo, cpu, &d, "nid005163", r, &b[r]);
  }
  int nwarn = analyse(b, 4, text, sizeof text);
  assert_int_equal(nwarn, 1);
  assert_string_equal(text,
                      "host nid005163: 8 GPUs visible to each rank but only 4 in use: 4 idle\n");
}

/* ---- edge cases ---- */

static void test_host_backend_has_no_gpu_and_no_warnings(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "host");
  d.device_count = 1;
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(topo, "0-6,64", &d, NULL, 0, &b);
  assert_string_equal(b.host, "localhost");
  assert_string_equal(b.cpus, "0-6,64");
  assert_string_equal(b.cpu_numa, "0");
  assert_int_equal(b.gpu, -1);
  assert_string_equal(b.gpu_pci, "");
  assert_string_equal(b.gpu_numa, "");
  assert_int_equal(b.cpus_local, -1);
  assert_int_equal(analyse(&b, 1, text, sizeof text), 0);
}

/* CUDA prints "00000000:C1:00.0": the same device once normalised. */
static void test_cuda_style_bus_id_is_normalised_and_found(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d = gpu_dev(0, 0, 1);
  snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "00000000:C1:00.0");
  fd_binding b;
  collect(topo, "49", &d, "h", 0, &b);
  assert_string_equal(b.gpu_pci, "0000:c1:00.0");
  assert_int_equal(b.gpu_found, 1);
  assert_string_equal(b.gpu_numa, "3");
}

static void test_gpu_missing_from_topology_is_reported_as_unknown_locality(void **state)
{
  hwloc_topology_t topo = *state;
  be_info d = gpu_dev(0x05, 0, 1);
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(topo, "49", &d, "h", 0, &b);
  assert_int_equal(b.gpu_found, 0);
  assert_int_equal(b.cpus_local, -1);
  assert_string_equal(b.gpu_numa, "");
  assert_int_equal(analyse(&b, 1, text, sizeof text), 1);
  assert_non_null(strstr(text, "GPU 0 (0000:05:00.0) not found in the hwloc topology"));
}

static void test_topology_without_io_devices_is_an_error(void **state)
{
  (void)state;
  hwloc_topology_t topo;
  assert_int_equal(hwloc_topology_init(&topo), 0);
  assert_int_equal(hwloc_topology_set_xml(topo, topo_path), 0);
  assert_int_equal(hwloc_topology_load(topo), 0); /* I/O filtered out by default */
  hwloc_cpuset_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_set(set, 49);
  be_info d = gpu_dev(gcd[0].bus, 0, 1);
  fd_binding b;
  assert_int_equal(bind_collect_with_topology(topo, set, &d, "h", 0, &b), FD_ERR_RUNTIME);
  assert_non_null(strstr(fd_error_message(), "without I/O devices"));
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
}

static void test_missing_xml_file_is_an_error_naming_it(void **state)
{
  (void)state;
  hwloc_topology_t topo;
  assert_int_equal(bind_topology_load(&topo, "/nonexistent/topology.xml"), FD_ERR_RUNTIME);
  assert_non_null(strstr(fd_error_message(), "/nonexistent/topology.xml"));
}

/* Lines that do not fit are left out, never cut; the count covers them all. */
static void test_warnings_that_do_not_fit_are_counted_not_cut(void **state)
{
  hwloc_topology_t topo = *state;
  fd_binding b[8];
  char small[300];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r].bus, 0, 1);
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d-%d", 8 * r, 8 * r + 7);
    collect(topo, cpus, &d, "nid005163", r, &b[r]);
  }
  assert_int_equal(analyse(b, 8, small, sizeof small), 6);
  int lines = count_lines(small);
  assert_true(lines >= 1 && lines < 6);
  assert_int_equal(small[strlen(small) - 1], '\n');
}

/* ---- hwloc and the OS agree ---- */

/* Every field but the source is the same from lumi-g.xml (hwloc) and sysfs-lumi-g (bind_os.c):
 * every GCD with local, far, several-CCD and unbound CPU sets. */
static void test_hwloc_and_os_give_the_same_records(void **state)
{
  hwloc_topology_t topo = *state;
  static const char *const sets[] = {"49", "1-7", "0-7", "16-31,80-95", "0-127", "3,60", "64"};
  for (int g = 0; g < 8; g++)
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
      be_info d = gpu_dev(gcd[g].bus, 0, 1);
      fd_binding h, o;
      collect(topo, sets[k], &d, "nid005163", 3, &h);
      bind_os_cpuset set;
      assert_int_equal(bind_os_cpuset_parse(&set, sets[k]), 0);
      assert_int_equal(bind_os_collect(sysfs_root, &set, &d, "nid005163", 3, &o), FD_OK);
      assert_string_equal(h.source, "hwloc");
      assert_string_equal(o.source, "os");
      memcpy(o.source, h.source, sizeof o.source);
      assert_string_equal(h.cpus, o.cpus);
      assert_string_equal(h.cpu_numa, o.cpu_numa);
      assert_string_equal(h.gpu_numa, o.gpu_numa);
      assert_string_equal(h.gpu_cpus, o.gpu_cpus);
      assert_int_equal(h.cpus_local, o.cpus_local);
      assert_int_equal(h.gpu_found, o.gpu_found);
      assert_memory_equal(&h, &o, sizeof h);
    }
}

/* ---- output ---- */

static void test_table_and_json_list_every_rank_and_warning(void **state)
{
  hwloc_topology_t topo = *state;
  fd_binding b[8];
  for (int r = 0; r < 8; r++) {
    int g = r == 1 ? 0 : r; /* rank 1 shares GCD 0 with rank 0, GCD 1 idle */
    be_info d = gpu_dev(gcd[g].bus, 0, 1);
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(topo, cpu, &d, "nid005163", r, &b[r]);
    b[r].local_rank = r;
  }
  FILE *f = tmpfile();
  assert_non_null(f);
  bind_print_table(f, b, 8);
  char *table = read_all(f);
  fclose(f);
  assert_non_null(strstr(table, "binding: 8 ranks on 1 host (locality from hwloc)\n"));
  assert_non_null(strstr(table, "gpu_pci"));
  assert_int_equal(count_lines(table), 10); /* title, header, 8 ranks */
  assert_non_null(strstr(table, "0000:de:00.0"));
  free(table);

  f = tmpfile();
  assert_non_null(f);
  fd_json j;
  json_open(&j, f);
  bind_json(&j, b, 8);
  json_close(&j);
  char *json = read_all(f);
  fclose(f);
  assert_non_null(strstr(json, "\"binding_source\": \"hwloc\""));
  assert_non_null(strstr(json, "\"binding\": ["));
  assert_non_null(strstr(json, "\"host\": \"nid005163\""));
  assert_non_null(strstr(json, "\"cpus\": \"49\""));
  assert_non_null(strstr(json, "\"gpu_pci\": \"0000:c1:00.0\""));
  assert_non_null(strstr(json, "\"gpu_numa\": \"3\""));
  assert_non_null(strstr(json, "\"local_rank\": 7"));
  assert_non_null(strstr(json, "\"binding_warnings\": ["));
  assert_non_null(strstr(json, "\"host nid005163: 2 ranks (0,1) share GPU 0000:c1:00.0\""));
  /* rank 1 on core 57 (NUMA 3) drives GCD 0 (NUMA 3): shared but local, one warning only */
  assert_null(strstr(json, "not local"));
  free(json);
}

/* ---- the real machine, through MPI ---- */

static void test_collect_reads_this_process_binding(void **state)
{
  (void)state;
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "host");
  d.device_count = 1;
  fd_binding b;
  int rc = bind_collect(MPI_COMM_WORLD, &d, &b);
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  assert_true(b.cpus[0] != '\0');
  assert_true(b.cpu_numa[0] != '\0');
  assert_true(b.host[0] != '\0');
  assert_int_equal(b.rank, 0);
  assert_int_equal(b.local_rank, -1);
  /* the OS path reads the same CPUs and NUMA nodes on this machine */
  bind_os_cpuset mask;
  fd_binding o;
  assert_int_equal(bind_os_affinity(&mask), FD_OK);
  assert_int_equal(bind_os_collect("/", &mask, &d, b.host, 0, &o), FD_OK);
  assert_string_equal(o.cpus, b.cpus);
  assert_string_equal(o.cpu_numa, b.cpu_numa);
}

/* FDMINI_HWLOC_XML swaps in another machine's topology while the binding stays this process's. */
static void test_fdmini_hwloc_xml_env_selects_the_topology(void **state)
{
  (void)state;
  be_info d = gpu_dev(gcd[2].bus, 0, 1);
  fd_binding b;
  assert_int_equal(setenv("FDMINI_HWLOC_XML", topo_path, 1), 0);
  int rc = bind_collect(MPI_COMM_WORLD, &d, &b);
  unsetenv("FDMINI_HWLOC_XML");
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  assert_int_equal(b.gpu_found, 1);
  assert_string_equal(b.gpu_numa, "1");
  assert_string_equal(b.gpu_cpus, "16-31,80-95");
}

static void test_report_on_one_rank_gathers_and_prints_the_table(void **state)
{
  (void)state;
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "host");
  d.device_count = 1;
  FILE *f = tmpfile();
  assert_non_null(f);
  fd_binding *all = NULL;
  int n = -1;
  fd_node node;
  assert_int_equal(bind_node(MPI_COMM_WORLD, 0, &node), FD_OK);
  assert_int_equal(node.local_size, 1);
  int rc = bind_report(MPI_COMM_WORLD, &node, &d, 1, f, &all, &n);
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  assert_int_equal(n, 1);
  assert_non_null(all);
  assert_int_equal(all[0].local_rank, 0);
  assert_int_equal(all[0].gpu, -1);
  char *out = read_all(f);
  fclose(f);
  assert_non_null(strstr(out, "binding: 1 rank on 1 host (locality from hwloc)\n"));
  assert_non_null(strstr(out, "binding: no warnings\n"));
  free(out);
  bind_free(all);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  find_topology();
  const struct CMUnitTest lumi_g[] = {
    cmocka_unit_test(test_lumi_g_gcd_numa_matches_documented_pairing),
    cmocka_unit_test(test_lumi_g_map_cpu_one_gcd_per_rank_gives_no_warnings),
    cmocka_unit_test(test_seven_core_ccd_maps_with_closest_gcd_give_no_warnings),
    cmocka_unit_test(test_in_order_ccd_binding_flags_the_six_ranks_far_from_their_gcd),
    cmocka_unit_test(test_unbound_rank_is_flagged_as_not_local),
    cmocka_unit_test(test_two_ranks_on_one_gcd_are_flagged_as_sharing),
    cmocka_unit_test(test_same_gcd_bus_on_two_hosts_is_not_sharing),
    cmocka_unit_test(test_four_ranks_on_eight_visible_gcds_flags_idle_gpus),
    cmocka_unit_test(test_host_backend_has_no_gpu_and_no_warnings),
    cmocka_unit_test(test_cuda_style_bus_id_is_normalised_and_found),
    cmocka_unit_test(test_gpu_missing_from_topology_is_reported_as_unknown_locality),
    cmocka_unit_test(test_topology_without_io_devices_is_an_error),
    cmocka_unit_test(test_missing_xml_file_is_an_error_naming_it),
    cmocka_unit_test(test_warnings_that_do_not_fit_are_counted_not_cut),
    cmocka_unit_test(test_table_and_json_list_every_rank_and_warning),
    cmocka_unit_test(test_hwloc_and_os_give_the_same_records),
  };
  const struct CMUnitTest machine[] = {
    cmocka_unit_test(test_collect_reads_this_process_binding),
    cmocka_unit_test(test_fdmini_hwloc_xml_env_selects_the_topology),
    cmocka_unit_test(test_report_on_one_rank_gathers_and_prints_the_table),
  };
  int failed =
      cmocka_run_group_tests_name("lumi_g_topology", lumi_g, load_lumi_g, destroy_topology);
  failed += cmocka_run_group_tests_name("this_machine", machine, NULL, NULL);
  MPI_Finalize();
  return failed;
}
