/* bind.h - where each rank runs. bind_node finds this process's node (the one node
 * communicator of fdmini, split once), bind_device binds it to a device. The binding report
 * says where each rank runs (host, CPUs, NUMA nodes), which GPU it drives (index, PCI bus id)
 * and where that GPU sits (its NUMA node and local CPUs, found with hwloc from the PCI bus id,
 * or from Linux's sysfs in builds without hwloc: bind_os.h), plus the warnings that matter on
 * LUMI-G and Frontier: CPUs far from the rank's GPU, ranks sharing a GPU, visible GPUs left
 * idle. Every record says which source it used.
 *
 * Integration (main.c):
 *
 *     fd_node node;
 *     rc = bind_node(world, o.test_node_ranks, &node);   // Collective
 *     rc = bind_device(world, &node, &dev, &shared);     // Collective
 *     fd_binding *binding = NULL;   // rank 0: one record per rank; NULL elsewhere
 *     int nbinding = 0;
 *     rc = bind_report(world, &node, &dev, o.bind_report, stdout, &binding, &nbinding);  // Collective
 *     // rc != FD_OK: fd_error_message() says which hwloc call failed on which rank; every rank
 *     // returns the same code (agreed, fd_error_agreed()): rank 0 reports it, all ranks exit.
 *     ...
 *     // in report_json, rank 0, inside the top-level object:
 *     bind_json(&j, binding, nbinding);  // "binding": [...], "binding_warnings": [...]
 *     ...
 *     bind_free(binding);
 *
 * Warnings are printed by rank 0 whatever `print` says; the table only when `print` is set.
 *
 * Topology (hwloc builds): the real machine's, with I/O devices (PCI). For tests and what-if
 * checks it may come from an hwloc XML file: FDMINI_HWLOC_XML=file (binding queries still read
 * this process's real binding), or hwloc's own HWLOC_XMLFILE (then also set HWLOC_THISSYSTEM=1).
 * Unit tests call bind_collect_with_topology() with a loaded topology and an explicit CPU set.
 * Builds without hwloc (FDMINI_HAVE_HWLOC 0) read the CPU mask and sysfs instead (bind_os.h;
 * tests call bind_os_collect() on fake sysfs trees).
 */
#ifndef FDMINI_BIND_H
#define FDMINI_BIND_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#include "backend.h" /* be_info; fdmini_config.h: FDMINI_HAVE_HWLOC */
#include "json.h"
#if FDMINI_HAVE_HWLOC
#include <hwloc.h>
#endif

/* This process's node, real and as the run sees it (bind_node). Without --test-node-ranks the
 * two are the same node; with --test-node-ranks K each real node's ranks are split into groups
 * of K consecutive node-local ranks, each of which counts as a node of its own wherever the run
 * asks which ranks share a node (halo_create's IPC and signalled faces, the node-aware process
 * grid: decomp.h). What the hardware decides stays with the real node: the device a rank
 * takes, its share of the cores, the ranks sharing its device. */
typedef struct {
  /* the real node: the processes of comm that share memory (MPI_COMM_TYPE_SHARED) */
  int host;       /* its id: the rank in comm of its first process */
  int local_rank; /* this process's rank among them: picks its device (bind_pick_device) */
  int local_size; /* how many they are: they share the node's cores (bind_device) */
  /* the node as the run sees it: the real node, or the emulated one (a group of K) */
  int id;         /* its id: the rank in comm of its first process; the same on every rank of
                     a node, different between nodes (halo_create compares them, decomp_create
                     lays the process grid over them) */
  int rank;       /* this process's rank in it (local_rank without emulation) */
  int size;       /* its processes (local_size without emulation, else K) */
  int index;      /* its place among the nodes of comm, ordered by id: 0 .. count-1 */
  int count;      /* the nodes of comm (emulated ones with --test-node-ranks) */
  int emulated;   /* K of --test-node-ranks; 0: the real nodes */
} fd_node;

/* Fills *node from one MPI_Comm_split_type of comm (and, with group K > 0, one MPI_Comm_split of
 * each real node into groups of K consecutive local ranks), freed again: the only split by node
 * in fdmini; who needs the node gets *node. group 0: no emulation. K must divide every real
 * node's rank count: otherwise FD_ERR_USAGE on every rank (agreed, one message). Collective over
 * comm. */
