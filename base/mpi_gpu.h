/* mpi_gpu.h - what the MPI library in this process can do with device memory, decided in one
 * place for halo/ (whether faces may go to MPI as device pointers) and src/ (site.c: whether
 * MPICH_GPU_SUPPORT_ENABLED asks Cray MPICH for a GTL that is not there), and the library's name
 * as one line of text (the report, --version, the launcher check):
 *   - Cray MPICH takes device pointers only when MPICH_GPU_SUPPORT_ENABLED is 1 (its GTL linked)
 *     and has no query for it; the variable means nothing to any other MPI library (Open MPI,
 *     upstream MPICH, ...), where sites and shell recipes may still export it;
 *   - Open MPI answers through mpi-ext.h (MPIX_Query_cuda_support, MPIX_Query_rocm_support);
 *   - MPICH answers through MPIX_GPU_query_support (since 3.4): the CUDA query needs only
 *     MPIX_GPU_SUPPORT_CUDA, the HIP query MPIX_GPU_SUPPORT_HIP (a later constant), so a
 *     CUDA-aware MPICH whose mpi.h lacks the HIP constant is still recognised.
 * Every function here may be called before MPI_Init (MPI_Get_library_version is, since MPI 3.0)
 * except mpi_gpu_aware, which may query the initialised library. Not Collective. */
#ifndef FDMINI_MPI_GPU_H
#define FDMINI_MPI_GPU_H

#include <stddef.h>

#include "backend.h"

/* Pure: the one rule for the value of MPICH_GPU_SUPPORT_ENABLED under Cray MPICH: 1 when it
 * enables GPU support, which Cray documents as the value "1" (0, the default, disables it);
 * NULL, empty, "0" and any other value: 0. */
int mpi_gpu_cray_value_enables(const char *value);

/* Pure: 1 when the string of MPI_Get_library_version names Cray MPICH ("CRAY MPICH"). */
int mpi_gpu_is_cray_library(const char *library_version);

/* Pure: the name of an MPI library for one line of text, in out[len]: the first non-blank line
 * of its MPI_Get_library_version string (NULL allowed), each run of blanks and control
 * characters (MPICH's "MPICH Version:\t4.0.2", Cray MPICH's "MPI VERSION    : ...") one space,
 * none at either end; cut to len - 1 characters; "unknown" when nothing is left. */
void mpi_library_name(const char *library, char *out, size_t len);

/* mpi_library_name of this process's MPI library (MPI_Get_library_version; "unknown" where it
 * fails). */
void mpi_library_name_here(char *out, size_t len);

/* 1 when this process's MPI library is Cray MPICH (MPI_Get_library_version). */
int mpi_gpu_is_cray_mpich(void);

/* The Cray rule applied to this process: 1 when the MPI library is Cray MPICH and
 * MPICH_GPU_SUPPORT_ENABLED enables GPU support (mpi_gpu_cray_value_enables). One line in
 * why[len] either way when the variable is set (e.g. "MPICH_GPU_SUPPORT_ENABLED=1 under Cray
 * MPICH", or why it is ignored); "" when it is not set. *value (if value) gets the variable's
 * value or NULL. */
int mpi_gpu_cray_enabled(const char **value, char *why, size_t len);

/* 1 when device pointers of this backend may go to MPI (one line in why, either way): host
 * memory always; Cray MPICH by mpi_gpu_cray_enabled; Open MPI and MPICH by their queries;
 * 0 for any other library. */
int mpi_gpu_aware(const be_info *dev, char *why, size_t why_len);

#endif
