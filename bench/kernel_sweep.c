/* kernel_sweep.c - GPU stencil sweep in the manner of the AMD lab notes' tables: every variant
 * (baseline, reordered per plane, short-chunk z-marching) x its configurations -> median time,
 * effective GB/s and % of the device-to-device memcpy bandwidth measured in the same run, for
 * each size given; and the configuration the start-up autotune picks on that grid (the same
 * candidates and the same timing routine as fdmini, fd_kernel_time) beside the best measured.
 *
 * Effective bytes, as the lab notes count them: every point the stencil reads once (the
 * interior plus the six ghost faces, (nx+2)(ny+2)(nz+2) - 8 - 4(nx+ny+nz)) plus every point it
 * writes once (nx*ny*nz), times sizeof(real_t). memcpy: cudaMemcpy/hipMemcpy device-to-device
 * of the whole (nx+2)(ny+2)(nz+2) field, counting bytes read plus bytes written.
 * Precision is the build's (FDMINI_PRECISION); bench/run_kernel_sweep.sh builds both.
 *
 * Every configuration's output is compared bitwise (be_norms of the difference) with the
 * baseline's: a mismatch is reported and makes the exit status 1.
 *
 * Usage: kernel_sweep [--size NXxNYxNZ]... [--reps N] [--quick] [--csv FILE] [--md FILE]
 *                     [--only-default] [--profile] [--device-slug]
 *   --quick         the default, the autotune's candidates and a few more
 *   --only-default  only be_kernel_default's configuration and the autotune's choice
 *   --match TEXT    only configurations whose spec contains TEXT, or one of the '|'-separated
 *                   TEXTs (and the default and the autotune's choice), e.g. --match
 *                   'zmarch:tile=1|reordered:tile=2,vec=2' 
 *   --profile       baseline, the lab notes' kernels 4 and 3 (m = 2), the default, once each
 *                   without warm-up and without the autotune's trial: the input of
 *                   bench/profile/ncu_stencil.sh
 *   --fuse          instead of the single-step table: heat and jacobi with T = 1..4 steps per
 *                   pass (the fused kernel) against the best single step, points x steps per
 *                   second (bench/run_fuse_sweep.sh)
 *   --device-slug   print the device name as a file-name slug ("NVIDIA-H100-80GB-HBM3") and exit
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "gpu_tuning.h"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    if ((call) != BE_OK) {                                                                  \
      fprintf(stderr, "kernel_sweep: %s failed: %s\n", #call, be_error_message());         \
      exit(2);                                                                              \
    }                                                                                       \
  } while (0)

enum { TAG_DEFAULT = 1, TAG_CANDIDATE = 2, TAG_AUTOTUNE = 4 };

typedef struct {
  fd_kernel k;   /* as listed */
  fd_kernel run; /* as resolved for the grid */
  char desc[FD_KERNEL_SPEC_MAX];
  int tags;
  double ms, gbs, pct;
  int bitwise_ok;
} entry;

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static double median_ms(float *t, int n)
{
  qsort(t, (size_t)n, sizeof *t, cmp_float);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static int same_kernel(const fd_kernel *a, const fd_kernel *b)
{
  return a->id == b->id && a->tile == b->tile && a->vec == b->vec && a->block[0] == b->block[0] &&
         a->block[1] == b->block[1] && a->chunk == b->chunk && a->strips == b->strips;
}

/* Adds k (unless an entry resolving to the same configuration exists: then only its tags). */
static int add(entry *list, int n, int max, const fd_grid *g, fd_kernel k, int tags)
{
  fd_kernel r = k;
  CHECK(be_kernel_resolve(g, &r));
  for (int i = 0; i < n; i++)
    if (same_kernel(&list[i].run, &r)) {
      list[i].tags |= tags;
      return n;
    }
  if (n >= max) return n;
  memset(&list[n], 0, sizeof list[n]);
  list[n].k = k;
  list[n].run = r;
  list[n].tags = tags;
  fd_kernel_format(&r, list[n].desc, sizeof list[n].desc);
  return n + 1;
}

/* 1 when spec contains one of the '|'-separated parts of pattern. */
static int matches(const char *spec, const char *pattern)
{
  char part[128];
  for (const char *p = pattern; *p;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len >= sizeof part) len = sizeof part - 1;
    memcpy(part, p, len);
    part[len] = '\0';
    if (len && strstr(spec, part)) return 1;
    if (!bar) break;
    p = bar + 1;
  }
  return 0;
}

