/* output.c - output files that are complete or absent (output.h): their names (temporary ones,
 * the snapshots'), the checks of the targets before the run, checked writes, size checks,
 * commit by rename. */
#define _XOPEN_SOURCE 700 /* realpath */
#define _DEFAULT_SOURCE   /* pwritev (Linux, the BSDs, macOS) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fd_error.h"
#include "output.h"

static const char *file_kind(mode_t m)
{
  if (S_ISFIFO(m)) return "FIFO";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISDIR(m)) return "directory";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISLNK(m)) return "symbolic link";
  return "special file";
}

/* The absolute name of `name` (an existing file or directory, or a new one in an existing
 * directory), symbolic links resolved, into out (FD_PATH_MAX). 0; -1 where its directory
 * cannot be resolved (errno says why); -2 where the name is empty or too long. */
static int resolve_lexical(const char *name, char *out)
{
  char *real = realpath(name, NULL);
  if (real) {
    const int ok = strlen(real) < FD_PATH_MAX;
    if (ok) strcpy(out, real);
    free(real);
    return ok ? 0 : -2;
  }
  char dir[FD_PATH_MAX];
  size_t len = strlen(name);
  while (len > 1 && name[len - 1] == '/') len--; /* "dir/" */
  const char *slash = NULL;
  for (size_t i = 0; i < len; i++)
    if (name[i] == '/') slash = name + i;
  const char *base = slash ? slash + 1 : name;
  const int blen = (int)(len - (size_t)(base - name));
  if (blen == 0 || len >= FD_PATH_MAX) return -2;
  if (!slash) strcpy(dir, ".");
  else if (slash == name) strcpy(dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - name), name);
  real = realpath(dir, NULL);
  if (!real) return -1;
  const int n = snprintf(out, FD_PATH_MAX, "%s%s%.*s", real, strcmp(real, "/") ? "/" : "", blen, base);
  free(real);
  return n < 0 || n >= FD_PATH_MAX ? -2 : 0;
}

/* The resolved final name of `name` into out (FD_PATH_MAX): an existing target must be a
 * regular file we may write (symbolic links followed: the file they point to is the one
 * replaced); a new one gets its directory resolved. FD_OK or FD_ERR_USAGE. */
static int resolve_target(const char *opt, const char *name, char *out)
{
  struct stat st;
  char *real = NULL;
  if (lstat(name, &st) == 0) {
    if (stat(name, &st) != 0)
      return fd_set_error(FD_ERR_USAGE, "%s: '%s' is a symbolic link to nothing (%s)", opt, name, strerror(errno));
    if (!S_ISREG(st.st_mode))
      return fd_set_error(FD_ERR_USAGE, "%s: '%s' is a %s, not a regular file: name a new file or a regular one "
                          "(it is replaced only when the run succeeds)", opt, name, file_kind(st.st_mode));
    if (access(name, W_OK) != 0)
      return fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s': %s", opt, name, strerror(errno));
    real = realpath(name, NULL);
    if (!real) return fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s': %s", opt, name, strerror(errno));
    int too_long = strlen(real) >= FD_PATH_MAX;
    if (!too_long) strcpy(out, real);
    free(real);
    return too_long ? fd_set_error(FD_ERR_USAGE, "%s: '%s': name too long once resolved", opt, name) : FD_OK;
  }
  if (errno != ENOENT) return fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s': %s", opt, name, strerror(errno));
  /* a new file: its directory must exist */
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    return fd_set_error(FD_ERR_USAGE, "%s: '%s' names a directory, expected a file name", opt, name);
  const int r = resolve_lexical(name, out);
  if (r == -1) return fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s': %s", opt, name, strerror(errno));
  if (r != 0) return fd_set_error(FD_ERR_USAGE, "%s: '%s': name too long once resolved", opt, name);
  return FD_OK;
}

/* Proves that the temporary file can be created: creates it (new) and removes it. */
static int probe_tmp(const fd_output *out, const char *name)
{
  int fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s': %s", out->opt, name, strerror(errno));
  close(fd);
  unlink(out->tmp);
  return FD_OK;
}

