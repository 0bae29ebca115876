/* checkpoint_writer.c - checkpoints in the background (checkpoint.h): the copies of the levels
 * to pinned memory, the writer thread (the rows, the checksums, fsync, the removal of older
 * checkpoints), the stop polls and the signal handlers, and the set-up and tear-down of it
 * all. The format is checkpoint_format.c's. Every MPI call is made on the solver's thread. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "checkpoint_format.h"
#include "fd_error.h"
#include "output.h"

static double mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- the writer thread (POSIX I/O only: no MPI, no GPU runtime) ---- */

/* Test only (--test-kill R,S,write): SIGKILL half-way through this rank's rows. */
static void maybe_kill(int *left)
{
  if (*left > 0 && --*left == 0) raise(SIGKILL);
}

/* The checksums of this rank's blocks of the checkpoint in flight: one per level, and the
 * source record's where this rank owns it. Read-only on *ck; run beside the writes. */
typedef struct {
  const fd_checkpoints *ck;
  uint64_t sum[FD_CKPT_FIELDS_MAX], hist;
} hash_job;

static void hash_blocks(hash_job *j)
{
  const fd_checkpoints *ck = j->ck;
  const fd_grid *g = &ck->layout;
  for (int f = 0; f < ck->fields; f++) {
    const real_t *first = ck->host[f] + fd_grid_index(g, 1, 1, 1);
    uint64_t sum = 0;
    for (int k = 0; k < ck->n[2]; k++)
      for (int j2 = 0; j2 < ck->n[1]; j2++) {
        const long long g0 = ((ck->start[2] + k) * ck->run.N[1] + ck->start[1] + j2) * ck->run.N[0] + ck->start[0];
        sum += ckpt_hash_run(first + g->sxy * k + g->sx * j2, ck->n[0], g0, ckpt_field_salt(f));
      }
    j->sum[f] = sum;
  }
  j->hist = ck->hist_owner && ck->hist_n > 0 ? ckpt_hash_run(ck->hist_host, ck->hist_n, 0, CK_SALT_HIST) : 0;
}

static void *hash_main(void *arg)
{
  hash_blocks(arg);
  return NULL;
}

/* Threads that write a rank's rows of a checkpoint: one thread's pwrites into tmpfs or the
 * page cache fall short of what a checkpoint every 1000 steps at 512^3 needs on a GPU node
 * (bench/results/README.md, "Checkpoints", has the measurement). */
#define CK_WRITE_THREADS 3

/* Planes [k0, k1) (0-based) of every level of the checkpoint in flight into fd; with left > 0
 * the process is killed when left planes of the first level are out (the kill test); e: 0 or
 * the errno of the failed write. */
typedef struct {
  const fd_checkpoints *ck;
  int fd, k0, k1, left, e;
} plane_job;

static void write_planes(plane_job *w)
{
  const fd_checkpoints *ck = w->ck;
  const fd_ckpt_header *h = &ck->head;
  const fd_grid *g = &ck->layout;
  const long long es = (long long)sizeof(real_t), pts = ck->run.N[0] * ck->run.N[1] * ck->run.N[2];
  for (int f = 0; f < ck->fields && !w->e; f++) {
    const real_t *first = ck->host[f] + fd_grid_index(g, 1, 1, 1);
    for (int k = w->k0; k < w->k1 && !w->e; k++) {
      const int one[3] = {ck->n[0], ck->n[1], 1};
      const long long at[3] = {ck->start[0], ck->start[1], ck->start[2] + k};
      w->e = output_write_block_at(w->fd, (long long)h->data_offset + f * pts * es, first + g->sxy * k, g->sx, g->sxy,
                                   one, at, ck->run.N);
      if (f == 0) maybe_kill(&w->left);
    }
  }
}

static void *write_planes_main(void *arg)
{
  write_planes(arg);
  return NULL;
}

/* Writes this rank's part of the checkpoint in flight: rank 0 the header, every rank its rows of
 * each level (CK_WRITE_THREADS threads, each a range of planes; those that cannot start write
 * inline) and its block's checksums (computed by another thread while the rows are written;
 * inline if it cannot start), the source's owner the record and its checksum; then fsync and
 * close. The kill test (kill_half) kills the process half-way through this thread's planes of
 * the first level. Returns 0 or an errno; *sync_ms the fsync's time. */
