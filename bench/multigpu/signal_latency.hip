// signal_latency.hip - where the time of a pushed 2 MiB halo face goes, in one process on GPU 0
// and GPU 1 (peer access): both GPUs exchange one 512x512 face of doubles per iteration, as
// fdmini's IPC path does with a 1,1,2 decomposition, and the time per iteration is split by
// leaving parts out.
//
//   local      the pack kernel alone, writing its own GPU's memory, back to back (no signal)
//   push       the pack kernel storing into the peer's memory, back to back (no signal)
//   ce         one copy-engine copy of the packed face to the peer, back to back (no signal)
//   flags      no data: each GPU writes the peer's flag (stream write-value, default flags:
//              a system-wide fence first) and waits for its own (stream wait-value), as
//              FDMINI_IPC_SYNC=flag does: the cost of the signal alone
//   push+flag  push, then the flags (fdmini's IPC path with FDMINI_IPC_SYNC=flag, no unpack)
//   ce+flag    the copy-engine copy, then the flags
//   fused      push; the kernel's last block signals the peer itself (fence, flag store), the
//              stream waits for its own flag by wait-value
//   spin       push; the kernel's last block signals, and the next kernel waits in the kernel
//              (thread 0 of every block polls its flag) instead of on the stream
//
// Each mode runs ITER iterations enqueued ahead on both GPUs (interleaved, so nothing waits
// for the host), timed by events on both streams; the line gives the slower GPU's time per
// iteration and the face bandwidth per direction (2 MiB / time), median of 7 runs.
// Usage: signal_latency [ITER]     (default 200)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_runtime.h"

