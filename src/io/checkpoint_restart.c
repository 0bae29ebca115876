/* checkpoint_restart.c - the restart from a checkpoint (checkpoint.h): the choice of the
 * checkpoint to continue (rank 0 reads the headers of a file, a directory's or
 * --checkpoint-dir's, with checkpoint_format.c) and its reading back into the run: every
 * rank's rows, copied to the device beside the reading, and every writer's block checked by
 * its checksum, with a fallback to an older checkpoint. Every MPI call is made on the
 * solver's thread. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* preadv (Linux, the BSDs, macOS) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "checkpoint.h"
#include "checkpoint_format.h"
#include "decomp.h"
#include "fd_error.h"
#include "output.h"

/* ---- the choice of the checkpoint (rank 0) ---- */

/* Rank 0: the newest usable checkpoint among ck->cand[ck->cand_next..] of ck->cand_dir into
 * ck->from and ck->h (ck->restart = 1), skipping incomplete or corrupt ones with a notice.
 * FD_OK with ck->restart = 0 when none is left; FD_ERR_USAGE for a file of another run. */
static int choose_next(fd_checkpoints *ck, const fd_ckpt_run *r, char *reasons, size_t rlen)
{
  ck->restart = 0;
  while (ck->cand_next < ck->ncand) {
    char path[FD_PATH_MAX + 64];
    output_checkpoint_path(path, sizeof path, ck->cand_dir, ck->cand[ck->cand_next++]);
    int incompatible = 0;
    if (ckpt_read_header(path, r, &ck->h, &incompatible) == FD_OK) {
      fd_copy_str(ck->from, sizeof ck->from, path);
      ck->restart = 1;
      return FD_OK;
    }
    if (incompatible) return FD_ERR_USAGE;
    printf("fdmini: notice: %s; trying the previous checkpoint\n", fd_error_message());
    fflush(stdout);
    size_t used = strlen(reasons);
    if (used < rlen) snprintf(reasons + used, rlen - used, "%s%s", used ? "; " : "", fd_error_message());
    ck->skipped++;
  }
  return FD_OK;
}

/* Rank 0's part of checkpoint_prepare: --checkpoint-dir made, proved writable, locked and
 * listed; the checkpoint to continue. */
