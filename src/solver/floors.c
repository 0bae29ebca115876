/* floors.c - what a step and an exchange cost at least on this rank, measured at start-up:
 * F_g, F_ls, F_c, L (floors_measure) and X, the exchange alone (floors_exchange). */
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

/* *us = X on this rank: 20 exchanges alone with the run's settings (graphs, the fused receive,
 * the halo's path). Overwrites the fields' ghosts. Collective. */
static int time_exchange_alone(fd_state *s, double *us)
{
  if (step_signalled(s)) { /* the run's exchange: one launch of the unpack and the pack */
    FD_BE(be_stream_sync(s->compute));
    s->sig_primed = 0; /* the measurement primes and moves the words itself */
    return halo_signals_alone_us(&s->halo, &s->grid, s->pool[0], 20, us);
  }
  return halo_exchange_alone_us(&s->halo, s->pool[0], s->halo.fields > 1 ? s->pool[2] : NULL, 20,
                                step_receives_fused(s), us);
}

/* X (time_exchange_alone) and X / (F_ls + L + 2 F_g), over the ranks with neighbours into r.
 * Collective. */
int floors_exchange(fd_state *s, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  FD_CALL(time_exchange_alone(s, &s->exchange_alone_us));
  int with;
  FD_CALL(results_stat_some(comm, s->exchange_alone_us, s->exchanging, &r->exchange_alone_us, &with));
  const double floor = s->floor_launch_sync_us + s->latency_us + 2 * s->floor_graph_us;
  FD_CALL(results_stat_some(comm, floor > 0 ? s->exchange_alone_us / floor : 0.0, s->exchanging && floor > 0,
                           &r->exchange_over_floor, &with));
  return FD_OK;
}
