#!/usr/bin/env bash
# test_profile_recipes.sh - the AMD profiling recipes of bench/profile on a machine without a GPU:
# the command lines they give the profilers (fake rocprofv3, rocpd, rocprof-compute and
# rocprof-sys-run first on PATH record their arguments), for the ROCm 6.x each site's default
# stack has and for ROCm 7:
#   - rocprofv3.sh: --marker-trace (fdmini's roctx ranges), --kernel-trace --stats, counters;
#     CSV output on ROCm 6, rocpd on ROCm 7 (whose direct CSV is deprecated) then rocpd convert;
#     ranks outside FDMINI_PROFILE_RANKS run unprofiled;
#   - rocprof_compute.sh: --output-directory on ROCm 7, --path before; analyze;
#   - rocprof_sys.sh: roctx on (ROCPROFSYS_USE_ROCTX), one folder per rank;
#   - a missing profiler: one line naming LUMI's rocm/6.3.4-extras and Frontier's modules;
# and bench/profile/check_ranges.py, which says whether fdmini's ranges are in a trace, on
# made-up rocprofv3 CSV, rocpd and Nsight Systems SQLite traces (one range missing: exit 1).
# What cannot run here: the profilers themselves (no AMD GPU on this machine or on the lent
# NVIDIA nodes); on an NVIDIA node bench/multigpu/run_node.sh runs check_ranges.py on an
# Nsight Systems trace of fdmini (GPU-TODO).
# Usage: tests/bench/test_profile_recipes.sh     Exit 0 when all pass.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
profile=$(cd "$here/../../bench/profile" && pwd)
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$here/../lib/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# fake TOOL BODY: an executable TOOL in $work/bin-<set> whose body is BODY (sh)
fake() {
  mkdir -p "$work/$1"
  printf '#!/bin/sh\n%s\n' "$3" >"$work/$1/$2"
  chmod +x "$work/$1/$2"
}
# shellcheck disable=SC2016 # the fakes' own "$@" and variables
{
  fake rocm6 rocprofv3 'if [ "$1" = --help ]; then echo "--output-format {csv,json,pftrace,otf2}"; exit 0; fi; echo "$@" > "$FAKE_LOG"'
  fake rocm7 rocprofv3 'if [ "$1" = --help ]; then echo "--output-format {rocpd,csv,json,pftrace,otf2} (default rocpd)"; exit 0; fi
echo "$@" > "$FAKE_LOG"; while [ "$1" != -d ]; do shift; done; : > "$2/fdmini_results.db"'
  fake rocm7 rocpd 'echo "rocpd $* in $(basename "$PWD")" >> "$FAKE_LOG"'
  fake rocm6 rocprof-compute 'if [ "$2" = --help ]; then echo "--path PATH"; exit 0; fi; echo "$@" >> "$FAKE_LOG"'
  fake rocm7 rocprof-compute 'if [ "$2" = --help ]; then echo "--output-directory DIR"; exit 0; fi; echo "$@" >> "$FAKE_LOG"'
  fake rocm6 rocprof-sys-run 'echo "roctx=$ROCPROFSYS_USE_ROCTX out=$ROCPROFSYS_OUTPUT_PATH $*" > "$FAKE_LOG"'
}
app=(/bin/echo fdmini-ran --iters 20)

# ---- rocprofv3.sh ----
rm -f log
PATH=$work/rocm6:$PATH FAKE_LOG=$work/log SLURM_PROCID=3 FDMINI_PROFILE_DIR=p6 "$profile/rocprofv3.sh" "${app[@]}" >out 2>&1
got=$(cat log 2>/dev/null)
if [[ $got == "--kernel-trace --stats --marker-trace -d p6/rank3 -o fdmini -i $profile/rocprofv3_counters.txt --output-format csv -- ${app[*]}" ]]; then
  pass "rocprofv3.sh, ROCm 6: kernel trace, stats, --marker-trace (roctx), counters, CSV, per-rank folder"
else
  fail "rocprofv3.sh, ROCm 6" "got '$got'" out
fi
rm -f log
PATH=$work/rocm7:$PATH FAKE_LOG=$work/log SLURM_PROCID=0 FDMINI_PROFILE_DIR=p7 FDMINI_ROCPROF_COUNTERS=0 \
  "$profile/rocprofv3.sh" "${app[@]}" >out 2>&1
if [[ $(head -n 1 log) == "--kernel-trace --stats --marker-trace -d p7/rank0 -o fdmini --output-format rocpd -- ${app[*]}" ]] &&
  [[ $(sed -n 2p log) == "rocpd convert -i fdmini_results.db --output-format csv in rank0" ]]; then
  pass "rocprofv3.sh, ROCm 7: rocpd output (direct CSV deprecated), then rocpd convert to CSV; no counters when asked"
else
  fail "rocprofv3.sh, ROCm 7" "got '$(tr '\n' '|' <log)'" out
