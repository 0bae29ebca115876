/* gpu_runtime.h - the one file of fdmini that names CUDA: maps the HIP runtime calls, types
 * and device intrinsics the GPU backend uses onto CUDA when the .hip sources are compiled by
 * nvcc, and includes the real HIP runtime otherwise.
 *
 * Why: Debian's ROCm 5.2 HIP headers for the NVIDIA platform (hip/nvidia_detail) do not
 * compile against CUDA 13 (removed cudaDeviceProp fields, new cudaMemPrefetchAsync signature),
 * so the project keeps exactly the subset it uses here. Adding a runtime call to the backend
 * means adding its one-line mapping below.
 *
 * Beyond the runtime, a few project-level helpers hide the remaining vendor differences:
 *   gpu_store_nt(p, v)   non-temporal (streaming) store: __stcs on NVIDIA (st.global.cs,
 *                        evict-first in L2), __builtin_nontemporal_store on AMD (slc/nt bits)
 *   gpu_store_nt2(p, x, y) the same for the aligned pair p[0], p[1] in one 16-byte store
 *   gpu_ldg(p)           read-only load: __ldg on NVIDIA (LDG.CONSTANT), a plain load on AMD
 *   gpu_ld_shared_l2(p)  load of data another process wrote in this launch: __ldcg on NVIDIA
 *                        (from L2), a plain load on AMD
 *   gpu_ld_sys(p), gpu_st_sys(p, v)  relaxed 32-bit load and store at system scope, for words
 *                        that kernels of other processes, on this device or a peer, write or
 *                        poll: ld/st.relaxed.sys on NVIDIA, __hip_atomic_load/store with
 *                        __HIP_MEMORY_SCOPE_SYSTEM on AMD (integer: float atomics on
 *                        fine-grained memory do nothing over AMD's fabric)
 *   gpu_acquire_system() after reading a word a peer set: the reads after it see what the peer
 *                        wrote before it: __threadfence_system on NVIDIA, an acquire fence at
 *                        system scope on AMD (buffer_invl2 and the L1's invalidate; without
 *                        the L2 writeback a full fence adds)
 *   GPU_ACQUIRE_ONCE     1 where a system-scope acquire also writes L2 back (AMD, LLVM's gfx90a
 *                        lowering): the signalled launch takes one, not one per block
 *   gpu_push_system()    after stores through a peer's IPC mapping: nothing on NVIDIA (they are
 *                        not cached on the way), __threadfence_system on AMD (ROCm maps the
 *                        peer's memory coarse-grained: the stores can stay in this device's L2
 *                        until written back, which the fence's buffer_wbl2 does)
 *   gpu_wall_ticks()     a clock that runs at gpu_wall_hz() ticks per second whatever the
 *                        clock of the cores: %globaltimer (ns) on NVIDIA, wall_clock64() on AMD
 *                        (s_memrealtime, 100 MHz; hipDeviceAttributeWallClockRate from ROCm 5.3)
 *   gpu_store2(p, x, y)  plain 16-byte (8 for float) store of the aligned pair p[0], p[1]
 *   gpu_store_keep(p, v), gpu_store_keep2(p, x, y)  the same stores asking L2 to keep the
 *                        line for the next pass: an evict-last cache hint on NVIDIA
 *                        (st.global.L2::cache_hint, sm_80 on), plain stores on AMD
 *   GPU_REGISTER_CAP(n)  a kernel may use up to n registers per thread: __maxnreg__ on NVIDIA
 *                        (ptxas otherwise caps some kernels lower and spills), launch bounds
 *                        of 512 threads on AMD
 *   gpu_shfl_up1/down1(v) the value v of the lane below / above in the warp (wavefront):
 *                        __shfl_up_sync/__shfl_down_sync on NVIDIA, __shfl_up/__shfl_down on AMD;
 *                        the test build FDMINI_EMULATE_WAVE64 gives NVIDIA 64-lane groups
 *   GPU_SMEM_PER_BLOCK(prop) the shared memory (LDS) one block may use: the opt-in maximum
 *                        on NVIDIA (more than the default 48 KiB), sharedMemPerBlock on AMD;
 *                        GPU_STATIC_SMEM: static shared memory a kernel adds to its dynamic
 *                        share (the test build's 64-lane exchange)
 *   gpuHostAllocShared(p, n) pinned host memory kernels load and store at the host's address
 *                        while the host polls or sets it: cudaHostAllocMapped on NVIDIA,
 *                        hipHostMallocMapped | hipHostMallocCoherent (fine-grained) on AMD
 *   gpu_mps_enabled(dev) whether this process's contexts on device dev are shared through MPS:
 *                        1 or 0 on NVIDIA (cudaDevAttrMpsEnabled), -1 where the runtime does
 *                        not say, and on AMD, which has no MPS (be_info.mps)
 *   GPU_EAGER_LOADING_VAR, _VALUE  the environment setting that makes the runtime load every
 *                        kernel at start-up: CUDA_MODULE_LOADING=EAGER, ROCm's
 *                        HIP_ENABLE_DEFERRED_LOADING=0 (be_preinit)
 *   gpu_range_push/pop   profiler ranges: NVTX (header-only nvtx3) under CUDA, roctx under HIP
 *                        when CMake found it (FDMINI_HAVE_ROCTX), otherwise no-ops. CMake, not
 *                        this header, decides: FDMINI_HAVE_NVTX / FDMINI_HAVE_ROCTX.
 */
