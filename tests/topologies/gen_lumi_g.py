#!/usr/bin/env python3
"""gen_lumi_g.py - writes lumi-g.xml, an hwloc 2 XML topology of one LUMI-G node, for the unit
tests of src/run/bind.c (hwloc synthetic descriptions cannot hold PCI devices, so XML it is), and
sysfs-lumi-g/, the same node as the Linux files src/run/bind_os.c reads in builds without hwloc
(sys/devices/system/node/node<N>/cpulist, sys/bus/pci/devices/<bus id>/numa_node and
local_cpulist).

The node, as the LUMI documentation describes it:
  - one 64-core AMD EPYC 7A53 "Trento" package, 2 hardware threads per core; core c has the
    PUs c and c+64 (Linux numbering on LUMI: "HWT 000-007 and 064-071" is CCD 0);
  - 8 CCDs of 8 cores, each with its own 32 MiB L3 (CCD k = cores 8k..8k+7);
  - NPS4: 4 NUMA nodes of 2 CCDs each (NUMA n = CCDs 2n, 2n+1 = cores 16n..16n+15);
  - 8 GCDs (4 MI250X) as PCI devices 1002:740c, each behind its own host bridge attached to the
    NUMA node of its closest CCD:
        GCD  bus id        closest CCD  cores   NUMA
         0   0000:c1:00.0  6            48-55   3
         1   0000:c6:00.0  7            56-63   3
         2   0000:c9:00.0  2            16-23   1
         3   0000:ce:00.0  3            24-31   1
         4   0000:d1:00.0  0             0-7    0
         5   0000:d6:00.0  1             8-15   0
         6   0000:d9:00.0  4            32-39   2
         7   0000:de:00.0  5            40-47   2
Sources:
  - LUMI user guide, "Distribution and binding options", section "GPU Binding"
    (https://docs.lumi-supercomputer.eu/runjobs/scheduled-jobs/distribution-binding/,
    repository Lumi-supercomputer/lumi-userguide,
    docs/runjobs/scheduled-jobs/distribution-binding.md):
    `rocm-smi --showtoponuma` gives GPU 0,1 -> NUMA 3, 2,3 -> 1, 4,5 -> 0, 6,7 -> 2, and the
    recommended MPI binding is `srun --cpu-bind=map_cpu:49,57,17,25,1,9,33,41`.
  - lumi-CPEtools gpu_check (klust/lumi-CPEtools, src/gpu_check.cpp, "Hardware mapping" of
    Bard Peak nodes): "GPU die 0 with Bus_ID c1 to CPU die 6 providing HWT 048-055 and
    112-119", ... for the bus ids c1 c6 c9 ce d1 d6 d9 de.

Usage: tests/topologies/gen_lumi_g.py [OUTPUT.xml [SYSFS_DIR]]
       (default: lumi-g.xml and sysfs-lumi-g/ beside this script)
Check: lstopo --input tests/topologies/lumi-g.xml -
"""
import os
import sys

CORES = 64
SMT = 2
CCDS = 8
NUMAS = 4
NPU = CORES * SMT
# GCD -> (PCI bus, closest CCD), from the table above.
GCDS = [(0xC1, 6), (0xC6, 7), (0xC9, 2), (0xCE, 3), (0xD1, 0), (0xD6, 1), (0xD9, 4), (0xDE, 5)]

gp = 0


def next_gp():
    global gp
    gp += 1
    return gp


