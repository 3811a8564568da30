#pragma once
// Lab 25's fixed interface: what main.cu (the course's host program) may call of
// the kernel files. kernels.cu defines it by including them, in a translation
// unit of its own, so nothing in a kernel file reaches main.cu.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <cudalabs/device.hpp>

namespace lab25 {

enum class Element { int32, float32 };

// Every scan launcher: prefix sums of in[0, n) into out[0, n):
//   inclusive: out[i] = in[0] + ... + in[i]
//   exclusive: out[i] = in[0] + ... + in[i-1], out[0] = 0
// in and out are distinct, 16-byte aligned arrays (cudaMalloc gives 256).
// `scratch` is device memory of at least <variant>_scratch_bytes(n) bytes (the
// same for int and float), allocated once by the caller; the launcher may
// overwrite all of it and resets what it needs itself. Enqueued on `stream`;
// never synchronises.

// Scan-then-propagate (scan each tile, scan the tile sums, add them back) with a
// Hillis-Steele tile scan.
std::size_t hillis_steele_scratch_bytes(std::int64_t n);
void hillis_steele(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);
void hillis_steele(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);
// The same with a Blelloch (up-sweep, down-sweep) tile scan.
std::size_t blelloch_scratch_bytes(std::int64_t n);
void blelloch(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);
void blelloch(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);
// The same with a register tile scan (16 items per thread, warp shuffles).
std::size_t scan_then_propagate_scratch_bytes(std::int64_t n);
void scan_then_propagate(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch,
                         cudaStream_t stream);
void scan_then_propagate(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch,
                         cudaStream_t stream);
// One pass: each tile takes its prefix from its predecessors' published sums.
std::size_t decoupled_lookback_scratch_bytes(std::int64_t n);
void decoupled_lookback(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch,
                        cudaStream_t stream);
void decoupled_lookback(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch,
                        cudaStream_t stream);
// The same pass, looking back over 128 predecessors per round trip (and
// pausing before it polls a tile that has published nothing yet).
std::size_t wide_lookback_scratch_bytes(std::int64_t n);
void wide_lookback(const int* in, int* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);
void wide_lookback(const float* in, float* out, std::int64_t n, bool exclusive, void* scratch, cudaStream_t stream);

// Stream compaction: the elements of in[0, n) that are > 0, in order, to
// out[0, *kept); *kept (device memory) is how many. n < 2^31.
std::size_t compact_scratch_bytes(std::int64_t n);
void compact_positive(const int* in, int* out, std::int64_t* kept, std::int64_t n, void* scratch,
                      cudaStream_t stream);
void compact_positive(const float* in, float* out, std::int64_t* kept, std::int64_t n, void* scratch,
                      cudaStream_t stream);

// The main kernel of each variant (for the three-kernel variants, the tile scan).
cudalabs::KernelResources hillis_steele_resources(Element element);
cudalabs::KernelResources blelloch_resources(Element element);
cudalabs::KernelResources scan_then_propagate_resources(Element element);
cudalabs::KernelResources decoupled_lookback_resources(Element element);
cudalabs::KernelResources wide_lookback_resources(Element element);
cudalabs::KernelResources compact_resources(Element element);

}  // namespace lab25
