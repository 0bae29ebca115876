/* backend_gpu.hip - the HIP backend of backend.h (also compiled as CUDA through gpu_runtime.h):
 * device binding, memory, streams, events, profiler ranges, errors, the halo face pack/unpack
 * kernels, field initialisation and the norms reduction. The stencil family lives in
 * stencil_step.hip, stencil_exchange.hip and stencil_fused.hip, its rules in
 * stencil_config.hip. Fields stay device resident; nothing here copies a field to the host.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_internal.h"
#include "pointwise.h"

/* ---- errors ---------------------------------------------------------------------------- */

static char err_msg[512];

extern "C" const char *be_error_message(void) { return err_msg; }

int gpu_fail_private(const char *file, int line, const char *what, hipError_t e)
{
  /* A failed runtime call (hipMalloc, say) also sets the runtime's last-error state, which
   * the next GPU_LAUNCHED would then blame on a kernel: it is reported here, so reset it.
   * (Sticky errors, device faults, cannot be reset and keep failing every later call.) */
  (void)hipGetLastError();
  const char *base = strrchr(file, '/');
  snprintf(err_msg, sizeof err_msg, "%s:%d: %s failed: %s: %s", base ? base + 1 : file, line,
           what, hipGetErrorName(e), hipGetErrorString(e));
  return BE_ERROR;
}

int gpu_failf_private(int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  return code;
}

/* ---- device ---------------------------------------------------------------------------- */

gpu_device_props gpu_props_private;
int gpu_initialized_private = 0;
int gpu_sharers_private = 1;

extern "C" void be_set_device_sharers(int ranks) { gpu_sharers_private = ranks > 1 ? ranks : 1; }

/* Scratch of be_norms: per-block partial sums and maxima, and the pinned result. */
enum { NORM_BLOCKS = 1024, NORM_THREADS = 256 };
static double *norm_partial;     /* device, 2 * NORM_BLOCKS: sums then maxima */
static double *norm_result_host; /* pinned, 2: sum, max */
static double *norm_result_dev;  /* device, 2 */

/* FD_FIELD_SINE's factors for be_fill and be_norms (sine_tables): the host's values
 * (fd_field_sine_table, the C library's sin) in pinned memory and their copy on the device, x
 * then y then z, each over the grid's indices 1-G .. n+G; sine_cap doubles each. sine_done is
 * recorded behind the last kernel that read them (sine_pending), which the next user waits for
 * before it rewrites them. */
static double *sine_host, *sine_dev;
static size_t sine_cap;
static hipEvent_t sine_done;
static int sine_pending;

extern "C" int be_device_count(int *count)
{
  *count = 0;
  GPU(hipGetDeviceCount(count));
  return BE_OK;
}

/* be_preinit ran (and set the runtime's eager loading) before the runtime started */
static int eager_set;

extern "C" void be_preinit(void)
{
  /* overwrite: a lazy loading asked for by the environment would let a launch block the host
   * while a launch already running waits for it (backend.h) */
  eager_set = setenv(GPU_EAGER_LOADING_VAR, GPU_EAGER_LOADING_VALUE, 1) == 0;
}

extern "C" int be_init(int index, be_info *info)
{
  int count = 0;
  GPU(hipGetDeviceCount(&count));
  if (index < 0 || index >= count)
    return gpu_failf_private(BE_ERROR, "be_init: device index %d out of range (%d visible)",
                             index, count);
  GPU(hipSetDevice(index));
  hipDeviceProp_t prop;
  GPU(hipGetDeviceProperties(&prop, index));

  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "%s", FDMINI_GPU_PLATFORM);
  snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof info->name - 1, prop.name);
  /* domain:bus:device.function in lower-case hex, as hwloc and lspci print it */
  snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.0",
           (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID);
  info->device_index = index;
  info->device_count = count;
  info->is_accelerator = 1;
  info->launches_wait = 1;
  info->eager_loading = eager_set; /* be_preinit's setting, unless a caller skipped it */
  info->mps = gpu_mps_enabled(index);
  info->host_threads = 0;
  info->memory_bytes = prop.totalGlobalMem;

  gpu_props_private.sm_count = prop.multiProcessorCount;
  gpu_props_private.l2_bytes = (size_t)prop.l2CacheSize;
  gpu_props_private.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  gpu_props_private.warp_size = prop.warpSize;
  gpu_props_private.smem_per_block = GPU_SMEM_PER_BLOCK(prop);

  if (!norm_partial) {
    GPU(hipMalloc((void **)&norm_partial, 2 * NORM_BLOCKS * sizeof(double)));
    GPU(hipMalloc((void **)&norm_result_dev, 2 * sizeof(double)));
    GPU(gpuHostAlloc((void **)&norm_result_host, 2 * sizeof(double)));
    GPU(hipEventCreateWithFlags(&sine_done, hipEventDisableTiming));
  }
  gpu_initialized_private = 1;
  return BE_OK;
}

extern "C" int be_finalize(void)
{
  if (norm_partial) {
    GPU(hipDeviceSynchronize());
    GPU(hipFree(norm_partial));
    GPU(hipFree(norm_result_dev));
    GPU(gpuHostFree(norm_result_host));
    norm_partial = norm_result_dev = norm_result_host = NULL;
    if (sine_dev) GPU(hipFree(sine_dev));
    if (sine_host) GPU(gpuHostFree(sine_host));
    sine_dev = sine_host = NULL;
    sine_cap = 0;
    sine_pending = 0;
    GPU(hipEventDestroy(sine_done));
  }
  gpu_initialized_private = 0;
  gpu_sharers_private = 1;
  return BE_OK;
}

/* The first line of a small text file (a kernel module's version), "" when unreadable. */
static void first_line(const char *path, char *buf, size_t len)
{
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(buf, (int)len, f)) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
}

