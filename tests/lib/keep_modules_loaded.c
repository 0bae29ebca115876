/* keep_modules_loaded.c - a test shim of the sanitizer build, preloaded (LD_PRELOAD, set in
 * tests/CMakeLists.txt) into every process its tests start: dlclose does nothing, so the
 * components that Open MPI and PMIx open in MPI_Init and close again stay mapped until exit.
 * Why: LeakSanitizer matches each leak that these libraries keep from MPI_Init against
 * tools/lsan-suppressions.txt frame by frame, and GCC 12's sanitizer runtime re-reads
 * /proc/self/maps for every frame it finds in no loaded module (a closed component's, or a
 * stale return address above it): a quarter of each sanitized process's time, half its
 * exit-time check. Nothing of fdmini is loaded with dlopen, so its own code runs as without
 * the shim. Built without the sanitizers (bash, python and mpiexec load it too); ASan then
 * needs verify_asan_link_order=0, which the same test environment sets. */
#include <stddef.h>

/* Keeps the module loaded: the handle stays valid, dlerror has nothing to report. */
int dlclose(void *handle)
{
  (void)handle;
  return 0;
}
