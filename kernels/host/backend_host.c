/* backend_host.c - the host backend: the backend API (backend.h) in plain C with optional
 * OpenMP. Streams and events are synchronous (every "asynchronous" call has finished when it
 * returns; events record wall-clock time). It is the reference the GPU backends are checked
 * against and the backend CI runs end to end. All stencil variants and tile factors run the
 * same loop here: they differ only in how a GPU schedules loads.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "pointwise.h"

struct be_stream_s {
  int priority;
  struct be_graph_s *capture; /* the graph being recorded on this stream, or NULL */
};
struct be_event_s {
  double t; /* seconds, CLOCK_MONOTONIC, when recorded */
  int recorded;
};

static char err_msg[256];

static int fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  return BE_ERROR;
}

const char *be_error_message(void) { return err_msg; }

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- graphs: recorded calls ----
 * The host backend runs every call to completion, so a "graph" is the list of the calls made
 * on a stream between be_graph_begin and be_graph_end, with their arguments copied, replayed in
 * order by be_graph_launch: the same work on the same buffers, as a GPU graph replays its
 * kernels. It lets the host test the driver's capture and replay logic bit for bit. */
typedef enum {
  OP_ZRANGE,
  OP_BOX,
  OP_FUSED,
  OP_PACK,
  OP_UNPACK,
  OP_SHELL_X,
  OP_SIG_PRIME,
  OP_SIG_PASS,
  OP_SIGD_PACK,
  OP_SIGD_UNPACK,
  OP_MEMCPY,
  OP_ADD_POINT,
  OP_RECORD
} host_op_kind;

typedef struct {
  host_op_kind kind;
  fd_grid g;
  fd_region region;
  unsigned deferred;
  int k0, k1, lo[3], hi[3], flo[3], fhi[3], pt[3];
  fd_coeffs c;
  fd_kernel kern;
  fd_fused fused;
  fd_faces faces;
  const real_t *u, *f;
  real_t *out;
  const void *src;
  void *dst;
  size_t bytes;
  real_t value;
  be_event event;
  unsigned unpack, pack; /* OP_SHELL_X: u is the field (written), src recv, dst send */
  be_signals sig;        /* OP_SIG_PRIME, OP_SIG_PASS, OP_SIGD_* (u2: dst) */
  be_sig_stencil sv;     /* OP_SIG_PASS where has_sv (its c2: &c2) */
  fd_coeffs c2;
  int has_sv;
} host_op;

struct be_graph_s {
  host_op *ops;
  int n, cap;
};

static int capturing(be_stream s) { return s && s->capture; }

/* Appends op to the graph s is recording (the caller then does not run the call). */
static int record(be_stream s, const host_op *op)
{
  struct be_graph_s *g = s->capture;
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 8;
    host_op *ops = realloc(g->ops, (size_t)cap * sizeof *ops);
    if (!ops) return fail("be_graph: out of host memory while recording");
    g->ops = ops;
    g->cap = cap;
  }
  g->ops[g->n++] = *op;
  return BE_OK;
}

int be_graph_begin(be_stream s)
{
  if (s->capture) return fail("be_graph_begin: the stream is already recording");
  s->capture = calloc(1, sizeof *s->capture);
  if (!s->capture) return fail("be_graph_begin: out of host memory");
  return BE_OK;
}

int be_graph_end(be_stream s, be_graph *g)
{
  *g = s->capture;
  s->capture = NULL;
  if (!*g) return fail("be_graph_end: the stream was not recording");
  return BE_OK;
}

int be_graph_destroy(be_graph g)
{
  if (!g) return BE_OK;
  free(g->ops);
  free(g);
  return BE_OK;
}

/* ---- device ---- */

int be_device_count(int *count)
{
  *count = 1;
  return BE_OK;
}

static void cpu_model(char *out, size_t len)
{
  snprintf(out, len, "host CPU");
  FILE *fp = fopen("/proc/cpuinfo", "r");
  if (!fp) return;
  char line[512];
  while (fgets(line, sizeof line, fp)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *colon = strchr(line, ':');
      if (colon) {
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
      }
      break;
    }
  }
  fclose(fp);
}

int be_init(int index, be_info *info)
{
  if (index != 0) return fail("be_init: host backend has one device, asked for %d", index);
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "host");
  cpu_model(info->name, sizeof info->name);
  info->device_index = 0;
  info->device_count = 1;
  info->is_accelerator = 0;
  info->launches_wait = 0;  /* every call runs to completion before it returns */
  info->eager_loading = 1;  /* nothing to load */
  info->mps = -1;           /* no GPU */
#ifdef _OPENMP
  info->host_threads = omp_get_max_threads();
#else
  info->host_threads = 1;
#endif
  return BE_OK;
}

int be_finalize(void) { return BE_OK; }

void be_preinit(void) {}

void be_set_device_sharers(int ranks) { (void)ranks; }

/* ---- memory ---- */

static int host_malloc(void **ptr, size_t bytes, const char *what)
{
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded < bytes) return fail("%s(%zu bytes): size overflows", what, bytes);
  *ptr = aligned_alloc(64, rounded ? rounded : 64);
  if (!*ptr) return fail("%s(%zu bytes) failed: out of memory", what, bytes);
  return BE_OK;
}