static fd_kernel kcfg(fd_kernel_id id, int tile, int vec, int bx, int by, int chunk)
{
  fd_kernel k;
  memset(&k, 0, sizeof k);
  k.id = id, k.tile = tile, k.vec = vec, k.block[0] = bx, k.block[1] = by, k.chunk = chunk;
  return k;
}

/* Times `reps` launches of k after `warm` untimed ones, events around each; median ms. */
static double time_stencil(const fd_kernel_trial *t, const fd_kernel *k, be_event e0,
                           be_event e1, int warm, int reps)
{
  float *ms = malloc(sizeof *ms * (size_t)reps);
  if (!ms) exit(1);
  for (int r = 0; r < warm; r++)
    CHECK(be_stencil(&t->grid, t->region, t->deferred, &t->coeffs, t->u, t->f, t->out, *k, t->stream));
  for (int r = 0; r < reps; r++) {
    CHECK(be_event_record(e0, t->stream));
    CHECK(be_stencil(&t->grid, t->region, t->deferred, &t->coeffs, t->u, t->f, t->out, *k, t->stream));
    CHECK(be_event_record(e1, t->stream));
    CHECK(be_event_sync(e1));
    CHECK(be_event_elapsed_ms(&ms[r], e0, e1));
  }
  double m = median_ms(ms, reps);
  free(ms);
  return m;
}

static double time_copy(void *dst, const void *src, size_t bytes, be_stream s, be_event e0,
                        be_event e1, int warm, int reps)
{
  float *ms = malloc(sizeof *ms * (size_t)reps);
  if (!ms) exit(1);
  for (int r = 0; r < warm; r++) CHECK(be_memcpy_async(dst, src, bytes, BE_COPY_D2D, s));
  for (int r = 0; r < reps; r++) {
    CHECK(be_event_record(e0, s));
    CHECK(be_memcpy_async(dst, src, bytes, BE_COPY_D2D, s));
    CHECK(be_event_record(e1, s));
    CHECK(be_event_sync(e1));
    CHECK(be_event_elapsed_ms(&ms[r], e0, e1));
  }
  double m = median_ms(ms, reps);
  free(ms);
  return m;
}

/* --fuse: several time steps per pass. For heat and jacobi on grid g: the best single-step
 * configuration of the autotune's candidates (timed here, region ALL, the operator's f), and
 * the fused kernel for T = 1..FD_FUSE_MAX over the fused candidates (and more shapes unless
 * quick), each checked bitwise against T single steps; points x steps per second, the ratio to
 * the best single step and to the memcpy bound (memcpy GB/s / 16 bytes per point and step). */
