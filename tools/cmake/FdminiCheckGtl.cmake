# FdminiCheckGtl.cmake - post-build check of fdmini (FdminiCrayPE.cmake): the binary must need
# the GTL of GPU-aware Cray MPICH, else MPICH_GPU_SUPPORT_ENABLED=1 aborts every rank in
# MPI_Init. Reads the dynamic section (readelf -d, else objdump -p); on failure removes the
# binary (so that a later build relinks and checks it again) and fails with one message.
#   cmake -DBINARY=path -DGTL=libmpi_gtl_hsa [-DREADELF=...] [-DOBJDUMP=...] [-DACCEL=amd_gfx90a]
#         -P FdminiCheckGtl.cmake
if(NOT BINARY OR NOT GTL)
  message(FATAL_ERROR "FdminiCheckGtl.cmake: BINARY and GTL must be given")
endif()
if(READELF)
  execute_process(COMMAND ${READELF} -d ${BINARY} OUTPUT_VARIABLE _dyn RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  set(_how "readelf -d")
elseif(OBJDUMP)
  execute_process(COMMAND ${OBJDUMP} -p ${BINARY} OUTPUT_VARIABLE _dyn RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  set(_how "objdump -p")
else()
  message(FATAL_ERROR "fdmini: cannot check the GTL link of ${BINARY}: neither readelf nor "
                      "objdump found (binutils)")
endif()
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "fdmini: ${_how} ${BINARY} failed: ${_err}")
endif()
# NEEDED lines: readelf "(NEEDED) Shared library: [libx.so.0]", objdump "NEEDED libx.so.0"
string(REGEX MATCHALL "NEEDED[^\n]*" _lines "${_dyn}")
set(_needed "")
foreach(_l IN LISTS _lines)
  if(_l MATCHES "\\[(.*)\\]") # readelf
    list(APPEND _needed "${CMAKE_MATCH_1}")
  elseif(_l MATCHES "NEEDED[ \t]+([^ \t]+)") # objdump
    list(APPEND _needed "${CMAKE_MATCH_1}")
  endif()
endforeach()
set(_hit ${_needed})
list(FILTER _hit INCLUDE REGEX "^${GTL}\\.so")
if(NOT _hit)
  file(REMOVE "${BINARY}")
  string(REPLACE ";" " " _list "${_needed}")
  message(FATAL_ERROR "fdmini: ${BINARY} does not need ${GTL} (${_how} lists only ${_list}), so "
    "MPICH_GPU_SUPPORT_ENABLED=1 would abort every rank in MPI_Init; the binary was removed. "
    "Load the module that names the GTL (craype-accel-amd-gfx90a, PE_MPICH_GTL_LIBS_${ACCEL}) "
    "and configure again, or pass -DFDMINI_GTL_LIB=/path/to/${GTL}.so, or -DFDMINI_GTL=OFF for a "
    "binary without GPU-aware MPI.")
endif()
message(STATUS "fdmini: ${BINARY} needs ${GTL} (${_how})")
