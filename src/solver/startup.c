/* startup.c - the start-up choices, by trials of the run's own loop: the single-step kernel
 * (after the autotune of tune.c), the steps per pass, the fused configuration and graphs
 * (choose_fuse), the halo path (choose_path); startup_measure runs them in order. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <string.h>

#include "fd_error.h"
#include "state.h"
#include "tune.h"

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
  FD_CALL(loop_run_steps(s, steps, "trial"));
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
  FD_CALL(state_graphs_set(s, graphs));
  FD_CALL(halo_use_graphs(&s->halo, graphs));
  FD_CALL(state_fill(s));
  s->snap_off = 1;
  const int width = s->dec.size == 1 ? 1 : s->width;
  *unit = width / state_gcd(width, T) * T;
  return FD_OK;
}

/* A loop trial: ms per step of the run's own loop (loop_run_steps: its passes, exchanges, sampled
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

/* ft->cand[i] becomes ft's choice: the steps per pass and the fused configuration. */
static void take_fuse(fd_fuse_tune *ft, int i)
{
  ft->chosen = i;
  ft->config = ft->cand[i];
  ft->steps = ft->config.steps;
}

/* The steps per pass, configuration and graphs setting ft chose, from now on (the graphs
 * kept so far freed). Not Collective. */
static int use_choice(fd_state *s, const fd_fuse_tune *ft)
{
  FD_CALL(set_fuse(s, ft->steps, &ft->config));
  FD_CALL(state_graphs_set(s, ft->chosen_graphs));
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
    take_fuse(ft, ft->chosen);
  }
  return use_choice(s, ft);
}

/* Puts schedule q in place: PATH_MPI every face through MPI, PATH_FLAGS the faces that can by
 * IPC with the two-stream schedule (flags the streams set and await), the others through MPI,
 * PATH_SIGNALLED by IPC with the exchange signalled inside the pass's launch, the faces that
 * cannot go by IPC through the off-node proxy (halo_use_proxy). Collective. */
