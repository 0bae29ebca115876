/* state.h - private to src/solver/: the live state of one run (fd_state) and the verbs the
 * solver's files share. The files form a hierarchy, each using only those listed before it:
 *   step.c     one pass: the schedule (solver_pass)
 *   state.c    the state's life: create, fill, destroy
 *   loop.c     passes into loops: chains, run-ahead, the timed loop (uses step.c)
 *   results.c  the numbers of the report, over the ranks
 *   floors.c   a step's floors and X measured at start (uses step.c, results.c)
 *   startup.c  the start-up choices by trials: kernel, steps per pass, graphs, halo path
 *              (uses all of the above and tune.c)
 *   solver.c   fd_run: the run from its checks to the verification (uses all)
 * Every field array is (nx+2S) x (ny+2S) x (nz+2S), x fastest (fd_grid), S = width. */
#ifndef FDMINI_SOLVER_STATE_H
#define FDMINI_SOLVER_STATE_H

#include <mpi.h>

#include "backend.h"
#include "bind.h"
#include "checkpoint.h"
#include "decomp.h"
#include "dump.h"
#include "graph_cache.h"
#include "halo.h"
#include "options.h"
#include "plan.h"
#include "problem.h"
#include "result.h"
#include "snapshot.h"
#include "verify.h"

/* Field buffers of the rotation: 2 (laplacian, heat, jacobi) or 3 (wave) time levels, plus one
 * a snapshot may hold while it is copied off the device. */
#define FD_POOL_MAX 4

/* One window in FD_SAMPLE_EVERY runs its passes eagerly with device timing events (with
 * signalled passes the loop's first only: sampled_window): the report's phase times are those
 * windows' (docs/report.md); the other passes record no timing event and need no
 * host wait. A timed loop of fewer than 2 x FD_SAMPLE_MIN windows samples all of them
 * (step_sample_plan): phases from a handful of windows of a short run contradicted the step. */
#define FD_SAMPLE_EVERY 16
#define FD_SAMPLE_MIN 16
/* The host runs at most 2 x FD_AHEAD passes ahead of the device. */
#define FD_AHEAD 16
/* Passes replayed as one graph at most (run_chain, loop.c). */
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
  int src_shell;     /* wave: the source's owner, at width 1, with the point in the shell of its
                        faces with a neighbour: a signalled pass adds the source in its launch
                        (be_sig_stencil), not be_add_point after it */
  real_t *src_sig;   /* where src_shell: device array of src_steps values, the one added by
                        exchange e of the signalled passes since their prime (src_sig[e], the
                        step at the prime + e; 0 past the wavelet), written by each prime */
  real_t *hist_recv; /* wave with checks, every rank: host copy of src_hist, broadcast from its
                        owner at the end (src_steps + 1 values; state_create allocates it) */
  double *hist_host; /* the same as the checks read it (src_steps + 1 doubles) */
  fd_verify_memory vmem; /* with checks: the host memory they take at the end, allocated by
                        state_create (verify_reserve) so that a shortfall ends the run before
                        its first step */
  fd_dump_buffers dumpbuf; /* --dump: its host memory, state_create's (dump_reserve), or vmem's
                        block and interior where the checks hold those (dump_own 0) */
  int dump_own;      /* dumpbuf was allocated by dump_reserve (state_destroy frees it) */
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
  long long sample_stride; /* sampled windows: every sample_stride-th, from the first (1..FD_SAMPLE_EVERY) */
  long long sample_lead;   /* with signalled passes: the first sample_lead windows (1..FD_SAMPLE_MIN) */
  long long sampled_windows; /* windows sampled since the loop began */
  long long loop_windows; /* windows of the last timed loop */
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
  int sig_able;      /* every rank exchanges by IPC (neighbours on its own device or on peers), one field
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
  int node;          /* this rank's real node (fd_node.host): ranks sharing a device measure their
                        floors one after another */
  double floor_graph_us, floor_launch_sync_us, floor_copy_us, latency_us, exchange_alone_us;
  double floor_peer_us;  /* F_p (floors.c), 0 where n/a */
  double floor_proxy_us; /* F_m (floors.c), 0 where n/a */
  uint64_t test_rng;     /* --test-delays: this rank's random sequence (step.c) */
  int tests_armed;       /* the test waits of step.c run (state_arm_tests: after the start-up) */
                     /* this rank's floors (measure_floors), microseconds */
} fd_state;

/* The kinds of graph_cache.h work the solver captures: a pass's segments (step.c), chains of
 * passes (loop.c) and the receive of X's exchanges (floors.c). Part of every graph key. */
enum { SEG_INTERIOR = 1, SEG_RECEIVE, SEG_SERIAL, SEG_CHAIN, SEG_SIGNAL, SEG_ALONE };
/* fd_state.chain_mode: solver_pass inside a chain (loop.c) */
enum { CHAIN_CAPTURE = 1, CHAIN_DRY = 2 };

static inline int state_gcd(int a, int b) { return b ? state_gcd(b, a % b) : a; }

/* ---- step.c: one pass ---- */

/* One pass of `len` steps (1 <= len <= T) from s->u into a free pool buffer, which becomes
 * the next input (step.c has the schedule). Asynchronous on the compute and halo streams;
 * Collective where the pass exchanges through MPI. */
