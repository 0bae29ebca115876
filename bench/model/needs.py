"""needs.py - the model's tools need numpy (and the plots matplotlib). Run by a python3 without
them (a venv or pyenv first on PATH) they start again with /usr/bin/python3 where that one has
them, the interpreter tools/install-deps.sh installs python3-matplotlib (and with it numpy) for,
as bench/scaling/plot.py does; else they say what to install in one line."""
import os
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"


def have(modules) -> bool:
    try:
        for m in modules:
            __import__(m)
        return True
    except ImportError:
        return False


def reexec(script: str, modules=("numpy",)) -> None:
    """Where this interpreter lacks `modules` and /usr/bin/python3 has them, run `script` again
    with it (does not return); otherwise return and let the caller decide."""
    if have(modules) or os.environ.get("FDMINI_MODEL_REEXEC") or not os.access(SYSTEM_PYTHON, os.X_OK):
        return
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "; ".join(f"import {m}" for m in modules)],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        return
    print(f"{os.path.basename(script)}: {', '.join(modules)} not installed for {sys.executable}; "
          f"running with {SYSTEM_PYTHON}, which has it", file=sys.stderr)
    os.environ["FDMINI_MODEL_REEXEC"] = "1"
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(script)] + sys.argv[1:])


def require(script: str, modules=("numpy",)) -> None:
    """reexec, then one error line and exit 1 where the modules are still missing."""
    reexec(script, modules)
    if not have(modules):
        print(f"{os.path.basename(script)}: error: {', '.join(modules)} not installed for "
              f"{sys.executable} (Debian/Ubuntu: apt-get install python3-matplotlib; LUMI/Frontier: "
              f"module load cray-python; or pip install {' '.join(modules)})", file=sys.stderr)
        sys.exit(1)