extern "C" int be_runtime_versions(char *runtime, size_t runtime_len, char *driver,
                                   size_t driver_len)
{
  int rt = 0, dr = 0;
  GPU(hipRuntimeGetVersion(&rt));
  GPU(hipDriverGetVersion(&dr));
  char module[256];
  if (strcmp(FDMINI_GPU_PLATFORM, "cuda") == 0) {
    /* 13000 = 13.0; the kernel module's version from "NVRM version: NVIDIA UNIX ... Kernel
     * Module  580.65.06  ..." */
    snprintf(runtime, runtime_len, "CUDA runtime %d.%d", rt / 1000, rt % 1000 / 10);
    first_line("/proc/driver/nvidia/version", module, sizeof module);
    const char *k = strstr(module, "Kernel Module");
    char ver[64] = "unknown";
    if (!k || sscanf(k, "Kernel Module %63s", ver) != 1) snprintf(ver, sizeof ver, "unknown");
    snprintf(driver, driver_len, "NVIDIA %s (CUDA driver API %d.%d)", ver, dr / 1000,
             dr % 1000 / 10);
  } else {
    /* HIP_VERSION = major * 10^7 + minor * 10^5 + patch */
    snprintf(runtime, runtime_len, "HIP %d.%d.%d", rt / 10000000, rt / 100000 % 100, rt % 100000);
    first_line("/sys/module/amdgpu/version", module, sizeof module);
    snprintf(driver, driver_len, "amdgpu %s (HIP driver %d.%d.%d)", module[0] ? module : "unknown",
             dr / 10000000, dr / 100000 % 100, dr % 100000);
  }
  return BE_OK;
}

extern "C" int gpu_get_device_props(gpu_device_props *p)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "gpu_get_device_props: be_init was not called");
  *p = gpu_props_private;
  return BE_OK;
}

/* ---- memory ---------------------------------------------------------------------------- */

extern "C" int be_malloc(void **ptr, size_t bytes)
{
  *ptr = NULL;
  GPU(hipMalloc(ptr, bytes ? bytes : 1));
  return BE_OK;
}

extern "C" int be_malloc_peer(void **ptr, size_t bytes)
{
  *ptr = NULL;
#if !defined(__CUDACC__) || defined(__HIP__)
  /* ROCm: memory a peer GCD polls must be fine-grained (coarse-grained lines are cached in the
   * reader's L2; ROCm's "HIP memory coherence" and the LLVM AMDGPU memory model), and IPC
   * handles of sizes off the 2 MiB granule fail on some ROCm releases (RCCL rounds likewise) */
  const size_t granule = (size_t)2 << 20, n = bytes ? (bytes + granule - 1) / granule * granule : granule;
  if (n < bytes) return gpu_failf_private(BE_ERROR, "be_malloc_peer: %zu bytes do not fit", bytes);
  GPU(hipExtMallocWithFlags(ptr, n, hipDeviceMallocFinegrained));
#else
  GPU(hipMalloc(ptr, bytes ? bytes : 1));
#endif
  return BE_OK;
}

/* The frees wait for the whole device first: the runtimes' own implicit synchronisation is a
 * property of the legacy stream's semantics, made explicit here (frees happen at set-up and
 * tear-down only). */
extern "C" int be_free(void *ptr)
{
  if (!ptr) return BE_OK;
  GPU(hipDeviceSynchronize());
  GPU(hipFree(ptr));
  return BE_OK;
}

extern "C" int be_host_alloc(void **ptr, size_t bytes)
{
  *ptr = NULL;
  GPU(gpuHostAlloc(ptr, bytes ? bytes : 1));
  return BE_OK;
}

extern "C" int be_host_alloc_shared(void **ptr, size_t bytes)
{
  *ptr = NULL;
  GPU(gpuHostAllocShared(ptr, bytes ? bytes : 1));
  return BE_OK;
}

extern "C" int be_host_free(void *ptr)
{
  if (!ptr) return BE_OK;
  GPU(hipDeviceSynchronize());
  GPU(gpuHostFree(ptr));
  return BE_OK;
}

extern "C" int be_memcpy_async(void *dst, const void *src, size_t bytes, be_copy_kind kind,
                               be_stream s)
{
  hipMemcpyKind k = kind == BE_COPY_H2D   ? hipMemcpyHostToDevice
                    : kind == BE_COPY_D2H ? hipMemcpyDeviceToHost
                                          : hipMemcpyDeviceToDevice;
  if (bytes) GPU(hipMemcpyAsync(dst, src, bytes, k, gpu_stream(s)));
  return BE_OK;
}

/* ---- device memory shared between processes, and flags (backend.h) -------------------- */

static_assert(sizeof(hipIpcMemHandle_t) == BE_IPC_HANDLE_BYTES, "IPC memory handle size");

extern "C" int be_ipc_supported(char *why, size_t why_len)
{
  int dev = 0;
  GPU(hipGetDevice(&dev));
#if !defined(__CUDACC__) || defined(__HIP__)
  int yes = 0;
  GPU(hipDeviceGetAttribute(&yes, hipDeviceAttributeCanUseStreamWaitValue, dev));
  if (!yes) {
    snprintf(why, why_len, "device %d cannot wait for values in memory (no stream memory operations)", dev);
    return 0;
  }
#endif
  /* the attribute does not cover every configuration (CUDA: a driver without the entry
   * points): set and await a scratch word once */
  uint32_t *word = NULL;
  hipStream_t st = NULL;
  hipError_t e = hipMalloc((void **)&word, sizeof *word);
  if (e == hipSuccess) e = hipStreamCreateWithPriority(&st, hipStreamNonBlocking, 0);
  /* the zero on st itself: a non-blocking stream does not follow the legacy default stream,
   * and a zero landing after the write would leave the wait below waiting for ever */
  if (e == hipSuccess) e = hipMemsetAsync(word, 0, sizeof *word, st);
  if (e == hipSuccess) e = hipStreamWriteValue32(st, word, 1u, 0);
  if (e == hipSuccess) e = hipStreamWaitValue32(st, word, 1u, hipStreamWaitValueEq, 0xffffffffu);
  if (e == hipSuccess) e = hipStreamSynchronize(st);
  (void)hipGetLastError();
  if (st) (void)hipStreamDestroy(st);
  if (word) (void)hipFree(word);
  if (e != hipSuccess) {
    snprintf(why, why_len, "device %d: stream memory operations failed: %s", dev, hipGetErrorString(e));
    return 0;
  }
  return 1;
}

