/* test_multirank_matches_single_rank.c - run under mpiexec -n P (P = 1, 2, 3, 4, 6, 8): the
 * same global problem on all P ranks, for several process grids and odd sizes, gives a final
 * field bitwise identical to rank 0 running it alone, for every operator (the wave in a
 * uniform and a two-layer medium), in emulated nodes too (bind_node's groups of K ranks, the
 * process grid in node blocks). Also checks that the neighbours of the Cartesian
 * decomposition agree with each other (with nodes of every size, in node blocks), that ranks naming one device take turns
 * (bind_device_peers), and that snapshots (--snapshot-every) read back equal the field
 * bitwise: the last one byte for byte the --dump of the same step, every one byte for byte the
 * single-rank run's, with snapshots.xmf listing each.
 * Deep halos (--halo-width S = 1..4: faces, edges, corners exchanged once every S steps) and
 * fused passes (--fuse T, T dividing S; any T on one rank) give the same bytes as one rank's
 * step-by-step run, for every time-stepping operator, overlap on and off (and, built for a
 * GPU, GPU-aware and staged MPI), uneven splits and runs that end windows and passes early; so do
 * snapshots of a fused deep-halo run.
 * Every distributed run must PASS (a check applied) with the ghosts an exchange fills NaN until
 * it does, and fail with one rank's unpack of one region dropped (--test-inject-fault=exchange),
 * with messages of no elements (=zero) and with the shell next to neighbours not updated
 * (=shell).
 * With --thread-single (MPI_Init, no thread level asked for): a snapshot run is refused on
 * every rank with FD_ERR_USAGE and a message naming MPI_THREAD_FUNNELED (the snapshot writer
 * thread needs it), before anything is written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <mpi.h>

#include "decomp.h"
#include "bind.h"
#include "fd_error.h"
#include "halo.h"
#include "solver.h"
#include "mr_test.h"
#include "proxy.h"

static int rank, size;
static be_info dev;
static fd_node node;
static char dir[256];

/* Whole file contents (rank 0). */
static char *slurp(const char *path, long *len)
{
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)*len + 1);
  if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) *len = -1;
  fclose(f);
  return buf;
}

/* wave variant of the next runs: 1 = uniform, 2 = two layers (V = 1 below, 2.5 above) */
static int wave_layers = 1;
/* --halo-width and --fuse of the next runs of base_options (1, 1 but where a test sets them) */
static int base_width = 1, base_fuse = 1;
/* --halo-path of the next runs of base_options (auto but where a test sets it) */
static fd_halo_path base_path = FD_HALO_PATH_AUTO;

static void base_options(fd_options *o, fd_op op, const long long N[3], const char *dump)
{
  char *argv[] = {"test", NULL};
  fd_options_parse(1, argv, o);
  o->op = op;
  o->have_global = 1;
  memcpy(o->global, N, sizeof o->global);
  o->iters = 4;
  o->warmup = 1;
  o->progress = 0;
  o->halo_width = base_width;
  o->fuse = base_fuse;
  o->halo_path = base_path;
  snprintf(o->dump, sizeof o->dump, "%s", dump);
  if (op == FD_OP_WAVE && wave_layers == 2) {
    o->nvel = 2;
    o->velocity[0] = 1.0;
    o->velocity[1] = 2.5;
  }
}

/* The wave's last-step replay among v's checks (verify.c), or NULL. */
static const fd_check *replay_check(const fd_verify *v)
{
  for (int q = 0; q < v->nchecks; q++)
    if (strcmp(v->check[q].name, "last-step replay") == 0) return &v->check[q];
  return NULL;
}

/* The node of the distributed runs of same_as_single_rank (bind_node's, or emulated nodes),
 * and the result of its last one. */
static const fd_node *dist_node = &node;
static fd_result dist_result;

/* Runs op on grid N with process grid P on all ranks (nodes: dist_node) and alone on rank 0; 1
 * when the two dumped fields are byte-identical (on every rank). */