int be_malloc(void **ptr, size_t bytes) { return host_malloc(ptr, bytes, "be_malloc"); }
int be_malloc_peer(void **ptr, size_t bytes) { return host_malloc(ptr, bytes, "be_malloc_peer"); }
int be_host_alloc(void **ptr, size_t bytes) { return host_malloc(ptr, bytes, "be_host_alloc"); }
int be_host_alloc_shared(void **ptr, size_t bytes) { return host_malloc(ptr, bytes, "be_host_alloc_shared"); }
int be_free(void *ptr)
{
  free(ptr);
  return BE_OK;
}
int be_host_free(void *ptr)
{
  free(ptr);
  return BE_OK;
}

int be_memcpy_async(void *dst, const void *src, size_t bytes, be_copy_kind kind, be_stream s)
{
  (void)kind;
  if (capturing(s)) {
    const host_op op = {.kind = OP_MEMCPY, .dst = dst, .src = src, .bytes = bytes};
    return record(s, &op);
  }
  if (bytes) memcpy(dst, src, bytes);
  return BE_OK;
}

/* ---- sharing with other processes: nothing to share, fields are host memory ---- */

static const char no_ipc[] = "the host backend keeps fields in host memory: there is no device memory to share between processes";

int be_ipc_supported(char *why, size_t why_len)
{
  snprintf(why, why_len, "%s", no_ipc);
  return 0;
}
int be_device_can_reach(const char *pci_bus_id, int *yes, char *why, size_t why_len)
{
  (void)pci_bus_id;
  *yes = 0;
  snprintf(why, why_len, "%s", no_ipc);
  return BE_OK;
}
static int ipc_unsupported(const char *what)
{
  fail("%s: %s", what, no_ipc);
  return BE_UNSUPPORTED;
}
int be_ipc_mem_handle(void *ptr, be_ipc_handle *h)
{
  (void)ptr;
  (void)h;
  return ipc_unsupported("be_ipc_mem_handle");
}
int be_ipc_mem_open(const be_ipc_handle *h, void **ptr)
{
  (void)h;
  *ptr = NULL;
  return ipc_unsupported("be_ipc_mem_open");
}
int be_ipc_mem_close(void *ptr)
{
  return ptr ? ipc_unsupported("be_ipc_mem_close") : BE_OK;
}
/* host streams run every call to completion: a wait for a flag another process sets could
 * only deadlock */
int be_stream_set_flag(be_stream s, uint32_t *flag, uint32_t value)
{
  (void)s;
  (void)flag;
  (void)value;
  return ipc_unsupported("be_stream_set_flag");
}
int be_stream_wait_flag(be_stream s, const uint32_t *flag, uint32_t value)
{
  (void)s;
  (void)flag;
  (void)value;
  return ipc_unsupported("be_stream_wait_flag");
}
int be_memcpy_peer_async(void *dst, const void *src, size_t bytes, be_stream s)
{
  (void)s;
  if (bytes) memcpy(dst, src, bytes);
  return BE_OK;
}

/* ---- streams and events ---- */

int be_stream_create(be_stream *s, be_priority priority)
{
  *s = calloc(1, sizeof **s);
  if (!*s) return fail("be_stream_create: out of memory");
  (*s)->priority = (int)priority;
  return BE_OK;
}
int be_stream_destroy(be_stream s)
{
  if (s) (void)be_graph_destroy(s->capture);
  free(s);
  return BE_OK;
}
int be_stream_sync(be_stream s)
{
  (void)s;
  return BE_OK;
}
int be_event_create(be_event *e)
{
  *e = calloc(1, sizeof **e);
  if (!*e) return fail("be_event_create: out of memory");
  return BE_OK;
}
int be_event_create_sync(be_event *e) { return be_event_create(e); }
int be_event_destroy(be_event e)
{
  free(e);
  return BE_OK;
}
int be_event_record(be_event e, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_RECORD, .event = e};
    return record(s, &op);
  }
  e->t = now_s();
  e->recorded = 1;
  return BE_OK;
}
int be_event_sync(be_event e)
{
  (void)e;
  return BE_OK;
}
/* Nothing is ever in flight here: the waits return at once and never call the hook. */
void be_set_wait_hook(be_wait_hook hook, void *ctx)
{
  (void)hook;
  (void)ctx;
}
int be_stream_wait_event(be_stream s, be_event e)
{
  (void)s;
  (void)e;
  return BE_OK;
}
int be_event_elapsed_ms(float *ms, be_event start, be_event end)
{
  if (!start->recorded || !end->recorded)
    return fail("be_event_elapsed_ms: event was never recorded");
  *ms = (float)((end->t - start->t) * 1e3);
  return BE_OK;
}

int be_event_query(be_event e, int *done)
{
  (void)e;
  *done = 1;
  return BE_OK;
}

