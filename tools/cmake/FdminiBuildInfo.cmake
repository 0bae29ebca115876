# FdminiBuildInfo.cmake - what the build was made with, for the report header and the JSON
# record (src/run/provenance.c): compiler ids and versions, build type, the flags project code is
# compiled with. Included by the top-level CMakeLists.txt once the backend's language is enabled
# (kernels/gpu/gpu_backend.cmake). Sets, escaped for a C string literal:
#   FDMINI_COMPILER_TEXT     "GNU 12.2.0" (C), plus "; HIP: Clang 15.0.6" or "; CUDA: NVIDIA 13.0.48"
#   FDMINI_BUILD_TYPE_TEXT   CMAKE_BUILD_TYPE ("Release", ...; "multi-config" without one)
#   FDMINI_BUILD_FLAGS_TEXT  "C: -O3 -DNDEBUG -Wall -Wextra ..." plus the device language's flags
#   FDMINI_GPU_ARCHS_TEXT    the device code's targets ("90", "gfx90a;gfx942" as "gfx90a gfx942"),
#                            "none" on the host backend (fdmini --version)

# fdmini_c_escape(VAR): VAR's value with \ and " escaped, in place
function(fdmini_c_escape var)
  string(REPLACE "\\" "\\\\" v "${${var}}")
  string(REPLACE "\"" "\\\"" v "${v}")
  string(REGEX REPLACE "[ \t\r\n]+" " " v "${v}")
  string(STRIP "${v}" v)
  set(${var} "${v}" PARENT_SCOPE)
endfunction()

if(CMAKE_BUILD_TYPE)
  set(FDMINI_BUILD_TYPE_TEXT "${CMAKE_BUILD_TYPE}")
  string(TOUPPER "${CMAKE_BUILD_TYPE}" _fd_bt)
else()
  set(FDMINI_BUILD_TYPE_TEXT "multi-config")
  set(_fd_bt "")
endif()

set(FDMINI_COMPILER_TEXT "${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
# the C flags of project code: CMake's, then the options fdmini_flags adds
set(_fd_c "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${_fd_bt}} -Wall -Wextra ${FDMINI_C_NO_CONTRACT}")
if(FDMINI_WERROR)
  string(APPEND _fd_c " -Werror")
endif()
if(FDMINI_SANITIZE)
  string(APPEND _fd_c " -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
endif()
if(FDMINI_OPENMP AND OpenMP_C_FOUND)
  string(APPEND _fd_c " ${OpenMP_C_FLAGS}")
endif()
set(FDMINI_BUILD_FLAGS_TEXT "C: ${_fd_c}")
set(FDMINI_GPU_ARCHS_TEXT "none")
if(FDMINI_GPU_LANG)
  set(_fd_l ${FDMINI_GPU_LANG})
  string(APPEND FDMINI_COMPILER_TEXT
         "; ${_fd_l}: ${CMAKE_${_fd_l}_COMPILER_ID} ${CMAKE_${_fd_l}_COMPILER_VERSION}")
  string(REPLACE ";" " " _fd_warn "${FDMINI_GPU_WARN}")
  string(APPEND FDMINI_BUILD_FLAGS_TEXT "; ${_fd_l}: ${CMAKE_${_fd_l}_FLAGS} "
         "${CMAKE_${_fd_l}_FLAGS_${_fd_bt}} ${_fd_warn} architectures ${CMAKE_${_fd_l}_ARCHITECTURES}")
  string(REPLACE ";" " " FDMINI_GPU_ARCHS_TEXT "${CMAKE_${_fd_l}_ARCHITECTURES}")
  if(FDMINI_GPU_ARCHS_TEXT STREQUAL "")
    set(FDMINI_GPU_ARCHS_TEXT "the compiler's default")
  endif()
endif()
foreach(_fd_v FDMINI_COMPILER_TEXT FDMINI_BUILD_TYPE_TEXT FDMINI_BUILD_FLAGS_TEXT FDMINI_GPU_ARCHS_TEXT)
  fdmini_c_escape(${_fd_v})
endforeach()
