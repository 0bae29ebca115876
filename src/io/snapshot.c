/* snapshot.c - snapshots off the device and onto disk in the background (snapshot.h): pinned
 * copies on the IO stream ordered by events, a writer thread that writes each rank's interior
 * rows with pwritev() at their offsets in DIR/snap_STEP.raw (interior, global order, x
 * fastest: the layout of --dump), and the XDMF 3 file DIR/snapshots.xmf listing every
 * complete snapshot. Every MPI call is made on the solver's thread. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* pwritev (Linux, the BSDs, macOS) */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "fd_error.h"
#include "output.h"
#include "snapshot.h"

static double mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- the writer thread (POSIX I/O only: no MPI, no GPU runtime) ---- */

/* Writes the interior of the slot's host copy into its file (output_write_block: row (j, k) of
 * the block goes to global row (start_y + j, start_z + k) at x offset start_x). Returns 0 or
 * an errno. */
static int write_block(const fd_snapshots *sn, const fd_snap_slot *sl)
{
  const fd_grid *g = &sn->layout;
  return output_write_block(sl->fd, sl->host + fd_grid_index(g, 1, 1, 1), g->sx, g->sxy, sn->n,
                            sn->start, sn->N);
}

/* The writer: takes queued snapshots in index order (their copies are done), writes, closes
 * the file and reports the snapshot completed (with its errno); after a failure elsewhere
 * (cancel) it only closes. Leaves when stopped and the queue is empty. */
static void *writer_main(void *arg)
{
  fd_snapshots *sn = arg;
  long long taken = 0;
  for (;;) {
    pthread_mutex_lock(&sn->lock);
    while (!sn->stop && sn->queued == taken) pthread_cond_wait(&sn->job, &sn->lock);
    if (sn->queued == taken) {
      pthread_mutex_unlock(&sn->lock);
      return NULL;
    }
    long long k = ++taken;
    int cancel = sn->cancel;
    pthread_mutex_unlock(&sn->lock);

    fd_snap_slot *sl = &sn->slot[(k - 1) % FD_SNAP_SLOTS];
    double t0 = mono_ms();
    int werr = cancel ? 0 : write_block(sn, sl);
    if (close(sl->fd) != 0 && !werr) werr = errno ? errno : EIO;
    sl->fd = -1;
    double t1 = mono_ms();

    pthread_mutex_lock(&sn->lock);
    sl->werr = werr;
    sn->writer_ms += t1 - t0;
    sn->completed = k;
    pthread_cond_broadcast(&sn->finished);
    pthread_mutex_unlock(&sn->lock);
  }
}

/* ---- the solver's thread ---- */

/* COPYING -> QUEUED: waits for the copy (normally long done: it had a whole interval), which
 * frees the device buffer, and hands the slot (index sn->queued + 1) to the writer. Not
 * Collective. */
static int slot_queue(fd_snapshots *sn, fd_snap_slot *sl)
{
  double t0 = mono_ms();
  FD_BE(be_event_sync(sl->done));
  sn->stall_ms += mono_ms() - t0;
  float ms = 0.0f;
  FD_BE(be_event_elapsed_ms(&ms, sl->begin, sl->done));
  sn->copy_ms += ms;
  sn->copy_last_ms = ms;
  sl->dev = NULL;
  pthread_mutex_lock(&sn->lock);
  sl->werr = 0;
  sn->queued = sl->index;
  pthread_cond_signal(&sn->job);
  pthread_mutex_unlock(&sn->lock);
  sl->stage = SNAP_QUEUED;
  return FD_OK;
}

/* The number of snapshots this rank's writer has completed; with until > 0, first waits (a
 * stall) until it has completed snapshot `until`. */
static long long completed(fd_snapshots *sn, long long until)
{
  double t0 = mono_ms();
  pthread_mutex_lock(&sn->lock);
  while (sn->completed < until) pthread_cond_wait(&sn->finished, &sn->lock);
  long long c = sn->completed;
  pthread_mutex_unlock(&sn->lock);
  if (until > 0) sn->stall_ms += mono_ms() - t0;
  return c;
}