static int fuse_study(const fd_grid *g, const be_info *info, const char *date, double mc_gbs,
                      be_stream s, be_event e0, be_event e1, int reps, int quick, FILE *md,
                      FILE *csv)
{
  const size_t bytes = g->elems * sizeof(real_t);
  real_t *u, *f, *out, *a, *b;
  CHECK(be_malloc((void **)&u, bytes));
  CHECK(be_malloc((void **)&f, bytes));
  CHECK(be_malloc((void **)&out, bytes));
  CHECK(be_malloc((void **)&a, bytes));
  CHECK(be_malloc((void **)&b, bytes));
  fd_field fl;
  memset(&fl, 0, sizeof fl);
  fl.kind = FD_FIELD_RANDOM;
  fl.scale = 1.0;
  fl.seed = 777;
  CHECK(be_fill(g, &fl, u, s));
  fl.seed = 778;
  CHECK(be_fill(g, &fl, f, s));
  CHECK(be_fill(g, &fl, out, s));
  const double pts = (double)g->n[0] * g->n[1] * g->n[2];
  const double bound = mc_gbs * 1e9 / 16.0; /* points x steps per second */
  const int lo[3] = {1, 1, 1}, hi[3] = {g->n[0], g->n[1], g->n[2]};
  int failures = 0;
  for (int op = 0; op < 2; op++) {
    const char *name = op ? "jacobi" : "heat";
    const fd_coeffs c = op ? (fd_coeffs){0, (real_t)(1.0 / 6), (real_t)(1.0 / 6), (real_t)(1.0 / 6), (real_t)(-1.0 / 6)}
                           : (fd_coeffs){(real_t)0.5, (real_t)(1.0 / 12), (real_t)(1.0 / 12), (real_t)(1.0 / 12), 0};
    const real_t *fp = op ? f : NULL;
    /* the best single step */
    fd_kernel cand[64];
    const int nc = be_kernel_candidates(cand, 64);
    fd_kernel_trial tr = {*g, FD_REGION_ALL, 0, c, u, fp, out, s};
    double best = 1e30;
    int bi = 0;
    for (int i = 0; i < nc; i++) {
      const double ms = time_stencil(&tr, &cand[i], e0, e1, 2, reps);
      if (ms < best) best = ms, bi = i;
    }
    fd_kernel bk = cand[bi];
    CHECK(be_kernel_resolve(g, &bk));
    char bspec[FD_KERNEL_SPEC_MAX];
    fd_kernel_format(&bk, bspec, sizeof bspec);
    const double single = pts / (best * 1e-3);
    printf("\n## fused %s %dx%dx%d %s: memcpy %.1f GB/s, memcpy bound %.4g points x steps/s; "
           "best single step [%s] %.4f ms, %.4g points x steps/s (%.3f x the bound)\n",
           name, g->n[0], g->n[1], g->n[2], FDMINI_REAL_NAME, mc_gbs, bound, bspec, best, single,
           single / bound);
    if (md) {
      fprintf(md, "\n### %s, %s, %dx%dx%d, %s: several steps per pass\n\n", info->name, name,
              g->n[0], g->n[1], g->n[2], FDMINI_REAL_NAME);
      fprintf(md, "memcpy %.1f GB/s; the memcpy bound (memcpy / 16 bytes per point and step) is "
                  "%.4g points x steps per second; best single step: `%s`, %.4f ms per step, "
                  "%.4g points x steps/s (%.3f x the bound); %s, median of %d.\n\n",
              mc_gbs, bound, bspec, best, single, single / bound, date, reps);
      fprintf(md, "| configuration | ms per pass | points x steps / s | x best single step | x memcpy bound | bitwise = T single steps |\n|---|---|---|---|---|---|\n");
    }
    double top = 0;
    char topspec[FD_KERNEL_SPEC_MAX] = "";
    for (int T = 1; T <= FD_FUSE_MAX; T++) {
      /* reference: T single steps with the best single-step configuration */
      CHECK(be_memcpy_async(a, u, bytes, BE_COPY_D2D, s));
      CHECK(be_memcpy_async(b, u, bytes, BE_COPY_D2D, s));
      for (int t = 0; t < T; t++) {
        CHECK(be_stencil(g, FD_REGION_ALL, 0, &c, a, fp, b, bk, s));
        real_t *x = a;
        a = b;
        b = x;
      }
      fd_fused fc[32];
      const fd_fused_trial ft = {.grid = *g, .lo = {lo[0], lo[1], lo[2]}, .hi = {hi[0], hi[1], hi[2]},
                                 .fix_lo = {lo[0], lo[1], lo[2]}, .fix_hi = {hi[0], hi[1], hi[2]},
                                 .coeffs = c, .u = u, .f = fp, .out = out, .stream = s};
      int nf = be_fused_candidates(T, &ft, fc, 32);
      if (!quick) {
        static const int more[][4] = {{2, 1, 8, 64}, {2, 2, 4, 64}, {4, 2, 8, 64}, {4, 2, 8, 256},
                                      {4, 2, 16, 128}, {4, 2, 4, 256}, {1, 2, 16, 64}};
        for (int m = 0; m < 7 && nf < 32; m++) {
          fd_fused x = {T, more[m][0], more[m][1], more[m][2], more[m][3]};
          if (be_fused_resolve(&x) == BE_OK) fc[nf++] = x;
        }
      }
      for (int i = 0; i < nf; i++) {
        float *ms = malloc(sizeof *ms * (size_t)reps);
        if (!ms) exit(1);
        for (int r = 0; r < 2; r++) CHECK(be_stencil_fused(g, &fc[i], lo, hi, lo, hi, &c, u, fp, out, s));
        for (int r = 0; r < reps; r++) {
          CHECK(be_event_record(e0, s));
          CHECK(be_stencil_fused(g, &fc[i], lo, hi, lo, hi, &c, u, fp, out, s));
          CHECK(be_event_record(e1, s));
          CHECK(be_event_sync(e1));
          CHECK(be_event_elapsed_ms(&ms[r], e0, e1));
        }
        const double med = median_ms(ms, reps);
        free(ms);
        fd_norms dn;
        CHECK(be_norms(g, out, a, NULL, &dn, s));
        const int ok = dn.max_abs == 0.0;
        failures += !ok;
        const double rate = pts * T / (med * 1e-3);
        char spec[FD_KERNEL_SPEC_MAX];
        fd_fused_format(&fc[i], spec, sizeof spec);
        if (rate > top && ok) top = rate, snprintf(topspec, sizeof topspec, "%s", spec);
        printf("%-48s %9.4f ms %10.4g pts*steps/s %6.3f x single %6.3f x bound %s\n", spec, med,
               rate, rate / single, rate / bound, ok ? "ok" : "MISMATCH");
        if (md)
          fprintf(md, "| %s | %.4f | %.4g | %.3f | %.3f | %s |\n", spec, med, rate, rate / single,
                  rate / bound, ok ? "yes" : "NO");
        if (csv)
          fprintf(csv, "\"%s\",%s,%s,%d,%d,%d,%s,\"%s\",%.5f,%.5g,%.2f,%.4f,%.4f,%d\n",
                  info->name, date, FDMINI_REAL_NAME, g->n[0], g->n[1], g->n[2], name, spec, med,
                  rate, mc_gbs, rate / single, rate / bound, ok);
      }
    }
    printf("SUMMARY fused %s %s %dx%dx%d %s: best single [%s] %.4g pts*steps/s; best fused [%s] %.4g = %.3f x single, %.3f x the memcpy bound\n",
           info->name, name, g->n[0], g->n[1], g->n[2], FDMINI_REAL_NAME, bspec, single, topspec,
           top, top / single, top / bound);
    if (md)
      fprintf(md, "\nBest: `%s`, %.3f x the best single step, %.3f x the memcpy bound.\n", topspec,
              top / single, top / bound);
  }
  CHECK(be_free(u));
  CHECK(be_free(f));
  CHECK(be_free(out));
  CHECK(be_free(a));
  CHECK(be_free(b));
  return failures;
}

