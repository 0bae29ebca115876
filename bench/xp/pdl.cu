// throwaway: does programmatic dependent launch (PDL) shorten back-to-back stencil launches in
// a CUDA graph? 7-point heat, one thread per (i,j) column marching a chunk of z planes.
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void __launch_bounds__(256) heat(const double *__restrict__ u, double *__restrict__ o, int nx, int ny, int nz, int chunk, int pdl)
{
  if (pdl) cudaGridDependencySynchronize();
  const long sx = nx + 2, sxy = sx * (ny + 2);
  const int i = blockIdx.x * 32 + threadIdx.x % 32 + 1, j = blockIdx.y * 8 + threadIdx.x / 32 + 1;
  const int k0 = blockIdx.z * chunk + 1;
  if (i > nx || j > ny) return;
  long p = i + sx * j + sxy * k0;
  double zm = u[p - sxy], zc = u[p];
  for (int k = k0; k < k0 + chunk && k <= nz; k++, p += sxy) {
    const double zp = u[p + sxy];
    o[p] = zc + 0.1 * (u[p - 1] + u[p + 1] + u[p - sx] + u[p + sx] + zm + zp - 6 * zc);
    zm = zc, zc = zp;
  }
}
int main()
{
  const int sizes[][3] = {{128, 128, 128}, {128, 128, 64}, {128, 64, 64}, {64, 64, 64}, {256, 256, 256}, {256, 128, 128}};
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (auto &n : sizes) {
    const size_t el = (size_t)(n[0] + 2) * (n[1] + 2) * (n[2] + 2);
    double *a, *b;
    CK(cudaMalloc(&a, el * 8));
    CK(cudaMalloc(&b, el * 8));
    CK(cudaMemset(a, 0, el * 8));
    CK(cudaMemset(b, 0, el * 8));
    const int chunk = 8;
    dim3 grid((n[0] + 31) / 32, (n[1] + 7) / 8, (n[2] + chunk - 1) / chunk);
    for (int pdl = 0; pdl < 2; pdl++) {
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int r = 0; r < 200; r++) {
        cudaLaunchConfig_t c = {};
        c.gridDim = grid, c.blockDim = dim3(256), c.stream = s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        c.attrs = at, c.numAttrs = pdl ? 1 : 0;
        const double *in = r % 2 ? b : a;
        double *out = r % 2 ? a : b;
        CK(cudaLaunchKernelEx(&c, heat, in, out, n[0], n[1], n[2], chunk, pdl));
      }
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      float best = 1e30f;
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      for (int rep = 0; rep < 7; rep++) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep && ms < best) best = ms;
      }
      printf("%dx%dx%d pdl %d: %.3f us per step (%.0f GB/s)\n", n[0], n[1], n[2], pdl, best * 1e3 / 200,
             16.0 * n[0] * n[1] * n[2] / (best * 1e-3 / 200) / 1e9);
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  return 0;
}
