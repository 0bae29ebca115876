/* options.h - the command line of fdmini (getopt_long). Parsing is pure (no MPI call, no I/O),
 * so every rank parses the same argv to the same result and the unit tests drive it directly. */
#ifndef FDMINI_OPTIONS_H
#define FDMINI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "backend.h" /* fd_kernel */
#include "halo.h"    /* fd_mpi_gpu, fd_halo_path */

typedef enum { FD_OP_LAPLACIAN = 0, FD_OP_HEAT, FD_OP_JACOBI, FD_OP_WAVE, FD_OP_COUNT } fd_op;
/* --tune: the start-up autotune of the stencil configuration (src/solver/tune.h) */
typedef enum { FD_TUNE_DEFAULT = 0, FD_TUNE_AUTO, FD_TUNE_OFF } fd_tune_mode;
/* --graphs: replay each pass's device work from captured graphs (src/solver/step.c, loop.c) */
typedef enum { FD_GRAPHS_AUTO = 0, FD_GRAPHS_ON, FD_GRAPHS_OFF } fd_graphs_mode;
/* --test-inject-fault[=KIND] (test only): a planted fault that verification must report.
 * FIELD: the last rank's centre point becomes 1.01 x + 0.5 before verification; TINY: it becomes
 * (1 + 1e-3) x (a fault the jacobi residual does not reveal); VELOCITY (wave): the stencil runs
 * with 1% more velocity than the problem states; SOURCE (wave): the source is 1% too strong;
 * EXCHANGE (2 or more ranks): the last rank skips the unpack of its first received region in
 * every exchange (halo_test_drop_unpack), so its ghosts there keep their NaN; ORDER (2 or more
 * ranks, GPU backends): the shell of a pass does not wait for the previous pass's interior
 * update (solver_pass, `ready`), the stream order the IPC path's runs rely on; ZERO (2 or more
 * ranks): every rank's halo messages carry no elements (halo_test_send_nothing: MPI sends 0,
 * IPC copies nothing), so its receive buffers keep their NaN and MPI's counts come up short;
 * SHELL (2 or more ranks): the passes that exchange do not update the shell (the one-point
 * layers next to faces with a neighbour, and with deep halos the rest of the box beyond the
 * interior), whose points keep their NaN. MIRROR (wave): the start holds a pair of opposite
 * displacements at mirror points in x (state_fill), which break the mirror symmetry and
 * nothing else the wave's checks see. RHS (jacobi): the right-hand side the sweeps use is
 * 1 + F times the stated one. TINY, SOURCE and RHS take a size F (KIND:F, inject_size), so
 * that a test can plant an error just above or below a check's tolerance. */
typedef enum {
  FD_FAULT_NONE = 0,
  FD_FAULT_FIELD,
  FD_FAULT_TINY,
  FD_FAULT_VELOCITY,
  FD_FAULT_SOURCE,
  FD_FAULT_EXCHANGE,
  FD_FAULT_ORDER,
  FD_FAULT_ZERO,
  FD_FAULT_SHELL,
  FD_FAULT_MIRROR,
  FD_FAULT_RHS
} fd_fault;

/* --restart: none, a file or directory (restart_path), or auto (the newest complete checkpoint
 * in --checkpoint-dir, or a fresh start when it holds none) */
/* --test-stall: the longest wait for a word, seconds (halo.h's HALO_SIGNAL_WAIT_S otherwise) */
#define FD_TEST_STALL_WAIT_S 2.0

typedef enum { FD_RESTART_NONE = 0, FD_RESTART_PATH, FD_RESTART_AUTO } fd_restart;
/* --test-kill and --test-signal (test only): rank `rank` does `what` once its run has reached
 * step `step`. what: --test-kill FD_TEST_AT_PASS (SIGKILL after the pass), FD_TEST_AT_WRITE
 * (SIGKILL in the checkpoint writer, half-way through the checkpoint of that step),
 * FD_TEST_AT_COMMIT (rank 0: SIGKILL after renaming the checkpoint of that step, before removing
 * the older ones); --test-signal: the signal number (SIGUSR1, SIGTERM) raised after the pass.
 * rank < 0: off. */
enum { FD_TEST_AT_PASS = 1, FD_TEST_AT_WRITE, FD_TEST_AT_COMMIT };
typedef struct {
  int rank;
  long long step;
  int what;
} fd_test_event;

#define FD_PATH_MAX 4096
#define FD_HALO_WIDTH_MAX 64

/* Most entries of --gpu-map (one per rank of a node). */
#define FD_GPU_MAP_MAX 64

/* --report: the report at the end of a run (src/io/summary.c, src/io/report.c) */
typedef enum { FD_REPORT_SHORT = 0, FD_REPORT_FULL } fd_report_mode;

/* --plan --ranks N: the most ranks a plan takes (src/model/plan.h) */
#define FD_PLAN_RANKS_MAX 10000000

