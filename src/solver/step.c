/* step.c - one pass of the solver: the schedule of a step (solver_pass), its segments of
 * device work on the compute and halo streams, the graphs that replay them, the timing of the
 * sampled passes and the bounded run-ahead. docs/ has the schedule in full. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "fd_error.h"
#include "state.h"
#include "window.h"

/* The stencil's second input: jacobi's right-hand side, or the wave's previous level um. */
static const real_t *second_input(const fd_state *s) { return s->prob.levels == 2 ? s->um : s->f; }

/* One step of the single-step schedule (width 1) over `region` (INTERIOR or SHELL of
 * s->deferred) of 1..n, on stream st, into out from u (and f). The two-layer wave takes two
 * z-ranges with their coefficients: planes 1..layer_k1 and layer_k1+1..nz. */
static int update_region(fd_state *s, fd_region region, be_stream st, real_t *out)
{
  const real_t *f = second_input(s);
  if (s->layer_k1 >= 1)
    FD_BE(be_stencil_zrange(&s->grid, region, s->deferred, 1, s->layer_k1, &s->prob.coeffs, s->u,
                            f, out, s->kernel, st));
  if (s->layer_k1 < s->grid.n[2])
    FD_BE(be_stencil_zrange(&s->grid, region, s->deferred, s->layer_k1 + 1, s->grid.n[2],
                            &s->prob.coeffs2, s->u, f, out, s->kernel, st));
  return FD_OK;
}

/* A pass of `len` steps over box b (the box of its last step) on stream st, into out from u
 * (and f): one step of the single-step kernel (be_stencil_box; the two-layer wave split at the
 * global interface plane, as every rank splits it), or len > 1 steps of the fused kernel with
 * the fix box `fix` (heat and jacobi only). */
static int update_box(fd_state *s, const fd_box *b, int len, const fd_box *fix, be_stream st,
                      real_t *out)
{
  if (window_box_points(b) == 0) return FD_OK;
  const real_t *f = second_input(s);
  if (len > 1) {
    FD_BE(be_stencil_fused(&s->grid, &s->fused[len], b->lo, b->hi, fix->lo, fix->hi,
                           &s->prob.coeffs, s->u, f, out, st));
    return FD_OK;
  }
  fd_box part[2] = {*b, *b};
  const fd_coeffs *c[2] = {&s->prob.coeffs, &s->prob.coeffs2};
  if (!s->two_layers) {
    part[1].lo[2] = part[1].hi[2] + 1; /* one part, layer 1's coefficients */
  } else {
    if (part[0].hi[2] > s->iface_local) part[0].hi[2] = s->iface_local;
    if (part[1].lo[2] < s->iface_local + 1) part[1].lo[2] = s->iface_local + 1;
  }
  for (int q = 0; q < 2; q++)
    if (window_box_points(&part[q]))
      FD_BE(be_stencil_box(&s->grid, part[q].lo, part[q].hi, c[q], s->u, f, out, s->kernel, st));
  return FD_OK;
}

/* The geometry of one pass of `len` steps. */
typedef struct {
  int len;
  int exchange;  /* the pass begins with an exchange (the first pass of a window) */
  int overlap;   /* ... and its interior update runs while the regions travel */
  int regions;   /* width 1, one step: the region kernels of the single-step schedule */
  int pack_next; /* the receive segment also packs `out` for the next exchange */
  int has_shell; /* the box minus the interior is not empty */
  fd_box box;    /* the box of the pass's last step */
  fd_box inner;  /* the part that reads no ghost the pass's exchange fills (all of box when the
                    pass does not exchange) */
  fd_box fix;    /* the points the fused kernel may update */
  int timed;     /* a sampled pass: eager, with timing events t_ev[q] */
  int q;         /* the sample parity */
  int sig;       /* signalled: the whole pass is one launch (step_signalled) */
  int ahead;     /* the exchange was packed ahead by the last pass's receive */
  int enqueue;   /* 0 in a chain's replay (CHAIN_DRY): the graph holds the work, the pass
                    only moves the state along */
} fd_pass;

