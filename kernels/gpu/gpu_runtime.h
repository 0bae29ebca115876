/* gpu_runtime.h - the one file of fdmini that names CUDA: maps the HIP runtime calls, types
 * and device intrinsics the GPU backend uses onto CUDA when the .hip sources are compiled by
 * nvcc, and includes the real HIP runtime otherwise.
 *
 * Why: Debian's ROCm 5.2 HIP headers for the NVIDIA platform (hip/nvidia_detail) do not
 * compile against CUDA 13 (removed cudaDeviceProp fields, new cudaMemPrefetchAsync signature),
 * so the project keeps exactly the subset it uses here. Adding a runtime call to the backend
 * means adding its one-line mapping below.
 *
 * Beyond the runtime, seven project-level helpers hide the remaining vendor differences:
 *   gpu_store_nt(p, v)   non-temporal (streaming) store: __stcs on NVIDIA (st.global.cs,
 *                        evict-first in L2), __builtin_nontemporal_store on AMD (slc/nt bits)
 *   gpu_store_nt2(p, x, y) the same for the aligned pair p[0], p[1] in one 16-byte store
 *   gpu_ldg(p)           read-only load: __ldg on NVIDIA (LDG.CONSTANT), a plain load on AMD
 *   gpu_prefetch_l2(p)   hint: bring the line holding p into L2 without a register (PTX
 *                        prefetch.global.L2, never faults); a no-op on AMD
 *   gpu_shfl_up1/down1(v) the value v of the lane below / above in the warp (wavefront):
 *                        __shfl_up_sync/__shfl_down_sync on NVIDIA, __shfl_up/__shfl_down on AMD
 *   gpu_stream_value_ops_attribute(yes, dev) whether streams can wait for values in memory:
 *                        hipDeviceAttributeCanUseStreamWaitValue; 1 on CUDA 12+ (always there)
 *   gpu_range_push/pop   profiler ranges: NVTX (header-only nvtx3) under CUDA, roctx under HIP
 *                        when CMake found it (FDMINI_HAVE_ROCTX), otherwise no-ops. CMake, not
 *                        this header, decides: FDMINI_HAVE_NVTX / FDMINI_HAVE_ROCTX.
 */
#ifndef FDMINI_GPU_RUNTIME_H
#define FDMINI_GPU_RUNTIME_H

#if defined(__CUDACC__) && !defined(__HIP__)
/* ---------------------------------------------------------------- CUDA (nvcc) */
#include <cuda.h> /* stream memory operations (driver API) */
#include <cuda_runtime.h>
#include <stdint.h>
#ifdef FDMINI_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#define FDMINI_GPU_PLATFORM "cuda"

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaMemcpyKind hipMemcpyKind;

#define hipSuccess cudaSuccess
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipStreamDefault cudaStreamDefault
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define hipMemcpyPeerAsync cudaMemcpyPeerAsync
#define hipMemcpyDefault cudaMemcpyDefault
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipDeviceGetByPCIBusId cudaDeviceGetByPCIBusId
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventInterprocess cudaEventInterprocess
/* inter-process memory and events (the node-local halo transport) */
typedef cudaIpcMemHandle_t hipIpcMemHandle_t;
typedef cudaIpcEventHandle_t hipIpcEventHandle_t;
#define hipIpcGetMemHandle cudaIpcGetMemHandle
#define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define hipIpcGetEventHandle cudaIpcGetEventHandle
#define hipIpcOpenEventHandle cudaIpcOpenEventHandle

/* flags set and awaited by streams: the CUDA driver API's stream memory operations (the
 * runtime has none; CMake links CUDA::cuda_driver). CUresult and cudaError_t share the codes
 * these calls return (1 invalid value, 801 not supported). 32-bit operations exist on every
 * device since CUDA 12 (the v1 attribute is deprecated): the attribute reads 1, and
 * be_flags_supported tries one write and one wait. */
#define hipStreamWaitValueGte CU_STREAM_WAIT_VALUE_GEQ
static inline cudaError_t hipStreamWaitValue32(cudaStream_t s, void *p, uint32_t v, unsigned flags, uint32_t mask)
{
  if (mask != 0xffffffffu) return cudaErrorInvalidValue; /* CUDA has no mask */
  return (cudaError_t)cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)p, v, flags);
}
static inline cudaError_t hipStreamWriteValue32(cudaStream_t s, void *p, uint32_t v, unsigned flags)
{
  return (cudaError_t)cuStreamWriteValue32((CUstream)s, (CUdeviceptr)(uintptr_t)p, v, flags);
}
static inline cudaError_t gpu_stream_value_ops_attribute(int *yes, int dev)
{
  (void)dev;
  *yes = 1;
  return cudaSuccess;
}

