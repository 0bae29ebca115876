/* solver.c - one run of fdmini (fd_run): the checks of the job against the grid, the state's
 * set-up, the start-up choices, the timed loop (with the reference runs of --baseline and of
 * the snapshots' and checkpoints' costs), the numbers of the report, the verification of the
 * answer and the dump. The files of src/solver/ it drives are listed in state.h. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "fd_error.h"
#include "plan.h"
#include "solver.h"
#include "state.h"
#include "verify.h"

/* ---- the answer ---- */

static real_t *state_result(fd_state *s) { return s->prob.swaps ? s->u : s->v; }

/* A blocking halo exchange of u (one field: jacobi's residual): its ghosts are current on the
 * compute stream when it returns. Collective. */
static int state_exchange(fd_state *s, real_t *u)
{
  FD_BE(be_event_record(s->ready, s->compute));
  FD_CALL(halo_exchange_begin(&s->halo, u, NULL, s->ready, 0));
  FD_CALL(halo_exchange_end(&s->halo));
  FD_CALL(halo_exchange_unpack(&s->halo, u, NULL));
  FD_BE(be_stream_sync(s->halo_stream));
  return FD_OK;
}

/* RMS residual of lap u = f over the interior (jacobi): exchanges the ghosts of u, then v
 * holds the residual field (v is scratch for jacobi). Collective. */
static int residual(fd_state *s, double *rms)
{
  double mx;
  FD_CALL(state_exchange(s, s->u));
  FD_BE(be_stencil(&s->grid, FD_REGION_ALL, 0, &s->prob.lap, s->u, NULL, s->v, s->kernel, s->compute));
  return verify_norms(s->dec.cart, &s->grid, s->v, s->f, NULL, s->compute, &mx, rms);
}

/* Test only (--test-inject-fault=field|tiny[:F]): the last rank changes the centre point of its
 * block of field (a device field with ghosts) to 1.01 x + 0.5, or (1 + F) x (F: inject_size,
 * 1e-3 unless given; on one rank and an odd grid the global centre), so that verification must
 * fail (tiny: where F is above the check's tolerance). Not Collective; synchronous. */
static int inject_fault(fd_state *s, real_t *field)
{
  const fd_fault fault = s->opt->inject_fault;
  if (s->dec.rank != s->dec.size - 1 || (fault != FD_FAULT_FIELD && fault != FD_FAULT_TINY)) return FD_OK;
  const int *n = s->grid.n;
  const long long c = fd_grid_index(&s->grid, n[0] / 2 + 1, n[1] / 2 + 1, n[2] / 2 + 1);
  real_t x;
  FD_BE(be_memcpy_async(&x, field + c, sizeof x, BE_COPY_D2H, s->compute));
  FD_BE(be_stream_sync(s->compute));
  if (fault == FD_FAULT_FIELD) x = x * (real_t)1.01 + (real_t)0.5;
  else x = (real_t)((double)x + (double)x * s->opt->inject_size);
  FD_BE(be_memcpy_async(field + c, &x, sizeof x, BE_COPY_H2D, s->compute));
  FD_BE(be_stream_sync(s->compute));
  return FD_OK;
}

/* wave: the recorded values at the source point (src_hist) from its owner to every rank, as
 * doubles (*hist: s->hist_host, state_create's; *n entries, -1 when not recorded). Collective. */
static int source_history(fd_state *s, const double **hist, long long *n)
{
  *hist = NULL;
  *n = s->src_steps < 0 ? -1 : s->src_steps + 1;
  if (*n < 0) return FD_OK;
  int owner = s->src_owned ? s->dec.rank : -1;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &owner, 1, MPI_INT, MPI_MAX, s->dec.cart));
  real_t *r = s->hist_recv;
  if (s->src_owned) {
    FD_BE(be_memcpy_async(r, s->src_hist, (size_t)*n * sizeof(real_t), BE_COPY_D2H, s->compute));
    FD_BE(be_stream_sync(s->compute));
  }
  FD_MPI(MPI_Bcast(r, (int)*n, FD_MPI_REAL, owner, s->dec.cart));
  for (long long m = 0; m < *n; m++) s->hist_host[m] = (double)r[m];
  *hist = s->hist_host;
  return FD_OK;
}

/* Verifies the run's result (jacobi: with the residual before the first step, residual0, and
 * the one computed here) with the host memory state_create reserved. Collective. */
