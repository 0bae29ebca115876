/* state.c - the life of one run's state (fd_state, state.h): set-up (decomposition, problem,
 * kernel, field pool, streams, events, halo, snapshots, checkpoints), the fields' fill, the
 * graphs kept, and the tear-down, orderly or after an agreed error. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "state.h"

/* Frees every graph (a new configuration: the captured work would differ). Not Collective. */
int state_graphs_clear(fd_state *s)
{
  const int a = fd_graph_clear(&s->graphs), b = fd_graph_clear(&s->xchains);
  return a == 0 && b == 0 ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "graphs: %s", be_error_message());
}

/* Graphs on or off from now on (frees the ones kept). Not Collective. */
int state_graphs_set(fd_state *s, int on)
{
  FD_CALL(state_graphs_clear(s));
  s->graphs.on = s->xchains.on = on;
  return FD_OK;
}

/* sig_able and sig for the halo's faces as they are now (after halo_create, halo_use_ipc).
 * Collective. */
int state_agree_signals(fd_state *s)
{
  int able = s->halo.n_msgs > 0 && halo_signals_able(&s->halo);
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &able, 1, MPI_INT, MPI_MIN, s->dec.cart));
  s->sig_able = able;
  halo_signals(&s->halo, &s->sig);
  s->sig_primed = 0;
  return FD_OK;
}

/* Test only, once the start-up's trials have chosen the path (so that they weigh the run's
 * own schedule, not the planted lag or stall): the order fault's launches that do not wait for
 * the words, --test-stall's mute rank and short waits, and the host lag and delays of
 * step.c's pass_test_waits (tests_armed). The signalled arguments are taken again and the
 * graphs that hold the old ones freed. Not Collective. */
int state_arm_tests(fd_state *s)
{
  const fd_options *o = s->opt;
  if (o->inject_fault == FD_FAULT_ORDER) halo_test_signals_nowait(&s->halo);
  if (o->inject_fault == FD_FAULT_SHELL) halo_test_signals_noshell(&s->halo); /* step_signalled */
  if (o->test_stall >= 0) halo_test_signals(&s->halo, s->dec.rank == o->test_stall, FD_TEST_STALL_WAIT_S);
  halo_signals(&s->halo, &s->sig);
  s->tests_armed = o->inject_fault == FD_FAULT_ORDER || o->inject_fault == FD_FAULT_SHELL || o->test_stall >= 0 ||
                   o->test_delays;
  return s->tests_armed ? state_graphs_clear(s) : FD_OK;
}

/* Test only (--test-inject-fault=velocity|source[:F]): the run's stencil takes 1% more velocity
 * (r = (V dt / h)^2 grows by 1.01^2) or its source is 1 + F times stronger than the problem
 * states (F: size, 1e-2 unless given); the checks read the stated parameters, never these, so
 * they must fail (source: the energy balance by F / (1 + F), where that is above its
 * tolerance: every field value and the recorded source values scale by 1 + F, the energy by
 * (1 + F)^2, the work the check computes from them and the stated wavelet by 1 + F). */
