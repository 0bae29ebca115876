// throwaway probe (issue 56): the floor of this MPI (CUDA-aware Open MPI 4.1.4, smcuda) for the
// off-node faces of the emulated layouts, device buffers, Irecv+Isend+Waitall per exchange;
// idle GPU and with a kernel filling the GPU (rank 0 launches it), to see whether the MPI's
// same-GPU copies wait for SMs.
#include <mpi.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void spin(unsigned long long ns, int *sink)
{
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  int x = 0;
  do {
    x += threadIdx.x;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
  if (x == -1) *sink = x;
}

// exchange with nb[] neighbours (n faces of `cnt` doubles), iters times; mean us per exchange
static double run(int n, const int *nb, int cnt, double *snd, double *rcv, int iters)
{
  MPI_Request rq[12];
  for (int w = 0; w < 2; w++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
      for (int k = 0; k < n; k++) MPI_Irecv(rcv + (size_t)k * cnt, cnt, MPI_DOUBLE, nb[k], 0, MPI_COMM_WORLD, &rq[k]);
      for (int k = 0; k < n; k++) MPI_Isend(snd + (size_t)k * cnt, cnt, MPI_DOUBLE, nb[k], 0, MPI_COMM_WORLD, &rq[n + k]);
      MPI_Waitall(2 * n, rq, MPI_STATUSES_IGNORE);
    }
    double t = (MPI_Wtime() - t0) / iters * 1e6;
    if (w == 1) return t;
  }
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  // argv: label faces(1..3: dims z, y, x exchanged across the 2x2x2 or 1x1x2 grid) edge
  const char *label = argv[1];
  int dims = atoi(argv[2]), edge = atoi(argv[3]);
  int cnt = edge * edge;
  int nb[3], n = 0;
  if (np == 2) nb[n++] = 1 - rank;
  else {  // 2x2x2, rank = x + 2y + 4z
    int bit[3] = {4, 2, 1};
    for (int d = 0; d < dims; d++) nb[n++] = rank ^ bit[d];
  }
  double *snd, *rcv;
  int *sink;
  cudaMalloc(&snd, sizeof(double) * cnt * 3);
  cudaMalloc(&rcv, sizeof(double) * cnt * 3);
  cudaMalloc(&sink, 4);
  cudaMemset(snd, 0, sizeof(double) * cnt * 3);
  cudaDeviceSynchronize();
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int iters = 1000;
  double idle = run(n, nb, cnt, snd, rcv, iters);
  // busy: rank 0 fills every SM for 1.5 s
  if (rank == 0) spin<<<sms * 2, 1024>>>(1500000000ull, sink);
  usleep(20000);
  double busy = run(n, nb, cnt, snd, rcv, iters / 2);
  double in[2] = {idle, busy}, mx[2];
  MPI_Reduce(in, mx, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    cudaDeviceSynchronize();
    printf("%-28s ranks %d faces/rank %d face %6d KiB: idle %7.1f us  busy-GPU %8.1f us\n", label, np, n,
           (int)(cnt * 8 / 1024), mx[0], mx[1]);
  }
  MPI_Finalize();
  return 0;
}
