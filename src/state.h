/* state.h - the live state of one run, shared by the solver loop (solver.c), verification
 * (verify.c) and field output (dump.c). Internal to src/. */
#ifndef FDMINI_STATE_H
#define FDMINI_STATE_H

#include "backend.h"
#include "decomp.h"
#include "halo.h"
#include "problem.h"
#include "snapshot.h"
#include "solver.h"

/* Field buffers of the rotation: 2 (laplacian, heat, jacobi) or 3 (wave) time levels, plus one
 * a snapshot may hold while it is copied off the device. */
#define FD_POOL_MAX 4

typedef struct {
  const fd_options *opt;
  const be_info *dev;
  fd_decomp dec;
  fd_problem prob;
  fd_grid grid;      /* local interior extents */
  fd_kernel kernel;
  real_t *pool[FD_POOL_MAX]; /* every field buffer. Dimensions: (nx+2) x (ny+2) x (nz+2), x
                        fastest; every ghost holds the boundary values (filled once) */
  int npool;
  real_t *u;         /* the step's input (wave: U1). One of pool */
  real_t *um;        /* wave: the level before u (U0, read as the stencil's f), else NULL */
  real_t *v;         /* laplacian: the last output; others: a pool buffer that is not u
                        (scratch for verification) */
  real_t *f;         /* right-hand side (jacobi) or NULL. Same shape */
  int src_owned;     /* wave: 1 when this rank owns the source point */
  int src_local[3];  /* wave: its local index */
  int layer_k1;      /* wave: last local plane of layer 1 (0: none here; nz: all) */
  be_stream compute; /* interior and shell updates */
  be_stream halo_stream; /* pack, staging copies, unpack (high priority) */
  be_event ready;    /* recorded on compute when u is final for the step */
  be_event t_ev[2][4]; /* per slot: interior start/end, shell start/end */
  int timing_pending;
  double ms_interior, ms_shell; /* accumulated since the timed loop began */
  fd_halo halo;
  fd_snapshots snap;
  long long steps;   /* steps done (warm-up included) */
  int alone;         /* 1: no exchange (the --baseline run): ghosts keep their start values */
  unsigned deferred; /* faces whose ghosts arrive by exchange (bit f, faces.h): the interior
                        update leaves their one-point layers to the shell update; none when
                        alone, so a block alone is one interior update */
} fd_state;

/* A blocking halo exchange of u (ghosts current when it returns to the compute stream). */
int state_exchange(fd_state *s, real_t *u);

/* The field a run's result is: v for laplacian, u otherwise. */
real_t *state_result(fd_state *s);

/* snapshot.c (snapshot.h). All Collective over the Cartesian communicator: every rank calls
 * them at the same steps. */
/* Refuses (FD_ERR_USAGE) snapshots where MPI provides less than MPI_THREAD_FUNNELED, which
 * their writer thread needs; before anything is allocated. Not Collective. */
int snapshot_check(const fd_options *o);
int snapshot_create(fd_state *s);   /* streams, events, pinned buffers, the writer thread */
int snapshot_destroy(fd_state *s);  /* after snapshot_drain */
/* After step s->steps: moves snapshots along their stages (see snapshot.h) and, when the step
 * is a multiple of --snapshot-every, takes one of `out` (the step's output). Asynchronous on
 * the compute and IO streams; blocks the host only for copies or writes not yet done. */
int snapshot_after_step(fd_state *s, const real_t *out);
/* 1 when a snapshot still reserves buf (HELD or COPYING): the pool must not write it. Not
 * Collective. */
int snapshot_holds(const fd_state *s, const real_t *buf);
/* Frees a COPYING buffer for writing: the compute stream waits (on the device) for its copy.
 * Not Collective; asynchronous. */
int snapshot_release(fd_state *s, const real_t *buf);
/* Completes every snapshot begun: the files are complete and listed when it returns. */
int snapshot_drain(fd_state *s);
/* Zeroes the snapshot timers. Not Collective. */
void snapshot_reset_timers(fd_state *s);
/* Since the reset: host time in snapshot work, of it waiting for copies or the writer thread
 * (the stall), the device-to-host copy time and the writer's busy time. Not Collective. */
void snapshot_timers(fd_state *s, double *host_ms, double *stall_ms, double *copy_ms, double *writer_ms);

#endif
