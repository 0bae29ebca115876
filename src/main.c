/* main.c - fdmini: parse options, check the output files, bind a device, run, report, write
 * the outputs. Exit status 0 (verified, unverified or --no-check), 1 (verification failed),
 * 2 (bad input), 3 (runtime failure: agreed, or via MPI_Abort), 4 (an output file could not be
 * written: agreed, reported once; nothing incomplete under a final name), 5 (stopped by
 * SIGTERM or SIGUSR1 after writing a checkpoint, on every rank: continue with --restart).
 * Every error after MPI_Init ends on every rank: agreed errors collectively, rank-local ones
 * through MPI_Abort. Before MPI_Init only site_check_gtl can refuse, and right after it
 * site_check_launcher (each: exit 2 on every rank, one line from the launcher's rank 0). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "fd_error.h"
#include "bind.h"
#include "checkpoint.h"
#include "decomp.h"
#include "header.h"
#include "options.h"
#include "output.h"
#include "plan.h"
#include "provenance.h"
#include "report.h"
#include "site.h"
#include "solver.h"
#include "summary.h"

/* The JSON record of run r, rendered in memory and written by rank 0 to json->tmp (checked:
 * every byte, the close, the size). Not Collective. */
static int write_json(const fd_output *json, const fd_options *o, const be_info *dev,
                      const fd_result *r, const fd_binding *binding, int nbinding,
                      const fd_provenance *prov)
{
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return fd_set_error(FD_ERR_IO, "--json: out of memory");
  report_json(mem, o, dev, r, binding, nbinding, prov);
  int bad = ferror(mem) | (fclose(mem) != 0);
  int err = bad ? fd_set_error(FD_ERR_IO, "--json: out of memory") : output_write_file(json, text, len);
  free(text);
  return err;
}

/* The run's outputs (output.h) after the run: rc is the run's status, the same on every rank.
 * Only a run that succeeded (rc FD_OK) replaces files: rank 0 writes the JSON to its temporary
 * name, then, agreed, renames the dump's and the JSON's temporary files to their final names.
 * Any other outcome removes the temporary files and leaves existing files as they were.
 * Returns rc, or the agreed FD_ERR_IO of a failed write or rename. Collective. */
static int finish_outputs(MPI_Comm comm, int rank, int rc, const fd_output *json, const fd_output *dump,
                          const fd_options *o, const be_info *dev, const fd_result *r,
                          const fd_binding *binding, int nbinding, const fd_provenance *prov)
{
  if (rc == FD_OK) {
    int err = FD_OK;
    if (rank == 0 && json->opt[0]) err = write_json(json, o, dev, r, binding, nbinding, prov);
    rc = fd_agree(comm, err);
  }
  if (rc == FD_OK) {
    int err = FD_OK;
    const fd_output *both[2] = {dump, json};
    if (rank == 0) err = output_commit_all(both, 2);
    rc = fd_agree(comm, err);
  }
  if (rc != FD_OK && rank == 0) {
    output_discard(dump);
    output_discard(json);
  }
  return rc;
}

/* Rank 0, before the run: site_check_lustre for the dump's folder, the snapshot folder and the
 * checkpoint folder, with the size of one file (the global grid of real_t, times the levels of
 * a checkpoint). Not Collective. */
static void lustre_advice(const fd_options *o, MPI_Comm world, int accelerator)
{
  int ranks = 1;
  long long N[3];
  int P[3];
  MPI_Comm_size(world, &ranks);
  if (decomp_resolve_grid(o, ranks, accelerator, N, P) != FD_OK) return;
  unsigned long long bytes = (unsigned long long)N[0] * (unsigned long long)N[1] *
                             (unsigned long long)N[2] * sizeof(real_t);
  if (o->dump[0]) {
    char dir[FD_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->dump);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    site_check_lustre("--dump", dir, bytes, stdout);
  }
  if (o->snapshot_every > 0) site_check_lustre("--snapshot-dir", o->snapshot_dir, bytes, stdout);
  /* a checkpoint holds the levels of the scheme: the wave's two, heat's and jacobi's one */
  const unsigned long long levels = o->op == FD_OP_WAVE ? 2 : (o->op == FD_OP_LAPLACIAN ? 0 : 1);
  if (o->checkpoint_dir[0] && levels) site_check_lustre("--checkpoint-dir", o->checkpoint_dir, levels * bytes, stdout);
}