extern "C" int be_stream_set_flag(be_stream s, uint32_t *flag, uint32_t value)
{
  /* flags 0: after a system-wide memory fence (CUDA's default; HIP performs the write once the
   * stream's earlier commands have completed) */
  GPU(hipStreamWriteValue32(gpu_stream(s), flag, value, 0));
  return BE_OK;
}

extern "C" int be_stream_wait_flag(be_stream s, const uint32_t *flag, uint32_t value)
{
  GPU(hipStreamWaitValue32(gpu_stream(s), (void *)flag, value, hipStreamWaitValueEq, 0xffffffffu));
  return BE_OK;
}

extern "C" int be_device_can_reach(const char *pci_bus_id, int *yes, char *why, size_t why_len)
{
  *yes = 0;
  int me = 0, dev = -1, can = 0;
  GPU(hipGetDevice(&me));
  if (hipDeviceGetByPCIBusId(&dev, pci_bus_id) != hipSuccess) {
    (void)hipGetLastError();
    snprintf(why, why_len, "device %s is not visible to this process", pci_bus_id);
    return BE_OK;
  }
  if (dev == me) {
    *yes = 1;
    return BE_OK;
  }
  GPU(hipDeviceCanAccessPeer(&can, me, dev));
  if (!can) snprintf(why, why_len, "device %d cannot access device %d (%s) as a peer", me, dev, pci_bus_id);
  *yes = can;
  return BE_OK;
}

extern "C" int be_ipc_mem_handle(void *ptr, be_ipc_handle *h)
{
  hipIpcMemHandle_t m;
  GPU(hipIpcGetMemHandle(&m, ptr));
  memcpy(h->bytes, &m, sizeof m);
  return BE_OK;
}

extern "C" int be_ipc_mem_open(const be_ipc_handle *h, void **ptr)
{
  hipIpcMemHandle_t m;
  memcpy(&m, h->bytes, sizeof m);
  *ptr = NULL;
  GPU(hipIpcOpenMemHandle(ptr, m, hipIpcMemLazyEnablePeerAccess));
  return BE_OK;
}

extern "C" int be_ipc_mem_close(void *ptr)
{
  if (ptr) GPU(hipIpcCloseMemHandle(ptr));
  return BE_OK;
}

extern "C" int be_memcpy_peer_async(void *dst, const void *src, size_t bytes, be_stream s)
{
  if (bytes) GPU(hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, gpu_stream(s)));
  return BE_OK;
}

/* ---- streams and events ---------------------------------------------------------------- */

/* Non-blocking streams: work a library enqueues on the legacy default stream (a CUDA-aware
 * MPI's staging copies, say) neither waits for fdmini's kernels nor holds them up, where a
 * blocking stream would have made such a copy wait for the interior update and shown only as
 * less of the exchange hidden. Nothing in fdmini relies on the legacy stream's implicit
 * synchronisation: every kernel, copy and event goes on a stream of be_stream_create (no
 * synchronous hipMemcpy or hipMemset; be_norms copies its result on its stream and waits for
 * it); the order between streams is events (be_stream_wait_event) and host waits; device
 * buffers are handed to MPI only after the host waited for the event of the pack that wrote
 * them, and read back only after MPI_Waitall; be_free and be_host_free synchronise the device
 * first (below), so that no stream still uses what they release. A NULL be_stream (the legacy
 * stream, gpu_stream) is used nowhere. */
extern "C" int be_stream_create(be_stream *s, be_priority priority)
{
  *s = NULL;
  /* Numerically lower is higher priority; "greatest" is the highest the device offers. */
  int least = 0, greatest = 0;
  GPU(hipDeviceGetStreamPriorityRange(&least, &greatest));
  be_stream st = (be_stream)calloc(1, sizeof *st);
  if (!st) return gpu_failf_private(BE_ERROR, "be_stream_create: out of host memory");
  st->priority = priority == BE_PRIORITY_HIGH ? greatest : least;
  hipError_t e = hipStreamCreateWithPriority(&st->s, hipStreamNonBlocking, st->priority);
  if (e != hipSuccess) {
    free(st);
    return gpu_fail_private(__FILE__, __LINE__, "hipStreamCreateWithPriority", e);
  }
  *s = st;
  return BE_OK;
}

extern "C" int be_stream_destroy(be_stream s)
{
  if (!s) return BE_OK;
  hipError_t e = hipStreamDestroy(s->s);
  free(s);
  if (e != hipSuccess) return gpu_fail_private(__FILE__, __LINE__, "hipStreamDestroy", e);
  return BE_OK;
}

/* The host's work while it waits (be_set_wait_hook): NULL, or called between polls. */
static be_wait_hook wait_hook;
static void *wait_ctx;

extern "C" void be_set_wait_hook(be_wait_hook hook, void *ctx)
{
  wait_hook = hook;
  wait_ctx = ctx;
}

/* How long the host serves the wait hook between two queries of the device (microseconds): a
 * query is a runtime call, a step of the hook (the proxy's) mostly reads host memory, and a face
 * served late stalls a launch, while a wait found complete a few microseconds late costs the
 * host nothing it needs (run-ahead marks are passes behind). */
#define WAIT_HOOK_SLICE_US 5.0

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* Polls until `pending` stops saying hipErrorNotReady, calling the wait hook between polls (for
 * WAIT_HOOK_SLICE_US each time) and once more after the work is complete (what the awaited
 * launches left for the host, such as the faces they packed, is handed on before the caller
 * goes elsewhere); the poll's own error, or the hook's line. */
