#!/usr/bin/env bash
# run-tests.sh - the README's "run all tests" command (Quick start), and what CI runs (.ci/run calls it).
# On a fresh Debian 12 machine (as root, or with sudo) it:
#   1. installs every package needed, the HIP cross-compiler included (tools/install-deps.sh)
#   2. configures and builds build/ (host backend, Release, -DFDMINI_WERROR=ON)
#   3. starts a single-node Slurm (launch/slurm-local.sh; stopped again on exit)
#   4. runs the whole ctest suite of build/: unit, mpi, cli, the srun and launch-script tests,
#      the study tools, the install into a prefix and the package recipes, and the Cray PE
#      logic on a mock PE with the HIP build (label site)
#   5. builds build-nohwloc/ without hwloc (-DFDMINI_HWLOC=OFF: the binding report from sysfs)
#      and runs its unit tests (the binding tests included)
#   6. cross-builds the HIP (gfx90a) and the CUDA (sm_90) binaries, one stage each
#      (tests/gpu/build_gpu_backends.sh)
#   7. checks the layer stack on the builds (tools/check-layers.py: includes, the getenv list
#      of CONTRIBUTING.md, files that call each other)
#   8. builds build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer and runs the unit,
#      multi-rank and command-line tests (the CLI's error exits must not leak either), but three
#      that add no code to what the others run (asan() says which)
#   9. builds build-mpich/ with MPICH (Debian's 4.0, the family of Cray MPICH; mpicc.mpich,
#      warnings as errors) and runs, with MPICH's own mpiexec (Hydra), the unit tests, the
#      multi-rank tests on 2 ranks (the autotune's on 3), the command-line tests and the study
#      tools that run the binary (label study)
#   10. runs shellcheck over every shell script of the project (tools/check-shell.sh)
# and prints the time of each stage and the tests each ctest stage skipped (exit 77: they could
# not run here, which is not a pass). Exits non-zero if any stage fails.
#
# A stage whose tool is missing says so in one line and is skipped; with CI=true (.ci/run) a
# missing tool of a stage CI requires fails it instead. CI requires every stage: all tools come
# from tools/install-deps.sh except CUDA's nvcc, which is no Debian package and is expected at
# /usr/local/cuda/bin/nvcc (or $CUDACXX) on the CI machine.
# Knobs: CTEST_PARALLEL_LEVEL (ctest's own: tests run at once; default nproc here: most tests
# wait on process start-up more than on the cores, and tests/CMakeLists.txt keeps apart those
# that must not share them), FDMINI_TEST_JOBS (build jobs; nproc).
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
root=$PWD
jobs=${FDMINI_TEST_JOBS:-$(nproc)}
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
else
  # Open MPI's mpirun refuses to start as root without these.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# The srun test must run here, not skip: we start the Slurm it needs; likewise the mock Cray PE
# test, whose HIP toolchain the deps stage installs.
export SRUN_TEST_REQUIRE=1 CRAY_MOCK_REQUIRE=1
ci=0
[[ ${CI:-} == true ]] && ci=1
# Sanitizer runs: stop at the first UB report, with a stack.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

names=()
results=()
times=()
failed=0
skipped_tests=() # "stage: test" for every test a ctest stage reported skipped

# stage NAME CMD...: run CMD, print its time, record its result; returns CMD's status.
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo
  echo "===== stage: $name ====="
  "$@" || rc=$?
  local dt=$((SECONDS - t0))
  names+=("$name")
  times+=("$dt")
  if ((rc == 0)); then
    results+=(ok)
    echo "===== stage: $name: ok (${dt} s) ====="
  else
    results+=("FAILED (exit $rc)")
    failed=$((failed + 1))
    echo "===== stage: $name: FAILED with exit $rc (${dt} s) ====="
  fi
  return "$rc"
}

skip() {
  names+=("$1")
  times+=(0)
  results+=("skipped: $2")
  echo
  echo "===== stage: $1: skipped ($2) ====="
}

# missing NAME WHY: a stage whose tool is missing: skipped with WHY, or failed under CI=true.
missing() {
  if ((ci)); then
    names+=("$1")
    times+=(0)
    results+=("FAILED (CI requires it: $2)")
    failed=$((failed + 1))
    echo
    echo "===== stage: $1: FAILED (CI requires it: $2) ====="
  else
    skip "$1" "$2"
  fi
}

