/* bind_os.c - the binding report's locality from Linux (bind_os.h): the process's CPU mask,
 * each NUMA node's CPU list and the GPU's PCI locality from sysfs, into the record bind.c
 * gathers, prints and analyses. Used where fdmini is built without hwloc. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_SETSIZE */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind_os.h"
#include "fd_error.h"

/* ---- CPU sets ---- */

static void set_clear(bind_os_cpuset *s) { memset(s, 0, sizeof *s); }
static void set_add(bind_os_cpuset *s, int c) { s->w[c / 64] |= UINT64_C(1) << (c % 64); }
static int set_has(const bind_os_cpuset *s, int c) { return (int)((s->w[c / 64] >> (c % 64)) & 1u); }

static int set_empty(const bind_os_cpuset *s)
{
  for (size_t i = 0; i < sizeof s->w / sizeof s->w[0]; i++)
    if (s->w[i]) return 0;
  return 1;
}

static int set_intersects(const bind_os_cpuset *a, const bind_os_cpuset *b)
{
  for (size_t i = 0; i < sizeof a->w / sizeof a->w[0]; i++)
    if (a->w[i] & b->w[i]) return 1;
  return 0;
}

/* 1 when every CPU of a is in b */
static int set_within(const bind_os_cpuset *a, const bind_os_cpuset *b)
{
  for (size_t i = 0; i < sizeof a->w / sizeof a->w[0]; i++)
    if (a->w[i] & ~b->w[i]) return 0;
  return 1;
}

int bind_os_cpuset_parse(bind_os_cpuset *s, const char *list)
{
  set_clear(s);
  const char *p = list;
  while (*p && isspace((unsigned char)*p)) p++;
  while (*p) {
    char *end;
    errno = 0;
    long lo = strtol(p, &end, 10), hi;
    if (end == p || errno || lo < 0) return -1;
    p = end;
    hi = lo;
    if (*p == '-') {
      hi = strtol(++p, &end, 10);
      if (end == p || errno || hi < lo) return -1;
      p = end;
    }
    if (hi >= BIND_OS_MAX_CPUS) return -1;
    for (long c = lo; c <= hi; c++) set_add(s, (int)c);
    if (*p == ',') p++;
    else {
      while (*p && isspace((unsigned char)*p)) p++;
      if (*p) return -1;
    }
  }
  return 0;
}

void bind_os_cpuset_format(char *buf, size_t len, const bind_os_cpuset *s)
{
  size_t used = 0;
  int cut = 0;
  if (!len) return;
  buf[0] = '\0';
  for (int c = 0; c < BIND_OS_MAX_CPUS && !cut; c++) {
    if (!set_has(s, c)) continue;
    int e = c;
    while (e + 1 < BIND_OS_MAX_CPUS && set_has(s, e + 1)) e++;
    char item[32];
    int n = e > c ? snprintf(item, sizeof item, "%s%d-%d", used ? "," : "", c, e)
                  : snprintf(item, sizeof item, "%s%d", used ? "," : "", c);
    if (used + (size_t)n < len) {
      memcpy(buf + used, item, (size_t)n + 1);
      used += (size_t)n;
    } else {
      cut = 1;
    }
    c = e;
  }
  if (cut && len >= 4) {
    size_t at = used + 3 < len ? used : len - 4;
    memcpy(buf + at, "...", 4);
  }
}

int bind_os_affinity(bind_os_cpuset *s)
{
  set_clear(s);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
    /* more CPUs than cpu_set_t holds: ask with a larger dynamic set */
    cpu_set_t *big = CPU_ALLOC(BIND_OS_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(BIND_OS_MAX_CPUS);
    if (!big) return fd_set_error(FD_ERR_RUNTIME, "bind: no memory for a CPU mask");
    CPU_ZERO_S(size, big);
    if (sched_getaffinity(0, size, big) != 0) {
      int e = errno;
      CPU_FREE(big);
      return fd_set_error(FD_ERR_RUNTIME, "bind: sched_getaffinity failed: %s", strerror(e));
    }
    for (int c = 0; c < BIND_OS_MAX_CPUS; c++)
      if (CPU_ISSET_S(c, size, big)) set_add(s, c);
    CPU_FREE(big);
    return FD_OK;
  }
  for (int c = 0; c < CPU_SETSIZE && c < BIND_OS_MAX_CPUS; c++)
    if (CPU_ISSET(c, &mask)) set_add(s, c);
  return FD_OK;
}

/* ---- helpers ---- */

