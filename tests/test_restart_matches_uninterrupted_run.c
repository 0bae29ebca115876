/* test_restart_matches_uninterrupted_run.c - run under mpiexec -n P (P = 1..8): a run stopped
 * by a signal (--test-signal: a real SIGUSR1 or SIGTERM raised on one rank, agreed by the stop
 * poll), continued with --restart auto on another rank count (the first P-1 ranks; P = 1: the
 * same rank) where it is stopped again, and finished on all P ranks, gives a final field
 * byte-identical to the uninterrupted run's, and the same verification (errors, residuals,
 * energy), for every operator (the wave uniform and two-layer), with --halo-width 1..4 and
 * --fuse 1..4 changing between the segments, overlap on and off. The checkpoint directory
 * keeps the last two checkpoints and no temporary file. Also: output_is_checkpoint_name. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <mpi.h>

#include "bind.h"
#include "checkpoint.h"
#include "decomp.h"
#include "fd_error.h"
#include "output.h"
#include "solver.h"
#include "mr_test.h"

static int rank, size;
static be_info dev;
static fd_node node;
static char dir[256];

/* One segment's configuration. */
typedef struct {
  int width, fuse, overlap;
} seg;

static const long long grid[3] = {23, 19, 17};
enum { WARMUP = 3, ITERS = 117, EVERY = 12 };

/* g, or narrower where its blocks along a split dimension hold fewer than S points on `ranks`
 * ranks (S halved, T dividing it). */
static seg fit(const seg *g, int ranks)
{
  fd_options o;
  char *argv[] = {"test", NULL};
  fd_options_parse(1, argv, &o);
  o.have_global = 1;
  memcpy(o.global, grid, sizeof o.global);
  long long N[3];
  int P[3];
  seg f = *g;
  if (decomp_resolve_grid(&o, ranks, 0, N, P) != FD_OK) return f;
  for (int d = 0; d < 3; d++)
    while (P[d] > 1 && f.width > N[d] / P[d]) f.width /= 2;
  while (ranks > 1 && f.width % f.fuse) f.fuse--;
  return f;
}

static void options(fd_options *o, fd_op op, int layers, const seg *g, const char *dump, const char *ckdir)
{
  char *argv[] = {"test", NULL};
  fd_options_parse(1, argv, o);
  o->op = op;
  o->have_global = 1;
  memcpy(o->global, grid, sizeof o->global);
  o->iters = ITERS;
  o->warmup = WARMUP;
  o->progress = 0;
  o->halo_width = g->width;
  o->fuse = g->fuse;
  o->overlap = g->overlap;
  snprintf(o->dump, sizeof o->dump, "%s", dump);
  if (ckdir) {
    snprintf(o->checkpoint_dir, sizeof o->checkpoint_dir, "%s", ckdir);
    o->checkpoint_every = EVERY;
    o->restart = FD_RESTART_AUTO;
  }
  if (op == FD_OP_WAVE && layers == 2) {
    o->nvel = 2;
    o->velocity[0] = 1.0;
    o->velocity[1] = 2.5;
  }
}

/* Whole file (rank 0). */
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

/* The checkpoint directory holds exactly the last two checkpoints, no temporary file (rank 0). */
static int dir_ok(const char *d, long long *newest)
{
  DIR *dd = opendir(d);
  if (!dd) return 0;
  int finals = 0, others = 0;
  *newest = 0;
  for (struct dirent *e; (e = readdir(dd));) {
    long long step;
    int tmp;
    if (e->d_name[0] == '.') continue;
    if (output_is_checkpoint_name(e->d_name, &step, &tmp) && !tmp) {
      finals++;
      if (step > *newest) *newest = step;
    } else {
      others++;
    }
  }
  closedir(dd);
  return finals >= 1 && finals <= 2 && others == 0;
}

/* Runs op with the segments a (all ranks, stopped by `sig` on the last rank), b (the first
 * size-1 ranks, or all with one rank, stopped again) and c (all ranks, to the end); 1 when the
 * final dump equals ref's bytes and the verification equals vref's (every rank). */
