/* verify.c - checks each operator's answer against mathematics it must reproduce:
 *   laplacian: lap of the quadratic 0.5(x(x-Lx) + y(y-Ly) + z(z-Lz)) is 3 at every interior
 *              point. With unit spacing every value is a multiple of 1/2, so where those fit
 *              the mantissa the result is exact and the tolerance is 0.
 *   heat:      the mode sin sin sin decays by the discrete factor each step; tolerance grows
 *              with the steps (rounding, 16 eps per step).
 *   jacobi:    the residual must fall; once it has fallen by 1e-6 the error against the
 *              manufactured solution must show the O(h^2) discretisation error (at most twice
 *              its leading term pi^2 sum h^2 / 36).
 *   wave:      from rest with a source at the centre of an odd grid, in a uniform medium, the
 *              field is mirror symmetric in x, y and z; with two layers (which vary in z only)
 *              in x and y. The mirror image of a point evaluates the same operands with the two
 *              of each pair swapped (cx*(xm + xp) against cx*(xp + xm)), and IEEE addition is
 *              commutative, so the symmetry holds bit for bit: the tolerance is 0. The field
 *              must also be finite and not zero (the source was injected).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "verify.h"

static double real_eps(void) { return sizeof(real_t) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON; }
static int real_digits(void) { return sizeof(real_t) == sizeof(double) ? DBL_MANT_DIG : FLT_MANT_DIG; }

int verify_norms(MPI_Comm comm, const fd_grid *g, const real_t *a, const real_t *b,
                 const fd_field *ref, be_stream stream, double *max_abs, double *rms)
{
  fd_norms n;
  FD_BE(be_norms(g, a, b, ref, &n, stream));
  double sums[2] = {n.sum_sq, (double)n.count};
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm));
  FD_MPI(MPI_Allreduce(&n.max_abs, max_abs, 1, MPI_DOUBLE, MPI_MAX, comm));
  *rms = sqrt(sums[0] / sums[1]);
  return FD_OK;
}

/* verify_norms over the block of `in`. */
static int norms(const fd_verify_input *in, const real_t *a, const fd_field *ref, double *max_abs,
                 double *rms)
{
  return verify_norms(in->dec->cart, in->grid, a, NULL, ref, in->stream, max_abs, rms);
}

/* Largest grid the wave's symmetry check gathers on rank 0 (points). */
#define FD_SYMMETRY_MAX_POINTS (1LL << 26)

/* Gathers the interior of u (device field of dec's block, with ghosts) on rank 0 into *global
 * (N[0] x N[1] x N[2], x fastest; rank 0 frees it; NULL elsewhere). Collective over
 * dec->cart; synchronous on stream. */
static int gather_interior(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *u,
                           real_t **global)
{
  const int *n = dec->n;
  const size_t all = g->elems, mine = (size_t)n[0] * n[1] * n[2];
  int ranks;
  FD_MPI(MPI_Comm_size(dec->cart, &ranks));
  real_t *host = malloc(all * sizeof(real_t)), *pack = malloc(mine * sizeof(real_t));
  int err = host && pack ? FD_OK : fd_set_error(FD_ERR_RUNTIME, "verify: out of memory");
  FD_CALL(fd_agree(dec->cart, err));
  FD_BE(be_memcpy_async(host, u, all * sizeof(real_t), BE_COPY_D2H, stream));
  FD_BE(be_stream_sync(stream));
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++)
      memcpy(pack + (size_t)n[0] * (j + (size_t)n[1] * k), host + fd_grid_index(g, 1, j + 1, k + 1),
             (size_t)n[0] * sizeof(real_t));
  long long box[6] = {dec->start[0], dec->start[1], dec->start[2], n[0], n[1], n[2]};
  long long *boxes = NULL;
  int *counts = NULL, *displs = NULL;
  real_t *recv = NULL;
  const long long *N = dec->N;
  if (dec->rank == 0) {
    boxes = malloc(6 * sizeof *boxes * (size_t)ranks);
    counts = malloc(sizeof *counts * (size_t)ranks);
    displs = malloc(sizeof *displs * (size_t)ranks);
    recv = malloc((size_t)(N[0] * N[1] * N[2]) * sizeof(real_t));
    *global = malloc((size_t)(N[0] * N[1] * N[2]) * sizeof(real_t));
    if (!boxes || !counts || !displs || !recv || !*global) err = fd_set_error(FD_ERR_RUNTIME, "verify: out of memory");
  }
  FD_CALL(fd_agree(dec->cart, err));
  FD_MPI(MPI_Gather(box, 6, MPI_LONG_LONG, boxes, 6, MPI_LONG_LONG, 0, dec->cart));
  if (dec->rank == 0)
    for (int r = 0, off = 0; r < ranks; r++) {
      counts[r] = (int)(boxes[6 * r + 3] * boxes[6 * r + 4] * boxes[6 * r + 5]);
      displs[r] = off;
      off += counts[r];
    }
  FD_MPI(MPI_Gatherv(pack, (int)mine, FD_MPI_REAL, recv, counts, displs, FD_MPI_REAL, 0, dec->cart));
  if (dec->rank == 0)
    /* block r: local (i,j,k) -> global (start+i, ...), 0-based in the interior: start is the
     * global index of the block's low ghost plane, so its first interior point is start+1 */
    for (int r = 0; r < ranks; r++) {
      const long long *b = boxes + 6 * r;
      for (long long k = 0; k < b[5]; k++)
        for (long long j = 0; j < b[4]; j++)
          memcpy(*global + b[0] + N[0] * (b[1] + j + N[1] * (b[2] + k)),
                 recv + displs[r] + b[3] * (j + b[4] * k), (size_t)b[3] * sizeof(real_t));
    }
  free(host);
  free(pack);
  free(boxes);
  free(counts);
  free(displs);
  free(recv);
  return FD_OK;
}

