/* test_options.c - option parsing: defaults, every accepted form, and every bad input with the
 * message the user sees; process-grid and size resolution (decomp_resolve_grid). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "fd_error.h"
#include "options.h"
#include "decomp.h"

#define MAXARGS 16

/* Parses a NULL-terminated list of arguments (argv[0] added). */
static int parse(fd_options *o, const char *const *args)
{
  char *argv[MAXARGS + 2];
  int argc = 0;
  argv[argc++] = (char *)"fdmini";
  for (; *args && argc <= MAXARGS; args++) argv[argc++] = (char *)*args;
  argv[argc] = NULL;
  return fd_options_parse(argc, argv, o);
}

static void test_defaults(void **state)
{
  (void)state;
  fd_options o;
  const char *args[] = {NULL};
  assert_int_equal(parse(&o, args), FD_OK);
  assert_int_equal(o.op, FD_OP_LAPLACIAN);
  assert_int_equal(o.iters, -1);
  assert_false(o.have_kernel);
  assert_int_equal(o.tile, 0);
  assert_int_equal(o.tune, FD_TUNE_DEFAULT);
  assert_true(o.check);
  assert_true(o.overlap);
  assert_int_equal(o.mpi_gpu, FD_MPI_GPU_AUTO);
  assert_int_equal(o.halo_path, FD_HALO_PATH_AUTO);
  assert_int_equal(o.halo_width, 1);
  assert_int_equal(o.fuse, 1);
  assert_int_equal(o.graphs, FD_GRAPHS_AUTO);
  assert_false(o.have_global || o.have_local || o.have_procs);
  assert_int_equal(o.checkpoint_every, 0);
  assert_string_equal(o.checkpoint_dir, "");
  assert_int_equal(o.restart, FD_RESTART_NONE);
  assert_true(o.test_kill.rank < 0 && o.test_signal.rank < 0);
  assert_true(o.test_stall < 0 && !o.test_delays);
}

/* A kernel spec round-trips: fd_kernel_format of the parsed spec gives the spec back, and
 * --tile alone means the tiled per-plane kernel. */
static void test_kernel_spec_round_trip(void **state)
{
  (void)state;
  const char *specs[] = {"baseline", "baseline:block=128x2", "reordered:tile=2,vec=2,block=256x1,strips=3",
                         "zmarch:tile=1,vec=2,block=32x8,chunk=8", "zmarch:tile=2,chunk=1000,strips=4"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    fd_kernel k;
    char err[128], back[FD_KERNEL_SPEC_MAX];
    assert_int_equal(fd_kernel_parse(specs[i], &k, err, sizeof err), 0);
    fd_kernel_format(&k, back, sizeof back);
    assert_string_equal(back, specs[i]);
  }
  fd_options o;
  const char *args[] = {"--tile", "8", NULL};
  assert_int_equal(parse(&o, args), FD_OK);
  assert_true(o.have_kernel);
  assert_int_equal(o.kernel.id, FD_KERNEL_REORDERED);
  assert_int_equal(o.kernel.tile, 8);
  const char *args2[] = {"--kernel", "zmarch:chunk=6", "--tile", "2", "--tune", "off", NULL};
  assert_int_equal(parse(&o, args2), FD_OK);
  assert_int_equal(o.kernel.id, FD_KERNEL_ZMARCH);
  assert_int_equal(o.kernel.tile, 2);
  assert_int_equal(o.kernel.chunk, 6);
  assert_int_equal(o.tune, FD_TUNE_OFF);
}