static void plant_physics_fault(fd_fault fault, double size, fd_problem *p)
{
  if (fault == FD_FAULT_SOURCE) p->src_scale *= 1.0 + size;
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


/* The timed and untimed steps of each run: the options', or the defaults (plan_resolve_steps:
 * 100 timed; 10 warm-up steps on GPUs, 2 on host, rounded up to where a window and a pass end,
 * a multiple of S and of T, of all of 1..4 for --fuse auto), so the timed loop starts with
 * whole windows. */
void state_resolve_steps(const fd_options *o, const be_info *dev, int *iters, int *warmup)
{
  plan_resolve_steps(o, dev->is_accelerator, iters, warmup);
}

/* The loops of the run from the step it starts at (s->first: 0, or its checkpoint's): what is
 * left of the warm-up, untimed, then the rest of the run, timed. --warmup and --iters are the
 * whole run's, so a restarted run ends at the same step as an uninterrupted one (docs/running.md,
 * "Checkpoint and restart"). checkpoint_prepare made sure that a step is left. */
void state_checkpoint_steps(fd_state *s)
{
  int iters, warmup;
  state_resolve_steps(s->opt, s->dev, &iters, &warmup);
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

/* wave, width 1: whether the source point lies in the shell of this rank's faces with a
 * neighbour (src_shell), and then src_sig, which the signalled passes read (step.c). Agreed.
 * Collective. */
static int alloc_source_signals(fd_state *s)
{
  s->src_shell = s->src_owned && s->width == 1 && s->src_steps > 0 && fd_in_shell(&s->grid, s->sides, s->src_local);
  int err = FD_OK;
  if (s->src_shell && be_malloc((void **)&s->src_sig, (size_t)s->src_steps * sizeof(real_t)) != BE_OK)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the source's values (%lld): %s", s->dec.rank,
                       s->src_steps, be_error_message());
  return fd_agree(s->dec.cart, err);
}

/* Host memory a run needs only at its end, allocated before its first step so that a run too
 * large for its memory fails at start, not after its steps: with checks, the source record's
 * copies (wave, every rank) and what the checks take (verify_reserve); with --dump its buffers
 * (those of the checks where they hold a copy of the field and its interior: the dump comes
 * after them). Each shortfall is one line naming the rank, what and the bytes, agreed.
 * Collective. */
static int reserve_host_memory(fd_state *s)
{
  const fd_options *o = s->opt;
  if (o->check && s->src_steps >= 0) {
    const size_t n = (size_t)s->src_steps + 1;
    int err = FD_OK;
    if (!(s->hist_recv = malloc(n * sizeof(real_t))))
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the energy check's copy of the source record "
                         "(%zu bytes): out of host memory", s->dec.rank, n * sizeof(real_t));
    else if (!(s->hist_host = malloc(n * sizeof(double))))
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the energy check's source record (%zu bytes): "
                         "out of host memory", s->dec.rank, n * sizeof(double));
    FD_CALL(fd_agree(s->dec.cart, err));
  }
  if (o->check)
    FD_CALL(verify_reserve(&s->prob, &s->dec, &s->grid, &s->vmem));
  if (!o->dump[0]) return FD_OK;
  if (s->vmem.block && s->vmem.pack) {
    s->dumpbuf.host = s->vmem.block;
    s->dumpbuf.pack = s->vmem.pack;
    return FD_OK;
  }
  s->dump_own = 1;
  return dump_reserve(&s->dec, &s->grid, &s->dumpbuf);
}

/* Frees what reserve_host_memory allocated. Not Collective. */
static void release_host_memory(fd_state *s)
{
  free(s->hist_recv);
  free(s->hist_host);
  s->hist_recv = NULL;
  s->hist_host = NULL;
  if (s->dump_own) dump_release(&s->dumpbuf);
  s->dump_own = 0;
  memset(&s->dumpbuf, 0, sizeof s->dumpbuf);
  verify_release(&s->vmem);
}

/* Sets *s up for the job o on the global grid N over the process grid P: decomposition (a
 * Cartesian communicator over comm), problem, kernel, the field pool (device memory; a
 * failure to allocate is agreed), the host memory of the checks and the dump, streams, events,
 * the halo exchange, the snapshots and the checkpoints: everything the run will need, before
 * its first step.
 * Collective over comm. On error *s holds what was made: state_abandon (agreed errors) frees
 * it. */
