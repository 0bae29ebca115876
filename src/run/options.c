/* options.c - command-line parsing (options.h). Strict: a malformed number, a value out of
 * range, an unknown option or a stray argument is an error whose message says what was
 * expected. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "backend.h"
#include "fd_error.h"
#include "options.h"

static const char *const op_names[FD_OP_COUNT] = {"laplacian", "heat", "jacobi", "wave"};
static const char *const mpi_gpu_names[] = {"auto", "aware", "staged"};
static const char *const halo_path_names[] = {"auto", "mpi", "ipc", "mixed", "proxy"};
static const char *const graphs_names[] = {"auto", "on", "off"};

const char *fd_op_name(fd_op op) { return (op >= 0 && op < FD_OP_COUNT) ? op_names[op] : "?"; }
const char *fd_mpi_gpu_name(fd_mpi_gpu m) { return mpi_gpu_names[m]; }
const char *fd_graphs_name(fd_graphs_mode m) { return graphs_names[m]; }
const char *fd_halo_path_name(fd_halo_path p) { return halo_path_names[p]; }

void fd_options_usage(FILE *out)
{
  fprintf(out,
    "usage: fdmini [options]            (run under mpirun/srun: one rank per GPU)\n"
    "\n"
    "Problem\n"
    "  --global NX,NY,NZ   global interior grid, split over the ranks (strong scaling)\n"
    "  --local nx,ny,nz    interior grid of every rank (weak scaling)\n"
    "                      default: --local 512,512,512 on GPUs, --global 128,128,128 on host\n"
    "  --procs PX,PY,PZ    process grid (default: MPI_Dims_create's factors, largest to z,\n"
    "                      then y: their faces are contiguous in memory; where that cuts\n"
    "                      a block too thin, the grid that fits with the least cut area)\n"
    "  --op NAME           laplacian | heat | jacobi | wave (default laplacian)\n"
    "  --iters N           timed steps (default 100)\n"
    "  --warmup N          untimed steps first (default 10 on GPUs, 2 on host, rounded up\n"
    "                      to a multiple of --halo-width and --fuse, 12 for --fuse auto)\n"
    "Wave (--op wave: 3D acoustic wave, unit cube, Ricker point source)\n"
    "  --velocity V[,V2]   uniform velocity V, or V below the mid-depth plane in z and V2\n"
    "                      above it (default 1)\n"
    "  --ricker-freq F     peak frequency of the Ricker wavelet (default 10)\n"
    "  --source I,J,K      global grid indices of the source, 1..N (default the centre)\n"
    "                      (the range of V and F that gives finite, representable values\n"
    "                      and a sampled wavelet depends on the grid: an error says it)\n"
    "Kernels (GPU backends; the host backend runs one loop for every kernel)\n"
    "  --tune MODE         auto | off: auto (default on GPUs) times a few stencil\n"
    "                      configurations on each rank's block at start-up, runs the\n"
    "                      closest few in the run's own loop, and all ranks use the\n"
    "                      fastest; off takes the rule's configuration\n"
    "  --kernel SPEC       force one configuration: baseline | reordered | zmarch, with\n"
    "                      optional :key=value,... (tile, vec, block=BXxBY, chunk, strips),\n"
    "                      e.g. zmarch:tile=1,vec=2,block=32x8,chunk=8 (the report prints\n"
    "                      the spec that ran)\n"
    "  --tile M            points per thread along y (reordered: 1, 2, 4, 8, 16; zmarch:\n"
    "                      1, 2); alone it means --kernel reordered:tile=M\n"
    "  --fuse T            T = 1..4 time steps per pass through memory (heat, jacobi), or\n"
    "                      auto: the start-up autotune picks T (trials of up to a few\n"
    "                      seconds on a GPU); with several ranks T must divide\n"
    "                      --halo-width (default 1: one step per pass)\n"
    "Communication\n"
    "  --mpi-gpu MODE      auto | aware | staged: hand device buffers to MPI, or stage\n"
    "                      them through pinned host memory (default auto; GPU backends)\n"
    "  --halo-path PATH    auto | mpi | ipc | mixed | proxy: how faces travel. mpi: every\n"
    "                      face through MPI; ipc: every face by GPU IPC (an error where a\n"
    "                      neighbour's device is out of reach); mixed: IPC where in\n"
    "                      reach, MPI elsewhere, driven by the host; proxy: the pass in\n"
    "                      one launch, IPC faces signalled on the device and the rest\n"
    "                      through MPI by a host proxy; auto (default): the fastest of\n"
    "                      those that apply in a start-up trial (the report's \"path\n"
    "                      trial\"; the proxy where launches wait on a GPU)\n"
    "  --no-overlap        run pack, exchange, interior and boundary one after another\n"
    "  --graphs MODE       auto | on | off: capture each pass's device work once as a\n"
    "                      CUDA/HIP graph and replay it (fewer launches: small blocks);\n"
    "                      auto (default) decides by a start-up trial of the run's own\n"
    "                      loop on GPUs, and is off on the host backend (where on replays\n"
    "                      recorded calls, for tests); the results are the same bits\n"
    "  --halo-width S      S ghost layers (faces; edges from 2, corners from 3) exchanged\n"
    "                      once every S steps; the steps between update shrinking boxes\n"
    "                      that reach into the ghosts (heat, jacobi, wave; default 1)\n"
    "  --baseline          first run every rank's block alone (no exchange, same steps):\n"
    "                      efficiency against one GPU and the share of exchange hidden\n"
    "Output\n"
    "  --json FILE         write the run's record as one JSON object (schema: docs/report.md)\n"
    "  --dump FILE         write the final field (raw, global order, x fastest); FILE must\n"
    "                      be new or a regular file, on a file system all ranks share\n"
    "  --snapshot-every N  every N-th step, write the field to DIR/snap_STEP.raw (raw,\n"
    "                      global order, x fastest) in the background, described by\n"
    "                      DIR/snapshots.xmf (XDMF 3: ParaView, VisIt)\n"
    "  --snapshot-dir DIR  directory of the snapshots (created if missing; both options\n"
    "                      go together)\n"
    "  --progress SECONDS  progress line every SECONDS of wall time (0 = off, default 10)\n"
    "  --bind-report       print each rank's host, CPUs, NUMA node(s), GPU and the GPU's\n"
    "                      NUMA locality (always in the JSON; warnings always printed)\n"
    "  --gpu-map D0,D1,... where a rank sees several GPUs, node-local rank i takes visible\n"
    "                      device D[i mod count] (default: device i mod visible); a rank\n"
    "                      that sees one GPU uses it. Frontier's launch script passes\n"
    "                      4,5,2,3,6,7,0,1: each rank's CCD and its closest GCD\n"
    "Checkpoints (docs/running.md, \"Checkpoint and restart\")\n"
    "  --checkpoint-every N  after every N-th step (warm-up included), save the state to\n"
    "                      DIR/ckpt_STEP.fdmini in the background (the last two are kept)\n"
    "  --checkpoint-dir DIR  where checkpoints go (created if missing); with it, SIGTERM\n"
    "                      and SIGUSR1 make every rank stop at the same pass, write a\n"
    "                      checkpoint and exit 5 (alone: checkpoints only then)\n"
    "  --restart PATH|auto continue the run from a checkpoint: a file, the newest complete\n"
    "                      one in a directory, or auto: the newest in --checkpoint-dir, or\n"
    "                      a fresh start when there is none (resubmit one job unchanged);\n"
    "                      --warmup and --iters stay the whole run's: it ends at the same\n"
    "                      step, warmup + iters\n"
    "Other\n"
    "  --no-check          skip verification\n"
    "  --help              this text\n"
    "Testing (planted faults and stops for the tests; never in a measured run)\n"
    "  --test-inject-fault[=KIND[:F]]  field (default): the last rank's centre point wrong\n"
    "                      by 1%% + 0.5; tiny[:F]: wrong by a factor 1 + F (default 1e-3);\n"
    "                      velocity, source[:F] (wave): the stencil 1%% too fast, the source\n"
    "                      1 + F times too strong (default 1e-2); rhs[:F] (jacobi): the\n"
    "                      right-hand side 1 + F times too large (default 1e-2); mirror\n"
    "                      (wave): opposite displacements at two mirror points of the start,\n"
    "                      which break its mirror symmetry alone; exchange (2 or more ranks):\n"
    "                      the last rank skips the unpack of one received region in every\n"
    "                      exchange, as if its message never arrived; order (2 or more\n"
    "                      ranks, GPU): the shell of a pass does not wait for the previous\n"
    "                      pass's interior update (it shows with --halo-path ipc on large\n"
    "                      blocks); zero (2 or more ranks): every halo message carries no\n"
    "                      values; shell (2 or more ranks): the points next to a neighbour\n"
    "                      are not updated. Each must exit 1 (with F below the tolerance\n"
    "                      of the check it is for: exit 0)\n"
    "  --test-fail-snapshot-write K  the K-th snapshot's write fails (exit 4)\n"
    "  --test-kill RANK,STEP,pass|write|commit  with --checkpoint-dir: SIGKILL of RANK\n"
    "                      after the pass that reaches STEP, half-way through the checkpoint\n"
    "                      of STEP, or (rank 0) after renaming it\n"
    "  --test-signal RANK,STEP,usr1|term  RANK raises the signal after the pass that\n"
    "                      reaches STEP (a stop: checkpoint, exit 5)\n"
    "  --test-stall RANK   signalled passes (ranks exchanging on the device, inside the\n"
    "                      pass's launch or a deep window's own): RANK's launches never\n"
    "                      tell its neighbours they packed, and every\n"
    "                      launch waits 2 s at most: the run must end with exit 3 (no\n"
    "                      effect where no pass is signalled: faces by MPI from the host)\n"
    "  --test-delays       random host sleeps and device waits before signalled passes (a\n"
    "                      stress of the exchange's ordering): the run must still PASS, bit\n"
    "                      for bit\n"
    "  --test-node-ranks K emulated nodes: every K consecutive ranks of a node count as a\n"
    "                      node of their own (no IPC between them; the process grid lays\n"
    "                      its node blocks over them); devices are still picked by the\n"
    "                      real node. K must divide every node's rank count\n"
    "\n"
    "Exit status: 0 verified, unverified (no check applies) or --no-check, 1 verification\n"
    "failed, 2 bad input, 3 runtime failure (MPI or device) or sizes that do not fit,\n"
    "4 an output file could not be written, 5 stopped by SIGTERM or SIGUSR1 after writing a\n"
    "checkpoint (continue with --restart auto). Output files are replaced only by a run that\n"
    "succeeds (written to a temporary name, renamed once complete).\n");
}

int fd_options_check_backend(const fd_options *o, const be_info *dev)
{
  static const char host[] = "the host backend keeps fields in host memory and runs one stencil loop for every kernel";
  if (dev->is_accelerator) return FD_OK;
  if (o->mpi_gpu != FD_MPI_GPU_AUTO)
    return fd_set_error(FD_ERR_USAGE, "--mpi-gpu %s applies to GPU backends: %s, so there are no device buffers "
                        "to hand to MPI or to stage (leave --mpi-gpu out)", fd_mpi_gpu_name(o->mpi_gpu), host);
  if (o->have_kernel)
    return fd_set_error(FD_ERR_USAGE, "--kernel and --tile apply to GPU backends: %s, so they would "
                        "choose nothing (leave them out)", host);
  if (o->tune == FD_TUNE_AUTO)
    return fd_set_error(FD_ERR_USAGE, "--tune auto applies to GPU backends: %s, so there is nothing to tune "
                        "(leave --tune out)", host);
  return FD_OK;
}

/* Strict integer in [lo, hi]. */
static int parse_ll(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
  char *end;
  errno = 0;
  if (*s == '\0') return fd_set_error(FD_ERR_USAGE, "%s: empty value, expected an integer", opt);
  long long v = strtoll(s, &end, 10);
  if (*end != '\0' || end == s)
    return fd_set_error(FD_ERR_USAGE, "%s: '%s' is not an integer", opt, s);
  if (errno == ERANGE || v < lo || v > hi)
    return fd_set_error(FD_ERR_USAGE, "%s: %s is out of range, expected %lld..%lld", opt, s, lo, hi);
  *out = v;
  return FD_OK;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
  long long v;
  FD_CALL(parse_ll(opt, s, lo, hi, &v));
  *out = (int)v;
  return FD_OK;
}

