/* verify.c - checks each operator's answer against mathematics it must reproduce, at any size,
 * decomposition, step count and precision. Each operator has one or two checks; a check that
 * cannot decide a run (its rounding bound too loose, its symmetry absent) says why and does not
 * apply. PASS needs at least one check that applied and no failure; a run no check applies to
 * is UNVERIFIED (exit 0, "verified": false), never PASS, and a field that holds NaN or infinity
 * is FAIL whatever the checks say (the ghosts an exchange fills start as NaN: halo_poison_ghosts,
 * so a ghost no exchange wrote poisons the answer). The checks read the problem's physical
 * parameters (h, L, dt, V, the source), never the stencil coefficients the run used, so a wrong
 * coefficient is caught, not reproduced.
 *
 *   laplacian  lap of the quadratic 0.5(x(x-Lx) + y(y-Ly) + z(z-Lz)) is 3 at every interior
 *              point. With unit spacing every value is a multiple of 1/2, so where those fit
 *              the mantissa the result is exact and the tolerance is 0; else 64 eps umax
 *              (applies while that is below 1).
 *   heat       the mode sin sin sin decays by the discrete factor each step; tolerance 16 eps
 *              per step (rounding). Applies while the tolerance is below 1% and the amplitude
 *              is a normal number with room for the digits, far above the boundary planes'
 *              values (sin(pi) evaluates to 1.2e-16, not 0: by the maximum principle that moves
 *              u by at most as much).
 *   jacobi     mode decay, exact at any step count: the right-hand side f = -pi^2 (sum 1/L^2)
 *              sin sin sin is a multiple of a discrete eigenmode phi (lap_h phi = -lambda phi,
 *              lambda = sum 4 sin^2(pi h/2L) / h^2), so the discrete solution is u* = A phi,
 *              A = pi^2 sum(1/L^2) / lambda, and from u = 0 each Jacobi sweep multiplies the
 *              error by g = 1 - lambda / (2 sum 1/h^2): after s sweeps u = (1 - g^s) A phi. The
 *              sweep matrix has max-norm 1 (its coefficients are positive and sum to 1), so
 *              the rounding of each sweep (about 4 eps |u|, the coefficients' own rounding
 *              included) adds at most that to the error: tolerance 16 eps (s + 4) relative to A.
 *              O(h^2) error: once the residual has fallen by 1e-6, the error against the
 *              manufactured solution sin sin sin must be at most twice its leading term
 *              pi^2 sum h^2 / 36.
 *   wave       energy balance, at any grid, source and step count: the leapfrog scheme
 *              U+ - 2U + U- = V^2 dt^2 lap_h U + G delta_src has the discrete energy
 *                E(n+1/2) = sum (U(n+1) - U(n))^2 / (V^2 dt^2) - sum U(n+1) lap_h U(n)
 *              and E(n+1/2) - E(n-1/2) = (U(n+1) - U(n-1))(src) G(n) / (V(src)^2 dt^2) exactly
 *              (multiply the scheme by U(n+1) - U(n-1) / V^2; lap_h is symmetric). From rest,
 *              E at the end must equal the sum of that work over the steps, with G(n) =
 *              dt^2 s(n dt) / (hx hy hz) computed here from dt, h and the Ricker wavelet, and
 *              U(src) recorded by the solver after each step with the source on. V, dt and the
 *              source scaling all enter: a wrong velocity or dt in the stencil breaks the
 *              balance, a wrongly scaled source scales E by c^2 and the work by c. Tolerance:
 *              one step's rounding (of the update, of the coefficients, of the source value)
 *              changes the balance by sum (dU rho) / (V^2 dt^2) with |rho| <= 4 eps M at each
 *              point, M the magnitudes its update adds. Round-to-nearest errors are unbiased
 *              and independent from point to point and step to step, so the sum grows as the
 *              square root of its terms: 32 eps sqrt(steps + 1) |(|dU| M / V^2)|_2 from the
 *              last step (32: margin, also for steps where the field was larger), plus 4 eps
 *              times the magnitudes of the potential energy and the source work (coefficients
 *              rounded to real_t once) and the rounding of the double sums here. Measured
 *              errors stay 30 to 100 times below it (double and float, grids 9^3 to 128^3, two
 *              layers, up to 1e5 steps); a velocity or source off by 1% misses it by far more
 *              than 1e5 times in double. It applies while it stays below 1% of the energy.
 *              Mirror symmetry: from rest with a source at the centre of an odd grid, in a
 *              uniform medium, the field is mirror symmetric in x, y and z; with two layers
 *              (which vary in z only) in x and y. The mirror image of a point evaluates the same
 *              operands with the two of each pair swapped (cx*(xm + xp) against cx*(xp + xm)),
 *              and IEEE addition is commutative, so the symmetry holds bit for bit: the
 *              tolerance is 0 (the field must also be finite and not zero).
 *              Last-step replay: the two checks above cannot see what crosses rank borders.
 *              When every message of the exchange is empty, or the one-point shell next to a
 *              neighbour is never updated, every block is a box closed by zeros (or by stale
 *              values that are again its own): its energy balance holds exactly and a
 *              symmetric layout keeps the mirror symmetry, so both passed such a build. The
 *              replay recomputes the last step, U^S from U^(S-1) and U^(S-2) (u, um and v of
 *              the solver's rotation at the end of a run, restarted or not), on the host with
 *              the stencil of pointwise.h and the run's coefficient sets (split at the
 *              interface plane by global z as step.c splits them), then adds the point source
 *              of step S-1 as step.c does ((real_t)(src_scale s((S-1) dt)), added to the new
 *              level in real_t), and compares it with U^S at every interior point. The face
 *              ghosts of its copy of U^(S-1) are not the run's: each rank sends its own
 *              boundary layers of U^(S-1), read from its field, to its neighbours with
 *              MPI_Sendrecv on a duplicate of the Cartesian communicator (decomp.h's
 *              neighbours; no buffer, kernel, stream, tag or call of the halo exchange is
 *              involved, so an exchange that drops, empties, misplaces or delays a message, or
 *              a shell update that is skipped or reads stale ghosts, cannot also fix the
 *              replay), and beyond a global edge the ghosts are the Dirichlet value 0 of the
 *              problem, not the run's. One layer suffices at any --halo-width: the 7-point
 *              stencil of one step reads only the face ghosts of U^(S-1) and U^(S-2) at the
 *              point itself, so deeper ghosts, edges and corners play no part. Tolerance 0, an
 *              exact comparison (NaN never equals): each point of the replay is the same
 *              real_t expression in the same operand order with the same operands as the
 *              run's (pointwise.h; no FMA contraction in any host or device file), and every
 *              backend, kernel, tile, region split and rank count gives that expression's
 *              bits (docs/kernels.md: a GPU run's dump equals the host backend's bit for bit,
 *              and the multi-rank tests see every operator bitwise equal to one rank), so a
 *              correct run differs from its replay nowhere; any difference is an error of at
 *              least one rounding unit of one point's update. It checks the last step only:
 *              the faults it is for are systematic (a message dropped or empty, an unwritten
 *              shell, a ghost one step stale, a region misplaced) and wrong in every step, so
 *              in the last one too wherever the wave has reached a border (before it has,
 *              nothing non-zero crosses one and there is nothing to get wrong); a fault in an
 *              earlier step alone is left to the energy balance, which sums every step's work. The replay
 *              reproduces the run's coefficients and source scale: a wrong velocity or source
 *              is the energy balance's to catch, the replay catches the data each point read.
 *              Cost at any scale: one step's work on the host and copies of three fields off
 *              the device in chunks of a few MiB (as the energy sums already do), six faces
 *              of messages per rank, host memory of 12 faces and three chunks, allocated when
 *              the check runs (at a 512^3 block in double 25 and 20 MiB); no device memory.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "pointwise.h"
#include "verify.h"

static double real_eps(void) { return sizeof(real_t) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON; }
static double real_min(void) { return sizeof(real_t) == sizeof(double) ? DBL_MIN : FLT_MIN; }
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


/* The next check of out, cleared. */
static fd_check *add_check(fd_verify *out, const char *name)
{
  fd_check *c = &out->check[out->nchecks++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->tolerance = INFINITY;
  return c;
}

/* Largest grid the wave's symmetry check gathers on rank 0 (points). */
#define FD_SYMMETRY_MAX_POINTS (1LL << 26)

/* Gathers the interior of u (device field of dec's block, with ghosts) on rank 0 into
 * m->global (N[0] x N[1] x N[2], x fastest), through the buffers of m (verify_reserve: nothing
 * is allocated here). Collective over dec->cart; synchronous on stream. */
static int gather_interior(const fd_decomp *dec, const fd_grid *g, be_stream stream, const real_t *u,
                           fd_verify_memory *m)
{
  const int *n = dec->n;
  const size_t all = g->elems, mine = (size_t)n[0] * n[1] * n[2];
  const int ranks = dec->size;
  real_t *host = m->block, *pack = m->pack;
  FD_BE(be_memcpy_async(host, u, all * sizeof(real_t), BE_COPY_D2H, stream));
  FD_BE(be_stream_sync(stream));
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++)
      memcpy(pack + (size_t)n[0] * (j + (size_t)n[1] * k), host + fd_grid_index(g, 1, j + 1, k + 1),
             (size_t)n[0] * sizeof(real_t));
  long long box[6] = {dec->start[0], dec->start[1], dec->start[2], n[0], n[1], n[2]};
  long long *boxes = m->boxes;
  int *counts = m->counts, *displs = m->displs;
  real_t *recv = m->recv;
  const long long *N = dec->N;
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
          memcpy(m->global + b[0] + N[0] * (b[1] + j + N[1] * (b[2] + k)),
                 recv + displs[r] + b[3] * (j + b[4] * k), (size_t)b[3] * sizeof(real_t));
    }
  return FD_OK;
}

