/* graph_cache.h - work replayed from graphs (backend.h), by key: the first time a piece of work
 * runs with a key it is captured and replayed; later times it is replayed. Used for the device
 * work of a pass (src/solver/step.c) and the pack and unpack of an exchange (halo/halo.c).
 * Backend-independent: it calls only backend.h. No MPI. */
#ifndef FDMINI_GRAPH_CACHE_H
#define FDMINI_GRAPH_CACHE_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What makes two runs of a piece of work the same work: which work (id), its integer
 * parameters and the buffers it reads and writes. Unused fields stay 0 / NULL. */
#define FD_GRAPH_KEY_INTS 6
#define FD_GRAPH_KEY_PTRS 4
typedef struct {
  int id;
  int k[FD_GRAPH_KEY_INTS];
  const void *p[FD_GRAPH_KEY_PTRS];
} fd_graph_key;

#define FD_GRAPH_CACHE_MAX 48
#define FD_GRAPH_WHY 160 /* bytes of a failure's reason */
typedef struct {
  int on;            /* 0: every work runs directly (no graph) */
  int failed;        /* a capture failed: directly from then on (why says the runtime's reason) */
  char why[FD_GRAPH_WHY];
  int work_rc;       /* the work function's own non-zero return, when it failed */
  long long captures; /* graphs captured since the cache was zeroed */
  int n;
  fd_graph_key key[FD_GRAPH_CACHE_MAX];
  be_graph graph[FD_GRAPH_CACHE_MAX];
  long long used[FD_GRAPH_CACHE_MAX], clock; /* last use, for eviction */
} fd_graph_cache;

/* Enqueues work on s: only asynchronous calls on s (backend.h graphs); returns 0, or its own
 * non-zero code with its own message. */
typedef int (*fd_graph_work)(void *ctx, be_stream s);

/* Runs work(ctx, s): directly when c is off or failed; else launches the graph of key k,
 * capturing work into it first when the cache has none (the least recently used graph makes
 * room past FD_GRAPH_CACHE_MAX). A capture the runtime refuses (be_graph_end: BE_UNSUPPORTED,
 * whether work completed or one of its calls failed in the capture) marks c failed, keeps the
 * reason and runs work directly (a failure of its own recurs there). Returns 0; or -1 with c->work_rc the work's own
 * code (its message set by it) or c->work_rc = 0 and be_error_message() for a backend
 * failure. Asynchronous on s. Not thread-safe (one cache per thread). */
int fd_graph_run(fd_graph_cache *c, const fd_graph_key *k, be_stream s, fd_graph_work work, void *ctx);

/* Destroys every graph (the cache stays on or off; failed stays). Returns 0, or -1 with
 * be_error_message() (every graph is dropped either way). Synchronous. */
int fd_graph_clear(fd_graph_cache *c);

#ifdef __cplusplus
}
#endif
#endif
