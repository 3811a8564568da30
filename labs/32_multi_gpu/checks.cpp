// Lab 32's inputs and checks: every answer exact, every output compared whole.
//
// Teaches: inputs of small integers stored as floats make a sum exact in any
// order, so a copy, an all-reduce (however it adds) and a split SGEMM can be
// compared bit for bit; outputs come back through pinned host memory (a
// pageable download of 1 GiB costs several times more), on the stream of the
// GPU that holds them.
// Measures: nothing; what the checks download is outside every timed run.
#include <string>
#include <vector>

#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "host_common.hpp"

namespace lab32host {
namespace {

// Transfer inputs: integers in [-2^20, 2^20], so a sum over up to 8 GPUs is
// exact in float (every partial sum |s| <= 8 · 2^20 = 2^23 < 2^24) and every
// all-reduce must give the exact answer, whatever order it adds in. The range
// is wide for a reason: FP16 holds integers exactly only up to 2048 (11
// significant bits) and none past 65504, BF16 up to 256, so a copy or a
// collective that moves FP16 or BF16 on the wire changes nearly every value
// (fewer than 1 in 128 of the integers in [-2^20, 2^20] is an FP16 value; in
// [-1024, 1024] every value and every sum of two was).
constexpr int transfer_value_range = 1 << 20;

// Small integers stored as floats: every sum is exact, so every element must
// match exactly (check_close compares large outputs on every core).
cudalabs::CheckResult check_exact(std::span<const float> got, std::span<const float> expected) {
  return cudalabs::check_close(got, expected, {.abs = 0, .rel = 0});
}

}  // namespace

// `count` floats of a GPU buffer, downloaded on that GPU's stream.
std::span<const float> download(Gpu& gpu, const float* data, std::size_t count, HostScratch& scratch) {
  float* host = scratch.get(count);
  DeviceGuard on(gpu.id);
  CUDALABS_CHECK(cudaMemcpyAsync(host, data, count * sizeof(float), cudaMemcpyDeviceToHost, gpu.stream));
  gpu.stream.synchronize();
  return {host, count};
}

cudalabs::CheckResult check_on(Gpu& gpu, const float* data, std::span<const float> expected, HostScratch& scratch,
                               const std::string& what) {
  auto result = check_exact(download(gpu, data, expected.size(), scratch), expected);
  if (!result.passed) result.note = what + " on GPU " + std::to_string(gpu.id);
  return result;
}

void TransferInputs::draw(int g, std::uint64_t seed) {
  auto& values = host_[static_cast<std::size_t>(g)];
  values = cudalabs::random_small_ints(static_cast<std::size_t>(n_), cudalabs::mix_seed(seed, static_cast<std::uint64_t>(g) + 1),
                                       -transfer_value_range, transfer_value_range);
  DeviceGuard on(team_[g].id);
  team_[g].in.upload(values);
  sum_current_ = false;
}

std::span<const float> TransferInputs::sum() {
  if (!sum_current_) {
    sum_.assign(static_cast<std::size_t>(n_), 0.0f);
    cudalabs::ref::parallel_for(sum_.size(), [&](std::size_t begin, std::size_t end) {
      for (const auto& values : host_)
        for (std::size_t i = begin; i < end; ++i) sum_[i] += values[i];
    });
    sum_current_ = true;
  }
  return sum_;
}

}  // namespace lab32host
