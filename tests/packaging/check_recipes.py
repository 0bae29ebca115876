#!/usr/bin/env python3
"""check_recipes.py - CI's check of the package recipes kept with the source, without Spack or
EasyBuild. The Spack recipe (tools/spack/packages/fdmini/package.py) compiles, and, run against
a small stub of Spack's recipe API
(spack.package: the build-system classes, the directives, define/define_from_variant, a spec
that answers satisfies() and variants[]), it
  - declares the variants backend (host/hip/cuda, as FDMINI_BACKEND), precision (double/float,
    as FDMINI_PRECISION), hwloc, gtl and openmp, on top of CudaPackage and ROCmPackage;
  - turns specs for host, hip (amdgpu_target=gfx90a) and cuda (cuda_arch=90) into CMake
    arguments that name only options fdmini's CMake declares (or CMake's own), with values
    those options accept;
  - whose host arguments configure fdmini for real (cmake -S SOURCE -B TMP ARGS).
The EasyBuild recipe (tools/easybuild/*.eb) parses as the Python EasyBuild reads, names the
CMakeMake easyblock, fdmini and a toolchain, and its configopts name only options fdmini's CMake
declares, with valid values, and the hip backend with gfx90a.
Usage: tests/packaging/check_recipes.py [SOURCE_DIR]   Exit 0 when all pass (PASS:/FAIL: lines).
"""
import glob
import os
import py_compile
import re
import subprocess
import sys
import tempfile
import types

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
RECIPE = os.path.join(SRC, "tools", "spack", "packages", "fdmini", "package.py")
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(("PASS: " if cond else "FAIL: ") + name + ("" if cond else f": {detail}"))


# ---- 1. it compiles --------------------------------------------------------------------------
try:
    py_compile.compile(RECIPE, doraise=True, cfile=os.path.join(tempfile.mkdtemp(), "p.pyc"))
    check("package.py compiles", True)
except py_compile.PyCompileError as err:
    check("package.py compiles", False, err)
    sys.exit(1)

# ---- 2. a stub of Spack's recipe API ----------------------------------------------------------
DIRECTIVES = []  # (name, args, kwargs) in the order the class body calls them


def directive(name):
    def record(*args, **kwargs):
        DIRECTIVES.append((name, args, kwargs))
    return record


class PackageBase:
    run_tests = False

    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        elif isinstance(value, (list, tuple)):
            value = ";".join(value)
        return f"-D{name}={value}"

    def define_from_variant(self, name, variant):
        v = self.spec.variants[variant].value
        return self.define(name, v if not isinstance(v, bool) else v)


class CMakePackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    pass


class ROCmPackage(PackageBase):
    pass


stub = types.ModuleType("spack.package")
for n in ("version", "variant", "depends_on", "conflicts", "requires", "maintainers", "license",
          "provides", "patch", "resource"):
    setattr(stub, n, directive(n))
stub.CMakePackage, stub.CudaPackage, stub.ROCmPackage = CMakePackage, CudaPackage, ROCmPackage
stub.join_path = os.path.join
stub.__all__ = [n for n in dir(stub) if not n.startswith("_")]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub


class Variant:
    def __init__(self, value):
        self.value = value


class Prefix(str):
    """A prefix path with Spack's .bin, .lib, .include."""

    def __getattr__(self, sub):
        return os.path.join(self, sub)


class Dep:
    def __init__(self, prefix, mpicc=None):
        self.prefix = Prefix(prefix)
        self.mpicc = mpicc


class Spec:
    """Answers satisfies('+v'), satisfies('~v'), satisfies('v=x') from a dict of variants."""

    def __init__(self, variants, deps):
        self.variants = {k: Variant(v) for k, v in variants.items()}
        self.deps = deps

    def satisfies(self, text):
        m = re.fullmatch(r"([+~])(\w+)|(\w+)=(\w+)", text)
        assert m, f"the stub does not understand satisfies({text!r})"
        if m.group(1):
            return self.variants[m.group(2)].value == (m.group(1) == "+")
        v = self.variants[m.group(3)].value
        return m.group(4) in v if isinstance(v, tuple) else v == m.group(4)

    def __getitem__(self, name):
        return self.deps[name]


