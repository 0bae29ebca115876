#!/usr/bin/env bash
# test_cray_pe_mock.sh - the Cray PE logic of the build (tools/cmake/FdminiCrayPE.cmake) and the
# start-up refusal of src/run/site.c, on a machine without a Cray PE: a mock PE stands in for it.
#   - a fake `cc` that handles MPI itself (it runs mpicc), as Cray's wrapper does, so that
#     FindMPI names no MPI library;
#   - a fake GTL, libmpi_gtl_hsa.so.0, built here (one empty function);
#   - the variables the cray-mpich and craype-accel-amd-gfx90a modules set: PE_ENV,
#     CRAY_MPICH_DIR/MPICH_DIR (here: the distribution's Open MPI), PE_MPICH_GTL_DIR_amd_gfx90a
#     and PE_MPICH_GTL_LIBS_amd_gfx90a.
# Checked, with the HIP backend (gfx90a, ROCm's clang++-15, as tests/gpu/build_gpu_backends.sh):
#   1. configure detects the PE, puts MPI and the GTL on the HIP link line; the binary NEEDs
#      libmpi_gtl_hsa.so.0 and libmpi (readelf -d) and the post-build check says so; the MPI and
#      GTL folders are in its RUNPATH (readelf -d), and in the installed binary's, which starts
#      with no LD_LIBRARY_PATH and, its GTL loaded, accepts MPICH_GPU_SUPPORT_ENABLED=1 under a
#      played Cray MPICH;
#      roctx comes from the ROCm that ROCM_PATH names (a fake rocprofiler-sdk roctx), and no
#      C file gets -fopenmp (no OpenMP runtime NEEDED);
#   2. the PE without PE_MPICH_GTL_LIBS_amd_gfx90a: configure fails with one clear message;
#   3. FDMINI_GTL_LIB=path given instead: linked, needed, its folder in the RUNPATH;
#   4. a GTL that does not end up NEEDED (a static libmpi_gtl_hsa.a): the build fails with the
#      post-build check's message and the binary is removed;
#   5. a host build with FDMINI_GTL=OFF under a played Cray MPICH (a preloaded
#      MPI_Get_library_version): MPICH_GPU_SUPPORT_ENABLED=1 is refused before MPI_Init with one
#      line and exit 2 (alone and on 2 ranks under mpirun); =0 and =yes run (only 1 enables);
#      with a GTL loaded (LD_PRELOAD) it is accepted, the check looks at the process, not at the
#      build only; under this Open MPI (not Cray MPICH) =1 means nothing and the run goes on.
#
# Usage: tests/site/test_cray_pe_mock.sh [SOURCE_DIR]
# Exit: 0 all passed, 1 a case failed, 77 no HIP toolchain (tools/install-deps.sh
#       --gpu-toolchains); CRAY_MOCK_REQUIRE=1 turns the skip into a failure (CI).
# Knobs: HIP_CLANG (default clang++-15), JOBS (build jobs, default nproc), CRAY_MOCK_KEEP=1
#        keeps the work folder.
set -uo pipefail
src=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
hip_clang=${HIP_CLANG:-clang++-15}
jobs=${JOBS:-$(nproc)}
bitcode=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode

# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$src/tests/lib/checks.sh"

skip_or_fail() {
  if [[ ${CRAY_MOCK_REQUIRE:-0} == 1 ]]; then
    fail "prerequisites" "$1 (CRAY_MOCK_REQUIRE=1)"
    summary "cray pe mock test"
    exit 1
  fi
  echo "cray pe mock test: SKIP: $1"
  exit 77
}
command -v "$hip_clang" >/dev/null 2>&1 || skip_or_fail "no $hip_clang (tools/install-deps.sh --gpu-toolchains)"
[[ -d $bitcode && -e /usr/lib/cmake/hip-lang ]] ||
  skip_or_fail "no ROCm device libraries or HIP CMake packages (tools/install-deps.sh --gpu-toolchains)"
for t in mpicc mpirun readelf gcc ar cmake; do
  command -v "$t" >/dev/null 2>&1 || skip_or_fail "'$t' not found"