/* The nodes of the run as the decomposition will see them (node from bind_node over world):
 * their count and the ranks of the smallest and largest. Collective. */
static int node_sizes(MPI_Comm world, const fd_node *node, int *count, int *min, int *max)
{
  int size[2] = {-node->size, node->size};
  FD_MPI(MPI_Allreduce(MPI_IN_PLACE, size, 2, MPI_INT, MPI_MAX, world));
  *count = node->count;
  *min = -size[0];
  *max = size[1];
  return FD_OK;
}

/* --plan: the plan of the run of o (plan.h) printed by rank 0, nothing run and no device
 * touched. The ranks: --ranks, or the job's; ranks per node: --ranks-per-node, or inside a job
 * its own (the ranks of rank 0's node, or --test-node-ranks), or alone --test-node-ranks (the
 * planned ranks on one node, split into emulated nodes of K), else 1; alone, --ranks-per-node P
 * and --test-node-ranks K plan nodes of K, K dividing P. The backend is the build's: every one
 * but the host backend keeps its fields on a device (accelerator), which decides the default
 * grid and the halo's buffers as be_init would. Collective. */
static int plan_only(MPI_Comm world, int rank, const fd_options *o)
{
  int size;
  FD_MPI(MPI_Comm_size(world, &size));
  /* alone with --ranks, --test-node-ranks splits the planned nodes, not this process's */
  const int alone = o->plan_ranks && size == 1;
  fd_node node;
  FD_CALL(bind_node(world, alone ? 0 : o->test_node_ranks, &node));
  int count, min, max;
  FD_CALL(node_sizes(world, &node, &count, &min, &max));
  const int ranks = o->plan_ranks ? o->plan_ranks : size;
  const int K_emul = alone ? o->test_node_ranks : 0;
  if (K_emul) {
    const int P = o->plan_ranks_per_node && o->plan_ranks_per_node < ranks ? o->plan_ranks_per_node : ranks;
    const int last = ranks % P ? ranks % P : P;
    const int bad = P % K_emul ? P : last;
    if (bad % K_emul)
      return fd_set_error(FD_ERR_USAGE, "--test-node-ranks %d: a planned node holds %d rank%s, not a multiple of %d (K must "
                          "divide every node's rank count; alone, --plan puts the --ranks on one node, or in nodes of "
                          "--ranks-per-node)", K_emul, bad, bad == 1 ? "" : "s", K_emul);
    count = ranks / K_emul;
    min = max = K_emul;
  } else if (o->plan_ranks || o->plan_ranks_per_node) { /* the ranks fill nodes of K in order */
    int K = o->plan_ranks_per_node ? o->plan_ranks_per_node : (size > 1 || o->test_node_ranks ? max : 1);
    if (K > ranks) K = ranks;
    count = (ranks + K - 1) / K;
    max = K;
    min = ranks - (count - 1) * K;
  }
  const int accelerator = strcmp(FDMINI_BACKEND_NAME, "host") != 0;
  int err = FD_OK;
  if (rank == 0) {
    /* refused where the run would be: the options the build's backend refuses, the grid, and
     * what the options ask of that grid (fd_run's checks, in its order) */
    be_info dev;
    memset(&dev, 0, sizeof dev);
    dev.is_accelerator = accelerator;
    long long N[3];
    int P[3];
    err = fd_options_check_backend(o, &dev);
    if (err == FD_OK) err = decomp_resolve_grid(o, ranks, accelerator, N, P);
    if (err == FD_OK) err = plan_check_run(o, ranks, accelerator, N, P);
    fd_plan *p = err == FD_OK ? malloc(sizeof *p) : NULL;
    if (err == FD_OK) err = p ? plan_make(o, ranks, count, min, max, accelerator, p) : fd_set_error(FD_ERR_RUNTIME, "--plan: out of memory");
    if (err == FD_OK) header_print_plan(stdout, o, p, accelerator);
    fflush(stdout);
    free(p);
  }
  return fd_agree(world, err);
}

