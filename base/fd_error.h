/* fd_error.h - how errors travel in fdmini (PETSc style): every fallible function returns an
 * fd error code, callers propagate it with FD_CALL, and the wrappers FD_BE (backend API) and
 * FD_MPI turn a failed call into a code plus one message line naming the call, file, line
 * and rank. fd_agree makes an error every rank's. The driver (src/main.c) prints that line and
 * ends the job: from rank 0 and collectively when every rank agreed on the error (bad input,
 * I/O, a failure every rank checked together such as fields that do not fit in memory), from
 * the failing rank with MPI_Abort otherwise (a rank-local failure must not leave the other
 * ranks waiting). It lives in halo/ because the exchange uses it; src/ uses it too, and the
 * two small helpers at its end (a clock, a bounded string copy).
 */
#ifndef FDMINI_ERROR_H
#define FDMINI_ERROR_H

#include <mpi.h>
#include <stddef.h>

#include "fdmini_config.h"

/* Exit codes of the program; also the error codes functions return. */
enum {
  FD_OK = 0,
  FD_ERR_VERIFY = 1,  /* the run finished but its verification failed */
  FD_ERR_USAGE = 2,   /* bad input: options, sizes, process grid, files */
  FD_ERR_RUNTIME = 3, /* a backend or MPI call failed */
  FD_ERR_IO = 4,      /* an output file (JSON, dump, snapshot, XDMF, checkpoint) could not be
                         written (agreed on every rank; nothing incomplete is left under a
                         final name: src/io/output.h) */
  FD_STOPPED = 5,     /* not an error: a stop signal (SIGTERM, SIGUSR1) ended the run early,
                         at the same pass on every rank, after its checkpoint was written
                         (src/io/checkpoint.h); never passed to fd_agree */
};

/* MPI datatype of real_t. */
#define FD_MPI_REAL (sizeof(real_t) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT)

/* Records `code` with a printf-style message (kept until the next fd_set_error) and returns
 * the code, so that `return fd_set_error(FD_ERR_USAGE, "...")` reads naturally. The message
 * is one per process, read by fd_error_message(). Not Collective. */
int fd_set_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *fd_error_message(void);

/* 1 when the current message came from fd_agree (the same on every rank, which all returned
 * the error), 0 once fd_set_error has recorded a message of this rank's own since. */
int fd_error_agreed(void);

/* The current message and its agreement, kept across clean-up code that may record errors of
 * its own (the first error is the one to report). Not collective. */
#define FD_ERROR_MESSAGE_MAX 1024
typedef struct {
  int agreed;
  char message[FD_ERROR_MESSAGE_MAX];
} fd_error_saved;
void fd_error_save(fd_error_saved *e);
void fd_error_restore(const fd_error_saved *e);

/* The messages of FD_BE and FD_MPI: "rank R: FILE:LINE: EXPR failed: <reason>" (the backend's
 * be_error_message() or MPI's error string); return FD_ERR_RUNTIME. Not Collective. */
int fd_backend_failed(const char *file, int line, const char *expr);
int fd_mpi_failed(const char *file, int line, const char *expr, int mpi_code);

/* Return from the calling function with the error code of EXPR (an fd function, a backend
 * call, an MPI call) when it is not FD_OK, BE_OK or MPI_SUCCESS. */
#define FD_CALL(EXPR)                                                                          \
  do {                                                                                         \
    int fd_e_ = (EXPR);                                                                        \
    if (fd_e_ != FD_OK) return fd_e_;                                                          \
  } while (0)

#define FD_BE(EXPR)                                                                            \
  do {                                                                                         \
    if ((EXPR) != 0) return fd_backend_failed(__FILE__, __LINE__, #EXPR);                      \
  } while (0)

#define FD_MPI(EXPR)                                                                           \
  do {                                                                                         \
    int fd_m_ = (EXPR);                                                                        \
    if (fd_m_ != MPI_SUCCESS) return fd_mpi_failed(__FILE__, __LINE__, #EXPR, fd_m_);          \
  } while (0)

/* Agreement on an error among all ranks of comm. Collective. Each rank passes its local code
 * (FD_OK or an error, with fd_error_message() set). Returns FD_OK when every rank passed
 * FD_OK; otherwise the highest code, and on every rank fd_error_message() becomes the message
 * of the lowest-numbered rank that passed that code (and fd_error_agreed() 1): the message
 * always belongs to the code returned. */
int fd_agree(MPI_Comm comm, int code);
/* fd_agree, the message from the rank with the smallest key (its low 63 bits) among those that
 * passed the highest code (then the lowest-numbered of them): where the failures follow one
 * another (a stalled neighbour makes its neighbours late in turn), the key orders them in time
 * so that the line names the first. fd_agree is fd_agree_first with key 0 on every rank.
 * Collective. */
int fd_agree_first(MPI_Comm comm, int code, unsigned long long key);

/* Wall-clock seconds (MPI_Wtime). Not Collective. */
double fd_now(void);
/* Sleeps `us` microseconds (the tests' waits). Not Collective. */
void fd_sleep_us(double us);

/* Copies src into dst[len] (len >= 1), always terminated; a cut-off string ends in "...". */
void fd_copy_str(char *dst, size_t len, const char *src);

#endif
