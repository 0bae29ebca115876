#!/usr/bin/env python3
"""test_study_failed_run.py - bench/scaling/study.py run --machine local when a run exits
non-zero after writing its JSON record: the record is renamed NAME.json.failed (out of the
*.json that collect.py and scaling_table.py read), study.json says so with the exit code, the
study exits 1; and the sbatch scripts quote --output, so an --out folder with a space works.
The launcher is a stand-in (a script that writes a record and exits 3), no MPI needed.
Usage: tests/bench/test_study_failed_run.py     Exit 0 when every check passed.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile

import checks  # noqa: E402 (tests/bench/checks.py, beside this file)
from checks import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STUDY = os.path.join(HERE, "..", "..", "bench", "scaling", "study.py")

FAKE = """#!/bin/sh
# a launcher whose run writes its record, then fails
while [ $# -gt 0 ]; do
  if [ "$1" = --json ]; then echo '{"schema": "fdmini-run/1"}' > "$2"; fi
  shift
done
exit 3
"""

with tempfile.TemporaryDirectory() as work:
    fake = os.path.join(work, "fake-mpiexec")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, stat.S_IRWXU)
    out = os.path.join(work, "study")
    p = subprocess.run([sys.executable, STUDY, "run", "--machine", "local", "--launcher", "mpirun",
                        "--mpiexec", fake, "--binary", "/bin/true", "--study", "weak",
                        "--size", "12,12,12", "--scales", "1", "--repeats", "1",
                        "--variants", "overlap", "--out", out], capture_output=True, text=True)
    text = p.stdout + p.stderr
    check("a failed run: study exits 1", p.returncode == 1, text)
    names = sorted(os.listdir(out)) if os.path.isdir(out) else []
    recs = [n for n in names if n.endswith(".json") and n != "study.json"]
    failed = [n for n in names if n.endswith(".json.failed")]
    check("its record renamed NAME.json.failed", not recs and len(failed) == 1, names)
    try:
        with open(os.path.join(out, "study.json")) as f:
            man = json.load(f)
        e = man["runs"][0]
    except (OSError, ValueError, KeyError, IndexError) as err:
        e = {"error": str(err)}
    check("study.json: exit code 3 and the renamed record", e.get("exit_code") == 3
          and e.get("failed_record") == e.get("record", "") + ".failed", e)
    check("the error says where the record went", ".json.failed" in text, text)

    # the batch scripts: --output quoted (a space in --out)
    sp = os.path.join(work, "with space")
    p = subprocess.run([sys.executable, STUDY, "run", "--machine", "lumi-g", "--study", "weak",
                        "--size", "12,12,12", "--nodes", "1", "--repeats", "1",
                        "--binary", "/bin/true", "--account", "p", "--dry-run", "--out", sp],
                       capture_output=True, text=True)
    lines = []
    for n in sorted(os.listdir(sp)) if os.path.isdir(sp) else []:
        if n.endswith(".sbatch"):
            with open(os.path.join(sp, n)) as f:
                lines += [x for x in f if x.startswith("#SBATCH --output=")]
    check("sbatch --output quoted", p.returncode == 0 and lines
          and all(x.strip() == f'#SBATCH --output="{sp}/' + x.split("/")[-1].strip() for x in lines)
          and all(x.strip().endswith('-%j.out"') for x in lines), (p.stdout + p.stderr, lines))

print(f"study failed-run test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed)")
sys.exit(1 if checks.failed else 0)