int be_floors(be_stream s, void *dst, const void *src, size_t bytes, be_floor_times *f)
{
  (void)s;
  enum { REPS = 5 };
  double t[REPS];
  f->graph_us = f->launch_sync_us = 0.0; /* nothing is launched here */
  memcpy(dst, src, bytes);
  for (int r = 0; r < REPS; r++) {
    const double a = now_s();
    memcpy(dst, src, bytes);
    t[r] = (now_s() - a) * 1e6;
  }
  for (int i = 1; i < REPS; i++) /* the median */
    for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
      const double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  f->copy_us = t[REPS / 2];
  return BE_OK;
}

int be_graph_launch(be_graph g, be_stream s)
{
  int rc = BE_OK;
  for (int q = 0; q < g->n && rc == BE_OK; q++) {
    const host_op *o = &g->ops[q];
    switch (o->kind) {
    case OP_ZRANGE:
      rc = be_stencil_zrange(&o->g, o->region, o->deferred, o->k0, o->k1, &o->c, o->u, o->f, o->out, o->kern, s);
      break;
    case OP_BOX: rc = be_stencil_box(&o->g, o->lo, o->hi, &o->c, o->u, o->f, o->out, o->kern, s); break;
    case OP_FUSED:
      rc = be_stencil_fused(&o->g, &o->fused, o->lo, o->hi, o->flo, o->fhi, &o->c, o->u, o->f, o->out, s);
      break;
    case OP_PACK: rc = be_pack_faces(&o->g, &o->faces, o->u, o->out, s); break;
    case OP_UNPACK: rc = be_unpack_faces(&o->g, &o->faces, o->u, o->out, s); break;
    case OP_SHELL_X:
      rc = be_shell_exchange(&o->g, o->deferred, &o->c, (real_t *)o->u, o->f, o->out, &o->faces, o->src,
                             o->unpack, o->dst, o->pack, s);
      break;
    case OP_SIG_PRIME: rc = be_signals_prime(&o->g, &o->sig, o->u, s); break;
    case OP_SIG_PASS: {
      be_sig_stencil v = o->sv;
      if (v.c2) v.c2 = &o->c2;
      rc = be_signals_pass(&o->g, &o->c, (real_t *)o->u, o->f, o->out, o->kern, &o->sig, o->has_sv ? &v : NULL, s);
      break;
    }
    case OP_SIGD_PACK: rc = be_signals_pack(&o->g, &o->sig, o->u, o->dst, s); break;
    case OP_SIGD_UNPACK: rc = be_signals_unpack(&o->g, &o->sig, (real_t *)o->u, o->dst, s); break;
    case OP_MEMCPY: rc = be_memcpy_async(o->dst, o->src, o->bytes, BE_COPY_D2D, s); break;
    case OP_ADD_POINT: rc = be_add_point(&o->g, o->pt[0], o->pt[1], o->pt[2], o->value, o->out, s); break;
    case OP_RECORD: rc = be_event_record(o->event, s); break;
    }
  }
  return rc;
}

int be_runtime_versions(char *runtime, size_t runtime_len, char *driver, size_t driver_len)
{
  snprintf(runtime, runtime_len, "none");
  snprintf(driver, driver_len, "none");
  return BE_OK;
}

void be_range_push(const char *name) { (void)name; }
void be_range_pop(void) {}

/* ---- stencil ---- */

/* One loop serves every variant on the host: configurations only need to be valid. */
int be_kernel_resolve(const fd_grid *g, fd_kernel *k)
{
  (void)g;
  if (k->id < 0 || k->id >= FD_KERNEL_COUNT) return fail("stencil: unknown kernel id %d", (int)k->id);
  if (!k->tile) k->tile = 1;
  if (!k->vec) k->vec = 1;
  return BE_OK;
}

int be_kernel_default(const fd_grid *g, fd_kernel *k)
{
  memset(k, 0, sizeof *k);
  k->id = FD_KERNEL_REORDERED;
  return be_kernel_resolve(g, k);
}

int be_kernel_candidates(fd_kernel *list, int max)
{
  if (max < 1) return 0;
  memset(&list[0], 0, sizeof list[0]);
  list[0].id = FD_KERNEL_REORDERED;
  return 1;
}

/* Updates points i0..i1 (inclusive) of row (j, k). */
static inline void row(const fd_grid *g, const fd_coeffs *c, const real_t *u, const real_t *f,
                       real_t *out, int i0, int i1, int j, int k)
{
  const long long py = g->sx, pz = g->sxy;
  for (int i = i0; i <= i1; i++) {
    const long long p = fd_grid_index(g, i, j, k);
    real_t v = fd_stencil_point(c->cc, c->cx, c->cy, c->cz, u[p], u[p - 1], u[p + 1],
                                u[p - py], u[p + py], u[p - pz], u[p + pz]);
    out[p] = f ? v + c->cf * f[p] : v;
  }
}

int be_stencil(const fd_grid *g, fd_region region, unsigned deferred, const fd_coeffs *c,
               const real_t *u, const real_t *f, real_t *out, fd_kernel kern, be_stream s)
{
  return be_stencil_zrange(g, region, deferred, 1, g->n[2], c, u, f, out, kern, s);
}

