/* results.c - the numbers of the report: the configuration as run, the phase times, bandwidth,
 * exchange, graphs, floors, snapshot and checkpoint costs, reduced over the ranks (min, avg,
 * max) into fd_result (result.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "state.h"

/* min, avg and max of x over the ranks of comm (size ranks). Collective. */
void results_stat(MPI_Comm comm, int ranks, double x, fd_stat *st)
{
  MPI_Allreduce(&x, &st->min, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&x, &st->max, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&x, &st->avg, 1, MPI_DOUBLE, MPI_SUM, comm);
  st->avg /= ranks;
}

/* The configuration as run. Not Collective. */
void results_describe(const fd_state *s, fd_result *r)
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
  r->proxy_faces = step_signalled(s) ? s->halo.proxy_faces_all : 0;
  r->proxy_able = s->halo.proxy_able_all;
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

/* A rank's place as results_nodes gathers it: its node as the run sees it (emulated or not),
 * its real node and its device's PCI bus id ("" without a GPU). Plain bytes. */
typedef struct {
  int node, host;
  char pci[32]; /* be_info.pci_bus_id's size */
} node_key;

int results_nodes(const fd_state *s, fd_result *r)
{
  const fd_decomp *d = &s->dec;
  const fd_decomp_nodes *nd = &d->nodes;
  r->nodes = nd->count;
  r->node_ranks_min = nd->size_min;
  r->node_ranks_max = nd->size_max;
  memcpy(r->node_block, nd->block, sizeof r->node_block);
  fd_copy_str(r->node_mode, sizeof r->node_mode, decomp_nodes_mode_name(nd->mode));
  decomp_nodes_describe(nd, d->P, r->node_grid, sizeof r->node_grid);

  node_key mine, *keys = calloc((size_t)d->size, sizeof *keys);
  memset(&mine, 0, sizeof mine);
  mine.node = nd->id;
  mine.host = s->node;
  if (s->dev->is_accelerator) fd_copy_str(mine.pci, sizeof mine.pci, s->dev->pci_bus_id);
  FD_CALL(fd_agree(d->cart, keys ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: no memory for %d node records", d->rank, d->size)));
  const int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, keys, (int)sizeof mine, MPI_BYTE, d->cart);
  double count[3] = {0, 0, 0}; /* same GPU, other GPU of the node, other node */
  for (int f = 0; f < FD_FACES && rc == MPI_SUCCESS; f++) {
    const int nb = d->nbr[f];
    if (nb == MPI_PROC_NULL) continue;
    const node_key *k = &keys[nb];
    if (k->node != mine.node) count[2]++;
    else if (mine.pci[0] && k->host == mine.host && strncmp(k->pci, mine.pci, sizeof k->pci) == 0) count[0]++;
    else count[1]++;
  }
  free(keys);
  if (rc != MPI_SUCCESS) return fd_mpi_failed(__FILE__, __LINE__, "MPI_Allgather(node records)", rc);
  results_stat(d->cart, d->size, count[0], &r->faces_same_gpu);
  results_stat(d->cart, d->size, count[1], &r->faces_other_gpu);
  results_stat(d->cart, d->size, count[2], &r->faces_other_node);
  return FD_OK;
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
int results_timings(const fd_state *s, double step_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const long long *N = s->dec.N;
  double ph[PH_COUNT];
  phase_times(s, step_ms, ph);
  for (int k = 0; k < PH_COUNT; k++) results_stat(comm, ranks, ph[k], &r->phase[k]);
  long long sampled[3] = {s->loop_windows, s->sampled_windows, s->sampled_steps};
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, sampled, 3, MPI_LONG_LONG, MPI_MIN, comm));
  r->windows = sampled[0];
  r->windows_sampled = sampled[1];
  r->steps_sampled = sampled[2];
  double loop_s = step_ms * 1e-3 * s->iters;
  FD_MPI(MPI_Allreduce(&loop_s, &r->total_s, 1, MPI_DOUBLE, MPI_MAX, comm));
  double local_points = (double)s->grid.n[0] * s->grid.n[1] * s->grid.n[2];
  double bw = local_points * s->prob.bytes_per_point / (step_ms * 1e-3) / 1e9;
  results_stat(comm, ranks, bw, &r->bw_rank);
  results_stat(comm, ranks, 100.0 * bw / s->memcpy_gbs, &r->pct_memcpy);
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
  results_stat(comm, ranks, hgbs, &r->halo_gbs);
  results_stat(comm, ranks, s->halo.timed > 0 ? s->halo.copy_ms / s->halo.timed * per_step : 0.0, &r->ipc_copy_ms);
  /* redundant points: updated beyond the block's 1..n, per step, per rank and over all */
  const double red = s->redundant / s->iters;
  results_stat(comm, ranks, red, &r->redundant);
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
int results_graphs_floors(fd_state *s, double step_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const double f1 = s->floor_graph_us > s->floor_copy_us ? s->floor_graph_us : s->floor_copy_us;
  results_stat(comm, s->dec.size, f1 > 0 ? step_ms * 1e3 / f1 : 0.0, &r->step_over_f1);
  r->graphs_on = s->graphs.on;
  FD_CALL(reduce_capture_failure(s, &s->graphs, &r->graphs_failed, r->graphs_why));
  FD_CALL(reduce_capture_failure(s, &s->xchains, &r->xchains_failed, r->xchains_why));
  FD_MPI(MPI_Allreduce(&s->loop_captures, &r->graph_captures, 1, MPI_LONG_LONG, MPI_MAX, comm));
  FD_MPI(MPI_Allreduce(&s->loop_xchain_passes, &r->xchain_passes, 1, MPI_LONG_LONG, MPI_MAX, comm));
  FD_MPI(MPI_Allreduce(&s->loop_sig_passes, &r->sig_passes, 1, MPI_LONG_LONG, MPI_MAX, comm));
  return FD_OK;
}

/* What a background writer (snapshots, checkpoints) cost the timed loop, per step, over the
 * ranks into cost[0..3]: the reference step ref_ms, the step's loss against it (step_ms - ref_ms:
 * everything the writer cost, contention for cores and memory included), the work (the solver
 * thread's own time `own`, its waits left out, plus the copies `beside` it and the writer
 * thread's busy time, summed over the loop) and the share of that work hidden, 1 - lost / work
 * clamped to [0, 1]. Collective. */
static void writer_cost(const fd_state *s, double own, double beside, double writer, double step_ms, double ref_ms,
                        fd_stat *cost[4])
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const double work = (own + beside + writer) / s->iters;
  const double lost = step_ms > ref_ms ? step_ms - ref_ms : 0.0;
  double hidden = work > 0 ? 1.0 - lost / work : 1.0;
  hidden = hidden < 0 ? 0 : (hidden > 1 ? 1 : hidden);
  results_stat(comm, ranks, ref_ms, cost[0]);
  results_stat(comm, ranks, lost, cost[1]);
  results_stat(comm, ranks, work, cost[2]);
  results_stat(comm, ranks, hidden, cost[3]);
}