static int write_job(fd_checkpoints *ck, int kill_half, double *sync_ms)
{
  const fd_ckpt_header *h = &ck->head;
  int fd = open(ck->tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return errno ? errno : EIO;
  hash_job hj = {.ck = ck};
  pthread_t hasher;
  const int threaded = pthread_create(&hasher, NULL, hash_main, &hj) == 0; /* signals: blocked, as here */
  int e = 0;
  if (ck->rank == 0) {
    char block[FD_CKPT_HEADER_BYTES];
    memset(block, 0, sizeof block);
    memcpy(block, h, sizeof *h);
    e = ckpt_pwrite_all(fd, block, sizeof block, 0);
    /* the table's last slot when no record is written, and the zeros before the data: the file
     * ends at file_bytes whatever it holds */
    const uint64_t zero = 0, table_end = h->table_offset + 8 * ((uint64_t)ck->fields * ck->size + 1);
    if (!e && h->hist_count <= 0) e = ckpt_pwrite_all(fd, &zero, 8, (off_t)(table_end - 8));
    if (!e && h->data_offset > table_end) {
      memset(block, 0, sizeof block);
      e = ckpt_pwrite_all(fd, block, (size_t)(h->data_offset - table_end), (off_t)table_end);
    }
  }
  const long long es = (long long)sizeof(real_t);
  if (kill_half && ck->fields == 0) raise(SIGKILL); /* laplacian: no rows, the header is out */
  /* the rows, plane by plane, a range of planes per thread, this thread the first */
  const int nt = ck->n[2] < CK_WRITE_THREADS ? ck->n[2] : CK_WRITE_THREADS;
  plane_job job[CK_WRITE_THREADS];
  pthread_t tid[CK_WRITE_THREADS];
  int started[CK_WRITE_THREADS] = {0};
  for (int t = 0; t < nt; t++) {
    job[t] = (plane_job){.ck = ck, .fd = fd, .k0 = (int)((long long)ck->n[2] * t / nt),
                         .k1 = (int)((long long)ck->n[2] * (t + 1) / nt)};
    if (t > 0 && !e) started[t] = pthread_create(&tid[t], NULL, write_planes_main, &job[t]) == 0;
  }
  if (nt > 0 && !e) {
    job[0].left = kill_half ? (job[0].k1 - job[0].k0) / 2 + 1 : 0;
    write_planes(&job[0]);
  }
  for (int t = 1; t < nt; t++) {
    if (started[t])
      pthread_join(tid[t], NULL);
    else if (!e && !job[0].e)
      write_planes(&job[t]);
  }
  for (int t = 0; t < nt && !e; t++) e = job[t].e;
  const int record = ck->hist_owner && ck->hist_n > 0;
  if (!e && record) e = ckpt_pwrite_all(fd, ck->hist_host, (size_t)(ck->hist_n * es), (off_t)h->hist_offset);
  if (threaded)
    pthread_join(hasher, NULL);
  else
    hash_blocks(&hj);
  for (int f = 0; f < ck->fields && !e; f++)
    e = ckpt_pwrite_all(fd, &hj.sum[f], 8, (off_t)(h->table_offset + 8 * ((uint64_t)f * ck->size + (uint64_t)ck->block)));
  if (!e && record) e = ckpt_pwrite_all(fd, &hj.hist, 8, (off_t)(h->table_offset + 8 * (uint64_t)ck->fields * ck->size));
  const double t0 = mono_ms();
  if (!e && fsync(fd) != 0) e = errno ? errno : EIO;
  *sync_ms = mono_ms() - t0;
  if (close(fd) != 0 && !e) e = errno ? errno : EIO;
  return e;
}

/* Rank 0's writer thread after the rename of the newest checkpoint `keep`: removes every other
 * checkpoint of the directory but one, the newest at or below `floor` (the last two are kept).
 * `floor` is this run's previous checkpoint, or before it has one the step of the checkpoint it
 * continued: every checkpoint between it and `keep` is a leftover this run did not write,
 * either skipped by the restart as truncated or corrupt, or of a run continued from an older
 * checkpoint whose steps this one redoes, so none of them may stand as the one kept before
 * `keep` (a corrupt one there would leave a single sound checkpoint, and a later --restart auto
 * would meet it again). Newer ones than `keep` go too. Off the solver's thread: removing a file
 * of gigabytes can take a file system a third of a second (bench/results/README.md,
 * "Checkpoints"). */
static void prune(fd_checkpoints *ck, long long keep, long long floor)
{
  long long steps[FD_CKPT_CANDIDATES * 4];
  int n = 0;
  if (ckpt_list_dir(ck->dir, 0, NULL, steps, (int)(sizeof steps / sizeof steps[0]), &n) != 0) return;
  if (n > (int)(sizeof steps / sizeof steps[0])) n = (int)(sizeof steps / sizeof steps[0]);
  long long prev = -1;
  for (int q = 0; q < n; q++)
    if (steps[q] < keep && steps[q] <= floor && steps[q] > prev) prev = steps[q];
  for (int q = 0; q < n; q++)
    if (steps[q] != keep && steps[q] != prev) {
      char p[FD_PATH_MAX + 64];
      output_checkpoint_path(p, sizeof p, ck->dir, steps[q]);
      unlink(p);
    }
}

static void *writer_main(void *arg)
{
  fd_checkpoints *ck = arg;
  long long taken = 0;
  for (;;) {
    pthread_mutex_lock(&ck->lock);
    while (!ck->stop_thread && ck->queued == taken && !ck->prune_due) pthread_cond_wait(&ck->job, &ck->lock);
    if (ck->prune_due) { /* queued before any later checkpoint's write */
      const long long keep = ck->prune_keep, floor = ck->prune_floor;
      ck->prune_due = 0;
      pthread_mutex_unlock(&ck->lock);
      const double t0 = mono_ms();
      prune(ck, keep, floor);
      const double t1 = mono_ms();
      pthread_mutex_lock(&ck->lock);
      ck->writer_ms += t1 - t0;
      ck->prune_ms += t1 - t0; /* it delays the next checkpoint's write */
      pthread_mutex_unlock(&ck->lock);
      continue;
    }
    if (ck->queued == taken) {
      pthread_mutex_unlock(&ck->lock);
      return NULL;
    }
    taken = ck->queued;
    const int kill_half = ck->kill_half;
    pthread_mutex_unlock(&ck->lock);
    double sync_ms = 0.0, t0 = mono_ms();
    int e = write_job(ck, kill_half, &sync_ms);
    double t1 = mono_ms();
    pthread_mutex_lock(&ck->lock);
    ck->werr = e;
    ck->writer_ms += t1 - t0;
    ck->sync_ms += sync_ms;
    if (t1 - t0 + ck->prune_ms > ck->writer_max_ms) ck->writer_max_ms = t1 - t0 + ck->prune_ms;
    ck->prune_ms = 0.0;
    ck->completed = taken;
    pthread_cond_broadcast(&ck->finished);
    pthread_mutex_unlock(&ck->lock);
  }
}

/* ---- signals ---- */

static volatile sig_atomic_t ck_signal; /* the last stop signal received, 0 none */
static struct sigaction ck_old_term, ck_old_usr1;

const char *checkpoint_signal_name(int sig)
{
  static char buf[32];
  if (sig == SIGTERM) return "SIGTERM";
  if (sig == SIGUSR1) return "SIGUSR1";
  snprintf(buf, sizeof buf, "signal %d", sig);
  return buf;
}

static void on_signal(int sig) { ck_signal = sig; }

static int install_handlers(fd_checkpoints *ck)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ck_signal = 0;
  if (sigaction(SIGTERM, &sa, &ck_old_term) != 0 || sigaction(SIGUSR1, &sa, &ck_old_usr1) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot install the SIGTERM and SIGUSR1 handlers: %s", ck->rank,
                        strerror(errno));
  ck->handlers = 1;
  return FD_OK;
}

