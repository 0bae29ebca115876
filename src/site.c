/* site.c - checks a supercomputer's job setup calls for (site.h): GPU-aware Cray MPICH without
 * its GTL, refused before MPI_Init; the IPC halo path where each rank sees only its own GPU,
 * refused before anything is allocated. The driver reads the launcher's environment here on
 * purpose: these are facts about the job, not settings of fdmini. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "fd_error.h"
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

/* 1 when this process is the job's rank 0 as the launcher numbers it, or when no launcher
 * variable says (a singleton, or an unknown launcher: better one line too many than none). */
static int launcher_rank_zero(void)
{
  static const char *const vars[] = {"SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && v[0]) return strcmp(v, "0") == 0;
  }
  return 1;
}

int site_check_gtl(FILE *err)
{
  const char *want = getenv("MPICH_GPU_SUPPORT_ENABLED");
  if (!want || !want[0] || strcmp(want, "0") == 0) return FD_OK;
  char gtl[256];
  if (site_gtl_loaded(gtl, sizeof gtl)) return FD_OK;
  /* MPI_Get_library_version may be called before MPI_Init (MPI 3.0) */
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  int cray = MPI_Get_library_version(lib, &len) == MPI_SUCCESS && strstr(lib, "CRAY MPICH") != NULL;
  if (!cray && !FDMINI_GTL_WITHOUT) return FD_OK; /* another MPI: the variable means nothing */
  if (launcher_rank_zero())
    fprintf(err, "fdmini: error: MPICH_GPU_SUPPORT_ENABLED=%s asks Cray MPICH for GPU-aware MPI, "
                 "but this binary has no GPU Transport Layer (no libmpi_gtl_* loaded; GTL %s), so "
                 "MPI_Init would abort every rank; set MPICH_GPU_SUPPORT_ENABLED=0 and run with "
                 "--mpi-gpu staged, or build with the GTL (README: LUMI-G and Frontier)\n",
            want, FDMINI_GTL_STATUS);
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
                       "device, e.g. %s and %s: ROCR_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES per "
                       "rank, select_gpu.sh or --gpus-per-task=1), so ranks cannot map each "
                       "other's GPU memory; use --halo-path auto or mpi (GPU-aware MPI moves the "
                       "faces)",
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
  me.node = node->id;
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
    char why[512];
    /* the node's first rank speaks for it: one message per node, the lowest node's wins */
    if (rank == node->id && site_ipc_refusal(all, m, why, sizeof why))
      err = fd_set_error(FD_ERR_USAGE, "%s", why);
  }
  free(all);
  return fd_agree(comm, err);
}
