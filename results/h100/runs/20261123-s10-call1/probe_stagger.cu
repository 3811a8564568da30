// Probe for session 10's call 1: lab 30 steps 2 and 3 with each scheduler's
// second warp running its copy code at another k-step than the first
// ("staggered"), timed beside cublasGemmEx (FP16 in, FP32 out) in the same
// process at 8192^3, 4096^3 and 4104^3 (partial tiles); C checked against
// cuBLAS's C. Built three ways (commands.txt): -DNEW against branch
// lab30-stagger's headers (stagger.patch beside it, on d814a42), without it
// against d814a42's (old30/), and
// -DNEW -DLABEL='"zerofill"' against a copy whose cp.async read nothing
// (src-size 0: zeros), a diagnostic of what global memory costs step 3.
#include <cublas_v2.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cp_async_pipeline.cuh"
#include "mma_ldmatrix.cuh"

#ifndef LABEL
#define LABEL "?"
#endif

__global__ void fill(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = __float2half(float(x % 2001) / 1000.f - 1.f);
  }
}

template <typename F>
double median_ms(F f, int reps = 21) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float t; cudaEventElapsedTime(&t, e0, e1); ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main() {
  using Launch = void (*)(const __half*, const __half*, float*, int, int, int, cudaStream_t);
  struct Row { const char* name; Launch launch; };
  using WG = WarpGrid<2, 4, 4, 4>;
#ifdef NEW
  using S2 = mma_ldmatrix_step::Config<WG, true>;
  using P2S = cp_async_step::Config<WG, 3, 2, true>;
  using P1S = cp_async_step::Config<WG, 3, 1, true>;
  using P1 = cp_async_step::Config<WG, 3, 1>;
#endif
  const Row rows[] = {{"step2", gemm_mma_ldmatrix<__half>},
#ifdef NEW
                      {"step2 staggered", gemm_mma_ldmatrix<__half, S2>},
#endif
                      {"step3", gemm_cp_async_pipeline<__half>},
#ifdef NEW
                      {"step3 staggered", gemm_cp_async_pipeline<__half, P2S>},
                      {"step3 1 part", gemm_cp_async_pipeline<__half, P1>},
                      {"step3 1 part stag", gemm_cp_async_pipeline<__half, P1S>},
                      {"step2 staggered", gemm_mma_ldmatrix<__half, S2>},
                      {"step3 staggered", gemm_cp_async_pipeline<__half, P2S>},
#endif
                      {"step2", gemm_mma_ldmatrix<__half>},
                      {"step3", gemm_cp_async_pipeline<__half>}};
  cublasHandle_t h; cublasCreate(&h);
  for (int n : {8192, 4096, 4104, 8192}) {
    const size_t e = size_t(n) * n;
    __half *A, *B; float *C, *R;
    cudaMalloc(&A, e * 2); cudaMalloc(&B, e * 2); cudaMalloc(&C, e * 4); cudaMalloc(&R, e * 4);
    fill<<<1024, 256>>>(A, e, 1u); fill<<<1024, 256>>>(B, e, 2u);
    const float one = 1, zero = 0;
    // C = A B^T, A [n x k] and B [n x k] row-major: column-major C^T = B A^T.
    auto cub = [&] { cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, B, CUDA_R_16F, n, A, CUDA_R_16F, n, &zero, R,
                                  CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
    const double flop = 2.0 * n * double(n) * n;
    const double t0 = median_ms(cub);
    std::vector<float> ref(e), got(e);
    cudaMemcpy(ref.data(), R, e * 4, cudaMemcpyDeviceToHost);
    std::printf("%s n %d: cublas %.4f ms %.1f TFLOP/s\n", LABEL, n, t0, flop / t0 / 1e9);
    for (const Row& r : rows) {
      cudaMemset(C, 0, e * 4);
      const double t = median_ms([&] { r.launch(A, B, C, n, n, n, nullptr); });
      cudaError_t err = cudaDeviceSynchronize();
      cudaMemcpy(got.data(), C, e * 4, cudaMemcpyDeviceToHost);
      double md = 0;
      for (size_t i = 0; i < e; ++i) md = std::max(md, double(std::fabs(got[i] - ref[i])));
      std::printf("%s n %d: %-18s %.4f ms %6.1f TFLOP/s %.3fx cublas  maxdiff %.2e %s\n", LABEL, n, r.name, t,
                  flop / t / 1e9, t0 / t, md, err ? cudaGetErrorString(err) : "");
    }
    const double t1 = median_ms(cub);
    std::printf("%s n %d: cublas again %.4f ms %.1f TFLOP/s\n", LABEL, n, t1, flop / t1 / 1e9);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
  }
  return 0;
}
