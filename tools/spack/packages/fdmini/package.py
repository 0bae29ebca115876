# package.py - Spack recipe for fdmini, kept with the source (tools/spack); Spack 0.22.2 or newer
# (depends_on("c"), the compiler as a dependency). Use it from a checkout (docs/building.md, "Spack"):
#   spack repo add tools/spack
#   spack env create -d fdmini-env && spack -e fdmini-env add fdmini@=main backend=hip amdgpu_target=gfx90a
#   spack -e fdmini-env develop --path "$PWD" --no-clone fdmini@=main && spack -e fdmini-env install
# The variants map onto fdmini's CMake options one to one; tests/packaging/check_recipes.py (CI)
# evaluates this file against a stub of Spack's API whose directives and CMake helpers take the
# signatures of Spack's own (checked against spack/spack's directives.py and spack-packages'
# build_systems/cmake.py, 2026), and configures fdmini with the arguments it produces.
from spack.package import *  # noqa: F401,F403 (Spack's recipe API; build systems in Spack < 1.0)

try:  # Spack >= 1.0: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
    from spack_repo.builtin.build_systems.rocm import ROCmPackage
except ImportError:
    pass


class Fdmini(CMakePackage, CudaPackage, ROCmPackage):
    """MPI-distributed, multi-GPU 3D finite-difference stencil mini-app for weak and strong
    scaling studies: HIP kernels (AMD, and NVIDIA through the same sources), GPU-aware or staged
    MPI with the halo exchange overlapped with the interior update, a verified answer, and a JSON
    record of every run."""

    # No published release or repository URL: Spack builds the checkout this file sits in
    # (spack develop --path, above); version main names it.
    version("main")

    variant("backend", default="host", values=("host", "hip", "cuda"), multi=False,
            description="Kernel backend, one per binary (FDMINI_BACKEND)")
    variant("precision", default="double", values=("double", "float"), multi=False,
            description="Floating-point type of the fields (FDMINI_PRECISION)")
    variant("hwloc", default=True,
            description="hwloc for the binding report; without it the OS's sysfs (FDMINI_HWLOC)")
    variant("gtl", default="auto", values=("auto", "on", "off"), multi=False,
            description="Link Cray MPICH's GPU Transport Layer (FDMINI_GTL): auto on an HPE Cray PE "
            "with backend=hip")
    variant("openmp", default=True, description="OpenMP in the host backend (FDMINI_OPENMP)")

    # one backend per binary: hip needs +rocm and an amdgpu_target, cuda +cuda and a cuda_arch
    requires("+rocm", when="backend=hip", msg="backend=hip builds with ROCm: add +rocm")
    requires("+cuda", when="backend=cuda", msg="backend=cuda builds with CUDA: add +cuda")
    conflicts("+rocm", when="backend=host", msg="+rocm needs backend=hip")
    conflicts("+rocm", when="backend=cuda", msg="+rocm needs backend=hip")
    conflicts("+cuda", when="backend=host", msg="+cuda needs backend=cuda")
    conflicts("+cuda", when="backend=hip", msg="+cuda needs backend=cuda")
    conflicts("amdgpu_target=none", when="backend=hip", msg="give amdgpu_target (gfx90a: MI250X)")
    conflicts("cuda_arch=none", when="backend=cuda", msg="give cuda_arch (90: H100, H200)")

    depends_on("c", type="build")
    depends_on("cxx", type="build", when="backend=hip")  # the HIP language: ROCm's clang++
    depends_on("cmake@3.21:", type="build")
    depends_on("mpi")
    depends_on("hwloc", when="+hwloc")
    depends_on("pkgconfig", type="build", when="+hwloc")
    depends_on("hip", when="backend=hip")
    depends_on("llvm-amdgpu", when="backend=hip")
    # roctx ranges for rocprofv3 --marker-trace and rocprof-sys: rocprofiler-sdk's roctx
    # (roctracer, the older home of roctx, is deprecated: end of support 2026 Q2)
    depends_on("rocprofiler-sdk", when="backend=hip")
    depends_on("cmocka", type="test")

    # GPU-aware Cray MPICH: its GTL for the GPU targets of this build comes from Spack's own
    # cray-mpich package (+rocm with the same amdgpu_target: its gtl_lib), not from the shell's
    # PE_MPICH_GTL_* variables (cray-mpich is an external: packages.yaml, docs/building.md "Spack")
    for _target in ROCmPackage.amdgpu_targets:
        depends_on(f"cray-mpich+rocm amdgpu_target={_target}",
                   when=f"backend=hip amdgpu_target={_target} ^[virtuals=mpi] cray-mpich")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("FDMINI_BACKEND", "backend"),
            self.define_from_variant("FDMINI_PRECISION", "precision"),
            self.define("FDMINI_HWLOC", "ON" if spec.satisfies("+hwloc") else "OFF"),
            self.define("FDMINI_GTL", spec.variants["gtl"].value.upper()),
            self.define_from_variant("FDMINI_OPENMP", "openmp"),
            self.define("FDMINI_TESTS", self.run_tests),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
        ]
        if spec.satisfies("backend=hip ^[virtuals=mpi] cray-mpich") and spec.variants["gtl"].value != "off":
            # the GTL library cray-mpich names for this build's GPU targets
            gtl = spec["cray-mpich"].package.gtl_lib
            libdir = [f[2:] for f in gtl.get("ldflags", []) if f.startswith("-L")]
            names = [f[2:] for f in gtl.get("ldlibs", []) if f.startswith("-l")]
            if libdir and names:
                args.append(self.define("FDMINI_GTL_LIB",
                                        join_path(libdir[0], f"lib{names[0]}.so")))
        if spec.satisfies("backend=hip"):
            targets = [t for t in spec.variants["amdgpu_target"].value if t != "none"]
            args.append(self.define("CMAKE_HIP_ARCHITECTURES", ";".join(targets)))
            args.append(self.define("CMAKE_HIP_COMPILER",
                                    join_path(spec["llvm-amdgpu"].prefix.bin, "clang++")))
            # roctx is found in rocprofiler-sdk's prefix through the CMAKE_PREFIX_PATH that
            # Spack passes for every dependency
            args.append(self.define("ROCM_PATH", spec["hip"].prefix))
        if spec.satisfies("backend=cuda"):
            archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
            args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        return args
