/* test_gpu_kernels.c - GPU backend tests (ctest label gpu), plain C without cmocka (the GPU
 * nodes have no cmocka headers). Proves, on odd, tiny (n = 1, 2) and random local sizes:
 *   - every stencil variant (baseline, reordered, zmarch) x tile x vector width x block shape x
 *     y-strips / z-chunk length (chunks that do not divide nz) x operator
 *     (laplacian, heat, jacobi with f) matches a host reference loop built on pointwise.h to
 *     rounding (|gpu - ref| <= tol * sum of |terms| per point; tol 1e-12 double, 1e-5 float);
 *   - outputs poisoned with NaN beforehand: every point of the region is written, no point
 *     outside it is (ghosts, and for INTERIOR the shell);
 *   - ALL == INTERIOR + SHELL bitwise, and every configuration gives bitwise the baseline's
 *     field;
 *   - the autotune's candidate list is stable and every candidate valid;
 *   - the quadratic field's discrete Laplacian is 3;
 *   - pack/unpack of all faces (and of a subset) round-trips exactly and touches nothing else;
 *   - be_fill equals fd_field_value bitwise for every kind (the sine too: its factors come
 *     from the host's sin), ghosts included, with one and three ghost layers; be_norms
 *     matches a host loop, is deterministic, and its sine reference is the host's bitwise;
 *   - be_stencil_zrange over two z-ranges equals be_stencil bitwise; be_add_point adds at one
 *     point only;
 *   - z-marching on arrays beyond L2, up and mirrored down, equals the baseline bitwise;
 *   - the fused kernel equals T single steps bitwise (test_fused), and its configurations
 *     shrink to the shared memory a device offers or fail with a message (test_fused_smem);
 *   - streams (high priority), events and error reporting work.
 * Ends with "N passed, M failed"; exit status 1 on any failure.
 *
 * Usage: test_gpu_kernels [--quick] [--seed S]   (--quick: one size, fewer configurations,
 *        for compute-sanitizer)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gpu_check.h"
#include "gpu_tuning.h"
#include "pointwise.h"

#define TOL (sizeof(real_t) == 8 ? 1e-12 : 1e-5)

static void to_host(real_t *h, const real_t *d, size_t n)
{
  REQUIRE(be_memcpy_async(h, d, n * sizeof(real_t), BE_COPY_D2H, S));
  REQUIRE(be_stream_sync(S));
}
static void to_dev(real_t *d, const real_t *h, size_t n)
{
  REQUIRE(be_memcpy_async(d, h, n * sizeof(real_t), BE_COPY_H2D, S));
  REQUIRE(be_stream_sync(S));
}

/* The layout of backend.h for interior extents nx x ny x nz, one ghost layer. */
static fd_grid grid3(int nx, int ny, int nz)
{
  const int n[3] = {nx, ny, nz};
  fd_grid g;
  if (fd_grid_init(&g, n, 1) != 0) {
    printf("FATAL: grid %dx%dx%d too large\n", nx, ny, nz);
    exit(1);
  }
  return g;
}

static int same_bits(real_t a, real_t b) { return memcmp(&a, &b, sizeof a) == 0; }

static fd_field random_field(uint64_t seed, double scale)
{
  fd_field fl;
  memset(&fl, 0, sizeof fl);
  fl.kind = FD_FIELD_RANDOM;
  fl.scale = scale;
  fl.seed = seed;
  for (int d = 0; d < 3; d++) {
    fl.h[d] = 1.0;
    fl.L[d] = 1.0;
  }
  return fl;
}

/* ---- host reference ------------------------------------------------------------------------ */

#define IDX(i, j, k) ((size_t)fd_grid_index(g, (i), (j), (k)))

/* ref[p] = stencil at every interior point; mag[p] = sum of |terms| (rounding scale). */
static void host_stencil(const fd_grid *g, const fd_coeffs *c, const real_t *u, const real_t *f,
                         real_t *ref, double *mag)
{
  const size_t sx = (size_t)g->sx, pz = (size_t)g->sxy;
  for (int k = 1; k <= g->n[2]; k++)
    for (int j = 1; j <= g->n[1]; j++)
      for (int i = 1; i <= g->n[0]; i++) {
        size_t p = IDX(i, j, k);
        real_t v = fd_stencil_point(c->cc, c->cx, c->cy, c->cz, u[p], u[p - 1], u[p + 1],
                                    u[p - sx], u[p + sx], u[p - pz], u[p + pz]);
        double m = fabs((double)c->cc * u[p]) + fabs((double)c->cx) * (fabs(u[p - 1]) + fabs(u[p + 1])) +
                   fabs((double)c->cy) * (fabs(u[p - sx]) + fabs(u[p + sx])) +
                   fabs((double)c->cz) * (fabs(u[p - pz]) + fabs(u[p + pz]));
        if (f) {
          v = v + c->cf * f[p];
          m += fabs((double)c->cf * f[p]);
        }
        ref[p] = v;
        mag[p] = m;
      }
}

static int in_box(int i, int j, int k, const int lo[3], const int hi[3])
{
  return i >= lo[0] && i <= hi[0] && j >= lo[1] && j <= hi[1] && k >= lo[2] && k <= hi[2];
}

/* Checks out (host copy) over the whole array: points in the region match ref, others are
 * still NaN. region: ALL, INTERIOR or SHELL of the deferred faces `deferred` (the interior
 * leaves the one-point layer next to each deferred face). Returns the number of bad points. */
static long check_region(const fd_grid *g, fd_region region, unsigned deferred, const real_t *out,
                         const real_t *ref, const double *mag, const char *what)
{
  const int all_lo[3] = {1, 1, 1}, all_hi[3] = {g->n[0], g->n[1], g->n[2]};
  int in_lo[3], in_hi[3];
  for (int d = 0; d < 3; d++) {
    in_lo[d] = (deferred >> (2 * d)) & 1u ? 2 : 1;
    in_hi[d] = (deferred >> (2 * d + 1)) & 1u ? g->n[d] - 1 : g->n[d];
  }
  long bad_val = 0, unwritten = 0, stray = 0;
  double worst = 0;
  for (int k = 0; k <= g->n[2] + 1; k++)
    for (int j = 0; j <= g->n[1] + 1; j++)
      for (int i = 0; i <= g->n[0] + 1; i++) {
        size_t p = IDX(i, j, k);
        int a = in_box(i, j, k, all_lo, all_hi), in = in_box(i, j, k, in_lo, in_hi);
        int want = region == FD_REGION_ALL ? a : region == FD_REGION_INTERIOR ? in : (a && !in);
        if (want) {
          if (out[p] != out[p]) {
            unwritten++;
            continue;
          }
          double d = fabs((double)out[p] - (double)ref[p]);
          double lim = TOL * (mag[p] > 1e-300 ? mag[p] : 1e-300);
          if (d > lim) bad_val++;
          if (mag[p] > 0 && d / mag[p] > worst) worst = d / mag[p];
        } else if (out[p] == out[p]) {
          stray++;
        }
      }
  check(unwritten == 0 && stray == 0 && bad_val == 0,
        "%s: %ld unwritten, %ld written outside the region, %ld beyond tolerance (worst %.3g)",
        what, unwritten, stray, bad_val, worst);
  return unwritten + stray + bad_val;
}

/* ---- stencil tests ------------------------------------------------------------------------- */

static fd_kernel kcfg(fd_kernel_id id, int tile, int vec, int bx, int by, int chunk, int strips)
{
  fd_kernel k;
  memset(&k, 0, sizeof k);
  k.id = id, k.tile = tile, k.vec = vec, k.block[0] = bx, k.block[1] = by, k.chunk = chunk;
  k.strips = strips;
  return k;
}