int state_create(fd_state *s, const fd_options *o, MPI_Comm comm, const be_info *dev,
                 const fd_node *node, const long long N[3], const int P[3])
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
  s->sample_stride = FD_SAMPLE_EVERY; /* the start-up's loops; loop_timed plans its own */
  s->sample_lead = 1;
  s->node = node->host;
  s->width = o->halo_width;
  s->fuse = o->fuse > 0 ? o->fuse : 1; /* auto: chosen by startup_measure */
  state_resolve_steps(o, dev, &s->iters, &s->warmup);
  s->dec.cart = MPI_COMM_NULL;
  FD_CALL(decomp_create(comm, N, P, node->id, &s->dec));
  /* sizes first, checked for overflow before anything is allocated: a block can be too large
   * on some ranks only (uneven splits), so the verdict is agreed */
  const int *n = s->dec.n;
  FD_CALL(fd_agree(s->dec.cart, fd_grid_init(&s->grid, n, s->width) == 0
                                    ? FD_OK
                                    : fd_set_error(FD_ERR_RUNTIME, "rank %d: the local block %d x %d x %d does not fit in memory: "
                                                   "its element count exceeds 2^63", s->dec.rank, n[0], n[1], n[2])));
  problem_setup(o, N, s->dec.start, &s->prob);
  plant_physics_fault(o->inject_fault, o->inject_size, &s->prob);
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
                     o->inject_fault == FD_FAULT_VELOCITY || o->inject_fault == FD_FAULT_SOURCE ||
                             o->inject_fault == FD_FAULT_RHS
                         ? (int)o->inject_fault
                         : 0,
                     s->total, s->prob.swaps ? s->prob.levels : 0, s->src_steps < 0 ? -1 : s->src_steps + 1,
                     s->width, o->fuse};
  if (o->op != FD_OP_WAVE) { /* the wave's parameters do not apply */
    memset(run.vel, 0, sizeof run.vel);
    memset(run.src, 0, sizeof run.src);
    run.iface = 0;
    run.ricker_hz = 0;
  }
  FD_CALL(checkpoint_prepare(s->ckpt, o, s->dec.cart, &run));
  state_checkpoint_steps(s);

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
                      dev, node->id, s->halo_stream));
  for (int f = 0; f < FD_FACES; f++) s->sides |= (unsigned)s->halo.faces.active[f] << f;
  s->exchanging = s->halo.n_msgs > 0;
  if (o->inject_fault == FD_FAULT_EXCHANGE && s->dec.rank == s->dec.size - 1) /* test only */
    for (int r = 0; r < FD_REGIONS; r++)
      if (s->halo.faces.active[r]) {
        FD_CALL(halo_test_drop_unpack(&s->halo, r));
        break;
      }
  if (o->inject_fault == FD_FAULT_ZERO) halo_test_send_nothing(&s->halo); /* test only: every rank */
  FD_CALL(alloc_source_signals(s));
  s->test_rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(s->dec.rank + 1); /* --test-delays */
  FD_CALL(state_agree_signals(s));
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
  /* last: what the steps need came first, so a shortfall names what only the end needs */
  FD_CALL(reserve_host_memory(s));
  return FD_OK;
}

/* Frees everything state_create made. Collective (halo_destroy). */
int state_destroy(fd_state *s)
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
  FD_BE(be_free(s->src_sig));
  release_host_memory(s);
  FD_CALL(state_graphs_clear(s));
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
void state_abandon(fd_state *s)
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
  (void)be_free(s->src_sig);
  release_host_memory(s);
  (void)state_graphs_clear(s);
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

/* Writes NaN into 1..n of out (a pool buffer, not u; its ghosts keep their values): the
 * stencil with cc = NaN and every other coefficient 0 over the box 1..n, from u (NaN times
 * anything is NaN), an existing kernel rather than a backend primitive of its own. Asynchronous
 * on the compute stream. */
static int poison_points(fd_state *s, real_t *out)
{
  const fd_coeffs nan_c = {.cc = (real_t)NAN};
  const int lo[3] = {1, 1, 1}, *hi = s->grid.n;
  FD_BE(be_stencil_box(&s->grid, lo, hi, &nan_c, s->u, NULL, out, s->kernel, s->compute));
  return FD_OK;
}

/* Test only (--test-inject-fault=mirror, wave): the two start levels u and um (U0 = U1, at
 * rest) get +d and -d at the global points (c - q, c', c'') and (c + q, c', c''), mirror images
 * in x about the centre c = (N[0] + 1) / 2 (q = N[0] / 4, at least 1; nothing where N[0] < 3),
 * d = 1e-2 sqrt(eps) times the source's scale. The wave from this pair is odd in x, the
 * source's even: the field is no longer mirror symmetric, which the mirror symmetry check
 * (exact) must see. The other checks must not: each step is still the scheme's (the last-step
 * replay is exact); the energy balance gains the pair's own energy, about 2.6 (d / scale)^2 =
 * 2.6e-4 eps in its units (the cross terms with the even field sum to zero, and the odd field
 * is zero at the source), far below its tolerance. The same on every rank: the owners of the
 * two points write them. Synchronous. */