static int same_as_single_rank(fd_op op, const long long N[3], const int P[3])
{
  char ref[300], dist[300];
  snprintf(ref, sizeof ref, "%s/ref.raw", dir);
  snprintf(dist, sizeof dist, "%s/dist.raw", dir);
  fd_options o;
  fd_result r;
  if (rank == 0) {
    base_options(&o, op, N, ref);
    int rc = fd_run(&o, MPI_COMM_SELF, &dev, &node, &r);
    if (rc != FD_OK) fail_msg("single-rank %s run: rc %d (%s)", fd_op_name(op), rc, fd_error_message());
  }
  base_options(&o, op, N, dist);
  o.have_procs = 1;
  memcpy(o.procs, P, sizeof o.procs);
  int rc = fd_run(&o, MPI_COMM_WORLD, &dev, dist_node, &r);
  if (rc != FD_OK) fail_msg("%d-rank %s run: rc %d (%s)", size, fd_op_name(op), rc, fd_error_message());
  dist_result = r;
  /* a check applied and passed, with the ghosts an exchange fills NaN until it does */
  if (r.verify.verdict != FD_VERDICT_PASS)
    fail_msg("%d-rank %s run: %s (%s)", size, fd_op_name(op), verify_verdict_name(r.verify.verdict), r.verify.detail);
  /* the wave's last step, replayed from the neighbours' own layers, is exact (issue 48) */
  const fd_check *rp = replay_check(&r.verify);
  if (op == FD_OP_WAVE && !(rp && rp->applies && rp->passed && rp->error == 0.0))
    fail_msg("%d-rank wave run: the last-step replay did not apply or pass (%s)", size, r.verify.detail);
  int same = 0;
  if (rank == 0) {
    long la = 0, lb = 0;
    char *a = slurp(ref, &la), *b = slurp(dist, &lb);
    long expect = (long)(N[0] * N[1] * N[2]) * (long)sizeof(real_t);
    same = a && b && la == expect && lb == expect && memcmp(a, b, (size_t)la) == 0;
    if (!same)
      print_message("%s on %lldx%lldx%lld, grid %dx%dx%d: sizes %ld/%ld (expect %ld), fields differ\n",
                    fd_op_name(op), N[0], N[1], N[2], P[0], P[1], P[2], la, lb, expect);
    free(a);
    free(b);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same;
}

/* Up to `max` process grids with product `size`, plus MPI_Dims_create's. */
static int process_grids(int grids[][3], int max)
{
  int count = 0;
  int dims[3] = {0, 0, 0};
  MPI_Dims_create(size, 3, dims);
  memcpy(grids[count++], dims, sizeof dims);
  for (int px = size; px >= 1 && count < max; px--)
    for (int py = 1; py <= size && count < max; py++) {
      if (size % (px * py)) continue;
      int pz = size / (px * py);
      int g[3] = {px, py, pz}, dup = 0;
      for (int c = 0; c < count; c++) dup |= memcmp(grids[c], g, sizeof g) == 0;
      if (!dup) memcpy(grids[count++], g, sizeof g);
    }
  return count;
}

static void test_multirank_matches_single_rank(void **state)
{
  (void)state;
  const long long sizes[][3] = {{37, 23, 19}, {20, 31, 17}};
  int grids[4][3];
  int ngrids = process_grids(grids, 4);
  int cases = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int g = 0; g < ngrids; g++) {
      if (decomp_check(sizes[s], grids[g]) != FD_OK) continue; /* e.g. 17 over 8 in z */
      for (int op = 0; op <= FD_OP_COUNT; op++) { /* FD_OP_COUNT: the two-layer wave */
        wave_layers = op == FD_OP_COUNT ? 2 : 1;
        fd_op o = op == FD_OP_COUNT ? FD_OP_WAVE : (fd_op)op;
        if (!same_as_single_rank(o, sizes[s], grids[g]))
          fail_msg("%s%s %lldx%lldx%lld on %dx%dx%d differs from the single-rank run",
                   fd_op_name(o), wave_layers == 2 ? " (two layers)" : "", sizes[s][0],
                   sizes[s][1], sizes[s][2], grids[g][0], grids[g][1], grids[g][2]);
        cases++;
      }
      wave_layers = 1;
    }
  if (rank == 0) print_message("%d ranks: %d cases (%d process grids x sizes x 5 operators) bitwise equal\n", size, cases, ngrids);
  assert_true(cases >= 5 * ngrids);
}

/* Emulated nodes (bind_node with K = 2 and K = size / 2, every K of an even size from 4 up):
 * every node's ranks a block of the process grid (decomp.h), world rank 0 still rank 0, and
 * every operator's field bitwise equal to one rank's (heat and the wave with deep halos and
 * fused passes too); the faces that leave a node counted; the exchange, zero and shell faults
 * fail. */
static void test_emulated_nodes_match_single_rank(void **state)
{
  (void)state;
  if (size < 4 || size % 2) {
    if (rank == 0) print_message("%d ranks: no emulated layout (even sizes from 4)\n", size);
    return;
  }
  const long long N[3] = {20, 31, 17};
  int grids[2][3];
  const int ngrids = process_grids(grids, 2);
  int cases = 0;
  for (int K = 2; K < size; K = K == 2 && size / 2 > 2 ? size / 2 : size) {
    fd_node en;
    if (bind_node(MPI_COMM_WORLD, K, &en) != FD_OK) fail_msg("bind_node(K = %d): %s", K, fd_error_message());
    assert_int_equal(en.count, size / K);
    assert_int_equal(en.size, K);
    assert_int_equal(en.host, node.host);
    dist_node = &en;
    for (int g = 0; g < ngrids; g++) {
      if (decomp_check(N, grids[g]) != FD_OK) continue;
      for (int op = 0; op <= FD_OP_COUNT; op++) { /* FD_OP_COUNT: the two-layer wave */
        wave_layers = op == FD_OP_COUNT ? 2 : 1;
        fd_op o = op == FD_OP_COUNT ? FD_OP_WAVE : (fd_op)op;
        if (!same_as_single_rank(o, N, grids[g]))
          fail_msg("%s%s on %dx%dx%d in %d nodes of %d differs from the single-rank run", fd_op_name(o),
                   wave_layers == 2 ? " (two layers)" : "", grids[g][0], grids[g][1], grids[g][2], size / K, K);
        const fd_result *r = &dist_result;
        assert_int_equal(r->nodes, size / K);
        assert_string_equal(r->node_mode, "blocks");
        assert_int_equal(r->node_block[0] * r->node_block[1] * r->node_block[2], K);
        assert_true(r->faces_other_node.max > 0);
        assert_true(r->faces_same_gpu.max == 0); /* the host backend: no device */
        cases++;
      }
      wave_layers = 1;
    }
    /* deep halos and fused passes: heat and the wave at S = 2 (heat: T = 2) */
    const fd_op deep[2] = {FD_OP_HEAT, FD_OP_WAVE};
    base_width = 2;
    for (int q = 0; q < 2; q++) {
      base_fuse = deep[q] == FD_OP_HEAT ? 2 : 1;
      if (!same_as_single_rank(deep[q], N, grids[0]))
        fail_msg("%s --halo-width 2 --fuse %d in %d nodes of %d differs from the single-rank run", fd_op_name(deep[q]),
                 base_fuse, size / K, K);
      cases++;
    }
    base_width = base_fuse = 1;
    /* the halo faults fail through the emulated layout too */
    const fd_fault faults[] = {FD_FAULT_EXCHANGE, FD_FAULT_ZERO, FD_FAULT_SHELL};
    for (size_t q = 0; q < sizeof faults / sizeof faults[0]; q++) {
      fd_options o;
      fd_result r;
      base_options(&o, q ? FD_OP_HEAT : FD_OP_WAVE, N, "");
      o.inject_fault = faults[q];
      const int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &en, &r);
      int failed = rc == FD_ERR_VERIFY && r.verify.verdict == FD_VERDICT_FAIL, all = failed;
      MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (!all) fail_msg("fault %d in %d nodes of %d: rc %d, %s", (int)faults[q], size / K, K, rc, r.verify.detail);
    }
    dist_node = &node;
  }
  if (rank == 0) print_message("%d ranks: %d cases in emulated nodes bitwise equal, the halo faults failing\n", size, cases);
  assert_true(cases >= 5);
}

