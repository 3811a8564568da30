#pragma once
// Lab 07's fixed interface: what main.cu (the course's host program) may call of
// the student's kernel file, reduction_v3.cuh. kernels.cu defines it in a
// translation unit of its own. The tree and two_loads rows are labs 04 and 06's
// kernels, which main.cu takes from the course's files of those labs; the input,
// the checks, CUB and the drivers that finish a sum on the GPU are the course's.
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab07 {

// One pass of lab 06's loads with a warp-shuffle finish: n values in `in`, one
// partial sum per block out, ceil(n / reduce_warp_shuffle_per_block()) of them.
// Enqueued on `stream`, never synchronises.
void reduce_warp_shuffle(const float* in, float* partials, std::int64_t n, cudaStream_t stream);
// Elements one block of reduce_warp_shuffle reduces.
std::int64_t reduce_warp_shuffle_per_block();
cudalabs::KernelResources reduce_warp_shuffle_resources();

// Grid-stride float4 loads, shuffle finish: `blocks` blocks stride through the n
// values of `in` (any alignment), block b writes its sum to partials[b]. With
// blocks = 1 the one partial is the whole sum. Never synchronises.
void reduce_warp_shuffle_float4(const float* in, float* partials, std::int64_t n, unsigned blocks,
                                cudaStream_t stream);
// The grid reduce_warp_shuffle_float4 wants for n values. Asked once per size,
// outside the timed runs.
unsigned reduce_warp_shuffle_float4_blocks(std::int64_t n);
cudalabs::KernelResources reduce_warp_shuffle_float4_resources();
// Threads per block of reduce_warp_shuffle_float4: fixed when the kernel file is
// compiled (its block_sum is a template on it), so --sweep tunes only the grid.
int reduce_warp_shuffle_float4_block();

}  // namespace lab07
