#!/usr/bin/env python3
"""test_study_kernel_spec.py - study.py --kernel takes every kernel spec fdmini's --kernel takes
and refuses the others with fdmini's own reason (issue 47, item 6): study.py checks a spec by
fdmini's grammar (kernels/common.c, fd_kernel_parse) before it plans a run.

A table of specs (names, every key, ranges, the keys a variant does not take, malformed lists)
goes through study.py's checker; with FDMINI_BINARY, each also goes to the binary as a singleton
(`fdmini --kernel SPEC ...`), whose verdict must be the same: a spec the grammar refuses fails
with exactly `fdmini: error: --kernel: REASON`; one it accepts gets past the parser (the host
backend then refuses --kernel as a whole, a GPU build runs). Last, `study.py run --kernel`
itself: a zmarch spec with parameters reaches the fdmini command lines, `auto` is refused in one
line with the reason and the hint.

Usage: tests/bench/test_study_kernel_spec.py [FDMINI_BINARY]     Exit 0 when every check passed.
"""
import importlib.util
import os
import concurrent.futures
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STUDY = os.path.join(HERE, "..", "..", "bench", "scaling", "study.py")
failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def load_study():
    spec = importlib.util.spec_from_file_location("study", STUDY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# spec -> None (accepted) or the reason after "kernel spec 'SPEC': "
SPECS = {
    "baseline": None,
    "reordered": None,
    "zmarch": None,
    "zmarch:tile=1,vec=2,block=32x8,chunk=8": None,
    "zmarch:tile=2,chunk=16,strips=4": None,
    "reordered:tile=16,vec=1,block=64x4,strips=2": None,
    "reordered:tile=4,tile=8": None,
    "baseline:block=256x2": None,
    "baseline:tile=1,vec=1": None,
    "zmarch:block=512x1": None,
    "reordered:tile=016": None,
    "auto": "unknown kernel, expected baseline, reordered or zmarch",
    "fused": "unknown kernel, expected baseline, reordered or zmarch",
    "Zmarch": "unknown kernel, expected baseline, reordered or zmarch",
    "": "unknown kernel, expected baseline, reordered or zmarch",
    "reordered:": "nothing after ':'",
    "reordered:tile=2,": "nothing after ','",
    "reordered:tile=2,,vec=1": "expected key=value after ':' and each ','",
    "reordered:tile": "expected key=value after ':' and each ','",
    "reordered:tile=3": "tile must be 1, 2, 4, 8 or 16",
    "reordered:tile=32": "tile must be 1, 2, 4, 8 or 16",
    "reordered:tile=0": "tile must be 1, 2, 4, 8 or 16",
    "reordered:tile=": "tile must be 1, 2, 4, 8 or 16",
    "reordered:tile=+2": "tile must be 1, 2, 4, 8 or 16",
    "reordered:vec=4": "vec must be 1 or 2",
    "zmarch:block=32": "block must be BXxBY with BX*BY <= 512 threads",
    "zmarch:block=32x32": "block must be BXxBY with BX*BY <= 512 threads",
    "zmarch:block=32x8x2": "block must be BXxBY with BX*BY <= 512 threads",
    "zmarch:chunk=0": "chunk must be a number of planes >= 1",
    "zmarch:strips=x": "strips must be >= 1",
    "zmarch:tiles=1": "unknown key, expected tile, vec, block, chunk or strips",
    "zmarch:tile=4": "zmarch takes tile 1 or 2",
    "baseline:tile=2": "baseline takes only block",
    "baseline:chunk=4": "baseline takes only block",
    "reordered:chunk=4": "chunk applies to zmarch only",
    "reordered:tile=3,chunk=4": "tile must be 1, 2, 4, 8 or 16",
}


def main():
    study = load_study()
    for spec, want in SPECS.items():
        got = study.kernel_spec_error(spec)
        full = None if want is None else f"kernel spec '{spec}': {want}"
        check(got == full, f"study.py's grammar on {spec!r}: {'accepted' if want is None else want} "
                           f"(got {got!r})")

    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FDMINI_BINARY")
    if binary:
        # the runs are independent singletons: a few at once (each is mostly MPI's start-up)
        def run(spec):
            return subprocess.run([binary, "--kernel", spec, "--global", "8,8,8", "--iters", "1",
                                   "--progress", "0"], capture_output=True, text=True,
                                  timeout=60, check=False)
        # an empty argument is the same refusal; skipped to keep argv plain
        specs = [spec for spec in SPECS if spec != ""]
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(run, specs))
        for spec, res in zip(specs, results):
            want = SPECS[spec]
            out = res.stdout + res.stderr
            errors = [l for l in out.splitlines() if l.startswith("fdmini: error: ")]
            if want is None:
                ok = not any(l.startswith("fdmini: error: --kernel:") for l in errors) and (
                    res.returncode == 0 or errors)
                check(ok, f"fdmini accepts {spec!r} too (exit {res.returncode}: "
                          f"{errors[0] if errors else 'ran'})")
            else:
                line = f"fdmini: error: --kernel: kernel spec '{spec}': {want}"
                check(res.returncode == 2 and errors == [line],
                      f"fdmini refuses {spec!r} with study.py's reason (exit {res.returncode}: "
                      f"{errors})")
    else:
        print("note: no FDMINI_BINARY: the grammar is not checked against the binary")

    res = subprocess.run([sys.executable, STUDY, "run", "--machine", "local", "--study", "weak",
                          "--size", "8,8,8", "--scales", "2", "--repeats", "1", "--kernel",
                          "zmarch:tile=1,vec=2,block=32x8,chunk=8", "--binary", "/bin/true",
                          "--dry-run"], capture_output=True, text=True, check=False)
    cmds = [l for l in res.stdout.splitlines() if l.startswith("[")]
    check(res.returncode == 0 and len(cmds) == 2 and all(
        " --kernel zmarch:tile=1,vec=2,block=32x8,chunk=8 " in c for c in cmds),
        f"study.py run --kernel zmarch:...: the spec in every fdmini command ({res.stderr.strip()})")
    res = subprocess.run([sys.executable, STUDY, "run", "--machine", "local", "--study", "weak",
                          "--size", "8,8,8", "--scales", "2", "--kernel", "auto", "--binary",
                          "/bin/true", "--dry-run"], capture_output=True, text=True, check=False)
    last = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
    check(res.returncode == 2 and "argument --kernel: kernel spec 'auto': unknown kernel" in last
          and "leave --kernel out" in last and not res.stdout,
          f"study.py run --kernel auto: refused in one line with the reason ({last!r})")
    print(f"kernel spec test: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