/* ---- laplacian, heat ---- */

static int check_laplacian(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  double umax = 0.0;
  for (int d = 0; d < 3; d++) umax += 0.125 * p->L[d] * p->L[d];
  const int exact = 48.0 * umax < ldexp(1.0, real_digits()); /* 2 x (12 umax) in halves */
  snprintf(out->name, sizeof out->name, "laplacian of quadratic");
  fd_check *c = add_check(out, "lap u = 3");
  FD_CALL(norms(in, in->result, &p->exact, &out->error_max, &out->error_rms));
  c->error = out->error_max;
  c->tolerance = exact ? 0.0 : 64.0 * real_eps() * umax;
  c->applies = c->tolerance < 1.0;
  c->passed = c->error <= c->tolerance;
  if (c->applies)
    snprintf(c->note, sizeof c->note, "max |lap u - 3| = %.3g (tolerance %.3g%s)", c->error, c->tolerance,
             exact ? ", exact arithmetic" : "");
  else
    snprintf(c->note, sizeof c->note, "max |lap u - 3| = %.3g, but the rounding bound %.3g of a %s grid this "
             "large is not below 1: nothing to decide", c->error, c->tolerance, FDMINI_REAL_NAME);
  return FD_OK;
}

static int check_heat(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  const double amp = pow(p->decay, (double)in->steps);
  fd_field ref = p->exact;
  ref.scale = amp;
  snprintf(out->name, sizeof out->name, "heat mode decay");
  fd_check *c = add_check(out, "mode decay");
  FD_CALL(norms(in, in->result, &ref, &out->error_max, &out->error_rms));
  c->tolerance = 16.0 * real_eps() * ((double)in->steps + 4.0);
  /* the Dirichlet planes at x = L hold sin(pi x / L) as evaluated there (about 1e-16, not 0):
   * by the scheme's maximum principle they move u by at most that much, which must stay a
   * small part of the tolerance */
  const double pi = 3.14159265358979323846;
  double edge = 0.0;
  for (int d = 0; d < 3; d++) {
    const double v = fabs(sin(pi * (p->h[d] * (double)(p->N[d] + 1)) / p->L[d]));
    if (v > edge) edge = v;
  }
  c->applies = amp >= 16.0 * real_min() / real_eps() && amp * c->tolerance >= 4.0 * edge && c->tolerance <= 1e-2;
  c->error = amp > 0 ? out->error_max / amp : INFINITY;
  c->passed = c->error <= c->tolerance;
  if (c->applies)
    snprintf(c->note, sizeof c->note, "after %lld step%s amplitude %.9g; max |u - exact| / amplitude = %.3g "
             "(tolerance %.3g)", in->steps, in->steps == 1 ? "" : "s", amp, c->error, c->tolerance);
  else if (c->tolerance > 1e-2)
    snprintf(c->note, sizeof c->note, "after %lld step%s the rounding bound %.3g exceeds 1%% of the amplitude: "
             "nothing to decide", in->steps, in->steps == 1 ? "" : "s", c->tolerance);
  else
    snprintf(c->note, sizeof c->note, "after %lld step%s the amplitude %.3g has decayed to the rounding of the "
             "boundary values (%.2g) or of %s: nothing left to compare", in->steps, in->steps == 1 ? "" : "s", amp, edge, FDMINI_REAL_NAME);
  out->error_max = c->error;
  out->error_rms = amp > 0 ? out->error_rms / amp : INFINITY;
  return FD_OK;
}