/* Rank 0 creates the slot's .tmp (new: a stale one of a killed run of the same process id is
 * removed first; the name is this run's own), then,
 * agreed, every other rank opens it; agreed again before anyone writes. The test switch
 * --test-fail-snapshot-write K opens the K-th read-only, so that its writes fail (EBADF: a real
 * failed write, through the real error path). Collective. */
static int slot_open(fd_snapshots *sn, fd_snap_slot *sl)
{
  if (output_snapshot_name(sn->dir, sl->step, sl->path, sizeof sl->path) != 0 ||
      output_tmp_name(sl->path, sn->tag, sl->tmp, sizeof sl->tmp) != 0)
    return fd_agree(sn->comm, fd_set_error(FD_ERR_IO, "snapshot %lld: the file name in '%s' is too long", sl->index, sn->dir));
  const int rw = sn->fail_index == sl->index ? O_RDONLY : O_WRONLY;
  int err = FD_OK;
  for (int pass = 0; pass < 2; pass++) {
    if ((sn->rank == 0) == (pass == 0)) {
      if (sn->rank == 0) unlink(sl->tmp);
      sl->fd = sn->rank == 0 ? open(sl->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)
                             : open(sl->tmp, rw | O_CLOEXEC);
      if (sl->fd >= 0 && sn->rank == 0 && rw == O_RDONLY) {
        close(sl->fd);
        sl->fd = open(sl->tmp, O_RDONLY | O_CLOEXEC);
      }
      if (sl->fd < 0)
        err = fd_set_error(FD_ERR_IO, "snapshot %lld (step %lld): rank %d cannot open '%s': %s",
                           sl->index, sl->step, sn->rank, sl->tmp, strerror(errno));
    }
    err = fd_agree(sn->comm, err);
    if (err != FD_OK) break;
  }
  if (err != FD_OK) {
    if (sl->fd >= 0) close(sl->fd);
    sl->fd = -1;
    if (sn->rank == 0) unlink(sl->tmp);
  }
  return err;
}

/* HELD -> COPYING: the IO stream copies the buffer once the compute stream has passed the
 * point where this is called (the end of the step after the snapshot's). Not Collective. */
static int slot_copy(fd_snapshots *sn, fd_snap_slot *sl)
{
  const size_t bytes = sn->layout.elems * sizeof(real_t);
  FD_BE(be_event_record(sn->taken, sn->compute));
  FD_BE(be_stream_wait_event(sn->io, sn->taken));
  FD_BE(be_event_record(sl->begin, sn->io));
  const double t0 = mono_ms();
  FD_BE(be_memcpy_async(sl->host, sl->dev, bytes, BE_COPY_D2H, sn->io));
  sn->copy_call_ms += mono_ms() - t0;
  FD_BE(be_event_record(sl->done, sn->io));
  sl->t_copy = mono_ms();
  sl->stage = SNAP_COPYING;
  return FD_OK;
}

/* Appends printf-formatted text to the XDMF text sn->xdmf, growing it: all of it and 0, or
 * nothing and -1 (out of memory). Rank 0. */
static int xdmf_append(fd_snapshots *sn, const char *fmt, ...)
{
  for (;;) {
    const size_t room = sn->xdmf_cap - sn->xdmf_len;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(sn->xdmf ? sn->xdmf + sn->xdmf_len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < room) {
      sn->xdmf_len += (size_t)n;
      return 0;
    }
    size_t cap = sn->xdmf_cap ? sn->xdmf_cap : 16384;
    while (cap < sn->xdmf_len + (size_t)n + 1) {
      if (cap > SIZE_MAX / 2) return -1;
      cap *= 2;
    }
    char *grown = realloc(sn->xdmf, cap);
    if (!grown) return -1;
    sn->xdmf = grown;
    sn->xdmf_cap = cap;
  }
}

/* Rewrites DIR/snapshots.xmf (rank 0) listing the written snapshots: one uniform grid per
 * snapshot in a temporal collection, 3DCoRectMesh with the interior's dimensions in z y x
 * order, origin at the first interior point (global index 1: x = h), spacing h, and the raw
 * file as a Binary DataItem of the machine's endianness. Written to a .tmp and renamed, so a
 * reader never sees it half written, and a run killed meanwhile leaves the previous version.
 * Each snapshot's grid is rendered once, into sn->xdmf, which keeps the text up to the last
 * listed grid: the rewrite after snapshot n formats that one grid and writes the text of all
 * n (formatting all n each time was most of the rewrite's cost, on the solver's thread:
 * bench/snapshots/README.md, "The XDMF index"). The file is still written whole: an XML file
 * cannot grow in place and stay valid at every byte, its closing tags follow the last grid.
 * Not Collective (rank 0). */
