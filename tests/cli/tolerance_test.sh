#!/usr/bin/env bash
# tolerance_test.sh - every check of the verification fails on its own and is tight (issue 58):
#   - the wave's mirror symmetry alone: --test-inject-fault=mirror (opposite displacements at two
#     mirror points of the start) fails it, exit 1, while the energy balance and the last-step
#     replay pass, on one rank and with the pair on two ranks;
#   - each check with a tolerance, from a planted error of a known size (KIND:F): an error of
#     twice its tolerance fails the check, one of half passes it, so that a tolerance loosened
#     (or tightened) by more than a factor 2 is caught: heat's and jacobi's mode decay (tiny:F,
#     the centre point 1 + F times its value; tolerance 16 eps (s + 4) of the amplitude),
#     jacobi's O(h^2) error (rhs:F, the right-hand side 1 + F times too large: the converged
#     answer 1 + F times too large; its tolerance is twice the error's leading term, so a run
#     without a fault is the half case), the wave's energy balance (source:F: the relative error
#     F / (1 + F); its tolerance is a bound computed from the field, held here for one case as
#     measured at commit f1c8f39); the checks with tolerance 0 (the laplacian's lap u = 3, the
#     wave's last-step replay) fail an error of a few units in the last place.
# The tolerances here are the documented formulas (docs/verification.md), computed by this
# script, never read back from the run: a tolerance changed in src/model/verify.c fails a case.
# usage: tolerance_test.sh FDMINI MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
fdmini=$1
mpiexec=$2
shift 2
mpiflags=("$@")
# shellcheck disable=SC1091 # tests/lib/checks.sh is checked on its own
. "$(dirname "$0")/../lib/checks.sh"

# run NP ARGS...: fdmini on NP ranks (one: an MPI singleton); sets rc and out (the full report:
# its verification line names every check with its numbers)
run() {
  local np=$1
  shift
  if ((np == 1)); then
    out=$(timeout 120 "$fdmini" --progress 0 --report full "$@" 2>&1)
  else
    out=$(timeout 120 "$mpiexec" -n "$np" "${mpiflags[@]}" "$fdmini" --progress 0 --report full "$@" 2>&1)
  fi
  rc=$?
}

# check CHECK: the report's verdict on the check named CHECK ("ok", "FAILED", "" where it did not
# apply or is absent), a tab, and its numbers; notes may hold "; ", so the line is cut before
# each check's name
check() {
  REPORT=$out python3 - "$1" <<'PY'
import os, re, sys
names = ["lap u = 3", "mode decay", "O(h^2) error", "energy balance", "mirror symmetry", "last-step replay",
         "finite field"]
line = next((l for l in os.environ["REPORT"].splitlines() if "verification: " in l), "")
detail = re.sub(r"^.*verification: [A-Z]+  [^:]*: ", "", line)
for part in re.split("; (?=(?:%s): )" % "|".join(map(re.escape, names)), detail):
    name, _, note = part.partition(": ")
    if name == sys.argv[1]:
        word = note.rsplit(" ", 1)[-1]
        print((word if word in ("ok", "FAILED") else "") + "\t" + name + ": " + note)
PY
}
verdict() { check "$1" | cut -f1; }
note() { check "$1" | cut -f2; }

# expect NAME RC CHECK=VERDICT... -- ARGS...: exit RC and each named check's verdict
expect() {
  local name=$1 want=$2 why="" c
  shift 2
  local checks=()
  while [[ $1 != -- ]]; do
    checks+=("$1")
    shift
  done
  shift
  run 1 "$@"
  ((rc == want)) || why="exit $rc, expected $want"
  for c in "${checks[@]}"; do
    local got
    got=$(verdict "${c%=*}")
    [[ $got == "${c##*=}" ]] || why="${why:+$why; }${c%=*}: '${got:-absent}', expected ${c##*=}"
  done
  if [[ -z $why ]]; then
    pass "$name: $(note "${checks[0]%=*}")"
  else
    printf '%s\n' "$out" | tail -6 | sed 's/^/     | /'
    fail "$name" "$why"
  fi
}

# py EXPR: a number from python3's math (the tolerances' formulas)
py() { python3 -c "from math import *; print(repr($1))"; }

run 1 --op heat --global 9,9,9 --iters 2 # its first line: "fdmini VERSION (COMMIT): host backend, double, ..."
precision=$(sed -n 's/^fdmini .* backend, \(double\|float\),.*/\1/p' <<<"$out" | head -n 1)
case $precision in
double) eps=2.220446049250313e-16 ;;
float) eps=1.1920928955078125e-07 ;;
*)
  echo "cannot read the precision of $fdmini (exit $rc)"
  exit 1
  ;;
esac
echo "== $precision: eps $eps"

echo "== the wave's mirror symmetry fails alone (--test-inject-fault=mirror)"
wave=(--op wave --global "15,15,15" --warmup 2 --iters 18)
expect "mirror fault, one rank: mirror symmetry FAILED, energy balance and replay pass" 1 \
  "mirror symmetry=FAILED" "energy balance=ok" "last-step replay=ok" -- "${wave[@]}" --test-inject-fault=mirror