/* ---- jacobi ---- */

static int check_jacobi(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  const double pi = 3.14159265358979323846;
  snprintf(out->name, sizeof out->name, "jacobi");
  /* mode decay: lambda of the mode sin(pi x / L) per dimension, the sweep's factor g */
  double lambda = 0.0, D = 0.0, sum_h2 = 0.0;
  for (int d = 0; d < 3; d++) {
    const double sn = sin(pi * p->h[d] / (2.0 * p->L[d]));
    lambda += 4.0 * sn * sn / (p->h[d] * p->h[d]);
    D += 2.0 / (p->h[d] * p->h[d]);
    sum_h2 += p->h[d] * p->h[d];
  }
  const double g = 1.0 - lambda / D, A = -p->f.scale / lambda;
  const double s = (double)in->steps, amp = (1.0 - pow(g, s)) * A;
  fd_field ref = p->exact;
  ref.scale = amp;
  fd_check *m = add_check(out, "mode decay");
  double emax, erms;
  FD_CALL(norms(in, in->result, &ref, &emax, &erms));
  m->error = emax / A;
  m->tolerance = 16.0 * real_eps() * (s + 4.0);
  m->applies = m->tolerance <= 1e-2;
  m->passed = m->error <= m->tolerance;
  if (m->applies)
    snprintf(m->note, sizeof m->note, "u = (1 - g^s) A phi, g = %.12g, A = %.9g: max |u - (1 - g^s) A phi| / A = %.3g "
             "(tolerance %.3g)", g, A, m->error, m->tolerance);
  else
    snprintf(m->note, sizeof m->note, "after %lld sweeps the rounding bound %.3g exceeds 1%%: nothing to decide "
             "(max |u - (1 - g^s) A phi| / A = %.3g)", in->steps, m->tolerance, m->error);
  /* O(h^2) error against the manufactured solution, once converged */
  fd_check *h = add_check(out, "O(h^2) error");
  out->residual0 = in->residual0;
  out->residual = in->residual;
  FD_CALL(norms(in, in->result, &p->exact, &out->error_max, &out->error_rms));
  out->error_h2 = out->error_max / sum_h2;
  out->converged = in->residual <= 1e-6 * in->residual0;
  h->error = out->error_max;
  h->tolerance = pi * pi * sum_h2 / 18.0;
  h->applies = out->converged;
  h->passed = h->error <= h->tolerance && isfinite(in->residual);
  if (h->applies)
    snprintf(h->note, sizeof h->note, "RMS residual %.3g -> %.3g; max |u - exact| = %.3g = %.3g sum h^2 "
             "(tolerance %.3g)", in->residual0, in->residual, h->error, out->error_h2, h->tolerance);
  else
    snprintf(h->note, sizeof h->note, "not converged (RMS residual %.3g -> %.3g, needs a fall by 1e6): not applied",
             in->residual0, in->residual);
  out->tolerance = h->applies ? h->tolerance : INFINITY;
  return FD_OK;
}

/* ---- wave ---- */

/* Planes per chunk of the energy sums (host copies of two fields, a few MiB each). */
static int chunk_planes(const fd_grid *g)
{
  const long long plane = g->sxy * (long long)sizeof(real_t), want = 8LL << 20;
  long long k = want / (plane > 0 ? plane : 1) - 2;
  if (k < 1) k = 1;
  if (k > g->n[2]) k = g->n[2];
  return (int)k;
}

/* Elements of each of the energy sums' two host chunks: chunk_planes planes and one more on
 * either side (the previous level's neighbours). Pure. */
static size_t chunk_elems(const fd_grid *g) { return (size_t)(chunk_planes(g) + 2) * (size_t)g->sxy + 1; }

/* Planes k0..k1 (every row, ghosts included) of the device field u into buf; *first = the field
 * element at buf[0]. Synchronous. */
static int copy_planes(const fd_grid *g, be_stream st, const real_t *u, int k0, int k1, real_t *buf,
                       long long *first)
{
  const int G = g->ghost;
  const long long e0 = fd_grid_index(g, 1 - G, 1 - G, k0), e1 = fd_grid_index(g, g->n[0] + G, g->n[1] + G, k1);
  *first = e0;
  FD_BE(be_memcpy_async(buf, u + e0, (size_t)(e1 - e0 + 1) * sizeof(real_t), BE_COPY_D2H, st));
  FD_BE(be_stream_sync(st));
  return FD_OK;
}

