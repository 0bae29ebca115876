/* dump.h - the final field to one raw file (--dump), in global order whatever the
 * decomposition (dump.c). */
#ifndef FDMINI_DUMP_H
#define FDMINI_DUMP_H

#include "backend.h"
#include "decomp.h"

/* Writes the interior of `field` (this rank's device field of layout *g, interior dec->n) into
 * `path` at this block's place in the global grid: raw real_t, x fastest, dec->N points.
 * Copies the field to pinned host memory on `stream` (freed before returning). Collective
 * over dec->cart (each rank writes its rows: the file system must be shared by the ranks, as for
 * the snapshots); synchronous. Agreed errors: FD_ERR_RUNTIME when the buffers do not
 * fit in memory, FD_ERR_IO when the file cannot be opened, written (an MPI error, fewer values
 * written than asked) or closed, or has the wrong size afterwards: `path` is then removed.
 * main.c passes a temporary name (output.h) and renames it once the run has succeeded. */
int dump_field(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *field,
               const char *path);

#endif