ns = {"__name__": "fdmini_recipe"}
with open(RECIPE, encoding="utf-8") as f:
    code = compile(f.read(), RECIPE, "exec")
exec(code, ns)  # noqa: S102 - the recipe, against the stub
Fdmini = ns.get("Fdmini")
check("class Fdmini(CMakePackage, CudaPackage, ROCmPackage)",
      Fdmini is not None and all(issubclass(Fdmini, c) for c in (CMakePackage, CudaPackage, ROCmPackage)))

variants = {a[0]: k for n, a, k in DIRECTIVES if n == "variant"}
want = {"backend": ("host", "hip", "cuda"), "precision": ("double", "float"), "gtl": ("auto", "on", "off")}
check("variants backend, precision, hwloc, gtl, openmp with fdmini's values",
      all(v in variants for v in ("backend", "precision", "hwloc", "gtl", "openmp")) and
      all(tuple(variants[v]["values"]) == vals for v, vals in want.items()), variants)
deps = {a[0] for n, a, k in DIRECTIVES if n == "depends_on"}
check("depends on mpi, cmake, hwloc (+hwloc), hip and llvm-amdgpu (backend=hip)",
      {"mpi", "cmake@3.21:", "hwloc", "hip", "llvm-amdgpu"} <= deps, deps)
req = [(a, k) for n, a, k in DIRECTIVES if n == "requires"]
check("backend=hip requires +rocm and backend=cuda +cuda",
      (("+rocm",), "backend=hip") in [(a, k.get("when")) for a, k in req] and
      (("+cuda",), "backend=cuda") in [(a, k.get("when")) for a, k in req], req)

# ---- 3. the CMake arguments name real options with valid values -------------------------------
cmake_text = ""
for root, _, files in os.walk(SRC):
    if "/build" in root[len(SRC):] or "/." in root[len(SRC):]:
        continue
    for f in files:
        if f == "CMakeLists.txt" or f.endswith(".cmake"):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                cmake_text += fh.read()
declared = set(re.findall(r"(?:set|option)\((FDMINI_\w+)\s[^)]*?(?:CACHE|\")", cmake_text))
allowed = {"FDMINI_BACKEND": {"host", "hip", "cuda"}, "FDMINI_PRECISION": {"double", "float"},
           "FDMINI_HWLOC": {"AUTO", "ON", "OFF"}, "FDMINI_GTL": {"AUTO", "ON", "OFF"},
           "FDMINI_OPENMP": {"ON", "OFF"}, "FDMINI_TESTS": {"ON", "OFF"}}
deps = {"mpi": Dep("/opt/mpi", mpicc="/opt/mpi/bin/mpicc"), "llvm-amdgpu": Dep("/opt/rocm/llvm"),
        "hip": Dep("/opt/rocm")}
