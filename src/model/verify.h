/* verify.h - checks of each operator's answer against mathematics it must reproduce
 * (verify.c has the checks and their tolerances): a verdict, the errors and one line for the
 * report. */
#ifndef FDMINI_VERIFY_H
#define FDMINI_VERIFY_H

#include <mpi.h>

#include "backend.h"
#include "decomp.h"
#include "problem.h"

/* The verdict of a run's verification. */
typedef enum {
  FD_VERDICT_SKIPPED = 0, /* --no-check */
  FD_VERDICT_PASS,        /* at least one check applied, and every check that applied passed */
  FD_VERDICT_FAIL,        /* a check that applied failed (exit 1) */
  FD_VERDICT_UNVERIFIED,  /* no check could apply to this run (exit 0, "verified": false) */
} fd_verdict;

/* One check of an operator's answer. */
typedef struct {
  char name[32];     /* "mode decay", "energy balance", "mirror symmetry", "last-step replay", ... */
  int applies;       /* 0: this run is outside what the check can decide (note says why) */
  int passed;        /* when it applies */
  double error, tolerance;
  char note[224];    /* the numbers, or why it does not apply */
} fd_check;

#define FD_CHECKS_MAX 4

typedef struct {
  char name[32];     /* the operator's checks in a word: "laplacian of quadratic" ... */
  int checked;       /* 0 with --no-check */
  fd_verdict verdict;
  int passed;        /* verdict == FD_VERDICT_PASS */
  int nchecks;
  fd_check check[FD_CHECKS_MAX];
  double error_max;  /* of the operator's main check: laplacian |f - 3|; heat and jacobi
                        (mode decay) relative to the amplitude; jacobi: max |u - exact| of the
                        manufactured solution; wave: the energy balance's relative error */
  double error_rms;
  double tolerance;  /* the bound error_max must meet (infinite where it does not apply) */
  double residual0, residual; /* jacobi: RMS residual before and after */
  int converged;     /* jacobi: residual fell by 1e-6 or more; the O(h^2) bound then applies */
  double error_h2;   /* jacobi: error_max / sum h^2 */
  char detail[1024]; /* one line for the report: every check, its numbers and verdict */
} fd_verify;

/* What the checks read. */
typedef struct {
  const fd_problem *prob; /* the operator as set up on this rank (the checks use its physical
                             parameters, never its stencil coefficients) */
  const fd_decomp *dec;   /* Cartesian communicator, this rank's block, the global grid */
  const fd_grid *grid;    /* the layout of the block's fields (backend.h) */
  be_stream stream;       /* the device work of the checks runs on it */
  long long steps;        /* steps taken, warm-up included */
  const real_t *result;   /* the answer (laplacian: the last output; others: the last state):
                             device field of layout *grid */
  const real_t *prev;     /* wave: the level before result (U^(steps-1)), its ghosts exchanged */
  const real_t *prev2;    /* wave: the level before prev (U^(steps-2); only its interior is
                             read): the last step's second input, for its replay */
  const double *src_hist; /* wave: the field at the source point after each step while the
                             source was on: src_hist[m] = U^m(src), m = 0 .. n_hist-1 (U^0 = 0);
                             the same on every rank */
  long long n_hist;       /* entries of src_hist; -1: not recorded (the check does not apply) */
  double residual0;       /* jacobi: RMS residual of lap u = f before the first step */
  double residual;        /* jacobi: the same at the end (the caller computes both with
                             verify_norms of the residual field) */
  struct fd_verify_memory *mem; /* the checks' host memory, verify_reserve's (the run's: held
                             from before its first step); NULL: verify_run reserves its own */
} fd_verify_input;

/* The host memory the checks take at the end of a run, allocated before its first step
 * (verify_reserve) so that a run too large for its memory fails at start, not after its steps.
 * Only the wave's checks need any: the energy sums two chunks of planes on every rank, the
 * last-step replay three chunks and its twelve face layers on every rank, the mirror symmetry
 * (where it applies) this rank's field and interior on every rank and, on rank 0 only, the
 * gathered blocks and the global field. */
typedef struct fd_verify_memory {
  real_t *block;        /* symmetry: this rank's field with ghosts (grid elems), pinned */
  real_t *pack;         /* symmetry: its interior, contiguous, x fastest */
  real_t *recv;         /* symmetry, rank 0: the blocks as gathered (N[0] N[1] N[2]) */
  real_t *global;       /* symmetry, rank 0: the global interior, x fastest (N[0] N[1] N[2]) */
  long long *boxes;     /* symmetry, rank 0: 6 per rank (start, extents) */
  int *counts, *displs; /* symmetry, rank 0: one per rank */
  real_t *chunk[3];     /* energy: planes of the result and of the level before it; the
                           last-step replay: planes of U^S, U^(S-1) and U^(S-2) */
  real_t *face_send[FD_FACES], *face_recv[FD_FACES]; /* the replay: this rank's boundary
                           layers of U^(S-1) and its neighbours', n[a] x n[b] each */
} fd_verify_memory;

/* 1 where the wave's mirror symmetry check applies to p (the source at the centre of an odd grid
 * of at most FD_SYMMETRY_MAX_POINTS points), 0 where its verification says "not checked". Pure. */
int verify_symmetry_applies(const fd_problem *p);

/* Allocates into *m (zeroed first) what the checks of p's operator will use on this rank of
 * dec (grid g: the layout of its fields). A
 * shortfall is FD_ERR_RUNTIME with one line naming the rank, the buffer and its bytes, agreed
 * over dec->cart. Collective. verify_release frees *m (also after a failure). */
int verify_reserve(const fd_problem *p, const fd_decomp *dec, const fd_grid *g,
                   fd_verify_memory *m);
/* Frees what verify_reserve allocated. Not Collective. */
void verify_release(fd_verify_memory *m);

/* Over the interior of this rank's block g, d = a - b - ref (b and ref may be NULL; a and b
 * device fields with ghosts): *max_abs = max |d| and *rms = RMS of d over all ranks of comm.
 * Collective over comm; synchronous (waits for stream). */
int verify_norms(MPI_Comm comm, const fd_grid *g, const real_t *a, const real_t *b,
                 const fd_field *ref, be_stream stream, double *max_abs, double *rms);

/* Checks in->result for the operator in->prob->op and fills *out (its checks, the verdict and
 * the report line); a failed check is out->verdict FD_VERDICT_FAIL, not an error. Returns FD_OK, or the code of a failed backend or MPI call.
 * Collective over in->dec->cart; synchronous. */
int verify_run(const fd_verify_input *in, fd_verify *out);

/* "SKIPPED", "PASS", "FAIL", "UNVERIFIED". */
const char *verify_verdict_name(fd_verdict v);

#endif
