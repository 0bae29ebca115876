/* solver.c - one run: set-up, the step schedule (solver_step, the one place it lives), the
 * timed loop with progress lines, and the reductions the report needs. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd_error.h"
#include "state.h"

const char *const fd_phase_names[PH_COUNT] = {"pack", "exchange", "unpack", "interior",
                                              "boundary", "step"};

/* ---- device binding ---- */

int fd_device_init(MPI_Comm comm, be_info *dev, int *shared)
{
  MPI_Comm node;
  int local_rank, local_size, count = 0;
  FD_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  FD_MPI(MPI_Comm_rank(node, &local_rank));
  FD_MPI(MPI_Comm_size(node, &local_size));
  FD_MPI(MPI_Comm_free(&node));
  int err = be_device_count(&count) != BE_OK
                ? fd_set_error(FD_ERR_RUNTIME, "no usable device: %s", be_error_message())
                : (count < 1 ? fd_set_error(FD_ERR_RUNTIME, "no device visible to this rank") : FD_OK);
  FD_CALL(fd_agree(comm, err));
  /* without OMP_NUM_THREADS, ranks on a node share its cores instead of each taking all */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (!getenv("OMP_NUM_THREADS")) be_set_host_threads((int)(cores / local_size));
  FD_BE(be_init(local_rank % count, dev));
  *shared = dev->is_accelerator && local_size > count;
  return FD_OK;
}

/* ---- sizes ---- */

int fd_resolve_grid(const fd_options *o, int ranks, const be_info *dev, long long N[3], int P[3])
{
  if (o->have_procs) {
    long long prod = (long long)o->procs[0] * o->procs[1] * o->procs[2];
    if (prod != ranks)
      return fd_set_error(FD_ERR_USAGE, "--procs %d,%d,%d has %lld ranks but the job has %d",
                          o->procs[0], o->procs[1], o->procs[2], prod, ranks);
    memcpy(P, o->procs, sizeof o->procs);
  } else {
    /* MPI_Dims_create's factors come largest first; give the largest to z, then y: z and y
     * faces are whole planes and rows in memory (x fastest), cheap to pack, while an x face
     * is a gather with stride nx+2 */
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(ranks, 3, dims);
    P[0] = dims[2];
    P[1] = dims[1];
    P[2] = dims[0];
  }
  if (o->have_global) {
    memcpy(N, o->global, 3 * sizeof N[0]);
  } else if (o->have_local || dev->is_accelerator) {
    /* weak scaling: --local per rank; GPUs default to 512^3 per rank */
    for (int d = 0; d < 3; d++) {
      long long n = o->have_local ? o->local[d] : 512;
      if (n > (1LL << 40) / P[d]) return fd_set_error(FD_ERR_USAGE, "--local: global grid too large");
      N[d] = n * P[d];
    }
  } else {
    N[0] = N[1] = N[2] = 128; /* host default: seconds for 8 ranks on 2 cores */
  }
  return decomp_check(N, P);
}

/* ---- the step ---- */

/* Adds the compute-stream timings of the previous step. With an exchange they are complete
 * by the time this step's pack has been waited for (the pack waited for the previous shell
 * update); alone, the host waits here while the device already runs this step's interior. */
static int accumulate_previous(fd_state *s)
{
  if (!s->timing_pending) return FD_OK;
  int p = (int)((s->steps - 1) % 2);
  float a, b;
  FD_BE(be_event_sync(s->t_ev[p][1]));
  FD_BE(be_event_sync(s->t_ev[p][3]));
  FD_BE(be_event_elapsed_ms(&a, s->t_ev[p][0], s->t_ev[p][1]));
  FD_BE(be_event_elapsed_ms(&b, s->t_ev[p][2], s->t_ev[p][3]));
  s->ms_interior += a;
  s->ms_shell += b;
  s->timing_pending = 0;
  return FD_OK;
}

/* The stencil over one region on stream st, between timing events. */
static int update(fd_state *s, fd_region region, int slot, be_stream st)
{
  const int e = region == FD_REGION_INTERIOR ? 0 : 2;
  FD_BE(be_event_record(s->t_ev[slot][e], st));
  be_range_push(region == FD_REGION_INTERIOR ? "interior" : "boundary");
  FD_BE(be_stencil(&s->grid, region, s->deferred, &s->prob.coeffs, s->u, s->f, s->v, s->kernel, st));
  be_range_pop();
  FD_BE(be_event_record(s->t_ev[slot][e + 1], st));
  return FD_OK;
}