/* The off-node proxy (--halo-path proxy, halo/proxy.c), every rank its own node (K = 1) and,
 * from 4 ranks, 2 nodes of size / 2: every pass one launch whose faces out of IPC reach (on the
 * host backend, all of them) go through the proxy; every operator bitwise equal to one rank's
 * (the wave in two layers too), heat with --halo-width 2 --fuse 2 and the wave with
 * --halo-width 3 (the deep exchange served between its pack and its unpack); F_m measured; the
 * exchange, zero (empty messages: the count check) and shell faults fail through it, the first
 * two at --halo-width 2 --fuse 2 too. */
static void test_proxy_pass_matches_single_rank(void **state)
{
  (void)state;
  if (size < 2) {
    if (rank == 0) print_message("1 rank: no neighbour, no proxy\n");
    return;
  }
  const long long N[3] = {20, 31, 17};
  int grids[1][3];
  process_grids(grids, 1);
  if (decomp_check(N, grids[0]) != FD_OK) grids[0][0] = size, grids[0][1] = grids[0][2] = 1;
  int cases = 0;
  base_path = FD_HALO_PATH_PROXY;
  for (int K = 1; K <= size / 2; K = K == 1 && size >= 4 ? size / 2 : size) {
    fd_node en;
    if (bind_node(MPI_COMM_WORLD, K, &en) != FD_OK) fail_msg("bind_node(K = %d): %s", K, fd_error_message());
    dist_node = &en;
    for (int op = 0; op <= FD_OP_COUNT; op++) { /* FD_OP_COUNT: the two-layer wave */
      wave_layers = op == FD_OP_COUNT ? 2 : 1;
      fd_op o = op == FD_OP_COUNT ? FD_OP_WAVE : (fd_op)op;
      if (!same_as_single_rank(o, N, grids[0]))
        fail_msg("%s%s through the proxy, %d nodes of %d, differs from the single-rank run", fd_op_name(o),
                 wave_layers == 2 ? " (two layers)" : "", size / K, K);
      const fd_result *r = &dist_result;
      if (r->sig_passes <= 0 || r->proxy_faces <= 0 || r->floors_proxy <= 0 || r->floor_proxy_us.min <= 0)
        fail_msg("%s through the proxy: %lld signalled passes, %lld faces by the proxy, F_m on %d ranks", fd_op_name(o),
                 r->sig_passes, r->proxy_faces, r->floors_proxy);
      cases++;
    }
    wave_layers = 1;
    const fd_op deep[2] = {FD_OP_HEAT, FD_OP_WAVE};
    for (int q = 0; q < 2; q++) {
      base_width = q ? 3 : 2;
      base_fuse = q ? 1 : 2;
      if (decomp_check(N, grids[0]) == FD_OK && !same_as_single_rank(deep[q], N, grids[0]))
        fail_msg("%s --halo-width %d --fuse %d through the proxy differs from the single-rank run", fd_op_name(deep[q]),
                 base_width, base_fuse);
      if (dist_result.sig_passes <= 0 || dist_result.proxy_faces <= 0)
        fail_msg("%s --halo-width %d through the proxy: not signalled", fd_op_name(deep[q]), base_width);
      cases++;
    }
    /* at width 1 and (the exchange and zero faults; the shell fault keeps deep passes apart:
     * step_signalled) at --halo-width 2 --fuse 2, each through signalled passes */
    const fd_fault faults[] = {FD_FAULT_EXCHANGE, FD_FAULT_ZERO, FD_FAULT_SHELL};
    for (int w = 1; w <= 2; w++)
      for (size_t q = 0; q < sizeof faults / sizeof faults[0] - (w > 1); q++) {
        base_width = base_fuse = w;
        if (w > 1 && decomp_check(N, grids[0]) != FD_OK) continue; /* as the deep cases above */
        fd_options o;
        fd_result r;
        base_options(&o, FD_OP_HEAT, N, "");
        o.inject_fault = faults[q];
        const int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &en, &r);
        int failed = rc == FD_ERR_VERIFY && r.verify.verdict == FD_VERDICT_FAIL && r.proxy_faces > 0 &&
                     r.sig_passes > 0,
            all = failed;
        MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (!all)
          fail_msg("fault %d through the proxy at width %d in %d nodes of %d: rc %d, %lld faces by the proxy, %lld "
                   "signalled passes, %s",
                   (int)faults[q], w, size / K, K, rc, r.proxy_faces, r.sig_passes, r.verify.detail);
      }
    base_width = base_fuse = 1;
    dist_node = &node;
  }
  base_path = FD_HALO_PATH_AUTO;
  if (rank == 0) print_message("%d ranks: %d cases through the proxy bitwise equal, the halo faults failing\n", size, cases);
  assert_true(cases >= 7);
}

/* The deep-halo and fused variants of one case: op (FD_OP_COUNT: the two-layer wave) on N
 * with warm-up and iterations that end windows and passes early, against one rank's
 * step-by-step run (computed once per operator). */
static void deep_options(fd_options *o, int op, const long long N[3], const char *dump)
{
  wave_layers = op == FD_OP_COUNT ? 2 : 1;
  base_options(o, op == FD_OP_COUNT ? FD_OP_WAVE : (fd_op)op, N, dump);
  o->warmup = 3;
  o->iters = 7;
}