int be_stencil_zrange(const fd_grid *g, fd_region region, unsigned deferred, int k0, int k1,
                      const fd_coeffs *c, const real_t *u, const real_t *f, real_t *out,
                      fd_kernel kern, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_ZRANGE, .g = *g, .region = region, .deferred = deferred, .k0 = k0,
                        .k1 = k1, .c = *c, .u = u, .f = f, .out = out, .kern = kern};
    return record(s, &op);
  }
  if (kern.id < 0 || kern.id >= FD_KERNEL_COUNT) return fail("be_stencil: unknown kernel %d", kern.id);
  if (region < FD_REGION_ALL || region > FD_REGION_SHELL) return fail("be_stencil: unknown region %d", region);
  const int nx = g->n[0], ny = g->n[1], nz = g->n[2];
  int lo[3], hi[3];
  fd_interior_box(g, region == FD_REGION_ALL ? 0u : deferred, lo, hi);
  const int kz0 = k0 > 1 ? k0 : 1, kz1 = k1 < nz ? k1 : nz; /* the planes asked for */
  if (region != FD_REGION_SHELL) {
    if (lo[2] < kz0) lo[2] = kz0;
    if (hi[2] > kz1) hi[2] = kz1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = lo[2]; k <= hi[2]; k++)
      for (int j = lo[1]; j <= hi[1]; j++) row(g, c, u, f, out, lo[0], hi[0], j, k);
    return BE_OK;
  }
  /* the shell: every point of 1..n outside the interior box; a row inside the box's (j, k)
   * range keeps only its points left of lo[0] and right of hi[0] */
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = kz0; k <= kz1; k++)
    for (int j = 1; j <= ny; j++) {
      if (k < lo[2] || k > hi[2] || j < lo[1] || j > hi[1] || hi[0] < lo[0]) {
        row(g, c, u, f, out, 1, nx, j, k);
      } else {
        row(g, c, u, f, out, 1, lo[0] - 1, j, k);
        row(g, c, u, f, out, hi[0] + 1, nx, j, k);
      }
    }
  return BE_OK;
}

/* ---- several time steps per pass ---- */

int be_fused_resolve(fd_fused *c)
{
  if (c->steps < 1 || c->steps > FD_FUSE_MAX)
    return fail("fused: %d steps per pass, expected 1..%d", c->steps, FD_FUSE_MAX);
  if (!c->tile) c->tile = 1;
  if (!c->vec) c->vec = 1;
  if (!c->block_y) c->block_y = 1;
  if (!c->chunk) c->chunk = 1;
  return BE_OK;
}

int be_fused_candidates(int steps, const fd_fused_trial *t, fd_fused *list, int max)
{
  (void)t;
  if (max < 1) return 0;
  memset(&list[0], 0, sizeof list[0]);
  list[0].steps = steps;
  return be_fused_resolve(&list[0]) == BE_OK;
}

/* T single steps, each into a scratch field that the next reads: level t over the part of the
 * fix box that level T's box lo..hi depends on (lo..hi widened by T - t), every other point
 * carried over unchanged; then lo..hi of level T into out. The reference of the GPU's fused
 * kernel: the same points, the same expression, the same bits. */
int be_stencil_fused(const fd_grid *g, const fd_fused *cin, const int lo[3], const int hi[3],
                     const int fix_lo[3], const int fix_hi[3], const fd_coeffs *cf,
                     const real_t *u, const real_t *f, real_t *out, be_stream s)
{
  if (capturing(s)) {
    host_op op = {.kind = OP_FUSED, .g = *g, .fused = *cin, .c = *cf, .u = u, .f = f, .out = out};
    for (int d = 0; d < 3; d++) {
      op.lo[d] = lo[d], op.hi[d] = hi[d];
      op.flo[d] = fix_lo[d], op.fhi[d] = fix_hi[d];
    }
    return record(s, &op);
  }
  if (u == out) return fail("be_stencil_fused: u and out must differ");
  fd_fused c = *cin;
  int rc = be_fused_resolve(&c);
  if (rc) return rc;
  const int G = g->ghost;
  for (int d = 0; d < 3; d++) {
    if (hi[d] < lo[d]) return BE_OK;
    if (lo[d] < fix_lo[d] || hi[d] > fix_hi[d] || fix_lo[d] < 2 - G || fix_hi[d] > g->n[d] + G - 1)
      return fail("be_stencil_fused: box %d..%d / fix box %d..%d outside the grid along %d", lo[d],
                  hi[d], fix_lo[d], fix_hi[d], d);
  }
  real_t *a = malloc(g->elems * sizeof(real_t)), *b = malloc(g->elems * sizeof(real_t));
  if (!a || !b) {
    free(a);
    free(b);
    return fail("be_stencil_fused: out of host memory for two scratch fields");
  }
  memcpy(a, u, g->elems * sizeof(real_t));
  for (int t = 1; t <= c.steps; t++) {
    memcpy(b, a, g->elems * sizeof(real_t));
    int rlo[3], rhi[3];
    for (int d = 0; d < 3; d++) {
      rlo[d] = lo[d] - (c.steps - t) > fix_lo[d] ? lo[d] - (c.steps - t) : fix_lo[d];
      rhi[d] = hi[d] + (c.steps - t) < fix_hi[d] ? hi[d] + (c.steps - t) : fix_hi[d];
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = rlo[2]; k <= rhi[2]; k++)
      for (int j = rlo[1]; j <= rhi[1]; j++) row(g, cf, a, f, b, rlo[0], rhi[0], j, k);
    real_t *x = a;
    a = b;
    b = x;
  }
  for (int k = lo[2]; k <= hi[2]; k++)
    for (int j = lo[1]; j <= hi[1]; j++) {
      const long long p = fd_grid_index(g, lo[0], j, k);
      memcpy(out + p, a + p, (size_t)(hi[0] - lo[0] + 1) * sizeof(real_t));
    }
  free(a);
  free(b);
  return BE_OK;
}

