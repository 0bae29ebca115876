/* site.c - checks a supercomputer's job setup calls for (site.h): GPU-aware Cray MPICH without
 * its GTL, refused before MPI_Init. The driver reads the launcher's environment here on
 * purpose: these are facts about the job, not settings of fdmini. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
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
