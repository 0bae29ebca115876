// cluster_sweep.cu - issue 3 experiment: the product's pairs m=2 kernel (k_plane_v2), unchanged,
// launched in thread-block clusters, against the plain launch in the SAME run. Not part of the
// build.
//
// Why: on the H200 the default kernel saturates the fabric between the two L2 partitions (ncu:
// lts__ltcfabric2ltc_cycles_active 97.7%, 48.8 M of 127.7 M read sectors crossed it), while DRAM
// runs at 70%. Each row is read by the blocks of three planes (as z+1, centre, z-1), and those
// blocks land on SMs of either partition, so a line homed in one partition is fetched across
// the fabric by the other, often more than once. A cluster is scheduled on one GPC, so a
// cluster of C blocks of consecutive planes at the same place of the plane (cluster dims 1 x C)
// reads its shared rows from one partition: the second and third reads of a row hit that
// partition's copy instead of crossing again. Clusters along x (C x 1) share only the y halo
// rows; they are the control (grid.x rounded up to a multiple of C: the extra blocks' threads
// are idle, as the kernel's own tail threads). No kernel change: the cluster shape is a launch
// attribute (cudaLaunchKernelEx), so the output is bitwise the product's (checked).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false cluster_sweep.cu -o c && ./c [nx ny nz [rounds]]
#include "sweep_common.cuh"

int main(int argc, char **argv) {
  Harness h(argc, argv, 3);
  const cudaDeviceProp &pr = h.pr;
  printf("device %s (%d SMs, L2 %d MB), %dx%dx%d double, pairs strips %d, effective bytes %.1f MB\n", pr.name, pr.multiProcessorCount,
         pr.l2CacheSize >> 20, h.nx, h.ny, h.nz, h.strips_rule, h.eff / 1e6);
  dim3 grid;
  const A b = h.pairs_args(grid);
  auto kern = k_pairs<2, 256, 4>;
  printf("grid %u x %u x %u blocks of 256\n", grid.x, grid.y, grid.z);
  auto run = [&](int cx, int cy, int policy) {
    char nm[80];
    if (cx * cy == 1) snprintf(nm, sizeof nm, "pairs m=2 (product launch)");
    else snprintf(nm, sizeof nm, "pairs m=2 cluster %dx%d%s", cx, cy, policy ? " spread" : "");
    if (grid.y % cy) { printf("%-36s skipped: %u planes not divisible\n", nm, grid.y); return; }
    // x clusters: blocks past the plane's threads are idle in the kernel (live = false)
    dim3 g = grid; g.x = (grid.x + cx - 1) / cx * cx;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = g; cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = 0; cfg.stream = 0;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = cx; at[0].val.clusterDim.y = cy; at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    at[1].val.clusterSchedulingPolicyPreference = policy ? cudaClusterSchedulingPolicySpread : cudaClusterSchedulingPolicyDefault;
    cfg.attrs = at; cfg.numAttrs = cx * cy == 1 ? 0 : 2;
    int clusters = 0;
    if (cx * cy > 1) CK(cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg));
    CK(cudaMemset(h.o, 0xff, h.bytes));
    const double t = h.timeit([&] {
      if (cx * cy == 1) kern<<<grid, 256>>>(b);
      else CK(cudaLaunchKernelEx(&cfg, kern, b));
    });
    char st[64]; h.check(1, st, sizeof st);
    char res[40] = "";
    if (clusters) snprintf(res, sizeof res, "%4d clusters resident", clusters);
    printf("%-36s %.4f ms %6.0f GB/s %5.1f%%  %-22s %s\n", nm, t, h.gbs(t), h.pct(t), res, st); fflush(stdout);
  };
  for (int round = 0; round < h.rounds; round++) {
    h.memcpy_round(round);
    run(1, 1, 0);
    for (int cy : {2, 4, 8}) run(1, cy, 0);
    for (int cy : {2, 4}) run(1, cy, 1);
    for (int cx : {2, 4}) run(cx, 1, 0);
    run(2, 2, 0);
    run(2, 4, 0);
    run(1, 1, 0);
  }
  return h.finish("all launches bitwise equal to the baseline, ghosts untouched");
}
