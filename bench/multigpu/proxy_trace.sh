#!/bin/bash
# harness (throwaway, issue 56): on one NVIDIA GPU node, builds fdmini with -DFDMINI_PROXY_TRACE
# against the CUDA-aware Open MPI, runs the emulated layouts with PX_TRACE (under MPS), and the MPI
# layout probe (mpi_layout_probe.cu: MPI alone, idle and beside a kernel filling the GPU).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/tr"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C /
P=/opt/fdmini-ompi
export PATH=$P/bin:$PATH LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0 OMPI_MCA_rmaps_base_oversubscribe=1
cmake -S . -B bc -DFDMINI_BACKEND=cuda -DCMAKE_CUDA_ARCHITECTURES=90 -DFDMINI_TESTS=OFF -DMPI_C_COMPILER=$P/bin/mpicc \
  -DCMAKE_C_FLAGS=-DFDMINI_PROXY_TRACE -DCMAKE_CUDA_FLAGS=-DFDMINI_PROXY_TRACE > "$OUT/build.log" 2>&1
cmake --build bc -j16 --target fdmini >> "$OUT/build.log" 2>&1 || exit 1
nvcc -O3 -std=c++17 -arch=sm_90 -I$P/include -L$P/lib -Xlinker -rpath=$P/lib -lmpi -o /tmp/mpi_layout bench/multigpu/mpi_layout_probe.cu
nvidia-cuda-mps-control -d
for c in "2x2@128 1 128 2" "8x8@128 3 64 8" "8x2@128 1 64 8" "8x2@256 1 128 8" "8x8@256 3 128 8"; do
  read -r l d e n <<< "$c"; mpirun -n "$n" --bind-to none /tmp/mpi_layout "$l" "$d" "$e"
done
run() { local name=$1 np=$2; shift 2; mkdir -p "$OUT/tr/$name"
  mpirun -n "$np" --bind-to none -x PX_TRACE="$OUT/tr/$name" bc/fdmini --progress 0 --report full --iters 400 "$@" > "$OUT/tr/$name.log" 2>&1; }
run h128_2x2 2 --op heat --global 128,128,128 --test-node-ranks 1 --halo-path proxy
run h128_8x8 8 --op heat --global 128,128,128 --test-node-ranks 1 --halo-path proxy
run h256_2x2 2 --op heat --global 256,256,256 --test-node-ranks 1 --halo-path proxy
run h256_8x2_re 8 --op heat --global 256,256,256 --test-node-ranks 4 --halo-path proxy --kernel reordered:tile=1,vec=2,block=256x1
echo quit | nvidia-cuda-mps-control
python3 bench/multigpu/proxy_trace.py "$OUT/tr"