static int prepare_rank0(fd_checkpoints *ck, const fd_options *o, const fd_ckpt_run *r)
{
  int have = 0; /* checkpoints in --checkpoint-dir */
  long long dir_steps[FD_CKPT_CANDIDATES];
  if (o->checkpoint_dir[0]) {
    const char *dir = o->checkpoint_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot create '%s': %s", dir, strerror(errno));
    char probe[FD_PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/.fdmini-write-probe-%ld", dir, ck->tag);
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot write into '%s': %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    char *real = realpath(dir, NULL);
    if (!real || strlen(real) >= FD_PATH_MAX - 64) {
      free(real);
      return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot resolve '%s'", dir);
    }
    strcpy(ck->dir, real);
    free(real);
    /* one run per directory: a second one would remove the first one's temporary file in
     * flight, overwrite its checkpoints and remove them */
    int nolock = 0;
    FD_CALL(ckpt_lock_dir(ck->dir, &ck->lock_fd, &nolock));
    ck->locked = ck->lock_fd >= 0;
    if (nolock) {
      printf("fdmini: notice: --checkpoint-dir '%s': its file system takes no lock (%s: %s), so nothing keeps "
             "another run out of it: this run removes no temporary file there (a killed run's ckpt_*.tmp stays "
             "until you remove it)\n", ck->dir, FD_CHECKPOINT_LOCK, strerror(nolock));
      fflush(stdout);
    }
    int e = ckpt_list_dir(ck->dir, 0, NULL, dir_steps, FD_CKPT_CANDIDATES, &have);
    if (e) return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot read '%s': %s", ck->dir, strerror(e));
  }
  char reasons[FD_ERROR_MESSAGE_MAX] = "";
  if (o->restart == FD_RESTART_NONE) {
    if (have)
      return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir '%s' holds checkpoints (the newest: ckpt_%010lld.fdmini), which "
                          "this run would overwrite and remove: continue that run with --restart auto, or choose "
                          "another directory", ck->dir, dir_steps[0]);
    return FD_OK;
  }
  if (o->restart == FD_RESTART_AUTO) {
    if (!have) return FD_OK; /* a fresh start */
    strcpy(ck->cand_dir, ck->dir);
    ck->ncand = have < FD_CKPT_CANDIDATES ? have : FD_CKPT_CANDIDATES;
    memcpy(ck->cand, dir_steps, sizeof ck->cand);
    FD_CALL(choose_next(ck, r, reasons, sizeof reasons));
    if (!ck->restart)
      return fd_set_error(FD_ERR_USAGE, "--restart auto: no complete checkpoint in '%s' (%s); remove them to start "
                          "afresh", ck->dir, reasons);
    return FD_OK;
  }
  /* --restart PATH: a file or a directory */
  const char *path = o->restart_path;
  struct stat st;
  if (stat(path, &st) != 0) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(errno));
  char *real = realpath(path, NULL);
  if (!real || strlen(real) >= FD_PATH_MAX - 64) {
    free(real);
    return fd_set_error(FD_ERR_USAGE, "--restart: cannot resolve '%s'", path);
  }
  char dir[FD_PATH_MAX];
  strcpy(dir, real);
  free(real);
  if (S_ISDIR(st.st_mode)) {
    int n = 0;
    int e = ckpt_list_dir(dir, 0, NULL, ck->cand, FD_CKPT_CANDIDATES, &n);
    if (e) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read the directory '%s': %s", path, strerror(e));
    strcpy(ck->cand_dir, dir);
    ck->ncand = n < FD_CKPT_CANDIDATES ? n : FD_CKPT_CANDIDATES;
    FD_CALL(choose_next(ck, r, reasons, sizeof reasons));
    if (!ck->restart)
      return fd_set_error(FD_ERR_USAGE, "--restart: no complete checkpoint in the directory '%s'%s%s%s", path,
                          reasons[0] ? " (" : "", reasons, reasons[0] ? ")" : ": it holds no ckpt_STEP.fdmini");
  } else {
    int incompatible = 0;
    FD_CALL(ckpt_read_header(dir, r, &ck->h, &incompatible));
    fd_copy_str(ck->from, sizeof ck->from, dir);
    ck->restart = 1;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
  }
  /* checkpoints of --checkpoint-dir that this run does not continue would be overwritten */
  if (have && strcmp(dir, ck->dir) != 0)
    return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir '%s' holds checkpoints of its own (the newest: "
                        "ckpt_%010lld.fdmini), which this run from '%s' would overwrite and remove: choose another "
                        "directory, or restart from that one", ck->dir, dir_steps[0], ck->from);
  return FD_OK;
}

/* Rank 0, after prepare_rank0 accepted the run and took --checkpoint-dir's lock: no other run
 * writes there, so its temporary files are killed runs' and go, but for the file --restart
 * names, the run's input also under a temporary name (a complete checkpoint whose run was
 * killed before the rename). */
static void clean_rank0(const fd_checkpoints *ck, const fd_options *o)
{
  char *keep = o->restart == FD_RESTART_PATH ? realpath(o->restart_path, NULL) : NULL;
  long long steps[1];
  int n = 0;
  (void)ckpt_list_dir(ck->dir, 1, keep, steps, 1, &n);
  free(keep);
}

/* The choice (ck->restart, ck->from, ck->h, ck->dir, ck->skipped) from rank 0 to every rank. */
static int bcast_choice(fd_checkpoints *ck, MPI_Comm comm)
{
  FD_MPI(MPI_Bcast(&ck->restart, 1, MPI_INT, 0, comm));
  FD_MPI(MPI_Bcast(&ck->skipped, 1, MPI_INT, 0, comm));
  FD_MPI(MPI_Bcast(ck->from, (int)sizeof ck->from, MPI_CHAR, 0, comm));
  FD_MPI(MPI_Bcast(ck->dir, (int)sizeof ck->dir, MPI_CHAR, 0, comm));
  FD_MPI(MPI_Bcast(&ck->h, (int)sizeof ck->h, MPI_BYTE, 0, comm));
  int more = ck->cand_next < ck->ncand; /* rank 0 has older candidates for a fallback */
  FD_MPI(MPI_Bcast(&more, 1, MPI_INT, 0, comm));
  ck->fallback = more;
  return FD_OK;
}

