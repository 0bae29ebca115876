/* solver.c - one run: set-up, the step schedule (solver_pass, the one place it lives), the
 * timed loop with progress lines, and the reductions the report needs. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "checkpoint.h"
#include "dump.h"
#include "fd_error.h"
#include "graph_cache.h"
#include "snapshot.h"
#include "solver.h"
#include "window.h"

/* Field buffers of the rotation: 2 (laplacian, heat, jacobi) or 3 (wave) time levels, plus one
 * a snapshot may hold while it is copied off the device. */
#define FD_POOL_MAX 4

/* One window in FD_SAMPLE_EVERY runs its passes eagerly with device timing events (with
 * signalled passes the loop's first only: sampled_window): the report's phase times are those
 * windows' (docs/report.md); the other passes record no timing event and need no
 * host wait. */
#define FD_SAMPLE_EVERY 16
/* The host runs at most 2 x FD_AHEAD passes ahead of the device. */
#define FD_AHEAD 16
/* Passes replayed as one graph at most (run_chain). */
#define FD_CHAIN_MAX 16
/* The live state of one run (set up by state_create, freed by state_destroy). */
typedef struct {
  const fd_options *opt;
  const be_info *dev;
  fd_decomp dec;
  fd_problem prob;
  fd_grid grid;      /* local interior extents, `width` ghost layers */
  fd_kernel kernel;  /* the single-step configuration */
  int width;         /* S: ghost layers; one exchange every S steps (--halo-width) */
  int fuse;          /* T: steps per pass (--fuse, resolved) */
  fd_fused fused[FD_FUSE_MAX + 1]; /* the fused configuration of a pass of t steps, t = 2..T */
  real_t *pool[FD_POOL_MAX]; /* every field buffer. Dimensions: (nx+2S) x (ny+2S) x (nz+2S),
                        x fastest (fd_grid); every ghost holds the boundary values (filled
                        once) */
  int npool;
  int iters, warmup; /* timed and untimed steps of each loop (defaults resolved; a restart at
                        step `first` runs what is left of them: checkpoint_steps) */
  real_t *u;         /* the step's input (wave: U1). One of pool */
  real_t *um;        /* wave: the level before u (U0, read as the stencil's f), else NULL */
  real_t *v;         /* laplacian: the last output; others: a pool buffer that is not u
                        (scratch for verification) */
  real_t *f;         /* right-hand side (jacobi) or NULL. Same shape */
  int src_owned;     /* wave: 1 when this rank's 1..n holds the source point */
  int src_local[3];  /* wave: the source point's local index (may lie in the ghosts or
                        beyond: clamped to -S-1..n+S+1) */
  long long src_steps; /* wave: steps whose source value is recorded (the wavelet is on), -1:
                        too many to record (the energy check then does not apply) */
  real_t *src_hist;  /* wave, the source's owner: device array of src_steps + 1 values, the
                        field at the source point after each of those steps (index 0: U^0 = 0) */
  int layer_k1;      /* wave: last local plane of layer 1 within 0..nz (0: none here; nz: all) */
  int two_layers;    /* wave with two velocities: boxes split below and above iface_local */
  int iface_local;   /* wave: local z of the last plane of layer 1, clamped to -S..nz+S */
  be_stream compute; /* interior and shell updates */
  be_stream halo_stream; /* pack, staging copies, unpack (high priority) */
  be_event ready;    /* recorded on compute when u is final for an exchange's pack */
  be_event joined[2]; /* by pass parity: recorded on the halo stream after the shell (or the
                        unpack, without overlap); the compute stream waits for it */
  be_event ahead[2]; /* host run-ahead bound: recorded on compute every FD_AHEAD passes; the
                        host waits for the one recorded FD_AHEAD passes earlier */
  be_event t_ev[2][4]; /* timing of a sampled pass, by sample parity: interior start/end,
                        shell start/end */
  int t_pending[2];  /* the sampled pass of that parity is not yet read */
  long long samples; /* sampled passes so far (the sample parity is samples % 2) */
  double ms_interior, ms_shell; /* device time of the sampled passes since the timed loop began */
  long long sampled_steps; /* steps of those passes */
  long long windows; /* windows begun since the loop began (every FD_SAMPLE_EVERY-th is sampled) */
  int sampling;      /* the current window is sampled: its passes run eagerly with events */
  fd_graph_cache graphs; /* the passes' device work, captured once, replayed (graph_cache.h) */
  fd_graph_cache xchains; /* the chains that hold exchanges (run_chain), on with graphs: a
                             runtime that cannot capture those turns off only them */
  double redundant;  /* points updated beyond 1..n since the timed loop began (every step) */
  double memcpy_gbs; /* device-to-device copy of one field at start-up, GB/s (read + write) */
  fd_halo halo;
  /* Each has a writer thread that works on it while the solver steps on, so each lives in an
   * allocation of its own (state_create): chain_work copies the state and puts it back, which
   * would otherwise copy a lock, a condition and counters in use and undo the writer's
   * changes (a lost wakeup: the solver then waits for a write forever). */
  fd_snapshots *snap;
  fd_checkpoints *ckpt; /* checkpoints, stop signals and the restart (checkpoint.h) */
  long long total;   /* steps of the whole run: warm-up + timed (a restart ends there too) */
  long long first;   /* the step the run starts from: 0, or its checkpoint's */
  long long steps;   /* steps done (warm-up included) */
  long long passes;  /* passes done (a pass: 1..T steps); the timing slot is passes % 2 */
  int win_pos;       /* steps since the window's exchange (0: the next pass exchanges) */
  int alone;         /* 1: no exchange (the --baseline run): ghosts keep their start values;
                        0: state_fill poisons the ghosts an exchange fills (halo_poison_ghosts:
                        the loop trials and the runs exchange before they read them; the
                        start-up kernel trials may read NaN there, timed only, at full speed
                        on GPUs and CPUs, and the fields are filled again after them) */
  int snap_off;      /* 1: no snapshots (the reference run their cost is measured against) */
  unsigned sides;    /* faces with a neighbour (bit f, faces.h): where the boxes reach into
                        the ghosts and whose ghosts arrive by exchange */
  unsigned deferred; /* the faces whose one-point layers the interior update of this pass
                        leaves to the shell update: `sides` in a pass that exchanges, none
                        otherwise (a block alone is one interior update) */
  int exchanging;    /* this rank exchanges at all: it has a neighbour (n_msgs > 0) */
  int pack_ordered;  /* the halo stream already orders the next pack after the writes of u it
                        reads (solver_pass); 0: the pack waits for `ready` */
  const real_t *ahead_u;    /* not NULL: the halo stream holds the pack of ahead_u for the halo's
                               exchange number ahead_exchange, enqueued by the last pass's
                               receive segment (receives_fused); NULL: the pass packs */
  long long ahead_exchange;
  int sig_able;      /* every rank exchanges by IPC with neighbours on its own device, one field
                        at width 1 (halo_signals_able, agreed): the passes that receive fused
                        signal their exchanges inside one launch instead (signalled) */
  int sig_primed;    /* the signalled exchange's words and slots hold u's layers (the prime, or
                        the last signalled pass); 0 once anything else wrote u */
  be_signals sig;    /* their arguments (halo_signals) */
  int sig_off;       /* the path trial (choose_path) runs or chose the two-stream schedule */
  int chain_mode;    /* solver_pass inside a chain (run_chain): CHAIN_CAPTURE enqueues the
                        pass's work directly (a graph is being captured), CHAIN_DRY enqueues
                        nothing (the chain's graph does the work); 0 otherwise */
  long long loop_captures; /* graphs captured during the last timed loop */
  long long xchain_passes, loop_xchain_passes; /* passes run in chains with exchanges: ever, and
                                                  in the last timed loop */
  long long sig_passes, loop_sig_passes; /* signalled passes: ever, and in the last timed loop */
  int ahead_count;   /* passes since the last run-ahead mark */
  long long ahead_marks; /* marks recorded (their parity picks the event) */
  int node;          /* this rank's node (fd_node.id): ranks sharing a device measure their
                        floors one after another */
  double floor_graph_us, floor_launch_sync_us, floor_copy_us, latency_us, exchange_alone_us;
                     /* this rank's floors (measure_floors), microseconds */
} fd_state;

const char *const fd_phase_names[PH_COUNT] = {"pack", "exchange", "unpack", "interior",
                                              "boundary", "step"};

/* ---- the step ---- */

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
} fd_pass;

/* The interior part of a pass on stream st. */
static int pass_interior(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (p->regions) return update_region(s, FD_REGION_INTERIOR, st, out);
  return update_box(s, &p->inner, p->len, &p->fix, st, out);
}

/* The rest of the pass's box on stream st: the shell region, or the box minus the interior as
 * slabs. */
static int pass_shell(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (p->regions) return update_region(s, FD_REGION_SHELL, st, out);
  fd_box slab[6];
  const int ns = window_box_minus(&p->box, &p->inner, slab);
  for (int q = 0; q < ns; q++) FD_CALL(update_box(s, &slab[q], p->len, &p->fix, st, out));
  return FD_OK;
}

/* The received regions into the ghosts of u (and um), then, with overlap, the shell: the
 * halo stream's work after the messages are in; with p->pack_next (receives_fused) in one
 * launch that also packs the next exchange from `out`, the next pass's u (its regions are the
 * layers the shell writes). */
static int pass_receive(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  if (p->pack_next) { /* receives_fused: one launch */
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

/* A signalled pass (signalled): the interior update, the exchange and the shell in one launch on
 * st (be_signals_pass). */
static int pass_signal(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  (void)p;
  FD_BE(be_signals_pass(&s->grid, &s->prob.coeffs, s->u, second_input(s), out, s->kernel, &s->sig, st));
  return FD_OK;
}

/* Without overlap, the interior and the shell one after the other. */
static int pass_serial(fd_state *s, const fd_pass *p, be_stream st, real_t *out)
{
  FD_CALL(pass_interior(s, p, st, out));
  if (p->has_shell) FD_CALL(pass_shell(s, p, st, out));
  return FD_OK;
}

/* ---- graphs ---- */

typedef int (*segment_fn)(fd_state *s, const fd_pass *p, be_stream st, real_t *out);
enum { SEG_INTERIOR = 1, SEG_RECEIVE, SEG_SERIAL, SEG_CHAIN, SEG_SIGNAL };

/* Frees every graph (a new configuration: the captured work would differ). Not Collective. */
static int graphs_clear(fd_state *s)
{
  const int a = fd_graph_clear(&s->graphs), b = fd_graph_clear(&s->xchains);
  return a == 0 && b == 0 ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "graphs: %s", be_error_message());
}

/* Graphs on or off from now on (frees the ones kept). Not Collective. */
static int graphs_set(fd_state *s, int on)
{
  FD_CALL(graphs_clear(s));
  s->graphs.on = s->xchains.on = on;
  return FD_OK;
}

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
  if (s->sampling || s->chain_mode) return fn(s, p, st, out); /* a chain captures it */
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
static int read_sample(fd_state *s, int q)
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
static int run_ahead(fd_state *s, int k)
{
  s->ahead_count += k;
  if (s->ahead_count < FD_AHEAD) return FD_OK;
  s->ahead_count = 0;
  const int m = (int)(s->ahead_marks++ % 2);
  FD_BE(be_event_sync(s->ahead[1 - m]));
  FD_BE(be_event_record(s->ahead[m], s->compute));
  return FD_OK;
}

enum { CHAIN_CAPTURE = 1, CHAIN_DRY = 2 };

/* Whether the run's exchanging passes receive fused (halo_fused_receive): the unpack, the
 * shell and the next exchange's pack in one launch (be_shell_exchange), on the halo stream:
 * heat and jacobi (the next pass's u is this pass's output, whose layers next to the faces the
 * shell writes), one ghost layer (one field), one step per pass, with overlap (the shell on the
 * halo stream). Pure. */
static int receives_fused(const fd_state *s)
{
  return !s->alone && s->width == 1 && s->fuse == 1 && s->opt->overlap && s->prob.swaps &&
         s->prob.levels == 1 && s->halo.fields == 1 && s->halo.n_msgs > 0;
}

/* Whether the exchanging passes are signalled: the pass is one launch on the compute stream
 * (be_signals_pass: the interior update, the wait for the neighbours' words, the shell with
 * the unpack and the next pack), where every rank's faces all go to neighbours on its own
 * device (sig_able) and the pass would receive fused; the order fault plants its race in the
 * two-stream schedule. The same on every rank. Pure. */
static int signalled(const fd_state *s)
{
  return s->sig_able && !s->sig_off && receives_fused(s) && s->opt->inject_fault != FD_FAULT_ORDER;
}

/* sig_able and sig for the halo's faces as they are now (after halo_create, halo_use_ipc).
 * Collective. */
static int agree_signals(fd_state *s)
{
  int able = s->halo.n_msgs > 0 && halo_signals_able(&s->halo);
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &able, 1, MPI_INT, MPI_MIN, s->dec.cart));
  s->sig_able = able;
  halo_signals(&s->halo, &s->sig);
  s->sig_primed = 0;
  return FD_OK;
}

