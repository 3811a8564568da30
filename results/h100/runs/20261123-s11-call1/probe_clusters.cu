// How many clusters of 1, 2, 4 CTAs of lab 30 step 4's shape (384 threads,
// 193 KB + 64 B of dynamic shared memory) the GPU holds at once.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(384, 1) step4_shaped() { extern __shared__ unsigned char s[]; s[threadIdx.x] = 0; }
int main() {
  const int smem = 4 * 49152 + 1024 + 64;
  cudaFuncSetAttribute(step4_shaped, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  std::printf("%s: %d SMs\n", p.name, p.multiProcessorCount);
  for (int size : {1, 2, 4}) {
    cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim.x = size; a.val.clusterDim.y = 1; a.val.clusterDim.z = 1;
    cudaLaunchConfig_t c{}; c.gridDim = dim3(size * (p.multiProcessorCount / size)); c.blockDim = dim3(384); c.dynamicSmemBytes = smem; c.attrs = &a; c.numAttrs = 1;
    int n = 0; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, step4_shaped, &c);
    std::printf("cluster size %d: %d clusters at once (%d SMs busy) %s\n", size, n, n * size, cudaGetErrorString(e));
  }
}