static void test_deep_halos_and_fused_passes_match_single_rank(void **state)
{
  (void)state;
  const long long N[3] = {23, 19, 17};
  const int ops[] = {FD_OP_HEAT, FD_OP_JACOBI, FD_OP_WAVE, FD_OP_COUNT};
  int grids[2][3];
  const int ngrids = process_grids(grids, 2);
  int cases = 0, kinds = 0;
  char ref[300], dist[300];
  snprintf(dist, sizeof dist, "%s/deep.raw", dir);
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
    const int op = ops[oi];
    fd_options o;
    fd_result r;
    snprintf(ref, sizeof ref, "%s/deepref.raw", dir);
    if (rank == 0) {
      deep_options(&o, op, N, ref);
      int rc = fd_run(&o, MPI_COMM_SELF, &dev, &node, &r);
      if (rc != FD_OK) fail_msg("single-rank reference: rc %d (%s)", rc, fd_error_message());
    }
    const int fusable = op == FD_OP_HEAT || op == FD_OP_JACOBI;
    for (int g = 0; g < ngrids; g++)
      for (int S = 1; S <= 4; S++) {
        int fits = 1;
        for (int d = 0; d < 3; d++) fits &= grids[g][d] == 1 || S <= N[d] / grids[g][d];
        if (!fits) continue;
        for (int T = 1; T <= (fusable ? FD_FUSE_MAX : 1); T++) {
          if ((S == 1 && T == 1) || (size > 1 && S % T)) continue;
          deep_options(&o, op, N, dist);
          o.have_procs = 1;
          memcpy(o.procs, grids[g], sizeof o.procs);
          o.halo_width = S;
          o.fuse = T;
          o.overlap = cases % 2 == 0;
          /* staged MPI where there are device buffers to stage (a GPU build of this test) */
          o.mpi_gpu = dev.is_accelerator && (cases / 2) % 2 ? FD_MPI_GPU_STAGED : FD_MPI_GPU_AUTO;
          int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
          if (rc != FD_OK) fail_msg("%d ranks, S %d, T %d: rc %d (%s)", size, S, T, rc, fd_error_message());
          if (r.verify.verdict != FD_VERDICT_PASS)
            fail_msg("%d ranks, S %d, T %d: %s (%s)", size, S, T, verify_verdict_name(r.verify.verdict), r.verify.detail);
          int same = 0;
          if (rank == 0) {
            long la = 0, lb = 0;
            char *a = slurp(ref, &la), *b = slurp(dist, &lb);
            same = a && b && la == lb && la == (long)(N[0] * N[1] * N[2]) * (long)sizeof(real_t) && memcmp(a, b, (size_t)la) == 0;
            free(a);
            free(b);
          }
          MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
          if (!same)
            fail_msg("%s%s on %dx%dx%d ranks, --halo-width %d --fuse %d%s%s differs from one rank's step-by-step run",
                     fd_op_name(o.op), op == FD_OP_COUNT ? " (two layers)" : "", grids[g][0], grids[g][1],
                     grids[g][2], S, T, o.overlap ? "" : " --no-overlap",
                     o.mpi_gpu == FD_MPI_GPU_STAGED ? " --mpi-gpu staged" : "");
          /* the report's figures: one exchange every S steps, redundant points beyond 1..n */
          if (size > 1 && S > 1) {
            assert_int_equal(r.halo_width, S);
            assert_true(r.halo_msgs_step_max > 0 && r.halo_msgs_step_max < r.halo_msgs_exchange_max);
            assert_true(r.redundant.max > 0 && r.redundant_share > 0);
          }
          if (T > 1) assert_int_equal(r.fuse.steps, T);
          cases++;
        }
      }
    kinds++;
  }
  wave_layers = 1;
  if (rank == 0) print_message("%d ranks: %d deep-halo and fused cases (%d operators) bitwise equal to one rank's step-by-step run\n", size, cases, kinds);
  assert_true(cases >= (size == 1 ? 30 : 6));
}

/* --test-inject-fault=exchange: the last rank skips the unpack of one received region in every
 * exchange. With the ghosts an exchange fills NaN until it does (halo_poison_ghosts), every
 * operator must fail its verification (exit 1) on every rank: width 1, deep halos S = 2 and 3
 * (faces, edges, corners), fused passes, overlap on and off, the two-layer wave (issue 25: the
 * wave and the laplacian printed PASS with an exchange that delivered nothing); the wave's
 * last-step replay fails on its own (issue 48). One rank has nothing to exchange: refused. */
static void test_exchange_fault_fails_every_operator(void **state)
{
  (void)state;
  const long long N[3] = {23, 19, 17};
  fd_options o;
  fd_result r;
  if (size == 1) {
    base_options(&o, FD_OP_HEAT, N, "");
    o.inject_fault = FD_FAULT_EXCHANGE;
    assert_int_equal(fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r), FD_ERR_USAGE);
    assert_non_null(strstr(fd_error_message(), "--test-inject-fault=exchange needs 2 or more ranks"));
    return;
  }
  int grids[2][3];
  const int ngrids = process_grids(grids, 2);
  int cases = 0;
  for (int op = 0; op <= FD_OP_COUNT; op++) /* FD_OP_COUNT: the two-layer wave */
    for (int S = 1; S <= 3; S++)
      for (int T = 1; T <= S; T++) {
        const int o_op = op == FD_OP_COUNT ? FD_OP_WAVE : op;
        if ((S > 1 && o_op == FD_OP_LAPLACIAN) || (T > 1 && (o_op == FD_OP_WAVE || S % T))) continue;
        const int g = cases % ngrids;
        int fits = 1;
        for (int d = 0; d < 3; d++) fits &= grids[g][d] == 1 || S <= N[d] / grids[g][d];
        if (!fits) continue;
        wave_layers = op == FD_OP_COUNT ? 2 : 1;
        base_options(&o, (fd_op)o_op, N, "");
        o.warmup = 2;
        o.iters = 6;
        o.have_procs = 1;
        memcpy(o.procs, grids[g], sizeof o.procs);
        o.halo_width = S;
        o.fuse = T;
        o.overlap = cases % 2 == 0;
        o.inject_fault = FD_FAULT_EXCHANGE;
        int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
        int failed = rc == FD_ERR_VERIFY && r.verify.verdict == FD_VERDICT_FAIL, all = failed;
        /* the wave's FAIL comes from its last-step replay too, not only from the NaN */
        const fd_check *rp = replay_check(&r.verify);
        if (o_op == FD_OP_WAVE) failed &= rp && rp->applies && !rp->passed;
        MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (!all)
          fail_msg("%s%s on %dx%dx%d ranks, --halo-width %d --fuse %d%s with a dropped unpack: rc %d, %s (%s)",
                   fd_op_name(o.op), wave_layers == 2 ? " (two layers)" : "", grids[g][0], grids[g][1], grids[g][2],
                   S, T, o.overlap ? "" : " --no-overlap", rc, verify_verdict_name(r.verify.verdict), r.verify.detail);
        cases++;
      }
  wave_layers = 1;
  if (rank == 0) print_message("%d ranks: %d cases with a dropped unpack, every one FAIL\n", size, cases);
  assert_true(cases >= 6);
}

