/* plan.c - what a run of N ranks will be, from the options alone (plan.h): grids, node
 * layout, blocks, memory, halo traffic and the faces that leave the nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd_error.h"
#include "faces.h"
#include "plan.h"
#include "problem.h"
#include "verify.h"

void plan_resolve_steps(const fd_options *o, int accelerator, int *iters, int *warmup)
{
  *iters = o->iters > 0 ? o->iters : 100;
  const int dflt = accelerator ? 10 : 2, t = o->fuse > 0 ? o->fuse : 12;
  int a = o->halo_width, b = t; /* unit = lcm(S, t) */
  while (b) {
    const int r = a % b;
    a = b;
    b = r;
  }
  const int unit = o->halo_width / a * t;
  *warmup = o->warmup >= 0 ? o->warmup : (dflt + unit - 1) / unit * unit;
}

/* The node of the rank at grid coordinates c (plan.h: where ranks sit). Pure. */
static int node_of(const fd_plan *p, const int c[3])
{
  const int *B = p->layout.block;
  if (p->layout.mode == DECOMP_NODES_BLOCKS) {
    const int Q1 = p->P[1] / B[1], Q2 = p->P[2] / B[2];
    return ((c[0] / B[0]) * Q1 + c[1] / B[1]) * Q2 + c[2] / B[2];
  }
  return decomp_cart_rank(p->P, c) / p->node_max;
}

/* Adds x to the running min, sum (avg once divided) and max of st; first: the first value. */
static void stat_add(fd_plan_stat *st, double x, int first)
{
  if (first || x < st->min) st->min = x;
  if (first || x > st->max) st->max = x;
  st->avg = (first ? 0.0 : st->avg) + x;
}

/* The halo of every rank: per exchange, its bytes and messages (regions with a neighbour), the
 * faces and bytes towards other nodes; their maxima, the off-node faces per rank, and per node
 * (off[m], faces[m]) the bytes and faces that leave it. O(ranks) time. */
static void plan_halo(fd_plan *p, const int *ext[3], double *off, int *faces)
{
  const size_t real = sizeof(real_t);
  long long rank = 0;
  int c[3];
  for (c[0] = 0; c[0] < p->P[0]; c[0]++)
    for (c[1] = 0; c[1] < p->P[1]; c[1]++)
      for (c[2] = 0; c[2] < p->P[2]; c[2]++, rank++) {
        const int n[3] = {ext[0][c[0]], ext[1][c[1]], ext[2][c[2]]};
        const int me = node_of(p, c);
        double bytes = 0.0, off_bytes = 0.0;
        int msgs = 0, off_faces = 0;
        for (int r = 0; r < FD_REGIONS; r++) {
          const size_t count = fd_region_count(n, p->width, r);
          int dir[3], nb[3], inside = 1;
          fd_region_dir(r, dir);
          for (int d = 0; d < 3; d++) {
            nb[d] = c[d] + dir[d];
            inside &= nb[d] >= 0 && nb[d] < p->P[d];
          }
          if (!count || !inside) continue;
          const double b = (double)count * p->fields * real;
          bytes += b;
          msgs++;
          p->faces_total += r < FD_FACES;
          if (node_of(p, nb) == me) continue;
          off_bytes += b;
          off_faces += r < FD_FACES;
        }
        if (bytes > p->bytes_exchange_max) p->bytes_exchange_max = bytes;
        if (msgs > p->msgs_exchange_max) p->msgs_exchange_max = msgs;
        stat_add(&p->faces_off_rank, off_faces, rank == 0);
        off[me] += off_bytes;
        faces[me] += off_faces;
      }
  p->faces_off_rank.avg /= p->ranks;
  for (int m = 0; m < p->nodes; m++) {
    stat_add(&p->faces_off_node, faces[m], m == 0);
    stat_add(&p->bytes_off_node, off[m] / p->width, m == 0);
  }
  p->faces_off_node.avg /= p->nodes;
  p->bytes_off_node.avg /= p->nodes;
  p->bytes_step_max = p->bytes_exchange_max / p->width;
  p->msgs_step_max = (double)p->msgs_exchange_max / p->width;
}

/* deep halos: every block along a dimension with neighbours must hold the S layers its
 * neighbours receive. Pure. */
