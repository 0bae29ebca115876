/* bind.c - where each rank runs (bind.h): its node and its device (bind_node, bind_device),
 * and the binding report: per-rank records from hwloc (or, in builds without it, from the OS:
 * bind_os.c), gathered on rank 0, analysed for far CPUs, shared GPUs and idle GPUs, printed as
 * a table and JSON. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "bind_os.h"
#include "fd_error.h"

/* ---- small helpers ---- */

#if FDMINI_HAVE_HWLOC
/* set as an hwloc list string ("0-6,48") into buf[len]; "..." at the end when it did not fit. */
static int list_str(char *buf, size_t len, hwloc_const_bitmap_t set, const char *what)
{
  int need = hwloc_bitmap_list_snprintf(buf, len, set);
  if (need < 0)
    return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_bitmap_list_snprintf(%s) failed: %s", what,
                        strerror(errno));
  if ((size_t)need >= len && len >= 4) memcpy(buf + len - 4, "...", 4);
  return FD_OK;
}

/* ---- topology and collection ---- */

int bind_topology_load(hwloc_topology_t *topo, const char *xml)
{
  const char *path = xml ? xml : getenv("FDMINI_HWLOC_XML");
  if (hwloc_topology_init(topo) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_topology_init failed: %s", strerror(errno));
  /* PCI GPUs and NICs with the bridges above them; the rest of the I/O tree is dropped */
  if (hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
    int e = errno;
    hwloc_topology_destroy(*topo);
    return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_topology_set_io_types_filter failed: %s",
                        strerror(e));
  }
  if (path && path[0]) {
    if (hwloc_topology_set_xml(*topo, path) != 0) {
      int e = errno;
      hwloc_topology_destroy(*topo);
      return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_topology_set_xml('%s') failed: %s%s", path,
                          strerror(e), xml ? "" : " (from FDMINI_HWLOC_XML)");
    }
    /* FDMINI_HWLOC_XML describes the machine we run on: keep binding queries working */
    if (!xml && hwloc_topology_set_flags(*topo, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) != 0) {
      int e = errno;
      hwloc_topology_destroy(*topo);
      return fd_set_error(FD_ERR_RUNTIME,
                          "bind: hwloc_topology_set_flags(IS_THISSYSTEM) failed: %s", strerror(e));
    }
  }
  if (hwloc_topology_load(*topo) != 0) {
    int e = errno;
    hwloc_topology_destroy(*topo);
    return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_topology_load(%s) failed: %s",
                        path && path[0] ? path : "this machine", strerror(e));
  }
  return FD_OK;
}

/* The GPU part of a record: normalised bus id, its PCI device, the nearest non-I/O ancestor's
 * NUMA nodes and CPUs, and whether the rank's CPUs lie inside those. */
static int collect_gpu(hwloc_topology_t topo, hwloc_const_cpuset_t cpus, const be_info *dev,
                       fd_binding *b)
{
  b->gpu = dev->device_index;
  b->gpu_count = dev->device_count;
  bind_os_busid_normalise(b->gpu_pci, sizeof b->gpu_pci, dev->pci_bus_id);
  if (!b->gpu_pci[0]) return FD_OK;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topo, b->gpu_pci);
  if (!pci) return FD_OK; /* not in the topology (no sysfs PCI in a container, ...): unknown */
  hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (!near || !near->cpuset || !near->nodeset) return FD_OK;
  b->gpu_found = 1;
  FD_CALL(list_str(b->gpu_numa, sizeof b->gpu_numa, near->nodeset, "GPU nodeset"));
  FD_CALL(list_str(b->gpu_cpus, sizeof b->gpu_cpus, near->cpuset, "GPU cpuset"));
  b->cpus_local = hwloc_bitmap_isincluded(cpus, near->cpuset) ? 1 : 0;
  return FD_OK;
}

