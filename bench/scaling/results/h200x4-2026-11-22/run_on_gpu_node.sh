#!/bin/bash
# run_on_gpu_node.sh - how the study in this folder was run (kept as a record, 2026-11-22).
# Node: 4x NVIDIA H200 (NVLink, NV18 between every pair), Ubuntu 24.04, CUDA 13.0.
# Binary: a clean clone of commit fd37f58 built on the Debian build machine against the CUDA-aware
# Open MPI of ../shared/gpu-mpi (installed there under /opt/fdmini-ompi):
#   git clone /work/main /tmp/fdmini-head
#   cmake -S /tmp/fdmini-head -B build-bench-cuda -DFDMINI_BACKEND=cuda -DCMAKE_CUDA_ARCHITECTURES=90 \
#         -DMPI_C_COMPILER=/opt/fdmini-ompi/bin/mpicc -DFDMINI_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-bench-cuda -j2
# then build-bench-gpu/ = that fdmini + fdmini-ompi-cuda.tar.xz, carried to the GPU node, where
# this script ran from the repository root. Then, on the build machine, in this folder:
#   ../../collect.py weak strong -o results.csv -s summary.csv
#   ../../plot.py summary.csv -o plots --title-prefix "H200 node (4 GPUs, NVLink): "
set -u
root=$PWD
B=$root/build-bench-gpu
tar -xJf "$B/fdmini-ompi-cuda.tar.xz" -C /
export PATH=/opt/fdmini-ompi/bin:$PATH
export LD_LIBRARY_PATH=/opt/fdmini-ompi/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export PYTHONUNBUFFERED=1
nvidia-smi -L; nvidia-smi topo -m
ldd "$B/fdmini" | grep -E "not found|libmpi"
python3 --version; python3 -c "import matplotlib; print('matplotlib', matplotlib.__version__)"
ompi_info --parsable --all | grep mpi_built_with_cuda_support:value
echo "== sanity"
timeout 60 mpirun -n 2 "$B/fdmini" --local 64,64,64 --iters 5 --mpi-gpu aware --progress 0 | tail -25
mkdir -p /tmp/res
echo "== weak"
time timeout 260 python3 bench/scaling/study.py run --machine local --study weak --size 512,512,512 \
  --scales 1,2,4 --repeats 3 --variants overlap,no-overlap --mpi-gpu aware,staged --baseline \
  --binary "$B/fdmini" --timeout 120 --out /tmp/res/weak-h200 2>&1 | grep -v '^\[' 
echo "== strong"
time timeout 260 python3 bench/scaling/study.py run --machine local --study strong --size 1024,1024,1024 \
  --scales 1,2,4 --repeats 3 --variants overlap,no-overlap --mpi-gpu aware,staged --baseline \
  --binary "$B/fdmini" --timeout 120 --out /tmp/res/strong-h200 2>&1 | grep -v '^\['
cd /tmp/res && tar -czf "$OUT/gpu-study.tar.gz" . && ls -la "$OUT"