static int write_xdmf(fd_snapshots *sn)
{
  static const char closing[] = "    </Grid>\n  </Domain>\n</Xdmf>\n";
  const double *h = sn->h;
  fd_output out = {"snapshots", "", ""};
  if (snprintf(out.path, sizeof out.path, "%s/%s", sn->dir, FD_SNAPSHOT_XDMF) >= (int)sizeof out.path ||
      output_tmp_name(out.path, sn->tag, out.tmp, sizeof out.tmp) != 0)
    return fd_set_error(FD_ERR_IO, "snapshots: the name of the XDMF file in '%s' is too long", sn->dir);
  const unsigned one = 1;
  const char *endian = *(const unsigned char *)&one ? "Little" : "Big";
  const long long *N = sn->N;
  int bad = sn->xdmf_len == 0 &&
            xdmf_append(sn, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
                            "<Xdmf Version=\"3.0\">\n  <Domain>\n"
                            "    <Grid Name=\"fdmini_%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
                        sn->name) != 0;
  for (; !bad && sn->xdmf_listed < sn->written; sn->xdmf_listed++) {
    long long st = sn->steps[sn->xdmf_listed];
    char file[64];
    output_snapshot_name(NULL, st, file, sizeof file);
    bad = xdmf_append(sn,
                      "      <Grid Name=\"step_%06lld\" GridType=\"Uniform\">\n"
                      "        <Time Value=\"%.17g\"/>\n"
                      "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%lld %lld %lld\"/>\n"
                      "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
                      "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n"
                      "          <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g %.17g</DataItem>\n"
                      "        </Geometry>\n"
                      "        <Attribute Name=\"u\" AttributeType=\"Scalar\" Center=\"Node\">\n"
                      "          <DataItem Dimensions=\"%lld %lld %lld\" NumberType=\"Float\" Precision=\"%d\" Format=\"Binary\" Endian=\"%s\">%s</DataItem>\n"
                      "        </Attribute>\n"
                      "      </Grid>\n",
                      st, (double)st * sn->time_per_step, N[2], N[1], N[0], h[2], h[1], h[0], h[2], h[1], h[0],
                      N[2], N[1], N[0], (int)sizeof(real_t), endian, file) != 0;
    if (bad) break; /* this grid is not in the text: the next rewrite renders it again */
  }
  /* the closing tags go after the listed grids for this write only */
  const size_t listed = sn->xdmf_len;
  if (!bad) bad = xdmf_append(sn, "%s", closing) != 0;
  int err = bad ? fd_set_error(FD_ERR_IO, "snapshots: out of memory for '%s'", out.path)
                : output_write_file(&out, sn->xdmf, sn->xdmf_len);
  sn->xdmf_len = listed;
  return err == FD_OK ? output_commit(&out) : err;
}

/* Snapshot sn->finalized + 1, completed by the writer on every rank -> IDLE: agrees that every
 * part was written; rank 0 renames and lists the file, or on failure (any rank) removes the
 * .tmp; FD_ERR_IO on every rank then. Collective. */
static int finalize_next(fd_snapshots *sn)
{
  fd_snap_slot *sl = &sn->slot[sn->finalized % FD_SNAP_SLOTS];
  pthread_mutex_lock(&sn->lock);
  const int werr = sl->werr;
  pthread_mutex_unlock(&sn->lock);
  int err = FD_OK;
  if (werr)
    err = fd_set_error(FD_ERR_IO, "snapshot %lld (step %lld): writing '%s' failed on rank %d: %s; "
                       "the incomplete file was removed", sl->index, sl->step, sl->path, sn->rank, strerror(werr));
  err = fd_agree(sn->comm, err);
  sl->stage = SNAP_IDLE;
  sl->dev = NULL;
  sn->finalized++;
  if (sn->rank == 0) {
    /* every part written and closed: the size must be the whole grid's before the rename */
    if (err == FD_OK)
      err = output_check_size("snapshot", sl->tmp, sn->N[0] * sn->N[1] * sn->N[2] * (long long)sizeof(real_t));
    if (err != FD_OK) remove(sl->tmp);
    else if (rename(sl->tmp, sl->path) != 0)
      err = fd_set_error(FD_ERR_IO, "snapshot %lld: cannot rename '%s': %s", sl->index, sl->tmp, strerror(errno));
    if (err == FD_OK) {
      sn->steps[sn->written] = sl->step;
      sn->written++;
      err = write_xdmf(sn);
    }
  }
  return fd_agree(sn->comm, err);
}