/* wave: see the file comment. Collective. */
static int verify_wave(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  const long long *N = p->N;
  double mx, rms;
  snprintf(out->name, sizeof out->name, "wave mirror symmetry");
  FD_CALL(norms(in, in->result, NULL, &mx, &rms));
  int centred = 1;
  for (int d = 0; d < 3; d++) centred &= 2 * p->src[d] == N[d] + 1;
  const int mirror_z = p->vel[0] == p->vel[1];
  const double total = (double)N[0] * (double)N[1] * (double)N[2]; /* exact up to 2^53 */
  const int check = centred && total <= (double)FD_SYMMETRY_MAX_POINTS;
  double asym = 0.0;
  if (check) {
    real_t *g = NULL;
    FD_CALL(gather_interior(in->dec, in->grid, in->stream, in->result, &g));
    if (in->dec->rank == 0) {
      /* point (i,j,k) 0-based and its mirror N-1-i (and so on), one axis at a time */
      for (long long k = 0; k < N[2]; k++)
        for (long long j = 0; j < N[1]; j++)
          for (long long i = 0; i < N[0]; i++) {
            const double a = g[i + N[0] * (j + N[1] * k)];
            const double m[3] = {g[(N[0] - 1 - i) + N[0] * (j + N[1] * k)],
                                 g[i + N[0] * ((N[1] - 1 - j) + N[1] * k)],
                                 g[i + N[0] * (j + N[1] * (N[2] - 1 - k))]};
            for (int d = 0; d < (mirror_z ? 3 : 2); d++) {
              double e = fabs(a - m[d]);
              if (e != e) e = INFINITY;
              if (e > asym) asym = e;
            }
          }
      free(g);
    }
    FD_MPI(MPI_Bcast(&asym, 1, MPI_DOUBLE, 0, in->dec->cart));
  }
  out->error_max = asym;
  out->error_rms = rms;
  out->tolerance = 0.0;
  out->passed = isfinite(mx) && mx > 0.0 && asym <= out->tolerance;
  if (check)
    snprintf(out->detail, sizeof out->detail,
             "after %lld steps (t = %.4g) max |u| = %.4g; max |u - mirror(u)| in %s = %.3g (tolerance 0: exact)",
             in->steps, (double)in->steps * p->dt, mx, mirror_z ? "x, y, z" : "x, y (two layers)", asym);
  else
    snprintf(out->detail, sizeof out->detail,
             "after %lld steps (t = %.4g) max |u| = %.4g, finite and non-zero; symmetry not checked (%s)",
             in->steps, (double)in->steps * p->dt, mx,
             centred ? "grid above 2^26 points" : "source not at the centre of an odd grid");
  return FD_OK;
}

int verify_run(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  const double eps = real_eps();
  out->checked = 1;
  switch (p->op) {
  case FD_OP_LAPLACIAN: {
    double umax = 0.0;
    for (int d = 0; d < 3; d++) umax += 0.125 * p->L[d] * p->L[d];
    int exact = 48.0 * umax < ldexp(1.0, real_digits()); /* 2 x (12 umax) in halves */
    snprintf(out->name, sizeof out->name, "laplacian of quadratic");
    FD_CALL(norms(in, in->result, &p->exact, &out->error_max, &out->error_rms));
    out->tolerance = exact ? 0.0 : 64.0 * eps * umax;
    out->passed = out->error_max <= out->tolerance;
    snprintf(out->detail, sizeof out->detail, "max |lap u - 3| = %.3g (tolerance %.3g%s)",
             out->error_max, out->tolerance, exact ? ", exact arithmetic" : "");
    break;
  }
  case FD_OP_HEAT: {
    double amp = pow(p->decay, (double)in->steps);
    fd_field ref = p->exact;
    ref.scale = amp;
    snprintf(out->name, sizeof out->name, "heat mode decay");
    FD_CALL(norms(in, in->result, &ref, &out->error_max, &out->error_rms));
    out->error_max /= amp;
    out->error_rms /= amp;
    out->tolerance = 16.0 * eps * ((double)in->steps + 4.0);
    out->passed = out->error_max <= out->tolerance;
    snprintf(out->detail, sizeof out->detail,
             "after %lld steps amplitude %.9g; max |u - exact| / amplitude = %.3g (tolerance %.3g)",
             in->steps, amp, out->error_max, out->tolerance);
    break;
  }
  case FD_OP_JACOBI: {
    snprintf(out->name, sizeof out->name, "jacobi manufactured solution");
    out->residual0 = in->residual0;
    out->residual = in->residual;
    FD_CALL(norms(in, in->result, &p->exact, &out->error_max, &out->error_rms));
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
  case FD_OP_WAVE:
    FD_CALL(verify_wave(in, out));
    break;
  default:
    break;
  }
  if (!isfinite(out->error_max)) out->passed = 0;
  return FD_OK;
}