/* The interior part of a pass on stream st. */
static int pass_interior(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (p->regions) return update_region(s, FD_REGION_INTERIOR, st, out);
  return update_box(s, &p->inner, p->len, &p->fix, st, out);
}

/* The rest of the pass's box on stream st: the shell region, or the box minus the interior as
 * slabs. Only passes that exchange have one; --test-inject-fault=shell (test only) leaves it
 * out, so its points keep the NaN of state_fill (the fused receive and the signalled pass,
 * which update it in their launches, are not used then). */
static int pass_shell(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (s->opt->inject_fault == FD_FAULT_SHELL) return FD_OK;
  if (p->regions) return update_region(s, FD_REGION_SHELL, st, out);
  fd_box slab[6];
  const int ns = window_box_minus(&p->box, &p->inner, slab);
  for (int q = 0; q < ns; q++) FD_CALL(update_box(s, &slab[q], p->len, &p->fix, st, out));
  return FD_OK;
}

/* The received regions into the ghosts of u (and um), then, with overlap, the shell: the
 * halo stream's work after the messages are in; with p->pack_next (step_receives_fused) in one
 * launch that also packs the next exchange from `out`, the next pass's u (its regions are the
 * layers the shell writes). */
static int pass_receive(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (p->pack_next) { /* step_receives_fused: one launch */
    halo_fused_io io = {0};
    FD_CALL(halo_fused_receive(&s->halo, &io));
    FD_BE(be_shell_exchange(&s->grid, s->deferred, &s->prob.coeffs, s->u, second_input(s), out, io.faces,
                            io.recv, io.unpack, io.send, io.pack, st));
    return halo_fused_packed(&s->halo);
  }
  FD_CALL(halo_exchange_unpack(&s->halo, s->u, s->halo.fields > 1 ? s->um : NULL));
  if (p->overlap && p->has_shell) FD_CALL(pass_shell(s, p, st, out));
  return FD_OK;
}

/* A signalled pass (step_signalled): the interior update, the exchange and the shell in one launch on
 * st (be_signals_pass); the two-layer wave's second coefficients from plane layer_k1 + 1 on, the
 * laplacian's faces from u (it stays), the wave's source in the launch where the shell holds it
 * (src_shell: src_sig, which signals_prime in loop.c wrote). */
static int pass_signal(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  (void)p;
  be_sig_stencil v;
  memset(&v, 0, sizeof v);
  if (s->two_layers) v.c2 = &s->prob.coeffs2, v.k1 = s->layer_k1;
  v.pack_u = !s->prob.swaps;
  if (s->src_shell) {
    v.src_on = 1;
    for (int d = 0; d < 3; d++) v.src[d] = s->src_local[d];
    v.src_vals = s->src_sig;
    v.src_len = (uint32_t)s->src_steps;
  }
  FD_BE(be_signals_pass(&s->grid, &s->prob.coeffs, s->u, second_input(s), out, s->kernel, &s->sig, &v, st));
  return FD_OK;
}

/* A deep signalled exchange (width S > 1) on st (be_signals_exchange: one launch where the rank
 * is alone on its device and every neighbour is on another, else a pack launch and an unpack
 * launch): the pack of u (and um) into the slots, which sets the neighbours' words, and the
 * unpack of theirs into the ghosts once their words are set. */
static int pass_sig_exchange(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  (void)p, (void)out;
  return halo_signals_exchange(&s->halo, &s->sig, s->u, s->halo.fields > 1 ? s->um : NULL, st);
}

/* ... and then the window's first pass over its whole box, all on st. */
static int pass_sig_deep(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  FD_CALL(pass_sig_exchange(s, p, st, out));
  return pass_interior(s, p, st, out);
}

