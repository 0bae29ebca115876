/* problem.c - operator set-up (problem.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fd_error.h"
#include "problem.h"

/* Courant number of the wave operator: dt = C / (Vmax sqrt(sum 1/h^2)); the leapfrog scheme
 * with the 7-point Laplacian is stable for C <= 1. */
#define FD_WAVE_COURANT 0.8

/* a = (pi f (t - t0))^2 of the Ricker wavelet at time t. */
static double ricker_a(const fd_problem *p, double t)
{
  const double pi = 3.14159265358979323846;
  const double x = pi * p->ricker_hz * (t - p->t0);
  return x * x;
}

/* exp(-a) is 0 beyond a = 746 (double): the wavelet is 0 there, returned before (1 - 2a) can
 * overflow to -inf and make 0 * inf = NaN */
#define FD_RICKER_A_MAX 746.0

double problem_ricker(const fd_problem *p, double t)
{
  const double a = ricker_a(p, t);
  return a <= FD_RICKER_A_MAX ? (1.0 - 2.0 * a) * exp(-a) : 0.0;
}

long long problem_source_steps(const fd_problem *p)
{
  const double pi = 3.14159265358979323846;
  const double last = (p->t0 + sqrt(FD_RICKER_A_MAX) / (pi * p->ricker_hz)) / p->dt;
  if (!(last < 9e15)) return -1;
  long long n = (long long)last + 1;
  while (n > 0 && ricker_a(p, (double)(n - 1) * p->dt) > FD_RICKER_A_MAX) n--;
  while (ricker_a(p, (double)n * p->dt) <= FD_RICKER_A_MAX) n++;
  return n;
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
      /* r_d = (V dt / h_d)^2 = (C V / Vmax)^2 / (h_d^2 sum 1/h^2): no V^2 or dt^2 that could
       * overflow or underflow on its own (problem_check bounds what remains) */
      const double cv = p->courant * p->vel[q] / vmax;
      double r[3], rs = 0.0;
      for (int d = 0; d < 3; d++) rs += r[d] = cv * cv * (inv_h2[d] / sum_inv_h2);
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

/* Limits of real_t: smallest normal, largest, epsilon. */
static void real_limits(double *lo, double *hi, double *eps)
{
  const int dbl = sizeof(real_t) == sizeof(double);
  *lo = dbl ? DBL_MIN : FLT_MIN;
  *hi = dbl ? DBL_MAX : FLT_MAX;
  *eps = dbl ? DBL_EPSILON : FLT_EPSILON;
}

int problem_check(const fd_problem *p, long long steps)
{
  if (p->op != FD_OP_WAVE) return FD_OK;
  double rmin, rmax, eps, sum_inv_h2 = 0.0, min_inv_h2 = INFINITY;
  real_limits(&rmin, &rmax, &eps);
  for (int d = 0; d < 3; d++) {
    const double ih2 = 1.0 / (p->h[d] * p->h[d]);
    sum_inv_h2 += ih2;
    if (ih2 < min_inv_h2) min_inv_h2 = ih2;
  }
  const double C = p->courant, S = sqrt(sum_inv_h2), f = p->ricker_hz;
  const double vmax = p->vel[0] > p->vel[1] ? p->vel[0] : p->vel[1];
  const double vmin = p->vel[0] < p->vel[1] ? p->vel[0] : p->vel[1];
  /* the source adds A = dt^2 s(t) / (hx hy hz) per step, |s| <= 1, and its first sample is
   * s(0) = (1 - 2 pi^2) e^-pi^2 = -1e-3: A must keep full precision there (A >= 1e3 min/eps)
   * and the field, which grows by at most a few A per step, must stay finite (A <= max / (64
   * steps)). With dt = C / (Vmax S), A = C^2 / (Vmax^2 S^2 hx hy hz) bounds Vmax: */
  const double a_lo = 1e3 * rmin / eps, a_hi = rmax / (64.0 * (double)(steps + 1));
  const double sh = S * sqrt(p->h[0] * p->h[1] * p->h[2]);
  const double v_hi = C / (sh * sqrt(a_lo)), v_amp_lo = C / (sh * sqrt(a_hi));
  /* the wavelet sampled at least twice per period: f dt <= 1/2, dt = C / (Vmax S) */
  const double v_nyq = 2.0 * f * C / S;
  const double v_lo = v_amp_lo > v_nyq ? v_amp_lo : v_nyq;
  const long long *N = p->N;
  if (!(vmax <= v_hi && vmax >= v_amp_lo))
    return fd_set_error(FD_ERR_USAGE, "--velocity %g: on this %lld x %lld x %lld grid over %lld steps the wave needs "
                        "velocities in [%.4g, %.4g]: the time step (Courant number %g) must sample the Ricker wavelet "
                        "(peak %g) at least twice per period and the source amplitude dt^2 / (hx hy hz) must stay a "
                        "normal %s",
                        vmax, N[0], N[1], N[2], steps, v_lo, v_hi, C, f, FDMINI_REAL_NAME);
  const double dt = C / (vmax * S);
  if (!(f * dt <= 0.5))
    return fd_set_error(FD_ERR_USAGE, "--ricker-freq %g with --velocity %g on this %lld x %lld x %lld grid: the time "
                        "step dt = %.4g samples the Ricker wavelet fewer than twice per period: expected --ricker-freq "
                        "in (0, %.4g], or --velocity of at least %.4g, or a finer grid",
                        f, vmax, N[0], N[1], N[2], dt, 0.5 / dt, v_nyq);
  /* the slower layer's coefficients (C V / Vmax)^2 / (h_d^2 sum 1/h^2) must stay normal */
  const double ratio_min = sqrt(rmin / eps * sum_inv_h2 / min_inv_h2) / C;
  if (!(vmin >= ratio_min * vmax))
    return fd_set_error(FD_ERR_USAGE, "--velocity %g,%g: the slower layer needs at least %.4g times the faster "
                        "layer's velocity (here at least %.4g): its stencil coefficients (C V / Vmax)^2 / 3 must stay a "
                        "normal %s", p->vel[0], p->vel[1], ratio_min, ratio_min * vmax, FDMINI_REAL_NAME);
  return FD_OK;
}
