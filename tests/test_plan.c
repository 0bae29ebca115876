/* test_plan.c - the plan of a run (src/model/plan.h, fdmini --plan) against the decomposition a
 * run takes, for 1 to 100,000 ranks and nodes of 1 to 16 ranks: the process grid and global
 * grid are decomp_resolve_grid's, the node layout decomp_nodes_plan's; up to 4096 ranks, every
 * rank placed as decomp_create places it (decomp_node_coords for node blocks, the launcher's
 * order otherwise) gives, counted face by face, the plan's faces, faces off node per rank and
 * per node, and bytes and messages per exchange; beyond, the grid's own identities (faces
 * over all ranks, the blocks). The steps' defaults as the run resolves them. (The CLI test,
 * tests/cli/report_test.sh, compares --plan with real runs.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "decomp.h"
#include "faces.h"
#include "fd_error.h"
#include "plan.h"

static void options(fd_options *o, const char *const *args)
{
  char *argv[16];
  int argc = 0;
  argv[argc++] = (char *)"fdmini";
  for (; *args; args++) argv[argc++] = (char *)*args;
  argv[argc] = NULL;
  assert_int_equal(fd_options_parse(argc, argv, o), FD_OK);
}

/* What the run's placement gives, counted face by face: node of every rank (Cartesian order),
 * then per rank its regions with a neighbour. Checks p against it. */
static void check_against_placement(const fd_options *o, const fd_plan *p)
{
  const int N = p->ranks, K = p->node_max;
  int *node = malloc((size_t)N * sizeof *node);
  assert_non_null(node);
  for (int i = 0; i < N; i++) node[i] = -1;
  for (int w = 0; w < N; w++) { /* the launcher's rank w on node w / K, local rank w % K */
    int cart = w;
    if (p->layout.mode == DECOMP_NODES_BLOCKS) {
      int c[3];
      decomp_node_coords(p->P, p->layout.block, w / K, w % K, c);
      cart = decomp_cart_rank(p->P, c);
    }
    assert_true(cart >= 0 && cart < N);
    assert_int_equal(node[cart], -1); /* a bijection */
    node[cart] = w / K;
  }
  int *node_faces = calloc((size_t)p->nodes, sizeof *node_faces);
  assert_non_null(node_faces);
  double off_max = 0, off_sum = 0, bytes_max = 0;
  long long faces = 0;
  int msgs_max = 0, c[3];
  for (c[0] = 0; c[0] < p->P[0]; c[0]++)
    for (c[1] = 0; c[1] < p->P[1]; c[1]++)
      for (c[2] = 0; c[2] < p->P[2]; c[2]++) {
        int n[3];
        for (int d = 0; d < 3; d++) {
          long long e, s;
          decomp_split(p->N[d], p->P[d], c[d], &e, &s);
          n[d] = (int)e;
        }
        const int me = node[decomp_cart_rank(p->P, c)];
        int off = 0, msgs = 0;
        double bytes = 0;
        for (int r = 0; r < FD_REGIONS; r++) {
          int dir[3], nb[3], inside = 1;
          fd_region_dir(r, dir);
          for (int d = 0; d < 3; d++) {
            nb[d] = c[d] + dir[d];
            inside &= nb[d] >= 0 && nb[d] < p->P[d];
          }
          const size_t count = fd_region_count(n, o->halo_width, r);
          if (!inside || !count) continue;
          msgs++;
          bytes += (double)count * p->fields * sizeof(real_t);
          if (r >= FD_FACES) continue;
          faces++;
          if (node[decomp_cart_rank(p->P, nb)] != me) off++;
        }
        if (off > off_max) off_max = off;
        off_sum += off;
        node_faces[me] += off;
        if (bytes > bytes_max) bytes_max = bytes;
        if (msgs > msgs_max) msgs_max = msgs;
      }
  int node_max = 0;
  for (int m = 0; m < p->nodes; m++)
    if (node_faces[m] > node_max) node_max = node_faces[m];
  assert_int_equal(p->faces_total, faces);
  assert_true(p->faces_off_rank.max == off_max);
  assert_true(p->faces_off_rank.avg > off_sum / N - 1e-9 && p->faces_off_rank.avg < off_sum / N + 1e-9);
  assert_true(p->faces_off_node.max == node_max);
  assert_true(p->bytes_exchange_max == bytes_max);
  assert_int_equal(p->msgs_exchange_max, msgs_max);
  free(node);
  free(node_faces);
}

/* Every rank count of a list from 1 to 100,000, nodes of 1 to 16 ranks: the grids and the
 * layout the run takes; face by face up to 4096 ranks. */
