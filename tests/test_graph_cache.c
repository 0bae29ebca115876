/* test_graph_cache.c - kernels/graph_cache.c against a scripted backend: work is captured once
 * per key and replayed; off runs it directly; the work's own failure is an error; a capture the
 * runtime refuses (at its end, or by failing one of the work's calls) turns the cache off with
 * the reason and runs the work directly, where a failure of its own recurs; the least recently
 * used graph makes room; clearing destroys every graph. The backend's graph calls are played by
 * this file (graph_cache.c is compiled in, no backend library is linked). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph_cache.h"

/* ---- the scripted backend ---- */

struct be_graph_s {
  int id;
};

static struct {
  int capturing;   /* between be_graph_begin and be_graph_end */
  int end_rc;      /* what be_graph_end returns (BE_OK or BE_UNSUPPORTED) */
  int begins, launches, destroyed, live;
  char msg[128];   /* be_error_message() */
} rt;

int be_graph_begin(be_stream s)
{
  (void)s;
  rt.capturing = 1;
  rt.begins++;
  return BE_OK;
}

int be_graph_end(be_stream s, be_graph *g)
{
  (void)s;
  rt.capturing = 0;
  *g = NULL;
  if (rt.end_rc != BE_OK) {
    snprintf(rt.msg, sizeof rt.msg, "stream capture failed: invalidated");
    return rt.end_rc;
  }
  *g = calloc(1, sizeof **g);
  rt.live++;
  return *g ? BE_OK : BE_ERROR;
}

int be_graph_launch(be_graph g, be_stream s)
{
  (void)s;
  assert_non_null(g);
  rt.launches++;
  return BE_OK;
}

int be_graph_destroy(be_graph g)
{
  if (g) {
    rt.destroyed++;
    rt.live--;
  }
  free(g);
  return BE_OK;
}

const char *be_error_message(void) { return rt.msg; }

/* ---- work ---- */

typedef struct {
  int runs, captured_runs; /* calls, and those made while capturing */
  int fail_rc;             /* returned by every call (0: success) */
  int fail_in_capture_rc;  /* returned by calls made while capturing, as a call the capture
                              refused: the message says so */
} work_t;

static int work(void *ctx, be_stream s)
{
  (void)s;
  work_t *w = ctx;
  w->runs++;
  if (rt.capturing) {
    w->captured_runs++;
    if (w->fail_in_capture_rc) {
      snprintf(rt.msg, sizeof rt.msg, "operation not permitted when stream is capturing");
      return w->fail_in_capture_rc;
    }
  }
  return w->fail_rc;
}

static fd_graph_key key(int id, int k0)
{
  fd_graph_key k;
  memset(&k, 0, sizeof k);
  k.id = id;
  k.k[0] = k0;
  return k;
}

static int setup(void **state)
{
  (void)state;
  memset(&rt, 0, sizeof rt);
  rt.end_rc = BE_OK;
  return 0;
}

static fd_graph_cache *new_cache(int on)
{
  fd_graph_cache *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->on = on;
  return c;
}

static void drop_cache(fd_graph_cache *c)
{
  assert_int_equal(fd_graph_clear(c), 0);
  free(c);
  assert_int_equal(rt.live, 0);
}

/* ---- tests ---- */

static void captured_once_then_replayed(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  work_t w = {0};
  const fd_graph_key a = key(1, 0), b = key(1, 1);
  for (int i = 0; i < 3; i++) assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), 0);
  assert_int_equal(w.runs, 1);
  assert_int_equal(w.captured_runs, 1);
  assert_int_equal(rt.launches, 3);
  assert_int_equal(fd_graph_run(c, &b, NULL, work, &w), 0); /* another key: its own graph */
  assert_int_equal(w.captured_runs, 2);
  assert_int_equal(c->captures, 2);
  assert_int_equal(c->failed, 0);
  drop_cache(c);
}

