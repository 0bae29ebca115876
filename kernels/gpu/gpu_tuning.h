/* gpu_tuning.h - GPU-backend-only extension of backend.h: the properties of the bound device
 * that the kernel rules use (kernels/gpu/stencil_gpu.hip) and the kernel sweep prints
 * (bench/kernel_sweep.c). src/ and halo/ never include it. */
#ifndef FDMINI_GPU_TUNING_H
#define FDMINI_GPU_TUNING_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int sm_count;         /* multiprocessors (CUs on AMD) */
  size_t l2_bytes;      /* L2 cache */
  int max_threads_per_sm;
  int warp_size;
} gpu_device_props;

/* Properties of the bound device. Synchronous; needs be_init. */
int gpu_get_device_props(gpu_device_props *p);

#ifdef __cplusplus
}
#endif
#endif
