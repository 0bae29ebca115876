/* state.h - the live state of one run, shared by the solver loop (solver.c), verification
 * (verify.c) and field output (dump.c). Internal to src/. */
#ifndef FDMINI_STATE_H
#define FDMINI_STATE_H

#include "backend.h"
#include "decomp.h"
#include "halo.h"
#include "problem.h"
#include "solver.h"

typedef struct {
  const fd_options *opt;
  const be_info *dev;
  fd_decomp dec;
  fd_problem prob;
  fd_grid grid;      /* local interior extents */
  fd_kernel kernel;
  real_t *u;         /* the step's input.  Dimensions: (nx+2) x (ny+2) x (nz+2), x fastest */
  real_t *v;         /* the step's output. Same shape; its ghosts hold the boundary values too */
  real_t *f;         /* right-hand side (jacobi) or NULL. Same shape */
  be_stream compute; /* interior and shell updates */
  be_stream halo_stream; /* pack, staging copies, unpack (high priority) */
  be_event ready;    /* recorded on compute when u is final for the step */
  be_event t_ev[2][4]; /* per slot: interior start/end, shell start/end */
  int timing_pending;
  double ms_interior, ms_shell; /* accumulated since the timed loop began */
  fd_halo halo;
  long long steps;   /* steps done (warm-up included) */
  int alone;         /* 1: no exchange (the --baseline run): ghosts keep their start values */
  unsigned deferred; /* faces whose ghosts arrive by exchange (bit f, faces.h): the interior
                        update leaves their one-point layers to the shell update; none when
                        alone, so a block alone is one interior update */
} fd_state;

/* A blocking halo exchange of u (ghosts current when it returns to the compute stream). */
int state_exchange(fd_state *s, real_t *u);

int verify_run(fd_state *s, fd_verify *out);
/* RMS residual of lap u = f over the interior (jacobi). Uses v as scratch. Collective. */
int verify_residual(fd_state *s, double *rms);
int dump_field(fd_state *s, const real_t *field, const char *path);

#endif