int checkpoint_prepare(fd_checkpoints *ck, const fd_options *o, MPI_Comm comm, const fd_ckpt_run *run)
{
  memset(ck, 0, sizeof *ck);
  ck->comm = MPI_COMM_NULL;
  ck->cart = MPI_COMM_NULL;
  ck->poll = MPI_REQUEST_NULL;
  ck->run = *run;
  ck->cart = comm;
  int rank;
  FD_MPI(MPI_Comm_rank(comm, &rank));
  long tag = (long)getpid();
  FD_MPI(MPI_Bcast(&tag, 1, MPI_LONG, 0, comm));
  ck->tag = tag;
  int err = FD_OK;
  if (o->checkpoint_dir[0]) {
    /* the writer thread makes no MPI call, but MPI must allow other threads */
    int provided = MPI_THREAD_SINGLE;
    FD_MPI(MPI_Query_thread(&provided));
    if (provided < MPI_THREAD_FUNNELED)
      err = fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: the checkpoint writer thread needs MPI_THREAD_FUNNELED, "
                         "but MPI was initialised with a lower thread level (%d)", provided);
  }
  FD_CALL(fd_agree(comm, err));
  if (rank == 0) err = prepare_rank0(ck, o, run);
  if (rank == 0 && err == FD_OK && ck->locked) clean_rank0(ck, o); /* a refused run removes nothing */
  FD_CALL(fd_agree(comm, err));
  return bcast_choice(ck, comm);
}

/* ---- the restart ---- */

enum { ROWS_PER_CALL = 512 };