/* The halo faults of issue 48 (--test-inject-fault=exchange|zero|shell) on the layouts where
 * the wave used to print PASS: every operator must exit 1 with FAIL on every rank.
 *   exchange  the last rank skips the unpack of one region: its ghosts keep their NaN;
 *   zero      every message carries no elements: MPI's counts come up short, so the run fails
 *             with the halo's line naming the rank, region, neighbour and counts (the receive
 *             buffers, NaN when created, would poison the ghosts even without the count check);
 *   shell     the shell next to a neighbour is never updated: its points keep the NaN that
 *             state_fill puts into 1..n of every output buffer.
 * Layouts by rank count: 3 ranks 1x1x3 on 15^3 (a shell of one point next to two neighbours),
 * 8 ranks 2x2x2 on 32^3, 2 and 4 ranks deep halos (--halo-width 2, the laplacian at width 1)
 * on 1x1x2 and 1x2x2 of 16^3; other counts have none. One rank: the kinds are refused. */
static void test_halo_faults_fail_every_operator(void **state)
{
  (void)state;
  static const fd_fault kinds[] = {FD_FAULT_EXCHANGE, FD_FAULT_ZERO, FD_FAULT_SHELL};
  static const char *const names[] = {"exchange", "zero", "shell"};
  fd_options o;
  fd_result r;
  if (size == 1) {
    const long long N[3] = {15, 15, 15};
    for (int k = 1; k < 3; k++) {
      char want[96];
      base_options(&o, FD_OP_WAVE, N, "");
      o.inject_fault = kinds[k];
      assert_int_equal(fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r), FD_ERR_USAGE);
      snprintf(want, sizeof want, "--test-inject-fault=%s needs 2 or more ranks", names[k]);
      assert_non_null(strstr(fd_error_message(), want));
    }
    return;
  }
  long long n = 16;
  int P[3] = {1, 1, size}, width = 2;
  if (size == 3) n = 15, width = 1;
  else if (size == 8) n = 32, width = 1, P[0] = P[1] = P[2] = 2;
  else if (size == 4) P[1] = P[2] = 2;
  else if (size != 2) return;
  const long long N[3] = {n, n, n};
  int cases = 0;
  for (int op = 0; op < FD_OP_COUNT; op++)
    for (int k = 0; k < 3; k++) {
      base_options(&o, (fd_op)op, N, "");
      o.warmup = 1;
      o.iters = 3;
      o.have_procs = 1;
      memcpy(o.procs, P, sizeof o.procs);
      o.halo_width = op == FD_OP_LAPLACIAN ? 1 : width;
      o.inject_fault = kinds[k];
      const int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
      /* zero: the count check's line; the others: a check of the answer fails */
      const int why = kinds[k] == FD_FAULT_ZERO ? strstr(r.verify.detail, "short halo message") != NULL
                                                 : strstr(r.verify.detail, "FAILED") != NULL;
      int failed = rc == FD_ERR_VERIFY && r.verify.verdict == FD_VERDICT_FAIL && why, all = failed;
      MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      if (!all)
        fail_msg("%s on %dx%dx%d ranks of %lld^3, --halo-width %d, --test-inject-fault=%s: rc %d, %s (%s)",
                 fd_op_name(o.op), P[0], P[1], P[2], n, o.halo_width, names[k], rc,
                 verify_verdict_name(r.verify.verdict), r.verify.detail);
      if (rank == 0 && op == FD_OP_WAVE) print_message("wave, %s: %s: %.160s\n", names[k], r.verify.name, r.verify.detail);
      cases++;
    }
  if (rank == 0) print_message("%d ranks: %d halo fault cases (exchange, zero, shell), every one FAIL\n", size, cases);
  assert_int_equal(cases, 3 * FD_OP_COUNT);
}

/* The halo's buffers (issue 48): the receive buffers of both parities are NaN when created, so
 * that a message that delivers nothing unpacks NaN; on the host backend, which cannot share
 * device memory (no IPC, so no signalled exchange), send_block has 2 slots, not 4. Neighbours:
 * a ring along x (one rank: none). */
static void test_halo_buffers_start_nan(void **state)
{
  (void)state;
  const int n[3] = {4, 5, 6};
  fd_grid g;
  assert_int_equal(fd_grid_init(&g, n, 1), 0);
  int nbr[FD_REGIONS];
  for (int f = 0; f < FD_REGIONS; f++) {
    int d[3];
    fd_region_dir(f, d);
    nbr[f] = size > 1 && d[1] == 0 && d[2] == 0 ? (rank + d[0] + size) % size : MPI_PROC_NULL;
  }
  be_stream st;
  assert_int_equal(be_stream_create(&st, BE_PRIORITY_HIGH), BE_OK);
  fd_halo h;
  assert_int_equal(halo_create(&h, MPI_COMM_WORLD, nbr, &g, 1, 0, FD_HALO_PATH_AUTO, &dev, node.id, st), FD_OK);
  char why[128];
  if (!be_ipc_supported(why, sizeof why)) assert_int_equal(h.slots, 2);
  const size_t count = 2 * h.faces.total;
  real_t *recv = malloc(count * sizeof(real_t) + 1);
  assert_non_null(recv);
  assert_int_equal(be_memcpy_async(recv, h.recv_block, count * sizeof(real_t), BE_COPY_D2H, st), BE_OK);
  assert_int_equal(be_stream_sync(st), BE_OK);
  size_t nan = 0;
  for (size_t e = 0; e < count; e++) nan += recv[e] != recv[e];
  if (size > 1) { /* one rank: nothing to receive, the buffers are left as allocated */
    assert_true(count > 0);
    assert_int_equal(nan, count);
  }
  free(recv);
  assert_int_equal(halo_destroy(&h), FD_OK);
  assert_int_equal(be_stream_destroy(st), BE_OK);
}

