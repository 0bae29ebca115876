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
# The directives and CMake helpers take the signatures of Spack's own, so that a recipe that
# passes a keyword Spack does not know, or breaks a rule Spack enforces when the class is built,
# fails here as it would there. Checked against Spack's lib/spack/spack/directives.py (0.22 and
# later: version, variant, depends_on, conflicts, requires, provides, patch, maintainers,
# license) and spack-packages' repos/spack_repo/builtin/build_systems/cmake.py (define,
# define_from_variant) and cray_mpich/package.py (gtl_lib), as of 2026-07.
DIRECTIVES = []  # (name, args, kwargs) in the order the class body calls them
LANGUAGES = ("c", "cxx", "fortran")  # depends_on() of a language must be type="build"


class DirectiveError(Exception):
    """What Spack raises for a directive it refuses."""


def _record(name, args, kwargs):
    DIRECTIVES.append((name, args, {k: v for k, v in kwargs.items() if v is not None}))


def version(ver, checksum=None, *, preferred=None, deprecated=None, no_cache=None, url=None,
            extension=None, expand=None, fetch_options=None, md5=None, sha1=None, sha224=None,
            sha256=None, sha384=None, sha512=None, git=None, commit=None, tag=None, branch=None,
            get_full_repo=None, submodules=None, submodules_delete=None, svn=None, hg=None,
            cvs=None, revision=None, date=None):
    if not isinstance(ver, (str, int)):
        raise DirectiveError(f"version {ver!r} must be a string or int")
    _record("version", (ver,), {"checksum": checksum, "preferred": preferred, "git": git,
                                "commit": commit, "tag": tag, "branch": branch, "sha256": sha256})


def variant(name, default=None, description="", values=None, multi=None, validator=None,
            when=None, sticky=False):
    if default is None or default == "":
        raise DirectiveError(f"variant {name}: either a default was not explicitly set, or it is empty")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", name):
        raise DirectiveError(f"invalid variant name {name!r}")
    _record("variant", (name,), {"default": default, "description": description, "values": values,
                                 "multi": multi, "validator": validator, "when": when,
                                 "sticky": sticky or None})


def depends_on(spec, when=None, type=("build", "link"), patches=None):  # noqa: A002 (Spack's name)
    if spec.split("@")[0].split("+")[0].split()[0] in LANGUAGES and type != "build":
        raise DirectiveError(f"depends_on({spec!r}): languages must be of 'build' type")
    _record("depends_on", (spec,), {"when": when, "type": type, "patches": patches})


def conflicts(conflict_spec, when=None, msg=None):
    _record("conflicts", (conflict_spec,), {"when": when, "msg": msg})


def requires(*requirement_specs, policy="one_of", when=None, msg=None):
    if policy not in ("one_of", "any_of"):
        raise DirectiveError(f"requires: policy {policy!r} is not one_of or any_of")
    _record("requires", requirement_specs, {"policy": policy, "when": when, "msg": msg})


def provides(*specs, when=None):
    _record("provides", specs, {"when": when})


def patch(url_or_filename, level=1, when=None, working_dir=".", reverse=False, sha256=None,
          archive_sha256=None):
    _record("patch", (url_or_filename,), {"level": level, "when": when})


def maintainers(*names):
    _record("maintainers", names, {})


def license(license_identifier, checked_by=None, when=None):  # noqa: A001 (Spack's name)
    _record("license", (license_identifier,), {"checked_by": checked_by, "when": when})


def cmake_define(cmake_var, value):
    """Spack's define(): -DVAR:BOOL=ON|OFF, lists joined by ';', else -DVAR:STRING=value."""
    if isinstance(value, bool):
        return f"-D{cmake_var}:BOOL={'ON' if value else 'OFF'}"
    if isinstance(value, (list, tuple)):
        value = ";".join(str(v) for v in value)
    return f"-D{cmake_var}:STRING={value}"


class PackageBase:
    run_tests = False

    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(cmake_var, value):
        return cmake_define(cmake_var, value)

    def define_from_variant(self, cmake_var, variant=None):  # noqa: F811 (the method, not the directive)
        variant = variant or cmake_var.lower()
        if variant not in {a[0] for n, a, k in DIRECTIVES if n == "variant"} | set(self.spec.variants):
            raise KeyError(f'"{variant}" is not a variant of "fdmini"')
        if variant not in self.spec.variants:
            return ""
        value = self.spec.variants[variant].value
        if isinstance(value, (tuple, list)):
            value = sorted(value)
        return cmake_define(cmake_var, value)


class CMakePackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    cuda_arch_values = ("70", "80", "90", "100")


class ROCmPackage(PackageBase):
    amdgpu_targets = ("gfx906", "gfx908", "gfx90a", "gfx942")


stub = types.ModuleType("spack.package")
for n, f in (("version", version), ("variant", variant), ("depends_on", depends_on),
             ("conflicts", conflicts), ("requires", requires), ("provides", provides),
             ("patch", patch), ("maintainers", maintainers), ("license", license)):
    setattr(stub, n, f)
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
    def __init__(self, prefix, mpicc=None, gtl_lib=None):
        self.prefix = Prefix(prefix)
        self.mpicc = mpicc
        self.package = types.SimpleNamespace(gtl_lib=gtl_lib or {})