#ifndef FDMINI_GPU_RUNTIME_H
#define FDMINI_GPU_RUNTIME_H

#if defined(__CUDACC__) && !defined(__HIP__)
/* ---------------------------------------------------------------- CUDA (nvcc) */
#include <cuda.h> /* the driver API's types (stream memory operations): no link to libcuda */
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
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpy cudaMemcpy
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
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
#define hipDeviceGetByPCIBusId cudaDeviceGetByPCIBusId
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventQuery cudaEventQuery
#define hipErrorNotReady cudaErrorNotReady
#define hipStreamQuery cudaStreamQuery
/* graphs through stream capture */
typedef cudaGraph_t hipGraph_t;
typedef cudaGraphExec_t hipGraphExec_t;
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
/* graphs run their kernels at the priority of the stream each was captured from (the halo
 * stream's work stays ahead of the interior's inside one graph), not the launch stream's */
#define GPU_GRAPH_INSTANTIATE_FLAGS cudaGraphInstantiateFlagUseNodePriority
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy
/* inter-process memory (the node-local halo transport) */
typedef cudaIpcMemHandle_t hipIpcMemHandle_t;
#define hipIpcGetMemHandle cudaIpcGetMemHandle
#define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
/* flags set and awaited by streams (stream memory operations): the CUDA driver API has them,
 * the runtime none. Found once through cudaGetDriverEntryPointByVersion (a runtime call: no
 * link to libcuda); CUresult and cudaError_t share the codes these calls return. */
#define hipStreamWaitValueEq CU_STREAM_WAIT_VALUE_EQ
typedef CUresult (*gpu_cu_write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*gpu_cu_wait32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static inline cudaError_t gpu_driver_entry(const char *name, void **fn)
{
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found);
  if (e == cudaSuccess && (found != cudaDriverEntryPointSuccess || !*fn)) e = cudaErrorNotSupported;
  return e;
}
static inline cudaError_t hipStreamWriteValue32(cudaStream_t s, void *p, uint32_t v, unsigned flags)
{
  static gpu_cu_write32_fn fn = NULL;
  if (!fn) {
    cudaError_t e = gpu_driver_entry("cuStreamWriteValue32", (void **)&fn);
    if (e != cudaSuccess) return e;
  }
  return (cudaError_t)fn((CUstream)s, (CUdeviceptr)(uintptr_t)p, v, flags);
}
static inline cudaError_t hipStreamWaitValue32(cudaStream_t s, void *p, uint32_t v, unsigned flags, uint32_t mask)
{
  static gpu_cu_wait32_fn fn = NULL;
  if (mask != 0xffffffffu) return cudaErrorInvalidValue; /* CUDA has no mask */
  if (!fn) {
    cudaError_t e = gpu_driver_entry("cuStreamWaitValue32", (void **)&fn);
    if (e != cudaSuccess) return e;
  }
  return (cudaError_t)fn((CUstream)s, (CUdeviceptr)(uintptr_t)p, v, flags);
}

/* Pinned host memory: hipHostMalloc(p, n, flags) and cudaMallocHost(p, n) differ in arity. */
#define GPU_SMEM_PER_BLOCK(prop) ((size_t)(prop).sharedMemPerBlockOptin)
#define gpuHostAlloc(ptr, bytes) cudaMallocHost((ptr), (bytes))
#define gpuHostFree(ptr) cudaFreeHost(ptr)
/* pinned host memory kernels load and store at the host's address (unified addressing) */
#define gpuHostAllocShared(ptr, bytes) cudaHostAlloc((ptr), (bytes), cudaHostAllocMapped)
/* the environment variable that makes the runtime load every kernel at start-up, and its value */
#define GPU_EAGER_LOADING_VAR "CUDA_MODULE_LOADING"
#define GPU_EAGER_LOADING_VALUE "EAGER"

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
/* a load of memory another process's kernel wrote during this launch (the signalled exchange):
 * from L2, past the SM's own cache */
