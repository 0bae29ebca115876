/* snapshot.h - the field every N steps, off the device without stalling the solver and onto
 * disk with MPI-IO in the background: one raw file per snapshot in global order plus an XDMF
 * description (snapshots.xmf) that ParaView and VisIt open without plug-ins. Internal to src/.
 *
 * A snapshot passes through these stages (one slot each; two slots alternate, so a snapshot
 * may be copied while the previous one is written):
 *   HELD     the step's output buffer is reserved: the solver's buffer pool (solver.c) gives
 *            it to no kernel as an output. Its ghosts are still exchanged once (it is the next
 *            step's input), so the copy waits for the end of that step.
 *   COPYING  the IO stream waited for `taken` (recorded on the compute stream at the end of
 *            the next step) and copies the buffer, ghosts included, to pinned host memory;
 *            `done` is recorded behind the copy. From here no kernel writes the buffer.
 *   WRITING  the host saw `done` (at the next snapshot, or at the end) and posted
 *            MPI_File_iwrite_all of the interior to DIR/snap_STEP.raw.tmp (opened when the
 *            snapshot was taken); MPI_Test on every step lets MPI progress it.
 *   IDLE     MPI_Wait returned (two snapshots later, or at the end), every rank agreed that
 *            its part was written, the file was closed and renamed to DIR/snap_STEP.raw, and
 *            rank 0 rewrote DIR/snapshots.xmf (via a .tmp and rename) to list it. A failed
 *            write removes the .tmp: no file is presented as complete that is not.
 */
#ifndef FDMINI_SNAPSHOT_H
#define FDMINI_SNAPSHOT_H

#include <mpi.h>

#include "backend.h"
#include "options.h"

enum { SNAP_IDLE = 0, SNAP_HELD, SNAP_COPYING, SNAP_WRITING };

typedef struct {
  int stage;
  long long index;  /* 1-based count of the snapshot */
  long long step;   /* the field after this many steps */
  const real_t *dev; /* the held device buffer (HELD, COPYING), else NULL */
  real_t *host;     /* pinned copy of the whole field, ghosts included. Dimensions:
                       (nx+2) x (ny+2) x (nz+2), x fastest */
  be_event done;    /* recorded on the IO stream behind the copy */
  MPI_File fh;
  MPI_Request req;
  int open;         /* fh is open */
  int err;          /* MPI error code of posting or completing the write (local) */
  char path[FD_PATH_MAX + 32], tmp[FD_PATH_MAX + 48];
} fd_snap_slot;

typedef struct {
  int every;        /* 0: off */
  be_stream io;     /* the IO stream: device-to-host copies only */
  be_event taken;   /* recorded on the compute stream when a held buffer is final */
  fd_snap_slot slot[2];
  MPI_Datatype filetype, memtype; /* this block in the global file; the interior in memory */
  long long begun, written;
  long long *steps; /* rank 0: the steps of the written snapshots (XDMF), `written` of them */
  double time_per_step; /* XDMF time of step s = s * time_per_step (dt, or 1 per step) */
  double wait_ms;   /* host time spent in snapshot work (open, copy waits, MPI-IO) */
} fd_snapshots;

#endif
