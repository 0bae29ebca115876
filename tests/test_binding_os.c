/* test_binding_os.c - the binding report without hwloc (src/run/bind_os.c): a LUMI-G node as the
 * Linux files it reads (tests/topologies/sysfs-lumi-g/, written by gen_lumi_g.py from the same
 * facts as lumi-g.xml) gives the same records and warnings as hwloc does in test_binding.c: the
 * GCD/NUMA pairing, no warning for the documented CPU maps, far CPUs, unbound ranks, unknown
 * GPUs flagged. Plus CPU list parsing, machines without NUMA information, malformed files, the
 * table and JSON naming their source, and this machine through sched_getaffinity. Built and run
 * in every configuration, with or without hwloc. */
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

#include "bind.h"
#include "bind_os.h"
#include "fd_error.h"
#include "topologies/lumi_g.h"
#include "test_util.h"

static char lumi_root[4096];

static void find_tree(void) { lumi_g_path(lumi_root, sizeof lumi_root, "sysfs-lumi-g"); }

/* Record of a rank bound to `cpus` driving dev, from the sysfs tree below root. */
static void collect(const char *root, const char *cpus, const be_info *dev, const char *host,
                    int rank, fd_binding *b)
{
  bind_os_cpuset set;
  assert_int_equal(bind_os_cpuset_parse(&set, cpus), 0);
  int rc = bind_os_collect(root, &set, dev, host, rank, b);
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  assert_string_equal(b->source, "os");
}

static int analyse(const fd_binding *b, int n, char *buf, size_t len)
{
  int nwarn = -1;
  assert_int_equal(bind_analyse(b, n, buf, len, &nwarn), FD_OK);
  return nwarn;
}

/* ---- CPU lists ---- */

static void test_cpu_lists_parse_and_format_round_trip(void **state)
{
  (void)state;
  static const char *const lists[] = {"0", "0-6,48", "48-63,112-127", "1,3,5-7", "4095", ""};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    bind_os_cpuset s;
    char buf[160];
    assert_int_equal(bind_os_cpuset_parse(&s, lists[i]), 0);
    bind_os_cpuset_format(buf, sizeof buf, &s);
    assert_string_equal(buf, lists[i]);
  }
  bind_os_cpuset s;
  char buf[160];
  /* sysfs ends its files with a newline; overlapping and unsorted items are merged */
  assert_int_equal(bind_os_cpuset_parse(&s, "5-7,0-2,6\n"), 0);
  bind_os_cpuset_format(buf, sizeof buf, &s);
  assert_string_equal(buf, "0-2,5-7");
}

static void test_malformed_cpu_lists_are_rejected(void **state)
{
  (void)state;
  static const char *const bad[] = {"a", "1-", "-3", "3-1", "1,,2", "1 2", "4096", "0-99999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bind_os_cpuset s;
    if (bind_os_cpuset_parse(&s, bad[i]) == 0) fail_msg("'%s' was accepted", bad[i]);
  }
}

static void test_a_list_too_long_for_its_field_ends_in_dots(void **state)
{
  (void)state;
  bind_os_cpuset s;
  char buf[16];
  assert_int_equal(bind_os_cpuset_parse(&s, "0,2,4,6,8,10,12,14,16,18"), 0);
  bind_os_cpuset_format(buf, sizeof buf, &s);
  assert_int_equal(strlen(buf), sizeof buf - 1);
  assert_string_equal(buf + strlen(buf) - 3, "...");
  assert_int_equal(strncmp(buf, "0,2,4,6,8,10", 12), 0);
}

/* ---- LUMI-G from sysfs: the same answers as hwloc gives from lumi-g.xml ---- */

static void test_lumi_g_gcd_numa_matches_documented_pairing(void **state)
{
  (void)state;
  for (int i = 0; i < 8; i++) {
    be_info d = gpu_dev(gcd[i].bus, 0, 1);
    fd_binding b;
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[i].map_cpu);
    collect(lumi_root, cpu, &d, "nid005163", i, &b);
    assert_int_equal(b.gpu_found, 1);
    assert_string_equal(b.gpu_pci, d.pci_bus_id);
    assert_string_equal(b.gpu_numa, gcd[i].numa);
    assert_string_equal(b.gpu_cpus, gcd[i].numa_cpus);
    assert_string_equal(b.cpu_numa, gcd[i].numa);
    assert_int_equal(b.cpus_local, 1);
  }
}

