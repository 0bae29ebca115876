/* dump.c - writes a field's interior to one raw file in global order (x fastest, real_t),
 * collectively with MPI-IO: each rank's block lands where it belongs, so a file written by
 * any decomposition is byte-identical to the single-rank one. */
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "fd_error.h"

int dump_field(const fd_decomp *dec, be_stream stream, const real_t *field, const char *path)
{
  const int *n = dec->n;
  const fd_grid g = {{n[0], n[1], n[2]}};
  size_t all = fd_grid_points_with_ghosts(&g);
  real_t *host = NULL;
  int err = be_host_alloc((void **)&host, all * sizeof(real_t)) == BE_OK
                ? FD_OK
                : fd_set_error(FD_ERR_RUNTIME, "dump: %s", be_error_message());
  FD_CALL(fd_agree(dec->cart, err));
  FD_BE(be_memcpy_async(host, field, all * sizeof(real_t), BE_COPY_D2H, stream));
  FD_BE(be_stream_sync(stream));

  /* memory: the interior of the ghosted block; file: this block of the global grid */
  int gsizes[3], lsizes[3], gstarts[3], msizes[3], mstarts[3];
  for (int d = 0; d < 3; d++) {
    int r = 2 - d; /* MPI subarrays in C order: slowest (z) first */
    gsizes[r] = (int)dec->N[d];
    lsizes[r] = n[d];
    gstarts[r] = (int)dec->start[d];
    msizes[r] = n[d] + 2;
    mstarts[r] = 1;
  }
  MPI_Datatype filetype, memtype;
  FD_MPI(MPI_Type_create_subarray(3, gsizes, lsizes, gstarts, MPI_ORDER_C, FD_MPI_REAL, &filetype));
  FD_MPI(MPI_Type_commit(&filetype));
  FD_MPI(MPI_Type_create_subarray(3, msizes, lsizes, mstarts, MPI_ORDER_C, FD_MPI_REAL, &memtype));
  FD_MPI(MPI_Type_commit(&memtype));

  MPI_File fh;
  int rc = MPI_File_open(dec->cart, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  err = rc == MPI_SUCCESS ? FD_OK : fd_set_error(FD_ERR_USAGE, "--dump: cannot open '%s' for writing", path);
  FD_CALL(fd_agree(dec->cart, err));
  FD_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
  FD_MPI(MPI_File_set_size(fh, 0));
  FD_MPI(MPI_File_set_view(fh, 0, FD_MPI_REAL, filetype, "native", MPI_INFO_NULL));
  FD_MPI(MPI_File_write_all(fh, host, 1, memtype, MPI_STATUS_IGNORE));
  FD_MPI(MPI_File_close(&fh));
  FD_MPI(MPI_Type_free(&filetype));
  FD_MPI(MPI_Type_free(&memtype));
  FD_BE(be_host_free(host));
  return FD_OK;
}
