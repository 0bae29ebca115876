#!/usr/bin/env bash
set -u
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
R=/opt/fdmini-ompi/bin/mpirun
B=$PWD/.device/bin-exp/fdmini-x
W=$(mktemp -d)
go() { # name iters mode ckargs...
  local name=$1 it=$2 mode=$3; shift 3
  rm -rf /tmp/ck
  vmstat 1 > $W/vmstat-$name.txt 2>&1 & vp=$!
  cat /proc/interrupts > $W/irq0-$name.txt
  FDMINI_X_MODE=$mode FDMINI_X_TRACE=$W/trace-$name.txt timeout 300 $R -n 1 --bind-to none $B --progress 0 --op heat --global 512,512,512 --warmup 10 --iters $it --no-check "$@" > $W/$name.log 2>&1
  echo "$name rc=$? $(grep -E '^  step |the step lost' $W/$name.log | tr -s ' ' | cut -c1-200 | tr '\n' ' ')" | tee -a $W/summary.txt
  cat /proc/interrupts > $W/irq1-$name.txt
  kill $vp
}
go normal 22490 "" --checkpoint-every 5000 --checkpoint-dir /tmp/ck
go normal2 22490 "" --checkpoint-every 5000 --checkpoint-dir /tmp/ck

go base 22490 ""
cat /proc/sys/vm/dirty_ratio /proc/sys/vm/dirty_background_ratio > $W/vm.txt; cat /sys/block/*/queue/scheduler >> $W/vm.txt 2>&1; lsblk >> $W/vm.txt
tar -czf $OUT/x2.tgz -C $W .