/* "A,B,C" with each part an integer in [lo, hi]. */
static int parse_triple(const char *opt, const char *s, long long lo, long long hi, long long v[3])
{
  char buf[256];
  if (strlen(s) >= sizeof buf) return fd_set_error(FD_ERR_USAGE, "%s: value too long", opt);
  strcpy(buf, s);
  char *parts[3], *p = buf;
  int n = 0;
  for (;;) {
    char *comma = strchr(p, ',');
    if (n == 3) n = 4;
    if (n < 3) parts[n] = p;
    n++;
    if (!comma) break;
    *comma = '\0';
    p = comma + 1;
  }
  if (n != 3)
    return fd_set_error(FD_ERR_USAGE, "%s: '%s' should be three comma-separated integers, e.g. 64,64,64", opt, s);
  for (int d = 0; d < 3; d++) {
    char *end;
    errno = 0;
    long long x = strtoll(parts[d], &end, 10);
    if (parts[d][0] == '\0' || *end != '\0')
      return fd_set_error(FD_ERR_USAGE, "%s: '%s' should be three comma-separated integers, e.g. 64,64,64", opt, s);
    if (errno == ERANGE || x < lo || x > hi)
      return fd_set_error(FD_ERR_USAGE, "%s: %s is out of range, expected %lld..%lld in each of X,Y,Z", opt, parts[d], lo, hi);
    v[d] = x;
  }
  return FD_OK;
}