void bind_os_busid_normalise(char *dst, size_t len, const char *src)
{
  unsigned dom = 0, bus, dev, fn;
  char tail;
  if (sscanf(src, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4 ||
      (dom = 0, sscanf(src, "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3))
    snprintf(dst, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
  else
    fd_copy_str(dst, len, src);
}

/* root + path ("" and "/" mean this machine) into buf. */
static void join(char *buf, size_t len, const char *root, const char *path)
{
  if (!root || !root[0] || (root[0] == '/' && !root[1])) root = "";
  snprintf(buf, len, "%s%s", root, path);
}

/* The whole of a small text file (sysfs) into a malloc'ed string; NULL when it cannot be read
 * (missing: not an error, the field stays unknown). */
static char *read_text(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 65536, n;
  char *s = malloc(cap + 1);
  if (s) {
    n = fread(s, 1, cap, f);
    s[n] = '\0';
  }
  fclose(f);
  return s;
}

/* A CPU list file into *s: 1 read, 0 missing, FD_ERR_RUNTIME (negative) malformed. */
static int read_list(const char *path, bind_os_cpuset *s)
{
  char *text = read_text(path);
  if (!text) return 0;
  int bad = bind_os_cpuset_parse(s, text) != 0;
  free(text);
  if (bad) return -fd_set_error(FD_ERR_RUNTIME, "bind: %s is not a CPU list", path);
  return 1;
}

/* The NUMA nodes of the machine: ids and CPU sets, from root/sys/devices/system/node. n = 0
 * when that folder is missing (no NUMA information). */
typedef struct {
  int n;
  int *id;
  bind_os_cpuset *cpus;
} numa_nodes;

static void numa_free(numa_nodes *m)
{
  free(m->id);
  free(m->cpus);
  m->n = 0;
  m->id = NULL;
  m->cpus = NULL;
}

static int numa_load(const char *root, numa_nodes *m)
{
  char dir[PATH_MAX];
  m->n = 0;
  m->id = NULL;
  m->cpus = NULL;
  join(dir, sizeof dir, root, "/sys/devices/system/node");
  DIR *d = opendir(dir);
  if (!d) return FD_OK;
  int cap = 0, err = FD_OK;
  struct dirent *e;
  while (err == FD_OK && (e = readdir(d))) {
    int id;
    char tail;
    if (sscanf(e->d_name, "node%d%c", &id, &tail) != 1 || id < 0 || id >= BIND_OS_MAX_CPUS)
      continue;
    if (m->n == cap) {
      cap = cap ? 2 * cap : 16;
      int *ids = realloc(m->id, (size_t)cap * sizeof *ids);
      if (ids) m->id = ids;
      bind_os_cpuset *sets = ids ? realloc(m->cpus, (size_t)cap * sizeof *sets) : NULL;
      if (!sets) {
        err = fd_set_error(FD_ERR_RUNTIME, "bind: no memory for %d NUMA nodes", cap);
        break;
      }
      m->cpus = sets;
    }
    char path[PATH_MAX + 300]; /* dir, a d_name (< 256) and "/cpulist" */
    snprintf(path, sizeof path, "%s/%s/cpulist", dir, e->d_name);
    int got = read_list(path, &m->cpus[m->n]);
    if (got < 0) err = -got;
    else if (got) m->id[m->n++] = id; /* a node without its cpulist tells nothing */
  }
  closedir(d);
  if (err != FD_OK) numa_free(m);
  return err;
}

/* The nodes whose CPUs meet `cpus` (within = 0) or lie inside it (within = 1), as a list. */
static void numa_list(const numa_nodes *m, const bind_os_cpuset *cpus, int within, char *buf,
                      size_t len)
{
  bind_os_cpuset ids;
  set_clear(&ids);
  for (int i = 0; i < m->n; i++) {
    if (set_empty(&m->cpus[i])) continue; /* memory-only nodes (HBM, CXL) hold no CPU */
    if (within ? set_within(&m->cpus[i], cpus) : set_intersects(&m->cpus[i], cpus))
      set_add(&ids, m->id[i]);
  }
  bind_os_cpuset_format(buf, len, &ids);
}

/* The GPU part of a record: bus id, then numa_node and local_cpulist of its PCI device. */
static int collect_gpu(const char *root, const numa_nodes *m, const bind_os_cpuset *cpus,
                       const be_info *dev, fd_binding *b)
{
  b->gpu = dev->device_index;
  b->gpu_count = dev->device_count;
  bind_os_busid_normalise(b->gpu_pci, sizeof b->gpu_pci, dev->pci_bus_id);
  if (!b->gpu_pci[0]) return FD_OK;
  char base[PATH_MAX], path[PATH_MAX + 32];
  char rel[96];
  snprintf(rel, sizeof rel, "/sys/bus/pci/devices/%s", b->gpu_pci);
  join(base, sizeof base, root, rel);
  bind_os_cpuset local;
  snprintf(path, sizeof path, "%s/local_cpulist", base);
  int got = read_list(path, &local);
  if (got < 0) return -got;
  if (!got || set_empty(&local)) return FD_OK; /* not in sysfs (container, ...): unknown */
  b->gpu_found = 1;
  bind_os_cpuset_format(b->gpu_cpus, sizeof b->gpu_cpus, &local);
  snprintf(path, sizeof path, "%s/numa_node", base);
  char *text = read_text(path);
  int node = -1;
  if (text && sscanf(text, "%d", &node) != 1) node = -1;
  free(text);
  if (node >= 0) snprintf(b->gpu_numa, sizeof b->gpu_numa, "%d", node);
  else numa_list(m, &local, 1, b->gpu_numa, sizeof b->gpu_numa); /* no firmware node: the
                                                                     nodes of its local CPUs */
  b->cpus_local = set_within(cpus, &local);
  return FD_OK;
}

int bind_os_collect(const char *root, const bind_os_cpuset *cpus, const be_info *dev,
                    const char *host, int rank, fd_binding *mine)
{
  memset(mine, 0, sizeof *mine);
  fd_copy_str(mine->host, sizeof mine->host, host && host[0] ? host : "localhost");
  fd_copy_str(mine->source, sizeof mine->source, "os");
  mine->rank = rank;
  mine->local_rank = -1;
  mine->gpu = -1;
  mine->cpus_local = -1;
  bind_os_cpuset_format(mine->cpus, sizeof mine->cpus, cpus);
  numa_nodes m;
  FD_CALL(numa_load(root, &m));
  numa_list(&m, cpus, 0, mine->cpu_numa, sizeof mine->cpu_numa);
  int err = FD_OK;
  if (dev && dev->is_accelerator) err = collect_gpu(root, &m, cpus, dev, mine);
  numa_free(&m);
  return err;
}
