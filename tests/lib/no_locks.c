/* no_locks.c - a test shim, preloaded into fdmini (LD_PRELOAD): a file system that takes no
 * locks, as Lustre mounted with noflock or NFS without its lock manager. fcntl's record-lock
 * commands on a file named .fdmini.lock (the lock of a --checkpoint-dir) fail with ENOLCK, as
 * such a file system's do; every other call goes on to the C library's fcntl, so MPI is
 * untouched. Built by nolock_shim in tests/lib/checks.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 1 when fd is open on a file named .fdmini.lock */
static int is_lock_file(int fd)
{
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  const char *base = strrchr(path, '/');
  return base && strcmp(base + 1, ".fdmini.lock") == 0;
}

static int call(const char *name, int fd, int cmd, void *arg)
{
  if ((cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK) && is_lock_file(fd)) {
    errno = ENOLCK;
    return -1;
  }
  int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd, cmd, arg);
}

/* fcntl and fcntl64, one body: the third argument, where there is one, is an int or a pointer,
 * passed on as read */
#define SHIM(NAME)                                                                             \
  int NAME(int fd, int cmd, ...)                                                               \
  {                                                                                            \
    va_list ap;                                                                                \
    va_start(ap, cmd);                                                                         \
    void *arg = va_arg(ap, void *);                                                            \
    va_end(ap);                                                                                \
    return call(#NAME, fd, cmd, arg);                                                          \
  }
SHIM(fcntl)
SHIM(fcntl64)