static int verify(fd_state *s, const real_t *result, double residual0, fd_verify *v)
{
  fd_verify_input in = {.prob = &s->prob, .dec = &s->dec, .grid = &s->grid, .stream = s->compute,
                        .steps = s->steps, .result = result, .n_hist = -1, .residual0 = residual0,
                        .mem = &s->vmem};
  if (s->prob.op == FD_OP_JACOBI) FD_CALL(residual(s, &in.residual));
  if (s->prob.op == FD_OP_WAVE) {
    in.prev = s->um; /* the rotation (pass_advance) leaves u = U^S, um = U^(S-1), v = U^(S-2) */
    in.prev2 = s->v;
    FD_CALL(source_history(s, &in.src_hist, &in.n_hist));
  }
  return verify_run(&in, v);
}

/* The exchange's message counts (halo_short_message), agreed once at the end of the run, never
 * per exchange: where any rank received a short message, *failed = 1 and *v is the verdict
 * FAIL on every rank with the lowest such rank's line (the report prints it once); the
 * verification of a field built from missing values is then moot. Collective. */
static int agree_messages(fd_state *s, fd_verify *v, int *failed)
{
  char why[sizeof v->detail];
  int first = halo_short_message(&s->halo, s->dec.rank, why, sizeof why) ? s->dec.rank : s->dec.size;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, s->dec.cart));
  *failed = first < s->dec.size;
  if (!*failed) return FD_OK;
  FD_MPI(MPI_Bcast(why, (int)sizeof why, MPI_CHAR, first, s->dec.cart));
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "halo exchange");
  v->checked = 1;
  v->verdict = FD_VERDICT_FAIL;
  snprintf(v->detail, sizeof v->detail, "%s", why);
  return FD_OK;
}

/* ---- the run ---- */

/* Timed steps of the reference run without snapshots and checkpoints (they cost a share of the
 * run's time: a few steps suffice to know the step time they are measured against). */
#define FD_SNAP_REF_STEPS 50

/* With snapshots or periodic checkpoints: the same warm-up and up to FD_SNAP_REF_STEPS timed
 * steps without them, for the step time they are measured against (*ref_ms, over *nsteps
 * steps); then the fields start over. Collective. */
static int snapshot_reference(fd_state *s, double *ref_ms, int *nsteps)
{
  const int iters = s->iters;
  s->iters = iters < FD_SNAP_REF_STEPS ? iters : FD_SNAP_REF_STEPS;
  *nsteps = s->iters;
  s->snap_off = 1;
  int rc = loop_timed(s, ref_ms, "reference (no snapshots, no checkpoints)");
  s->snap_off = 0;
  s->iters = iters;
  FD_CALL(rc);
  return state_fill(s);
}

/* --restart: the checkpoint's levels and source record into the freshly filled fields (their
 * ghosts as a fresh run's: Dirichlet values from the analytic field, the others filled by the
 * first pass's exchange), the step count from it; the loops from there. Collective. */
static int state_restore(fd_state *s, fd_result *r)
{
  if (!s->ckpt->restart) return FD_OK;
  const fd_ckpt_view v = {0, 0, {s->u, s->um}, s->src_owned ? s->src_hist : NULL, 0, NULL, NULL, 0};
  FD_CALL(checkpoint_load(s->ckpt, &v, s->compute));
  s->sig_primed = 0; /* u is the checkpoint's */
  state_checkpoint_steps(s); /* after a fallback the checkpoint is an older one */
  if (s->dec.rank == 0 && s->opt->warmup < 0 && (long long)s->ckpt->h.run_steps != s->total) {
    /* the default warm-up is rounded to --halo-width and --fuse, which a restart may change */
    printf("fdmini: notice: --restart: the checkpoint's run was to end at step %lld, this one ends at step %lld "
           "(--warmup + --iters; the default --warmup is rounded to a multiple of --halo-width and --fuse): give "
           "--warmup and --iters to end where it would\n",
           (long long)s->ckpt->h.run_steps, s->total);
    fflush(stdout);
  }
  s->steps = s->first;
  if (s->ckpt->hist_lost) s->src_steps = -1; /* the energy check then does not apply */
  snapshot_adopt(s->snap, s->first);       /* the XDMF lists the earlier snapshots too */
  results_describe(s, r);
  return FD_OK;
}

/* fd_run after state_create: fill, time (the block alone first with --baseline), restore a
 * checkpoint, time the run, reduce, verify, dump. s stays allocated. Collective. */