static int parse_name(const char *opt, const char *s, const char *const *names, int count, int *out)
{
  char list[256] = "";
  for (int i = 0; i < count; i++) {
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return FD_OK;
    }
    strcat(list, i ? (i == count - 1 ? " or " : ", ") : "");
    strcat(list, names[i]);
  }
  return fd_set_error(FD_ERR_USAGE, "%s: unknown value '%s', expected %s", opt, s, list);
}

/* --test-inject-fault[=KIND[:F]] (test only): the kind, and the size F of the kinds that take
 * one (tiny, source, rhs), else their default. */
static int parse_fault(const char *arg, fd_options *o)
{
  static const char *const kinds[] = {"field", "tiny",  "velocity", "source", "exchange",
                                      "order", "zero",  "shell",    "mirror", "rhs"};
  static const double sizes[] = {0, 1e-3, 0, 1e-2, 0, 0, 0, 0, 0, 1e-2}; /* 0: takes no size */
  const int count = (int)(sizeof kinds / sizeof kinds[0]);
  char name[32];
  const char *colon = arg ? strchr(arg, ':') : NULL;
  int idx = 0;
  if (arg) {
    snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg);
    FD_CALL(parse_name("--test-inject-fault", name, kinds, count, &idx));
  }
  o->inject_fault = (fd_fault)(FD_FAULT_FIELD + idx);
  o->inject_size = sizes[idx];
  if (!colon) return FD_OK;
  if (sizes[idx] == 0)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=%s takes no size: KIND:F applies to tiny, source and rhs",
                        kinds[idx]);
  char *end;
  errno = 0;
  const double f = strtod(colon + 1, &end);
  if (colon[1] == '\0' || *end != '\0' || errno == ERANGE || !(f > 0) || f > 1.0)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=%s: '%s' should be a size in (0, 1], e.g. %s:1e-12",
                        kinds[idx], colon + 1, kinds[idx]);
  o->inject_size = f;
  return FD_OK;
}