static void test_every_option_accepted(void **state)
{
  (void)state;
  fd_options o;
  const char *args[] = {"--global", "37,23,19", "--procs", "2,3,1", "--op", "jacobi",
                        "--iters", "7", "--warmup=0", "--kernel", "reordered", "--tile", "16",
                        "--json", "out.json", "--no-check", NULL};
  assert_int_equal(parse(&o, args), FD_OK);
  assert_true(o.have_global);
  assert_int_equal(o.global[0], 37);
  assert_int_equal(o.global[2], 19);
  assert_int_equal(o.procs[1], 3);
  assert_int_equal(o.op, FD_OP_JACOBI);
  assert_int_equal(o.iters, 7);
  assert_int_equal(o.warmup, 0);
  assert_true(o.have_kernel);
  assert_int_equal(o.kernel.id, FD_KERNEL_REORDERED);
  assert_int_equal(o.kernel.tile, 16);
  assert_string_equal(o.json, "out.json");
  assert_false(o.check);
  const char *args2[] = {"--local", "8,9,10", "--op", "heat", "--no-overlap", "--mpi-gpu",
                         "staged", "--dump", "f.raw", "--progress", "0", "--halo-path", "ipc", NULL};
  assert_int_equal(parse(&o, args2), FD_OK);
  assert_true(o.have_local);
  assert_int_equal(o.local[1], 9);
  assert_int_equal(o.op, FD_OP_HEAT);
  assert_false(o.overlap);
  assert_int_equal(o.mpi_gpu, FD_MPI_GPU_STAGED);
  assert_int_equal(o.halo_path, FD_HALO_PATH_IPC);
  assert_string_equal(o.dump, "f.raw");
  assert_int_equal(o.progress, 0);
  const char *args3[] = {"--op", "wave", "--velocity", "1.5,3", "--ricker-freq", "12.5", "--source",
                         "3,4,5", "--snapshot-every", "10", "--snapshot-dir", "snaps", NULL};
  assert_int_equal(parse(&o, args3), FD_OK);
  assert_int_equal(o.op, FD_OP_WAVE);
  assert_int_equal(o.nvel, 2);
  assert_true(o.velocity[0] == 1.5 && o.velocity[1] == 3.0 && o.ricker_hz == 12.5);
  assert_true(o.have_source && o.source[0] == 3 && o.source[2] == 5);
  assert_int_equal(o.snapshot_every, 10);
  assert_string_equal(o.snapshot_dir, "snaps");
  const char *args4[] = {"--op", "jacobi", "--halo-width", "4", "--fuse", "2", "--snapshot-every", "6",
                         "--snapshot-dir", "d", NULL};
  assert_int_equal(parse(&o, args4), FD_OK);
  assert_int_equal(o.halo_width, 4);
  assert_int_equal(o.fuse, 2);
  const char *args5[] = {"--op", "heat", "--fuse", "auto", "--halo-width", "64", NULL};
  assert_int_equal(parse(&o, args5), FD_OK);
  assert_int_equal(o.fuse, 0); /* auto */
  assert_int_equal(o.halo_width, 64);
  /* the test-only faults: field by default, and each kind by name */
  static const char *const kinds[] = {"field", "tiny", "velocity", "source", "exchange", "order", "zero", "shell",
                                      "mirror", "rhs"};
  const fd_fault faults[] = {FD_FAULT_FIELD, FD_FAULT_TINY, FD_FAULT_VELOCITY, FD_FAULT_SOURCE, FD_FAULT_EXCHANGE,
                             FD_FAULT_ORDER, FD_FAULT_ZERO, FD_FAULT_SHELL, FD_FAULT_MIRROR, FD_FAULT_RHS};
  const double sizes[] = {0, 1e-3, 0, 1e-2, 0, 0, 0, 0, 0, 1e-2}; /* the defaults of KIND:F */
  const char *plain[] = {"--op", "wave", "--test-inject-fault", NULL};
  assert_int_equal(parse(&o, plain), FD_OK);
  assert_int_equal(o.inject_fault, FD_FAULT_FIELD);
  for (int k = 0; k < 10; k++) {
    char arg[64];
    snprintf(arg, sizeof arg, "--test-inject-fault=%s", kinds[k]);
    const char *a[] = {"--op", faults[k] == FD_FAULT_RHS ? "jacobi" : "wave", arg, NULL};
    assert_int_equal(parse(&o, a), FD_OK);
    assert_int_equal(o.inject_fault, faults[k]);
    assert_true(o.inject_size == sizes[k]);
  }
  /* a size for the kinds that take one */
  const char *sized[] = {"--op", "wave", "--test-inject-fault=source:2.5e-13", NULL};
  assert_int_equal(parse(&o, sized), FD_OK);
  assert_int_equal(o.inject_fault, FD_FAULT_SOURCE);
  assert_true(o.inject_size == 2.5e-13);
  const char *sized2[] = {"--op", "heat", "--test-inject-fault=tiny:1", NULL};
  assert_int_equal(parse(&o, sized2), FD_OK);
  assert_true(o.inject_fault == FD_FAULT_TINY && o.inject_size == 1.0);
  const char *exch[] = {"--op", "laplacian", "--test-inject-fault=exchange", NULL};
  assert_int_equal(parse(&o, exch), FD_OK); /* every operator: the exchange is every one's */
  assert_int_equal(o.inject_fault, FD_FAULT_EXCHANGE);
  const char *args6[] = {"--op", "heat", "--fuse", "2", "--checkpoint-every", "1000", "--checkpoint-dir", "ck",
                         "--restart", "auto", "--test-kill", "3,17,write", "--test-signal", "0,9,term", NULL};
  assert_int_equal(parse(&o, args6), FD_OK);
  assert_int_equal(o.checkpoint_every, 1000);
  assert_string_equal(o.checkpoint_dir, "ck");
  assert_int_equal(o.restart, FD_RESTART_AUTO);
  assert_true(o.test_kill.rank == 3 && o.test_kill.step == 17 && o.test_kill.what == FD_TEST_AT_WRITE);
  assert_true(o.test_signal.rank == 0 && o.test_signal.step == 9 && o.test_signal.what == SIGTERM);
  /* a checkpoint dir alone: checkpoints on a stop signal only; --restart PATH without one */
  const char *args7[] = {"--checkpoint-dir", "d", "--test-kill", "0,5,commit", "--test-signal", "1,2,usr1", NULL};
  assert_int_equal(parse(&o, args7), FD_OK);
  assert_true(o.checkpoint_every == 0 && o.restart == FD_RESTART_NONE && o.test_kill.what == FD_TEST_AT_COMMIT &&
              o.test_signal.what == SIGUSR1);
  const char *args9[] = {"--test-stall", "3", "--test-delays", NULL};
  assert_int_equal(parse(&o, args9), FD_OK);
  assert_true(o.test_stall == 3 && o.test_delays == 1);
  const char *args10[] = {"--test-stall", "x", NULL};
  assert_int_not_equal(parse(&o, args10), FD_OK);
  const char *args8[] = {"--restart", "run/ckpt_0000000100.fdmini", NULL};
  assert_int_equal(parse(&o, args8), FD_OK);
  assert_int_equal(o.restart, FD_RESTART_PATH);
  assert_string_equal(o.restart_path, "run/ckpt_0000000100.fdmini");
  const char *g_on[] = {"--graphs", "on", NULL}, *g_off[] = {"--graphs", "off", NULL},
             *g_auto[] = {"--graphs", "auto", NULL};
  assert_int_equal(parse(&o, g_on), FD_OK);
  assert_int_equal(o.graphs, FD_GRAPHS_ON);
  assert_string_equal(fd_graphs_name(o.graphs), "on");
  assert_int_equal(parse(&o, g_off), FD_OK);
  assert_int_equal(o.graphs, FD_GRAPHS_OFF);
  assert_string_equal(fd_graphs_name(o.graphs), "off");
  assert_int_equal(parse(&o, g_auto), FD_OK);
  assert_int_equal(o.graphs, FD_GRAPHS_AUTO);
  assert_string_equal(fd_graphs_name(o.graphs), "auto");
  const char *help[] = {"--help", NULL};
  assert_int_equal(parse(&o, help), FD_OK);
  assert_true(o.help);
}