/* This rank's sums of the energy at the end, in units of the source amplitude A (fields / A),
 * weighted by (Vmax / V)^2 and multiplied by (Vmax dt)^2: sum[0] kinetic sum (a - b)^2 w,
 * sum[1] sum a c.(second differences of b), sum[2] the rounding model's sum (|a - b| M w)^2, sum[3]
 * sum |a| c.|second differences of b|. a = U(S), b = U(S-1). Synchronous. */
static int energy_sums(const fd_verify_input *in, const double cd[3], double A, double sum[4])
{
  const fd_problem *p = in->prob;
  const fd_grid *g = in->grid;
  const int *n = g->n;
  const int K = chunk_planes(g);
  const double vmax = p->vel[0] > p->vel[1] ? p->vel[0] : p->vel[1];
  real_t *ha = in->mem->chunk[0], *hb = in->mem->chunk[1]; /* chunk_elems(g) each */
  int err = FD_OK;
  for (int q = 0; q < 4; q++) sum[q] = 0.0;
  const long long sx = g->sx, sxy = g->sxy;
  for (int k0 = 1; k0 <= n[2] && err == FD_OK; k0 += K) {
    const int k1 = k0 + K - 1 < n[2] ? k0 + K - 1 : n[2];
    long long fa, fb;
    err = copy_planes(g, in->stream, in->result, k0, k1, ha, &fa);
    if (err == FD_OK) err = copy_planes(g, in->stream, in->prev, k0 - 1, k1 + 1, hb, &fb);
    for (int k = k0; k <= k1 && err == FD_OK; k++) {
      const long long gk = in->dec->start[2] + k;
      const double v = gk <= p->iface ? p->vel[0] : p->vel[1], w = (vmax / v) * (vmax / v);
      /* the coefficients of the point's update, from the physical parameters: r_d = c_d / w */
      const double r[3] = {cd[0] / w, cd[1] / w, cd[2] / w}, cc = fabs(2.0 - 2.0 * (r[0] + r[1] + r[2]));
      double plane[4] = {0, 0, 0, 0};
      for (int j = 1; j <= n[1]; j++) {
        double row[4] = {0, 0, 0, 0};
        const real_t *pa = ha + (fd_grid_index(g, 0, j, k) - fa), *pb = hb + (fd_grid_index(g, 0, j, k) - fb);
        for (int i = 1; i <= n[0]; i++) {
          const double a = pa[i] / A, b = pb[i] / A, bxm = pb[i - 1] / A, bxp = pb[i + 1] / A;
          const double bym = pb[i - sx] / A, byp = pb[i + sx] / A, bzm = pb[i - sxy] / A, bzp = pb[i + sxy] / A;
          const double lap = cd[0] * (bxm + bxp - 2 * b) + cd[1] * (bym + byp - 2 * b) + cd[2] * (bzm + bzp - 2 * b);
          const double lap_abs = cd[0] * (fabs(bxm) + fabs(bxp) + 2 * fabs(b)) + cd[1] * (fabs(bym) + fabs(byp) + 2 * fabs(b)) +
                                 cd[2] * (fabs(bzm) + fabs(bzp) + 2 * fabs(b));
          const double mag = cc * fabs(b) + r[0] * (fabs(bxm) + fabs(bxp)) + r[1] * (fabs(bym) + fabs(byp)) +
                             r[2] * (fabs(bzm) + fabs(bzp)) + 2 * fabs(a);
          row[0] += (a - b) * (a - b) * w;
          row[1] += a * lap;
          row[3] += fabs(a) * lap_abs;
          row[2] += (fabs(a - b) * mag * w) * (fabs(a - b) * mag * w);
        }
        for (int q = 0; q < 4; q++) plane[q] += row[q];
      }
      for (int q = 0; q < 4; q++) sum[q] += plane[q];
    }
  }
  FD_CALL(err);
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, sum, 4, MPI_DOUBLE, MPI_SUM, in->dec->cart));
  return FD_OK;
}

/* The energy balance (file comment). Collective. */
static int check_energy(const fd_verify_input *in, fd_check *c, double *max_u)
{
  const fd_problem *p = in->prob;
  const double eps = real_eps(), vmax = p->vel[0] > p->vel[1] ? p->vel[0] : p->vel[1];
  const double dt = p->dt, A = dt * dt / (p->h[0] * p->h[1] * p->h[2]);
  double cd[3];
  for (int d = 0; d < 3; d++) cd[d] = (vmax * dt / p->h[d]) * (vmax * dt / p->h[d]);
  double rms;
  FD_CALL(norms(in, in->result, NULL, max_u, &rms));
  if (in->n_hist < 0) {
    snprintf(c->note, sizeof c->note, "not applied: the source is on for more steps than the solver records");
    return FD_OK;
  }
  double sum[4];
  FD_CALL(energy_sums(in, cd, A, sum));
  const double E = sum[0] - sum[1];
  /* the work of the source, U(src) from the solver, G(n) / A = s(n dt) */
  const double vs = p->src[2] <= p->iface ? p->vel[0] : p->vel[1], ws = (vmax / vs) * (vmax / vs);
  double W = 0.0, W_abs = 0.0, W_max = 0.0;
  for (long long nn = 0; nn + 1 < in->n_hist && nn < in->steps; nn++) {
    const double sv = problem_ricker(p, (double)nn * dt);
    const double up = in->src_hist[nn + 1] / A, um = nn >= 1 ? in->src_hist[nn - 1] / A : 0.0;
    W += (up - um) * sv * ws;
    W_abs += fabs(up - um) * fabs(sv) * ws;
    if (fabs(W) > W_max) W_max = fabs(W);
  }
  const double E_ref = fabs(E) > W_max ? fabs(E) : W_max;
  const int *n = in->grid->n;
  const double S = (double)in->steps;
  c->error = fabs(E - W) / E_ref;
  c->tolerance = (32.0 * eps * sqrt(S + 1.0) * sqrt(sum[2]) + 4.0 * eps * (sum[3] + W_abs) +
                  16.0 * DBL_EPSILON * (n[0] + n[1] + n[2] + S) * E_ref) / E_ref;
  /* NaN or infinity anywhere in the sums (a ghost no exchange wrote) decides the run: FAIL,
   * where a NaN tolerance would otherwise make the check look undecidable */
  const int finite = isfinite(E) && isfinite(W) && isfinite(sum[2]) && isfinite(sum[3]);
  c->applies = !finite || !(E_ref > 0) || !isfinite(E_ref) || c->tolerance <= 1e-2;
  c->passed = finite && c->error <= c->tolerance;
  if (!finite)
    snprintf(c->note, sizeof c->note, "energy %.9g = source work %.9g (units of the source amplitude): not finite",
             E, W);
  else if (c->applies)
    snprintf(c->note, sizeof c->note, "energy %.9g = source work %.9g (units of the source amplitude): "
             "relative error %.3g (tolerance %.3g)", E, W, c->error, c->tolerance);
  else
    snprintf(c->note, sizeof c->note, "not applied: its rounding bound %.3g exceeds 1%% of the energy %.3g",
             c->tolerance, E);
  return FD_OK;
}

