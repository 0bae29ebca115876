/* snapshot.h - the field every N steps, off the device without stalling the solver and onto
 * disk by a writer thread: one raw file per snapshot in global order plus an XDMF description
 * (snapshots.xmf) that ParaView and VisIt open without plug-ins. Internal to src/.
 *
 * Two threads share the work. The solver's (main) thread makes every MPI, stream and event
 * call; the writer thread (one per rank, pthreads) only writes, with POSIX pwritev() at offsets
 * computed from the rank's block of the global grid, and closes the file: it makes no MPI call
 * (MPI_THREAD_FUNNELED is all MPI must provide; checked by snapshot_check) and no GPU runtime
 * call (which would bind it to a device of its own).
 *
 * A snapshot passes through these stages. FD_SNAP_SLOTS slots rotate; each owns a pinned
 * host buffer, so at most that many snapshots are in flight (bounded: when the writer falls
 * behind, taking a new snapshot waits for the oldest, and that wait is the reported stall).
 *   HELD     the step's output buffer is reserved: the solver's buffer pool (src/solver/step.c) gives
 *            it to no kernel as an output. Its ghosts are still exchanged once (it is the next
 *            step's input), so the copy waits for the end of that step. The file
 *            DIR/snap_STEP.raw.PID.tmp is open on every rank (rank 0 created it new before an
 *            agreement, so nobody writes before that).
 *   COPYING  the IO stream waited for `taken` (recorded on the compute stream at the end of
 *            the next step) and copies the buffer, ghosts included, to pinned memory between
 *            the events `begin` and `done`, while the solver steps on.
 *   QUEUED   once the copy should be done - the previous copy's duration (events) with a
 *            margin has passed since it was enqueued; at the latest at the next snapshot step
 *            or the end - the main thread waits for `done` (so the device buffer is free) and
 *            hands the slot to the writer, which writes the interior rows, closes the file and
 *            counts the snapshot completed with its errno (0: written).
 *   IDLE     (collective, at snapshot steps and at the end) the ranks agree on how many
 *            snapshots all of them completed (MPI_Allreduce, MIN); for each such one, in
 *            order, they agree that every part was written, rank 0 renames the .tmp to
 *            DIR/snap_STEP.raw and rewrites DIR/snapshots.xmf (via a .tmp and rename). A failed
 *            write (any rank) removes the .tmp and ends the run with FD_ERR_IO on every rank:
 *            no file is presented as complete that is not.
 * Shared between the threads, under `lock`: the queue counters, each slot's errno, writer_ms;
 * the slot's host buffer and file descriptor pass to the writer with the queue and back with
 * `completed`. */
#ifndef FDMINI_SNAPSHOT_H
#define FDMINI_SNAPSHOT_H

#include <pthread.h>

#include <mpi.h>

#include "backend.h"
#include "decomp.h"
#include "options.h" /* FD_PATH_MAX */

enum { FD_SNAP_SLOTS = 3 };

enum { SNAP_IDLE = 0, SNAP_HELD, SNAP_COPYING, SNAP_QUEUED };

typedef struct {
  int stage;         /* main thread */
  long long index;   /* 1-based count of the snapshot */
  long long step;    /* the field after this many steps */
  const real_t *dev; /* the held device buffer (HELD, COPYING), else NULL */
  real_t *host;      /* pinned copy of the whole field, ghosts included. Dimensions:
                        (nx+2) x (ny+2) x (nz+2), x fastest */
  be_event begin, done; /* recorded on the IO stream before and behind the copy */
  double t_copy;     /* when the copy was enqueued (ms, monotonic) */
  int fd;            /* the open .tmp (-1: none); the writer's while QUEUED, it closes it */
  int werr;          /* under lock once completed: errno of the failed write, 0 if written */
  char path[FD_PATH_MAX + 32], tmp[FD_PATH_MAX + 64];
} fd_snap_slot;

typedef struct {
  int every;         /* 0: off */
  const char *dir;   /* the snapshot directory (the caller's string) */
  const char *name;  /* the operator's name (XDMF grid fdmini_NAME) */
  long tag;          /* rank 0's process id: the temporary names' (output_tmp_name) */
  int fail_index;    /* test only: the snapshot whose write fails, 0 none */
  MPI_Comm comm;     /* the Cartesian communicator of the run */
  int rank;          /* this rank in it */
  be_stream compute; /* the solver's stream, whose buffers the snapshots copy */
  double h[3];       /* grid spacing (XDMF geometry) */
  be_stream io;      /* the IO stream: device-to-host copies only */
  be_event taken;    /* recorded on the compute stream when a held buffer is final */
  fd_snap_slot slot[FD_SNAP_SLOTS];
  long long begun;      /* main: snapshots taken; slot of index k: (k - 1) % FD_SNAP_SLOTS */
  long long finalized;  /* main: agreed complete (renamed and listed, or failed) */
  long long written;    /* rank 0: the steps of the written snapshots (XDMF), `written` of them */
  long long adopted;    /* rank 0: of them, complete files of the run this one continues
                           (--restart: steps up to the checkpoint's), listed again */
  long long *steps;
  char *xdmf;           /* rank 0: the XDMF text of the first xdmf_listed of them, without the
                           closing tags (write_xdmf adds them for each write); NULL before the
                           first; xdmf_len bytes of xdmf_cap, freed by snapshot_destroy */
  size_t xdmf_len, xdmf_cap;
  long long xdmf_listed;
  double time_per_step; /* XDMF time of step s = s * time_per_step */
  double wait_ms;       /* main: host time in snapshot work (opens, waits, agreements) */
  double stall_ms;      /* main: of it, waiting for copies and for the writer (a free slot) */
  double copy_ms;       /* main: device-to-host copy time (IO stream events) */
  double copy_call_ms;  /* main: host time in the calls that enqueue the copies (all of the copy
                           where the backend copies synchronously, as the host backend does) */
  double copy_last_ms;  /* main: the last copy's duration (0: none yet) */
  double t_step, step_wall_ms; /* main: when the last step ended, and its wall time */
  /* the block in the global file: interior extents, global offsets, global extents */
  int n[3];
  fd_grid layout;     /* the field's layout (host copies have the device's) */
  long long start[3], N[3];
  /* the writer thread */
  pthread_t thread;
  int running;          /* main: the thread was started and not yet joined */
  pthread_mutex_t lock;
  pthread_cond_t job, finished;
  int sync_ready;       /* lock and conditions initialised */
  long long queued;     /* under lock: snapshots handed to the writer (in index order) */
  long long completed;  /* under lock: snapshots the writer finished (in index order) */
  int stop, cancel;     /* under lock: leave when the queue is empty; skip queued writes */
  double writer_ms;     /* under lock: writer busy time (write and close) */
} fd_snapshots;

