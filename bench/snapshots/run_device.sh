#!/usr/bin/env bash
# run_device.sh - issue 7 on one NVIDIA GPU in one call (the device tool), writing under $OUT:
#   1. the GPU kernel tests (tests/gpu/test_gpu_kernels: be_stencil_zrange and be_add_point too)
#   2. --op wave on the GPU: 1 rank and 2 ranks sharing the GPU (CUDA-aware MPI) give the same
#      bits, the last snapshot equals the --dump of the same step, the GPU matches the host
#      backend to rounding
#   3. the snapshot overhead: steps per second without snapshots, with one every 10 steps (and
#      every 100 at 512^3), back to back in the same job, heat on 256^3 and 512^3 doubles
#   4. a 2-rank two-layer wave writing snapshots; the slices of its last snapshot for the PNG
# Binaries come prebuilt on the build machine (see bench/snapshots/README.md):
#   .device/bin/fdmini-aware      cuda backend, CUDA-aware Open MPI of shared/gpu-mpi
#   .device/bin/fdmini-host       host backend (reference)
#   .device/bin/test_gpu_kernels  tests/gpu
set -uo pipefail
OUT=${OUT:-/tmp/fdmini-snap-out}
mkdir -p "$OUT"
bin=$PWD/.device/bin
work=${WORK:-/tmp/fdsnap}
rm -rf "$work"
mkdir -p "$work"
tar -xJf .device/fdmini-ompi-cuda.tar.xz -C / || { echo "cannot unpack the CUDA-aware MPI"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_common_cuda_warning=0
export OMPI_MCA_rmaps_base_oversubscribe=1
R=/opt/fdmini-ompi/bin/mpirun
log=$OUT/device.log
say() { printf '%s\n' "$*" | tee -a "$log"; }
say "# fdmini issue 7 on $(nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ)"
say "# $(nproc) CPUs, $(free -g | awk '/Mem/ {print $2}') GiB RAM; /tmp: $(df -h /tmp | awk 'NR==2 {print $2, $4 " free"}')"
fd() { # fd NP LOG ARGS...
  local np=$1 out=$2
  shift 2
  timeout 120 "$R" -n "$np" --bind-to none "$bin/fdmini-aware" --progress 0 "$@" > "$out" 2>&1
}

# ---- 1. kernel tests
timeout 120 "$bin/test_gpu_kernels" > "$OUT/gpu-kernel-tests.log" 2>&1
say "test_gpu_kernels: rc $? ($(tail -1 "$OUT/gpu-kernel-tests.log"))"

# ---- 2. wave on the GPU: bitwise across ranks, snapshot == dump, GPU vs host
W=(--op wave --global "65,65,65" --warmup 2 --iters 60)
fd 1 "$OUT/wave-1gpu.log" "${W[@]}" --dump "$work/w1.raw" --snapshot-every 31 --snapshot-dir "$work/w1"
say "wave 1 rank:  rc $? $(grep 'verification' "$OUT/wave-1gpu.log")"
fd 2 "$OUT/wave-2ranks.log" "${W[@]}" --dump "$work/w2.raw" --snapshot-every 31 --snapshot-dir "$work/w2"
say "wave 2 ranks: rc $? $(grep 'verification' "$OUT/wave-2ranks.log")"
timeout 120 mpirun -n 1 "$bin/fdmini-host" --progress 0 "${W[@]}" --dump "$work/wh.raw" > "$OUT/wave-host.log" 2>&1
say "wave host:    rc $? $(grep 'verification' "$OUT/wave-host.log")"
if cmp -s "$work/w1.raw" "$work/w2.raw"; then say "ok   wave: 2 ranks on the GPU == 1 rank, bitwise"; else say "FAIL wave: 2 ranks differ from 1"; fi
if cmp -s "$work/w1/snap_000062.raw" "$work/w1.raw"; then say "ok   last snapshot == dump of the same step (1 rank)"; else say "FAIL snapshot vs dump (1 rank)"; fi
if cmp -s "$work/w2/snap_000062.raw" "$work/w2.raw"; then say "ok   last snapshot == dump of the same step (2 ranks)"; else say "FAIL snapshot vs dump (2 ranks)"; fi
if cmp -s "$work/w1/snap_000031.raw" "$work/w2/snap_000031.raw"; then say "ok   snapshot of step 31: 2 ranks == 1 rank, bitwise"; else say "FAIL snapshot 31 differs"; fi
python3 - "$work/w1.raw" "$work/wh.raw" <<'PY' 2>&1 | tee -a "$log"
import sys, struct
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
n = len(a) // 8
x, y = struct.unpack(f"{n}d", a), struct.unpack(f"{n}d", b)
m = max(abs(v) for v in y) or 1.0
d = max(abs(p - q) for p, q in zip(x, y)) / m
print(f"{'ok  ' if len(a) == len(b) and d <= 1e-12 else 'FAIL'} wave GPU vs host backend: {n} points, max |diff| / max |host| = {d:.3e}, bitwise {'equal' if a == b else 'different'}")
PY
rm -rf "$work"/w1 "$work"/w2 "$work"/*.raw

# ---- 3. snapshot overhead, back to back in this job (snapshots on the local disk under $work)
say ""
say "## snapshot overhead: heat, double, 1 GPU (steps per second; snapshot = the interior, raw)"
bench() { # bench NAME N ITERS [snapshot args]
  local name=$1 n=$2 iters=$3
  shift 3
  fd 1 "$OUT/bench-$name.log" --op heat --global "$n,$n,$n" --warmup 10 --iters "$iters" --no-check --json "$OUT/bench-$name.json" "$@"
  local rc=$?
  python3 - "$OUT/bench-$name.json" "$name" "$rc" <<'PY' 2>&1 | tee -a "$log"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    s = r.get("snapshots", {})
    print(f"{sys.argv[2]:<22} rc {sys.argv[3]}  step {r['phases_ms']['step']['max']:.4f} ms  {1e3 / r['phases_ms']['step']['max']:9.1f} steps/s"
          + (f"  snapshots {s['written']} x {s['bytes_each'] / 1e6:.0f} MB, host {s['host_ms_per_step']['max']:.3f} ms/step" if s else ""))
except Exception as e:
    print(f"{sys.argv[2]:<22} rc {sys.argv[3]}  no record ({e})")
PY
  rm -rf "$work/s"
}
for n in 256 512; do
  it=$([ $n = 256 ] && echo 200 || echo 100)
  bench "n$n-none-a" "$n" "$it"
  bench "n$n-every10" "$n" "$it" --snapshot-every 10 --snapshot-dir "$work/s"
  bench "n$n-none-b" "$n" "$it"
done
bench "n512-every100" 512 300 --snapshot-every 100 --snapshot-dir "$work/s"
bench "n512-none-c" 512 300

# ---- 4. two ranks sharing the GPU: a two-layer wave writing snapshots
say ""
fd 2 "$OUT/wave-layers-2ranks.log" --op wave --velocity 1,2 --global 255,255,255 --warmup 0 --iters 400 \
  --snapshot-every 100 --snapshot-dir "$work/layers"
say "two-layer wave, 2 ranks: rc $? $(grep -E 'snapshots  |verification' "$OUT/wave-layers-2ranks.log" | tr -s ' ' | tr '\n' ' ')"
cp "$work/layers/snapshots.xmf" "$OUT/" 2>/dev/null
ls -la "$work/layers" >> "$log" 2>&1
for ax in y z; do
  /usr/bin/python3 bench/snapshots/render_slice.py "$work/layers/snapshots.xmf" --axis $ax \
    --save-npy "$OUT/wave-layers-$ax.npz" -o "$OUT/wave-layers-$ax.png" >> "$log" 2>&1 ||
    python3 bench/snapshots/render_slice.py "$work/layers/snapshots.xmf" --axis $ax --save-npy "$OUT/wave-layers-$ax.npz" >> "$log" 2>&1
done
rm -rf "$work"
say "# done $(date -u +%FT%TZ)"