/* Without overlap, the interior and the shell one after the other. */
static int pass_serial(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  FD_CALL(pass_interior(s, p, st, out));
  if (p->has_shell) FD_CALL(pass_shell(s, p, st, out));
  return FD_OK;
}

typedef int (*segment_fn)(fd_state *s, const fd_pass *p, be_stream st, real_t *out);

/* A segment of a pass as graph_cache.h work. */
typedef struct {
  fd_state *s;
  const fd_pass *p;
  real_t *out;
  segment_fn fn;
} segment_ctx;

static int segment_work(void *ctx, be_stream st)
{
  const segment_ctx *c = ctx;
  return c->fn(c->s, c->p, st, c->out);
}

/* Segment `seg` of pass p on stream st: run now (the sampled passes, graphs off or failed),
 * or replayed from the graph captured the first time the same segment ran on the same buffers
 * (graph_cache.h). The segments are pure device work on one stream, and everything they
 * depend on is in the key. Not Collective. */
static int pass_segment(fd_state *s, int seg, segment_fn fn, const fd_pass *p, be_stream st,
                        real_t *out)
{
  /* a chain captures it; a pass whose proxy the host serves before its launch runs it now */
  if (s->sampling || s->chain_mode || halo_signals_served_by_host(&s->halo)) return fn(s, p, st, out);
  const fd_graph_key k = {seg, {p->len, s->win_pos, p->exchange, seg == SEG_RECEIVE ? (int)((s->halo.exchanges + 1) % 2) : 0,
                                s->alone, p->pack_next},
                          {s->u, s->um, out, NULL}};
  segment_ctx c = {s, p, out, fn};
  if (fd_graph_run(&s->graphs, &k, st, segment_work, &c) == 0) return FD_OK;
  if (s->graphs.work_rc) return s->graphs.work_rc; /* the segment's own error */
  return fd_set_error(FD_ERR_RUNTIME, "rank %d: graphs: %s", s->dec.rank, be_error_message());
}

/* ---- timing of the sampled passes ---- */

/* Adds the sampled pass of parity q (its events are complete, or are waited for). */
int step_read_sample(fd_state *s, int q)
{
  if (!s->t_pending[q]) return FD_OK;
  float a, b = 0.0f;
  FD_BE(be_event_sync(s->t_ev[q][1]));
  FD_BE(be_event_sync(s->t_ev[q][3]));
  FD_BE(be_event_elapsed_ms(&a, s->t_ev[q][0], s->t_ev[q][1]));
  FD_BE(be_event_elapsed_ms(&b, s->t_ev[q][2], s->t_ev[q][3]));
  s->ms_interior += a;
  s->ms_shell += b;
  s->t_pending[q] = 0;
  return FD_OK;
}

/* The buffer a step writes: one of the pool that is neither an input (u, um) nor held by a
 * snapshot (snapshot.h). The pool has a spare for that, so one is always free; were none, the
 * compute stream would wait for a snapshot's copy instead (never the host). */
static int pick_output(fd_state *s, real_t **out)
{
  for (int pass = 0; pass < 2; pass++)
    for (int b = 0; b < s->npool; b++) {
      real_t *c = s->pool[b];
      if (c == s->u || c == s->um) continue;
      if (!snapshot_holds(s->snap, c)) {
        *out = c;
        return FD_OK;
      }
      if (pass == 1) {
        FD_CALL(snapshot_release(s->snap, c));
        if (!snapshot_holds(s->snap, c)) {
          *out = c;
          return FD_OK;
        }
      }
    }
  return fd_set_error(FD_ERR_RUNTIME, "rank %d: no free field buffer for the step", s->dec.rank);
}

/* The bounded run-ahead after `k` more passes: every FD_AHEAD passes the host waits for the
 * mark recorded FD_AHEAD passes before (long complete unless the host ran ahead) and records a
 * new one on the compute stream. */
