# FdminiCrayPE.cmake - HPE Cray Programming Environment (LUMI, Frontier): MPI on the HIP link
# line and the GPU Transport Layer (GTL) that GPU-aware Cray MPICH needs.
#
# Why: with the hip backend CMake links fdmini with ROCm's clang++ (the HIP language), not the
# `cc` wrapper, and FindMPI sees a wrapper that handles MPI itself, so MPI::MPI_C names no
# library; whether libmpi and libmpi_gtl_hsa reached the link depended on implicit libraries.
# Without the GTL, MPICH_GPU_SUPPORT_ENABLED=1 (which GPU-aware MPI needs) makes every rank
# abort in MPI_Init: "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not
# linked". OLCF's Frontier guide gives the link line for compilers other than the wrappers:
#   -L${MPICH_DIR}/lib -lmpi ${CRAY_XPMEM_POST_LINK_OPTS} -lxpmem
#   ${PE_MPICH_GTL_DIR_amd_gfx90a} ${PE_MPICH_GTL_LIBS_amd_gfx90a}
# (the cray-mpich module sets PE_MPICH_GTL_DIR_<accel> = -L<mpich>/gtl/lib and
# PE_MPICH_GTL_LIBS_<accel> = -lmpi_gtl_hsa; LUMI's guide: craype-accel-amd-gfx90a makes the
# wrappers link it). This file does exactly that, explicitly:
#
#   Cray PE detected       PE_ENV, CRAY_MPICH_DIR, CRAY_MPICH_ROOTDIR, CRAY_MPICH_PREFIX or
#                          PE_MPICH_GTL_DIR_<accel> in the environment at configure time
#   FDMINI_GTL=AUTO        on a Cray PE with the hip backend: link the GTL (required there);
#                          elsewhere nothing
#   FDMINI_GTL=ON          link the GTL whatever the backend; fail when it cannot be found
#   FDMINI_GTL=OFF         never link it: under Cray MPICH the binary then refuses
#                          MPICH_GPU_SUPPORT_ENABLED=1 at start (src/run/site.c), one line instead of
#                          Cray MPICH's abort
#   FDMINI_GTL_LIB=PATH    the GTL library to link instead of the PE_MPICH_GTL_* variables
# <accel> is amd_<first CMAKE_HIP_ARCHITECTURES entry> (amd_gfx90a) for hip, nvidia<arch>
# (nvidia90) for cuda. When the GTL is linked (with --no-as-needed: fdmini calls none of its
# symbols, Cray MPICH loads it by its NEEDED entry), a post-build check (FdminiCheckGtl.cmake)
# fails the build, and removes the binary, when the binary does not need it.
#
# Sets FDMINI_GTL_STATUS for the config header ("linked: libmpi_gtl_hsa", "not linked
# (FDMINI_GTL=OFF)", "not linked (Cray PE, FDMINI_BACKEND=host)", "n/a (not a Cray PE)"). Whatever
# it says, the binary refuses MPICH_GPU_SUPPORT_ENABLED=1 under Cray MPICH when no GTL is loaded
# into the process (src/run/site.c).
set(FDMINI_GTL "AUTO" CACHE STRING "GTL of Cray MPICH: AUTO (Cray PE + hip), ON or OFF")
set_property(CACHE FDMINI_GTL PROPERTY STRINGS AUTO ON OFF)
set(FDMINI_GTL_LIB "" CACHE FILEPATH "GTL library to link (default: PE_MPICH_GTL_* variables)")
string(TOUPPER "${FDMINI_GTL}" FDMINI_GTL)
if(NOT FDMINI_GTL MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "FDMINI_GTL must be AUTO, ON or OFF, not '${FDMINI_GTL}'")
endif()

set(_fd_accel "")
if(FDMINI_BACKEND STREQUAL "hip")
  list(GET CMAKE_HIP_ARCHITECTURES 0 _fd_arch)
  string(REGEX REPLACE ":.*" "" _fd_arch "${_fd_arch}") # gfx90a:xnack+ -> gfx90a
  set(_fd_accel "amd_${_fd_arch}")
elseif(FDMINI_BACKEND STREQUAL "cuda")
  list(GET CMAKE_CUDA_ARCHITECTURES 0 _fd_arch)
  string(REGEX REPLACE "[^0-9].*" "" _fd_arch "${_fd_arch}") # 90a, 90-real -> 90
  set(_fd_accel "nvidia${_fd_arch}")
