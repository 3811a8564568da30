// The fresh-allocation check's moves (memory.hpp, cudalabs::buffers): every
// DeviceBuffer to a new place with its contents, the old place poisoned, and
// back; the GPU ones are skipped without one. The decision between moving,
// skipping a move that does not fit, and failing a launcher that kept the
// room (buffers::room_to_move) needs none.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include <cudalabs/memory.hpp>
#include <cudalabs/stream_contract.hpp>

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
  ASSERT_EQ(buffers::move_all().why, "");
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
  ASSERT_EQ(buffers::move_all().why, "");
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
  const buffers::NotMoved no = buffers::move_all(buffers::room());
  EXPECT_NE(no.why.find("would not fit twice"), std::string::npos) << no.why;
  EXPECT_FALSE(no.launcher_held);
  EXPECT_EQ(big.data(), kept);
}

// A launcher that allocates most of the device after the room was noted and
// never frees it: the move is refused as its doing, not skipped.
TEST(Buffers, MemoryKeptSinceTheStartFailsTheMove) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  std::size_t free_b = 0, total_b = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  DeviceBuffer<char> buffer(free_b / 10, "a tenth of the device");
  const char* kept = buffer.data();
  const std::map<int, std::size_t> room = buffers::room();
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  // All but the buffer's size and 64 MiB (what cudaMalloc may not hand out
  // of the last free memory): too little for the copy.
  void* hoard = nullptr;
  ASSERT_EQ(cudaMalloc(&hoard, free_b - buffer.size() - (std::size_t{64} << 20)), cudaSuccess);
  const buffers::NotMoved no = buffers::move_all(room);
  cudaFree(hoard);
  EXPECT_TRUE(no.launcher_held) << no.why;
  EXPECT_NE(no.why.find("across its calls"), std::string::npos) << no.why;
  EXPECT_EQ(buffer.data(), kept);
}

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20, GiB = std::size_t{1} << 30;
}  // namespace

TEST(RoomToMove, BuffersThatFitTwiceMove) {
  const buffers::NotMoved no = buffers::room_to_move({{0, 3 * GiB, 137 * GiB, 100 * GiB, 7 * GiB}});
  EXPECT_EQ(no.why, "");
  EXPECT_FALSE(no.launcher_held);
  // Exactly half of the free memory still fits.
  EXPECT_EQ(buffers::room_to_move({{0, 3 * GiB, 0, 6 * GiB, 64 * MiB}}).why, "");
}

TEST(RoomToMove, RoomKeptByTheLauncherIsAFailureNamingTheNumbers) {
  // 137 GiB free at the start, 1 GiB now: 136 GiB kept, 3 GiB of buffers.
  const buffers::NotMoved no = buffers::room_to_move({{0, 3 * GiB, 137 * GiB, 1 * GiB, 7 * GiB}});
  EXPECT_TRUE(no.launcher_held);
  EXPECT_NE(no.why.find("its launcher kept 139264.0 MiB of device memory across its calls, so the buffers "
                        "(3072.0 MiB on device 0) could not be moved for the fresh-allocation check"),
            std::string::npos)
      << no.why;
}

TEST(RoomToMove, TooLargeEvenAtTheStartIsASkip) {
  // 2^29 floats x 3 on a device with 5 GiB free: the course's large sizes.
  const buffers::NotMoved no = buffers::room_to_move({{0, 6 * GiB, 9 * GiB, 8 * GiB, 64 * MiB}});
  EXPECT_FALSE(no.launcher_held);
  EXPECT_NE(no.why.find("would not fit twice in its 8192.0 MiB free (9216.0 MiB before the launchers ran)"),
            std::string::npos)
      << no.why;
  // Not known at the start: a skip, as before the room was noted.
  const buffers::NotMoved unknown = buffers::room_to_move({{0, 3 * GiB, 0, 1 * GiB, 64 * MiB}});
  EXPECT_FALSE(unknown.launcher_held);
  EXPECT_EQ(unknown.why.find("before the launchers ran"), std::string::npos) << unknown.why;
}

TEST(RoomToMove, GrowthWithinTheSlackIsNotBlamed) {
  // Fitting twice at the start with 32 MiB to spare; the driver grew by 96 MiB
  // (a spilling kernel's local memory, a cuBLAS workspace) since.
  const std::size_t wanted = 3 * GiB, start = 2 * wanted + 32 * MiB;
  const buffers::NotMoved within = buffers::room_to_move({{0, wanted, start, start - 96 * MiB, 64 * MiB}});
  EXPECT_FALSE(within.launcher_held) << within.why;
  EXPECT_NE(within.why.find("would not fit twice"), std::string::npos) << within.why;
  // The same growth with 128 MiB to spare at the start, beyond the 64 MiB slack: the launcher's.
  const std::size_t roomy = 2 * wanted + 128 * MiB;
  EXPECT_TRUE(buffers::room_to_move({{0, wanted, roomy, 2 * wanted - 96 * MiB, 64 * MiB}}).launcher_held);
}

