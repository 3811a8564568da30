// Lab 25's kernel translation unit: the student's kernel files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <blelloch.cuh>
#include <compact.cuh>
#include <decoupled_lookback.cuh>
#include <hillis_steele.cuh>
#include <scan_then_propagate.cuh>
#include <tile_scan.cuh>

namespace lab25 {

// One scratch size serves both element types.
static_assert(sizeof(int) == sizeof(float));

namespace {
template <typename IntKernel, typename FloatKernel>
cudalabs::KernelResources resources(Element element, IntKernel* ints, FloatKernel* floats, int block) {
  return element == Element::int32 ? cudalabs::resources_of(ints, block) : cudalabs::resources_of(floats, block);
}
}  // namespace

std::size_t hillis_steele_scratch_bytes(std::int64_t n) {
  return scan_then_propagate_scratch<HillisSteeleTile, float>(n);
}
void hillis_steele(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  scan_then_propagate_scan<HillisSteeleTile>(in, out, n, exclusive, scratch, stream);
}
void hillis_steele(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  scan_then_propagate_scan<HillisSteeleTile>(in, out, n, exclusive, scratch, stream);
}

std::size_t blelloch_scratch_bytes(std::int64_t n) { return scan_then_propagate_scratch<BlellochTile, float>(n); }
void blelloch(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  scan_then_propagate_scan<BlellochTile>(in, out, n, exclusive, scratch, stream);
}
void blelloch(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  scan_then_propagate_scan<BlellochTile>(in, out, n, exclusive, scratch, stream);
}

std::size_t scan_then_propagate_scratch_bytes(std::int64_t n) {
  return scan_then_propagate_scratch<RegisterTile, float>(n);
}
void scan_then_propagate(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  scan_then_propagate_scan<RegisterTile>(in, out, n, exclusive, scratch, stream);
}
void scan_then_propagate(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch,
                         cudaStream_t stream) {
  scan_then_propagate_scan<RegisterTile>(in, out, n, exclusive, scratch, stream);
}

std::size_t decoupled_lookback_scratch_bytes(std::int64_t n) { return lookback_scratch_bytes(n); }
void decoupled_lookback(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  decoupled_lookback_scan(in, out, n, exclusive, scratch, stream);
}
void decoupled_lookback(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch,
                        cudaStream_t stream) {
  decoupled_lookback_scan(in, out, n, exclusive, scratch, stream);
}

std::size_t wide_lookback_scratch_bytes(std::int64_t n) { return lookback_scratch_bytes(n); }
void wide_lookback(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  wide_lookback_scan(in, out, n, exclusive, scratch, stream);
}
void wide_lookback(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream) {
  wide_lookback_scan(in, out, n, exclusive, scratch, stream);
}

std::size_t compact_scratch_bytes(std::int64_t n) { return lookback_scratch_bytes(n); }
void compact_positive(const int* in, int* out, std::int64_t* kept, std::int64_t n, void* scratch,
                      cudaStream_t stream) {
  compact_positive_items(in, out, kept, n, scratch, stream);
}
void compact_positive(const float* in, float* out, std::int64_t* kept, std::int64_t n, void* scratch,
                      cudaStream_t stream) {
  compact_positive_items(in, out, kept, n, scratch, stream);
}

cudalabs::KernelResources hillis_steele_resources(Element element) {
  return resources(element, scan_tiles_kernel<HillisSteeleTile, false, int>,
                   scan_tiles_kernel<HillisSteeleTile, false, float>, HillisSteeleTile::threads);
}
cudalabs::KernelResources blelloch_resources(Element element) {
  return resources(element, scan_tiles_kernel<BlellochTile, false, int>, scan_tiles_kernel<BlellochTile, false, float>,
                   BlellochTile::threads);
}
cudalabs::KernelResources scan_then_propagate_resources(Element element) {
  return resources(element, scan_tiles_kernel<RegisterTile, false, int>, scan_tiles_kernel<RegisterTile, false, float>,
                   RegisterTile::threads);
}
cudalabs::KernelResources decoupled_lookback_resources(Element element) {
  return resources(element, decoupled_lookback_kernel<false, int>, decoupled_lookback_kernel<false, float>,
                   tile_threads);
}
cudalabs::KernelResources wide_lookback_resources(Element element) {
  return resources(element, decoupled_lookback_kernel<false, int, wide_lookback_depth, wide_lookback_sleep_ns>,
                   decoupled_lookback_kernel<false, float, wide_lookback_depth, wide_lookback_sleep_ns>, tile_threads);
}
cudalabs::KernelResources compact_resources(Element element) {
  return resources(element, compact_positive_kernel<int>, compact_positive_kernel<float>, tile_threads);
}

}  // namespace lab25
