#include "cudalabs/blas.hpp"

#include <string>

#include "cudalabs/error.hpp"

namespace cudalabs {

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string("cuBLAS error: ") + expr + "\n  at " + file + ":" + std::to_string(line) + "\n  " +
                  cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

Cublas::Cublas() {
  CUDALABS_CHECK_CUBLAS(cublasCreate(&h_));
  CUDALABS_CHECK_CUBLAS(cublasSetMathMode(h_, CUBLAS_PEDANTIC_MATH));
}

Cublas::~Cublas() {
  if (h_) cublasDestroy(h_);
}

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: the same memory, so we ask
// cuBLAS for Bᵀ·Aᵀ with the operands swapped and nothing is copied.
void Cublas::sgemm(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream, float alpha,
                   float beta, bool b_transposed) const {
  CUDALABS_CHECK_CUBLAS(cublasSetStream(h_, stream));
  CUDALABS_CHECK_CUBLAS(cublasSgemm(h_, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b,
                                    b_transposed ? k : n, a, k, &beta, c, n));
}

void Cublas::sgemm_batched(const float* a, const float* b, float* c, int m, int n, int k, int batch, long long stride_a,
                           long long stride_b, long long stride_c, cudaStream_t stream, float alpha, float beta,
                           bool b_transposed) const {
  CUDALABS_CHECK_CUBLAS(cublasSetStream(h_, stream));
  CUDALABS_CHECK_CUBLAS(cublasSgemmStridedBatched(h_, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
                                                  &alpha, b, b_transposed ? k : n, stride_b, a, k, stride_a, &beta, c,
                                                  n, stride_c, batch));
}

}  // namespace cudalabs
