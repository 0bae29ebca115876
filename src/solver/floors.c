/* floors.c - what a step and an exchange cost at least on this rank, measured at start-up:
 * F_g, F_ls, F_c, L (floors_measure) and X, the exchange alone (floors_exchange), timed with the
 * halo's own verbs (begin, end, unpack, the fused receive, captures, the signalled pass). */
#define _POSIX_C_SOURCE 200809L
#include "bind.h"
#include "fd_error.h"
#include "state.h"

enum { FD_TAG_PING = 128 };

/* L, the latency of one small message to a neighbour through the MPI the exchange uses
 * (device buffers with GPU-aware MPI, pinned host buffers when staged): half the median round
 * trip of a one-element ping-pong, over the pairs of neighbours along the first dimension that
 * has some, in microseconds. *us = 0 on a rank with no neighbour. Collective over h->comm;
 * synchronous. The tag is one the exchange never uses (halo.c). */
static int latency_us(const fd_halo *h, double *us)
{
  enum { WARM = 3, REPS = 21 };
  *us = 0.0;
  int ndims = 0, rank;
  FD_MPI(MPI_Cartdim_get(h->comm, &ndims));
  FD_MPI(MPI_Comm_rank(h->comm, &rank));
  int dims[3] = {1, 1, 1}, periods[3], coords[3] = {0, 0, 0};
  FD_MPI(MPI_Cart_get(h->comm, ndims, dims, periods, coords));
  int d = 0;
  while (d < ndims && dims[d] == 1) d++;
  if (d == ndims) return FD_OK; /* one rank: no neighbour */
  /* phase 0 pairs coordinates (0,1), (2,3), ...; phase 1 (1,2), (3,4), ...: the even one of
   * each pair pings, the odd one pongs */
  real_t *buf = h->staged ? h->send_h : h->send_d[0];
  /* the word sent: a value, not memory no pack has written yet */
  if (h->staged) {
    buf[0] = 0;
  } else {
    static const real_t zero = 0;
    FD_BE(be_memcpy_async(buf, &zero, sizeof zero, BE_COPY_H2D, h->stream));
    FD_BE(be_stream_sync(h->stream));
  }
  double best = 0.0;
  for (int phase = 0; phase < 2; phase++) {
    const int first = (coords[d] - phase) % 2 == 0; /* the lower of a pair */
    const int f = first ? 2 * d + 1 : 2 * d;
    const int partner = coords[d] - phase < 0 ? MPI_PROC_NULL : h->nbr[f];
    if (partner == MPI_PROC_NULL) continue;
    double t[REPS];
    for (int r = 0; r < WARM + REPS; r++) {
      const double t0 = fd_now();
      if (first) {
        FD_MPI(MPI_Send(buf, 1, FD_MPI_REAL, partner, FD_TAG_PING, h->comm));
        FD_MPI(MPI_Recv(buf, 1, FD_MPI_REAL, partner, FD_TAG_PING, h->comm, MPI_STATUS_IGNORE));
      } else {
        FD_MPI(MPI_Recv(buf, 1, FD_MPI_REAL, partner, FD_TAG_PING, h->comm, MPI_STATUS_IGNORE));
        FD_MPI(MPI_Send(buf, 1, FD_MPI_REAL, partner, FD_TAG_PING, h->comm));
      }
      if (r >= WARM) t[r - WARM] = (fd_now() - t0) * 1e6 / 2;
    }
    /* median of the round trips (a ponging rank's includes the ping's wait: take the pinger's
     * view where it has one, else its own) */
    for (int i = 1; i < REPS; i++)
      for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
        const double x = t[j];
        t[j] = t[j - 1];
        t[j - 1] = x;
      }
    const double med = t[REPS / 2];
    if (best == 0.0 || med < best) best = med;
  }
  *us = best;
  return FD_OK;
}


/* The floors of a step on this rank (docs/small-blocks.md, "The floors"): F_g, F_ls
 * (be_floors; 0, n/a, on the host backend) and F_c, the faster of be_floors' graph of one copy
 * and the memcpy reference (tune_memcpy_gbs), and with neighbours L
 * (latency_us), over the ranks into r. Overwrites the fields. Collective. */