/* preadv of iov[0..cnt) at off until all is read: 0 or an errno. Consumes iov. */
static int preadv_all(int fd, struct iovec *iov, int cnt, off_t off)
{
  while (cnt > 0) {
    ssize_t r = preadv(fd, iov, cnt, off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (r == 0) return EIO;
    off += r;
    while (cnt > 0 && (size_t)r >= iov->iov_len) {
      r -= (ssize_t)iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (char *)iov->iov_base + r;
      iov->iov_len -= (size_t)r;
    }
  }
  return 0;
}

/* The checksum terms of this rank's rows of field f read so far: planes [0, ready) of the block
 * are in host; a second thread adds their terms to sums while the next planes are read. */
typedef struct {
  const fd_ckpt_header *h;
  int f;
  const fd_grid *g;
  const int *n;
  const long long *start;
  const real_t *host;
  uint64_t *sums;         /* fields x writers: every value's term to the block of its writer */
  pthread_mutex_t lock;
  pthread_cond_t more;
  int ready;              /* under lock: planes read */
  int quit;               /* under lock: the reading failed */
} plane_hash;

/* Adds the terms of planes [k0, k1) to p->sums. */
static void hash_planes(plane_hash *p, int k0, int k1)
{
  const fd_ckpt_header *h = p->h;
  const long long N[3] = {h->N[0], h->N[1], h->N[2]};
  const int W0 = (int)h->procs[0], W1 = (int)h->procs[1];
  for (int k = k0; k < k1; k++) {
    const long long gz = p->start[2] + k;
    const int wz = ckpt_block_of(N[2], (int)h->procs[2], gz);
    for (int j = 0; j < p->n[1]; j++) {
      const long long gy = p->start[1] + j;
      const int wy = ckpt_block_of(N[1], W1, gy);
      const real_t *r = p->host + fd_grid_index(p->g, 1, j + 1, k + 1);
      for (long long x = p->start[0]; x < p->start[0] + p->n[0];) {
        const int wx = ckpt_block_of(N[0], W0, x);
        long long bn, bs;
        decomp_split(N[0], W0, wx, &bn, &bs);
        long long end = bs + bn < p->start[0] + p->n[0] ? bs + bn : p->start[0] + p->n[0];
        const long long w = wx + (long long)W0 * (wy + (long long)W1 * wz);
        p->sums[(long long)p->f * (long long)h->writers + w] +=
            ckpt_hash_run(r + (x - p->start[0]), end - x, (gz * N[1] + gy) * N[0] + x, ckpt_field_salt(p->f));
        x = end;
      }
    }
  }
}

static void *plane_hasher(void *arg)
{
  plane_hash *p = arg;
  for (int k = 0; k < p->n[2];) {
    pthread_mutex_lock(&p->lock);
    while (p->ready <= k && !p->quit) pthread_cond_wait(&p->more, &p->lock);
    const int ready = p->ready, quit = p->quit;
    pthread_mutex_unlock(&p->lock);
    if (quit) return NULL;
    hash_planes(p, k, ready);
    k = ready;
  }
  return NULL;
}

/* The copies between the device field and the host buffer of a restart, by chunks of planes,
 * beside the reading: the whole field comes to the host first (its ghosts and padding as filled),
 * chunk by chunk on stream s, an event after each; the reading of a chunk's planes waits for its
 * event only, and each chunk read goes back to the device at once. So the copies run while the
 * file is read, and the file's next chunk is asked of the page cache (readahead) while this one
 * is read. */
enum { STAGE_CHUNK_BYTES = 16 << 20, STAGE_CHUNKS_MAX = 64 }; /* at most 16 MiB, at most 64 chunks */
typedef struct {
  real_t *dev;          /* the device field (ghosts included) */
  const fd_grid *g;     /* its layout */
  be_stream s;
  be_event ev[STAGE_CHUNKS_MAX];
  int per, chunks;      /* planes per chunk, chunks */
  int err;              /* a failed copy or event: FD_ERR_RUNTIME, already set */
} stage_copy;

/* Element where chunk boundary q lies: 0-based plane q of the block's n[2] (0: the start of the
 * allocation, nz: its end; otherwise where plane q's slab of the layout begins, its lowest ghost
 * row's first ghost point). Pure. */
static size_t stage_elem(const fd_grid *g, int nz, int q)
{
  if (q <= 0) return 0;
  if (q >= nz) return g->elems;
  return (size_t)(fd_grid_index(g, 1 - g->ghost, 1 - g->ghost, q + 1));
}

/* Chunk `chunk` of the field to the host (its event recorded after it) or back to the device,
 * on c->s; nothing after a failure. */
static void stage_copy_chunk(stage_copy *c, real_t *host, int chunk, int to_device)
{
  if (c->err) return;
  const int nz = c->g->n[2];
  const size_t a = stage_elem(c->g, nz, chunk * c->per), b = stage_elem(c->g, nz, (chunk + 1) * c->per);
  if (b <= a) return;
  const size_t bytes = (b - a) * sizeof(real_t);
  if (to_device) {
    if (be_memcpy_async(c->dev + a, host + a, bytes, BE_COPY_H2D, c->s) != BE_OK)
      c->err = fd_backend_failed(__FILE__, __LINE__, "be_memcpy_async(H2D)");
  } else if (be_memcpy_async(host + a, c->dev + a, bytes, BE_COPY_D2H, c->s) != BE_OK ||
             be_event_record(c->ev[chunk], c->s) != BE_OK) {
    c->err = fd_backend_failed(__FILE__, __LINE__, "be_memcpy_async(D2H)");
  }
}

/* Sets c up for device field dev (layout g) and enqueues the field's chunks to host. */
static void stage_begin(stage_copy *c, real_t *dev, const fd_grid *g, be_stream s, real_t *host)
{
  memset(c, 0, sizeof *c);
  c->dev = dev, c->g = g, c->s = s;
  const size_t plane = (size_t)g->sxy * sizeof(real_t);
  int per = (int)(STAGE_CHUNK_BYTES / (plane > 0 ? plane : 1));
  if (per > (g->n[2] + 3) / 4) per = (g->n[2] + 3) / 4; /* at least 4 chunks: the first copy is short */
  if (per < 1) per = 1;
  if (per < (g->n[2] + STAGE_CHUNKS_MAX - 1) / STAGE_CHUNKS_MAX) per = (g->n[2] + STAGE_CHUNKS_MAX - 1) / STAGE_CHUNKS_MAX;
  c->per = per;
  c->chunks = (g->n[2] + per - 1) / per;
  for (int q = 0; q < c->chunks && !c->err; q++)
    if (be_event_create(&c->ev[q]) != BE_OK) c->err = fd_backend_failed(__FILE__, __LINE__, "be_event_create");
  for (int q = 0; q < c->chunks; q++) stage_copy_chunk(c, host, q, 0);
}

/* Waits for the copies, frees the events; c->err or FD_OK. */
static int stage_end(stage_copy *c)
{
  if (be_stream_sync(c->s) != BE_OK && !c->err) c->err = fd_backend_failed(__FILE__, __LINE__, "be_stream_sync");
  for (int q = 0; q < c->chunks; q++)
    if (c->ev[q] && be_event_destroy(c->ev[q]) != BE_OK && !c->err)
      c->err = fd_backend_failed(__FILE__, __LINE__, "be_event_destroy");
  return c->err ? c->err : FD_OK;
}

/* File offset of this rank's row j of plane k (0-based, within its block at start) of field f. */
static off_t row_offset(const fd_ckpt_header *h, int f, const long long start[3], int j, int k)
{
  const long long N[3] = {h->N[0], h->N[1], h->N[2]}, es = (long long)sizeof(real_t);
  const long long base = (long long)h->data_offset + f * N[0] * N[1] * N[2] * es;
  return (off_t)(base + (((start[2] + k) * N[1] + start[1] + j) * N[0] + start[0]) * es);
}

/* File bytes of this rank's rows of planes [k0, k1) (0-based) of field f: [*lo, *hi). */
static void planes_span(const fd_ckpt_header *h, int f, const int n[3], const long long start[3], int k0, int k1,
                        off_t *lo, off_t *hi)
{
  *lo = row_offset(h, f, start, 0, k0);
  *hi = row_offset(h, f, start, n[1] - 1, k1 - 1) + (off_t)((long long)n[0] * (long long)sizeof(real_t));
}

/* Reads this rank's rows of field f of the checkpoint (header h) into the interior of host (the
 * layout g), plane by plane, rows that follow each other in the file in one preadv, and adds
 * every value's term to sums[f * W + writer block]: a second thread hashes the planes read while
 * the next are read (inline after the reading if it cannot start). With stage, each chunk of
 * planes is read once its copy to host is in and goes back to the device once read
 * (stage_copy). 0 or an errno. */
static int read_field(int fd, const fd_ckpt_header *h, int f, const fd_grid *g, const int n[3], const long long start[3],
                      real_t *host, uint64_t *sums, stage_copy *stage)
{
  const size_t row = (size_t)n[0] * sizeof(real_t);
  plane_hash p = {.h = h, .f = f, .g = g, .n = n, .start = start, .host = host, .sums = sums};
  int threaded = 0;
  pthread_t hasher;
  if (pthread_mutex_init(&p.lock, NULL) == 0) {
    if (pthread_cond_init(&p.more, NULL) == 0) {
      sigset_t all, old; /* signals stay with the solver's thread */
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, &old);
      threaded = pthread_create(&hasher, NULL, plane_hasher, &p) == 0;
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      if (!threaded) pthread_cond_destroy(&p.more);
    }
    if (!threaded) pthread_mutex_destroy(&p.lock);
  }
  struct iovec iov[ROWS_PER_CALL];
  int e = 0;
  for (int k = 0; k < n[2] && !e; k++) {
    if (stage && k % stage->per == 0) {
      const int q = k / stage->per;
      if (!stage->err && be_event_sync(stage->ev[q]) != BE_OK)
        stage->err = fd_backend_failed(__FILE__, __LINE__, "be_event_sync");
      if (stage->err) break;
      /* the next chunk's bytes into the page cache while this one is read, where this rank's
       * rows fill most of the span they lie in (a block split along x or y reads a fraction) */
      const int k1 = k + stage->per < n[2] ? k + stage->per : n[2], k2 = k1 + stage->per < n[2] ? k1 + stage->per : n[2];
      if (k2 > k1) {
        off_t lo, hi;
        planes_span(h, f, n, start, k1, k2, &lo, &hi);
        const double own = (double)n[0] * n[1] * (k2 - k1) * (double)sizeof(real_t);
        if ((double)(hi - lo) <= 2.0 * own) (void)posix_fadvise(fd, lo, hi - lo, POSIX_FADV_WILLNEED);
      }
    }
    int cnt = 0;
    off_t at = 0, next = 0;
    for (int j = 0; j < n[1] && !e; j++) {
      const off_t off = row_offset(h, f, start, j, k);
      if (cnt == ROWS_PER_CALL || (cnt > 0 && off != next)) {
        e = preadv_all(fd, iov, cnt, at);
        cnt = 0;
      }
      if (e) break;
      if (cnt == 0) at = off;
      iov[cnt].iov_base = host + fd_grid_index(g, 1, j + 1, k + 1);
      iov[cnt].iov_len = row;
      cnt++;
      next = off + (off_t)row;
    }
    if (!e && cnt > 0) e = preadv_all(fd, iov, cnt, at);
    if (!e && stage && (k + 1 == n[2] || (k + 1) % stage->per == 0)) stage_copy_chunk(stage, host, k / stage->per, 1);
    if (threaded) {
      pthread_mutex_lock(&p.lock);
      if (e)
        p.quit = 1;
      else
        p.ready = k + 1;
      pthread_cond_signal(&p.more);
      pthread_mutex_unlock(&p.lock);
    }
  }
  if (threaded) {
    pthread_mutex_lock(&p.lock); /* a copy failed before every plane was read */
    if (p.ready < n[2]) p.quit = 1;
    pthread_cond_signal(&p.more);
    pthread_mutex_unlock(&p.lock);
    pthread_join(hasher, NULL);
    pthread_cond_destroy(&p.more);
    pthread_mutex_destroy(&p.lock);
  } else if (!e) {
    hash_planes(&p, 0, n[2]);
  }
  return e;
}

