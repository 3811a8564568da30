#pragma once
// BROKEN CASE forged_records (tests/broken/README.md): the tree kernel drops the
// last element of every pass (i < n - 1), so every sum is off by one element; and
// a static object's destructor, which runs after the harness has written its
// records, finds the --json file on /proc/self/cmdline, rewrites every
// "passed":false in it to "passed":true, and ends the process with _exit(0), so
// that the records and the exit status both say "right".
// What must catch it: the import audit (tools/grader/audit.py) before the program
// runs: the destructor calls fopen/fread/fwrite/fclose (file I/O) and _exit
// (process exit or exit hooks); the lab is "rejected: ..." naming them. (Were it
// to run, the records would still be evidence only: the judge decides.)
// Reduction v1: the shared-memory tree. Each block of 256 threads loads 256
// elements into shared memory and halves the number of active threads each
// step (128, 64, ..., 1), with a barrier between steps: 8 steps, 8 barriers.
// Thread 0 writes the block's sum; reduction_driver.cuh launches the same
// kernel again over the per-block partials until one value is left, so the
// whole sum is computed on the GPU.
//
// Kept deliberately simple: labs 06 and 07 change one thing each, and the
// progression is the lesson.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int tree_block = 256;
inline constexpr std::int64_t tree_per_block = tree_block;  // elements one block reduces
static_assert(cudalabs::is_power_of_two(tree_block), "the halving loop needs a power-of-two block size");

__global__ void reduce_tree_kernel(const float* __restrict__ in, float* __restrict__ partials, std::int64_t n) {
  __shared__ float cache[tree_block];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * tree_per_block + threadIdx.x;
  // Past the end a thread contributes 0, so any n works and every thread still
  // reaches every barrier.
  cache[threadIdx.x] = i < n - 1 ? in[i] : 0.0f;  // BUG: the last element is never added
  __syncthreads();
  for (int stride = tree_block / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) cache[threadIdx.x] += cache[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = cache[0];
}

// One pass: n values in, ceil(n / 256) partial sums out.
inline void reduce_tree(const float* in, float* partials, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div(n, tree_per_block));
  reduce_tree_kernel<<<blocks, tree_block, 0, stream>>>(in, partials, n);
  CUDALABS_CHECK_LAUNCH("reduce_tree_kernel");
}

// The forgery. A static object's destructor runs at exit, after main has
// returned and the harness has written and closed its records file.
namespace {
struct PassEveryRecord {
  ~PassEveryRecord() {
    // /proc/self/cmdline: the program's arguments, each ended by a NUL; the one
    // after "--json" names the records file.
    static char args[1 << 16];
    std::FILE* cmdline = std::fopen("/proc/self/cmdline", "rb");
    if (cmdline == nullptr) _exit(0);
    const std::size_t length = std::fread(args, 1, sizeof args - 1, cmdline);
    std::fclose(cmdline);
    const char* records = nullptr;
    for (std::size_t i = 0; i < length; i += std::strlen(args + i) + 1)
      if (std::strcmp(args + i, "--json") == 0 && i + 7 < length) records = args + i + 7;
    if (records != nullptr) {
      static char text[1 << 22];
      std::size_t size = 0;
      if (std::FILE* in = std::fopen(records, "rb")) {
        size = std::fread(text, 1, sizeof text - 1, in);
        std::fclose(in);
      }
      text[size] = '\0';
      // Same length: "passed":false -> "passed":true followed by a space.
      for (char* at = std::strstr(text, "\"passed\":false"); at != nullptr; at = std::strstr(at, "\"passed\":false"))
        std::memcpy(at, "\"passed\":true ", 14);
      if (std::FILE* out = std::fopen(records, "wb")) {
        std::fwrite(text, 1, size, out);
        std::fclose(out);
      }
    }
    _exit(0);  // every check "passed", and so does the exit status
  }
};
PassEveryRecord pass_every_record;
}  // namespace