/* The configurations under test; the first, the baseline, gives the reference field. */
static int build_variants(fd_kernel *v, int max, int quick)
{
  int n = 0;
#define ADD(...)                                                                             \
  do {                                                                                       \
    if (n < max) v[n++] = kcfg(__VA_ARGS__);                                                 \
  } while (0)
  ADD(FD_KERNEL_BASELINE, 0, 0, 0, 0, 0, 0);
  if (!quick) ADD(FD_KERNEL_BASELINE, 0, 0, 16, 5, 0, 0);
  for (int m = 1; m <= 16; m *= 2) {
    ADD(FD_KERNEL_REORDERED, m, 0, 0, 0, 0, 0); /* the rules' vec, block and strips */
    ADD(FD_KERNEL_REORDERED, m, 1, 0, 0, 0, 0);
    if (!quick) {
      ADD(FD_KERNEL_REORDERED, m, 1, 32, 3, 0, 0);
      ADD(FD_KERNEL_REORDERED, m, 1, 8, 4, 0, 2); /* the y-strip walk */
      ADD(FD_KERNEL_REORDERED, m, 2, 16, 3, 0, 0); /* 48 threads: pairs fall back */
      ADD(FD_KERNEL_REORDERED, m, 2, 64, 1, 0, 3); /* pairs, several rows per block, strips */
    }
    ADD(FD_KERNEL_REORDERED, m, 2, 0, 0, 0, 0); /* 16-byte pairs where possible */
  }
  /* short-chunk z-marching: rows x vec, chunks that do and do not divide nz, y-strips */
  for (int rows = 1; rows <= 2; rows++)
    for (int vec = 1; vec <= 2; vec++) {
      ADD(FD_KERNEL_ZMARCH, rows, vec, 0, 0, 0, 0); /* the rules' block, chunk and strips */
      ADD(FD_KERNEL_ZMARCH, rows, vec, 32, 3, 3, 0);
      ADD(FD_KERNEL_ZMARCH, rows, vec, 8, 2, 5, 3); /* 3 y-strips */
      if (!quick) {
        ADD(FD_KERNEL_ZMARCH, rows, vec, 8, 2, 1000, 0); /* whole columns */
        ADD(FD_KERNEL_ZMARCH, rows, vec, 5, 7, 7, 2);
        ADD(FD_KERNEL_ZMARCH, rows, vec, 64, 8, 2, 0); /* 512 threads */
        ADD(FD_KERNEL_ZMARCH, rows, vec, 1, 1, 1, 7);
      }
    }
#undef ADD
  return n;
}

static void test_stencil_size(const fd_grid *g, uint64_t seed, int quick)
{
  const size_t np = g->elems;
  const size_t bytes = np * sizeof(real_t);
  real_t *du, *df, *dout, *dshell;
  REQUIRE(be_malloc((void **)&du, bytes));
  REQUIRE(be_malloc((void **)&df, bytes));
  REQUIRE(be_malloc((void **)&dout, bytes));
  REQUIRE(be_malloc((void **)&dshell, bytes));
  real_t *u = malloc(bytes), *f = malloc(bytes), *ref = malloc(bytes), *out = malloc(bytes);
  real_t *first = malloc(bytes), *nan_buf = malloc(bytes);
  double *mag = malloc(np * sizeof(double));
  for (size_t p = 0; p < np; p++) nan_buf[p] = (real_t)NAN;

  fd_field fu = random_field(seed, 1.0), ff = random_field(seed ^ 0xabcdef, 2.0);
  REQUIRE(be_fill(g, &fu, du, S));
  REQUIRE(be_fill(g, &ff, df, S));
  to_host(u, du, np);
  to_host(f, df, np);

  /* three operators with grid spacings that differ per dimension */
  const double hx = 0.5, hy = 0.25, hz = 0.125, dt = 0.01;
  const double ix = 1 / (hx * hx), iy = 1 / (hy * hy), iz = 1 / (hz * hz), D = 2 * (ix + iy + iz);
  struct {
    const char *name;
    fd_coeffs c;
    const real_t *f;
  } ops[3] = {
      {"laplacian", {(real_t)(-D), (real_t)ix, (real_t)iy, (real_t)iz, 0}, NULL},
      {"heat", {(real_t)(1 - dt * D), (real_t)(dt * ix), (real_t)(dt * iy), (real_t)(dt * iz), 0}, NULL},
      {"jacobi", {0, (real_t)(ix / D), (real_t)(iy / D), (real_t)(iz / D), (real_t)(-1 / D)}, df},
  };

  fd_kernel vars[160];
  const int nv = build_variants(vars, 160, quick);
  for (int o = 0; o < 3; o++) {
    host_stencil(g, &ops[o].c, u, ops[o].f ? f : NULL, ref, mag);
    for (int vi = 0; vi < nv; vi++) {
      fd_kernel used = vars[vi];
      char desc[FD_KERNEL_SPEC_MAX], what[256];
      /* ALL */
      to_dev(dout, nan_buf, np);
      /* the interior/shell split of every variant, for a mask of deferred faces that rotates
       * through all six, one axis, alternate sides and none */
      static const unsigned masks[] = {FD_FACES_ALL, 0x0cu, 0x2au, 0x31u, 0x00u};
      const unsigned mask = masks[vi % (int)(sizeof masks / sizeof masks[0])];
      REQUIRE(be_stencil(g, FD_REGION_ALL, FD_FACES_ALL, &ops[o].c, du, ops[o].f, dout,
                         vars[vi], S));
      REQUIRE(be_stream_sync(S));
      REQUIRE(be_kernel_resolve(g, &used));
      fd_kernel_format(&used, desc, sizeof desc);
      to_host(out, dout, np);
      snprintf(what, sizeof what, "%dx%dx%d %s %s ALL", g->n[0], g->n[1], g->n[2], ops[o].name, desc);
      check_region(g, FD_REGION_ALL, 0, out, ref, mag, what);
      if (vi == 0) {
        memcpy(first, out, bytes);
      } else {
        size_t diff = 0;
        for (size_t p = 0; p < np; p++) diff += !same_bits(out[p], first[p]);
        check(diff == 0, "%s: %zu points differ bitwise from the baseline", what, diff);
      }
      /* INTERIOR then SHELL into a poisoned field: the union is ALL, bitwise */
      to_dev(dshell, nan_buf, np);
      REQUIRE(be_stencil(g, FD_REGION_INTERIOR, mask, &ops[o].c, du, ops[o].f, dshell, vars[vi], S));
      to_host(out, dshell, np);
      snprintf(what, sizeof what, "%dx%dx%d %s %s INTERIOR of 0x%02x", g->n[0], g->n[1], g->n[2],
               ops[o].name, desc, mask);
      check_region(g, FD_REGION_INTERIOR, mask, out, ref, mag, what);
      if (vi < 5) { /* the shell alone, into a fresh poisoned field, for every mask */
        to_dev(dout, nan_buf, np);
        REQUIRE(be_stencil(g, FD_REGION_SHELL, mask, &ops[o].c, du, ops[o].f, dout, vars[vi], S));
        to_host(out, dout, np);
        snprintf(what, sizeof what, "%dx%dx%d %s SHELL of 0x%02x", g->n[0], g->n[1], g->n[2],
                 ops[o].name, mask);
        check_region(g, FD_REGION_SHELL, mask, out, ref, mag, what);
      }
      REQUIRE(be_stencil(g, FD_REGION_SHELL, mask, &ops[o].c, du, ops[o].f, dshell, vars[vi], S));
      to_host(out, dshell, np);
      size_t diff = 0;
      for (size_t p = 0; p < np; p++) diff += !same_bits(out[p], first[p]);
      check(diff == 0, "%dx%dx%d %s %s: INTERIOR+SHELL differs bitwise from ALL at %zu points",
            g->n[0], g->n[1], g->n[2], ops[o].name, desc, diff);
    }
  }
  free(u), free(f), free(ref), free(out), free(first), free(nan_buf), free(mag);
  REQUIRE(be_free(du));
  REQUIRE(be_free(df));
  REQUIRE(be_free(dout));
  REQUIRE(be_free(dshell));
}

