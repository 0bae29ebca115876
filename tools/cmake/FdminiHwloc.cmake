# FdminiHwloc.cmake - hwloc for the binding report (src/run/bind.c), optional.
#
#   FDMINI_HWLOC=AUTO (default)  use hwloc when found (pkg-config's hwloc.pc, else hwloc.h and
#                                libhwloc where CMake looks: CMAKE_PREFIX_PATH, HWLOC_ROOT),
#                                else build without it
#   FDMINI_HWLOC=ON              hwloc is required: configure fails when it is not found
#   FDMINI_HWLOC=OFF             never use it
# Without hwloc the binding report reads the same facts from Linux (src/run/bind_os.c): the CPU
# mask (sched_getaffinity), each NUMA node's CPUs and the GPU's PCI locality (sysfs). LUMI's
# compute image has libhwloc.so but no headers and no hwloc.pc, so AUTO builds without it there.
#
# Defines: the INTERFACE target fdmini_hwloc (hwloc's headers and library, or nothing),
# FDMINI_HAVE_HWLOC (1/0) and FDMINI_HWLOC_VERSION ("2.9.0", "unknown" or "none") for the
# generated config header.
set(FDMINI_HWLOC "AUTO" CACHE STRING "hwloc for the binding report: AUTO, ON (required) or OFF")
set_property(CACHE FDMINI_HWLOC PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${FDMINI_HWLOC}" FDMINI_HWLOC)
if(NOT FDMINI_HWLOC MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "FDMINI_HWLOC must be AUTO, ON or OFF, not '${FDMINI_HWLOC}'")
endif()

add_library(fdmini_hwloc INTERFACE)
set(FDMINI_HAVE_HWLOC 0)
set(FDMINI_HWLOC_VERSION "none")
if(NOT FDMINI_HWLOC STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
  endif()
  if(HWLOC_FOUND)
    target_link_libraries(fdmini_hwloc INTERFACE PkgConfig::HWLOC)
    set(FDMINI_HAVE_HWLOC 1)
    set(FDMINI_HWLOC_VERSION "${HWLOC_VERSION}")
  else()
    # no pkg-config file: the header and the library where CMake looks
    find_path(FDMINI_HWLOC_INCLUDE_DIR hwloc.h HINTS ENV HWLOC_ROOT PATH_SUFFIXES include)
    find_library(FDMINI_HWLOC_LIBRARY hwloc HINTS ENV HWLOC_ROOT PATH_SUFFIXES lib lib64)
    if(FDMINI_HWLOC_INCLUDE_DIR AND FDMINI_HWLOC_LIBRARY)
      target_include_directories(fdmini_hwloc INTERFACE ${FDMINI_HWLOC_INCLUDE_DIR})
      target_link_libraries(fdmini_hwloc INTERFACE ${FDMINI_HWLOC_LIBRARY})
      set(FDMINI_HAVE_HWLOC 1)
      set(FDMINI_HWLOC_VERSION "unknown")
    endif()
  endif()
  if(NOT FDMINI_HAVE_HWLOC AND FDMINI_HWLOC STREQUAL "ON")
    message(FATAL_ERROR "FDMINI_HWLOC=ON, but hwloc was not found: no hwloc.pc for pkg-config "
                        "and no hwloc.h with libhwloc in CMAKE_PREFIX_PATH or HWLOC_ROOT "
                        "(Debian/Ubuntu: apt-get install libhwloc-dev). FDMINI_HWLOC=AUTO or OFF "
                        "builds without it: the binding report then reads the OS "
                        "(sched_getaffinity, sysfs).")
  endif()
endif()
if(FDMINI_HAVE_HWLOC)
  message(STATUS "fdmini: binding report with hwloc ${FDMINI_HWLOC_VERSION}")
else()
  message(STATUS "fdmini: binding report without hwloc (FDMINI_HWLOC=${FDMINI_HWLOC}): "
                 "locality from the OS (sched_getaffinity, sysfs)")
endif()