/* The proxy's first contact (proxy_first_contact): before any launch waits for it, each carried
 * region's message once through each pair of slots, so that a GPU-aware MPI sets up its path
 * between the two processes' buffers while nothing waits (halo/proxy.h). Ranks in a ring carry
 * regions 0 and 1 (x- and x+) in host slots; the receive slots start at zero and must hold the
 * neighbours' NaN in both slots afterwards. */
static void test_proxy_first_contact_reaches_both_slots(void **state)
{
  (void)state;
  if (size < 2) {
    if (rank == 0) print_message("1 rank: no neighbour, no proxy\n");
    return;
  }
  int nbr[FD_REGIONS], count[FD_REGIONS] = {0};
  size_t offset[FD_REGIONS] = {0};
  for (int r = 0; r < FD_REGIONS; r++) nbr[r] = MPI_PROC_NULL;
  nbr[0] = (rank - 1 + size) % size, nbr[1] = (rank + 1) % size;
  count[0] = count[1] = 6, offset[1] = 6; /* region 0 lands in the neighbour's region 1 */
  const size_t total = 12;
  fd_proxy p;
  assert_int_equal(proxy_create(&p, MPI_COMM_WORLD, 3u, nbr, count, offset, total, 1, NULL), FD_OK);
  for (int q = 0; q < 2; q++) memset(p.recv_slot[q], 0, total * sizeof(real_t));
  assert_int_equal(proxy_first_contact(&p), FD_OK);
  size_t nan = 0;
  for (int q = 0; q < 2; q++)
    for (size_t e = 0; e < total; e++) nan += p.recv_slot[q][e] != p.recv_slot[q][e];
  assert_int_equal(nan, 2 * total);
  assert_false(p.active);
  assert_int_equal(proxy_destroy(&p), FD_OK);
}

/* Snapshots every `every` steps of op over `steps` steps, the distributed run with
 * --halo-width S --fuse T (the single-rank one step by step): see below. */
static int snap_graphs; /* the distributed run of snapshots_match replays graphs (--graphs on) */

