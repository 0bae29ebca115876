/* fsize_after_init.c - a test shim, preloaded into fdmini (LD_PRELOAD): applies a file-size
 * limit (`ulimit -f`, TEST_FSIZE_KIB_AFTER_INIT KiB) right after MPI_Init or MPI_Init_thread
 * returns, so that the limit meets fdmini's own writes (dump, snapshots, JSON, checkpoints) and
 * not the MPI library's start-up: Open MPI's shared-memory transport and MPICH's UCX create
 * files larger than a small limit inside MPI_Init (MPICH then dies there). It wraps the calls
 * through the MPI standard's profiling interface, so it needs no mpi.h and resolves PMPI_* in
 * whichever MPI library fdmini loads. Built by fsize_shim in tests/lib/checks.sh. */
#include <stdlib.h>
#include <sys/resource.h>

int PMPI_Init(int *argc, char ***argv);
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided);

static void limit(void)
{
  const char *kib = getenv("TEST_FSIZE_KIB_AFTER_INIT");
  struct rlimit r;
  if (!kib || getrlimit(RLIMIT_FSIZE, &r) != 0) return;
  r.rlim_cur = (rlim_t)strtoull(kib, NULL, 10) * 1024;
  if (setrlimit(RLIMIT_FSIZE, &r) != 0) abort();
}

int MPI_Init(int *argc, char ***argv)
{
  int rc = PMPI_Init(argc, argv);
  limit();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  limit();
  return rc;
}