/* The quadratic 0.5*(x(x-Lx)+y(y-Ly)+z(z-Lz)) has discrete Laplacian exactly 3 (to rounding). */
static void test_quadratic_laplacian(const fd_grid *g)
{
  const size_t np = g->elems;
  real_t *du, *dout;
  REQUIRE(be_malloc((void **)&du, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dout, np * sizeof(real_t)));
  fd_field q;
  memset(&q, 0, sizeof q);
  q.kind = FD_FIELD_QUADRATIC;
  q.scale = 1.0;
  for (int d = 0; d < 3; d++) {
    q.L[d] = 1.0;
    q.h[d] = 1.0 / (g->n[d] + 1);
  }
  fd_coeffs c = {0, (real_t)(1 / (q.h[0] * q.h[0])), (real_t)(1 / (q.h[1] * q.h[1])),
                 (real_t)(1 / (q.h[2] * q.h[2])), 0};
  c.cc = -2 * (c.cx + c.cy + c.cz);
  fd_field three;
  memset(&three, 0, sizeof three);
  three.kind = FD_FIELD_CONST;
  three.scale = 3.0;
  REQUIRE(be_fill(g, &q, du, S));
  fd_kernel k;
  REQUIRE(be_kernel_default(g, &k));
  REQUIRE(be_stencil(g, FD_REGION_ALL, 0, &c, du, NULL, dout, k, S));
  fd_norms nm;
  REQUIRE(be_norms(g, dout, NULL, &three, &nm, S));
  double tol = sizeof(real_t) == 8 ? 1e-6 : 2.0;
  check(nm.max_abs < tol, "%dx%dx%d: Laplacian of the quadratic is 3 to %.3g (max error %.3g)",
        g->n[0], g->n[1], g->n[2], tol, nm.max_abs);
  REQUIRE(be_free(du));
  REQUIRE(be_free(dout));
}

/* ---- faces ----------------------------------------------------------------------------------- */

static void test_faces(const fd_grid *g, const int active[FD_FACES])
{
  const size_t np = g->elems;
  fd_faces fc;
  fd_faces_init(&fc, g->n);
  for (int f = 0; f < FD_FACES; f++) fc.active[f] = active[f];
  real_t *du, *dbuf, *dv;
  REQUIRE(be_malloc((void **)&du, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dv, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dbuf, fc.total * sizeof(real_t)));
  real_t *u = malloc(np * sizeof(real_t)), *v = malloc(np * sizeof(real_t));
  real_t *buf = malloc(fc.total * sizeof(real_t));
  fd_field fl = random_field(77, 1.0);
  REQUIRE(be_fill(g, &fl, du, S));
  to_host(u, du, np);
  for (size_t e = 0; e < fc.total; e++) buf[e] = (real_t)NAN;
  to_dev(dbuf, buf, fc.total);
  REQUIRE(be_pack_faces(g, &fc, du, dbuf, S));
  to_host(buf, dbuf, fc.total);
  long bad = 0;
  for (int face = 0; face < FD_FACES; face++) {
    int d = face / 2, a, b;
    fd_face_plane_dims(d, &a, &b);
    int layer = fd_face_layer(&fc, face, 0);
    for (int q = 0; q < fc.n[b]; q++)
      for (int p = 0; p < fc.n[a]; p++) {
        int ijk[3];
        ijk[d] = layer, ijk[a] = p + 1, ijk[b] = q + 1;
        real_t got = buf[fc.offset[face] + (size_t)p + (size_t)fc.n[a] * q];
        if (fc.active[face]) bad += !same_bits(got, u[IDX(ijk[0], ijk[1], ijk[2])]);
        else bad += got == got; /* inactive faces untouched (NaN) */
      }
  }
  check(bad == 0, "%dx%dx%d pack: %ld wrong buffer elements", g->n[0], g->n[1], g->n[2], bad);

  /* unpack into a NaN field: exactly the active ghost faces get the buffer values */
  for (size_t p = 0; p < np; p++) v[p] = (real_t)NAN;
  to_dev(dv, v, np);
  REQUIRE(be_unpack_faces(g, &fc, dbuf, dv, S));
  to_host(v, dv, np);
  bad = 0;
  long expected_written = 0;
  for (int face = 0; face < FD_FACES; face++) {
    if (!fc.active[face]) continue;
    int d = face / 2, a, b;
    fd_face_plane_dims(d, &a, &b);
    int layer = fd_face_layer(&fc, face, 1);
    for (int q = 0; q < fc.n[b]; q++)
      for (int p = 0; p < fc.n[a]; p++) {
        int ijk[3];
        ijk[d] = layer, ijk[a] = p + 1, ijk[b] = q + 1;
        bad += !same_bits(v[IDX(ijk[0], ijk[1], ijk[2])],
                          buf[fc.offset[face] + (size_t)p + (size_t)fc.n[a] * q]);
        expected_written++;
      }
  }
  long written = 0;
  for (size_t p = 0; p < np; p++) written += v[p] == v[p];
  check(bad == 0 && written == expected_written,
        "%dx%dx%d unpack: %ld wrong ghosts, %ld points written (expected %ld)", g->n[0], g->n[1],
        g->n[2], bad, written, expected_written);
  free(u), free(v), free(buf);
  REQUIRE(be_free(du));
  REQUIRE(be_free(dv));
  REQUIRE(be_free(dbuf));
}

/* ---- fill and norms ---------------------------------------------------------------------------- */

