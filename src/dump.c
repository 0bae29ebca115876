/* dump.c - writes a field's interior to one raw file in global order (x fastest, real_t),
 * collectively with MPI-IO: each rank's block lands where it belongs, so a file written by
 * any decomposition is byte-identical to the single-rank one. */
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "fd_error.h"

int dump_field(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *field,
               const char *path)
{
  const int *n = dec->n;
  const size_t all = g->elems, mine = (size_t)n[0] * n[1] * n[2];
  real_t *host = NULL, *pack = malloc(mine * sizeof(real_t));
  int err = be_host_alloc((void **)&host, all * sizeof(real_t)) == BE_OK && pack
                ? FD_OK
                : fd_set_error(FD_ERR_RUNTIME, "dump: %s", pack ? be_error_message() : "out of host memory");
  if (err) {
    free(pack);
    if (host) (void)be_host_free(host);
  }
  FD_CALL(fd_agree(dec->cart, err));
  FD_BE(be_memcpy_async(host, field, all * sizeof(real_t), BE_COPY_D2H, stream));
  FD_BE(be_stream_sync(stream));
  /* the interior rows, x fastest, contiguous */
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++)
      memcpy(pack + (size_t)n[0] * (j + (size_t)n[1] * k), host + fd_grid_index(g, 1, j + 1, k + 1),
             (size_t)n[0] * sizeof(real_t));
  FD_BE(be_host_free(host));

  /* file: this block of the global grid */
  int gsizes[3], lsizes[3], gstarts[3];
  for (int d = 0; d < 3; d++) {
    int r = 2 - d; /* MPI subarrays in C order: slowest (z) first */
    gsizes[r] = (int)dec->N[d];
    lsizes[r] = n[d];
    gstarts[r] = (int)dec->start[d];
  }
  MPI_Datatype filetype;
  FD_MPI(MPI_Type_create_subarray(3, gsizes, lsizes, gstarts, MPI_ORDER_C, FD_MPI_REAL, &filetype));
  FD_MPI(MPI_Type_commit(&filetype));

  MPI_File fh;
  int rc = MPI_File_open(dec->cart, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  err = rc == MPI_SUCCESS ? FD_OK : fd_set_error(FD_ERR_USAGE, "--dump: cannot open '%s' for writing", path);
  err = fd_agree(dec->cart, err);
  if (err) {
    free(pack);
    MPI_Type_free(&filetype);
    return err;
  }
  FD_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
  FD_MPI(MPI_File_set_size(fh, 0));
  FD_MPI(MPI_File_set_view(fh, 0, FD_MPI_REAL, filetype, "native", MPI_INFO_NULL));
  FD_MPI(MPI_File_write_all(fh, pack, (int)mine, FD_MPI_REAL, MPI_STATUS_IGNORE));
  FD_MPI(MPI_File_close(&fh));
  FD_MPI(MPI_Type_free(&filetype));
  free(pack);
  return FD_OK;
}
