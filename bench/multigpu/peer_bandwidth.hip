// peer_bandwidth.hip - device-to-device bandwidth between GPU 0 and GPU 1 with peer copies
// (hipMemcpyPeerAsync; cudaMemcpyPeerAsync through gpu_runtime.h), one way and both ways at
// once, for message sizes around a halo face (a 512^2 face of doubles is 2 MiB), and single
// copies pushed by the source or pulled by the destination (what one face costs). It is the
// reference fdmini's halo bandwidth is compared with (bench/results/multigpu/README.md).
// Usage: peer_bandwidth            (prints one line per size and direction)
#include <stdio.h>
#include <stdlib.h>

#include "gpu_runtime.h"

#define CHECK(EXPR)                                                                            \
  do {                                                                                         \
    hipError_t e_ = (EXPR);                                                                    \
    if (e_ != hipSuccess) {                                                                    \
      fprintf(stderr, "peer_bandwidth: %s failed: %s\n", #EXPR, hipGetErrorString(e_));        \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

// Median of n timings (ms) of `reps` copies each, bytes one way per copy.
static double time_copies(void *dst0, void *src0, void *dst1, void *src1, size_t bytes, int both,
                          hipStream_t s0, hipStream_t s1, hipEvent_t a, hipEvent_t b, hipEvent_t c)
{
  const int reps = 20, n = 9;
  double t[9];
  for (int k = 0; k < n; k++) {
    CHECK(hipSetDevice(0));
    CHECK(hipEventRecord(a, s0));
    for (int r = 0; r < reps; r++) {
      CHECK(hipMemcpyPeerAsync(dst1, 1, src0, 0, bytes, s0)); // GPU 0 -> GPU 1
      if (both) CHECK(hipMemcpyPeerAsync(dst0, 0, src1, 1, bytes, s1)); // GPU 1 -> GPU 0
    }
    CHECK(hipEventRecord(b, s0));
    CHECK(hipSetDevice(1));
    CHECK(hipEventRecord(c, s1));
    CHECK(hipEventSynchronize(c));
    CHECK(hipSetDevice(0));
    CHECK(hipEventSynchronize(b));
    float ms;
    CHECK(hipEventElapsedTime(&ms, a, b));
    t[k] = ms / reps;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[n / 2];
}

// Median of 9 timings (ms) of ONE copy of `bytes` from GPU 0 to GPU 1, enqueued on the stream
// of GPU `on` (0: the source pushes, 1: the destination pulls), timed by events on that stream:
// what a halo exchange pays per face, copy-engine start included.
static double time_single(void *dst1, void *src0, size_t bytes, int on, hipStream_t s, hipEvent_t a,
                          hipEvent_t b)
{
  double t[9];
  for (int k = 0; k < 9; k++) {
    CHECK(hipSetDevice(on));
    CHECK(hipEventRecord(a, s));
    CHECK(hipMemcpyPeerAsync(dst1, 1, src0, 0, bytes, s));
    CHECK(hipEventRecord(b, s));
    CHECK(hipEventSynchronize(b));
    float ms;
    CHECK(hipEventElapsedTime(&ms, a, b));
    t[k] = ms;
  }
  for (int i = 1; i < 9; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[4];
}

int main(void)
{
  int count = 0, can01 = 0, can10 = 0;
  CHECK(hipGetDeviceCount(&count));
  if (count < 2) {
    printf("peer_bandwidth: %d device(s), need 2\n", count);
    return 0;
  }
  CHECK(hipDeviceCanAccessPeer(&can01, 0, 1));
  CHECK(hipDeviceCanAccessPeer(&can10, 1, 0));
  const size_t max = (size_t)64 << 20;
  void *src0, *dst0, *src1, *dst1;
  hipStream_t s0, s1;
  hipEvent_t a, b, c;
  CHECK(hipSetDevice(0));
  if (can01) CHECK(hipDeviceEnablePeerAccess(1, 0));
  CHECK(hipMalloc(&src0, max));
  CHECK(hipMalloc(&dst0, max));
  CHECK(hipStreamCreateWithPriority(&s0, hipStreamDefault, 0));
  CHECK(hipEventCreate(&a));
  CHECK(hipEventCreate(&b));
  CHECK(hipSetDevice(1));
  if (can10) CHECK(hipDeviceEnablePeerAccess(0, 0));
  CHECK(hipMalloc(&src1, max));
  CHECK(hipMalloc(&dst1, max));
  CHECK(hipStreamCreateWithPriority(&s1, hipStreamDefault, 0));
  CHECK(hipEventCreate(&c));
  hipDeviceProp_t p0;
  CHECK(hipGetDeviceProperties(&p0, 0));
  printf("peer_bandwidth: %s x2, peer access %s\n", p0.name, can01 && can10 ? "on" : "OFF");
  const size_t sizes[] = {256 << 10, 1 << 20, 2 << 20, 8 << 20, 64 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    double one = time_copies(dst0, src0, dst1, src1, sizes[i], 0, s0, s1, a, b, c);
    double two = time_copies(dst0, src0, dst1, src1, sizes[i], 1, s0, s1, a, b, c);
    printf("peer_bandwidth: %8zu KiB  one way %7.2f us %7.1f GB/s   both ways %7.2f us %7.1f GB/s per direction\n",
           sizes[i] >> 10, one * 1e3, sizes[i] / (one * 1e-3) / 1e9, two * 1e3,
           sizes[i] / (two * 1e-3) / 1e9);
  }
  hipEvent_t c2;
  CHECK(hipSetDevice(1));
  CHECK(hipEventCreate(&c2));
  for (size_t i = 2; i < 4; i++) {
    double push = time_single(dst1, src0, sizes[i], 0, s0, a, b);
    double pull = time_single(dst1, src0, sizes[i], 1, s1, c, c2);
    printf("peer_bandwidth: %8zu KiB  single copy: pushed by the source %7.2f us %7.1f GB/s   pulled by the destination %7.2f us %7.1f GB/s\n",
           sizes[i] >> 10, push * 1e3, sizes[i] / (push * 1e-3) / 1e9, pull * 1e3, sizes[i] / (pull * 1e-3) / 1e9);
  }
  return 0;
}
