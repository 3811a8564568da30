#pragma once
// Lab 12's fixed interface: what main.cu (the course's host program) may call of
// the kernel file softmax.cuh. kernels.cu defines it in a translation unit of
// its own, so nothing in the kernel file reaches main.cu.
//
// Every launcher computes y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r)
// for rows × cols row-major floats, enqueued on `stream`; none synchronises.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab12 {

void softmax_block_per_row(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream);
void softmax_online(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream);
// Rows of at most softmax_registers_max_cols() floats.
void softmax_registers(const float* x, float* y, std::int64_t rows, int cols, cudaStream_t stream);
int softmax_registers_max_cols();
// `workspace` holds softmax_split_workspace_bytes(rows, cols) bytes (any content).
void softmax_split_rows(const float* x, float* y, void* workspace, std::int64_t rows, int cols, cudaStream_t stream);
std::int64_t softmax_split_workspace_bytes(std::int64_t rows, int cols);
int softmax_split_chunks(int cols);  // blocks per row, for the record

cudalabs::KernelResources softmax_block_per_row_resources();
cudalabs::KernelResources softmax_online_resources();
cudalabs::KernelResources softmax_registers_resources(int cols);  // the kernel and block this row length gets
cudalabs::KernelResources softmax_split_rows_resources();         // its first kernel

}  // namespace lab12