static int resumed_matches(fd_op op, int layers, const seg *a, const seg *b, const seg *c, int sig, const char *ref,
                           const fd_verify *vref)
{
  char ck[300], out[300];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(out, sizeof out, "%s/out.raw", dir);
  if (rank == 0) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", ck, out);
    if (system(cmd) != 0) fail_msg("cannot clear %s", ck);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  fd_options o;
  fd_result r;
  int ok = 1;
  long long stop_a = 0, stop_b = 0, newest = 0;
  /* a: all ranks, a stop signal on the last rank at step 10 */
  const int nb = size > 1 ? size - 1 : 1;
  const seg fa = fit(a, size), fb = fit(b, nb), fc = fit(c, size);
  a = &fa;
  b = &fb;
  c = &fc;
  options(&o, op, layers, a, out, ck);
  o.test_signal = (fd_test_event){size - 1, 10, sig};
  int rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
  if (rc != FD_STOPPED) {
    print_message("segment a: rc %d (%s), expected FD_STOPPED\n", rc, fd_error_message());
    ok = 0;
  }
  stop_a = r.stop_step;
  /* b: fewer ranks (a new decomposition), stopped again a little later */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rank < nb ? 0 : MPI_UNDEFINED, rank, &sub);
  if (sub != MPI_COMM_NULL) {
    options(&o, op, layers, b, out, ck);
    o.test_signal = (fd_test_event){0, stop_a + 5, sig == SIGTERM ? SIGUSR1 : SIGTERM};
    rc = fd_run(&o, sub, &dev, &node, &r);
    if (rc != FD_STOPPED || !r.restarted || r.restart_step != stop_a) {
      print_message("segment b: rc %d (%s), restarted %d from step %lld, expected FD_STOPPED from %lld\n", rc,
                    fd_error_message(), r.restarted, r.restart_step, stop_a);
      ok = 0;
    }
    stop_b = r.stop_step;
    MPI_Comm_free(&sub);
  }
  MPI_Bcast(&stop_b, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  /* c: all ranks to the end */
  options(&o, op, layers, c, out, ck);
  rc = fd_run(&o, MPI_COMM_WORLD, &dev, &node, &r);
  if (rc != FD_OK || !r.restarted || r.restart_step != stop_b || r.total_steps != WARMUP + ITERS) {
    print_message("segment c: rc %d (%s), restarted %d from %lld (expected %lld), %lld steps\n", rc, fd_error_message(),
                  r.restarted, r.restart_step, stop_b, r.total_steps);
    ok = 0;
  }
  /* the same verification as the uninterrupted run: every number */
  const fd_verify *v = &r.verify;
  int same_v = v->verdict == vref->verdict && v->error_max == vref->error_max && v->error_rms == vref->error_rms &&
               v->residual0 == vref->residual0 && v->residual == vref->residual && v->nchecks == vref->nchecks;
  for (int q = 0; q < v->nchecks && same_v; q++)
    same_v = v->check[q].applies == vref->check[q].applies && v->check[q].error == vref->check[q].error;
  if (!same_v || v->verdict != FD_VERDICT_PASS) {
    print_message("verification differs: %s / %s\n", v->detail, vref->detail);
    ok = 0;
  }
  if (rank == 0) {
    long la = 0, lb = 0;
    char *x = slurp(ref, &la), *y = slurp(out, &lb);
    if (!x || !y || la != lb || memcmp(x, y, (size_t)la) != 0) {
      print_message("the final field differs from the uninterrupted run's (%ld / %ld bytes)\n", la, lb);
      ok = 0;
    }
    free(x);
    free(y);
    if (!dir_ok(ck, &newest) || newest != (WARMUP + ITERS) / EVERY * EVERY) {
      print_message("%s: not the last two checkpoints (newest %lld) without temporary files\n", ck, newest);
      ok = 0;
    }
  }
  /* a failure seen on any rank fails the case on every rank */
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!ok)
    print_message("%s%s: a S=%d T=%d, b S=%d T=%d, c S=%d T=%d; stopped after %lld and %lld\n", fd_op_name(op),
                  layers == 2 ? " (two layers)" : "", a->width, a->fuse, b->width, b->fuse, c->width, c->fuse, stop_a,
                  stop_b);
  return ok;
}