/* ---- set-up and tear-down ---- */

/* --restart: what checkpoint_load reads into, allocated with the run's other buffers, before
 * its first step: a pinned copy of one field (without --checkpoint-dir; with it, the writer's
 * host[0] serves) and, on the source's owner, the source record of the checkpoint chosen.
 * Agreed, one line naming the rank, what and the bytes. Collective over comm. */
static int reserve_restart(fd_checkpoints *ck, MPI_Comm comm)
{
  if (!ck->restart) return FD_OK;
  int err = FD_OK;
  const size_t bytes = ck->layout.elems * sizeof(real_t);
  if (!ck->on && ck->run.fields > 0 && be_host_alloc((void **)&ck->host[0], bytes) != BE_OK) {
    ck->host[0] = NULL;
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the --restart copy of the local field (%zu bytes): %s",
                       ck->rank, bytes, be_error_message());
  }
  if (err == FD_OK && ck->hist_owner && ck->run.hist > 0 && ck->h.hist_count > 0) {
    ck->rec_cap = ck->h.hist_count;
    if (!(ck->rec = malloc((size_t)ck->rec_cap * sizeof(real_t))))
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the --restart source record (%zu bytes): out of host "
                         "memory", ck->rank, (size_t)ck->rec_cap * sizeof(real_t));
  }
  return fd_agree(comm, err);
}