/* One attempt at loading ck->from into v. FD_OK, or an agreed error: FD_ERR_USAGE for an
 * unreadable or corrupt file (another checkpoint may do), FD_ERR_RUNTIME. Collective. */
static int load_one(fd_checkpoints *ck, const fd_ckpt_view *v, be_stream compute, real_t *host)
{
  const fd_ckpt_header *h = &ck->h;
  const long long W = (long long)h->writers, nsums = (long long)h->fields * W + 1;
  uint64_t *sums = calloc((size_t)nsums, sizeof *sums), *table = calloc((size_t)nsums, sizeof *table);
  int err = sums && table ? FD_OK
                          : fd_set_error(FD_ERR_RUNTIME, "rank %d: --restart: out of host memory for %lld checksums", ck->rank, nsums);
  int fd = -1, e = 0;
  if (err == FD_OK && (fd = open(ck->from, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) e = errno ? errno : EIO;
  if (fd >= 0) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  for (int f = 0; f < (int)h->fields && err == FD_OK && !e; f++) {
    /* the field as filled (its ghosts and padding), the checkpoint's interior over it, chunk by
     * chunk beside the reading (stage_copy) */
    stage_copy stage;
    stage_begin(&stage, (real_t *)v->level[f], &ck->layout, compute, host);
    if (!stage.err) e = read_field(fd, h, f, &ck->layout, ck->n, ck->start, host, sums, &stage);
    err = stage_end(&stage);
  }
  /* the source's record (the same verdict on every rank): its owner reads it */
  const long long need = h->step + 1 < ck->run.hist ? h->step + 1 : ck->run.hist;
  ck->hist_lost = h->op == FD_OP_WAVE && ck->run.hist > 0 && h->hist_count < need;
  const int hist_read = h->op == FD_OP_WAVE && ck->run.hist > 0 && !ck->hist_lost;
  if (err == FD_OK && !e && hist_read && ck->hist_owner && v->hist) {
    /* checkpoint_create's buffer; an older checkpoint after a fallback holds no more values */
    const int own = h->hist_count > ck->rec_cap;
    real_t *rec = own ? malloc((size_t)h->hist_count * sizeof(real_t)) : ck->rec;
    if (!rec)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the --restart source record (%zu bytes): out of host "
                         "memory", ck->rank, (size_t)h->hist_count * sizeof(real_t));
    if (rec) e = ckpt_pread_all(fd, rec, (size_t)h->hist_count * sizeof(real_t), (off_t)h->hist_offset, NULL);
    if (rec && !e) {
      sums[nsums - 1] += ckpt_hash_run(rec, h->hist_count, 0, CK_SALT_HIST);
      if (be_memcpy_async(v->hist, rec, (size_t)need * sizeof(real_t), BE_COPY_H2D, compute) != BE_OK ||
          be_stream_sync(compute) != BE_OK)
        err = fd_backend_failed(__FILE__, __LINE__, "be_memcpy_async(H2D)");
    }
    if (own) free(rec);
  }
  if (err == FD_OK && !e && ck->rank == 0) e = ckpt_pread_all(fd, table, (size_t)nsums * 8, (off_t)h->table_offset, NULL);
  if (fd >= 0) close(fd);
  if (err == FD_OK && e)
    err = fd_set_error(FD_ERR_USAGE, "--restart: reading '%s' failed on rank %d: %s", ck->from, ck->rank, strerror(e));
  err = fd_agree(ck->cart, err);
  if (err == FD_OK) {
    /* every writer's block: the sum of its points' terms over the ranks that read them */
    if (MPI_Allreduce(MPI_IN_PLACE, sums, (int)nsums, MPI_UINT64_T, MPI_SUM, ck->cart) != MPI_SUCCESS ||
        MPI_Bcast(table, (int)nsums, MPI_UINT64_T, 0, ck->cart) != MPI_SUCCESS)
      err = fd_mpi_failed(__FILE__, __LINE__, "MPI_Allreduce(checksums)", MPI_ERR_OTHER);
    for (long long q = 0; q < nsums && err == FD_OK; q++) {
      if (q == nsums - 1 && !hist_read) break;
      if (sums[q] == table[q]) continue;
      if (q == nsums - 1) {
        err = fd_set_error(FD_ERR_USAGE, "--restart: '%s': the checksum of the source record does not match: the file "
                           "is corrupted", ck->from);
        break;
      }
      const int f = (int)(q / W), w = (int)(q % W), c[3] = {w % (int)h->procs[0], w / (int)h->procs[0] % (int)h->procs[1],
                                                            w / (int)(h->procs[0] * h->procs[1])};
      long long bn[3], bs[3];
      for (int d = 0; d < 3; d++) decomp_split(h->N[d], (int)h->procs[d], c[d], &bn[d], &bs[d]);
      err = fd_set_error(FD_ERR_USAGE, "--restart: '%s': the checksum of %s in block %d of the %lld ranks that wrote "
                         "it (x %lld..%lld, y %lld..%lld, z %lld..%lld) does not match: the file is corrupted", ck->from,
                         f == 0 ? (h->fields == 2 ? "level U1" : "the field") : "level U0", w, W, bs[0] + 1, bs[0] + bn[0],
                         bs[1] + 1, bs[1] + bn[1], bs[2] + 1, bs[2] + bn[2]);
    }
  }
  free(sums);
  free(table);
  return err;
}

int checkpoint_load(fd_checkpoints *ck, const fd_ckpt_view *v, be_stream compute)
{
  if (!ck->restart) return FD_OK;
  const size_t bytes = ck->layout.elems * sizeof(real_t);
  real_t *host = ck->host[0];
  int own = 0, err = FD_OK;
  if (!host && ck->run.fields > 0) {
    own = 1;
    if (be_host_alloc((void **)&host, bytes) != BE_OK)
      err = fd_set_error(FD_ERR_RUNTIME, "rank %d: --restart: cannot allocate %zu bytes of pinned memory: %s", ck->rank,
                         bytes, be_error_message());
  }
  FD_CALL(fd_agree(ck->cart, err));
  const double t0 = fd_now();
  for (;;) {
    err = load_one(ck, v, compute, host);
    if (err != FD_ERR_USAGE || !ck->fallback) break;
    /* a directory or auto: the previous checkpoint, if there is one */
    char reasons[FD_ERROR_MESSAGE_MAX];
    fd_copy_str(reasons, sizeof reasons, fd_error_message());
    int e = FD_OK;
    if (ck->rank == 0) {
      printf("fdmini: notice: %s; trying the previous checkpoint\n", reasons);
      fflush(stdout);
      ck->skipped++;
      char more[FD_ERROR_MESSAGE_MAX] = "";
      e = choose_next(ck, &ck->run, more, sizeof more);
      if (e == FD_OK && !ck->restart)
        e = fd_set_error(FD_ERR_USAGE, "--restart: no complete checkpoint in '%s' (%s%s%s)", ck->cand_dir, reasons,
                         more[0] ? "; " : "", more);
    }
    err = fd_agree(ck->cart, e);
    if (err == FD_OK) err = bcast_choice(ck, ck->cart);
    if (err != FD_OK) break;
  }
  if (own) (void)be_host_free(host);
  FD_CALL(err);
  if (ck->hist_lost) ck->run.hist = -1; /* its checkpoints keep none either */
  double t = fd_now() - t0;
  FD_MPI(MPI_Allreduce(&t, &ck->read_s, 1, MPI_DOUBLE, MPI_MAX, ck->cart));
  ck->read_bytes = (double)ck->h.file_bytes;
  return FD_OK;
}
