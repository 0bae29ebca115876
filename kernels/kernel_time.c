/* kernel_time.c - times stencil configurations, single steps and fused passes, on the caller's
 * own grid and buffers: the measuring half of the start-up autotune (src/solver/tune.c agrees on the
 * choice across ranks) and of the kernel sweep's "autotune" column (bench/kernel_sweep.c).
 * Backend-independent: it calls only backend.h. No MPI. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Launches configuration i of list on trial (one of the two kinds below) on the trial's stream. */
typedef int (*launch_fn)(const void *trial, const void *list, int i);

static int launch_single(const void *trial, const void *list, int i)
{
  const fd_kernel_trial *t = trial;
  const fd_kernel *k = list;
  return be_stencil(&t->grid, t->region, t->deferred, &t->coeffs, t->u, t->f, t->out, k[i], t->stream);
}

static int launch_fused(const void *trial, const void *list, int i)
{
  const fd_fused_trial *t = trial;
  const fd_fused *c = list;
  return be_stencil_fused(&t->grid, &c[i], t->lo, t->hi, t->fix_lo, t->fix_hi, &t->coeffs, t->u,
                          t->f, t->out, t->stream);
}

/* Launches per timed batch: enough that a batch takes about FD_BATCH_MS, so that the
 * events' own cost does not decide between configurations on small blocks, where a launch
 * takes microseconds; one on large blocks. */
#define FD_BATCH_MS 0.2
#define FD_BATCH_MAX 64

/* *g = a graph of `count` launches of configuration i captured on s, or NULL where this
 * backend cannot capture (the caller launches them eagerly). BE_OK or a launch's error. */
static int capture_batch(launch_fn launch, const void *trial, const void *list, int i, be_stream s,
                         int count, be_graph *g)
{
  *g = NULL;
  int rc = be_graph_begin(s);
  if (rc) return rc == BE_UNSUPPORTED ? BE_OK : rc;
  for (int k = 0; k < count && !rc; k++) rc = launch(trial, list, i);
  be_graph got = NULL;
  const int end = be_graph_end(s, &got);
  if (rc || end) {
    (void)be_graph_destroy(got);
    return rc ? rc : (end == BE_UNSUPPORTED ? BE_OK : end);
  }
  *g = got;
  return BE_OK;
}

/* ms[i] = the median over `rounds` of the time per launch of configuration i on stream s, each
 * round timing a batch of back-to-back launches between two events. The batch is replayed from
 * a graph captured once, as the run's chains replay passes: eager launches on a small block
 * all take about the launch rate, whichever configuration runs, and cannot tell the fast one
 * (bench/results/README.md, "Deep halos with edges and corners"). Eager where the backend
 * cannot capture. */
static int time_rounds(launch_fn launch, const void *trial, const void *list, be_stream s, int n,
                       int rounds, double *ms)
{
  if (n < 1) return BE_OK;
  if (rounds < 1) rounds = 1;
  double *all = malloc(sizeof *all * (size_t)n * (size_t)rounds);
  int *batch = malloc(sizeof *batch * (size_t)n);
  be_graph *graph = calloc((size_t)n, sizeof *graph);
  if (!all || !batch || !graph) {
    free(all);
    free(batch);
    free(graph);
    return BE_ERROR;
  }
  be_event e0 = NULL, e1 = NULL;
  int rc = be_event_create(&e0);
  if (!rc) rc = be_event_create(&e1);
  /* one untimed launch of each (module load, first-touch), then one timed alone to size its
   * batch, then round-robin rounds so that a drift of the clocks or of a co-runner spreads
   * over all configurations alike */
  for (int i = 0; i < n && !rc; i++) rc = launch(trial, list, i);
  if (!rc) rc = be_stream_sync(s);
  for (int i = 0; i < n && !rc; i++) {
    float x = 0;
    rc = be_event_record(e0, s);
    if (!rc) rc = launch(trial, list, i);
    if (!rc) rc = be_event_record(e1, s);
    if (!rc) rc = be_event_sync(e1);
    if (!rc) rc = be_event_elapsed_ms(&x, e0, e1);
    const double b = x > 0 ? FD_BATCH_MS / x : FD_BATCH_MAX;
    batch[i] = b < 1 ? 1 : (b > FD_BATCH_MAX ? FD_BATCH_MAX : (int)b);
  }
  for (int i = 0; i < n && !rc; i++) {
    rc = capture_batch(launch, trial, list, i, s, batch[i], &graph[i]);
    if (!rc && graph[i]) rc = be_graph_launch(graph[i], s); /* its first replay, untimed */
  }
  if (!rc) rc = be_stream_sync(s);
  for (int r = 0; r < rounds && !rc; r++)
    for (int i = 0; i < n && !rc; i++) {
      float x = 0;
      rc = be_event_record(e0, s);
      if (graph[i]) {
        if (!rc) rc = be_graph_launch(graph[i], s);
      } else {
        for (int k = 0; k < batch[i] && !rc; k++) rc = launch(trial, list, i);
      }
      if (!rc) rc = be_event_record(e1, s);
      if (!rc) rc = be_event_sync(e1);
      if (!rc) rc = be_event_elapsed_ms(&x, e0, e1);
      all[(size_t)i * (size_t)rounds + (size_t)r] = x / batch[i];
    }
  for (int i = 0; i < n && !rc; i++) {
    double *v = all + (size_t)i * (size_t)rounds;
    qsort(v, (size_t)rounds, sizeof *v, cmp_double);
    ms[i] = rounds % 2 ? v[rounds / 2] : 0.5 * (v[rounds / 2 - 1] + v[rounds / 2]);
  }
  if (e0) (void)be_event_destroy(e0);
  if (e1) (void)be_event_destroy(e1);
  for (int i = 0; i < n; i++) (void)be_graph_destroy(graph[i]);
  free(all);
  free(batch);
  free(graph);
  return rc;
}

int fd_kernel_time(const fd_kernel_trial *t, const fd_kernel *list, int n, int rounds,
                   double *ms)
{
  return time_rounds(launch_single, t, list, t->stream, n, rounds, ms);
}

int fd_fused_time(const fd_fused_trial *t, const fd_fused *list, int n, int rounds, double *ms)
{
  return time_rounds(launch_fused, t, list, t->stream, n, rounds, ms);
}

int fd_kernel_fastest(const double *ms, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (ms[i] < ms[best]) best = i;
  return best;
}
