/* gpu_tuning.h - GPU-backend-only extension of backend.h: the properties of the bound device
 * that the kernel rules use (kernels/gpu/stencil_config.hip) and the kernel sweep prints
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
  size_t smem_per_block; /* shared memory (LDS) one block may use, opt-in included */
} gpu_device_props;

/* Properties of the bound device. Synchronous; needs be_init. */
int gpu_get_device_props(gpu_device_props *p);

/* be_fused_resolve for a device that offers smem_bytes of shared memory per block: the rule's
 * shapes shrink to fit (one column per thread, then fewer threads along y) and a configuration
 * that cannot fit is BE_ERROR. be_fused_resolve passes the bound device's (no limit before
 * be_init). Synchronous. */
int gpu_fused_resolve_within(fd_fused *c, size_t smem_bytes);
/* The shared memory one block of a resolved fused configuration takes. */
size_t gpu_fused_smem_bytes(const fd_fused *c);
/* *per_sm = how many blocks of resolved configuration c (with f, the operator's source term,
 * where has_f) one multiprocessor holds at once, by the runtime's occupancy calculator; with
 * the device's multiprocessors, the wave of be_fused_candidates' one-wave chunks.
 * Synchronous. */
int gpu_fused_blocks_per_sm(const fd_fused *c, int has_f, int *per_sm);

#ifdef __cplusplus
}
#endif
#endif
