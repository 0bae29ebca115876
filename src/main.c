/* main.c - fdmini: parse options, bind a device, run, report. Exit status 0 (verified or
 * --no-check), 1 (verification failed), 2 (bad input), 3 (runtime failure, via MPI_Abort),
 * 4 (a snapshot could not be written: agreed, reported once).
 * Every error after MPI_Init ends on every rank: agreed errors collectively, rank-local ones
 * through MPI_Abort. Before MPI_Init only site_check_gtl can refuse (exit 2 on every rank, one
 * line from the launcher's rank 0). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "fd_error.h"
#include "bind.h"
#include "options.h"
#include "provenance.h"
#include "report.h"
#include "site.h"
#include "solver.h"

/* Opens (rank 0) an output file before the run so that a bad path fails at once. */
static int open_output(MPI_Comm comm, int rank, const char *opt, const char *path, FILE **fp)
{
  int err = FD_OK;
  *fp = NULL;
  if (path[0] && rank == 0 && !(*fp = fopen(path, "w")))
    err = fd_set_error(FD_ERR_USAGE, "%s: cannot write '%s'", opt, path);
  return fd_agree(comm, err);
}

/* --snapshot-dir: rank 0 creates the directory if missing and proves it writable with a probe
 * file, before the run, so that a bad directory fails at once on every rank. Collective. */
static int check_snapshot_dir(MPI_Comm comm, int rank, const char *dir)
{
  int err = FD_OK;
  if (dir[0] && rank == 0) {
    char probe[FD_PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.fdmini-write-probe-%ld", dir, (long)getpid());
    FILE *fp = NULL;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      err = fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot create '%s': %s", dir, strerror(errno));
    else if (!(fp = fopen(probe, "w")))
      err = fd_set_error(FD_ERR_USAGE, "--snapshot-dir: cannot write into '%s': %s", dir, strerror(errno));
    if (fp) {
      fclose(fp);
      remove(probe);
    }
  }
  return fd_agree(comm, err);
}

static int finish(int code)
{
  be_finalize();
  MPI_Finalize();
  return code;
}

int main(int argc, char **argv)
{
  fd_provenance prov; /* what the run ran on: start time now, the rest after the device */
  prov_start(&prov);
  /* GPU-aware Cray MPICH without its GTL aborts every rank inside MPI_Init: refuse it first,
   * one line (launcher rank 0) and exit 2 on every rank */
  if (site_check_gtl(stderr) != FD_OK) return FD_ERR_USAGE;
  /* FUNNELED: the snapshot writer thread makes no MPI call (snapshot.h); snapshot_create
   * refuses to run snapshots where MPI provides less */
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int rank;
  MPI_Comm_rank(world, &rank);

  fd_options o;
  int rc = fd_agree(world, fd_options_parse(argc, argv, &o));
  FILE *json = NULL, *dump_probe = NULL;
  if (rc == FD_OK && o.help) {
    if (rank == 0) fd_options_usage(stdout);
    MPI_Finalize();
    return 0;
  }
  if (rc == FD_OK) rc = open_output(world, rank, "--json", o.json, &json);
  if (rc == FD_OK) rc = open_output(world, rank, "--dump", o.dump, &dump_probe);
  if (dump_probe) fclose(dump_probe);
  if (rc == FD_OK) rc = check_snapshot_dir(world, rank, o.snapshot_dir);
  if (rc != FD_OK) {
    if (rank == 0) fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    MPI_Finalize();
    return rc;
  }

  be_info dev;
  fd_result r;
  fd_node node;
  int shared = 0;
  rc = bind_node(world, &node);
  if (rc == FD_OK) rc = bind_device(world, &node, &dev, &shared);
  if (rc == FD_OK && shared && rank == 0)
    printf("fdmini: notice: more ranks than devices on a node; ranks share devices (%d visible)\n",
           dev.device_count);
  fd_binding *binding = NULL; /* rank 0: one record per rank */
  int nbinding = 0;
  if (rc == FD_OK) rc = fd_agree(world, prov_collect(&prov));
  if (rc == FD_OK) rc = bind_report(world, &node, &dev, o.bind_report, stdout, &binding, &nbinding);
  /* --halo-path ipc where each rank sees one GPU: refused with its reason before allocating */
  if (rc == FD_OK) rc = site_check_ipc(world, &node, &o, &dev);
  if (rc == FD_OK) rc = fd_run(&o, world, &dev, node.id, &r);

  /* agreed on every rank: bad input, I/O, or a runtime failure all ranks checked together
   * (fields that do not fit in memory): one line from rank 0, every rank exits with rc */
  if (rc == FD_ERR_USAGE || rc == FD_ERR_IO || (rc == FD_ERR_RUNTIME && fd_error_agreed())) {
    if (rank == 0) fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    if (json) fclose(json);
    bind_free(binding);
    return finish(rc);
  }
  if (rc == FD_ERR_RUNTIME) {
    fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    fflush(stderr);
    MPI_Abort(world, FD_ERR_RUNTIME);
    return FD_ERR_RUNTIME;
  }
  if (rank == 0) {
    report_print(stdout, &o, &dev, &r, &prov);
    fflush(stdout);
    if (json) {
      report_json(json, &o, &dev, &r, binding, nbinding, &prov);
      fclose(json);
    }
  }
  bind_free(binding);
  return finish(rc);
}