static int snapshots_match(fd_op op, int every, int steps, int S, int T)
{
  const long long N[3] = {21, 19, 17};
  const int count = steps / every;
  char sdir[2][280], dump[2][290];
  fd_options o;
  fd_result r;
  for (int run = 0; run < 2; run++) { /* 0: alone on rank 0; 1: every rank */
    snprintf(sdir[run], sizeof sdir[run], "%s/snap%d", dir, run);
    snprintf(dump[run], sizeof dump[run], "%s/snapdump%d.raw", dir, run);
    if (rank == 0) mkdir(sdir[run], 0777);
    if (run == 0 && rank != 0) continue;
    base_options(&o, op, N, dump[run]);
    o.iters = steps - o.warmup;
    o.snapshot_every = every;
    if (run == 1) {
      o.halo_width = S;
      o.fuse = T;
      if (snap_graphs) o.graphs = FD_GRAPHS_ON;
    }
    snprintf(o.snapshot_dir, sizeof o.snapshot_dir, "%s", sdir[run]);
    int rc = fd_run(&o, run == 0 ? MPI_COMM_SELF : MPI_COMM_WORLD, &dev, &node, &r);
    if (rc != FD_OK) fail_msg("%s snapshot run: rc %d (%s)", run ? "distributed" : "single-rank", rc, fd_error_message());
    if (r.snapshots != count) fail_msg("%lld snapshots written, expected %d", r.snapshots, count);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int ok = 1;
  if (rank == 0) {
    const long expect = (long)(N[0] * N[1] * N[2]) * (long)sizeof(real_t);
    char path[2][640];
    for (int st = every; st <= steps; st += every) {
      long len[2] = {0, 0};
      char *data[2];
      for (int run = 0; run < 2; run++) {
        snprintf(path[run], sizeof path[run], "%s/snap_%06d.raw", sdir[run], st);
        data[run] = slurp(path[run], &len[run]);
      }
      int same = data[0] && data[1] && len[0] == expect && len[1] == expect && memcmp(data[0], data[1], (size_t)expect) == 0;
      if (!same) print_message("snapshot of step %d differs from the single-rank run's (sizes %ld, %ld)\n", st, len[0], len[1]);
      ok &= same;
      if (st + every > steps) {
        long ld = 0;
        char *d = slurp(dump[1], &ld);
        int eq = d && data[1] && ld == expect && memcmp(d, data[1], (size_t)expect) == 0;
        if (!eq) print_message("last snapshot differs from the dump of the same step\n");
        ok &= eq;
        free(d);
      }
      for (int run = 0; run < 2; run++) free(data[run]);
    }
    for (int run = 0; run < 2; run++) { /* no temporary file (NAME.PID.tmp) left behind */
      DIR *dd = opendir(sdir[run]);
      for (struct dirent *e; dd && (e = readdir(dd));) {
        const size_t len = strlen(e->d_name);
        if (len >= 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
          print_message("%s/%s left behind\n", sdir[run], e->d_name);
          ok = 0;
        }
      }
      if (dd) closedir(dd);
    }
    long lx = 0;
    snprintf(path[0], sizeof path[0], "%s/snapshots.xmf", sdir[1]);
    char *x = slurp(path[0], &lx);
    if (x && lx >= 0) x[lx] = '\0'; /* slurp leaves room for the terminator */
    int listed = 0;
    for (char *p = x; p && (p = strstr(p, ">snap_")); p++) listed++;
    if (!x || listed != count || !strstr(x, "Dimensions=\"17 19 21\"")) {
      print_message("snapshots.xmf lists %d snapshots (expected %d) or has the wrong dimensions\n", listed, count);
      ok = 0;
    }
    free(x);
    /* clean up */
    for (int run = 0; run < 2; run++) {
      for (int st = every; st <= steps; st += every) {
        snprintf(path[0], sizeof path[0], "%s/snap_%06d.raw", sdir[run], st);
        unlink(path[0]);
      }
      snprintf(path[0], sizeof path[0], "%s/snapshots.xmf", sdir[run]);
      unlink(path[0]);
      rmdir(sdir[run]);
      unlink(dump[run]);
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* Snapshots of a wave run, one every step, and of a heat run with --halo-width 2 --fuse 2,
 * one every 2 steps, on all ranks (--dump at the end) and alone on rank 0 step by step: every
 * snapshot file of the distributed run equals the single-rank run's byte for byte, the last
 * equals the dump of the same step, no .tmp is left, and snapshots.xmf names each. */
static void test_snapshots_read_back_equal_the_field(void **state)
{
  (void)state;
  assert_true(snapshots_match(FD_OP_WAVE, 1, 5, 1, 1));
  assert_true(snapshots_match(FD_OP_HEAT, 2, 8, 2, 2));
  /* with graphs: a snapshot holding a buffer changes the rotation, so other buffers are
   * captured (and chains stop): the same snapshots and dump */
  snap_graphs = 1;
  assert_true(snapshots_match(FD_OP_WAVE, 2, 40, 1, 1));
  assert_true(snapshots_match(FD_OP_HEAT, 4, 40, 2, 2));
  snap_graphs = 0;
}

/* --thread-single: MPI below MPI_THREAD_FUNNELED refuses snapshots, agreed, nothing written. */
static void test_snapshots_need_mpi_thread_funneled(void **state)
{
  (void)state;
  int provided = MPI_THREAD_MULTIPLE;
  MPI_Query_thread(&provided);
  if (provided >= MPI_THREAD_FUNNELED) {
    print_message("MPI_Init gave thread level %d here: nothing to refuse\n", provided);
    mr_skip();
  }
  const long long N[3] = {21, 19, 17};
  char sdir[280];
  snprintf(sdir, sizeof sdir, "%s/refused", dir);
  if (rank == 0) mkdir(sdir, 0777);
  MPI_Barrier(MPI_COMM_WORLD);
  fd_options o;
  fd_result r;
  base_options(&o, FD_OP_HEAT, N, "");
  o.snapshot_every = 1;
  snprintf(o.snapshot_dir, sizeof o.snapshot_dir, "%s", sdir);
  int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
  int ok = rc == FD_ERR_USAGE && strstr(fd_error_message(), "MPI_THREAD_FUNNELED") != NULL;
  if (!ok) print_message("rank %d: rc %d, message '%s'\n", rank, rc, fd_error_message());
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) {
    if (rmdir(sdir) != 0) { /* not empty: something was written */
      print_message("'%s' is not empty after the refused run\n", sdir);
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  assert_true(ok);
}

/* Every rank's neighbour across a face names it back across the opposite face, and blocks
 * meet without gap or overlap; so with nodes of k ranks (node ids as bind_node gives them, every
 * k dividing the rank count), whose ranks then form blocks of the grid (decomp.h's node-aware
 * order), world rank 0 staying Cartesian rank 0. */
static void test_neighbours_are_mutual(void **state)
{
  (void)state;
  long long N[3] = {37, 23, 19};
  int grids[4][3];
  int ngrids = process_grids(grids, 4);
  for (int k = 1; k <= size; k++) {
    if (size % k) continue;
    for (int g = 0; g < ngrids; g++) {
      if (decomp_check(N, grids[g]) != FD_OK) continue;
      fd_decomp d;
      assert_int_equal(decomp_create(MPI_COMM_WORLD, N, grids[g], rank / k * k, &d), FD_OK);
      assert_int_equal(d.nodes.count, size / k);
      assert_int_equal(d.nodes.index, rank / k);
      assert_int_equal(d.nodes.local, rank % k);
      if (rank == 0) assert_int_equal(d.rank, 0);
      if (d.nodes.mode == DECOMP_NODES_BLOCKS) { /* this rank's place in its node's block */
        int c[3];
        decomp_node_coords(grids[g], d.nodes.block, rank / k, rank % k, c);
        for (int q = 0; q < 3; q++) assert_int_equal(d.coords[q], c[q]);
      } else {
        assert_int_equal(d.rank, rank);
        assert_true(k == 1 || k == size);
      }
      int mine[6 + 6];
      for (int f = 0; f < 6; f++) mine[f] = d.nbr[f];
      for (int q = 0; q < 3; q++) mine[6 + 2 * q] = (int)d.start[q], mine[6 + 2 * q + 1] = d.n[q];
      int *all = malloc(sizeof mine * (size_t)size);
      MPI_Allgather(mine, 12, MPI_INT, all, 12, MPI_INT, d.cart);
      for (int f = 0; f < 6; f++) {
        int nb = d.nbr[f], dim = f / 2;
        int at_edge = (f % 2 == 0) ? d.coords[dim] == 0 : d.coords[dim] == grids[g][dim] - 1;
        assert_int_equal(nb == MPI_PROC_NULL, at_edge);
        if (nb == MPI_PROC_NULL) continue;
        assert_int_equal(all[12 * nb + (f ^ 1)], d.rank);
        long long nb_start = all[12 * nb + 6 + 2 * dim], nb_n = all[12 * nb + 6 + 2 * dim + 1];
        if (f % 2) assert_int_equal(nb_start, d.start[dim] + d.n[dim]);
        else assert_int_equal(nb_start + nb_n, d.start[dim]);
      }
      free(all);
      decomp_destroy(&d);
    }
  }
}

/* bind_device_peers over the job: ranks naming one bus id on one node share a device and take
 * turns in rank order (even ranks on one GPU, odd ranks on another); on nodes of their own, or
 * without a bus id, nobody shares. */
static void test_ranks_naming_one_device_take_turns(void **state)
{
  (void)state;
  be_info d;
  memset(&d, 0, sizeof d);
  d.is_accelerator = 1;
  snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "0000:%s:00.0", rank % 2 ? "c6" : "c1");
  bind_peers p;
  assert_int_equal(bind_device_peers(MPI_COMM_WORLD, 7, &d, &p), FD_OK);
  assert_int_equal(p.sharers, rank % 2 ? size / 2 : (size + 1) / 2);
  assert_int_equal(p.turn, rank / 2);
  assert_int_equal(p.most, (size + 1) / 2);
  assert_int_equal(bind_device_peers(MPI_COMM_WORLD, rank, &d, &p), FD_OK);
  assert_true(p.sharers == 1 && p.turn == 0 && p.most == 1);
  d.is_accelerator = 0;
  assert_int_equal(bind_device_peers(MPI_COMM_WORLD, 7, &d, &p), FD_OK);
  assert_true(p.sharers == 1 && p.turn == 0 && p.most == 1);
}

/* --graphs on: each pass's device work captured once per buffer assignment and replayed (on
 * the host backend, recorded calls) gives the same bytes as the eager run of the same job,
 * for every operator, --halo-width 1..3 with and without --fuse, overlap on and off; long
 * enough that graphs are replayed through every rotation of the buffers and the sampled
 * windows (eager, every FD_SAMPLE_EVERY-th) come around more than once. The report says the
 * graphs ran and were captured. */
static void test_graphs_replay_the_eager_run(void **state)
{
  (void)state;
  const long long N[3] = {22, 19, 17};
  const int ops[] = {FD_OP_LAPLACIAN, FD_OP_HEAT, FD_OP_JACOBI, FD_OP_WAVE, FD_OP_COUNT};
  char eager[300], graph[300];
  snprintf(eager, sizeof eager, "%s/eager.raw", dir);
  snprintf(graph, sizeof graph, "%s/graph.raw", dir);
  int cases = 0;
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
    for (int S = 1; S <= 3; S++) {
      const int op = ops[oi], fusable = op == FD_OP_HEAT || op == FD_OP_JACOBI;
      if (S > 1 && op == FD_OP_LAPLACIAN) continue;
      int fits = 1, dims[3] = {0, 0, 0};
      MPI_Dims_create(size, 3, dims);
      for (int d = 0; d < 3; d++) fits &= dims[d] == 1 || S <= N[d] / dims[d];
      if (!fits) continue;
      for (int T = 1; T <= (fusable ? S : 1); T++) {
        if (size > 1 && S % T) continue;
        fd_options o;
        fd_result r;
        for (int g = 0; g < 2; g++) {
          deep_options(&o, op, N, g ? graph : eager);
          o.warmup = 2 * S;
          o.iters = 37 * S;
          o.halo_width = S;
          o.fuse = T;
          o.overlap = cases % 2 == 0;
          o.graphs = g ? FD_GRAPHS_ON : FD_GRAPHS_OFF;
          int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
          if (rc != FD_OK) fail_msg("%d ranks, S %d, T %d, graphs %d: rc %d (%s)", size, S, T, g, rc, fd_error_message());
          assert_int_equal(r.graphs_on, g);
          if (g) {
            assert_int_equal(r.graphs_failed, 0);
            assert_true(r.graph_captures >= 0);
          }
        }
        int same = 0;
        if (rank == 0) {
          long la = 0, lb = 0;
          char *a = slurp(eager, &la), *b = slurp(graph, &lb);
          same = a && b && la == lb && la == (long)(N[0] * N[1] * N[2]) * (long)sizeof(real_t) && memcmp(a, b, (size_t)la) == 0;
          free(a);
          free(b);
        }
        MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!same)
          fail_msg("%s%s on %d ranks, --halo-width %d --fuse %d%s: --graphs on differs from --graphs off",
                   fd_op_name(o.op), op == FD_OP_COUNT ? " (two layers)" : "", size, S, T,
                   o.overlap ? "" : " --no-overlap");
        cases++;
      }
    }
  wave_layers = 1;
  unlink(eager);
  unlink(graph);
  if (rank == 0) print_message("%d ranks: %d cases with --graphs on bitwise equal to --graphs off\n", size, cases);
  assert_true(cases >= 8);
}

int main(int argc, char **argv)
{
  const int thread_single = argc > 1 && strcmp(argv[1], "--thread-single") == 0;
  int provided = MPI_THREAD_SINGLE; /* snapshots: a writer thread without MPI calls */
  if (thread_single) MPI_Init(&argc, &argv);
  else MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  mr_init();
  /* one report: every rank asserts the same broadcast verdicts; every rank's stderr stays, for
   * the message of a check that fails on it alone (mr_test.h) */
  if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
  int shared;
  if (bind_node(MPI_COMM_WORLD, 0, &node) != FD_OK || bind_device(MPI_COMM_WORLD, &node, NULL, 0, &dev, &shared) != FD_OK) {
    fprintf(stderr, "%s\n", fd_error_message());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank == 0) {
    snprintf(dir, sizeof dir, "/tmp/fdmini-mr-XXXXXX");
    if (!mkdtemp(dir)) MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  const struct CMUnitTest tests[] = {
    mr_unit_test(test_neighbours_are_mutual),
    mr_unit_test(test_ranks_naming_one_device_take_turns),
    mr_unit_test(test_multirank_matches_single_rank),
    mr_unit_test(test_emulated_nodes_match_single_rank),
    mr_unit_test(test_proxy_pass_matches_single_rank),
    mr_unit_test(test_deep_halos_and_fused_passes_match_single_rank),
    mr_unit_test(test_exchange_fault_fails_every_operator),
    mr_unit_test(test_halo_faults_fail_every_operator),
    mr_unit_test(test_halo_buffers_start_nan),
    mr_unit_test(test_proxy_first_contact_reaches_both_slots),
    mr_unit_test(test_snapshots_read_back_equal_the_field),
    mr_unit_test(test_graphs_replay_the_eager_run),
  };
  const struct CMUnitTest single[] = {
    mr_unit_test(test_snapshots_need_mpi_thread_funneled),
  };
  int failed = thread_single ? cmocka_run_group_tests(single, NULL, NULL) : cmocka_run_group_tests(tests, NULL, NULL);
  failed = thread_single ? mr_exit_status(failed, 1) : mr_exit_status(failed, (int)(sizeof tests / sizeof tests[0]));
  if (rank == 0) {
    char p[300];
    snprintf(p, sizeof p, "%s/ref.raw", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/dist.raw", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/deep.raw", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/deepref.raw", dir);
    unlink(p);
    rmdir(dir);
  }
  be_finalize();
  MPI_Finalize();
  return failed;
}