template <typename Q> static int poll_with_hook(Q pending, const char *what)
{
  for (;;) {
    const hipError_t r = pending();
    if (r != hipErrorNotReady && r != hipSuccess) return gpu_fail_private(__FILE__, __LINE__, what, r);
    if (r == hipErrorNotReady) (void)hipGetLastError(); /* not an error: clear it */
    const double t0 = now_us();
    do {
      char why[256] = "";
      if (wait_hook(wait_ctx, why, sizeof why))
        return gpu_failf_private(BE_ERROR, "%s: the host's work while waiting failed: %s", what, why);
    } while (r == hipErrorNotReady && now_us() - t0 < WAIT_HOOK_SLICE_US);
    if (r == hipSuccess) return BE_OK;
  }
}

extern "C" int be_stream_sync(be_stream s)
{
  if (wait_hook) {
    const hipStream_t st = gpu_stream(s);
    return poll_with_hook([st] { return hipStreamQuery(st); }, "hipStreamQuery");
  }
  GPU(hipStreamSynchronize(gpu_stream(s)));
  return BE_OK;
}

extern "C" int be_event_create(be_event *e)
{
  *e = NULL;
  be_event ev = (be_event)calloc(1, sizeof *ev);
  if (!ev) return gpu_failf_private(BE_ERROR, "be_event_create: out of host memory");
  hipError_t r = hipEventCreate(&ev->e); /* default flags: timing-capable */
  if (r != hipSuccess) {
    free(ev);
    return gpu_fail_private(__FILE__, __LINE__, "hipEventCreate", r);
  }
  *e = ev;
  return BE_OK;
}

extern "C" int be_event_destroy(be_event e)
{
  if (!e) return BE_OK;
  hipError_t r = hipEventDestroy(e->e);
  free(e);
  if (r != hipSuccess) return gpu_fail_private(__FILE__, __LINE__, "hipEventDestroy", r);
  return BE_OK;
}

extern "C" int be_event_record(be_event e, be_stream s)
{
  GPU(hipEventRecord(e->e, gpu_stream(s)));
  return BE_OK;
}

extern "C" int be_event_sync(be_event e)
{
  if (wait_hook) {
    const hipEvent_t ev = e->e;
    return poll_with_hook([ev] { return hipEventQuery(ev); }, "hipEventQuery");
  }
  GPU(hipEventSynchronize(e->e));
  return BE_OK;
}

extern "C" int be_stream_wait_event(be_stream s, be_event e)
{
  GPU(hipStreamWaitEvent(gpu_stream(s), e->e, 0));
  return BE_OK;
}

extern "C" int be_event_elapsed_ms(float *ms, be_event start, be_event end)
{
  GPU(hipEventElapsedTime(ms, start->e, end->e));
  return BE_OK;
}

extern "C" int be_event_create_sync(be_event *e)
{
  *e = NULL;
  be_event ev = (be_event)calloc(1, sizeof *ev);
  if (!ev) return gpu_failf_private(BE_ERROR, "be_event_create_sync: out of host memory");
  hipError_t r = hipEventCreateWithFlags(&ev->e, hipEventDisableTiming);
  if (r != hipSuccess) {
    free(ev);
    return gpu_fail_private(__FILE__, __LINE__, "hipEventCreateWithFlags", r);
  }
  *e = ev;
  return BE_OK;
}

extern "C" int be_event_query(be_event e, int *done)
{
  hipError_t r = hipEventQuery(e->e);
  if (r == hipErrorNotReady) {
    (void)hipGetLastError(); /* not an error: clear it */
    *done = 0;
    return BE_OK;
  }
  GPU(r);
  *done = 1;
  return BE_OK;
}

/* ---- graphs ------------------------------------------------------------------------------ */

struct be_graph_s {
  hipGraphExec_t exec;
};

extern "C" int be_graph_begin(be_stream s)
{
  /* thread-local: a call another thread makes meanwhile (the snapshot writer) is not captured
   * and not refused */
  GPU(hipStreamBeginCapture(gpu_stream(s), hipStreamCaptureModeThreadLocal));
  return BE_OK;
}

extern "C" int be_graph_end(be_stream s, be_graph *g)
{
  *g = NULL;
  hipGraph_t graph = NULL;
  hipError_t e = hipStreamEndCapture(gpu_stream(s), &graph);
  if (e != hipSuccess || !graph) {
    (void)hipGetLastError();
    return gpu_failf_private(BE_UNSUPPORTED, "stream capture failed: %s", hipGetErrorString(e));
  }
  hipGraphExec_t exec = NULL;
  e = hipGraphInstantiateWithFlags(&exec, graph, GPU_GRAPH_INSTANTIATE_FLAGS);
  (void)hipGraphDestroy(graph);
  if (e != hipSuccess) {
    (void)hipGetLastError();
    return gpu_failf_private(BE_UNSUPPORTED, "graph instantiation failed: %s", hipGetErrorString(e));
  }
  be_graph gr = (be_graph)calloc(1, sizeof *gr);
  if (!gr) {
    (void)hipGraphExecDestroy(exec);
    return gpu_failf_private(BE_ERROR, "be_graph_end: out of host memory");
  }
  gr->exec = exec;
  *g = gr;
  return BE_OK;
}

extern "C" int be_graph_launch(be_graph g, be_stream s)
{
  GPU(hipGraphLaunch(g->exec, gpu_stream(s)));
  return BE_OK;
}

extern "C" int be_graph_destroy(be_graph g)
{
  if (!g) return BE_OK;
  hipError_t e = hipGraphExecDestroy(g->exec);
  free(g);
  GPU(e);
  return BE_OK;
}

/* ---- floors ------------------------------------------------------------------------------ */

__global__ void k_empty() {}

