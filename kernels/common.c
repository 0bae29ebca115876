/* common.c - the parts of the backend API that are the same for every backend: kernel names,
 * the host-side evaluation of analytic fields and the host thread count. Compiled into every
 * build; calls no backend function. */
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "pointwise.h"

static const char *const kernel_names[FD_KERNEL_COUNT] = {"baseline", "reordered"};

int fd_kernel_from_name(const char *name)
{
  for (int k = 0; k < FD_KERNEL_COUNT; k++)
    if (strcmp(name, kernel_names[k]) == 0) return k;
  return -1;
}

const char *fd_kernel_name(fd_kernel_id id)
{
  return (id >= 0 && id < FD_KERNEL_COUNT) ? kernel_names[id] : NULL;
}

double fd_field_value(const fd_field *fl, long long gi, long long gj, long long gk)
{
  return fd_field_eval(fl->kind, fl->scale, fl->h, fl->L, fl->seed, gi, gj, gk);
}

void be_set_host_threads(int threads)
{
#ifdef _OPENMP
  omp_set_num_threads(threads > 0 ? threads : 1);
#else
  (void)threads;
#endif
}