int output_tmp_name(const char *final, long tag, char *tmp, size_t len)
{
  int n = snprintf(tmp, len, "%s.%ld.tmp", final, tag);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int output_snapshot_name(const char *dir, long long step, char *out, size_t len)
{
  int n = dir ? snprintf(out, len, "%s/snap_%06lld.raw", dir, step) : snprintf(out, len, "snap_%06lld.raw", step);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int output_is_snapshot_name(const char *base)
{
  const char *p;
  if (strncmp(base, FD_SNAPSHOT_XDMF, strlen(FD_SNAPSHOT_XDMF)) == 0) {
    p = base + strlen(FD_SNAPSHOT_XDMF);
  } else {
    if (strncmp(base, "snap_", 5) != 0) return 0;
    p = base + 5;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    if (strncmp(p, ".raw", 4) != 0) return 0;
    p += 4;
  }
  if (*p == '\0') return 1;
  /* a temporary name: .DIGITS.tmp */
  if (*p++ != '.' || *p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') p++;
  return strcmp(p, ".tmp") == 0;
}

void output_checkpoint_path(char *out, size_t len, const char *dir, long long step)
{
  snprintf(out, len, "%s/ckpt_%010lld.fdmini", dir, step);
}

int output_is_checkpoint_name(const char *base, long long *step, int *tmp)
{
  if (strncmp(base, "ckpt_", 5) != 0) return 0;
  const char *p = base + 5;
  long long v = 0;
  if (*p < '0' || *p > '9') return 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (0x7fffffffffffffffLL - 9) / 10) return 0;
    v = v * 10 + (*p - '0');
  }
  /* a final name is the one output_checkpoint_path gives its step, the name the restart and the
   * removal of older checkpoints open: ten digits, or more without a leading zero */
  const long digits = (long)(p - (base + 5));
  const int canonical = digits == 10 || (digits > 10 && base[5] != '0');
  if (strncmp(p, ".fdmini", 7) != 0) return 0;
  p += 7;
  int t = 0;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    if (strcmp(p, ".tmp") != 0) return 0;
    t = 1;
  } else if (*p || !canonical) {
    return 0;
  }
  if (step) *step = v;
  if (tmp) *tmp = t;
  return 1;
}

/* Prepares one output named `name` for option opt ("" name: none). */
static int prepare(fd_output *out, const char *opt, const char *name, long tag)
{
  memset(out, 0, sizeof *out);
  if (!name[0]) return FD_OK;
  snprintf(out->opt, sizeof out->opt, "%s", opt);
  FD_CALL(resolve_target(opt, name, out->path));
  if (output_tmp_name(out->path, tag, out->tmp, FD_PATH_MAX) != 0)
    return fd_set_error(FD_ERR_USAGE, "%s: '%s': name too long once resolved", opt, name);
  return probe_tmp(out, name);
}

/* 1 when `path` (resolved) lies in the directory `dir` (resolved) under a name the
 * checkpoints use (their lock's included). */
static int is_checkpoint_file(const char *path, const char *dir)
{
  const char *slash = strrchr(path, '/');
  size_t len = (size_t)(slash - path);
  if (len == 0) len = 1; /* "/name" */
  return strlen(dir) == len && strncmp(path, dir, len) == 0 &&
         (output_is_checkpoint_name(slash + 1, NULL, NULL) || strcmp(slash + 1, FD_CHECKPOINT_LOCK) == 0);
}

/* 1 when `path` (resolved) lies in the directory `dir` (resolved) under a name the snapshots
 * use. */
static int is_snapshot_file(const char *path, const char *dir)
{
  const char *slash = strrchr(path, '/');
  size_t len = (size_t)(slash - path);
  if (len == 0) len = 1; /* "/name" */
  return strlen(dir) == len && strncmp(path, dir, len) == 0 && output_is_snapshot_name(slash + 1);
}

/* --snapshot-dir: created if missing (one level; *made = 1 when this call created it), proved
 * writable with a probe file, and nothing in it under a snapshot file name that is not a
 * regular file (the snapshots would replace it, or a FIFO there would block the open). Fills
 * real (resolved). */
