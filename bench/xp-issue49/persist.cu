// throwaway harness: a persistent T1 heat kernel whose tiles wait on their neighbour tiles'
// step counters, against one launch per step (CUDA graph) and a persistent kernel with a
// grid barrier per step. One GPU, one rank's block. Not part of fdmini.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ int g_empty;
struct P { int nx, ny, nz; long sx, sxy; double cc, cx, cy, cz; };
__device__ __forceinline__ double pt(const P &p, const double *u, long i) {
  double c = __ldcg(u + i);
  return p.cc * c + p.cx * (__ldcg(u + i - 1) + __ldcg(u + i + 1)) + p.cy * (__ldcg(u + i - p.sx) + __ldcg(u + i + p.sx)) +
         p.cz * (__ldcg(u + i - p.sxy) + __ldcg(u + i + p.sxy));
}
// launched: one thread per (x,y), marching z over zc planes
__global__ void k_step(P p, const double *u, double *v, int zc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + 1, j = blockIdx.y * blockDim.y + threadIdx.y + 1;
  if (i > p.nx || j > p.ny) return;
  int k0 = blockIdx.z * zc + 1, k1 = min(p.nz, k0 + zc - 1);
  if (g_empty) return;
  for (int k = k0; k <= k1; k++) { long q = i + p.sx * j + p.sxy * k; v[q] = p.cc * u[q] + p.cx * (u[q - 1] + u[q + 1]) + p.cy * (u[q - p.sx] + u[q + p.sx]) + p.cz * (u[q - p.sxy] + u[q + p.sxy]); }
}
__device__ __forceinline__ void tile_update(const P &p, const double *__restrict__ u, double *__restrict__ v, int y0, int z0, int ty, int tz) {
  if (g_empty) return;
  for (int j = y0 + threadIdx.y; j < y0 + ty; j += blockDim.y)
    for (int i = threadIdx.x + 1; i <= p.nx; i += blockDim.x) {
      long q = i + p.sx * (j + 1) + p.sxy * (z0 + 1);
      double zm = u[q - p.sxy], zc = u[q];
      for (int k = 0; k < tz; k++, q += p.sxy) {
        double zp = u[q + p.sxy];
        v[q] = p.cc * zc + p.cx * (u[q - 1] + u[q + 1]) + p.cy * (u[q - p.sx] + u[q + p.sx]) + p.cz * (zm + zp);
        zm = zc; zc = zp;
      }
    }
}
__device__ __forceinline__ unsigned ld_acq(const unsigned *a) { unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory"); return v; }
__device__ __forceinline__ void st_rel(unsigned *a, unsigned v) { asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory"); }
// persistent, tile-wait: tile b = (by, bz) of ny/ty x nz/tz; waits for its 4 neighbours' counters
__global__ void k_tiles(P p, double *u0, double *u1, unsigned *done, int ty, int tz, int steps) {
  const int nty = p.ny / ty, ntz = p.nz / tz, b = blockIdx.x, by = b % nty, bz = b / nty;
  const int nb[4] = {by > 0 ? b - 1 : -1, by < nty - 1 ? b + 1 : -1, bz > 0 ? b - nty : -1, bz < ntz - 1 ? b + nty : -1};
  const int tid = threadIdx.x + blockDim.x * threadIdx.y;
  for (int s = 0; s < steps; s++) {
    if (tid < 4 && nb[tid] >= 0) { while (ld_acq(done + nb[tid]) < (unsigned)s) {} __threadfence(); }
    __syncthreads();
    tile_update(p, s & 1 ? u1 : u0, s & 1 ? u0 : u1, by * ty, bz * tz, ty, tz);
    __syncthreads();
    if (tid == 0) { __threadfence(); st_rel(done + b, s + 1); }
  }
}
__global__ void k_coop(P p, double *u0, double *u1, int ty, int tz, int steps) {
  cg::grid_group g = cg::this_grid();
  const int nty = p.ny / ty, b = blockIdx.x, by = b % nty, bz = b / nty;
  for (int s = 0; s < steps; s++) {
    tile_update(p, s & 1 ? u1 : u0, s & 1 ? u0 : u1, by * ty, bz * tz, ty, tz);
    g.sync();
  }
}
int main(int argc, char **argv) {
  int nx = atoi(argv[1]), ny = atoi(argv[2]), nz = atoi(argv[3]), steps = argc > 4 ? atoi(argv[4]) : 2000, empty = argc > 5 ? atoi(argv[5]) : 0;
  CK(cudaMemcpyToSymbol(g_empty, &empty, sizeof empty));
  P p{nx, ny, nz, nx + 2, (long)(nx + 2) * (ny + 2), 0.4, 0.1, 0.1, 0.1};
  size_t n = (size_t)p.sxy * (nz + 2);
  std::vector<double> h(n);
  for (size_t q = 0; q < n; q++) h[q] = (double)((q * 2654435761u) % 1000) / 1000.0;
  double *a0, *a1, *b0, *b1; unsigned *done;
  CK(cudaMalloc(&a0, n * 8)); CK(cudaMalloc(&a1, n * 8)); CK(cudaMalloc(&b0, n * 8)); CK(cudaMalloc(&b1, n * 8));
  CK(cudaMalloc(&done, 65536 * 4));
  auto reset = [&](double *x0, double *x1) { CK(cudaMemcpy(x0, h.data(), n * 8, cudaMemcpyHostToDevice)); CK(cudaMemcpy(x1, h.data(), n * 8, cudaMemcpyHostToDevice)); };
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  int dev; CK(cudaGetDevice(&dev)); cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, dev));
  // reference: launched, graph of 2 steps x 50
  int zc = 8; dim3 blk(128, 2), grd((nx + 127) / 128, (ny + 1) / 2, (nz + zc - 1) / zc);
  for (int zcv : {1, 2, 4, 8, 16}) {
    zc = zcv; grd.z = (nz + zc - 1) / zc;
    reset(a0, a1);
    cudaGraph_t gr; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int s = 0; s < 100; s++) k_step<<<grd, blk, 0, st>>>(p, s & 1 ? a1 : a0, s & 1 ? a0 : a1, zc);
    CK(cudaStreamEndCapture(st, &gr)); CK(cudaGraphInstantiate(&ge, gr, 0));
    CK(cudaGraphLaunch(ge, st)); CK(cudaStreamSynchronize(st));
    reset(a0, a1);
    CK(cudaEventRecord(e0, st));
    for (int r = 0; r < steps / 100; r++) CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st)); CK(cudaStreamSynchronize(st));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("%s%dx%dx%d launched  zc %2d blocks %6d            : %7.3f us/step\n", empty ? "EMPTY " : "", nx, ny, nz, zc, grd.x * grd.y * grd.z, ms * 1000 / (steps / 100 * 100));
  }
  std::vector<double> ref(n), got(n);
  CK(cudaMemcpy(ref.data(), a0, n * 8, cudaMemcpyDeviceToHost)); // steps is a multiple of 100: result in a0
  int tys[] = {1, 2, 4, 8, 16}, tzs[] = {2, 4, 8, 16, 32, 64};
  for (int ty : tys) for (int tz : tzs) {
    if (ny % ty || nz % tz) continue;
    int nt = (ny / ty) * (nz / tz), per;
    for (int by : {1, 2, 4, 8}) {
      if (by > ty) continue;
      dim3 tb(128, by);
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k_tiles, 128 * by, 0));
      if (nt > per * pr.multiProcessorCount || nt < 32) continue;
      for (int kind = 0; kind < 2; kind++) {
        if (kind == 1) { int pc; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&pc, k_coop, 128 * by, 0)); if (nt > pc * pr.multiProcessorCount) continue; }
        reset(b0, b1); CK(cudaMemset(done, 0, 65536 * 4));
        CK(cudaEventRecord(e0, st));
        if (kind == 0) k_tiles<<<nt, tb, 0, st>>>(p, b0, b1, done, ty, tz, steps);
        else { int s_ = steps; void *args[] = {&p, &b0, &b1, &ty, &tz, &s_}; CK(cudaLaunchCooperativeKernel((void *)k_coop, nt, tb, args, 0, st)); }
        CK(cudaEventRecord(e1, st)); CK(cudaStreamSynchronize(st));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        CK(cudaMemcpy(got.data(), b0, n * 8, cudaMemcpyDeviceToHost));
        bool same = memcmp(got.data(), ref.data(), n * 8) == 0;
        printf("%s%dx%dx%d %s ty %d tz %2d thr 128x%d tiles %5d: %7.3f us/step %s\n", empty ? "EMPTY " : "", nx, ny, nz, kind ? "coop-sync " : "tile-wait ", ty, tz, by, nt, ms * 1000 / steps, same ? "bitwise" : "DIFFERS");
      }
    }
  }
  return 0;
}