static void test_plan_is_the_runs_decomposition(void **state)
{
  (void)state;
  static const int counts[] = {1,   2,   3,   4,    5,    6,    7,    8,    12,    16,    24,    27,    32,    48,
                               60,  64,  96,  100,  128,  250,  256,  512,  1000,  1024,  2048,  4096,  10000, 12288,
                               32768, 65536, 100000};
  static const int nodes_of[] = {1, 2, 4, 8, 16};
  const char *weak[] = {"--op", "heat", "--local", "6,5,4", NULL};
  const char *deep[] = {"--op", "wave", "--local", "7,6,5", "--halo-width", "2", NULL};
  const char *strong[] = {"--op", "jacobi", "--global", "1000,1000,1000", NULL};
  const char *const *cases[] = {weak, deep, strong};
  fd_plan *p = malloc(sizeof *p);
  assert_non_null(p);
  for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
    fd_options o;
    options(&o, cases[q]);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (size_t j = 0; j < sizeof nodes_of / sizeof nodes_of[0]; j++) {
        const int N = counts[i], K = nodes_of[j] < N ? nodes_of[j] : N;
        const int nodes = (N + K - 1) / K, last = N - (nodes - 1) * K;
        assert_int_equal(plan_make(&o, N, nodes, last, K, 0, p), FD_OK);
        long long G[3];
        int P[3];
        assert_int_equal(decomp_resolve_grid(&o, N, 0, G, P), FD_OK);
        assert_memory_equal(p->P, P, sizeof P);
        assert_memory_equal(p->N, G, sizeof G);
        fd_decomp_nodes nd;
        memset(&nd, 0, sizeof nd);
        nd.count = nodes;
        nd.size_min = last;
        nd.size_max = K;
        decomp_nodes_plan(G, P, &nd);
        assert_int_equal(p->layout.mode, nd.mode);
        assert_memory_equal(p->layout.block, nd.block, sizeof nd.block);
        /* faces over all ranks: each cut plane of the grid, counted at both sides */
        const long long cuts = 2LL * ((P[0] - 1LL) * P[1] * P[2] + (P[1] - 1LL) * P[0] * P[2] + (P[2] - 1LL) * P[0] * P[1]);
        assert_int_equal(p->faces_total, cuts);
        assert_true(p->faces_off_rank.max <= 6 && p->faces_off_node.max <= 6.0 * K);
        if (N <= 4096) check_against_placement(&o, p);
      }
  }
  free(p);
}

/* 100,000 ranks in nodes of 8 on a 4096^3 grid: 40 x 50 x 50, each node a 2 x 2 x 2 block,
 * at most 3 faces of a rank leave its node (a corner of its block), 24 per node. */
static void test_plan_of_100000_ranks(void **state)
{
  (void)state;
  fd_options o;
  const char *args[] = {"--op", "heat", "--global", "4096,4096,4096", NULL};
  options(&o, args);
  fd_plan *p = malloc(sizeof *p);
  assert_non_null(p);
  assert_int_equal(plan_make(&o, 100000, 12500, 8, 8, 1, p), FD_OK);
  assert_true(p->P[0] == 40 && p->P[1] == 50 && p->P[2] == 50);
  assert_int_equal(p->layout.mode, DECOMP_NODES_BLOCKS);
  assert_true(p->layout.block[0] == 2 && p->layout.block[1] == 2 && p->layout.block[2] == 2);
  assert_true(p->faces_off_rank.max == 3 && p->faces_off_node.max == 24);
  assert_true(p->nmax[0] == 103 && p->nmax[1] == 82 && p->nmax[2] == 82);
  /* GPU backends: 2 levels read + output, 4 send slots, 2 receive blocks, the NaN block */
  assert_int_equal(p->field_buffers, 2);
  assert_true(p->field_bytes == 105.0 * 84 * 84 * sizeof(real_t));
  assert_true(p->halo_staged_bytes > 0 && p->halo_device_bytes == p->halo_staged_bytes / 3 * 7);
  free(p);
}

/* The steps' defaults: 100 timed; 10 warm-up on accelerators, 2 on host, rounded up to a
 * multiple of S and T (S and 12 for --fuse auto). */
static void test_plan_steps(void **state)
{
  (void)state;
  fd_options o;
  int iters, warmup;
  const char *none[] = {NULL};
  options(&o, none);
  plan_resolve_steps(&o, 0, &iters, &warmup);
  assert_true(iters == 100 && warmup == 2);
  plan_resolve_steps(&o, 1, &iters, &warmup);
  assert_true(iters == 100 && warmup == 10);
  const char *deep[] = {"--op", "heat", "--halo-width", "4", "--fuse", "2", "--iters", "7", NULL};
  options(&o, deep);
  plan_resolve_steps(&o, 1, &iters, &warmup);
  assert_true(iters == 7 && warmup == 12);
  const char *fauto[] = {"--op", "heat", "--halo-width", "3", "--fuse", "auto", NULL};
  options(&o, fauto);
  plan_resolve_steps(&o, 0, &iters, &warmup);
  assert_int_equal(warmup, 12);
}

/* A grid the run refuses, the plan refuses with the run's message. */
static void test_plan_refuses_what_the_run_refuses(void **state)
{
  (void)state;
  fd_options o;
  fd_plan p;
  const char *thin[] = {"--global", "1,1,3", NULL};
  options(&o, thin);
  assert_int_equal(plan_make(&o, 2, 1, 2, 2, 0, &p), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "subdomain too thin"));
  const char *deep[] = {"--op", "heat", "--global", "7,20,20", "--procs", "2,1,1", "--halo-width", "4", NULL};
  options(&o, deep);
  assert_int_equal(plan_make(&o, 2, 1, 2, 2, 0, &p), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "--halo-width 4: the thinnest block along x has 3 points"));
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_plan_is_the_runs_decomposition),
    cmocka_unit_test(test_plan_of_100000_ranks),
    cmocka_unit_test(test_plan_steps),
    cmocka_unit_test(test_plan_refuses_what_the_run_refuses),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
