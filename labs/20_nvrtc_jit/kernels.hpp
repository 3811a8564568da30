#pragma once
// Lab 20's fixed interface to the kernels compiled ahead of time by nvcc (the
// comparison rows). The JIT rows compile softmax_jit.cuh at run time instead
// (main.cu embeds its text); these are the same file and lab 12's kernel,
// built with the program.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab20 {

// The generic instantiation's block, the same for nvcc and NVRTC: 8 warps, as
// lab 12's block_per_row.
inline constexpr int generic_threads = 256;

// softmax_kernel<0, generic_threads> of softmax_jit.cuh, compiled by nvcc:
// y = softmax of each row of x[rows × cols], the row length at run time.
void softmax_aot_generic(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream);
cudalabs::KernelResources softmax_aot_generic_resources();

// Lab 12's row_in_registers (labs/12_softmax/softmax.cuh, the course's copy):
// the row in registers too, from a ladder of 6 shapes compiled ahead of time.
void softmax_lab12_registers(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream);
int lab12_registers_max_cols();
cudalabs::KernelResources softmax_lab12_registers_resources(int cols);

}  // namespace lab20