int step_run_ahead(fd_state *s, int k)
{
  s->ahead_count += k;
  if (s->ahead_count < FD_AHEAD) return FD_OK;
  s->ahead_count = 0;
  const int m = (int)(s->ahead_marks++ % 2);
  FD_BE(be_event_sync(s->ahead[1 - m]));
  FD_BE(be_event_record(s->ahead[m], s->compute));
  return FD_OK;
}

/* Whether the run's exchanging passes receive fused (halo_fused_receive): the unpack, the
 * shell and the next exchange's pack in one launch (be_shell_exchange), on the halo stream:
 * heat and jacobi (the next pass's u is this pass's output, whose layers next to the faces the
 * shell writes), one ghost layer (one field), one step per pass, with overlap (the shell on the
 * halo stream). Pure. */
int step_receives_fused(const fd_state *s)
{
  return !s->alone && s->width == 1 && s->fuse == 1 && s->opt->overlap && s->prob.swaps &&
         s->prob.levels == 1 && s->halo.fields == 1 && s->halo.n_msgs > 0 &&
         s->opt->inject_fault != FD_FAULT_SHELL; /* its launch updates the shell */
}

/* Whether the exchanging passes are signalled, where every rank's faces all go by IPC to
 * neighbours on its own device or on peers (sig_able), with overlap, every operator:
 * - width 1: the pass is one launch on the compute stream (be_signals_pass: the interior
 *   update, the wait for the neighbours' words, the shell with the unpack and the next pack),
 *   one field, one step per pass (the wave where its source's values fit src_sig:
 *   src_steps >= 0);
 * - width S > 1: the window's exchange runs on the compute stream in a launch of its own, or a
 *   pack and an unpack launch where the rank shares its device or a neighbour is on it
 *   (pass_sig_exchange), then its first pass updates its whole box there; any --fuse, both
 *   fields of the wave.
 * The zero and shell faults plant theirs in the halo's copies and messages and in pass_shell
 * (the order fault works on both: pass_signalled). The same on every rank. Pure. */
int step_signalled(const fd_state *s)
{
  const fd_fault f = s->opt->inject_fault;
  /* faces through the proxy are MPI messages: the zero fault's empty ones fail their count;
   * its width-1 launch leaves the shell unwritten for the shell fault (BE_SIG_TEST_NOSHELL) */
  const int proxied = s->halo.proxy_faces_all > 0;
  if (!s->sig_able || s->sig_off || s->alone || !s->opt->overlap || s->halo.n_msgs == 0 ||
      (f == FD_FAULT_ZERO && !proxied) || (f == FD_FAULT_SHELL && !(proxied && s->width == 1)))
    return 0;
  if (s->width > 1) return 1;
  return s->fuse == 1 && s->halo.fields == 1 && (s->prob.op != FD_OP_WAVE || s->src_steps >= 0);
}

real_t step_source_value(const fd_state *s, long long step)
{
  const fd_problem *pr = &s->prob;
  return (real_t)(pr->src_scale * problem_ricker(pr, (double)step * pr->dt));
}

/* Test only, before an eager signalled pass: --test-delays, a random host sleep (up to 200 us)
 * one pass in four and a random device wait (up to 50 us) one pass in four, from this rank's
 * own sequence; the order fault (the launches do not wait for the words: halo_test_signals_nowait),
 * the last rank's host 1 ms late before every pass, so that its neighbours' launches run ahead
 * of its faces and read stale ones. */
static int pass_test_waits(fd_state *s)
{
  if (!s->tests_armed) return FD_OK;
  if (s->opt->inject_fault == FD_FAULT_ORDER && s->dec.rank == s->dec.size - 1) fd_sleep_us(1000.0);
  if (!s->opt->test_delays) return FD_OK;
  uint64_t x = s->test_rng; /* xorshift64 */
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  s->test_rng = x;
  const double a = (double)(x >> 40 & 0xffff) / 65536.0, b = (double)(x >> 24 & 0xffff) / 65536.0;
  if ((x & 3u) == 0) fd_sleep_us(200.0 * a);
  if ((x >> 2 & 3u) == 0) FD_BE(be_test_delay(s->compute, 50.0 * b));
  return FD_OK;
}