int checkpoint_create(fd_checkpoints *ck, const fd_ckpt_config *c)
{
  const fd_options *o = c->opt;
  ck->on = o->checkpoint_dir[0] != '\0';
  ck->every = o->checkpoint_every;
  ck->rank = c->rank;
  ck->size = c->size;
  ck->fields = ck->run.fields;
  ck->accelerator = c->accelerator;
  fd_copy_str(ck->backend, sizeof ck->backend, c->backend);
  ck->hist_owner = c->hist_owner;
  ck->compute = c->compute;
  ck->layout = *c->grid;
  ck->test_kill = o->test_kill;
  ck->test_signal = o->test_signal;
  for (int d = 0; d < 3; d++) {
    ck->P[d] = c->P[d];
    ck->n[d] = c->n[d];
    ck->start[d] = c->start[d];
  }
  /* this rank's block in the table: x fastest (not the communicator's rank order) */
  int bc[3];
  for (int d = 0; d < 3; d++) bc[d] = ckpt_block_of(ck->run.N[d], ck->P[d], ck->start[d]);
  ck->block = bc[0] + ck->P[0] * (bc[1] + ck->P[1] * bc[2]);
  FD_CALL(reserve_restart(ck, c->comm));
  if (!ck->on) return FD_OK;
  FD_MPI(MPI_Comm_dup(c->comm, &ck->comm));
  ck->comm_dup = 1;
  const size_t bytes = ck->layout.elems * sizeof(real_t);
  int err = FD_OK;
  for (int f = 0; f < ck->fields && err == FD_OK; f++) {
    if (ck->accelerator && be_malloc((void **)&ck->stage[f], bytes) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: cannot allocate %d x %zu bytes of device memory "
                         "to stage them: %s", ck->rank, ck->fields, bytes, be_error_message());
    if (err == FD_OK && be_host_alloc((void **)&ck->host[f], bytes) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: cannot allocate %d x %zu bytes of pinned memory: %s",
                         ck->rank, ck->fields, bytes, be_error_message());
  }
  ck->hist_cap = ck->hist_owner && ck->run.hist > 0 ? ck->run.hist : 0;
  if (err == FD_OK && ck->hist_cap && be_host_alloc((void **)&ck->hist_host, (size_t)ck->hist_cap * sizeof(real_t)) != BE_OK)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: cannot allocate the source record's copy: %s", ck->rank,
                       be_error_message());
  FD_CALL(fd_agree(c->comm, err));
  FD_BE(be_stream_create(&ck->io, BE_PRIORITY_NORMAL));
  FD_BE(be_event_create(&ck->staged));
  FD_BE(be_event_create(&ck->begin));
  FD_BE(be_event_create(&ck->copied));
  if (pthread_mutex_init(&ck->lock, NULL) != 0 || pthread_cond_init(&ck->job, NULL) != 0 ||
      pthread_cond_init(&ck->finished, NULL) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: cannot initialise the writer's lock", ck->rank);
  ck->sync_ready = 1;
  /* the writer takes no signal: the solver's thread handles them */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&ck->thread, NULL, writer_main, ck);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: cannot start the writer thread: %s", ck->rank, strerror(rc));
  ck->running = rc == 0;
  if (err == FD_OK) err = install_handlers(ck);
  return fd_agree(c->comm, err);
}

