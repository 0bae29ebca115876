/* site.c - checks a supercomputer's job setup calls for (site.h): GPU-aware Cray MPICH without
 * its GTL, refused before MPI_Init; a launcher that started more processes than MPI sees (two
 * MPI libraries on one machine); the IPC halo path where each rank sees only its own GPU,
 * refused before anything is allocated; advice where a large shared file goes to a Lustre
 * directory striped over one OST. The driver reads the launcher's environment here on
 * purpose: these are facts about the job, not settings of fdmini. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>

#include <mpi.h>

#include "fd_error.h"
#include "mpi_gpu.h"
#include "site.h"

/* ---- the GTL of GPU-aware Cray MPICH ---- */

typedef struct {
  char *name;
  size_t len;
  int found;
} gtl_search;

static int find_gtl(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  gtl_search *s = data;
  const char *path = info->dlpi_name ? info->dlpi_name : "";
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strncmp(base, "libmpi_gtl_", 11) != 0) return 0;
  s->found = 1;
  if (s->name && s->len) snprintf(s->name, s->len, "%s", base);
  return 1; /* stop */
}

int site_gtl_loaded(char *name, size_t len)
{
  gtl_search s = {name, len, 0};
  if (name && len) name[0] = '\0';
  dl_iterate_phdr(find_gtl, &s);
  return s.found;
}

/* 1 when this process is the job's rank 0 as the launcher closest to it numbers it (mpirun
 * and Hydra may run inside an srun step), or when no launcher variable says (a singleton, or
 * an unknown launcher: better one line too many than none). */
static int launcher_rank_zero(void)
{
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && v[0]) return strcmp(v, "0") == 0;
  }
  return 1;
}

int site_check_gtl(FILE *err)
{
  const char *want = NULL;
  char why[256];
  /* the one rule (base/mpi_gpu.h): only Cray MPICH reads the variable, and only 1 enables */
  if (!mpi_gpu_cray_enabled(&want, why, sizeof why)) return FD_OK;
  char gtl[256];
  if (site_gtl_loaded(gtl, sizeof gtl)) return FD_OK;
  if (launcher_rank_zero()) {
    fprintf(err, "fdmini: error: MPICH_GPU_SUPPORT_ENABLED=%s asks Cray MPICH for GPU-aware MPI, "
                 "but this binary has no GPU Transport Layer (no libmpi_gtl_* loaded; GTL %s), so "
                 "MPI_Init would abort every rank; set MPICH_GPU_SUPPORT_ENABLED=0 and run with "
                 "--mpi-gpu staged, or build with the GTL (docs/building.md: LUMI-G and Frontier)\n",
            want, FDMINI_GTL_STATUS);
    fflush(err);
  } else {
    /* the other ranks leave a moment later: the first exit with status 2 makes a launcher
     * (mpirun, srun --kill-on-bad-exit) kill the job, which could otherwise take rank 0
     * down before its line is out */
    const struct timespec wait = {0, 300000000L};
    nanosleep(&wait, NULL);
  }
  return FD_ERR_USAGE;
}

/* ---- the launcher's process count against MPI_COMM_WORLD ---- */

/* The first of `vars` that holds a positive integer: its value, and its name in *name. */
static int first_count(const char *const *vars, size_t n, const char **name)
{
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(vars[i]);
    if (!v || !v[0]) continue;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end == '\0' && x > 0 && x <= 1L << 30) {
      *name = vars[i];
      return (int)x;
    }
  }
  return 0;
}

