/* verify.c - checks each operator's answer against mathematics it must reproduce:
 *   laplacian: lap of the quadratic 0.5(x(x-Lx) + y(y-Ly) + z(z-Lz)) is 3 at every interior
 *              point. With unit spacing every value is a multiple of 1/2, so where those fit
 *              the mantissa the result is exact and the tolerance is 0.
 *   heat:      the mode sin sin sin decays by the discrete factor each step; tolerance grows
 *              with the steps (rounding, 16 eps per step).
 *   jacobi:    the residual must fall; once it has fallen by 1e-6 the error against the
 *              manufactured solution must show the O(h^2) discretisation error (at most twice
 *              its leading term pi^2 sum h^2 / 36).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "fd_error.h"
#include "state.h"

static double real_eps(void) { return sizeof(real_t) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON; }
static int real_digits(void) { return sizeof(real_t) == sizeof(double) ? DBL_MANT_DIG : FLT_MANT_DIG; }

/* Global max and RMS of a - b - ref over the interior. Collective. */
static int global_norms(fd_state *s, const real_t *a, const real_t *b, const fd_field *ref,
                        double *max_abs, double *rms)
{
  fd_norms n;
  FD_BE(be_norms(&s->grid, a, b, ref, &n, s->compute));
  double sums[2] = {n.sum_sq, (double)n.count};
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, s->dec.cart));
  FD_MPI(MPI_Allreduce(&n.max_abs, max_abs, 1, MPI_DOUBLE, MPI_MAX, s->dec.cart));
  *rms = sqrt(sums[0] / sums[1]);
  return FD_OK;
}

int verify_residual(fd_state *s, double *rms)
{
  double mx;
  FD_CALL(state_exchange(s, s->u));
  FD_BE(be_stencil(&s->grid, FD_REGION_ALL, 0, &s->prob.lap, s->u, NULL, s->v, s->kernel, s->compute));
  FD_CALL(global_norms(s, s->v, s->f, NULL, &mx, rms));
  return FD_OK;
}

int verify_run(fd_state *s, fd_verify *out)
{
  const fd_problem *p = &s->prob;
  const double eps = real_eps();
  out->checked = 1;
  switch (p->op) {
  case FD_OP_LAPLACIAN: {
    double umax = 0.0;
    for (int d = 0; d < 3; d++) umax += 0.125 * p->L[d] * p->L[d];
    int exact = 48.0 * umax < ldexp(1.0, real_digits()); /* 2 x (12 umax) in halves */
    snprintf(out->name, sizeof out->name, "laplacian of quadratic");
    FD_CALL(global_norms(s, s->v, NULL, &p->exact, &out->error_max, &out->error_rms));
    out->tolerance = exact ? 0.0 : 64.0 * eps * umax;
    out->passed = out->error_max <= out->tolerance;
    snprintf(out->detail, sizeof out->detail, "max |lap u - 3| = %.3g (tolerance %.3g%s)",
             out->error_max, out->tolerance, exact ? ", exact arithmetic" : "");
    break;
  }
  case FD_OP_HEAT: {
    double amp = pow(p->decay, (double)s->steps);
    fd_field ref = p->exact;
    ref.scale = amp;
    snprintf(out->name, sizeof out->name, "heat mode decay");
    FD_CALL(global_norms(s, s->u, NULL, &ref, &out->error_max, &out->error_rms));
    out->error_max /= amp;
    out->error_rms /= amp;
    out->tolerance = 16.0 * eps * ((double)s->steps + 4.0);
    out->passed = out->error_max <= out->tolerance;
    snprintf(out->detail, sizeof out->detail,
             "after %lld steps amplitude %.9g; max |u - exact| / amplitude = %.3g (tolerance %.3g)",
             s->steps, amp, out->error_max, out->tolerance);
    break;
  }
  case FD_OP_JACOBI: {
    snprintf(out->name, sizeof out->name, "jacobi manufactured solution");
    FD_CALL(verify_residual(s, &out->residual));
    FD_CALL(global_norms(s, s->u, NULL, &p->exact, &out->error_max, &out->error_rms));
    double sum_h2 = p->h[0] * p->h[0] + p->h[1] * p->h[1] + p->h[2] * p->h[2];
    const double pi = 3.14159265358979323846;
    out->error_h2 = out->error_max / sum_h2;
    out->converged = out->residual <= 1e-6 * out->residual0;
    out->tolerance = out->converged ? pi * pi * sum_h2 / 18.0 : INFINITY;
    out->passed = isfinite(out->residual) && out->residual < out->residual0 &&
                  out->error_max <= out->tolerance;
    snprintf(out->detail, sizeof out->detail,
             "RMS residual %.3g -> %.3g (%s); max error %.3g = %.3g sum h^2%s", out->residual0,
             out->residual, out->residual < out->residual0 ? "falls" : "DOES NOT FALL",
             out->error_max, out->error_h2,
             out->converged ? (out->error_max <= out->tolerance ? ", O(h^2) bound met" : ", O(h^2) bound MISSED")
                            : " (not converged: O(h^2) bound not applied)");
    break;
  }
  default:
    break;
  }
  if (!isfinite(out->error_max)) out->passed = 0;
  return FD_OK;
}
