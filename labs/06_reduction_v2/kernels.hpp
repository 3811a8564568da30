#pragma once
// Lab 06's fixed interface: what main.cu (the course's host program) may call of
// the student's kernel file, reduction_v2.cuh. kernels.cu defines it in a
// translation unit of its own. The input, the checks, CUB and the driver that
// repeats a pass until one value is left are the course's
// (labs/shared/reduction_driver.cuh).
#include <cuda_runtime_api.h>

#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab06 {

// One pass, two elements per thread while loading: n values in `in`, one partial
// sum per block out, ceil(n / reduce_two_loads_per_block()) of them, in
// `partials`. Enqueued on `stream`, never synchronises.
void reduce_two_loads(const float* in, float* partials, std::int64_t n, cudaStream_t stream);
// Elements one block of reduce_two_loads reduces.
std::int64_t reduce_two_loads_per_block();
cudalabs::KernelResources reduce_two_loads_resources();

}  // namespace lab06
