#pragma once
// BROKEN (the trust boundary): a right kernel, and a launcher that follows it
// on the stream with a one-node CUDA graph whose node is a host function, made
// with the generic cudaGraphAddNode (a cudaGraphNodeParams of type
// cudaGraphNodeTypeHost) rather than cudaGraphAddHostNode. The driver runs
// that function on a thread of its own when the stream gets there: host code
// of the kernel file running beside the harness's checks, as a thread or
// cudaLaunchHostFunc would (here it only counts its calls). What must catch
// it: the import audit: `calls cudaGraphAddNode (threads)`, before the
// program runs.
#include <cstdint>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int vector_add_block = 256;

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

inline long host_node_calls = 0;

inline cudaGraphExec_t host_node_graph() {
  static cudaGraphExec_t exec = [] {
    cudaGraph_t graph;
    CUDALABS_CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeHost;
    params.host.fn = [](void*) { ++host_node_calls; };
    cudaGraphNode_t node;
    CUDALABS_CHECK(cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &params));
    cudaGraphExec_t e;
    CUDALABS_CHECK(cudaGraphInstantiate(&e, graph, 0));
    return e;
  }();
  return exec;
}

inline void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, vector_add_block));
  vector_add_kernel<<<blocks, vector_add_block, 0, stream>>>(a, b, c, n);
  CUDALABS_CHECK_LAUNCH("vector_add_kernel");
  CUDALABS_CHECK(cudaGraphLaunch(host_node_graph(), stream));
}

inline void vector_add_cpu(const float* a, const float* b, float* c, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
