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
  /* one line of purpose per option, within 80 columns: the reasons are in docs/options.md */
  fprintf(out,
    "usage: fdmini [options]           under mpirun or srun, one rank per GPU\n"
    "       fdmini --plan --ranks N [options]   a run's layout, without running it\n"
    "\n"
    "Problem\n"
    "  --global NX,NY,NZ    global grid, split over the ranks (strong scaling)\n"
    "  --local nx,ny,nz     grid of every rank (weak scaling; GPU default 512^3)\n"
    "  --procs PX,PY,PZ     process grid (default: largest factors to z, then y)\n"
    "  --op NAME            laplacian (default), heat, jacobi or wave\n"
    "  --iters N            timed steps (default 100)\n"
    "  --warmup N           untimed steps first (default 10 on GPUs, 2 on host)\n"
    "Wave (--op wave)\n"
    "  --velocity V[,V2]    velocity, or V below the mid-depth plane and V2 above\n"
    "  --ricker-freq F      peak frequency of the Ricker source (default 10)\n"
    "  --source I,J,K       grid indices of the point source (default the centre)\n"
    "Kernels (GPU backends)\n"
    "  --tune auto|off      time the kernel configurations at start-up (default auto)\n"
    "  --kernel SPEC        force one, e.g. zmarch:tile=1,vec=2,block=32x8,chunk=6\n"
    "  --tile M             points per thread along y (alone: --kernel reordered)\n"
    "  --fuse T|auto        1..4 time steps per pass through memory (heat, jacobi)\n"
    "Communication\n"
    "  --mpi-gpu MODE       auto|aware|staged: device buffers to MPI, or staged\n"
    "  --halo-path PATH     auto|mpi|ipc|mixed|proxy: how faces travel (default auto)\n"
    "  --no-overlap         pack, exchange, unpack and update one after another\n"
    "  --graphs MODE        auto|on|off: replay each pass from a CUDA/HIP graph\n"
    "  --halo-width S       S ghost layers, exchanged once every S steps (default 1)\n"
    "  --baseline           also time each rank's block alone (efficiency, hidden)\n"
    "Output\n"
    "  --report MODE        short (default) or full: trials, floors, provenance\n"
    "  --json FILE          write the run's record (schema: docs/report.md)\n"
    "  --dump FILE          write the final field (raw, global order, x fastest)\n"
    "  --snapshot-every N   write the field every N steps, in the background\n"
    "  --snapshot-dir DIR   where the snapshots go (XDMF 3 index)\n"
    "  --progress S         a progress line every S seconds (default 10, 0 = off)\n"
    "  --bind-report        print each rank's host, CPUs, NUMA node and GPU\n"
    "  --gpu-map D0,D1,...  node-local rank i takes visible device D[i mod count]\n"
    "Checkpoints\n"
    "  --checkpoint-every N save the state every N steps (the last two kept)\n"
    "  --checkpoint-dir DIR where checkpoints go; SIGTERM, SIGUSR1 stop after one\n"
    "  --restart PATH|auto  continue from a checkpoint (a file, a folder, auto)\n"
    "Plan (no run, no GPU touched)\n"
    "  --plan               print the grids, memory and halo traffic of the run\n"
    "  --ranks N            --plan: the ranks of the run (default: the job's)\n"
    "  --ranks-per-node K   --plan: ranks per node (default: the job's; alone 1)\n"
    "Other\n"
    "  --no-check           skip verification\n"
    "  --version            version, commit, backend, precision, GPU targets, MPI\n"
    "  --help               this text\n"
    "  --help-test          the options for the tests (planted faults, stops)\n"
    "\n"
    "Exit status: 0 verified (or unverified, or --no-check), 1 verification failed,\n"
    "2 bad input, 3 runtime failure, 4 an output file not written, 5 stopped after\n"
    "a checkpoint. Every option in full: docs/options.md.\n");
}