int be_stencil_box(const fd_grid *g, const int lo[3], const int hi[3], const fd_coeffs *c,
                   const real_t *u, const real_t *f, real_t *out, fd_kernel kern, be_stream s)
{
  if (capturing(s)) {
    host_op op = {.kind = OP_BOX, .g = *g, .c = *c, .u = u, .f = f, .out = out, .kern = kern};
    for (int d = 0; d < 3; d++) op.lo[d] = lo[d], op.hi[d] = hi[d];
    return record(s, &op);
  }
  if (kern.id < 0 || kern.id >= FD_KERNEL_COUNT) return fail("be_stencil_box: unknown kernel %d", kern.id);
  for (int d = 0; d < 3; d++) {
    if (hi[d] < lo[d]) return BE_OK;
    if (lo[d] < 2 - g->ghost || hi[d] > g->n[d] + g->ghost - 1)
      return fail("be_stencil_box: %d..%d outside the grid along %d", lo[d], hi[d], d);
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = lo[2]; k <= hi[2]; k++)
    for (int j = lo[1]; j <= hi[1]; j++) row(g, c, u, f, out, lo[0], hi[0], j, k);
  return BE_OK;
}

int be_add_point(const fd_grid *g, int i, int j, int k, real_t value, real_t *u, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_ADD_POINT, .g = *g, .pt = {i, j, k}, .value = value, .out = u};
    return record(s, &op);
  }
  const int G = g->ghost;
  if (i < 1 - G || j < 1 - G || k < 1 - G || i > g->n[0] + G || j > g->n[1] + G || k > g->n[2] + G)
    return fail("be_add_point: point (%d,%d,%d) outside the %dx%dx%d grid", i, j, k, g->n[0],
                g->n[1], g->n[2]);
  u[fd_grid_index(g, i, j, k)] += value;
  return BE_OK;
}

/* ---- halo regions ---- */

/* Region r's box of one field between u (its send box, to_msg; else its receive box) and
 * msg, the region's message in the region's order (faces.h). */
static void region_box_copy(const fd_grid *g, const fd_faces *fa, int r, real_t *u, real_t *msg, int to_msg)
{
  int lo[3], hi[3];
  fd_region_box(fa->n, fa->width, r, !to_msg, lo, hi);
  const int e0 = hi[0] - lo[0] + 1, e1 = hi[1] - lo[1] + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = lo[2]; k <= hi[2]; k++)
    for (int j = lo[1]; j <= hi[1]; j++) {
      real_t *row = u + fd_grid_index(g, lo[0], j, k);
      real_t *mr = msg + (size_t)e0 * ((size_t)(j - lo[1]) + (size_t)e1 * (size_t)(k - lo[2]));
      if (to_msg) memcpy(mr, row, (size_t)e0 * sizeof(real_t));
      else memcpy(row, mr, (size_t)e0 * sizeof(real_t));
    }
}

/* Copies field f->field's box of every active region between u and buf (faces.h):
 * to_buf = 1 packs the send boxes, 0 unpacks into the receive boxes. */
static int regions_copy(const fd_grid *g, const fd_faces *f, real_t *u, real_t *buf, int to_buf)
{
  for (int d = 0; d < 3; d++)
    if (f->n[d] != g->n[d] || f->width > g->ghost)
      return fail("%s: regions built for %dx%dx%d width %d, grid is %dx%dx%d with %d ghost layers",
                  to_buf ? "be_pack_faces" : "be_unpack_faces", f->n[0], f->n[1], f->n[2],
                  f->width, g->n[0], g->n[1], g->n[2], g->ghost);
  for (int r = 0; r < FD_REGIONS; r++)
    if (f->active[r] && f->count[r] > 0) region_box_copy(g, f, r, u, buf + f->offset[r], to_buf);
  return BE_OK;
}

int be_pack_faces(const fd_grid *g, const fd_faces *f, const real_t *u, real_t *buf,
                  be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_PACK, .g = *g, .faces = *f, .u = u, .out = buf};
    return record(s, &op);
  }
  return regions_copy(g, f, (real_t *)u, buf, 1);
}

int be_unpack_faces(const fd_grid *g, const fd_faces *f, const real_t *buf, real_t *u,
                    be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_UNPACK, .g = *g, .faces = *f, .u = buf, .out = u};
    return record(s, &op);
  }
  return regions_copy(g, f, u, (real_t *)buf, 0);
}

/* ---- fields and norms ---- */

