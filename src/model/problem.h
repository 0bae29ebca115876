/* problem.h - the four operators as one stencil with coefficient sets, their grids,
 * initial fields, right-hand sides, sources and exact answers. */
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
  fd_coeffs coeffs2; /* wave: the stencil above the interface plane (layer 2) */
  long long iface;  /* wave: global z index of the last plane of layer 1 (points with global
                       k <= iface use coeffs, the others coeffs2); N[2] when uniform */
  int swaps;        /* 1: the output becomes the next step's input (heat, jacobi, wave) */
  int levels;       /* time levels the stencil reads: 1, or 2 for wave (f := U0) */
  int has_rhs;      /* 1: the stencil reads f (jacobi) */
  fd_field u0;      /* initial u, ghosts and boundary planes included */
  fd_field f;       /* right-hand side (jacobi) */
  fd_field exact;   /* laplacian: the exact output; jacobi: the exact solution; heat: the
                       initial mode (the exact answer is decay^steps times it) */
  double dt;        /* heat, wave: time step */
  double vel[2];    /* wave: velocity of layer 1 (global k <= iface) and layer 2 */
  double courant;   /* wave: C of dt = C / (Vmax sqrt(sum 1/h^2)) = C h / (Vmax sqrt 3) */
  long long src[3]; /* wave: global index of the source point */
  double ricker_hz, t0; /* wave: peak frequency and delay of the Ricker wavelet */
  double src_scale; /* wave: dt^2 / (hx hy hz): a unit point force as a grid value */
  double decay;     /* heat: amplitude factor of one step for the mode u0 */
  int bytes_per_point; /* theoretical device-memory bytes per updated point and step */
} fd_problem;

/* Sets up o->op on the global grid N for the rank whose local point 0 is global point start.
 * laplacian: unit spacing (h = 1), u = quadratic, output exactly 3.
 * heat:      unit cube, u0 = sin(pi x) sin(pi y) sin(pi z), dt = 1 / (4 sum 1/h^2).
 * jacobi:    unit cube, solves lap u = f = -pi^2 (sum 1/L^2) sin sin sin from u = 0.
 * wave:      unit cube, U2 = 2 U1 - U0 + dt^2 V^2 lap U1 + dt^2 s(t) delta_src / (hx hy hz),
 *            from U0 = U1 = 0, Dirichlet 0; as the one stencil with u := U1, f := U0, cf = -1.
 * Pure. */
void problem_setup(const fd_options *o, const long long N[3], const long long start[3],
                   fd_problem *p);

/* The wave's physical parameters for a run of `steps` steps on p's grid (p from problem_setup): the velocities, the Ricker frequency and the derived dt, Courant number, stencil
 * coefficients and source amplitude must give finite values with full precision in real_t,
 * and dt must sample the wavelet at least twice per period. FD_OK (other operators too), or
 * FD_ERR_USAGE with one line giving the allowed range. Pure. */
int problem_check(const fd_problem *p, long long steps);

/* wave: the Ricker wavelet (1 - 2a) exp(-a), a = (pi f (t - t0))^2, at time t. Pure. */
double problem_ricker(const fd_problem *p, double t);
/* wave: the steps n = 0, 1, ... whose source time n dt lies before the wavelet's tail, where it
 * is 0 for good: their count, or -1 when that exceeds 9e15. Pure. */
long long problem_source_steps(const fd_problem *p);

#endif