/* Stops the writer thread after its current job. */
static void writer_stop(fd_checkpoints *ck)
{
  if (!ck->running) return;
  pthread_mutex_lock(&ck->lock);
  ck->stop_thread = 1;
  pthread_cond_signal(&ck->job);
  pthread_mutex_unlock(&ck->lock);
  pthread_join(ck->thread, NULL);
  ck->running = 0;
}

int checkpoint_destroy(fd_checkpoints *ck)
{
  fd_error_saved first;
  fd_error_save(&first);
  if (ck->poll_out) {
    MPI_Wait(&ck->poll, MPI_STATUS_IGNORE);
    ck->poll_out = 0;
  }
  if (ck->stage_state == 1) (void)be_event_sync(ck->copied);
  writer_stop(ck);
  if (ck->begun > ck->finalized && ck->rank == 0) unlink(ck->tmp); /* abandoned: never presented */
  ck->begun = ck->finalized;
  ck->stage_state = 0;
  if (ck->handlers) {
    /* A stopped run exits 5 on every rank once its checkpoint is committed, whatever stop
     * signal comes next: a launcher signals the other ranks as soon as one has exited
     * (Open MPI's mpirun: SIGTERM, then SIGKILL), and they may still be in MPI_Finalize. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGTERM, ck->stop_signal ? &ign : &ck_old_term, NULL);
    sigaction(SIGUSR1, ck->stop_signal ? &ign : &ck_old_usr1, NULL);
    ck->handlers = 0;
  }
  if (ck->sync_ready) {
    pthread_mutex_destroy(&ck->lock);
    pthread_cond_destroy(&ck->job);
    pthread_cond_destroy(&ck->finished);
    ck->sync_ready = 0;
  }
  int err = FD_OK;
  for (int f = 0; f < FD_CKPT_FIELDS_MAX; f++) {
    if (be_free(ck->stage[f]) != BE_OK) err = FD_ERR_RUNTIME;
    if (be_host_free(ck->host[f]) != BE_OK) err = FD_ERR_RUNTIME;
    ck->stage[f] = ck->host[f] = NULL;
  }
  if (be_host_free(ck->hist_host) != BE_OK) err = FD_ERR_RUNTIME;
  ck->hist_host = NULL;
  free(ck->rec);
  ck->rec = NULL;
  ck->rec_cap = 0;
  be_event *ev[3] = {&ck->staged, &ck->begin, &ck->copied};
  for (int q = 0; q < 3; q++)
    if (*ev[q]) {
      if (be_event_destroy(*ev[q]) != BE_OK) err = FD_ERR_RUNTIME;
      *ev[q] = NULL;
    }
  if (ck->io && be_stream_destroy(ck->io) != BE_OK) err = FD_ERR_RUNTIME;
  ck->io = NULL;
  if (ck->comm_dup) MPI_Comm_free(&ck->comm);
  ck->comm_dup = 0;
  if (ck->locked) ckpt_unlock_dir(ck->dir, ck->lock_fd); /* after the last rename and removal */
  ck->locked = 0;
  fd_error_restore(&first);
  return err == FD_OK ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "rank %d: checkpoints: freeing: %s", ck->rank, be_error_message());
}

/* ---- writing ---- */

/* Copies the levels of v (and the source record) to pinned memory: on accelerators a device copy
 * into the staging buffers on the compute stream, then the IO stream copies those to the host;
 * on the host backend straight from the fields (synchronous). Fills the header (rank 0) and the
 * names. Not Collective. */
