/* kernel_sweep.c - GPU stencil sweep in the manner of the AMD lab notes' tables: every
 * variant (baseline, reordered per-plane, reordered z-marching) x tile factor m x block shape
 * (x vector width, x z-chunks for the default) -> median time, effective GB/s and % of the
 * device-to-device memcpy bandwidth measured in the same run, for each size given.
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
 *   --quick         fewer block shapes
 *   --only-default  only be_kernel_default's configuration
 *   --profile       baseline, lab-notes kernel 5 (plane m=8, 256x1) and the default, once
 *                   each without warm-up: the input of bench/profile/ncu_stencil.sh
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

typedef struct {
  fd_kernel k;
  gpu_stencil_cfg cfg;
  const char *tag; /* "default" for the be_kernel_default configuration */
} sweep_cfg;

typedef struct {
  char desc[96];
  const char *variant;
  int m;
  double ms, gbs, pct;
  int is_default, bitwise_ok;
} result;

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

/* One timed operation on stream s (a stencil launch or the reference copy). */
typedef int (*timed_op)(void *ctx, be_stream s);

/* Times `reps` runs of op after `warm` untimed ones, events around each; median ms. */
static double time_op(timed_op op, void *ctx, be_stream s, be_event e0, be_event e1, int warm,
                      int reps)
{
  float *t = malloc(sizeof *t * (size_t)reps);
  if (!t) {
    fprintf(stderr, "kernel_sweep: out of host memory\n");
    exit(1);
  }
  for (int r = 0; r < warm; r++) CHECK(op(ctx, s));
  for (int r = 0; r < reps; r++) {
    CHECK(be_event_record(e0, s));
    CHECK(op(ctx, s));
    CHECK(be_event_record(e1, s));
    CHECK(be_event_sync(e1));
    CHECK(be_event_elapsed_ms(&t[r], e0, e1));
  }
  double m = median_ms(t, reps);
  free(t);
  return m;
}

typedef struct {
  const fd_grid *g;
  const fd_coeffs *c;
  const real_t *u;
  real_t *out;
  const sweep_cfg *sc;
  gpu_stencil_cfg *used;
} stencil_op;

static int run_stencil(void *ctx, be_stream s)
{
  const stencil_op *o = ctx;
  return gpu_stencil_launch(o->g, FD_REGION_ALL, 0, o->c, o->u, NULL, o->out, o->sc->k,
                            &o->sc->cfg, s, o->used);
}

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
} copy_op;

static int run_copy(void *ctx, be_stream s)
{
  const copy_op *o = ctx;
  return be_memcpy_async(o->dst, o->src, o->bytes, BE_COPY_D2D, s);
}

/* zchunks < 0: -zchunks times the rule's number of chunks */
static int add_cfg(sweep_cfg *list, int n, int max, fd_kernel_id id, int m, gpu_schedule sched,
                   int bx, int by, int vec, int depth, int zchunks, int prefetch, const char *tag)
{
  if (n >= max) return n;
  memset(&list[n], 0, sizeof list[n]);
  list[n].k.id = id;
  list[n].k.tile = m;
  list[n].cfg.schedule = sched;
  list[n].cfg.block[0] = bx;
  list[n].cfg.block[1] = by;
  list[n].cfg.vec = vec;
  list[n].cfg.zchunks = zchunks;
  list[n].cfg.depth = depth;
  list[n].cfg.prefetch = prefetch;
  list[n].tag = tag;
  return n + 1;
}