specs = {
    "host": {"backend": "host", "precision": "double", "hwloc": True, "gtl": "auto", "openmp": True,
             "rocm": False, "cuda": False, "amdgpu_target": ("none",), "cuda_arch": ("none",)},
    "hip": {"backend": "hip", "precision": "float", "hwloc": False, "gtl": "on", "openmp": True,
            "rocm": True, "cuda": False, "amdgpu_target": ("gfx90a",), "cuda_arch": ("none",)},
    "cuda": {"backend": "cuda", "precision": "double", "hwloc": True, "gtl": "off", "openmp": False,
             "rocm": False, "cuda": True, "amdgpu_target": ("none",), "cuda_arch": ("90",)},
}
host_args = []
for name, v in specs.items():
    try:
        args = Fdmini(Spec(v, deps)).cmake_args()
    except Exception as err:  # a recipe that crashes fails the check
        check(f"cmake_args of {name}", False, f"{type(err).__name__}: {err}")
        continue
    bad = []
    for a in args:
        m = re.fullmatch(r"-D(\w+)(?::\w+)?=(.*)", a)
        if not m:
            bad.append(f"{a}: not -DNAME=VALUE")
            continue
        key, val = m.groups()
        if key.startswith("FDMINI_") and key not in declared:
            bad.append(f"{key}: not an option of fdmini's CMake")
        elif key in allowed and val not in allowed[key]:
            bad.append(f"{key}={val}: expected one of {sorted(allowed[key])}")
        elif not key.startswith(("FDMINI_", "CMAKE_", "MPI_", "ROCM_")):
            bad.append(f"{key}: unexpected")
        elif key.endswith(("_COMPILER", "_PATH")) and not val.startswith("/"):
            bad.append(f"{key}={val}: not an absolute path")
    text = " ".join(args)
    if name == "hip" and not ("-DCMAKE_HIP_ARCHITECTURES=gfx90a" in text and "-DFDMINI_PRECISION=float" in text
                              and "-DFDMINI_HWLOC=OFF" in text and "-DFDMINI_GTL=ON" in text):
        bad.append("hip arguments incomplete")
    if name == "cuda" and not ("-DCMAKE_CUDA_ARCHITECTURES=90" in text and "-DFDMINI_BACKEND=cuda" in text):
        bad.append("cuda arguments incomplete")
    check(f"cmake_args of {name}: {text}", not bad, "; ".join(bad))
    if name == "host":
        host_args = [a for a in args if not a.startswith("-DMPI_C_COMPILER")]

# ---- 4. the host arguments configure fdmini ------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    p = subprocess.run(["cmake", "-S", SRC, "-B", tmp] + host_args, capture_output=True, text=True,
                       check=False)
    check("cmake configures fdmini with the host spec's arguments", p.returncode == 0,
          (p.stdout + p.stderr)[-2000:])
# ---- 5. the EasyBuild recipe ----------------------------------------------------------------
for eb in sorted(glob.glob(os.path.join(SRC, "tools", "easybuild", "*.eb"))):
    base = os.path.basename(eb)
    env = {"EXTERNAL_MODULE": "EXTERNAL_MODULE", "SOURCELOWER_TAR_GZ": "%(namelower)s-%(version)s.tar.gz",
           "SHLIB_EXT": "so"}
    try:
        with open(eb, encoding="utf-8") as f:
            exec(compile(f.read(), eb, "exec"), env)  # noqa: S102 - easyconfigs are Python
    except Exception as err:  # pylint: disable=broad-except
        check(f"{base} parses", False, f"{type(err).__name__}: {err}")
        continue
    check(f"{base} parses", True)
    need = {"easyblock": "CMakeMake", "name": "fdmini"}
    missing = [k for k in ("easyblock", "name", "version", "homepage", "description", "toolchain",
                           "sources", "configopts", "sanity_check_paths", "moduleclass") if k not in env]
    wrong = [k for k, v in need.items() if env.get(k) != v]
    expected_name = f"{env.get('name')}-{env.get('version')}-{env.get('toolchain', {}).get('name')}-" \
                    f"{env.get('toolchain', {}).get('version')}{env.get('versionsuffix', '')}.eb"
    check(f"{base}: CMakeMake, fdmini, toolchain, sources, sanity checks; file named after them",
          not missing and not wrong and base == expected_name, f"missing {missing}, wrong {wrong}, "
          f"expected file name {expected_name}")
    bad = []
    opts = re.findall(r"-D(\w+)(?::\w+)?=(\S+)", env.get("configopts", ""))
    for key, val in opts:
        if key.startswith("FDMINI_") and key not in declared:
            bad.append(f"{key}: not an option of fdmini's CMake")
        elif key in allowed and val not in allowed[key]:
            bad.append(f"{key}={val}: expected one of {sorted(allowed[key])}")
    got = dict(opts)
    if got.get("FDMINI_BACKEND") != "hip" or got.get("CMAKE_HIP_ARCHITECTURES") != "gfx90a":
        bad.append("not the hip backend for gfx90a")
    if "bin/fdmini" not in env.get("sanity_check_paths", {}).get("files", []):
        bad.append("sanity check does not look for bin/fdmini")
    check(f"{base}: configopts name fdmini's options with valid values", not bad, "; ".join(bad))

print(f"recipes check: {sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
