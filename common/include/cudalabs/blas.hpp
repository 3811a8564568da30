#pragma once
// cuBLAS, the library baseline of the matrix and attention labs, with the
// course's conventions: row-major matrices, FP32 arithmetic (no TF32), errors
// thrown as CudaError, work enqueued on the caller's stream.
#include <cublas_v2.h>

#include <utility>

namespace cudalabs {

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line);
#define CUDALABS_CHECK_CUBLAS(call) ::cudalabs::check_cublas((call), #call, __FILE__, __LINE__)

class Cublas {
 public:
  Cublas();  // FP32 math: CUBLAS_PEDANTIC_MATH keeps TF32 tensor cores out even under NVIDIA_TF32_OVERRIDE
  Cublas(Cublas&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Cublas& operator=(Cublas&&) = delete;
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas();
  cublasHandle_t get() const { return h_; }

  // C[m×n] = alpha · A[m×k] · op(B) + beta · C, row-major, leading dimensions
  // equal to the row lengths. op(B) = B[k×n], or with b_transposed B is stored
  // [n×k] and Bᵀ is used (attention's Q·Kᵀ).
  void sgemm(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream, float alpha = 1.0f,
             float beta = 0.0f, bool b_transposed = false) const;

  // `batch` independent products, matrices `stride_*` elements apart
  // (multi-head attention: one product per head).
  void sgemm_batched(const float* a, const float* b, float* c, int m, int n, int k, int batch, long long stride_a,
                     long long stride_b, long long stride_c, cudaStream_t stream, float alpha = 1.0f, float beta = 0.0f,
                     bool b_transposed = false) const;

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace cudalabs
