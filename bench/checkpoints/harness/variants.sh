#!/usr/bin/env bash
# throwaway: where does a checkpoint's cost go (512^3 heat, every 5000)
set -u
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
R=/opt/fdmini-ompi/bin/mpirun
B=$PWD/.device/bin-exp/fdmini-x
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/device.txt
nproc >> $OUT/device.txt; df -h /tmp /dev/shm >> $OUT/device.txt; findmnt -T /tmp >> $OUT/device.txt
go() { # name iters mode ckargs...
  local name=$1 it=$2 mode=$3; shift 3
  rm -rf /tmp/ck /dev/shm/ck
  FDMINI_X_MODE=$mode FDMINI_X_TRACE=$OUT/trace-$name.txt timeout 300 $R -n 1 --bind-to none $B --progress 0 --op heat --global 512,512,512 --warmup 10 --iters $it --no-check --json $OUT/$name.json "$@" > $OUT/$name.log 2>&1
  echo "$name rc=$? $(grep -E '^  step |checkpoints  |writer thread' $OUT/$name.log | tr -s ' ' | tr '\n' ' ')" | tee -a $OUT/summary.txt
}
go base-a 22490 ""
go polls 22490 "" --checkpoint-dir /tmp/ck
go normal 22490 "" --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go nowrite 22490 nowrite --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go nohash 22490 nohash --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go nofsync 22490 nofsync --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go nod2h 22490 nod2h --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go nocopy 22490 nod2h,nostage --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go base-b 22490 ""
go shm-base 4490 ""
go shm-1000 4490 "" --checkpoint-every 1000 --checkpoint-dir /dev/shm/ck
go shm-5000 22490 "" --checkpoint-every 5000 --checkpoint-dir /dev/shm/ck
go base-c 22490 ""