static int take(fd_checkpoints *ck, const fd_ckpt_view *v)
{
  const size_t bytes = ck->layout.elems * sizeof(real_t);
  ck->step = v->step;
  ck->hist_n = ck->hist_owner && ck->hist_cap ? (v->hist_n < ck->hist_cap ? v->hist_n : ck->hist_cap) : 0;
  output_checkpoint_path(ck->path, sizeof ck->path, ck->dir, v->step);
  (void)output_tmp_name(ck->path, ck->tag, ck->tmp, sizeof ck->tmp); /* fits: tmp is path's + 32 */
  /* every rank knows the record's length: min(step, on) + 1 while recorded */
  long long hist_n = ck->run.hist < 0 ? 0 : (v->step + 1 < ck->run.hist ? v->step + 1 : ck->run.hist);
  ckpt_fill_header(ck, v->step, hist_n, &ck->head); /* every writer needs its offsets */
  ck->bytes = (double)ck->head.file_bytes;
  const double t0 = mono_ms();
  if (ck->accelerator) {
    for (int f = 0; f < ck->fields; f++)
      FD_BE(be_memcpy_async(ck->stage[f], v->level[f], bytes, BE_COPY_D2D, ck->compute));
    FD_BE(be_event_record(ck->staged, ck->compute));
    FD_BE(be_stream_wait_event(ck->io, ck->staged));
    FD_BE(be_event_record(ck->begin, ck->io));
    for (int f = 0; f < ck->fields; f++)
      FD_BE(be_memcpy_async(ck->host[f], ck->stage[f], bytes, BE_COPY_D2H, ck->io));
    if (ck->hist_n > 0)
      FD_BE(be_memcpy_async(ck->hist_host, v->hist, (size_t)ck->hist_n * sizeof(real_t), BE_COPY_D2H, ck->io));
    FD_BE(be_event_record(ck->copied, ck->io));
  } else {
    FD_BE(be_event_record(ck->begin, ck->compute));
    for (int f = 0; f < ck->fields; f++)
      FD_BE(be_memcpy_async(ck->host[f], v->level[f], bytes, BE_COPY_D2H, ck->compute));
    if (ck->hist_n > 0)
      FD_BE(be_memcpy_async(ck->hist_host, v->hist, (size_t)ck->hist_n * sizeof(real_t), BE_COPY_D2H, ck->compute));
    FD_BE(be_event_record(ck->copied, ck->compute));
  }
  ck->copy_call_ms += mono_ms() - t0;
  ck->stage_state = 1;
  ck->begun++;
  return FD_OK;
}

/* Copies done -> the writer (waits for the copy where it is not done: at the next checkpoint, a
 * stop or the end). Not Collective. */
static int hand_over(fd_checkpoints *ck)
{
  const double t0 = mono_ms();
  FD_BE(be_event_sync(ck->copied));
  ck->stall_ms += mono_ms() - t0;
  float ms = 0.0f;
  FD_BE(be_event_elapsed_ms(&ms, ck->begin, ck->copied));
  ck->copy_ms += ms;
  pthread_mutex_lock(&ck->lock);
  ck->kill_half = ck->test_kill.what == FD_TEST_AT_WRITE && ck->test_kill.rank == ck->rank && ck->step >= ck->test_kill.step;
  ck->queued = ck->begun;
  pthread_cond_signal(&ck->job);
  pthread_mutex_unlock(&ck->lock);
  ck->stage_state = 2;
  return FD_OK;
}

/* The checkpoints this rank's writer has finished; with `wait`, first until the one in flight. */
static long long writer_done(fd_checkpoints *ck, int wait)
{
  const double t0 = mono_ms();
  pthread_mutex_lock(&ck->lock);
  while (wait && ck->completed < ck->queued) pthread_cond_wait(&ck->finished, &ck->lock);
  long long c = ck->completed;
  pthread_mutex_unlock(&ck->lock);
  if (wait) ck->stall_ms += mono_ms() - t0;
  return c;
}

/* The checkpoint in flight, its writers finished on every rank: agrees that every part was
 * written, then rank 0 checks the size, renames it to its final name, syncs the directory and
 * removes the older ones; agreed. FD_ERR_IO (the temporary file removed, older checkpoints
 * untouched) on failure. Collective over ck->comm. */