static void test_fill_norms(const fd_grid *g)
{
  const size_t np = g->elems;
  real_t *da, *db;
  REQUIRE(be_malloc((void **)&da, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&db, np * sizeof(real_t)));
  real_t *a = malloc(np * sizeof(real_t)), *b = malloc(np * sizeof(real_t));
  const char *names[4] = {"const", "quadratic", "sine", "random"};
  fd_field fl[4];
  for (int kind = 0; kind < 4; kind++) {
    memset(&fl[kind], 0, sizeof fl[kind]);
    fl[kind].kind = (fd_field_kind)kind;
    fl[kind].scale = 1.5;
    fl[kind].seed = 99;
    for (int d = 0; d < 3; d++) {
      fl[kind].h[d] = 0.01 * (d + 1);
      fl[kind].L[d] = 0.01 * (d + 1) * (3 * g->n[d] + 1);
      fl[kind].offset[d] = 7 * d + 3; /* as if this were a subdomain of a larger grid */
    }
    REQUIRE(be_fill(g, &fl[kind], da, S));
    to_host(a, da, np);
    double worst = 0;
    long bitdiff = 0;
    for (int k = 0; k <= g->n[2] + 1; k++)
      for (int j = 0; j <= g->n[1] + 1; j++)
        for (int i = 0; i <= g->n[0] + 1; i++) {
          real_t want = (real_t)fd_field_value(&fl[kind], fl[kind].offset[0] + i,
                                               fl[kind].offset[1] + j, fl[kind].offset[2] + k);
          real_t got = a[IDX(i, j, k)];
          double d = fabs((double)got - (double)want) / (fabs((double)want) + 1e-300);
          if (!(d <= worst)) worst = d;
          bitdiff += !same_bits(got, want);
        }
    /* every kind bitwise the host's (issue 25: the sine's factors come from the host's sin) */
    check(bitdiff == 0, "fill %s: %ld points differ bitwise from the host (worst relative difference %.3g)",
          names[kind], bitdiff, worst);
  }
  /* the same with several ghost layers, the sine and quadratic kinds, ghosts included */
  {
    fd_grid gd;
    if (fd_grid_init(&gd, g->n, 3) != 0) {
      printf("FATAL: grid too large\n");
      exit(1);
    }
    real_t *dd, *hd = malloc(gd.elems * sizeof(real_t));
    REQUIRE(be_malloc((void **)&dd, gd.elems * sizeof(real_t)));
    for (int kind = FD_FIELD_QUADRATIC; kind <= FD_FIELD_SINE; kind++) {
      REQUIRE(be_fill(&gd, &fl[kind], dd, S));
      REQUIRE(be_memcpy_async(hd, dd, gd.elems * sizeof(real_t), BE_COPY_D2H, S));
      REQUIRE(be_stream_sync(S));
      long bitdiff = 0;
      for (int k = -2; k <= gd.n[2] + 3; k++)
        for (int j = -2; j <= gd.n[1] + 3; j++)
          for (int i = -2; i <= gd.n[0] + 3; i++) {
            real_t want = (real_t)fd_field_value(&fl[kind], fl[kind].offset[0] + i, fl[kind].offset[1] + j,
                                                 fl[kind].offset[2] + k);
            bitdiff += !same_bits(hd[fd_grid_index(&gd, i, j, k)], want);
          }
      check(bitdiff == 0, "fill %s with 3 ghost layers: %ld points differ bitwise from the host", names[kind], bitdiff);
    }
    /* norms against the sine: each point's difference is the host's, so max |a - sine| is */
    REQUIRE(be_fill(&gd, &fl[FD_FIELD_RANDOM], dd, S));
    REQUIRE(be_memcpy_async(hd, dd, gd.elems * sizeof(real_t), BE_COPY_D2H, S));
    REQUIRE(be_stream_sync(S));
    double mx = 0;
    for (int k = 1; k <= gd.n[2]; k++)
      for (int j = 1; j <= gd.n[1]; j++)
        for (int i = 1; i <= gd.n[0]; i++) {
          const fd_field *sn = &fl[FD_FIELD_SINE];
          double d = fabs((double)hd[fd_grid_index(&gd, i, j, k)] -
                          fd_field_value(sn, sn->offset[0] + i, sn->offset[1] + j, sn->offset[2] + k));
          if (d > mx) mx = d;
        }
    fd_norms ns;
    REQUIRE(be_norms(&gd, dd, NULL, &fl[FD_FIELD_SINE], &ns, S));
    check(ns.max_abs == mx, "norms against the sine: max %.17g, host %.17g (bitwise)", ns.max_abs, mx);
    free(hd);
    REQUIRE(be_free(dd));
  }

  /* norms of a - b - ref against a host loop; twice for determinism */
  REQUIRE(be_fill(g, &fl[FD_FIELD_RANDOM], da, S));
  REQUIRE(be_fill(g, &fl[FD_FIELD_SINE], db, S));
  to_host(a, da, np);
  to_host(b, db, np);
  for (int mode = 0; mode < 4; mode++) {
    const real_t *pb = (mode & 1) ? db : NULL;
    const fd_field *pref = (mode & 2) ? &fl[FD_FIELD_QUADRATIC] : NULL;
    double sum = 0, mx = 0;
    for (int k = 1; k <= g->n[2]; k++)
      for (int j = 1; j <= g->n[1]; j++)
        for (int i = 1; i <= g->n[0]; i++) {
          size_t p = IDX(i, j, k);
          double d = a[p];
          if (pb) d -= b[p];
          if (pref) d -= fd_field_value(pref, pref->offset[0] + i, pref->offset[1] + j, pref->offset[2] + k);
          sum += d * d;
          if (fabs(d) > mx) mx = fabs(d);
        }
    fd_norms n1, n2;
    REQUIRE(be_norms(g, da, pb, pref, &n1, S));
    REQUIRE(be_norms(g, da, pb, pref, &n2, S));
    check(fabs(n1.sum_sq - sum) <= 1e-10 * sum && fabs(n1.max_abs - mx) <= 1e-13 * mx &&
              n1.count == (long long)g->n[0] * g->n[1] * g->n[2],
          "norms mode %d: sum %.17g vs host %.17g, max %.17g vs %.17g, count %lld", mode,
          n1.sum_sq, sum, n1.max_abs, mx, n1.count);
    check(n1.sum_sq == n2.sum_sq && n1.max_abs == n2.max_abs, "norms mode %d not deterministic", mode);
  }
  /* a NaN counts as infinitely wrong */
  a[IDX(1, 1, 1)] = (real_t)NAN;
  to_dev(da, a, np);
  fd_norms nn;
  REQUIRE(be_norms(g, da, NULL, NULL, &nn, S));
  check(isinf(nn.max_abs) && isnan(nn.sum_sq), "norms with a NaN: max %g sum %g", nn.max_abs,
        nn.sum_sq);
  free(a), free(b);
  REQUIRE(be_free(da));
  REQUIRE(be_free(db));
}

/* ---- streams, events, errors ------------------------------------------------------------------- */

