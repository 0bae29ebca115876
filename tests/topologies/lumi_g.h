/* lumi_g.h - the LUMI-G node that test_binding.c (hwloc XML) and test_binding_os.c (Linux files)
 * both describe: the GCDs' PCI buses, NUMA nodes and map_cpu cores, the fixtures' paths, and a
 * GCD as the HIP backend reports it. Sources of the facts: gen_lumi_g.py beside this file (the
 * LUMI user guide's "GPU Binding" and lumi-CPEtools gpu_check). Test-only, header-only. */
#ifndef FDMINI_TEST_LUMI_G_H
#define FDMINI_TEST_LUMI_G_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* GCD i of a LUMI-G node: PCI bus, NUMA node, the CPUs local to that NUMA node (PUs c and c+64
 * of its 16 cores) and the core LUMI's map_cpu gives the rank driving it. */
static const struct {
  unsigned bus;
  const char *numa;
  const char *numa_cpus;
  int map_cpu;
} gcd[8] = {
  {0xc1, "3", "48-63,112-127", 49}, {0xc6, "3", "48-63,112-127", 57},
  {0xc9, "1", "16-31,80-95", 17},   {0xce, "1", "16-31,80-95", 25},
  {0xd1, "0", "0-15,64-79", 1},     {0xd6, "0", "0-15,64-79", 9},
  {0xd9, "2", "32-47,96-111", 33},  {0xde, "2", "32-47,96-111", 41},
};

/* out[len] = the fixture `name` (lumi-g.xml, sysfs-lumi-g) in FDMINI_TEST_TOPOLOGY_DIR, or else
 * in this header's directory. */
static inline void lumi_g_path(char *out, size_t len, const char *name)
{
  const char *dir = getenv("FDMINI_TEST_TOPOLOGY_DIR");
  if (dir && dir[0]) {
    snprintf(out, len, "%s/%s", dir, name);
    return;
  }
  const char *here = __FILE__;
  const char *slash = strrchr(here, '/');
  snprintf(out, len, "%.*s/%s", slash ? (int)(slash - here) : 1, slash ? here : ".", name);
}

/* A GPU as the HIP backend reports it: with ROCR_VISIBLE_DEVICES=$SLURM_LOCALID each rank sees
 * one device (index 0 of 1); with all visible, index = local rank of 8. */
static inline be_info gpu_dev(unsigned bus, int index, int count)
{
  be_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "hip");
  snprintf(d.name, sizeof d.name, "AMD Instinct MI250X");
  snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "0000:%02x:00.0", bus);
  d.device_index = index;
  d.device_count = count;
  d.is_accelerator = 1;
  return d;
}

#endif