int floors_measure(fd_state *s, fd_result *r)
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
  results_stat(comm, ranks, s->floor_graph_us, &r->floor_graph_us);
  results_stat(comm, ranks, s->floor_launch_sync_us, &r->floor_launch_sync_us);
  results_stat(comm, ranks, s->floor_copy_us, &r->floor_copy_us);
  FD_CALL(latency_us(&s->halo, &s->latency_us));
  int with;
  FD_CALL(results_stat_some(comm, s->latency_us, s->exchanging, &r->latency_us, &with));
  r->floors_neighbours = with;
  return FD_OK;
}

/* ---- X: the exchange alone ---- */

/* One exchange's receive as graph_cache.h work on the halo stream: the unpack or, where the
 * passes receive fused, the unpack and the next exchange's pack in one launch (the shell of
 * every active face, no stencil), as a pass's receive is. */
typedef struct {
  fd_halo *h;
  real_t *u, *u2;
} alone_ctx;

static int alone_unpack(void *ctx, be_stream st)
{
  (void)st; /* the halo stream */
  const alone_ctx *c = ctx;
  return halo_exchange_unpack(c->h, c->u, c->u2);
}

static int alone_unpack_pack(void *ctx, be_stream st)
{
  const alone_ctx *c = ctx;
  halo_fused_io io = {0};
  FD_CALL(halo_fused_receive(c->h, &io));
  /* the shell of every active face (io.pack), as the passes defer them */
  FD_BE(be_shell_exchange(&c->h->grid, io.pack, NULL, c->u, NULL, NULL, io.faces, io.recv, io.unpack, io.send,
                          io.pack, st));
  return halo_fused_packed(c->h);
}

/* The r-th exchange of the loop: the begin (packed ahead by the last receive where fused), the
 * end, then the receive, enqueued directly while a capture holds the halo stream
 * (halo_capture), else replayed from the run's graphs as a pass's segment is. */
static int alone_once(fd_state *s, real_t *u, real_t *u2, int fused, int r)
{
  fd_halo *h = &s->halo;
  /* the field is ready once the previous unpack has run: the halo stream orders it */
  if (fused && r > 0) FD_CALL(halo_exchange_begin_packed(h, NULL));
  else FD_CALL(halo_exchange_begin(h, u, u2, NULL, 0));
  FD_CALL(halo_exchange_end(h));
  alone_ctx c = {h, u, u2};
  const fd_graph_work work = fused ? alone_unpack_pack : alone_unpack;
  if (h->direct) return work(&c, h->stream);
  const fd_graph_key k = {SEG_ALONE, {(int)((h->exchanges + 1) % 2), fused, 0, 0, 0, 0}, {u, u2, NULL, NULL}};
  if (fd_graph_run(&s->graphs, &k, h->stream, work, &c) == 0) return FD_OK;
  if (s->graphs.work_rc) return s->graphs.work_rc;
  return fd_set_error(FD_ERR_RUNTIME, "rank %d: graphs: %s", s->dec.rank, be_error_message());
}

/* `reps` exchanges (IPC faces only) captured into *g from the current phase, the halo put back
 * as it was (halo_capture's contract): *g = NULL where the runtime cannot capture them
 * (graph_cache.h's rule: the capture ended BE_UNSUPPORTED, whether a call failed in it or
 * not). Nothing runs. */
static int alone_capture(fd_state *s, real_t *u, real_t *u2, int reps, int fused, be_graph *g)
{
  fd_halo *h = &s->halo;
  *g = NULL;
  const fd_halo saved = *h;
  FD_CALL(halo_capture(h, 1));
  const int begin = be_graph_begin(h->stream);
  if (begin != BE_OK) {
    *h = saved;
    FD_BE(begin);
  }
  int rc = FD_OK;
  for (int r = 0; r < reps && rc == FD_OK; r++) rc = alone_once(s, u, u2, fused, r);
  const int end = be_graph_end(h->stream, g);
  *h = saved;
  if (end == BE_UNSUPPORTED) return FD_OK; /* the runtime refused a call (or the graph) */
  if (rc != FD_OK) {
    (void)be_graph_destroy(*g);
    *g = NULL;
    return rc;
  }
  FD_BE(end);
  return FD_OK;
}

/* Launches g, captured by alone_capture for `reps` exchanges, and counts them. */
static int alone_replay(fd_halo *h, be_graph g, int reps)
{
  FD_BE(be_graph_launch(g, h->stream));
  for (int r = 0; r < reps; r++) FD_CALL(halo_exchange_replayed(h));
  return FD_OK;
}

/* The timed part of exchange_alone, after its two untimed exchanges: where every face goes by
 * IPC and chains may hold exchanges, the `reps` exchanges are one graph as a chain of passes
 * holds them: g[0] captured and launched untimed, then launched again timed (or g[1], captured
 * anew where the warm-up left the flags in another phase); else exchange by exchange. */