done
# Open MPI's prefix as MPICH_DIR: lib/libmpi.so and include/mpi.h below it
ompi=$(dirname "$(mpicc --showme:libdirs | awk '{print $1}')")
[[ -e $ompi/lib/libmpi.so ]] || skip_or_fail "cannot find Open MPI's lib/libmpi.so to play Cray MPICH"

work=$(mktemp -d)
if [[ ${CRAY_MOCK_KEEP:-0} == 1 ]]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1

# ---- the mock PE ----
pe=$work/pe
mkdir -p "$pe/bin" "$pe/gtl/lib" "$pe/static/lib"
cat >"$pe/bin/cc" <<'CC'
#!/bin/sh
# mock Cray compiler wrapper: the C compiler with MPI built in
exec mpicc "$@"
CC
chmod +x "$pe/bin/cc"
echo 'void mpi_gtl_hsa_mock(void) {}' >"$pe/gtl.c"
gcc -shared -fPIC -Wl,-soname,libmpi_gtl_hsa.so.0 -o "$pe/gtl/lib/libmpi_gtl_hsa.so.0" "$pe/gtl.c"
ln -s libmpi_gtl_hsa.so.0 "$pe/gtl/lib/libmpi_gtl_hsa.so"
gcc -c -o "$pe/gtl.o" "$pe/gtl.c" && ar rcs "$pe/static/lib/libmpi_gtl_hsa.a" "$pe/gtl.o"
# a ROCm of a non-default rocm module, named by ROCM_PATH only: its rocprofiler-sdk roctx
# (its HIP CMake package is the distribution's, linked: CMake's HIP language reads ROCM_PATH too)
mkdir -p "$pe/rocm/include/rocprofiler-sdk-roctx" "$pe/rocm/lib/cmake"
ln -s "$(readlink -f /usr/lib/cmake/hip-lang)" "$pe/rocm/lib/cmake/hip-lang"
cat >"$pe/rocm/include/rocprofiler-sdk-roctx/roctx.h" <<'ROCTX'
#ifdef __cplusplus
extern "C" {
#endif
int roctxRangePushA(const char *message);
int roctxRangePop(void);
#ifdef __cplusplus
}
#endif
ROCTX
printf 'int roctxRangePushA(const char *m) { (void)m; return 0; }\nint roctxRangePop(void) { return 0; }\n' >"$pe/roctx.c"
gcc -shared -fPIC -Wl,-soname,librocprofiler-sdk-roctx.so.1 -o "$pe/rocm/lib/librocprofiler-sdk-roctx.so.1" "$pe/roctx.c"
ln -s librocprofiler-sdk-roctx.so.1 "$pe/rocm/lib/librocprofiler-sdk-roctx.so"
pe_env=(PE_ENV=GNU "CRAY_MPICH_DIR=$ompi" "MPICH_DIR=$ompi" "ROCM_PATH=$pe/rocm"
  "PE_MPICH_GTL_DIR_amd_gfx90a=-L$pe/gtl/lib" "PE_MPICH_GTL_LIBS_amd_gfx90a=-lmpi_gtl_hsa")
hip_args=(-DFDMINI_BACKEND=hip -DCMAKE_C_COMPILER="$pe/bin/cc" -DCMAKE_HIP_COMPILER="$hip_clang"
  -DCMAKE_HIP_ARCHITECTURES=gfx90a "-DCMAKE_HIP_FLAGS=--rocm-path=/usr --rocm-device-lib-path=$bitcode"
  -DFDMINI_TESTS=OFF -DFDMINI_GPU_TESTS=OFF -DFDMINI_WERROR=ON)

# needed BINARY: the NEEDED entries of BINARY, one per line
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# runpath BINARY: its DT_RUNPATH (empty when it has none, or only an old-style DT_RPATH)
runpath() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p'; }
# has_runpath BINARY DIR...: every DIR is an entry of BINARY's RUNPATH
has_runpath() {
  local bin=$1 d rp
  shift
  rp=:$(runpath "$bin"):
  for d in "$@"; do [[ $rp == *":$d:"* ]] || return 1; done
}