static void test_streams_events_errors(int quick)
{
  be_stream hi, lo;
  be_event e0, e1;
  REQUIRE(be_stream_create(&hi, BE_PRIORITY_HIGH));
  REQUIRE(be_stream_create(&lo, BE_PRIORITY_NORMAL));
  REQUIRE(be_event_create(&e0));
  REQUIRE(be_event_create(&e1));
  fd_grid g = grid3(64, 64, 64);
  const size_t np = g.elems;
  real_t *du, *dv;
  REQUIRE(be_malloc((void **)&du, np * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dv, np * sizeof(real_t)));
  fd_field fl = random_field(5, 1.0);
  REQUIRE(be_event_record(e0, lo));
  REQUIRE(be_fill(&g, &fl, du, lo));
  REQUIRE(be_event_record(e1, lo));
  REQUIRE(be_stream_wait_event(hi, e1)); /* hi waits for the fill on lo */
  REQUIRE(be_memcpy_async(dv, du, np * sizeof(real_t), BE_COPY_D2D, hi));
  REQUIRE(be_stream_sync(hi));
  REQUIRE(be_event_sync(e1));
  float ms = -1;
  REQUIRE(be_event_elapsed_ms(&ms, e0, e1));
  check(ms >= 0, "event elapsed time %g ms", ms);
  fd_norms nm;
  REQUIRE(be_norms(&g, dv, du, NULL, &nm, hi));
  check(nm.max_abs == 0.0, "copy on the high-priority stream after the event: max diff %g", nm.max_abs);
  be_range_push("test range");
  be_range_pop();

  /* errors: bad tile, u == out, bad device index */
  fd_coeffs c = {1, 1, 1, 1, 0};
  const fd_kernel bad = kcfg(FD_KERNEL_REORDERED, 3, 0, 0, 0, 0, 0);
  int rc = be_stencil(&g, FD_REGION_ALL, 0, &c, du, NULL, dv, bad, lo);
  check(rc != BE_OK && strstr(be_error_message(), "tile") != NULL, "bad tile: rc %d, message '%s'",
        rc, be_error_message());
  const fd_kernel badz = kcfg(FD_KERNEL_ZMARCH, 4, 0, 0, 0, 0, 0);
  rc = be_stencil(&g, FD_REGION_ALL, 0, &c, du, NULL, dv, badz, lo);
  check(rc != BE_OK && strstr(be_error_message(), "tile") != NULL, "zmarch tile 4: rc %d, '%s'",
        rc, be_error_message());
  const fd_kernel ok = kcfg(FD_KERNEL_REORDERED, 2, 0, 0, 0, 0, 0);
  rc = be_stencil(&g, FD_REGION_ALL, 0, &c, du, NULL, du, ok, lo);
  check(rc != BE_OK && strlen(be_error_message()) > 0, "u == out: rc %d", rc);
  const fd_kernel big = kcfg(FD_KERNEL_ZMARCH, 1, 0, 1024, 1, 0, 0);
  rc = be_stencil(&g, FD_REGION_ALL, 0, &c, du, NULL, dv, big, lo);
  check(rc != BE_OK && strstr(be_error_message(), "exceeds") != NULL, "oversized block: rc %d, '%s'",
        rc, be_error_message());
  const fd_kernel bigp = kcfg(FD_KERNEL_REORDERED, 1, 0, 512, 1, 0, 0);
  rc = be_stencil(&g, FD_REGION_ALL, 0, &c, du, NULL, dv, bigp, lo);
  check(rc != BE_OK && strstr(be_error_message(), "exceeds") != NULL,
        "512-thread block for the per-plane kernel: rc %d, '%s'", rc, be_error_message());
  /* the autotune's candidates: the same list every call, each valid on this grid */
  fd_kernel cand[64], cand2[64];
  const int nc = be_kernel_candidates(cand, 64), nc2 = be_kernel_candidates(cand2, 64);
  int bad_cand = nc < 2 || nc != nc2 || memcmp(cand, cand2, sizeof cand[0] * (size_t)nc) != 0;
  for (int i = 0; i < nc; i++) {
    fd_kernel r = cand[i];
    bad_cand += be_kernel_resolve(&g, &r) != BE_OK;
  }
  check(!bad_cand, "be_kernel_candidates: %d candidates, stable and valid", nc);
  if (!quick) { /* (compute-sanitizer would count the failed allocation as an error) */
    void *huge = NULL;
    rc = be_malloc(&huge, (size_t)1 << 62);
    check(rc != BE_OK && strstr(be_error_message(), "Malloc") != NULL,
          "huge allocation fails with a message naming the call: '%s'", be_error_message());
    printf("  error message example: %s\n", be_error_message());
  }

  REQUIRE(be_free(du));
  REQUIRE(be_free(dv));
  REQUIRE(be_event_destroy(e0));
  REQUIRE(be_event_destroy(e1));
  REQUIRE(be_stream_destroy(hi));
  REQUIRE(be_stream_destroy(lo));
}

/* ---- several steps per pass ----------------------------------------------------------------------- */

/* be_stencil_fused equals T single steps bit for bit: level t = be_stencil_box over the part of
 * the fix box that the output box depends on (the output box widened by T - t), from a field
 * that carries every other point over; on grids with one and with several ghost layers, fix
 * boxes that stop at the interior (Dirichlet) or reach into the ghosts (a deep halo), output
 * boxes that are the whole block or part of it, with and without f, every T, row count, block
 * height and chunk (that do and do not divide the planes). Points of out outside the output box
 * stay poisoned. */
static void test_fused(const fd_grid *g, uint64_t seed, int quick)
{
  const size_t np = g->elems, bytes = np * sizeof(real_t);
  real_t *du, *df, *dout, *da, *db;
  REQUIRE(be_malloc((void **)&du, bytes));
  REQUIRE(be_malloc((void **)&df, bytes));
  REQUIRE(be_malloc((void **)&dout, bytes));
  REQUIRE(be_malloc((void **)&da, bytes));
  REQUIRE(be_malloc((void **)&db, bytes));
  real_t *hout = malloc(bytes), *href = malloc(bytes);
  fd_field fu = random_field(seed, 1.0), ff = random_field(seed ^ 0x5eed, 1.0), poison = random_field(0, 0.0);
  poison.kind = FD_FIELD_CONST;
  poison.scale = NAN;
  REQUIRE(be_fill(g, &fu, du, S));
  REQUIRE(be_fill(g, &ff, df, S));
  const fd_coeffs heat = {(real_t)0.4, (real_t)0.11, (real_t)0.09, (real_t)0.1, 0};
  const fd_coeffs jac = {0, (real_t)(1.0 / 6), (real_t)(1.0 / 6), (real_t)(1.0 / 6), (real_t)(-1.0 / 6)};
  const int G = g->ghost;
  /* fix boxes: the interior, and on ghost >= 2 grids the deep-halo box on some sides */
  int fixes[2][2][3], nfix = 1;
  for (int d = 0; d < 3; d++) fixes[0][0][d] = 1, fixes[0][1][d] = g->n[d];
  if (G >= 2) {
    for (int d = 0; d < 3; d++) fixes[1][0][d] = d == 1 ? 1 : 2 - G, fixes[1][1][d] = d == 0 ? g->n[d] : g->n[d] + G - 1;
    nfix = 2;
  }
  /* {tile, vec, block_y, chunk}; zeros: the rule's; the last: the rule within the 64 KiB of
   * shared memory per block of an MI250X */
  static const int shapes[][4] = {{0, 0, 0, 0}, {1, 1, 8, 64}, {2, 2, 8, 3}, {2, 1, 2, 5},
                                  {4, 2, 2, 7}, {1, 2, 16, 1}, {2, 2, 4, 1000}, {4, 2, 1, 9},
                                  {0, 0, 0, 0}};
  const int nshape = quick ? 2 : 9;
  long bad = 0, checked = 0;
  char what[192] = "";
  for (int T = 1; T <= FD_FUSE_MAX; T++)
    for (int fi = 0; fi < nfix; fi++)
      for (int sub = 0; sub < 2; sub++) {
        int lo[3], hi[3];
        for (int d = 0; d < 3; d++) {
          lo[d] = fixes[fi][0][d], hi[d] = fixes[fi][1][d];
          if (sub && hi[d] - lo[d] >= 4) lo[d] += 1, hi[d] -= 2; /* part of the box */
        }
        for (int withf = 0; withf <= 1; withf++) {
          const fd_coeffs *c = withf ? &jac : &heat;
          const real_t *fp = withf ? df : NULL;
          /* the reference: T single steps */
          REQUIRE(be_memcpy_async(da, du, bytes, BE_COPY_D2D, S));
          for (int t = 1; t <= T; t++) {
            int rlo[3], rhi[3];
            for (int d = 0; d < 3; d++) {
              rlo[d] = lo[d] - (T - t) > fixes[fi][0][d] ? lo[d] - (T - t) : fixes[fi][0][d];
              rhi[d] = hi[d] + (T - t) < fixes[fi][1][d] ? hi[d] + (T - t) : fixes[fi][1][d];
            }
            REQUIRE(be_memcpy_async(db, da, bytes, BE_COPY_D2D, S));
            const fd_kernel k = kcfg(FD_KERNEL_ZMARCH, 0, 0, 0, 0, 0, 0);
            REQUIRE(be_stencil_box(g, rlo, rhi, c, da, fp, db, k, S));
            real_t *x = da;
            da = db;
            db = x;
          }
          to_host(href, da, np);
          for (int sh = 0; sh < nshape; sh++) {
            fd_fused cfg = {T, shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3]};
            const int rc = sh == 8 ? gpu_fused_resolve_within(&cfg, 65536) : be_fused_resolve(&cfg);
            if (rc != BE_OK) continue; /* too small a footprint for T */
            REQUIRE(be_fill(g, &poison, dout, S));
            REQUIRE(be_stencil_fused(g, &cfg, lo, hi, fixes[fi][0], fixes[fi][1], c, du, fp, dout, S));
            to_host(hout, dout, np);
            long b = 0;
            for (int k = 1 - G; k <= g->n[2] + G; k++)
              for (int j = 1 - G; j <= g->n[1] + G; j++)
                for (int i = 1 - G; i <= g->n[0] + G; i++) {
                  const size_t p = IDX(i, j, k);
                  if (in_box(i, j, k, lo, hi)) b += !same_bits(hout[p], href[p]);
                  else b += hout[p] == hout[p]; /* untouched: still NaN */
                }
            checked++;
            if (b && !bad) {
              char spec[FD_KERNEL_SPEC_MAX];
              fd_fused_format(&cfg, spec, sizeof spec);
              snprintf(what, sizeof what, "%s fix %d sub %d f %d: %ld points", spec, fi, sub, withf, b);
            }
            bad += b;
          }
        }
      }
  check(bad == 0 && checked > 0, "fused %dx%dx%d ghost %d: %ld configurations, %ld points differ from T single steps (first: %s)",
        g->n[0], g->n[1], g->n[2], G, checked, bad, what);
  free(hout), free(href);
  REQUIRE(be_free(du));
  REQUIRE(be_free(df));
  REQUIRE(be_free(dout));
  REQUIRE(be_free(da));
  REQUIRE(be_free(db));
}

