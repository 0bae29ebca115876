/* loop.c - passes into loops: runs of passes as chains (one graph each), the checkpoints' work
 * and progress lines between them (loop_run_steps), and the timed loop (loop_timed). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "fd_error.h"
#include "state.h"

/* Before signalled passes: where the words and slots do not hold u's layers, every rank waits
 * for its device, the words are reset (halo_signals_reset) and, at width 1, each rank primes
 * its slots with u on the compute stream (deeper, each window's exchange packs its own); the
 * wave's source, where the launches add it (src_shell), gets its values from this step on
 * (src_sig[e]: step s->steps + e). Collective (every rank decides alike). */
static int signals_prime(fd_state *s)
{
  if (!step_signalled(s) || s->sig_primed) return FD_OK;
  FD_BE(be_stream_sync(s->compute));
  if (s->src_shell) {
    const size_t n = (size_t)s->src_steps;
    real_t *h = NULL;
    FD_BE(be_host_alloc((void **)&h, n * sizeof(real_t)));
    for (size_t e = 0; e < n; e++)
      h[e] = s->steps + (long long)e < s->src_steps ? step_source_value(s, s->steps + (long long)e) : (real_t)0;
    int rc = be_memcpy_async(s->src_sig, h, n * sizeof(real_t), BE_COPY_H2D, s->compute);
    if (rc == BE_OK) rc = be_stream_sync(s->compute);
    (void)be_host_free(h);
    FD_BE(rc);
  }
  FD_CALL(halo_signals_reset(&s->halo));
  if (s->width == 1) FD_BE(be_signals_prime(&s->grid, &s->sig, s->u, s->compute));
  s->sig_primed = 1;
  return FD_OK;
}

int loop_stalled(fd_state *s)
{
  FD_BE(be_stream_sync(s->compute));
  char why[320] = "";
  unsigned long long when = ~0ULL;
  int stalled = halo_signals_stalled(&s->halo, s->dec.rank, why, sizeof why, &when);
  if (stalled != FD_OK && why[0]) stalled = fd_set_error(FD_ERR_RUNTIME, "%s", why);
  return fd_agree_first(s->dec.cart, stalled, when);
}

/* Before a checkpoint is taken (fd_ckpt_view.sound): where passes exchange inside their
 * launches, none of them stalled up to this step (a stalled run's levels are wrong: no
 * checkpoint of them may replace a sound one). Collective (the passes' kind is agreed). */
static int levels_sound(void *ctx)
{
  fd_state *s = ctx;
  return step_signalled(s) ? loop_stalled(s) : FD_OK;
}

/* The checkpoints' work after `count` passes (one, or a chain): a checkpoint at a multiple of
 * --checkpoint-every, the stop polls (checkpoint.h); *stop when every rank stops here
 * (FD_STOPPED). Collective. */
static int checkpoint_pass(fd_state *s, int count, int *stop)
{
  const long long m = s->steps < s->src_steps ? s->steps : s->src_steps;
  const fd_ckpt_view v = {s->steps, s->alone || s->snap_off, {s->u, s->um}, s->src_owned ? s->src_hist : NULL,
                          s->src_steps < 0 ? 0 : m + 1, levels_sound, s, s->alone};
  return checkpoint_after_pass(s->ckpt, &v, count, stop);
}

/* Whether chains may hold exchanging passes: no host call inside an exchange. Every face of
 * this rank by IPC, or signalled passes whose MPI faces all go through the off-node proxy and
 * whose launches wait on the device: the host serves the proxy while it waits for the chain
 * before (step_run_ahead's mark), instead of between the launches of single passes. Pure. */
static int chains_exchange(const fd_state *s)
{
  const fd_halo *h = &s->halo;
  if (h->n_mpi == 0) return h->n_ipc > 0;
  return h->n_mpi == h->n_proxy && step_signalled(s) && !halo_signals_served_by_host(h);
}

/* A chain: `count` consecutive passes of s->fuse steps that are not sampled, as one graph launched
 * on the compute stream: the passes between two sampled ones where every pass's device work is
 * device-ordered (no exchange, or none with a host call inside: chains_exchange), else a whole
 * window between two exchanges. The first time, the passes are run with their work enqueued into
 * the graph being captured (CHAIN_CAPTURE) and the state put back; then, captured now or before,
 * the graph is launched and the passes run again with nothing enqueued (CHAIN_DRY) to move the
 * state along: the buffers a chain starts from decide every buffer of its passes, and the halo's
 * phase (halo_graph_phase) every flag value of its exchanges; both are in its key. Exchanges in a
 * chain: the halo stream joins the capture at the chain's first pack, which waits for the compute
 * stream (the launch orders the graph after everything before it there: each pass's halo work
 * joined the compute stream), and every pass joins it back; after the chain the next pack waits
 * for the compute stream again (pack_ordered = 0). Not Collective. */