int be_fill(const fd_grid *g, const fd_field *fl, real_t *u, be_stream s)
{
  (void)s;
  const int G = g->ghost;
  memset(u, 0, g->elems * sizeof(real_t)); /* padding */
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 1 - G; k <= g->n[2] + G; k++)
    for (int j = 1 - G; j <= g->n[1] + G; j++)
      for (int i = 1 - G; i <= g->n[0] + G; i++)
        u[fd_grid_index(g, i, j, k)] = (real_t)fd_field_value(fl, fl->offset[0] + i,
                                                              fl->offset[1] + j, fl->offset[2] + k);
  return BE_OK;
}

int be_norms(const fd_grid *g, const real_t *a, const real_t *b, const fd_field *ref,
             fd_norms *out, be_stream s)
{
  (void)s;
  double sum = 0.0, mx = 0.0;
#pragma omp parallel for collapse(2) reduction(+ : sum) reduction(max : mx) schedule(static)
  for (int k = 1; k <= g->n[2]; k++)
    for (int j = 1; j <= g->n[1]; j++)
      for (int i = 1; i <= g->n[0]; i++) {
        const long long p = fd_grid_index(g, i, j, k);
        double d = (double)a[p];
        if (b) d -= (double)b[p];
        if (ref) d -= fd_field_value(ref, ref->offset[0] + i, ref->offset[1] + j, ref->offset[2] + k);
        double ad = d < 0 ? -d : d;
        if (ad != ad) ad = INFINITY; /* NaN counts as infinitely wrong */
        sum += d * d;
        if (ad > mx) mx = ad;
      }
  out->sum_sq = sum;
  out->max_abs = mx;
  out->count = (long long)g->n[0] * g->n[1] * g->n[2];
  return BE_OK;
}

/* The stencil of a shell point (shell_exchange_point): c for planes k <= k1, c2 beyond; the
 * value packed is the new one, or u's (pack_u); the point src_p (a grid index, -1: none) gets
 * src_v added to its new value where src_v != 0; keep_out (a test's BE_SIG_TEST_NOSHELL): the
 * new value is packed but not written into out. */
typedef struct {
  const fd_coeffs *c, *c2;
  int k1, pack_u;
  long long src_p;
  real_t src_v;
  int keep_out;
} shell_stencil;

/* One point (i, j, k) of be_shell_exchange and be_signals_pass: its neighbour across face
 * fc = 2*d + side is recv[fc]'s (the face's region, at its point (p, q) = p + n[a]*q) where fc
 * is in unpack and the point lies in fc's layer, else u's; its new value (u's without out)
 * goes to send[fc] (face fc's region, the same order) where fc is in pack. */
static void shell_exchange_point(const fd_grid *g, const shell_stencil *st, real_t *u, const real_t *f,
                                 real_t *out, const real_t *const recv[FD_FACES], unsigned unpack,
                                 real_t *const send[FD_FACES], unsigned pack, int i, int j, int k)
{
  const int x[3] = {i, j, k};
  const long long stride[3] = {1, g->sx, g->sxy}, p = fd_grid_index(g, i, j, k);
  real_t nb[6];
  size_t idx[6];
  unsigned on = 0; /* faces whose layer holds the point */
  for (int fc = 0; fc < FD_FACES; fc++) {
    const int d = fc / 2, side = fc % 2, a = d == 0 ? 1 : 0, b = d == 2 ? 1 : 2;
    idx[fc] = (size_t)(x[a] - 1) + (size_t)g->n[a] * (size_t)(x[b] - 1);
    const long long q = p + (side ? stride[d] : -stride[d]);
    if (x[d] == (side ? g->n[d] : 1)) on |= 1u << fc;
    nb[fc] = (unpack & on) >> fc & 1u ? recv[fc][idx[fc]] : u[q];
  }
  const real_t up = u[p];
  real_t v = up;
  if (out) {
    const fd_coeffs *c = k > st->k1 ? st->c2 : st->c;
    v = fd_stencil_point(c->cc, c->cx, c->cy, c->cz, up, nb[0], nb[1], nb[2], nb[3], nb[4], nb[5]);
    if (f) v += c->cf * f[p];
    if (p == st->src_p && st->src_v != 0) v += st->src_v;
    if (!st->keep_out) out[p] = v;
  }
  const real_t sent = st->pack_u ? up : v;
  for (int fc = 0; fc < FD_FACES; fc++) {
    if (!(on >> fc & 1u)) continue;
    const int d = fc / 2, side = fc % 2;
    if (pack >> fc & 1u) send[fc][idx[fc]] = sent;
    if (unpack >> fc & 1u) u[p + (side ? stride[d] : -stride[d])] = nb[fc];
  }
}

/* The shell of `deferred` as be_stencil's, point by point (shell_exchange_point): whole rows
 * outside the interior box's (j, k) range, else the points left of lo[0] and right of hi[0]. */