/* Finalizes every snapshot that all ranks' writers have completed, without waiting for any
 * (one MPI_Allreduce). Collective. */
static int finalize_completed(fd_snapshots *sn)
{
  long long mine = completed(sn, 0), all = 0;
  FD_MPI(MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_MIN, sn->comm));
  while (sn->finalized < all) FD_CALL(finalize_next(sn));
  return FD_OK;
}

/* Waits for the writer to finish snapshot `upto` and finalizes up to it. Collective. */
static int finalize_upto(fd_snapshots *sn, long long upto)
{
  while (sn->finalized < upto) {
    completed(sn, sn->finalized + 1);
    FD_CALL(finalize_next(sn));
  }
  return FD_OK;
}

/* Stops the writer once its queue is empty and joins it. */
static void writer_stop(fd_snapshots *sn)
{
  if (!sn->running) return;
  pthread_mutex_lock(&sn->lock);
  sn->stop = 1;
  pthread_cond_signal(&sn->job);
  pthread_mutex_unlock(&sn->lock);
  pthread_join(sn->thread, NULL);
  sn->running = 0;
}

/* After a failure: the writer skips what is queued (closing the files), copies in flight
 * finish, every .tmp is removed (rank 0) and nothing is presented. */
static void snapshot_abandon(fd_snapshots *sn)
{
  if (sn->running) {
    pthread_mutex_lock(&sn->lock);
    sn->cancel = 1;
    pthread_mutex_unlock(&sn->lock);
    writer_stop(sn);
  }
  for (int q = 0; q < FD_SNAP_SLOTS; q++) {
    fd_snap_slot *sl = &sn->slot[q];
    if (sl->stage == SNAP_COPYING) be_event_sync(sl->done);
    if (sl->fd >= 0) close(sl->fd);
    if (sl->stage != SNAP_IDLE && sn->rank == 0) remove(sl->tmp);
    sl->fd = -1;
    sl->dev = NULL;
    sl->stage = SNAP_IDLE;
  }
}

/* Runs f; on error abandons the snapshots in flight and returns the error. */
#define SNAP_CALL(EXPR)                                                                        \
  do {                                                                                         \
    int sn_e_ = (EXPR);                                                                        \
    if (sn_e_ != FD_OK) {                                                                      \
      snapshot_abandon(sn);                                                                     \
      return sn_e_;                                                                            \
    }                                                                                          \
  } while (0)

void snapshot_adopt(fd_snapshots *sn, long long first)
{
  if (!sn->every || sn->rank != 0 || !sn->steps || sn->written) return;
  const long long bytes = sn->N[0] * sn->N[1] * sn->N[2] * (long long)sizeof(real_t);
  for (long long st = sn->every; st <= first; st += sn->every) {
    char path[FD_PATH_MAX + 32];
    struct stat info;
    snprintf(path, sizeof path, "%s/snap_%06lld.raw", sn->dir, st);
    if (stat(path, &info) == 0 && S_ISREG(info.st_mode) && (long long)info.st_size == bytes)
      sn->steps[sn->written++] = st;
  }
  sn->adopted = sn->written;
}

int snapshot_check(int every)
{
  int provided = MPI_THREAD_SINGLE;
  if (!every) return FD_OK;
  FD_MPI(MPI_Query_thread(&provided));
  if (provided < MPI_THREAD_FUNNELED)
    return fd_set_error(FD_ERR_USAGE, "--snapshot-every: the snapshot writer thread needs MPI_THREAD_FUNNELED, "
                        "but MPI was initialised with a lower thread level (%d)", provided);
  return FD_OK;
}

