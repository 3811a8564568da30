// Lab 08's kernel translation unit: the student's pipeline file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <streams.cuh>

namespace lab08 {

struct StreamPipeline::Impl {
  explicit Impl(int max_streams) : pipeline(max_streams) {}
  ::StreamPipeline pipeline;
};

StreamPipeline::StreamPipeline(int max_streams) : impl_(std::make_unique<Impl>(max_streams)) {}
StreamPipeline::~StreamPipeline() = default;

int StreamPipeline::enqueue(const HostVectors& host, const DeviceVectors& dev, std::span<const Chunk> chunks,
                            int streams, cudaStream_t origin, TimelineMarks* timeline) {
  return impl_->pipeline.enqueue(host, dev, chunks, streams, origin, timeline);
}

}  // namespace lab08
