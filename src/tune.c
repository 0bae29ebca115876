/* tune.c - start-up measurements on each rank's own block (tune.h): the device copy bandwidth
 * and the autotunes (single steps and fused passes), whose timing half (fd_kernel_time,
 * fd_fused_time) lives with the kernels and whose agreement across ranks lives here. */
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "tune.h"

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

int tune_memcpy_gbs(void *dst, const void *src, size_t bytes, be_stream s, double *gbs)
{
  enum { REPS = 5, BATCH_MAX = 64 };
  be_event e0 = NULL, e1 = NULL;
  float ms[REPS], one = 0;
  FD_BE(be_event_create(&e0));
  FD_BE(be_event_create(&e1));
  FD_BE(be_memcpy_async(dst, src, bytes, BE_COPY_D2D, s));
  /* a batch of back-to-back copies takes about 0.2 ms: one copy of a large field, up to 64 of
   * a small one (whose single copy an event pair would time mostly as overhead) */
  FD_BE(be_event_record(e0, s));
  FD_BE(be_memcpy_async(dst, src, bytes, BE_COPY_D2D, s));
  FD_BE(be_event_record(e1, s));
  FD_BE(be_event_sync(e1));
  FD_BE(be_event_elapsed_ms(&one, e0, e1));
  const double b = one > 0 ? 0.2 / one : BATCH_MAX;
  const int batch = b < 1 ? 1 : (b > BATCH_MAX ? BATCH_MAX : (int)b);
  for (int r = 0; r < REPS; r++) {
    FD_BE(be_event_record(e0, s));
    for (int k = 0; k < batch; k++) FD_BE(be_memcpy_async(dst, src, bytes, BE_COPY_D2D, s));
    FD_BE(be_event_record(e1, s));
    FD_BE(be_event_sync(e1));
    FD_BE(be_event_elapsed_ms(&ms[r], e0, e1));
    ms[r] /= (float)batch;
  }
  FD_BE(be_event_destroy(e0));
  FD_BE(be_event_destroy(e1));
  qsort(ms, REPS, sizeof ms[0], cmp_float);
  const double t = ms[REPS / 2] > 0 ? ms[REPS / 2] * 1e-3 : 1e-9; /* host copies can be that fast */
  *gbs = 2.0 * (double)bytes / t / 1e9;
  return FD_OK;
}

int tune_agree(MPI_Comm comm, double *ms, int n, int *chosen)
{
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, ms, n, MPI_DOUBLE, MPI_MAX, comm));
  *chosen = fd_kernel_fastest(ms, n);
  return FD_OK;
}

int tune_kernel(MPI_Comm comm, const fd_kernel_trial *t, fd_tune *out)
{
  memset(out, 0, sizeof *out);
  out->n = be_kernel_candidates(out->cand, FD_TUNE_MAX);
  /* the ranks time together, as they will run (ranks sharing a device share it here too) */
  FD_MPI(MPI_Barrier(comm));
  const double t0 = fd_now();
  int err = fd_kernel_time(t, out->cand, out->n, 5, out->ms) == BE_OK
                ? FD_OK
                : fd_set_error(FD_ERR_RUNTIME, "autotune: %s", be_error_message());
  FD_CALL(fd_agree(comm, err));
  FD_CALL(tune_agree(comm, out->ms, out->n, &out->chosen));
  const double dt = fd_now() - t0;
  FD_MPI(MPI_Allreduce(&dt, &out->seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  out->ran = 1;
  return FD_OK;
}

int tune_fused(MPI_Comm comm, const fd_kernel_trial *t1, fd_kernel single,
               const fd_fused_trial *tf, const int *steps, int nsteps, fd_fuse_tune *out)
{
  memset(out, 0, sizeof *out);
  for (int i = 0; i < nsteps && out->n < FD_FUSE_TUNE_MAX; i++) {
    if (steps[i] == 1) {
      out->cand[out->n++].steps = 1;
      continue;
    }
    out->n += be_fused_candidates(steps[i], out->cand + out->n, FD_FUSE_TUNE_MAX - out->n);
  }
  if (out->n == 0) /* no candidate (a backend without fused configurations) */
    return fd_agree(comm, fd_set_error(FD_ERR_RUNTIME, "fused autotune: this backend offers no configuration of %d steps", steps[0]));
  FD_MPI(MPI_Barrier(comm));
  const double t0 = fd_now();
  int err = FD_OK;
  for (int i = 0; i < out->n && err == FD_OK; i++) {
    int rc = out->cand[i].steps == 1 ? fd_kernel_time(t1, &single, 1, 5, &out->ms[i])
                                     : fd_fused_time(tf, &out->cand[i], 1, 5, &out->ms[i]);
    if (rc != BE_OK) err = fd_set_error(FD_ERR_RUNTIME, "fused autotune: %s", be_error_message());
    out->ms[i] /= out->cand[i].steps;
  }
  FD_CALL(fd_agree(comm, err));
  FD_CALL(tune_agree(comm, out->ms, out->n, &out->chosen));
  const double dt = fd_now() - t0;
  FD_MPI(MPI_Allreduce(&dt, &out->seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  out->ran = 1;
  out->steps = out->cand[out->chosen].steps;
  out->config = out->cand[out->chosen];
  return FD_OK;
}
