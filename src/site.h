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
#include "bind.h"
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

/* One rank's device, as site_ipc_refusal sees it. */
typedef struct {
  int node;          /* fd_node.id: the same for the ranks of one node */
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

#endif
