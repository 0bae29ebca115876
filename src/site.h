/* site.h - checks that the way supercomputers set jobs up calls for, made by the driver before
 * they could fail late or obscurely:
 *   - GPU-aware Cray MPICH without its GPU Transport Layer (GTL): with
 *     MPICH_GPU_SUPPORT_ENABLED=1 and no libmpi_gtl_* in the process, Cray MPICH aborts every
 *     rank inside MPI_Init ("GPU_SUPPORT_ENABLED is requested, but GTL library is not
 *     linked"). site_check_gtl refuses that before MPI_Init with one line and exit 2.
 *   - --halo-path ipc where every rank sees only its own GPU (LUMI-G's select_gpu.sh, Frontier's
 *     --gpus-per-task=1, ROCR/CUDA_VISIBLE_DEVICES per rank): a rank cannot map the memory of a
 *     GPU it cannot see, so the IPC path cannot work; site_check_ipc refuses it, with the reason,
 *     before any buffer is allocated.
 */
#ifndef FDMINI_SITE_H
#define FDMINI_SITE_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#include "backend.h"
#include "options.h"

/* Before MPI_Init. When MPICH_GPU_SUPPORT_ENABLED asks for GPU support (set, not "0") and no
 * libmpi_gtl_* library is loaded into this process, while the MPI library is Cray MPICH
 * (MPI_Get_library_version, callable before MPI_Init) or this binary was configured without the
 * GTL (FDMINI_GTL_WITHOUT): prints one error line on `err` from the launcher's rank 0 (the
 * first of SLURM_PROCID, PMI_RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK that is set is 0, or none is
 * set) and returns FD_ERR_USAGE, which every rank returns alike (they see the same environment).
 * FD_OK otherwise. Not Collective (there is no communicator yet). */
int site_check_gtl(FILE *err);

/* 1 and the library's file name in name[len] when a libmpi_gtl_* is loaded into this process
 * (dl_iterate_phdr); 0 otherwise. Not Collective. */
int site_gtl_loaded(char *name, size_t len);

#endif
