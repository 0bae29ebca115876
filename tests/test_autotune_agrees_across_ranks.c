/* test_autotune_agrees_across_ranks.c - the autotune's agreement (src/solver/tune.c): whatever each
 * rank measured, every rank takes the same candidate, the one whose slowest rank is fastest,
 * and sees the slowest rank's times; and the whole autotune on this backend's candidates
 * (tune_kernel, and tune_fused for --fuse auto: T = 1..4) returns the same choice on every
 * rank; so does the fused trial when the ranks' candidate lists differ (as on GPUs with
 * different shared memory per block): they agree on the union first. Run on 1 and 3 ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "fd_error.h"
#include "tune.h"
#include "mr_test.h"

static int rank, size;

/* Rank r measures candidate i as base[i] + r * bump[i]: candidate 1 is fastest on rank 0 but
 * slowest on the last rank, so only the maximum over the ranks picks candidate 2. */
static void test_agreement_takes_the_fastest_slowest_rank(void **state)
{
  (void)state;
  const double base[4] = {5.0, 1.0, 2.0, 3.0}, bump[4] = {0.0, 2.0, 0.1, 0.0};
  double ms[4];
  for (int i = 0; i < 4; i++) ms[i] = base[i] + rank * bump[i];
  int chosen = -1;
  assert_int_equal(tune_agree(MPI_COMM_WORLD, ms, 4, &chosen), FD_OK);
  const int last = size - 1;
  int want = 0;
  for (int i = 1; i < 4; i++)
    if (base[i] + last * bump[i] < base[want] + last * bump[want]) want = i;
  assert_int_equal(chosen, want);
  if (size > 1) assert_int_equal(chosen, 2);
  for (int i = 0; i < 4; i++) assert_true(ms[i] == base[i] + last * bump[i]);
  /* every rank chose the same */
  int lo = chosen, hi = chosen;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  assert_int_equal(lo, hi);
}

/* Ties go to the first candidate on every rank. */
static void test_ties_go_to_the_first(void **state)
{
  (void)state;
  double ms[3] = {2.0, 1.0, 1.0};
  int chosen = -1;
  assert_int_equal(tune_agree(MPI_COMM_WORLD, ms, 3, &chosen), FD_OK);
  assert_int_equal(chosen, 1);
}

/* The finalists that the loop trials confirm: within the margin of the fastest, the fastest of
 * each family first, then the fastest others, the earlier of equals first, at most `most`;
 * one when nothing is close. Where passes are signalled every zmarch shape joins them. */
