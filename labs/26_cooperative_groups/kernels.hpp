#pragma once
// Lab 26's fixed interface: what main.cu (the course's host program) may call of
// the kernel files cg_reduction.cuh and cg_select.cuh. kernels.cu defines it in a
// translation unit of its own. Every function enqueues on `stream` and never
// synchronises. Input pointers come from cudaMalloc (16-byte aligned).
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab26 {

// *out = in[0] + ... + in[n-1], in two launches: `blocks` blocks write
// partials[0, blocks), then one block sums them (one launch when blocks == 1).
void tile_reduce_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                     cudaStream_t stream);
// The same sum in one cooperative launch of `blocks` blocks, all co-resident:
// partials[0, blocks), grid.sync(), block 0 writes *out.
void grid_sync_sum(const float* in, float* partials, float* out, std::int64_t n, unsigned blocks,
                   cudaStream_t stream);
// The same sum by a fixed cooperative grid claiming work items from
// *next_item, which must be 0 at launch and is left 0.
void persistent_sum(const float* in, float* partials, float* out, unsigned long long* next_item, std::int64_t n,
                    unsigned blocks, cudaStream_t stream);
// The number of work items persistent_sum splits n floats into: more blocks
// than this would find nothing to claim.
std::int64_t persistent_items(std::int64_t n);
// out[0, *count) = the positive elements of in[0, n), in any order; *count must
// be 0 at launch.
void select_positive(const float* in, float* out, unsigned long long* count, std::int64_t n, unsigned blocks,
                     cudaStream_t stream);

cudalabs::KernelResources tile_reduce_resources();
cudalabs::KernelResources grid_sync_resources();
cudalabs::KernelResources persistent_resources();
cudalabs::KernelResources select_positive_resources();

}  // namespace lab26
