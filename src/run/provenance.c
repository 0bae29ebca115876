/* provenance.c - what a run ran on and with (provenance.h): build, MPI library, GPU runtime and
 * driver, Slurm job, the MPI-related environment, start time. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "backend.h"
#include "fd_error.h"
#include "mpi_gpu.h"
#include "provenance.h"

extern char **environ;

void prov_start(fd_provenance *p)
{
  memset(p, 0, sizeof *p);
  time_t now = time(NULL);
  struct tm utc;
  if (gmtime_r(&now, &utc)) strftime(p->start_time, sizeof p->start_time, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

static int starts_with(const char *s, const char *prefix)
{
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

int prov_env_selected(const char *name)
{
  static const char *const launcher[] = {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix",
                                         "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint"};
  for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++)
    if (starts_with(name, launcher[i])) return 0;
  return starts_with(name, "MPICH_") || starts_with(name, "OMPI_MCA_") ||
         starts_with(name, "UCX_") || starts_with(name, "FI_");
}

int prov_env_launcher(const char *name)
{
  static const char *const ompi[] = {"orte_", "ess", "pmix", "initial_wdir", "shmem_RUNTIME_QUERY_hint",
                                     "mpi_oversubscribe", "rmaps_", "odls_", "plm_", "ras_", "state_",
                                     "errmgr_", "routed_", "oob_", "rml_", "grpcomm_", "iof_", "filem_",
                                     "schizo_", "rtc_"};
  if (!starts_with(name, "OMPI_MCA_")) return 0;
  for (size_t i = 0; i < sizeof ompi / sizeof ompi[0]; i++)
    if (starts_with(name + strlen("OMPI_MCA_"), ompi[i])) return 1;
  return 0;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The selected variables of environ, sorted by name, into p. */
static void collect_env(fd_provenance *p)
{
  size_t n = 0, m = 0;
  for (char **e = environ; e && *e; e++) n++;
  const char **sel = malloc((n ? n : 1) * sizeof *sel);
  if (!sel) return;
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || (size_t)(eq - *e) >= PROV_ENV_NAME) continue;
    char name[PROV_ENV_NAME];
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    /* names go into JSON keys unescaped: letters, digits and underscores only */
    if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
      continue;
    if (prov_env_selected(name)) sel[m++] = *e;
  }
  qsort(sel, m, sizeof *sel, cmp_names);
  for (size_t i = 0; i < m; i++) {
    if (p->nenv == PROV_ENV_MAX) {
      p->nenv_left_out++;
      continue;
    }
    const char *eq = strchr(sel[i], '=');
    memcpy(p->env_name[p->nenv], sel[i], (size_t)(eq - sel[i]));
    p->env_name[p->nenv][eq - sel[i]] = '\0';
    fd_copy_str(p->env_value[p->nenv], PROV_ENV_VALUE, eq + 1);
    p->nenv++;
  }
  free(sel);
}

int prov_collect(fd_provenance *p)
{
  mpi_library_name_here(p->mpi_library, sizeof p->mpi_library);
  if (be_runtime_versions(p->gpu_runtime, sizeof p->gpu_runtime, p->gpu_driver,
                          sizeof p->gpu_driver) != BE_OK)
    return fd_set_error(FD_ERR_RUNTIME, "be_runtime_versions failed: %s", be_error_message());
  const char *job = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_JOB_NODELIST");
  fd_copy_str(p->slurm_job_id, sizeof p->slurm_job_id, job ? job : "");
  fd_copy_str(p->slurm_nodelist, sizeof p->slurm_nodelist, nodes ? nodes : "");
  collect_env(p);
  return FD_OK;
}

void prov_print(FILE *out, const fd_provenance *p)
{
  fprintf(out, "  built       %s, %s, %s; hwloc %s; GTL %s\n", FDMINI_COMPILER,
          FDMINI_BUILD_TYPE, FDMINI_BUILD_FLAGS, FDMINI_HWLOC_VERSION, FDMINI_GTL_STATUS);
  fprintf(out, "  MPI         %s\n", p->mpi_library);
  fprintf(out, "  GPU         runtime %s, driver %s\n", p->gpu_runtime, p->gpu_driver);
  if (p->slurm_job_id[0])
    fprintf(out, "  job         started %s, Slurm job %s on %s\n", p->start_time, p->slurm_job_id,
            p->slurm_nodelist[0] ? p->slurm_nodelist : "?");
  else
    fprintf(out, "  job         started %s, not under Slurm\n", p->start_time);
  /* the user's settings only: what the launcher set for its ranks is in the JSON record */
  int user = 0;
  fprintf(out, "  MPI env    ");
  for (int i = 0; i < p->nenv; i++)
    if (!prov_env_launcher(p->env_name[i])) {
      fprintf(out, " %s=%s", p->env_name[i], p->env_value[i]);
      user++;
    }
  if (!user) fprintf(out, " none of MPICH_*, OMPI_MCA_*, UCX_*, FI_* set by the user");
  if (p->nenv_left_out) fprintf(out, " (and %d more)", p->nenv_left_out);
  fputc('\n', out);
}

void prov_print_version(FILE *out)
{
  char lib[256];
  mpi_library_name_here(lib, sizeof lib);
  fprintf(out, "fdmini %s (commit %s)\n", FDMINI_VERSION, fdmini_git_commit);
  fprintf(out, "  backend     %s, %s precision\n", FDMINI_BACKEND_NAME, FDMINI_REAL_NAME);
  fprintf(out, "  GPU targets %s\n", FDMINI_GPU_ARCHS);
  fprintf(out, "  built       %s, %s\n", FDMINI_COMPILER, FDMINI_BUILD_TYPE);
  fprintf(out, "  MPI         %s\n", lib);
}

void prov_json(fd_json *j, const fd_provenance *p)
{
  json_str(j, "start_time", p->start_time);
  json_str(j, "compiler", FDMINI_COMPILER);
  json_str(j, "build_type", FDMINI_BUILD_TYPE);
  json_str(j, "build_flags", FDMINI_BUILD_FLAGS);
  json_str(j, "hwloc", FDMINI_HWLOC_VERSION);
  json_str(j, "gtl", FDMINI_GTL_STATUS);
  json_str(j, "mpi_library", p->mpi_library);
  json_str(j, "gpu_runtime", p->gpu_runtime);
  json_str(j, "gpu_driver", p->gpu_driver);
  if (p->slurm_job_id[0]) json_str(j, "slurm_job_id", p->slurm_job_id);
  else json_null(j, "slurm_job_id");
  if (p->slurm_nodelist[0]) json_str(j, "slurm_nodelist", p->slurm_nodelist);
  else json_null(j, "slurm_nodelist");
  json_object(j, "mpi_env");
  for (int i = 0; i < p->nenv; i++) json_str(j, p->env_name[i], p->env_value[i]);
  json_end(j);
  json_object(j, "mpi_env_user");
  for (int i = 0; i < p->nenv; i++)
    if (!prov_env_launcher(p->env_name[i])) json_str(j, p->env_name[i], p->env_value[i]);
  json_end(j);
}
