// Lab 24's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <block_privatized.cuh>
#include <global_atomics.cuh>
#include <warp_aggregated.cuh>
#include <warp_privatized.cuh>

namespace lab24 {

namespace {
template <typename BytesKernel, typename FloatsKernel>
cudalabs::KernelResources resources(Problem problem, BytesKernel* bytes, FloatsKernel* floats, int block) {
  return problem == Problem::bytes ? cudalabs::resources_of(bytes, block) : cudalabs::resources_of(floats, block);
}
}  // namespace

void global_atomics(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_global_atomics<ByteSamples>(in, n, hist, stream);
}
void global_atomics(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_global_atomics<FloatSamples>(in, n, hist, stream);
}
void block_privatized(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_block_privatized<ByteSamples>(in, n, hist, stream);
}
void block_privatized(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_block_privatized<FloatSamples>(in, n, hist, stream);
}
void warp_privatized(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_warp_privatized<ByteSamples>(in, n, hist, stream);
}
void warp_privatized(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_warp_privatized<FloatSamples>(in, n, hist, stream);
}
void warp_aggregated(const std::uint8_t* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_warp_aggregated<ByteSamples>(in, n, hist, stream);
}
void warp_aggregated(const float* in, std::int64_t n, unsigned* hist, cudaStream_t stream) {
  histogram_warp_aggregated<FloatSamples>(in, n, hist, stream);
}

cudalabs::KernelResources global_atomics_resources(Problem problem) {
  return resources(problem, global_atomics_kernel<ByteSamples>, global_atomics_kernel<FloatSamples>,
                   global_atomics_block);
}
cudalabs::KernelResources block_privatized_resources(Problem problem) {
  return resources(problem, block_privatized_kernel<ByteSamples>, block_privatized_kernel<FloatSamples>,
                   block_privatized_block);
}
cudalabs::KernelResources warp_privatized_resources(Problem problem) {
  return resources(problem, warp_histograms_kernel<ByteSamples, CountEachSample>,
                   warp_histograms_kernel<FloatSamples, CountEachSample>, warp_privatized_block);
}
cudalabs::KernelResources warp_aggregated_resources(Problem problem) {
  return resources(problem, warp_histograms_kernel<ByteSamples, CountAggregated>,
                   warp_histograms_kernel<FloatSamples, CountAggregated>, warp_privatized_block);
}

}  // namespace lab24