/* Whether window w of a loop (windows since loop_reset) runs eagerly with timing events: one
 * in s->sample_stride (FD_SAMPLE_EVERY, or every one of a short timed loop: step_sample_plan);
 * with signalled passes only the loop's first s->sample_lead (1, or all of a short loop), since a
 * signalled pass's phases are one launch (the interior's time) and each sampled window, an
 * eager pass between two chains, costs small blocks a measurable share of their step
 * (bench/results/README.md, "The exchange signalled inside the launch"): the first windows
 * break the loop's chains once. Pure. */
int step_sampled_window(const fd_state *s, long long w)
{
  return step_signalled(s) ? w < s->sample_lead : w % s->sample_stride == 0;
}

void step_sample_plan(long long windows, long long *stride, long long *lead)
{
  /* a short loop: every window, so that no phase can contradict the step; a longer one as the
   * start-up's loops: each sampled window runs eagerly between chains, and 16 of 100 (with
   * signalled passes the first 16 in a row) took 8 ranks on one H200 at 128^3 from 16.8 to 25.0
   * us per step (bench/results/README.md, "Across nodes") */
  const int all = windows < 2 * FD_SAMPLE_MIN;
  *stride = all ? 1 : FD_SAMPLE_EVERY;
  *lead = all && windows > 1 ? windows : 1;
}

/* ---- the pass ---- */

/* The geometry and the choices of a pass of `len` steps (fd_pass). The window's first pass
 * exchanges; its interior reads no ghost the exchange fills, the rest of its box is the shell.
 * A pack made ahead by the last pass's receive is this pass's or no one's. */
static void pass_plan(fd_state *s, int len, fd_pass *p)
{
  const int *n = s->grid.n;
  const unsigned sides = s->alone ? 0u : s->sides;
  if (s->win_pos == 0) {
    s->sampling = step_sampled_window(s, s->windows++);
    s->sampled_windows += s->sampling;
  }
  p->timed = s->sampling;
  p->q = (int)(s->samples % 2);
  p->len = len;
  p->exchange = !s->alone && s->exchanging && s->win_pos == 0;
  p->overlap = p->exchange && s->opt->overlap;
  p->regions = s->width == 1 && len == 1;
  window_step_box(n, s->width, sides, s->win_pos + len - 1, &p->box);
  window_fix_box(n, s->width, sides, &p->fix);
  s->deferred = p->exchange ? sides : 0u;
  window_interior(n, s->deferred, len, &p->inner);
  if (!p->exchange) p->inner = p->box;
  p->has_shell = p->regions ? s->deferred != 0 : window_box_points(&p->box) != window_box_points(&p->inner);
  /* the receive is one launch that also packs the next pass's u, whose regions its shell
   * writes (step_receives_fused); a timed pass packs again (its timing events) */
  p->sig = p->exchange && step_signalled(s);
  if (p->sig && s->width > 1) { /* the exchange before the pass, which then updates its whole box */
    p->overlap = 0;
    p->inner = p->box;
    p->has_shell = 0;
  }
  p->pack_next = step_receives_fused(s) && p->exchange && p->regions && !p->timed && !p->sig;
  p->ahead = s->ahead_u == s->u && s->ahead_exchange == s->halo.exchanges && !p->timed;
  p->enqueue = s->chain_mode != CHAIN_DRY;
  s->ahead_u = NULL;
}

/* A signalled pass on the compute stream: at width 1 one launch, which a sampled pass times as
 * the interior (the boundary empty); deeper, the exchange's launch and the update of the whole
 * box, which a sampled pass times as the boundary and the interior. */
