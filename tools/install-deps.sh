#!/usr/bin/env bash
# install-deps.sh - installs, from Debian/Ubuntu packages, everything fdmini needs to build, test
# (cmocka, a local Slurm with munge, shellcheck, MPICH beside Open MPI for the MPICH stage) and
# plot benchmarks (python3-matplotlib). Open MPI stays the default MPI: the `mpi` and `mpirun`
# alternatives (/usr/bin/mpicc, /usr/bin/mpirun) are checked after the install and set back to
# Open MPI if installing MPICH moved them; MPICH is used by its own names (mpicc.mpich,
# mpiexec.mpich).
# With --gpu-toolchains it also installs ROCm's HIP compiler and runtime (Debian's ROCm 5.2)
# used for the HIP gfx90a cross-build, and links their CMake package folders where CMake 3.25
# looks for them. (nvcc for the CUDA cross-build is not a Debian package here: it is expected
# at /usr/local/cuda.)
#
# Usage: tools/install-deps.sh [--gpu-toolchains]
# Uses sudo when not run as root. When every package is already installed (checked with
# dpkg-query) apt is not run at all, so re-runs take well under a second.
set -euo pipefail

gpu=0
for arg in "$@"; do
  case $arg in
    --gpu-toolchains) gpu=1 ;;
    -h | --help)
      sed -n '2,15p' "$0"
      exit 0
      ;;
    *)
      echo "install-deps: unknown argument '$arg' (expected --gpu-toolchains)" >&2
      exit 2
      ;;
  esac
done

packages=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin libhwloc-dev hwloc
  mpich libmpich-dev
  libcmocka-dev
  slurm-wlm munge
  shellcheck
  python3 python3-matplotlib
)
gpu_packages=(hipcc libamdhip64-dev rocm-device-libs)
if ((gpu)); then packages+=("${gpu_packages[@]}"); fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "install-deps: not root and no sudo: run this as root" >&2
    exit 1
  }
  sudo=(sudo)
fi

is_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

missing=()
for p in "${packages[@]}"; do
  is_installed "$p" || missing+=("$p")
done

# apt_retry CMD...: apt can fail on a transient mirror or lock problem; try three times.
apt_retry() {
  local i
  for i in 1 2 3; do
    if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive "$@"; then
      return 0
    fi
    echo "install-deps: '$*' failed (try $i of 3)" >&2
    sleep $((i * 5))
  done
  return 1
}

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  start=$SECONDS
  echo "install-deps: installing ${missing[*]}"
  apt_opts=(-y -qq -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300 --no-install-recommends)
  apt_retry apt-get -qq -o DPkg::Lock::Timeout=300 update
  # dpkg prints one line per unpacked file with -qq too; keep the log short but keep errors.
  log=$(mktemp)
  if ! apt_retry apt-get "${apt_opts[@]}" install "${missing[@]}" >"$log" 2>&1; then
    tail -n 50 "$log" >&2
    rm -f "$log"
    echo "install-deps: apt-get install failed" >&2
    exit 1
  fi
  rm -f "$log"
  for p in "${missing[@]}"; do
    is_installed "$p" || {
      echo "install-deps: $p still not installed" >&2
      exit 1
    }
  done
  echo "install-deps: installed ${#missing[@]} packages in $((SECONDS - start)) s"
fi

# Open MPI must stay the default (mpicc, mpirun): every build but the MPICH stage uses it.
for alt in mpi mpirun; do
  want=$(update-alternatives --list "$alt" 2>/dev/null | grep -m 1 openmpi || true)
  now=$(readlink -f "/etc/alternatives/$alt" 2>/dev/null || true)
  if [[ -z $want ]]; then
    echo "install-deps: no Open MPI alternative for '$alt' (is openmpi-bin installed?)" >&2
    exit 1
  fi
  if [[ $now != "$(readlink -f "$want")" ]]; then
    "${sudo[@]}" update-alternatives --set "$alt" "$want"
    echo "install-deps: set the '$alt' alternative back to Open MPI ($want)"
  fi
done

if ((gpu)); then
  # CMake 3.25 does not look in Debian's multiarch cmake folder for HIP's package configs.
  src=/usr/lib/x86_64-linux-gnu/cmake
  dst=/usr/lib/cmake
  for d in hip hip-lang amd_comgr hsa-runtime64; do
    if [[ -e $dst/$d || -L $dst/$d ]]; then
      continue
    fi
    if [[ ! -d $src/$d ]]; then
      echo "install-deps: $src/$d missing (is libamdhip64-dev installed?)" >&2
      exit 1
    fi
    "${sudo[@]}" mkdir -p "$dst"
    "${sudo[@]}" ln -s "$src/$d" "$dst/$d"
    echo "install-deps: linked $dst/$d -> $src/$d"
  done
fi