/* One step: the schedule of fdmini, in one place.
 *
 *   halo stream:    wait(ready) -> pack 6 faces ----------> unpack ghosts -> shell update -> signal
 *   host:                 sync pack -> MPI_Isend (Irecv preposted) -> MPI_Waitall
 *   compute stream: interior update ------------------------------------------------> wait(signal)
 *
 * The interior reads no ghost that an exchange fills, so it runs while the faces travel; the
 * shell (the one-point layers next to faces with a neighbour) runs once those ghosts are in,
 * on the halo stream, so it too overlaps the interior update instead of following it: the two
 * write disjoint points. The compute stream waits for the shell before the next step, whose
 * output buffer is the shell's input. Faces at the global edge hold fixed Dirichlet ghosts:
 * their layers belong to the interior. --no-overlap runs pack, exchange, unpack, interior and
 * shell one after another on the compute stream; the --baseline run ("alone") is the interior
 * update of the whole block, with no exchange. Output v; heat and jacobi then swap u and v. */
static int solver_step(fd_state *s)
{
  const int slot = (int)(s->steps % 2);
  const int exchange = !s->alone, overlap = s->opt->overlap;
  s->deferred = 0;
  for (int f = 0; exchange && f < FD_FACES; f++) s->deferred |= (unsigned)s->halo.faces.active[f] << f;
  if (exchange) {
    FD_BE(be_event_record(s->ready, s->compute));
    FD_CALL(halo_exchange_begin(&s->halo, s->u, s->ready));
  }
  const be_stream shell_stream = exchange && overlap ? s->halo_stream : s->compute;
  if (!exchange || overlap) FD_CALL(update(s, FD_REGION_INTERIOR, slot, s->compute));
  if (exchange) FD_CALL(halo_exchange_end(&s->halo, s->u, shell_stream));
  FD_CALL(accumulate_previous(s));
  if (exchange && !overlap) FD_CALL(update(s, FD_REGION_INTERIOR, slot, s->compute));
  FD_CALL(update(s, FD_REGION_SHELL, slot, shell_stream));
  if (shell_stream != s->compute) FD_BE(be_stream_wait_event(s->compute, s->t_ev[slot][3]));
  s->timing_pending = 1;
  if (s->prob.swaps) {
    real_t *t = s->u;
    s->u = s->v;
    s->v = t;
  }
  s->steps++;
  return FD_OK;
}

int state_exchange(fd_state *s, real_t *u)
{
  FD_BE(be_event_record(s->ready, s->compute));
  FD_CALL(halo_exchange_begin(&s->halo, u, s->ready));
  FD_CALL(halo_exchange_end(&s->halo, u, s->compute));
  FD_BE(be_stream_sync(s->compute));
  FD_CALL(halo_flush_timers(&s->halo));
  return FD_OK;
}

/* ---- set-up and tear-down ---- */

static int state_create(fd_state *s, const fd_options *o, MPI_Comm comm, const be_info *dev,
                        const long long N[3], const int P[3])
{
  memset(s, 0, sizeof *s);
  s->opt = o;
  s->dev = dev;
  s->dec.cart = MPI_COMM_NULL;
  FD_CALL(decomp_create(comm, N, P, &s->dec));
  for (int d = 0; d < 3; d++) s->grid.n[d] = s->dec.n[d];
  problem_setup(o->op, N, s->dec.start, &s->prob);

  FD_BE(be_kernel_default(&s->grid, &s->kernel));
  if (o->kernel >= 0) s->kernel.id = (fd_kernel_id)o->kernel;
  if (o->tile) s->kernel.tile = o->tile;
  if (s->kernel.id == FD_KERNEL_BASELINE) s->kernel.tile = 1;

  int staged;
  FD_CALL(halo_choose_mode(s->dec.cart, o->mpi_gpu, dev, &staged));

  /* allocation can fail on some ranks only (uneven splits, memory): agree before going on */
  size_t bytes = fd_grid_points_with_ghosts(&s->grid) * sizeof(real_t);
  int err = FD_OK;
  if (be_malloc((void **)&s->u, bytes) != BE_OK || be_malloc((void **)&s->v, bytes) != BE_OK ||
      (s->prob.has_rhs && be_malloc((void **)&s->f, bytes) != BE_OK))
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the fields (%d x %zu bytes): %s",
                       s->dec.rank, s->prob.has_rhs ? 3 : 2, bytes, be_error_message());
  FD_CALL(fd_agree(s->dec.cart, err));

  FD_BE(be_stream_create(&s->compute, BE_PRIORITY_NORMAL));
  FD_BE(be_stream_create(&s->halo_stream, BE_PRIORITY_HIGH));
  FD_BE(be_event_create(&s->ready));
  for (int k = 0; k < 2; k++)
    for (int e = 0; e < 4; e++) FD_BE(be_event_create(&s->t_ev[k][e]));
  FD_CALL(halo_create(&s->halo, s->dec.cart, s->dec.nbr, &s->grid, staged, s->halo_stream));

  return FD_OK;
}

