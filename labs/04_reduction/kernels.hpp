#pragma once
// Lab 04's fixed interface: what main.cu (the course's host program) may call of
// the student's kernel file, reduction.cuh. kernels.cu defines it in a
// translation unit of its own. The host driver that repeats a pass until one
// value is left, the input, the checks and CUB are the course's
// (labs/shared/reduction_driver.cuh), never the student's.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab04 {

// One pass of the shared-memory tree: n values in `in`, one partial sum per block
// out, ceil(n / reduce_tree_per_block()) of them, in `partials`. Enqueued on
// `stream`, never synchronises.
void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream);
// Elements one block of reduce_tree reduces.
std::int64_t reduce_tree_per_block();
cudalabs::KernelResources reduce_tree_resources();

}  // namespace lab04
