/* checkpoint.c - checkpoints in the background and the restart from them (checkpoint.h): the
 * file format and its checksums, the choice of the checkpoint to continue, the writer thread,
 * the stop polls and the signal handlers. Every MPI call is made on the solver's thread. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* preadv, pwritev (Linux, the BSDs, macOS) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "decomp.h"
#include "fd_error.h"
#include "output.h"

_Static_assert(sizeof(fd_ckpt_header) % 8 == 0 && sizeof(fd_ckpt_header) <= FD_CKPT_HEADER_BYTES,
               "the checkpoint header must be whole 8-byte words within its 4096 bytes");

static const char ck_magic[8] = {'F', 'D', 'M', 'I', 'N', 'I', 'c', 'k'};
#define CK_BYTE_ORDER 0x0102030405060708ULL
#define CK_GOLDEN 0x9e3779b97f4a7c15ULL
#define CK_SALT_HEADER 0x68656164657221ULL
#define CK_SALT_HIST 0x686973746f7279ULL

static double mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- checksums ---- */

/* splitmix64's finalizer: a bijection of the 64-bit words that mixes every input bit into
 * every output bit. */
static inline uint64_t mix64(uint64_t z)
{
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t value_bits(real_t x)
{
  if (sizeof(real_t) == 8) {
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
  }
  uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}

/* The sum of the terms of count values at global indices g0, g0 + 1, ... (a run of a row). */
static uint64_t hash_run(const real_t *v, long long count, long long g0, uint64_t salt)
{
  uint64_t sum = 0, key = (uint64_t)g0 * CK_GOLDEN + salt;
  for (long long i = 0; i < count; i++, key += CK_GOLDEN) sum += mix64(value_bits(v[i]) + key);
  return sum;
}

static uint64_t field_salt(int f) { return (uint64_t)(f + 1) * 0x51ed270b27f1c3a5ULL; }

/* The header's checksum: its 8-byte words (hash as 0) as a run of values at indices 0, 1, ... */
static uint64_t header_hash(const fd_ckpt_header *h)
{
  fd_ckpt_header c = *h;
  c.hash = 0;
  uint64_t w[sizeof c / 8], sum = 0;
  memcpy(w, &c, sizeof c);
  for (size_t i = 0; i < sizeof c / 8; i++) sum += mix64(w[i] + (uint64_t)i * CK_GOLDEN + CK_SALT_HEADER);
  return sum;
}

/* The block c of the split of N points over P (decomp_split) holding 0-based index g. */
static int block_of(long long N, int P, long long g)
{
  const long long base = N / P, rem = N % P;
  return (int)(g < rem * (base + 1) ? g / (base + 1) : rem + (g - rem * (base + 1)) / base);
}

/* ---- names and files (the names themselves: output.c) ---- */

const char *checkpoint_signal_name(int sig)
{
  static char buf[32];
  if (sig == SIGTERM) return "SIGTERM";
  if (sig == SIGUSR1) return "SIGUSR1";
  snprintf(buf, sizeof buf, "signal %d", sig);
  return buf;
}

/* pread/pwrite of all len bytes at off: 0 or an errno (a read that ends early: EIO, flagged
 * in *short_read when given). */
static int pread_all(int fd, void *buf, size_t len, off_t off, int *short_read)
{
  char *p = buf;
  while (len > 0) {
    ssize_t r = pread(fd, p, len, off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (r == 0) {
      if (short_read) *short_read = 1;
      return EIO;
    }
    p += r;
    off += r;
    len -= (size_t)r;
  }
  return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t w = pwrite(fd, p, len, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (w == 0) return ENOSPC;
    p += w;
    off += w;
    len -= (size_t)w;
  }
  return 0;
}

/* The steps of the checkpoints in dir (final names), newest first, at most max of them, into
 * steps; *count all of them (may exceed max). Temporary files of killed runs are removed when
 * `clean`. errno or 0. */
static int list_dir(const char *dir, int clean, long long *steps, int max, int *count)
{
  *count = 0;
  DIR *d = opendir(dir);
  if (!d) return errno ? errno : EIO;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    long long step;
    int tmp;
    if (!output_is_checkpoint_name(e->d_name, &step, &tmp)) continue;
    if (tmp) {
      if (clean) {
        char p[FD_PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
      }
      continue;
    }
    /* insertion into the descending list of the newest `max` */
    int at = n < max ? n : max;
    while (at > 0 && steps[at - 1] < step) {
      if (at < max) steps[at] = steps[at - 1];
      at--;
    }
    if (at < max) steps[at] = step;
    if (n < max) n++;
    (*count)++;
  }
  closedir(d);
  return 0;
}

/* ---- the header ---- */

static void fill_header(const fd_checkpoints *ck, long long step, long long hist_n, fd_ckpt_header *h)
{
  const fd_ckpt_run *r = &ck->run;
  memset(h, 0, sizeof *h);
  memcpy(h->magic, ck_magic, 8);
  h->version = FD_CKPT_VERSION;
  h->byte_order = CK_BYTE_ORDER;
  h->real_bytes = sizeof(real_t);
  h->op = (uint64_t)r->op;
  for (int d = 0; d < 3; d++) {
    h->N[d] = r->N[d];
    h->src[d] = r->src[d];
    h->procs[d] = ck->P[d];
  }
  h->vel[0] = r->vel[0];
  h->vel[1] = r->vel[1];
  h->iface = r->iface;
  h->ricker_hz = r->ricker_hz;
  h->fault = (uint64_t)r->fault;
  h->step = step;
  h->run_steps = r->total;
  h->fields = (uint64_t)r->fields;
  h->hist_count = r->hist < 0 ? -1 : hist_n;
  h->writers = (uint64_t)ck->size;
  const long long es = (long long)sizeof(real_t), pts = r->N[0] * r->N[1] * r->N[2];
  h->table_offset = FD_CKPT_HEADER_BYTES;
  const long long table = 8LL * ((long long)r->fields * ck->size + 1);
  h->data_offset = (uint64_t)((FD_CKPT_HEADER_BYTES + table + 4095) / 4096 * 4096);
  h->hist_offset = h->data_offset + (uint64_t)(r->fields * pts * es);
  h->file_bytes = h->hist_offset + (uint64_t)((h->hist_count > 0 ? h->hist_count : 0) * es);
  h->halo_width = r->halo_width;
  h->fuse = r->fuse;
  fd_copy_str(h->backend, sizeof h->backend, ck->backend);
  fd_copy_str(h->version_str, sizeof h->version_str, FDMINI_VERSION);
  fd_copy_str(h->commit, sizeof h->commit, FDMINI_GIT_COMMIT);
  time_t now = time(NULL);
  strftime(h->created, sizeof h->created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  h->hash = header_hash(h);
}

static const char *op_name(uint64_t op) { return op < FD_OP_COUNT ? fd_op_name((fd_op)op) : "?"; }

/* The run a header describes, in words, into buf. */
static void describe(const fd_ckpt_header *h, char *buf, size_t len)
{
  int n = snprintf(buf, len, "--op %s on %lld x %lld x %lld in %s", op_name(h->op), (long long)h->N[0],
                   (long long)h->N[1], (long long)h->N[2], h->real_bytes == 8 ? "double" : (h->real_bytes == 4 ? "float" : "?"));
  if (h->op == FD_OP_WAVE && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " (velocity %g,%g with the interface after plane %lld, source %lld,%lld,%lld, Ricker peak %g)",
             h->vel[0], h->vel[1], (long long)h->iface, (long long)h->src[0], (long long)h->src[1],
             (long long)h->src[2], h->ricker_hz);
}

/* Checks that *h is a checkpoint header this build reads: FD_OK, or FD_ERR_USAGE with why. */
static int header_valid(const fd_ckpt_header *h, const char *path)
{
  if (memcmp(h->magic, ck_magic, 8) != 0)
    return fd_set_error(FD_ERR_USAGE, "'%s' is not an fdmini checkpoint (no FDMINIck header)", path);
  if (h->byte_order != CK_BYTE_ORDER)
    return fd_set_error(FD_ERR_USAGE, "'%s' was written on a machine of the other byte order", path);
  if (h->version != FD_CKPT_VERSION)
    return fd_set_error(FD_ERR_USAGE, "'%s' is a checkpoint of format version %llu; this fdmini reads version %d",
                        path, (unsigned long long)h->version, FD_CKPT_VERSION);
  if (header_hash(h) != h->hash)
    return fd_set_error(FD_ERR_USAGE, "'%s': the checksum of its header does not match: the file is corrupted", path);
  int bad = h->fields > FD_CKPT_FIELDS_MAX || h->writers < 1 || h->step < 1 ||
            (uint64_t)h->procs[0] * (uint64_t)h->procs[1] * (uint64_t)h->procs[2] != h->writers;
  for (int d = 0; d < 3; d++) bad |= h->N[d] < 1 || h->procs[d] < 1 || h->procs[d] > h->N[d];
  if (bad) return fd_set_error(FD_ERR_USAGE, "'%s': its header holds impossible values: the file is corrupted", path);
  return FD_OK;
}

/* Checks that the checkpoint *h continues the run r: FD_OK or FD_ERR_USAGE naming both. */
static int header_compatible(const fd_ckpt_header *h, const fd_ckpt_run *r, const char *path)
{
  fd_ckpt_header mine;
  memset(&mine, 0, sizeof mine);
  mine.op = (uint64_t)r->op;
  mine.real_bytes = sizeof(real_t);
  for (int d = 0; d < 3; d++) {
    mine.N[d] = r->N[d];
    mine.src[d] = r->src[d];
  }
  mine.vel[0] = r->vel[0];
  mine.vel[1] = r->vel[1];
  mine.iface = r->iface;
  mine.ricker_hz = r->ricker_hz;
  int same = h->op == mine.op && h->real_bytes == mine.real_bytes;
  for (int d = 0; d < 3; d++) same &= h->N[d] == mine.N[d];
  if (same && r->op == FD_OP_WAVE) {
    same &= h->vel[0] == r->vel[0] && h->vel[1] == r->vel[1] && h->iface == r->iface && h->ricker_hz == r->ricker_hz;
    for (int d = 0; d < 3; d++) same &= h->src[d] == r->src[d];
  }
  char a[320], b[320];
  if (!same) {
    describe(h, a, sizeof a);
    describe(&mine, b, sizeof b);
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' is a checkpoint of %s, but this run is %s: a checkpoint "
                        "continues only the run that wrote it", path, a, b);
  }
  if (h->fault != (uint64_t)r->fault)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' was written with %s planted fault than this run "
                        "(--test-inject-fault=velocity|source change the steps)", path, h->fault ? "a" : "no");
  if (h->fields != (uint64_t)r->fields)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' holds %llu levels, this operator needs %d: the file is corrupted",
                        path, (unsigned long long)h->fields, r->fields);
  if (h->step >= r->total)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' is at step %lld, and this run ends at step %lld (--warmup + "
                        "--iters, counted from the start of the run): nothing left to run; give more --iters to "
                        "continue it", path, (long long)h->step, r->total);
  return FD_OK;
}