/* Whether the wave's mirror symmetry check applies to p (*centred: the source is at the centre
 * of an odd grid). Pure. */
static int symmetry_applies(const fd_problem *p, int *centred)
{
  const long long *N = p->N;
  *centred = 1;
  for (int d = 0; d < 3; d++) *centred &= 2 * p->src[d] == N[d] + 1;
  const double total = (double)N[0] * (double)N[1] * (double)N[2]; /* exact up to 2^53 */
  return *centred && total <= (double)FD_SYMMETRY_MAX_POINTS;
}

int verify_symmetry_applies(const fd_problem *p)
{
  int centred;
  return symmetry_applies(p, &centred);
}

/* Mirror symmetry (file comment). Collective. */
static int check_symmetry(const fd_verify_input *in, fd_check *c, double max_u)
{
  const fd_problem *p = in->prob;
  const long long *N = p->N;
  int centred;
  const int mirror_z = p->vel[0] == p->vel[1];
  c->applies = symmetry_applies(p, &centred);
  c->tolerance = 0.0;
  if (!c->applies) {
    snprintf(c->note, sizeof c->note, "not checked (%s)", centred ? "grid above 2^26 points" : "source not at the centre of an odd grid");
    return FD_OK;
  }
  double asym = 0.0;
  FD_CALL(gather_interior(in->dec, in->grid, in->stream, in->result, in->mem));
  if (in->dec->rank == 0) {
    const real_t *g = in->mem->global;
    /* point (i,j,k) 0-based and its mirror N-1-i (and so on), one axis at a time */
    for (long long k = 0; k < N[2]; k++)
      for (long long j = 0; j < N[1]; j++)
        for (long long i = 0; i < N[0]; i++) {
          const double a = g[i + N[0] * (j + N[1] * k)];
          const double m[3] = {g[(N[0] - 1 - i) + N[0] * (j + N[1] * k)], g[i + N[0] * ((N[1] - 1 - j) + N[1] * k)],
                               g[i + N[0] * (j + N[1] * (N[2] - 1 - k))]};
          for (int d = 0; d < (mirror_z ? 3 : 2); d++) {
            double e = fabs(a - m[d]);
            if (e != e) e = INFINITY;
            if (e > asym) asym = e;
          }
        }
  }
  FD_MPI(MPI_Bcast(&asym, 1, MPI_DOUBLE, 0, in->dec->cart));
  c->error = asym;
  c->passed = isfinite(max_u) && max_u > 0.0 && asym <= c->tolerance;
  snprintf(c->note, sizeof c->note, "max |u - mirror(u)| in %s = %.3g (tolerance 0: exact); max |u| = %.4g",
           mirror_z ? "x, y, z" : "x, y (two layers)", asym, max_u);
  return FD_OK;
}

/* ---- the wave's last step, replayed (file comment) ---- */

/* The six faces of a block: face f = 2 d + side (faces.h), its points (p, q) over the two
 * other dimensions a < b at p + n[a] q. */
static void face_dims(int d, int *a, int *b)
{
  *a = d == 0 ? 1 : 0;
  *b = d == 2 ? 1 : 2;
}

/* Host buffers of the replay (verify_reserve's): the six boundary layers of U^(S-1) this rank
 * sends, the six it receives (the neighbours' own layers; 0 beyond a global edge: Dirichlet),
 * and one chunk of planes of each of the three levels. */
typedef struct {
  real_t *send[FD_FACES], *recv[FD_FACES];
  real_t *hu, *hm, *hp; /* U^S, U^(S-1) (one more plane each side), U^(S-2) */
} replay_bufs;

/* Copies this rank's boundary layers of U^(S-1) (the interior points next to each face,
 * whether or not a neighbour is there) out of planes k0..k1 of the host copy h (first element
 * `first`) into r->send. Not Collective. */
static void replay_layers(const fd_grid *g, const real_t *h, long long first, int k0, int k1, replay_bufs *r)
{
  const int *n = g->n;
  for (int k = k0; k <= k1; k++)
    for (int j = 1; j <= n[1]; j++) {
      const real_t *row = h + (fd_grid_index(g, 0, j, k) - first);
      r->send[0][(j - 1) + (size_t)n[1] * (k - 1)] = row[1];
      r->send[1][(j - 1) + (size_t)n[1] * (k - 1)] = row[n[0]];
      for (int i = 1; i <= n[0]; i++) {
        if (j == 1) r->send[2][(i - 1) + (size_t)n[0] * (k - 1)] = row[i];
        if (j == n[1]) r->send[3][(i - 1) + (size_t)n[0] * (k - 1)] = row[i];
        if (k == 1) r->send[4][(i - 1) + (size_t)n[0] * (j - 1)] = row[i];
        if (k == n[2]) r->send[5][(i - 1) + (size_t)n[0] * (j - 1)] = row[i];
      }
    }
}