static int check_halo_width(const fd_options *o, const long long N[3], const int P[3])
{
  static const char axis[3] = {'x', 'y', 'z'};
  for (int d = 0; d < 3; d++)
    if (P[d] > 1 && o->halo_width > N[d] / P[d])
      return fd_set_error(FD_ERR_USAGE, "--halo-width %d: the thinnest block along %c has %lld points (%lld over %d ranks), fewer than the %d layers a neighbour receives; use --halo-width %lld or less, or fewer ranks along %c",
                          o->halo_width, axis[d], N[d] / P[d], N[d], P[d], o->halo_width, N[d] / P[d], axis[d]);
  return FD_OK;
}

int plan_check_run(const fd_options *o, int ranks, int accelerator, const long long N[3], const int P[3])
{
  int iters, warmup;
  plan_resolve_steps(o, accelerator, &iters, &warmup);
  const long long total = (long long)iters + warmup;
  if (o->op == FD_OP_WAVE && o->have_source)
    for (int d = 0; d < 3; d++)
      if (o->source[d] > N[d])
        return fd_set_error(FD_ERR_USAGE, "--source %lld,%lld,%lld lies outside the %lld x %lld x %lld grid (indices 1..N)",
                            o->source[0], o->source[1], o->source[2], N[0], N[1], N[2]);
  {
    /* the operator's physical parameters on this grid */
    const long long zero[3] = {0, 0, 0};
    fd_problem p;
    problem_setup(o, N, zero, &p);
    FD_CALL(problem_check(&p, total));
    /* the mirror fault exists for the mirror symmetry check: where that check does not apply,
     * or the pair has no room (plant_mirror_fault), the run would pass vacuously */
    if (o->inject_fault == FD_FAULT_MIRROR && (!verify_symmetry_applies(&p) || N[0] < 3))
      return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=mirror: the mirror symmetry check that must catch it "
                          "applies only with the source at the centre of an odd grid (the default --source) of 3 or "
                          "more points along x and at most 2^26 points; this %lld x %lld x %lld grid with the source "
                          "at %lld,%lld,%lld would pass", N[0], N[1], N[2], p.src[0], p.src[1], p.src[2]);
  }

  /* deep halos: every block along a dimension with neighbours must hold the S layers its
   * neighbours receive; fused passes must not span an exchange */
  FD_CALL(check_halo_width(o, N, P));
  static const char *const halo_faults[] = {[FD_FAULT_EXCHANGE] = "exchange", [FD_FAULT_ORDER] = "order",
                                            [FD_FAULT_ZERO] = "zero", [FD_FAULT_SHELL] = "shell"};
  if (o->inject_fault < (int)(sizeof halo_faults / sizeof halo_faults[0]) && halo_faults[o->inject_fault] && ranks < 2)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=%s needs 2 or more ranks: one rank exchanges nothing",
                        halo_faults[o->inject_fault]);
  if (o->test_stall >= ranks || (o->test_stall >= 0 && ranks < 2))
    return fd_set_error(FD_ERR_USAGE, "--test-stall %d names no neighbour of another rank: the run has %d rank%s",
                        o->test_stall, ranks, ranks == 1 ? "" : "s");
  { /* the test events must happen in this run (a test that expects them would pass vacuously) */
    const fd_test_event *ev[2] = {&o->test_kill, &o->test_signal};
    static const char *const opt[2] = {"--test-kill", "--test-signal"};
    for (int q = 0; q < 2; q++) {
      if (ev[q]->rank >= ranks)
        return fd_set_error(FD_ERR_USAGE, "%s %d,%lld: no rank %d, the run has %d rank%s", opt[q], ev[q]->rank,
                            ev[q]->step, ev[q]->rank, ranks, ranks == 1 ? "" : "s");
      if (ev[q]->rank >= 0 && ev[q]->step > total)
        return fd_set_error(FD_ERR_USAGE, "%s %d,%lld: the run ends at step %lld (--warmup + --iters)", opt[q],
                            ev[q]->rank, ev[q]->step, total);
    }
    if (o->fail_snapshot > 0 && o->snapshot_every > 0 && o->fail_snapshot > total / o->snapshot_every)
      return fd_set_error(FD_ERR_USAGE, "--test-fail-snapshot-write %d: the run takes %lld snapshot%s (--snapshot-every %d "
                          "over %lld steps)", o->fail_snapshot, total / o->snapshot_every,
                          total / o->snapshot_every == 1 ? "" : "s", o->snapshot_every, total);
  }
  if (o->inject_fault == FD_FAULT_ORDER && !accelerator)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=order needs a GPU backend: host streams run every call in order");
  if (ranks > 1 && o->fuse > 1 && o->halo_width % o->fuse)
    return fd_set_error(FD_ERR_USAGE, "--fuse %d with %d ranks needs --halo-width a multiple of %d (one exchange every S steps, and a pass of T steps may not span one); e.g. --halo-width %d",
                        o->fuse, ranks, o->fuse, o->fuse);
  return FD_OK;
}