run 2 "${wave[@]}" --procs 2,1,1 --test-inject-fault=mirror
if ((rc == 1)) && [[ $(verdict "mirror symmetry") == FAILED && $(verdict "energy balance") == ok &&
  $(verdict "last-step replay") == ok ]]; then
  pass "mirror fault, the pair on two ranks (2 x 1 x 1): $(note "mirror symmetry")"
else
  printf '%s\n' "$out" | tail -6 | sed 's/^/     | /'
  fail "mirror fault on two ranks" "exit $rc, mirror '$(verdict "mirror symmetry")', energy '$(verdict "energy balance")', replay '$(verdict "last-step replay")'"
fi
expect "without the fault the same run passes its mirror symmetry" 0 "mirror symmetry=ok" -- "${wave[@]}"

echo "== checks with tolerance 0 fail an error in the last places"
expect "laplacian lap u = 3 (tolerance 0): the centre point 1 + 1e-15 times 3" 1 "lap u = 3=FAILED" -- \
  --op laplacian --global 15,15,15 --iters 2 --test-inject-fault=tiny:1e-15
expect "wave last-step replay (tolerance 0): the centre point 1 + 1e-15 times its value" 1 \
  "last-step replay=FAILED" "energy balance=ok" -- "${wave[@]}" --test-inject-fault=tiny:1e-15

echo "== checks with a tolerance: an error of twice it fails, of half passes"
# heat, 15^3, s = 12 steps (warm-up included): tolerance 16 eps (s + 4) of the amplitude; the
# centre point (the global one, where the mode is 1) off by F of the amplitude
steps=12
tol=$(py "16 * $eps * ($steps + 4)")
heat=(--op heat --global "15,15,15" --warmup 2 --iters 10)
expect "heat mode decay, error 2 x its tolerance $tol" 1 "mode decay=FAILED" -- "${heat[@]}" \
  --test-inject-fault=tiny:"$(py "2 * $tol")"
expect "heat mode decay, error 0.5 x its tolerance $tol" 0 "mode decay=ok" -- "${heat[@]}" \
  --test-inject-fault=tiny:"$(py "0.5 * $tol")"
# jacobi, 15^3, 12 sweeps: the mode decay's tolerance is the same, relative to A; the centre
# point is (1 - g^s) A (phi = 1 there), so F = k tol / (1 - g^s)
jac=(--op jacobi --global "15,15,15" --warmup 2 --iters 10)
h="(1.0 / 16)"
gs=$(py "(1 - 3 * 4 * sin(pi * $h / 2)**2 / $h**2 / (6 / $h**2))**$steps")
expect "jacobi mode decay, error 2 x its tolerance $tol" 1 "mode decay=FAILED" -- "${jac[@]}" \
  --test-inject-fault=tiny:"$(py "2 * $tol / (1 - $gs)")"
expect "jacobi mode decay, error 0.5 x its tolerance $tol" 0 "mode decay=ok" -- "${jac[@]}" \
  --test-inject-fault=tiny:"$(py "0.5 * $tol / (1 - $gs)")"
# jacobi converged (1000 sweeps of 15^3: the residual falls by 1e6 after about 700): the O(h^2)
# error against sin sin sin is (1 + F) (1 - g^s) A - 1 at the centre, A = 3 pi^2 / lambda; its
# tolerance pi^2 sum h^2 / 18 is twice the leading term of A - 1, so without a fault the error
# is half of it (0.5004: the next terms); rhs:F makes it twice
conv=(--op jacobi --global "15,15,15" --warmup 2 --iters 998)
tol_h2=$(py "pi**2 * 3 * $h**2 / 18")
lam="(3 * 4 * sin(pi * $h / 2)**2 / $h**2)"
gs=$(py "(1 - $lam / (6 / $h**2))**1000")
A=$(py "3 * pi**2 / $lam")
expect "jacobi O(h^2) error without a fault: about 0.5 x its tolerance $tol_h2" 0 "O(h^2) error=ok" -- "${conv[@]}"
expect "jacobi O(h^2) error 2 x its tolerance $tol_h2 (rhs:F)" 1 "O(h^2) error=FAILED" -- "${conv[@]}" \
  --test-inject-fault=rhs:"$(py "(2 * $tol_h2 + 1) / ((1 - $gs) * $A) - 1")"
# the wave's energy balance: its tolerance (a rounding bound from the field's own sums) for this
# run, 15^3 and 20 steps in double, as measured at f1c8f39: held here, so that a bound changed
# by more than 2x fails a case; source:F plants a relative error F / (1 + F)
if [[ $precision == double ]]; then
  tol_e=2.37e-13
  for k in 2 0.5; do
    want=1 v=FAILED
    [[ $k == 0.5 ]] && want=0 v=ok
    F=$(py "$k * $tol_e / (1 - $k * $tol_e)")
    expect "wave energy balance, error $k x its tolerance $tol_e (source:F)" "$want" "energy balance=$v" \
      "last-step replay=ok" -- "${wave[@]}" --test-inject-fault=source:"$F"
  done
else
  echo "skip the wave's energy balance: its tolerance is held for double only"
fi

summary "tolerances"