static double wall_us()
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Time per launch of g launched `n` times back to back on s (after a few untimed), in us. */
static int graph_per_launch(be_graph g, be_stream s, int n, double *us)
{
  const hipStream_t st = gpu_stream(s);
  for (int i = 0; i < 5; i++) {
    int rc = be_graph_launch(g, s);
    if (rc) return rc;
  }
  GPU(hipStreamSynchronize(st));
  const double t0 = wall_us();
  for (int i = 0; i < n; i++) {
    int rc = be_graph_launch(g, s);
    if (rc) return rc;
  }
  GPU(hipStreamSynchronize(st));
  *us = (wall_us() - t0) / n;
  return BE_OK;
}

extern "C" int be_floors(be_stream s, void *dst, const void *src, size_t bytes, be_floor_times *f)
{
  enum { WARM = 10, GRAPH_LAUNCHES = 200, SYNC_ROUNDS = 51 };
  f->graph_us = f->launch_sync_us = f->copy_us = 0.0;
  const hipStream_t st = gpu_stream(s);
  /* F_g: a graph of one empty kernel */
  be_graph g = NULL;
  int rc = be_graph_begin(s);
  if (rc) return rc;
  k_empty<<<1, 1, 0, st>>>();
  hipError_t le = hipGetLastError();
  rc = be_graph_end(s, &g);
  if (le != hipSuccess) {
    (void)be_graph_destroy(g);
    return gpu_fail_private(__FILE__, __LINE__, "k_empty (captured)", le);
  }
  if (rc) return rc;
  rc = graph_per_launch(g, s, GRAPH_LAUNCHES, &f->graph_us);
  (void)be_graph_destroy(g);
  if (rc) return rc;
  /* F_c: a graph of one copy of the field, as many launches as take about 1 ms (at most 200) */
  g = NULL;
  rc = be_graph_begin(s);
  if (rc) return rc;
  le = hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, st);
  rc = be_graph_end(s, &g);
  if (le != hipSuccess) {
    (void)be_graph_destroy(g);
    return gpu_fail_private(__FILE__, __LINE__, "hipMemcpyAsync (captured)", le);
  }
  if (rc) return rc;
  double one = 0.0;
  rc = graph_per_launch(g, s, 1, &one);
  int n = one > 0 ? (int)(1000.0 / one) : GRAPH_LAUNCHES;
  n = n < 1 ? 1 : (n > GRAPH_LAUNCHES ? GRAPH_LAUNCHES : n);
  if (!rc) rc = graph_per_launch(g, s, n, &f->copy_us);
  (void)be_graph_destroy(g);
  if (rc) return rc;
  /* F_ls: a launch and a host wait, the median */
  double t[SYNC_ROUNDS];
  for (int i = 0; i < WARM + SYNC_ROUNDS; i++) {
    const double a = wall_us();
    k_empty<<<1, 1, 0, st>>>();
    GPU_LAUNCHED("k_empty");
    GPU(hipStreamSynchronize(st));
    if (i >= WARM) t[i - WARM] = wall_us() - a;
  }
  qsort(t, SYNC_ROUNDS, sizeof t[0], cmp_dbl);
  f->launch_sync_us = t[SYNC_ROUNDS / 2];
  return BE_OK;
}

extern "C" void be_range_push(const char *name) { gpu_range_push(name); }
extern "C" void be_range_pop(void) { gpu_range_pop(); }

/* ---- halo regions ---------------------------------------------------------------------- */

/* Width 1 (the six faces): face f = 2d + side of a field with interior n0 x n1 x n2 (layout:
 * faces.h) stored as grid g (backend.h). Its element (p, q), 0 <= p < na, 0 <= q < nb, sits at p + na*q from the
 * face's buffer and in the field at base + p*sp + q*sq, base = the element of the face's point
 * (p, q) = (0, 0): the in-plane dimensions a < b and the strides follow from d alone, so the
 * geometry is a handful of scalars chosen by branches (no arrays indexed at run time, hence no
 * stack frame; no 64-bit division). The send layer is 1 or n[d], the ghost layer 0 or n[d]+1. */
struct face_geom {
  int na, nb;
  long long base, sp, sq;
};

struct field_dims {
  int n0, n1, n2;
  long long sx, sxy, origin;
};

__host__ __device__ inline face_geom face_geometry(const field_dims &fd, int face, int pack)
{
  const int d = face >> 1, high = face & 1;
  face_geom g;
  int nd;
  long long sl;
  if (d == 0) {
    g.na = fd.n1, g.nb = fd.n2, nd = fd.n0, sl = 1, g.sp = fd.sx, g.sq = fd.sxy;
  } else if (d == 1) {
    g.na = fd.n0, g.nb = fd.n2, nd = fd.n1, sl = fd.sx, g.sp = 1, g.sq = fd.sxy;
  } else {
    g.na = fd.n0, g.nb = fd.n1, nd = fd.n2, sl = fd.sxy, g.sp = 1, g.sq = fd.sx;
  }
  const int layer = pack ? (high ? nd : 1) : (high ? nd + 1 : 0);
  g.base = fd.origin + layer * sl + g.sp + g.sq;
  return g;
}

static field_dims dims_of(const fd_grid *g)
{
  const field_dims fd = {g->n[0], g->n[1], g->n[2], g->sx, g->sxy, g->origin};
  return fd;
}

/* Where each face starts (its element (0,0)) in the pack buffer: buffer + offset[f] (faces.h).
 * Six scalars picked by branches (no kernel-parameter array indexed at run time). */
struct face_bufs {
  real_t *b0, *b1, *b2, *b3, *b4, *b5;
};

__device__ inline real_t *face_buf(const face_bufs &fb, int face)
{
  return face == 0 ? fb.b0 : face == 1 ? fb.b1 : face == 2 ? fb.b2 : face == 3 ? fb.b3 : face == 4 ? fb.b4 : fb.b5;
}

/* One launch for the faces in `list` (4 bits per face, blockIdx.z picks one): threads run
 * along p (contiguous in the buffer, and in the field for y and z faces), blocks along q. */
