/* test_decomposition.c - block extents, starts and neighbours of the 3D decomposition for many
 * (N, P), uneven splits included, and the subdomain-thickness check; the node-aware grid (each
 * node's ranks a block of the process grid): its block choice and tie-breaks, its mapping a
 * bijection for every grid of up to 64 ranks and every node size, the faces it leaves off node
 * (512 ranks in nodes of 8: 3 at most, against 4 in rank order), the nodes found from ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "decomp.h"
#include "fd_error.h"

/* Blocks tile 0..N-1 exactly, in order; sizes differ by at most one; larger first. */
static void test_split_tiles_the_line_for_many_N_and_P(void **state)
{
  (void)state;
  for (long long N = 2; N <= 200; N += 7)
    for (int P = 1; P <= N / 2 && P <= 40; P++) {
      long long next = 0, prev_n = -1;
      for (int c = 0; c < P; c++) {
        long long n, s;
        decomp_split(N, P, c, &n, &s);
        assert_int_equal(s, next);
        assert_true(n == N / P || n == N / P + 1);
        if (prev_n >= 0) assert_true(n <= prev_n);
        assert_int_equal(n == N / P + 1, c < N % P);
        prev_n = n;
        next = s + n;
      }
      assert_int_equal(next, N);
    }
}

static void test_split_known_uneven_values(void **state)
{
  (void)state;
  long long n, s;
  decomp_split(37, 4, 0, &n, &s); /* 37 = 4*9 + 1: 10 9 9 9 */
  assert_int_equal(n, 10);
  assert_int_equal(s, 0);
  decomp_split(37, 4, 1, &n, &s);
  assert_int_equal(n, 9);
  assert_int_equal(s, 10);
  decomp_split(37, 4, 3, &n, &s);
  assert_int_equal(n, 9);
  assert_int_equal(s, 28);
  decomp_split(23, 3, 2, &n, &s); /* 8 8 7 */
  assert_int_equal(n, 7);
  assert_int_equal(s, 16);
}

static void test_check_rejects_thin_subdomains(void **state)
{
  (void)state;
  long long N[3] = {37, 23, 19};
  int ok[3] = {4, 3, 2};
  assert_int_equal(decomp_check(N, ok), FD_OK);
  int thin[3] = {1, 12, 1}; /* 23 / 12 = 1 point */
  assert_int_equal(decomp_check(N, thin), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "subdomain too thin"));
  assert_non_null(strstr(fd_error_message(), " y "));
  assert_non_null(strstr(fd_error_message(), "23 points over 12 ranks in y leaves 1 per rank"));
  long long N1[3] = {1, 23, 19}; /* a count of 1 in the singular */
  int P1[3] = {1, 2, 2};
  assert_int_equal(decomp_check(N1, P1), FD_ERR_USAGE);
  assert_string_equal(
      fd_error_message(),
      "subdomain too thin: 1 point over 1 rank in x leaves 1 per rank, need at least 2");
  long long N2[3] = {3, 64, 64};
  int P2[3] = {2, 1, 1}; /* 2 + 1 points: the second block is too thin */
  assert_int_equal(decomp_check(N2, P2), FD_ERR_USAGE);
  int P3[3] = {1, 1, 1};
  assert_int_equal(decomp_check(N2, P3), FD_OK);
}

/* On one rank: the whole grid, no neighbours. */
static void test_create_single_rank_owns_everything(void **state)
{
  (void)state;
  long long N[3] = {37, 23, 19};
  int P[3] = {1, 1, 1};
  fd_decomp d;
  assert_int_equal(decomp_create(MPI_COMM_SELF, N, P, 0, &d), FD_OK);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(d.n[k], N[k]);
    assert_int_equal(d.start[k], 0);
    assert_int_equal(d.nmin[k], N[k]);
    assert_int_equal(d.nbr[2 * k], MPI_PROC_NULL);
    assert_int_equal(d.nbr[2 * k + 1], MPI_PROC_NULL);
  }
  assert_int_equal(decomp_destroy(&d), FD_OK);
}

/* ---- the node-aware grid ---- */

/* Off-node faces of every rank when rank r (node r / K, local rank r % K) sits at coords
 * place[r][]: the largest count over the ranks into *max, the smallest among ranks with
 * neighbours on every side into *inner_min; returns the count over all ranks (each face once
 * per rank, so a face between two nodes counts twice: once per NIC direction). */
static long off_node_faces(const int P[3], int ranks, int K, int (*place)[3], int *max, int *inner_min)
{
  int *node_at = malloc((size_t)ranks * sizeof *node_at);
  assert_non_null(node_at);
  for (int r = 0; r < ranks; r++) node_at[decomp_cart_rank(P, place[r])] = r / K;
  long total = 0;
  *max = 0;
  *inner_min = 6;
  for (int r = 0; r < ranks; r++) {
    int off = 0, inner = 1;
    for (int f = 0; f < 6; f++) {
      int c[3] = {place[r][0], place[r][1], place[r][2]};
      c[f / 2] += f % 2 ? 1 : -1;
      if (c[f / 2] < 0 || c[f / 2] >= P[f / 2]) {
        inner = 0;
        continue;
      }
      off += node_at[decomp_cart_rank(P, c)] != r / K;
    }
    total += off;
    if (off > *max) *max = off;
    if (inner && off < *inner_min) *inner_min = off;
  }
  free(node_at);
  return total;
}