static void test_lumi_g_map_cpu_one_gcd_per_rank_gives_no_warnings(void **state)
{
  (void)state;
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r].bus, 0, 1);
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(lumi_root, cpu, &d, "nid005163", r, &b[r]);
    b[r].local_rank = r;
  }
  int nwarn = analyse(b, 8, text, sizeof text);
  if (nwarn) fprintf(stderr, "%s", text);
  assert_int_equal(nwarn, 0);
}

/* Every rank sees the node's 8 GCDs (launch scripts' default): fdmini picks by node-local rank.
 * LUMI-G: map_cpu puts rank i next to GCD i, so the plain pick (i mod 8) is the pairing. */
static void test_lumi_g_all_gcds_visible_pick_by_local_rank_gives_no_warnings(void **state)
{
  (void)state;
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    int dev = -1;
    assert_int_equal(bind_pick_device(r, 8, NULL, 0, &dev, NULL, 0), 1);
    assert_int_equal(dev, r);
    be_info d = gpu_dev(gcd[dev].bus, dev, 8);
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(lumi_root, cpu, &d, "nid005163", r, &b[r]);
    b[r].local_rank = r;
    assert_int_equal(b[r].gpu_count, 8);
  }
  int nwarn = analyse(b, 8, text, sizeof text);
  if (nwarn) fprintf(stderr, "%s", text);
  assert_int_equal(nwarn, 0);
}

/* Frontier's -c 7: rank i on CCD i (cores 8i+1..8i+7, the first of each CCD kept for the OS).
 * With every GCD visible, --gpu-map 4,5,2,3,6,7,0,1 gives each rank the GCD closest to its CCD
 * (what --gpu-bind=closest chose, OLCF's Frontier user guide); the plain pick would not. */
static void test_frontier_all_gcds_visible_gpu_map_pairs_each_ccd_with_its_gcd(void **state)
{
  (void)state;
  static const int map[8] = {4, 5, 2, 3, 6, 7, 0, 1};
  fd_binding b[8], plain[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d-%d", 8 * r + 1, 8 * r + 7);
    int dev = -1;
    assert_int_equal(bind_pick_device(r, 8, map, 8, &dev, NULL, 0), 1);
    assert_int_equal(dev, map[r]);
    be_info d = gpu_dev(gcd[dev].bus, dev, 8);
    collect(lumi_root, cpus, &d, "frontier00256", r, &b[r]);
    b[r].local_rank = r;
    be_info p = gpu_dev(gcd[r].bus, r, 8);
    collect(lumi_root, cpus, &p, "frontier00256", r, &plain[r]);
    plain[r].local_rank = r;
  }
  int nwarn = analyse(b, 8, text, sizeof text);
  if (nwarn) fprintf(stderr, "%s", text);
  assert_int_equal(nwarn, 0);
  assert_true(analyse(plain, 8, text, sizeof text) > 0);
}

/* The pick's rules: one visible device is the launcher's choice; the map repeats past its end;
 * an entry the rank cannot see is refused with the numbers. */
static void test_pick_device_rules(void **state)
{
  (void)state;
  static const int map[8] = {4, 5, 2, 3, 6, 7, 0, 1};
  int dev = -1;
  char why[160];
  assert_int_equal(bind_pick_device(5, 1, map, 8, &dev, why, sizeof why), 1);
  assert_int_equal(dev, 0);
  assert_int_equal(bind_pick_device(11, 4, NULL, 0, &dev, why, sizeof why), 1);
  assert_int_equal(dev, 3);
  assert_int_equal(bind_pick_device(9, 8, map, 8, &dev, why, sizeof why), 1);
  assert_int_equal(dev, 5);
  assert_int_equal(bind_pick_device(0, 4, map, 8, &dev, why, sizeof why), 0);
  assert_non_null(strstr(why, "--gpu-map: node-local rank 0 would take device 4, but it sees 4 devices"));
}

static void test_in_order_ccd_binding_flags_the_six_ranks_far_from_their_gcd(void **state)
{
  (void)state;
  fd_binding b[8];
  char text[BIND_WARNINGS_BYTES(8)];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r].bus, 0, 1);
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d-%d", 8 * r, 8 * r + 7);
    collect(lumi_root, cpus, &d, "nid005163", r, &b[r]);
  }
  int expect_far[8] = {1, 1, 0, 0, 1, 1, 1, 1};
  for (int r = 0; r < 8; r++) assert_int_equal(b[r].cpus_local, !expect_far[r]);
  assert_int_equal(analyse(b, 8, text, sizeof text), 6);
  assert_int_equal(count_lines(text), 6);
  assert_non_null(strstr(text, "rank 0 (nid005163): CPUs 0-7 (NUMA 0) are not local to its GPU 0 "
                               "(0000:c1:00.0, NUMA 3, local CPUs 48-63,112-127)"));
}

