/* backend_gpu.hip - the HIP backend of backend.h (also compiled as CUDA through gpu_runtime.h):
 * device binding, memory, streams, events, profiler ranges, errors, the halo face pack/unpack
 * kernels, field initialisation and the norms reduction. The stencil family lives in
 * stencil_gpu.hip. Fields stay device resident; nothing here copies a field to the host.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static int face_copy_engine; /* halo faces by copy engine (1) or kernel (0): see faces_launch */
int gpu_initialized_private = 0;

/* Scratch of be_norms: per-block partial sums and maxima, and the pinned result. */
enum { NORM_BLOCKS = 1024, NORM_THREADS = 256 };
static double *norm_partial;     /* device, 2 * NORM_BLOCKS: sums then maxima */
static double *norm_result_host; /* pinned, 2: sum, max */
static double *norm_result_dev;  /* device, 2 */

extern "C" int be_device_count(int *count)
{
  *count = 0;
  GPU(hipGetDeviceCount(count));
  return BE_OK;
}

extern "C" int be_init(int index, be_info *info)
{
  int count = 0;
  GPU(hipGetDeviceCount(&count));
  if (index < 0 || index >= count)
    return gpu_failf_private(BE_ERROR, "be_init: device index %d out of range (%d visible)",
                             index, count);
  const char *fc = getenv("FDMINI_FACE_COPY");
  if (fc && strcmp(fc, "kernel") != 0 && strcmp(fc, "engine") != 0)
    return gpu_failf_private(BE_ERROR, "FDMINI_FACE_COPY: unknown value '%s', expected kernel or engine", fc);
  face_copy_engine = fc && strcmp(fc, "engine") == 0;
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
  info->host_threads = 0;
  info->memory_bytes = prop.totalGlobalMem;
  snprintf(info->face_copy, sizeof info->face_copy, "%s", face_copy_engine ? "engine" : "kernel");

  gpu_props_private.sm_count = prop.multiProcessorCount;
  gpu_props_private.l2_bytes = (size_t)prop.l2CacheSize;
  gpu_props_private.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  gpu_props_private.warp_size = prop.warpSize;

  if (!norm_partial) {
    GPU(hipMalloc((void **)&norm_partial, 2 * NORM_BLOCKS * sizeof(double)));
    GPU(hipMalloc((void **)&norm_result_dev, 2 * sizeof(double)));
    GPU(gpuHostAlloc((void **)&norm_result_host, 2 * sizeof(double)));
  }
  gpu_initialized_private = 1;
  return BE_OK;
}

