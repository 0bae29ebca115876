/* solver.h - one run of fdmini (src/solver/): set-up, the start-up choices, the timed loop of
 * passes, verification, and the numbers the report needs (result.h). */
#ifndef FDMINI_SOLVER_H
#define FDMINI_SOLVER_H

#include <mpi.h>

#include "backend.h"
#include "bind.h"
#include "options.h"
#include "result.h"

/* Runs the job described by o on comm: the device is bound (dev, bind_device) and `node` is
 * this rank's node (bind_node, on comm or a communicator holding it): node->id (emulated nodes
 * with --test-node-ranks) lays the process grid over the nodes of comm (decomp_create) and
 * decides which faces may go by IPC (halo_create); node->host, the real node, finds the ranks
 * sharing a device (the floors).
 * Fills *r (rank 0's is the one to report). Collective. Returns FD_OK (verification passed or
 * skipped), FD_ERR_VERIFY, FD_ERR_USAGE or FD_ERR_IO (agreed on every rank), FD_STOPPED (a stop
 * signal, every rank, after the checkpoint; r->stop_* and checkpoint_last_path say which), or
 * FD_ERR_RUNTIME: agreed on every rank when fd_error_agreed() (say, fields that do not fit in
 * memory; everything freed), else possibly on this rank only (the caller aborts). */
int fd_run(const fd_options *o, MPI_Comm comm, const be_info *dev, const fd_node *node, fd_result *r);

#endif
