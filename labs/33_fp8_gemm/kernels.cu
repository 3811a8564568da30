// Lab 33's kernel translation unit for step 1 (quantisation), built for every
// configured architecture: the student's file behind the fixed interface of
// kernels.hpp. Steps 2-4 live in kernels_hopper.cu.
#include "kernels.hpp"

#include <fp8_quantise.cuh>

namespace lab33 {

void quantise_per_tensor(const float* x, std::int64_t count, __nv_fp8_e4m3* q, float* scale, cudaStream_t s) { ::quantise_per_tensor(x, count, q, scale, s); }
void quantise_1x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t s) { ::quantise_1x128(x, rows, k, q, scales, s); }
void quantise_128x128(const float* x, int rows, int k, __nv_fp8_e4m3* q, float* scales, cudaStream_t s) { ::quantise_128x128(x, rows, k, q, scales, s); }

}  // namespace lab33
