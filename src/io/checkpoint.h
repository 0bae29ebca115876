/* checkpoint.h - checkpoints of a run and its restart (checkpoint_writer.c, checkpoint_restart.c;
 * the file format: checkpoint_format.c). Internal to src/.
 *
 * A checkpoint holds everything a run needs to continue and to verify at the end: the time
 * levels of the scheme (heat and jacobi: u; the wave: U1 and U0; laplacian: none, its input is
 * analytic), the step count, the wave's source record (the energy check's history), and in a
 * header the parameters that change the answer (operator, global grid, precision, the wave's
 * velocities, interface, source and Ricker peak), the commit and a checksum per block. The
 * answer does not depend on the decomposition, --halo-width, --fuse, the kernel or the backend
 * (every point is computed by the same expression in the same order: docs/verification.md), so a
 * checkpoint continues on any rank count, process grid, S, T and backend.
 *
 * File DIR/ckpt_STEP.fdmini (STEP zero-padded to 10 digits), native byte order:
 *   [0, 4096)            the header (fd_ckpt_header, zero-padded)
 *   [4096, data_offset)  the checksum table: fields x writers 64-bit sums, then one for the
 *                        source record (written by its owner)
 *   [data_offset, ...)   each field's interior in the global order of --dump (x fastest,
 *                        N[0] x N[1] x N[2] real_t), field 0 = u (the wave's U1), field 1 = U0
 *   [hist_offset, ...)   the wave's source record U^0(src) .. U^m(src), m = min(step, on)
 * A block's checksum is the sum mod 2^64 of mix(bits of the value + global index x golden ratio
 * + field salt) over the block's points, mix a 64-bit bijection (splitmix64's finalizer): a
 * changed value always changes the sum, moved values almost always, and sums over any set of
 * points add up, so a run on another decomposition checks every writer's block from the points
 * it reads (their sums reduced over the ranks) without moving data.
 *
 * Writing (asynchronous, like the snapshots; snapshot.h). At a checkpoint step the compute
 * stream copies the levels to device staging buffers (one field copy on the device: the pool
 * goes on at once), the IO stream copies those to pinned host memory, and a writer thread per
 * rank (POSIX I/O only: no MPI, no GPU runtime call; MPI_THREAD_FUNNELED) writes the rank's rows
 * at their offsets into DIR/ckpt_STEP.fdmini.PID.tmp (PID: rank 0's), two more threads a third
 * of the planes each, while another thread computes its block's checksums; then it writes those
 * into the table, fsyncs and closes. The copies are
 * handed to the writer once their event says they are done (asked after every pass; waited for
 * only at the next checkpoint, a stop or the end). The ranks learn that every writer finished
 * from a poll (below); then they agree, rank 0 checks the size, renames the file to its final
 * name and syncs the directory, and its writer thread removes every other checkpoint there but
 * the one before it that this run wrote or continued (the last two are kept; one the restart
 * skipped as corrupt never counts as the one before) before it takes the next checkpoint. A
 * failed write (any rank) removes the temporary file, ends the run with FD_ERR_IO on every rank
 * and leaves the previous checkpoint as it was. At most one checkpoint is in flight: the next
 * one first waits for it (a stall when writing takes longer than the interval).
 *
 * Stop signals. With a checkpoint directory, SIGTERM and SIGUSR1 set a flag (async-signal-safe).
 * At every multiple of FD_CKPT_POLL_PASSES passes (counted over all loops of the run, the same
 * on every rank; a chain of passes replayed as one graph never spans one: chain_passes) the
 * ranks complete the previous poll and start the next: an MPI_Iallreduce, on a communicator of
 * their own, of the flag and of how many checkpoints their writer finished (MPI_Test in
 * between drives it; the wait normally finds it done): no blocking collective per pass. A
 * raised flag stops every rank after that same pass; the run writes a checkpoint of that step
 * synchronously and returns FD_STOPPED (exit 5). A flag seen in a measurement loop (--baseline,
 * the snapshot reference) stops the run without a new checkpoint: the state to continue from is
 * still the one the run started from.
 *
 * Restart (checkpoint_prepare, checkpoint_load): --restart FILE, a directory's newest complete
 * checkpoint, or auto (--checkpoint-dir's newest, a fresh start when it holds none). Bad input is
 * FD_ERR_USAGE with one line and nothing written: another grid, operator, precision or wave, a
 * truncated or corrupted file (header checksum, size, block checksums), a directory without a
 * complete checkpoint, a checkpoint at or past the run's last step, and a --checkpoint-dir that
 * holds checkpoints this run does not continue (they would be overwritten and removed). With
 * auto or a directory a newer checkpoint that is incomplete or corrupt is skipped, with a notice,
 * for the previous one. */
