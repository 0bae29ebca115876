/* gpu_internal.h - private to the .hip files of kernels/gpu: the error-checking macros, the stream and
 * event structs behind backend.h's opaque handles, and the cached device properties. */
#ifndef FDMINI_GPU_INTERNAL_H
#define FDMINI_GPU_INTERNAL_H

#include "gpu_runtime.h"

#include "backend.h"
#include "gpu_tuning.h"

struct be_stream_s {
  hipStream_t s;
  int priority; /* the hip/cuda priority value it was created with */
};
struct be_event_s {
  hipEvent_t e;
};

/* The stream to enqueue on: a NULL be_stream means the legacy default stream, which does not
 * synchronise with the non-blocking streams of be_stream_create (fdmini passes none). */
static inline hipStream_t gpu_stream(be_stream s) { return s ? s->s : (hipStream_t)0; }

/* Records "FILE:LINE: WHAT failed: <error name>: <error string>" as be_error_message() and
 * returns BE_ERROR. */
int gpu_fail_private(const char *file, int line, const char *what, hipError_t e);
/* printf-style message, returns `code`. */
int gpu_failf_private(int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Every runtime call goes through GPU(...). */
#define GPU(EXPR)                                                                            \
  do {                                                                                       \
    hipError_t gpu_e_ = (EXPR);                                                              \
    if (gpu_e_ != hipSuccess) return gpu_fail_private(__FILE__, __LINE__, #EXPR, gpu_e_);    \
  } while (0)

/* After every kernel launch: catches bad configurations and earlier sticky errors. NAME is
 * the kernel (and its template arguments) for the message. */
#define GPU_LAUNCHED(NAME)                                                                   \
  do {                                                                                       \
    hipError_t gpu_e_ = hipGetLastError();                                                   \
    if (gpu_e_ != hipSuccess) return gpu_fail_private(__FILE__, __LINE__, NAME, gpu_e_);     \
  } while (0)

/* Properties of the bound device, read once by be_init. */
extern gpu_device_props gpu_props_private;
extern int gpu_initialized_private;
/* be_set_device_sharers' count (>= 1): the L2 a rank's pass can count on is l2_bytes / it */
extern int gpu_sharers_private;

#endif