typedef struct {
  fd_state *s;
  int count;
} chain_ctx;

static int chain_work(void *ctx, be_stream st)
{
  (void)st; /* the compute stream */
  const chain_ctx *c = ctx;
  fd_state *s = c->s;
  const fd_state saved = *s; /* the solver thread's own: the writers' state is behind pointers */
  s->chain_mode = CHAIN_CAPTURE;
  s->pack_ordered = 0; /* the first pack waits for `ready`: the halo stream joins the capture */
  int rc = FD_OK;
  /* the host-driven IPC exchange enqueues its copies directly (signalled passes make no halo
   * call that enqueues) */
  if (!s->alone && s->exchanging && chains_exchange(s) && !s->halo.n_mpi)
    rc = halo_capture(&s->halo, 1);
  for (int i = 0; i < c->count && rc == FD_OK; i++) rc = solver_pass(s, s->fuse);
  *s = saved;
  return rc;
}

static int run_chain(fd_state *s, int count, int exchanges)
{
  s->ahead_u = NULL; /* the chain's first pass packs: its work is the same whatever came before */
  const int phase = exchanges ? halo_graph_phase(&s->halo) : 0;
  const fd_graph_key k = {SEG_CHAIN, {count, s->win_pos, s->fuse, s->alone, (int)(s->steps % s->fuse), phase},
                          {s->u, s->um, s->v, NULL}};
  chain_ctx c = {s, count};
  fd_graph_cache *g = exchanges ? &s->xchains : &s->graphs;
  if (fd_graph_run(g, &k, s->compute, chain_work, &c) != 0) {
    if (g->work_rc) return g->work_rc;
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: graphs: %s", s->dec.rank, be_error_message());
  }
  s->chain_mode = CHAIN_DRY;
  if (exchanges) s->xchain_passes += count;
  int rc = FD_OK;
  for (int i = 0; i < count && rc == FD_OK; i++) rc = solver_pass(s, s->fuse);
  s->chain_mode = 0;
  s->pack_ordered = 0; /* the halo stream is not ordered after the graph's packs and shells */
  FD_CALL(rc);
  return step_run_ahead(s, count);
}

/* How many of the next passes (at most `most`, all of s->fuse steps) make a chain: none may be
 * sampled (the window counter runs as solver_pass runs it) or exchange with host calls (an
 * exchange by IPC alone, or signalled through the proxy, may be in a chain where such chains still
 * capture: *exchanges = 1 when one is), and none may pass a point where the checkpoints act
 * (checkpoint_chain_passes: a checkpoint step, a stop poll). 0 where chains do not apply: graphs
 * off or failed, snapshots (a snapshot may hold a buffer and change the rotation), the wave (its
 * source is added between passes). Pure. */
static int chain_length(const fd_state *s, int most, int *exchanges)
{
  *exchanges = 0;
  const int free = checkpoint_chain_passes(s->ckpt, s->steps, s->fuse);
  if (free < most) most = free;
  if (!s->graphs.on || s->graphs.failed || s->prob.op == FD_OP_WAVE ||
      (s->opt->snapshot_every && !s->snap_off && !s->alone))
    return 0;
  if (s->steps % s->fuse) return 0;
  long long windows = s->windows;
  int win_pos = s->win_pos, sampling = s->sampling, count = 0;
  long long steps = s->steps;
  for (; count < most && count < FD_CHAIN_MAX; count++) {
    if (win_pos == 0) {
      if (!s->alone && s->exchanging) { /* it exchanges */
        /* the order fault plants its race in single passes, and --test-delays waits before
         * each one (pass_test_waits) */
        if (!chains_exchange(s) || s->xchains.failed || s->opt->inject_fault == FD_FAULT_ORDER ||
            s->opt->test_delays)
          break;
        *exchanges = 1;
      }
      sampling = step_sampled_window(s, windows++);
    }
    if (sampling) break;
    steps += s->fuse;
    win_pos += s->fuse;
    if (s->dec.size == 1 || steps % s->width == 0) win_pos = 0;
  }
  return count;
}

/* n steps in passes of up to T steps (ending at multiples of T and at n), the first one
 * opening a window (exchanging), with a progress line from rank 0 every --progress seconds,
 * naming the loop (`label`). Runs of passes without exchange or sampling go as chains (one
 * graph each) where graphs are on. After each pass or chain the checkpoints' work (a stop
 * returns FD_STOPPED, the snapshots drained). Collective. */
