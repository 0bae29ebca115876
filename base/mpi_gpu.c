/* mpi_gpu.c - what the MPI library in this process can do with device memory (mpi_gpu.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, OMPI_HAVE_MPI_EXT_ROCM */
#endif

#include "mpi_gpu.h"

int mpi_gpu_cray_value_enables(const char *value) { return value && strcmp(value, "1") == 0; }

int mpi_gpu_is_cray_library(const char *library_version)
{
  return library_version && strstr(library_version, "CRAY MPICH") != NULL;
}

void mpi_library_name(const char *library, char *out, size_t len)
{
  if (!len) return;
  const char *p = library ? library : "";
  size_t n = 0;
  int gap = 0;
  while (*p && (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)))
    p++; /* blank lines too */
  for (; *p && *p != '\n' && *p != '\r' && n + 1 < len; p++) {
    const unsigned char c = (unsigned char)*p;
    if (isspace(c) || iscntrl(c)) {
      gap = 1;
      continue;
    }
    if (gap) {
      if (n + 2 >= len) break; /* no room for the space and the character after it */
      out[n++] = ' ';
      gap = 0;
    }
    out[n++] = (char)c;
  }
  out[n] = '\0';
  if (!n) snprintf(out, len, "unknown");
}

void mpi_library_name_here(char *out, size_t len)
{
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int n = 0;
  if (MPI_Get_library_version(lib, &n) != MPI_SUCCESS) lib[0] = '\0';
  lib[sizeof lib - 1] = '\0';
  mpi_library_name(lib, out, len);
}

int mpi_gpu_is_cray_mpich(void)
{
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int n = 0;
  return MPI_Get_library_version(lib, &n) == MPI_SUCCESS && mpi_gpu_is_cray_library(lib);
}

int mpi_gpu_cray_enabled(const char **value, char *why, size_t len)
{
  const char *v = getenv("MPICH_GPU_SUPPORT_ENABLED");
  if (value) *value = v;
  if (why && len) why[0] = '\0';
  if (!v) return 0;
  if (!mpi_gpu_is_cray_mpich()) {
    if (why && len) {
      char lib[81];
      mpi_library_name_here(lib, sizeof lib);
      snprintf(why, len, "MPICH_GPU_SUPPORT_ENABLED=%.16s ignored: it applies to Cray MPICH only, this MPI is %s",
               v, lib);
    }
    return 0;
  }
  int on = mpi_gpu_cray_value_enables(v);
  if (why && len)
    snprintf(why, len, "MPICH_GPU_SUPPORT_ENABLED=%.16s under Cray MPICH%s", v,
             on ? "" : " (only 1 enables GPU support)");
  return on;
}

int mpi_gpu_aware(const be_info *dev, char *why, size_t why_len)
{
  if (!dev->is_accelerator) {
    snprintf(why, why_len, "fields are in host memory");
    return 1;
  }
  /* Cray MPICH: its variable decides, and nothing else can tell */
  if (mpi_gpu_is_cray_mpich()) {
    int on = mpi_gpu_cray_enabled(NULL, why, why_len);
    if (!why[0]) snprintf(why, why_len, "Cray MPICH without MPICH_GPU_SUPPORT_ENABLED=1");
    return on;
  }
  int is_cuda = strcmp(dev->backend, "cuda") == 0;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (is_cuda) {
    int yes = MPIX_Query_cuda_support();
    snprintf(why, why_len, "MPIX_Query_cuda_support() = %d", yes);
    return yes;
  }
#endif
#if defined(OMPI_HAVE_MPI_EXT_ROCM) && OMPI_HAVE_MPI_EXT_ROCM
  if (!is_cuda) {
    int yes = MPIX_Query_rocm_support();
    snprintf(why, why_len, "MPIX_Query_rocm_support() = %d", yes);
    return yes;
  }
#endif
#if defined(MPICH_NUMVERSION) && (defined(MPIX_GPU_SUPPORT_CUDA) || defined(MPIX_GPU_SUPPORT_HIP))
  {
    /* each backend's constant on its own: MPICH defines MPIX_GPU_SUPPORT_CUDA (and the query)
     * from 3.4, MPIX_GPU_SUPPORT_HIP later */
    int kind = -1;
#ifdef MPIX_GPU_SUPPORT_CUDA
    if (is_cuda) kind = MPIX_GPU_SUPPORT_CUDA;
#endif
#ifdef MPIX_GPU_SUPPORT_HIP
    if (!is_cuda) kind = MPIX_GPU_SUPPORT_HIP;
#endif
    int yes = 0;
    if (kind >= 0 && MPIX_GPU_query_support(kind, &yes) == MPI_SUCCESS) {
      snprintf(why, why_len, "MPIX_GPU_query_support(%s) = %d", is_cuda ? "CUDA" : "HIP", yes);
      return yes != 0;
    }
  }
#endif
  (void)is_cuda;
  snprintf(why, why_len, "this MPI reports no %s support", dev->backend);
  return 0;
}