static int alone_timed(fd_state *s, real_t *u, real_t *u2, int reps, int fused, be_graph g[2], double *us)
{
  fd_halo *h = &s->halo;
  be_graph timed = NULL;
  if (s->xchains.on && !s->xchains.failed && h->n_ipc && !h->n_mpi) {
    const int phase = halo_graph_phase(h);
    FD_CALL(alone_capture(s, u, u2, reps, fused, &g[0]));
    if (g[0]) FD_CALL(alone_replay(h, g[0], reps));
    timed = g[0];
    if (g[0] && halo_graph_phase(h) != phase) {
      FD_CALL(alone_capture(s, u, u2, reps, fused, &g[1]));
      timed = g[1];
    }
  }
  FD_BE(be_stream_sync(h->stream));
  FD_MPI(MPI_Barrier(s->dec.cart));
  const double t0 = fd_now();
  if (timed) FD_CALL(alone_replay(h, timed, reps));
  for (int r = 0; r < reps && !timed; r++) FD_CALL(alone_once(s, u, u2, fused, r + 2));
  FD_BE(be_stream_sync(h->stream));
  *us = (fd_now() - t0) * 1e6 / reps;
  return FD_OK;
}

/* X on the two-stream schedule: `reps` exchanges of u (and u2) back to back with nothing
 * computed in between (pack, MPI or IPC, unpack; the host waits only where an exchange of the
 * loop does), wall time per exchange in microseconds, after two untimed ones; with `fused` each
 * receive is the passes' one launch. Overwrites the ghosts of u and u2. Collective;
 * synchronous. */
static int exchange_alone(fd_state *s, real_t *u, real_t *u2, int reps, int fused, double *us)
{
  *us = 0.0;
  if (s->halo.n_msgs == 0) return FD_OK;
  for (int r = 0; r < 2; r++) FD_CALL(alone_once(s, u, u2, fused, r));
  be_graph g[2] = {NULL, NULL};
  const int rc = alone_timed(s, u, u2, reps, fused, g, us);
  for (int i = 0; i < 2; i++) (void)be_graph_destroy(g[i]);
  return rc;
}

/* One exchange of x alone on u (and u2, a second field) on st: at width 1 be_signals_pass
 * without an output (the unpack and the pack, one launch), deeper the passes' own
 * be_signals_exchange (one launch or two, as the passes take it); the off-node proxy served
 * around it as the passes serve it, unless `captured` (a graph holds the launch: the host
 * serves while it waits). FD_OK or an fd error. */
static int signals_once(fd_state *s, const be_signals *x, real_t *u, real_t *u2, be_stream st, int captured)
{
  fd_halo *h = &s->halo;
  if (!captured) FD_CALL(halo_signals_serve(h, x));
  if (s->width == 1) FD_BE(be_signals_pass(&s->grid, NULL, u, NULL, NULL, (fd_kernel){0}, x, NULL, st));
  else FD_CALL(halo_signals_exchange(h, x, u, u2, st));
  return captured ? FD_OK : halo_signals_progress(h);
}

/* `reps` exchanges of x alone on u (signals_once) back to back on the halo stream, as one
 * graph where chains may hold exchanges, after a reset, a prime (width 1) and two untimed ones
 * (and the graph's warm-up launch); wall time per exchange
 * in microseconds; a failure's line names `who` (the floor). A rank with `active` = 0 only
 * takes part in the reset and the barrier (*us = 0). Overwrites u's ghosts and leaves the words to be reset (the passes prime again:
 * s->sig_primed = 0). Collective; synchronous. */