extern "C" int be_finalize(void)
{
  if (norm_partial) {
    GPU(hipFree(norm_partial));
    GPU(hipFree(norm_result_dev));
    GPU(gpuHostFree(norm_result_host));
    norm_partial = norm_result_dev = norm_result_host = NULL;
  }
  gpu_initialized_private = 0;
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

extern "C" int be_free(void *ptr)
{
  if (ptr) GPU(hipFree(ptr));
  return BE_OK;
}

extern "C" int be_host_alloc(void **ptr, size_t bytes)
{
  *ptr = NULL;
  GPU(gpuHostAlloc(ptr, bytes ? bytes : 1));
  return BE_OK;
}

extern "C" int be_host_free(void *ptr)
{
  if (ptr) GPU(gpuHostFree(ptr));
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

/* ---- device memory and events shared between processes (backend.h) -------------------- */

static_assert(sizeof(hipIpcMemHandle_t) == BE_IPC_HANDLE_BYTES, "IPC memory handle size");
static_assert(sizeof(hipIpcEventHandle_t) == BE_IPC_HANDLE_BYTES, "IPC event handle size");

extern "C" int be_ipc_supported(char *why, size_t why_len)
{
  (void)why;
  (void)why_len;
  return 1;
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

extern "C" int be_ipc_event_create(be_event *e)
{
  *e = NULL;
  be_event ev = (be_event)calloc(1, sizeof *ev);
  if (!ev) return gpu_failf_private(BE_ERROR, "be_ipc_event_create: out of host memory");
  hipError_t r = hipEventCreateWithFlags(&ev->e, hipEventDisableTiming | hipEventInterprocess);
  if (r != hipSuccess) {
    free(ev);
    return gpu_fail_private(__FILE__, __LINE__, "hipEventCreateWithFlags(interprocess)", r);
  }
  *e = ev;
  return BE_OK;
}

extern "C" int be_ipc_event_handle(be_event e, be_ipc_handle *h)
{
  hipIpcEventHandle_t m;
  GPU(hipIpcGetEventHandle(&m, e->e));
  memcpy(h->bytes, &m, sizeof m);
  return BE_OK;
}

extern "C" int be_ipc_event_open(const be_ipc_handle *h, be_event *e)
{
  *e = NULL;
  hipIpcEventHandle_t m;
  memcpy(&m, h->bytes, sizeof m);
  be_event ev = (be_event)calloc(1, sizeof *ev);
  if (!ev) return gpu_failf_private(BE_ERROR, "be_ipc_event_open: out of host memory");
  hipError_t r = hipIpcOpenEventHandle(&ev->e, m);
  if (r != hipSuccess) {
    free(ev);
    return gpu_fail_private(__FILE__, __LINE__, "hipIpcOpenEventHandle", r);
  }
  *e = ev;
  return BE_OK;
}

extern "C" int be_memcpy_peer_async(void *dst, const void *src, size_t bytes, be_stream s)
{
  if (bytes) GPU(hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, gpu_stream(s)));
  return BE_OK;
}

/* ---- flags set and awaited by streams (backend.h) --------------------------------------- */

extern "C" int be_flags_supported(char *why, size_t why_len)
{
  int dev = 0, yes = 0;
  GPU(hipGetDevice(&dev));
  GPU(gpu_stream_value_ops_attribute(&yes, dev));
  if (!yes) {
    snprintf(why, why_len, "device %d cannot wait for values in memory (stream memory operations)", dev);
    return 0;
  }
  /* the attribute does not cover every configuration (CUDA: drivers with stream memory
   * operations disabled): set and await a scratch word once */
  uint32_t *word = NULL;
  hipStream_t st = NULL;
  GPU(hipMalloc((void **)&word, sizeof *word));
  hipError_t e = hipMemsetAsync(word, 0, sizeof *word, 0);
  if (e == hipSuccess) e = hipStreamCreateWithPriority(&st, hipStreamDefault, 0);
  if (e == hipSuccess) e = hipStreamWriteValue32(st, word, 1u, 0);
  if (e == hipSuccess) e = hipStreamWaitValue32(st, word, 1u, hipStreamWaitValueGte, 0xffffffffu);
  if (e == hipSuccess) e = hipStreamSynchronize(st);
  (void)hipGetLastError();
  if (st) (void)hipStreamDestroy(st);
  (void)hipFree(word);
  if (e != hipSuccess) {
    snprintf(why, why_len, "device %d: stream memory operations failed: %s", dev, hipGetErrorString(e));
    return 0;
  }
  return 1;
}

extern "C" int be_stream_set_flag(be_stream s, uint32_t *flag, uint32_t value)
{
  /* flags 0: the write follows a system-wide memory fence (CUDA's default; HIP documents the
   * write as performed after all earlier commands of the stream have completed) */
  GPU(hipStreamWriteValue32(gpu_stream(s), flag, value, 0));
  return BE_OK;
}

extern "C" int be_stream_wait_flag(be_stream s, const uint32_t *flag, uint32_t value)
{
  GPU(hipStreamWaitValue32(gpu_stream(s), (void *)flag, value, hipStreamWaitValueGte, 0xffffffffu));
  return BE_OK;
}

/* ---- streams and events ---------------------------------------------------------------- */

extern "C" int be_stream_create(be_stream *s, be_priority priority)
{
  *s = NULL;
  /* Numerically lower is higher priority; "greatest" is the highest the device offers. */
  int least = 0, greatest = 0;
  GPU(hipDeviceGetStreamPriorityRange(&least, &greatest));
  be_stream st = (be_stream)calloc(1, sizeof *st);
  if (!st) return gpu_failf_private(BE_ERROR, "be_stream_create: out of host memory");
  st->priority = priority == BE_PRIORITY_HIGH ? greatest : least;
  hipError_t e = hipStreamCreateWithPriority(&st->s, hipStreamDefault, st->priority);
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

extern "C" int be_stream_sync(be_stream s)
{
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

extern "C" void be_range_push(const char *name) { gpu_range_push(name); }
extern "C" void be_range_pop(void) { gpu_range_pop(); }

/* ---- halo faces ------------------------------------------------------------------------ */

/* Face f = 2d + side of a field with interior n0 x n1 x n2 (layout: faces.h). Its element
 * (p, q), 0 <= p < na, 0 <= q < nb, sits at p + na*q from the face's buffer and in the field at
 * layer*sl + (p+1)*sp + (q+1)*sq: the in-plane dimensions a < b and the strides follow from d
 * alone, so the geometry is a handful of scalars chosen by branches (no arrays indexed at run
 * time, hence no stack frame; no 64-bit division). The send layer is 1 or n[d], the ghost
 * layer 0 or n[d]+1. */
struct face_geom {
  int na, nb, layer;
  long long sl, sp, sq;
};

__host__ __device__ inline face_geom face_geometry(int n0, int n1, int n2, int face, int pack)
{
  const int d = face >> 1, high = face & 1;
  const long long sx = n0 + 2, sxy = sx * (n1 + 2);
  face_geom g;
  int nd;
  if (d == 0) {
    g.na = n1, g.nb = n2, nd = n0, g.sl = 1, g.sp = sx, g.sq = sxy;
  } else if (d == 1) {
    g.na = n0, g.nb = n2, nd = n1, g.sl = sx, g.sp = 1, g.sq = sxy;
  } else {
    g.na = n0, g.nb = n1, nd = n2, g.sl = sxy, g.sp = 1, g.sq = sx;
  }
  g.layer = pack ? (high ? nd : 1) : (high ? nd + 1 : 0);
  return g;
}

/* The buffer of each face (its element (0,0)): in this process's buffer at its offset, or,
 * packing for the halo's push path, in a neighbour's receive buffer mapped here. Six scalars
 * picked by branches (no kernel-parameter array indexed at run time). */
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
    k_faces(int n0, int n1, int n2, unsigned list, real_t *__restrict__ u, face_bufs bufs)
{
  const int face = (int)((list >> (4 * blockIdx.z)) & 7u);
  const face_geom g = face_geometry(n0, n1, n2, face, PACK);
  real_t *__restrict__ buf = face_buf(bufs, face);
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= g.na) return;
  const long long base = g.layer * g.sl + (long long)(p + 1) * g.sp;
  for (int q = blockIdx.y; q < g.nb; q += gridDim.y) {
    const long long fi = base + (long long)(q + 1) * g.sq;
    const long long bi = p + (long long)g.na * q;
    if (PACK) buf[bi] = u[fi];
    else u[fi] = buf[bi];
  }
}

/* How faces travel between field and buffer (FDMINI_FACE_COPY, read by be_init):
 *   kernel  (default) one k_faces launch for all active faces (on the SMs)
 *   engine  y and z faces (rows contiguous in the field) as one 2D copy each on the copy
 *           engine, which takes no SM time from the interior update running beside it;
 *           x faces (a gather with stride nx+2) still by k_faces.
 * Measured on 2x H200, 512^3 per GPU (bench/results/multigpu): the kernel hides more of the
 * exchange (0.95 against 0.89) and gives the shorter step; a single 2 MiB face took 7-8 us
 * by 2D copy on an idle GPU. */

static int faces_launch(const fd_grid *g, const fd_faces *f, real_t *u, real_t *const dst[FD_FACES],
                        int pack, be_stream s)
{
  for (int d = 0; d < 3; d++)
    if (f->n[d] != g->n[d])
      return gpu_failf_private(BE_ERROR, "%s: faces built for %dx%dx%d, grid is %dx%dx%d",
                               pack ? "be_pack_faces" : "be_unpack_faces", f->n[0], f->n[1],
                               f->n[2], g->n[0], g->n[1], g->n[2]);
  const int n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  hipStream_t st = gpu_stream(s);
  unsigned list = 0;
  int nlist = 0, most_a = 0, most_b = 0;
  for (int face = 0; face < FD_FACES; face++) {
    if (!f->active[face] || f->count[face] == 0) continue;
    const face_geom fg = face_geometry(n0, n1, n2, face, pack);
    const size_t pitch = (size_t)fg.sq * sizeof(real_t), width = (size_t)fg.na * sizeof(real_t);
    if (face_copy_engine && face >= 2 && pitch <= (size_t)INT32_MAX) {
      real_t *fp = u + fg.layer * fg.sl + fg.sp + fg.sq, *bp = dst[face];
      if (pack) GPU(hipMemcpy2DAsync(bp, width, fp, pitch, width, (size_t)fg.nb, hipMemcpyDefault, st));
      else GPU(hipMemcpy2DAsync(fp, pitch, bp, width, width, (size_t)fg.nb, hipMemcpyDeviceToDevice, st));
      continue;
    }
    list |= (unsigned)face << (4 * nlist++);
    if (fg.na > most_a) most_a = fg.na;
    if (fg.nb > most_b) most_b = fg.nb;
  }
  if (nlist == 0) return BE_OK;
  dim3 grid((unsigned)((most_a + 255) / 256), (unsigned)(most_b < 65535 ? most_b : 65535), (unsigned)nlist);
  const face_bufs bufs = {dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]};
  if (pack) k_faces<1><<<grid, 256, 0, st>>>(n0, n1, n2, list, u, bufs);
  else k_faces<0><<<grid, 256, 0, st>>>(n0, n1, n2, list, u, bufs);
  GPU_LAUNCHED(pack ? "k_faces(pack)" : "k_faces(unpack)");
  return BE_OK;
}

extern "C" int be_pack_faces_to(const fd_grid *g, const fd_faces *f, const real_t *u,
                                real_t *const dst[FD_FACES], be_stream s)
{
  return faces_launch(g, f, (real_t *)u, dst, 1, s);
}

extern "C" int be_unpack_faces(const fd_grid *g, const fd_faces *f, const real_t *buf, real_t *u,
                               be_stream s)
{
  real_t *src[FD_FACES];
  for (int face = 0; face < FD_FACES; face++) src[face] = (real_t *)buf + f->offset[face];
  return faces_launch(g, f, u, src, 0, s);
}

/* ---- point source ----------------------------------------------------------------------- */

/* One thread: u[p] += value, p = i + sx*(j + sy*k). */
__global__ void k_add_point(real_t *__restrict__ u, long long p, real_t value) { u[p] += value; }

extern "C" int be_add_point(const fd_grid *g, int i, int j, int k, real_t value, real_t *u,
                            be_stream s)
{
  if (i < 0 || j < 0 || k < 0 || i > g->n[0] + 1 || j > g->n[1] + 1 || k > g->n[2] + 1)
    return gpu_failf_private(BE_ERROR, "be_add_point: point (%d,%d,%d) outside the %dx%dx%d grid",
                             i, j, k, g->n[0], g->n[1], g->n[2]);
  const long long sx = g->n[0] + 2, sy = g->n[1] + 2;
  k_add_point<<<1, 1, 0, gpu_stream(s)>>>(u, i + sx * (j + sy * (long long)k), value);
  GPU_LAUNCHED("k_add_point");
  return BE_OK;
}

/* ---- fields ---------------------------------------------------------------------------- */

/* Every point of the (nx+2)(ny+2)(nz+2) array, ghosts included; linear index t = i + sx*(j +
 * sy*k). Grid-stride so any size fits one launch. */
__global__ void __launch_bounds__(256)
    k_fill(const fd_field fl, int sx, int sy, long long total, real_t *__restrict__ u)
{
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = t % sx, r = t / sx;
    const long long j = r % sy, k = r / sy;
    u[t] = (real_t)fd_field_eval(fl.kind, fl.scale, fl.h, fl.L, fl.seed, fl.offset[0] + i,
                                 fl.offset[1] + j, fl.offset[2] + k);
  }
}

extern "C" int be_fill(const fd_grid *g, const fd_field *field, real_t *u, be_stream s)
{
  const long long total = (long long)fd_grid_points_with_ghosts(g);
  long long blocks = (total + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  k_fill<<<(unsigned)blocks, 256, 0, gpu_stream(s)>>>(*field, g->n[0] + 2, g->n[1] + 2, total,
                                                      u);
  GPU_LAUNCHED("k_fill");
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
                  int use_ref, int nx, int ny, int nz, double *__restrict__ partial)
{
  __shared__ double ssum[NORM_THREADS], smax[NORM_THREADS];
  const long long total = (long long)nx * ny * nz;
  const long long sx = nx + 2, sxy = sx * (ny + 2);
  double sum = 0.0, mx = 0.0;
  for (long long t = (long long)blockIdx.x * NORM_THREADS + threadIdx.x; t < total;
       t += (long long)gridDim.x * NORM_THREADS) {
    const long long i = t % nx + 1, r = t / nx;
    const long long j = r % ny + 1, k = r / ny + 1;
    const long long p = i + sx * j + sxy * k;
    double d = (double)a[p];
    if (b) d -= (double)b[p];
    if (use_ref)
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
  k_norms_pass1<<<(unsigned)nb, NORM_THREADS, 0, st>>>(a, b, ref ? *ref : none, ref != NULL,
                                                      g->n[0], g->n[1], g->n[2], norm_partial);
  GPU_LAUNCHED("k_norms_pass1");
  k_norms_pass2<<<1, NORM_THREADS, 0, st>>>(norm_partial, (int)nb, norm_result_dev);
  GPU_LAUNCHED("k_norms_pass2");
  GPU(hipMemcpyAsync(norm_result_host, norm_result_dev, 2 * sizeof(double),
                     hipMemcpyDeviceToHost, st));
  GPU(hipStreamSynchronize(st));
  out->sum_sq = norm_result_host[0];
  out->max_abs = norm_result_host[1];
  return BE_OK;
}
