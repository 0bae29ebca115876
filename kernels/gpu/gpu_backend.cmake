# gpu_backend.cmake - included by the top-level CMakeLists.txt when FDMINI_BACKEND is hip or
# cuda: enables the device language, adds the .hip sources to fdmini_kernels, picks the
# profiler-range library (NVTX / roctx / none) and adds the GPU-only kernel sweep (bench/).
#
#   FDMINI_BACKEND=hip   CMake's HIP language (ROCm clang); CMAKE_HIP_ARCHITECTURES default gfx90a
#   FDMINI_BACKEND=cuda  the same .hip files compiled as CUDA by nvcc (-x cu via LANGUAGE CUDA);
#                        CMAKE_CUDA_ARCHITECTURES default 90; kernels/gpu/gpu_runtime.h maps the
#                        HIP calls onto CUDA
# FDMINI_WERROR turns device-code warnings into errors too.

set(FDMINI_GPU_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/backend_gpu.hip
  ${CMAKE_CURRENT_LIST_DIR}/stencil_config.hip
  ${CMAKE_CURRENT_LIST_DIR}/stencil_step.hip
  ${CMAKE_CURRENT_LIST_DIR}/stencil_exchange.hip
  ${CMAKE_CURRENT_LIST_DIR}/stencil_fused.hip)

if(FDMINI_BACKEND STREQUAL "hip")
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES AND NOT DEFINED ENV{HIPARCHS})
    set(CMAKE_HIP_ARCHITECTURES gfx90a CACHE STRING "AMD GPU targets (gfx90a = MI250X)")
  endif()
  enable_language(HIP)
  set(FDMINI_GPU_LANG HIP)
  set_source_files_properties(${FDMINI_GPU_SOURCES} PROPERTIES LANGUAGE HIP)
  # fdmini_kernels exists before the language is enabled: give it the architectures explicitly
  set_target_properties(fdmini_kernels PROPERTIES HIP_ARCHITECTURES "${CMAKE_HIP_ARCHITECTURES}")
  # the HIP runtime for the C executables that link fdmini_kernels (hip-lang's own target;
  # find_package(hip) would need the CXX language)
  target_link_libraries(fdmini_kernels PUBLIC hip-lang::amdhip64)
  # roctx ranges (rocprofv3 --marker-trace, rocprof-sys), looked up in the ROCm of the HIP
  # compiler in use: ROCM_PATH (a -D, else the environment's, which the rocm modules set), else
  # the ROCm the HIP language found (hip-lang), /opt/rocm last. rocprofiler-sdk's roctx
  # (ROCm >= 6.2) first; roctracer's roctx64 (deprecated, end of support 2026 Q2) for older
  # ROCm. The same roctxRangePushA/roctxRangePop either way; without either they are no-ops.
  if(NOT ROCM_PATH AND DEFINED ENV{ROCM_PATH})
    set(ROCM_PATH "$ENV{ROCM_PATH}")
  endif()
  set(_fd_rocm_hints ${ROCM_PATH})
  if(hip-lang_DIR)
    get_filename_component(_fd_hip_root "${hip-lang_DIR}/../../.." ABSOLUTE) # lib/cmake/hip-lang
    list(APPEND _fd_rocm_hints "${_fd_hip_root}")
  endif()
  list(APPEND _fd_rocm_hints /opt/rocm)
  # (HINTS before CMake's default places, CMAKE_PREFIX_PATH among them: Spack's
  # rocprofiler-sdk prefix)
  find_path(FDMINI_ROCTX_SDK_INCLUDE NAMES rocprofiler-sdk-roctx/roctx.h HINTS ${_fd_rocm_hints}
            PATH_SUFFIXES include)
  find_library(FDMINI_ROCTX_SDK_LIB NAMES rocprofiler-sdk-roctx HINTS ${_fd_rocm_hints}
               PATH_SUFFIXES lib lib64)
  find_path(FDMINI_ROCTX64_INCLUDE NAMES roctracer/roctx.h HINTS ${_fd_rocm_hints} PATH_SUFFIXES include)
  find_library(FDMINI_ROCTX64_LIB NAMES roctx64 HINTS ${_fd_rocm_hints} PATH_SUFFIXES lib lib64)
  if(FDMINI_ROCTX_SDK_INCLUDE AND FDMINI_ROCTX_SDK_LIB)
    set(FDMINI_ROCTX_INCLUDE "${FDMINI_ROCTX_SDK_INCLUDE}")
    set(FDMINI_ROCTX_LIB "${FDMINI_ROCTX_SDK_LIB}")
    set(FDMINI_ROCTX_HEADER "rocprofiler-sdk-roctx/roctx.h")
  elseif(FDMINI_ROCTX64_INCLUDE AND FDMINI_ROCTX64_LIB)
    set(FDMINI_ROCTX_INCLUDE "${FDMINI_ROCTX64_INCLUDE}")
    set(FDMINI_ROCTX_LIB "${FDMINI_ROCTX64_LIB}")
    set(FDMINI_ROCTX_HEADER "roctracer/roctx.h")
  endif()
  if(FDMINI_ROCTX_INCLUDE AND FDMINI_ROCTX_LIB)
    target_compile_definitions(fdmini_kernels PRIVATE FDMINI_HAVE_ROCTX
                               "FDMINI_ROCTX_HEADER=<${FDMINI_ROCTX_HEADER}>")
    target_include_directories(fdmini_kernels PRIVATE ${FDMINI_ROCTX_INCLUDE})
    target_link_libraries(fdmini_kernels PUBLIC ${FDMINI_ROCTX_LIB})
    message(STATUS "fdmini: profiler ranges through roctx (${FDMINI_ROCTX_LIB})")
  else()
    message(STATUS "fdmini: roctx not found (neither rocprofiler-sdk-roctx nor roctx64 under "
                   "${_fd_rocm_hints}), profiler ranges are no-ops")
  endif()
  set(FDMINI_GPU_WARN -Wall -Wextra)
  # no FMA contraction: the compiler contracts cc*uc + cx*(..) into fma(cx,..,cc*uc) or
  # fma(cc,uc,cx*(..)) depending on the surrounding code, so two kernels evaluating the same
  # pointwise.h expression could round differently (seen with nvcc: the z-marching kernel
  # differed from the baseline in the last bit). Memory-bound kernels lose nothing. Clang
  # applies it to both halves of a .hip file, the host code's and the device code's.
  list(APPEND FDMINI_GPU_WARN -ffp-contract=off)
  if(FDMINI_WERROR)
    list(APPEND FDMINI_GPU_WARN -Werror)
  endif()
  target_compile_options(fdmini_kernels PRIVATE "$<$<COMPILE_LANGUAGE:HIP>:${FDMINI_GPU_WARN}>")
  # CMake links the C executables through clang with the HIP flags; --offload-arch is unused there
  target_link_options(fdmini_kernels INTERFACE
    "$<$<LINK_LANGUAGE:HIP>:-Wno-unused-command-line-argument>")