void fd_options_usage_test(FILE *out)
{
  fprintf(out,
    "usage: fdmini [options] [test options]    for the tests only (docs/testing.md)\n"
    "\n"
    "Testing (planted faults and stops for the tests; never in a measured run)\n"
    "  --test-inject-fault[=KIND[:F]]  field (default): the last rank's centre point wrong\n"
    "                      by 1%% + 0.5; tiny[:F]: wrong by a factor 1 + F (default 1e-3);\n"
    "                      velocity, source[:F] (wave): the stencil 1%% too fast, the source\n"
    "                      1 + F times too strong (default 1e-2); rhs[:F] (jacobi): the\n"
    "                      right-hand side 1 + F times too large (default 1e-2); mirror\n"
    "                      (wave): opposite displacements at two mirror points of the start,\n"
    "                      which break its mirror symmetry alone (refused where that check\n"
    "                      does not apply: a source off the centre of an odd grid);\n"
    "                      exchange (2 or more ranks): the last rank skips the unpack of one\n"
    "                      received region in every exchange, as if its message never\n"
    "                      arrived; order (2 or more ranks, GPU): the shell of a pass does\n"
    "                      not wait for the previous pass's interior update (it shows with\n"
    "                      --halo-path ipc on large blocks); zero (2 or more ranks): every\n"
    "                      halo message carries no values; shell (2 or more ranks): the\n"
    "                      points next to a neighbour are not updated. Each must exit 1\n"
    "                      (with F below the tolerance of the check it is for: exit 0)\n"
    "  --test-fail-snapshot-write K  the K-th snapshot's write fails (exit 4)\n"
    "  --test-kill RANK,STEP,pass|write|commit  with --checkpoint-dir: SIGKILL of RANK\n"
    "                      after the pass that reaches STEP, half-way through the checkpoint\n"
    "                      of STEP, or (rank 0) after renaming it\n"
    "  --test-signal RANK,STEP,usr1|term  RANK raises the signal after the pass that\n"
    "                      reaches STEP (a stop: checkpoint, exit 5), or of\n"
    "                      --baseline's loop before the run proper where that reaches\n"
    "                      it first (a stop without a new checkpoint)\n"
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
    "                      real node. K must divide every node's rank count\n");
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
  OPT_HELP_TEST, OPT_VERSION, OPT_REPORT, OPT_PLAN, OPT_RANKS, OPT_RANKS_PER_NODE,
};

/* Edit distance of a and b (insertions, deletions, substitutions, transpositions of two
 * neighbours), up to 63 characters each (longer: a large number). Pure. */
