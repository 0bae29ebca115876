// peer_bandwidth.hip - device-to-device bandwidth between GPU 0 and GPU 1 with peer copies
// (hipMemcpyPeerAsync; cudaMemcpyPeerAsync through gpu_runtime.h), one way and both ways at
// once, for message sizes around a halo face (a 512^2 face of doubles is 2 MiB). It is the
// reference fdmini's halo bandwidth is compared with (bench/multigpu/README.md).
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
  return 0;
}
