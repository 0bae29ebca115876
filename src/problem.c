/* problem.c - operator set-up (problem.h). */
#include <math.h>
#include <string.h>

#include "problem.h"

/* Courant number of the wave operator: dt = C / (Vmax sqrt(sum 1/h^2)); the leapfrog scheme
 * with the 7-point Laplacian is stable for C <= 1. */
#define FD_WAVE_COURANT 0.8

double problem_ricker(const fd_problem *p, double t)
{
  const double pi = 3.14159265358979323846;
  double a = pi * p->ricker_hz * (t - p->t0);
  a *= a;
  return (1.0 - 2.0 * a) * exp(-a);
}

void problem_setup(const fd_options *o, const long long N[3], const long long start[3],
                   fd_problem *p)
{
  const double pi = 3.14159265358979323846;
  const fd_op op = o->op;
  memset(p, 0, sizeof *p);
  p->levels = 1;
  p->iface = N[2];
  p->op = op;
  double inv_h2[3], sum_inv_h2 = 0.0, sum_inv_L2 = 0.0;
  for (int d = 0; d < 3; d++) {
    p->N[d] = N[d];
    /* laplacian: unit spacing keeps every value of the quadratic a multiple of 1/2, so
     * its discrete Laplacian is computed without rounding (exactly 3); the others live on
     * the unit cube. */
    p->h[d] = op == FD_OP_LAPLACIAN ? 1.0 : 1.0 / (double)(N[d] + 1);
    p->L[d] = op == FD_OP_LAPLACIAN ? (double)(N[d] + 1) : 1.0;
    inv_h2[d] = 1.0 / (p->h[d] * p->h[d]);
    sum_inv_h2 += inv_h2[d];
    sum_inv_L2 += 1.0 / (p->L[d] * p->L[d]);
  }
  p->lap = (fd_coeffs){(real_t)(-2.0 * sum_inv_h2), (real_t)inv_h2[0], (real_t)inv_h2[1],
                       (real_t)inv_h2[2], 0};
  fd_field base = {.kind = FD_FIELD_CONST, .scale = 0.0, .seed = 0};
  for (int d = 0; d < 3; d++) {
    base.h[d] = p->h[d];
    base.L[d] = p->L[d];
    base.offset[d] = start[d];
  }
  p->u0 = p->f = p->exact = base;
  switch (op) {
  case FD_OP_LAPLACIAN:
    p->coeffs = p->lap;
    p->u0.kind = FD_FIELD_QUADRATIC;
    p->u0.scale = 1.0;
    p->exact.kind = FD_FIELD_CONST;
    p->exact.scale = 3.0;
    p->bytes_per_point = 2 * (int)sizeof(real_t);
    break;
  case FD_OP_HEAT: {
    /* u' = u + dt lap u; dt at half the stability limit 1/(2 sum 1/h^2) */
    p->dt = 1.0 / (4.0 * sum_inv_h2);
    p->coeffs = (fd_coeffs){(real_t)(1.0 - 2.0 * p->dt * sum_inv_h2), (real_t)(p->dt * inv_h2[0]),
                            (real_t)(p->dt * inv_h2[1]), (real_t)(p->dt * inv_h2[2]), 0};
    p->swaps = 1;
    p->u0.kind = FD_FIELD_SINE;
    p->u0.scale = 1.0;
    p->exact = p->u0;
    /* sin(pi x/L) is an eigenvector of the discrete Laplacian with eigenvalue
     * -4 sin^2(pi h / 2L) / h^2 per dimension */
    double lambda = 0.0;
    for (int d = 0; d < 3; d++) {
      double s = sin(pi * p->h[d] / (2.0 * p->L[d]));
      lambda += 4.0 * s * s * inv_h2[d];
    }
    p->decay = 1.0 - p->dt * lambda;
    p->bytes_per_point = 2 * (int)sizeof(real_t);
    break;
  }
  case FD_OP_JACOBI: {
    /* u' = (sum_d (u[d-] + u[d+]) / h_d^2 - f) / D, D = 2 sum 1/h^2 */
    double D = 2.0 * sum_inv_h2;
    p->coeffs = (fd_coeffs){0, (real_t)(inv_h2[0] / D), (real_t)(inv_h2[1] / D),
                            (real_t)(inv_h2[2] / D), (real_t)(-1.0 / D)};
    p->swaps = 1;
    p->has_rhs = 1;
    p->u0.kind = FD_FIELD_CONST;
    p->u0.scale = 0.0;
    p->exact.kind = FD_FIELD_SINE;
    p->exact.scale = 1.0;
    p->f = p->exact;
    p->f.scale = -pi * pi * sum_inv_L2;
    p->bytes_per_point = 3 * (int)sizeof(real_t);
    break;
  }
  case FD_OP_WAVE: {
    /* U2 = (2 - 2 sum r_d) U1 + sum r_d (U1[d-] + U1[d+]) - U0, r_d = (V dt / h_d)^2, per
     * layer; dt from the fastest layer */
    p->vel[0] = o->velocity[0];
    p->vel[1] = o->nvel == 2 ? o->velocity[1] : o->velocity[0];
    double vmax = p->vel[0] > p->vel[1] ? p->vel[0] : p->vel[1];
    p->courant = FD_WAVE_COURANT;
    p->dt = p->courant / (vmax * sqrt(sum_inv_h2));
    p->iface = o->nvel == 2 ? N[2] / 2 : N[2];
    for (int q = 0; q < 2; q++) {
      double r[3], rs = 0.0;
      for (int d = 0; d < 3; d++) rs += r[d] = p->vel[q] * p->vel[q] * p->dt * p->dt * inv_h2[d];
      fd_coeffs c = {(real_t)(2.0 - 2.0 * rs), (real_t)r[0], (real_t)r[1], (real_t)r[2], (real_t)-1.0};
      if (q == 0) p->coeffs = c;
      else p->coeffs2 = c;
    }
    p->swaps = 1;
    p->levels = 2;
    p->u0.kind = FD_FIELD_CONST;
    p->u0.scale = 0.0;
    for (int d = 0; d < 3; d++) p->src[d] = o->have_source ? o->source[d] : (N[d] + 1) / 2;
    p->ricker_hz = o->ricker_hz;
    p->t0 = 1.0 / o->ricker_hz;
    p->src_scale = p->dt * p->dt / (p->h[0] * p->h[1] * p->h[2]);
    p->bytes_per_point = 3 * (int)sizeof(real_t);
    break;
  }
  default:
    break;
  }
}