static int finalize(fd_checkpoints *ck)
{
  pthread_mutex_lock(&ck->lock);
  const int werr = ck->werr;
  pthread_mutex_unlock(&ck->lock);
  int err = werr ? fd_set_error(FD_ERR_IO, "checkpoint at step %lld: writing '%s' failed on rank %d: %s; the previous "
                                "checkpoint is unchanged", ck->step, ck->tmp, ck->rank, strerror(werr))
                 : FD_OK;
  err = fd_agree(ck->comm, err);
  if (ck->rank == 0) {
    if (err == FD_OK) err = output_check_size("checkpoint", ck->tmp, (long long)ck->head.file_bytes);
    if (err == FD_OK && rename(ck->tmp, ck->path) != 0)
      err = fd_set_error(FD_ERR_IO, "checkpoint at step %lld: cannot rename '%s': %s", ck->step, ck->tmp, strerror(errno));
    if (err != FD_OK) {
      unlink(ck->tmp);
    } else {
      int dfd = open(ck->dir, O_RDONLY | O_CLOEXEC);
      if (dfd >= 0) {
        (void)fsync(dfd); /* the rename is durable where the file system supports it */
        close(dfd);
      }
      if (ck->test_kill.what == FD_TEST_AT_COMMIT && ck->step >= ck->test_kill.step) raise(SIGKILL);
      pthread_mutex_lock(&ck->lock); /* the older checkpoints go in the writer thread */
      ck->prune_keep = ck->step;
      /* the one kept before it: this run's previous checkpoint, else the one it continued */
      ck->prune_floor = ck->last_step ? ck->last_step : (ck->restart ? ck->h.step : 0);
      ck->prune_due = 1;
      pthread_cond_signal(&ck->job);
      pthread_mutex_unlock(&ck->lock);
    }
  }
  err = fd_agree(ck->comm, err);
  ck->finalized = ck->begun;
  ck->stage_state = 0;
  if (err == FD_OK) {
    ck->written++;
    if (!ck->first_step) ck->first_step = ck->step;
    ck->last_step = ck->step;
    fd_copy_str(ck->last_path, sizeof ck->last_path, ck->path);
  }
  return err;
}

/* Completes the checkpoint in flight, waiting for its copy and writer. Collective. */
static int complete(fd_checkpoints *ck)
{
  if (ck->begun == ck->finalized) return FD_OK;
  if (ck->stage_state == 1) FD_CALL(hand_over(ck));
  writer_done(ck, 1);
  return finalize(ck);
}

/* The poll started FD_CKPT_POLL_PASSES passes ago, completed (on every rank at this pass, a
 * multiple of FD_CKPT_POLL_PASSES): a stop request, and the checkpoint in flight committed once
 * every writer finished. */
static int poll_complete(fd_checkpoints *ck, int *stop_sig)
{
  const double t0 = mono_ms();
  FD_MPI(MPI_Wait(&ck->poll, MPI_STATUS_IGNORE));
  ck->stall_ms += mono_ms() - t0;
  ck->poll_out = 0;
  ck->polls++;
  *stop_sig = ck->poll_recv[0];
  const long long all_done = -(long long)ck->poll_recv[1];
  if (ck->begun > ck->finalized && all_done >= ck->begun) FD_CALL(finalize(ck));
  return FD_OK;
}

static int poll_start(fd_checkpoints *ck)
{
  const long long done = ck->sync_ready ? writer_done(ck, 0) : 0;
  ck->poll_send[0] = (int)ck_signal;
  ck->poll_send[1] = -(int)(done & 0x3fffffff); /* MAX of -done: the fewest finished */
  FD_MPI(MPI_Iallreduce(ck->poll_send, ck->poll_recv, 2, MPI_INT, MPI_MAX, ck->comm, &ck->poll));
  ck->poll_out = 1;
  return FD_OK;
}

int checkpoint_chain_passes(const fd_checkpoints *ck, long long steps, int fuse)
{
  if (!ck->on) return 1 << 30;
  long long free = FD_CKPT_POLL_PASSES - ck->passes % FD_CKPT_POLL_PASSES;
  if (ck->every) {
    const long long to_ckpt = (ck->every - steps % ck->every) / fuse; /* steps and every: multiples of fuse */
    if (to_ckpt >= 1 && to_ckpt < free) free = to_ckpt;
  }
  return (int)free;
}