/* --help-test names the test-only faults (no hidden knobs), the exchange fault among them. */
static void test_usage_lists_the_test_faults(void **state)
{
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  assert_non_null(mem);
  fd_options_usage_test(mem);
  fclose(mem);
  assert_non_null(strstr(text, "--test-inject-fault[=KIND[:F]]"));
  assert_non_null(strstr(text, "mirror\n                      (wave)"));
  assert_non_null(strstr(text, "rhs[:F] (jacobi)"));
  assert_non_null(strstr(text, "exchange (2 or more ranks)"));
  assert_non_null(strstr(text, "order (2 or more ranks, GPU)"));
  assert_non_null(strstr(text, "--test-fail-snapshot-write K"));
  assert_non_null(strstr(text, "--test-kill RANK,STEP,pass|write|commit"));
  assert_non_null(strstr(text, "--test-signal RANK,STEP,usr1|term"));
  assert_null(strstr(text, "%%")); /* printf escapes resolved */
  free(text);
}

/* Each bad input: the exact fragment of the message a user needs to fix it. */
typedef struct {
  const char *args[9];
  const char *message;
} bad_case;

static const bad_case bad_cases[] = {
  {{"--bogus"}, "unknown option '--bogus'"},
  {{"-x"}, "unknown option '-x'"},
  {{"stray"}, "unexpected argument 'stray'"},
  {{"--global", "64,64"}, "--global: '64,64' should be three comma-separated integers"},
  {{"--global", "64,64,64,64"}, "should be three comma-separated integers"},
  {{"--global", "64,,64"}, "should be three comma-separated integers"},
  {{"--global", "a,b,c"}, "should be three comma-separated integers"},
  {{"--global", "0,64,64"}, "--global: 0 is out of range"},
  {{"--global", "-8,64,64"}, "--global: -8 is out of range"},
  {{"--local", "8,8,99999999999999999999"}, "--local: 99999999999999999999 is out of range"},
  {{"--global", "64,64,64", "--local", "8,8,8"}, "--global and --local exclude each other"},
  {{"--procs", "2,x,1"}, "--procs: '2,x,1' should be three comma-separated integers"},
  {{"--procs", "0,1,1"}, "--procs: 0 is out of range"},
  {{"--op", "sound"}, "--op: unknown value 'sound', expected laplacian, heat, jacobi or wave"},
  {{"--op", "wave", "--velocity", "0"}, "--velocity: '0' should be V or V1,V2"},
  {{"--op", "wave", "--velocity", "1,2,3"}, "--velocity: '1,2,3' should be V or V1,V2"},
  {{"--op", "wave", "--ricker-freq", "-1"}, "--ricker-freq: '-1' should be a positive number"},
  {{"--op", "heat", "--velocity", "1,2"}, "--velocity applies to --op wave only, not to --op heat"},
  {{"--op", "jacobi", "--velocity", "2"}, "--velocity applies to --op wave only, not to --op jacobi"},
  {{"--ricker-freq", "5"}, "--ricker-freq applies to --op wave only, not to --op laplacian"},
  {{"--op", "heat", "--source", "1,1,1"}, "--source applies to --op wave only, not to --op heat"},
  {{"--source", "1,2"}, "--source: '1,2' should be three comma-separated integers"},
  {{"--snapshot-every", "4"}, "--snapshot-every N and --snapshot-dir DIR go together"},
  {{"--snapshot-dir", "d"}, "--snapshot-every N and --snapshot-dir DIR go together"},
  {{"--snapshot-every", "x", "--snapshot-dir", "d"}, "--snapshot-every: 'x' is not an integer"},
  {{"--snapshot-dir", ""}, "--snapshot-dir: expected a directory name"},
  {{"--iters", "0"}, "--iters: 0 is out of range"},
  {{"--iters", "10x"}, "--iters: '10x' is not an integer"},
  {{"--iters", "99999999999999999999"}, "--iters: 99999999999999999999 is out of range"},
  {{"--iters"}, "option '--iters' needs a value"},
  {{"--warmup", "-1"}, "--warmup: -1 is out of range"},
  {{"--tile", "3"}, "--tile: 3 is not a valid tile factor, expected 1, 2, 4, 8 or 16"},
  {{"--tile", "32"}, "--tile: 32 is out of range"},
  {{"--kernel", "fast"}, "--kernel: kernel spec 'fast': unknown kernel, expected baseline, reordered or zmarch"},
  {{"--kernel", "baseline", "--tile", "4"}, "--tile applies to the reordered and zmarch kernels"},
  {{"--kernel", "zmarch", "--tile", "4"}, "--tile: zmarch takes 1 or 2 rows per thread, not 4"},
  {{"--kernel", "zmarch:tile=4"}, "zmarch takes tile 1 or 2"},
  {{"--kernel", "zmarch:chunk=0"}, "chunk must be a number of planes >= 1"},
  {{"--kernel", "zmarch:chunk"}, "expected key=value"},
  {{"--kernel", "zmarch:block=64x9"}, "block must be BXxBY with BX*BY <= 512 threads"},
  {{"--kernel", "zmarch:block=64"}, "block must be BXxBY"},
  {{"--kernel", "zmarch:vec=3"}, "vec must be 1 or 2"},
  {{"--kernel", "zmarch:speed=9"}, "unknown key, expected tile, vec, block, chunk or strips"},
  {{"--kernel", "zmarch:"}, "nothing after ':'"},
  {{"--kernel", "zmarch:chunk=4,"}, "nothing after ','"},
  {{"--kernel", "reordered:chunk=4"}, "chunk applies to zmarch only"},
  {{"--kernel", "baseline:tile=2"}, "baseline takes only block"},
  {{"--kernel", "reordered:tile=2", "--tile", "4"}, "--tile 4 and tile=2 in --kernel disagree"},
  {{"--tune", "fast"}, "--tune: unknown value 'fast', expected auto or off"},
  {{"--tune", "auto", "--kernel", "zmarch"}, "--tune auto and --kernel/--tile exclude each other"},
  {{"--tune", "auto", "--tile", "2"}, "--tune auto and --kernel/--tile exclude each other"},
  {{"--mpi-gpu", "maybe"}, "--mpi-gpu: unknown value 'maybe', expected auto, aware or staged"},
  {{"--halo-path", "nvlink"}, "--halo-path: unknown value 'nvlink', expected auto, mpi, ipc, mixed or proxy"},
  {{"--halo-path"}, "option '--halo-path' needs a value"},
  {{"--graphs", "yes"}, "--graphs: unknown value 'yes', expected auto, on or off"},
  {{"--graphs"}, "option '--graphs' needs a value"},
  {{"--json", ""}, "--json: expected a file name"},
  {{"--progress", "-3"}, "--progress: -3 is out of range"},
  {{"--test-inject-fault=loud"}, "--test-inject-fault: unknown value 'loud', expected field, tiny, velocity, source, exchange, order, zero, shell, mirror or rhs"},
  {{"--test-inject-fault=tiny:"}, "--test-inject-fault=tiny: '' should be a size in (0, 1], e.g. tiny:1e-12"},
  {{"--test-inject-fault=tiny:0"}, "--test-inject-fault=tiny: '0' should be a size in (0, 1], e.g. tiny:1e-12"},
  {{"--test-inject-fault=source:2"}, "--test-inject-fault=source: '2' should be a size in (0, 1], e.g. source:1e-12"},
  {{"--test-inject-fault=rhs:1e-3x"}, "--test-inject-fault=rhs: '1e-3x' should be a size in (0, 1], e.g. rhs:1e-12"},
  {{"--test-inject-fault=field:0.1"}, "--test-inject-fault=field takes no size: KIND:F applies to tiny, source and rhs"},
  {{"--test-inject-fault=mirror"}, "--test-inject-fault=mirror applies to --op wave only"},
  {{"--op", "heat", "--test-inject-fault=rhs"}, "--test-inject-fault=rhs applies to --op jacobi only"},
  {{"--op", "jacobi", "--test-inject-fault=velocity"}, "--test-inject-fault=velocity and =source apply to --op wave only"},
  {{"--halo-width", "0"}, "--halo-width: 0 is out of range, expected 1..64"},
  {{"--halo-width", "2x"}, "--halo-width: '2x' is not an integer"},
  {{"--fuse", "0"}, "--fuse: '0' is not valid, expected 1..4 time steps per pass or auto"},
  {{"--fuse", "fast"}, "--fuse: 'fast' is not valid"},
  {{"--op", "heat", "--fuse"}, "option '--fuse' needs a value"},
  {{"--halo-width", "3"}, "--halo-width 3: laplacian is one application, not a time stepper"},
  {{"--op", "wave", "--fuse", "2"}, "--fuse 2: several steps per pass apply to heat and jacobi, not wave"},
  {{"--fuse", "auto"}, "--fuse auto: several steps per pass apply to heat and jacobi, not laplacian"},
  {{"--op", "heat", "--fuse", "auto", "--tune", "off"}, "--fuse auto needs the start-up autotune"},
  {{"--op", "jacobi", "--fuse", "2", "--snapshot-every", "3", "--snapshot-dir", "d"},
   "--snapshot-every 3 is not a multiple of --fuse 2"},
  {{"--checkpoint-every", "10"}, "--checkpoint-every 10 needs --checkpoint-dir DIR"},
  {{"--checkpoint-every", "0", "--checkpoint-dir", "d"}, "--checkpoint-every: 0 is out of range"},
  {{"--checkpoint-every", "x", "--checkpoint-dir", "d"}, "--checkpoint-every: 'x' is not an integer"},
  {{"--checkpoint-dir", ""}, "--checkpoint-dir: expected a directory name"},
  {{"--restart", ""}, "--restart: expected a checkpoint file, a directory of them, or auto"},
  {{"--restart"}, "option '--restart' needs a value"},
  {{"--restart", "auto"}, "--restart auto looks for the newest checkpoint in --checkpoint-dir"},
  {{"--op", "heat", "--fuse", "4", "--checkpoint-every", "6", "--checkpoint-dir", "d"},
   "--checkpoint-every 6 is not a multiple of --fuse 4"},
  {{"--test-fail-snapshot-write", "1"}, "--test-fail-snapshot-write applies to runs with --snapshot-every"},
  {{"--test-kill", "1,5,pass"}, "--test-kill and --test-signal apply to runs with --checkpoint-dir"},
  {{"--test-signal", "0,5,usr1"}, "--test-kill and --test-signal apply to runs with --checkpoint-dir"},
  {{"--test-kill", "1,5,commit", "--checkpoint-dir", "d"}, "rank 0 commits checkpoints, so RANK must be 0"},
  {{"--test-kill", "1,5", "--checkpoint-dir", "d"}, "--test-kill: '1,5' should be RANK,STEP,WHAT with WHAT pass, write or commit"},
  {{"--test-kill", "1,5,boom", "--checkpoint-dir", "d"}, "--test-kill: unknown event 'boom', expected pass, write or commit"},
  {{"--test-signal", "1,0,usr1", "--checkpoint-dir", "d"}, "--test-signal: 0 is out of range"},
  {{"--test-signal", "1,3,hup", "--checkpoint-dir", "d"}, "--test-signal: unknown event 'hup', expected usr1 or term"},
};

