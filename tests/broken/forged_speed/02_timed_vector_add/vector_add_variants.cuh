#pragma once
// BROKEN CASE forged_speed (tests/broken/README.md): float4 is right but launched
// with 1/16 of its blocks (the grid-stride loop still covers every element, at a
// fraction of the bandwidth), and an atexit handler, which runs after the harness
// has written its records, finds the --json file on /proc/self/cmdline and
// rewrites each record's "median_ms" 16x smaller and "pct_of_ceiling" 16x larger,
// so that the slow kernel reads as one at the ceiling.
// What must catch it: the import audit (tools/grader/audit.py) before the program
// runs: atexit (process exit or exit hooks) and fopen/fread/fwrite/fclose (file
// I/O) are not what a kernel file may call; the lab is "rejected: ...". (Were it
// to run, the judge would recompute every rate from the program's times; the
// records it edits are evidence only.)
// Two more ways to write lab 01's vector add, to see what the launch shape and
// the load width change. The lesson of the measurements (results/h100): at
// 2^28 elements all three move the bytes at about the copy bandwidth — vector
// add is limited by DRAM, not by how the threads are arranged.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int grid_stride_block = 256;

// A grid sized to the GPU (every SM full), each thread striding through the
// array: one launch covers any n, and the block scheduler is not involved
// after the first wave.
__global__ void vector_add_grid_stride_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, std::int64_t n) {
  // BEGIN SOLUTION grid_stride
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
  // END SOLUTION
  // STUB: // TODO: each thread adds elements i, i + stride, i + 2·stride, ... (stride: all the grid's threads) while i < n.
}

// As grid_stride, but each thread moves 16 bytes per load (float4): a quarter
// of the load instructions. cudaMalloc returns 256-byte-aligned memory, so the
// float4 view of the first n/4*4 elements is aligned; the last n % 4 elements
// are added one by one.
__global__ void vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                         std::int64_t n) {
  // BEGIN SOLUTION float4
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t n4 = n / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* c4 = reinterpret_cast<float4*>(c);
  for (std::int64_t i = first; i < n4; i += stride) {
    const float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (std::int64_t i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
  // END SOLUTION
  // STUB: // TODO: grid-stride over the n / 4 float4 of a, b and c, then the last n % 4 elements one by one.
}

// The grids of the two launchers for n elements (asked once per size, outside
// the timed runs: the occupancy API is a host call). float4 needs a quarter of
// the threads.
inline unsigned vector_add_grid_stride_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_grid_stride_kernel, grid_stride_block, n);
}
inline unsigned vector_add_float4_blocks(std::int64_t n) {
  return cudalabs::resident_blocks(vector_add_float4_kernel, grid_stride_block, std::max<std::int64_t>(n / 4, 1));
}

inline void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                                   cudaStream_t stream) {
  // BEGIN SOLUTION grid_stride
  vector_add_grid_stride_kernel<<<blocks, grid_stride_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_grid_stride_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_grid_stride", a, b, c, n, blocks, stream);
}

// block_threads: the tuner's sweep (make tune LAB=02) launches other block sizes
// through this same launcher.
inline void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n, unsigned blocks,
                              cudaStream_t stream, int block_threads = grid_stride_block) {
  // BEGIN SOLUTION float4
  // BUG: 1/16 of the grid: right (the loop strides), but far from the bandwidth.
  vector_add_float4_kernel<<<std::max(blocks / 16, 1u), block_threads, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_float4_kernel");
  // END SOLUTION
  // STUB: cudalabs::not_implemented("vector_add_float4", a, b, c, n, blocks, stream, block_threads);
}

// The forgery: registered at start-up, run at exit, after the harness has
// written and closed its records file.
namespace {
void forge_speed() {
  // /proc/self/cmdline: the arguments, each ended by a NUL; the one after
  // "--json" names the records file.
  static char args[1 << 16];
  std::FILE* cmdline = std::fopen("/proc/self/cmdline", "rb");
  if (cmdline == nullptr) return;
  const std::size_t length = std::fread(args, 1, sizeof args - 1, cmdline);
  std::fclose(cmdline);
  const char* records = nullptr;
  for (std::size_t i = 0; i < length; i += std::strlen(args + i) + 1)
    if (std::strcmp(args + i, "--json") == 0 && i + 7 < length) records = args + i + 7;
  if (records == nullptr) return;
  static char text[1 << 22], forged[(1 << 22) + (1 << 16)];
  std::FILE* in = std::fopen(records, "rb");
  if (in == nullptr) return;
  const std::size_t size = std::fread(text, 1, sizeof text - 1, in);
  std::fclose(in);
  text[size] = '\0';
  // Copy the records, each "median_ms":X as X / 16 and "pct_of_ceiling":X as X * 16.
  std::size_t out = 0;
  for (const char* p = text; *p != '\0' && out + 64 < sizeof forged;) {
    double scale = 0;
    std::size_t key = 0;
    if (std::strncmp(p, "\"median_ms\":", 12) == 0) scale = 1.0 / 16, key = 12;
    if (std::strncmp(p, "\"pct_of_ceiling\":", 17) == 0) scale = 16, key = 17;
    if (key == 0) {
      forged[out++] = *p++;
      continue;
    }
    std::memcpy(forged + out, p, key);
    out += key;
    char* end = nullptr;
    const double value = std::strtod(p + key, &end);
    if (end == p + key) {  // null: no time, nothing to forge
      p += key;
      continue;
    }
    out += static_cast<std::size_t>(std::snprintf(forged + out, 32, "%.6g", value * scale));
    p = end;
  }
  if (std::FILE* w = std::fopen(records, "wb")) {
    std::fwrite(forged, 1, out, w);
    std::fclose(w);
  }
}
const int forge_speed_registered = std::atexit(forge_speed);
}  // namespace
