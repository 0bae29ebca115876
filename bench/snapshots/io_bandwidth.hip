// io_bandwidth.hip - the two bandwidths that bound fdmini's snapshot output on one GPU, for
// given snapshot sizes: device-to-host copies into pinned memory (hipMemcpyAsync, as the
// snapshot IO stream does) and buffered writes from that pinned memory into a new file in a
// directory (pwrite from one thread, as the snapshot writer thread does; no fsync: the page
// cache or tmpfs, like the snapshots). Medians of several repetitions. It is the reference
// bench/snapshots/overhead.sh compares the snapshot rate with (bench/snapshots/README.md).
// Usage: io_bandwidth DIR BYTES...        one line per size:
//   io bytes=B d2h_gbs=X write_gbs=Y dir=DIR
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_runtime.h"

#define CHECK(EXPR)                                                                            \
  do {                                                                                         \
    hipError_t e_ = (EXPR);                                                                    \
    if (e_ != hipSuccess) {                                                                    \
      fprintf(stderr, "io_bandwidth: %s failed: %s\n", #EXPR, hipGetErrorString(e_));          \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median(double *t, int n)
{
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[n / 2];
}

// Seconds to write bytes from buf into a new file path (pwrite in 64 MiB pieces, close).
static double time_write(const char *path, const char *buf, size_t bytes)
{
  double t0 = now_s();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    fprintf(stderr, "io_bandwidth: cannot create %s: %s\n", path, strerror(errno));
    exit(1);
  }
  for (size_t off = 0; off < bytes;) {
    size_t n = bytes - off < ((size_t)64 << 20) ? bytes - off : ((size_t)64 << 20);
    ssize_t w = pwrite(fd, buf + off, n, (off_t)off);
    if (w <= 0) {
      fprintf(stderr, "io_bandwidth: writing %s: %s\n", path, strerror(errno));
      exit(1);
    }
    off += (size_t)w;
  }
  if (close(fd) != 0) {
    fprintf(stderr, "io_bandwidth: closing %s: %s\n", path, strerror(errno));
    exit(1);
  }
  double t = now_s() - t0;
  unlink(path);
  return t;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: io_bandwidth DIR BYTES...\n");
    return 2;
  }
  const char *dir = argv[1];
  char path[4096];
  snprintf(path, sizeof path, "%s/io_bandwidth.%ld.tmp", dir, (long)getpid());
  hipStream_t st;
  hipEvent_t a, b;
  CHECK(hipStreamCreateWithPriority(&st, hipStreamDefault, 0));
  CHECK(hipEventCreate(&a));
  CHECK(hipEventCreate(&b));
  for (int i = 2; i < argc; i++) {
    size_t bytes = (size_t)strtoull(argv[i], NULL, 10);
    void *dev = NULL, *host = NULL;
    CHECK(hipMalloc(&dev, bytes));
    CHECK(gpuHostAlloc(&host, bytes));
    memset(host, 1, bytes); // fault the pages in once, as fdmini's pool does over a run
    const int n = 5;
    double d2h[5], wr[5];
    for (int k = 0; k < n; k++) {
      CHECK(hipEventRecord(a, st));
      CHECK(hipMemcpyAsync(host, dev, bytes, hipMemcpyDeviceToHost, st));
      CHECK(hipEventRecord(b, st));
      CHECK(hipEventSynchronize(b));
      float ms;
      CHECK(hipEventElapsedTime(&ms, a, b));
      d2h[k] = bytes / (ms * 1e-3) / 1e9;
    }
    for (int k = 0; k < n; k++) wr[k] = bytes / time_write(path, (const char *)host, bytes) / 1e9;
    printf("io bytes=%zu d2h_gbs=%.2f write_gbs=%.2f dir=%s\n", bytes, median(d2h, n), median(wr, n), dir);
    fflush(stdout);
    CHECK(hipFree(dev));
    CHECK(gpuHostFree(host));
  }
  return 0;
}