static void shell_exchange_loop(const fd_grid *g, unsigned deferred, const shell_stencil *st, real_t *u,
                                const real_t *f, real_t *out, const real_t *const recv[FD_FACES],
                                unsigned unpack, real_t *const send[FD_FACES], unsigned pack)
{
  int lo[3], hi[3];
  fd_interior_box(g, deferred, lo, hi);
  const int nx = g->n[0];
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 1; k <= g->n[2]; k++)
    for (int j = 1; j <= g->n[1]; j++) {
      const int whole = k < lo[2] || k > hi[2] || j < lo[1] || j > hi[1] || hi[0] < lo[0];
      const int left = whole ? nx : lo[0] - 1, right = whole ? nx + 1 : hi[0] + 1;
      for (int i = 1; i <= left; i++)
        shell_exchange_point(g, st, u, f, out, recv, unpack, send, pack, i, j, k);
      for (int i = right > left ? right : left + 1; i <= nx; i++)
        shell_exchange_point(g, st, u, f, out, recv, unpack, send, pack, i, j, k);
    }
}

int be_shell_exchange(const fd_grid *g, unsigned deferred, const fd_coeffs *c, real_t *u,
                      const real_t *f, real_t *out, const fd_faces *faces, const real_t *recv,
                      unsigned unpack, real_t *send, unsigned pack, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_SHELL_X, .g = *g, .deferred = deferred, .c = c ? *c : (fd_coeffs){0}, .u = u, .f = f,
                        .out = out, .faces = *faces, .src = recv, .unpack = unpack, .dst = send,
                        .pack = pack};
    return record(s, &op);
  }
  char why[160];
  if (fd_shell_exchange_check(g, deferred, faces, unpack, pack, why, sizeof why)) return fail("%s", why);
  if (out == u) return fail("be_shell_exchange: u and out must differ");
  if (out && !c) return fail("be_shell_exchange: the stencil needs its coefficients");
  const real_t *rf[FD_FACES];
  real_t *sf[FD_FACES];
  for (int fc = 0; fc < FD_FACES; fc++) {
    rf[fc] = recv ? recv + faces->offset[fc] : NULL;
    sf[fc] = send ? send + faces->offset[fc] : NULL;
  }
  const shell_stencil st = {c, c, INT_MAX, 0, -1, 0, 0};
  shell_exchange_loop(g, deferred, &st, u, f, out, rf, unpack, sf, pack);
  return BE_OK;
}

/* The word a launch of x waits for in region r (the proxy's for a proxied region), and
 * whether exchange e may read region r: the word says its neighbour packed it, or the launches
 * do not wait (a test's NOWAIT, or a stall recorded: as on a GPU, every launch after it goes
 * on without waiting). */
static uint32_t word(const be_signals *x, int r) { return x->proxied >> r & 1u ? x->hin[r] : x->words[r]; }
static int ready(const be_signals *x, int r, uint32_t e)
{
  return (int32_t)(word(x, r) - (e + 1)) >= 0 || (x->test & BE_SIG_TEST_NOWAIT) || x->words[BE_SIG_STALL] != 0;
}

int be_signals_prime(const fd_grid *g, const be_signals *x, const real_t *u, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_SIG_PRIME, .g = *g, .u = u, .sig = *x};
    return record(s, &op);
  }
  char why[160];
  if (fd_signals_check(g, x, "be_signals_prime", why, sizeof why)) return fail("%s", why);
  const uint32_t e = x->words[BE_SIG_SEQ];
  const real_t *none[FD_FACES] = {NULL};
  real_t *sf[FD_FACES] = {NULL};
  for (int r = 0; r < FD_FACES; r++) sf[r] = x->out[r][e & 1u];
  const shell_stencil st = {NULL, NULL, INT_MAX, 0, -1, 0, 0};
  shell_exchange_loop(g, x->exchange, &st, (real_t *)u, NULL, NULL, none, 0u, sf, x->exchange);
  for (int r = 0; r < FD_FACES && !(x->test & BE_SIG_TEST_MUTE); r++)
    if (x->exchange >> r & 1u) *x->peer_in[r] = e + 1;
  return BE_OK;
}