static int signals_time(fd_state *s, const char *who, const be_signals *x, int active, real_t *u, int reps,
                        double *us)
{
  fd_halo *h = &s->halo;
  const fd_grid *g = &s->grid;
  *us = 0.0;
  FD_CALL(halo_signals_reset(h));
  be_graph graph = NULL;
  real_t *u2 = x->faces2 ? s->pool[2] : NULL;
  if (active) {
    if (s->width == 1) FD_BE(be_signals_prime(g, x, u, h->stream));
    for (int r = 0; r < 2; r++) FD_CALL(signals_once(s, x, u, u2, h->stream, 0));
    /* as the passes' chains run them: one graph (not where the host serves the proxy before
     * each launch) */
    if (s->xchains.on && !s->xchains.failed && !halo_signals_served_by_host(h)) {
      FD_BE(be_graph_begin(h->stream));
      int rc = FD_OK;
      for (int r = 0; r < reps && rc == FD_OK; r++) rc = signals_once(s, x, u, u2, h->stream, 1);
      const int end = be_graph_end(h->stream, &graph);
      if (rc != FD_OK || end != BE_OK) {
        (void)be_graph_destroy(graph);
        graph = NULL;
        if (end != BE_UNSUPPORTED && rc == FD_OK) FD_BE(end);
        if (rc != FD_OK) return fd_set_error(FD_ERR_RUNTIME, "rank %d: %s: %s", s->dec.rank, who, fd_error_message());
      }
      if (graph) FD_BE(be_graph_launch(graph, h->stream)); /* warm-up */
    }
  }
  FD_BE(be_stream_sync(h->stream));
  FD_MPI(MPI_Barrier(s->dec.cart));
  const double t0 = fd_now();
  int rc = FD_OK;
  if (graph) rc = be_graph_launch(graph, h->stream) == BE_OK ? FD_OK : FD_ERR_RUNTIME;
  for (int r = 0; r < reps && active && !graph && rc == FD_OK; r++) rc = signals_once(s, x, u, u2, h->stream, 0);
  if (rc == FD_OK) rc = be_stream_sync(h->stream) == BE_OK ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "%s", be_error_message());
  if (active) *us = (fd_now() - t0) * 1e6 / reps;
  (void)be_graph_destroy(graph);
  return rc == FD_OK ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: %s: %s", s->dec.rank, who, fd_error_message());
}

/* X on the signalled path: `reps` exchanges of u alone (signals_time with the run's faces).
 * Collective; synchronous. */
static int signals_alone(fd_state *s, real_t *u, int reps, double *us)
{
  if (!halo_signals_able(&s->halo))
    return fd_set_error(FD_ERR_USAGE, "rank %d: X: this rank's exchange cannot be signalled", s->dec.rank);
  be_signals x;
  halo_signals(&s->halo, &x);
  return signals_time(s, "X", &x, 1, u, reps, us);
}

/* F_p, the link's floor to a neighbour on another device: the device-ordered exchange of one
 * face alone, each way (halo_signals_face: the face crosses the link as in the signalled pass,
 * a system-scope flag orders it), 20 back to back (signals_time). The pairs of neighbours along
 * each dimension take turns (phases: dimension d, pairs of coordinates (0,1), (2,3), ..., then
 * (1,2), (3,4), ...), so that each rank exchanges with one neighbour at a time; *us is the time
 * with this rank's largest such face (0: no neighbour on another device that it maps).
 * Overwrites u's ghosts; the passes prime again afterwards. Collective; synchronous. */
static int peer_floor(fd_state *s, real_t *u, double *us)
{
  fd_halo *h = &s->halo;
  *us = 0.0;
  int ndims = 0;
  FD_MPI(MPI_Cartdim_get(h->comm, &ndims));
  int dims[3] = {1, 1, 1}, periods[3], coords[3] = {0, 0, 0};
  FD_MPI(MPI_Cart_get(h->comm, ndims, dims, periods, coords));
  /* no rank maps a face to another device: nothing to time (and no reset to pay) */
  int any = 0;
  be_signals x;
  for (int f = 0; f < FD_FACES; f++) any |= halo_signals_face(h, f, &x);
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, h->comm));
  if (!any) return FD_OK;
  size_t largest = 0;
  for (int d = 0; d < ndims; d++)
    for (int phase = 0; phase < 2 && dims[d] > 1; phase++) {
      const int first = (coords[d] - phase) % 2 == 0; /* the lower of a pair */
      const int f = first ? 2 * d + 1 : 2 * d;
      const int paired = coords[d] - phase >= 0 && h->nbr[f] != MPI_PROC_NULL;
      const int active = paired && halo_signals_face(h, f, &x); /* the same on both sides */
      double t = 0.0;
      FD_CALL(signals_time(s, "F_p", &x, active, u, 20, &t));
      if (active && h->faces.count[f] >= largest) {
        largest = h->faces.count[f];
        *us = t;
      }
    }
  s->sig_primed = 0;
  return FD_OK;
}

