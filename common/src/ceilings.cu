// Measured ceilings. Each is measured once per process, on first use, with the
// same adaptive timer the labs use, so "% of ceiling" compares like with like.
#include <algorithm>

#include "cudalabs/device.hpp"
#include "cudalabs/math.hpp"
#include "cudalabs/memory.hpp"
#include "cudalabs/timer.hpp"

namespace cudalabs {

namespace {

// 16 bytes per thread per iteration: the widest load a thread can issue, so
// the fewest instructions per byte. Grid-stride so any grid covers any n.
__global__ void copy_float4_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// Reads n4 float4 and writes one value only if their sum hits an impossible
// value: the loads cannot be optimised away, and L2 is left with clean lines.
__global__ void read_only_kernel(const float4* __restrict__ in, std::size_t n4, float* __restrict__ sink) {
  float sum = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = in[i];
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == -1.2345e30f) *sink = sum;
}

TimerConfig ceiling_timer() {
  TimerConfig cfg;
  cfg.rel_precision = 0.01;
  cfg.max_seconds = 1.0;
  return cfg;
}

double measure_copy_gbps() {
  const DeviceInfo& d = current_device();
  // 512 MiB each way: ~20× the 50 MB L2 of an H100, so DRAM does the work.
  std::size_t bytes = std::size_t{512} << 20;
  bytes = std::min(bytes, std::max<std::size_t>(device_free_bytes() / 4, std::size_t{16} << 20));
  bytes &= ~std::size_t{15};
  DeviceBuffer<float> src(bytes / sizeof(float), "copy-ceiling source");
  DeviceBuffer<float> dst(bytes / sizeof(float), "copy-ceiling destination");
  CUDALABS_CHECK(cudaMemset(src.data(), 0x3C, bytes));
  Stream stream;
  TimingStats memcpy_t = time_on_stream(
      stream, [&](cudaStream_t s) { CUDALABS_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s)); },
      ceiling_timer());
  const int threads = 256;
  const int blocks = d.sm_count * (d.max_threads_per_sm / threads);
  const std::size_t n4 = bytes / sizeof(float4);
  TimingStats kernel_t = time_on_stream(
      stream,
      [&](cudaStream_t s) {
        copy_float4_kernel<<<blocks, threads, 0, s>>>(reinterpret_cast<const float4*>(src.data()),
                                                      reinterpret_cast<float4*>(dst.data()), n4);
        CUDALABS_CHECK_LAUNCH("copy_float4_kernel");
      },
      ceiling_timer());
  double best_ms = std::min(memcpy_t.median_ms, kernel_t.median_ms);
  return 2.0 * static_cast<double>(bytes) / (best_ms * 1e6);
}

double measure_pinned_gbps(cudaMemcpyKind kind) {
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> dev(bytes, "PCIe ceiling device buffer");
  PinnedBuffer<char> host(bytes, "PCIe ceiling pinned buffer");
  std::fill(host.data(), host.data() + bytes, 1);
  Stream stream;
  TimingStats t = time_on_stream(
      stream,
      [&](cudaStream_t s) {
        if (kind == cudaMemcpyHostToDevice)
          CUDALABS_CHECK(cudaMemcpyAsync(dev.data(), host.data(), bytes, kind, s));
        else
          CUDALABS_CHECK(cudaMemcpyAsync(host.data(), dev.data(), bytes, kind, s));
      },
      ceiling_timer());
  return static_cast<double>(bytes) / (t.median_ms * 1e6);
}

}  // namespace

void flush_l2(cudaStream_t stream) {
  struct Scratch {
    DeviceBuffer<float4> lines;
    DeviceBuffer<float> sink;
    Scratch()
        : lines(2 * std::max<std::size_t>(current_device().l2_bytes, 1 << 20) / sizeof(float4), "L2 flush buffer"),
          sink(1, "L2 flush sink") {
      CUDALABS_CHECK(cudaMemset(lines.data(), 0, lines.bytes()));  // once: the flushes only read it
      CUDALABS_CHECK(cudaDeviceSynchronize());
    }
  };
  static Scratch scratch;
  const DeviceInfo& d = current_device();
  read_only_kernel<<<d.sm_count * 4, 256, 0, stream>>>(scratch.lines.data(), scratch.lines.size(), scratch.sink.data());
  CUDALABS_CHECK_LAUNCH("read_only_kernel (L2 flush)");
}

double Ceilings::copy_gbps() {
  static const double v = measure_copy_gbps();
  return v;
}
double Ceilings::h2d_pinned_gbps() {
  static const double v = measure_pinned_gbps(cudaMemcpyHostToDevice);
  return v;
}
double Ceilings::d2h_pinned_gbps() {
  static const double v = measure_pinned_gbps(cudaMemcpyDeviceToHost);
  return v;
}

}  // namespace cudalabs