/* Writes the received layers into the face ghosts of planes k0-1..k1+1 of the host copy h of
 * U^(S-1) (first element `first`; the device field is not touched). Not Collective. */
static void replay_ghosts(const fd_grid *g, real_t *h, long long first, int k0, int k1, const replay_bufs *r)
{
  const int *n = g->n;
  for (int k = k0; k <= k1; k++)
    for (int j = 1; j <= n[1]; j++) {
      real_t *row = h + (fd_grid_index(g, 0, j, k) - first);
      row[0] = r->recv[0][(j - 1) + (size_t)n[1] * (k - 1)];
      row[n[0] + 1] = r->recv[1][(j - 1) + (size_t)n[1] * (k - 1)];
    }
  for (int k = k0; k <= k1; k++)
    for (int i = 1; i <= n[0]; i++) {
      h[fd_grid_index(g, i, 0, k) - first] = r->recv[2][(i - 1) + (size_t)n[0] * (k - 1)];
      h[fd_grid_index(g, i, n[1] + 1, k) - first] = r->recv[3][(i - 1) + (size_t)n[0] * (k - 1)];
    }
  for (int j = 1; j <= n[1]; j++)
    for (int i = 1; i <= n[0]; i++) {
      if (k0 == 1) h[fd_grid_index(g, i, j, 0) - first] = r->recv[4][(i - 1) + (size_t)n[0] * (j - 1)];
      if (k1 == n[2]) h[fd_grid_index(g, i, j, n[2] + 1) - first] = r->recv[5][(i - 1) + (size_t)n[0] * (j - 1)];
    }
}

/* The boundary layers to the neighbours and theirs into r->recv, on a communicator of its own
 * (a duplicate of dec->cart: no message of the halo exchange can match these), a face as
 * n[b] rows of n[a] values (both counts are ints whatever the block). Collective. */
static int replay_swap(const fd_decomp *dec, replay_bufs *r)
{
  MPI_Comm comm;
  FD_MPI(MPI_Comm_dup(dec->cart, &comm));
  int rc = FD_OK;
  for (int d = 0; d < 3 && rc == FD_OK; d++) {
    int a, b;
    face_dims(d, &a, &b);
    MPI_Datatype row;
    if (MPI_Type_contiguous(dec->n[a], FD_MPI_REAL, &row) != MPI_SUCCESS || MPI_Type_commit(&row) != MPI_SUCCESS) {
      rc = fd_set_error(FD_ERR_RUNTIME, "rank %d: verify: MPI_Type_contiguous failed", dec->rank);
      break;
    }
    /* my low layer to the low neighbour, the high neighbour's low layer into my high ghosts;
     * then the other way */
    for (int side = 0; side < 2 && rc == FD_OK; side++) {
      const int f = 2 * d + side, o = 2 * d + 1 - side;
      if (MPI_Sendrecv(r->send[f], dec->n[b], row, dec->nbr[f], f, r->recv[o], dec->n[b], row, dec->nbr[o], f, comm,
                       MPI_STATUS_IGNORE) != MPI_SUCCESS)
        rc = fd_set_error(FD_ERR_RUNTIME, "rank %d: verify: MPI_Sendrecv of the replay's layers failed", dec->rank);
    }
    MPI_Type_free(&row);
  }
  MPI_Comm_free(&comm);
  return rc;
}

/* What the replay found on this rank. */
typedef struct {
  long long differ;  /* points where the replay and U^S are not equal (NaN never is) */
  double max_diff;   /* max |replay - U^S| (infinite where either is not finite) */
  long long first[3]; /* global index of the first point that differs */
} replay_found;

/* Planes k0..k1 of the replay against U^S (host copies; hm's face ghosts hold the
 * neighbours' layers): the stencil of each layer from pointwise.h, the point source of the
 * last step after it. Not Collective. */
static void replay_planes(const fd_verify_input *in, const replay_bufs *r, long long fu, long long fm, long long fp,
                          int k0, int k1, real_t src_val, replay_found *found)
{
  const fd_problem *p = in->prob;
  const fd_grid *g = in->grid;
  const int *n = g->n;
  const long long sx = g->sx, sxy = g->sxy, *st = in->dec->start;
  long long sl[3];
  for (int d = 0; d < 3; d++) sl[d] = p->src[d] - st[d];
  for (int k = k0; k <= k1; k++) {
    const fd_coeffs *c = st[2] + k <= p->iface ? &p->coeffs : &p->coeffs2; /* as step.c splits */
    for (int j = 1; j <= n[1]; j++) {
      const long long e = fd_grid_index(g, 0, j, k);
      const real_t *a = r->hu + (e - fu), *b = r->hm + (e - fm), *f = r->hp + (e - fp);
      for (int i = 1; i <= n[0]; i++) {
        real_t v = fd_stencil_point_f(c->cc, c->cx, c->cy, c->cz, c->cf, b[i], b[i - 1], b[i + 1], b[i - sx], b[i + sx],
                                      b[i - sxy], b[i + sxy], f[i]);
        if (i == sl[0] && j == sl[1] && k == sl[2] && src_val != 0) v += src_val;
        if (v == a[i]) continue;
        double dv = fabs((double)v - (double)a[i]);
        if (dv != dv) dv = INFINITY;
        if (found->differ++ == 0) {
          found->first[0] = st[0] + i;
          found->first[1] = st[1] + j;
          found->first[2] = st[2] + k;
        }
        if (dv > found->max_diff) found->max_diff = dv;
      }
    }
  }
}

