/* common.c - the parts of the backend API that are the same for every backend: kernel names,
 * kernel specs, the host-side evaluation of analytic fields and the host thread count. Compiled
 * into every build; calls no backend function. */
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "pointwise.h"

static const char *const kernel_names[FD_KERNEL_COUNT] = {"baseline", "reordered", "zmarch"};

int fd_kernel_from_name(const char *name)
{
  for (int k = 0; k < FD_KERNEL_COUNT; k++)
    if (strcmp(name, kernel_names[k]) == 0) return k;
  return -1;
}

const char *fd_kernel_name(fd_kernel_id id)
{
  return (id >= 0 && id < FD_KERNEL_COUNT) ? kernel_names[id] : NULL;
}

/* Strict decimal integer in [lo, hi] from s up to `end` (exclusive). */
static int spec_int(const char *s, const char *end, long lo, long hi, int *out)
{
  if (s == end) return -1;
  long v = 0;
  for (const char *c = s; c < end; c++) {
    if (*c < '0' || *c > '9') return -1;
    v = v * 10 + (*c - '0');
    if (v > hi) return -1;
  }
  if (v < lo) return -1;
  *out = (int)v;
  return 0;
}

static int spec_fail(char *err, size_t len, const char *spec, const char *what)
{
  if (err && len) snprintf(err, len, "kernel spec '%s': %s", spec, what);
  return -1;
}

int fd_kernel_parse(const char *spec, fd_kernel *k, char *err, size_t err_len)
{
  memset(k, 0, sizeof *k);
  const char *colon = strchr(spec, ':');
  const size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  int id = -1;
  for (int i = 0; i < FD_KERNEL_COUNT; i++)
    if (strlen(kernel_names[i]) == nlen && strncmp(spec, kernel_names[i], nlen) == 0) id = i;
  if (id < 0)
    return spec_fail(err, err_len, spec, "unknown kernel, expected baseline, reordered or zmarch");
  k->id = (fd_kernel_id)id;
  if (!colon) return 0;
  const char *p = colon + 1;
  if (*p == '\0') return spec_fail(err, err_len, spec, "nothing after ':'");
  while (*p) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq) return spec_fail(err, err_len, spec, "expected key=value after ':' and each ','");
    const size_t klen = (size_t)(eq - p);
    const char *v = eq + 1;
#define KEY(name) (klen == strlen(name) && strncmp(p, name, klen) == 0)
    if (KEY("tile")) {
      if (spec_int(v, end, 1, 16, &k->tile) || (k->tile & (k->tile - 1)))
        return spec_fail(err, err_len, spec, "tile must be 1, 2, 4, 8 or 16");
    } else if (KEY("vec")) {
      if (spec_int(v, end, 1, 2, &k->vec)) return spec_fail(err, err_len, spec, "vec must be 1 or 2");
    } else if (KEY("block")) {
      const char *x = memchr(v, 'x', (size_t)(end - v));
      if (!x || spec_int(v, x, 1, FD_KERNEL_MAX_BLOCK, &k->block[0]) ||
          spec_int(x + 1, end, 1, FD_KERNEL_MAX_BLOCK, &k->block[1]) ||
          k->block[0] * k->block[1] > FD_KERNEL_MAX_BLOCK)
        return spec_fail(err, err_len, spec, "block must be BXxBY with BX*BY <= 512 threads");
    } else if (KEY("chunk")) {
      if (spec_int(v, end, 1, 1 << 20, &k->chunk))
        return spec_fail(err, err_len, spec, "chunk must be a number of planes >= 1");
    } else if (KEY("strips")) {
      if (spec_int(v, end, 1, 1 << 20, &k->strips))
        return spec_fail(err, err_len, spec, "strips must be >= 1");
    } else {
      return spec_fail(err, err_len, spec, "unknown key, expected tile, vec, block, chunk or strips");
    }
#undef KEY
    if (!comma) break;
    p = comma + 1;
    if (*p == '\0') return spec_fail(err, err_len, spec, "nothing after ','");
  }
  if (k->id == FD_KERNEL_BASELINE && (k->tile > 1 || k->vec > 1 || k->chunk || k->strips))
    return spec_fail(err, err_len, spec, "baseline takes only block");
  if (k->id == FD_KERNEL_REORDERED && k->chunk)
    return spec_fail(err, err_len, spec, "chunk applies to zmarch only");
  if (k->id == FD_KERNEL_ZMARCH && k->tile > 2)
    return spec_fail(err, err_len, spec, "zmarch takes tile 1 or 2");
  return 0;
}

