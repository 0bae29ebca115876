/* throwaway: per-point time of the interior box against the whole block, 512x256x256 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#define CHECK(call) do { if ((call) != BE_OK) { fprintf(stderr, "%s: %s\n", #call, be_error_message()); exit(2); } } while (0)
int main(int argc, char **argv)
{
  int n[3] = {512, 256, 256};
  if (argc > 3) for (int d = 0; d < 3; d++) n[d] = atoi(argv[1 + d]);
  be_info info;
  CHECK(be_init(0, &info));
  be_stream s;
  CHECK(be_stream_create(&s, BE_PRIORITY_NORMAL));
  fd_grid g;
  if (fd_grid_init(&g, n, 1)) return 2;
  real_t *u, *out;
  CHECK(be_malloc((void **)&u, g.elems * sizeof(real_t)));
  CHECK(be_malloc((void **)&out, g.elems * sizeof(real_t)));
  fd_field fl;
  memset(&fl, 0, sizeof fl);
  fl.kind = FD_FIELD_RANDOM, fl.scale = 1.0, fl.seed = 1;
  for (int d = 0; d < 3; d++) fl.h[d] = 1.0 / (n[d] + 1), fl.L[d] = 1.0;
  CHECK(be_fill(&g, &fl, u, s));
  CHECK(be_fill(&g, &fl, out, s));
  fd_coeffs c = {0, 1, 1, 1, 0};
  c.cc = -6;
  fd_kernel cand[64];
  const int nc = be_kernel_candidates(cand, 64);
  /* deferred: none (the whole block), y-high+z-high (rank 0 of 1x2x2), y both + z both */
  const unsigned defs[4] = {0u, (1u << 3) | (1u << 5), 0x3cu, (1u << 5)};
  const char *names[4] = {"block", "int yh+zh", "int y+z all", "int zh"};
  double ms[4][64];
  for (int r = 0; r < 3; r++)
    for (int q = 0; q < 4; q++) {
      fd_kernel_trial t = {g, q ? FD_REGION_INTERIOR : FD_REGION_ALL, defs[q], c, u, NULL, out, s};
      double m[64];
      CHECK(fd_kernel_time(&t, cand, nc, 5, m));
      for (int i = 0; i < nc; i++) if (r == 0 || m[i] < ms[q][i]) ms[q][i] = m[i];
    }
  printf("%dx%dx%d on %s\n", n[0], n[1], n[2], info.name);
  for (int i = 0; i < nc; i++) {
    char d[FD_KERNEL_SPEC_MAX];
    fd_kernel_format(&cand[i], d, sizeof d);
    printf("%-50s", d);
    for (int q = 0; q < 4; q++) {
      int lo[3], hi[3];
      fd_interior_box(&g, defs[q], lo, hi);
      const double pts = (double)(hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1);
      printf("  %s %.2f us (%.3f ns/kpt)", names[q], ms[q][i] * 1e3, ms[q][i] * 1e9 / pts);
    }
    printf("\n");
  }
  return 0;
}