static void test_kernel_finalists(void **state)
{
  (void)state;
  fd_tune t;
  memset(&t, 0, sizeof t);
  const double ms[7] = {1.30, 1.00, 1.20, 1.10, 1.10, 2.00, 1.15};
  const fd_kernel_id id[7] = {FD_KERNEL_ZMARCH, FD_KERNEL_ZMARCH, FD_KERNEL_REORDERED, FD_KERNEL_ZMARCH,
                              FD_KERNEL_ZMARCH, FD_KERNEL_BASELINE, FD_KERNEL_REORDERED};
  t.n = 7;
  memcpy(t.ms, ms, sizeof ms);
  for (int i = 0; i < t.n; i++) t.cand[i].id = id[i];
  int idx[FD_TUNE_MAX];
  /* zmarch's fastest (1), reordered's (6), then 3 (1.10 twice: the earlier) */
  assert_int_equal(tune_kernel_finalists(&t, 0.25, 3, idx), 3);
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 6);
  assert_int_equal(idx[2], 3);
  assert_int_equal(tune_kernel_finalists(&t, 0.25, 7, idx), 5); /* 1.30 and 2.00 beyond 25 % */
  assert_int_equal(idx[3], 4);
  assert_int_equal(idx[4], 2);
  assert_int_equal(tune_kernel_finalists(&t, 0.35, 7, idx), 6);
  assert_int_equal(idx[5], 0);
  assert_int_equal(tune_kernel_finalists(&t, 1.5, 7, idx), 7); /* baseline's too, third */
  assert_int_equal(idx[2], 5);
  assert_int_equal(tune_kernel_finalists(&t, 0.05, 3, idx), 1);
  assert_int_equal(idx[0], 1);
  /* a family's others join after them, fastest alone first, whatever their time */
  assert_int_equal(tune_family_finalists(&t, FD_KERNEL_ZMARCH, idx, 1), 4);
  assert_int_equal(idx[1], 3);
  assert_int_equal(idx[2], 4);
  assert_int_equal(idx[3], 0);
  assert_int_equal(tune_kernel_finalists(&t, 0.25, 3, idx), 3);
  assert_int_equal(tune_family_finalists(&t, FD_KERNEL_BASELINE, idx, 3), 4);
  assert_int_equal(idx[3], 5);
  assert_int_equal(tune_family_finalists(&t, FD_KERNEL_REORDERED, idx, 3), 4);
  assert_int_equal(idx[3], 2);
  /* 8 ranks at 32^3 on an H100, passes signalled: the zmarch shape fastest alone (32x4) stepped
   * in 9.3 us in the loop, 32x8 in 7.1, and only the first was among the closest */
  const double ms8[6] = {0.0041, 0.0043, 0.0043, 0.0034, 0.0035, 0.0037};
  t.n = 6;
  memcpy(t.ms, ms8, sizeof ms8);
  for (int i = 0; i < t.n; i++) t.cand[i].id = i < 3 ? FD_KERNEL_ZMARCH : FD_KERNEL_REORDERED;
  assert_int_equal(tune_kernel_finalists(&t, 0.25, 4, idx), 4);
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 0);
  assert_int_equal(idx[2], 4);
  assert_int_equal(idx[3], 5);
  assert_int_equal(tune_family_finalists(&t, FD_KERNEL_ZMARCH, idx, 4), 6);
  assert_int_equal(idx[4], 1);
  assert_int_equal(idx[5], 2);
  t.n = 0;
  assert_int_equal(tune_kernel_finalists(&t, 0.25, 3, idx), 0);
  assert_int_equal(tune_family_finalists(&t, FD_KERNEL_ZMARCH, idx, 0), 0);
}

/* The configurations a path the loop trials did not run tries: every loop-trialed one (either
 * graphs setting) but the one chosen, in candidate order; candidates not trialed (0) never.
 * Emulated nodes, 2 ranks at 128^3 --halo-width 4 --fuse auto: the loop trials ran the proxy's
 * pass and took T = 1, where the host-driven exchange stepped 11 % faster with T = 4. */
static void test_fuse_others(void **state)
{
  (void)state;
  fd_fuse_tune ft;
  memset(&ft, 0, sizeof ft);
  const int steps[7] = {1, 2, 2, 2, 4, 4, 4};
  for (int i = 0; i < 7; i++) ft.cand[i].steps = steps[i];
  ft.n = 7;
  ft.loop_ms[0][0] = 0.0163;
  ft.loop_ms[1][0] = 0.0190, ft.loop_ms[1][1] = 0.0174;
  ft.loop_ms[2][1] = 0.0177; /* graphs on only */
  ft.loop_ms[4][0] = 0.0210; /* 3 and 5 untried */
  ft.loop_ms[6][0] = 0.0205;
  int idx[FD_FUSE_TUNE_MAX];
  assert_int_equal(tune_fuse_others(&ft, 0, idx), 4);
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 2);
  assert_int_equal(idx[2], 4);
  assert_int_equal(idx[3], 6);
  assert_int_equal(tune_fuse_others(&ft, 4, idx), 4);
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[3], 6);
  /* a candidate beyond n is not one */
  ft.n = 5;
  assert_int_equal(tune_fuse_others(&ft, 0, idx), 3);
  /* no loop trial: nothing */
  memset(ft.loop_ms, 0, sizeof ft.loop_ms);
  assert_int_equal(tune_fuse_others(&ft, 0, idx), 0);
}

/* A rank's block for the trials: grid n (one ghost layer), a stream, a random field u (seed)
 * and an output field; block_free releases them. */
typedef struct {
  fd_grid g;
  be_stream s;
  real_t *u, *out;
} block;

