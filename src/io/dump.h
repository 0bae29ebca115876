/* dump.h - the final field to one raw file (--dump), in global order whatever the
 * decomposition (dump.c). */
#ifndef FDMINI_DUMP_H
#define FDMINI_DUMP_H

#include "backend.h"
#include "decomp.h"

/* The host memory of dump_field on this rank: the field with ghosts (pinned) and its interior,
 * contiguous, x fastest. */
typedef struct {
  real_t *host; /* g->elems values */
  real_t *pack; /* dec->n[0] x dec->n[1] x dec->n[2] values */
} fd_dump_buffers;

/* Allocates *b for a field of layout *g over dec's block, before the run's first step (a dump
 * that does not fit fails at start, not after the steps): FD_ERR_RUNTIME with one line naming
 * the rank, the buffer and its bytes, agreed over dec->cart. Collective. dump_release frees it
 * (also after a failure). */
int dump_reserve(const fd_decomp *dec, const fd_grid *g, fd_dump_buffers *b);
/* Frees what dump_reserve allocated. Not Collective. */
void dump_release(fd_dump_buffers *b);

/* Writes the interior of `field` (this rank's device field of layout *g, interior dec->n) into
 * `path` at this block's place in the global grid: raw real_t, x fastest, dec->N points.
 * Copies the field to b->host on `stream`, its interior to b->pack (the caller's, dump_reserve or
 * buffers of those sizes and kinds; nothing is allocated here). Collective
 * over dec->cart (each rank writes its rows: the file system must be shared by the ranks, as for
 * the snapshots); synchronous. Agreed errors: FD_ERR_IO when the file cannot be opened, written (an MPI error, fewer values
 * written than asked) or closed, or has the wrong size afterwards: `path` is then removed.
 * main.c passes a temporary name (output.h) and renames it once the run has succeeded. */
int dump_field(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *field,
               const char *path, const fd_dump_buffers *b);

#endif