template <typename T> __device__ __forceinline__ T gpu_ld_shared_l2(const T *p) { return __ldcg(p); }
__device__ __forceinline__ uint32_t gpu_ld_sys(const uint32_t *p)
{
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void gpu_st_sys(uint32_t *p, uint32_t v)
{
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned long long gpu_wall_ticks()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
static inline double gpu_wall_hz(void) { return 1e9; }
/* cudaDevAttrMpsEnabled is attribute 133 (driver_types.h names it in CUDA 13); a runtime that
 * does not know it answers an error: not known */
#if CUDART_VERSION >= 13000
static_assert(cudaDevAttrMpsEnabled == 133, "cudaDevAttrMpsEnabled moved");
#endif
static inline int gpu_mps_enabled(int dev)
{
  int on = 0;
  if (cudaDeviceGetAttribute(&on, (cudaDeviceAttr)133, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return on != 0;
}
__device__ __forceinline__ void gpu_push_system() {}
__device__ __forceinline__ void gpu_acquire_system() { __threadfence_system(); }
#define GPU_ACQUIRE_ONCE 0
#define GPU_REGISTER_CAP(n) __maxnreg__(n)
/* plain 16-byte (8 for float) store of the pair x, y at p (aligned to the pair) */
__device__ __forceinline__ void gpu_store2(double *p, double x, double y)
{
  *reinterpret_cast<double2 *>(p) = make_double2(x, y);
}
__device__ __forceinline__ void gpu_store2(float *p, float x, float y)
{
  *reinterpret_cast<float2 *>(p) = make_float2(x, y);
}
/* Stores whose lines L2 evicts after lines of normal priority (createpolicy evict_last: needs
 * no set-aside of persisting lines, which a process under MPS may not make). */
__device__ __forceinline__ unsigned long long gpu_l2_keep_policy()
{
  unsigned long long q;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(q));
  return q;
}
__device__ __forceinline__ void gpu_store_keep(double *p, double v)
{
  const unsigned long long q = gpu_l2_keep_policy();
  asm volatile("st.global.L2::cache_hint.f64 [%0], %1, %2;" ::"l"(p), "d"(v), "l"(q) : "memory");
}
__device__ __forceinline__ void gpu_store_keep(float *p, float v)
{
  const unsigned long long q = gpu_l2_keep_policy();
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(p), "f"(v), "l"(q) : "memory");
}
__device__ __forceinline__ void gpu_store_keep2(double *p, double x, double y)
{
  const unsigned long long q = gpu_l2_keep_policy();
  asm volatile("st.global.L2::cache_hint.v2.f64 [%0], {%1, %2}, %3;" ::"l"(p), "d"(x), "d"(y), "l"(q)
               : "memory");
}
__device__ __forceinline__ void gpu_store_keep2(float *p, float x, float y)
{
  const unsigned long long q = gpu_l2_keep_policy();
  asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;" ::"l"(p), "f"(x), "f"(y), "l"(q)
               : "memory");
}
#ifndef FDMINI_EMULATE_WAVE64
#define GPU_WARP_SIZE 32 /* threads per warp, a compile-time constant for lane arithmetic */
#define GPU_STATIC_SMEM 0
/* the value of lane - 1 / lane + 1 of the warp (all lanes must take part) */
template <typename T> __device__ __forceinline__ T gpu_shfl_up1(T v)
{
  return __shfl_up_sync(0xffffffffu, v, 1);
}
template <typename T> __device__ __forceinline__ T gpu_shfl_down1(T v)
{
  return __shfl_down_sync(0xffffffffu, v, 1);
}
#else
/* Test build (CMake FDMINI_EMULATE_WAVE64): AMD's 64-lane wavefronts on an NVIDIA GPU. The
 * lane arithmetic of the kernels sees 64 lanes, and a shuffle exchanges through shared memory
 * within each group of 64 consecutive threads of the block, with CUDA's shuffle semantics at
 * the group's edges (the lane keeps its own value). Every thread of the block must call it
 * (the kernels that shuffle let no thread return early), and blocks are whole groups of 64. */
#define GPU_WARP_SIZE 64
#define GPU_STATIC_SMEM (2 * 1024 * sizeof(double)) /* the exchange below, two types */
template <typename T> __device__ __forceinline__ T gpu_wave64_shift(T v, int delta)
{
  __shared__ T lanes[1024];
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int lane = (int)(tid % 64u) + delta;
  lanes[tid] = v;
  __syncthreads();
  const T r = lane >= 0 && lane < 64 ? lanes[(int)tid + delta] : v;
  __syncthreads();
  return r;
}
template <typename T> __device__ __forceinline__ T gpu_shfl_up1(T v) { return gpu_wave64_shift(v, -1); }
template <typename T> __device__ __forceinline__ T gpu_shfl_down1(T v) { return gpu_wave64_shift(v, 1); }
#endif

#ifdef FDMINI_HAVE_NVTX
static inline void gpu_range_push(const char *name) { nvtxRangePushA(name); }
static inline void gpu_range_pop(void) { nvtxRangePop(); }
#endif

#else
/* ---------------------------------------------------------------- HIP (ROCm clang) */
#include <hip/hip_runtime.h>
#ifdef FDMINI_HAVE_ROCTX
#include FDMINI_ROCTX_HEADER /* rocprofiler-sdk-roctx/roctx.h, or roctracer/roctx.h (CMake) */
#endif

#define FDMINI_GPU_PLATFORM "hip"

#define GPU_SMEM_PER_BLOCK(prop) ((size_t)(prop).sharedMemPerBlock)
/* per-node priorities in graphs (as above) from HIP 6; before, the launch stream's */
#if HIP_VERSION_MAJOR >= 6
#define GPU_GRAPH_INSTANTIATE_FLAGS hipGraphInstantiateFlagUseNodePriority
#else
#define GPU_GRAPH_INSTANTIATE_FLAGS 0
#endif
#define gpuHostAlloc(ptr, bytes) hipHostMalloc((ptr), (bytes), hipHostMallocDefault)
#define gpuHostFree(ptr) hipHostFree(ptr)
/* fine-grained (coherent) host memory kernels load and store at the host's address: never held
 * in the GPU's L2 while the host writes it or polls it (HIP's "coherence control") */
#define gpuHostAllocShared(ptr, bytes) hipHostMalloc((ptr), (bytes), hipHostMallocMapped | hipHostMallocCoherent)
#define GPU_EAGER_LOADING_VAR "HIP_ENABLE_DEFERRED_LOADING"
#define GPU_EAGER_LOADING_VALUE "0"

template <typename T> __device__ __forceinline__ void gpu_store_nt(T *p, T v)
{
  __builtin_nontemporal_store(v, p);
}
template <typename T> __device__ __forceinline__ T gpu_ldg(const T *p) { return *p; }
/* a load of memory another process's kernel wrote during this launch (the signalled exchange):
 * a plain load (no line of it can be in the CU's cache: nothing read it in this launch before
 * the flag said it was written) */
template <typename T> __device__ __forceinline__ T gpu_ld_shared_l2(const T *p) { return *p; }
__device__ __forceinline__ uint32_t gpu_ld_sys(const uint32_t *p)
{
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ __forceinline__ void gpu_st_sys(uint32_t *p, uint32_t v)
{
  __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}
/* s_memrealtime: the constant 100 MHz clock (what newer HIP calls wall_clock64) */
__device__ __forceinline__ unsigned long long gpu_wall_ticks() { return __builtin_amdgcn_s_memrealtime(); }
__device__ __forceinline__ void gpu_push_system() { __threadfence_system(); }
__device__ __forceinline__ void gpu_acquire_system() { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, ""); }
#define GPU_ACQUIRE_ONCE 1
static inline double gpu_wall_hz(void)
{
#if HIP_VERSION_MAJOR > 5 || (HIP_VERSION_MAJOR == 5 && HIP_VERSION_MINOR >= 3)
  int dev = 0, khz = 0;
  if (hipGetDevice(&dev) == hipSuccess && hipDeviceGetAttribute(&khz, hipDeviceAttributeWallClockRate, dev) == hipSuccess &&
      khz > 0)
    return khz * 1e3;
  (void)hipGetLastError();
#endif
  return 1e8; /* the attribute came with ROCm 5.3; wall_clock64 runs at 100 MHz on gfx90a */
}
static inline int gpu_mps_enabled(int) { return -1; } /* no MPS on AMD */
#define GPU_REGISTER_CAP(n) __launch_bounds__(512)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define GPU_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE /* 64 on gfx90a, 32 on wave32 targets */
#else
#define GPU_WARP_SIZE 64 /* the host pass, which generates no kernel code */
#endif
#define GPU_STATIC_SMEM 0
template <typename T> __device__ __forceinline__ void gpu_store_nt2(T *p, T x, T y)
{
  typedef T pair __attribute__((ext_vector_type(2))); /* HIP's double2 is a class: use the native vector */
  const pair v = {x, y};
  __builtin_nontemporal_store(v, reinterpret_cast<pair *>(p));
}
template <typename T> __device__ __forceinline__ void gpu_store2(T *p, T x, T y)
{
  typedef T pair __attribute__((ext_vector_type(2)));
  *reinterpret_cast<pair *>(p) = pair{x, y};
}
template <typename T> __device__ __forceinline__ void gpu_store_keep(T *p, T v) { *p = v; }
template <typename T> __device__ __forceinline__ void gpu_store_keep2(T *p, T x, T y)
{
  gpu_store2(p, x, y);
}
template <typename T> __device__ __forceinline__ T gpu_shfl_up1(T v) { return __shfl_up(v, 1); }
template <typename T> __device__ __forceinline__ T gpu_shfl_down1(T v) { return __shfl_down(v, 1); }

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