int snapshot_create(fd_snapshots *sn, const fd_snapshot_config *c)
{
  memset(sn, 0, sizeof *sn);
  for (int q = 0; q < FD_SNAP_SLOTS; q++) sn->slot[q].fd = -1;
  sn->every = c->every;
  if (!sn->every) return FD_OK;
  sn->dir = c->dir;
  sn->name = c->name;
  sn->fail_index = c->fail_index;
  sn->comm = c->dec->cart;
  sn->rank = c->dec->rank;
  sn->tag = (long)getpid(); /* rank 0's, for the temporary names */
  FD_MPI(MPI_Bcast(&sn->tag, 1, MPI_LONG, 0, sn->comm));
  sn->compute = c->compute;
  sn->time_per_step = c->time_per_step;
  for (int d = 0; d < 3; d++) {
    sn->n[d] = c->dec->n[d];
    sn->start[d] = c->dec->start[d];
    sn->N[d] = c->dec->N[d];
    sn->h[d] = c->h[d];
  }
  sn->layout = *c->grid;
  size_t bytes = 0;
  int err = fd_size_mul(sn->layout.elems, sizeof(real_t), &bytes) == 0
                ? FD_OK
                : fd_set_error(FD_ERR_RUNTIME, "rank %d: snapshots: the buffers of the local block do not fit in memory", sn->rank);
  for (int q = 0; q < FD_SNAP_SLOTS && err == FD_OK; q++)
    if (be_host_alloc((void **)&sn->slot[q].host, bytes) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: snapshots: cannot allocate %d x %zu bytes of pinned memory: %s",
                         sn->rank, (int)FD_SNAP_SLOTS, bytes, be_error_message());
  if (err == FD_OK && sn->rank == 0) {
    /* at most one snapshot per step */
    long long most = 1 + c->max_steps;
    sn->steps = malloc((size_t)(most / sn->every + 2) * sizeof *sn->steps);
    if (!sn->steps) err = fd_set_error(FD_ERR_RUNTIME, "snapshots: out of memory");
  }
  FD_CALL(fd_agree(sn->comm, err));
  FD_BE(be_stream_create(&sn->io, BE_PRIORITY_NORMAL));
  FD_BE(be_event_create(&sn->taken));
  for (int q = 0; q < FD_SNAP_SLOTS; q++) {
    FD_BE(be_event_create(&sn->slot[q].begin));
    FD_BE(be_event_create(&sn->slot[q].done));
  }
  if (pthread_mutex_init(&sn->lock, NULL) != 0 || pthread_cond_init(&sn->job, NULL) != 0 ||
      pthread_cond_init(&sn->finished, NULL) != 0)
    return fd_set_error(FD_ERR_RUNTIME, "rank %d: snapshots: cannot initialise the writer's lock", sn->rank);
  sn->sync_ready = 1;
  int rc = pthread_create(&sn->thread, NULL, writer_main, sn);
  if (rc != 0)
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: snapshots: cannot start the writer thread: %s", sn->rank, strerror(rc));
  sn->running = rc == 0;
  return fd_agree(sn->comm, err);
}

int snapshot_destroy(fd_snapshots *sn)
{
  if (sn->running) snapshot_abandon(sn); /* after snapshot_drain nothing is in flight: it only
                                         * stops the writer */
  if (sn->sync_ready) {
    pthread_mutex_destroy(&sn->lock);
    pthread_cond_destroy(&sn->job);
    pthread_cond_destroy(&sn->finished);
  }
  for (int q = 0; q < FD_SNAP_SLOTS; q++) {
    FD_BE(be_host_free(sn->slot[q].host));
    if (sn->slot[q].begin) FD_BE(be_event_destroy(sn->slot[q].begin));
    if (sn->slot[q].done) FD_BE(be_event_destroy(sn->slot[q].done));
  }
  if (sn->taken) FD_BE(be_event_destroy(sn->taken));
  if (sn->io) FD_BE(be_stream_destroy(sn->io));
  free(sn->steps);
  free(sn->xdmf);
  memset(sn, 0, sizeof *sn);
  return FD_OK;
}

int snapshot_holds(const fd_snapshots *sn, const real_t *buf)
{
  for (int q = 0; q < FD_SNAP_SLOTS; q++)
    if (sn->slot[q].dev == buf && buf) return 1;
  return 0;
}

