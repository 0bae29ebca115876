/* bind_os.h - the binding report's locality from the operating system (Linux) instead of hwloc:
 * for builds without hwloc (FDMINI_HWLOC=OFF, or AUTO where no hwloc headers exist, as on
 * LUMI's compute image). The same fd_binding record bind.c fills from hwloc, from:
 *   - the rank's CPUs: sched_getaffinity (the process's mask; bind_collect passes it in),
 *   - each CPU's NUMA node: /sys/devices/system/node/node<N>/cpulist,
 *   - the GPU's locality: /sys/bus/pci/devices/<dddd:bb:dd.f>/numa_node and local_cpulist
 *     (the CPUs the kernel calls local to that PCI device: its NUMA node's, or every CPU where
 *     the firmware gives none, numa_node -1).
 * Where a file is missing the field stays "" (unknown), exactly as with hwloc; cpus_local is
 * then -1 and bind_analyse warns only about what it knows.
 *
 * Every path is read below `root` ("" or "/" for this machine), so tests feed it fake trees
 * (tests/topologies/sysfs-lumi-g/, written by gen_lumi_g.py) as test_binding feeds hwloc XML.
 */
#ifndef FDMINI_BIND_OS_H
#define FDMINI_BIND_OS_H

#include <stddef.h>
#include <stdint.h>

#include "bind.h"

/* A CPU set as a bit mask of OS CPU numbers 0 .. BIND_OS_MAX_CPUS-1. */
#define BIND_OS_MAX_CPUS 4096
typedef struct {
  uint64_t w[BIND_OS_MAX_CPUS / 64];
} bind_os_cpuset;

/* Parses a Linux CPU list ("0-6,48", "" = empty, a trailing newline is fine) into *s. Returns
 * 0, or -1 on a malformed list or a CPU >= BIND_OS_MAX_CPUS. Not Collective. */
int bind_os_cpuset_parse(bind_os_cpuset *s, const char *list);

/* The list form of s ("0-6,48", "" when empty) into buf[len]; "..." at the end when it did not
 * fit. Not Collective. */
void bind_os_cpuset_format(char *buf, size_t len, const bind_os_cpuset *s);

/* This process's CPU mask (sched_getaffinity). FD_OK, or FD_ERR_RUNTIME with the reason. Not
 * Collective. */
int bind_os_affinity(bind_os_cpuset *s);

/* A PCI bus id as "dddd:bb:dd.f" in lower case, sysfs's and hwloc's form. Accepts CUDA's
 * "00000000:C1:00.0" and the domain-less "c1:00.0"; anything else is copied as it is. */
void bind_os_busid_normalise(char *dst, size_t len, const char *src);

/* Fills *mine (host, rank, cpus, cpu_numa and, for a GPU backend, gpu*, gpu_pci, gpu_numa,
 * gpu_cpus, gpu_found, cpus_local; source "os") from the CPU set `cpus` and the sysfs tree
 * below root. host may be NULL ("localhost"). local_rank is left at -1 (bind_gather fills it).
 * Missing files leave fields unknown (not an error); FD_ERR_RUNTIME only for an unreadable
 * mask or a malformed list (with the file named). Not Collective. */
int bind_os_collect(const char *root, const bind_os_cpuset *cpus, const be_info *dev,
                    const char *host, int rank, fd_binding *mine);

#endif