int bind_collect_with_topology(hwloc_topology_t topo, hwloc_const_cpuset_t cpus,
                               const be_info *dev, const char *host, int rank, fd_binding *mine)
{
  memset(mine, 0, sizeof *mine);
  fd_copy_str(mine->host, sizeof mine->host, host && host[0] ? host : "localhost");
  fd_copy_str(mine->source, sizeof mine->source, "hwloc");
  mine->rank = rank;
  mine->local_rank = -1;
  mine->gpu = -1;
  mine->cpus_local = -1;
  enum hwloc_type_filter_e filter = HWLOC_TYPE_FILTER_KEEP_NONE;
  if (hwloc_topology_get_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, &filter) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_topology_get_type_filter failed: %s",
                        strerror(errno));
  if (filter == HWLOC_TYPE_FILTER_KEEP_NONE)
    return fd_set_error(FD_ERR_RUNTIME,
                        "bind: the topology was loaded without I/O devices, so GPU locality "
                        "cannot be found (load it with bind_topology_load)");
  FD_CALL(list_str(mine->cpus, sizeof mine->cpus, cpus, "CPU binding"));
  hwloc_nodeset_t nodes = hwloc_bitmap_alloc();
  if (!nodes) return fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_bitmap_alloc failed: out of memory");
  int err = FD_OK;
  if (hwloc_cpuset_to_nodeset(topo, cpus, nodes) != 0)
    err = fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_cpuset_to_nodeset failed: %s", strerror(errno));
  if (err == FD_OK) err = list_str(mine->cpu_numa, sizeof mine->cpu_numa, nodes, "CPU nodeset");
  hwloc_bitmap_free(nodes);
  if (err == FD_OK && dev && dev->is_accelerator) err = collect_gpu(topo, cpus, dev, mine);
  return err;
}
#endif /* FDMINI_HAVE_HWLOC */

int bind_collect(MPI_Comm comm, const be_info *dev, fd_binding *mine)
{
  int rank, len = 0;
  char host[MPI_MAX_PROCESSOR_NAME];
  FD_MPI(MPI_Comm_rank(comm, &rank));
  FD_MPI(MPI_Get_processor_name(host, &len));
  host[len < (int)sizeof host ? len : (int)sizeof host - 1] = '\0';

#if FDMINI_HAVE_HWLOC
  hwloc_topology_t topo;
  hwloc_cpuset_t cpus = NULL;
  int err = bind_topology_load(&topo, NULL);
  if (err == FD_OK) {
    if (!(cpus = hwloc_bitmap_alloc()))
      err = fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_bitmap_alloc failed: out of memory");
    /* the whole process's binding (all threads); one thread's where that is unsupported */
    else if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) != 0 &&
             hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_THREAD) != 0)
      err = fd_set_error(FD_ERR_RUNTIME, "bind: hwloc_get_cpubind failed: %s%s", strerror(errno),
                         hwloc_topology_is_thissystem(topo)
                             ? ""
                             : " (the topology is not this machine's: HWLOC_XMLFILE without "
                               "HWLOC_THISSYSTEM=1?)");
    else
      err = bind_collect_with_topology(topo, cpus, dev, host, rank, mine);
    hwloc_bitmap_free(cpus);
    hwloc_topology_destroy(topo);
  }
#else
  bind_os_cpuset cpus;
  int err = bind_os_affinity(&cpus);
  if (err == FD_OK) err = bind_os_collect("/", &cpus, dev, host, rank, mine);
#endif
  if (err != FD_OK) {
    char why[768];
    fd_copy_str(why, sizeof why, fd_error_message());
    err = fd_set_error(err, "rank %d: %s", rank, why);
  }
  return err;
}

/* ---- gather ---- */

/* Strings received from another rank are terminated whatever they held. */
static void terminate_strings(fd_binding *b)
{
  b->host[sizeof b->host - 1] = '\0';
  b->cpus[sizeof b->cpus - 1] = '\0';
  b->cpu_numa[sizeof b->cpu_numa - 1] = '\0';
  b->gpu_pci[sizeof b->gpu_pci - 1] = '\0';
  b->gpu_numa[sizeof b->gpu_numa - 1] = '\0';
  b->gpu_cpus[sizeof b->gpu_cpus - 1] = '\0';
  b->source[sizeof b->source - 1] = '\0';
}

int bind_gather(MPI_Comm comm, const fd_binding *mine, fd_binding **all)
{
  int rank, size;
  fd_binding me = *mine;
  *all = NULL;
  FD_MPI(MPI_Comm_rank(comm, &rank));
  FD_MPI(MPI_Comm_size(comm, &size));

  fd_binding *buf = NULL;
  int err = FD_OK;
  if (rank == 0 && !(buf = malloc((size_t)size * sizeof *buf)))
    err = fd_set_error(FD_ERR_RUNTIME, "rank 0: bind: no memory for %d binding records", size);
  FD_CALL(fd_agree(comm, err));
  int rc = MPI_Gather(&me, (int)sizeof me, MPI_BYTE, buf, (int)sizeof me, MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS) {
    free(buf);
    return fd_mpi_failed(__FILE__, __LINE__, "MPI_Gather(binding records)", rc);
  }
  if (buf)
    for (int r = 0; r < size; r++) terminate_strings(&buf[r]);
  *all = buf;
  return FD_OK;
}