int main(int argc, char **argv)
{
  int sizes[8][3], nsizes = 0, reps = 20, quick = 0, only_default = 0, profile = 0, slug = 0;
  int fuse = 0;
  const char *csv_path = NULL, *md_path = NULL, *match = NULL;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--size") && a + 1 < argc && nsizes < 8) {
      if (sscanf(argv[++a], "%dx%dx%d", &sizes[nsizes][0], &sizes[nsizes][1],
                 &sizes[nsizes][2]) != 3) {
        fprintf(stderr, "kernel_sweep: --size wants NXxNYxNZ, got '%s'\n", argv[a]);
        return 2;
      }
      nsizes++;
    } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
      reps = atoi(argv[++a]);
      if (reps < 1) reps = 1;
    } else if (!strcmp(argv[a], "--quick")) {
      quick = 1;
    } else if (!strcmp(argv[a], "--only-default")) {
      only_default = 1;
    } else if (!strcmp(argv[a], "--profile")) {
      profile = 1;
    } else if (!strcmp(argv[a], "--device-slug")) {
      slug = 1;
    } else if (!strcmp(argv[a], "--fuse")) {
      fuse = 1;
    } else if (!strcmp(argv[a], "--match") && a + 1 < argc) {
      match = argv[++a];
    } else if (!strcmp(argv[a], "--csv") && a + 1 < argc) {
      csv_path = argv[++a];
    } else if (!strcmp(argv[a], "--md") && a + 1 < argc) {
      md_path = argv[++a];
    } else {
      fprintf(stderr,
              "usage: kernel_sweep [--size NXxNYxNZ]... [--reps N] [--quick] [--only-default]"
              " [--match TEXT] [--fuse] [--profile] [--device-slug] [--csv FILE] [--md FILE]\n");
      return 2;
    }
  }
  if (nsizes == 0) {
    sizes[0][0] = sizes[0][1] = sizes[0][2] = 512;
    sizes[1][0] = sizes[1][1] = 1024;
    sizes[1][2] = 512;
    nsizes = 2;
  }

  be_info info;
  CHECK(be_init(0, &info));
  if (slug) {
    for (char *c = info.name; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            *c == '.' || *c == '_' || *c == '-'))
        *c = '-';
    printf("%s\n", info.name);
    return 0;
  }
  if (profile) {
    reps = 1;
    only_default = 1;
  }
  gpu_device_props props;
  CHECK(gpu_get_device_props(&props));
  be_stream s;
  be_event e0, e1;
  CHECK(be_stream_create(&s, BE_PRIORITY_NORMAL));
  CHECK(be_event_create(&e0));
  CHECK(be_event_create(&e1));

  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  printf("# kernel_sweep: %s (%s, pci %s, %d SMs, L2 %.0f MB), %s, real_t = %s, %d reps\n",
         info.name, info.backend, info.pci_bus_id, props.sm_count, props.l2_bytes / 1e6,
         date, FDMINI_REAL_NAME, reps);

  FILE *csv = csv_path ? fopen(csv_path, "a") : NULL;
  FILE *md = md_path ? fopen(md_path, "a") : NULL;
  if (csv && ftell(csv) == 0 && !fuse)
    fprintf(csv, "device,date,precision,nx,ny,nz,variant,config,default,autotune,ms,eff_GBps,"
                 "memcpy_GBps,pct_memcpy,bitwise_ok\n");
  if (csv && ftell(csv) == 0 && fuse)
    fprintf(csv, "device,date,precision,nx,ny,nz,op,config,ms_per_pass,points_steps_per_s,"
                 "memcpy_GBps,x_single,x_bound,bitwise_ok\n");
  int failures = 0;

  for (int si = 0; si < nsizes; si++) {
    fd_grid g;
    if (fd_grid_init(&g, sizes[si], 1) != 0) {
      fprintf(stderr, "kernel_sweep: %dx%dx%d is too large\n", sizes[si][0], sizes[si][1], sizes[si][2]);
      return 2;
    }
    const size_t bytes = g.elems * sizeof(real_t);
    real_t *u, *out, *ref;
    CHECK(be_malloc((void **)&u, bytes));
    CHECK(be_malloc((void **)&out, bytes));
    CHECK(be_malloc((void **)&ref, bytes));
    fd_field fl;
    memset(&fl, 0, sizeof fl);
    fl.kind = FD_FIELD_RANDOM;
    fl.scale = 1.0;
    fl.seed = 12345;
    for (int d = 0; d < 3; d++) {
      fl.h[d] = 1.0 / (g.n[d] + 1);
      fl.L[d] = 1.0;
    }
    CHECK(be_fill(&g, &fl, u, s));
    CHECK(be_fill(&g, &fl, out, s));
    CHECK(be_fill(&g, &fl, ref, s));
    const double hx = fl.h[0], hy = fl.h[1], hz = fl.h[2];
    fd_coeffs c = {0, (real_t)(1 / (hx * hx)), (real_t)(1 / (hy * hy)), (real_t)(1 / (hz * hz)), 0};
    c.cc = -2 * (c.cx + c.cy + c.cz);
    fd_kernel_trial trial = {g, FD_REGION_ALL, 0, c, u, NULL, out, s};

    const double nx = g.n[0], ny = g.n[1], nz = g.n[2];
    const double pts = (nx + 2) * (ny + 2) * (nz + 2);
    const double eff_bytes = (pts - 8 - 4 * (nx + ny + nz) + nx * ny * nz) * (double)sizeof(real_t);
    const double mc_ms = time_copy(out, u, bytes, s, e0, e1, profile ? 0 : 3, reps);
    const double mc_gbs = 2.0 * (double)bytes / (mc_ms * 1e6);
    if (fuse) {
      failures += fuse_study(&g, &info, date, mc_gbs, s, e0, e1, reps, quick, md, csv);
      CHECK(be_free(u));
      CHECK(be_free(out));
      CHECK(be_free(ref));
      continue;
    }

    /* reference output: baseline */
    const fd_kernel kb = kcfg(FD_KERNEL_BASELINE, 0, 0, 0, 0, 0);
    CHECK(be_stencil(&g, FD_REGION_ALL, 0, &c, u, NULL, ref, kb, s));

    /* the autotune, as fdmini runs it on one rank: candidates, 5 timed rounds */
    enum { MAXC = 800 };
    fd_kernel cand[64];
    const int ncand = be_kernel_candidates(cand, 64);
    double cand_ms[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* (not under --profile, whose every launch a profiler records: the pick is then the first) */
    if (!profile) CHECK(fd_kernel_time(&trial, cand, ncand, 5, cand_ms));
    else memset(cand_ms, 0, sizeof cand_ms);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double tune_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    const int pick = fd_kernel_fastest(cand_ms, ncand);
    char cand_desc[FD_KERNEL_SPEC_MAX];
    fd_kernel_format(&cand[pick], cand_desc, sizeof cand_desc);

    entry *list = calloc(MAXC, sizeof *list);
    if (!list) return 1;
    int n = 0;
    fd_kernel kdef;
    CHECK(be_kernel_default(&g, &kdef));
    n = add(list, n, MAXC, &g, kdef, TAG_DEFAULT);
    n = add(list, n, MAXC, &g, cand[pick], TAG_AUTOTUNE);
    if (profile) {
      n = add(list, n, MAXC, &g, kb, 0);
      n = add(list, n, MAXC, &g, kcfg(FD_KERNEL_REORDERED, 4, 1, 256, 1, 0), 0);
      n = add(list, n, MAXC, &g, kcfg(FD_KERNEL_REORDERED, 2, 1, 256, 1, 0), 0);
    }
    if (!only_default) {
      for (int i = 0; i < ncand; i++) n = add(list, n, MAXC, &g, cand[i], TAG_CANDIDATE);
      /* baseline and the per-plane kernel: tile x vec x block shape */
      static const int pshape[][2] = {{256, 1}, {128, 2}, {64, 4}, {32, 8}};
      const int nps = quick ? 1 : 4;
      for (int b = 0; b < nps; b++)
        n = add(list, n, MAXC, &g, kcfg(FD_KERNEL_BASELINE, 0, 0, pshape[b][0], pshape[b][1], 0), 0);
      for (int m = 1; m <= 16; m *= 2)
        for (int vec = 1; vec <= 2; vec++)
          for (int b = 0; b < nps; b++)
            if (!(vec == 2 && m > 8))
              n = add(list, n, MAXC, &g, kcfg(FD_KERNEL_REORDERED, m, vec, pshape[b][0], pshape[b][1], 0), 0);
      /* short-chunk z-marching: rows x vec x ahead x block shape x chunk (the strips rule),
       * then the y-strips for two shapes */
      static const int zshape[][2] = {{64, 4}, {32, 8}, {64, 8}, {32, 4}, {128, 2}};
      static const int zchunk[] = {3, 4, 6, 8, 12, 16, 24, 32};
      const int nzs = quick ? 2 : 5, nzc = quick ? 4 : 8;
      for (int rows = 1; rows <= 2; rows++)
        for (int vec = 1; vec <= 2; vec++)
          for (int b = 0; b < nzs; b++)
            for (int ci = 0; ci < nzc; ci++)
              n = add(list, n, MAXC, &g,
                      kcfg(FD_KERNEL_ZMARCH, rows, vec, zshape[b][0], zshape[b][1],
                           zchunk[quick ? ci + 1 : ci]), 0);
      for (int b = 0; b < 2; b++)
        for (int ci = 0; ci < nzc; ci++)
          for (int st = 1; st <= 8; st *= 2) {
            fd_kernel k = kcfg(FD_KERNEL_ZMARCH, 1, 2, zshape[b][0], zshape[b][1], zchunk[ci]);
            k.strips = st;
            n = add(list, n, MAXC, &g, k, 0);
          }
    }

    if (match) { /* keep the default, the autotune's choice and the matching ones */
      int kept = 0;
      for (int i = 0; i < n; i++)
        if (list[i].tags & (TAG_DEFAULT | TAG_AUTOTUNE) || matches(list[i].desc, match))
          list[kept++] = list[i];
      n = kept;
    }
    for (int i = 0; i < n; i++) {
      CHECK(be_fill(&g, &fl, out, s)); /* fresh output: a config that skips points shows */
      list[i].ms = time_stencil(&trial, &list[i].k, e0, e1, profile ? 0 : 2, reps);
      list[i].gbs = eff_bytes / (list[i].ms * 1e6);
      list[i].pct = 100.0 * list[i].gbs / mc_gbs;
      fd_norms dn;
      CHECK(be_norms(&g, out, ref, NULL, &dn, s));
      list[i].bitwise_ok = dn.max_abs == 0.0;
      if (!list[i].bitwise_ok) failures++;
    }

    printf("\n## %dx%dx%d %s: memcpy D2D %.1f GB/s (%.3f ms for %.1f MB), effective bytes %.1f MB\n",
           g.n[0], g.n[1], g.n[2], FDMINI_REAL_NAME, mc_gbs, mc_ms, bytes / 1e6, eff_bytes / 1e6);
    printf("autotune: %d candidates timed in %.3f s, picked %s (trial median %.4f ms)\n", ncand,
           tune_s, cand_desc, cand_ms[pick]);
    printf("%-60s %9s %9s %8s %s\n", "configuration", "ms", "GB/s", "%memcpy", "check");
    if (md) {
      fprintf(md, "\n### %s, %dx%dx%d, %s\n\n", info.name, g.n[0], g.n[1], g.n[2],
              FDMINI_REAL_NAME);
      fprintf(md, "memcpy device-to-device: %.1f GB/s (%.3f ms for %.1f MB read + written); "
                  "effective bytes per stencil: %.1f MB; %s; median of %d. Autotune: %d "
                  "candidates in %.3f s.\n\n",
              mc_gbs, mc_ms, 2 * bytes / 1e6, eff_bytes / 1e6, date, reps, ncand, tune_s);
      fprintf(md, "| configuration | role | ms | effective GB/s | %% of memcpy | bitwise = baseline |\n");
      fprintf(md, "|---|---|---|---|---|---|\n");
    }
    int best = 0, chosen = 0;
    for (int i = 0; i < n; i++)
      if (list[i].tags & TAG_AUTOTUNE) chosen = i;
    for (int i = 0; i < n; i++) {
      if (list[i].gbs > list[best].gbs) best = i;
      char role[64];
      snprintf(role, sizeof role, "%s%s%s", list[i].tags & TAG_DEFAULT ? " default" : "",
               list[i].tags & TAG_AUTOTUNE ? " autotune" : "",
               list[i].tags & TAG_CANDIDATE ? " candidate" : "");
      printf("%-60s %9.4f %9.1f %7.1f%% %s%s\n", list[i].desc, list[i].ms, list[i].gbs,
             list[i].pct, list[i].bitwise_ok ? "ok" : "MISMATCH", role);
      if (md)
        fprintf(md, "| %s%s%s | %s | %.4f | %.1f | %.1f | %s |\n",
                list[i].tags & (TAG_DEFAULT | TAG_AUTOTUNE) ? "**" : "", list[i].desc,
                list[i].tags & (TAG_DEFAULT | TAG_AUTOTUNE) ? "**" : "", role, list[i].ms,
                list[i].gbs, list[i].pct, list[i].bitwise_ok ? "yes" : "NO");
      if (csv)
        fprintf(csv, "\"%s\",%s,%s,%d,%d,%d,%s,\"%s\",%d,%d,%.5f,%.2f,%.2f,%.2f,%d\n", info.name,
                date, FDMINI_REAL_NAME, g.n[0], g.n[1], g.n[2], fd_kernel_name(list[i].run.id),
                list[i].desc, !!(list[i].tags & TAG_DEFAULT), !!(list[i].tags & TAG_AUTOTUNE),
                list[i].ms, list[i].gbs, mc_gbs, list[i].pct, list[i].bitwise_ok);
    }
    printf("SUMMARY %s %dx%dx%d %s: memcpy %.1f GB/s; default [%s] %.1f%%; autotune [%s] %.1f%%;"
           " best [%s] %.1f%%\n",
           info.name, g.n[0], g.n[1], g.n[2], FDMINI_REAL_NAME, mc_gbs, list[0].desc,
           list[0].pct, list[chosen].desc, list[chosen].pct, list[best].desc, list[best].pct);
    if (md)
      fprintf(md, "\nDefault (`--tune off`): %s, %.1f%% of memcpy. Autotune's choice: %s, %.1f%%. "
                  "Best measured: %s, %.1f%%.\n",
              list[0].desc, list[0].pct, list[chosen].desc, list[chosen].pct, list[best].desc,
              list[best].pct);
    free(list);
    CHECK(be_free(u));
    CHECK(be_free(out));
    CHECK(be_free(ref));
  }
  if (csv) fclose(csv);
  if (md) fclose(md);
  CHECK(be_event_destroy(e0));
  CHECK(be_event_destroy(e1));
  CHECK(be_stream_destroy(s));
  CHECK(be_finalize());
  if (failures) fprintf(stderr, "kernel_sweep: %d configurations differ from baseline\n", failures);
  return failures ? 1 : 0;
}