int be_signals_pass(const fd_grid *g, const fd_coeffs *c, real_t *u, const real_t *f, real_t *out,
                    fd_kernel k, const be_signals *x, const be_sig_stencil *v, be_stream s)
{
  if (capturing(s)) {
    host_op op = {.kind = OP_SIG_PASS, .g = *g, .c = c ? *c : (fd_coeffs){0}, .u = u, .f = f, .out = out,
                  .kern = k, .sig = *x, .has_sv = v != NULL};
    if (v) op.sv = *v;
    if (v && v->c2) op.c2 = *v->c2;
    return record(s, &op);
  }
  char why[160];
  if (fd_signals_check(g, x, "be_signals_pass", why, sizeof why)) return fail("%s", why);
  if (out && v && fd_sig_stencil_check(g, x, v, "be_signals_pass", why, sizeof why)) return fail("%s", why);
  if (out == u) return fail("be_signals_pass: u and out must differ");
  if (out && !c) return fail("be_signals_pass: the stencil needs its coefficients");
  const uint32_t e = x->words[BE_SIG_SEQ];
  const real_t *rf[FD_FACES] = {NULL};
  real_t *sf[FD_FACES] = {NULL};
  for (int fc = 0; fc < FD_FACES; fc++) {
    if (!(x->exchange >> fc & 1u)) continue;
    if (!ready(x, fc, e))
      return fail("be_signals_pass: the neighbour across face %d has not packed exchange %u (its word says %u); "
                  "the host backend cannot wait for it", fc, e, word(x, fc));
    rf[fc] = x->in[fc][e & 1u];
    sf[fc] = x->out[fc][(e + 1) & 1u];
  }
  /* the stencil: by plane, where v has a second layer; the source's value of exchange e */
  shell_stencil st = {c, c, INT_MAX, 0, -1, 0, (x->test & BE_SIG_TEST_NOSHELL) != 0};
  if (out && v) {
    if (v->c2) st.c2 = v->c2, st.k1 = v->k1;
    st.pack_u = v->pack_u;
    if (v->src_on) {
      st.src_p = fd_grid_index(g, v->src[0], v->src[1], v->src[2]);
      st.src_v = e < v->src_len ? v->src_vals[e] : 0;
    }
  }
  shell_exchange_loop(g, x->exchange, &st, u, f, out, rf, x->unpack, sf, x->exchange);
  if (out) {
    const int nz = g->n[2], k1 = st.k1 < 0 ? 0 : (st.k1 > nz ? nz : st.k1);
    if (k1 >= 1 && be_stencil_zrange(g, FD_REGION_INTERIOR, x->exchange, 1, k1, c, u, f, out, k, s) != BE_OK)
      return BE_ERROR;
    if (k1 < nz && be_stencil_zrange(g, FD_REGION_INTERIOR, x->exchange, k1 + 1, nz, st.c2, u, f, out, k, s) != BE_OK)
      return BE_ERROR;
  }
  x->words[BE_SIG_SEQ] = e + 1;
  for (int fc = 0; fc < FD_FACES && !(x->test & BE_SIG_TEST_MUTE); fc++)
    if (x->exchange >> fc & 1u) *x->peer_in[fc] = e + 2;
  return BE_OK;
}

int be_signals_pack(const fd_grid *g, const be_signals *x, const real_t *u, const real_t *u2, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_SIGD_PACK, .g = *g, .u = u, .dst = (void *)u2, .sig = *x};
    return record(s, &op);
  }
  char why[192];
  if (fd_signals_regions_check(g, x, "be_signals_pack", why, sizeof why)) return fail("%s", why);
  if (x->faces2 && !u2) return fail("be_signals_pack: two fields and no second one");
  const uint32_t e = x->words[BE_SIG_SEQ];
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!(x->exchange >> r & 1u)) continue;
    region_box_copy(g, x->faces, r, (real_t *)u, x->out[r][e & 1u], 1);
    if (x->faces2) region_box_copy(g, x->faces2, r, (real_t *)u2, x->out[r][e & 1u] + x->faces->count[r], 1);
  }
  for (int r = 0; r < FD_REGIONS && !(x->test & BE_SIG_TEST_MUTE); r++)
    if (x->exchange >> r & 1u) *x->peer_in[r] = e + 1;
  return BE_OK;
}

int be_signals_unpack(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, be_stream s)
{
  if (capturing(s)) {
    const host_op op = {.kind = OP_SIGD_UNPACK, .g = *g, .u = u, .dst = u2, .sig = *x};
    return record(s, &op);
  }
  char why[192];
  if (fd_signals_regions_check(g, x, "be_signals_unpack", why, sizeof why)) return fail("%s", why);
  if (x->faces2 && !u2) return fail("be_signals_unpack: two fields and no second one");
  const uint32_t e = x->words[BE_SIG_SEQ];
  for (int r = 0; r < FD_REGIONS; r++)
    if ((x->exchange >> r & 1u) && !ready(x, r, e))
      return fail("be_signals_unpack: the neighbour across region %d has not packed exchange %u (its word says %u); "
                  "the host backend cannot wait for it", r, e, word(x, r));
  for (int r = 0; r < FD_REGIONS; r++) {
    if (!(x->unpack >> r & 1u)) continue;
    region_box_copy(g, x->faces, r, u, (real_t *)x->in[r][e & 1u], 0);
    if (x->faces2) region_box_copy(g, x->faces2, r, u2, (real_t *)x->in[r][e & 1u] + x->faces->count[r], 0);
  }
  x->words[BE_SIG_SEQ] = e + 1;
  return BE_OK;
}

int be_signals_exchange(const fd_grid *g, const be_signals *x, real_t *u, real_t *u2, be_stream s)
{
  if (be_signals_pack(g, x, u, u2, s) != BE_OK) return BE_ERROR;
  return be_signals_unpack(g, x, u, u2, s);
}

/* The host backend never waits (be_signals_pass fails instead), so it never stalls: the word
 * is whatever a caller's test wrote. */
int be_signals_stall(const be_signals *x, int *face, uint32_t *exchange)
{
  *face = x->words[BE_SIG_STALL] ? (int)x->words[BE_SIG_STALL] - 1 : -1;
  *exchange = x->words[BE_SIG_STALL_AT];
  return BE_OK;
}

int be_test_delay(be_stream s, double us)
{
  if (capturing(s) || us <= 0) return BE_OK; /* a graph replays no delay */
  struct timespec t = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
  nanosleep(&t, NULL);
  return BE_OK;
}