/* Snapshots written and their costs per timed step over the ranks: the step's loss against the
 * reference run without snapshots (step_ms - ref_ms: everything the snapshots cost the step,
 * contention for cores and memory included), the snapshot work, and the share of that work
 * hidden, 1 - lost / work. The work is the solver thread's snapshot time other than its waits
 * (which already counts copies a backend makes synchronously), the copies that ran beside it
 * and the writer thread's busy time. Collective. */
int results_snapshots(fd_state *s, double step_ms, double ref_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const double it = s->iters;
  r->snapshots = s->snap->written - s->snap->adopted; /* rank 0 counts them (this run's) */
  FD_MPI(MPI_Bcast(&r->snapshots, 1, MPI_LONG_LONG, 0, comm));
  fd_snap_times t;
  snapshot_timers(s->snap, &t);
  results_stat(comm, ranks, t.host / it, &r->snapshot_host_ms);
  results_stat(comm, ranks, t.stall / it, &r->snapshot_stall_ms);
  results_stat(comm, ranks, t.copy / it, &r->snapshot_copy_ms);
  results_stat(comm, ranks, t.writer / it, &r->snapshot_writer_ms);
  fd_stat *cost[4] = {&r->snapshot_ref_ms, &r->snapshot_lost_ms, &r->snapshot_work_ms, &r->snapshot_hidden};
  writer_cost(s, t.host - t.stall, t.copy > t.copy_call ? t.copy - t.copy_call : 0.0, t.writer, step_ms, ref_ms,
              cost);
  return FD_OK;
}

/* Checkpoints written and their costs per timed step over the ranks, as for the snapshots: the
 * step's loss against the reference run without them (with snapshots too: their loss together),
 * the checkpoint work (the solver thread's time other than its waits, the copies beside it, the
 * writer thread) and the share of it hidden. Collective. */
int results_checkpoints(fd_state *s, double step_ms, double ref_ms, fd_result *r)
{
  const MPI_Comm comm = s->dec.cart;
  const int ranks = s->dec.size;
  const double it = s->iters;
  fd_ckpt_times t;
  checkpoint_timers(s->ckpt, &t);
  results_stat(comm, ranks, t.host / it, &r->ckpt_host_ms);
  results_stat(comm, ranks, t.stall / it, &r->ckpt_stall_ms);
  results_stat(comm, ranks, t.copy / it, &r->ckpt_copy_ms);
  results_stat(comm, ranks, t.writer / it, &r->ckpt_writer_ms);
  results_stat(comm, ranks, t.sync / it, &r->ckpt_sync_ms);
  fd_stat *cost[4] = {&r->ckpt_ref_ms, &r->ckpt_lost_ms, &r->ckpt_work_ms, &r->ckpt_hidden};
  writer_cost(s, t.host - t.stall, t.copy > t.copy_call ? t.copy - t.copy_call : 0.0, t.writer, step_ms, ref_ms,
              cost);
  results_stat(comm, ranks, t.writer_max, &r->ckpt_writer_max_ms);
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
void results_baseline(const fd_state *s, double step_ms, double alone_ms, fd_result *r)
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
  results_stat(comm, ranks, alone_ms, &r->alone_ms);
  results_stat(comm, ranks, alone_ms / step_ms, &r->efficiency);
  results_stat(comm, ranks, hidden, &r->hidden);
}

/* min, avg and max of x over the ranks of comm where `has` is 1 (all 0 where none has one);
 * *count = how many have one. Collective. */
int results_stat_some(MPI_Comm comm, double x, int has, fd_stat *st, int *count)
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