elseif(FDMINI_BACKEND STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "NVIDIA GPU targets (90 = H100/H200)")
  endif()
  enable_language(CUDA)
  set(FDMINI_GPU_LANG CUDA)
  find_package(CUDAToolkit REQUIRED)
  set_source_files_properties(${FDMINI_GPU_SOURCES} PROPERTIES LANGUAGE CUDA)
  set_target_properties(fdmini_kernels PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  # static runtime: the binary needs only the driver on the GPU node
  target_link_libraries(fdmini_kernels PUBLIC CUDA::cudart_static)
  # NVTX3 is header-only (it dlopens the tool's injection library at run time)
  find_path(FDMINI_NVTX3_INCLUDE nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(FDMINI_NVTX3_INCLUDE)
    target_compile_definitions(fdmini_kernels PRIVATE FDMINI_HAVE_NVTX)
    target_link_libraries(fdmini_kernels PUBLIC ${CMAKE_DL_LIBS})
    message(STATUS "fdmini: profiler ranges through NVTX3")
  endif()
  # test builds: AMD's 64-lane wavefronts emulated on NVIDIA (gpu_runtime.h), so that the lane
  # arithmetic of the shuffling kernels runs at 64 lanes in the GPU tests
  option(FDMINI_EMULATE_WAVE64 "CUDA test build: 64-lane shuffle groups through shared memory" OFF)
  if(FDMINI_EMULATE_WAVE64)
    target_compile_definitions(fdmini_kernels PRIVATE FDMINI_EMULATE_WAVE64)
    message(STATUS "fdmini: 64-lane wavefront emulation (a test build, slower shuffles)")
  endif()
  set(FDMINI_GPU_WARN -Xcompiler=-Wall,-Wextra --Wreorder)
  # no FMA contraction (see the HIP branch): every kernel rounds each point identically;
  # -fmad=false is the device code's, -ffp-contract=off the host compiler's (GCC or Clang,
  # nvcc's hosts on Linux) for the host half of the .hip files, as for the C files
  list(APPEND FDMINI_GPU_WARN -fmad=false -Xcompiler=-ffp-contract=off)
  if(FDMINI_WERROR)
    list(APPEND FDMINI_GPU_WARN -Werror=all-warnings -Xcompiler=-Werror)
  endif()
  # the stencils must keep their register tiles in registers (sin() in fill/norms may not);
  # not in the 64-lane emulation, a test build whose shuffles through shared memory cost
  # registers that only its correctness, not its speed, depends on
  if(NOT FDMINI_EMULATE_WAVE64)
    list(APPEND FDMINI_GPU_WARN -Xptxas=-warn-spills)
    set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/stencil_step.hip
                                ${CMAKE_CURRENT_LIST_DIR}/stencil_exchange.hip
                                ${CMAKE_CURRENT_LIST_DIR}/stencil_fused.hip PROPERTIES
                                COMPILE_OPTIONS "-Xptxas=-warn-lmem-usage")
  endif()
  target_compile_options(fdmini_kernels PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${FDMINI_GPU_WARN}>")
else()
  message(FATAL_ERROR "gpu_backend.cmake: FDMINI_BACKEND must be hip or cuda")
endif()

target_sources(fdmini_kernels PRIVATE ${FDMINI_GPU_SOURCES})
target_include_directories(fdmini_kernels PUBLIC ${CMAKE_CURRENT_LIST_DIR})

# GPU-only kernel sweep (bench/kernel_sweep.c): variants x m x block shape -> GB/s.
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../../bench ${CMAKE_CURRENT_BINARY_DIR}/bench)

# GPU tests (plain C, no cmocka: the GPU nodes have none) are built whether or not
# FDMINI_TESTS is ON; tests/gpu/CMakeLists.txt ignores a second add_subdirectory (tests/).
option(FDMINI_GPU_TESTS "Build the GPU backend tests (tests/gpu, ctest label gpu)" ON)
if(FDMINI_GPU_TESTS)
  enable_testing()
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../../tests/gpu ${CMAKE_CURRENT_BINARY_DIR}/tests-gpu)
endif()