int solver_pass(fd_state *s, int len);
/* Whether the exchanging passes receive fused (one launch: unpack, shell, next pack) and
 * whether they are signalled (the whole pass one launch). The same on every rank. Pure. */
int step_receives_fused(const fd_state *s);
int step_signalled(const fd_state *s);
/* wave: the source's value added to the point by step `step` (U^{step+1}); the same on every
 * rank and every schedule. Pure. */
real_t step_source_value(const fd_state *s, long long step);
/* Whether window w of a loop runs eagerly with timing events. Pure. */
int step_sampled_window(const fd_state *s, long long w);
/* The sampling of a timed loop of `windows` windows: every window of a loop of fewer than
 * 2 FD_SAMPLE_MIN (*stride 1, *lead = windows), else *stride = FD_SAMPLE_EVERY and *lead = 1
 * (signalled passes: the first window), as the start-up's loops. Pure. */
void step_sample_plan(long long windows, long long *stride, long long *lead);
/* Adds the sampled pass of parity q to the phase sums (waits for its events). Not Collective. */
int step_read_sample(fd_state *s, int q);
/* The bounded run-ahead after k more passes. Not Collective; may wait for the device. */
int step_run_ahead(fd_state *s, int k);

/* ---- state.c: the state's life ---- */

/* Sets *s up for the job o on the global grid N over the process grid P, laid over the nodes
 * node->id names (decomp_create; s->node = node->host). Collective over comm; on error *s
 * holds what was made (state_abandon frees it after an agreed error). */
int state_create(fd_state *s, const fd_options *o, MPI_Comm comm, const be_info *dev,
                 const fd_node *node, const long long N[3], const int P[3]);
/* Frees everything state_create made. Collective (halo_destroy). */
int state_destroy(fd_state *s);
/* Frees what this rank holds after an agreed error, keeping that error. Collective. */
void state_abandon(fd_state *s);
/* (Re)initialises the fields (ghosts an exchange fills start NaN). Synchronous. Not
 * Collective. */
int state_fill(fd_state *s);
/* Frees every graph; graphs on or off from now on. Not Collective. */
int state_graphs_clear(fd_state *s);
int state_graphs_set(fd_state *s, int on);
/* s->sig_able and s->sig for the halo's faces as they are now. Collective. */
int state_agree_signals(fd_state *s);
/* The test faults and waits that apply after the start-up (state.c). Not Collective. */
int state_arm_tests(fd_state *s);
/* The timed and untimed steps of each run, the options' or the defaults. Pure. */
void state_resolve_steps(const fd_options *o, const be_info *dev, int *iters, int *warmup);
/* The loops of the run from the step it starts at (0, or its checkpoint's). Pure. */
void state_checkpoint_steps(fd_state *s);

/* ---- loop.c: passes into loops ---- */

/* n steps in passes (chains where they apply), progress lines, the checkpoints' work; returns
 * FD_STOPPED on a stop signal. Collective. */
int loop_run_steps(fd_state *s, int n, const char *label);
/* Waits for the device and reads the sampled passes and the halo's timers. Not Collective. */
int loop_sync(fd_state *s);
/* s->warmup untimed steps, then s->iters timed ones; *step_ms per timed step. Collective. */
int loop_timed(fd_state *s, double *step_ms, const char *label);
/* Whether a signalled launch of any rank waited for a neighbour past its limit (it then went
 * on with wrong values: halo_signals_stalled): every rank waits for its device and reads its
 * record; FD_ERR_RUNTIME on every rank with the line of the first stall in time, else FD_OK.
 * Synchronous; Collective. */
int loop_stalled(fd_state *s);

/* ---- results.c: the numbers of the report, over the ranks (each Collective) ---- */

void results_stat(MPI_Comm comm, int ranks, double x, fd_stat *st);
int results_stat_some(MPI_Comm comm, double x, int has, fd_stat *st, int *count);
void results_describe(const fd_state *s, fd_result *r); /* Not Collective */
/* The nodes, the grid over them and each rank's faces by where the neighbour runs. */
int results_nodes(const fd_state *s, fd_result *r);
int results_timings(const fd_state *s, double step_ms, fd_result *r);
int results_graphs_floors(fd_state *s, double step_ms, fd_result *r);
int results_snapshots(fd_state *s, double step_ms, double ref_ms, fd_result *r);
int results_checkpoints(fd_state *s, double step_ms, double ref_ms, fd_result *r);
void results_baseline(const fd_state *s, double step_ms, double alone_ms, fd_result *r);

/* ---- floors.c: what a step and an exchange cost at least, measured at start ---- */

/* F_g, F_ls, F_c and L into s and r. Overwrites the fields. Collective. */
int floors_measure(fd_state *s, fd_result *r);
/* X, the exchange alone with the run's settings, and X over its floor into s and r.
 * Overwrites the fields' ghosts. Collective. */
int floors_exchange(fd_state *s, fd_result *r);

/* ---- startup.c: the start-up choices ---- */

/* The memcpy reference, the floors, the autotune and the trials that choose the kernel, the
 * steps per pass, graphs and the halo path, then X. Leaves the fields to be filled again.
 * Collective. */
int startup_measure(fd_state *s, fd_result *r);

#endif