int snapshot_release(fd_snapshots *sn, const real_t *buf)
{
  for (int q = 0; q < FD_SNAP_SLOTS; q++) {
    fd_snap_slot *sl = &sn->slot[q];
    if (sl->dev != buf || sl->stage != SNAP_COPYING) continue;
    FD_BE(be_stream_wait_event(sn->compute, sl->done));
    sl->dev = NULL;
  }
  return FD_OK;
}

int snapshot_after_step(fd_snapshots *sn, long long step, const real_t *out)
{
  if (!sn->every) return FD_OK;
  double t0 = fd_now();
  /* 1. a snapshot held since the previous step: its ghosts were exchanged in this step, which
   *    has been enqueued in full; copy it now */
  for (int q = 0; q < FD_SNAP_SLOTS; q++)
    if (sn->slot[q].stage == SNAP_HELD && sn->slot[q].step < step) SNAP_CALL(slot_copy(sn, &sn->slot[q]));
  /* 2. a copy that should be done by now goes to the writer: the last copy's duration with
   *    a margin (it starts once the device has finished the step after the snapshot's: the
   *    host runs at most a step or two ahead), measured since it was enqueued. At the latest
   *    (and the first time) it goes at the next snapshot step, having had a whole interval */
  const double now = mono_ms();
  if (sn->t_step > 0) sn->step_wall_ms = now - sn->t_step;
  sn->t_step = now;
  const int snap_step = step % sn->every == 0;
  for (long long k = sn->finalized + 1; k <= sn->begun; k++) {
    fd_snap_slot *sl = &sn->slot[(k - 1) % FD_SNAP_SLOTS];
    if (sl->stage != SNAP_COPYING) continue;
    if (!snap_step && !(sn->copy_last_ms > 0 && now - sl->t_copy > 1.25 * sn->copy_last_ms + 3 * sn->step_wall_ms))
      break; /* the writer takes snapshots in order */
    SNAP_CALL(slot_queue(sn, sl));
  }
  if (snap_step) {
    /* 3. present what every writer has finished; then the slot of this snapshot must be free:
     *    when the writer is FD_SNAP_SLOTS snapshots behind, the solver waits here */
    SNAP_CALL(finalize_completed(sn));
    SNAP_CALL(finalize_upto(sn, sn->begun + 1 - FD_SNAP_SLOTS));
    /* 4. take this one */
    fd_snap_slot *sl = &sn->slot[sn->begun % FD_SNAP_SLOTS];
    sl->index = ++sn->begun;
    sl->step = step;
    SNAP_CALL(slot_open(sn, sl));
    sl->dev = out;
    sl->stage = SNAP_HELD;
  }
  sn->wait_ms += (fd_now() - t0) * 1e3;
  return FD_OK;
}

int snapshot_drain(fd_snapshots *sn)
{
  if (!sn->every) return FD_OK;
  double t0 = fd_now();
  for (long long k = sn->finalized + 1; k <= sn->begun; k++) {
    fd_snap_slot *sl = &sn->slot[(k - 1) % FD_SNAP_SLOTS];
    if (sl->stage == SNAP_HELD) SNAP_CALL(slot_copy(sn, sl));
    if (sl->stage == SNAP_COPYING) SNAP_CALL(slot_queue(sn, sl));
  }
  SNAP_CALL(finalize_upto(sn, sn->begun));
  sn->wait_ms += (fd_now() - t0) * 1e3;
  return FD_OK;
}

void snapshot_reset_timers(fd_snapshots *sn)
{
  sn->wait_ms = sn->stall_ms = sn->copy_ms = sn->copy_call_ms = 0.0;
  sn->t_step = 0.0;
  if (!sn->sync_ready) return;
  pthread_mutex_lock(&sn->lock);
  sn->writer_ms = 0.0;
  pthread_mutex_unlock(&sn->lock);
}

void snapshot_timers(fd_snapshots *sn, fd_snap_times *t)
{
  t->host = sn->wait_ms;
  t->stall = sn->stall_ms;
  t->copy = sn->copy_ms;
  t->copy_call = sn->copy_call_ms;
  t->writer = 0.0;
  if (!sn->sync_ready) return;
  pthread_mutex_lock(&sn->lock);
  t->writer = sn->writer_ms;
  pthread_mutex_unlock(&sn->lock);
}
