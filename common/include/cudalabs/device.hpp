#pragma once
// What the GPU is, what it can do (measured, in this process), and what each
// kernel costs it in registers, shared memory and occupancy.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cudalabs {

// The arithmetic a variant's FLOP/s are bounded by (plausibility gate).
enum class Peak { fp32, fp64, fp16_tensor, bf16_tensor, tf32_tensor, int8_tensor, fp8_tensor };
const char* to_string(Peak p);

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int regs_per_sm = 0;
  std::size_t smem_per_sm = 0;
  std::size_t smem_per_block_optin = 0;  // needs cudaFuncSetAttribute above 48 KB
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  int mem_bus_bits = 0;
  int mem_clock_khz = 0;
  int sm_clock_khz = 0;  // the maximum (boost) SM clock
  double dram_peak_gbps = 0;  // datasheet-style: 2 * clock * bus width (0 if the driver does not say)
  int pcie_gen = 0, pcie_width = 0;  // the link's maximum, from NVML; 0 when unknown
  int runtime_version = 0, driver_version = 0;

  std::string cc() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
  std::string toolkit() const;  // "13.0"
  std::string driver() const;   // "13.0" (the CUDA version the driver supports)
  // Per-direction PCIe payload rate of the link after line encoding, GB/s
  // (Gen3 x16 15.8, Gen4 x16 31.5, Gen5 x16 63.0); 0 when unknown.
  double pcie_gbps() const;
  // Dense peak GFLOP/s of this device for `p` (an FMA counts 2): SMs x maximum
  // SM clock x the per-SM rate of its architecture, from NVIDIA's architecture
  // whitepapers (e.g. sm_90: 256 FP32 and 4096 FP16-tensor FLOP per clock per
  // SM: 132 SMs x 1.98 GHz -> 66.9 and 1070 TFLOP/s on an H100 SXM). Generous
  // where a family varies: it is a ceiling nothing may exceed, not a target.
  double peak_gflops(Peak p) const;
};

// Throws NoDeviceError when there is no usable device, UsageError when `id` is
// out of range. Selects the device (cudaSetDevice).
DeviceInfo select_device(int id);
const DeviceInfo& current_device();

// Measured ceilings, each measured once per process on first use.
struct Ceilings {
  // Device-to-device copy, bytes read + bytes written per second: the best of
  // cudaMemcpyAsync and a 16-byte-per-thread copy kernel over 2 × 512 MiB.
  static double copy_gbps();
  // Pinned host <-> device cudaMemcpyAsync of 256 MiB.
  static double h2d_pinned_gbps();
  static double d2h_pinned_gbps();
};

struct KernelResources {
  int registers = 0;            // per thread
  std::size_t static_smem = 0;  // bytes per block, declared __shared__
  std::size_t dynamic_smem = 0; // bytes per block, at launch
  std::size_t local_bytes = 0;  // per thread: register spills and local arrays
  int block_threads = 0;
  int blocks_per_sm = 0;
  double occupancy = 0;         // resident warps / max warps per SM, 0..1
};

KernelResources kernel_resources(const void* kernel, int block_threads, std::size_t dynamic_smem = 0);

template <typename Kernel>
KernelResources resources_of(Kernel* kernel, int block_threads, std::size_t dynamic_smem = 0) {
  return kernel_resources(reinterpret_cast<const void*>(kernel), block_threads, dynamic_smem);
}

// Above 48 KB of dynamic shared memory per block a kernel must opt in
// (cudaFuncSetAttribute) before it is launched with that much, or before the
// occupancy API is asked about it; the device allows up to
// smem_per_block_optin (227 KB on an H100, 99 KB on an RTX 4090). At or below
// 48 KB this does nothing. Asked for more than the device allows, it throws
// CudaError naming `what`, the bytes asked and the limit, where the launch
// would fail with a bare "invalid argument".
void allow_dynamic_smem(const void* kernel, std::size_t bytes, const char* what);

template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, std::size_t bytes, const char* what) {
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), bytes, what);
}

// Blocks for a grid-stride kernel over `items` items per thread pass: as many
// as can be resident on the device at once (occupancy API), never more than the
// work needs, at least 1. Ask once per size, outside timed runs: it is a host call.
template <typename Kernel>
unsigned resident_blocks(Kernel* kernel, int block_threads, std::int64_t items) {
  const std::int64_t per_sm = resources_of(kernel, block_threads).blocks_per_sm;
  const std::int64_t full = per_sm * current_device().sm_count;
  const std::int64_t needed = (items + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(full, needed)));
}

// Free and total device memory, bytes.
std::size_t device_free_bytes();

}  // namespace cudalabs