class Spec:
    """Answers satisfies() for '+v', '~v', 'v=x', '^dep' and '^[virtuals=mpi] dep', and
    space-separated conjunctions of them, from a dict of variants and dependencies."""

    def __init__(self, variants, deps):
        self.variants = {k: Variant(v) for k, v in variants.items()}
        self.deps = deps

    def satisfies(self, text):
        text = re.sub(r"\^\[virtuals=mpi\]\s+", "^mpi=", text)
        return all(self._one(t) for t in text.split())

    def _one(self, t):
        if t.startswith("^mpi="):
            return self.deps.get("mpi-name") == t[5:]
        if t.startswith("^"):
            return t[1:] in self.deps
        m = re.fullmatch(r"([+~])(\w+)|(\w+)=(\w+)", t)
        assert m, f"the stub does not understand satisfies({t!r})"
        if m.group(1):
            return self.variants[m.group(2)].value == (m.group(1) == "+")
        v = self.variants[m.group(3)].value
        return m.group(4) in v if isinstance(v, tuple) else v == m.group(4)

    def __getitem__(self, name):
        return self.deps[name]


ns = {"__name__": "fdmini_recipe"}
with open(RECIPE, encoding="utf-8") as f:
    code = compile(f.read(), RECIPE, "exec")
try:
    exec(code, ns)  # noqa: S102 - the recipe, against the stub
    check("package.py evaluates against Spack's directive signatures", True)
except (DirectiveError, TypeError) as err:  # a keyword Spack does not know, a rule it enforces
    check("package.py evaluates against Spack's directive signatures", False, f"{type(err).__name__}: {err}")
    sys.exit(1)
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
dep_calls = [(a[0], k) for n, a, k in DIRECTIVES if n == "depends_on"]
check("depends_on('c', type='build') (the compiler as a dependency: Spack 0.22.2 or newer)",
      ("c", {"type": "build"}) in dep_calls, dep_calls[:3])
check("roctx from rocprofiler-sdk (backend=hip), not the deprecated roctracer-dev",
      ("rocprofiler-sdk", {"when": "backend=hip", "type": ("build", "link")}) in dep_calls
      and "roctracer-dev" not in deps, [d for d in dep_calls if "roc" in d[0]])
gtl_deps = {(d, k.get("when")) for d, k in dep_calls if d.startswith("cray-mpich")}
check("cray-mpich+rocm with the build's amdgpu_target, for every target, when MPI is cray-mpich",
      all((f"cray-mpich+rocm amdgpu_target={t}",
           f"backend=hip amdgpu_target={t} ^[virtuals=mpi] cray-mpich") in gtl_deps
          for t in ROCmPackage.amdgpu_targets), sorted(gtl_deps)[:2])
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
        "hip": Dep("/opt/rocm"), "rocprofiler-sdk": Dep("/opt/rocm")}
# cray-mpich as the mpi provider: its gtl_lib as cray-mpich's package computes it (+rocm)
gtl_dir = "/opt/cray/pe/mpich/8.1.32/gtl/lib"
cray_deps = dict(deps, **{"mpi-name": "cray-mpich",
                          "mpi": Dep("/opt/cray/pe/mpich/8.1.32/ofi/amd/6.0", mpicc="/opt/cray/pe/craype/bin/cc"),
                          "cray-mpich": Dep("/opt/cray/pe/mpich/8.1.32/ofi/amd/6.0", gtl_lib={
                              "ldflags": [f"-L{gtl_dir}", f"-Wl,-rpath,{gtl_dir}"], "ldlibs": ["-lmpi_gtl_hsa"]})})
specs = {
    "host": {"backend": "host", "precision": "double", "hwloc": True, "gtl": "auto", "openmp": True,
             "rocm": False, "cuda": False, "amdgpu_target": ("none",), "cuda_arch": ("none",)},
    "hip": {"backend": "hip", "precision": "float", "hwloc": False, "gtl": "on", "openmp": True,
            "rocm": True, "cuda": False, "amdgpu_target": ("gfx90a",), "cuda_arch": ("none",)},
    "cuda": {"backend": "cuda", "precision": "double", "hwloc": True, "gtl": "off", "openmp": False,
             "rocm": False, "cuda": True, "amdgpu_target": ("none",), "cuda_arch": ("90",)},
}
specs["hip-cray"] = dict(specs["hip"], gtl="auto", precision="double")
host_args = []
for name, v in specs.items():
    try:
        args = Fdmini(Spec(v, cray_deps if name == "hip-cray" else deps)).cmake_args()
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
    plain = re.sub(r"-D(\w+):\w+=", r"-D\1=", text)  # Spack's define() types each value
    if not all(re.fullmatch(r"-D\w+:(BOOL|STRING)=.*", a) for a in args if a):
        bad.append("not every argument comes from define() (-DNAME:TYPE=VALUE)")
    if name == "hip" and not ("-DCMAKE_HIP_ARCHITECTURES=gfx90a" in plain and "-DFDMINI_PRECISION=float" in plain
                              and "-DFDMINI_HWLOC=OFF" in plain and "-DFDMINI_GTL=ON" in plain):
        bad.append("hip arguments incomplete")
    if name == "hip" and "FDMINI_GTL_LIB" in plain:
        bad.append("a GTL library without cray-mpich as the MPI")
    if name == "hip-cray" and f"-DFDMINI_GTL_LIB={gtl_dir}/libmpi_gtl_hsa.so" not in plain:
        bad.append("no FDMINI_GTL_LIB from cray-mpich's gtl_lib")
    if name == "cuda" and not ("-DCMAKE_CUDA_ARCHITECTURES=90" in plain and "-DFDMINI_BACKEND=cuda" in plain):
        bad.append("cuda arguments incomplete")
    check(f"cmake_args of {name}: {plain}", not bad, "; ".join(bad))
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