typedef struct {
  int help;             /* --help: print usage, exit 0 */
  int help_test;        /* --help-test: print the test-only options, exit 0 */
  int version;          /* --version: print what this binary is, exit 0 */
  fd_report_mode report; /* --report short|full (default short) */
  int plan;             /* --plan: print the run's layout (src/model/plan.h), run nothing */
  int plan_ranks;       /* --ranks N (--plan only): the ranks of the planned run; 0: the job's */
  int plan_ranks_per_node; /* --ranks-per-node K (--plan only); 0: the job's (1 alone) */
  int have_global;      /* --global NX,NY,NZ (strong scaling) */
  long long global[3];
  int have_local;       /* --local nx,ny,nz (weak scaling, per rank) */
  long long local[3];
  int have_procs;       /* --procs PX,PY,PZ; else decomp_resolve_grid's default */
  int procs[3];
  fd_op op;             /* --op */
  int iters;            /* --iters, -1 = default of the backend */
  int warmup;           /* --warmup, -1 = default */
  int have_kernel;      /* --kernel SPEC (or --tile alone): the configuration is forced */
  fd_kernel kernel;     /* its configuration, zero fields = the backend's rules */
  int tile;             /* --tile M, 0 = not given (folded into kernel) */
  fd_tune_mode tune;    /* --tune auto|off; default: auto on GPUs unless --kernel */
  int check;            /* verification on unless --no-check */
  int overlap;          /* 1 unless --no-overlap */
  int halo_width;       /* --halo-width S: ghost layers, one exchange every S steps (default 1) */
  int fuse;             /* --fuse T: time steps per pass through memory (default 1); 0 = auto
                           (the start-up autotune picks T) */
  fd_graphs_mode graphs; /* --graphs auto|on|off (default auto) */
  fd_mpi_gpu mpi_gpu;   /* --mpi-gpu */
  fd_halo_path halo_path; /* --halo-path */
  int progress;         /* --progress SECONDS between progress lines, 0 = off; -1 default */
  char json[FD_PATH_MAX]; /* --json FILE, "" = none */
  char dump[FD_PATH_MAX]; /* --dump FILE: final field, raw real_t, global order, x fastest */
  int baseline;         /* --baseline: first time each rank's block alone (no exchange) */
  int bind_report;      /* --bind-report: print the rank/CPU/GPU binding table */
  int gpu_map_len;      /* --gpu-map D0,D1,...: entries given, 0 = not given */
  int gpu_map[FD_GPU_MAP_MAX]; /* node-local rank i takes visible device gpu_map[i mod len] */
  fd_fault inject_fault; /* --test-inject-fault[=KIND]: a planted fault the checks must see */
  double inject_size;   /* its size F (KIND:F): tiny 1e-3, source 1e-2, rhs 1e-2 unless given */
  /* --op wave */
  int have_velocity;    /* --velocity given */
  int nvel;             /* --velocity V (1) or V1,V2 (2: V1 below the mid-depth plane in z) */
  double velocity[2];   /* default 1.0 (unit cube) */
  int have_ricker;      /* --ricker-freq given */
  double ricker_hz;     /* --ricker-freq F: peak frequency of the source (default 10) */
  int have_source;      /* --source I,J,K: global interior indices (default the centre) */
  long long source[3];
  /* snapshots */
  int snapshot_every;   /* --snapshot-every N: the field after every N-th step, 0 = off */
  char snapshot_dir[FD_PATH_MAX]; /* --snapshot-dir DIR */
  int fail_snapshot;    /* --test-fail-snapshot-write K: the K-th snapshot's write fails (1-based) */
  /* checkpoints and restart (src/io/checkpoint.h) */
  int checkpoint_every; /* --checkpoint-every N: a checkpoint after every N-th step, 0 = none (with
                           --checkpoint-dir alone: only when a stop signal arrives) */
  char checkpoint_dir[FD_PATH_MAX]; /* --checkpoint-dir DIR, "" = no checkpoints, no stop signals */
  fd_restart restart;   /* --restart */
  char restart_path[FD_PATH_MAX]; /* --restart PATH: a checkpoint file or a directory of them */
  fd_test_event test_kill;   /* --test-kill RANK,STEP,pass|write|commit (test only) */
  fd_test_event test_signal; /* --test-signal RANK,STEP,usr1|term (test only) */
  int test_stall;            /* --test-stall RANK (test only): RANK's signalled launches never set
                                their neighbours' words, every wait ends after
                                FD_TEST_STALL_WAIT_S; -1 off */
  int test_delays;           /* --test-delays (test only): random waits before passes */
  int test_node_ranks;       /* --test-node-ranks K (test only): every K consecutive ranks of a
                                node count as a node of their own (bind_node); 0 off */
} fd_options;

/* Fills *o from argv. Returns 0 on success; FD_ERR_USAGE with fd_error_message() set to one
 * line saying what was expected. Not Collective. */
int fd_options_parse(int argc, char **argv, fd_options *o);

/* The options that do not apply to the backend of dev: FD_ERR_USAGE with one line, else FD_OK.
 * The host backend keeps fields in host memory and runs one stencil loop for every kernel
 * configuration, so what selects among GPU transports or GPU kernels is refused there:
 * --mpi-gpu aware|staged, --kernel, --tile, --tune auto. What names what the host does anyway
 * is accepted: --mpi-gpu auto, --halo-path auto|mpi, --tune off. (--halo-path ipc is refused
 * by the halo set-up on any backend that cannot share device memory.) Pure. */
int fd_options_check_backend(const fd_options *o, const be_info *dev);

/* The option values' names ("wave", "staged", "ipc"): static strings. */
const char *fd_op_name(fd_op op);
const char *fd_mpi_gpu_name(fd_mpi_gpu m);
const char *fd_graphs_name(fd_graphs_mode m);
const char *fd_halo_path_name(fd_halo_path p);

/* The --help text: one line of purpose per option, within 80 columns (docs/options.md has
 * the reasons). */
void fd_options_usage(FILE *out);
/* The --help-test text: the options for the tests only (docs/testing.md). */
void fd_options_usage_test(FILE *out);

#endif