int bind_node(MPI_Comm comm, int group, fd_node *node);

/* The device a rank takes among the `count` it sees (pure): with one visible device, device 0
 * (the launcher chose it: select_gpu.sh, Slurm's per-task binding; map ignored); without a map
 * (map_len 0), local_rank mod count; else map[local_rank mod map_len], which must be below
 * count. The map pairs ranks with GPUs where every rank sees its node's GPUs and the CPU
 * binding does not follow GPU order (Frontier: -c 7 puts local rank i on CCD i, whose closest
 * GCD is 4,5,2,3,6,7,0,1[i]). Returns 1 with *device set, or 0 with one line in why[len]. */
int bind_pick_device(int local_rank, int count, const int *map, int map_len, int *device,
                     char *why, size_t len);

/* Binds this process to device bind_pick_device(node->local_rank, visible devices, map,
 * map_len) with be_init and fills *dev (a map that names a device a rank cannot see is agreed:
 * FD_ERR_USAGE on every rank); unless OMP_NUM_THREADS is set, gives the host backend the node's cores divided by
 * node->local_size (the real node's, emulated or not). Counts the ranks of its real node
 * (node->host) bound to its device (bind_device_peers over comm) and tells the backend (be_set_device_sharers); *shared = the most ranks on one device
 * anywhere in comm (1: every rank has its own; 1 on the host backend); dev->mps becomes the least
 * of every rank's (1 only where every rank's contexts go through MPS). No visible device is
 * agreed (FD_ERR_RUNTIME on every rank); a failed be_init is this rank's (the caller aborts).
 * Collective over comm. */
int bind_device(MPI_Comm comm, const fd_node *node, const int *map, int map_len, be_info *dev,
                int *shared);

/* A rank's device as bind_device_peers gathers it: its real node (fd_node.host) and PCI bus id
 * ("" without a GPU). Plain bytes. */
typedef struct {
  int node;
  char pci[32]; /* be_info.pci_bus_id's size */
} bind_device_key;

/* The ranks of a communicator on one device, from rank `me`'s view. */
typedef struct {
  int sharers; /* ranks on me's device (same node, same bus id), me included; 1 without a bus id */
  int turn;    /* me's place among them in the communicator's rank order, 0 .. sharers-1 */
  int most;    /* the largest sharers of any rank (bind_device_peers; bind_peers_of leaves it) */
} bind_peers;

/* The ranks on one device by node and bus id, not by index: where each rank sees only its own
 * GPU (select_gpu.sh, --gpus-per-task) every index is 0 and no two ranks share one; the same
 * bus id on two nodes is two devices. Fills p->sharers and p->turn from the n ranks' keys[].
 * Pure. */
void bind_peers_of(const bind_device_key *keys, int n, int me, bind_peers *p);

/* bind_peers_of over comm, and p->most: one MPI_Allgather of each rank's key (node: an id the
 * same on the ranks of one real node, fd_node.host: emulated nodes under MPS share a GPU; dev: the device be_init bound) and one
 * MPI_Allreduce, no communicator created. The one way fdmini finds ranks sharing a device: for
 * bind_device, and for the solver's floors, which those ranks measure in turn. Collective over
 * comm; a failure to allocate is agreed. */
int bind_device_peers(MPI_Comm comm, int node, const be_info *dev, bind_peers *p);

/* One rank's binding. Plain chars only (gathered as bytes). Lists are hwloc "list" strings of
 * OS indexes, e.g. "0-6,48" ("..." at the end when one did not fit). */
typedef struct {
  char host[64];       /* MPI_Get_processor_name */
  int rank;            /* in the communicator of bind_collect */
  int local_rank;      /* rank among those of the same node (MPI_COMM_TYPE_SHARED), -1 unknown */
  char cpus[160];      /* CPUs (PUs) this process is bound to */
  char cpu_numa[32];   /* NUMA nodes of those CPUs */
  int gpu;             /* device index among the visible ones; -1 without a GPU (host backend) */
  int gpu_count;       /* devices visible to this rank (be_info.device_count); 0 without GPU */
  char gpu_pci[32];    /* "0000:c1:00.0" (lower case, 4-digit domain); "" without GPU */
  char gpu_numa[32];   /* NUMA nodes of the GPU's nearest non-I/O ancestor; "" unknown */
  char gpu_cpus[160];  /* CPUs of that ancestor (the GPU's local CPUs); "" unknown */
  int gpu_found;       /* 1 when the GPU's PCI device was found in the topology */
  int cpus_local;      /* 1: every CPU of the rank is local to its GPU; 0: not; -1: unknown */
  char source[8];      /* where the locality came from: "hwloc" or "os" (sysfs, bind_os.h) */
} fd_binding;