static void off_runs_directly(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(0);
  work_t w = {0};
  const fd_graph_key a = key(1, 0);
  for (int i = 0; i < 3; i++) assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), 0);
  assert_int_equal(w.runs, 3);
  assert_int_equal(w.captured_runs, 0);
  assert_int_equal(rt.begins + rt.launches, 0);
  drop_cache(c);
}

static void work_failure_is_an_error(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  work_t w = {.fail_rc = 7};
  const fd_graph_key a = key(1, 0);
  assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), -1);
  assert_int_equal(c->work_rc, 7);
  assert_int_equal(c->failed, 0); /* the capture itself was fine: graphs stay on */
  assert_int_equal(c->n, 0);
  assert_int_equal(rt.launches, 0);
  drop_cache(c);
}

static void refused_capture_runs_directly(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  rt.end_rc = BE_UNSUPPORTED;
  work_t w = {0};
  const fd_graph_key a = key(1, 0);
  assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), 0);
  assert_int_equal(c->failed, 1);
  assert_string_equal(c->why, "stream capture failed: invalidated");
  assert_int_equal(w.runs, 2); /* captured (refused), then run */
  assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), 0);
  assert_int_equal(w.runs, 3);
  assert_int_equal(rt.begins, 1); /* no second capture */
  drop_cache(c);
}

static void call_refused_in_capture_runs_directly(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  rt.end_rc = BE_UNSUPPORTED; /* a call the capture refused invalidates it */
  work_t w = {.fail_in_capture_rc = 3};
  const fd_graph_key a = key(1, 0);
  assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), 0);
  assert_int_equal(c->failed, 1);
  assert_string_equal(c->why, "operation not permitted when stream is capturing");
  assert_int_equal(w.runs, 2);
  assert_int_equal(w.captured_runs, 1);
  drop_cache(c);
}

static void own_failure_recurs_directly(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  rt.end_rc = BE_UNSUPPORTED;
  work_t w = {.fail_rc = 5};
  const fd_graph_key a = key(1, 0);
  assert_int_equal(fd_graph_run(c, &a, NULL, work, &w), -1);
  assert_int_equal(c->work_rc, 5);
  assert_int_equal(c->failed, 1);
  assert_int_equal(w.runs, 2);
  drop_cache(c);
}

static void least_recently_used_makes_room(void **state)
{
  (void)state;
  fd_graph_cache *c = new_cache(1);
  work_t w = {0};
  for (int i = 0; i < FD_GRAPH_CACHE_MAX; i++) {
    const fd_graph_key k = key(2, i);
    assert_int_equal(fd_graph_run(c, &k, NULL, work, &w), 0);
  }
  const fd_graph_key first = key(2, 0), second = key(2, 1), extra = key(2, FD_GRAPH_CACHE_MAX);
  assert_int_equal(fd_graph_run(c, &first, NULL, work, &w), 0); /* key 1 is now the oldest */
  assert_int_equal(fd_graph_run(c, &extra, NULL, work, &w), 0);
  assert_int_equal(c->n, FD_GRAPH_CACHE_MAX);
  assert_int_equal(rt.destroyed, 1);
  const int captured = w.captured_runs;
  assert_int_equal(fd_graph_run(c, &first, NULL, work, &w), 0);
  assert_int_equal(w.captured_runs, captured); /* kept */
  assert_int_equal(fd_graph_run(c, &second, NULL, work, &w), 0);
  assert_int_equal(w.captured_runs, captured + 1); /* evicted: captured again */
  drop_cache(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(captured_once_then_replayed, setup),
      cmocka_unit_test_setup(off_runs_directly, setup),
      cmocka_unit_test_setup(work_failure_is_an_error, setup),
      cmocka_unit_test_setup(refused_capture_runs_directly, setup),
      cmocka_unit_test_setup(call_refused_in_capture_runs_directly, setup),
      cmocka_unit_test_setup(own_failure_recurs_directly, setup),
      cmocka_unit_test_setup(least_recently_used_makes_room, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