static void block_new(block *b, const int n[3], uint64_t seed)
{
  assert_int_equal(fd_grid_init(&b->g, n, 1), 0);
  assert_int_equal(be_stream_create(&b->s, BE_PRIORITY_NORMAL), BE_OK);
  assert_int_equal(be_malloc((void **)&b->u, b->g.elems * sizeof(real_t)), BE_OK);
  assert_int_equal(be_malloc((void **)&b->out, b->g.elems * sizeof(real_t)), BE_OK);
  fd_field fl = {.kind = FD_FIELD_RANDOM, .scale = 1.0, .seed = seed};
  assert_int_equal(be_fill(&b->g, &fl, b->u, b->s), BE_OK);
}

static void block_free(block *b)
{
  be_free(b->u);
  be_free(b->out);
  be_stream_destroy(b->s);
}

/* The whole trial on this backend: every rank gets the same candidate list, times and choice. */
static void test_tune_kernel_same_on_every_rank(void **state)
{
  (void)state;
  const int n[3] = {20 + rank, 9, 7}; /* blocks of different sizes */
  block b;
  block_new(&b, n, 3);
  const fd_kernel_trial t = {b.g, FD_REGION_INTERIOR, FD_FACES_ALL, {-6, 1, 1, 1, 0}, b.u, NULL, b.out, b.s};
  fd_tune tn;
  assert_int_equal(tune_kernel(MPI_COMM_WORLD, &t, &tn), FD_OK);
  assert_true(tn.ran && tn.n >= 1 && tn.chosen >= 0 && tn.chosen < tn.n);
  int mine[2] = {tn.n, tn.chosen}, lo[2], hi[2];
  MPI_Allreduce(mine, lo, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  assert_int_equal(lo[0], hi[0]);
  assert_int_equal(lo[1], hi[1]);
  double first = tn.ms[0], first_hi;
  MPI_Allreduce(&first, &first_hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  assert_true(first == first_hi);
  block_free(&b);
}

/* The fused trial of --fuse auto: T = 1 (the single-step configuration) and every fused
 * candidate of T = 2..4, ms per step, the same list, times and choice on every rank, blocks of
 * different sizes; T and the configuration follow from the choice. */
static void test_tune_fused_same_on_every_rank(void **state)
{
  (void)state;
  const int n[3] = {14 + 3 * rank, 9, 7};
  block b;
  block_new(&b, n, 5);
  const fd_coeffs c = {0.5, 1.0 / 12, 1.0 / 12, 1.0 / 12, 0};
  const fd_kernel_trial t1 = {b.g, FD_REGION_ALL, 0, c, b.u, NULL, b.out, b.s};
  fd_fused_trial tf = {.grid = b.g, .coeffs = c, .u = b.u, .f = NULL, .out = b.out, .stream = b.s};
  for (int d = 0; d < 3; d++) {
    tf.lo[d] = tf.fix_lo[d] = 1;
    tf.hi[d] = tf.fix_hi[d] = n[d];
  }
  fd_kernel k;
  assert_int_equal(be_kernel_default(&b.g, &k), BE_OK);
  const int steps[4] = {1, 2, 3, 4};
  fd_fuse_tune ft;
  assert_int_equal(tune_fused(MPI_COMM_WORLD, &t1, k, &tf, steps, 4, &ft), FD_OK);
  assert_true(ft.ran && ft.n >= 4 && ft.chosen >= 0 && ft.chosen < ft.n);
  assert_int_equal(ft.cand[0].steps, 1);
  assert_int_equal(ft.steps, ft.cand[ft.chosen].steps);
  assert_int_equal(ft.config.steps, ft.steps);
  for (int i = 0; i < ft.n; i++) assert_true(ft.ms[i] > 0 && ft.ms[ft.chosen] <= ft.ms[i]);
  int mine[3] = {ft.n, ft.chosen, ft.steps}, lo[3], hi[3];
  MPI_Allreduce(mine, lo, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 3; i++) assert_int_equal(lo[i], hi[i]);
  double last = ft.ms[ft.n - 1], last_hi;
  MPI_Allreduce(&last, &last_hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  assert_true(last == last_hi);
  block_free(&b);
}

/* Rank r's fused candidates as a device with less or more shared memory would offer them:
 * the single-step kernel, r + 1 shared configurations of T = 2 (rank 0 has fewest) and one of
 * its own. */
static int rank_candidates(fd_fused *c)
{
  int n = 0;
  memset(c, 0, sizeof *c * 8);
  c[n++].steps = 1;
  for (int q = 0; q <= rank && q < 4; q++) c[n++] = (fd_fused){2, 1, 1, 1, 8 * (q + 1)};
  c[n++] = (fd_fused){2, 1, 1, 2, 100 + rank};
  return n;
}

/* tune_fused_common: every rank ends with the union of the lists, in rank order, once each. */
static void test_fused_candidates_agreed(void **state)
{
  (void)state;
  fd_fused c[FD_FUSE_TUNE_MAX];
  int n = rank_candidates(c);
  assert_int_equal(tune_fused_common(MPI_COMM_WORLD, c, &n), FD_OK);
  const int shared = size < 4 ? size : 4;
  assert_int_equal(n, 1 + shared + size);
  assert_int_equal(c[0].steps, 1);
  /* rank 0's list first (its shared one, its own), then what each later rank adds */
  assert_int_equal(c[1].chunk, 8);
  assert_int_equal(c[2].chunk, 100);
  for (int i = 0; i < n; i++) {
    int v[5] = {c[i].steps, c[i].tile, c[i].vec, c[i].block_y, c[i].chunk}, lo[5], hi[5];
    MPI_Allreduce(v, lo, 5, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(v, hi, 5, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    assert_memory_equal(lo, hi, sizeof lo);
  }
}

/* The fused trial with candidate lists that differ between ranks (issue 25: ranks on GPUs with
 * different shared memory got an MPI error or hung): no hang, one list, one choice. */
static void test_tune_fused_with_different_candidates(void **state)
{
  (void)state;
  const int n[3] = {12 + 2 * rank, 9, 7};
  block b;
  block_new(&b, n, 7);
  const fd_coeffs co = {0.5, 1.0 / 12, 1.0 / 12, 1.0 / 12, 0};
  const fd_kernel_trial t1 = {b.g, FD_REGION_ALL, 0, co, b.u, NULL, b.out, b.s};
  fd_fused_trial tf = {.grid = b.g, .coeffs = co, .u = b.u, .f = NULL, .out = b.out, .stream = b.s};
  for (int d = 0; d < 3; d++) {
    tf.lo[d] = tf.fix_lo[d] = 1;
    tf.hi[d] = tf.fix_hi[d] = n[d];
  }
  fd_kernel k;
  assert_int_equal(be_kernel_default(&b.g, &k), BE_OK);
  fd_fused c[8];
  const int nc = rank_candidates(c);
  fd_fuse_tune ft;
  assert_int_equal(tune_fused_list(MPI_COMM_WORLD, &t1, k, &tf, c, nc, 1, &ft), FD_OK);
  assert_true(ft.ran && ft.n == 1 + (size < 4 ? size : 4) + size);
  int mine[4] = {ft.n, ft.chosen, ft.steps, ft.config.chunk}, lo[4], hi[4];
  MPI_Allreduce(mine, lo, 4, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  assert_memory_equal(lo, hi, sizeof lo);
  double last = ft.ms[ft.n - 1], last_hi;
  MPI_Allreduce(&last, &last_hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  assert_true(last == last_hi);
  block_free(&b);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mr_init();
  be_info info;
  if (be_init(0, &info) != BE_OK) return 1;
  const struct CMUnitTest tests[] = {
    mr_unit_test(test_agreement_takes_the_fastest_slowest_rank),
    mr_unit_test(test_ties_go_to_the_first),
    mr_unit_test(test_kernel_finalists),
    mr_unit_test(test_fuse_others),
    mr_unit_test(test_tune_kernel_same_on_every_rank),
    mr_unit_test(test_tune_fused_same_on_every_rank),
    mr_unit_test(test_fused_candidates_agreed),
    mr_unit_test(test_tune_fused_with_different_candidates),
  };
  int failed = mr_exit_status(cmocka_run_group_tests(tests, NULL, NULL), (int)(sizeof tests / sizeof tests[0]));
  be_finalize();
  MPI_Finalize();
  return failed;
}