# A preloaded MPI_Get_library_version that answers as Cray MPICH does: the one thing fdmini reads
# to know the library is Cray MPICH (base/mpi_gpu.h), over the Open MPI that plays its libmpi.
cat >"$pe/cray_version.c" <<'SHIM'
#include <stdio.h>
#include <string.h>
int MPI_Get_library_version(char *version, int *len)
{
  snprintf(version, 256, "MPI VERSION    : CRAY MPICH version 8.1.32.2 (ANL base 3.4a2)\nMPI BUILD INFO : mock");
  *len = (int)strlen(version);
  return 0;
}
SHIM
gcc -shared -fPIC -o "$pe/libcray_version.so" "$pe/cray_version.c"
cray=$pe/libcray_version.so

# ---- 1. the PE with its GTL variables ----
b=$work/hip
if env "${pe_env[@]}" cmake -S "$src" -B "$b" "${hip_args[@]}" >"$work/1.configure" 2>&1 &&
  env "${pe_env[@]}" cmake --build "$b" -j "$jobs" --target fdmini >"$work/1.build" 2>&1; then
  if grep -q 'HPE Cray PE detected' "$work/1.configure" && grep -q 'GTL linked: -L' "$work/1.configure" &&
    grep -q 'MPI on the HIP link line' "$work/1.configure" &&
    grep -q 'fdmini needs libmpi_gtl_hsa (readelf -d)' "$work/1.build"; then
    pass "mock PE: configure detects it, links MPI and the GTL on the HIP link line, post-build check passes"
  else
    fail "mock PE: configure/build messages" "" "$work/1.configure"
  fi
  if has_re "$(needed "$b/fdmini")" '^libmpi_gtl_hsa\.so\.0$' && has_re "$(needed "$b/fdmini")" '^libmpi\.so'; then
    pass "mock PE: the HIP binary NEEDs libmpi_gtl_hsa.so.0 and libmpi ($(needed "$b/fdmini" | tr '\n' ' '))"
  else
    fail "mock PE: NEEDED entries" "$(needed "$b/fdmini" | tr '\n' ' ')"
  fi
  # roctx from the ROCm that ROCM_PATH names (rocprofiler-sdk's), not /opt/rocm
  if grep -q "profiler ranges through roctx ($pe/rocm/lib/librocprofiler-sdk-roctx.so)" "$work/1.configure" &&
    has_re "$(needed "$b/fdmini")" '^librocprofiler-sdk-roctx\.so\.1$'; then
    pass "mock PE: roctx from ROCM_PATH's rocprofiler-sdk (a non-default rocm module), NEEDED"
  else
    fail "mock PE: roctx from ROCM_PATH" "$(grep 'roctx' "$work/1.configure")"
  fi
  # no OpenMP in a GPU build: -fopenmp on its C files means offload code under craype-accel-*
  if ! has_re "$(needed "$b/fdmini")" '^libgomp\|^libomp' && ! grep -rq --include=flags.make -- '-fopenmp' "$b/CMakeFiles"; then
    pass "mock PE: no -fopenmp on the HIP build's C files, no OpenMP runtime NEEDED"
  else
    fail "mock PE: OpenMP in the HIP build" "$(needed "$b/fdmini" | tr '\n' ' ')"
  fi
  # the MPI and GTL folders in the RUNPATH, of the build and of the installed binary, which
  # then start with no LD_LIBRARY_PATH at all
  if has_runpath "$b/fdmini" "$ompi/lib" "$pe/gtl/lib"; then
    pass "mock PE: RUNPATH of the built fdmini holds the MPI and GTL folders ($(runpath "$b/fdmini"))"
  else
    fail "mock PE: RUNPATH of the built fdmini" "readelf -d: '$(runpath "$b/fdmini")', want $ompi/lib and $pe/gtl/lib"
  fi
  if cmake --install "$b" --prefix "$work/prefix" >"$work/1.install" 2>&1 &&
    has_runpath "$work/prefix/bin/fdmini" "$ompi/lib" "$pe/gtl/lib"; then
    pass "mock PE: RUNPATH of the installed fdmini holds them too ($(runpath "$work/prefix/bin/fdmini"))"
  else
    fail "mock PE: RUNPATH of the installed fdmini" "readelf -d: '$(runpath "$work/prefix/bin/fdmini")'" "$work/1.install"
  fi
  rc=0
  env -u LD_LIBRARY_PATH LD_PRELOAD="$cray" MPICH_GPU_SUPPORT_ENABLED=1 "$work/prefix/bin/fdmini" --help >"$work/1.run" 2>&1 || rc=$?
  if ((rc == 0)) && grep -q '^usage: fdmini' "$work/1.run"; then
    pass "mock PE: the installed fdmini loads its GTL by RUNPATH (no LD_LIBRARY_PATH): Cray MPICH's MPICH_GPU_SUPPORT_ENABLED=1 accepted"
  else
    fail "mock PE: installed fdmini with MPICH_GPU_SUPPORT_ENABLED=1 and no LD_LIBRARY_PATH" "exit $rc" "$work/1.run"
  fi