/* Whether window w of a loop (windows since loop_reset) runs eagerly with timing events: one
 * in FD_SAMPLE_EVERY; with signalled passes only the loop's first, since a signalled pass's
 * phases are one launch (the interior's time) and each sampled window, an eager pass between
 * two chains, cost the 2-rank step at 64^3 about 0.9 us on an H100 (bench/results/README.md,
 * "The exchange signalled inside the launch"). Pure. */
static int sampled_window(const fd_state *s, long long w)
{
  return signalled(s) ? w == 0 : w % FD_SAMPLE_EVERY == 0;
}

/* Before signalled passes: where the words and slots do not hold u's layers, every rank waits
 * for its device, the words are reset (halo_signals_reset) and each rank primes its slots
 * with u on the compute stream. Collective (every rank decides alike). */
static int signals_prime(fd_state *s)
{
  if (!signalled(s) || s->sig_primed) return FD_OK;
  FD_BE(be_stream_sync(s->compute));
  FD_CALL(halo_signals_reset(&s->halo));
  FD_BE(be_signals_prime(&s->grid, &s->sig, s->u, s->compute));
  s->sig_primed = 1;
  return FD_OK;
}

/* One pass of `len` steps (1 <= len <= T): the schedule of fdmini, in one place.
 *
 * With one ghost layer and one step per pass (the defaults) every pass exchanges:
 *
 *   compute stream: record(ready) -> interior update ------------------------> wait(joined)
 *   halo stream:    wait(ready) -> pack -> record(pack_end)   unpack -> shell -> record(joined)
 *   host:                 wait(pack_end) -> MPI_Isend (Irecv preposted) -> MPI_Waitall
 *
 * The interior reads no ghost that an exchange fills, so it runs while the faces travel; the
 * shell (the one-point layers next to faces with a neighbour) runs once those ghosts are in,
 * on the halo stream, so it too overlaps the interior update instead of following it: the two
 * write disjoint points. The shell also reads the layers next to it, which the previous pass's
 * interior update wrote: the halo stream waits for `ready` before the pack or, where the pack
 * follows the previous shell directly (below), before the shell. The compute stream waits for
 * the shell before the next pass, whose input is this pass's output. For heat and jacobi the
 * receive is one launch (receives_fused, be_shell_exchange): the unpack, the shell, which reads
 * the new ghosts straight from the received faces, and the pack of the next pass's faces, the
 * layers the shell writes; the next pass's begin then only sets the IPC flags and posts the
 * receives (a timed pass runs the three apart and packs again, for its timing events). The
 * one host wait of a pass is the packed faces before MPI_Isend (the IPC path has none: the
 * device orders the copies); a rank without neighbours does no exchange at all, and its pass is the interior
 * update of the whole block. Where every rank's neighbours share its device and the path trial
 * chose it (signalled), a pass that would receive fused is one launch on the compute stream
 * instead (be_signals_pass: it waits on the device for the neighbours' words, reads their
 * faces from their slots, updates the interior and the shell, packs the next exchange and sets
 * their words): no halo stream, no event, no host call; signals_prime resets the words and
 * packs u before a run of such passes. Faces at the global edge hold fixed Dirichlet ghosts: their
 * layers belong to the interior.
 * --no-overlap runs the interior and the shell on the compute stream after the unpack; the
 * --baseline run ("alone") is the interior update of the whole block, with no exchange.
 *
 * Deep halos (--halo-width S) exchange S-deep regions (faces, edges, corners) once every S
 * steps, a window (window.h): the window's first pass exchanges as above, its interior being
 * the points whose dependence over the pass stays in 1..n and its shell the rest of its box,
 * which reaches S-1-(the pass's last step) into the ghosts on sides with a neighbour; the
 * window's other passes update their shrinking boxes on the compute stream. A pass is one step
 * (the single-step kernel) or T steps of the fused kernel (--fuse T; T divides S with several
 * ranks), whose points outside the fix box keep their values; passes end at multiples of T
 * steps and at the end of a run, windows at multiples of S and at the start of a run.
 *
 * The device work of a pass comes in segments on one stream each (the interior update; the
 * unpack and shell; without overlap both updates), which graphs capture once per buffer
 * assignment and replay (pass_segment); runs of passes whose work is all device-ordered (no
 * exchange, or every face by IPC: the flags order it) are chains, one graph for up to
 * FD_CHAIN_MAX passes of both streams (run_chain). One window in FD_SAMPLE_EVERY runs eagerly with
 * device timing events around its phases (the report's phase times); no other pass records a
 * timing event, and the host waits for none of them: it runs at most 2 x FD_AHEAD passes ahead.
 *
 * Buffers rotate (pick_output): the pass writes a free pool buffer `out`; then heat and
 * jacobi take it as the next u, the wave shifts its levels (um <- u <- out), laplacian keeps u.
 * The wave's point source is added on the compute stream once the whole step is in, by every
 * rank whose box holds the source point (the same value, the same rounding). Last, snapshots
 * move along (snapshot.h): the compute stream records when the buffer a snapshot holds is
 * final, the IO stream copies it to pinned memory, a writer thread writes it in the
 * background. */
static int solver_pass(fd_state *s, int len)
{
  const int *n = s->grid.n;
  const unsigned sides = s->alone ? 0u : s->sides;
  if (s->win_pos == 0) s->sampling = sampled_window(s, s->windows++);
  const int timed = s->sampling, q = (int)(s->samples % 2);
  fd_pass p;
  p.len = len;
  p.exchange = !s->alone && s->exchanging && s->win_pos == 0;
  p.overlap = p.exchange && s->opt->overlap;
  p.regions = s->width == 1 && len == 1;
  window_step_box(n, s->width, sides, s->win_pos + len - 1, &p.box);
  window_fix_box(n, s->width, sides, &p.fix);
  s->deferred = p.exchange ? sides : 0u;
  window_interior(n, s->deferred, len, &p.inner);
  if (!p.exchange) p.inner = p.box;
  p.has_shell = p.regions ? s->deferred != 0 : window_box_points(&p.box) != window_box_points(&p.inner);
  /* the receive is one launch that also packs the next pass's u, whose regions its shell
   * writes (receives_fused); a timed pass packs again (its timing events) */
  const int sig = p.exchange && signalled(s);
  p.pack_next = receives_fused(s) && p.exchange && p.regions && !timed && !sig;
  const int ahead = s->ahead_u == s->u && s->ahead_exchange == s->halo.exchanges && !timed;
  s->ahead_u = NULL;
  real_t *out = NULL;
  FD_CALL(pick_output(s, &out));
  real_t *u2 = s->halo.fields > 1 ? s->um : NULL;
  if (timed) FD_CALL(read_sample(s, q)); /* its events are about to be recorded again */
  be_event *ev = s->t_ev[q];
  /* `ready` follows the previous pass's updates on the compute stream. The pack may read u
   * once it is final: after them, unless all of u it reads came from the halo stream
   * (pack_ordered); a begin that was packed ahead waits for them just as well where the halo
   * stream is not ordered so (after a chain). The shell reads u next to its layers, which the
   * previous pass's interior update wrote, and writes the buffer that update read: where the
   * begin did not wait for `ready`, the halo stream waits for it before the shell (nothing else
   * orders the two streams that way: with IPC faces the host never waits for the halo stream,
   * which would otherwise run passes ahead of the compute stream). */
  /* a chain's replay (CHAIN_DRY) enqueues nothing: the graph holds the work, and the pass
   * only moves the state along */
  const int enqueue = s->chain_mode != CHAIN_DRY;
  if (sig) { /* one launch: its sampled pass times it as the interior, the boundary empty */
    if (!s->sig_primed) return fd_set_error(FD_ERR_RUNTIME, "rank %d: a signalled pass before the prime", s->dec.rank);
    if (enqueue) {
      be_range_push("pass");
      if (timed) FD_BE(be_event_record(ev[0], s->compute));
      FD_CALL(pass_segment(s, SEG_SIGNAL, pass_signal, &p, s->compute, out));
      if (timed) {
        FD_BE(be_event_record(ev[1], s->compute));
        FD_BE(be_event_record(ev[2], s->compute));
        FD_BE(be_event_record(ev[3], s->compute));
      }
      be_range_pop();
    }
    halo_signalled(&s->halo);
    s->sig_passes++;
  } else {
    int shell_waits = 0;
    if (p.exchange && enqueue) {
      FD_BE(be_event_record(s->ready, s->compute));
      shell_waits = s->pack_ordered;
    }
    if (p.exchange && !enqueue)
      FD_CALL(halo_exchange_replayed(&s->halo));
    else if (p.exchange && ahead)
      FD_CALL(halo_exchange_begin_packed(&s->halo, s->pack_ordered ? NULL : s->ready));
    else if (p.exchange)
      FD_CALL(halo_exchange_begin(&s->halo, s->u, u2, s->pack_ordered ? NULL : s->ready, timed));
    if (enqueue && (!p.exchange || p.overlap)) {
      be_range_push("interior");
      if (timed) FD_BE(be_event_record(ev[0], s->compute));
      FD_CALL(pass_segment(s, SEG_INTERIOR, pass_interior, &p, s->compute, out));
      if (timed) FD_BE(be_event_record(ev[1], s->compute));
      be_range_pop();
    }
    if (p.exchange && enqueue) {
      FD_CALL(halo_exchange_end(&s->halo));
      if (p.overlap && shell_waits && s->opt->inject_fault != FD_FAULT_ORDER)
        FD_BE(be_stream_wait_event(s->halo_stream, s->ready));
      be_range_push("boundary");
      if (p.overlap && timed) { /* eager: the unpack, then the timed shell */
        FD_CALL(halo_exchange_unpack(&s->halo, s->u, u2));
        FD_BE(be_event_record(ev[2], s->halo_stream));
        if (p.has_shell) FD_CALL(pass_shell(s, &p, s->halo_stream, out));
        FD_BE(be_event_record(ev[3], s->halo_stream));
      } else {
        FD_CALL(pass_segment(s, SEG_RECEIVE, pass_receive, &p, s->halo_stream, out));
      }
      FD_BE(be_event_record(s->joined[s->passes % 2], s->halo_stream));
      FD_BE(be_stream_wait_event(s->compute, s->joined[s->passes % 2]));
      if (!p.overlap) {
        if (timed) {
          FD_BE(be_event_record(ev[0], s->compute));
          FD_CALL(pass_interior(s, &p, s->compute, out));
          FD_BE(be_event_record(ev[1], s->compute));
          FD_BE(be_event_record(ev[2], s->compute));
          if (p.has_shell) FD_CALL(pass_shell(s, &p, s->compute, out));
          FD_BE(be_event_record(ev[3], s->compute));
        } else {
          FD_CALL(pass_segment(s, SEG_SERIAL, pass_serial, &p, s->compute, out));
        }
      }
      be_range_pop();
    } else if (timed && !p.exchange) { /* no shell: an empty interval */
      FD_BE(be_event_record(ev[2], s->compute));
      FD_BE(be_event_record(ev[3], s->compute));
    }
  }
  if (s->sig_able && !sig) s->sig_primed = 0; /* u is not what the slots hold */
  if (p.pack_next) { /* the receive packed the next exchange (in a chain's graph too) */
    s->ahead_u = out;
    s->ahead_exchange = s->halo.exchanges;
  }
  if (timed) {
    s->t_pending[q] = 1;
    s->samples++;
    s->sampled_steps += len;
  }
  /* With one ghost layer and one step per pass, the next pack reads only the layers next to the
   * exchanged faces, which the shell just wrote on the halo stream: it need not wait for the
   * compute stream, unless something there wrote into them (the wave's source) */
  s->pack_ordered = p.exchange && p.overlap && p.regions;
  if (s->prob.op == FD_OP_WAVE &&
      window_box_contains(&p.box, s->src_local[0], s->src_local[1], s->src_local[2])) {
    s->pack_ordered = 0;
    /* U2[src] += dt^2 s(t_n) / (hx hy hz), t_n = n dt: the level being computed is n+1 (a
     * wave pass is one step). While the wavelet is on, the owner records the point's new value
     * for the energy check (verify.h): one value copied on the device, no host wait */
    const fd_problem *pr = &s->prob;
    const int *sl = s->src_local;
    real_t val = (real_t)(pr->src_scale * problem_ricker(pr, (double)s->steps * pr->dt));
    if (val != 0) FD_BE(be_add_point(&s->grid, sl[0], sl[1], sl[2], val, out, s->compute));
    if (s->src_owned && s->src_hist && s->steps < s->src_steps)
      FD_BE(be_memcpy_async(s->src_hist + s->steps + 1, out + fd_grid_index(&s->grid, sl[0], sl[1], sl[2]),
                            sizeof(real_t), BE_COPY_D2D, s->compute));
  }
  /* points updated beyond 1..n: every step's box (the fused kernel computes the same levels) */
  const double block = (double)n[0] * n[1] * n[2];
  for (int t = 0; t < len && sides; t++) {
    fd_box b;
    window_step_box(n, s->width, sides, s->win_pos + t, &b);
    s->redundant += (double)window_box_points(&b) - block;
  }
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
  if (!s->chain_mode) FD_CALL(run_ahead(s, 1));
  if (!s->alone && !s->snap_off) FD_CALL(snapshot_after_step(s->snap, s->steps, out));
  return FD_OK;
}

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

