/* graph_cache.c - work replayed from graphs, by key (graph_cache.h). */
#include <stdio.h>
#include <string.h>

#include "graph_cache.h"

static int key_equal(const fd_graph_key *a, const fd_graph_key *b)
{
  if (a->id != b->id) return 0;
  for (int i = 0; i < FD_GRAPH_KEY_INTS; i++)
    if (a->k[i] != b->k[i]) return 0;
  for (int i = 0; i < FD_GRAPH_KEY_PTRS; i++)
    if (a->p[i] != b->p[i]) return 0;
  return 1;
}

int fd_graph_run(fd_graph_cache *c, const fd_graph_key *k, be_stream s, fd_graph_work work, void *ctx)
{
  c->work_rc = 0;
  if (!c->on || c->failed) {
    c->work_rc = work(ctx, s);
    return c->work_rc ? -1 : 0;
  }
  int hit = -1;
  for (int i = 0; i < c->n && hit < 0; i++)
    if (key_equal(&c->key[i], k)) hit = i;
  if (hit < 0) {
    be_graph g = NULL;
    if (be_graph_begin(s) != BE_OK) return -1;
    const int rc = work(ctx, s);
    char why[sizeof c->why] = "";
    if (rc) snprintf(why, sizeof why, "%s", be_error_message()); /* a call the capture refused? */
    const int end = be_graph_end(s, &g);
    if (rc && end != BE_UNSUPPORTED) { /* the work's own failure */
      (void)be_graph_destroy(g);
      c->work_rc = rc;
      return -1;
    }
    if (end == BE_UNSUPPORTED) {
      c->failed = 1;
      snprintf(c->why, sizeof c->why, "%s", rc ? why : be_error_message());
      c->work_rc = work(ctx, s);
      return c->work_rc ? -1 : 0;
    }
    if (end != BE_OK) return -1;
    if (c->n == FD_GRAPH_CACHE_MAX) { /* the least recently used makes room */
      int old = 0;
      for (int i = 1; i < c->n; i++)
        if (c->used[i] < c->used[old]) old = i;
      if (be_graph_destroy(c->graph[old]) != BE_OK) {
        (void)be_graph_destroy(g);
        return -1;
      }
      c->n--;
      c->key[old] = c->key[c->n];
      c->graph[old] = c->graph[c->n];
      c->used[old] = c->used[c->n];
    }
    hit = c->n++;
    c->key[hit] = *k;
    c->graph[hit] = g;
    c->captures++;
  }
  c->used[hit] = ++c->clock;
  return be_graph_launch(c->graph[hit], s) == BE_OK ? 0 : -1;
}

int fd_graph_clear(fd_graph_cache *c)
{
  int rc = 0;
  for (int i = 0; i < c->n; i++)
    if (be_graph_destroy(c->graph[i]) != BE_OK) rc = -1;
  c->n = 0;
  return rc;
}