enum { PATH_MPI = 0, PATH_FLAGS, PATH_SIGNALLED, PATH_COUNT };
static int use_path(fd_state *s, int q)
{
  FD_CALL(halo_use_ipc(&s->halo, q != PATH_MPI));
  FD_CALL(halo_use_proxy(&s->halo, q == PATH_SIGNALLED));
  FD_CALL(state_agree_signals(s));
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
 * faces by IPC with flags; with auto or ipc, where every face goes by IPC (step_signalled), by
 * IPC signalled on the device too (inside the pass's launch; deeper halos in launches of their
 * own). None wins
 * everywhere: ranks sharing one GPU under MPS step faster by IPC in pairs and slower by it
 * eight at a time with flags, where X, the exchange alone, does not tell the two apart; the
 * signalled launch needs more registers, which large blocks pay (bench/results/README.md, "The
 * IPC path at small blocks", "The exchange signalled inside the launch"). Where the trials
 * before ran the proxy's pass (trial_with_proxy), their kernel and graphs setting are that
 * pass's: each candidate without the proxy also tries the signalled pass's kernel beside its
 * own, the other graphs setting (--graphs auto on a device) and, where choose_fuse's loop
 * trials weighed several configurations (--fuse auto), each of the others (tune_fuse_others),
 * and keeps its fastest (r->path_trial_own: 1, 2 with the steps per pass; on 8 emulated nodes
 * of one rank the host-driven path ran 14 % slower with the proxy's choices than with its own,
 * and 2 ranks at 128^3 with --halo-width 4 stepped 11 % faster through MPI with T = 4 than
 * with the proxy's T = 1, 15 % between two configurations of T = 4: bench/results/README.md,
 * "Across nodes"). The fields start over. Collective. */
#define FD_PATH_ROUNDS 2

/* Why this run's passes cannot be one launch (step_signalled is 0), for --halo-path proxy's
 * error line. Pure. */
static const char *signal_obstacle(const fd_state *s)
{
  const fd_options *o = s->opt;
  if (!o->overlap) return "--no-overlap runs the exchange apart from the update";
  if (o->inject_fault == FD_FAULT_SHELL && s->width > 1) return "the shell fault plants nothing in deep passes";
  if (s->width == 1 && s->halo.fields != 1) return "the wave's two time levels go in one launch from --halo-width 2";
  if (s->width == 1 && s->fuse != 1) return "--fuse T > 1 needs --halo-width T or more";
  if (s->prob.op == FD_OP_WAVE && s->src_steps < 0) return "the wave's source has too many steps to add on the device";
  if (!s->sig_able) return "some face can go neither by IPC nor through the proxy";
  return "a test option keeps the passes apart";
}

static int choose_path(fd_state *s, fd_result *r)
{
  fd_tune *t = &r->tune;
  const int own = s->halo.use_proxy; /* the trials before ran the proxy's pass */
  /* the kernel of path q: where zmarch's other shapes ran loop trials (passes signalled), the
   * fastest of them on the signalled path and the fastest of the closest on the others */
  const int by_path = t->rounds && t->loop_family >= 0;
  const int plain = by_path ? t->chosen_plain : t->chosen, sig_kernel = t->chosen;
  s->sig_off = 0;
  const int path = s->opt->halo_path;
  fd_fuse_tune *ft = &r->fuse;
  const int faces = s->halo.ipc_faces_all + s->halo.mpi_faces_all > 0;
  if (path == FD_HALO_PATH_MPI || !faces ||
      (path != FD_HALO_PATH_PROXY && s->halo.ipc_able_all == 0 && s->halo.proxy_able_all == 0))
    return FD_OK; /* nothing to choose: every face through MPI (or no face) */
  FD_CALL(use_path(s, PATH_SIGNALLED));
  const int sig = step_signalled(s);
  if (path == FD_HALO_PATH_PROXY && !sig)
    return fd_agree(s->dec.cart, fd_set_error(FD_ERR_USAGE, "--halo-path proxy: this run's passes cannot be one "
                                              "launch (%s); use --halo-path auto", signal_obstacle(s)));
  int cand[PATH_COUNT], n = 0;
  if (path == FD_HALO_PATH_AUTO) cand[n++] = PATH_MPI;
  /* the faces by IPC where any can go so (else the same as every face through MPI) */
  if (path != FD_HALO_PATH_PROXY && s->halo.ipc_able_all > 0) cand[n++] = PATH_FLAGS;
  if (path != FD_HALO_PATH_MIXED && sig) cand[n++] = PATH_SIGNALLED;
  if (n == 0) cand[n++] = PATH_MPI; /* mixed where no face can go by IPC */
  if (n < 2) {
    FD_CALL(use_path(s, cand[0]));
    if (by_path) FD_CALL(use_kernel(s, t, cand[0] == PATH_SIGNALLED ? sig_kernel : plain));
    return use_choice(s, ft);
  }
  /* each candidate's configurations {kernel (an index of t->cand, -1: as set), graphs, steps
   * per pass (an index of ft->cand, -1: ft's choice)}: its own; where `own`, the signalled
   * pass's kernel, the other graphs setting and the other configurations of the steps' loop
   * trials (tune_fuse_others) too */
  int trial_graphs;
  (void)graphs_wanted(s, &trial_graphs);
  int fother[FD_FUSE_TUNE_MAX];
  const int nfo = own && ft->rounds ? tune_fuse_others(ft, ft->chosen, fother) : 0;
  int conf[PATH_COUNT][4 + 2 * FD_FUSE_TUNE_MAX][3], nconf[PATH_COUNT] = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    const int q = cand[i], mine = !by_path ? -1 : (q == PATH_SIGNALLED ? sig_kernel : plain);
    const int others = own && q != PATH_SIGNALLED;
    const int nk = others && by_path && sig_kernel != plain ? 2 : 1, ng = others && trial_graphs ? 2 : 1;
    for (int f = -1; f < (others ? nfo : 0); f++)
      for (int k = 0; k < (f < 0 ? nk : 1); k++)
        for (int g = 0; g < ng; g++) {
          int *c = conf[q][nconf[q]++];
          c[0] = k ? sig_kernel : mine;
          c[1] = g ? !ft->chosen_graphs : ft->chosen_graphs;
          c[2] = f < 0 ? -1 : fother[f];
        }
  }
  double best[PATH_COUNT] = {0.0, 0.0, 0.0};
  int bestc[PATH_COUNT] = {0, 0, 0};
  for (int round = 0; round < FD_PATH_ROUNDS; round++)
    for (int i = 0; i < n; i++) {
      const int q = cand[round % 2 ? n - 1 - i : i];
      FD_CALL(use_path(s, q));
      for (int j = 0; j < nconf[q]; j++) {
        double ms;
        const int f = conf[q][j][2];
        if (conf[q][j][0] >= 0) FD_CALL(use_kernel(s, t, conf[q][j][0]));
        const fd_fused *c = f < 0 ? &ft->config : &ft->cand[f];
        FD_CALL(loop_trial(s, f < 0 ? ft->steps : c->steps, c, conf[q][j][1], &ms)); /* the slowest rank's */
        if ((round == 0 && j == 0) || ms < best[q]) best[q] = ms, bestc[q] = j;
      }
    }
  int pick = cand[0];
  for (int i = 1; i < n; i++)
    if (best[cand[i]] <= best[pick]) pick = cand[i];
  FD_CALL(use_path(s, pick));
  if (conf[pick][bestc[pick]][0] >= 0) FD_CALL(use_kernel(s, t, conf[pick][bestc[pick]][0]));
  ft->chosen_graphs = conf[pick][bestc[pick]][1];
  if (conf[pick][bestc[pick]][2] >= 0) take_fuse(ft, conf[pick][bestc[pick]][2]); /* not choose_fuse's pick */
  FD_CALL(use_choice(s, ft)); /* the graphs' staged copies followed the old faces */
  for (int q = 0; q < PATH_COUNT; q++) r->path_trial_us[q] = best[q] * 1e3;
  r->path_trial_rounds = FD_PATH_ROUNDS;
  r->path_trial_own = !(own && (nconf[PATH_MPI] > 1 || nconf[PATH_FLAGS] > 1)) ? 0 : (nfo ? 2 : 1);
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
  const int sig = step_signalled(s) && s->width == 1; /* the one launch of be_signals_pass */
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

/* Where faces to other nodes may go through the proxy (--halo-path auto or proxy, some face
 * out of IPC reach), the proxy carries them from here on, so that the trials before
 * choose_path (the kernel's, the steps per pass', graphs') run the signalled pass that
 * choose_path will weigh, as they do where every face goes by IPC; without it they ran the
 * host-driven exchange, and its best kernel, not the one-launch pass's, then ran the proxy's
 * pass (bench/results/README.md, "Across nodes"). A path trial that then takes every face
 * through MPI keeps these trials' kernel and graphs setting. Where the passes cannot be
 * signalled even so, the proxy stays off. Collective. */
static int trial_with_proxy(fd_state *s)
{
  const int path = s->opt->halo_path;
  if ((path != FD_HALO_PATH_AUTO && path != FD_HALO_PATH_PROXY) || s->halo.proxy_able_all == 0) return FD_OK;
  FD_CALL(halo_use_proxy(&s->halo, 1));
  FD_CALL(state_agree_signals(s));
  if (step_signalled(s)) return FD_OK;
  FD_CALL(halo_use_proxy(&s->halo, 0));
  return state_agree_signals(s);
}

/* Start-up measurements on this rank's block (tune.h), on fields filled first (state_fill):
 * the memcpy reference (s->memcpy_gbs, and over the ranks into r); the floors
 * (floors_measure); the proxy on for the trials where it may carry faces (trial_with_proxy);
 * unless the configuration is forced (--kernel), --tune off or the backend has one kernel,
 * the autotune and its finalists' loop trials (confirm_kernel), whose choice s->kernel becomes
 * on every rank; then the steps per pass, the fused configuration and graphs (choose_fuse); the
 * halo path (choose_path); last X with those (floors_exchange). Leaves the fields to be filled
 * again. Collective. */
int startup_measure(fd_state *s, fd_result *r)
{
  const fd_options *o = s->opt;
  /* the copies, floors and exchanges below read the fields: filled first, so that none reads
   * memory nothing wrote (compute-sanitizer initcheck) */
  FD_CALL(state_fill(s));
  FD_CALL(tune_memcpy_gbs(s->pool[1], s->pool[0], s->grid.elems * sizeof(real_t), s->compute,
                          &s->memcpy_gbs));
  results_stat(s->dec.cart, s->dec.size, s->memcpy_gbs, &r->memcpy_gbs);
  FD_CALL(floors_measure(s, r));
  FD_CALL(trial_with_proxy(s));
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
  return floors_exchange(s, r);
}