/* ---- set-up and tear-down ---- */

/* Test only (--test-inject-fault=velocity|source): the run's stencil takes 1% more velocity
 * (r = (V dt / h)^2 grows by 1.01^2) or its source is 1% stronger than the problem states; the
 * checks read the stated parameters, never these, so they must fail. */
static void plant_physics_fault(fd_fault fault, fd_problem *p)
{
  if (fault == FD_FAULT_SOURCE) p->src_scale *= 1.01;
  if (fault != FD_FAULT_VELOCITY) return;
  fd_coeffs *cs[2] = {&p->coeffs, &p->coeffs2};
  for (int q = 0; q < 2; q++) {
    fd_coeffs *c = cs[q];
    c->cx *= (real_t)1.0201;
    c->cy *= (real_t)1.0201;
    c->cz *= (real_t)1.0201;
    c->cc = (real_t)2.0 - (real_t)2.0 * (c->cx + c->cy + c->cz);
  }
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* The timed and untimed steps of each run: the options', or the defaults: 100 timed; 10
 * warm-up steps on GPUs, 2 on host, rounded up to where a window and a pass end (a multiple
 * of S and of T, of all of 1..4 for --fuse auto), so the timed loop starts with whole
 * windows. */
static void resolve_steps(const fd_options *o, const be_info *dev, int *iters, int *warmup)
{
  *iters = o->iters > 0 ? o->iters : 100;
  const int dflt = dev->is_accelerator ? 10 : 2, t = o->fuse > 0 ? o->fuse : 12;
  const int unit = o->halo_width / gcd(o->halo_width, t) * t;
  *warmup = o->warmup >= 0 ? o->warmup : (dflt + unit - 1) / unit * unit;
}

/* The loops of the run from the step it starts at (s->first: 0, or its checkpoint's): what is
 * left of the warm-up, untimed, then the rest of the run, timed. --warmup and --iters are the
 * whole run's, so a restarted run ends at the same step as an uninterrupted one (docs/running.md,
 * "Checkpoint and restart"). checkpoint_prepare made sure that a step is left. */
static void checkpoint_steps(fd_state *s)
{
  int iters, warmup;
  resolve_steps(s->opt, s->dev, &iters, &warmup);
  s->first = s->ckpt->restart ? s->ckpt->h.step : 0;
  s->warmup = s->first < warmup ? (int)(warmup - s->first) : 0;
  s->iters = (int)(s->total - (s->first > warmup ? s->first : warmup));
}

/* wave: the steps of the whole run whose source value is recorded (the wavelet is on), up to
 * 2^24 of them; -1: not recorded (too many, or not a wave). Pure. */
static long long source_steps(const fd_state *s)
{
  if (s->prob.op != FD_OP_WAVE) return -1;
  const long long on = problem_source_steps(&s->prob);
  const long long n = on < 0 ? -1 : (on < s->total ? on : s->total);
  return n < 0 || n > (1LL << 24) ? -1 : n;
}

/* wave: the device array of the source point's values (src_hist) on the source's owner, for
 * the s->src_steps steps the wavelet is on. Agreed. Collective. */
static int alloc_source_history(fd_state *s)
{
  if (s->src_steps < 0) return FD_OK;
  const long long n = s->src_steps;
  int err = FD_OK;
  if (s->src_owned && be_malloc((void **)&s->src_hist, (size_t)(n + 1) * sizeof(real_t)) != BE_OK)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the source record (%lld values): %s", s->dec.rank,
                       n + 1, be_error_message());
  return fd_agree(s->dec.cart, err);
}

/* Sets *s up for the job o on the global grid N over the process grid P: decomposition (a
 * Cartesian communicator over comm), problem, kernel, the field pool (device memory; a
 * failure to allocate is agreed), streams, events, the halo exchange and the snapshots.
 * Collective over comm. On error *s holds what was made: state_abandon (agreed errors) frees
 * it. */
static int state_create(fd_state *s, const fd_options *o, MPI_Comm comm, const be_info *dev,
                        int node, const long long N[3], const int P[3])
{
  memset(s, 0, sizeof *s);
  s->snap = calloc(1, sizeof *s->snap);
  s->ckpt = calloc(1, sizeof *s->ckpt);
  if (s->ckpt) { /* no communicator or request yet */
    s->ckpt->comm = s->ckpt->cart = MPI_COMM_NULL;
    s->ckpt->poll = MPI_REQUEST_NULL;
  }
  FD_CALL(fd_agree(comm, s->snap && s->ckpt ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "out of memory for the run's state")));
  s->opt = o;
  s->dev = dev;
  s->node = node;
  s->width = o->halo_width;
  s->fuse = o->fuse > 0 ? o->fuse : 1; /* auto: chosen by startup_measure */
  resolve_steps(o, dev, &s->iters, &s->warmup);
  s->dec.cart = MPI_COMM_NULL;
  FD_CALL(decomp_create(comm, N, P, &s->dec));
  /* sizes first, checked for overflow before anything is allocated: a block can be too large
   * on some ranks only (uneven splits), so the verdict is agreed */
  const int *n = s->dec.n;
  FD_CALL(fd_agree(s->dec.cart, fd_grid_init(&s->grid, n, s->width) == 0
                                    ? FD_OK
                                    : fd_set_error(FD_ERR_RUNTIME, "rank %d: the local block %d x %d x %d does not fit in memory: "
                                                   "its element count exceeds 2^63", s->dec.rank, n[0], n[1], n[2])));
  problem_setup(o, N, s->dec.start, &s->prob);
  plant_physics_fault(o->inject_fault, &s->prob);
  if (o->op == FD_OP_WAVE) {
    /* the source's local index: the ranks whose boxes hold it add it (solver_pass); its
     * owner (1..n holds it) records it */
    s->src_owned = 1;
    for (int d = 0; d < 3; d++) {
      long long l = s->prob.src[d] - s->dec.start[d], far = s->grid.n[d] + s->width + 1;
      s->src_local[d] = (int)(l < -s->width - 1 ? -s->width - 1 : (l > far ? far : l));
      if (l < 1 || l > s->grid.n[d]) s->src_owned = 0;
    }
  }
  /* layer 1 = global planes <= iface */
  long long k1 = s->prob.iface - s->dec.start[2];
  s->layer_k1 = (int)(k1 < 0 ? 0 : (k1 > s->grid.n[2] ? s->grid.n[2] : k1));
  s->two_layers = s->prob.iface < N[2];
  s->iface_local = (int)(k1 < -s->width ? -s->width : (k1 > s->grid.n[2] + s->width ? s->grid.n[2] + s->width : k1));

  /* the checkpoint to continue (--restart), checked against this run, and the loops from it */
  s->total = (long long)s->warmup + s->iters;
  s->src_steps = source_steps(s);
  fd_ckpt_run run = {o->op, {N[0], N[1], N[2]}, {s->prob.vel[0], s->prob.vel[1]}, s->prob.iface, s->prob.ricker_hz,
                     {s->prob.src[0], s->prob.src[1], s->prob.src[2]},
                     o->inject_fault == FD_FAULT_VELOCITY || o->inject_fault == FD_FAULT_SOURCE ? (int)o->inject_fault : 0,
                     s->total, s->prob.swaps ? s->prob.levels : 0, s->src_steps < 0 ? -1 : s->src_steps + 1,
                     s->width, o->fuse};
  if (o->op != FD_OP_WAVE) { /* the wave's parameters do not apply */
    memset(run.vel, 0, sizeof run.vel);
    memset(run.src, 0, sizeof run.src);
    run.iface = 0;
    run.ricker_hz = 0;
  }
  FD_CALL(checkpoint_prepare(s->ckpt, o, s->dec.cart, &run));
  checkpoint_steps(s);

  /* the forced configuration, or the rule's; the autotune may replace it (run_on_state) */
  if (o->have_kernel) {
    s->kernel = o->kernel;
    int err = be_kernel_resolve(&s->grid, &s->kernel) == BE_OK
                  ? FD_OK
                  : fd_set_error(FD_ERR_USAGE, "--kernel: %s", be_error_message());
    FD_CALL(fd_agree(comm, err));
  } else {
    FD_BE(be_kernel_default(&s->grid, &s->kernel));
  }

  int staged;
  FD_CALL(halo_choose_mode(s->dec.cart, o->mpi_gpu, dev, &staged));
  /* the wave's previous level is read S-1 deep into the ghosts too: exchanged with u, in the
   * same messages */
  const int fields = s->prob.levels == 2 && s->width > 1 ? 2 : 1;

  /* allocation can fail on some ranks only (uneven splits, memory): agree before going on.
   * The pool: the time levels the stencil reads, one output, one spare a snapshot may hold */
  s->npool = s->prob.levels + 1 + (o->snapshot_every > 0);
  const int nfields = s->npool + s->prob.has_rhs;
  size_t bytes = 0, total = 0;
  int err = FD_OK;
  if (fd_size_mul(s->grid.elems, sizeof(real_t), &bytes) != 0 || fd_size_mul(bytes, (size_t)nfields, &total) != 0)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: the fields of the local block %d x %d x %d do not fit in memory: "
                       "%d x %.4g bytes exceed what a size_t counts", s->dec.rank, n[0], n[1], n[2], nfields,
                       (double)s->grid.elems * sizeof(real_t));
  else if (dev->memory_bytes > 0 && total > dev->memory_bytes)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: the fields of the local block %d x %d x %d do not fit in memory: "
                       "%d x %zu bytes, the device has %zu", s->dec.rank, n[0], n[1], n[2], nfields, bytes,
                       dev->memory_bytes);
  FD_CALL(fd_agree(s->dec.cart, err));
  /* every halo message must fit an MPI count: checked before anything is allocated */
  FD_CALL(fd_agree(s->dec.cart, halo_check_counts(&s->grid, fields, s->dec.nbr, s->dec.rank)));
  for (int b = 0; b < s->npool && err == FD_OK; b++)
    if (be_malloc((void **)&s->pool[b], bytes) != BE_OK) err = BE_ERROR;
  if (err == FD_OK && s->prob.has_rhs && be_malloc((void **)&s->f, bytes) != BE_OK) err = BE_ERROR;
  if (err != FD_OK)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the fields (%d x %zu bytes): %s",
                       s->dec.rank, nfields, bytes, be_error_message());
  FD_CALL(fd_agree(s->dec.cart, err));
  FD_CALL(alloc_source_history(s));

  FD_BE(be_stream_create(&s->compute, BE_PRIORITY_NORMAL));
  FD_BE(be_stream_create(&s->halo_stream, BE_PRIORITY_HIGH));
  FD_BE(be_event_create_sync(&s->ready));
  for (int k = 0; k < 2; k++) {
    FD_BE(be_event_create_sync(&s->joined[k]));
    FD_BE(be_event_create_sync(&s->ahead[k]));
    for (int e = 0; e < 4; e++) FD_BE(be_event_create(&s->t_ev[k][e]));
  }
  /* with two fields a snapshot's copy off the device may overlap an unpack into the ghosts of
   * the buffer it copies, two steps later; the snapshot writes only the interior */
  FD_CALL(halo_create(&s->halo, s->dec.cart, s->dec.nbr, &s->grid, fields, staged, o->halo_path,
                      dev, node, s->halo_stream));
  for (int f = 0; f < FD_FACES; f++) s->sides |= (unsigned)s->halo.faces.active[f] << f;
  s->exchanging = s->halo.n_msgs > 0;
  if (o->inject_fault == FD_FAULT_EXCHANGE && s->dec.rank == s->dec.size - 1) /* test only */
    for (int r = 0; r < FD_REGIONS; r++)
      if (s->halo.faces.active[r]) {
        FD_CALL(halo_test_drop_unpack(&s->halo, r));
        break;
      }
  FD_CALL(agree_signals(s));
  const fd_snapshot_config snap = {o->snapshot_every, o->snapshot_dir, fd_op_name(o->op),
                                    o->fail_snapshot, s->total, &s->dec,
                                    &s->grid, {s->prob.h[0], s->prob.h[1], s->prob.h[2]},
                                    s->prob.dt > 0 ? s->prob.dt : 1.0, s->compute};
  FD_CALL(snapshot_create(s->snap, &snap));
  const fd_ckpt_config ck = {o, s->dec.cart, s->dec.rank, s->dec.size, {s->dec.P[0], s->dec.P[1], s->dec.P[2]},
                             {s->dec.n[0], s->dec.n[1], s->dec.n[2]},
                             {s->dec.start[0], s->dec.start[1], s->dec.start[2]}, &s->grid, dev->is_accelerator,
                             dev->backend, s->src_owned && s->src_hist, s->compute};
  FD_CALL(checkpoint_create(s->ckpt, &ck));
  return FD_OK;
}