/* Rank 0: reads and checks the header of `path` (validity, compatibility with r, size). FD_OK;
 * FD_ERR_USAGE with *incompatible = 1 (the file belongs to another run: never skipped), or with
 * *incompatible = 0 (unreadable, truncated, corrupted: a directory's older one may do). */
static int read_header(const char *path, const fd_ckpt_run *r, fd_ckpt_header *h, int *incompatible)
{
  *incompatible = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(errno));
  struct stat st;
  int short_read = 0, e = fstat(fd, &st) != 0 ? errno : pread_all(fd, h, sizeof *h, 0, &short_read);
  close(fd);
  if (e && short_read)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' holds %lld bytes, less than a checkpoint header: it is "
                        "truncated or not a checkpoint", path, (long long)st.st_size);
  if (e) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(e));
  if (!S_ISREG(st.st_mode)) return fd_set_error(FD_ERR_USAGE, "--restart: '%s' is not a regular file", path);
  char why[FD_ERROR_MESSAGE_MAX];
  if (header_valid(h, path) != FD_OK) {
    fd_copy_str(why, sizeof why, fd_error_message());
    return fd_set_error(FD_ERR_USAGE, "--restart: %s", why);
  }
  if (header_compatible(h, r, path) != FD_OK) {
    *incompatible = 1;
    return FD_ERR_USAGE;
  }
  if ((uint64_t)st.st_size != h->file_bytes)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' holds %lld bytes, expected %llu: it is truncated (the run "
                        "that wrote it was killed, or the file system dropped data)", path, (long long)st.st_size,
                        (unsigned long long)h->file_bytes);
  return FD_OK;
}

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
    if (read_header(path, r, &ck->h, &incompatible) == FD_OK) {
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

/* Rank 0's part of checkpoint_prepare. */
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
    int e = list_dir(ck->dir, 1, dir_steps, FD_CKPT_CANDIDATES, &have);
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
    int e = list_dir(dir, 0, ck->cand, FD_CKPT_CANDIDATES, &n);
    if (e) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read the directory '%s': %s", path, strerror(e));
    strcpy(ck->cand_dir, dir);
    ck->ncand = n < FD_CKPT_CANDIDATES ? n : FD_CKPT_CANDIDATES;
    FD_CALL(choose_next(ck, r, reasons, sizeof reasons));
    if (!ck->restart)
      return fd_set_error(FD_ERR_USAGE, "--restart: no complete checkpoint in the directory '%s'%s%s%s", path,
                          reasons[0] ? " (" : "", reasons, reasons[0] ? ")" : ": it holds no ckpt_STEP.fdmini");
  } else {
    int incompatible = 0;
    FD_CALL(read_header(dir, r, &ck->h, &incompatible));
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
  FD_CALL(fd_agree(comm, err));
  return bcast_choice(ck, comm);
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
        sum += hash_run(first + g->sxy * k + g->sx * j2, ck->n[0], g0, field_salt(f));
      }
    j->sum[f] = sum;
  }
  j->hist = ck->hist_owner && ck->hist_n > 0 ? hash_run(ck->hist_host, ck->hist_n, 0, CK_SALT_HIST) : 0;
}