else
  fail "mock PE: configure and build of the HIP backend" "" "$work/1.build"
  cat "$work/1.configure"
fi

# ---- 2. the PE without the GTL variables: one clear configure error ----
rc=0
env PE_ENV=GNU "CRAY_MPICH_DIR=$ompi" "MPICH_DIR=$ompi" cmake -S "$src" -B "$work/nogtl" "${hip_args[@]}" \
  >"$work/2.configure" 2>&1 || rc=$?
if ((rc != 0)) && grep -q 'PE_MPICH_GTL_LIBS_amd_gfx90a is not set' "$work/2.configure" &&
  (($(grep -c 'CMake Error' "$work/2.configure") == 1)); then
  pass "mock PE without PE_MPICH_GTL_*: configure fails with one message naming the variable"
else
  fail "mock PE without PE_MPICH_GTL_*" "exit $rc" "$work/2.configure"
fi

# ---- 3. the GTL given as a path ----
# Cases 3 and 4 reconfigure case 1's tree: FdminiCrayPE.cmake runs at every configure and only
# the link changes, so the HIP objects are reused (a fresh tree each took 25-27 s of compiling
# on the 2-core CI machine); the binary is removed first, so each case checks its own link.
b=$work/hip
rm -f "$b/fdmini"
if env PE_ENV=GNU "CRAY_MPICH_DIR=$ompi" "MPICH_DIR=$ompi" cmake -S "$src" -B "$b" "${hip_args[@]}" \
  -DFDMINI_GTL_LIB="$pe/gtl/lib/libmpi_gtl_hsa.so" >"$work/3.configure" 2>&1 &&
  cmake --build "$b" -j "$jobs" --target fdmini >"$work/3.build" 2>&1 &&
  has_re "$(needed "$b/fdmini")" '^libmpi_gtl_hsa\.so\.0$' && has_runpath "$b/fdmini" "$pe/gtl/lib"; then
  pass "FDMINI_GTL_LIB=path: linked, NEEDED, its folder in the RUNPATH"
else
  fail "FDMINI_GTL_LIB=path" "" "$work/3.build"
fi

# ---- 4. a GTL that is not NEEDED (static archive): the post-build check fails the build ----
rm -f "$b/fdmini"
rc=0
env PE_ENV=GNU "CRAY_MPICH_DIR=$ompi" "MPICH_DIR=$ompi" "PE_MPICH_GTL_DIR_amd_gfx90a=-L$pe/static/lib" \
  PE_MPICH_GTL_LIBS_amd_gfx90a=-lmpi_gtl_hsa cmake -S "$src" -B "$b" "${hip_args[@]}" -DFDMINI_GTL_LIB= >"$work/4.configure" 2>&1 &&
  cmake --build "$b" -j "$jobs" --target fdmini >"$work/4.build" 2>&1 || rc=$?
if ((rc != 0)) && grep -q 'does not need libmpi_gtl_hsa' "$work/4.build" && [[ ! -e $b/fdmini ]]; then
  pass "a GTL that is not NEEDED: the build fails with the post-build check's message, binary removed"
else
  fail "a GTL that is not NEEDED" "exit $rc, binary $([[ -e $b/fdmini ]] && echo kept || echo removed)" "$work/4.build"
fi

