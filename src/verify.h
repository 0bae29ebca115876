/* verify.h - checks of each operator's answer against mathematics it must reproduce
 * (verify.c has the checks and their tolerances): a verdict, the errors and one line for the
 * report. */
#ifndef FDMINI_VERIFY_H
#define FDMINI_VERIFY_H

#include <mpi.h>

#include "backend.h"
#include "decomp.h"
#include "problem.h"

typedef struct {
  char name[32];     /* what was checked: "laplacian of quadratic" ... */
  int checked;       /* 0 with --no-check */
  int passed;
  double error_max;  /* max |u - exact| (laplacian: |f - 3|; heat: relative to the amplitude) */
  double error_rms;
  double tolerance;  /* bound error_max must meet */
  double residual0, residual; /* jacobi: RMS residual before and after */
  int converged;     /* jacobi: residual fell by 1e-6 or more; the O(h^2) bound then applies */
  double error_h2;   /* jacobi: error_max / sum h^2 */
  char detail[256];  /* one line for the report */
} fd_verify;

/* What the checks read. */
typedef struct {
  const fd_problem *prob; /* the operator as set up on this rank */
  const fd_decomp *dec;   /* Cartesian communicator, this rank's block, the global grid */
  const fd_grid *grid;    /* the layout of the block's fields (backend.h) */
  be_stream stream;       /* the device work of the checks runs on it */
  long long steps;        /* steps taken, warm-up included */
  const real_t *result;   /* the answer (laplacian: the last output; others: the last state):
                             device field of layout *grid */
  double residual0;       /* jacobi: RMS residual of lap u = f before the first step */
  double residual;        /* jacobi: the same at the end (the caller computes both with
                             verify_norms of the residual field) */
} fd_verify_input;

/* Over the interior of this rank's block g, d = a - b - ref (b and ref may be NULL; a and b
 * device fields with ghosts): *max_abs = max |d| and *rms = RMS of d over all ranks of comm.
 * Collective over comm; synchronous (waits for stream). */
int verify_norms(MPI_Comm comm, const fd_grid *g, const real_t *a, const real_t *b,
                 const fd_field *ref, be_stream stream, double *max_abs, double *rms);

/* Checks in->result for the operator in->prob->op and fills *out; a failed check is
 * out->passed = 0, not an error. Returns FD_OK, or the code of a failed backend or MPI call.
 * Collective over in->dec->cart; synchronous. */
int verify_run(const fd_verify_input *in, fd_verify *out);

#endif