static int pass_signalled(fd_state *s, const fd_pass *p, real_t *out)
{
  if (!s->sig_primed) return fd_set_error(FD_ERR_RUNTIME, "rank %d: a signalled pass before the prime", s->dec.rank);
  if (p->enqueue) {
    be_event *ev = s->t_ev[p->q];
    be_range_push("pass");
    if (!s->chain_mode) FD_CALL(pass_test_waits(s));
    if (!s->chain_mode) FD_CALL(halo_signals_serve(&s->halo, &s->sig)); /* the proxy, where it carries faces */
    if (s->width > 1 && p->timed) {
      FD_BE(be_event_record(ev[2], s->compute));
      FD_CALL(pass_sig_exchange(s, p, s->compute, out));
      FD_BE(be_event_record(ev[3], s->compute));
      FD_BE(be_event_record(ev[0], s->compute));
      FD_CALL(pass_interior(s, p, s->compute, out));
      FD_BE(be_event_record(ev[1], s->compute));
    } else if (s->width > 1) {
      FD_CALL(pass_segment(s, SEG_SIGNAL, pass_sig_deep, p, s->compute, out));
    } else {
      if (p->timed) FD_BE(be_event_record(ev[0], s->compute));
      FD_CALL(pass_segment(s, SEG_SIGNAL, pass_signal, p, s->compute, out));
      if (p->timed) {
        FD_BE(be_event_record(ev[1], s->compute));
        FD_BE(be_event_record(ev[2], s->compute));
        FD_BE(be_event_record(ev[3], s->compute));
      }
    }
    be_range_pop();
    if (!s->chain_mode) FD_CALL(halo_signals_progress(&s->halo)); /* what the launch before left */
  }
  halo_signalled(&s->halo);
  s->sig_passes++;
  return FD_OK;
}

/* The exchange's begin: `ready` follows the previous pass's updates on the compute stream; the
 * pack waits for it unless all of u it reads came from the halo stream (pack_ordered), and
 * then *shell_waits: the shell, which reads u next to its layers (written by the previous
 * interior update) and writes the buffer that update read, waits for `ready` instead (with IPC
 * faces nothing else orders the two streams so). A begin packed ahead only posts the
 * receives and sets the flags; a chain's replay counts the exchange. */
static int pass_begin(fd_state *s, const fd_pass *p, real_t *u2, int *shell_waits)
{
  *shell_waits = 0;
  if (!p->exchange) return FD_OK;
  if (!p->enqueue) return halo_exchange_replayed(&s->halo);
  FD_BE(be_event_record(s->ready, s->compute));
  *shell_waits = s->pack_ordered;
  be_event wait = s->pack_ordered ? NULL : s->ready;
  if (p->ahead) return halo_exchange_begin_packed(&s->halo, wait);
  return halo_exchange_begin(&s->halo, s->u, u2, wait, p->timed);
}

/* The interior update on the compute stream while the regions travel; without an exchange,
 * the whole box of the pass. */
static int pass_update_interior(fd_state *s, const fd_pass *p, real_t *out)
{
  if (!p->enqueue || (p->exchange && !p->overlap)) return FD_OK;
  be_event *ev = s->t_ev[p->q];
  be_range_push("interior");
  if (p->timed) FD_BE(be_event_record(ev[0], s->compute));
  FD_CALL(pass_segment(s, SEG_INTERIOR, pass_interior, p, s->compute, out));
  if (p->timed) FD_BE(be_event_record(ev[1], s->compute));
  be_range_pop();
  return FD_OK;
}

/* The exchange's end: the messages are in (the host waits for MPI); on the halo stream the
 * unpack and, with overlap, the shell (one launch with the next pack where the pass receives
 * fused); the compute stream joins the halo stream (`joined`), then, without overlap, runs the
 * interior and the shell itself. A sampled pass runs its phases apart, between its events. */