static void test_unbound_rank_is_flagged_as_not_local(void **state)
{
  (void)state;
  be_info d = gpu_dev(gcd[0].bus, 0, 1);
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(lumi_root, "0-127", &d, "nid005163", 0, &b);
  assert_string_equal(b.cpus, "0-127");
  assert_string_equal(b.cpu_numa, "0-3");
  assert_int_equal(b.cpus_local, 0);
  assert_int_equal(analyse(&b, 1, text, sizeof text), 1);
}

static void test_cuda_style_bus_id_is_normalised_and_found(void **state)
{
  (void)state;
  be_info d = gpu_dev(0, 0, 1);
  snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "00000000:C9:00.0");
  fd_binding b;
  collect(lumi_root, "17", &d, "h", 0, &b);
  assert_string_equal(b.gpu_pci, "0000:c9:00.0");
  assert_int_equal(b.gpu_found, 1);
  assert_string_equal(b.gpu_numa, "1");
}

static void test_gpu_missing_from_sysfs_is_reported_as_unknown_locality(void **state)
{
  (void)state;
  be_info d = gpu_dev(0x05, 0, 1);
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(lumi_root, "49", &d, "h", 0, &b);
  assert_int_equal(b.gpu_found, 0);
  assert_int_equal(b.cpus_local, -1);
  assert_string_equal(b.gpu_numa, "");
  assert_string_equal(b.gpu_cpus, "");
  assert_string_equal(b.cpu_numa, "3");
  assert_int_equal(analyse(&b, 1, text, sizeof text), 1);
  assert_non_null(strstr(text, "GPU 0 (0000:05:00.0) not found in sysfs (/sys/bus/pci/devices): "
                               "its NUMA locality is unknown"));
}

static void test_host_backend_has_no_gpu_and_no_warnings(void **state)
{
  (void)state;
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "host");
  d.device_count = 1;
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(lumi_root, "0-6,64", &d, NULL, 0, &b);
  assert_string_equal(b.host, "localhost");
  assert_string_equal(b.cpu_numa, "0");
  assert_int_equal(b.gpu, -1);
  assert_int_equal(b.cpus_local, -1);
  assert_int_equal(analyse(&b, 1, text, sizeof text), 0);
}

/* Ranks share a device when their node and bus id match, whatever its index: under
 * select_gpu.sh every rank's index is 0 and no two share; under MPS every rank names the one
 * GPU; the same bus id on two nodes is two devices. The ranks on one device take turns in
 * rank order. */
static void expect_peers(const bind_device_key *k, int n, int me, int sharers, int turn)
{
  bind_peers p = {0, -1, 0};
  bind_peers_of(k, n, me, &p);
  assert_int_equal(p.sharers, sharers);
  assert_int_equal(p.turn, turn);
}

static void test_ranks_share_a_device_only_by_its_bus_id(void **state)
{
  (void)state;
  bind_device_key k[8];
  memset(k, 0, sizeof k);
  for (int i = 0; i < 8; i++) snprintf(k[i].pci, sizeof k[i].pci, "0000:%02x:00.0", gcd[i].bus);
  for (int i = 0; i < 8; i++) expect_peers(k, 8, i, 1, 0);
  for (int i = 0; i < 8; i++) snprintf(k[i].pci, sizeof k[i].pci, "0000:c1:00.0");
  for (int i = 0; i < 8; i++) expect_peers(k, 8, i, 8, i);
  /* two nodes (ranks 0-3 and 4-7), each with one GPU of the same bus id */
  for (int i = 0; i < 8; i++) k[i].node = i < 4 ? 0 : 4;
  for (int i = 0; i < 8; i++) expect_peers(k, 8, i, 4, i % 4);
  /* one node, two GPUs: three ranks on one, two on the other */
  const char *two[5] = {"0000:c6:00.0", "0000:c1:00.0", "0000:c6:00.0", "0000:c1:00.0", "0000:c6:00.0"};
  for (int i = 0; i < 5; i++) snprintf(k[i].pci, sizeof k[i].pci, "%s", two[i]), k[i].node = 0;
  expect_peers(k, 5, 0, 3, 0);
  expect_peers(k, 5, 1, 2, 0);
  expect_peers(k, 5, 2, 3, 1);
  expect_peers(k, 5, 3, 2, 1);
  expect_peers(k, 5, 4, 3, 2);
  /* no GPU (host backend): nobody shares */
  for (int i = 0; i < 4; i++) k[i].pci[0] = '\0';
  for (int i = 0; i < 4; i++) expect_peers(k, 4, i, 1, 0);
  /* this backend's binding: the host backend's ranks share no device */
  fd_node node;
  be_info d;
  int shared = 0;
  assert_int_equal(bind_node(MPI_COMM_WORLD, 0, &node), FD_OK);
  assert_int_equal(bind_device(MPI_COMM_WORLD, &node, NULL, 0, &d, &shared), FD_OK);
  if (!d.is_accelerator) assert_int_equal(shared, 1);
  assert_true(shared >= 1);
}