static int run_on_state(fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  double alone_ms = 0.0, step_ms = 0.0, ref_ms = 0.0, residual0 = 0.0;
  FD_CALL(startup_measure(s, r));
  FD_CALL(state_arm_tests(s));
  results_describe(s, r);
  FD_CALL(results_nodes(s, r));
  if (o->baseline) {
    /* every rank's block alone (same kernels and steps, no exchange; its ghosts keep their
     * start values), then the fields start over for the distributed run */
    s->alone = 1;
    FD_CALL(state_fill(s));
    FD_CALL(loop_timed(s, &alone_ms, "alone (--baseline)"));
    s->alone = 0;
  }
  FD_CALL(state_fill(s));
  if (o->snapshot_every || o->checkpoint_every) FD_CALL(snapshot_reference(s, &ref_ms, &r->snapshot_ref_steps));
  /* jacobi's initial residual: of the run's start, u = 0, also when it continues a checkpoint */
  if (o->check && o->op == FD_OP_JACOBI) FD_CALL(residual(s, &residual0));
  FD_CALL(state_restore(s, r));
  FD_CALL(loop_timed(s, &step_ms, "timed"));
  FD_CALL(results_timings(s, step_ms, r));
  FD_CALL(results_graphs_floors(s, step_ms, r));
  FD_CALL(results_snapshots(s, step_ms, ref_ms, r));
  FD_CALL(results_checkpoints(s, step_ms, ref_ms, r));
  if (o->baseline) results_baseline(s, step_ms, alone_ms, r);

  /* a signalled launch that waited too long (a neighbour stopped) went on with wrong values:
   * a runtime failure on every rank, with the first stall's line */
  FD_CALL(loop_stalled(s));
  int short_message = 0;
  FD_CALL(agree_messages(s, &r->verify, &short_message));
  if (short_message) return FD_OK; /* FAIL, exit 1: no answer to verify or dump */
  real_t *result = state_result(s);
  FD_CALL(inject_fault(s, result));
  if (o->check) FD_CALL(verify(s, result, residual0, &r->verify));
  if (o->dump[0]) FD_CALL(dump_field(&s->dec, &s->grid, s->compute, result, o->dump, &s->dumpbuf));
  return FD_OK;
}

int fd_run(const fd_options *o, MPI_Comm comm, const be_info *dev, const fd_node *node, fd_result *r)
{
  int ranks;
  FD_MPI(MPI_Comm_size(comm, &ranks));
  memset(r, 0, sizeof *r);

  long long N[3];
  int P[3];
  FD_CALL(fd_agree(comm, fd_options_check_backend(o, dev)));
  FD_CALL(fd_agree(comm, decomp_resolve_grid(o, ranks, dev->is_accelerator, N, P)));
  FD_CALL(fd_agree(comm, snapshot_check(o->snapshot_every)));
  /* the dump and each snapshot hold the whole grid: its byte count must fit a file offset */
  if (o->dump[0] || o->snapshot_every) {
    const long long big = 0x7fffffffffffffffLL, es = (long long)sizeof(real_t);
    int fits = N[0] <= big / N[1] && N[0] * N[1] <= big / N[2] && N[0] * N[1] * N[2] <= big / es;
    FD_CALL(fd_agree(comm, fits ? FD_OK
                                : fd_set_error(FD_ERR_RUNTIME, "%s: the %lld x %lld x %lld grid does not fit in one file: more than 2^63 bytes",
                                               o->dump[0] ? "--dump" : "--snapshot-every", N[0], N[1], N[2])));
  }
  /* what the options ask of this grid and rank count: the same checks as --plan's */
  FD_CALL(fd_agree(comm, plan_check_run(o, ranks, dev->is_accelerator, N, P)));

  fd_state st, *s = &st;
  int rc = state_create(s, o, comm, dev, node, N, P);
  if (rc == FD_OK) rc = run_on_state(s, r);
  if (rc == FD_STOPPED) { /* a stop signal: every rank stopped at the same pass, checkpointed */
    r->stop_signal = s->ckpt->stop_signal;
    r->stop_step = s->ckpt->stop_step;
    r->stop_measuring = s->ckpt->stop_measuring;
    r->total_steps = s->total;
    fd_copy_str(r->checkpoint_last_path, sizeof r->checkpoint_last_path, s->ckpt->last_path);
    fd_copy_str(r->restart_from, sizeof r->restart_from, s->ckpt->restart ? s->ckpt->from : "");
    r->checkpoints = s->ckpt->written;
    FD_CALL(state_destroy(s));
    return FD_STOPPED;
  }
  /* a runtime failure of this rank alone: the caller aborts the job */
  if (rc == FD_ERR_RUNTIME && !fd_error_agreed()) return rc;
  if (rc != FD_OK) { /* agreed by every rank: free what this rank holds, then report it */
    state_abandon(s);
    return rc;
  }
  FD_CALL(state_destroy(s));
  /* a short halo message is FAIL with --no-check too (agree_messages) */
  return r->verify.verdict == FD_VERDICT_FAIL ? FD_ERR_VERIFY : FD_OK;
}