/* Frees everything state_create made. Collective (halo_destroy). */
static int state_destroy(fd_state *s)
{
  int rc = checkpoint_destroy(s->ckpt);
  if (rc == FD_OK) rc = snapshot_destroy(s->snap);
  free(s->ckpt);
  free(s->snap);
  s->ckpt = NULL;
  s->snap = NULL;
  FD_CALL(rc);
  FD_CALL(halo_destroy(&s->halo));
  for (int b = 0; b < s->npool; b++) FD_BE(be_free(s->pool[b]));
  FD_BE(be_free(s->f));
  FD_BE(be_free(s->src_hist));
  FD_CALL(graphs_clear(s));
  if (s->ready) FD_BE(be_event_destroy(s->ready));
  for (int k = 0; k < 2; k++) {
    FD_BE(be_event_destroy(s->joined[k]));
    FD_BE(be_event_destroy(s->ahead[k]));
    for (int e = 0; e < 4; e++)
      if (s->t_ev[k][e]) FD_BE(be_event_destroy(s->t_ev[k][e]));
  }
  if (s->compute) FD_BE(be_stream_destroy(s->compute));
  if (s->halo_stream) FD_BE(be_stream_destroy(s->halo_stream));
  FD_CALL(decomp_destroy(&s->dec));
  return FD_OK;
}

/* After an error agreed by all ranks (usage, I/O, a runtime failure checked with fd_agree):
 * frees what this rank allocated, whatever state_create reached, ignoring further errors: the
 * first one, the one reported, is kept. Collective (halo_destroy's barrier): not for a runtime
 * failure of one rank, where the others would wait in it. */
static void state_abandon(fd_state *s)
{
  fd_error_saved first;
  fd_error_save(&first);
  if (s->ckpt) (void)checkpoint_destroy(s->ckpt);
  if (s->snap) (void)snapshot_destroy(s->snap);
  free(s->ckpt);
  free(s->snap);
  s->ckpt = NULL;
  s->snap = NULL;
  (void)halo_destroy(&s->halo);
  for (int b = 0; b < s->npool; b++) (void)be_free(s->pool[b]);
  (void)be_free(s->f);
  (void)be_free(s->src_hist);
  (void)graphs_clear(s);
  if (s->ready) (void)be_event_destroy(s->ready);
  for (int k = 0; k < 2; k++) {
    (void)be_event_destroy(s->joined[k]);
    (void)be_event_destroy(s->ahead[k]);
    for (int e = 0; e < 4; e++)
      if (s->t_ev[k][e]) (void)be_event_destroy(s->t_ev[k][e]);
  }
  if (s->compute) (void)be_stream_destroy(s->compute);
  if (s->halo_stream) (void)be_stream_destroy(s->halo_stream);
  (void)decomp_destroy(&s->dec);
  fd_error_restore(&first);
}

/* ---- the loop ---- */

/* The checkpoints' work after `count` passes (one, or a chain): a checkpoint at a multiple of
 * --checkpoint-every, the stop polls (checkpoint.h); *stop when every rank stops here
 * (FD_STOPPED). Collective. */
static int checkpoint_pass(fd_state *s, int count, int *stop)
{
  const long long m = s->steps < s->src_steps ? s->steps : s->src_steps;
  const fd_ckpt_view v = {s->steps, s->alone || s->snap_off, {s->u, s->um}, s->src_owned ? s->src_hist : NULL,
                          s->src_steps < 0 ? 0 : m + 1};
  return checkpoint_after_pass(s->ckpt, &v, count, stop);
}

/* Whether chains may hold exchanging passes: every face of this rank by IPC (no MPI call, no
 * host wait in an exchange). Pure. */
static int chains_exchange(const fd_state *s)
{
  return s->halo.n_ipc > 0 && s->halo.n_mpi == 0;
}

/* A chain: `count` consecutive passes of s->fuse steps that are not sampled, as one graph
 * launched on the compute stream: the passes between two sampled ones where every pass's device
 * work is device-ordered (no exchange, or every face by IPC: chains_exchange), else a whole
 * window between two exchanges. The first time, the passes are run with their work enqueued
 * into the graph being captured (CHAIN_CAPTURE) and the state put back; then, captured now or
 * before, the graph is launched and the passes run again with nothing enqueued (CHAIN_DRY) to
 * move the state along: the buffers a chain starts from decide every buffer of its passes, and
 * the halo's phase (halo_graph_phase) every flag value of its exchanges; both are in its key.
 * Exchanges in a chain: the halo stream joins the capture at the chain's first pack, which
 * waits for the compute stream (the launch orders the graph after everything before it there:
 * each pass's halo work joined the compute stream), and every pass joins it back; after the
 * chain the next pack waits for the compute stream again (pack_ordered = 0). Not Collective. */
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
  if (!s->alone && s->exchanging && chains_exchange(s)) rc = halo_capture(&s->halo, 1);
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
  return run_ahead(s, count);
}

/* How many of the next passes (at most `most`, all of s->fuse steps) make a chain: none may
 * be sampled (the window counter runs as solver_pass runs it) or exchange through MPI (an
 * exchange by IPC alone may be in a chain where such chains still capture: *exchanges = 1 when
 * one is), and none may pass a point where the checkpoints act (checkpoint_chain_passes: a
 * checkpoint step, a stop poll). 0 where chains do not apply: graphs off or failed, snapshots
 * (a snapshot may hold a buffer and change the rotation), the wave (its source is added between
 * passes). Pure. */
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
        /* the order fault plants its race in the two-stream schedule of single passes */
        if (!chains_exchange(s) || s->xchains.failed || s->opt->inject_fault == FD_FAULT_ORDER) break;
        *exchanges = 1;
      }
      sampling = sampled_window(s, windows++);
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
static int run_steps(fd_state *s, int n, const char *label)
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

/* (Re)initialises the fields: every pool buffer carries the boundary values in its ghosts;
 * the wave starts at rest (U0 = U1 = 0). For the runs that exchange (not s->alone) the ghosts
 * an exchange fills are NaN until one does (halo_poison_ghosts: faces, edges, corners of
 * every pool buffer, the wave's second level included), so that a read of a ghost no exchange
 * wrote poisons the answer and its check fails; Dirichlet ghosts at the global edges keep
 * their values. */
static int state_fill(fd_state *s)
{
  for (int b = 0; b < s->npool; b++) {
    FD_BE(be_fill(&s->grid, &s->prob.u0, s->pool[b], s->compute));
    if (!s->alone) FD_CALL(halo_poison_ghosts(&s->halo, s->pool[b], s->compute));
  }
  s->u = s->pool[0];
  s->v = s->pool[1];
  s->um = s->prob.levels == 2 ? s->pool[2] : NULL;
  if (s->f) FD_BE(be_fill(&s->grid, &s->prob.f, s->f, s->compute));
  if (s->src_hist) {
    static const real_t zero = 0; /* U^0 at the source; the steps write the rest */
    FD_BE(be_memcpy_async(s->src_hist, &zero, sizeof zero, BE_COPY_H2D, s->compute));
  }
  FD_BE(be_stream_sync(s->compute));
  s->steps = 0;
  s->passes = 0;
  s->pack_ordered = 0;
  s->ahead_u = NULL;
  s->sig_primed = 0;
  return FD_OK;
}

/* Waits for the device, reads the sampled passes not yet read and the halo's timed exchanges.
 * Not Collective. */
static int loop_sync(fd_state *s)
{
  FD_BE(be_stream_sync(s->compute));
  FD_BE(be_stream_sync(s->halo_stream));
  for (int q = 0; q < 2; q++) FD_CALL(read_sample(s, q));
  return halo_flush_timers(&s->halo);
}

/* Zeroes the loop's sums (phases, redundant points, samples, the halo's and the snapshots') and
 * forgets a pack ahead. */
static void loop_reset(fd_state *s)
{
  s->ms_interior = s->ms_shell = s->redundant = 0.0;
  s->sampled_steps = 0;
  s->windows = 0;
  s->ahead_u = NULL; /* a pack ahead of a loop that ended is not the next loop's */
  snapshot_reset_timers(s->snap);
  checkpoint_reset_timers(s->ckpt);
  halo_reset_timers(&s->halo);
}

/* s->warmup untimed steps, then s->iters timed ones between barriers; *step_ms = wall time per
 * timed step. Phase sums restart at the timed steps. Collective. */
static int timed_loop(fd_state *s, double *step_ms, const char *label)
{
  FD_CALL(run_steps(s, s->warmup, "warm-up"));
  FD_CALL(snapshot_drain(s->snap));
  FD_CALL(loop_sync(s));
  loop_reset(s);
  const long long captures = s->graphs.captures + s->xchains.captures, xpasses = s->xchain_passes,
                  spasses = s->sig_passes;
  FD_MPI(MPI_Barrier(s->dec.cart));
  double t0 = fd_now();
  FD_CALL(run_steps(s, s->iters, label));
  FD_CALL(snapshot_drain(s->snap)); /* the snapshots' cost is the run's: timed until on disk */
  /* and the checkpoints': until the last is committed */
  if (!s->alone && !s->snap_off) FD_CALL(checkpoint_finish(s->ckpt));
  FD_BE(be_stream_sync(s->compute));
  double t1 = fd_now();
  FD_CALL(loop_sync(s));
  s->loop_captures = s->graphs.captures + s->xchains.captures - captures;
  s->loop_xchain_passes = s->xchain_passes - xpasses;
  s->loop_sig_passes = s->sig_passes - spasses;
  *step_ms = (t1 - t0) * 1e3 / s->iters;
  return FD_OK;
}

/* ---- the numbers of the report ---- */

/* min, avg and max of x over the ranks of comm (size ranks). Collective. */
static void reduce_stat(MPI_Comm comm, int ranks, double x, fd_stat *st)
{
  MPI_Allreduce(&x, &st->min, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&x, &st->max, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&x, &st->avg, 1, MPI_DOUBLE, MPI_SUM, comm);
  st->avg /= ranks;
}

/* The configuration as run. Not Collective. */
static void describe_run(const fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  r->op = o->op;
  r->ranks = s->dec.size;
  r->iters = s->iters;
  r->warmup = s->warmup;
  r->kernel = s->kernel;
  r->halo_width = s->width;
  r->halo_fields = s->halo.fields;
  r->staged = s->halo.staged;
  r->ipc_faces = s->halo.ipc_faces_all;
  r->mpi_faces = s->halo.mpi_faces_all;
  r->overlap = o->overlap;
  r->bytes_per_point = s->prob.bytes_per_point;
  r->dt = s->prob.dt;
  r->prob = s->prob;
  r->snapshot_every = o->snapshot_every;
  r->total_steps = s->total;
  r->checkpoints_on = s->ckpt->on;
  r->checkpoint_every = o->checkpoint_every;
  fd_copy_str(r->checkpoint_dir, sizeof r->checkpoint_dir, s->ckpt->dir);
  r->restarted = s->ckpt->restart;
  if (s->ckpt->restart) {
    fd_copy_str(r->restart_from, sizeof r->restart_from, s->ckpt->from);
    r->restart_step = s->ckpt->h.step;
    r->restart_skipped = s->ckpt->skipped;
    r->restart_read_s = s->ckpt->read_s;
    r->restart_bytes = s->ckpt->read_bytes;
    r->restart_writers = (long long)s->ckpt->h.writers;
    r->restart_hist_lost = s->ckpt->hist_lost;
    fd_copy_str(r->restart_commit, sizeof r->restart_commit, s->ckpt->h.commit);
    fd_copy_str(r->restart_created, sizeof r->restart_created, s->ckpt->h.created);
  }
  r->snapshot_bytes = (double)s->dec.N[0] * s->dec.N[1] * s->dec.N[2] * sizeof(real_t);
  for (int d = 0; d < 3; d++) {
    r->procs[d] = s->dec.P[d];
    r->global[d] = s->dec.N[d];
    r->local_min[d] = s->dec.nmin[d];
    r->local_max[d] = s->dec.nmax[d];
  }
}