summary() {
  local i total=0 passed=0
  echo
  echo "===== run-tests summary ====="
  for i in "${!names[@]}"; do
    printf '  %-24s %6s s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
    total=$((total + times[i]))
    [[ ${results[$i]} == ok ]] && passed=$((passed + 1))
  done
  printf '  %-24s %6s s\n' total "$total"
  echo "stages: $passed passed, $failed failed"
  if ((${#skipped_tests[@]})); then
    echo "skipped tests (exit 77: could not run here; neither passed nor failed):"
    printf '  %s\n' "${skipped_tests[@]}"
  else
    echo "skipped tests: none"
  fi
}

# ctest_stage NAME ARGS...: ctest ARGS, with the tests it reports skipped (exit 77,
# SKIP_RETURN_CODE: their every case could not run here) recorded under NAME for the summary;
# returns ctest's status.
ctest_stage() {
  local name=$1 log rc=0
  shift
  log=$(mktemp)
  ctest "$@" 2>&1 | tee "$log" || rc=$?
  local t
  while read -r t; do
    skipped_tests+=("$name: $t")
  done < <(sed -n 's/^[[:space:]]*[0-9][0-9]* - \(.*\) (Skipped)$/\1/p' "$log")
  rm -f "$log"
  return "$rc"
}

slurm_started=0
cleanup() {
  local rc=$?
  if ((slurm_started)); then
    echo
    echo "===== stopping the local Slurm ====="
    "${sudo[@]}" "$root/launch/slurm-local.sh" stop || true
  fi
  exit "$rc"
}
trap cleanup EXIT
# Make an interrupt or a kill from outside still stop the daemons.
trap 'exit 130' INT
trap 'exit 143' TERM

configure_build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFDMINI_BACKEND=host -DFDMINI_WERROR=ON \
    -DFDMINI_SANITIZE=OFF -DFDMINI_TESTS=ON &&
    cmake --build build -j"$jobs"
}

start_slurm() {
  if scontrol ping >/dev/null 2>&1; then
    echo "a slurmctld already answers: using it, and leaving it running"
    scontrol ping
    return 0
  fi
  slurm_started=1
  "${sudo[@]}" launch/slurm-local.sh start
}

run_ctest() {
  ctest_stage ctest --test-dir build --output-on-failure --timeout 900
}

# gpu_build hip|cuda: one cross-build (tests/gpu/build_gpu_backends.sh)
gpu_build() {
  bash tests/gpu/build_gpu_backends.sh "$1"
}

# without hwloc: the binding report from sysfs; its unit tests, and no libhwloc in the binary
nohwloc() {
  cmake -S . -B build-nohwloc -DCMAKE_BUILD_TYPE=Release -DFDMINI_BACKEND=host -DFDMINI_WERROR=ON \
    -DFDMINI_HWLOC=OFF -DFDMINI_TESTS=ON &&
    cmake --build build-nohwloc -j"$jobs" &&
    if grep -q 'libhwloc' <<<"$(readelf -d build-nohwloc/fdmini)"; then
      echo "build-nohwloc/fdmini needs libhwloc"
      return 1
    fi &&
    ctest_stage no-hwloc --test-dir build-nohwloc -L unit --output-on-failure --timeout 300
}

# The layer stack (CONTRIBUTING.md) on every build made above; a GPU build that failed or was
# skipped has no objects and is skipped with a note.
check_layers() {
  python3 tools/check-layers.py build build-nohwloc build-hip build-cuda
}

asan() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFDMINI_BACKEND=host \
    -DFDMINI_WERROR=ON -DFDMINI_SANITIZE=ON -DFDMINI_TESTS=ON &&
    cmake --build build-asan -j"$jobs" &&
    # unit, multi-rank and CLI tests; the sanitizer settings (Open MPI's never-freed
    # allocations suppressed, errors fatal) come with the tests (tests/CMakeLists.txt). The
    # stage is CI's longest, and three tests are left to the ctest and MPICH stages: the 6-rank
    # bitwise test (its 3 x 2 x 1 blocks run the code of the 3- and 4-rank ones, which run here
    # with the 8-rank one, corners included; 65 s of the stage's CPU), the harness's fail-fast
    # test (it tests tests/mr_test.h, and its second run repeats every case of the 3-rank
    # bitwise test, which runs here; 136 s) and the checks' tolerance test (fdmini's runs with
    # errors planted at twice and half each tolerance: the verification's code, which the CLI
    # test's fault cases run here; 61 s)
    ctest_stage asan-ubsan-unit --test-dir build-asan -L "unit|mpi|cli" \
      -E 'single_rank_np6$|^test_one_rank_failure_fails_every_rank_at_once$|^test_checks_fail_just_beyond_their_tolerance$' \
      --output-on-failure --timeout 900
}

# MPICH: the build with warnings as errors, then the tests with Hydra's mpiexec (the tests take
# the launcher from the build's MPIEXEC_EXECUTABLE). MPICH ranks wait by spinning, so ranks
# beyond the 2 cores cost far more than under Open MPI (on the 2-core CI machine the 3-rank
# multi-rank test took 50 s against 2.3 s, the 4-rank restart test 47 s against 1.3 s, the
# 8-rank one 180 s): the bitwise multi-rank and restart tests run on 1 and 2 ranks (with the
# snapshot thread-level test on 2 and the autotune agreement on 3); every other rank count runs
# in the Open MPI stages. The shell tests cap their rank counts at the cores under Hydra
# (FDMINI_TEST_RANKS_MAX, tests/CMakeLists.txt). The study test stays whole. Of the study
# tools' tests only those that run this build's fdmini (label study) run here: the others read
# made-up or committed records, the same under any MPI, and took 76 s of the stage's 250.
mpich() {
  local mpicc mpiexec
  mpicc=$(command -v mpicc.mpich || true)
  mpiexec=$(command -v mpiexec.mpich || true)
  if [[ -z $mpicc || -z $mpiexec ]]; then
    echo "mpicc.mpich or mpiexec.mpich not found (tools/install-deps.sh installs mpich)"
    return 1
  fi
  cmake -S . -B build-mpich -DCMAKE_BUILD_TYPE=Release -DFDMINI_BACKEND=host -DFDMINI_WERROR=ON \
    -DFDMINI_TESTS=ON -DMPI_C_COMPILER="$mpicc" -DMPIEXEC_EXECUTABLE="$mpiexec" &&
    cmake --build build-mpich -j"$jobs" &&
    ctest_stage mpich --test-dir build-mpich --output-on-failure --timeout 900 \
      -L 'unit|mpi|cli|study' -E 'single_rank_np[13468]$|across_ranks_np1$|uninterrupted_run_np[348]$'
}

run_shellcheck() {
  # the linter and the pipe-into-grep -q rule (tests/tools/test_check_shell.sh tests it)
  tools/check-shell.sh
}

# Dependencies and the build are prerequisites of everything else: stop at their failure.
if ! stage deps tools/install-deps.sh --gpu-toolchains; then
  summary
  exit 1
fi
if stage build configure_build; then
  stage slurm start_slurm || true
  stage ctest run_ctest || true
else
  skip slurm "build failed"
  skip ctest "build failed"
fi
stage no-hwloc nohwloc || true
if ! command -v "${HIP_CLANG:-clang++-15}" >/dev/null 2>&1; then
  missing gpu-cross-build-hip "no ${HIP_CLANG:-clang++-15} (tools/install-deps.sh --gpu-toolchains installs it)"
else
  stage gpu-cross-build-hip gpu_build hip || true
fi
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [[ ! -x $nvcc ]]; then
  missing gpu-cross-build-cuda "no nvcc at $nvcc (CUDA toolkit, not a Debian package: install it there or set CUDACXX)"
else
  stage gpu-cross-build-cuda gpu_build cuda || true
fi
stage layers check_layers || true
stage asan-ubsan-unit asan || true
if ! command -v mpicc.mpich >/dev/null 2>&1; then
  missing mpich "no mpicc.mpich (tools/install-deps.sh installs mpich and libmpich-dev)"
else
  stage mpich mpich || true
fi
if ! command -v shellcheck >/dev/null 2>&1; then
  missing shellcheck "no shellcheck (tools/install-deps.sh installs it)"
else
  stage shellcheck run_shellcheck || true
fi

summary
((failed == 0))