static int plant_mirror_fault(fd_state *s)
{
  const long long *N = s->prob.N, c = (N[0] + 1) / 2, q = N[0] / 4 > 1 ? N[0] / 4 : 1;
  if (N[0] < 3) return FD_OK;
  const double eps = sizeof(real_t) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON;
  const real_t d = (real_t)(1e-2 * sqrt(eps) * s->prob.src_scale);
  for (int side = -1; side <= 1; side += 2) {
    const long long g[3] = {c + side * q, (N[1] + 1) / 2, (N[2] + 1) / 2};
    int l[3], mine = 1;
    for (int a = 0; a < 3; a++) {
      const long long v = g[a] - s->dec.start[a]; /* start: the block's low ghost plane */
      mine &= v >= 1 && v <= s->grid.n[a];
      l[a] = (int)v;
    }
    if (!mine) continue;
    const real_t val = (real_t)side * d;
    const long long e = fd_grid_index(&s->grid, l[0], l[1], l[2]);
    FD_BE(be_memcpy_async(s->u + e, &val, sizeof val, BE_COPY_H2D, s->compute));
    FD_BE(be_memcpy_async(s->um + e, &val, sizeof val, BE_COPY_H2D, s->compute));
    FD_BE(be_stream_sync(s->compute));
  }
  return FD_OK;
}

/* (Re)initialises the fields: every pool buffer carries the boundary values in its ghosts;
 * the wave starts at rest (U0 = U1 = 0). For the runs that exchange (not s->alone) the ghosts
 * an exchange fills are NaN until one does (halo_poison_ghosts: faces, edges, corners of
 * every pool buffer, the wave's second level included), and so are the halo's receive buffers
 * (halo_poison_receives), so that a read of a ghost no exchange wrote, or a message that
 * delivered nothing, poisons the answer and its check fails; Dirichlet ghosts at the global
 * edges keep their values. The points 1..n of every pool buffer that is not an input of the
 * first pass (not u, not um) are NaN too: every pass writes all of 1..n of its output (the
 * interior and the shell, or the whole box of a deep-halo window's pass, which holds 1..n), so
 * a point a pass fails to write (the shell next to a neighbour) poisons the answer instead of
 * leaving a value that closes the block (the wave's energy then balanced with a shell of 0).
 * The other readers of those buffers write before they read: verification's scratch v, the
 * snapshots (of a pass's output), a restart (it loads u and um). Test only: the rhs fault
 * fills f 1 + F times too large, the mirror fault plants its pair (plant_mirror_fault). */
int state_fill(fd_state *s)
{
  for (int b = 0; b < s->npool; b++) {
    FD_BE(be_fill(&s->grid, &s->prob.u0, s->pool[b], s->compute));
    if (!s->alone) FD_CALL(halo_poison_ghosts(&s->halo, s->pool[b], s->compute));
  }
  s->u = s->pool[0];
  s->v = s->pool[1];
  s->um = s->prob.levels == 2 ? s->pool[2] : NULL;
  for (int b = 0; b < s->npool; b++)
    if (s->pool[b] != s->u && s->pool[b] != s->um) FD_CALL(poison_points(s, s->pool[b]));
  if (!s->alone) FD_CALL(halo_poison_receives(&s->halo, s->compute));
  if (s->f) {
    /* test only (--test-inject-fault=rhs[:F]): the sweeps take f 1 + F times too large; the
     * checks read the stated one (s->prob.f), so jacobi converges to a solution 1 + F times
     * too large: its mode decay fails, and its O(h^2) error by F A more than without */
    fd_field f = s->prob.f;
    if (s->opt->inject_fault == FD_FAULT_RHS) f.scale *= 1.0 + s->opt->inject_size;
    FD_BE(be_fill(&s->grid, &f, s->f, s->compute));
  }
  if (s->opt->inject_fault == FD_FAULT_MIRROR && s->um) FD_CALL(plant_mirror_fault(s));
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