/* F_m, the floor of a face through the off-node proxy: the exchange of one face alone, each
 * way, device-ordered as in the signalled pass (halo_proxy_face: the launch packs it into the
 * proxy's slot and sets its word, the host sends it through MPI, the receiving host sets the
 * word the neighbour's launch waits for), 20 back to back (signals_time, the proxy on for it),
 * the pairs of neighbours along each dimension in turns as for F_p; *us with this rank's
 * largest such face (0: none). Overwrites u's ghosts; the passes prime again afterwards.
 * Collective; synchronous. */
static int proxy_floor(fd_state *s, real_t *u, double *us)
{
  fd_halo *h = &s->halo;
  *us = 0.0;
  if (h->proxy_able_all == 0) return FD_OK; /* the same on every rank */
  int ndims = 0;
  FD_MPI(MPI_Cartdim_get(h->comm, &ndims));
  int dims[3] = {1, 1, 1}, periods[3], coords[3] = {0, 0, 0};
  FD_MPI(MPI_Cart_get(h->comm, ndims, dims, periods, coords));
  const int was = h->use_proxy;
  FD_CALL(halo_use_proxy(h, 1)); /* the resets start it */
  size_t largest = 0;
  be_signals x;
  for (int d = 0; d < ndims; d++)
    for (int phase = 0; phase < 2 && dims[d] > 1; phase++) {
      const int first = (coords[d] - phase) % 2 == 0; /* the lower of a pair */
      const int f = first ? 2 * d + 1 : 2 * d;
      const int paired = coords[d] - phase >= 0 && h->nbr[f] != MPI_PROC_NULL;
      const int active = paired && halo_proxy_face(h, f, &x); /* the same on both sides */
      double t = 0.0;
      FD_CALL(signals_time(s, "F_m", &x, active, u, 20, &t));
      if (active && h->faces.count[f] >= largest) {
        largest = h->faces.count[f];
        *us = t;
      }
    }
  FD_CALL(halo_use_proxy(h, was));
  FD_CALL(halo_signals_reset(h)); /* drains the proxy; it serves again where the passes use it */
  s->sig_primed = 0;
  return FD_OK;
}

/* *us = X on this rank: 20 exchanges alone with the run's settings (graphs, the fused receive,
 * the halo's path). Overwrites the fields' ghosts. Collective. */
static int time_exchange_alone(fd_state *s, double *us)
{
  if (step_signalled(s)) { /* the run's exchange: signals_once */
    FD_BE(be_stream_sync(s->compute));
    s->sig_primed = 0; /* the measurement primes and moves the words itself */
    return signals_alone(s, s->pool[0], 20, us);
  }
  return exchange_alone(s, s->pool[0], s->halo.fields > 1 ? s->pool[2] : NULL, 20, step_receives_fused(s), us);
}

/* F_p (peer_floor), F_m (proxy_floor), X (time_exchange_alone), X / (F_ls + L + 2 F_g), X / F_p
 * and X / F_m, over the ranks with neighbours (with a neighbour on another device, for F_p;
 * through the proxy, for F_m) into r. Collective. */
int floors_exchange(fd_state *s, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  FD_BE(be_stream_sync(s->compute));
  FD_CALL(peer_floor(s, s->pool[0], &s->floor_peer_us));
  FD_CALL(proxy_floor(s, s->pool[0], &s->floor_proxy_us));
  FD_CALL(time_exchange_alone(s, &s->exchange_alone_us));
  int with;
  FD_CALL(results_stat_some(comm, s->exchange_alone_us, s->exchanging, &r->exchange_alone_us, &with));
  FD_CALL(results_stat_some(comm, s->floor_peer_us, s->floor_peer_us > 0, &r->floor_peer_us, &r->floors_peer));
  FD_CALL(results_stat_some(comm, s->floor_peer_us > 0 ? s->exchange_alone_us / s->floor_peer_us : 0.0,
                           s->floor_peer_us > 0 && s->exchanging, &r->exchange_over_peer, &with));
  FD_CALL(results_stat_some(comm, s->floor_proxy_us, s->floor_proxy_us > 0, &r->floor_proxy_us, &r->floors_proxy));
  FD_CALL(results_stat_some(comm, s->floor_proxy_us > 0 ? s->exchange_alone_us / s->floor_proxy_us : 0.0,
                           s->floor_proxy_us > 0 && s->exchanging, &r->exchange_over_proxy, &with));
  const double floor = s->floor_launch_sync_us + s->latency_us + 2 * s->floor_graph_us;
  FD_CALL(results_stat_some(comm, floor > 0 ? s->exchange_alone_us / floor : 0.0, s->exchanging && floor > 0,
                           &r->exchange_over_floor, &with));
  return FD_OK;
}
