#pragma once
// The kernels lab 19 launches, as the host sees them: name, parameter list and
// launch shape. The kernels themselves are the course's (device_code.cu
// includes them); host code cannot include their .cuh files (g++ does not
// read __global__), so the parameter lists are written here, and a wrong one
// is caught twice: Kernel<> looks the kernel up by the mangled name of this
// list (a mismatch is "not found" at load time), and the CPU test
// names_test.cpp finds every name below in the embedded PTX.
#include <cstdint>

namespace lab19 {

// labs/01_vector_add/vector_add.cuh: c[i] = a[i] + b[i], i < n
using VectorAddSignature = void(const float* a, const float* b, float* c, std::int64_t n);
inline constexpr const char* vector_add_name = "vector_add_kernel";
inline constexpr unsigned vector_add_block = 256;  // vector_add.cuh's vector_add_block

// labs/05_matmul/tiled_matmul.cuh: C[m×n] = A[m×k]·B[k×n], 16×16 tiles
using TiledMatmulSignature = void(const float* a, const float* b, float* c, int m, int n, int k);
inline constexpr const char* tiled_matmul_name = "tiled_matmul_kernel";
// tiled_matmul.cuh's tiled_matmul_tile; its __launch_bounds__(16·16) is in the
// PTX as ".maxntid 256", which names_test.cpp checks against this.
inline constexpr unsigned tiled_matmul_tile = 16;

}  // namespace lab19