/* This rank's phase times of the timed loop, ms per step (PH_STEP: step_ms, the wall time). */
static void phase_times(const fd_state *s, double step_ms, double ph[PH_COUNT])
{
  /* the sampled windows' device times per step; the exchanges' per exchange, times the
   * exchanges per step; the MPI part of an exchange is the host's, timed every time */
  const fd_halo *h = &s->halo;
  const double per_sampled = s->sampled_steps > 0 ? 1.0 / (double)s->sampled_steps : 0.0;
  const double per_timed = h->timed > 0 ? 1.0 / (double)h->timed : 0.0;
  const double ex_per_step = (double)h->count / s->iters;
  const double mpi = h->count > 0 ? h->mpi_ms / (double)h->count : 0.0, ipc = h->ipc_ms * per_timed;
  ph[PH_PACK] = h->pack_ms * per_timed * ex_per_step;
  ph[PH_EXCHANGE] = (mpi > ipc ? mpi : ipc) * ex_per_step;
  ph[PH_UNPACK] = h->unpack_ms * per_timed * ex_per_step;
  ph[PH_INTERIOR] = s->ms_interior * per_sampled;
  ph[PH_SHELL] = s->ms_shell * per_sampled;
  ph[PH_STEP] = step_ms;
}

/* Phases, bandwidth, halo and IPC-copy figures of the timed loop over the ranks. Collective. */
static int reduce_timings(const fd_state *s, double step_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const long long *N = s->dec.N;
  double ph[PH_COUNT];
  phase_times(s, step_ms, ph);
  for (int k = 0; k < PH_COUNT; k++) reduce_stat(comm, ranks, ph[k], &r->phase[k]);
  double loop_s = step_ms * 1e-3 * s->iters;
  FD_MPI(MPI_Allreduce(&loop_s, &r->total_s, 1, MPI_DOUBLE, MPI_MAX, comm));
  double local_points = (double)s->grid.n[0] * s->grid.n[1] * s->grid.n[2];
  double bw = local_points * s->prob.bytes_per_point / (step_ms * 1e-3) / 1e9;
  reduce_stat(comm, ranks, bw, &r->bw_rank);
  reduce_stat(comm, ranks, 100.0 * bw / s->memcpy_gbs, &r->pct_memcpy);
  r->bw_total = r->bw_rank.avg * ranks;
  r->points_per_s = (double)N[0] * N[1] * N[2] / (r->phase[PH_STEP].max * 1e-3);
  /* per step: what one exchange sends times the exchanges of the timed loop, over its steps
   * (one exchange every S steps; a window cut short by the end of a run counts whole) */
  const double per_step = (double)s->halo.count / s->iters;
  unsigned long long ex[2] = {s->halo.bytes_sent, (unsigned long long)s->halo.n_msgs}, ex_max[2];
  FD_MPI(MPI_Allreduce(ex, ex_max, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
  r->halo_bytes_exchange_max = (size_t)ex_max[0];
  r->halo_msgs_exchange_max = (int)ex_max[1];
  double step_figs[2] = {(double)s->halo.bytes_sent * per_step, s->halo.n_msgs * per_step}, step_max[2];
  FD_MPI(MPI_Allreduce(step_figs, step_max, 2, MPI_DOUBLE, MPI_MAX, comm));
  r->halo_bytes_max = (size_t)(step_max[0] + 0.5);
  r->halo_msgs_step_max = step_max[1];
  double hb = step_figs[0];
  double hgbs = ph[PH_EXCHANGE] > 0 ? hb / (ph[PH_EXCHANGE] * 1e-3) / 1e9 : 0.0;
  reduce_stat(comm, ranks, hgbs, &r->halo_gbs);
  reduce_stat(comm, ranks, s->halo.timed > 0 ? s->halo.copy_ms / s->halo.timed * per_step : 0.0, &r->ipc_copy_ms);
  /* redundant points: updated beyond the block's 1..n, per step, per rank and over all */
  const double red = s->redundant / s->iters;
  reduce_stat(comm, ranks, red, &r->redundant);
  r->redundant_share = r->redundant.avg * ranks / ((double)N[0] * N[1] * N[2]);
  return FD_OK;
}

/* The ranks whose cache c failed to capture into *ranks, and the lowest one's reason into why
 * (FD_GRAPH_WHY bytes). Collective. */
static int reduce_capture_failure(const fd_state *s, const fd_graph_cache *c, int *ranks, char *why)
{
  const MPI_Comm comm = s->dec.cart;
  int failed = c->on && c->failed, lowest = failed ? s->dec.rank : s->dec.size;
  FD_MPI(MPI_Allreduce(&failed, ranks, 1, MPI_INT, MPI_SUM, comm));
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, comm));
  if (lowest < s->dec.size) {
    if (s->dec.rank == lowest) snprintf(why, FD_GRAPH_WHY, "%s", c->why);
    FD_MPI(MPI_Bcast(why, FD_GRAPH_WHY, MPI_CHAR, lowest, comm));
  }
  return FD_OK;
}

/* The graphs as run and the step against its floor F1 = max(F_g, F_c), over the ranks.
 * Collective. */
static int reduce_graphs_floors(fd_state *s, double step_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const double f1 = s->floor_graph_us > s->floor_copy_us ? s->floor_graph_us : s->floor_copy_us;
  reduce_stat(comm, s->dec.size, f1 > 0 ? step_ms * 1e3 / f1 : 0.0, &r->step_over_f1);
  r->graphs_on = s->graphs.on;
  FD_CALL(reduce_capture_failure(s, &s->graphs, &r->graphs_failed, r->graphs_why));
  FD_CALL(reduce_capture_failure(s, &s->xchains, &r->xchains_failed, r->xchains_why));
  FD_MPI(MPI_Allreduce(&s->loop_captures, &r->graph_captures, 1, MPI_LONG_LONG, MPI_MAX, comm));
  FD_MPI(MPI_Allreduce(&s->loop_xchain_passes, &r->xchain_passes, 1, MPI_LONG_LONG, MPI_MAX, comm));
  FD_MPI(MPI_Allreduce(&s->loop_sig_passes, &r->sig_passes, 1, MPI_LONG_LONG, MPI_MAX, comm));
  return FD_OK;
}

/* Snapshots written and their costs per timed step over the ranks: the step's loss against the
 * reference run without snapshots (step_ms - ref_ms: everything the snapshots cost the step,
 * contention for cores and memory included), the snapshot work, and the share of that work
 * hidden, 1 - lost / work. The work is the solver thread's snapshot time other than its waits
 * (which already counts copies a backend makes synchronously), the copies that ran beside it
 * and the writer thread's busy time. Collective. */
static int reduce_snapshots(fd_state *s, double step_ms, double ref_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const double it = s->iters;
  r->snapshots = s->snap->written - s->snap->adopted; /* rank 0 counts them (this run's) */
  FD_MPI(MPI_Bcast(&r->snapshots, 1, MPI_LONG_LONG, 0, comm));
  fd_snap_times t;
  snapshot_timers(s->snap, &t);
  reduce_stat(comm, ranks, t.host / it, &r->snapshot_host_ms);
  reduce_stat(comm, ranks, t.stall / it, &r->snapshot_stall_ms);
  reduce_stat(comm, ranks, t.copy / it, &r->snapshot_copy_ms);
  reduce_stat(comm, ranks, t.writer / it, &r->snapshot_writer_ms);
  const double beside = t.copy > t.copy_call ? t.copy - t.copy_call : 0.0;
  const double work = (t.host - t.stall + beside + t.writer) / it;
  const double lost = step_ms > ref_ms ? step_ms - ref_ms : 0.0;
  double hidden = work > 0 ? 1.0 - lost / work : 1.0;
  hidden = hidden < 0 ? 0 : (hidden > 1 ? 1 : hidden);
  reduce_stat(comm, ranks, ref_ms, &r->snapshot_ref_ms);
  reduce_stat(comm, ranks, lost, &r->snapshot_lost_ms);
  reduce_stat(comm, ranks, work, &r->snapshot_work_ms);
  reduce_stat(comm, ranks, hidden, &r->snapshot_hidden);
  return FD_OK;
}

/* Checkpoints written and their costs per timed step over the ranks, as for the snapshots: the
 * step's loss against the reference run without them (with snapshots too: their loss together),
 * the checkpoint work (the solver thread's time other than its waits, the copies beside it, the
 * writer thread) and the share of it hidden. Collective. */
static int reduce_checkpoints(fd_state *s, double step_ms, double ref_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const double it = s->iters;
  fd_ckpt_times t;
  checkpoint_timers(s->ckpt, &t);
  reduce_stat(comm, ranks, t.host / it, &r->ckpt_host_ms);
  reduce_stat(comm, ranks, t.stall / it, &r->ckpt_stall_ms);
  reduce_stat(comm, ranks, t.copy / it, &r->ckpt_copy_ms);
  reduce_stat(comm, ranks, t.writer / it, &r->ckpt_writer_ms);
  reduce_stat(comm, ranks, t.sync / it, &r->ckpt_sync_ms);
  const double beside = t.copy > t.copy_call ? t.copy - t.copy_call : 0.0;
  const double work = (t.host - t.stall + beside + t.writer) / it;
  const double lost = step_ms > ref_ms ? step_ms - ref_ms : 0.0;
  double hidden = work > 0 ? 1.0 - lost / work : 1.0;
  hidden = hidden < 0 ? 0 : (hidden > 1 ? 1 : hidden);
  reduce_stat(comm, ranks, ref_ms, &r->ckpt_ref_ms);
  reduce_stat(comm, ranks, lost, &r->ckpt_lost_ms);
  reduce_stat(comm, ranks, work, &r->ckpt_work_ms);
  reduce_stat(comm, ranks, hidden, &r->ckpt_hidden);
  reduce_stat(comm, ranks, t.writer_max, &r->ckpt_writer_max_ms);
  r->ckpt_keep_up_every = 0;
  if (r->ckpt_writer_max_ms.max > 0 && r->ckpt_ref_ms.max > 0) {
    const double steps = ceil(r->ckpt_writer_max_ms.max / r->ckpt_ref_ms.max);
    const long long T = s->fuse > 0 ? s->fuse : 1;
    r->ckpt_keep_up_every = steps < 1e15 ? ((long long)steps + T - 1) / T * T : 0;
  }
  r->ckpt_polls = t.polls;
  r->checkpoints = s->ckpt->written;
  r->checkpoint_first = s->ckpt->first_step;
  r->checkpoint_last = s->ckpt->last_step;
  r->checkpoint_bytes = s->ckpt->bytes;
  fd_copy_str(r->checkpoint_last_path, sizeof r->checkpoint_last_path, s->ckpt->last_path);
  return FD_OK;
}

/* --baseline: each rank's efficiency against its block alone (alone_ms per step) and the share
 * of its exchange hidden, 1 - (T_step - T_alone) / (pack + exchange + unpack) clamped to
 * [0, 1], over the ranks; where the exchange was signalled inside the launch (its phases are not
 * apart) X, the exchange alone, per step instead of the three. Collective. */
static void reduce_baseline(const fd_state *s, double step_ms, double alone_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  double ph[PH_COUNT];
  phase_times(s, step_ms, ph);
  double comm_ms = ph[PH_PACK] + ph[PH_EXCHANGE] + ph[PH_UNPACK];
  if (s->loop_sig_passes > 0) comm_ms = s->exchange_alone_us * 1e-3 * (double)s->loop_sig_passes / s->iters;
  double hidden = comm_ms > 0 ? 1.0 - (step_ms - alone_ms) / comm_ms : 1.0;
  hidden = hidden < 0 ? 0 : (hidden > 1 ? 1 : hidden);
  r->baseline = 1;
  reduce_stat(comm, ranks, alone_ms, &r->alone_ms);
  reduce_stat(comm, ranks, alone_ms / step_ms, &r->efficiency);
  reduce_stat(comm, ranks, hidden, &r->hidden);
}

/* ---- the answer ---- */

/* Test only (--test-inject-fault=field|tiny): the last rank changes the centre point of its
 * block of field (a device field with ghosts) to 1.01 x + 0.5, or (1 + 1e-3) x, so that
 * verification must fail. Not Collective; synchronous. */