endif()

set(FDMINI_CRAY_PE 0)
foreach(_fd_v PE_ENV CRAY_MPICH_DIR CRAY_MPICH_ROOTDIR CRAY_MPICH_PREFIX PE_MPICH_GTL_DIR_${_fd_accel})
  if(DEFINED ENV{${_fd_v}})
    set(FDMINI_CRAY_PE 1)
  endif()
endforeach()

add_library(fdmini_cray INTERFACE)
set(_fd_runpath "") # the site MPI's and the GTL's folders, for fdmini's RUNPATH (below)
if(FDMINI_CRAY_PE)
  message(STATUS "fdmini: HPE Cray PE detected (PE_ENV='$ENV{PE_ENV}', accelerator '${_fd_accel}')")
  foreach(_fd_v MPICH_DIR CRAY_MPICH_DIR)
    if(NOT _fd_runpath AND EXISTS "$ENV{${_fd_v}}/lib")
      list(APPEND _fd_runpath "$ENV{${_fd_v}}/lib")
    endif()
  endforeach()
  # MPI for a link line that is not the wrapper's: FindMPI found MPI inside `cc` (no library)
  if(NOT MPI_C_LIBRARIES AND NOT FDMINI_BACKEND STREQUAL "host")
    set(_fd_mpich "$ENV{MPICH_DIR}")
    if(NOT _fd_mpich)
      set(_fd_mpich "$ENV{CRAY_MPICH_DIR}")
    endif()
    if(NOT _fd_mpich OR NOT EXISTS "${_fd_mpich}/lib")
      message(FATAL_ERROR "fdmini: Cray PE with FDMINI_BACKEND=${FDMINI_BACKEND}: the link goes "
                          "through the ${FDMINI_GPU_LANG} compiler, not `cc`, so it needs MPI's "
                          "library, but neither MPICH_DIR nor CRAY_MPICH_DIR names a folder with "
                          "lib/ (module load cray-mpich)")
    endif()
    target_include_directories(fdmini_cray INTERFACE "${_fd_mpich}/include")
    target_link_libraries(fdmini_cray INTERFACE "-L${_fd_mpich}/lib" mpi)
    if(DEFINED ENV{CRAY_XPMEM_POST_LINK_OPTS})
      separate_arguments(_fd_xpmem UNIX_COMMAND "$ENV{CRAY_XPMEM_POST_LINK_OPTS}")
      target_link_libraries(fdmini_cray INTERFACE ${_fd_xpmem} xpmem)
    endif()
    message(STATUS "fdmini: MPI on the ${FDMINI_GPU_LANG} link line: -L${_fd_mpich}/lib -lmpi")
  endif()
endif()

