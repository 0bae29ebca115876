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

/* The fastest candidate of t not in idx[0..n-1], or -1: of kernel family `family` whatever its
 * time where family >= 0, else one within `limit` ms; with one_per_family, of a family none of
 * idx[] is of. */
static int next_finalist(const fd_tune *t, const int *idx, int n, double limit, int family, int one_per_family)
{
  int next = -1;
  for (int i = 0; i < t->n; i++) {
    int taken = 0;
    for (int q = 0; q < n; q++) taken |= idx[q] == i || (one_per_family && t->cand[idx[q]].id == t->cand[i].id);
    const int fits = family >= 0 ? (int)t->cand[i].id == family : t->ms[i] <= limit;
    if (!taken && fits && (next < 0 || t->ms[i] < t->ms[next])) next = i;
  }
  return next;
}

int tune_kernel_finalists(const fd_tune *t, double margin, int most, int *idx)
{
  if (t->n <= 0 || most <= 0) return 0;
  const double limit = t->ms[fd_kernel_fastest(t->ms, t->n)] * (1.0 + margin);
  int n = 0, next;
  /* the fastest of each kernel family within the margin, then the others within it */
  while (n < most && (next = next_finalist(t, idx, n, limit, -1, 1)) >= 0) idx[n++] = next;
  while (n < most && (next = next_finalist(t, idx, n, limit, -1, 0)) >= 0) idx[n++] = next;
  return n;
}

int tune_family_finalists(const fd_tune *t, int family, int *idx, int n)
{
  int next;
  while (n < FD_TUNE_MAX && (next = next_finalist(t, idx, n, 0.0, family, 0)) >= 0) idx[n++] = next;
  return n;
}

int tune_fuse_others(const fd_fuse_tune *ft, int except, int *idx)
{
  int n = 0;
  for (int i = 0; i < ft->n && i < FD_FUSE_TUNE_MAX; i++)
    if (i != except && (ft->loop_ms[i][0] > 0 || ft->loop_ms[i][1] > 0)) idx[n++] = i;
  return n;
}

/* 1 when this rank's backend runs c as it is (T = 1 is the single-step kernel: always). */
static int runs_here(const fd_fused *c)
{
  if (c->steps == 1) return 1;
  fd_fused r = *c;
  return be_fused_resolve(&r) == BE_OK && memcmp(&r, c, sizeof r) == 0;
}

enum { FUSED_INTS = 5 }; /* an fd_fused as plain ints, for MPI */

int tune_fused_common(MPI_Comm comm, fd_fused *cand, int *n)
{
  int size;
  FD_MPI(MPI_Comm_size(comm, &size));
  int flat[FUSED_INTS * FD_FUSE_TUNE_MAX], mine = *n < FD_FUSE_TUNE_MAX ? *n : FD_FUSE_TUNE_MAX;
  for (int i = 0; i < mine; i++) {
    const fd_fused *c = &cand[i];
    const int v[FUSED_INTS] = {c->steps, c->tile, c->vec, c->block_y, c->chunk};
    memcpy(flat + FUSED_INTS * i, v, sizeof v);
  }
  mine *= FUSED_INTS;
  /* every rank's list (allocations agreed before each collective that needs them) */
  int *counts = malloc(sizeof *counts * (size_t)size), *displs = malloc(sizeof *displs * (size_t)size);
  int *all = NULL, total = 0;
  int err = fd_agree(comm, counts && displs ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "fused autotune: out of host memory"));
  if (err == FD_OK) err = MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, comm) == MPI_SUCCESS
                              ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "fused autotune: MPI_Allgather failed");
  if (err == FD_OK) {
    for (int r = 0; r < size; r++) {
      displs[r] = total;
      total += counts[r];
    }
    all = malloc(sizeof *all * (size_t)(total > 0 ? total : 1));
    err = fd_agree(comm, all ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "fused autotune: out of host memory"));
  }
  if (err == FD_OK)
    err = MPI_Allgatherv(flat, mine, MPI_INT, all, counts, displs, MPI_INT, comm) == MPI_SUCCESS
              ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "fused autotune: MPI_Allgatherv failed");
  /* the union in rank order without repeats (the same on every rank), then what every rank
   * runs as it is */
  fd_fused uni[FD_FUSE_TUNE_MAX];
  int ok[FD_FUSE_TUNE_MAX], nu = 0;
  for (int q = 0; err == FD_OK && q < total / FUSED_INTS && nu < FD_FUSE_TUNE_MAX; q++) {
    const int *v = all + FUSED_INTS * q;
    fd_fused c = {v[0], v[1], v[2], v[3], v[4]};
    int seen = 0;
    for (int u = 0; u < nu && !seen; u++) seen = memcmp(&uni[u], &c, sizeof c) == 0;
    if (!seen) uni[nu++] = c;
  }
  free(counts);
  free(displs);
  free(all);
  FD_CALL(err);
  for (int u = 0; u < nu; u++) ok[u] = runs_here(&uni[u]);
  if (nu > 0) FD_MPI(MPI_Allreduce(MPI_IN_PLACE, ok, nu, MPI_INT, MPI_MIN, comm));
  *n = 0;
  for (int u = 0; u < nu; u++)
    if (ok[u]) cand[(*n)++] = uni[u];
  return FD_OK;
}

int tune_fused(MPI_Comm comm, const fd_kernel_trial *t1, fd_kernel single,
               const fd_fused_trial *tf, const int *steps, int nsteps, fd_fuse_tune *out)
{
  fd_fused cand[FD_FUSE_TUNE_MAX];
  int n = 0;
  for (int i = 0; i < nsteps && n < FD_FUSE_TUNE_MAX; i++) {
    if (steps[i] == 1) {
      memset(&cand[n], 0, sizeof cand[n]);
      cand[n++].steps = 1;
      continue;
    }
    n += be_fused_candidates(steps[i], tf, cand + n, FD_FUSE_TUNE_MAX - n);
  }
  return tune_fused_list(comm, t1, single, tf, cand, n, steps[0], out);
}

int tune_fused_list(MPI_Comm comm, const fd_kernel_trial *t1, fd_kernel single,
                    const fd_fused_trial *tf, const fd_fused *cand, int ncand, int first_steps,
                    fd_fuse_tune *out)
{
  memset(out, 0, sizeof *out);
  out->n = ncand < FD_FUSE_TUNE_MAX ? ncand : FD_FUSE_TUNE_MAX;
  memcpy(out->cand, cand, sizeof *cand * (size_t)out->n);
  /* the same list on every rank before anything is timed: devices with less shared memory per
   * block filter the candidates differently, and tune_agree needs one list */
  FD_CALL(tune_fused_common(comm, out->cand, &out->n));
  if (out->n == 0) /* no candidate (a backend without fused configurations, or none runs everywhere) */
    return fd_agree(comm, fd_set_error(FD_ERR_RUNTIME, "fused autotune: no configuration of %d steps runs on every rank's device", first_steps));
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