static int inject_fault(fd_state *s, real_t *field)
{
  const fd_fault fault = s->opt->inject_fault;
  if (s->dec.rank != s->dec.size - 1 || (fault != FD_FAULT_FIELD && fault != FD_FAULT_TINY)) return FD_OK;
  const int *n = s->grid.n;
  const long long c = fd_grid_index(&s->grid, n[0] / 2 + 1, n[1] / 2 + 1, n[2] / 2 + 1);
  real_t x;
  FD_BE(be_memcpy_async(&x, field + c, sizeof x, BE_COPY_D2H, s->compute));
  FD_BE(be_stream_sync(s->compute));
  x = fault == FD_FAULT_FIELD ? x * (real_t)1.01 + (real_t)0.5 : x * (real_t)1.001;
  FD_BE(be_memcpy_async(field + c, &x, sizeof x, BE_COPY_H2D, s->compute));
  FD_BE(be_stream_sync(s->compute));
  return FD_OK;
}

/* wave: the recorded values at the source point (src_hist) from its owner to every rank, as
 * doubles (*hist, the caller frees it; *n entries, -1 when not recorded). Collective. */
static int source_history(fd_state *s, double **hist, long long *n)
{
  *hist = NULL;
  *n = s->src_steps < 0 ? -1 : s->src_steps + 1;
  if (*n < 0) return FD_OK;
  int owner = s->src_owned ? s->dec.rank : -1;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &owner, 1, MPI_INT, MPI_MAX, s->dec.cart));
  real_t *r = malloc((size_t)*n * sizeof(real_t));
  *hist = malloc((size_t)*n * sizeof(double));
  int err = r && *hist ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: verify: out of host memory", s->dec.rank);
  if (err == FD_OK && s->src_owned) {
    FD_BE(be_memcpy_async(r, s->src_hist, (size_t)*n * sizeof(real_t), BE_COPY_D2H, s->compute));
    FD_BE(be_stream_sync(s->compute));
  }
  err = fd_agree(s->dec.cart, err);
  if (err == FD_OK) {
    FD_MPI(MPI_Bcast(r, (int)*n, FD_MPI_REAL, owner, s->dec.cart));
    for (long long m = 0; m < *n; m++) (*hist)[m] = (double)r[m];
  }
  free(r);
  if (err != FD_OK) {
    free(*hist);
    *hist = NULL;
  }
  return err;
}

/* Verifies the run's result (jacobi: with the residual before the first step, residual0, and
 * the one computed here). Collective. */
static int verify(fd_state *s, const real_t *result, double residual0, fd_verify *v)
{
  fd_verify_input in = {&s->prob, &s->dec, &s->grid, s->compute, s->steps, result, NULL, NULL, -1, residual0, 0.0};
  if (s->prob.op == FD_OP_JACOBI) FD_CALL(residual(s, &in.residual));
  double *hist = NULL;
  if (s->prob.op == FD_OP_WAVE) {
    in.prev = s->um;
    FD_CALL(source_history(s, &hist, &in.n_hist));
    in.src_hist = hist;
  }
  int rc = verify_run(&in, v);
  free(hist);
  return rc;
}

/* ---- the run ---- */

/* The fused configurations of passes of t = 2..T steps: c with t steps, or the rule's where c
 * does not resolve with fewer steps (a pass cut short at the end of a run). */
static int set_fuse(fd_state *s, int T, const fd_fused *c)
{
  s->fuse = T;
  for (int t = 2; t <= T; t++) {
    fd_fused x = *c;
    x.steps = t;
    if (be_fused_resolve(&x) != BE_OK) {
      memset(&x, 0, sizeof x);
      x.steps = t;
      FD_BE(be_fused_resolve(&x));
    }
    s->fused[t] = x;
  }
  return FD_OK;
}

/* Target wall time of a loop trial's timed part; a probe longer than FD_TRIAL_CYCLE_MS per
 * sampling cycle makes the trial time whole windows instead of whole cycles. */
#define FD_TRIAL_MS 4.0
#define FD_TRIAL_CYCLE_MS 40.0
/* Rounds of loop trials over the finalists (trial_rounds) */
#define FD_TRIAL_ROUNDS 3
/* The sustained trial on a device (sustain): the finalists within FD_SUSTAIN_MARGIN of the
 * fastest, at most FD_SUSTAIN_MAX, each run FD_SUSTAIN_WARM_MS untimed, then FD_SUSTAIN_MS
 * timed */
#define FD_SUSTAIN_MARGIN 0.08
#define FD_SUSTAIN_MAX 3
#define FD_SUSTAIN_WARM_MS 600.0
#define FD_SUSTAIN_MS 400.0

/* Runs `steps` steps of the loop on every rank; *s_max = the slowest rank's wall time in
 * seconds. Collective. */
static int trial_time(fd_state *s, int steps, double *s_max)
{
  FD_MPI(MPI_Barrier(s->dec.cart));
  const double t = fd_now();
  FD_CALL(run_steps(s, steps, "trial"));
  FD_CALL(loop_sync(s));
  const double dt = fd_now() - t;
  FD_MPI(MPI_Allreduce(&dt, s_max, 1, MPI_DOUBLE, MPI_MAX, s->dec.cart));
  return FD_OK;
}

/* Sets the loop up for a trial with T steps per pass (configuration c) and graphs on or off:
 * the fields start over, snapshots are off (the caller turns them on again). *unit = a window
 * (a pass on one rank) and a whole number of passes, in steps. Collective. */
static int trial_setup(fd_state *s, int T, const fd_fused *c, int graphs, int *unit)
{
  FD_CALL(set_fuse(s, T, c));
  FD_CALL(graphs_set(s, graphs));
  FD_CALL(halo_use_graphs(&s->halo, graphs));
  FD_CALL(state_fill(s));
  s->snap_off = 1;
  const int width = s->dec.size == 1 ? 1 : s->width;
  *unit = width / gcd(width, T) * T;
  return FD_OK;
}

/* A loop trial: ms per step of the run's own loop (run_steps: its passes, exchanges, sampled
 * windows, graphs and chains) with T steps per pass (configuration c) and graphs on or off, on
 * every rank at once; *ms is the slowest rank's. The fields start over; snapshots are off. A
 * unit of steps is a window (a pass on one rank) and a whole number of passes; a cycle is
 * FD_SAMPLE_EVERY units, after which the pattern of sampled windows and chains repeats. After a
 * probe of one unit, small blocks warm up for a cycle (every graph the pattern needs is
 * captured there), time one more to size the timed part (the warm-up's captures would make it
 * a few cycles long, where a trial's fixed costs weigh on graphs against eager launches) and
 * time whole cycles, so that the timed part captures nothing and runs what the loop runs; large
 * blocks, where a cycle would take long, time whole units. Either way the
 * timed part takes about FD_TRIAL_MS on the slowest rank, and is timed again (at most twice)
 * where it captured a graph on some rank. Collective. */
static int loop_trial(fd_state *s, int T, const fd_fused *c, int graphs, double *ms)
{
  int unit;
  FD_CALL(trial_setup(s, T, c, graphs, &unit));
  double probe, t;
  FD_CALL(trial_time(s, unit, &probe));
  long long steps;
  if (probe * FD_SAMPLE_EVERY * 1e3 < FD_TRIAL_CYCLE_MS) {
    const int cycle = FD_SAMPLE_EVERY * unit;
    FD_CALL(trial_time(s, cycle, &t)); /* the warm-up: it captures */
    FD_CALL(trial_time(s, cycle, &t)); /* what a cycle takes, to size the timed part */
    const double k = FD_TRIAL_MS * 1e-3 / (t > 0 ? t : 1e-9);
    steps = (long long)cycle * (k < 1 ? 1 : (k > 200 ? 200 : (long long)k + 1));
  } else {
    const double k = FD_TRIAL_MS * 1e-3 / (probe > 0 ? probe : 1e-9);
    steps = (long long)unit * (k < 2 ? 2 : (long long)k + 1);
  }
  /* a timed part that captured (on any rank) timed the capture too: once more, at most twice */
  for (int tries = 0; tries < 3; tries++) {
    const long long before = s->graphs.captures + s->xchains.captures;
    FD_CALL(trial_time(s, (int)steps, &t));
    const long long mine = s->graphs.captures + s->xchains.captures - before;
    long long any;
    FD_MPI(MPI_Allreduce(&mine, &any, 1, MPI_LONG_LONG, MPI_MAX, s->dec.cart));
    if (any == 0) break;
  }
  *ms = t * 1e3 / (double)steps;
  s->snap_off = 0;
  return FD_OK;
}

/* The loop trials (loop_trial) of fin[0..nfin-1], each {index in ft->cand, graphs 0/1}, in
 * FD_TRIAL_ROUNDS rounds, the order reversed every other round: ft->loop_ms keeps each one's
 * fastest round, and ft->chosen, ft->chosen_graphs name the fastest (the first of equals). One
 * trial alone times whatever the device and the host were doing then (the first trials after
 * the candidates' timing, a clock settling at the power limit). Every rank gets the slowest
 * rank's times, so the same choice. Collective. */
static int trial_rounds(fd_state *s, fd_fuse_tune *ft, int (*fin)[2], int nfin)
{
  ft->rounds = FD_TRIAL_ROUNDS;
  for (int round = 0; round < FD_TRIAL_ROUNDS; round++)
    for (int q = 0; q < nfin; q++) {
      const int *e = fin[round % 2 ? nfin - 1 - q : q];
      double ms;
      FD_CALL(loop_trial(s, ft->cand[e[0]].steps, &ft->cand[e[0]], e[1], &ms));
      double *kept = &ft->loop_ms[e[0]][e[1]];
      if (round == 0 || ms < *kept) *kept = ms;
    }
  double best = 0.0;
  for (int q = 0; q < nfin; q++) {
    const double ms = ft->loop_ms[fin[q][0]][fin[q][1]];
    if (best == 0.0 || ms < best) {
      best = ms;
      ft->chosen = fin[q][0];
      ft->chosen_graphs = fin[q][1];
    }
  }
  return FD_OK;
}

/* Whole cycles (FD_SAMPLE_EVERY units) of steps that take about `ms` at `per_step` ms per step,
 * at least one, at most what an int holds. Pure. */
static int cycles_for(double ms, double per_step, int unit)
{
  const long long cycle = (long long)FD_SAMPLE_EVERY * unit;
  const double k = ms / (per_step > 0 ? per_step : 1e-9) / (double)cycle;
  long long n = k < 1 ? 1 : (long long)k + 1;
  if (n > INT_MAX / 2 / cycle) n = INT_MAX / 2 / cycle;
  return (int)(n * cycle);
}

/* The sustained trial on a device: a GPU at its power limit lowers its clock over a second or
 * so, by how much depending on what it runs, so that the few milliseconds of a loop trial can
 * rank two configurations the other way round from a long run (bench/results/README.md, "Deep
 * halos with edges and corners"). The configurations of fin[0..nfin-1] (as trial_rounds takes
 * them) whose faster graphs setting lies within FD_SUSTAIN_MARGIN of the fastest loop trial, at
 * most FD_SUSTAIN_MAX, fastest first, each run with that setting FD_SUSTAIN_WARM_MS untimed and
 * then FD_SUSTAIN_MS timed in the run's own loop: ft->sustain_ms holds their ms per step
 * (slowest rank), and the fastest of them becomes ft->chosen, ft->chosen_graphs. Nothing where
 * fewer than two are that close. Collective. */
static int sustain(fd_state *s, fd_fuse_tune *ft, int (*fin)[2], int nfin)
{
  int pick[FD_SUSTAIN_MAX], n = 0;
  const double best = ft->loop_ms[ft->chosen][ft->chosen_graphs];
  for (int k = 0; k < FD_SUSTAIN_MAX; k++) { /* the next fastest within the margin */
    int next = -1;
    for (int q = 0; q < nfin; q++) {
      const double ms = ft->loop_ms[fin[q][0]][fin[q][1]];
      int taken = 0; /* its configuration, with the other graphs setting */
      for (int p = 0; p < n; p++) taken |= fin[pick[p]][0] == fin[q][0];
      if (!taken && ms <= best * (1.0 + FD_SUSTAIN_MARGIN) &&
          (next < 0 || ms < ft->loop_ms[fin[next][0]][fin[next][1]]))
        next = q;
    }
    if (next < 0) break;
    pick[n++] = next;
  }
  if (n < 2) return FD_OK;
  double fastest = 0.0;
  for (int p = 0; p < n; p++) {
    const int i = fin[pick[p]][0], g = fin[pick[p]][1];
    int unit;
    FD_CALL(trial_setup(s, ft->cand[i].steps, &ft->cand[i], g, &unit));
    const double per = ft->loop_ms[i][g];
    const int warm = cycles_for(FD_SUSTAIN_WARM_MS, per, unit), timed = cycles_for(FD_SUSTAIN_MS, per, unit);
    double t;
    FD_CALL(trial_time(s, warm, &t));
    FD_CALL(trial_time(s, timed, &t));
    s->snap_off = 0;
    const double ms = t * 1e3 / (double)timed;
    ft->sustain_ms[i][g] = ms;
    if (p == 0 || ms < fastest) {
      fastest = ms;
      ft->chosen = i;
      ft->chosen_graphs = g;
    }
  }
  ft->sustained = n;
  ft->sustain_warm_s = FD_SUSTAIN_WARM_MS * 1e-3;
  ft->sustain_s = FD_SUSTAIN_MS * 1e-3;
  ft->sustain_margin = FD_SUSTAIN_MARGIN;
  return FD_OK;
}