static int state_destroy(fd_state *s)
{
  FD_CALL(halo_destroy(&s->halo));
  FD_BE(be_free(s->u));
  FD_BE(be_free(s->v));
  FD_BE(be_free(s->f));
  if (s->ready) FD_BE(be_event_destroy(s->ready));
  for (int k = 0; k < 2; k++)
    for (int e = 0; e < 4; e++)
      if (s->t_ev[k][e]) FD_BE(be_event_destroy(s->t_ev[k][e]));
  if (s->compute) FD_BE(be_stream_destroy(s->compute));
  if (s->halo_stream) FD_BE(be_stream_destroy(s->halo_stream));
  FD_CALL(decomp_destroy(&s->dec));
  return FD_OK;
}

/* ---- the run ---- */

static void reduce_stat(MPI_Comm comm, int ranks, double x, fd_stat *st)
{
  MPI_Allreduce(&x, &st->min, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&x, &st->max, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&x, &st->avg, 1, MPI_DOUBLE, MPI_SUM, comm);
  st->avg /= ranks;
}

static int run_steps(fd_state *s, int n, int timed)
{
  const int progress = s->opt->progress < 0 ? 10 : s->opt->progress;
  double t_start = fd_now(), t_last = t_start;
  for (int it = 0; it < n; it++) {
    FD_CALL(solver_step(s));
    if (progress && s->dec.rank == 0) {
      double t = fd_now();
      if (t - t_last >= progress) {
        double per = (t - t_start) / (it + 1);
        printf("fdmini: %s step %d/%d (%.0f%%), %.1f s elapsed, about %.0f s to go\n",
               timed ? "timed" : "warm-up", it + 1, n, 100.0 * (it + 1) / n, t - t_start,
               per * (n - it - 1));
        fflush(stdout);
        t_last = t;
      }
    }
  }
  return FD_OK;
}

/* (Re)initialises the fields: both buffers carry the boundary values in their ghosts. */
static int state_fill(fd_state *s)
{
  FD_BE(be_fill(&s->grid, &s->prob.u0, s->u, s->compute));
  FD_BE(be_fill(&s->grid, &s->prob.u0, s->v, s->compute));
  if (s->f) FD_BE(be_fill(&s->grid, &s->prob.f, s->f, s->compute));
  FD_BE(be_stream_sync(s->compute));
  s->steps = 0;
  s->timing_pending = 0;
  return FD_OK;
}

/* warmup untimed steps, then iters timed ones between barriers; *step_ms = wall time per
 * step. Phase sums restart at the timed steps. Collective. */
static int timed_loop(fd_state *s, int warmup, int iters, double *step_ms)
{
  FD_CALL(run_steps(s, warmup, 0));
  FD_BE(be_stream_sync(s->compute));
  FD_CALL(accumulate_previous(s));
  FD_CALL(halo_flush_timers(&s->halo));
  s->ms_interior = s->ms_shell = 0.0;
  halo_reset_timers(&s->halo);
  FD_MPI(MPI_Barrier(s->dec.cart));
  double t0 = fd_now();
  FD_CALL(run_steps(s, iters, 1));
  FD_BE(be_stream_sync(s->compute));
  double t1 = fd_now();
  FD_CALL(accumulate_previous(s));
  FD_CALL(halo_flush_timers(&s->halo));
  *step_ms = (t1 - t0) * 1e3 / iters;
  return FD_OK;
}