static void *hash_main(void *arg)
{
  hash_blocks(arg);
  return NULL;
}

/* Threads that write a rank's rows of a checkpoint: one thread's pwrites of a 1 GB checkpoint
 * into tmpfs or the page cache ran at about 2 GB/s on the H200 node, under what a checkpoint
 * every 1000 steps at 512^3 needs (bench/results/README.md, "Checkpoints"). */
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
    e = pwrite_all(fd, block, sizeof block, 0);
    /* the table's last slot when no record is written, and the zeros before the data: the file
     * ends at file_bytes whatever it holds */
    const uint64_t zero = 0, table_end = h->table_offset + 8 * ((uint64_t)ck->fields * ck->size + 1);
    if (!e && h->hist_count <= 0) e = pwrite_all(fd, &zero, 8, (off_t)(table_end - 8));
    if (!e && h->data_offset > table_end) {
      memset(block, 0, sizeof block);
      e = pwrite_all(fd, block, (size_t)(h->data_offset - table_end), (off_t)table_end);
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
  if (!e && record) e = pwrite_all(fd, ck->hist_host, (size_t)(ck->hist_n * es), (off_t)h->hist_offset);
  if (threaded)
    pthread_join(hasher, NULL);
  else
    hash_blocks(&hj);
  for (int f = 0; f < ck->fields && !e; f++)
    e = pwrite_all(fd, &hj.sum[f], 8, (off_t)(h->table_offset + 8 * ((uint64_t)f * ck->size + (uint64_t)ck->block)));
  if (!e && record) e = pwrite_all(fd, &hj.hist, 8, (off_t)(h->table_offset + 8 * (uint64_t)ck->fields * ck->size));
  const double t0 = mono_ms();
  if (!e && fsync(fd) != 0) e = errno ? errno : EIO;
  *sync_ms = mono_ms() - t0;
  if (close(fd) != 0 && !e) e = errno ? errno : EIO;
  return e;
}