set(_fd_gtl_flags "")
set(_fd_gtl_name "")
if(FDMINI_GTL STREQUAL "ON" OR (FDMINI_GTL STREQUAL "AUTO" AND FDMINI_CRAY_PE AND FDMINI_BACKEND STREQUAL "hip"))
  if(FDMINI_GTL_LIB)
    if(NOT EXISTS "${FDMINI_GTL_LIB}")
      message(FATAL_ERROR "FDMINI_GTL_LIB=${FDMINI_GTL_LIB}: no such file")
    endif()
    get_filename_component(_fd_gtl_name "${FDMINI_GTL_LIB}" NAME)
    get_filename_component(_fd_dir "${FDMINI_GTL_LIB}" DIRECTORY)
    list(APPEND _fd_runpath "${_fd_dir}")
    string(REGEX REPLACE "\\.(so|a).*$" "" _fd_gtl_name "${_fd_gtl_name}")
    set(_fd_gtl_flags "${FDMINI_GTL_LIB}")
  elseif(_fd_accel AND DEFINED ENV{PE_MPICH_GTL_LIBS_${_fd_accel}})
    separate_arguments(_fd_dir UNIX_COMMAND "$ENV{PE_MPICH_GTL_DIR_${_fd_accel}}")
    separate_arguments(_fd_libs UNIX_COMMAND "$ENV{PE_MPICH_GTL_LIBS_${_fd_accel}}")
    set(_fd_gtl_flags ${_fd_dir} ${_fd_libs})
    foreach(_fd_l ${_fd_dir})
      if(_fd_l MATCHES "^-L(.+)$")
        list(APPEND _fd_runpath "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    foreach(_fd_l ${_fd_libs})
      if(_fd_l MATCHES "^-l(mpi_gtl_.*)$")
        set(_fd_gtl_name "lib${CMAKE_MATCH_1}")
      endif()
    endforeach()
  endif()
  if(NOT _fd_gtl_flags OR NOT _fd_gtl_name)
    message(FATAL_ERROR "fdmini: GPU-aware Cray MPICH needs its GPU Transport Layer linked, but "
      "PE_MPICH_GTL_LIBS_${_fd_accel} is not set and FDMINI_GTL_LIB is not given "
      "(FDMINI_GTL=${FDMINI_GTL}, FDMINI_BACKEND=${FDMINI_BACKEND}). Load the module that sets it "
      "(module load craype-accel-amd-gfx90a cray-mpich) and configure again, or pass "
      "-DFDMINI_GTL_LIB=\${CRAY_MPICH_ROOTDIR}/gtl/lib/libmpi_gtl_hsa.so, or -DFDMINI_GTL=OFF "
      "for a binary without GPU-aware MPI (it refuses MPICH_GPU_SUPPORT_ENABLED=1; run it with "
      "--mpi-gpu staged).")
  endif()
  # fdmini calls nothing of the GTL: keep its NEEDED entry whatever --as-needed says
  target_link_libraries(fdmini_cray INTERFACE "-Wl,--push-state,--no-as-needed" ${_fd_gtl_flags}
                                              "-Wl,--pop-state")
  set(FDMINI_GTL_STATUS "linked: ${_fd_gtl_name}")
  string(REPLACE ";" " " _fd_text "${_fd_gtl_flags}")
  message(STATUS "fdmini: GTL linked: ${_fd_text}")
elseif(FDMINI_GTL STREQUAL "OFF")
  set(FDMINI_GTL_STATUS "not linked (FDMINI_GTL=OFF)")
elseif(FDMINI_CRAY_PE)
  set(FDMINI_GTL_STATUS "not linked (Cray PE, FDMINI_BACKEND=${FDMINI_BACKEND})")
else()
  set(FDMINI_GTL_STATUS "n/a (not a Cray PE)")
endif()
target_link_libraries(fdmini_driver PUBLIC fdmini_cray)

# The MPI and the GTL that fdmini was linked with are the ones it must load: with a
# non-default CPE (OLCF recommends CPE 25.09 or 26.03; LUMI/25.09) the loader would otherwise
# take the system default's libmpi_cray and libmpi_gtl_hsa (/opt/cray/pe/lib64, built for
# another ROCm). -L/-l items record no rpath, so their folders go into fdmini's RUNPATH
# explicitly, in the build tree and in the installed binary (OLCF: "prepend
# CRAY_LD_LIBRARY_PATH ... at run time or your executable's rpath at build time"). RUNPATH, not
# RPATH: LD_LIBRARY_PATH still overrides it, as the job scripts' CRAY_LD_LIBRARY_PATH line does.
list(REMOVE_DUPLICATES _fd_runpath)
if(_fd_runpath)
  set_property(TARGET fdmini APPEND PROPERTY BUILD_RPATH ${_fd_runpath})
  set_property(TARGET fdmini APPEND PROPERTY INSTALL_RPATH ${_fd_runpath})
  target_link_options(fdmini PRIVATE "LINKER:--enable-new-dtags")
  string(REPLACE ";" ":" _fd_text "${_fd_runpath}")
  message(STATUS "fdmini: RUNPATH of fdmini gets ${_fd_text}")
endif()

if(_fd_gtl_name)
  # the linked binary must need the GTL: checked after every link of fdmini
  find_program(FDMINI_READELF NAMES readelf ${CMAKE_READELF})
  find_program(FDMINI_OBJDUMP NAMES objdump ${CMAKE_OBJDUMP})
  add_custom_command(TARGET fdmini POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:fdmini> -DGTL=${_fd_gtl_name}
            -DREADELF=${FDMINI_READELF} -DOBJDUMP=${FDMINI_OBJDUMP} -DACCEL=${_fd_accel}
            -P ${CMAKE_CURRENT_LIST_DIR}/FdminiCheckGtl.cmake
    COMMENT "Checking that fdmini needs ${_fd_gtl_name}"
    VERBATIM)
endif()
