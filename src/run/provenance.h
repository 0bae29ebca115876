/* provenance.h - what a run ran on and with, for the report header and the JSON record, so
 * that a scaling study can say which software stack produced each number:
 *   build     compiler ids and versions, build type, flags (generated/fdmini_config.h, from
 *             CMake), hwloc version, the GTL of Cray MPICH (linked or not), git commit
 *   MPI       the first line of MPI_Get_library_version, one line of text (mpi_library_name)
 *   GPU       the runtime and driver versions (be_runtime_versions; "none" on the host backend)
 *   job       start time (UTC), SLURM_JOB_ID and SLURM_JOB_NODELIST where set
 *   MPI env   the environment variables that change how MPI behaves: every MPICH_* (Cray
 *             MPICH, e.g. MPICH_GPU_SUPPORT_ENABLED), OMPI_MCA_* (Open MPI), UCX_* and FI_*
 *             (the transports under them), names and values. The launcher's own bookkeeping
 *             that mpirun exports to every rank (OMPI_MCA_orte_*, OMPI_MCA_ess*, OMPI_MCA_pmix*,
 *             OMPI_MCA_initial_wdir, OMPI_MCA_shmem_RUNTIME_QUERY_hint) is left out: it says
 *             nothing about the run's settings and changes with every launch. The report's
 *             line lists only what the user set (prov_env_launcher: what a launcher sets for
 *             the processes it starts is left out of it; the JSON record keeps both).
 * The driver (src/) reads the environment here on purpose: these are facts about the run, not
 * settings of fdmini. Every rank collects its own; rank 0's go into the report (every rank of a
 * job normally sees the same environment and libraries).
 *
 * Use (main.c):
 *     fd_provenance prov;
 *     prov_start(&prov);                 // first thing in main: the start time
 *     MPI_Init_thread(...); ... be_init
 *     prov_collect(&prov);               // Not Collective
 *     // rank 0: prov_print(stdout, &prov) in the report header, prov_json(&j, &prov)
 */
#ifndef FDMINI_PROVENANCE_H
#define FDMINI_PROVENANCE_H

#include <stdio.h>

#include "json.h"

enum { PROV_ENV_MAX = 64, PROV_ENV_NAME = 64, PROV_ENV_VALUE = 200 };

typedef struct {
  char start_time[32];      /* "2026-11-30T12:00:00Z", when main started */
  char mpi_library[256];    /* mpi_library_name: its first line, blanks as single spaces */
  char gpu_runtime[96];     /* be_runtime_versions */
  char gpu_driver[160];
  char slurm_job_id[32];    /* "" when SLURM_JOB_ID is not set */
  char slurm_nodelist[256]; /* "" when SLURM_JOB_NODELIST is not set; "..." when cut */
  int nenv;                 /* variables recorded (at most PROV_ENV_MAX, sorted by name) */
  int nenv_left_out;        /* selected variables beyond PROV_ENV_MAX */
  char env_name[PROV_ENV_MAX][PROV_ENV_NAME];
  char env_value[PROV_ENV_MAX][PROV_ENV_VALUE]; /* "..." at the end when cut */
} fd_provenance;

/* Zeroes *p and records the start time. Call first in main (before MPI_Init). */
void prov_start(fd_provenance *p);

/* Fills the rest: MPI library (MPI_Get_library_version), GPU runtime and driver
 * (be_runtime_versions, so after be_init), Slurm job, MPI environment. Returns FD_OK, or
 * FD_ERR_RUNTIME when a backend call failed (message set). Not Collective. */
int prov_collect(fd_provenance *p);

/* 1 when an environment variable of this name is recorded (see the header comment). Pure. */
int prov_env_selected(const char *name);

/* 1 when a launcher sets the variable `name` for the processes it starts, whatever the user
 * set: the rule of the report's `MPI env` line, which lists only the user's (the user's shell,
 * module or job script, or the launcher's command line: `mpirun --mca btl ...`, `-x NAME`).
 * Open MPI's mpirun and orted export to every rank their bookkeeping (OMPI_MCA_orte_*, _ess*,
 * _pmix*, _initial_wdir, _shmem_RUNTIME_QUERY_hint) and their verdict on the node
 * (OMPI_MCA_mpi_oversubscribe, set by every launch), and pass on the parameters of the
 * frameworks only the launcher runs, which place and start the ranks (OMPI_MCA_rmaps_*: where
 * `--oversubscribe` lands, _odls_*, _plm_*, _ras_*, _state_*, _errmgr_*, _routed_*, _oob_*,
 * _rml_*, _grpcomm_*, _iof_*, _filem_*, _schizo_*, _rtc_*): none of them changes how the
 * ranks' MPI moves data. Slurm's srun (PMIx) exports OMPI_MCA_orte_precondition_transports
 * (above); MPICH's Hydra exports nothing of MPICH_*, OMPI_MCA_*, UCX_*, FI_*. Pure. */
int prov_env_launcher(const char *name);

/* The commit of the source built (git describe, "-dirty" where the tree differed, or
 * FDMINI_COMMIT), at most 47 characters: generated/fdmini_commit.c, written at every build
 * (tools/cmake/FdminiCommit.cmake). */
extern const char fdmini_git_commit[];

/* "fdmini VERSION (commit C)" and what the binary is: backend, precision, GPU targets, the
 * build, the MPI library (MPI_Get_library_version: callable before MPI_Init). Not Collective. */
void prov_print_version(FILE *out);

/* The report header's provenance lines ("  built ...", "  MPI ...", "  GPU ...", "  job ...",
 * "  MPI env ..."). Not Collective. */
void prov_print(FILE *out, const fd_provenance *p);

/* Members of the open JSON object j: start_time, compiler, build_type, build_flags, hwloc, gtl,
 * mpi_library, gpu_runtime, gpu_driver, slurm_job_id and slurm_nodelist (null when not under
 * Slurm), mpi_env {name: value}, mpi_env_user {name: value} (those of mpi_env that
 * prov_env_launcher leaves to the user: the report's line). Not Collective. */
void prov_json(fd_json *j, const fd_provenance *p);

#endif
