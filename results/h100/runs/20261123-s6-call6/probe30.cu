// Session 6 tuning probe for lab 30 steps 2 and 3: block shapes, warps per SM,
// stages, fragment double buffering, each beside cublasGemmEx (FP16 in, FP32
// out) in the same run at 8192^3 and 4096^3. C checked against cuBLAS's C.
#include <cublas_v2.h>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "labs/30_tensor_core_gemm/cp_async_pipeline.cuh"
#include "labs/30_tensor_core_gemm/mma_ldmatrix.cuh"

__global__ void fill(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = __float2half(float(x % 2001) / 1000.f - 1.f);
  }
}

using Launch = void (*)(const __half*, const __half*, float*, int, int, int, cudaStream_t);
struct Row { std::string name; Launch launch; };

template <typename F>
double median_ms(F f, int reps = 15) {
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

using namespace cp_async_step;
namespace ml = mma_ldmatrix_step;

// Step 3's inner loop alone: fragments from one fixed swizzled stage in shared
// memory (ldmatrix) and the mma, no global memory, no barrier in the loop.
template <typename Grid, bool Double, bool Barrier = false>
__global__ void __launch_bounds__(Grid::threads, 1) fragment_loop(float* out, int iters) {
  extern __shared__ uint4 sm4[];
  unsigned char* sm = reinterpret_cast<unsigned char*>(sm4);
  constexpr int rows = Grid::tile_m + Grid::tile_n;
  for (int i = threadIdx.x; i < rows * 8; i += Grid::threads) {
    unsigned x = i * 2654435761u; x ^= x >> 13;
    // halves in [-1, 1): exponent bits kept small
    sm4[i] = make_uint4(x & 0x3bff3bffu, (x * 3) & 0x3bff3bffu, (x * 5) & 0xbbffbbffu, (x * 7) & 0x3bffbbffu);
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  const LaneOffsets<4> at(Grid::row_of(warp), Grid::col_of(warp), SwizzledRows{});
  typename Grid::Accumulators acc = {};
  typename Grid::Fragments f[Double ? 2 : 1];
  const unsigned char* bt = sm + Grid::tile_m * 128;
  if (Double) load_fragments<__half>(f[0], sm, bt, at, 0, 128);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int step = 0; step < 4; ++step) {
      if constexpr (Double) {
        load_fragments<__half>(f[(step + 1) % 2], sm, bt, at, (step + 1) % 4, 128);
        mma_fragments<__half>(acc, f[step % 2]);
        if (Barrier && step == 2) __syncthreads();  // where step 3 waits: before the last k-step's mma
      } else {
        load_fragments<__half>(f[0], sm, bt, at, step, 128);
        mma_fragments<__half>(acc, f[0]);
      }
    }
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < int(sizeof(acc) / sizeof(float)); ++i) s += (&acc[0][0][0])[i];
  if (s == 1234.5f) out[0] = s;
}

template <typename Grid, bool Double, bool Barrier = false>
void run_fragment_loop(const char* name) {
  constexpr int smem = (Grid::tile_m + Grid::tile_n) * 128;
  cudaFuncSetAttribute(fragment_loop<Grid, Double, Barrier>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out; cudaMalloc(&out, 4);
  const int iters = 2048;
  const double t = median_ms([&] { fragment_loop<Grid, Double, Barrier><<<sms, Grid::threads, smem>>>(out, iters); }, 9);
  const double flop = 2.0 * Grid::tile_m * Grid::tile_n * 64.0 * iters * sms;
  std::printf("fragment loop %-34s %.4f ms %6.1f TFLOP/s %s\n", name, t, flop / t / 1e9, cudaGetErrorString(cudaGetLastError()));
  cudaFree(out);
}
int main() {
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  std::printf("device %s, %d SMs\n", p.name, p.multiProcessorCount);
  run_fragment_loop<WarpGrid<2, 4, 4, 4>, true>("8 warps 64x64 double");
  run_fragment_loop<WarpGrid<2, 4, 4, 4>, false>("8 warps 64x64 single");
  run_fragment_loop<WarpGrid<2, 4, 4, 4>, true, true>("8 warps 64x64 double + barrier/slice");
  std::vector<Row> rows = {
    {"cp D 2x4 64x64 st3 (default)", gemm_cp_async_pipeline<__half, Default>},
    {"cp 2x4 64x64 st4", gemm_cp_async_pipeline<__half, Config<WarpGrid<2, 4, 4, 4>, 4>>},
    {"cp 4x4 32x64 st3 single", gemm_cp_async_pipeline<__half, Config<WarpGrid<4, 4, 2, 4>, 3, false>>},
    {"cp 2x8 64x32 st4 single", gemm_cp_async_pipeline<__half, Config<WarpGrid<2, 8, 4, 2>, 4, false>>},
    {"cp 2x4 64x32 (128x128) st3 single 2blk", gemm_cp_async_pipeline<__half, Config<WarpGrid<2, 4, 4, 2>, 3, false, 2>>},
    {"ml D 2x4 64x64 (default)", gemm_mma_ldmatrix<__half, ml::Default>},
    {"ml 2x8 64x32 single", gemm_mma_ldmatrix<__half, ml::Config<WarpGrid<2, 8, 4, 2>, false>>},
    {"ml 4x4 64x32 (256x128) single", gemm_mma_ldmatrix<__half, ml::Config<WarpGrid<4, 4, 4, 2>, false>>},
  };
  cublasHandle_t h; cublasCreate(&h);
  for (int n : {8192, 4096}) {
    const size_t e = size_t(n) * n;
    __half *A, *B; float *C, *R;
    cudaMalloc(&A, e * 2); cudaMalloc(&B, e * 2); cudaMalloc(&C, e * 4); cudaMalloc(&R, e * 4);
    fill<<<1024, 256>>>(A, e, 1u); fill<<<1024, 256>>>(B, e, 2u);
    const float one = 1, zero = 0;
    // C = A B^T with A [n x k], B [n x k] row-major: cuBLAS column-major C^T = B A^T: op(B)=T, op(A)=N.
    auto cub = [&] { cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, B, CUDA_R_16F, n, A, CUDA_R_16F, n, &zero, R,
                                  CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); };
    const double flop = 2.0 * n * double(n) * n;
    const double t0 = median_ms(cub);
    std::vector<float> ref(e), got(e);
    cudaMemcpy(ref.data(), R, e * 4, cudaMemcpyDeviceToHost);
    std::printf("n %d: cublas %.4f ms %.1f TFLOP/s\n", n, t0, flop / t0 / 1e9);
    for (auto& r : rows) {
      cudaMemset(C, 0, e * 4);
      const double t = median_ms([&] { r.launch(A, B, C, n, n, n, nullptr); });
      cudaError_t err = cudaDeviceSynchronize();
      cudaMemcpy(got.data(), C, e * 4, cudaMemcpyDeviceToHost);
      double md = 0;
      for (size_t i = 0; i < e; i += 7) md = std::max(md, double(std::abs(got[i] - ref[i])));
      std::printf("n %d: %-34s %.4f ms %6.1f TFLOP/s %.3fx cublas  maxdiff %.2e %s\n", n, r.name.c_str(), t,
                  flop / t / 1e9, t0 / t, md, err ? cudaGetErrorString(err) : "");
    }
    const double t1 = median_ms(cub);
    std::printf("n %d: cublas again %.4f ms %.1f TFLOP/s\n", n, t1, flop / t1 / 1e9);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
  }
  return 0;
}