static void test_restart_matches_uninterrupted_run(void **state)
{
  (void)state;
  int cases = 0, failed = 0;
  for (int op = 0; op <= FD_OP_COUNT; op++) { /* FD_OP_COUNT: the two-layer wave */
    const fd_op o = op == FD_OP_COUNT ? FD_OP_WAVE : (fd_op)op;
    const int layers = op == FD_OP_COUNT ? 2 : 1;
    /* the uninterrupted run, one step per pass, one ghost layer */
    char ref[300];
    snprintf(ref, sizeof ref, "%s/ref-%d.raw", dir, op);
    const seg plain = {1, 1, 1};
    fd_options opt;
    fd_result rr;
    options(&opt, o, layers, &plain, ref, NULL);
    int rc = fd_run(&opt, MPI_COMM_WORLD, &dev, &node, &rr);
    if (rc != FD_OK) fail_msg("uninterrupted %s run: rc %d (%s)", fd_op_name(o), rc, fd_error_message());
    /* segments: deep halos and fused passes change from one segment to the next (T divides S
     * on several ranks; the wave and laplacian step singly, laplacian has one layer) */
    static const seg heat[][3] = {
      {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
      {{2, 2, 1}, {4, 4, 0}, {3, 3, 1}},
      {{4, 2, 0}, {1, 1, 1}, {2, 1, 1}},
    };
    static const seg wave[][3] = {
      {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
      {{3, 1, 1}, {2, 1, 0}, {4, 1, 1}},
    };
    const seg(*cfg)[3] = o == FD_OP_HEAT || o == FD_OP_JACOBI ? heat : wave;
    const int ncfg = o == FD_OP_HEAT || o == FD_OP_JACOBI ? 3 : (o == FD_OP_WAVE ? 2 : 1);
    for (int k = 0; k < ncfg; k++) {
      cases++;
      const int sig = (cases % 2) ? SIGUSR1 : SIGTERM;
      if (!resumed_matches(o, layers, &cfg[k][0], &cfg[k][1], &cfg[k][2], sig, ref, &rr.verify)) failed++;
    }
  }
  if (rank == 0) print_message("%d of %d stop-and-restart cases equal the uninterrupted run on %d ranks\n",
                               cases - failed, cases, size);
  if (failed) fail_msg("%d cases differ", failed);
}

static void test_checkpoint_file_names(void **state)
{
  (void)state;
  long long step = -1;
  int tmp = -1;
  assert_true(output_is_checkpoint_name("ckpt_0000000120.fdmini", &step, &tmp));
  assert_true(step == 120 && tmp == 0);
  assert_true(output_is_checkpoint_name("ckpt_7.fdmini.4242.tmp", &step, &tmp));
  assert_true(step == 7 && tmp == 1);
  const char *no[] = {"ckpt_.fdmini", "ckpt_12.fdmin", "ckpt_12.fdmini.tmp", "ckpt_12.fdmini.x.tmp", "ckpt_12.fdmini.1",
                      "ckpt_12.fdminix", "snap_000012.raw", "ckpt_99999999999999999999.fdmini", "xckpt_1.fdmini",
                      /* final names other than output_checkpoint_path's for their step */
                      "ckpt_12.fdmini", "ckpt_000000012.fdmini", "ckpt_00000000012.fdmini"};
  for (size_t q = 0; q < sizeof no / sizeof no[0]; q++)
    if (output_is_checkpoint_name(no[q], NULL, NULL)) fail_msg("'%s' taken for a checkpoint name", no[q]);
  char p[64];
  output_checkpoint_path(p, sizeof p, "d", 42);
  assert_string_equal(p, "d/ckpt_0000000042.fdmini");
  assert_true(output_is_checkpoint_name("ckpt_12345678901.fdmini", &step, &tmp));
  assert_true(step == 12345678901LL && tmp == 0);
  output_checkpoint_path(p, sizeof p, "d", step);
  assert_string_equal(p, "d/ckpt_12345678901.fdmini");
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mr_init();
  if (bind_node(MPI_COMM_WORLD, 0, &node) != FD_OK || bind_device(MPI_COMM_WORLD, &node, NULL, 0, &dev, &(int){0}) != FD_OK) {
    fprintf(stderr, "cannot bind a device: %s\n", fd_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    snprintf(dir, sizeof dir, "/tmp/fdmini-restart-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  const struct CMUnitTest tests[] = {
    mr_unit_test(test_checkpoint_file_names),
    mr_unit_test(test_restart_matches_uninterrupted_run),
  };
  int failed = dir[0] ? cmocka_run_group_tests(tests, NULL, NULL) : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && dir[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) failed = 1;
  }
  be_finalize();
  MPI_Finalize();
  return failed ? 1 : 0;
}