TEST(RoomToMove, ADeviceTooLargeAnywayDecidesForAll) {
  // Device 1 could never have held the copies: nothing would have moved,
  // whatever device 0's launcher kept.
  const buffers::NotMoved no = buffers::room_to_move(
      {{0, 3 * GiB, 137 * GiB, 1 * GiB, 7 * GiB}, {1, 6 * GiB, 9 * GiB, 8 * GiB, 64 * MiB}});
  EXPECT_FALSE(no.launcher_held);
  EXPECT_NE(no.why.find("on device 1) would not fit twice"), std::string::npos) << no.why;
  // Device 0 fits, device 1's launcher kept the room: the failure names device 1.
  const buffers::NotMoved held = buffers::room_to_move(
      {{0, 3 * GiB, 137 * GiB, 100 * GiB, 7 * GiB}, {1, 3 * GiB, 137 * GiB, 2 * GiB, 7 * GiB}});
  EXPECT_TRUE(held.launcher_held);
  EXPECT_NE(held.why.find("on device 1) could not be moved"), std::string::npos) << held.why;
}

TEST(RoomToMove, SlackIsAFractionOfTheDeviceWithAFloor) {
  EXPECT_EQ(buffers::move_slack(std::size_t{141} * GiB), std::size_t{141} * GiB / 20);  // H200: ~7 GiB
  EXPECT_EQ(buffers::move_slack(GiB), 64 * MiB);
}

// stream_alloc's pool: whether a block freed on another stream comes back must
// not depend on whether that stream has run the free yet, or the address
// answers "is the stream busy" (a held, traced run) without asking.
TEST(StreamAlloc, AFreeOnABusyStreamAndADoneOneLookAlike) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  cudaStream_t held = nullptr, side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  constexpr std::size_t bytes = 1 << 20;
  bool reused_while_busy = false, reused_when_done = false;
  {
    StreamContract contract;
    contract.hold(held);  // held spins until release(): its free cannot have run
    void* freed = stream_alloc(bytes, "a block freed on a busy stream", held);
    stream_free(freed, held);
    void* got = stream_alloc(bytes, "a block on another stream", side);
    reused_while_busy = got == freed;
    contract.release();
    ASSERT_EQ(cudaStreamSynchronize(held), cudaSuccess);
    stream_free(got, side);
    ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  }
  void* freed = stream_alloc(bytes, "a block freed on an idle stream", held);
  stream_free(freed, held);
  ASSERT_EQ(cudaStreamSynchronize(held), cudaSuccess);  // the free has run
  void* got = stream_alloc(bytes, "a block on another stream", side);
  reused_when_done = got == freed;
  stream_free(got, side);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  EXPECT_EQ(reused_while_busy, reused_when_done)
      << "the block came back on another stream " << (reused_when_done ? "only once" : "before")
      << " the free had run: its address tells a busy stream from an idle one";
  EXPECT_EQ(cudaStreamDestroy(held), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(side), cudaSuccess);
}

// The same, for a block freed on another stream than the one that allocated it:
// whether it comes back to its own stream must not depend on whether the
// freeing stream has run the free yet.
TEST(StreamAlloc, AFreeFromAnotherStreamLooksTheSameBusyOrDone) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  cudaStream_t own = nullptr, freeing = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&freeing, cudaStreamNonBlocking), cudaSuccess);
  constexpr std::size_t bytes = 1 << 20;
  bool back_while_busy = false, back_when_done = false;
  {
    StreamContract contract;
    contract.hold(freeing);  // the free queued on `freeing` cannot have run
    void* freed = stream_alloc(bytes, "a block freed on a busy stream", own);
    stream_free(freed, freeing);
    void* got = stream_alloc(bytes, "a block on its own stream", own);
    back_while_busy = got == freed;
    contract.release();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    stream_free(got, own);
    ASSERT_EQ(cudaStreamSynchronize(own), cudaSuccess);
  }
  void* freed = stream_alloc(bytes, "a block freed on an idle stream", own);
  stream_free(freed, freeing);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the free has run
  void* got = stream_alloc(bytes, "a block on its own stream", own);
  back_when_done = got == freed;
  stream_free(got, own);
  ASSERT_EQ(cudaStreamSynchronize(own), cudaSuccess);
  EXPECT_EQ(back_while_busy, back_when_done)
      << "the block came back to its own stream " << (back_when_done ? "only once" : "before")
      << " the other stream's free had run: its address tells a busy stream from an idle one";
  EXPECT_EQ(cudaStreamDestroy(own), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(freeing), cudaSuccess);
}