void site_launcher_read(site_launcher *l)
{
  memset(l, 0, sizeof *l);
  /* the launcher closest to the process first: mpirun and Hydra may run inside an srun step */
  static const char *const total[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
  static const char *const local[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
  const char *name = NULL;
  l->size = first_count(total, sizeof total / sizeof total[0], &name);
  /* srun's count only within a step (SLURM_STEP_ID): salloc and sbatch set SLURM_NTASKS for
   * the allocation, which a process started without srun must not be held to */
  if (l->size && strcmp(name, "SLURM_STEP_NUM_TASKS") == 0 && !getenv("SLURM_STEP_ID")) l->size = 0;
  if (l->size) snprintf(l->size_var, sizeof l->size_var, "%s", name);
  l->local = first_count(local, sizeof local / sizeof local[0], &name);
  if (l->local) snprintf(l->local_var, sizeof l->local_var, "%s", name);
  l->rank_zero = launcher_rank_zero();
}

int site_launcher_mismatch(const site_launcher *l, int world_size, const char *library, char *why, size_t len)
{
  if (why && len) why[0] = '\0';
  int total = l->size && l->size != world_size;
  int local = l->local && l->local > world_size;
  if (!total && !local) return 0;
  if (why && len) {
    char name[121]; /* at most 120 characters of it */
    mpi_library_name(library, name, sizeof name);
    snprintf(why, len,
             "the launcher started %d processes%s (%s=%d) but MPI_COMM_WORLD holds %d: "
             "fdmini's MPI library (%s) is not the launcher's (e.g. an MPICH build "
             "started by Open MPI's mpirun, or srun without the --mpi plugin this MPI "
             "needs); start fdmini with its own MPI's launcher",
             total ? l->size : l->local, total ? "" : " on this node",
             total ? l->size_var : l->local_var, total ? l->size : l->local, world_size, name);
  }
  return 1;
}

int site_check_launcher(const site_launcher *l, MPI_Comm world, FILE *err)
{
  int size = 1;
  FD_MPI(MPI_Comm_size(world, &size));
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int n = 0;
  if (MPI_Get_library_version(lib, &n) != MPI_SUCCESS) lib[0] = '\0';
  char why[512];
  if (!site_launcher_mismatch(l, size, lib, why, sizeof why)) return FD_OK;
  /* every process sees the same launcher variables, so every one refuses; the launcher's
   * rank 0 speaks (each process may be rank 0 of a world of its own) */
  if (l->rank_zero) fprintf(err, "fdmini: error: %s\n", why);
  else {
    /* mpirun, Hydra and srun end the job at the first process that exits non-zero: the others
     * give rank 0 time to say why */
    struct timespec pause = {2, 0};
    nanosleep(&pause, NULL);
  }
  return FD_ERR_USAGE;
}

/* ---- --halo-path ipc where every rank sees one GPU ---- */

int site_ipc_refusal(const site_gpu *ranks, int n, char *why, size_t len)
{
  if (why && len) why[0] = '\0';
  const char *first = NULL, *other = NULL; /* two distinct GPUs, if there are */
  for (int i = 0; i < n; i++) {
    if (!ranks[i].pci[0] || ranks[i].device_count != 1) return 0;
    if (!first) first = ranks[i].pci;
    else if (strcmp(first, ranks[i].pci) != 0 && !other) other = ranks[i].pci;
  }
  if (!first || !other) return 0; /* one GPU shared by every rank: IPC works */
  if (why && len)
    snprintf(why, len, "--halo-path ipc: each rank on host %s sees only its own GPU (1 visible "
                       "device, e.g. %s and %s), and fdmini's IPC path copies only between devices "
                       "a rank can address; start it with every GPU of the node visible to every "
                       "rank (launch/lumi-g.sbatch and frontier.sbatch do: docs/multi-gpu.md), or "
                       "use --halo-path auto or mpi: GPU-aware MPI moves the "
                       "faces, with GPU IPC of its own inside the node where the GPU is chosen by "
                       "ROCR_VISIBLE_DEVICES (select_gpu.sh), but not under Slurm's per-task GPU "
                       "binding (--gpus-per-task, --gpu-bind: a cgroup per task hides the other "
                       "GPUs from the driver, LUMI user guide)",
             ranks[0].host, first, other);
  return 1;
}

int site_check_ipc(MPI_Comm comm, const fd_node *node, const fd_options *o, const be_info *dev)
{
  if (o->halo_path != FD_HALO_PATH_IPC || !dev->is_accelerator) return FD_OK;
  int n = 0, len = 0, rank = 0;
  FD_MPI(MPI_Comm_size(comm, &n));
  FD_MPI(MPI_Comm_rank(comm, &rank));
  site_gpu me;
  memset(&me, 0, sizeof me);
  me.node = node->host; /* what a rank sees is the real node's, emulated nodes or not */
  char host[MPI_MAX_PROCESSOR_NAME];
  FD_MPI(MPI_Get_processor_name(host, &len));
  snprintf(me.host, sizeof me.host, "%.*s", len < (int)sizeof me.host ? len : (int)sizeof me.host - 1, host);
  snprintf(me.pci, sizeof me.pci, "%s", dev->pci_bus_id);
  me.device_count = dev->device_count;
  /* every rank's record (a few dozen bytes each, once per run), then this rank's node's */
  site_gpu *all = malloc((size_t)n * sizeof *all);
  int err = all ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "site: no memory for %d device records", n);
  err = fd_agree(comm, err);
  if (err == FD_OK) {
    int rc = MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, comm);
    if (rc != MPI_SUCCESS) err = fd_mpi_failed(__FILE__, __LINE__, "MPI_Allgather(devices)", rc);
  }
  if (err == FD_OK) {
    int m = 0;
    for (int i = 0; i < n; i++)
      if (all[i].node == me.node) {
        all[m] = all[i];
        all[m].host[sizeof all[m].host - 1] = '\0';
        all[m].pci[sizeof all[m].pci - 1] = '\0';
        m++;
      }
    char why[1024];
    /* the node's first rank speaks for it: one message per node, the lowest node's wins */
    if (rank == node->host && site_ipc_refusal(all, m, why, sizeof why))
      err = fd_set_error(FD_ERR_USAGE, "%s", why);
  }
  free(all);
  return fd_agree(comm, err);
}