void bind_free(fd_binding *all) { free(all); }

/* ---- analysis ---- */

typedef struct {
  char *buf;
  size_t len, used;
  int count;
} warn_sink;

static void warn_add(warn_sink *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(warn_sink *w, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  w->count++;
  size_t n = strlen(line);
  if (!w->buf || w->used + n + 2 > w->len) return; /* line + '\n' + final NUL */
  memcpy(w->buf + w->used, line, n);
  w->used += n;
  w->buf[w->used++] = '\n';
  w->buf[w->used] = '\0';
}

/* Key of the GPU a record drives: its PCI bus id, else its index (only meaningful when every
 * rank sees the same devices). */
static void gpu_key(const fd_binding *b, char *key, size_t len)
{
  if (b->gpu_pci[0]) fd_copy_str(key, len, b->gpu_pci);
  else snprintf(key, len, "device %d", b->gpu);
}

static int cmp_host_gpu_rank(const void *pa, const void *pb)
{
  const fd_binding *a = *(const fd_binding *const *)pa, *b = *(const fd_binding *const *)pb;
  int c = strcmp(a->host, b->host);
  if (c) return c;
  char ka[40], kb[40];
  gpu_key(a, ka, sizeof ka);
  gpu_key(b, kb, sizeof kb);
  if ((c = strcmp(ka, kb))) return c;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

static int same_gpu(const fd_binding *a, const fd_binding *b)
{
  char ka[40], kb[40];
  gpu_key(a, ka, sizeof ka);
  gpu_key(b, kb, sizeof kb);
  return strcmp(a->host, b->host) == 0 && strcmp(ka, kb) == 0;
}

int bind_analyse(const fd_binding *all, int n, char *warnings, size_t len, int *nwarn)
{
  warn_sink w = {warnings, len, 0, 0};
  if (warnings && len) warnings[0] = '\0';
  *nwarn = 0;
  if (n <= 0 || !all) return FD_OK;

  /* 1. per rank: CPUs far from the GPU, or a GPU hwloc does not know */
  for (int i = 0; i < n; i++) {
    const fd_binding *b = &all[i];
    if (b->gpu < 0) continue;
    if (b->gpu_pci[0] && !b->gpu_found)
      warn_add(&w, "rank %d (%s): GPU %d (%s) not found in %s: its NUMA locality is unknown",
               b->rank, b->host, b->gpu, b->gpu_pci,
               strcmp(b->source, "os") == 0 ? "sysfs (/sys/bus/pci/devices)" : "the hwloc topology");
    else if (b->cpus_local == 0)
      warn_add(&w, "rank %d (%s): CPUs %s (NUMA %s) are not local to its GPU %d (%s, NUMA %s, "
                   "local CPUs %s)", b->rank, b->host, b->cpus, b->cpu_numa, b->gpu, b->gpu_pci,
               b->gpu_numa, b->gpu_cpus);
  }

  /* records with a GPU, sorted by host, GPU, rank */
  const fd_binding **p = malloc((size_t)n * sizeof *p);
  if (!p) return fd_set_error(FD_ERR_RUNTIME, "bind: no memory to analyse %d records", n);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (all[i].gpu >= 0) p[m++] = &all[i];
  qsort(p, (size_t)m, sizeof *p, cmp_host_gpu_rank);

  /* 2. ranks of one host on the same GPU */
  for (int i = 0; i < m;) {
    int j = i + 1;
    while (j < m && same_gpu(p[i], p[j])) j++;
    if (j - i > 1 && p[i]->gpu_pci[0]) {
      char ranks[200];
      size_t used = 0;
      ranks[0] = '\0';
      for (int k = i; k < j; k++) {
        int wrote = snprintf(ranks + used, sizeof ranks - used, "%s%d", k > i ? "," : "",
                             p[k]->rank);
        if (wrote < 0 || used + (size_t)wrote >= sizeof ranks - 5) {
          snprintf(ranks + used, sizeof ranks - used, ",...");
          break;
        }
        used += (size_t)wrote;
      }
      warn_add(&w, "host %s: %d ranks (%s) share GPU %s", p[i]->host, j - i, ranks,
               p[i]->gpu_pci);
    }
    i = j;
  }

  /* 3. per host: visible GPUs that no rank drives */
  for (int i = 0; i < m;) {
    int j = i, visible = 0, used = 0;
    while (j < m && strcmp(p[j]->host, p[i]->host) == 0) {
      if (p[j]->gpu_count > visible) visible = p[j]->gpu_count;
      if (j == i || !same_gpu(p[j - 1], p[j])) used++;
      j++;
    }
    if (visible > used)
      warn_add(&w, "host %s: %d GPUs visible to each rank but only %d in use: %d idle", p[i]->host,
               visible, used, visible - used);
    i = j;
  }
  free(p);
  *nwarn = w.count;
  return FD_OK;
}

/* ---- output ---- */

static int max_int(int a, int b) { return a > b ? a : b; }

/* Where the records' locality came from, in words (every rank runs the same binary). */
static const char *bind_source_text(const fd_binding *all, int n)
{
  if (n > 0 && strcmp(all[0].source, "os") == 0)
    return "the OS: sched_getaffinity and sysfs, no hwloc";
  return n > 0 && all[0].source[0] ? all[0].source : "unknown";
}

void bind_print_table(FILE *out, const fd_binding *all, int n)
{
  int hosts = 0, wh = 4, wc = 4, wn = 8, wp = 7, wg = 8, wgc = 8;
  for (int i = 0; i < n; i++) {
    int first = 1;
    for (int k = 0; k < i && first; k++) first = strcmp(all[k].host, all[i].host) != 0;
    hosts += first;
    wh = max_int(wh, (int)strlen(all[i].host));
    wc = max_int(wc, (int)strlen(all[i].cpus));
    wn = max_int(wn, (int)strlen(all[i].cpu_numa));
    wp = max_int(wp, (int)strlen(all[i].gpu_pci));
    wg = max_int(wg, (int)strlen(all[i].gpu_numa));
    wgc = max_int(wgc, (int)strlen(all[i].gpu_cpus));
  }
  fprintf(out, "binding: %d rank%s on %d host%s (locality from %s)\n", n, n == 1 ? "" : "s",
          hosts, hosts == 1 ? "" : "s", bind_source_text(all, n));
  fprintf(out, "  %5s  %-*s  %5s  %-*s  %-*s  %4s  %-*s  %-*s  %-*s  %s\n", "rank", wh, "host",
          "local", wc, "cpus", wn, "cpu_numa", "gpu", wp, "gpu_pci", wg, "gpu_numa", wgc,
          "gpu_cpus", "local_to_gpu");
  for (int i = 0; i < n; i++) {
    const fd_binding *b = &all[i];
    char gpu[16];
    if (b->gpu >= 0) snprintf(gpu, sizeof gpu, "%d", b->gpu);
    else snprintf(gpu, sizeof gpu, "-");
    const char *local = b->cpus_local == 1 ? "yes" : b->cpus_local == 0 ? "NO" : "-";
    fprintf(out, "  %5d  %-*s  %5d  %-*s  %-*s  %4s  %-*s  %-*s  %-*s  %s\n", b->rank, wh, b->host,
            b->local_rank, wc, b->cpus, wn, b->cpu_numa[0] ? b->cpu_numa : "-", gpu, wp,
            b->gpu_pci[0] ? b->gpu_pci : "-", wg, b->gpu_numa[0] ? b->gpu_numa : "-", wgc,
            b->gpu_cpus[0] ? b->gpu_cpus : "-", local);
  }
}

void bind_json(fd_json *j, const fd_binding *all, int n)
{
  if (!all) return;
  json_str(j, "binding_source", n > 0 ? all[0].source : "");
  json_array(j, "binding");
  for (int i = 0; i < n; i++) {
    const fd_binding *b = &all[i];
    json_object(j, NULL);
    json_str(j, "host", b->host);
    json_int(j, "rank", b->rank);
    json_int(j, "local_rank", b->local_rank);
    json_str(j, "cpus", b->cpus);
    json_str(j, "cpu_numa", b->cpu_numa);
    json_int(j, "gpu", b->gpu);
    json_str(j, "gpu_pci", b->gpu_pci);
    json_str(j, "gpu_numa", b->gpu_numa);
    json_str(j, "gpu_cpus", b->gpu_cpus);
    if (b->cpus_local >= 0) json_bool(j, "cpus_local", b->cpus_local);
    json_end(j);
  }
  json_end(j);
  json_array(j, "binding_warnings");
  size_t len = BIND_WARNINGS_BYTES(n);
  char *text = malloc(len);
  int nwarn = 0;
  if (text && bind_analyse(all, n, text, len, &nwarn) == FD_OK) {
    for (char *line = text, *nl; *line; line = nl + 1) {
      if (!(nl = strchr(line, '\n'))) break;
      *nl = '\0';
      json_str(j, NULL, line);
    }
  } else {
    json_str(j, NULL, "binding analysis failed: out of memory");
  }
  free(text);
  json_end(j);
}

/* At most this many warning lines on the terminal; the JSON record holds them all. */
enum { BIND_PRINT_WARNINGS_MAX = 64 };

int bind_report(MPI_Comm comm, const fd_node *node, const be_info *dev, int print, FILE *out,
                fd_binding **all, int *n)
{
  int rank, size;
  fd_binding mine;
  *all = NULL;
  *n = 0;
  FD_MPI(MPI_Comm_rank(comm, &rank));
  FD_MPI(MPI_Comm_size(comm, &size));
  FD_CALL(fd_agree(comm, bind_collect(comm, dev, &mine)));
  mine.local_rank = node->local_rank;
  FD_CALL(bind_gather(comm, &mine, all));
  if (rank != 0) return FD_OK;
  *n = size;

  if (print) bind_print_table(out, *all, size);
  size_t len = BIND_WARNINGS_BYTES(size);
  char *text = malloc(len);
  int nwarn = 0, shown = 0;
  if (!text) return fd_set_error(FD_ERR_RUNTIME, "rank 0: bind: no memory for the warnings");
  int err = bind_analyse(*all, size, text, len, &nwarn);
  if (err == FD_OK) {
    for (char *line = text, *nl; *line && shown < BIND_PRINT_WARNINGS_MAX; line = nl + 1) {
      if (!(nl = strchr(line, '\n'))) break;
      fprintf(out, "binding warning: %.*s\n", (int)(nl - line), line);
      shown++;
    }
    if (nwarn > shown)
      fprintf(out, "binding warning: ... %d more (all of them are in the JSON record)\n",
              nwarn - shown);
    if (print && nwarn == 0) fprintf(out, "binding: no warnings\n");
    fflush(out);
  }
  free(text);
  return err;
}

/* ---- the node and the device ---- */

int bind_node(MPI_Comm comm, int group, fd_node *node)
{
  MPI_Comm shared, part;
  int rank;
  memset(node, 0, sizeof *node);
  FD_MPI(MPI_Comm_rank(comm, &rank));
  FD_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  FD_MPI(MPI_Comm_rank(shared, &node->local_rank));
  FD_MPI(MPI_Comm_size(shared, &node->local_size));
  /* key 0 keeps comm's order: local rank 0 is the node's first process */
  node->host = rank;
  FD_MPI(MPI_Bcast(&node->host, 1, MPI_INT, 0, shared));
  int err = group > 0 && node->local_size % group
                ? fd_set_error(FD_ERR_USAGE, "--test-node-ranks %d: the node of rank %d holds %d rank%s, not a multiple of %d (K must "
                               "divide every node's rank count)", group, node->host, node->local_size,
                               node->local_size == 1 ? "" : "s", group)
                : FD_OK;
  err = fd_agree(comm, err);
  if (err != FD_OK) {
    MPI_Comm_free(&shared);
    return err;
  }
  node->emulated = group > 0 ? group : 0;
  /* the node as the run sees it: the real one, or the group of K consecutive local ranks */
  const int k = group > 0 ? group : node->local_size;
  FD_MPI(MPI_Comm_split(shared, node->local_rank / k, node->local_rank, &part));
  FD_MPI(MPI_Comm_free(&shared));
  FD_MPI(MPI_Comm_rank(part, &node->rank));
  FD_MPI(MPI_Comm_size(part, &node->size));
  node->id = rank;
  FD_MPI(MPI_Bcast(&node->id, 1, MPI_INT, 0, part));
  /* the nodes in the order of their ids: a node's first process counts the first processes
   * before it (every id is the comm rank of its node's first process) */
  const int first = rank == node->id;
  FD_MPI(MPI_Exscan(&first, &node->index, 1, MPI_INT, MPI_SUM, comm));
  if (rank == 0) node->index = 0; /* MPI_Exscan leaves rank 0's undefined */
  FD_MPI(MPI_Bcast(&node->index, 1, MPI_INT, 0, part));
  FD_MPI(MPI_Comm_free(&part));
  FD_MPI(MPI_Allreduce(&first, &node->count, 1, MPI_INT, MPI_SUM, comm));
  return FD_OK;
}

void bind_peers_of(const bind_device_key *keys, int n, int me, bind_peers *p)
{
  p->sharers = 1;
  p->turn = 0;
  if (!keys[me].pci[0]) return;
  p->sharers = 0;
  for (int i = 0; i < n; i++)
    if (keys[i].node == keys[me].node && strncmp(keys[i].pci, keys[me].pci, sizeof keys[i].pci) == 0) {
      if (i < me) p->turn++;
      p->sharers++;
    }
}

int bind_device_peers(MPI_Comm comm, int node, const be_info *dev, bind_peers *p)
{
  int n, me;
  FD_MPI(MPI_Comm_size(comm, &n));
  FD_MPI(MPI_Comm_rank(comm, &me));
  bind_device_key mine, *keys = calloc((size_t)n, sizeof *keys);
  memset(&mine, 0, sizeof mine);
  mine.node = node;
  if (dev->is_accelerator) snprintf(mine.pci, sizeof mine.pci, "%s", dev->pci_bus_id);
  const int err = fd_agree(comm, keys ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "bind: no memory for %d bus ids", n));
  if (err != FD_OK) {
    free(keys);
    return err;
  }
  const int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, keys, (int)sizeof mine, MPI_BYTE, comm);
  if (rc == MPI_SUCCESS) bind_peers_of(keys, n, me, p);
  free(keys);
  if (rc != MPI_SUCCESS) return fd_mpi_failed(__FILE__, __LINE__, "MPI_Allgather(bus ids)", rc);
  FD_MPI(MPI_Allreduce(&p->sharers, &p->most, 1, MPI_INT, MPI_MAX, comm));
  return FD_OK;
}

