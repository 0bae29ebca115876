/* mr_test.h - the cmocka harness of the multi-rank tests (run under mpiexec -n P): a case that
 * fails on one rank fails on every rank at once, and never waits for ctest's timeout.
 *
 * Register each case with mr_unit_test(f) instead of cmocka_unit_test(f); call mr_init() after
 * MPI_Init and return mr_exit_status(failed, cases) from main (before MPI_Finalize). After each
 * case the ranks agree, before the next case starts, whether it failed anywhere: a reduction
 * on a communicator of the harness's own (no collective of a case can match it), which each
 * rank enters from the case's teardown, whether its body returned, failed or skipped.
 *   - Every rank arrives (the case passed or failed on every rank, or failed on some after its
 *     last collective): a rank that did not fail the case itself fails it in its teardown,
 *     naming the lowest rank that failed it, and the next case starts on every rank.
 *   - A rank whose case failed waits at most MR_GRACE_S seconds for the others: where they do
 *     not come (they wait in a collective of the case that the failed rank left), it ends the
 *     job with MPI_Abort (exit 1 on every rank at once), with a line naming itself and the case.
 * A failed assertion prints its own message on the rank that made it (cmocka, on stderr: keep
 * every rank's stderr).
 * Test only: FDMINI_TEST_FAIL_RANK=R,start|end plants a failure on rank R alone in the first
 * case, at its start (the other ranks then wait in its collectives: the abort) or at its end
 * (after its last collective: every rank fails the case and the rest runs);
 * tests/mpi/fail_fast_test.sh runs both. */
#ifndef FDMINI_MR_TEST_H
#define FDMINI_MR_TEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* How long a rank whose case failed waits for the others to agree before it ends the job. */
#define MR_GRACE_S 10.0

/* One case: the body cmocka runs through mr_run. */
typedef struct {
  CMUnitTestFunction body;
  const char *name;
} mr_case;

enum { MR_RUNNING, MR_RETURNED, MR_SKIPPED };

/* The harness's state (one per test program: every function here is static). */
static struct {
  MPI_Comm comm;   /* a duplicate of MPI_COMM_WORLD: the agreements after each case */
  int rank, size;
  int phase;       /* MR_RUNNING from the start of a case's body until it returns */
  const char *name; /* the case running */
  int plant_rank;  /* FDMINI_TEST_FAIL_RANK: the rank that fails the first case, -1: none */
  int plant_end;   /* 1: at the end of that case, 0: at its start */
  int cases_run;
} mr;

/* Marks a case skipped on this rank (cmocka's skip(); the same verdict on every rank). */
#define mr_skip()                                                                                  \
  do {                                                                                             \
    mr.phase = MR_SKIPPED;                                                                         \
    test_skip();                                                                                   \
  } while (0)

/* The harness's communicator, rank and size, and the planted failure. Collective over
 * MPI_COMM_WORLD; after MPI_Init. */
static inline void mr_init(void)
{
  MPI_Comm_dup(MPI_COMM_WORLD, &mr.comm);
  MPI_Comm_rank(mr.comm, &mr.rank);
  MPI_Comm_size(mr.comm, &mr.size);
  mr.plant_rank = -1;
  const char *p = getenv("FDMINI_TEST_FAIL_RANK");
  if (p && *p) {
    char where[8] = "";
    if (sscanf(p, "%d,%7s", &mr.plant_rank, where) != 2 || (strcmp(where, "start") && strcmp(where, "end"))) {
      fprintf(stderr, "FDMINI_TEST_FAIL_RANK='%s': expected R,start or R,end\n", p);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mr.plant_end = strcmp(where, "end") == 0;
  }
}

/* The test function of every case: the body of the case in *state (mr_unit_test), with the
 * planted failure around it. Not Collective itself (the body may be). */
static inline void mr_run(void **state)
{
  const mr_case *c = *state;
  mr.name = c->name;
  const int plant = mr.rank == mr.plant_rank && mr.cases_run++ == 0;
  mr.phase = MR_RUNNING;
  if (plant && !mr.plant_end) fail_msg("rank %d: planted failure at the start of the case", mr.rank);
  c->body(state);
  if (plant && mr.plant_end) fail_msg("rank %d: planted failure at the end of the case", mr.rank);
  mr.phase = MR_RETURNED;
}

/* The agreement after a case (file comment). Collective over mr.comm, or MPI_Abort. */
static inline int mr_teardown(void **state)
{
  (void)state;
  const int failed = mr.phase == MR_RUNNING; /* the body left by a failed check */
  int mine[2] = {failed, failed ? mr.size - mr.rank : 0}, all[2];
  MPI_Request req;
  MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, mr.comm, &req);
  int done = 0;
  const double t0 = MPI_Wtime();
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    /* a rank that did not fail waits as long as it takes; one that failed, the grace */
    if (!done && failed && MPI_Wtime() - t0 > MR_GRACE_S) {
      fprintf(stderr, "rank %d: %s failed here and the other ranks did not agree within %.0f s (they wait in a "
              "collective this rank left): ending every rank (MPI_Abort)\n", mr.rank, mr.name, MR_GRACE_S);
      fflush(stderr);
      /* a second for the launcher to pass the line on (Hydra's proxies drop what they have
       * not forwarded when the job is aborted) */
      for (const double t1 = MPI_Wtime(); MPI_Wtime() - t1 < 1.0;) continue;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (all[0] && !failed) {
    print_error("rank %d: %s failed on rank %d\n", mr.rank, mr.name, mr.size - all[1]);
    return -1; /* cmocka: this rank fails the case too */
  }
  return 0;
}

/* A case of a multi-rank test: body f run by mr_run, the agreement after it. */
#define mr_unit_test(f) {#f, mr_run, NULL, mr_teardown, &(mr_case){f, #f}}

/* The exit status of a test program: cmocka's failures, or 77 (ctest: skipped) where every
 * case skipped. The same on every rank where the cases agreed. */
static inline int mr_exit_status(int failed, int cases) { return test_exit_status(failed, cases); }

#endif