/* --graphs: 1 when this backend replays graphs for the run (on, or auto where the backend
 * runs on a device; the host backend's recorded calls are for tests: auto leaves them off). */
static int graphs_wanted(const fd_state *s, int *trial)
{
  *trial = 0;
  if (s->opt->graphs == FD_GRAPHS_OFF) return 0;
  if (s->opt->graphs == FD_GRAPHS_ON) return 1;
  *trial = s->dev->is_accelerator;
  return s->dev->is_accelerator;
}

/* The steps per pass, configuration and graphs setting ft chose, from now on (the graphs
 * kept so far freed). Not Collective. */
static int use_choice(fd_state *s, const fd_fuse_tune *ft)
{
  FD_CALL(set_fuse(s, ft->steps, &ft->config));
  FD_CALL(graphs_set(s, ft->chosen_graphs));
  return halo_use_graphs(&s->halo, ft->chosen_graphs);
}

/* The steps per pass, the fused configuration and the graphs setting (--fuse, --graphs) into
 * r->fuse, r->graphs_* and s: T = 1; a given T with the backend's rule (--tune off, the host
 * backend); otherwise the fused kernel's configurations are timed alone on the rank's block
 * (be_fused_candidates of each T; T = 1 the single-step configuration), the fastest one or two
 * of each T are the finalists, and each finalist runs loop trials (trial_rounds, loop_trial:
 * the run's own passes and exchanges) with graphs off and, with --graphs auto on a device, on:
 * the fastest per step is the run's, unless on a device the sustained trial (sustain) of those
 * within a few percent of it decides. --fuse auto takes T among 1..4 dividing S with several
 * ranks and the snapshot interval with snapshots. With no fused trial, --graphs auto is a loop trial of the
 * configuration with graphs off and on. Leaves the fields to be filled again. Collective. */
static int choose_fuse(fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  fd_fuse_tune *ft = &r->fuse;
  memset(ft, 0, sizeof *ft);
  ft->steps = 1;
  int steps[FD_FUSE_MAX], n = 0, trial_graphs;
  const int graphs = graphs_wanted(s, &trial_graphs);
  if (o->fuse == 0) {
    for (int t = 1; t <= FD_FUSE_MAX; t++)
      if ((s->dec.size == 1 || s->width % t == 0) && (o->snapshot_every == 0 || o->snapshot_every % t == 0) &&
          (o->checkpoint_every == 0 || o->checkpoint_every % t == 0))
        steps[n++] = t;
  } else if (o->fuse > 1) {
    steps[n++] = o->fuse;
  }
  if (n == 0 || (n == 1 && (!s->dev->is_accelerator || o->tune == FD_TUNE_OFF))) {
    if (n == 1) {
      ft->steps = ft->config.steps = steps[0];
      FD_CALL(fd_agree(s->dec.cart, be_fused_resolve(&ft->config) == BE_OK
                                        ? FD_OK
                                        : fd_set_error(FD_ERR_USAGE, "--fuse: %s", be_error_message())));
    }
    ft->chosen_graphs = graphs;
    if (trial_graphs) { /* one configuration: graphs off and on */
      ft->n = 1;
      ft->cand[0] = ft->config;
      ft->cand[0].steps = ft->steps;
      int fin[2][2] = {{0, 0}, {0, 1}};
      FD_CALL(trial_rounds(s, ft, fin, 2));
    }
  } else {
    /* each rank's block as a pass over 1..n with the fix box 1..n; T = 1 the single-step
     * configuration over the same points */
    FD_CALL(state_fill(s));
    const fd_kernel_trial t1 = {s->grid, FD_REGION_ALL, 0, s->prob.coeffs, s->u, s->f, s->v, s->compute};
    fd_fused_trial tf = {.grid = s->grid, .coeffs = s->prob.coeffs, .u = s->u, .f = s->f,
                         .out = s->v, .stream = s->compute};
    for (int d = 0; d < 3; d++) {
      tf.lo[d] = tf.fix_lo[d] = 1;
      tf.hi[d] = tf.fix_hi[d] = s->grid.n[d];
    }
    FD_CALL(tune_fused(s->dec.cart, &t1, s->kernel, &tf, steps, n, ft));
    /* the finalists: the fastest two of each T (its first one for T = 1), each with graphs
     * off and (auto on a device) on */
    const double t0 = fd_now();
    int fin[2 * FD_FUSE_MAX * 2][2], nfin = 0;
    for (int k = 0; k < n; k++) {
      int first = -1, second = -1;
      for (int i = 0; i < ft->n; i++) {
        if (ft->cand[i].steps != steps[k]) continue;
        if (first < 0 || ft->ms[i] < ft->ms[first]) second = first, first = i;
        else if (second < 0 || ft->ms[i] < ft->ms[second]) second = i;
      }
      const int pick[2] = {first, steps[k] > 1 ? second : -1};
      for (int f = 0; f < 2; f++)
        for (int g = 0; g < 2; g++)
          if (pick[f] >= 0 && (trial_graphs || g == graphs)) {
            fin[nfin][0] = pick[f];
            fin[nfin++][1] = g;
          }
    }
    FD_CALL(trial_rounds(s, ft, fin, nfin));
    if (s->dev->is_accelerator) FD_CALL(sustain(s, ft, fin, nfin));
    double dt = fd_now() - t0, slowest;
    FD_MPI(MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, s->dec.cart));
    ft->seconds += slowest;
    ft->steps = ft->cand[ft->chosen].steps;
    ft->config = ft->cand[ft->chosen];
  }
  return use_choice(s, ft);
}

/* min, avg and max of x over the ranks of comm where `has` is 1 (all 0 where none has one);
 * *count = how many have one. Collective. */
static int reduce_stat_some(MPI_Comm comm, double x, int has, fd_stat *st, int *count)
{
  double lo = has ? x : 1e300, hi = has ? x : -1e300, sum[2] = {has ? x : 0.0, has ? 1.0 : 0.0};
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, comm));
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, comm));
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, sum, 2, MPI_DOUBLE, MPI_SUM, comm));
  *count = (int)sum[1];
  st->min = *count ? lo : 0.0;
  st->max = *count ? hi : 0.0;
  st->avg = *count ? sum[0] / sum[1] : 0.0;
  return FD_OK;
}

/* The floors of a step on this rank (docs/small-blocks.md, "The floors"): F_g, F_ls
 * (be_floors; 0, n/a, on the host backend) and F_c, the faster of be_floors' graph of one copy
 * and the memcpy reference (tune_memcpy_gbs), and with neighbours L
 * (halo_latency_us), over the ranks into r. Overwrites the fields. Collective. */