/* The start-up header of the run (header.h), flushed by rank 0 before the run's first trial;
 * nothing where the grid is refused (the run says why). Collective. */
static int start_header(MPI_Comm world, int rank, const fd_options *o, const be_info *dev, const fd_node *node)
{
  int size, count, min, max;
  FD_MPI(MPI_Comm_size(world, &size));
  FD_CALL(node_sizes(world, node, &count, &min, &max));
  if (rank != 0) return FD_OK;
  fd_plan *p = malloc(sizeof *p);
  if (p && plan_make(o, size, count, min, max, dev->is_accelerator, p) == FD_OK) header_print(stdout, o, dev, p);
  free(p);
  return FD_OK;
}

static int finish(int code)
{
  be_finalize();
  MPI_Finalize();
  return code;
}

int main(int argc, char **argv)
{
  /* a write past `ulimit -f` then fails with EFBIG, which the output code reports, instead of
   * killing the process with SIGXFSZ */
  signal(SIGXFSZ, SIG_IGN);
  /* the GPU runtime loads every kernel when it starts (set before anything can start it, MPI
   * included): a launch that waits for the off-node proxy must never have the host blocked
   * loading another kernel (backend.h) */
  be_preinit();
  fd_provenance prov; /* what the run ran on: start time now, the rest after the device */
  prov_start(&prov);
  /* GPU-aware Cray MPICH without its GTL aborts every rank inside MPI_Init: refuse it first,
   * one line (launcher rank 0) and exit 2 on every rank */
  if (site_check_gtl(stderr) != FD_OK) return FD_ERR_USAGE;
  /* the launcher's own process count, read before MPI_Init can touch the environment */
  site_launcher launcher;
  site_launcher_read(&launcher);
  /* FUNNELED: the snapshot writer thread makes no MPI call (snapshot.h); snapshot_create
   * refuses to run snapshots where MPI provides less */
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int rank;
  MPI_Comm_rank(world, &rank);
  /* a launcher of another MPI library: every process a world of its own; one line, exit 2 */
  if (site_check_launcher(&launcher, world, stderr) != FD_OK) {
    MPI_Finalize();
    return FD_ERR_USAGE;
  }

  fd_options o;
  int rc = fd_agree(world, fd_options_parse(argc, argv, &o));
  if (rc == FD_OK && (o.help || o.help_test || o.version)) {
    if (rank == 0 && o.help) fd_options_usage(stdout);
    else if (rank == 0 && o.help_test) fd_options_usage_test(stdout);
    else if (rank == 0) prov_print_version(stdout);
    MPI_Finalize();
    return 0;
  }
  if (rc == FD_OK && o.plan) {
    rc = plan_only(world, rank, &o);
    if (rc != FD_OK && rank == 0) fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    MPI_Finalize();
    return rc;
  }
  /* the outputs, checked before the run (output.h); the run writes the dump to its temporary
   * name, renamed at the end only if everything succeeded */
  fd_output json, dump; /* rank 0 prepares them; the dump's goes to every rank */
  memset(&json, 0, sizeof json);
  memset(&dump, 0, sizeof dump);
  long tag = (long)getpid();
  MPI_Bcast(&tag, 1, MPI_LONG, 0, world);
  int made_snapdir = 0; /* rank 0: this run created --snapshot-dir (removed if the run fails) */
  if (rc == FD_OK)
    rc = fd_agree(world, rank == 0 ? output_check_run(&o, tag, &json, &dump, &made_snapdir) : FD_OK);
  if (rc != FD_OK) {
    if (rank == 0) fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    MPI_Finalize();
    return rc;
  }
  MPI_Bcast(&dump, (int)sizeof dump, MPI_BYTE, 0, world);
  fd_options run = o;
  if (dump.opt[0]) memcpy(run.dump, dump.tmp, strlen(dump.tmp) + 1); /* < FD_PATH_MAX (output.c) */

  be_info dev;
  fd_result r;
  fd_node node;
  int shared = 0;
  rc = bind_node(world, o.test_node_ranks, &node); /* emulated nodes: --test-node-ranks */
  if (rc == FD_OK) rc = bind_device(world, &node, o.gpu_map, o.gpu_map_len, &dev, &shared);
  if (rc == FD_OK && shared > 1 && rank == 0)
    printf("fdmini: notice: ranks share devices: up to %d ranks on one device of a node (%d "
           "visible to each)%s\n", shared, dev.device_count,
           dev.mps == 1   ? ", under MPS"
           : dev.mps == 0 ? "; without MPS they take turns on it (nvidia-cuda-mps-control -d first "
                            "runs them side by side)"
                          : "");
  fd_binding *binding = NULL; /* rank 0: one record per rank */
  int nbinding = 0;
  if (rc == FD_OK) rc = fd_agree(world, prov_collect(&prov));
  if (rc == FD_OK) rc = bind_report(world, &node, &dev, o.bind_report, stdout, &binding, &nbinding);
  /* --halo-path ipc where each rank sees one GPU: refused with its reason before allocating */
  if (rc == FD_OK) rc = site_check_ipc(world, &node, &o, &dev);
  /* a large shared file (--dump, each snapshot) into a Lustre directory on one OST: advice */
  if (rc == FD_OK && rank == 0) lustre_advice(&o, world, dev.is_accelerator);
  if (rc == FD_OK) rc = start_header(world, rank, &o, &dev, &node);
  if (rc == FD_OK) rc = fd_run(&run, world, &dev, &node, &r);

  /* agreed on every rank: bad input, I/O, or a runtime failure all ranks checked together
   * (fields that do not fit in memory): one line from rank 0, every rank exits with rc */
  if (rc == FD_ERR_USAGE || rc == FD_ERR_IO || (rc == FD_ERR_RUNTIME && fd_error_agreed())) {
    finish_outputs(world, rank, rc, &json, &dump, &o, &dev, &r, binding, nbinding, &prov);
    if (rank == 0) output_remove_made_dir(o.snapshot_dir, made_snapdir); /* if still empty */
    if (rank == 0) fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    bind_free(binding);
    return finish(rc);
  }
  if (rc == FD_STOPPED) { /* no output of an unfinished run: the checkpoint is its record */
    if (rank == 0) {
      output_discard(&dump);
      output_discard(&json);
      if (r.stop_measuring)
        printf("fdmini: stopped by %s during a measurement run (--baseline or the reference run), before the run "
               "proper: nothing new to save; the same command %s%s%s\n",
               checkpoint_signal_name(r.stop_signal), r.restart_from[0] ? "continues '" : "starts the run afresh",
               r.restart_from, r.restart_from[0] ? "'" : "");
      else
        printf("fdmini: stopped by %s after step %lld of %lld: checkpoint '%s' written; run again with --restart "
               "auto (or --restart with its name) to continue\n", checkpoint_signal_name(r.stop_signal),
               r.stop_step, r.total_steps, r.checkpoint_last_path);
      fflush(stdout);
    }
    bind_free(binding);
    return finish(FD_STOPPED);
  }
  if (rc == FD_ERR_RUNTIME) {
    if (rank == 0) {
      output_discard(&dump);
      output_discard(&json);
    }
    fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
    fflush(stderr);
    MPI_Abort(world, FD_ERR_RUNTIME);
    return FD_ERR_RUNTIME;
  }
  if (rank == 0) {
    if (o.report == FD_REPORT_FULL) {
      fputc('\n', stdout); /* after the header: the whole report, complete in itself */
      report_print(stdout, &o, &dev, &r, &prov);
    } else {
      summary_print(stdout, &o, &dev, &r);
    }
    fflush(stdout);
  }
  int out = finish_outputs(world, rank, rc, &json, &dump, &o, &dev, &r, binding, nbinding, &prov);
  if (rank == 0 && out != FD_OK) output_remove_made_dir(o.snapshot_dir, made_snapdir); /* if still empty */
  if (rank == 0 && out == FD_ERR_VERIFY && (json.opt[0] || dump.opt[0]))
    printf("fdmini: verification failed: %s%s%s not written (existing files are unchanged)\n",
           json.opt[0] ? "--json" : "", json.opt[0] && dump.opt[0] ? " and " : "", dump.opt[0] ? "--dump" : "");
  else if (rank == 0 && out != rc)
    fprintf(stderr, "fdmini: error: %s\n", fd_error_message());
  bind_free(binding);
  return finish(out);
}