/* ---- main ------------------------------------------------------------------------------------------ */

static uint64_t rng_state;
static int rnd(int lo, int hi) /* uniform in lo..hi */
{
  rng_state = fd_mix64(rng_state);
  return lo + (int)(rng_state % (uint64_t)(hi - lo + 1));
}

/* The fused configurations and the shared memory per block: the rule and the autotune's
 * candidates fit the device; within a smaller share (an MI250X's 64 KiB, and less) the rule
 * takes one column per thread, then fewer threads along y, for every T; a configuration set
 * in full that does not fit is an error that says so, and one byte more lets it through. */
static void test_fused_smem(void)
{
  gpu_device_props props;
  REQUIRE(gpu_get_device_props(&props));
  int fits = 1, shrinks = 1, ncand = 0;
  for (int T = 1; T <= FD_FUSE_MAX; T++) {
    fd_fused rule = {T, 0, 0, 0, 0}, list[32];
    fits &= be_fused_resolve(&rule) == BE_OK && gpu_fused_smem_bytes(&rule) <= props.smem_per_block;
    const int n = be_fused_candidates(T, NULL, list, 32);
    ncand += n;
    for (int i = 0; i < n; i++) fits &= gpu_fused_smem_bytes(&list[i]) <= props.smem_per_block;
    fd_fused big = {T, 0, 0, 0, 0};
    REQUIRE(be_fused_resolve(&big));
    for (size_t limit = 65536; limit >= 4096; limit /= 4) {
      fd_fused c = {T, 0, 0, 0, 0};
      const int rc = gpu_fused_resolve_within(&c, limit);
      if (rc == BE_OK)
        shrinks &= gpu_fused_smem_bytes(&c) <= limit && c.vec <= big.vec && c.block_y <= big.block_y &&
                   (gpu_fused_smem_bytes(&big) <= limit || c.vec < big.vec || c.block_y < big.block_y);
      else /* only where the smallest shape has no output tile left or still does not fit */
        shrinks &= strstr(be_error_message(), "footprint") != NULL ||
                   strstr(be_error_message(), "shared memory") != NULL;
    }
  }
  check(fits && ncand >= FD_FUSE_MAX, "fused: the rule and %d candidates of T = 1..%d fit the %zu bytes of shared memory per block",
        ncand, FD_FUSE_MAX, props.smem_per_block);
  check(shrinks, "fused: the rule shrinks to 64, 16 and 4 KiB of shared memory per block, or says why not");
  fd_fused full = {2, 2, 2, 4, 16};
  REQUIRE(be_fused_resolve(&full));
  const size_t need = gpu_fused_smem_bytes(&full);
  fd_fused a = full, b = full;
  const int rc = gpu_fused_resolve_within(&a, need - 1);
  check(rc == BE_ERROR && strstr(be_error_message(), "shared memory") != NULL,
        "fused: a configuration set in full that needs %zu bytes fails within %zu: %s", need, need - 1,
        rc == BE_ERROR ? be_error_message() : "(accepted)");
  check(gpu_fused_resolve_within(&b, need) == BE_OK && memcmp(&b, &full, sizeof b) == 0,
        "fused: and resolves unchanged within %zu bytes", need);
}

/* The autotune's one-wave candidates (be_fused_candidates with a trial): for blocks of 32^3 to
 * 256^3 and every T, each has the fewest planes per block that keep every block of the pass
 * resident at once (one plane fewer would not), the fixed shapes come first and unchanged, no
 * configuration twice, and a pass whose tiles of one plane exceed a wave gets none. */
static void test_fused_wave(void)
{
  gpu_device_props props;
  REQUIRE(gpu_get_device_props(&props));
  static const int sides[] = {32, 96, 128, 256};
  long checked = 0;
  int bad = 0;
  char what[160] = "";
  for (int si = 0; si < 4; si++)
    for (int T = 1; T <= FD_FUSE_MAX; T++)
      for (int withf = 0; withf <= 1; withf++) {
        fd_fused_trial t;
        memset(&t, 0, sizeof t);
        for (int d = 0; d < 3; d++) t.lo[d] = t.fix_lo[d] = 1, t.hi[d] = t.fix_hi[d] = sides[si];
        t.f = withf ? (const real_t *)&props : NULL; /* only tested for NULL */
        fd_fused fixed[64], list[64];
        const int nf = be_fused_candidates(T, NULL, fixed, 64), n = be_fused_candidates(T, &t, list, 64);
        int b = n < nf || memcmp(fixed, list, sizeof *list * (size_t)nf) != 0;
        for (int i = 0; i < n; i++)
          for (int j = 0; j < i; j++) b |= memcmp(&list[i], &list[j], sizeof *list) == 0;
        for (int i = nf; i < n; i++) {
          int per_sm = 0;
          REQUIRE(gpu_fused_blocks_per_sm(&list[i], withf, &per_sm));
          const long long wave = (long long)per_sm * props.sm_count;
          /* the lanes of a warp from the block's shared rows (2 x 2T rows of the warp's columns per
           * thread, gpu_fused_smem_bytes): 64 in the build that emulates AMD's wavefronts */
          const int lanes = (int)(gpu_fused_smem_bytes(&list[i]) / (4 * sizeof(real_t) * (size_t)(list[i].block_y * T * list[i].vec)));
          const int tw = lanes * list[i].vec - 2 * T, th = list[i].block_y * list[i].tile - 2 * T;
          const long long tiles = (long long)((sides[si] + tw - 1) / tw) * ((sides[si] + th - 1) / th);
          const int c = list[i].chunk;
          const long long blocks = tiles * ((sides[si] + c - 1) / c), fewer = c > 1 ? tiles * ((sides[si] + c - 2) / (c - 1)) : wave + 1;
          b |= per_sm < 1 || blocks > wave || fewer <= wave || gpu_fused_smem_bytes(&list[i]) > props.smem_per_block;
          checked++;
        }
        if (b && !bad)
          snprintf(what, sizeof what, "%d^3, T = %d, f %d: %d candidates, %d fixed", sides[si], T, withf, n, nf);
        bad |= b;
      }
  /* a plane of 4096 x 4096 points: more tiles than any wave */
  fd_fused_trial wide;
  memset(&wide, 0, sizeof wide);
  for (int d = 0; d < 3; d++) wide.lo[d] = wide.fix_lo[d] = 1, wide.hi[d] = wide.fix_hi[d] = d < 2 ? 4096 : 8;
  fd_fused fixed[64], list[64];
  const int wave_big = be_fused_candidates(3, &wide, list, 64) != be_fused_candidates(3, NULL, fixed, 64);
  check(!bad && checked > 0 && !wave_big,
        "fused: %ld one-wave candidates of 32^3-256^3, each the shortest chunk whose blocks are resident at once on %d multiprocessors; none for a 4096 x 4096 plane (first bad: %s)",
        checked, props.sm_count, what);
}