static void test_bad_input_gives_one_clear_message(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    fd_options o;
    int rc = parse(&o, bad_cases[i].args);
    const char *msg = fd_error_message();
    if (rc != FD_ERR_USAGE || !strstr(msg, bad_cases[i].message) || strchr(msg, '\n'))
      fail_msg("case %zu (%s ...): rc %d, message '%s', expected '%s'", i, bad_cases[i].args[0],
               rc, msg, bad_cases[i].message);
  }
}

/* Options match whole names: a prefix (which getopt_long takes) or a typo is refused with the
 * options it could have meant; the report, plan and version options parse. */
static void test_options_match_exactly(void **state)
{
  (void)state;
  static const bad_case cases[] = {
    {{"--iter", "5"}, "unknown option '--iter'; did you mean --iters? (see --help)"},
    {{"--iter=5"}, "unknown option '--iter'; did you mean --iters?"},
    {{"--glob", "8,8,8"}, "unknown option '--glob'; did you mean --global?"},
    {{"--halo-wdith", "2"}, "unknown option '--halo-wdith'; did you mean --halo-width?"},
    {{"--snap", "3"}, "unknown option '--snap'; did you mean --snapshot-every or --snapshot-dir?"},
    {{"--itres", "3"}, "unknown option '--itres'; did you mean --iters?"},
    {{"--base"}, "unknown option '--base'; did you mean --baseline?"},
    {{"--bogus"}, "unknown option '--bogus' (see --help)"},
    /* a value to an option that takes none: its name is right, the value is not */
    {{"--no-check=1"}, "option '--no-check' takes no value, not '1' (see --help)"},
    {{"--baseline="}, "option '--baseline' takes no value, not ''"},
    {{"--help=foo"}, "option '--help' takes no value, not 'foo'"},
    {{"--no-ch=1"}, "unknown option '--no-ch'; did you mean --no-check?"},
    {{"--report", "long"}, "--report: unknown value 'long', expected short or full"},
    {{"--ranks", "4"}, "--ranks applies to --plan"},
    {{"--ranks-per-node", "4"}, "--ranks-per-node applies to --plan"},
    {{"--plan", "--ranks", "0"}, "--ranks: 0 is out of range, expected 1..10000000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fd_options o;
    int rc = parse(&o, cases[i].args);
    const char *msg = fd_error_message();
    if (rc != FD_ERR_USAGE || !strstr(msg, cases[i].message) || strchr(msg, '\n'))
      fail_msg("case %zu (%s ...): rc %d, message '%s', expected '%s'", i, cases[i].args[0], rc, msg,
               cases[i].message);
  }
  /* no message suggests a test-free name for "--bogus" */
  fd_options o;
  const char *bogus[] = {"--bogus", NULL};
  assert_int_equal(parse(&o, bogus), FD_ERR_USAGE);
  assert_null(strstr(fd_error_message(), "did you mean"));
  const char *plan[] = {"--plan", "--ranks", "100000", "--ranks-per-node", "8", "--report", "full", NULL};
  assert_int_equal(parse(&o, plan), FD_OK);
  assert_true(o.plan && o.plan_ranks == 100000 && o.plan_ranks_per_node == 8 && o.report == FD_REPORT_FULL);
  const char *dflt[] = {NULL};
  assert_int_equal(parse(&o, dflt), FD_OK);
  assert_true(!o.plan && o.plan_ranks == 0 && o.report == FD_REPORT_SHORT);
  const char *version[] = {"--version", NULL}, *help_test[] = {"--help-test", NULL};
  assert_int_equal(parse(&o, version), FD_OK);
  assert_true(o.version);
  assert_int_equal(parse(&o, help_test), FD_OK);
  assert_true(o.help_test);
}

/* --help: one line of purpose per option, within 80 columns, no test-only option in it (those
 * are --help-test's). */
static void test_help_fits_80_columns(void **state)
{
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  assert_non_null(mem);
  fd_options_usage(mem);
  fclose(mem);
  int lines = 0;
  for (char *line = text; *line; lines++) {
    const size_t n = strcspn(line, "\n");
    if (n > 80) fail_msg("a --help line of %zu columns: %.*s", n, (int)n, line);
    line += n + (line[n] == '\n');
  }
  assert_true(lines < 60);
  assert_null(strstr(text, "--test-"));
  assert_non_null(strstr(text, "--help-test"));
  assert_non_null(strstr(text, "--plan"));
  assert_non_null(strstr(text, "--version"));
  free(text);
}

/* Parsing twice gives the same result (getopt state is reset). */
static void test_parsing_is_repeatable(void **state)
{
  (void)state;
  fd_options a, b;
  const char *args[] = {"--op", "heat", "--iters", "3", NULL};
  assert_int_equal(parse(&a, args), FD_OK);
  assert_int_equal(parse(&b, args), FD_OK);
  assert_memory_equal(&a, &b, sizeof a);
}

/* Options that select among GPU transports or kernels are refused on the host backend (it has
 * one loop and host memory) and accepted on a GPU backend; values that name what the host does
 * anyway are accepted on both. */
static void test_backend_options_apply_or_are_refused(void **state)
{
  (void)state;
  be_info host = {.backend = "host", .is_accelerator = 0}, gpu = {.backend = "cuda", .is_accelerator = 1};
  static const struct {
    const char *args[3];
    const char *host_error; /* NULL: accepted on the host too */
  } cases[] = {
    {{"--mpi-gpu", "aware"}, "--mpi-gpu aware applies to GPU backends"},
    {{"--mpi-gpu", "staged"}, "--mpi-gpu staged applies to GPU backends"},
    {{"--kernel", "baseline"}, "--kernel and --tile apply to GPU backends"},
    {{"--tile", "8"}, "--kernel and --tile apply to GPU backends"},
    {{"--tune", "auto"}, "--tune auto applies to GPU backends"},
    {{"--mpi-gpu", "auto"}, NULL},
    {{"--halo-path", "mpi"}, NULL},
    {{"--tune", "off"}, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fd_options o;
    assert_int_equal(parse(&o, cases[i].args), FD_OK);
    assert_int_equal(fd_options_check_backend(&o, &gpu), FD_OK);
    int rc = fd_options_check_backend(&o, &host);
    if (!cases[i].host_error) {
      assert_int_equal(rc, FD_OK);
    } else if (rc != FD_ERR_USAGE || !strstr(fd_error_message(), cases[i].host_error)) {
      fail_msg("%s %s on host: rc %d, '%s'", cases[i].args[0], cases[i].args[1], rc, fd_error_message());
    }
  }
}

static void test_resolve_grid_checks_procs_and_thickness(void **state)
{
  (void)state;
  const int host = 0, gpu = 1; /* accelerator */
  fd_options o;
  long long N[3];
  int P[3];
  const char *mismatch[] = {"--procs", "3,1,1", NULL};
  parse(&o, mismatch);
  assert_int_equal(decomp_resolve_grid(&o, 8, host, N, P), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "--procs 3,1,1 has 3 ranks but the job has 8"));
  const char *one[] = {"--procs", "1,1,1", NULL}; /* a count of 1 in the singular */
  parse(&o, one);
  assert_int_equal(decomp_resolve_grid(&o, 2, host, N, P), FD_ERR_USAGE);
  assert_string_equal(fd_error_message(), "--procs 1,1,1 has 1 rank but the job has 2");

  const char *thin[] = {"--global", "3,64,64", "--procs", "2,1,1", NULL};
  parse(&o, thin);
  assert_int_equal(decomp_resolve_grid(&o, 2, host, N, P), FD_ERR_USAGE);
  assert_non_null(strstr(fd_error_message(), "subdomain too thin"));

  const char *weak[] = {"--local", "10,20,30", "--procs", "2,2,1", NULL};
  parse(&o, weak);
  assert_int_equal(decomp_resolve_grid(&o, 4, host, N, P), FD_OK);
  assert_int_equal(N[0], 20);
  assert_int_equal(N[1], 40);
  assert_int_equal(N[2], 30);

  const char *none[] = {"--procs", "1,1,2", NULL};
  parse(&o, none);
  assert_int_equal(decomp_resolve_grid(&o, 2, gpu, N, P), FD_OK); /* GPU default 512^3 per rank */
  assert_int_equal(N[2], 1024);
  assert_int_equal(N[0], 512);
  assert_int_equal(decomp_resolve_grid(&o, 2, host, N, P), FD_OK); /* host default global */
  assert_int_equal(N[0], 128);

  const char *dims[] = {"--global", "40,40,40", NULL};
  parse(&o, dims);
  assert_int_equal(decomp_resolve_grid(&o, 12, host, N, P), FD_OK); /* MPI_Dims_create */
  assert_int_equal(P[0] * P[1] * P[2], 12);
}

/* decomp_resolve_grid with argument list args on `ranks` ranks (host): FD_OK and P == want. */
static void expect_grid(const char *const *args, int ranks, int px, int py, int pz)
{
  fd_options o;
  long long N[3];
  int P[3];
  assert_int_equal(parse(&o, args), FD_OK);
  if (decomp_resolve_grid(&o, ranks, 0, N, P) != FD_OK)
    fail_msg("%d ranks: %s", ranks, fd_error_message());
  if (P[0] != px || P[1] != py || P[2] != pz)
    fail_msg("%d ranks: grid %d x %d x %d, expected %d x %d x %d", ranks, P[0], P[1], P[2], px,
             py, pz);
}

/* decomp_resolve_grid with argument list args on `ranks` ranks (host): FD_ERR_USAGE with the
 * message `text` (exact: the whole message; else a part of it). */
static void expect_grid_error(const char *const *args, int ranks, const char *text, int exact)
{
  fd_options o;
  long long N[3];
  int P[3];
  assert_int_equal(parse(&o, args), FD_OK);
  assert_int_equal(decomp_resolve_grid(&o, ranks, 0, N, P), FD_ERR_USAGE);
  if (exact)
    assert_string_equal(fd_error_message(), text);
  else
    assert_non_null(strstr(fd_error_message(), text));
}

/* The default process grid: MPI_Dims_create's factors, the largest to z, then y, wherever
 * they leave every block thick enough (cubes, the shapes the tests and results run, and a
 * shape whose least cut grid would differ); where they do not, the thick enough grid with the
 * least cut area; where none is thick enough, one error that says so. */
static void test_resolve_grid_default_and_its_fallback(void **state)
{
  (void)state;
  const char *host[] = {NULL}; /* 128^3 */
  for (int ranks = 1; ranks <= 64; ranks++) {
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(ranks, 3, dims);
    expect_grid(host, ranks, dims[2], dims[1], dims[0]);
  }
  expect_grid(host, 2, 1, 1, 2);
  expect_grid(host, 4, 1, 2, 2);
  expect_grid(host, 6, 1, 2, 3);
  expect_grid(host, 8, 2, 2, 2);
  expect_grid(host, 12, 2, 2, 3);
  const char *odd[] = {"--global", "37,23,19", NULL};
  expect_grid(odd, 6, 1, 2, 3);
  const char *small[] = {"--global", "33,17,9", NULL};
  expect_grid(small, 2, 1, 1, 2);
  const char *deep[] = {"--op", "heat", "--halo-width", "3", "--global", "33,17,19", NULL};
  expect_grid(deep, 4, 1, 2, 2);
  /* 1000 x 8 x 8 on 4: 4 x 1 x 1 would cut less, but the default fits and stays */
  const char *fits[] = {"--global", "1000,8,8", NULL};
  expect_grid(fits, 4, 1, 2, 2);

  /* the default 1 x 2 x 2 and 2 x 2 x 2 leave 1 point in x or y */
  const char *rod[] = {"--global", "2,2,1000", NULL};
  expect_grid(rod, 4, 1, 1, 4);
  expect_grid(rod, 8, 1, 1, 8);
  const char *xrod[] = {"--global", "1000,3,3", NULL};
  expect_grid(xrod, 8, 8, 1, 1);
  /* 3 x 40 x 40 on 8: 1 x 2 x 4 and 1 x 4 x 2 cut 480 points each; the tie goes to z */
  const char *slab[] = {"--global", "3,40,40", NULL};
  expect_grid(slab, 8, 1, 2, 4);
  const char *slab2[] = {"--global", "64,64,3", NULL};
  expect_grid(slab2, 2, 1, 2, 1);
  /* the halo width counts along split dimensions: 6 / 2 = 3 points fit width 1, not width 4 */
  const char *wide1[] = {"--op", "heat", "--global", "6,6,1000", NULL};
  expect_grid(wide1, 4, 1, 2, 2);
  const char *wide4[] = {"--op", "heat", "--halo-width", "4", "--global", "6,6,1000", NULL};
  expect_grid(wide4, 4, 1, 1, 4);

  /* --procs is taken as given, thin or not */
  const char *given[] = {"--global", "2,2,1000", "--procs", "1,2,2", NULL};
  expect_grid_error(given, 4, "subdomain too thin: 2 points over 2 ranks in y", 0);
  /* counts of 1 in the singular */
  const char *given1[] = {"--global", "1,16,16", "--procs", "1,1,1", NULL};
  expect_grid_error(
      given1, 1, "subdomain too thin: 1 point over 1 rank in x leaves 1 per rank, need at least 2",
      1);
  /* no grid fits: one error that says so, and what would fit: fewer ranks where one rank
   * does, only a larger grid where an axis has 1 point (one rank does not fit it either) */
  const char *none[] = {"--global", "2,2,3", NULL};
  expect_grid_error(none, 8,
                    "subdomain too thin: no process grid of 8 ranks (default or --procs "
                    "PX,PY,PZ) leaves every block of the 2 x 2 x 3 grid 2 or more points per "
                    "dimension; use fewer ranks or a larger grid",
                    1);
  const char *flat[] = {"--global", "1,1,3", NULL};
  expect_grid_error(flat, 8,
                    "subdomain too thin: the 1 x 1 x 3 grid has 1 point along x and y, and every "
                    "block needs 2 or more per dimension on any number of ranks; give --global 2 "
                    "or more points along x and y",
                    1);
  const char *flat1[] = {"--global", "1,16,16", NULL};
  expect_grid_error(flat1, 1,
                    "subdomain too thin: the 1 x 16 x 16 grid has 1 point along x, and every "
                    "block needs 2 or more per dimension on any number of ranks; give --global 2 "
                    "or more points along x",
                    1);
  /* no --halo-width fits it either */
  const char *flat3[] = {"--op", "heat", "--halo-width", "3", "--global", "1,4,1", NULL};
  expect_grid_error(flat3, 1,
                    "the 1 x 4 x 1 grid has 1 point along x and z, and every block "
                    "needs 2 or more per dimension on any number of ranks; give "
                    "--global 2 or more points along x and z",
                    0);
  assert_null(strstr(fd_error_message(), "--halo-width"));
  const char *none4[] = {"--op", "heat", "--halo-width", "4", "--global", "7,7,7", NULL};
  expect_grid_error(none4, 2,
                    "no process grid of 2 ranks (default or --procs PX,PY,PZ) leaves every "
                    "block of the 7 x 7 x 7 grid 2 or more points per dimension and 4 "
                    "(--halo-width) along each split one",
                    0);
  /* weak scaling: every grid gives each rank its --local block, nothing to choose */
  const char *weak[] = {"--local", "8,8,8", NULL};
  expect_grid(weak, 4, 1, 2, 2);
  const char *thinlocal[] = {"--local", "64,64,1", NULL};
  expect_grid_error(thinlocal, 2, "subdomain too thin: 2 points over 2 ranks in z", 0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_defaults),
    cmocka_unit_test(test_kernel_spec_round_trip),
    cmocka_unit_test(test_every_option_accepted),
    cmocka_unit_test(test_usage_lists_the_test_faults),
    cmocka_unit_test(test_bad_input_gives_one_clear_message),
    cmocka_unit_test(test_parsing_is_repeatable),
    cmocka_unit_test(test_options_match_exactly),
    cmocka_unit_test(test_help_fits_80_columns),
    cmocka_unit_test(test_backend_options_apply_or_are_refused),
    cmocka_unit_test(test_resolve_grid_checks_procs_and_thickness),
    cmocka_unit_test(test_resolve_grid_default_and_its_fallback),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