static int check_snapshot_dir(const char *dir, long tag, char *real_out, int *made)
{
  char probe[FD_PATH_MAX + 64];
  *made = mkdir(dir, 0777) == 0;
  if (!*made && errno != EEXIST)
    return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot create '%s': %s", dir, strerror(errno));
  snprintf(probe, sizeof probe, "%s/.fdmini-write-probe-%ld", dir, tag);
  int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot write into '%s': %s", dir, strerror(errno));
  close(fd);
  unlink(probe);
  char *real = realpath(dir, NULL);
  if (!real || strlen(real) >= FD_PATH_MAX) {
    free(real);
    return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot resolve '%s'", dir);
  }
  strcpy(real_out, real);
  free(real);
  DIR *d = opendir(dir);
  if (!d) return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot read '%s': %s", dir, strerror(errno));
  int err = FD_OK;
  for (struct dirent *e; err == FD_OK && (e = readdir(d));) {
    if (!output_is_snapshot_name(e->d_name)) continue;
    char path[FD_PATH_MAX + 300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
      err = fd_set_error(FD_ERR_USAGE, "--snapshot-dir: '%s' is a %s, not a regular file: the snapshots would "
                         "replace it; remove it or choose another directory", path, file_kind(st.st_mode));
  }
  closedir(d);
  return err;
}

/* output_check_run but for the removal of a --snapshot-dir it made (*made) on refusal. */
static int check_run(const fd_options *o, long tag, fd_output *json, fd_output *dump, int *made)
{
  char snapdir[FD_PATH_MAX] = "";
  memset(json, 0, sizeof *json);
  memset(dump, 0, sizeof *dump);
  if (o->snapshot_dir[0]) FD_CALL(check_snapshot_dir(o->snapshot_dir, tag, snapdir, made));
  FD_CALL(prepare(json, "--json", o->json, tag));
  FD_CALL(prepare(dump, "--dump", o->dump, tag));
  if (json->opt[0] && dump->opt[0] && strcmp(json->path, dump->path) == 0)
    return fd_set_error(FD_ERR_USAGE, "--json and --dump name the same file '%s': give two names", json->path);
  const fd_output *both[2] = {json, dump};
  for (int q = 0; q < 2 && snapdir[0]; q++)
    if (both[q]->opt[0] && is_snapshot_file(both[q]->path, snapdir))
      return fd_set_error(FD_ERR_USAGE, "%s '%s' is a file the snapshots write in --snapshot-dir: choose another name",
                          both[q]->opt, both[q]->path);
  /* --checkpoint-dir (which the checkpoints create if missing, after this check) and the
   * checkpoints' names in it: a restart would read the file and their pruning remove it */
  char ckdir[FD_PATH_MAX] = "", from[FD_PATH_MAX] = "";
  if (o->checkpoint_dir[0] && resolve_lexical(o->checkpoint_dir, ckdir) != 0) ckdir[0] = '\0';
  for (int q = 0; q < 2 && ckdir[0]; q++) {
    if (!both[q]->opt[0]) continue;
    if (strcmp(both[q]->path, ckdir) == 0)
      return fd_set_error(FD_ERR_USAGE, "%s '%s' is the --checkpoint-dir: choose another name", both[q]->opt,
                          both[q]->path);
    if (is_checkpoint_file(both[q]->path, ckdir))
      return fd_set_error(FD_ERR_USAGE, "%s '%s' is a file the checkpoints write in --checkpoint-dir: choose another name",
                          both[q]->opt, both[q]->path);
  }
  /* --restart PATH: the file it reads, or the checkpoints' names in the directory it reads */
  struct stat st;
  if (o->restart == FD_RESTART_PATH && stat(o->restart_path, &st) == 0 && resolve_lexical(o->restart_path, from) == 0)
    for (int q = 0; q < 2; q++) {
      if (!both[q]->opt[0]) continue;
      if (S_ISDIR(st.st_mode) ? is_checkpoint_file(both[q]->path, from) : strcmp(both[q]->path, from) == 0)
        return fd_set_error(FD_ERR_USAGE, "%s '%s' is %s --restart reads: choose another name", both[q]->opt,
                            both[q]->path, S_ISDIR(st.st_mode) ? "a checkpoint of the directory" : "the checkpoint");
    }
  return FD_OK;
}

int output_check_run(const fd_options *o, long tag, fd_output *json, fd_output *dump, int *made_snapdir)
{
  *made_snapdir = 0;
  const int err = check_run(o, tag, json, dump, made_snapdir);
  if (err != FD_OK) {
    output_remove_made_dir(o->snapshot_dir, *made_snapdir);
    *made_snapdir = 0;
  }
  return err;
}

void output_remove_made_dir(const char *dir, int made)
{
  if (made && dir[0]) (void)rmdir(dir); /* fails, and removes nothing, unless it is empty */
}

int output_write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (w == 0) return ENOSPC;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* pwritev until every byte of iov[0..cnt) is at off; 0 or an errno. Consumes iov. */
static int pwritev_all(int fd, struct iovec *iov, int cnt, off_t off)
{
  while (cnt > 0) {
    ssize_t w = pwritev(fd, iov, cnt, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (w == 0) return ENOSPC;
    off += w;
    while (cnt > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

/* rows per pwritev call (Linux and the BSDs accept 1024) */
enum { ROWS_PER_CALL = 512 };

int output_write_block(int fd, const real_t *first, long long sy, long long sz, const int n[3],
                       const long long start[3], const long long N[3])
{
  return output_write_block_at(fd, 0, first, sy, sz, n, start, N);
}

int output_write_block_at(int fd, long long base, const real_t *first, long long sy, long long sz,
                          const int n[3], const long long start[3], const long long N[3])
{
  const size_t es = sizeof(real_t), row = (size_t)n[0] * es;
  struct iovec iov[ROWS_PER_CALL];
  int cnt = 0;
  off_t at = 0, next = 0;
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++) {
      off_t off = (off_t)(base + (((start[2] + k) * N[1] + start[1] + j) * N[0] + start[0]) * (long long)es);
      if (cnt == ROWS_PER_CALL || (cnt > 0 && off != next)) {
        int e = pwritev_all(fd, iov, cnt, at);
        if (e) return e;
        cnt = 0;
      }
      if (cnt == 0) at = off;
      iov[cnt].iov_base = (void *)(first + sy * j + sz * k);
      iov[cnt].iov_len = row;
      cnt++;
      next = off + (off_t)row;
    }
  return cnt > 0 ? pwritev_all(fd, iov, cnt, at) : 0;
}

int output_check_size(const char *what, const char *path, long long bytes)
{
  struct stat st;
  if (stat(path, &st) != 0)
    return fd_set_error(FD_ERR_IO, "%s: cannot check '%s': %s", what, path, strerror(errno));
  if ((long long)st.st_size != bytes)
    return fd_set_error(FD_ERR_IO, "%s: '%s' holds %lld bytes after writing, expected %lld (the file system "
                        "dropped data)", what, path, (long long)st.st_size, bytes);
  return FD_OK;
}

int output_write_file(const fd_output *out, const void *buf, size_t len)
{
  unlink(out->tmp); /* a stale one of a killed run (the name is this run's own) */
  int fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  int e = fd < 0 ? errno : output_write_all(fd, buf, len);
  if (fd >= 0 && close(fd) != 0 && !e) e = errno ? errno : EIO;
  int err = e ? fd_set_error(FD_ERR_IO, "%s: writing '%s' failed: %s; '%s' is unchanged", out->opt, out->tmp,
                             strerror(e), out->path)
              : output_check_size(out->opt, out->tmp, (long long)len);
  if (err != FD_OK) unlink(out->tmp);
  return err;
}

int output_commit(const fd_output *out)
{
  if (!out->opt[0]) return FD_OK;
  if (rename(out->tmp, out->path) != 0) {
    int e = errno;
    unlink(out->tmp);
    return fd_set_error(FD_ERR_IO, "%s: cannot rename '%s' to '%s': %s", out->opt, out->tmp, out->path, strerror(e));
  }
  return FD_OK;
}

int output_commit_all(const fd_output *const *outs, int n)
{
  enum { MOST = 4 };
  char old[MOST][FD_PATH_MAX + 32];
  int kept[MOST] = {0}, existed[MOST] = {0}, made = 0, err = FD_OK;
  if (n > MOST) return fd_set_error(FD_ERR_RUNTIME, "output_commit_all: %d outputs, at most %d", n, MOST);
  for (int i = 0; i < n; i++) {
    const fd_output *o = outs[i];
    if (!o->opt[0]) continue;
    /* "final.TAG.tmp" -> "final.TAG.old" */
    const size_t len = strlen(o->tmp);
    snprintf(old[i], sizeof old[i], "%.*s.old", (int)(len > 4 ? len - 4 : len), o->tmp);
    unlink(old[i]); /* a stale one of a killed run (the name is this run's own) */
    struct stat st;
    existed[i] = lstat(o->path, &st) == 0;
    kept[i] = existed[i] && link(o->path, old[i]) == 0;
  }
  for (; made < n && err == FD_OK; made++)
    if ((err = output_commit(outs[made])) != FD_OK) break;
  for (int i = 0; i < n; i++) {
    const fd_output *o = outs[i];
    if (!o->opt[0]) continue;
    if (err != FD_OK && i < made) { /* renamed: put the old file back, or remove the new one */
      if (kept[i]) (void)rename(old[i], o->path);
      else if (!existed[i]) (void)unlink(o->path);
    } else if (kept[i]) {
      (void)unlink(old[i]);
    }
    if (err != FD_OK) output_discard(o);
  }
  return err;
}

void output_discard(const fd_output *out)
{
  if (out->opt[0]) unlink(out->tmp);
}