template <int PACK>
__global__ void __launch_bounds__(256)
    k_faces(const field_dims fd, unsigned list, real_t *__restrict__ u, face_bufs bufs)
{
  const int face = (int)((list >> (4 * blockIdx.z)) & 7u);
  const face_geom g = face_geometry(fd, face, PACK);
  real_t *__restrict__ buf = face_buf(bufs, face);
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= g.na) return;
  const long long base = g.base + (long long)p * g.sp;
  for (int q = blockIdx.y; q < g.nb; q += gridDim.y) {
    const long long fi = base + (long long)q * g.sq;
    const long long bi = p + (long long)g.na * q;
    if (PACK) buf[bi] = u[fi];
    else u[fi] = buf[bi];
  }
}

/* Deep halos (width S >= 2: faces S deep, edges, corners; faces.h). One launch for every
 * active region, flattened: region q of the list (at most FD_REGIONS) owns the blocks
 * bstart[q] .. bstart[q+1]-1, so every block works on one region and the launch has just the
 * blocks the regions' points need (a grid shaped by the largest plane and the deepest box
 * would launch mostly idle blocks: with edges and corners, hundreds of thousands per pack).
 * Within region q, thread point l = (i - lo0) + e0*((j - lo1) + e1*(k - lo2)) is element l of
 * its buffer box and runs along x in the field. Every box has fewer than 2^31 points (checked
 * at launch), so the index maths is 32-bit. */
struct region_list {
  int n;                         /* regions in the list */
  int lo[FD_REGIONS][3];         /* box origin of each (send box to pack, receive box to unpack) */
  int e0[FD_REGIONS], e1[FD_REGIONS], count[FD_REGIONS];
  long long buf[FD_REGIONS];     /* element offset of its box in the buffer */
  int bstart[FD_REGIONS + 1];    /* first block of each, in 256-thread blocks */
};

template <int PACK>
__global__ void __launch_bounds__(256)
    k_regions(const field_dims fd, const region_list rl, real_t *__restrict__ u, real_t *__restrict__ buf)
{
  int q = 0;
  for (int r = 1; r < rl.n; r++)
    if ((int)blockIdx.x >= rl.bstart[r]) q = r;
  const int l = ((int)blockIdx.x - rl.bstart[q]) * 256 + (int)threadIdx.x;
  if (l >= rl.count[q]) return;
  const int e0 = rl.e0[q], plane = e0 * rl.e1[q];
  const int k = l / plane, rest = l - k * plane;
  const int j = rest / e0, i = rest - j * e0;
  const long long fi = fd.origin + (rl.lo[q][0] + i) + fd.sx * (long long)(rl.lo[q][1] + j) +
                       fd.sxy * (long long)(rl.lo[q][2] + k);
  real_t *__restrict__ rb = buf + rl.buf[q];
  if (PACK) rb[l] = u[fi];
  else u[fi] = rb[l];
}

/* One launch for all active regions of f: pack (u -> buf) or unpack (buf -> u). Width 1 (the
 * six faces, the single-step exchange) keeps the face kernel; deeper halos take k_regions. */
static int faces_launch(const fd_grid *g, const fd_faces *f, real_t *u, real_t *buf, int pack,
                        be_stream s)
{
  const char *what = pack ? "be_pack_faces" : "be_unpack_faces";
  for (int d = 0; d < 3; d++)
    if (f->n[d] != g->n[d] || f->width > g->ghost || f->width < 1)
      return gpu_failf_private(BE_ERROR, "%s: regions built for %dx%dx%d width %d, grid is %dx%dx%d with %d ghost layers",
                               what, f->n[0], f->n[1], f->n[2], f->width, g->n[0], g->n[1],
                               g->n[2], g->ghost);
  const field_dims fd = dims_of(g);
  hipStream_t st = gpu_stream(s);
  if (f->width > 1) {
    region_list rl;
    memset(&rl, 0, sizeof rl);
    for (int r = 0; r < FD_REGIONS; r++) {
      if (!f->active[r] || f->count[r] == 0) continue;
      if (f->count[r] > 0x7fffffffu)
        return gpu_failf_private(BE_ERROR, "%s: region %d has %zu points, more than 2^31 - 1", what, r, f->count[r]);
      int lo[3], hi[3];
      fd_region_box(f->n, f->width, r, !pack, lo, hi);
      const int q = rl.n++;
      for (int d = 0; d < 3; d++) rl.lo[q][d] = lo[d];
      rl.e0[q] = hi[0] - lo[0] + 1;
      rl.e1[q] = hi[1] - lo[1] + 1;
      rl.count[q] = (int)f->count[r];
      rl.buf[q] = (long long)f->offset[r];
      const long long next = rl.bstart[q] + (f->count[r] + 255) / 256;
      if (next * 256 > 0xffffffffLL) /* HIP: at most 2^32 - 1 threads in a grid */
        return gpu_failf_private(BE_ERROR, "%s: the regions need %lld threads, more than 2^32 - 1", what, next * 256);
      rl.bstart[q + 1] = (int)next;
    }
    if (rl.n == 0) return BE_OK;
    const dim3 grid((unsigned)rl.bstart[rl.n]);
    if (pack) k_regions<1><<<grid, 256, 0, st>>>(fd, rl, u, buf);
    else k_regions<0><<<grid, 256, 0, st>>>(fd, rl, u, buf);
    GPU_LAUNCHED(pack ? "k_regions(pack)" : "k_regions(unpack)");
    return BE_OK;
  }
  const face_bufs bufs = {buf + f->offset[0], buf + f->offset[1], buf + f->offset[2],
                          buf + f->offset[3], buf + f->offset[4], buf + f->offset[5]};
  unsigned list = 0;
  int nlist = 0, most_a = 0, most_b = 0;
  for (int face = 0; face < FD_FACES; face++) {
    if (!f->active[face] || f->count[face] == 0) continue;
    const face_geom fg = face_geometry(fd, face, pack);
    list |= (unsigned)face << (4 * nlist++);
    if (fg.na > most_a) most_a = fg.na;
    if (fg.nb > most_b) most_b = fg.nb;
  }
  if (nlist == 0) return BE_OK;
  dim3 grid((unsigned)((most_a + 255) / 256), (unsigned)(most_b < 65535 ? most_b : 65535), (unsigned)nlist);
  if (pack) k_faces<1><<<grid, 256, 0, st>>>(fd, list, u, bufs);
  else k_faces<0><<<grid, 256, 0, st>>>(fd, list, u, bufs);
  GPU_LAUNCHED(pack ? "k_faces(pack)" : "k_faces(unpack)");
  return BE_OK;
}