/* The last step replayed (file comment). Collective. */
static int check_replay(const fd_verify_input *in, fd_check *c)
{
  const fd_problem *p = in->prob;
  const fd_grid *g = in->grid;
  const fd_decomp *dec = in->dec;
  const int *n = g->n;
  const long long S = in->steps;
  c->tolerance = 0.0;
  if (S < 1 || !in->prev || !in->prev2) {
    snprintf(c->note, sizeof c->note, "not applied: no step to replay");
    return FD_OK;
  }
  const int K = chunk_planes(g);
  /* the buffers verify_reserve made before the first step (fd_verify_memory) */
  replay_bufs r;
  for (int f = 0; f < FD_FACES; f++) {
    int a, b;
    face_dims(f / 2, &a, &b);
    r.send[f] = in->mem->face_send[f];
    r.recv[f] = in->mem->face_recv[f];
    memset(r.recv[f], 0, (size_t)n[a] * (size_t)n[b] * sizeof(real_t)); /* 0: the Dirichlet value beyond a global edge */
  }
  r.hu = in->mem->chunk[0];
  r.hm = in->mem->chunk[1];
  r.hp = in->mem->chunk[2];
  int err = FD_OK;
  /* 1. this rank's boundary layers of U^(S-1), from the field itself */
  for (int k0 = 1; k0 <= n[2] && err == FD_OK; k0 += K) {
    const int k1 = k0 + K - 1 < n[2] ? k0 + K - 1 : n[2];
    long long fm;
    err = copy_planes(g, in->stream, in->prev, k0, k1, r.hm, &fm);
    if (err == FD_OK) replay_layers(g, r.hm, fm, k0, k1, &r);
  }
  err = fd_agree(dec->cart, err);
  /* 2. the neighbours' layers, by messages of the replay's own */
  if (err == FD_OK) err = fd_agree(dec->cart, replay_swap(dec, &r));
  /* 3. the step S-1 -> S: stencil, then the source at the time of step S-1 (step.c adds
   * (real_t)(src_scale s((S-1) dt)) to the new level in real_t) */
  const real_t src_val = (real_t)(p->src_scale * problem_ricker(p, (double)(S - 1) * p->dt));
  replay_found found = {0, 0.0, {0, 0, 0}};
  for (int k0 = 1; k0 <= n[2] && err == FD_OK; k0 += K) {
    const int k1 = k0 + K - 1 < n[2] ? k0 + K - 1 : n[2];
    long long fu, fm, fp;
    err = copy_planes(g, in->stream, in->result, k0, k1, r.hu, &fu);
    if (err == FD_OK) err = copy_planes(g, in->stream, in->prev, k0 - 1, k1 + 1, r.hm, &fm);
    if (err == FD_OK) err = copy_planes(g, in->stream, in->prev2, k0, k1, r.hp, &fp);
    if (err == FD_OK) {
      replay_ghosts(g, r.hm, fm, k0, k1, &r);
      replay_planes(in, &r, fu, fm, fp, k0, k1, src_val, &found);
    }
  }
  FD_CALL(fd_agree(dec->cart, err));
  /* 4. over the ranks: the count, the largest difference, the first rank that differs and
   * its first point */
  long long differ = found.differ;
  double max_diff = found.max_diff;
  int first_rank = found.differ ? dec->rank : dec->size;
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &differ, 1, MPI_LONG_LONG, MPI_SUM, dec->cart));
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &max_diff, 1, MPI_DOUBLE, MPI_MAX, dec->cart));
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, &first_rank, 1, MPI_INT, MPI_MIN, dec->cart));
  if (differ) FD_MPI(MPI_Bcast(found.first, 3, MPI_LONG_LONG, first_rank, dec->cart));
  const double total = (double)p->N[0] * (double)p->N[1] * (double)p->N[2];
  c->applies = 1;
  c->error = max_diff;
  c->passed = differ == 0;
  if (differ)
    snprintf(c->note, sizeof c->note, "step %lld recomputed from the neighbours' own layers: %lld of %.0f points "
             "differ, max %.3g, first (%lld,%lld,%lld) on rank %d (tolerance 0)", S, differ, total, max_diff,
             found.first[0], found.first[1], found.first[2], first_rank);
  else
    snprintf(c->note, sizeof c->note, "step %lld recomputed from the neighbours' own layers: all %.0f points equal "
             "(tolerance 0: the same arithmetic)", S, total);
  return FD_OK;
}

static int check_wave(const fd_verify_input *in, fd_verify *out)
{
  snprintf(out->name, sizeof out->name, "wave");
  double max_u = 0.0;
  fd_check *e = add_check(out, "energy balance");
  FD_CALL(check_energy(in, e, &max_u));
  FD_CALL(check_symmetry(in, add_check(out, "mirror symmetry"), max_u));
  FD_CALL(check_replay(in, add_check(out, "last-step replay")));
  out->error_max = e->error;
  out->tolerance = e->applies ? e->tolerance : INFINITY;
  return FD_OK;
}

/* ---- the verdict ---- */

/* The operator's checks of in, with its host memory reserved. Collective. */
static int run_checks(const fd_verify_input *in, fd_verify *out)
{
  switch (in->prob->op) {
  case FD_OP_LAPLACIAN: FD_CALL(check_laplacian(in, out)); break;
  case FD_OP_HEAT: FD_CALL(check_heat(in, out)); break;
  case FD_OP_JACOBI: FD_CALL(check_jacobi(in, out)); break;
  case FD_OP_WAVE: FD_CALL(check_wave(in, out)); break;
  default: break;
  }
  return FD_OK;
}