void fd_kernel_format(const fd_kernel *k, char *buf, size_t len)
{
  const char *name = fd_kernel_name(k->id);
  int n = snprintf(buf, len, "%s", name ? name : "?");
  char sep = ':';
#define PUT(...)                                                                             \
  do {                                                                                       \
    if (n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, __VA_ARGS__);     \
    sep = ',';                                                                               \
  } while (0)
  if (k->tile) PUT("%ctile=%d", sep, k->tile);
  if (k->vec) PUT("%cvec=%d", sep, k->vec);
  if (k->block[0] && k->block[1]) PUT("%cblock=%dx%d", sep, k->block[0], k->block[1]);
  if (k->chunk) PUT("%cchunk=%d", sep, k->chunk);
  if (k->strips) PUT("%cstrips=%d", sep, k->strips);
#undef PUT
}

void fd_fused_format(const fd_fused *c, char *buf, size_t len)
{
  snprintf(buf, len, "fused:steps=%d,tile=%d,vec=%d,block_y=%d,chunk=%d", c->steps, c->tile,
           c->vec, c->block_y, c->chunk);
}

double fd_field_value(const fd_field *fl, long long gi, long long gj, long long gk)
{
  return fd_field_eval(fl->kind, fl->scale, fl->h, fl->L, fl->seed, gi, gj, gk);
}

void fd_field_sine_table(const fd_field *fl, int d, long long first, int count, double *out)
{
  for (int q = 0; q < count; q++) out[q] = fd_sine_factor(fl->h[d], fl->L[d], first + q);
}

void be_set_host_threads(int threads)
{
#ifdef _OPENMP
  omp_set_num_threads(threads > 0 ? threads : 1);
#else
  (void)threads;
#endif
}

int fd_shell_exchange_check(const fd_grid *g, unsigned deferred, const fd_faces *faces,
                            unsigned unpack, unsigned pack, char *why, size_t len)
{
  if (faces->width != 1 || faces->n[0] != g->n[0] || faces->n[1] != g->n[1] || faces->n[2] != g->n[2]) {
    snprintf(why, len, "be_shell_exchange: regions of %dx%dx%d width %d, grid %dx%dx%d (width 1 only)",
             faces->n[0], faces->n[1], faces->n[2], faces->width, g->n[0], g->n[1], g->n[2]);
    return -1;
  }
  const unsigned used = unpack | pack;
  if (used >> FD_FACES) {
    snprintf(why, len, "be_shell_exchange: face mask 0x%x names regions beyond the six faces", used);
    return -1;
  }
  for (int f = 0; f < FD_FACES; f++)
    if ((used >> f & 1u) && (!faces->active[f] || !(deferred >> f & 1u))) {
      snprintf(why, len, "be_shell_exchange: face %d is %s", f,
               faces->active[f] ? "not deferred: its layer is not in the shell" : "not active");
      return -1;
    }
  return 0;
}

/* The proxied regions of x (be_signals.proxied): within exchange and remote, with the proxy's
 * words. 0, or -1 with the reason. Pure. */
static int proxied_check(const be_signals *x, const char *who, char *why, size_t len)
{
  if (!x->proxied) return 0;
  if ((x->proxied & ~x->exchange) || (x->proxied & ~x->remote)) {
    snprintf(why, len, "%s: proxied regions 0x%x must be exchanged (0x%x) and remote (0x%x)", who, x->proxied,
             x->exchange, x->remote);
    return -1;
  }
  if (!x->hin) {
    snprintf(why, len, "%s: proxied regions 0x%x and no proxy words", who, x->proxied);
    return -1;
  }
  return 0;
}