/* Rank 0's writer thread after the rename of the newest checkpoint `keep`: removes every other
 * checkpoint of the directory but the newest one before it (the last two are kept; newer ones
 * are left from a run this one continues from an older checkpoint, and it redoes their steps).
 * Off the solver's thread: removing a file of gigabytes can take a file system a third of a
 * second (bench/results/README.md, "Checkpoints"). */
static void prune(fd_checkpoints *ck, long long keep)
{
  long long steps[FD_CKPT_CANDIDATES * 4];
  int n = 0;
  if (list_dir(ck->dir, 0, steps, (int)(sizeof steps / sizeof steps[0]), &n) != 0) return;
  if (n > (int)(sizeof steps / sizeof steps[0])) n = (int)(sizeof steps / sizeof steps[0]);
  long long prev = -1;
  for (int q = 0; q < n; q++)
    if (steps[q] < keep && steps[q] > prev) prev = steps[q];
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
      const long long keep = ck->prune_keep;
      ck->prune_due = 0;
      pthread_mutex_unlock(&ck->lock);
      const double t0 = mono_ms();
      prune(ck, keep);
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
  for (int d = 0; d < 3; d++) bc[d] = block_of(ck->run.N[d], ck->P[d], ck->start[d]);
  ck->block = bc[0] + ck->P[0] * (bc[1] + ck->P[1] * bc[2]);
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
  fill_header(ck, v->step, hist_n, &ck->head); /* every writer needs its offsets */
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
  if (!v->measure) {
    /* test only: a signal or a SIGKILL on one rank at a chosen step */
    const fd_test_event *ts = &ck->test_signal, *tk = &ck->test_kill;
    if (ts->rank == ck->rank && !ck->signal_raised && v->step >= ts->step) {
      ck->signal_raised = 1;
      raise(ts->what);
    }
    if (tk->what == FD_TEST_AT_PASS && tk->rank == ck->rank && v->step >= tk->step) raise(SIGKILL);
    if (ck->every && v->step % ck->every == 0) {
      FD_CALL(complete(ck)); /* one checkpoint in flight at a time */
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
    const int wz = block_of(N[2], (int)h->procs[2], gz);
    for (int j = 0; j < p->n[1]; j++) {
      const long long gy = p->start[1] + j;
      const int wy = block_of(N[1], W1, gy);
      const real_t *r = p->host + fd_grid_index(p->g, 1, j + 1, k + 1);
      for (long long x = p->start[0]; x < p->start[0] + p->n[0];) {
        const int wx = block_of(N[0], W0, x);
        long long bn, bs;
        decomp_split(N[0], W0, wx, &bn, &bs);
        long long end = bs + bn < p->start[0] + p->n[0] ? bs + bn : p->start[0] + p->n[0];
        const long long w = wx + (long long)W0 * (wy + (long long)W1 * wz);
        p->sums[(long long)p->f * (long long)h->writers + w] +=
            hash_run(r + (x - p->start[0]), end - x, (gz * N[1] + gy) * N[0] + x, field_salt(p->f));
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
  if (err == FD_OK && (fd = open(ck->from, O_RDONLY | O_CLOEXEC)) < 0) e = errno ? errno : EIO;
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
    real_t *rec = malloc((size_t)h->hist_count * sizeof(real_t));
    if (!rec) err = fd_set_error(FD_ERR_RUNTIME, "rank %d: --restart: out of host memory for the source record", ck->rank);
    if (rec) e = pread_all(fd, rec, (size_t)h->hist_count * sizeof(real_t), (off_t)h->hist_offset, NULL);
    if (rec && !e) {
      sums[nsums - 1] += hash_run(rec, h->hist_count, 0, CK_SALT_HIST);
      if (be_memcpy_async(v->hist, rec, (size_t)need * sizeof(real_t), BE_COPY_H2D, compute) != BE_OK ||
          be_stream_sync(compute) != BE_OK)
        err = fd_backend_failed(__FILE__, __LINE__, "be_memcpy_async(H2D)");
    }
    free(rec);
  }
  if (err == FD_OK && !e && ck->rank == 0) e = pread_all(fd, table, (size_t)nsums * 8, (off_t)h->table_offset, NULL);
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