#ifndef FDMINI_CHECKPOINT_H
#define FDMINI_CHECKPOINT_H

#include <pthread.h>
#include <stdint.h>

#include <mpi.h>

#include "backend.h"
#include "options.h" /* FD_PATH_MAX, fd_options */

enum {
  FD_CKPT_HEADER_BYTES = 4096,
  FD_CKPT_VERSION = 1,
  FD_CKPT_FIELDS_MAX = 2,
  FD_CKPT_POLL_PASSES = 8, /* passes between the start and the completion of a stop poll */
  FD_CKPT_CANDIDATES = 32, /* checkpoints of a directory considered for a restart, newest first */
};

/* The header of a checkpoint file, FD_CKPT_HEADER_BYTES with the rest zero. Every member is 8
 * bytes or an array of them: no padding on any ABI fdmini builds for. */
typedef struct {
  char magic[8];          /* "FDMINIck" */
  uint64_t version;       /* FD_CKPT_VERSION */
  uint64_t byte_order;    /* 0x0102030405060708 as the writer stores it */
  uint64_t real_bytes;    /* sizeof(real_t): 8 double, 4 float */
  uint64_t op;            /* fd_op */
  int64_t N[3];           /* global interior grid */
  double vel[2];          /* wave: velocity of layer 1 and 2 */
  int64_t iface;          /* wave: last global z plane of layer 1 */
  double ricker_hz;       /* wave: Ricker peak frequency */
  int64_t src[3];         /* wave: global index of the source */
  uint64_t fault;         /* test only: --test-inject-fault velocity or source (changes the steps) */
  int64_t step;           /* steps done (warm-up included) */
  int64_t run_steps;      /* warm-up + timed steps of the run that wrote it */
  uint64_t fields;        /* levels stored: 0 laplacian, 1 heat and jacobi (u), 2 wave (U1, U0) */
  int64_t hist_count;     /* wave: values of the source record stored, -1: none was recorded */
  uint64_t writers;       /* ranks that wrote it: the checksum blocks */
  int64_t procs[3];       /* their process grid (blocks: decomp_split) */
  uint64_t table_offset, data_offset, hist_offset, file_bytes;
  int64_t halo_width, fuse; /* of the run that wrote it (information only) */
  char backend[16];       /* "host", "hip", "cuda" */
  char version_str[16];   /* FDMINI_VERSION */
  char commit[48];        /* fdmini_git_commit */
  char created[32];       /* UTC, 2026-11-30T12:00:00Z */
  uint64_t hash;          /* of the header with this member 0 */
} fd_ckpt_header;

/* The run as far as its answer goes, and what it keeps (the checkpoints of a run carry it). */
typedef struct {
  int op;                 /* fd_op */
  long long N[3];
  double vel[2];
  long long iface;
  double ricker_hz;
  long long src[3];
  int fault;              /* FD_FAULT_VELOCITY or FD_FAULT_SOURCE, else 0 */
  long long total;        /* warm-up + timed steps of the run */
  int fields;             /* levels: 0, 1 or 2 */
  long long hist;         /* wave: entries of the source record the run keeps, -1: none */
  int halo_width, fuse;   /* information for the header */
} fd_ckpt_run;

/* What checkpoint_after_pass and checkpoint_load read from the solver's state. */
typedef struct {
  long long step;         /* steps done */
  int measure;            /* 1 in a measurement loop (--baseline, the snapshot reference): polls
                             only, no checkpoint */
  const real_t *level[FD_CKPT_FIELDS_MAX]; /* device fields (layout of the config): u, um */
  real_t *hist;           /* wave, the source's owner: the device record (else NULL) */
  long long hist_n;       /* its entries valid at `step` (min(step, src_steps) + 1), 0 if none */
  /* called before a checkpoint of this step is taken (NULL: none), with sound_ctx: FD_OK where
   * the levels are the run's true state, else an error agreed over the ranks, which ends the
   * run with nothing of this step written (the checkpoints before it kept). Collective. */
  int (*sound)(void *ctx);
  void *sound_ctx;
  int baseline;           /* 1 in --baseline's loop (a measurement loop where --test-signal acts) */
} fd_ckpt_view;

