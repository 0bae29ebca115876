/* site.h - checks that the way supercomputers set jobs up calls for, made by the driver before
 * they could fail late or obscurely:
 *   - GPU-aware Cray MPICH without its GPU Transport Layer (GTL): with
 *     MPICH_GPU_SUPPORT_ENABLED=1 and no libmpi_gtl_* in the process, Cray MPICH aborts every
 *     rank inside MPI_Init ("GPU_SUPPORT_ENABLED is requested, but GTL library is not
 *     linked"). site_check_gtl refuses that before MPI_Init with one line and exit 2.
 *   - a launcher that started N processes while MPI sees a world of another size (fdmini built
 *     with one MPI library and started by another's launcher: N singletons): site_check_launcher
 *     refuses it after MPI_Init with one line and exit 2 instead of N independent runs.
 *   - --halo-path ipc where every rank sees only its own GPU (select_gpu.sh, Slurm's
 *     --gpus-per-task=1, ROCR/CUDA_VISIBLE_DEVICES per rank; not the launch scripts' default
 *     layout, where every rank sees its node's GPUs): fdmini does not map the memory of a GPU a
 *     rank cannot see, so site_check_ipc refuses the path, with the reason, before any buffer is
 *     allocated.
 */
#ifndef FDMINI_SITE_H
#define FDMINI_SITE_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#include "backend.h"
#include "bind.h"
#include "options.h"

/* Before MPI_Init. When MPICH_GPU_SUPPORT_ENABLED enables GPU support by the one rule of
 * base/mpi_gpu.h (the MPI library is Cray MPICH, per MPI_Get_library_version, callable before
 * MPI_Init, and the value is 1) and no libmpi_gtl_* library is loaded into this process: prints
 * one error line on `err` from the launcher's rank 0 (the first of OMPI_COMM_WORLD_RANK,
 * PMI_RANK, PMIX_RANK, SLURM_PROCID that is set is 0, or none is set) and returns
 * FD_ERR_USAGE, which every rank returns alike (they see the same environment; the other ranks
 * 0.3 s later, so that a launcher that kills the job at the first failed rank lets the line
 * out). FD_OK
 * otherwise: under any other MPI library the variable means nothing. Not Collective (there is
 * no communicator yet). */
int site_check_gtl(FILE *err);

/* The process count a launcher set up for its own processes, read before MPI_Init:
 *   size   the job's processes: OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), PMI_SIZE (MPICH's
 *          Hydra mpiexec, srun --mpi=pmi2), SLURM_STEP_NUM_TASKS (srun, only inside a step:
 *          SLURM_STEP_ID set), the first one set; 0 when none is (a singleton, salloc or sbatch
 *          without srun: an allocation's SLURM_NTASKS is never read);
 *   local  the processes on this node: OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS (Hydra); 0
 *          when none is set. */
typedef struct {
  int size, local;
  char size_var[32], local_var[32];
  int rank_zero; /* this process is the launcher's rank 0 (or no launcher says) */
} site_launcher;
void site_launcher_read(site_launcher *l);

/* Pure: 1 and one line in why[len] when l disagrees with a world of world_size processes (size
 * set and different, or local set and larger): the classic mix of two MPI libraries on one
 * machine, where every process is a singleton world of its own. library is the string of
 * MPI_Get_library_version (its first non-blank line is named, at most 120 characters, each run
 * of blanks and control characters one space: the line holds no tab). 0 otherwise. */
int site_launcher_mismatch(const site_launcher *l, int world_size, const char *library, char *why,
                           size_t len);

/* After MPI_Init, with l read before it: on a mismatch, prints "fdmini: error: ..." on `err`
 * from the launcher's rank 0 and returns FD_ERR_USAGE on every process (each sees the same
 * variables and its own world); FD_OK otherwise. Not Collective (a mismatched world cannot
 * agree on anything). */
int site_check_launcher(const site_launcher *l, MPI_Comm world, FILE *err);

/* 1 and the library's file name in name[len] when a libmpi_gtl_* is loaded into this process
 * (dl_iterate_phdr); 0 otherwise. Not Collective. */
int site_gtl_loaded(char *name, size_t len);

/* One rank's device, as site_ipc_refusal sees it. */
typedef struct {
  int node;          /* fd_node.host: the same for the ranks of one real node */
  char host[64];
  char pci[32];      /* be_info.pci_bus_id; "" on the host backend */
  int device_count;  /* devices this rank sees */
} site_gpu;

/* Pure: given the ranks of one host, whether the IPC halo path is impossible because every rank
 * sees exactly one device and the ranks drive more than one distinct GPU (so neighbours on
 * different GPUs cannot reach each other's memory). 1 and one line in why[len] then; 0
 * otherwise (one GPU shared by every rank, or ranks that see several GPUs: halo_create decides
 * per face). Not Collective. */
int site_ipc_refusal(const site_gpu *ranks, int n, char *why, size_t len);

/* With --halo-path ipc on a GPU backend: gathers every rank's device (node from bind_node) and
 * refuses, agreed on every rank (FD_ERR_USAGE, message from the lowest failing rank), where
 * site_ipc_refusal says the path is impossible on a node. FD_OK otherwise, and for every other
 * --halo-path. Collective over comm. */
int site_check_ipc(MPI_Comm comm, const fd_node *node, const fd_options *o, const be_info *dev);

/* A file of at least this many bytes is "large" for the striping advice (1 GiB). */
#define SITE_LUSTRE_LARGE (1ULL << 30)

/* The stripe count of the default layout of Lustre directory dir (`lfs getstripe -d`): 1 means
 * one OST; 0 for a composite (progressive) layout, which grows its striping with the file; -1
 * when lfs cannot tell (no lfs, not Lustre). Not Collective. */
int site_lustre_stripe_count(const char *dir);

/* Pure: 1 and one "fdmini: advice: ..." line in line[len] when `what` (e.g. "--dump") writes a
 * shared file of `bytes` (at least SITE_LUSTRE_LARGE) into dir whose file system has statfs
 * magic fs_magic (Lustre's) and whose default layout has stripe_count 1; 0 otherwise. */
int site_lustre_advice(const char *what, const char *dir, long fs_magic, int stripe_count,
                       unsigned long long bytes, char *line, size_t len);

/* Prints site_lustre_advice's line on `out` for dir (statfs, site_lustre_stripe_count); nothing
 * when dir is not on Lustre, is striped, or the file is small. Not Collective: call it on one
 * rank. */
void site_check_lustre(const char *what, const char *dir, unsigned long long bytes, FILE *out);

#endif
