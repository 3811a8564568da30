// The ceiling of mma.sync on this GPU, beside cuBLAS's FP16 GEMM at 8192^3 in the
// same run: how fast can a kernel built on mma.sync (lab 30 steps 1-3) go at best?
// Every warp issues m16n8k16 FP16->FP32 mma.sync from registers only (no loads), ILP
// independent accumulators so the tensor pipe never waits for a result. FLOPs: 2*16*8*16
// per mma per warp.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x) do { auto e = (x); if (e != 0) { std::printf("error %d at %s:%d\n", (int)e, __FILE__, __LINE__); return 1; } } while (0)

template <int ILP>
__global__ void mma_loop(float* out, int iters, unsigned seed) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = seed * (threadIdx.x + 7 * i + 1);
  for (int i = 0; i < 2; ++i) b[i] = seed ^ (threadIdx.x * 13 + i);
  float c[ILP][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < ILP; ++j)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0;
  for (int j = 0; j < ILP; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 1234.5f) out[0] = s;  // keeps the loop alive
}

template <int ILP>
double run_mma(int blocks, int threads, int iters) {
  float* out; cudaMalloc(&out, 4);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0);
    mma_loop<ILP><<<blocks, threads>>>(out, iters, 12345u + r);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float t; cudaEventElapsedTime(&t, e0, e1); if (r >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double flops = 2.0 * 16 * 8 * 16 * ILP * double(iters) * blocks * (threads / 32);
  cudaFree(out);
  if (cudaGetLastError() != cudaSuccess) return -1;
  return flops / (med * 1e-3) / 1e12;
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  std::printf("device %s, %d SMs\n", p.name, sms);
  // cuBLAS FP16 GEMM (FP32 accumulate) at 8192^3, the lab's baseline shape.
  const int n = 8192;
  __half *A, *B; float* C;
  CK(cudaMalloc(&A, sizeof(__half) * n * n)); CK(cudaMalloc(&B, sizeof(__half) * n * n)); CK(cudaMalloc(&C, sizeof(float) * n * n));
  std::vector<__half> h(size_t(n) * n);
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half(float((i * 2654435761u) % 1000) / 1000.f - 0.5f);
  CK(cudaMemcpy(A, h.data(), h.size() * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(B, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  cublasHandle_t hb; CK(cublasCreate(&hb));
  const float one = 1, zero = 0;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int r = 0; r < 25; ++r) {
    cudaEventRecord(e0);
    CK(cublasGemmEx(hb, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, CUDA_R_16F, n, B, CUDA_R_16F, n, &zero, C, CUDA_R_32F, n,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float t; cudaEventElapsedTime(&t, e0, e1); if (r >= 5) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double cublas = 2.0 * n * n * double(n) / (ms[ms.size() / 2] * 1e-3) / 1e12;
  std::printf("cublasGemmEx fp16->fp32 8192^3: median %.3f ms, %.1f TFLOP/s\n", ms[ms.size() / 2], cublas);
  double best = 0;
  for (int threads : {128, 256, 512}) {
    for (int per_sm : {1, 2, 4, 8}) {
      if (threads * per_sm > 2048) continue;
      const int blocks = sms * per_sm;
      const double t4 = run_mma<4>(blocks, threads, 4096), t8 = run_mma<8>(blocks, threads, 2048);
      std::printf("mma.sync m16n8k16 threads %d blocks/SM %d: ILP4 %.1f TFLOP/s, ILP8 %.1f TFLOP/s\n", threads, per_sm, t4, t8);
      best = std::max({best, t4, t8});
    }
  }
  std::printf("best mma.sync %.1f TFLOP/s = %.3fx cuBLAS (same run)\n", best, best / cublas);
  return 0;
}
