#!/usr/bin/env bash
# run-default-job.sh - the README's "one command": on a fresh Debian 12 or Ubuntu machine it
# installs the packages fdmini needs (through sudo when not root), builds fdmini into build/
# (Release, host backend unless build/ was configured otherwise) and runs the default 8-rank job
#   mpirun -n 8 --oversubscribe ./build/fdmini [ARGS...]
# Extra arguments are passed to fdmini (e.g. --op jacobi). Exits with mpirun's (fdmini's) status.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."

tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

if [[ $(id -u) -eq 0 ]]; then
  # Open MPI refuses to start as root without these.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "+ mpirun -n 8 --oversubscribe ./build/fdmini $*"
status=0
mpirun -n 8 --oversubscribe ./build/fdmini "$@" || status=$?
exit "$status"