static int edit_distance(const char *a, const char *b)
{
  enum { M = 64 };
  const int la = (int)strlen(a), lb = (int)strlen(b);
  if (la >= M || lb >= M) return 1000;
  int d[M][M];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

/* "; did you mean --NAME?", naming the options that `typed` (a long option's name as given,
 * without "--" and "=VALUE") could have meant, into buf[len]: those it begins (a prefix, which
 * getopt_long would have taken: fdmini matches names exactly), at most three, else the closest
 * by edit_distance within max(2, a third of its length); "" when none is close. Pure. */
static void suggest_option(const char *typed, const struct option *opts, char *buf, size_t len)
{
  const size_t n = strlen(typed);
  const char *pick[3];
  int npick = 0, best = 1000;
  for (const struct option *op = opts; op->name; op++)
    if (n > 0 && strncmp(op->name, typed, n) == 0 && npick < 3) pick[npick++] = op->name;
  if (!npick) {
    const int most = n / 3 > 2 ? (int)(n / 3) : 2;
    for (const struct option *op = opts; op->name; op++) {
      const int e = edit_distance(typed, op->name);
      if (e <= most && e < best) {
        best = e;
        pick[0] = op->name;
        npick = 1;
      }
    }
  }
  size_t at = (size_t)snprintf(buf, len, "%s", npick ? "; did you mean " : "");
  for (int i = 0; i < npick && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s--%s", i == 0 ? "" : (i == npick - 1 ? " or " : ", "), pick[i]);
  if (npick && at < len) snprintf(buf + at, len - at, "?");
}

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
    {"help-test", no_argument, 0, OPT_HELP_TEST},
    {"version", no_argument, 0, OPT_VERSION},
    {"report", required_argument, 0, OPT_REPORT},
    {"plan", no_argument, 0, OPT_PLAN},
    {"ranks", required_argument, 0, OPT_RANKS},
    {"ranks-per-node", required_argument, 0, OPT_RANKS_PER_NODE},
    {0, 0, 0, 0},
  };
  static const char *const report_names[] = {"short", "full"};
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
    int prev = optind ? optind : 1, li = -1;
    int c = getopt_long(argc, argv, "+h", longopts, &li);
    if (c == -1) break;
    const char *name = argv[prev];
    /* getopt_long takes a unique prefix for the whole name (--iter for --iters): refused, so
     * that a typo never runs as another option */
    if (li >= 0 && strncmp(name, "--", 2) == 0 && strcspn(name + 2, "=") != strlen(longopts[li].name)) {
      char typed[64], hint[160];
      snprintf(typed, sizeof typed, "%.*s", (int)strcspn(name + 2, "="), name + 2);
      suggest_option(typed, longopts, hint, sizeof hint);
      return fd_set_error(FD_ERR_USAGE, "unknown option '--%s'%s (see --help)", typed, hint);
    }
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
    case OPT_HELP_TEST:
      o->help_test = 1;
      break;
    case OPT_VERSION:
      o->version = 1;
      break;
    case OPT_REPORT:
      FD_CALL(parse_name("--report", optarg, report_names, 2, &idx));
      o->report = (fd_report_mode)idx;
      break;
    case OPT_PLAN:
      o->plan = 1;
      break;
    case OPT_RANKS:
      FD_CALL(parse_int("--ranks", optarg, 1, FD_PLAN_RANKS_MAX, &o->plan_ranks));
      break;
    case OPT_RANKS_PER_NODE:
      FD_CALL(parse_int("--ranks-per-node", optarg, 1, FD_PLAN_RANKS_MAX, &o->plan_ranks_per_node));
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
        char typed[64], hint[160] = "";
        snprintf(typed, sizeof typed, "%.*s", (int)strcspn(name, "="), name);
        /* and a value given to an option that takes none (--no-check=1) as '?' too: the name
         * itself is right, so no "unknown option" with the same name as its suggestion */
        if (strncmp(typed, "--", 2) == 0 && name[strlen(typed)] == '=')
          for (const struct option *lo = longopts; lo->name; lo++)
            if (lo->has_arg == no_argument && strcmp(typed + 2, lo->name) == 0)
              return fd_set_error(FD_ERR_USAGE, "option '%s' takes no value, not '%s' (see --help)", typed,
                                  name + strlen(typed) + 1);
        if (strncmp(typed, "--", 2) == 0) suggest_option(typed + 2, longopts, hint, sizeof hint);
        return fd_set_error(FD_ERR_USAGE, "unknown option '%s'%s (see --help)", typed, hint);
      }
    }
  }
  if (o->help || o->help_test || o->version) return FD_OK;
  if (optind < argc)
    return fd_set_error(FD_ERR_USAGE, "unexpected argument '%s' (options start with --; see --help)", argv[optind]);
  if (o->have_global && o->have_local)
    return fd_set_error(FD_ERR_USAGE, "--global and --local exclude each other: give one (strong or weak scaling)");
  if (!o->plan && (o->plan_ranks || o->plan_ranks_per_node))
    return fd_set_error(FD_ERR_USAGE, "%s applies to --plan: a run takes its launcher's ranks and nodes",
                        o->plan_ranks ? "--ranks" : "--ranks-per-node");
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
