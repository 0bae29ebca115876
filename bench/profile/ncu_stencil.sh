#!/usr/bin/env bash
# ncu_stencil.sh - Nsight Compute input for the stencil kernels: DRAM bytes read and written,
# L2 hit rate and duration of the baseline (lab-notes kernel 1), the per-plane reordered kernel
# with m = 4 and m = 2 (lab-notes kernels 4 and 3) and the default (short-chunk z-marching), one
# launch each on 512^3 (kernel_sweep --profile). Fetch efficiency = theoretical fetch bytes (every point the
# stencil reads, once) / dram__bytes_read.sum; bench/results/README.md explains the numbers.
#
# Usage: bench/profile/ncu_stencil.sh KERNEL_SWEEP [SIZE]   (SIZE default 512x512x512)
# Writes CSV (one row per kernel and metric) to stdout. Clocks are left alone (--clock-control none).
set -euo pipefail
SWEEP=${1:?usage: ncu_stencil.sh path/to/kernel_sweep [NXxNYxNZ]}
SIZE=${2:-512x512x512}
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,\
lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,l1tex__t_sector_hit_rate.pct,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,\
launch__occupancy_limit_registers,launch__grid_size,launch__block_size
exec ncu --clock-control none --csv --metrics "$METRICS" \
  -k 'regex:k_(baseline|plane|zmarch)' "$SWEEP" --profile --size "$SIZE"
