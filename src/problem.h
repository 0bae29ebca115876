/* problem.h - the three operators as one stencil with coefficient sets, their grids,
 * initial fields, right-hand sides and exact answers. */
#ifndef FDMINI_PROBLEM_H
#define FDMINI_PROBLEM_H

#include "backend.h"
#include "options.h"

typedef struct {
  fd_op op;
  long long N[3];   /* global interior extents */
  double h[3];      /* grid spacing */
  double L[3];      /* domain length: boundary planes at 0 and L = h*(N+1) */
  fd_coeffs coeffs; /* the stencil applied every step */
  fd_coeffs lap;    /* the plain Laplacian on this grid (residuals) */
  int swaps;        /* 1: the output becomes the next step's input (heat, jacobi) */
  int has_rhs;      /* 1: the stencil reads f (jacobi) */
  fd_field u0;      /* initial u, ghosts and boundary planes included */
  fd_field f;       /* right-hand side (jacobi) */
  fd_field exact;   /* laplacian: the exact output; jacobi: the exact solution; heat: the
                       initial mode (the exact answer is decay^steps times it) */
  double dt;        /* heat: time step */
  double decay;     /* heat: amplitude factor of one step for the mode u0 */
  int bytes_per_point; /* theoretical device-memory bytes per updated point and step */
} fd_problem;

/* Sets up op on the global grid N for the rank whose local point 0 is global point start.
 * laplacian: unit spacing (h = 1), u = quadratic, output exactly 3.
 * heat:      unit cube, u0 = sin(pi x) sin(pi y) sin(pi z), dt = 1 / (4 sum 1/h^2).
 * jacobi:    unit cube, solves lap u = f = -pi^2 (sum 1/L^2) sin sin sin from u = 0.
 * Pure. */
void problem_setup(fd_op op, const long long N[3], const long long start[3], fd_problem *p);

#endif
