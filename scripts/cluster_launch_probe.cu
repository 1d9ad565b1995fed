// Do a grid's CTAs all run at once when launched as clusters (issue 18)?
//
// Our GEMM's cluster kernels ran 1.5-2x slower than the same kernel launched without clusters
// even with no barrier or load shared across the cluster (studies/2026-11-28-h200-gemm-s25/diag/
// solo). This launches a kernel that holds `smem` bytes of dynamic shared memory (one CTA per
// SM, like the GEMM) and stays resident `spin_us`, as clusters of 1, 2, 4, 8 and 16 CTAs (those
// that divide GRID; 16 is non-portable), and prints
// one CSV row per CTA: the SM it ran on and when it started and ended (globaltimer, ns, from
// the first start): CTAs that start a spin later than the others waited for a free SM. A
// cluster sits in one GPC, so the SMs of one cluster of 8 or 16 are SMs of one GPC.
//
//   nvcc -arch=sm_90a -o probe scripts/cluster_launch_probe.cu
//   ./probe GRID SMEM_BYTES SPIN_US [POLICY] > launch.csv  (cluster scheduling policy: 0-2)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void resident(unsigned long long* start, unsigned long long* end, unsigned* smid,
                         unsigned spin_ns) {
  extern __shared__ char smem[];
  unsigned long long t0 = now_ns();
  if (threadIdx.x == 0) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    smid[blockIdx.x] = s;
    start[blockIdx.x] = t0;
    smem[0] = 1;  // the shared memory is in use
  }
  while (now_ns() - t0 < spin_ns) {
  }
  if (threadIdx.x == 0) end[blockIdx.x] = now_ns();
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s GRID SMEM_BYTES SPIN_US [POLICY: 0 default, 1 spread, 2 balance]\n",
            argv[0]);
    return 2;
  }
  int grid = atoi(argv[1]), smem = atoi(argv[2]);
  unsigned spin_ns = 1000u * atoi(argv[3]);
  int policy = argc == 5 ? atoi(argv[4]) : 0;
  cudaFuncSetAttribute(resident, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(resident, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  unsigned long long *start, *end;
  unsigned* smid;
  cudaMalloc(&start, grid * 8);
  cudaMalloc(&end, grid * 8);
  cudaMalloc(&smid, grid * 4);
  std::vector<unsigned long long> s(grid), e(grid);
  std::vector<unsigned> m(grid);
  printf("cluster,cta,smid,start_ns,end_ns\n");
  for (int cluster : {1, 2, 4, 8, 16}) {
    if (grid % cluster) continue;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attr[1].val.clusterSchedulingPolicyPreference = (cudaClusterSchedulingPolicy)policy;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    bool ok = true;
    for (int rep = 0; rep < 3 && ok; ++rep) {  // the last launch is the one printed
      cudaError_t err = cudaLaunchKernelEx(&cfg, resident, start, end, smid, spin_ns);
      if (err != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "cluster %d: %s\n", cluster, cudaGetErrorString(cudaGetLastError()));
        ok = false;  // this size is skipped; the others still print
      }
    }
    if (!ok) continue;
    cudaMemcpy(s.data(), start, grid * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(e.data(), end, grid * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(m.data(), smid, grid * 4, cudaMemcpyDeviceToHost);
    unsigned long long t0 = s[0];
    for (int i = 0; i < grid; ++i) t0 = s[i] < t0 ? s[i] : t0;
    for (int i = 0; i < grid; ++i)
      printf("%d,%d,%u,%llu,%llu\n", cluster, i, m[i], s[i] - t0, e[i] - t0);
  }
  return 0;
}