/* What checkpoint_create needs; the pointers must outlive the checkpoints. */
typedef struct {
  const fd_options *opt;
  MPI_Comm comm;          /* the run's Cartesian communicator (duplicated) */
  int rank, size, P[3];
  int n[3];               /* this rank's block: extents, global offsets (decomp.h) */
  long long start[3];
  const fd_grid *grid;    /* the layout of the block's fields */
  int accelerator;        /* fields in device memory: staged by a device copy first */
  const char *backend;    /* be_info.backend, for the header */
  int hist_owner;         /* this rank records the wave's source */
  be_stream compute;      /* the solver's stream */
} fd_ckpt_config;

/* Counters and times (ms) since checkpoint_reset_timers. */
typedef struct {
  double host;            /* the solver thread in checkpoint calls: enqueueing copies, polls,
                             agreements, renames, waits */
  double stall;           /* of it, waiting for a copy, a writer or the previous checkpoint */
  double copy;            /* device-to-host copies (IO stream events) */
  double copy_call;       /* of host, the calls that enqueue the copies (all of a synchronous copy) */
  double writer;          /* the writer thread busy (writes, checksums, fsync, close, the
                             removal of older checkpoints) */
  double sync;            /* of writer, fsync */
  double writer_max;      /* the writer's longest checkpoint: its write, checksums, fsync and
                             close, and the removal of older checkpoints that came before it */
  long long polls;        /* stop polls completed */
} fd_ckpt_times;

typedef struct {
  /* the restart, the same on every rank (checkpoint_prepare) */
  int restart;            /* 1: the run continues a checkpoint */
  char from[FD_PATH_MAX]; /* its file */
  fd_ckpt_header h;       /* its header */
  int skipped;            /* newer checkpoints skipped (incomplete or corrupt) */
  double read_s, read_bytes; /* checkpoint_load: slowest rank's time, the file's data bytes */
  int hist_lost;          /* the record of the source could not be restored (the energy check
                             then does not apply) */
  MPI_Comm cart;          /* the run's communicator (checkpoint_prepare's) */
  /* rank 0's candidates of a directory, newest first, for a fallback */
  int ncand, cand_next;
  int fallback;           /* every rank: rank 0 has an older candidate left */
  long long cand[FD_CKPT_CANDIDATES];
  char cand_dir[FD_PATH_MAX];
  /* writing */
  int on;                 /* --checkpoint-dir given: checkpoints on a stop, every `every` steps */
  int every;
  char dir[FD_PATH_MAX];  /* resolved */
  int locked, lock_fd;    /* rank 0: dir's lock is held, by descriptor lock_fd (ckpt_lock_dir) */
  long tag;               /* rank 0's pid: temporary names */
  fd_ckpt_run run;
  MPI_Comm comm;          /* duplicate of the run's: polls and agreements of the checkpoints */
  int rank, size, P[3], n[3];
  int block;              /* this rank's block: its slot in the checksum table, x fastest */
  long long start[3];
  fd_grid layout;
  int accelerator, hist_owner, fields;
  char backend[16];
  be_stream compute, io;
  be_event staged, begin, copied;
  real_t *stage[FD_CKPT_FIELDS_MAX]; /* device staging copies (accelerators) */
  real_t *host[FD_CKPT_FIELDS_MAX];  /* pinned copies of the whole fields, ghosts included */
  real_t *hist_host;      /* pinned copy of the source record */
  long long hist_cap;
  real_t *rec;            /* --restart, the source's owner: the record as read (rec_cap values,
                             the chosen checkpoint's; checkpoint_create allocates it) */
  long long rec_cap;
  /* the checkpoint in flight (begun > finalized): at most one */
  long long begun, finalized, written;
  int stage_state;        /* 0 none, 1 copies enqueued, 2 handed to the writer */
  long long step;         /* its step */
  long long hist_n;
  fd_ckpt_header head;    /* rank 0: its header */
  char tmp[FD_PATH_MAX + 96], path[FD_PATH_MAX + 64];
  long long first_step, last_step; /* written by this run (0: none yet) */
  char last_path[FD_PATH_MAX + 64];
  double bytes;           /* of one checkpoint file */
  /* the writer thread */
  pthread_t thread;
  int running, sync_ready;
  pthread_mutex_t lock;
  pthread_cond_t job, finished;
  long long queued, completed; /* under lock */
  int werr;               /* under lock: errno of the last job, 0 written */
  int stop_thread, kill_half; /* under lock */
  int prune_due;          /* under lock: rank 0's writer removes every checkpoint but
                             prune_keep and the newest at or below prune_floor (this run's
                             previous checkpoint, or the step it continued) */
  long long prune_keep, prune_floor;
  double writer_ms, sync_ms;  /* under lock */
  double writer_max_ms, prune_ms; /* under lock: fd_ckpt_times.writer_max; the removal's time
                             not yet counted into a checkpoint's */
  /* stop polls */
  MPI_Request poll;
  int poll_out;
  long long passes;       /* passes after which the checkpoints acted, every loop of the run */
  int poll_send[2], poll_recv[2];
  int stop_signal;        /* the signal that stopped the run (0: none) */
  long long stop_step;    /* the step it stopped after */
  int stop_measuring;     /* it stopped in a measurement loop (no new checkpoint) */
  int comm_dup;           /* comm is a duplicate to free */
  /* signal handlers saved */
  int handlers;
  /* test events */
  fd_test_event test_kill, test_signal;
  int signal_raised;
  /* timers */
  double host_ms, stall_ms, copy_ms, copy_call_ms;
  long long polls;
} fd_checkpoints;

