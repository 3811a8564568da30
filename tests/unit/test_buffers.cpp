// The fresh-allocation check's moves (memory.hpp, cudalabs::buffers): every
// DeviceBuffer to a new place with its contents, the old place poisoned, and
// back. Needs a GPU: skipped without one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <cudalabs/memory.hpp>

using namespace cudalabs;

namespace {

bool have_gpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

std::vector<float> read(const float* p, std::size_t n) {
  std::vector<float> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

}  // namespace

TEST(Buffers, MoveKeepsContentsAndPoisonsTheOldPlace) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  DeviceBuffer<float> a(values, "a");
  const float* kept = a.data();  // what a launcher that keeps pointers would hold
  ASSERT_EQ(buffers::move_all(), "");
  EXPECT_NE(a.data(), kept);
  EXPECT_EQ(a.download(), values);
  for (const float x : read(kept, values.size())) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    EXPECT_EQ(bits, 0xFFFFFFFFu);  // NaN: a kernel reading the old place fails its check
  }
  // What the check wrote in the new place comes back with the buffer.
  const std::vector<float> written = {9.0f, 8.0f, 7.0f, 6.0f, 5.0f};
  a.upload(written);
  buffers::restore_all();
  EXPECT_EQ(a.data(), kept);
  EXPECT_EQ(a.download(), written);
}

TEST(Buffers, ABufferMovedOrDestroyedWhileAwayIsSafe) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  DeviceBuffer<float> a(std::vector<float>{1.0f, 2.0f}, "a");
  auto b = std::make_unique<DeviceBuffer<float>>(std::vector<float>{3.0f}, "b");
  ASSERT_EQ(buffers::move_all(), "");
  DeviceBuffer<float> c(std::move(a));  // a's contents now belong to c
  b.reset();                            // b gone: its old place is freed with it
  buffers::restore_all();
  EXPECT_EQ(c.download(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Buffers, TooLargeToCopyIsSaidNotDone) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  std::size_t free_b = 0, total_b = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  DeviceBuffer<char> big(free_b * 6 / 10, "most of the device");
  const char* kept = big.data();
  const std::string why = buffers::move_all();
  EXPECT_NE(why.find("would not fit twice"), std::string::npos) << why;
  EXPECT_EQ(big.data(), kept);
}
