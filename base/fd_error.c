/* fd_error.c - error recording, the messages of failed backend and MPI calls, agreement on an
 * error among ranks, wall-clock time (fd_error.h). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "fd_error.h"

static char message[FD_ERROR_MESSAGE_MAX];
static int message_agreed; /* fd_agree made `message` every rank's */

int fd_set_error(int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  message_agreed = 0;
  return code;
}

const char *fd_error_message(void) { return message; }

int fd_error_agreed(void) { return message_agreed; }

void fd_error_save(fd_error_saved *e)
{
  e->agreed = message_agreed;
  memcpy(e->message, message, sizeof message);
}

void fd_error_restore(const fd_error_saved *e)
{
  memcpy(message, e->message, sizeof message);
  message_agreed = e->agreed;
}

static int world_rank(void)
{
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int fd_backend_failed(const char *file, int line, const char *expr)
{
  return fd_set_error(FD_ERR_RUNTIME, "rank %d: %s:%d: %s failed: %s", world_rank(), file, line,
                      expr, be_error_message());
}

int fd_mpi_failed(const char *file, int line, const char *expr, int mpi_code)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_code, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", mpi_code);
  return fd_set_error(FD_ERR_RUNTIME, "rank %d: %s:%d: %s failed: %s", world_rank(), file, line,
                      expr, text);
}

int fd_agree(MPI_Comm comm, int code) { return fd_agree_first(comm, code, 0); }

int fd_agree_first(MPI_Comm comm, int code, unsigned long long key)
{
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int worst = code;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, comm);
  if (worst == FD_OK) return FD_OK;
  /* the message of the rank that failed with the agreed code (code and message belong
   * together: a usage error on rank 1 and a runtime failure on rank 0 report the latter) and
   * has the smallest key, the lowest of those */
  /* signed, the top bit dropped: MPICH 4.0.2 takes MPI_MIN over MPI_UNSIGNED_LONG_LONG (and
   * MPI_UINT64_T) as if signed, so that a sentinel of all ones won over every key */
  const long long mine = (long long)(key & 0x7fffffffffffffffULL);
  long long least = code == worst ? mine : LLONG_MAX;
  MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_LONG_LONG, MPI_MIN, comm);
  int first = code == worst && mine == least ? rank : size;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  MPI_Bcast(message, (int)sizeof message, MPI_CHAR, first, comm);
  message[sizeof message - 1] = '\0';
  message_agreed = 1;
  return worst;
}

double fd_now(void) { return MPI_Wtime(); }

void fd_sleep_us(double us)
{
  if (!(us > 0)) return;
  struct timespec t = {(time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};
  while (nanosleep(&t, &t) != 0) {
  }
}

void fd_copy_str(char *dst, size_t len, const char *src)
{
  size_t n = strlen(src);
  if (n < len) {
    memcpy(dst, src, n + 1);
    return;
  }
  memcpy(dst, src, len - 1);
  dst[len - 1] = '\0';
  if (len >= 4) memcpy(dst + len - 4, "...", 4);
}
