/* checkpoint_format.c - the file format of the checkpoints (checkpoint.h describes it;
 * checkpoint_format.h is its interface to the writer and the restart): the header's checksum,
 * filling and checking (valid, and continuing this run), the listing of a checkpoint
 * directory and whole reads and writes at an offset. No MPI, no GPU runtime: the writer
 * thread calls it too. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "checkpoint_format.h"
#include "fd_error.h"
#include "output.h"
#include "provenance.h"

_Static_assert(sizeof(fd_ckpt_header) % 8 == 0 && sizeof(fd_ckpt_header) <= FD_CKPT_HEADER_BYTES,
               "the checkpoint header must be whole 8-byte words within its 4096 bytes");

static const char ck_magic[8] = {'F', 'D', 'M', 'I', 'N', 'I', 'c', 'k'};
#define CK_BYTE_ORDER 0x0102030405060708ULL
#define CK_SALT_HEADER 0x68656164657221ULL

/* ---- checksums (the terms: checkpoint_format.h) ---- */

/* The header's checksum: its 8-byte words (hash as 0) as a run of values at indices 0, 1, ... */
static uint64_t header_hash(const fd_ckpt_header *h)
{
  fd_ckpt_header c = *h;
  c.hash = 0;
  uint64_t w[sizeof c / 8], sum = 0;
  memcpy(w, &c, sizeof c);
  for (size_t i = 0; i < sizeof c / 8; i++) sum += ckpt_mix64(w[i] + (uint64_t)i * CK_GOLDEN + CK_SALT_HEADER);
  return sum;
}

int ckpt_pread_all(int fd, void *buf, size_t len, off_t off, int *short_read)
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

int ckpt_pwrite_all(int fd, const void *buf, size_t len, off_t off)
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

int ckpt_list_dir(const char *dir, int clean, const char *keep, long long *steps, int max, int *count)
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
        if (!keep || strcmp(p, keep) != 0) unlink(p);
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

/* ---- the directory's lock ---- */

/* The lock file of dir into path[len]. */
static void lock_path(const char *dir, char *path, size_t len)
{
  snprintf(path, len, "%s/%s", dir, FD_CHECKPOINT_LOCK);
}

int ckpt_lock_dir(const char *dir, int *fd_out, int *nolock)
{
  char path[FD_PATH_MAX + 64];
  lock_path(dir, path, sizeof path);
  *fd_out = -1;
  *nolock = 0;
  for (int attempt = 0; attempt < 16; attempt++) {
    /* O_NONBLOCK: a FIFO under that name must not make rank 0 wait (and every rank with it) */
    int created = 1, fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
    if (fd < 0 && errno == EEXIST) {
      created = 0;
      fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      if (fd < 0 && errno == ENOENT) continue; /* removed by a run that just ended */
    }
    if (fd < 0) return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot open its lock '%s': %s", path, strerror(errno));
    struct stat own, named;
    if (fstat(fd, &own) != 0 || !S_ISREG(own.st_mode)) {
      close(fd);
      return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: its lock '%s' is not a regular file: remove it", path);
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK; /* the whole file */
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
      const int e = errno;
      if (e != EACCES && e != EAGAIN) { /* the file system takes no locks */
        if (created) unlink(path);
        close(fd);
        *nolock = e;
        return FD_OK;
      }
      char who[160];
      ssize_t r = pread(fd, who, sizeof who - 1, 0);
      close(fd);
      who[r > 0 ? r : 0] = '\0';
      who[strcspn(who, "\n")] = '\0';
      return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir '%s' is in use by another run (%s%sits lock: '%s'): two "
                          "runs in one directory overwrite and remove each other's checkpoints: let that run end, "
                          "or choose another directory", dir, who, who[0] ? "; " : "", path);
    }
    /* the lock is on the file of that name only if no run removed it (at its end) since we
     * opened it; else the next run would create another and lock that one too */
    if (stat(path, &named) != 0 || named.st_dev != own.st_dev || named.st_ino != own.st_ino) {
      close(fd);
      continue;
    }
    /* who holds it, for the line of a run refused */
    char who[160], host[64] = "?", when[32] = "";
    if (gethostname(host, sizeof host) != 0) strcpy(host, "?");
    host[sizeof host - 1] = '\0';
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    int n = snprintf(who, sizeof who, "pid %ld on %s since %s\n", (long)getpid(), host, when);
    if (ftruncate(fd, 0) == 0 && n > 0) (void)ckpt_pwrite_all(fd, who, strlen(who), 0);
    *fd_out = fd;
    return FD_OK;
  }
  return fd_set_error(FD_ERR_USAGE, "--checkpoint-dir: cannot lock '%s': other runs keep replacing it", path);
}

void ckpt_unlock_dir(const char *dir, int fd)
{
  char path[FD_PATH_MAX + 64];
  lock_path(dir, path, sizeof path);
  /* removed before it is unlocked: a run that opened it meanwhile finds it locked, or, once it
   * is unlocked, no longer under that name (ckpt_lock_dir then makes a new one) */
  unlink(path);
  close(fd);
}

/* ---- the header ---- */

void ckpt_fill_header(const fd_checkpoints *ck, long long step, long long hist_n, fd_ckpt_header *h)
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
  fd_copy_str(h->commit, sizeof h->commit, fdmini_git_commit);
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
  /* the source record holds at most step + 1 values: its length sizes the restart's buffer */
  int bad = h->fields > FD_CKPT_FIELDS_MAX || h->writers < 1 || h->step < 1 || h->hist_count < -1 ||
            h->hist_count - 1 > h->step ||
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

int ckpt_read_header(const char *path, const fd_ckpt_run *r, fd_ckpt_header *h, int *incompatible)
{
  *incompatible = 0;
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer (and every other rank with
   * it); a regular file ignores the flag */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(errno));
  struct stat st;
  const int stat_e = fstat(fd, &st) != 0 ? errno : 0;
  if (stat_e || !S_ISREG(st.st_mode)) {
    close(fd);
    if (stat_e) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(stat_e));
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' is not a regular file", path);
  }
  int short_read = 0, e = ckpt_pread_all(fd, h, sizeof *h, 0, &short_read);
  close(fd);
  if (e && short_read)
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' holds %lld bytes, less than a checkpoint header: it is "
                        "truncated or not a checkpoint", path, (long long)st.st_size);
  if (e) return fd_set_error(FD_ERR_USAGE, "--restart: cannot read '%s': %s", path, strerror(e));
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
    return fd_set_error(FD_ERR_USAGE, "--restart: '%s' holds %lld bytes, expected %llu: %s", path, (long long)st.st_size,
                        (unsigned long long)h->file_bytes,
                        (uint64_t)st.st_size < h->file_bytes
                            ? "it is truncated (the run that wrote it was killed, or the file system dropped data)"
                            : "something was appended to it: it is corrupted");
  return FD_OK;
}