enum {
  OPT_GLOBAL = 256, OPT_LOCAL, OPT_PROCS, OPT_OP, OPT_ITERS, OPT_WARMUP, OPT_KERNEL, OPT_TILE,
  OPT_JSON, OPT_DUMP, OPT_NO_CHECK, OPT_HELP, OPT_NO_OVERLAP, OPT_MPI_GPU, OPT_PROGRESS,
  OPT_INJECT, OPT_BASELINE, OPT_BIND_REPORT, OPT_VELOCITY, OPT_RICKER, OPT_SOURCE,
  OPT_SNAP_EVERY, OPT_SNAP_DIR, OPT_FAIL_SNAP, OPT_HALO_PATH, OPT_TUNE, OPT_HALO_WIDTH,
  OPT_FUSE, OPT_GRAPHS, OPT_CKPT_EVERY, OPT_CKPT_DIR, OPT_RESTART, OPT_TEST_KILL, OPT_TEST_SIGNAL, OPT_GPU_MAP,
  OPT_TEST_STALL, OPT_TEST_DELAYS, OPT_TEST_NODE_RANKS,
};

/* --test-kill / --test-signal RANK,STEP,WHAT (test only): WHAT among names[count], its value
 * values[i]. */
static int parse_test_event(const char *opt, const char *s, const char *const *names, const int *values, int count,
                            fd_test_event *e)
{
  char buf[128], list[96] = "";
  for (int i = 0; i < count; i++) {
    strcat(list, i ? (i == count - 1 ? " or " : ", ") : "");
    strcat(list, names[i]);
  }
  const char *c1 = strchr(s, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
  if (strlen(s) >= sizeof buf || !c1 || !c2)
    return fd_set_error(FD_ERR_USAGE, "%s: '%s' should be RANK,STEP,WHAT with WHAT %s", opt, s, list);
  strcpy(buf, s);
  buf[c1 - s] = buf[c2 - s] = '\0';
  long long rank, step;
  FD_CALL(parse_ll(opt, buf, 0, 1 << 24, &rank));
  FD_CALL(parse_ll(opt, buf + (c1 - s) + 1, 1, LLONG_MAX, &step));
  for (int i = 0; i < count; i++)
    if (strcmp(buf + (c2 - s) + 1, names[i]) == 0) {
      e->rank = (int)rank;
      e->step = step;
      e->what = values[i];
      return FD_OK;
    }
  return fd_set_error(FD_ERR_USAGE, "%s: unknown event '%s', expected %s", opt, buf + (c2 - s) + 1, list);
}

/* "V" or "V1,V2": positive finite numbers. */
static int parse_velocity(const char *s, fd_options *o)
{
  char buf[128];
  if (strlen(s) >= sizeof buf) return fd_set_error(FD_ERR_USAGE, "--velocity: value too long");
  strcpy(buf, s);
  char *comma = strchr(buf, ',');
  o->nvel = comma ? 2 : 1;
  if (comma) *comma = '\0';
  const char *part[2] = {buf, comma ? comma + 1 : NULL};
  for (int q = 0; q < o->nvel; q++) {
    char *end;
    errno = 0;
    double v = strtod(part[q], &end);
    if (part[q][0] == '\0' || *end != '\0' || errno == ERANGE || !(v > 0) || v > 1e300)
      return fd_set_error(FD_ERR_USAGE, "--velocity: '%s' should be V or V1,V2 with positive numbers, e.g. 1.5,3", s);
    o->velocity[q] = v;
  }
  if (o->nvel == 1) o->velocity[1] = o->velocity[0];
  return FD_OK;
}

/* --gpu-map "D0,D1,...": 1..FD_GPU_MAP_MAX device indexes, each 0..FD_GPU_MAP_DEVICE_MAX. */
#define FD_GPU_MAP_DEVICE_MAX 1023
static int parse_gpu_map(const char *s, fd_options *o)
{
  const char *p = s;
  o->gpu_map_len = 0;
  for (;;) {
    char *end;
    errno = 0;
    long d = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || *p == '-' || *p == '+' || *p == ' ')
      return fd_set_error(FD_ERR_USAGE, "--gpu-map: '%s' should be comma-separated device indexes, e.g. 4,5,2,3,6,7,0,1", s);
    if (errno == ERANGE || d > FD_GPU_MAP_DEVICE_MAX)
      return fd_set_error(FD_ERR_USAGE, "--gpu-map: %.*s is out of range, expected 0..%d", (int)(end - p), p,
                          FD_GPU_MAP_DEVICE_MAX);
    if (o->gpu_map_len == FD_GPU_MAP_MAX)
      return fd_set_error(FD_ERR_USAGE, "--gpu-map: more than %d entries", FD_GPU_MAP_MAX);
    o->gpu_map[o->gpu_map_len++] = (int)d;
    if (*end == '\0') return FD_OK;
    p = end + 1;
  }
}