/* Pinned host memory: hipHostMalloc(p, n, flags) and cudaMallocHost(p, n) differ in arity. */
#define gpuHostAlloc(ptr, bytes) cudaMallocHost((ptr), (bytes))
#define gpuHostFree(ptr) cudaFreeHost(ptr)

template <typename T> __device__ __forceinline__ void gpu_store_nt(T *p, T v) { __stcs(p, v); }
/* non-temporal 16-byte (8 for float) store of the pair x, y at p (aligned to the pair) */
__device__ __forceinline__ void gpu_store_nt2(double *p, double x, double y)
{
  __stcs(reinterpret_cast<double2 *>(p), make_double2(x, y));
}
__device__ __forceinline__ void gpu_store_nt2(float *p, float x, float y)
{
  __stcs(reinterpret_cast<float2 *>(p), make_float2(x, y));
}
template <typename T> __device__ __forceinline__ T gpu_ldg(const T *p) { return __ldg(p); }
__device__ __forceinline__ void gpu_prefetch_l2(const void *p)
{
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
#define GPU_WARP_SIZE 32 /* threads per warp, a compile-time constant for lane arithmetic */
/* the value of lane - 1 / lane + 1 of the warp (all lanes must take part) */
template <typename T> __device__ __forceinline__ T gpu_shfl_up1(T v)
{
  return __shfl_up_sync(0xffffffffu, v, 1);
}
template <typename T> __device__ __forceinline__ T gpu_shfl_down1(T v)
{
  return __shfl_down_sync(0xffffffffu, v, 1);
}

#ifdef FDMINI_HAVE_NVTX
static inline void gpu_range_push(const char *name) { nvtxRangePushA(name); }
static inline void gpu_range_pop(void) { nvtxRangePop(); }
#endif

#else
/* ---------------------------------------------------------------- HIP (ROCm clang) */
#include <hip/hip_runtime.h>
#ifdef FDMINI_HAVE_ROCTX
#include <roctracer/roctx.h>
#endif

#define FDMINI_GPU_PLATFORM "hip"

/* whether hipStreamWaitValue32/hipStreamWriteValue32 work on device dev */
static inline hipError_t gpu_stream_value_ops_attribute(int *yes, int dev)
{
  return hipDeviceGetAttribute(yes, hipDeviceAttributeCanUseStreamWaitValue, dev);
}
#define gpuHostAlloc(ptr, bytes) hipHostMalloc((ptr), (bytes), hipHostMallocDefault)
#define gpuHostFree(ptr) hipHostFree(ptr)

template <typename T> __device__ __forceinline__ void gpu_store_nt(T *p, T v)
{
  __builtin_nontemporal_store(v, p);
}
template <typename T> __device__ __forceinline__ T gpu_ldg(const T *p) { return *p; }
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define GPU_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE /* 64 on gfx90a, 32 on wave32 targets */
#else
#define GPU_WARP_SIZE 64 /* the host pass, which generates no kernel code */
#endif
template <typename T> __device__ __forceinline__ void gpu_store_nt2(T *p, T x, T y)
{
  typedef T pair __attribute__((ext_vector_type(2))); /* HIP's double2 is a class: use the native vector */
  const pair v = {x, y};
  __builtin_nontemporal_store(v, reinterpret_cast<pair *>(p));
}
template <typename T> __device__ __forceinline__ T gpu_shfl_up1(T v) { return __shfl_up(v, 1); }
template <typename T> __device__ __forceinline__ T gpu_shfl_down1(T v) { return __shfl_down(v, 1); }
__device__ __forceinline__ void gpu_prefetch_l2(const void *p) { (void)p; }

#ifdef FDMINI_HAVE_ROCTX
static inline void gpu_range_push(const char *name) { roctxRangePushA(name); }
static inline void gpu_range_pop(void) { roctxRangePop(); }
#endif

#endif

#if !defined(FDMINI_HAVE_NVTX) && !defined(FDMINI_HAVE_ROCTX)
static inline void gpu_range_push(const char *name) { (void)name; }
static inline void gpu_range_pop(void) {}
#endif

#endif