/* srun -N 64 -n 512 on 8 x 8 x 8: in rank order each node holds a line of 8 ranks along z and
 * its ranks have up to 4 faces off node; as 2 x 2 x 2 blocks at most 3, and 36% fewer faces
 * cross the nodes in all (576 against 896 pairs). */
static void test_512_ranks_in_nodes_of_8_leave_at_most_3_faces_off_node(void **state)
{
  (void)state;
  const long long N[3] = {512, 512, 512};
  const int P[3] = {8, 8, 8}, K = 8, ranks = 512;
  int B[3];
  assert_int_equal(decomp_node_block(N, P, K, B), 1);
  assert_int_equal(B[0], 2);
  assert_int_equal(B[1], 2);
  assert_int_equal(B[2], 2);
  int(*today)[3] = malloc((size_t)ranks * sizeof *today), (*blocks)[3] = malloc((size_t)ranks * sizeof *blocks);
  assert_non_null(today);
  assert_non_null(blocks);
  for (int r = 0; r < ranks; r++) {
    today[r][0] = r / 64, today[r][1] = r / 8 % 8, today[r][2] = r % 8; /* MPI's row-major order */
    decomp_node_coords(P, B, r / K, r % K, blocks[r]);
  }
  int max_today, inner_today, max_blocks, inner_blocks;
  long total_today = off_node_faces(P, ranks, K, today, &max_today, &inner_today);
  long total_blocks = off_node_faces(P, ranks, K, blocks, &max_blocks, &inner_blocks);
  assert_int_equal(max_today, 4);
  assert_int_equal(inner_today, 4);
  assert_int_equal(max_blocks, 3);
  assert_int_equal(inner_blocks, 3);
  assert_int_equal(total_today, 2 * 896);
  assert_int_equal(total_blocks, 2 * 576);
  free(today);
  free(blocks);
}

/* The least cost wins; equal costs keep the first candidate (bx from K down, then by). */
static void test_node_block_choice_and_tie_breaks(void **state)
{
  (void)state;
  int B[3];
  const long long cube[3] = {64, 64, 64};
  const int p222[3] = {2, 2, 2};
  assert_int_equal(decomp_node_block(cube, p222, 4, B), 1); /* 3 candidates, all 4 faces: a tie */
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 221);
  assert_int_equal(decomp_node_block(cube, p222, 2, B), 1); /* 2 x 1 x 1, 1 x 2 x 1, 1 x 1 x 2 tie */
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 211);
  assert_int_equal(decomp_node_block(cube, p222, 8, B), 1); /* the whole grid */
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 222);
  /* faces across x are half the others: the block that cuts only across x wins */
  const long long long_x[3] = {128, 64, 64};
  assert_int_equal(decomp_node_block(long_x, p222, 4, B), 1);
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 122);
  /* 8 ranks per node on 4 x 4 x 2 of a cube (blocks 16 x 16 x 32: faces across z half the
   * others): 4 x 2 x 1 costs 4 x 512 across y + 8 x 256 across z = 4096, as does 2 x 2 x 2
   * (4 x 512 across x and y): the first wins. A block that spans a dimension has no faces
   * across it: on 4 x 4 x 4, 4 x 2 x 1 (1024 + 2048) ties with 2 x 2 x 2 (3 x 1024) and wins */
  const int p442[3] = {4, 4, 2}, p444[3] = {4, 4, 4};
  assert_int_equal(decomp_node_block(cube, p442, 8, B), 1);
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 421);
  assert_int_equal(decomp_node_block(cube, p444, 8, B), 1);
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 421);
  /* a block must divide P in each dimension: 4 ranks on 4 x 1 x 3 can only be 4 x 1 x 1 */
  const int p413[3] = {4, 1, 3};
  assert_int_equal(decomp_node_block(cube, p413, 4, B), 1);
  assert_int_equal(B[0] * 100 + B[1] * 10 + B[2], 411);
}