/* Bytes of warning text bind_analyse may need for n records (every line fits). */
#define BIND_WARNINGS_BYTES(n) ((size_t)(3 * (size_t)(n) + 4) * 400)

/* Fills *mine for this process: host, rank in comm, the CPU binding (hwloc_get_cpubind), the GPU
 * of `dev` and its locality. Loads the topology with I/O devices (or FDMINI_HWLOC_XML). Without
 * hwloc: sched_getaffinity and sysfs (bind_os_collect). local_rank is left at -1 (bind_report
 * sets it from the node). Not Collective. */
int bind_collect(MPI_Comm comm, const be_info *dev, fd_binding *mine);

#if FDMINI_HAVE_HWLOC

/* The same from a loaded topology (loaded with I/O devices kept, e.g. by bind_topology_load)
 * and an explicit CPU set, for tests and what-if checks: no MPI, no system query. host may be
 * NULL ("localhost"). Not Collective. */
int bind_collect_with_topology(hwloc_topology_t topo, hwloc_const_cpuset_t cpus,
                               const be_info *dev, const char *host, int rank, fd_binding *mine);

/* Loads a topology with important I/O devices (PCI GPUs, NICs) kept: from the XML file `xml`
 * when not NULL, else from FDMINI_HWLOC_XML when set, else from this machine. On success the
 * caller owns *topo (hwloc_topology_destroy). Not Collective. */
int bind_topology_load(hwloc_topology_t *topo, const char *xml);
#endif

/* Gathers every rank's record (local_rank as the caller set it) on rank 0 of comm: there *all
 * is a malloc'ed array of comm-size records in rank order; on the other ranks *all = NULL.
 * Collective. */
int bind_gather(MPI_Comm comm, const fd_binding *mine, fd_binding **all);

/* Analyses n records (any order, any number of hosts) and writes one warning per line into
 * warnings (NUL-terminated, lines that do not fit are left out; BIND_WARNINGS_BYTES(n) is always
 * enough); *nwarn = number of warnings found (written or not). Warns when
 *   - a rank's CPUs are not all local to its GPU (cpus_local == 0),
 *   - a rank's GPU was not found in the topology (locality unknown),
 *   - ranks of one host drive the same GPU (same host and PCI bus id),
 *   - a host has more visible GPUs (gpu_count) than distinct GPUs in use.
 * Pure: no I/O, no MPI. Not Collective. */
int bind_analyse(const fd_binding *all, int n, char *warnings, size_t len, int *nwarn);

/* Prints the table of n records, one line per rank. Not Collective. */
void bind_print_table(FILE *out, const fd_binding *all, int n);

/* Writes "binding_source": "hwloc" | "os", "binding": [{host, rank, local_rank, cpus, cpu_numa,
 * gpu, gpu_pci, gpu_numa, gpu_cpus, cpus_local}...] and "binding_warnings": ["...", ...] as
 * members of the open JSON object j. cpus_local is omitted when unknown. Writes nothing when all
 * is NULL. Not Collective. */
void bind_json(fd_json *j, const fd_binding *all, int n);

/* bind_collect + bind_gather, then on rank 0: the table on `out` when print is set, and the
 * warnings on `out` always ("binding warning: ..."). A failure on any rank (hwloc) is agreed, so
 * every rank returns the same code. On rank 0 *all / *n hold the records (bind_free them);
 * elsewhere NULL / 0. Collective. */
int bind_report(MPI_Comm comm, const fd_node *node, const be_info *dev, int print, FILE *out,
                fd_binding **all, int *n);

/* Frees what bind_gather / bind_report returned; NULL is fine. Not Collective. */
void bind_free(fd_binding *all);

#endif