/* Before anything is allocated: with --checkpoint-dir, creates it if missing (one level), proves
 * it writable, takes its lock (rank 0, until checkpoint_destroy: a directory another run holds
 * is refused; where the file system takes no locks, a notice and no lock), refuses it when it
 * holds checkpoints that this run does not continue and, once every check passed and only
 * under the lock, removes the temporary files there (a killed run's); with --restart, finds the
 * checkpoint to continue (rank 0 reads the headers and sizes) and checks it against *run. Fills
 * ck->restart, ck->from, ck->h (and resets the rest of *ck). FD_OK or FD_ERR_USAGE with one
 * line, agreed; a refused run removes nothing. Collective over comm. */
int checkpoint_prepare(fd_checkpoints *ck, const fd_options *o, MPI_Comm comm, const fd_ckpt_run *run);

/* Sets up the writing from *c (after checkpoint_prepare, whose run it keeps): with --checkpoint-dir the
 * communicator, staging and pinned buffers, the IO stream and events, the writer thread and the
 * SIGTERM/SIGUSR1 handlers; without it nothing. Failures are agreed. Collective.
 * checkpoint_destroy frees it (also after a failure). */
int checkpoint_create(fd_checkpoints *ck, const fd_ckpt_config *c);
/* Stops the writer (abandoning a checkpoint in flight: its temporary file is removed), restores
 * the signal handlers (after a stop: ignores SIGTERM and SIGUSR1 for the rest of the process, so
 * that it exits 5), frees what checkpoint_create made and releases the directory's lock (rank
 * 0; also after checkpoint_prepare failed). Collective (it completes an outstanding poll, which
 * every rank has). */
int checkpoint_destroy(fd_checkpoints *ck);

/* The restart: the checkpoint's levels into v->level (interiors; the ghosts keep what the
 * fields hold, so call it on freshly filled fields) and its source record into v->hist; reads
 * this rank's rows, checks every block's checksum (over all ranks) and on a mismatch falls back
 * to an older checkpoint where the restart named a directory or auto. Sets ck->read_s.
 * FD_OK, FD_ERR_USAGE (one line, agreed) or FD_ERR_RUNTIME. Collective; synchronous. */
int checkpoint_load(fd_checkpoints *ck, const fd_ckpt_view *v, be_stream compute);

/* After every pass, or chain of `count` passes (every rank, the same passes; chains end where
 * checkpoint_chain_passes says): moves a checkpoint in flight along, polls for a stop, and at a
 * multiple of `every` (not in measurement loops) takes a checkpoint of v->level. *stop = 1 when the ranks agreed to stop after this pass: the checkpoint of this step
 * is then written and committed (unless measuring, or v->step is the run's last step: then
 * *stop stays 0 and the run ends normally). Asynchronous (copies on the streams, writes in the
 * writer thread); blocks for a previous checkpoint still in flight at a checkpoint step, and at
 * a stop. FD_OK or FD_ERR_IO (agreed). Collective at the same passes on every rank. */
int checkpoint_after_pass(fd_checkpoints *ck, const fd_ckpt_view *v, int count, int *stop);

/* How many passes of `fuse` steps may run from step `steps` before the checkpoints must act (a
 * checkpoint step, a poll): a chain of passes run as one graph ends there. A large number when
 * checkpoints are off. Pure. */
int checkpoint_chain_passes(const fd_checkpoints *ck, long long steps, int fuse);

/* At the end of the run: completes the poll and the checkpoint in flight (committed when it
 * returns). Collective; synchronous. */
int checkpoint_finish(fd_checkpoints *ck);

void checkpoint_reset_timers(fd_checkpoints *ck);
void checkpoint_timers(fd_checkpoints *ck, fd_ckpt_times *t);

/* "SIGTERM", "SIGUSR1" or "signal N". */
const char *checkpoint_signal_name(int sig);

#endif