fi
rm -f log
out=$(PATH=$work/rocm6:$PATH FAKE_LOG=$work/log SLURM_PROCID=5 FDMINI_PROFILE_RANKS=0,4 "$profile/rocprofv3.sh" "${app[@]}")
if [[ $out == "fdmini-ran --iters 20" && ! -e log ]]; then
  pass "rocprofv3.sh: a rank outside FDMINI_PROFILE_RANKS runs unprofiled"
else
  fail "rocprofv3.sh FDMINI_PROFILE_RANKS" "got '$out'"
fi

# ---- rocprof_compute.sh ----
for v in 6 7; do
  rm -f log
  PATH=$work/rocm$v:$PATH FAKE_LOG=$work/log FDMINI_PROFILE_DIR=c$v "$profile/rocprof_compute.sh" "${app[@]}" >out 2>&1
  if ((v == 7)); then want="profile --name fdmini --output-directory c7/workload -- ${app[*]}"; else
    want="profile --name fdmini --path c6/workload -- ${app[*]}"; fi
  if [[ $(head -n 1 log) == "$want" && $(sed -n 2p log) == "analyze --path c$v/workload" ]]; then
    pass "rocprof_compute.sh, ROCm $v: $(awk '{print $4}' <<<"$want") for the profile, analyze --path"
  else
    fail "rocprof_compute.sh, ROCm $v" "got '$(tr '\n' '|' <log)'" out
  fi
done

# ---- rocprof_sys.sh ----
rm -f log
PATH=$work/rocm6:$PATH FAKE_LOG=$work/log SLURM_PROCID=2 FDMINI_PROFILE_DIR=s "$profile/rocprof_sys.sh" "${app[@]}" >out 2>&1
if [[ $(cat log) == "roctx=true out=s/rank2 -- ${app[*]}" ]]; then
  pass "rocprof_sys.sh: roctx ranges on, one folder per rank"
else
  fail "rocprof_sys.sh" "got '$(cat log)'" out
fi

# ---- no profiler on PATH: one line naming where each site has it ----
for s in rocprofv3.sh rocprof_compute.sh rocprof_sys.sh; do
  rc=0
  env PATH=/usr/bin:/bin "$profile/$s" "${app[@]}" >out 2>&1 || rc=$?
  if ((rc == 2)) && (($(wc -l <out) == 1)) && grep -q 'LUMI' out && grep -q 'Frontier' out &&
    { [[ $s == rocprofv3.sh ]] || grep -q 'rocm/6.3.4-extras' out; }; then
    pass "$s without its profiler: one line, exit 2, the module to load on LUMI and Frontier"
  else
    fail "$s without its profiler" "exit $rc" out
  fi
done

# ---- check_ranges.py on made-up traces ----
names=(halo_begin halo_exchange halo_unpack interior boundary)
mkdir -p t6 t7 tn tbad
{
  echo '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"'
  for n in "${names[@]}"; do echo "\"MARKER_CORE_RANGE_API\",\"$n\",1,1,0,10,20"; done
} >t6/fdmini_marker_api_trace.csv
echo '"Kind","Kernel_Name"' >t6/fdmini_kernel_trace.csv
python3 - "$work" <<'PY'
import sqlite3, sys
w = sys.argv[1]
names = ["halo_begin", "halo_exchange", "halo_unpack", "interior", "boundary"]
c = sqlite3.connect(f"{w}/t7/fdmini_results.db")   # rocpd: strings in a string table
c.execute("CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, string TEXT)")
c.executemany("INSERT INTO rocpd_string (string) VALUES (?)", [(n,) for n in names + ["k_plane"]])
c.commit(); c.close()
c = sqlite3.connect(f"{w}/tn/rank0.sqlite")       # Nsight Systems: NVTX_EVENTS.text
c.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, text TEXT, textId INTEGER)")
c.executemany("INSERT INTO NVTX_EVENTS VALUES (1, 2, ?, NULL)", [(n,) for n in names])
c.commit(); c.close()
PY
# a kernel trace names 'interior' as no range: only marker files count
printf '"Kind","Kernel_Name"\n"KERNEL","interior"\n' >tbad/fdmini_kernel_trace.csv
grep -v halo_unpack t6/fdmini_marker_api_trace.csv >tbad/fdmini_marker_api_trace.csv
for t in t6 t7 tn; do
  if python3 "$profile/check_ranges.py" "$t" >out 2>&1 && grep -q '5 of 5 ranges found' out; then
    pass "check_ranges.py finds fdmini's 5 ranges in $t ($(basename "$(find "$t" -type f | head -n 1)"))"
  else
    fail "check_ranges.py on $t" "" out
  fi
done
rc=0
python3 "$profile/check_ranges.py" tbad >out 2>&1 || rc=$?
if ((rc == 1)) && grep -q 'halo_unpack: MISSING' out && grep -q 'interior: found' out; then
  pass "check_ranges.py: a range missing from the markers fails (exit 1), a kernel name is no range"
else
  fail "check_ranges.py with a range missing" "exit $rc" out
fi
rc=0
python3 "$profile/check_ranges.py" "$work/none" >out 2>&1 || rc=$?
if ((rc == 2)); then pass "check_ranges.py: no trace at all: exit 2"; else fail "check_ranges.py without trace" "exit $rc" out; fi

summary "profile recipes test"
