// Session 19: lab 30's split-K tickets when a stream's first split call is
// captured into a CUDA graph (the tickets are then allocated and zeroed in the
// graph, split_tickets' `temporary`). For three split shapes: C from a graph
// captured on a fresh stream, replayed three times (C poisoned with NaN before
// each), against C from ordinary calls on another stream (the path the lab's
// checks cover), and the ordinary stream again after the graph.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels.hpp"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 2; } } while (0)

int main() {
  const int shapes[][3] = {{128, 4096, 4096}, {16, 8192, 8192}, {256, 1024, 8192}, {100, 777, 3001}};
  int failures = 0;
  for (auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    std::mt19937 rng(m * 7 + n);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<__half> a(size_t(m) * k), b(size_t(n) * k);
    for (auto& x : a) x = __float2half(u(rng));
    for (auto& x : b) x = __float2half(u(rng));
    __half *da, *db; float *c_ref, *c_graph;
    CK(cudaMalloc(&da, a.size() * 2)); CK(cudaMalloc(&db, b.size() * 2));
    CK(cudaMalloc(&c_ref, size_t(m) * n * 4)); CK(cudaMalloc(&c_graph, size_t(m) * n * 4));
    CK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    cudaStream_t ordinary, fresh;
    CK(cudaStreamCreateWithFlags(&ordinary, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking));
    lab30::wgmma_tma(da, db, c_ref, m, n, k, ordinary);
    CK(cudaStreamSynchronize(ordinary));
    std::vector<float> ref(size_t(m) * n), got(ref.size());
    CK(cudaMemcpy(ref.data(), c_ref, ref.size() * 4, cudaMemcpyDeviceToHost));
    double scale = 0;
    for (float x : ref) scale = std::fmax(scale, std::fabs(x));
    auto compare = [&](const char* what) {
      double worst = 0;
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double d = std::fabs(double(got[i]) - ref[i]);
        if (!(d <= 1e-5 * scale)) ++bad;
        if (!(d <= worst)) worst = d;
      }
      printf("%4d x %5d x %5d %-32s max |diff| %.3g (scale %.3g), %zu elements off: %s\n", m, n, k, what, worst, scale,
             bad, bad ? "FAIL" : "ok");
      failures += bad != 0;
    };
    cudaGraph_t graph; cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(fresh, cudaStreamCaptureModeThreadLocal));
    lab30::wgmma_tma(da, db, c_graph, m, n, k, fresh);
    CK(cudaStreamEndCapture(fresh, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      CK(cudaMemsetAsync(c_graph, 0xFF, got.size() * 4, fresh));  // NaN
      CK(cudaGraphLaunch(exec, fresh));
      CK(cudaStreamSynchronize(fresh));
      CK(cudaMemcpy(got.data(), c_graph, got.size() * 4, cudaMemcpyDeviceToHost));
      char what[64]; snprintf(what, sizeof what, "graph, first use, replay %d", replay + 1);
      compare(what);
    }
    for (int call = 0; call < 2; ++call) {
      CK(cudaMemsetAsync(c_graph, 0xFF, got.size() * 4, ordinary));
      lab30::wgmma_tma(da, db, c_graph, m, n, k, ordinary);
      CK(cudaStreamSynchronize(ordinary));
      CK(cudaMemcpy(got.data(), c_graph, got.size() * 4, cudaMemcpyDeviceToHost));
      compare(call ? "ordinary stream, again" : "ordinary stream after the graph");
    }
    cudaGraphExecDestroy(exec); cudaGraphDestroy(graph);
    cudaFree(da); cudaFree(db); cudaFree(c_ref); cudaFree(c_graph);
  }
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
