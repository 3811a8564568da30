// Lab 32's kernel translation unit: the student's files behind the fixed
// interface of kernels.hpp. Angle brackets: the files are found through the
// include path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <allreduce.cuh>
#include <peer_kernels.cuh>
#include <ring_flags.cuh>
#include <split_sgemm.cuh>
#include <two_shot.cuh>

namespace lab32 {

void peer_copy_kernel(float* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  const float* sources[] = {src};
  ::reduce_copy(dst, sources, n, stream);
}
cudalabs::KernelResources reduce_copy_resources() {
  return cudalabs::resources_of(reduce_copy_kernel, reduce_copy_block);
}

void allreduce_ring(std::span<const AllReduceRank> ranks, std::int64_t n) { ::all_reduce_ring(ranks, n); }
void allreduce_oneshot(std::span<const AllReduceRank> ranks, std::int64_t n) { ::all_reduce_oneshot(ranks, n); }

void reduce_scatter_ring(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch) {
  ::ring_collective(ranks, n, epoch, RingPhases::reduce_scatter);
}
void all_gather_ring(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch) {
  ::ring_collective(ranks, n, epoch, RingPhases::all_gather);
}
void allreduce_ring_flags(std::span<const AllReduceRank> ranks, std::int64_t n, std::uint32_t epoch) {
  ::ring_collective(ranks, n, epoch, RingPhases::all_reduce);
}
void reduce_scatter_direct(std::span<const AllReduceRank> ranks, std::int64_t n) { ::direct_reduce_scatter(ranks, n); }
void all_gather_direct(std::span<const AllReduceRank> ranks, std::int64_t n) { ::direct_gather(ranks, n, false); }
void allreduce_twoshot(std::span<const AllReduceRank> ranks, std::int64_t n) { ::two_shot_all_reduce(ranks, n); }

void split_sgemm_one_thread(std::span<const GemmShard> shards, int n, int k) { ::split_sgemm_switching(shards, n, k); }

struct SplitSgemmThreads::Impl {
  explicit Impl(std::span<const int> devices) : split(devices) {}
  ::SplitSgemmOnThreads split;
};

SplitSgemmThreads::SplitSgemmThreads(std::span<const int> devices) : impl_(std::make_unique<Impl>(devices)) {}
SplitSgemmThreads::~SplitSgemmThreads() = default;
void SplitSgemmThreads::enqueue(std::span<const GemmShard> shards, int n, int k) { impl_->split.enqueue(shards, n, k); }

}  // namespace lab32