/* Largest grid extent accepted: local extents must fit an int with room for ghosts. */
#define FD_MAX_EXTENT 1000000000LL

int fd_options_parse(int argc, char **argv, fd_options *o)
{
  static const struct option longopts[] = {
    {"global", required_argument, 0, OPT_GLOBAL},   {"local", required_argument, 0, OPT_LOCAL},
    {"procs", required_argument, 0, OPT_PROCS},     {"op", required_argument, 0, OPT_OP},
    {"iters", required_argument, 0, OPT_ITERS},     {"warmup", required_argument, 0, OPT_WARMUP},
    {"kernel", required_argument, 0, OPT_KERNEL},   {"tile", required_argument, 0, OPT_TILE},
    {"tune", required_argument, 0, OPT_TUNE},
    {"json", required_argument, 0, OPT_JSON},       {"dump", required_argument, 0, OPT_DUMP},
    {"no-check", no_argument, 0, OPT_NO_CHECK},     {"help", no_argument, 0, OPT_HELP},
    {"no-overlap", no_argument, 0, OPT_NO_OVERLAP}, {"mpi-gpu", required_argument, 0, OPT_MPI_GPU},
    {"progress", required_argument, 0, OPT_PROGRESS},
    {"halo-path", required_argument, 0, OPT_HALO_PATH},
    {"halo-width", required_argument, 0, OPT_HALO_WIDTH},
    {"fuse", required_argument, 0, OPT_FUSE},
    {"graphs", required_argument, 0, OPT_GRAPHS},
    {"test-inject-fault", optional_argument, 0, OPT_INJECT},
    {"baseline", no_argument, 0, OPT_BASELINE},
    {"bind-report", no_argument, 0, OPT_BIND_REPORT},
    {"gpu-map", required_argument, 0, OPT_GPU_MAP},
    {"velocity", required_argument, 0, OPT_VELOCITY},
    {"ricker-freq", required_argument, 0, OPT_RICKER},
    {"source", required_argument, 0, OPT_SOURCE},
    {"snapshot-every", required_argument, 0, OPT_SNAP_EVERY},
    {"snapshot-dir", required_argument, 0, OPT_SNAP_DIR},
    {"test-fail-snapshot-write", required_argument, 0, OPT_FAIL_SNAP},
    {"checkpoint-every", required_argument, 0, OPT_CKPT_EVERY},
    {"checkpoint-dir", required_argument, 0, OPT_CKPT_DIR},
    {"restart", required_argument, 0, OPT_RESTART},
    {"test-kill", required_argument, 0, OPT_TEST_KILL},
    {"test-signal", required_argument, 0, OPT_TEST_SIGNAL},
    {"test-stall", required_argument, 0, OPT_TEST_STALL},
    {"test-delays", no_argument, 0, OPT_TEST_DELAYS},
    {"test-node-ranks", required_argument, 0, OPT_TEST_NODE_RANKS},
    {0, 0, 0, 0},
  };
  static const char *const tune_names[] = {"auto", "off"};
  memset(o, 0, sizeof *o);
  o->op = FD_OP_LAPLACIAN;
  o->iters = -1;
  o->warmup = -1;
  o->check = 1;
  o->overlap = 1;
  o->halo_width = 1;
  o->fuse = 1;
  o->progress = -1;
  o->nvel = 1;
  o->velocity[0] = o->velocity[1] = 1.0;
  o->ricker_hz = 10.0;
  o->test_kill.rank = o->test_signal.rank = -1;
  o->test_stall = -1;

  opterr = 0; /* our messages, from rank 0 only */
  optind = 0; /* full re-initialisation (GNU), so parsing can run more than once */
  for (;;) {
    int prev = optind ? optind : 1;
    int c = getopt_long(argc, argv, "+h", longopts, NULL);
    if (c == -1) break;
    const char *name = argv[prev];
    long long v3[3], v;
    int idx = 0;
    switch (c) {
    case OPT_GLOBAL:
      FD_CALL(parse_triple("--global", optarg, 1, FD_MAX_EXTENT, o->global));
      o->have_global = 1;
      break;
    case OPT_LOCAL:
      FD_CALL(parse_triple("--local", optarg, 1, FD_MAX_EXTENT, o->local));
      o->have_local = 1;
      break;
    case OPT_PROCS:
      FD_CALL(parse_triple("--procs", optarg, 1, 1 << 20, v3));
      for (int d = 0; d < 3; d++) o->procs[d] = (int)v3[d];
      o->have_procs = 1;
      break;
    case OPT_OP:
      FD_CALL(parse_name("--op", optarg, op_names, FD_OP_COUNT, &idx));
      o->op = (fd_op)idx;
      break;
    case OPT_ITERS:
      FD_CALL(parse_int("--iters", optarg, 1, INT_MAX, &o->iters));
      break;
    case OPT_WARMUP:
      FD_CALL(parse_int("--warmup", optarg, 0, INT_MAX, &o->warmup));
      break;
    case OPT_KERNEL: {
      char why[160];
      if (fd_kernel_parse(optarg, &o->kernel, why, sizeof why) != 0)
        return fd_set_error(FD_ERR_USAGE, "--kernel: %s", why);
      o->have_kernel = 1;
      break;
    }
    case OPT_TUNE:
      FD_CALL(parse_name("--tune", optarg, tune_names, 2, &idx));
      o->tune = idx == 0 ? FD_TUNE_AUTO : FD_TUNE_OFF;
      break;
    case OPT_TILE:
      FD_CALL(parse_ll("--tile", optarg, 1, 16, &v));
      if (v != 1 && v != 2 && v != 4 && v != 8 && v != 16)
        return fd_set_error(FD_ERR_USAGE, "--tile: %lld is not a valid tile factor, expected 1, 2, 4, 8 or 16", v);
      o->tile = (int)v;
      break;
    case OPT_JSON:
    case OPT_DUMP: {
      const char *what = c == OPT_JSON ? "--json" : "--dump";
      if (optarg[0] == '\0') return fd_set_error(FD_ERR_USAGE, "%s: expected a file name", what);
      if (strlen(optarg) >= FD_PATH_MAX) return fd_set_error(FD_ERR_USAGE, "%s: file name too long", what);
      strcpy(c == OPT_JSON ? o->json : o->dump, optarg);
      break;
    }
    case OPT_NO_CHECK:
      o->check = 0;
      break;
    case OPT_NO_OVERLAP:
      o->overlap = 0;
      break;
    case OPT_MPI_GPU:
      FD_CALL(parse_name("--mpi-gpu", optarg, mpi_gpu_names, 3, &idx));
      o->mpi_gpu = (fd_mpi_gpu)idx;
      break;
    case OPT_HALO_PATH:
      FD_CALL(parse_name("--halo-path", optarg, halo_path_names, 5, &idx));
      o->halo_path = (fd_halo_path)idx;
      break;
    case OPT_GRAPHS:
      FD_CALL(parse_name("--graphs", optarg, graphs_names, 3, &idx));
      o->graphs = (fd_graphs_mode)idx;
      break;
    case OPT_HALO_WIDTH:
      FD_CALL(parse_int("--halo-width", optarg, 1, FD_HALO_WIDTH_MAX, &o->halo_width));
      break;
    case OPT_FUSE:
      if (strcmp(optarg, "auto") == 0) o->fuse = 0;
      else if (parse_int("--fuse", optarg, 1, FD_FUSE_MAX, &o->fuse) != FD_OK)
        return fd_set_error(FD_ERR_USAGE, "--fuse: '%s' is not valid, expected 1..%d time steps per pass or auto", optarg, FD_FUSE_MAX);
      break;
    case OPT_PROGRESS:
      FD_CALL(parse_int("--progress", optarg, 0, INT_MAX, &o->progress));
      break;
    case OPT_INJECT:
      FD_CALL(parse_fault(optarg, o));
      break;
    case OPT_BASELINE:
      o->baseline = 1;
      break;
    case OPT_BIND_REPORT:
      o->bind_report = 1;
      break;
    case OPT_GPU_MAP:
      FD_CALL(parse_gpu_map(optarg, o));
      break;
    case OPT_VELOCITY:
      FD_CALL(parse_velocity(optarg, o));
      o->have_velocity = 1;
      break;
    case OPT_RICKER: {
      char *end;
      errno = 0;
      double f = strtod(optarg, &end);
      if (optarg[0] == '\0' || *end != '\0' || errno == ERANGE || !(f > 0) || f > 1e300)
        return fd_set_error(FD_ERR_USAGE, "--ricker-freq: '%s' should be a positive number, e.g. 10", optarg);
      o->ricker_hz = f;
      o->have_ricker = 1;
      break;
    }
    case OPT_SOURCE:
      FD_CALL(parse_triple("--source", optarg, 1, FD_MAX_EXTENT, o->source));
      o->have_source = 1;
      break;
    case OPT_SNAP_EVERY:
      FD_CALL(parse_int("--snapshot-every", optarg, 1, INT_MAX, &o->snapshot_every));
      break;
    case OPT_SNAP_DIR:
      if (optarg[0] == '\0') return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: expected a directory name");
      if (strlen(optarg) >= FD_PATH_MAX - 64) return fd_set_error(FD_ERR_USAGE, "--snapshot-dir: name too long");
      strcpy(o->snapshot_dir, optarg);
      break;
    case OPT_FAIL_SNAP:
      FD_CALL(parse_int("--test-fail-snapshot-write", optarg, 1, INT_MAX, &o->fail_snapshot));
      break;
    case OPT_CKPT_EVERY:
      FD_CALL(parse_int("--checkpoint-every", optarg, 1, INT_MAX, &o->checkpoint_every));
      break;
    case OPT_CKPT_DIR:
    case OPT_RESTART: {
      const char *what = c == OPT_CKPT_DIR ? "--checkpoint-dir" : "--restart";
      if (optarg[0] == '\0')
        return fd_set_error(FD_ERR_USAGE, "%s: expected %s", what,
                            c == OPT_CKPT_DIR ? "a directory name" : "a checkpoint file, a directory of them, or auto");
      if (strlen(optarg) >= FD_PATH_MAX - 64) return fd_set_error(FD_ERR_USAGE, "%s: name too long", what);
      if (c == OPT_CKPT_DIR) {
        strcpy(o->checkpoint_dir, optarg);
      } else {
        o->restart = strcmp(optarg, "auto") == 0 ? FD_RESTART_AUTO : FD_RESTART_PATH;
        strcpy(o->restart_path, o->restart == FD_RESTART_PATH ? optarg : "");
      }
      break;
    }
    case OPT_TEST_KILL: {
      static const char *const names[] = {"pass", "write", "commit"};
      static const int values[] = {FD_TEST_AT_PASS, FD_TEST_AT_WRITE, FD_TEST_AT_COMMIT};
      FD_CALL(parse_test_event("--test-kill", optarg, names, values, 3, &o->test_kill));
      break;
    }
    case OPT_TEST_SIGNAL: {
      static const char *const names[] = {"usr1", "term"};
      static const int values[] = {SIGUSR1, SIGTERM};
      FD_CALL(parse_test_event("--test-signal", optarg, names, values, 2, &o->test_signal));
      break;
    }
    case OPT_TEST_STALL:
      FD_CALL(parse_int("--test-stall", optarg, 0, INT_MAX, &o->test_stall));
      break;
    case OPT_TEST_DELAYS:
      o->test_delays = 1;
      break;
    case OPT_TEST_NODE_RANKS:
      FD_CALL(parse_int("--test-node-ranks", optarg, 1, INT_MAX, &o->test_node_ranks));
      break;
    case 'h':
    case OPT_HELP:
      o->help = 1;
      break;
    case ':':
      return fd_set_error(FD_ERR_USAGE, "option '%s' needs a value (see --help)", name);
    default: /* '?' */
      if (optopt && optopt < 256 && strncmp(name, "--", 2) != 0)
        return fd_set_error(FD_ERR_USAGE, "unknown option '-%c' (see --help)", optopt);
      {
        /* getopt_long reports a missing argument of a long option as '?' too */
        for (const struct option *lo = longopts; lo->name; lo++)
          if (lo->has_arg == required_argument && strcmp(name + 2, lo->name) == 0)
            return fd_set_error(FD_ERR_USAGE, "option '%s' needs a value (see --help)", name);
        return fd_set_error(FD_ERR_USAGE, "unknown option '%s' (see --help)", name);
      }
    }
  }
  if (o->help) return FD_OK;
  if (optind < argc)
    return fd_set_error(FD_ERR_USAGE, "unexpected argument '%s' (options start with --; see --help)", argv[optind]);
  if (o->have_global && o->have_local)
    return fd_set_error(FD_ERR_USAGE, "--global and --local exclude each other: give one (strong or weak scaling)");
  if (!o->snapshot_every != !o->snapshot_dir[0])
    return fd_set_error(FD_ERR_USAGE, "--snapshot-every N and --snapshot-dir DIR go together: give both");
  if (o->op != FD_OP_WAVE && (o->inject_fault == FD_FAULT_VELOCITY || o->inject_fault == FD_FAULT_SOURCE))
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=velocity and =source apply to --op wave only");
  if (o->op != FD_OP_WAVE && o->inject_fault == FD_FAULT_MIRROR)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=mirror applies to --op wave only");
  if (o->op != FD_OP_JACOBI && o->inject_fault == FD_FAULT_RHS)
    return fd_set_error(FD_ERR_USAGE, "--test-inject-fault=rhs applies to --op jacobi only");
  if (o->op != FD_OP_WAVE && (o->have_velocity || o->have_ricker || o->have_source))
    return fd_set_error(FD_ERR_USAGE, "%s applies to --op wave only, not to --op %s",
                        o->have_velocity ? "--velocity" : (o->have_ricker ? "--ricker-freq" : "--source"),
                        fd_op_name(o->op));
  if (o->tile) {
    if (!o->have_kernel) { /* --tile alone: the lab notes' tiled kernel */
      o->have_kernel = 1;
      o->kernel.id = FD_KERNEL_REORDERED;
    }
    if (o->kernel.id == FD_KERNEL_BASELINE)
      return fd_set_error(FD_ERR_USAGE, "--tile applies to the reordered and zmarch kernels, not to --kernel baseline");
    if (o->kernel.id == FD_KERNEL_ZMARCH && o->tile > 2)
      return fd_set_error(FD_ERR_USAGE, "--tile: zmarch takes 1 or 2 rows per thread, not %d", o->tile);
    if (o->kernel.tile && o->kernel.tile != o->tile)
      return fd_set_error(FD_ERR_USAGE, "--tile %d and tile=%d in --kernel disagree: give one", o->tile, o->kernel.tile);
    o->kernel.tile = o->tile;
  }
  if (o->tune == FD_TUNE_AUTO && o->have_kernel)
    return fd_set_error(FD_ERR_USAGE, "--tune auto and --kernel/--tile exclude each other: the autotune picks the configuration, --kernel forces one");
  /* deep halos and fused passes: operators that step in time; wave steps are single (its
   * second time level changes every step) */
  if (o->halo_width > 1 && o->op == FD_OP_LAPLACIAN)
    return fd_set_error(FD_ERR_USAGE, "--halo-width %d: laplacian is one application, not a time stepper; deep halos apply to heat, jacobi and wave", o->halo_width);
  if (o->fuse != 1 && o->op != FD_OP_HEAT && o->op != FD_OP_JACOBI) {
    char t[16];
    snprintf(t, sizeof t, o->fuse ? "%d" : "auto", o->fuse);
    return fd_set_error(FD_ERR_USAGE, "--fuse %s: several steps per pass apply to heat and jacobi, not %s", t, fd_op_name(o->op));
  }
  if (o->fuse == 0 && o->tune == FD_TUNE_OFF)
    return fd_set_error(FD_ERR_USAGE, "--fuse auto needs the start-up autotune, which --tune off turns off: give --fuse T");
  if (o->fuse > 1 && o->snapshot_every % o->fuse)
    return fd_set_error(FD_ERR_USAGE, "--snapshot-every %d is not a multiple of --fuse %d: a snapshot is taken between passes of %d steps", o->snapshot_every, o->fuse, o->fuse);
  /* checkpoints: taken between passes, written into --checkpoint-dir */
  if (o->checkpoint_every && !o->checkpoint_dir[0])
    return fd_set_error(FD_ERR_USAGE, "--checkpoint-every %d needs --checkpoint-dir DIR: the directory the checkpoints go to", o->checkpoint_every);
  if (o->restart == FD_RESTART_AUTO && !o->checkpoint_dir[0])
    return fd_set_error(FD_ERR_USAGE, "--restart auto looks for the newest checkpoint in --checkpoint-dir: give --checkpoint-dir DIR (or --restart PATH)");
  if (o->fuse > 1 && o->checkpoint_every % o->fuse)
    return fd_set_error(FD_ERR_USAGE, "--checkpoint-every %d is not a multiple of --fuse %d: a checkpoint is taken between passes of %d steps", o->checkpoint_every, o->fuse, o->fuse);
  if (o->fail_snapshot && !o->snapshot_every)
    return fd_set_error(FD_ERR_USAGE, "--test-fail-snapshot-write applies to runs with --snapshot-every");
  if ((o->test_kill.rank >= 0 || o->test_signal.rank >= 0) && !o->checkpoint_dir[0])
    return fd_set_error(FD_ERR_USAGE, "--test-kill and --test-signal apply to runs with --checkpoint-dir");
  if (o->test_kill.what == FD_TEST_AT_COMMIT && o->test_kill.rank != 0)
    return fd_set_error(FD_ERR_USAGE, "--test-kill RANK,STEP,commit: rank 0 commits checkpoints, so RANK must be 0");
  return FD_OK;
}