static int measure_floors(fd_state *s, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  /* the device's floors, not the contention of ranks sharing it: those measure one at a time */
  bind_peers peers;
  FD_CALL(bind_device_peers(comm, s->node, s->dev, &peers));
  int err = FD_OK;
  be_floor_times ft = {0, 0, 0};
  for (int turn = 0; turn < peers.most; turn++) {
    if (turn == peers.turn && be_floors(s->compute, s->pool[1], s->pool[0], s->grid.elems * sizeof(real_t), &ft) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: floors: %s", s->dec.rank, be_error_message());
    FD_MPI(MPI_Barrier(comm));
  }
  FD_CALL(err);
  s->floor_graph_us = ft.graph_us;
  s->floor_launch_sync_us = ft.launch_sync_us;
  /* F_c: the faster of a graph's copy and the memcpy reference's batched copies */
  const double memcpy_us = s->memcpy_gbs > 0 ? 2.0 * (double)s->grid.elems * sizeof(real_t) / (s->memcpy_gbs * 1e3) : 0.0;
  s->floor_copy_us = ft.copy_us > 0 && (memcpy_us <= 0 || ft.copy_us < memcpy_us) ? ft.copy_us : memcpy_us;
  int dev = ft.graph_us > 0, all_dev;
  FD_MPI(MPI_Allreduce(&dev, &all_dev, 1, MPI_INT, MPI_MIN, comm));
  r->floors_device = all_dev;
  reduce_stat(comm, ranks, s->floor_graph_us, &r->floor_graph_us);
  reduce_stat(comm, ranks, s->floor_launch_sync_us, &r->floor_launch_sync_us);
  reduce_stat(comm, ranks, s->floor_copy_us, &r->floor_copy_us);
  FD_CALL(halo_latency_us(&s->halo, &s->latency_us));
  int with;
  FD_CALL(reduce_stat_some(comm, s->latency_us, s->exchanging, &r->latency_us, &with));
  r->floors_neighbours = with;
  return FD_OK;
}

/* *us = X on this rank: 20 exchanges alone with the run's settings (graphs, the fused receive,
 * the halo's path). Overwrites the fields' ghosts. Collective. */
static int time_exchange_alone(fd_state *s, double *us)
{
  if (signalled(s)) { /* the run's exchange: one launch of the unpack and the pack */
    FD_BE(be_stream_sync(s->compute));
    s->sig_primed = 0; /* the measurement primes and moves the words itself */
    return halo_signals_alone_us(&s->halo, &s->grid, s->pool[0], 20, us);
  }
  return halo_exchange_alone_us(&s->halo, s->pool[0], s->halo.fields > 1 ? s->pool[2] : NULL, 20,
                                receives_fused(s), us);
}

/* X (time_exchange_alone) and X / (F_ls + L + 2 F_g), over the ranks with neighbours into r.
 * Collective. */
static int measure_exchange(fd_state *s, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  FD_CALL(time_exchange_alone(s, &s->exchange_alone_us));
  int with;
  FD_CALL(reduce_stat_some(comm, s->exchange_alone_us, s->exchanging, &r->exchange_alone_us, &with));
  const double floor = s->floor_launch_sync_us + s->latency_us + 2 * s->floor_graph_us;
  FD_CALL(reduce_stat_some(comm, floor > 0 ? s->exchange_alone_us / floor : 0.0, s->exchanging && floor > 0,
                           &r->exchange_over_floor, &with));
  return FD_OK;
}

/* Puts schedule q in place: PATH_MPI every face through MPI, PATH_FLAGS the faces that can by
 * IPC with the two-stream schedule (flags the streams set and await), PATH_SIGNALLED by IPC
 * with the exchange signalled inside the pass's launch. Collective. */
enum { PATH_MPI = 0, PATH_FLAGS, PATH_SIGNALLED, PATH_COUNT };
static int use_path(fd_state *s, int q)
{
  FD_CALL(halo_use_ipc(&s->halo, q != PATH_MPI));
  FD_CALL(agree_signals(s));
  s->sig_off = q != PATH_SIGNALLED;
  return FD_OK;
}

/* t->cand[i] becomes the run's single-step kernel (s->kernel, t->chosen). */
static int use_kernel(fd_state *s, fd_tune *t, int i)
{
  t->chosen = i;
  s->kernel = t->cand[i];
  FD_BE(be_kernel_resolve(&s->grid, &s->kernel));
  return FD_OK;
}

/* The halo's schedule by a trial, where faces can go by IPC (halo_create mapped them): the run's
 * own loop (loop_trial, with the steps per pass, configuration and graphs choose_fuse chose)
 * with each candidate, in FD_PATH_ROUNDS rounds of alternating order; the one whose slowest
 * rank's best step is lowest stays (the same on every rank), its us per step in
 * r->path_trial_us. The candidates: with --halo-path auto every face through MPI and those
 * faces by IPC with flags; with auto or ipc, where every rank's neighbours share its device and
 * the passes receive fused, by IPC signalled inside the pass's launch too. None wins
 * everywhere: ranks sharing one GPU under MPS step faster by IPC in pairs and slower by it
 * eight at a time with flags, where X, the exchange alone, does not tell the two apart; the
 * signalled launch needs more registers, which large blocks pay (bench/results/README.md, "The
 * IPC path at small blocks", "The exchange signalled inside the launch"). The fields start
 * over. Collective. */
#define FD_PATH_ROUNDS 2
static int choose_path(fd_state *s, fd_result *r)
{
  fd_tune *t = &r->tune;
  /* the kernel of path q: where zmarch's other shapes ran loop trials (passes signalled), the
   * fastest of them on the signalled path and the fastest of the closest on the others */
  const int by_path = t->rounds && t->loop_family >= 0;
  const int plain = by_path ? t->chosen_plain : t->chosen, sig_kernel = t->chosen;
  s->sig_off = 0;
  const int path = s->opt->halo_path;
  if (path == FD_HALO_PATH_MPI || s->halo.ipc_able_all == 0) return FD_OK;
  const fd_fuse_tune *ft = &r->fuse;
  FD_CALL(use_path(s, PATH_SIGNALLED));
  int cand[PATH_COUNT], n = 0;
  if (path == FD_HALO_PATH_AUTO) cand[n++] = PATH_MPI;
  cand[n++] = PATH_FLAGS;
  if (signalled(s)) cand[n++] = PATH_SIGNALLED;
  if (n < 2) return FD_OK;
  double best[PATH_COUNT] = {0.0, 0.0, 0.0};
  for (int round = 0; round < FD_PATH_ROUNDS; round++)
    for (int i = 0; i < n; i++) {
      const int q = cand[round % 2 ? n - 1 - i : i];
      double ms;
      FD_CALL(use_path(s, q));
      if (by_path) FD_CALL(use_kernel(s, t, q == PATH_SIGNALLED ? sig_kernel : plain));
      FD_CALL(loop_trial(s, ft->steps, &ft->config, ft->chosen_graphs, &ms)); /* the slowest rank's */
      if (round == 0 || ms < best[q]) best[q] = ms;
    }
  int pick = cand[0];
  for (int i = 1; i < n; i++)
    if (best[cand[i]] <= best[pick]) pick = cand[i];
  FD_CALL(use_path(s, pick));
  if (by_path) FD_CALL(use_kernel(s, t, pick == PATH_SIGNALLED ? sig_kernel : plain));
  FD_CALL(use_choice(s, ft)); /* the graphs' staged copies followed the old faces */
  for (int q = 0; q < PATH_COUNT; q++) r->path_trial_us[q] = best[q] * 1e3;
  r->path_trial_rounds = FD_PATH_ROUNDS;
  return FD_OK;
}

/* The single-step autotune's finalists (tune_kernel_finalists): within FD_KERNEL_MARGIN of the
 * fastest alone, at most FD_KERNEL_FINALISTS; where the passes are signalled, every zmarch
 * candidate too (tune_family_finalists: only zmarch runs in the pass's one launch,
 * be_signals_pass, and its shapes alone do not rank as in that launch). Those of the family
 * that are not among the closest run one round of loop trials only where it leaves them more
 * than FD_FAMILY_KEEP behind the round's fastest (a fraction). */
#define FD_KERNEL_MARGIN 0.25
#define FD_KERNEL_FINALISTS 4
#define FD_FAMILY_KEEP 0.10

/* The single-step autotune's finalists in the run's own loop: each finalist of t runs loop
 * trials (loop_trial, one step per pass, graphs as the run takes them) in FD_TRIAL_ROUNDS
 * rounds, the order reversed every other round, and keeps its fastest; the fastest of those
 * becomes t->chosen and s->kernel, and where zmarch's other shapes joined (passes signalled),
 * the fastest of the closest finalists t->chosen_plain, the kernel choose_path tries on the
 * paths that are not signalled; those shapes leave after the first round where it left them
 * more than FD_FAMILY_KEEP behind its fastest (every rank sees the slowest rank's times, so
 * the same ones leave everywhere). A kernel timed alone ranks candidates within a few percent
 * in whatever order the device's state of the moment gives (with ranks sharing it, a pick that
 * varied by process: bench/results/README.md, "Deep halos with edges and corners"). Nothing
 * where one finalist is left, or where every pass is fused (--fuse T > 1). Leaves the fields
 * to be filled again. Collective. */
static int confirm_kernel(fd_state *s, fd_tune *t)
{
  int fin[FD_TUNE_MAX], trial;
  const int sig = signalled(s);
  const int close = tune_kernel_finalists(t, FD_KERNEL_MARGIN, FD_KERNEL_FINALISTS, fin);
  const int n = sig ? tune_family_finalists(t, FD_KERNEL_ZMARCH, fin, close) : close;
  if (n < 2 || s->opt->fuse > 1) return FD_OK;
  const int graphs = graphs_wanted(s, &trial);
  const fd_fused single = {.steps = 1};
  const double t0 = fd_now();
  int gone[FD_TUNE_MAX] = {0}; /* by candidate: left after the first round */
  for (int round = 0; round < FD_TRIAL_ROUNDS; round++) {
    for (int q = 0; q < n; q++) {
      const int i = fin[round % 2 ? n - 1 - q : q];
      if (gone[i]) continue;
      s->kernel = t->cand[i];
      FD_BE(be_kernel_resolve(&s->grid, &s->kernel));
      double ms;
      FD_CALL(loop_trial(s, 1, &single, graphs, &ms));
      if (round == 0 || ms < t->loop_ms[i]) t->loop_ms[i] = ms;
      t->loop_rounds[i] = round + 1;
    }
    if (round == 0) {
      double fastest = t->loop_ms[fin[0]];
      for (int q = 1; q < n; q++) fastest = fmin(fastest, t->loop_ms[fin[q]]);
      for (int q = close; q < n; q++)
        gone[fin[q]] = t->loop_ms[fin[q]] > fastest * (1.0 + FD_FAMILY_KEEP);
    }
  }
  int best = fin[0], plain = fin[0];
  for (int q = 1; q < n; q++) {
    if (t->loop_ms[fin[q]] < t->loop_ms[best]) best = fin[q];
    if (q < close && t->loop_ms[fin[q]] < t->loop_ms[plain]) plain = fin[q];
  }
  FD_CALL(use_kernel(s, t, best));
  t->chosen_plain = plain;
  t->rounds = FD_TRIAL_ROUNDS;
  t->loop_graphs = graphs;
  t->loop_family = n > close ? (int)FD_KERNEL_ZMARCH : -1;
  double dt = fd_now() - t0, slowest;
  FD_MPI(MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, s->dec.cart));
  t->seconds += slowest;
  return FD_OK;
}

/* Start-up measurements on this rank's block (tune.h): the memcpy reference (s->memcpy_gbs,
 * and over the ranks into r); the floors (measure_floors); unless the configuration is forced
 * (--kernel), --tune off or the backend has one kernel, the autotune and its finalists' loop
 * trials (confirm_kernel), whose choice s->kernel becomes on every rank; then the steps per
 * pass, the fused configuration and graphs (choose_fuse); the halo path (choose_path); last X
 * with those (measure_exchange). Leaves the fields to be filled again. Collective. */
static int startup_measure(fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  FD_CALL(tune_memcpy_gbs(s->pool[1], s->pool[0], s->grid.elems * sizeof(real_t), s->compute,
                          &s->memcpy_gbs));
  reduce_stat(s->dec.cart, s->dec.size, s->memcpy_gbs, &r->memcpy_gbs);
  FD_CALL(measure_floors(s, r));
  if (!o->have_kernel && o->tune != FD_TUNE_OFF && s->dev->is_accelerator) {
    FD_CALL(state_fill(s));
    const fd_kernel_trial t = {s->grid, FD_REGION_INTERIOR, s->sides, s->prob.coeffs, s->u,
                               s->prob.levels == 2 ? s->um : s->f, s->v, s->compute};
    FD_CALL(tune_kernel(s->dec.cart, &t, &r->tune));
    FD_CALL(use_kernel(s, &r->tune, r->tune.chosen));
    FD_CALL(confirm_kernel(s, &r->tune));
  }
  FD_CALL(choose_fuse(s, r));
  FD_CALL(choose_path(s, r));
  return measure_exchange(s, r);
}

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
  int rc = timed_loop(s, ref_ms, "reference (no snapshots, no checkpoints)");
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
  const fd_ckpt_view v = {0, 0, {s->u, s->um}, s->src_owned ? s->src_hist : NULL, 0};
  FD_CALL(checkpoint_load(s->ckpt, &v, s->compute));
  s->sig_primed = 0; /* u is the checkpoint's */
  checkpoint_steps(s); /* after a fallback the checkpoint is an older one */
  s->steps = s->first;
  if (s->ckpt->hist_lost) s->src_steps = -1; /* the energy check then does not apply */
  snapshot_adopt(s->snap, s->first);       /* the XDMF lists the earlier snapshots too */
  describe_run(s, r);
  return FD_OK;
}

/* fd_run after state_create: fill, time (the block alone first with --baseline), restore a
 * checkpoint, time the run, reduce, verify, dump. s stays allocated. Collective. */
static int run_on_state(fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  double alone_ms = 0.0, step_ms = 0.0, ref_ms = 0.0, residual0 = 0.0;
  FD_CALL(startup_measure(s, r));
  describe_run(s, r);
  if (o->baseline) {
    /* every rank's block alone (same kernels and steps, no exchange; its ghosts keep their
     * start values), then the fields start over for the distributed run */
    s->alone = 1;
    FD_CALL(state_fill(s));
    FD_CALL(timed_loop(s, &alone_ms, "alone (--baseline)"));
    s->alone = 0;
  }
  FD_CALL(state_fill(s));
  if (o->snapshot_every || o->checkpoint_every) FD_CALL(snapshot_reference(s, &ref_ms, &r->snapshot_ref_steps));
  /* jacobi's initial residual: of the run's start, u = 0, also when it continues a checkpoint */
  if (o->check && o->op == FD_OP_JACOBI) FD_CALL(residual(s, &residual0));
  FD_CALL(state_restore(s, r));
  FD_CALL(timed_loop(s, &step_ms, "timed"));
  FD_CALL(reduce_timings(s, step_ms, r));
  FD_CALL(reduce_graphs_floors(s, step_ms, r));
  FD_CALL(reduce_snapshots(s, step_ms, ref_ms, r));
  FD_CALL(reduce_checkpoints(s, step_ms, ref_ms, r));
  if (o->baseline) reduce_baseline(s, step_ms, alone_ms, r);

  real_t *result = state_result(s);
  FD_CALL(inject_fault(s, result));
  if (o->check) FD_CALL(verify(s, result, residual0, &r->verify));
  if (o->dump[0]) FD_CALL(dump_field(&s->dec, &s->grid, s->compute, result, o->dump));
  return FD_OK;
}

int fd_run(const fd_options *o, MPI_Comm comm, const be_info *dev, int node, fd_result *r)
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
  if (o->op == FD_OP_WAVE && o->have_source)
    for (int d = 0; d < 3; d++)
      if (o->source[d] > N[d])
        return fd_set_error(FD_ERR_USAGE, "--source %lld,%lld,%lld lies outside the %lld x %lld x %lld grid (indices 1..N)",
                            o->source[0], o->source[1], o->source[2], N[0], N[1], N[2]);
  {
    /* the operator's physical parameters on this grid (the same verdict on every rank) */
    int iters, warmup;
    const long long zero[3] = {0, 0, 0};
    fd_problem p;
    resolve_steps(o, dev, &iters, &warmup);
    problem_setup(o, N, zero, &p);
    FD_CALL(fd_agree(comm, problem_check(&p, (long long)iters + warmup)));
  }

  /* deep halos: every block along a dimension with neighbours must hold the S layers its
   * neighbours receive; fused passes must not span an exchange */
  static const char axis[3] = {'x', 'y', 'z'};
  for (int d = 0; d < 3; d++)
    if (P[d] > 1 && o->halo_width > N[d] / P[d])
      return fd_set_error(FD_ERR_USAGE, "--halo-width %d: the thinnest block along %c has %lld points (%lld over %d ranks), fewer than the %d layers a neighbour receives; use --halo-width %lld or less, or fewer ranks along %c",
                          o->halo_width, axis[d], N[d] / P[d], N[d], P[d], o->halo_width, N[d] / P[d], axis[d]);
  if ((o->inject_fault == FD_FAULT_EXCHANGE || o->inject_fault == FD_FAULT_ORDER) && ranks < 2)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=%s needs 2 or more ranks: one rank exchanges nothing",
                        o->inject_fault == FD_FAULT_ORDER ? "order" : "exchange");
  if (o->inject_fault == FD_FAULT_ORDER && !dev->is_accelerator)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=order needs a GPU backend: host streams run every call in order");
  if (ranks > 1 && o->fuse > 1 && o->halo_width % o->fuse)
    return fd_set_error(FD_ERR_USAGE, "--fuse %d with %d ranks needs --halo-width a multiple of %d (one exchange every S steps, and a pass of T steps may not span one); e.g. --halo-width %d",
                        o->fuse, ranks, o->fuse, o->fuse);

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
  return (o->check && r->verify.verdict == FD_VERDICT_FAIL) ? FD_ERR_VERIFY : FD_OK;
}