# ---- 5. start-up refusal: a host build without the GTL, under a played Cray MPICH ----
# The MPI library here is Open MPI, for which MPICH_GPU_SUPPORT_ENABLED means nothing; the
# preloaded shim ($cray, above) plays Cray MPICH.
b=$work/host-nogtl
if cmake -S "$src" -B "$b" -DFDMINI_GTL=OFF -DFDMINI_TESTS=OFF -DFDMINI_WERROR=ON >"$work/5.configure" 2>&1 &&
  cmake --build "$b" -j "$jobs" --target fdmini >"$work/5.build" 2>&1; then
  msg='MPICH_GPU_SUPPORT_ENABLED=1 asks Cray MPICH for GPU-aware MPI, but this binary has no GPU Transport Layer'
  rc=0
  LD_PRELOAD=$cray MPICH_GPU_SUPPORT_ENABLED=1 "$b/fdmini" --global 8,8,8 >"$work/5.alone" 2>&1 || rc=$?
  if ((rc == 2)) && (($(grep -c 'fdmini: error:' "$work/5.alone") == 1)) && grep -q "$msg" "$work/5.alone"; then
    pass "Cray MPICH, no GTL: MPICH_GPU_SUPPORT_ENABLED=1 refused before MPI_Init, one line, exit 2"
  else
    fail "Cray MPICH, no GTL: refusal (one process)" "exit $rc" "$work/5.alone"
  fi
  rc=0
  MPICH_GPU_SUPPORT_ENABLED=1 timeout 60 mpirun -n 2 -x LD_PRELOAD="$cray" "$b/fdmini" --global 8,8,8 >"$work/5.np2" 2>&1 || rc=$?
  if ((rc == 2)) && (($(grep -c 'fdmini: error:' "$work/5.np2") == 1)); then
    pass "Cray MPICH, no GTL, 2 ranks under mpirun: one error line, exit 2"
  else
    fail "Cray MPICH, no GTL: refusal (2 ranks)" "exit $rc, $(grep -c 'fdmini: error:' "$work/5.np2") error lines" "$work/5.np2"
  fi
  for value in 0 yes; do
    rc=0
    LD_PRELOAD=$cray MPICH_GPU_SUPPORT_ENABLED=$value "$b/fdmini" --global 8,8,8 --iters 2 --json "$work/5.json" \
      >"$work/5.off" 2>&1 || rc=$?
    if ((rc == 0)) && grep -q 'verification: PASS' "$work/5.off" &&
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["gtl"] == "not linked (FDMINI_GTL=OFF)", r["gtl"]' "$work/5.json"; then
      pass "Cray MPICH, no GTL, MPICH_GPU_SUPPORT_ENABLED=$value (only 1 enables): runs; the record says the GTL is not linked"
    else
      fail "Cray MPICH, no GTL, MPICH_GPU_SUPPORT_ENABLED=$value" "exit $rc" "$work/5.off"
    fi
  done
  rc=0
  LD_PRELOAD="$cray $pe/gtl/lib/libmpi_gtl_hsa.so.0" MPICH_GPU_SUPPORT_ENABLED=1 "$b/fdmini" --global 8,8,8 --iters 2 \
    >"$work/5.preload" 2>&1 || rc=$?
  if ((rc == 0)) && grep -q 'verification: PASS' "$work/5.preload"; then
    pass "Cray MPICH with a GTL loaded into the process (LD_PRELOAD): MPICH_GPU_SUPPORT_ENABLED=1 accepted"
  else
    fail "Cray MPICH, MPICH_GPU_SUPPORT_ENABLED=1 with a preloaded GTL" "exit $rc" "$work/5.preload"
  fi
  # not Cray MPICH (this Open MPI, no shim): the variable means nothing, the run goes on
  rc=0
  MPICH_GPU_SUPPORT_ENABLED=1 "$b/fdmini" --global 8,8,8 --iters 2 >"$work/5.ompi" 2>&1 || rc=$?
  if ((rc == 0)) && grep -q 'verification: PASS' "$work/5.ompi"; then
    pass "another MPI (Open MPI), no GTL: MPICH_GPU_SUPPORT_ENABLED=1 means nothing, the run goes on"
  else
    fail "Open MPI with MPICH_GPU_SUPPORT_ENABLED=1" "exit $rc" "$work/5.ompi"
  fi
else
  fail "host build with FDMINI_GTL=OFF" "" "$work/5.build"
fi

summary "cray pe mock test"