int loop_run_steps(fd_state *s, int n, const char *label)
{
  const int progress = s->opt->progress < 0 ? 10 : s->opt->progress;
  FD_CALL(signals_prime(s));
  double t_start = fd_now(), t_last = t_start;
  s->win_pos = 0;
  for (int done = 0; done < n;) {
    int len = s->fuse - (int)(s->steps % s->fuse);
    if (len > n - done) len = n - done;
    int exchanges;
    const int chain = chain_length(s, (n - done) / s->fuse, &exchanges);
    if (chain >= 2) {
      FD_CALL(run_chain(s, chain, exchanges));
      done += chain * s->fuse;
    } else {
      FD_CALL(solver_pass(s, len));
      done += len;
    }
    if (s->ckpt->on) {
      int stop = 0;
      FD_CALL(checkpoint_pass(s, chain >= 2 ? chain : 1, &stop));
      if (stop) {
        if (!s->alone && !s->snap_off) FD_CALL(snapshot_drain(s->snap));
        FD_BE(be_stream_sync(s->compute)); /* nothing of the run left in flight */
        FD_BE(be_stream_sync(s->halo_stream));
        return FD_STOPPED;
      }
    }
    if (progress && s->dec.rank == 0) {
      double t = fd_now();
      if (t - t_last >= progress) {
        double per = (t - t_start) / done;
        printf("fdmini: %s step %d/%d (%.0f%%), %.1f s elapsed, about %.0f s to go\n",
               label, done, n, 100.0 * done / n, t - t_start,
               per * (n - done));
        fflush(stdout);
        t_last = t;
      }
    }
  }
  return FD_OK;
}

/* Waits for the device, reads the sampled passes not yet read and the halo's timed exchanges.
 * Not Collective. */
int loop_sync(fd_state *s)
{
  FD_BE(be_stream_sync(s->compute));
  FD_BE(be_stream_sync(s->halo_stream));
  for (int q = 0; q < 2; q++) FD_CALL(step_read_sample(s, q));
  return halo_flush_timers(&s->halo);
}

/* Zeroes the loop's sums (phases, redundant points, samples, the halo's and the snapshots') and
 * forgets a pack ahead. */
static void loop_reset(fd_state *s)
{
  s->ms_interior = s->ms_shell = s->redundant = 0.0;
  s->sampled_steps = 0;
  s->windows = s->sampled_windows = 0;
  s->ahead_u = NULL; /* a pack ahead of a loop that ended is not the next loop's */
  snapshot_reset_timers(s->snap);
  checkpoint_reset_timers(s->ckpt);
  halo_reset_timers(&s->halo);
}

/* s->warmup untimed steps, then s->iters timed ones between barriers; *step_ms = wall time per
 * timed step. Phase sums restart at the timed steps, which sample windows as step_sample_plan
 * says for their count (a window: S steps, or a pass on one rank), the same on every rank; the
 * start-up's loops keep one in FD_SAMPLE_EVERY. Collective. */
int loop_timed(fd_state *s, double *step_ms, const char *label)
{
  FD_CALL(loop_run_steps(s, s->warmup, "warm-up"));
  FD_CALL(snapshot_drain(s->snap));
  FD_CALL(loop_sync(s));
  loop_reset(s);
  const long long unit = s->dec.size == 1 ? s->fuse : s->width;
  step_sample_plan((s->iters + unit - 1) / unit, &s->sample_stride, &s->sample_lead);
  const long long captures = s->graphs.captures + s->xchains.captures, xpasses = s->xchain_passes,
                  spasses = s->sig_passes;
  FD_MPI(MPI_Barrier(s->dec.cart));
  double t0 = fd_now();
  FD_CALL(loop_run_steps(s, s->iters, label));
  FD_CALL(snapshot_drain(s->snap)); /* the snapshots' cost is the run's: timed until on disk */
  /* and the checkpoints': until the last is committed */
  if (!s->alone && !s->snap_off) FD_CALL(checkpoint_finish(s->ckpt));
  FD_BE(be_stream_sync(s->compute));
  double t1 = fd_now();
  FD_CALL(loop_sync(s));
  s->loop_captures = s->graphs.captures + s->xchains.captures - captures;
  s->loop_xchain_passes = s->xchain_passes - xpasses;
  s->loop_sig_passes = s->sig_passes - spasses;
  s->loop_windows = s->windows;
  s->sample_stride = FD_SAMPLE_EVERY; /* the start-up's sampling again */
  s->sample_lead = 1;
  *step_ms = (t1 - t0) * 1e3 / s->iters;
  return FD_OK;
}