def mask(bits, nbits=NPU):
    """hwloc XML bitmap: 32-bit words, most significant first, '0x' prefix on each."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = [(value >> (32 * i)) & 0xFFFFFFFF for i in range((nbits + 31) // 32)]
    return ",".join("0x%08x" % w for w in reversed(words))


def pus_of_cores(cores):
    return sorted([c for c in cores] + [c + CORES for c in cores])


def sets(cpus, nodes):
    c, n = mask(cpus), mask(nodes, 32)
    return 'cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"' % (c, c, n, n)


def emit(out, depth, text):
    out.append("  " * depth + text)


def core(out, depth, c, numa):
    emit(out, depth, '<object type="L2Cache" %s gp_index="%d" cache_size="524288" depth="2" '
         'cache_linesize="64" cache_associativity="8" cache_type="0">'
         % (sets(pus_of_cores([c]), [numa]), next_gp()))
    emit(out, depth + 1, '<object type="L1Cache" %s gp_index="%d" cache_size="32768" depth="1" '
         'cache_linesize="64" cache_associativity="8" cache_type="1">'
         % (sets(pus_of_cores([c]), [numa]), next_gp()))
    emit(out, depth + 2, '<object type="Core" os_index="%d" %s gp_index="%d">'
         % (c, sets(pus_of_cores([c]), [numa]), next_gp()))
    for pu in (c, c + CORES):
        emit(out, depth + 3, '<object type="PU" os_index="%d" %s gp_index="%d"/>'
             % (pu, sets([pu], [numa]), next_gp()))
    emit(out, depth + 2, "</object>")
    emit(out, depth + 1, "</object>")
    emit(out, depth, "</object>")


def gcd(out, depth, index, bus):
    emit(out, depth, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
         'bridge_pci="0000:[%02x-%02x]">' % (next_gp(), bus, bus))
    emit(out, depth + 1, '<object type="PCIDev" gp_index="%d" pci_busid="0000:%02x:00.0" '
         'pci_type="0380 [1002:740c] [1002:0b0c] 01" pci_link_speed="0.000000">'
         % (next_gp(), bus))
    emit(out, depth + 2, '<info name="PCIVendor" value="Advanced Micro Devices, Inc. [AMD/ATI]"/>')
    emit(out, depth + 2, '<info name="PCIDevice" value="Aldebaran/MI200 [Instinct MI250X/MI250]"/>')
    emit(out, depth + 2, '<object type="OSDev" gp_index="%d" name="rsmi%d" subtype="RSMI" '
         'osdev_type="1">' % (next_gp(), index))
    emit(out, depth + 3, '<info name="GPUModel" value="AMD Instinct MI250X"/>')
    emit(out, depth + 2, "</object>")
    emit(out, depth + 1, "</object>")
    emit(out, depth, "</object>")


def cpulist(pus):
    """Linux CPU list of a sorted list of CPUs: "48-63,112-127"."""
    out, i = [], 0
    while i < len(pus):
        j = i
        while j + 1 < len(pus) and pus[j + 1] == pus[j] + 1:
            j += 1
        out.append(str(pus[i]) if i == j else "%d-%d" % (pus[i], pus[j]))
        i = j + 1
    return ",".join(out)


def write_sysfs(root):
    """The node as sysfs shows it: NUMA n = CCDs 2n, 2n+1; each GCD on its CCD's NUMA node."""
    def put(rel, text):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    numa_pus = {}
    for n in range(NUMAS):
        cores = [c for k in (2 * n, 2 * n + 1) for c in range(8 * k, 8 * k + 8)]
        numa_pus[n] = pus_of_cores(cores)
        put("sys/devices/system/node/node%d/cpulist" % n, cpulist(numa_pus[n]))
    for bus, ccd in GCDS:
        dev = "sys/bus/pci/devices/0000:%02x:00.0" % bus
        put(dev + "/numa_node", str(ccd // 2))
        put(dev + "/local_cpulist", cpulist(numa_pus[ccd // 2]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "lumi-g.xml")
    write_sysfs(sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "sysfs-lumi-g"))
    allnodes = list(range(NUMAS))
    allpus = list(range(NPU))
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
           '<!-- LUMI-G node (1 x EPYC 7A53, NPS4, 8 MI250X GCDs), written by gen_lumi_g.py:'
           ' edit that, not this -->',
           '<topology version="2.0">']
    a = mask(allpus)
    emit(out, 1, '<object type="Machine" os_index="0" %s allowed_cpuset="%s" allowed_nodeset="%s" '
         'gp_index="%d">' % (sets(allpus, allnodes), a, mask(allnodes, 32), next_gp()))
    emit(out, 2, '<info name="DMIProductName" value="LUMI-G-like test node (hand-written)"/>')
    emit(out, 2, '<object type="Package" os_index="0" %s gp_index="%d">'
         % (sets(allpus, allnodes), next_gp()))
    emit(out, 3, '<info name="CPUModel" value="AMD EPYC 7A53 64-Core Processor"/>')
    for n in range(NUMAS):
        ccds = [2 * n, 2 * n + 1]
        cores = [c for k in ccds for c in range(8 * k, 8 * k + 8)]
        emit(out, 3, '<object type="Group" %s gp_index="%d" kind="1001" subkind="0">'
             % (sets(pus_of_cores(cores), [n]), next_gp()))
        emit(out, 4, '<object type="NUMANode" os_index="%d" %s gp_index="%d" local_memory="%d">'
             % (n, sets(pus_of_cores(cores), [n]), next_gp(), 128 << 30))
        emit(out, 5, '<page_type size="4096" count="%d"/>' % ((128 << 30) // 4096))
        emit(out, 4, "</object>")
        for k in ccds:
            kcores = list(range(8 * k, 8 * k + 8))
            emit(out, 4, '<object type="L3Cache" %s gp_index="%d" cache_size="33554432" depth="3" '
                 'cache_linesize="64" cache_associativity="16" cache_type="0">'
                 % (sets(pus_of_cores(kcores), [n]), next_gp()))
            for c in kcores:
                core(out, 5, c, n)
            emit(out, 4, "</object>")
        for index, (bus, ccd) in enumerate(GCDS):
            if ccd // 2 == n:
                gcd(out, 4, index, bus)
        emit(out, 3, "</object>")
    emit(out, 2, "</object>")
    emit(out, 1, "</object>")
    for s in ("discovery.pu", "discovery.numa", "discovery.numa_memory"):
        emit(out, 1, '<support name="%s"/>' % s)
    out.append("</topology>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