int verify_run(const fd_verify_input *in, fd_verify *out)
{
  const fd_problem *p = in->prob;
  memset(out, 0, sizeof *out);
  out->checked = 1;
  if (in->mem) {
    FD_CALL(run_checks(in, out));
  } else { /* no reservation: this call's own, freed on every path */
    fd_verify_memory mem;
    fd_verify_input own = *in;
    own.mem = &mem;
    int rc = verify_reserve(p, in->dec, in->grid, &mem);
    if (rc == FD_OK) rc = run_checks(&own, out);
    verify_release(&mem);
    FD_CALL(rc);
  }
  if (p->op != FD_OP_JACOBI && p->op != FD_OP_WAVE) out->tolerance = out->check[0].applies ? out->check[0].tolerance : INFINITY;
  /* a field holding NaN or infinity is never right (a ghost no exchange wrote is NaN until one
   * does): FAIL, even where no check could decide the run */
  double max_abs, rms;
  FD_CALL(norms(in, in->result, NULL, &max_abs, &rms));
  const int finite = isfinite(max_abs) && isfinite(rms);
  if (!finite && out->nchecks < FD_CHECKS_MAX) {
    fd_check *c = add_check(out, "finite field");
    c->applies = 1;
    c->error = INFINITY;
    snprintf(c->note, sizeof c->note, "max |u| = %.3g, RMS %.3g: the field holds NaN or infinity", max_abs, rms);
  }
  int applied = 0, failed = !finite;
  size_t len = 0;
  out->detail[0] = '\0';
  for (int q = 0; q < out->nchecks; q++) {
    const fd_check *c = &out->check[q];
    applied += c->applies;
    failed += c->applies && !c->passed;
    len += (size_t)snprintf(out->detail + len, len < sizeof out->detail ? sizeof out->detail - len : 0, "%s%s: %s%s",
                            q ? "; " : "", c->name, c->note, !c->applies ? "" : (c->passed ? " ok" : " FAILED"));
  }
  out->verdict = failed ? FD_VERDICT_FAIL : (applied ? FD_VERDICT_PASS : FD_VERDICT_UNVERIFIED);
  out->passed = out->verdict == FD_VERDICT_PASS;
  return FD_OK;
}

/* One buffer of verify_reserve: *ptr gets `bytes` (pinned host memory when pinned) unless an
 * earlier one failed (*err set); a failure records the line naming the rank, what and bytes. */
static void reserve(void **ptr, size_t bytes, int pinned, const char *what, int rank, int *err)
{
  if (*err != FD_OK) return;
  if (pinned ? be_host_alloc(ptr, bytes) == BE_OK : (*ptr = malloc(bytes)) != NULL) return;
  *ptr = NULL;
  *err = fd_set_error(FD_ERR_RUNTIME, "rank %d: cannot allocate %s (%zu bytes): %s", rank, what, bytes,
                      pinned ? be_error_message() : "out of host memory");
}

int verify_reserve(const fd_problem *p, const fd_decomp *dec, const fd_grid *g,
                   fd_verify_memory *m)
{
  memset(m, 0, sizeof *m);
  int err = FD_OK, centred;
  const int r = dec->rank;
  if (p->op == FD_OP_WAVE) { /* the energy check (where n_hist >= 0) and the last-step replay */
    const size_t bytes = chunk_elems(g) * sizeof(real_t);
    reserve((void **)&m->chunk[0], bytes, 0, "the wave checks' planes of the last level", r, &err);
    reserve((void **)&m->chunk[1], bytes, 0, "the wave checks' planes of the level before", r, &err);
    reserve((void **)&m->chunk[2], bytes, 0, "the last-step replay's planes of the level two before", r, &err);
    for (int f = 0; f < FD_FACES; f++) {
      int a, b;
      face_dims(f / 2, &a, &b);
      const size_t layer = (size_t)g->n[a] * (size_t)g->n[b] * sizeof(real_t);
      reserve((void **)&m->face_send[f], layer, 0, "the last-step replay's boundary layer", r, &err);
      reserve((void **)&m->face_recv[f], layer, 0, "the last-step replay's neighbour layer", r, &err);
    }
  }
  if (p->op == FD_OP_WAVE && symmetry_applies(p, &centred)) {
    const int *n = dec->n;
    const size_t ranks = (size_t)dec->size, whole = (size_t)(p->N[0] * p->N[1] * p->N[2]) * sizeof(real_t);
    reserve((void **)&m->block, g->elems * sizeof(real_t), 1, "the symmetry check's copy of the local field", r, &err);
    reserve((void **)&m->pack, (size_t)n[0] * n[1] * n[2] * sizeof(real_t), 0, "the symmetry check's local interior",
            r, &err);
    if (r == 0) {
      reserve((void **)&m->boxes, 6 * sizeof *m->boxes * ranks, 0, "the symmetry check's list of blocks", r, &err);
      reserve((void **)&m->counts, sizeof *m->counts * ranks, 0, "the symmetry check's counts", r, &err);
      reserve((void **)&m->displs, sizeof *m->displs * ranks, 0, "the symmetry check's offsets", r, &err);
      reserve((void **)&m->recv, whole, 0, "the symmetry check's gathered blocks", r, &err);
      reserve((void **)&m->global, whole, 0, "the symmetry check's global field", r, &err);
    }
  }
  return fd_agree(dec->cart, err);
}

void verify_release(fd_verify_memory *m)
{
  for (int q = 0; q < 3; q++) free(m->chunk[q]);
  for (int f = 0; f < FD_FACES; f++) {
    free(m->face_send[f]);
    free(m->face_recv[f]);
  }
  (void)be_host_free(m->block);
  free(m->pack);
  free(m->boxes);
  free(m->counts);
  free(m->displs);
  free(m->recv);
  free(m->global);
  memset(m, 0, sizeof *m);
}

const char *verify_verdict_name(fd_verdict v)
{
  static const char *const names[] = {"SKIPPED", "PASS", "FAIL", "UNVERIFIED"};
  return names[v];
}