int fd_signals_check(const fd_grid *g, const be_signals *x, const char *who, char *why, size_t len)
{
  if (!x->faces || !x->words) {
    snprintf(why, len, "%s: no faces or words", who);
    return -1;
  }
  if (!(x->wait_s > 0)) {
    snprintf(why, len, "%s: the longest wait for a word must be positive (%g s)", who, x->wait_s);
    return -1;
  }
  if (fd_shell_exchange_check(g, x->exchange, x->faces, x->unpack, x->exchange, why, len)) return -1;
  if (proxied_check(x, who, why, len)) return -1;
  for (int f = 0; f < FD_FACES; f++) {
    if (!(x->exchange >> f & 1u)) continue;
    if (!x->in[f][0] || !x->in[f][1] || !x->out[f][0] || !x->out[f][1] || !x->peer_in[f]) {
      snprintf(why, len, "%s: face %d has no neighbour's slots or word", who, f);
      return -1;
    }
    if (x->faces->count[f] > 0x7fffffffu) {
      snprintf(why, len, "%s: face %d has %zu points, more than a signalled exchange takes (2^31 - 1)", who, f,
               x->faces->count[f]);
      return -1;
    }
  }
  return 0;
}

int fd_signals_regions_check(const fd_grid *g, const be_signals *x, const char *who, char *why, size_t len)
{
  const fd_faces *fa = x->faces;
  if (!fa || !x->words) {
    snprintf(why, len, "%s: no faces or words", who);
    return -1;
  }
  if (!(x->wait_s > 0)) {
    snprintf(why, len, "%s: the longest wait for a word must be positive (%g s)", who, x->wait_s);
    return -1;
  }
  for (int d = 0; d < 3; d++)
    if (fa->n[d] != g->n[d] || fa->width < 1 || fa->width > g->ghost) {
      snprintf(why, len, "%s: regions built for %dx%dx%d width %d, grid is %dx%dx%d with %d ghost layers", who,
               fa->n[0], fa->n[1], fa->n[2], fa->width, g->n[0], g->n[1], g->n[2], g->ghost);
      return -1;
    }
  if (fa->fields < 1 || fa->fields > FD_HALO_FIELDS_MAX || (fa->fields == 2) != (x->faces2 != NULL)) {
    snprintf(why, len, "%s: %d fields, %s second layout", who, fa->fields, x->faces2 ? "a" : "no");
    return -1;
  }
  const fd_faces *fb = x->faces2;
  if (fa->field != 0 ||
      (fb && (fb->field != 1 || fb->fields != fa->fields || fb->width != fa->width || fb->total != fa->total ||
              fb->n[0] != fa->n[0] || fb->n[1] != fa->n[1] || fb->n[2] != fa->n[2]))) {
    snprintf(why, len, "%s: the second layout is not field 1 of the first's regions", who);
    return -1;
  }
  if (x->unpack & ~x->exchange) {
    snprintf(why, len, "%s: regions 0x%x unpacked but not exchanged (0x%x)", who, x->unpack, x->exchange);
    return -1;
  }
  if (proxied_check(x, who, why, len)) return -1;
  for (int r = 0; r < 32; r++) {
    if (!(x->exchange >> r & 1u)) continue;
    if (r < FD_REGIONS && fb && (fb->active[r] != fa->active[r] || fb->count[r] != fa->count[r])) {
      snprintf(why, len, "%s: region %d differs between the two fields' layouts", who, r);
      return -1;
    }
    if (r >= FD_REGIONS || !fa->active[r] || fa->count[r] == 0) {
      snprintf(why, len, "%s: region %d is exchanged but not active at width %d", who, r, fa->width);
      return -1;
    }
    if (!x->in[r][0] || !x->in[r][1] || !x->out[r][0] || !x->out[r][1] || !x->peer_in[r]) {
      snprintf(why, len, "%s: region %d has no neighbour's slots or word", who, r);
      return -1;
    }
    if (fa->count[r] * (size_t)fa->fields > 0x7fffffffu) {
      snprintf(why, len, "%s: region %d has %zu elements, more than a signalled exchange takes (2^31 - 1)", who, r,
               fa->count[r] * (size_t)fa->fields);
      return -1;
    }
  }
  return 0;
}

int fd_sig_stencil_check(const fd_grid *g, const be_signals *x, const be_sig_stencil *v, const char *who,
                         char *why, size_t len)
{
  if (!v->src_on) return 0;
  if (!fd_in_shell(g, x->exchange, v->src)) {
    snprintf(why, len, "%s: the source point (%d,%d,%d) is not in the shell of the %dx%dx%d block", who, v->src[0],
             v->src[1], v->src[2], g->n[0], g->n[1], g->n[2]);
    return -1;
  }
  if (v->src_len > 0 && !v->src_vals) {
    snprintf(why, len, "%s: the source has %u values and no array", who, v->src_len);
    return -1;
  }
  return 0;
}