/* ---- a large shared file on a Lustre directory striped over one OST ---- */

/* Lustre's statfs magic (LL_SUPER_MAGIC, lustre_user.h) */
#define SITE_LUSTRE_MAGIC 0x0BD00BD0L

int site_lustre_stripe_count(const char *dir)
{
  /* `lfs getstripe -d DIR`: the directory's default layout, which new files inherit. A
   * composite layout (progressive file layout: lcm_* / lcme_* lines, Frontier's Orion) grows
   * its striping with the file: 0, no advice. lfs is the only interface that needs no Lustre
   * headers at build time. */
  char quoted[4 * FD_PATH_MAX + 1];
  char cmd[sizeof quoted + 64];
  size_t q = 0;
  for (const char *c = dir; *c && q + 5 < sizeof quoted; c++) {
    if (*c == '\'') {
      memcpy(quoted + q, "'\\''", 4);
      q += 4;
    } else quoted[q++] = *c;
  }
  quoted[q] = '\0';
  snprintf(cmd, sizeof cmd, "lfs getstripe -d '%s' 2>/dev/null", quoted);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[512];
  int count = -1, composite = 0;
  while (fgets(line, sizeof line, p)) {
    if (strstr(line, "lcm_") || strstr(line, "lcme_")) composite = 1;
    const char *k = strstr(line, "stripe_count:");
    if (k && count < 0) count = atoi(k + strlen("stripe_count:"));
  }
  int rc = pclose(p);
  if (rc != 0) return -1;
  if (composite) return 0;
  return count;
}

int site_lustre_advice(const char *what, const char *dir, long fs_magic, int stripe_count,
                       unsigned long long bytes, char *line, size_t len)
{
  if (line && len) line[0] = '\0';
  if (fs_magic != SITE_LUSTRE_MAGIC || stripe_count != 1 || bytes < SITE_LUSTRE_LARGE) return 0;
  if (line && len)
    snprintf(line, len, "fdmini: advice: %s writes one %.1f GiB file per write into %s, a Lustre "
                        "directory striped over 1 OST: stripe the directory first, e.g. "
                        "`lfs setstripe -c 8 %s` (LUMI user guide, Lustre; or LUMI's /flash), "
                        "which also applies to the files already there only when rewritten",
             what, (double)bytes / (1024.0 * 1024.0 * 1024.0), dir, dir);
  return 1;
}

void site_check_lustre(const char *what, const char *dir, unsigned long long bytes, FILE *out)
{
  if (!dir || !dir[0] || bytes < SITE_LUSTRE_LARGE) return;
  struct statfs fs;
  if (statfs(dir, &fs) != 0 || (long)fs.f_type != SITE_LUSTRE_MAGIC) return;
  char line[FD_PATH_MAX * 2 + 512];
  if (site_lustre_advice(what, dir, (long)fs.f_type, site_lustre_stripe_count(dir), bytes, line, sizeof line))
    fprintf(out, "%s\n", line);
}
