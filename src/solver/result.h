/* result.h - what one run measured and decided, as the report and the JSON record read it
 * (src/io/report.c): the configuration as run, the phase times and figures reduced over the
 * ranks (min, avg, max), the start-up choices, the verification. Filled by fd_run
 * (src/solver/); types only, so that the writers never read the solver. */
#ifndef FDMINI_RESULT_H
#define FDMINI_RESULT_H

#include "backend.h"
#include "graph_cache.h" /* FD_GRAPH_WHY */
#include "options.h"
#include "problem.h"
#include "tune.h"
#include "verify.h"

/* Per-rank phase times, milliseconds per step. */
enum { PH_PACK = 0, PH_EXCHANGE, PH_UNPACK, PH_INTERIOR, PH_SHELL, PH_STEP, PH_COUNT };

/* The name of phase k (PH_*) as the report and the JSON record print it. */
static inline const char *fd_phase_name(int k)
{
  static const char *const names[PH_COUNT] = {"pack", "exchange", "unpack", "interior", "boundary", "step"};
  return names[k];
}

typedef struct {
  double min, avg, max;
} fd_stat;

typedef struct {
  /* configuration as run */
  fd_op op;
  int ranks;
  int procs[3];
  long long global[3];
  int local_min[3], local_max[3];
  /* the nodes and how the process grid lies over them (decomp.h; emulated nodes with
     --test-node-ranks), and each rank's faces with a neighbour by where the neighbour runs:
     on the rank's own GPU (same real node, same PCI bus id), on another device of its node,
     on another node (first: the faces that leave the node, whatever device they reach) */
  int nodes;               /* nodes among the ranks */
  int node_ranks_min, node_ranks_max; /* ranks of the smallest and of the largest node */
  int node_block[3];       /* each node's ranks form this block of the process grid; 0 0 0:
                              the ranks in order (node_grid says why) */
  char node_mode[24];      /* decomp_nodes_mode_name: blocks, one_node, ... */
  char node_grid[128];     /* the layout in words (decomp_nodes_describe) */
  fd_stat faces_same_gpu, faces_other_gpu, faces_other_node; /* per rank, over the ranks */
  int iters, warmup;
  fd_kernel kernel;        /* the configuration every rank ran */
  fd_tune tune;            /* the autotune's trial (tune.ran = 0 when none ran) */
  fd_fuse_tune fuse;       /* steps per pass, the fused configuration, its trial if any */
  int halo_width;          /* S: ghost layers, one exchange every S steps */
  int halo_fields;         /* fields each exchange carries (2: the wave's levels, S > 1) */
  fd_stat memcpy_gbs;      /* device-to-device copy of each rank's field, GB/s (read + write) */
  fd_stat pct_memcpy;      /* effective bandwidth / memcpy bandwidth of each rank, % */
  int staged, overlap;
  long long ipc_faces, mpi_faces; /* active faces over all ranks by transport (halo.h) */
  long long proxy_faces;   /* of the MPI faces, those the off-node proxy carries inside the
                              signalled passes (0 where the passes are not signalled) */
  long long proxy_able;    /* faces the proxy could carry, over all ranks (halo.h) */
  double path_trial_us[3]; /* the path trial (faces that can go by IPC): the run's loop, us per
                              step, through MPI [0] (--halo-path auto), with those faces by IPC
                              with flags [1] and signalled inside the launch [2], slowest rank,
                              best of path_trial_rounds; 0 where that one did not run */
  int path_trial_rounds;
  int path_trial_own;      /* 1: the trials before it ran the proxy's pass, so the candidates
                              without it tried their own kernel and graphs setting too; 2: and
                              the other steps per pass (--fuse auto) */
  int bytes_per_point;
  double dt;
  /* timings over ranks (ms per step) */
  fd_stat phase[PH_COUNT];
  long long windows;       /* windows of the timed loop (a window: the steps from one exchange to
                              the next; on one rank, a pass) */
  long long windows_sampled; /* of them, those whose passes were timed with events: the phases'
                              (fewest on a rank; step_sample_plan, src/solver/step.c) */
  long long steps_sampled; /* the steps of those windows (fewest on a rank) */
  double total_s;          /* wall time of the timed loop, slowest rank */
  fd_stat bw_rank;         /* effective GB/s per rank */
  double bw_total;         /* sum over ranks of effective GB/s */
  double points_per_s;     /* global points updated per second */
  size_t halo_bytes_max;   /* bytes one rank sends per step, largest rank (the timed loop's
                              exchanges times what each sends, over its steps) */
  double halo_msgs_step_max; /* messages one rank sends per step (active regions, MPI or IPC),
                                largest rank, the same way */
  size_t halo_bytes_exchange_max; /* bytes one exchange sends, largest rank */
  int halo_msgs_exchange_max;     /* messages of one exchange, largest rank */
  fd_stat redundant;       /* points each rank updates beyond its block (1..n) per step: the
                              boxes of the steps between deep-halo exchanges */
  double redundant_share;  /* their sum over the ranks / the global points */
  fd_stat halo_gbs;        /* halo bytes sent / exchange time, GB/s */
  fd_stat ipc_copy_ms;     /* IPC faces: device time of the copies alone, ms per step */
  /* --baseline: every rank's block alone first (no exchange), same steps */
  int baseline;
  fd_stat alone_ms;        /* step time alone, ms */
  fd_stat efficiency;      /* T_alone / T_step per rank */
  fd_stat hidden;          /* share of the exchange hidden: 1 - (T_step - T_alone) / T_comm,
                              T_comm = pack + exchange + unpack; clamped to [0, 1] */
  /* the floors of a step (docs/small-blocks.md, "The floors"), microseconds */
  int floors_device;       /* F_g and F_ls were measured (0: the host backend, where they are n/a) */
  fd_stat floor_graph_us;  /* F_g: a graph of one empty kernel launched back to back, per launch */
  fd_stat floor_launch_sync_us; /* F_ls: one launch of an empty kernel and a host wait */
  fd_stat floor_copy_us;   /* F_c: the device copy of the rank's own field (the memcpy) */
  int floors_neighbours;   /* ranks with a neighbour: L and X are theirs (0: none, one rank) */
  fd_stat latency_us;      /* L: one small message to a neighbour through the exchange's MPI */
  fd_stat exchange_alone_us; /* X: an exchange alone (pack, MPI or IPC, unpack), back to back */
  fd_stat exchange_over_floor; /* X / (F_ls + L + 2 F_g) */
  int floors_peer;         /* ranks with a neighbour on another device that they map (F_p) */
  fd_stat floor_peer_us;   /* F_p: one face alone to such a neighbour, device-ordered (the
                              signalled exchange's transport), the rank's largest face */
  fd_stat exchange_over_peer; /* X / F_p */
  int floors_proxy;        /* ranks with a face the off-node proxy can carry (F_m) */
  fd_stat floor_proxy_us;  /* F_m: one face alone through the proxy and MPI, device-ordered as
                              in the signalled pass, the rank's largest such face */
  fd_stat exchange_over_proxy; /* X / F_m */
  fd_stat step_over_f1;    /* the step per time step / F1, F1 = max(F_g, F_c) */
  /* graphs (--graphs) */
  int graphs_on;           /* the timed loop replayed captured graphs */
  int graphs_failed;       /* ranks whose capture failed (they ran eagerly) */
  char graphs_why[FD_GRAPH_WHY]; /* the lowest such rank's reason */
  int xchains_failed;      /* ranks whose chains with exchanges failed to capture (those passes
                              ran as single passes) */
  char xchains_why[FD_GRAPH_WHY]; /* the lowest such rank's reason */
  long long graph_captures; /* graphs captured in the timed loop, most on one rank */
  long long xchain_passes; /* timed passes run in chains that hold exchanges (every face by
                              IPC, or signalled with the off-node proxy), most on one rank */
  long long sig_passes;    /* timed passes whose exchange was signalled inside their one launch
                              (every face by IPC, on the rank's device or a peer), most on one rank */
  fd_verify verify;
  fd_problem prob;         /* the operator as set up (rank 0's view: dt, velocities, source) */
  /* snapshots */
  int snapshot_every;      /* 0: none */
  long long snapshots;     /* written in the timed loop and the warm-up */
  double snapshot_bytes;   /* bytes of one snapshot file */
  fd_stat snapshot_host_ms; /* solver-thread time per timed step in snapshot calls (opens,
                               agreements, renames, XDMF, enqueueing copies, waits) */
  fd_stat snapshot_stall_ms; /* of it, waiting for copies or the writer thread (a free slot) */
  fd_stat snapshot_copy_ms; /* device-to-host copy time per timed step (IO stream events) */
  fd_stat snapshot_writer_ms; /* writer thread busy time per timed step (writes, closes) */
  int snapshot_ref_steps;   /* timed steps of the reference run without snapshots */
  fd_stat snapshot_ref_ms;  /* step time of that reference run, ms */
  fd_stat snapshot_lost_ms; /* what the step loses to snapshots: max(0, T_step - T_ref), ms */
  fd_stat snapshot_work_ms; /* the snapshot work per step: solver-thread time other than waits,
                               plus the copies that ran beside it, plus the writer thread, ms */
  fd_stat snapshot_hidden;  /* 1 - lost / work, clamped to [0, 1]: the share of the snapshot
                               work the step did not pay for (docs/report.md) */
  /* checkpoints and restart (checkpoint.h) */
  long long total_steps;    /* warm-up + timed steps of the whole run (a restart ends there) */
  int checkpoints_on;       /* --checkpoint-dir given */
  int checkpoint_every;     /* 0: only on a stop signal */
  char checkpoint_dir[FD_PATH_MAX];
  long long checkpoints;    /* committed by this run */
  long long checkpoint_first, checkpoint_last; /* their steps */
  char checkpoint_last_path[FD_PATH_MAX + 64];
  double checkpoint_bytes;  /* of one checkpoint file */
  fd_stat ckpt_host_ms, ckpt_stall_ms, ckpt_copy_ms, ckpt_writer_ms, ckpt_sync_ms; /* per timed
                               step, as for the snapshots; sync: the writers' fsync */
  fd_stat ckpt_ref_ms, ckpt_lost_ms, ckpt_work_ms, ckpt_hidden;
  fd_stat ckpt_writer_max_ms; /* a rank's writer on its longest checkpoint of the timed loop (0:
                               none finished there) */
  long long ckpt_keep_up_every; /* the fewest steps (a multiple of T) that last as long as the
                               slowest writer's longest checkpoint at the step without them: an
                               interval the writers keep up with (0: not measured) */
  long long ckpt_polls;     /* stop polls completed in the timed loop (rank 0) */
  int restarted;            /* the run continued a checkpoint */
  char restart_from[FD_PATH_MAX];
  long long restart_step;   /* its step: the steps done before this run */
  int restart_skipped;      /* newer checkpoints skipped (incomplete or corrupt) */
  double restart_read_s, restart_bytes; /* reading it (slowest rank), the file's bytes */
  long long restart_writers; /* ranks that wrote it */
  int restart_hist_lost;    /* wave: its source record was not kept (no energy check) */
  char restart_commit[48], restart_created[32];
  int stop_signal;          /* FD_STOPPED: the signal, the step every rank stopped after, and */
  long long stop_step;      /* whether in a measurement run (nothing new saved) */
  int stop_measuring;
} fd_result;

#endif