extern "C" int be_pack_faces(const fd_grid *g, const fd_faces *f, const real_t *u, real_t *buf,
                             be_stream s)
{
  return faces_launch(g, f, (real_t *)u, buf, 1, s);
}

extern "C" int be_unpack_faces(const fd_grid *g, const fd_faces *f, const real_t *buf, real_t *u,
                               be_stream s)
{
  return faces_launch(g, f, u, (real_t *)buf, 0, s);
}

/* ---- point source ----------------------------------------------------------------------- */

/* One thread: u[p] += value, p = fd_grid_index of the point. */
__global__ void k_add_point(real_t *__restrict__ u, long long p, real_t value) { u[p] += value; }

extern "C" int be_add_point(const fd_grid *g, int i, int j, int k, real_t value, real_t *u,
                            be_stream s)
{
  const int G = g->ghost;
  if (i < 1 - G || j < 1 - G || k < 1 - G || i > g->n[0] + G || j > g->n[1] + G || k > g->n[2] + G)
    return gpu_failf_private(BE_ERROR, "be_add_point: point (%d,%d,%d) outside the %dx%dx%d grid",
                             i, j, k, g->n[0], g->n[1], g->n[2]);
  k_add_point<<<1, 1, 0, gpu_stream(s)>>>(u, fd_grid_index(g, i, j, k), value);
  GPU_LAUNCHED("k_add_point");
  return BE_OK;
}

/* ---- fields ---------------------------------------------------------------------------- */

/* Every element of the allocation: a point (ghosts included) gets the field's value (the
 * sine's from the host's factors, so that every kind is bitwise the host's), a padding
 * element 0. Element e is point (i,j,k) when e - first = (i+G-1) + sx*(j+G-1) +
 * sxy*(k+G-1) with every index in 1-G..n+G, first = the element of (1-G, 1-G, 1-G).
 * Grid-stride so any size fits one launch. */
/* FD_FIELD_SINE at local point (i, j, k) of a grid with G ghost layers from the host's factors
 * (sine_tables: x, y, z tables of n+2G entries from index 1-G): bitwise the host's value. */
__device__ __forceinline__ double sine_point(const fd_field &fl, const double *__restrict__ tab,
                                             const field_dims &fd, long long G, long long i,
                                             long long j, long long k)
{
  const long long ly = fd.n0 + 2 * G, lz = ly + fd.n1 + 2 * G;
  return fd_sine_value(fl.scale, tab[i + G - 1], tab[ly + j + G - 1], tab[lz + k + G - 1]);
}

/* The device copy of FD_FIELD_SINE's factors of fl over grid g (sine_host / sine_dev above),
 * enqueued on st; the caller records sine_done behind its kernel and sets sine_pending.
 * Waits (host) for the previous user of the tables first. */
static int sine_tables(const fd_grid *g, const fd_field *fl, hipStream_t st, const double **tab)
{
  const int G = g->ghost;
  const size_t len[3] = {(size_t)g->n[0] + 2 * (size_t)G, (size_t)g->n[1] + 2 * (size_t)G,
                         (size_t)g->n[2] + 2 * (size_t)G};
  const size_t need = len[0] + len[1] + len[2];
  if (sine_pending) GPU(hipEventSynchronize(sine_done));
  sine_pending = 0;
  if (need > sine_cap) {
    if (sine_dev) GPU(hipFree(sine_dev));
    if (sine_host) GPU(gpuHostFree(sine_host));
    sine_dev = sine_host = NULL;
    sine_cap = 0;
    GPU(hipMalloc((void **)&sine_dev, need * sizeof(double)));
    GPU(gpuHostAlloc((void **)&sine_host, need * sizeof(double)));
    sine_cap = need;
  }
  size_t at = 0;
  for (int d = 0; d < 3; d++) {
    fd_field_sine_table(fl, d, fl->offset[d] + 1 - G, (int)len[d], sine_host + at);
    at += len[d];
  }
  GPU(hipMemcpyAsync(sine_dev, sine_host, need * sizeof(double), hipMemcpyHostToDevice, st));
  *tab = sine_dev;
  return BE_OK;
}

__global__ void __launch_bounds__(256) k_fill(const fd_field fl, const field_dims fd, int ghost,
                                              long long elems, const double *__restrict__ sine,
                                              real_t *__restrict__ u)
{
  const long long G = ghost, first = fd.origin - (G - 1) * (1 + fd.sx + fd.sxy);
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < elems;
       e += (long long)gridDim.x * blockDim.x) {
    const long long r = e - first;
    const long long i = r % fd.sx + 1 - G, q = r / fd.sx;
    const long long j = q % (fd.sxy / fd.sx) + 1 - G, k = q / (fd.sxy / fd.sx) + 1 - G;
    const bool point = r >= 0 && i <= fd.n0 + G && j <= fd.n1 + G && k <= fd.n2 + G;
    real_t v = 0;
    if (point && fl.kind == FD_FIELD_SINE) v = (real_t)sine_point(fl, sine, fd, G, i, j, k);
    else if (point)
      v = (real_t)fd_field_eval(fl.kind, fl.scale, fl.h, fl.L, fl.seed, fl.offset[0] + i,
                                fl.offset[1] + j, fl.offset[2] + k);
    u[e] = v;
  }
}