int bind_pick_device(int local_rank, int count, const int *map, int map_len, int *device,
                     char *why, size_t len)
{
  if (why && len) why[0] = '\0';
  *device = 0;
  if (count <= 1) return 1;
  if (map_len <= 0) {
    *device = local_rank % count;
    return 1;
  }
  const int d = map[local_rank % map_len];
  if (d < 0 || d >= count) {
    if (why && len)
      snprintf(why, len, "--gpu-map: node-local rank %d would take device %d, but it sees %d devices "
                         "(0..%d)", local_rank, d, count, count - 1);
    return 0;
  }
  *device = d;
  return 1;
}

int bind_device(MPI_Comm comm, const fd_node *node, const int *map, int map_len, be_info *dev,
                int *shared)
{
  int count = 0;
  int err = be_device_count(&count) != BE_OK
                ? fd_set_error(FD_ERR_RUNTIME, "no usable device: %s", be_error_message())
                : (count < 1 ? fd_set_error(FD_ERR_RUNTIME, "no device visible to this rank") : FD_OK);
  FD_CALL(fd_agree(comm, err));
  /* without OMP_NUM_THREADS, ranks on a node share its cores instead of each taking all */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (!getenv("OMP_NUM_THREADS")) be_set_host_threads((int)(cores / node->local_size));
  int device = 0;
  char why[160];
  const int picked = bind_pick_device(node->local_rank, count, map, map_len, &device, why, sizeof why);
  FD_CALL(fd_agree(comm, picked ? FD_OK : fd_set_error(FD_ERR_USAGE, "%s", why)));
  FD_BE(be_init(device, dev));
  bind_peers peers;
  FD_CALL(bind_device_peers(comm, node->host, dev, &peers)); /* the real node: MPS under emulation */
  be_set_device_sharers(peers.sharers);
  *shared = peers.most;
  /* MPS, agreed: the least of the ranks' answers (-1 where any does not know, 0 where any runs
   * without it) */
  int mps = dev->mps;
  if (MPI_Allreduce(&dev->mps, &mps, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return fd_set_error(FD_ERR_RUNTIME, "bind: MPI_Allreduce of the devices' MPS failed");
  dev->mps = mps;
  return FD_OK;
}