/* Nothing fits (K does not divide the grid): 0, and the plan keeps the ranks in order. */
static void test_no_node_block_falls_back_to_rank_order(void **state)
{
  (void)state;
  int B[3] = {7, 7, 7};
  const long long N[3] = {60, 60, 60};
  const int P[3] = {3, 1, 1};
  assert_int_equal(decomp_node_block(N, P, 2, B), 0);
  fd_decomp_nodes nd;
  memset(&nd, 0, sizeof nd);
  nd.count = 2;
  nd.size_min = nd.size_max = 2;
  decomp_nodes_plan(N, P, &nd);
  assert_int_equal(nd.mode, DECOMP_NODES_NO_FIT);
  assert_int_equal(nd.block[0], 0);
  char why[160];
  decomp_nodes_describe(&nd, P, why, sizeof why);
  assert_non_null(strstr(why, "node-aware grid: none fits 2 ranks per node in 3 x 1 x 1"));
  assert_string_equal(decomp_nodes_mode_name(nd.mode), "no_fit");
  /* one node, one rank per node, nodes of different sizes: the ranks in order too */
  const int P8[3] = {2, 2, 2};
  nd.count = 1, nd.size_min = nd.size_max = 8;
  decomp_nodes_plan(N, P8, &nd);
  assert_int_equal(nd.mode, DECOMP_NODES_ONE);
  nd.count = 8, nd.size_min = nd.size_max = 1;
  decomp_nodes_plan(N, P8, &nd);
  assert_int_equal(nd.mode, DECOMP_NODES_SINGLE);
  nd.count = 2, nd.size_min = 3, nd.size_max = 5;
  decomp_nodes_plan(N, P8, &nd);
  assert_int_equal(nd.mode, DECOMP_NODES_UNEQUAL);
  nd.count = 2, nd.size_min = nd.size_max = 4;
  decomp_nodes_plan(N, P8, &nd);
  assert_int_equal(nd.mode, DECOMP_NODES_BLOCKS);
  assert_int_equal(nd.block[0] * 100 + nd.block[1] * 10 + nd.block[2], 221);
}

/* For every process grid of up to 64 ranks and every K dividing the rank count: the block
 * divides the grid, holds K ranks, and (node m, local rank l) -> coordinates is a bijection onto
 * the grid whose (0, 0) is Cartesian rank 0; each node's ranks fill one block. */
static void test_node_mapping_is_a_bijection_for_every_grid_and_node_size(void **state)
{
  (void)state;
  const long long N[3] = {96, 80, 72};
  int cases = 0;
  for (int ranks = 1; ranks <= 64; ranks++)
    for (int px = 1; px <= ranks; px++) {
      if (ranks % px) continue;
      for (int py = 1; py <= ranks / px; py++) {
        if ((ranks / px) % py) continue;
        const int P[3] = {px, py, ranks / px / py};
        char *seen = calloc((size_t)ranks, 1);
        assert_non_null(seen);
        for (int K = 1; K <= ranks; K++) {
          if (ranks % K) continue;
          int B[3];
          assert_int_equal(decomp_node_block(N, P, K, B), 1); /* K divides the grid: one fits */
          assert_int_equal(B[0] * B[1] * B[2], K);
          for (int d = 0; d < 3; d++) assert_int_equal(P[d] % B[d], 0);
          memset(seen, 0, (size_t)ranks);
          for (int m = 0; m < ranks / K; m++) {
            int lo[3] = {1 << 30, 1 << 30, 1 << 30}, hi[3] = {-1, -1, -1};
            for (int l = 0; l < K; l++) {
              int c[3];
              decomp_node_coords(P, B, m, l, c);
              for (int d = 0; d < 3; d++) {
                assert_true(c[d] >= 0 && c[d] < P[d]);
                if (c[d] < lo[d]) lo[d] = c[d];
                if (c[d] > hi[d]) hi[d] = c[d];
              }
              const int cr = decomp_cart_rank(P, c);
              assert_int_equal(seen[cr], 0);
              seen[cr] = 1;
              if (m == 0 && l == 0) assert_int_equal(cr, 0);
            }
            for (int d = 0; d < 3; d++) assert_int_equal(hi[d] - lo[d] + 1, B[d]); /* one block */
          }
          cases++;
        }
        free(seen);
      }
    }
  assert_true(cases > 1000);
}

/* Nodes from the ranks' ids (any order): count, sizes, this rank's node index (by id) and its
 * place among its node's ranks. */
static void test_nodes_of_ids(void **state)
{
  (void)state;
  const int ids[7] = {5, 5, 1, 9, 1, 5, 9};
  fd_decomp_nodes nd;
  assert_int_equal(decomp_nodes_of(ids, 7, 5, &nd), FD_OK);
  assert_int_equal(nd.id, 5);
  assert_int_equal(nd.count, 3);
  assert_int_equal(nd.index, 1); /* ids 1 < 5 < 9 */
  assert_int_equal(nd.local, 2);
  assert_int_equal(nd.size_min, 2);
  assert_int_equal(nd.size_max, 3);
  assert_int_equal(decomp_nodes_of(ids, 7, 6, &nd), FD_OK);
  assert_int_equal(nd.index, 2);
  assert_int_equal(nd.local, 1);
  assert_int_equal(decomp_nodes_of(ids, 7, 2, &nd), FD_OK);
  assert_int_equal(nd.index, 0);
  assert_int_equal(nd.local, 0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_split_tiles_the_line_for_many_N_and_P),
    cmocka_unit_test(test_split_known_uneven_values),
    cmocka_unit_test(test_check_rejects_thin_subdomains),
    cmocka_unit_test(test_create_single_rank_owns_everything),
    cmocka_unit_test(test_512_ranks_in_nodes_of_8_leave_at_most_3_faces_off_node),
    cmocka_unit_test(test_node_block_choice_and_tie_breaks),
    cmocka_unit_test(test_no_node_block_falls_back_to_rank_order),
    cmocka_unit_test(test_node_mapping_is_a_bijection_for_every_grid_and_node_size),
    cmocka_unit_test(test_nodes_of_ids),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