/* be_stencil_zrange: two z-ranges (split at every plane) compose to be_stencil's field bit for
 * bit for every region and both kernels (and write nothing else: the outputs are poisoned
 * alike); be_add_point adds at exactly one point. */
static void test_zrange_point(const fd_grid *g)
{
  const size_t all = g->elems;
  real_t *du, *df, *dref, *dout, *href = malloc(all * sizeof(real_t)), *hout = malloc(all * sizeof(real_t));
  REQUIRE(be_malloc((void **)&du, all * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&df, all * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dref, all * sizeof(real_t)));
  REQUIRE(be_malloc((void **)&dout, all * sizeof(real_t)));
  fd_field fu = random_field(77, 1.0), ff = random_field(78, 1.0), poison = random_field(0, 0.0);
  poison.kind = FD_FIELD_CONST;
  poison.scale = NAN;
  REQUIRE(be_fill(g, &fu, du, S));
  REQUIRE(be_fill(g, &ff, df, S));
  const fd_coeffs c = {1.7, 0.11, 0.13, 0.17, -1.0};
  long bad = 0;
  for (int kid = 0; kid < FD_KERNEL_COUNT; kid++)
    for (int region = FD_REGION_ALL; region <= FD_REGION_SHELL; region++)
      for (int split = 0; split <= g->n[2]; split += (g->n[2] > 8 ? 3 : 1)) {
        const fd_kernel k = kcfg((fd_kernel_id)kid, kid == FD_KERNEL_REORDERED ? 4 : 0, 0, 0, 0,
                                 kid == FD_KERNEL_ZMARCH ? 5 : 0, 0);
        REQUIRE(be_fill(g, &poison, dref, S));
        REQUIRE(be_fill(g, &poison, dout, S));
        REQUIRE(be_stencil(g, (fd_region)region, FD_FACES_ALL, &c, du, df, dref, k, S));
        REQUIRE(be_stencil_zrange(g, (fd_region)region, FD_FACES_ALL, 1, split, &c, du, df, dout, k, S));
        REQUIRE(be_stencil_zrange(g, (fd_region)region, FD_FACES_ALL, split + 1, g->n[2], &c, du, df, dout, k, S));
        to_host(href, dref, all);
        to_host(hout, dout, all);
        if (memcmp(href, hout, all * sizeof(real_t)) != 0) bad++;
      }
  check(bad == 0, "be_stencil_zrange %dx%dx%d: %ld splits differ from be_stencil", g->n[0], g->n[1], g->n[2], bad);
  REQUIRE(be_fill(g, &fu, dout, S)); /* finite values (NaN payloads differ between GPU and host) */
  to_host(hout, dout, all);
  REQUIRE(be_add_point(g, 1, g->n[1], g->n[2] + 1, (real_t)0.5, dout, S));
  real_t *h2 = malloc(all * sizeof(real_t));
  to_host(h2, dout, all);
  const size_t p = IDX(1, g->n[1], g->n[2] + 1);
  long diff = 0;
  for (size_t q = 0; q < all; q++) {
    real_t want = q == p ? hout[q] + (real_t)0.5 : hout[q];
    diff += memcmp(&want, &h2[q], sizeof want) != 0;
  }
  check(diff == 0, "be_add_point: %ld points differ", diff);
  check(be_add_point(g, -1, 0, 0, 1, dout, S) != BE_OK, "be_add_point accepted a point outside the grid");
  free(h2);
  free(href);
  free(hout);
  REQUIRE(be_free(du));
  REQUIRE(be_free(df));
  REQUIRE(be_free(dref));
  REQUIRE(be_free(dout));
}

/* z-marching on arrays larger than L2 runs mirrored (top chunk first, marching down) when out
 * lies below u in memory (stencil_config.hip, march_down): with the input in the lower buffer and
 * then in the upper one, both directions run. On a field of between a quarter of L2 and L2 it
 * marches up and its stores ask L2 to keep their lines (l2_keep, gpu_store_keep: other store
 * instructions, the pair's and the single point's at a box's x edges). Each must give the
 * baseline kernel's field bit for bit (the baseline never mirrors nor keeps), for ALL, for the
 * interior of deferred faces (a box whose mirror axis is off the grid's centre and whose x
 * edges cut pairs) and for a z-range; an output box mapped onto the wrong planes, planes taken
 * in the wrong order, or a kept store of the wrong value or place, fails it. kept = 0: arrays
 * beyond L2; 1: a field of about half of L2 (this process shares the device with no rank). */