int plan_make(const fd_options *o, int ranks, int nodes, int node_min, int node_max, int accelerator,
              fd_plan *p)
{
  memset(p, 0, sizeof *p);
  p->ranks = ranks;
  p->nodes = nodes;
  p->node_min = node_min;
  p->node_max = node_max;
  p->width = o->halo_width;
  FD_CALL(decomp_resolve_grid(o, ranks, accelerator, p->N, p->P));
  FD_CALL(check_halo_width(o, p->N, p->P)); /* as fd_run refuses it */
  p->layout.count = nodes;
  p->layout.size_min = node_min;
  p->layout.size_max = node_max;
  decomp_nodes_plan(p->N, p->P, &p->layout);
  decomp_nodes_describe(&p->layout, p->P, p->layout_words, sizeof p->layout_words);
  plan_resolve_steps(o, accelerator, &p->iters, &p->warmup);

  /* the blocks along each dimension: decomp_split's, block 0 the largest */
  int *ext[3] = {NULL, NULL, NULL};
  for (int d = 0; d < 3; d++) {
    long long n, start;
    ext[d] = malloc((size_t)p->P[d] * sizeof *ext[d]);
    for (int c = 0; ext[d] && c < p->P[d]; c++) {
      decomp_split(p->N[d], p->P[d], c, &n, &start);
      ext[d][c] = (int)n;
    }
    if (ext[d]) {
      p->nmax[d] = ext[d][0];
      p->nmin[d] = ext[d][p->P[d] - 1];
    }
  }
  double *off = calloc((size_t)nodes, sizeof *off);
  int *faces = calloc((size_t)nodes, sizeof *faces);
  int rc = FD_OK;
  if (!ext[0] || !ext[1] || !ext[2] || !off || !faces) {
    rc = fd_set_error(FD_ERR_RUNTIME, "--plan: no memory for the blocks of %d ranks in %d nodes", ranks, nodes);
  } else {
    /* the fields of the largest block and its halo buffers, as state_create and halo.c make them */
    const long long zero[3] = {0, 0, 0};
    fd_problem prob;
    problem_setup(o, p->N, zero, &prob);
    const int S = p->width;
    p->fields = prob.levels == 2 && S > 1 ? 2 : 1;
    p->field_buffers = prob.levels + 1 + (o->snapshot_every > 0) + prob.has_rhs;
    p->field_bytes = (double)(p->nmax[0] + 2 * S) * (p->nmax[1] + 2 * S) * (p->nmax[2] + 2 * S) * sizeof(real_t);
    double total = 0.0; /* every region's place in one buffer (faces.h), active or not */
    for (int r = 0; r < FD_REGIONS; r++) total += (double)fd_region_count(p->nmax, S, r) * p->fields;
    const int slots = accelerator ? 4 : 2;
    p->halo_device_bytes = total * sizeof(real_t) * (slots + 2 + (ranks > 1));
    p->halo_staged_bytes = accelerator ? 3.0 * total * sizeof(real_t) : 0.0;
    if (o->dump[0])
      p->dump_bytes = p->field_bytes + (double)p->nmax[0] * p->nmax[1] * p->nmax[2] * sizeof(real_t);
    plan_halo(p, (const int **)ext, off, faces);
  }
  for (int d = 0; d < 3; d++) free(ext[d]);
  free(off);
  free(faces);
  return rc;
}