int main(int argc, char **argv)
{
  int sizes[8][3], nsizes = 0, reps = 20, quick = 0, only_default = 0, profile = 0, slug = 0;
  const char *csv_path = NULL, *md_path = NULL;
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
    } else if (!strcmp(argv[a], "--csv") && a + 1 < argc) {
      csv_path = argv[++a];
    } else if (!strcmp(argv[a], "--md") && a + 1 < argc) {
      md_path = argv[++a];
    } else {
      fprintf(stderr,
              "usage: kernel_sweep [--size NXxNYxNZ]... [--reps N] [--quick] [--only-default]"
              " [--profile] [--device-slug] [--csv FILE] [--md FILE]\n");
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
  if (csv && ftell(csv) == 0)
    fprintf(csv, "device,date,precision,nx,ny,nz,variant,m,config,default,ms,eff_GBps,"
                 "memcpy_GBps,pct_memcpy,bitwise_ok\n");
  int failures = 0;

  for (int si = 0; si < nsizes; si++) {
    fd_grid g = {{sizes[si][0], sizes[si][1], sizes[si][2]}};
    const size_t pts = fd_grid_points_with_ghosts(&g);
    const size_t bytes = pts * sizeof(real_t);
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

    const double nx = g.n[0], ny = g.n[1], nz = g.n[2];
    const double eff_bytes =
        ((double)pts - 8 - 4 * (nx + ny + nz) + nx * ny * nz) * (double)sizeof(real_t);
    copy_op cop = {out, u, bytes};
    const double mc_ms = time_op(run_copy, &cop, s, e0, e1, profile ? 0 : 3, reps);
    const double mc_gbs = 2.0 * (double)bytes / (mc_ms * 1e6);

    /* reference output: baseline */
    fd_kernel kb = {FD_KERNEL_BASELINE, 1};
    CHECK(gpu_stencil_launch(&g, FD_REGION_ALL, 0, &c, u, NULL, ref, kb, NULL, s, NULL));

    fd_kernel kdef;
    CHECK(be_kernel_default(&g, &kdef));
    gpu_stencil_cfg cdef;
    CHECK(gpu_stencil_cfg_default(&g, kdef, &cdef));

    enum { MAXC = 256 };
    sweep_cfg list[MAXC];
    int n = 0;
    n = add_cfg(list, n, MAXC, kdef.id, kdef.tile, cdef.schedule, 0, 0, 0, 0, 0, 0, "default");
    if (profile) {
      n = add_cfg(list, n, MAXC, FD_KERNEL_BASELINE, 1, GPU_SCHED_BASELINE, 256, 1, 0, 0, 0, -1, NULL);
      n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, 8, GPU_SCHED_PLANE, 256, 1, 0, 0, 0, -1, NULL);
      n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, 4, GPU_SCHED_PLANE, 256, 1, 0, 0, 0, -1, NULL);
      n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, 2, GPU_SCHED_ZMARCH, 256, 1, 1, 4, 0, -1, NULL);
    }
    if (!only_default) {
      /* 1. every schedule x m x block shape (x vec x depth) with the rules' other choices */
      static const int bshape[][2] = {{256, 1}, {128, 2}, {64, 4}, {32, 8}};
      const int nb = quick ? 2 : 4, nbr = quick ? 1 : 3;
      for (int b = 0; b < nb; b++)
        n = add_cfg(list, n, MAXC, FD_KERNEL_BASELINE, 1, GPU_SCHED_BASELINE, bshape[b][0],
                    bshape[b][1], 0, 0, 0, 0, NULL);
      for (int m = 1; m <= 16; m *= 2)
        for (int vec = 1; vec <= 2; vec++) {
          if (vec == 2 && m > 8) continue;
          for (int b = 0; b < nbr; b++)
            n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, m, GPU_SCHED_PLANE, bshape[b][0],
                        bshape[b][1], vec, 0, 0, 0, NULL);
        }
      for (int m = 1; m <= 16; m *= 2)
        for (int vec = 1; vec <= 2; vec++)
          for (int depth = 1; depth <= 4; depth *= 2) {
            if (m > 4 && (vec == 2 || depth > 1)) continue;
            for (int b = 0; b < nbr; b++)
              n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, m, GPU_SCHED_ZMARCH, bshape[b][0],
                          bshape[b][1], vec, depth, 0, 0, NULL);
          }
      /* 2. the L2 prefetch distance (-1 = off) */
      static const int pfs[] = {-1, 1, 2, 4};
      for (int q = 0; q < 4; q++) {
        n = add_cfg(list, n, MAXC, FD_KERNEL_BASELINE, 1, GPU_SCHED_BASELINE, 256, 1, 0, 0, 0,
                    pfs[q], NULL);
        n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, 4, GPU_SCHED_PLANE, 256, 1, 0, 0, 0,
                    pfs[q], NULL);
        n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, 2, GPU_SCHED_ZMARCH, 256, 1, 1, 4, 0,
                    pfs[q], NULL);
      }
      /* 3. z-marching with more chunks than one resident wave */
      for (int f = 2; f <= 8; f *= 2)
        for (int m = 1; m <= 4; m *= 2)
          n = add_cfg(list, n, MAXC, FD_KERNEL_REORDERED, m, GPU_SCHED_ZMARCH, 256, 1, 1, 4, -f,
                      0, NULL);
    }

    for (int i = 0; i < n; i++)
      if (list[i].cfg.zchunks < 0) {
        gpu_stencil_cfg r;
        CHECK(gpu_stencil_cfg_default(&g, list[i].k, &r));
        gpu_stencil_cfg probe = list[i].cfg;
        probe.zchunks = 0;
        fd_kernel kk = list[i].k;
        CHECK(gpu_stencil_launch(&g, FD_REGION_ALL, 0, &c, u, NULL, out, kk, &probe, s, &r));
        list[i].cfg.zchunks = -list[i].cfg.zchunks * r.zchunks;
      }
    result *res = calloc(n > 0 ? (size_t)n : 1, sizeof *res); /* n >= 1: the default */
    if (!res) {
      fprintf(stderr, "kernel_sweep: out of host memory\n");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      gpu_stencil_cfg used;
      CHECK(be_fill(&g, &fl, out, s)); /* fresh output: a config that skips points shows */
      stencil_op sop = {&g, &c, u, out, &list[i], &used};
      res[i].ms = time_op(run_stencil, &sop, s, e0, e1, profile ? 0 : 2, reps);
      gpu_stencil_cfg_describe(&used, list[i].k, res[i].desc, sizeof res[i].desc);
      res[i].variant = used.schedule == GPU_SCHED_BASELINE ? "baseline"
                       : used.schedule == GPU_SCHED_PLANE  ? "reordered-plane"
                                                           : "reordered-zmarch";
      res[i].m = list[i].k.tile;
      res[i].gbs = eff_bytes / (res[i].ms * 1e6);
      res[i].pct = 100.0 * res[i].gbs / mc_gbs;
      res[i].is_default = list[i].tag != NULL;
      fd_norms dn;
      CHECK(be_norms(&g, out, ref, NULL, &dn, s));
      res[i].bitwise_ok = dn.max_abs == 0.0;
      if (!res[i].bitwise_ok) failures++;
    }

    printf("\n## %dx%dx%d %s: memcpy D2D %.1f GB/s (%.3f ms for %.1f MB), effective bytes %.1f MB\n",
           g.n[0], g.n[1], g.n[2], FDMINI_REAL_NAME, mc_gbs, mc_ms, bytes / 1e6, eff_bytes / 1e6);
    printf("%-18s %3s %-46s %9s %9s %8s %s\n", "variant", "m", "configuration", "ms", "GB/s",
           "%memcpy", "check");
    if (md) {
      fprintf(md, "\n### %s, %dx%dx%d, %s\n\n", info.name, g.n[0], g.n[1], g.n[2],
              FDMINI_REAL_NAME);
      fprintf(md, "memcpy device-to-device: %.1f GB/s (%.3f ms for %.1f MB read + written); "
                  "effective bytes per stencil: %.1f MB; %s; median of %d\n\n",
              mc_gbs, mc_ms, 2 * bytes / 1e6, eff_bytes / 1e6, date, reps);
      fprintf(md, "| variant | m | configuration | ms | effective GB/s | %% of memcpy | bitwise = baseline |\n");
      fprintf(md, "|---|---|---|---|---|---|---|\n");
    }
    int best = 0;
    for (int i = 0; i < n; i++) {
      if (res[i].gbs > res[best].gbs) best = i;
      printf("%-18s %3d %-46s %9.4f %9.1f %7.1f%% %s%s\n", res[i].variant, res[i].m,
             res[i].desc, res[i].ms, res[i].gbs, res[i].pct, res[i].bitwise_ok ? "ok" : "MISMATCH",
             res[i].is_default ? "  <- default" : "");
      if (md)
        fprintf(md, "| %s%s | %d | %s | %.4f | %.1f | %.1f | %s |\n", res[i].is_default ? "**" : "",
                res[i].variant, res[i].m, res[i].desc, res[i].ms, res[i].gbs, res[i].pct,
                res[i].bitwise_ok ? "yes" : "NO");
      if (csv)
        fprintf(csv, "\"%s\",%s,%s,%d,%d,%d,%s,%d,\"%s\",%d,%.5f,%.2f,%.2f,%.2f,%d\n", info.name,
                date, FDMINI_REAL_NAME, g.n[0], g.n[1], g.n[2], res[i].variant, res[i].m,
                res[i].desc, res[i].is_default, res[i].ms, res[i].gbs, mc_gbs, res[i].pct,
                res[i].bitwise_ok);
    }
    printf("SUMMARY %s %dx%dx%d %s: memcpy %.1f GB/s; default [%s] %.1f GB/s = %.1f%%; "
           "best [%s m=%d %s] %.1f GB/s = %.1f%%\n",
           info.name, g.n[0], g.n[1], g.n[2], FDMINI_REAL_NAME, mc_gbs, res[0].desc, res[0].gbs,
           res[0].pct, res[best].variant, res[best].m, res[best].desc, res[best].gbs,
           res[best].pct);
    if (md)
      fprintf(md, "\nDefault: %s, %.1f GB/s = %.1f%% of memcpy. Best: %s %s, %.1f GB/s = %.1f%%.\n",
              res[0].desc, res[0].gbs, res[0].pct, res[best].variant, res[best].desc,
              res[best].gbs, res[best].pct);
    free(res);
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
