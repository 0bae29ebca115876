/* gpu_check.h - what the plain-C GPU tests share (no cmocka on the GPU nodes): the pass and
 * fail counts their last line prints, the stream they run on, REQUIRE for backend calls that
 * must succeed and check for one assertion. Test-only, header-only, one test program per
 * include. */
#ifndef FDMINI_GPU_CHECK_H
#define FDMINI_GPU_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"

static int n_pass, n_fail;
static be_stream S;

/* Counts ok as a pass; otherwise a failure, printed as "FAIL: " and the message. */
static inline void check(int ok, const char *fmt, ...)
{
  if (ok) {
    n_pass++;
    return;
  }
  n_fail++;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* A backend call that must return BE_OK: otherwise the error, the counts and exit 1. */
#define REQUIRE(call)                                                                       \
  do {                                                                                      \
    if ((call) != BE_OK) {                                                                  \
      printf("FATAL: %s failed: %s\n", #call, be_error_message());                         \
      printf("%d passed, %d failed\n", n_pass, n_fail + 1);                                 \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

#endif