static int pass_end(fd_state *s, const fd_pass *p, real_t *u2, int shell_waits, real_t *out)
{
  be_event *ev = s->t_ev[p->q];
  if (!p->exchange || !p->enqueue) {
    if (p->timed && !p->exchange) { /* no shell: an empty interval */
      FD_BE(be_event_record(ev[2], s->compute));
      FD_BE(be_event_record(ev[3], s->compute));
    }
    return FD_OK;
  }
  FD_CALL(halo_exchange_end(&s->halo));
  if (p->overlap && shell_waits && s->opt->inject_fault != FD_FAULT_ORDER)
    FD_BE(be_stream_wait_event(s->halo_stream, s->ready));
  be_range_push("boundary");
  if (p->overlap && p->timed) { /* eager: the unpack, then the timed shell */
    FD_CALL(halo_exchange_unpack(&s->halo, s->u, u2));
    FD_BE(be_event_record(ev[2], s->halo_stream));
    if (p->has_shell) FD_CALL(pass_shell(s, p, s->halo_stream, out));
    FD_BE(be_event_record(ev[3], s->halo_stream));
  } else {
    FD_CALL(pass_segment(s, SEG_RECEIVE, pass_receive, p, s->halo_stream, out));
  }
  FD_BE(be_event_record(s->joined[s->passes % 2], s->halo_stream));
  FD_BE(be_stream_wait_event(s->compute, s->joined[s->passes % 2]));
  if (!p->overlap) {
    if (p->timed) {
      FD_BE(be_event_record(ev[0], s->compute));
      FD_CALL(pass_interior(s, p, s->compute, out));
      FD_BE(be_event_record(ev[1], s->compute));
      FD_BE(be_event_record(ev[2], s->compute));
      if (p->has_shell) FD_CALL(pass_shell(s, p, s->compute, out));
      FD_BE(be_event_record(ev[3], s->compute));
    } else {
      FD_CALL(pass_segment(s, SEG_SERIAL, pass_serial, p, s->compute, out));
    }
  }
  be_range_pop();
  return FD_OK;
}

/* What the pass leaves to the next: the signalled words' state, a pack made ahead, its sample,
 * whether the next pack is ordered, the wave's point source, the redundant points. */
static int pass_account(fd_state *s, const fd_pass *p, real_t *out)
{
  const int *n = s->grid.n;
  const unsigned sides = s->alone ? 0u : s->sides;
  /* width 1: u is not what the slots hold; deeper, each exchange packs its own and the words
   * stay agreed (every rank takes the same passes): the reset before the next signalled
   * exchange is only a conservative fresh start, one barrier per change of path */
  if (s->sig_able && !p->sig && (s->width == 1 || p->exchange)) s->sig_primed = 0;
  if (p->pack_next) { /* the receive packed the next exchange (in a chain's graph too) */
    s->ahead_u = out;
    s->ahead_exchange = s->halo.exchanges;
  }
  if (p->timed) {
    s->t_pending[p->q] = 1;
    s->samples++;
    s->sampled_steps += p->len;
  }
  /* With one ghost layer and one step per pass, the next pack reads only the layers next to the
   * exchanged faces, which the shell just wrote on the halo stream: it need not wait for the
   * compute stream, unless something there wrote into them (the wave's source) */
  s->pack_ordered = p->exchange && p->overlap && p->regions;
  if (s->prob.op == FD_OP_WAVE &&
      window_box_contains(&p->box, s->src_local[0], s->src_local[1], s->src_local[2])) {
    s->pack_ordered = 0;
    /* U2[src] += dt^2 s(t_n) / (hx hy hz), t_n = n dt: the level being computed is n+1 (a
     * wave pass is one step), added on the compute stream by every rank whose box holds the
     * point (the same value, the same rounding). While the wavelet is on, the owner records
     * the point's new value for the energy check (verify.h): one value copied on the device,
     * no host wait */
    const int *sl = s->src_local;
    const real_t val = step_source_value(s, s->steps);
    /* (a signalled pass added it in its launch where the shell holds it) */
    if (val != 0 && !(p->sig && s->width == 1 && s->src_shell)) FD_BE(be_add_point(&s->grid, sl[0], sl[1], sl[2], val, out, s->compute));
    if (s->src_owned && s->src_hist && s->steps < s->src_steps)
      FD_BE(be_memcpy_async(s->src_hist + s->steps + 1, out + fd_grid_index(&s->grid, sl[0], sl[1], sl[2]),
                            sizeof(real_t), BE_COPY_D2D, s->compute));
  }
  /* points updated beyond 1..n: every step's box (the fused kernel computes the same levels) */
  const double block = (double)n[0] * n[1] * n[2];
  for (int t = 0; t < p->len && sides; t++) {
    fd_box b;
    window_step_box(n, s->width, sides, s->win_pos + t, &b);
    s->redundant += (double)window_box_points(&b) - block;
  }
  return FD_OK;
}