static void test_march_directions(int kept)
{
  gpu_device_props props;
  REQUIRE(gpu_get_device_props(&props));
  fd_grid g0 = grid3(200, 150, 8);
  const size_t planes = props.l2_bytes / ((size_t)g0.sxy * sizeof(real_t));
  const int nz = kept ? (int)(planes / 2) : (int)planes + 9;
  fd_grid g = grid3(200, 150, nz);
  const size_t all = g.elems, bytes = all * sizeof(real_t);
  if (kept)
    check(bytes <= props.l2_bytes && 4 * bytes > props.l2_bytes,
          "march directions: a %zu-byte field is not between a quarter of L2 and L2 (%zu bytes)",
          bytes, props.l2_bytes);
  else
    check(2 * bytes > props.l2_bytes, "march directions: %zu-byte arrays do not exceed L2 (%zu bytes)",
          bytes, props.l2_bytes);
  real_t *dbuf[2], *df, *dref, *href = malloc(bytes), *hout = malloc(bytes);
  REQUIRE(be_malloc((void **)&dbuf[0], bytes));
  REQUIRE(be_malloc((void **)&dbuf[1], bytes));
  REQUIRE(be_malloc((void **)&df, bytes));
  REQUIRE(be_malloc((void **)&dref, bytes));
  fd_field fu = random_field(91, 1.0), ff = random_field(92, 1.0), poison = random_field(0, 0.0);
  poison.kind = FD_FIELD_CONST;
  poison.scale = NAN;
  const fd_coeffs c = {1.7, 0.11, 0.13, 0.17, -1.0};
  const fd_kernel base = kcfg(FD_KERNEL_BASELINE, 0, 0, 0, 0, 0, 0);
  const fd_kernel ks[3] = {kcfg(FD_KERNEL_ZMARCH, 0, 0, 0, 0, 0, 0),
                           kcfg(FD_KERNEL_ZMARCH, 2, 1, 32, 4, 5, 3),
                           kcfg(FD_KERNEL_ZMARCH, 1, 2, 64, 4, 7, 0)};
  long bad = 0, runs = 0;
  for (int withf = 0; withf < 2; withf++)
    for (int kind = 0; kind < 3; kind++) { /* ALL, INTERIOR of 0x2d, planes 7..nz-3 */
      const fd_region region = kind == 1 ? FD_REGION_INTERIOR : FD_REGION_ALL;
      const int k0 = kind == 2 ? 7 : 1, k1 = kind == 2 ? nz - 3 : nz;
      const real_t *f = withf ? df : NULL;
      REQUIRE(be_fill(&g, &fu, dbuf[0], S));
      REQUIRE(be_fill(&g, &ff, df, S));
      REQUIRE(be_fill(&g, &poison, dref, S));
      REQUIRE(be_stencil_zrange(&g, region, 0x2du, k0, k1, &c, dbuf[0], f, dref, base, S));
      to_host(href, dref, all);
      for (int ki = 0; ki < 3; ki++)
        for (int in = 0; in < 2; in++) { /* input in dbuf[in], output in the other */
          REQUIRE(be_fill(&g, &fu, dbuf[in], S));
          REQUIRE(be_fill(&g, &poison, dbuf[1 - in], S));
          REQUIRE(be_stencil_zrange(&g, region, 0x2du, k0, k1, &c, dbuf[in], f, dbuf[1 - in], ks[ki], S));
          to_host(hout, dbuf[1 - in], all);
          long diff = 0;
          for (size_t q = 0; q < all; q++) diff += memcmp(&href[q], &hout[q], sizeof(real_t)) != 0;
          if (diff) {
            char desc[FD_KERNEL_SPEC_MAX];
            fd_kernel_format(&ks[ki], desc, sizeof desc);
            printf("  %s, f %d, case %d, input in the %s buffer: %ld points differ\n", desc, withf,
                   kind, dbuf[in] < dbuf[1 - in] ? "lower" : "upper", diff);
            bad++;
          }
          runs++;
        }
    }
  check(bad == 0, "march directions%s %dx%dx%d: %ld of %ld runs differ from the baseline",
        kept ? " (stores kept in L2)" : "", g.n[0], g.n[1], g.n[2], bad, runs);
  free(href);
  free(hout);
  REQUIRE(be_free(dbuf[0]));
  REQUIRE(be_free(dbuf[1]));
  REQUIRE(be_free(df));
  REQUIRE(be_free(dref));
}

int main(int argc, char **argv)
{
  int quick = 0;
  rng_state = 2026;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--quick")) quick = 1;
    else if (!strcmp(argv[a], "--seed") && a + 1 < argc) rng_state = strtoull(argv[++a], NULL, 10);
    else {
      fprintf(stderr, "usage: test_gpu_kernels [--quick] [--seed S]\n");
      return 2;
    }
  }
  int count = 0;
  REQUIRE(be_device_count(&count));
  be_info info;
  REQUIRE(be_init(0, &info));
  printf("device: %s (%s), pci %s, %d of %d visible, %.1f GiB, real_t = %s\n", info.name,
         info.backend, info.pci_bus_id, info.device_index, info.device_count,
         info.memory_bytes / 1073741824.0, FDMINI_REAL_NAME);
  check(info.is_accelerator == 1 && strlen(info.pci_bus_id) == 12 && info.memory_bytes > 0,
        "be_info: accelerator %d, pci '%s'", info.is_accelerator, info.pci_bus_id);
  REQUIRE(be_stream_create(&S, BE_PRIORITY_NORMAL));

  /* 130, 300 and 257 along x: rows padded to 128-byte boundaries (backend.h) */
  int sizes[32][3] = {{37, 23, 19}, {130, 7, 65}, {2, 2, 2},    {2, 9, 5},   {9, 2, 6},
                      {7, 5, 2},    {1, 4, 3},    {3, 1, 1},    {64, 33, 20}, {30, 17, 9},
                      {300, 5, 9},  {257, 3, 33}};
  int ns = 12;
  if (quick) {
    sizes[0][0] = 37, sizes[0][1] = 23, sizes[0][2] = 19;
    sizes[1][0] = 30, sizes[1][1] = 17, sizes[1][2] = 9;
    ns = 2;
  } else {
    for (int r = 0; r < 6; r++, ns++) {
      sizes[ns][0] = rnd(1, 90);
      sizes[ns][1] = rnd(1, 40);
      sizes[ns][2] = rnd(1, 40);
    }
  }
  for (int s = 0; s < ns; s++) {
    fd_grid g = grid3(sizes[s][0], sizes[s][1], sizes[s][2]);
    int before = n_fail;
    test_stencil_size(&g, 1000 + (uint64_t)s, quick);
    printf("stencil %dx%dx%d: %s\n", g.n[0], g.n[1], g.n[2], n_fail == before ? "ok" : "FAILED");
  }
  {
    fd_grid g1 = grid3(40, 30, 20), g2 = grid3(33, 2, 17), g3 = grid3(200, 9, 7);
    test_quadratic_laplacian(&g1);
    test_quadratic_laplacian(&g2);
    test_quadratic_laplacian(&g3);
  }
  {
    const int all[FD_FACES] = {1, 1, 1, 1, 1, 1}, some[FD_FACES] = {0, 1, 1, 0, 0, 1};
    fd_grid g1 = grid3(37, 23, 19), g2 = grid3(2, 5, 3), g3 = grid3(130, 5, 3);
    test_faces(&g1, all);
    test_faces(&g1, some);
    test_faces(&g2, all);
    test_faces(&g3, all);
  }
  {
    fd_grid g = grid3(37, 23, 19);
    test_fill_norms(&g);
    if (!quick) {
      fd_grid big = grid3(130, 70, 65);
      test_fill_norms(&big);
    }
  }
  {
    fd_grid g1 = grid3(37, 23, 19), g2 = grid3(5, 3, 2);
    test_zrange_point(&g1);
    test_zrange_point(&g2);
  }
  if (!quick) {
    int before = n_fail;
    test_march_directions(0);
    printf("march directions: %s\n", n_fail == before ? "ok" : "FAILED");
    before = n_fail;
    test_march_directions(1);
    printf("stores kept in L2: %s\n", n_fail == before ? "ok" : "FAILED");
  }
  {
    /* g5: wide and tall enough that blocks of every shape and T (64-lane footprints included)
     * lie inside the fix box, the kernel's second body */
    const int n1[3] = {37, 23, 19}, n2[3] = {20, 13, 11}, n3[3] = {130, 7, 9}, n4[3] = {5, 4, 3},
              n5[3] = {260, 40, 12};
    fd_grid g1, g2, g3, g4, g5;
    REQUIRE(fd_grid_init(&g1, n1, 1) == 0 ? BE_OK : BE_ERROR);
    REQUIRE(fd_grid_init(&g2, n2, 4) == 0 ? BE_OK : BE_ERROR);
    REQUIRE(fd_grid_init(&g3, n3, 2) == 0 ? BE_OK : BE_ERROR);
    REQUIRE(fd_grid_init(&g4, n4, 1) == 0 ? BE_OK : BE_ERROR);
    REQUIRE(fd_grid_init(&g5, n5, 2) == 0 ? BE_OK : BE_ERROR);
    test_fused(&g1, 31, quick);
    test_fused(&g2, 32, quick);
    if (!quick) {
      test_fused(&g3, 33, quick);
      test_fused(&g4, 34, quick);
      test_fused(&g5, 35, quick);
    }
    test_fused_smem();
    test_fused_wave();
    printf("fused: %s\n", n_fail ? "see above" : "ok");
  }
  test_streams_events_errors(quick);

  REQUIRE(be_stream_destroy(S));
  REQUIRE(be_finalize());
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