extern "C" int be_fill(const fd_grid *g, const fd_field *field, real_t *u, be_stream s)
{
  const long long total = (long long)g->elems;
  long long blocks = (total + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  hipStream_t st = gpu_stream(s);
  const double *sine = NULL;
  if (field->kind == FD_FIELD_SINE) {
    const int rc = sine_tables(g, field, st, &sine);
    if (rc != BE_OK) return rc;
  }
  k_fill<<<(unsigned)blocks, 256, 0, st>>>(*field, dims_of(g), g->ghost, total, sine, u);
  GPU_LAUNCHED("k_fill");
  if (sine) {
    GPU(hipEventRecord(sine_done, st));
    sine_pending = 1;
  }
  return BE_OK;
}

/* ---- norms ----------------------------------------------------------------------------- */

/* Deterministic two-pass reduction over the interior, d = a - b - ref (b, ref optional).
 * Pass 1: NORM_BLOCKS blocks (fewer for small grids; the count depends only on the grid) walk
 * the interior points t = (i-1) + nx*((j-1) + ny*(k-1)) grid-stride; each block reduces its
 * threads' sum of d^2 and max |d| in shared memory in a fixed tree order -> partial[block].
 * Pass 2: one block reduces the partials in a fixed order. Same result on every run and every
 * GPU. NaN: |d| counts as +inf in the max (as the host backend), and propagates into the sum. */
__device__ __forceinline__ void block_reduce(double *ssum, double *smax, double sum, double mx)
{
  const int t = threadIdx.x;
  ssum[t] = sum;
  smax[t] = mx;
  __syncthreads();
  for (int half = NORM_THREADS / 2; half > 0; half /= 2) {
    if (t < half) {
      ssum[t] += ssum[t + half];
      if (smax[t + half] > smax[t]) smax[t] = smax[t + half];
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(NORM_THREADS)
    k_norms_pass1(const real_t *__restrict__ a, const real_t *__restrict__ b, fd_field ref,
                  int use_ref, const double *__restrict__ sine, int ghost, const field_dims fd,
                  double *__restrict__ partial)
{
  __shared__ double ssum[NORM_THREADS], smax[NORM_THREADS];
  const int nx = fd.n0, ny = fd.n1;
  const long long total = (long long)nx * ny * fd.n2;
  double sum = 0.0, mx = 0.0;
  for (long long t = (long long)blockIdx.x * NORM_THREADS + threadIdx.x; t < total;
       t += (long long)gridDim.x * NORM_THREADS) {
    const long long i = t % nx + 1, r = t / nx;
    const long long j = r % ny + 1, k = r / ny + 1;
    const long long p = fd.origin + i + fd.sx * j + fd.sxy * k;
    double d = (double)a[p];
    if (b) d -= (double)b[p];
    if (use_ref && ref.kind == FD_FIELD_SINE) d -= sine_point(ref, sine, fd, ghost, i, j, k);
    else if (use_ref)
      d -= fd_field_eval(ref.kind, ref.scale, ref.h, ref.L, ref.seed, ref.offset[0] + i,
                         ref.offset[1] + j, ref.offset[2] + k);
    double ad = d < 0 ? -d : d;
    if (ad != ad) ad = INFINITY;
    sum += d * d;
    if (ad > mx) mx = ad;
  }
  block_reduce(ssum, smax, sum, mx);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = ssum[0];
    partial[NORM_BLOCKS + blockIdx.x] = smax[0];
  }
}

__global__ void __launch_bounds__(NORM_THREADS)
    k_norms_pass2(const double *__restrict__ partial, int nblocks, double *__restrict__ result)
{
  __shared__ double ssum[NORM_THREADS], smax[NORM_THREADS];
  double sum = 0.0, mx = 0.0;
  for (int t = threadIdx.x; t < nblocks; t += NORM_THREADS) {
    sum += partial[t];
    const double m = partial[NORM_BLOCKS + t];
    if (m > mx || m != m) mx = m;
  }
  block_reduce(ssum, smax, sum, mx);
  if (threadIdx.x == 0) {
    result[0] = ssum[0];
    result[1] = smax[0];
  }
}

extern "C" int be_norms(const fd_grid *g, const real_t *a, const real_t *b, const fd_field *ref,
                        fd_norms *out, be_stream s)
{
  if (!gpu_initialized_private)
    return gpu_failf_private(BE_ERROR, "be_norms: be_init was not called");
  const long long total = (long long)g->n[0] * g->n[1] * g->n[2];
  out->count = total;
  out->sum_sq = 0.0;
  out->max_abs = 0.0;
  if (total <= 0) return BE_OK;
  long long nb = (total + NORM_THREADS - 1) / NORM_THREADS;
  if (nb > NORM_BLOCKS) nb = NORM_BLOCKS;
  fd_field none;
  memset(&none, 0, sizeof none);
  hipStream_t st = gpu_stream(s);
  const double *sine = NULL;
  if (ref && ref->kind == FD_FIELD_SINE) {
    const int rc = sine_tables(g, ref, st, &sine);
    if (rc != BE_OK) return rc;
  }
  k_norms_pass1<<<(unsigned)nb, NORM_THREADS, 0, st>>>(a, b, ref ? *ref : none, ref != NULL,
                                                      sine, g->ghost, dims_of(g), norm_partial);
  GPU_LAUNCHED("k_norms_pass1");
  if (sine) {
    GPU(hipEventRecord(sine_done, st));
    sine_pending = 1;
  }
  k_norms_pass2<<<1, NORM_THREADS, 0, st>>>(norm_partial, (int)nb, norm_result_dev);
  GPU_LAUNCHED("k_norms_pass2");
  GPU(hipMemcpyAsync(norm_result_host, norm_result_dev, 2 * sizeof(double),
                     hipMemcpyDeviceToHost, st));
  GPU(hipStreamSynchronize(st));
  out->sum_sq = norm_result_host[0];
  out->max_abs = norm_result_host[1];
  return BE_OK;
}