/* The buffers rotate: heat and jacobi take out as the next u, the wave shifts its levels
 * (um <- u <- out), laplacian keeps u; the step, pass and window counters move on. */
static void pass_advance(fd_state *s, int len, real_t *out)
{
  if (s->prob.levels == 2) {
    real_t *old = s->um;
    s->um = s->u;
    s->u = out;
    s->v = old;
  } else if (s->prob.swaps) {
    s->v = s->u;
    s->u = out;
  } else {
    s->v = out;
  }
  s->steps += len;
  s->passes++;
  s->win_pos += len;
  if (s->dec.size == 1 || s->steps % s->width == 0) s->win_pos = 0;
}

/* One pass of `len` steps (1 <= len <= T): the schedule of fdmini, in one place. With one
 * ghost layer and one step per pass (the defaults) every pass exchanges:
 *
 *   compute stream: record(ready) -> interior update ------------------------> wait(joined)
 *   halo stream:    wait(ready) -> pack -> record(pack_end)   unpack -> shell -> record(joined)
 *   host:                 wait(pack_end) -> MPI_Isend (Irecv preposted) -> MPI_Waitall
 *
 * Heat and jacobi receive in one launch that also packs the next pass's faces; faces by IPC
 * need no host wait (flags order the copies); where every face goes by IPC the whole pass is
 * one launch (signalled; at --halo-width S > 1 the window's exchange is a launch of its own
 * before its first pass, pass_signalled). With --halo-width S a window of passes shares one
 * S-deep exchange; with --fuse T a pass is T steps of the fused kernel. Each pass's device work
 * is replayed from graphs, and runs of passes are chains (loop.c). docs/ explains the
 * schedule in full: why each wait is there and why no buffer is read while written. */
int solver_pass(fd_state *s, int len)
{
  fd_pass p;
  pass_plan(s, len, &p);
  real_t *out = NULL;
  FD_CALL(pick_output(s, &out));
  real_t *u2 = s->halo.fields > 1 ? s->um : NULL;
  if (p.timed) FD_CALL(step_read_sample(s, p.q)); /* its events are about to be recorded again */
  if (p.sig) {
    FD_CALL(pass_signalled(s, &p, out)); /* interior, exchange and shell: one launch */
  } else {
    int shell_waits;
    FD_CALL(pass_begin(s, &p, u2, &shell_waits));     /* 1. ready, pack, send */
    FD_CALL(pass_update_interior(s, &p, out));        /* 2. the interior while faces travel */
    FD_CALL(pass_end(s, &p, u2, shell_waits, out));   /* 3. wait, unpack, shell, join */
  }
  FD_CALL(pass_account(s, &p, out)); /* 4. the source, what the next pass needs to know */
  pass_advance(s, len, out);          /* 5. the buffers rotate */
  if (!s->chain_mode) FD_CALL(step_run_ahead(s, 1));
  if (!s->alone && !s->snap_off) FD_CALL(snapshot_after_step(s->snap, s->steps, out));
  return FD_OK;
}