/* What snapshot_create needs; the pointers must outlive the snapshots. */
typedef struct {
  int every;              /* --snapshot-every N: after every N-th step; 0: off */
  const char *dir;        /* --snapshot-dir (exists and is writable: checked by main.c) */
  const char *name;       /* the operator's name, e.g. "wave" (XDMF grid fdmini_wave) */
  int fail_index;         /* test only (--test-fail-snapshot-write K): the K-th snapshot's write
                             fails; 0: none */
  long long max_steps;    /* most steps one run takes (warm-up + timed): sizes the list */
  const fd_decomp *dec;   /* the Cartesian communicator, this rank's block, the global grid */
  const fd_grid *grid;    /* the layout of the block's fields (backend.h) */
  double h[3];            /* grid spacing */
  double time_per_step;   /* XDMF time of step s = s * time_per_step (dt, or 1) */
  be_stream compute;      /* the solver's stream */
} fd_snapshot_config;

/* Refuses (FD_ERR_USAGE) snapshots (every > 0) where MPI provides less than
 * MPI_THREAD_FUNNELED, which the writer thread needs; call before anything is allocated. Not
 * Collective. */
int snapshot_check(int every);
/* Sets *sn up from *c: with every > 0 the IO stream, events, FD_SNAP_SLOTS pinned buffers of
 * (nx+2) x (ny+2) x (nz+2) real_t and the writer thread; with every = 0 nothing. Failures are
 * agreed. Collective over c->dec->cart. snapshot_destroy frees it (also after a failure). */
int snapshot_create(fd_snapshots *sn, const fd_snapshot_config *c);
/* A run that continues a checkpoint at step `first` (--restart), before its first step: the
 * snapshots of the run up to `first` found complete in DIR (snap_STEP.raw of the whole grid's
 * size) join the list the XDMF is written from; the run rewrites the later ones. Not
 * Collective (rank 0 keeps the list; a no-op elsewhere and without snapshots). */
void snapshot_adopt(fd_snapshots *sn, long long first);
/* Stops the writer (abandoning what it had not written: call snapshot_drain first to keep
 * it) and frees what snapshot_create allocated. Not Collective. */
int snapshot_destroy(fd_snapshots *sn);
/* After step `step` (steps so far) whose output is `out` (a device field of the solver's pool):
 * moves snapshots along their stages and, when step is a multiple of every, takes one of out
 * (HELD: the pool must not write out until snapshot_holds says it may). Asynchronous on the
 * compute and IO streams; blocks the host only for copies or writes not yet done. Collective
 * at snapshot steps (every rank calls it after every step). On error every snapshot in flight
 * is abandoned (no file presented as complete). */
int snapshot_after_step(fd_snapshots *sn, long long step, const real_t *out);
/* 1 when a snapshot still reserves buf (HELD or COPYING): the pool must not write it. Not
 * Collective. */
int snapshot_holds(const fd_snapshots *sn, const real_t *buf);
/* Frees a COPYING buffer for writing: the compute stream waits (on the device) for its copy.
 * Not Collective; asynchronous. */
int snapshot_release(fd_snapshots *sn, const real_t *buf);
/* Completes every snapshot begun: the files are complete and listed when it returns.
 * Collective; synchronous. */
int snapshot_drain(fd_snapshots *sn);
/* Zeroes the timers. Not Collective. */
void snapshot_reset_timers(fd_snapshots *sn);
/* The snapshot work since the reset, ms. */
typedef struct {
  double host;      /* the solver thread's time in snapshot calls: opens, agreements among
                       ranks, renames and the XDMF, enqueueing the copies, waits */
  double stall;     /* of it, waiting for copies or for the writer thread (a free slot) */
  double copy;      /* device-to-host copy time (IO stream events) */
  double copy_call; /* of host, the calls that enqueue the copies */
  double writer;    /* the writer thread's busy time (writes, closes) */
} fd_snap_times;
/* Not Collective. */
void snapshot_timers(fd_snapshots *sn, fd_snap_times *t);

#endif
