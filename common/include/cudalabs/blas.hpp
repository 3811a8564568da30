#pragma once
// cuBLAS, the library baseline of the matrix and attention labs, with the
// course's conventions: row-major matrices, FP32 arithmetic (no TF32), errors
// thrown as CudaError, work enqueued on the caller's stream.
//
// The library at its best: for each shape it is given, sgemm() times every
// algorithm the cuBLASLt heuristic offers for it (up to 8, FP32 compute) and
// the classic cublasSgemm, once, and uses the fastest from then on. A lab's
// "x cuBLAS" is therefore against the fastest FP32 GEMM cuBLAS has for that
// shape on this GPU, not against whatever its default picks
// (docs/methodology.md, "The library").
#include <cublas_v2.h>

#include <memory>
#include <string>
#include <utility>

namespace cudalabs {

// The element type of A and B in Cublas::gemm(); C is FP32 and the sums are
// FP32 in every case. fp16/bf16: A and B hold __half / __nv_bfloat16, on the
// tensor cores. tf32: A and B hold floats that the tensor cores read as TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32: 10 of the 23 mantissa bits). fp32: as sgemm().
// fp8_e4m3: A and B hold __nv_fp8_e4m3, with per-tensor scales (gemm_fp8_e4m3).
// fp8_e4m3_blocks: the same, with 1x128 / 128x128 block scales (gemm_fp8_e4m3_blocks).
enum class GemmInputs { fp32, fp16, bf16, tf32, fp8_e4m3, fp8_e4m3_blocks };
const char* to_string(GemmInputs t);

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line);
#define CUDALABS_CHECK_CUBLAS(call) ::cudalabs::check_cublas((call), #call, __FILE__, __LINE__)

class Cublas {
 public:
  // FP32 math: CUBLAS_PEDANTIC_MATH keeps TF32 tensor cores out of the classic
  // path even under NVIDIA_TF32_OVERRIDE; the cuBLASLt path asks for
  // CUBLAS_COMPUTE_32F. Allocates a 32 MiB workspace for cuBLASLt.
  Cublas();
  Cublas(Cublas&& o) noexcept;
  Cublas& operator=(Cublas&&) = delete;
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas();
  cublasHandle_t get() const { return h_; }

  // C[m×n] = alpha · A[m×k] · op(B) + beta · C, row-major, leading dimensions
  // equal to the row lengths. op(B) = B[k×n], or with b_transposed B is stored
  // [n×k] and Bᵀ is used (attention's Q·Kᵀ).
  //
  // The first call with a new shape (m, n, k, transposition, alpha, beta, batch,
  // strides, and the alignment of the three pointers) chooses the algorithm, as
  // prepare_sgemm() does: it synchronises `stream` and runs the candidates many
  // times. Every later call with that shape only enqueues. Inside a CUDA graph
  // capture a new shape gets the classic cublasSgemm, unsearched.
  void sgemm(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream, float alpha = 1.0f,
             float beta = 0.0f, bool b_transposed = false) const;

  // `batch` independent products, matrices `stride_*` elements apart
  // (multi-head attention: one product per head).
  void sgemm_batched(const float* a, const float* b, float* c, int m, int n, int k, int batch, long long stride_a,
                     long long stride_b, long long stride_c, cudaStream_t stream, float alpha = 1.0f, float beta = 0.0f,
                     bool b_transposed = false) const;

  // C[m×n] (FP32) = A[m×k] · op(B), A and B of `inputs` (see GemmInputs),
  // FP32 accumulation, row-major as sgemm(). The same search per shape as
  // sgemm(): the classic cublasGemmEx against the cuBLASLt heuristic's offers,
  // the fastest kept (lab 30's baseline). alpha = 1, beta = 0.
  void gemm(GemmInputs inputs, const void* a, const void* b, float* c, int m, int n, int k, cudaStream_t stream,
            bool b_transposed = false) const;
  // C[m×n] (FP32) = (*scale_a)·(*scale_b) · A[m×k] · Bᵀ, A and B FP8 e4m3
  // stored [m×k] and [n×k] row-major (the one layout cuBLASLt's FP8 GEMM
  // takes), the scales device floats (CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER),
  // FP32 accumulation as cuBLASLt does it. cuBLASLt only (cublasGemmEx has no
  // FP8): the same search per shape among the heuristic's offers; with
  // CUDALABS_CHECK_ONLY=1 its first offer that runs. Compute capability 8.9
  // or 9.0, k a multiple of 16; otherwise a CudaError that says so.
  void gemm_fp8_e4m3(const void* a, const void* b, const float* scale_a, const float* scale_b, float* c, int m, int n,
                     int k, cudaStream_t stream) const;
  // The same product with DeepSeek-V3's block scales, applied by cuBLASLt
  // itself: C = Σ_kb (a_scale[row][kb] · b_scale[col/128][kb]) · (A·Bᵀ over the
  // kb-th 128 of k). The scales are device floats already in cuBLASLt's
  // layout (its A is our B, its B our A: see blas.cpp):
  //   a_scales (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F): one per row of A per
  //     128 of k, rows innermost: a_scales[kb·m + row], ceil(k/128)·m floats;
  //   b_scales (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F): one per 128×128
  //     block of B, k-blocks innermost, each column of blocks padded to a
  //     multiple of 4: b_scales[(col/128)·round_up(ceil(k/128), 4) + kb].
  // cuBLAS 12.9 or later on compute capability 9.0 only; elsewhere, or for a
  // shape no algorithm takes, a CudaError that says so. The same search as
  // gemm_fp8_e4m3 (its own choice per shape).
  void gemm_fp8_e4m3_blocks(const void* a, const void* b, const float* a_scales, const float* b_scales, float* c,
                            int m, int n, int k, cudaStream_t stream) const;
  // As prepare_sgemm(), for gemm().
  void prepare_gemm(GemmInputs inputs, const void* a, const void* b, const float* c, int m, int n, int k,
                    cudaStream_t stream, bool b_transposed = false) const;

  // Chooses the algorithm for this call's shape now, if it is new, without
  // computing the product: C is not written (the candidates run into a scratch
  // buffer). Synchronises `stream`. Call it before any region where the first
  // sgemm() of a shape must not search: the harness's traced first run (which
  // refuses host synchronisation), a timed loop, a graph capture.
  void prepare_sgemm(const float* a, const float* b, const float* c, int m, int n, int k, cudaStream_t stream,
                     float alpha = 1.0f, float beta = 0.0f, bool b_transposed = false) const;
  void prepare_sgemm_batched(const float* a, const float* b, const float* c, int m, int n, int k, int batch,
                             long long stride_a, long long stride_b, long long stride_c, cudaStream_t stream,
                             float alpha = 1.0f, float beta = 0.0f, bool b_transposed = false) const;

  // One line on the algorithm chosen for an m×n×k product (the first shape
  // searched with these sizes), e.g. "cuBLASLt algorithm #2 of the 8 the
  // heuristic offered (algo id 21, tile id 24, stages id 13, split-K 1):
  // 1.04x the classic cublasSgemm". Empty when no such shape was searched.
  std::string algorithm_of(int m, int n, int k, bool b_transposed = false, int batch = 1) const;
  // The same for a gemm() of `inputs`.
  std::string algorithm_of(GemmInputs inputs, int m, int n, int k, bool b_transposed = false) const;

 private:
  struct Tuner;  // cuBLASLt handle, workspace and the choice per shape (blas.cpp)
  cublasHandle_t h_ = nullptr;
  std::unique_ptr<Tuner> tuner_;
};

}  // namespace cudalabs