#define CHECK(EXPR)                                                                            \
  do {                                                                                         \
    hipError_t e_ = (EXPR);                                                                    \
    if (e_ != hipSuccess) {                                                                    \
      fprintf(stderr, "signal_latency: %s failed: %s\n", #EXPR, hipGetErrorString(e_));        \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

enum { NX = 512, NY = 512, PITCH = NX + 2, THREADS = 256 };
enum { M_LOCAL, M_PUSH, M_CE, M_FLAGS, M_PUSH_FLAG, M_CE_FLAG, M_FUSED, M_SPIN, M_COUNT };
static const char *const names[M_COUNT] = {"local", "push", "ce", "flags", "push+flag", "ce+flag", "fused", "spin"};

// The z face of a padded 514 x 514 plane (interior 512 x 512) into a contiguous buffer; one
// point per thread, threads along x. signal: the last block to finish stores `value` into
// *peer_flag (after a system-wide fence) and resets *count. wait: thread 0 of each block polls
// *own_flag until it reaches wait_value first.
__global__ void __launch_bounds__(THREADS)
    pack(const double *__restrict__ src, double *__restrict__ dst, unsigned *count, uint32_t *peer_flag,
         uint32_t value, const uint32_t *own_flag, uint32_t wait_value, int signal, int wait)
{
  if (wait) {
    if (threadIdx.x == 0)
      while (*(volatile const uint32_t *)own_flag < wait_value) {
      }
    __syncthreads();
  }
  const unsigned i = blockIdx.x * THREADS + threadIdx.x;
  const unsigned y = i / NX, x = i % NX;
  if (y < NY) dst[i] = src[(y + 1) * PITCH + x + 1];
  if (!signal) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system(); // this block's stores reach the peer before the count says so
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      *count = 0;
      __threadfence_system();
      *(volatile uint32_t *)peer_flag = value;
    }
  }
}

struct side {
  double *src, *packed, *recv; // own memory: padded plane, packed face, the face the peer sends
  uint32_t *flag;              // own memory, written by the peer
  unsigned *count;
  hipStream_t s;
  hipEvent_t a, b;
};

static void enqueue(struct side *me, struct side *peer, int g, int mode, uint32_t i)
{
  const size_t bytes = (size_t)NX * NY * sizeof(double);
  const int blocks = NX * NY / THREADS;
  CHECK(hipSetDevice(g));
  switch (mode) {
  case M_LOCAL:
    pack<<<blocks, THREADS, 0, me->s>>>(me->src, me->packed, me->count, NULL, 0, NULL, 0, 0, 0);
    break;
  case M_PUSH:
  case M_PUSH_FLAG:
    pack<<<blocks, THREADS, 0, me->s>>>(me->src, peer->recv, me->count, NULL, 0, NULL, 0, 0, 0);
    break;
  case M_CE:
  case M_CE_FLAG:
    CHECK(hipMemcpyAsync(peer->recv, me->packed, bytes, hipMemcpyDeviceToDevice, me->s));
    break;
  case M_FUSED:
    pack<<<blocks, THREADS, 0, me->s>>>(me->src, peer->recv, me->count, peer->flag, i, NULL, 0, 1, 0);
    break;
  case M_SPIN:
    pack<<<blocks, THREADS, 0, me->s>>>(me->src, peer->recv, me->count, peer->flag, i, me->flag, i - 1, 1, 1);
    break;
  }
  if (mode == M_FLAGS || mode == M_PUSH_FLAG || mode == M_CE_FLAG) CHECK(hipStreamWriteValue32(me->s, peer->flag, i, 0));
  if (mode == M_FLAGS || mode == M_PUSH_FLAG || mode == M_CE_FLAG || mode == M_FUSED)
    CHECK(hipStreamWaitValue32(me->s, me->flag, i, hipStreamWaitValueGte, 0xffffffffu));
}

// Time (ms) per iteration of `iters` iterations of `mode`, the slower GPU's.
static double run(struct side sd[2], int mode, int iters)
{
  for (int g = 0; g < 2; g++) {
    CHECK(hipSetDevice(g));
    CHECK(hipMemsetAsync(sd[g].flag, 0, sizeof(uint32_t), sd[g].s));
    CHECK(hipStreamSynchronize(sd[g].s));
  }
  for (int g = 0; g < 2; g++) {
    CHECK(hipSetDevice(g));
    CHECK(hipEventRecord(sd[g].a, sd[g].s));
  }
  for (int i = 1; i <= iters; i++)
    for (int g = 0; g < 2; g++) enqueue(&sd[g], &sd[1 - g], g, mode, (uint32_t)i);
  double worst = 0;
  for (int g = 0; g < 2; g++) {
    CHECK(hipSetDevice(g));
    if (mode == M_SPIN) CHECK(hipStreamWaitValue32(sd[g].s, sd[g].flag, (uint32_t)iters, hipStreamWaitValueGte, 0xffffffffu));
    CHECK(hipEventRecord(sd[g].b, sd[g].s));
  }
  for (int g = 0; g < 2; g++) {
    CHECK(hipSetDevice(g));
    CHECK(hipEventSynchronize(sd[g].b));
    float ms;
    CHECK(hipEventElapsedTime(&ms, sd[g].a, sd[g].b));
    if (ms > worst) worst = ms;
  }
  return worst / iters;
}

int main(int argc, char **argv)
{
  const int iters = argc > 1 ? atoi(argv[1]) : 200;
  int count = 0, can01 = 0, can10 = 0;
  CHECK(hipGetDeviceCount(&count));
  if (count < 2 || iters < 1) {
    printf("signal_latency: %d device(s), need 2 (and ITER >= 1)\n", count);
    return count < 2 ? 0 : 2;
  }
  CHECK(hipDeviceCanAccessPeer(&can01, 0, 1));
  CHECK(hipDeviceCanAccessPeer(&can10, 1, 0));
  if (!can01 || !can10) {
    printf("signal_latency: no peer access between GPU 0 and GPU 1\n");
    return 0;
  }
  struct side sd[2];
  const size_t plane = (size_t)PITCH * (NY + 2) * sizeof(double), face = (size_t)NX * NY * sizeof(double);
  for (int g = 0; g < 2; g++) {
    CHECK(hipSetDevice(g));
    CHECK(hipDeviceEnablePeerAccess(1 - g, 0));
    CHECK(hipMalloc((void **)&sd[g].src, plane));
    CHECK(hipMalloc((void **)&sd[g].packed, face));
    CHECK(hipMalloc((void **)&sd[g].recv, face));
    CHECK(hipMalloc((void **)&sd[g].flag, 64));
    CHECK(hipMalloc((void **)&sd[g].count, 64));
    CHECK(hipStreamCreateWithPriority(&sd[g].s, hipStreamDefault, 0));
    CHECK(hipMemsetAsync(sd[g].src, 0, plane, sd[g].s));
    CHECK(hipMemsetAsync(sd[g].packed, 0, face, sd[g].s));
    CHECK(hipMemsetAsync(sd[g].count, 0, 64, sd[g].s));
    CHECK(hipStreamSynchronize(sd[g].s));
    CHECK(hipEventCreate(&sd[g].a));
    CHECK(hipEventCreate(&sd[g].b));
  }
  hipDeviceProp_t p0;
  CHECK(hipGetDeviceProperties(&p0, 0));
  printf("signal_latency: %s x2, one 512x512 face of doubles (%zu KiB) each way per iteration, %d iterations, median of 7\n",
         p0.name, face >> 10, iters);
  for (int mode = 0; mode < M_COUNT; mode++) {
    double t[7];
    run(sd, mode, 20); // warm-up
    for (int k = 0; k < 7; k++) t[k] = run(sd, mode, iters);
    for (int i = 1; i < 7; i++)
      for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
        double x = t[j];
        t[j] = t[j - 1];
        t[j - 1] = x;
      }
    printf("signal_latency: %-10s %7.2f us per iteration  %6.1f GB/s per direction  (min %.2f, max %.2f us)\n", names[mode],
           t[3] * 1e3, face / (t[3] * 1e-3) / 1e9, t[0] * 1e3, t[6] * 1e3);
  }
  return 0;
}
