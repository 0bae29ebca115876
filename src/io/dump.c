/* dump.c - writes a field's interior to one raw file in global order (x fastest, real_t): each
 * rank writes its block's rows at their offsets with pwritev (output_write_block, the snapshot
 * writer's code), so a file written by any decomposition is byte-identical to the single-rank
 * one. POSIX writes rather than MPI-IO because every failure must be seen: Open MPI 4.1's
 * MPI-IO layer (ompio) returned MPI_SUCCESS and the full count of values for a write the file
 * system refused with ENOSPC, leaving a hole of zeros in a file of the right size. Here every
 * write, the close and the file's size are checked, and the outcome is agreed by all ranks. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "fd_error.h"
#include "output.h"

/* Rank 0 creates (truncates) `path`, then, agreed, the other ranks open it; agreed again.
 * *fd is the open file (-1 on error). Collective. */
static int open_file(const fd_decomp *dec, const char *path, int *fd)
{
  int err = FD_OK;
  *fd = -1;
  for (int pass = 0; pass < 2; pass++) {
    if ((dec->rank == 0) == (pass == 0)) {
      *fd = dec->rank == 0 ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)
                           : open(path, O_WRONLY | O_CLOEXEC);
      if (*fd < 0)
        err = fd_set_error(FD_ERR_IO, "--dump: rank %d cannot open '%s': %s", dec->rank, path, strerror(errno));
    }
    FD_CALL(fd_agree(dec->cart, err));
  }
  return FD_OK;
}

/* Writes pack (this rank's interior, contiguous, x fastest) into `path`: every write and the
 * close checked on every rank and agreed, then rank 0 checks the size. FD_ERR_IO on failure,
 * with `path` removed. Collective. */
static int write_file(const fd_decomp *dec, const real_t *pack, const char *path)
{
  const int *n = dec->n;
  int fd = -1;
  int err = open_file(dec, path, &fd);
  if (err == FD_OK) {
    int e = output_write_block(fd, pack, n[0], (long long)n[0] * n[1], n, dec->start, dec->N);
    if (close(fd) != 0 && !e) e = errno ? errno : EIO;
    err = fd_agree(dec->cart, e ? fd_set_error(FD_ERR_IO, "--dump: writing '%s' failed on rank %d: %s", path,
                                               dec->rank, strerror(e))
                                : FD_OK);
  } else if (fd >= 0) {
    close(fd);
  }
  if (err == FD_OK) {
    const long long *N = dec->N;
    err = fd_agree(dec->cart, dec->rank == 0 ? output_check_size("--dump", path, N[0] * N[1] * N[2] * (long long)sizeof(real_t))
                                             : FD_OK);
  }
  if (err != FD_OK && dec->rank == 0) unlink(path);
  return err;
}

int dump_reserve(const fd_decomp *dec, const fd_grid *g, fd_dump_buffers *b)
{
  const int *n = dec->n;
  size_t all = 0, mine = 0;
  b->host = b->pack = NULL;
  int err = fd_size_mul(g->elems, sizeof(real_t), &all) != 0 ||
                    fd_size_mul((size_t)n[0] * (size_t)n[1], (size_t)n[2] * sizeof(real_t), &mine) != 0
                ? fd_set_error(FD_ERR_RUNTIME, "rank %d: --dump: the buffers of a %d x %d x %d block do not fit in memory",
                               dec->rank, n[0], n[1], n[2])
                : FD_OK;
  if (err == FD_OK && be_host_alloc((void **)&b->host, all) != BE_OK) {
    b->host = NULL;
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the --dump copy of the local field (%zu bytes): %s",
                       dec->rank, all, be_error_message());
  }
  if (err == FD_OK && !(b->pack = malloc(mine)))
    err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate the --dump local interior (%zu bytes): out of host memory",
                       dec->rank, mine);
  return fd_agree(dec->cart, err);
}

void dump_release(fd_dump_buffers *b)
{
  (void)be_host_free(b->host);
  free(b->pack);
  b->host = b->pack = NULL;
}

int dump_field(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *field,
               const char *path, const fd_dump_buffers *b)
{
  const int *n = dec->n;
  real_t *host = b->host, *pack = b->pack;
  FD_BE(be_memcpy_async(host, field, g->elems * sizeof(real_t), BE_COPY_D2H, stream));
  FD_BE(be_stream_sync(stream));
  /* the interior rows, x fastest, contiguous */
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++)
      memcpy(pack + (size_t)n[0] * (j + (size_t)n[1] * k), host + fd_grid_index(g, 1, j + 1, k + 1),
             (size_t)n[0] * sizeof(real_t));
  return write_file(dec, pack, path);
}