int checkpoint_after_pass(fd_checkpoints *ck, const fd_ckpt_view *v, int count, int *stop)
{
  *stop = 0;
  if (!ck->on) return FD_OK;
  const double t0 = mono_ms();
  ck->passes += count;
  /* test only: a signal on one rank at a chosen step, of --baseline's loop too (it runs before
   * the run proper, its steps from 0; not of the snapshots' and checkpoints' reference run), */
  const fd_test_event *ts = &ck->test_signal, *tk = &ck->test_kill;
  if (ts->rank == ck->rank && !ck->signal_raised && (!v->measure || v->baseline) && v->step >= ts->step) {
    ck->signal_raised = 1;
    raise(ts->what);
  }
  if (!v->measure) {
    /* and a SIGKILL, of the run proper only */
    if (tk->what == FD_TEST_AT_PASS && tk->rank == ck->rank && v->step >= tk->step) raise(SIGKILL);
    if (ck->every && v->step % ck->every == 0) {
      FD_CALL(complete(ck)); /* one checkpoint in flight at a time */
      if (v->sound) FD_CALL(v->sound(v->sound_ctx));
      FD_CALL(take(ck, v));
      if (!ck->accelerator) FD_CALL(hand_over(ck)); /* the copies were synchronous */
    }
  }
  /* the copies go to the writer as soon as the device has done them: asked, never waited for
   * (a wait would drain the passes queued ahead of the device) */
  if (ck->stage_state == 1) {
    int done = 0;
    FD_BE(be_event_query(ck->copied, &done));
    if (done) FD_CALL(hand_over(ck));
  }
  int sig = 0;
  const int due = ck->passes % FD_CKPT_POLL_PASSES == 0;
  if (ck->poll_out && due) {
    FD_CALL(poll_complete(ck, &sig));
  } else if (ck->poll_out) {
    int flag = 0; /* drives the reduction; its result is used at the agreed pass only */
    FD_MPI(MPI_Test(&ck->poll, &flag, MPI_STATUS_IGNORE));
    (void)flag;
  }
  if (due && !sig) FD_CALL(poll_start(ck));
  if (sig) {
    ck->stop_signal = sig;
    ck->stop_step = v->step;
    ck->stop_measuring = v->measure;
    if (v->measure) {
      *stop = 1;
    } else if (v->step < ck->run.total) {
      /* the checkpoint of this step, written and committed before the run ends */
      if (ck->begun == ck->finalized || ck->step != v->step) {
        FD_CALL(complete(ck));
        if (v->sound) FD_CALL(v->sound(v->sound_ctx));
        FD_CALL(take(ck, v));
      }
      FD_CALL(complete(ck));
      *stop = 1;
    } else {
      ck->stop_signal = 0; /* the run ends with this pass anyway */
    }
  }
  ck->host_ms += mono_ms() - t0;
  return FD_OK;
}

int checkpoint_finish(fd_checkpoints *ck)
{
  if (!ck->on) return FD_OK;
  const double t0 = mono_ms();
  if (ck->poll_out) FD_MPI(MPI_Wait(&ck->poll, MPI_STATUS_IGNORE));
  ck->poll_out = 0;
  int err = complete(ck);
  ck->host_ms += mono_ms() - t0;
  return err;
}

void checkpoint_reset_timers(fd_checkpoints *ck)
{
  ck->host_ms = ck->stall_ms = ck->copy_ms = ck->copy_call_ms = 0.0;
  ck->polls = 0;
  if (!ck->sync_ready) return;
  pthread_mutex_lock(&ck->lock);
  ck->writer_ms = ck->sync_ms = ck->writer_max_ms = 0.0;
  pthread_mutex_unlock(&ck->lock);
}

void checkpoint_timers(fd_checkpoints *ck, fd_ckpt_times *t)
{
  t->host = ck->host_ms;
  t->stall = ck->stall_ms;
  t->copy = ck->copy_ms;
  t->copy_call = ck->copy_call_ms;
  t->polls = ck->polls;
  t->writer = t->sync = t->writer_max = 0.0;
  if (!ck->sync_ready) return;
  pthread_mutex_lock(&ck->lock);
  t->writer = ck->writer_ms;
  t->sync = ck->sync_ms;
  t->writer_max = ck->writer_max_ms;
  pthread_mutex_unlock(&ck->lock);
}