int fd_run(const fd_options *o, MPI_Comm comm, const be_info *dev, fd_result *r)
{
  int ranks, rank;
  FD_MPI(MPI_Comm_size(comm, &ranks));
  FD_MPI(MPI_Comm_rank(comm, &rank));
  memset(r, 0, sizeof *r);

  long long N[3];
  int P[3];
  FD_CALL(fd_agree(comm, fd_resolve_grid(o, ranks, dev, N, P)));

  fd_state st, *s = &st;
  FD_CALL(state_create(s, o, comm, dev, N, P));
  FD_CALL(state_fill(s));

  r->op = o->op;
  r->ranks = ranks;
  r->iters = o->iters > 0 ? o->iters : 100;
  r->warmup = o->warmup >= 0 ? o->warmup : (dev->is_accelerator ? 10 : 2);
  r->kernel = s->kernel;
  r->staged = s->halo.staged;
  r->overlap = o->overlap;
  r->bytes_per_point = s->prob.bytes_per_point;
  r->dt = s->prob.dt;
  for (int d = 0; d < 3; d++) {
    r->procs[d] = P[d];
    r->global[d] = N[d];
    r->local_min[d] = s->dec.nmin[d];
    r->local_max[d] = s->dec.nmax[d];
  }

  /* --baseline: every rank's block alone first (same kernels and steps, no exchange), then
   * the fields start over for the distributed run */
  double alone_ms = 0.0;
  if (o->baseline) {
    s->alone = 1;
    FD_CALL(timed_loop(s, r->warmup, r->iters, &alone_ms));
    s->alone = 0;
    FD_CALL(state_fill(s));
  }

  /* jacobi: the residual before the first step */
  if (o->check && o->op == FD_OP_JACOBI) FD_CALL(verify_residual(s, &r->verify.residual0));

  double step_ms;
  FD_CALL(timed_loop(s, r->warmup, r->iters, &step_ms));

  /* ---- timings over ranks ---- */
  const double it = r->iters;
  double ph[PH_COUNT] = {s->halo.pack_ms / it, s->halo.exchange_ms / it, s->halo.unpack_ms / it,
                         s->ms_interior / it, s->ms_shell / it, step_ms};
  for (int k = 0; k < PH_COUNT; k++) reduce_stat(comm, ranks, ph[k], &r->phase[k]);
  double loop_s = step_ms * 1e-3 * it;
  FD_MPI(MPI_Allreduce(&loop_s, &r->total_s, 1, MPI_DOUBLE, MPI_MAX, comm));
  double local_points = (double)s->grid.n[0] * s->grid.n[1] * s->grid.n[2];
  double bw = local_points * s->prob.bytes_per_point / (ph[PH_STEP] * 1e-3) / 1e9;
  reduce_stat(comm, ranks, bw, &r->bw_rank);
  r->bw_total = r->bw_rank.avg * ranks;
  r->points_per_s = (double)N[0] * N[1] * N[2] / (r->phase[PH_STEP].max * 1e-3);
  unsigned long long hb = s->halo.bytes_sent, hb_max;
  FD_MPI(MPI_Allreduce(&hb, &hb_max, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
  r->halo_bytes_max = (size_t)hb_max;
  double hgbs = ph[PH_EXCHANGE] > 0 ? (double)hb / (ph[PH_EXCHANGE] * 1e-3) / 1e9 : 0.0;
  reduce_stat(comm, ranks, hgbs, &r->halo_gbs);
  if (o->baseline) {
    double comm_ms = ph[PH_PACK] + ph[PH_EXCHANGE] + ph[PH_UNPACK];
    double hidden = comm_ms > 0 ? 1.0 - (step_ms - alone_ms) / comm_ms : 1.0;
    hidden = hidden < 0 ? 0 : (hidden > 1 ? 1 : hidden);
    r->baseline = 1;
    reduce_stat(comm, ranks, alone_ms, &r->alone_ms);
    reduce_stat(comm, ranks, alone_ms / step_ms, &r->efficiency);
    reduce_stat(comm, ranks, hidden, &r->hidden);
  }

  /* ---- verification and output ---- */
  real_t *result = s->prob.swaps ? s->u : s->v;
  if (o->inject_fault && rank == ranks - 1) {
    /* test-only: corrupt the centre point of the last rank's block */
    size_t sx = (size_t)s->grid.n[0] + 2, sy = (size_t)s->grid.n[1] + 2;
    size_t c = (size_t)(s->grid.n[0] / 2 + 1) + sx * ((size_t)(s->grid.n[1] / 2 + 1) + sy * (size_t)(s->grid.n[2] / 2 + 1));
    real_t x;
    FD_BE(be_memcpy_async(&x, result + c, sizeof x, BE_COPY_D2H, s->compute));
    FD_BE(be_stream_sync(s->compute));
    x = x * (real_t)1.01 + (real_t)0.5;
    FD_BE(be_memcpy_async(result + c, &x, sizeof x, BE_COPY_H2D, s->compute));
    FD_BE(be_stream_sync(s->compute));
  }
  if (o->check) FD_CALL(verify_run(s, &r->verify));
  if (o->dump[0]) FD_CALL(dump_field(s, result, o->dump));

  FD_CALL(state_destroy(s));
  return (o->check && !r->verify.passed) ? FD_ERR_VERIFY : FD_OK;
}
