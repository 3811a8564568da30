#pragma once
// Tensor-core and async-copy instructions of sm_80 and later behind small named
// device functions (STYLE.md, habit 15): each wraps one PTX instruction, named
// in its comment, so that a kernel reads as its algorithm. Course-owned and
// light (no host code): any lab's kernel file may include it.
//
// Fragment layouts of mma.sync (PTX ISA, "Matrix fragments for mma.m16n8k16"),
// lane = 4·g + t (g = lane / 4 the "group", t = lane % 4):
//   A 16×16 (4 regs of 2 halves): a0 (row g, cols 2t..2t+1)  a1 (g+8, 2t..)
//                                  a2 (g, 8+2t..)             a3 (g+8, 8+2t..)
//   B 16×8  (2 regs):              b0 (k 2t..2t+1, col g)     b1 (k 8+2t.., col g)
//   C 16×8  (4 floats):            c0,c1 (g, 2t..2t+1)        c2,c3 (g+8, 2t..2t+1)
// m16n8k8 with TF32 has the same geometry in bytes: one 32-bit element where
// m16n8k16 has two 16-bit ones (a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3
// (g+8, t+4); b0 (k t, col g), b1 (k t+4, col g)). So ldmatrix, which moves
// 8×8 matrices of 16-bit elements = 8 rows of 16 bytes, loads TF32 fragments
// too: one 16-byte row is four floats.
//
// Needs sm_80 (cp.async, mma.m16n8k16 for BF16, m16n8k8 for TF32) — sm_75 has
// ldmatrix and FP16 m16n8k8 only. Below sm_80 the bodies compile to nothing
// and the kernels that call them trap; the labs check the device first.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace cudalabs::ptx {

// The 32-bit shared-memory address of a generic pointer into shared memory,
// the operand form of ldmatrix, cp.async, mbarrier and TMA.
__device__ inline std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// cp.async.cg.shared.global: 16 bytes global -> shared without passing through
// registers (and bypassing L1: .cg). `src_bytes` < 16 reads only that many and
// zero-fills the rest; 0 reads nothing (an out-of-range chunk becomes zeros,
// and `src` may then be any valid address). `dst` and `src` 16-byte aligned.
__device__ inline void cp_async_16(void* dst, const void* src, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
#else
  (void)dst, (void)src, (void)src_bytes;
#endif
}
// cp.async.commit_group: closes the group of this thread's cp.async issued so far.
__device__ inline void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// cp.async.wait_group: waits until at most `Pending` of this thread's committed
// groups are still in flight (the other threads' need a __syncthreads after).
template <int Pending>
__device__ inline void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8×8 matrices of 16-bit
// elements; lanes 8i..8i+7 give the row addresses (16 bytes each) of matrix i,
// and thread 4g+t receives row g, elements 2t, 2t+1 of each matrix in r[i].
__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address)));
#else
  (void)row_address;
  r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: the same four 8×8 matrices,
// each transposed on the way: thread 4g+t receives column g, elements (rows)
// 2t, 2t+1. A B operand stored [k][n] (n contiguous, as V in attention, or B
// of a row-major GEMM) thus arrives k-major, as mma's "col" B wants it.
__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row_address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address)));
#else
  (void)row_address;
  r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: c[16×8] += a[16×16] · b[16×8],
// FP32 accumulate. "row.col": A's fragments are rows (k contiguous), B's columns
// (k contiguous) — both K-major.
template <typename T>
__device__ inline void mma_16x8x16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "FP16 or BF16 inputs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)c, (void)a, (void)b0, (void)b1;
#endif
}

// Two FP32 values rounded to nearest into one operand register of two 16-bit
// elements (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32), `lo` in the low half: the
// lower column of an A fragment's pair (a0 = row g, cols 2t, 2t+1), as when an
// accumulator fragment becomes the A operand of the next product.
template <typename T>
__device__ inline std::uint32_t pack_pair(float lo, float hi) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "FP16 or BF16 elements");
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
}

// cvt.rna.tf32.f32: an FP32 value rounded to TF32 (10 explicit mantissa bits,
// to nearest, ties away from zero), as the 32-bit pattern the TF32 mma reads.
// Without it the tensor core would use the top 19 bits as they are: truncation.
__device__ inline std::uint32_t to_tf32(std::uint32_t fp32_bits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t out;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(__uint_as_float(fp32_bits)));
  return out;
#else
  return fp32_bits;
#endif
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: c[16×8] += a[16×8] · b[8×8]
// on TF32 operands (registers from to_tf32), FP32 accumulate.
__device__ inline void mma_16x8x8_tf32(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                       std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)c, (void)a, (void)b0, (void)b1;
#endif
}

}  // namespace cudalabs::ptx