/* ---- other machines: fake trees written by the test ---- */

static void put(const char *root, const char *rel, const char *text)
{
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  /* mkdir -p of the file's folder */
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void remove_tree(const char *root)
{
  char cmd[8300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

/* A virtual machine: one NUMA node, a GPU whose firmware gives no node (numa_node -1) and
 * whose local CPUs are all of them: local, NUMA 0, as hwloc places it (under the machine). */
static void test_gpu_without_firmware_numa_node_takes_the_nodes_of_its_local_cpus(void **state)
{
  (void)state;
  char root[] = "/tmp/fdmini-sysfs-XXXXXX";
  assert_non_null(mkdtemp(root));
  put(root, "sys/devices/system/node/node0/cpulist", "0-3\n");
  put(root, "sys/bus/pci/devices/0000:65:00.0/numa_node", "-1\n");
  put(root, "sys/bus/pci/devices/0000:65:00.0/local_cpulist", "0-3\n");
  be_info d = gpu_dev(0x65, 0, 1);
  fd_binding b;
  collect(root, "2", &d, "vm", 0, &b);
  assert_int_equal(b.gpu_found, 1);
  assert_string_equal(b.gpu_numa, "0");
  assert_string_equal(b.gpu_cpus, "0-3");
  assert_string_equal(b.cpu_numa, "0");
  assert_int_equal(b.cpus_local, 1);
  remove_tree(root);
}

/* No NUMA folder at all (some containers): NUMA fields unknown, locality still from the GPU. */
static void test_no_numa_information_leaves_numa_fields_unknown(void **state)
{
  (void)state;
  char root[] = "/tmp/fdmini-sysfs-XXXXXX";
  assert_non_null(mkdtemp(root));
  put(root, "sys/bus/pci/devices/0000:65:00.0/numa_node", "-1\n");
  put(root, "sys/bus/pci/devices/0000:65:00.0/local_cpulist", "0-7\n");
  be_info d = gpu_dev(0x65, 0, 1);
  fd_binding b;
  char text[BIND_WARNINGS_BYTES(1)];
  collect(root, "8-9", &d, "c", 0, &b);
  assert_string_equal(b.cpu_numa, "");
  assert_string_equal(b.gpu_numa, "");
  assert_int_equal(b.gpu_found, 1);
  assert_int_equal(b.cpus_local, 0); /* 8-9 are outside the GPU's 0-7 */
  assert_int_equal(analyse(&b, 1, text, sizeof text), 1);
  remove_tree(root);
}

static void test_malformed_sysfs_file_is_an_error_naming_it(void **state)
{
  (void)state;
  char root[] = "/tmp/fdmini-sysfs-XXXXXX";
  assert_non_null(mkdtemp(root));
  put(root, "sys/devices/system/node/node0/cpulist", "zero to three\n");
  bind_os_cpuset set;
  assert_int_equal(bind_os_cpuset_parse(&set, "0"), 0);
  fd_binding b;
  assert_int_equal(bind_os_collect(root, &set, NULL, "h", 0, &b), FD_ERR_RUNTIME);
  assert_non_null(strstr(fd_error_message(), "node0/cpulist is not a CPU list"));
  remove_tree(root);
}

/* ---- output names its source ---- */

static void test_table_and_json_say_the_locality_came_from_the_os(void **state)
{
  (void)state;
  fd_binding b[8];
  for (int r = 0; r < 8; r++) {
    be_info d = gpu_dev(gcd[r == 1 ? 0 : r].bus, 0, 1); /* rank 1 shares GCD 0 */
    char cpu[8];
    snprintf(cpu, sizeof cpu, "%d", gcd[r].map_cpu);
    collect(lumi_root, cpu, &d, "nid005163", r, &b[r]);
    b[r].local_rank = r;
  }
  FILE *f = tmpfile();
  assert_non_null(f);
  bind_print_table(f, b, 8);
  char *table = read_all(f);
  fclose(f);
  assert_non_null(strstr(table, "binding: 8 ranks on 1 host (locality from the OS: "
                                "sched_getaffinity and sysfs, no hwloc)\n"));
  assert_int_equal(count_lines(table), 10);
  free(table);

  f = tmpfile();
  assert_non_null(f);
  fd_json j;
  json_open(&j, f);
  bind_json(&j, b, 8);
  json_close(&j);
  char *json = read_all(f);
  fclose(f);
  assert_non_null(strstr(json, "\"binding_source\": \"os\""));
  assert_non_null(strstr(json, "\"gpu_numa\": \"3\""));
  assert_non_null(strstr(json, "\"host nid005163: 2 ranks (0,1) share GPU 0000:c1:00.0\""));
  free(json);
}

/* ---- this machine ---- */

static void test_this_process_mask_and_sysfs(void **state)
{
  (void)state;
  bind_os_cpuset mask;
  assert_int_equal(bind_os_affinity(&mask), FD_OK);
  char want[160];
  bind_os_cpuset_format(want, sizeof want, &mask);
  assert_true(want[0] != '\0');
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "host");
  d.device_count = 1;
  fd_binding b;
  collect("/", want, &d, "here", 0, &b);
  assert_string_equal(b.cpus, want);
  if (access("/sys/devices/system/node/node0/cpulist", R_OK) == 0)
    assert_true(b.cpu_numa[0] != '\0');
}

/* The report names the source the build uses: hwloc where it was found, else the OS. */
static void test_report_on_one_rank_names_its_source(void **state)
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
  int rc = bind_report(MPI_COMM_WORLD, &node, &d, 1, f, &all, &n);
  if (rc != FD_OK) fprintf(stderr, "%s\n", fd_error_message());
  assert_int_equal(rc, FD_OK);
  assert_int_equal(n, 1);
  assert_string_equal(all[0].source, FDMINI_HAVE_HWLOC ? "hwloc" : "os");
  char *out = read_all(f);
  fclose(f);
  assert_non_null(strstr(out, FDMINI_HAVE_HWLOC ? "binding: 1 rank on 1 host (locality from hwloc)\n"
                                                : "binding: 1 rank on 1 host (locality from the OS"));
  assert_non_null(strstr(out, "binding: no warnings\n"));
  free(out);
  bind_free(all);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  find_tree();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cpu_lists_parse_and_format_round_trip),
    cmocka_unit_test(test_malformed_cpu_lists_are_rejected),
    cmocka_unit_test(test_a_list_too_long_for_its_field_ends_in_dots),
    cmocka_unit_test(test_lumi_g_gcd_numa_matches_documented_pairing),
    cmocka_unit_test(test_lumi_g_map_cpu_one_gcd_per_rank_gives_no_warnings),
    cmocka_unit_test(test_lumi_g_all_gcds_visible_pick_by_local_rank_gives_no_warnings),
    cmocka_unit_test(test_frontier_all_gcds_visible_gpu_map_pairs_each_ccd_with_its_gcd),
    cmocka_unit_test(test_pick_device_rules),
    cmocka_unit_test(test_in_order_ccd_binding_flags_the_six_ranks_far_from_their_gcd),
    cmocka_unit_test(test_unbound_rank_is_flagged_as_not_local),
    cmocka_unit_test(test_cuda_style_bus_id_is_normalised_and_found),
    cmocka_unit_test(test_gpu_missing_from_sysfs_is_reported_as_unknown_locality),
    cmocka_unit_test(test_host_backend_has_no_gpu_and_no_warnings),
    cmocka_unit_test(test_ranks_share_a_device_only_by_its_bus_id),
    cmocka_unit_test(test_gpu_without_firmware_numa_node_takes_the_nodes_of_its_local_cpus),
    cmocka_unit_test(test_no_numa_information_leaves_numa_fields_unknown),
    cmocka_unit_test(test_malformed_sysfs_file_is_an_error_naming_it),
    cmocka_unit_test(test_table_and_json_say_the_locality_came_from_the_os),
    cmocka_unit_test(test_this_process_mask_and_sysfs),
    cmocka_unit_test(test_report_on_one_rank_names_its_source),
  };
  int failed = cmocka_run_group_tests_name("binding_from_the_os", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
