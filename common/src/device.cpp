#include "cudalabs/device.hpp"

#include <dlfcn.h>

#include <string>

#include "cudalabs/error.hpp"

namespace cudalabs {

namespace {
DeviceInfo g_device;
bool g_selected = false;

// The runtime does not report the PCIe link; NVML (part of the driver) does.
// Loaded at run time so building needs no NVML and a missing one costs nothing.
void read_pcie_link(int device, int& gen, int& width) {
  gen = width = 0;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
  if (!lib) return;
  using init_t = int (*)();
  using by_bus_t = int (*)(const char*, void**);
  using get_uint_t = int (*)(void*, unsigned*);
  auto init = reinterpret_cast<init_t>(dlsym(lib, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<by_bus_t>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto max_gen = reinterpret_cast<get_uint_t>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration"));
  auto max_width = reinterpret_cast<get_uint_t>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth"));
  char bus[32] = {};
  void* handle = nullptr;
  unsigned g = 0, w = 0;
  if (init && by_bus && max_gen && max_width && init() == 0 &&
      cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess && by_bus(bus, &handle) == 0 &&
      max_gen(handle, &g) == 0 && max_width(handle, &w) == 0) {
    gen = static_cast<int>(g);
    width = static_cast<int>(w);
  }
  cudaGetLastError();
  // NVML stays loaded: nvmlShutdown is optional and the process is short-lived.
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

std::string DeviceInfo::toolkit() const { return version_string(runtime_version); }
std::string DeviceInfo::driver() const { return version_string(driver_version); }

double DeviceInfo::pcie_gbps() const {
  // GT/s per lane, and the line code: 8b/10b up to Gen2, 128b/130b from Gen3.
  static constexpr double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};
  if (pcie_gen < 1 || pcie_gen > 5 || pcie_width < 1) return 0;
  double code = pcie_gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
  return gts[pcie_gen] * code * pcie_width / 8.0;
}

const char* to_string(Peak p) {
  switch (p) {
    case Peak::fp32: return "fp32";
    case Peak::fp64: return "fp64";
    case Peak::fp16_tensor: return "fp16_tensor";
    case Peak::bf16_tensor: return "bf16_tensor";
    case Peak::tf32_tensor: return "tf32_tensor";
    case Peak::int8_tensor: return "int8_tensor";
    case Peak::fp8_tensor: return "fp8_tensor";
  }
  return "?";
}

double DeviceInfo::peak_gflops(Peak p) const {
  // FLOP per clock per SM (dense; an FMA is 2). FP32: 64 lanes on sm_70/75/80,
  // 128 from sm_86 on. FP64: 64 lanes + FP64 tensor cores on sm_80/90 (2x),
  // otherwise 1/32 of FP32 or less. FP16 tensor (FP32 accumulate): sm_70/75 1024,
  // sm_80 2048, sm_86/89/120 1024 (2048 taken: GeForce parts differ), sm_90 4096,
  // sm_100 8192. TF32 = FP16 / 2, INT8 = FP16 x 2, FP8 (sm_89 on) = FP16 x 2.
  const int cc = cc_major * 10 + cc_minor;
  double fp32 = cc >= 86 ? 256 : 128;
  double fp64 = cc == 80 ? 128 : cc == 90 ? 256 : cc == 70 ? 64 : fp32 / 16;
  double fp16 = cc >= 100 ? 8192 : cc >= 90 ? 4096 : cc == 80 ? 2048 : cc >= 86 ? 2048 : 1024;
  if (cc > 120) fp16 = 16384;  // an architecture newer than this table: stay generous
  double per_clock = fp32;
  switch (p) {
    case Peak::fp32: per_clock = fp32; break;
    case Peak::fp64: per_clock = fp64; break;
    case Peak::fp16_tensor:
    case Peak::bf16_tensor: per_clock = fp16; break;
    case Peak::tf32_tensor: per_clock = fp16 / 2; break;
    case Peak::int8_tensor: per_clock = fp16 * 2; break;
    case Peak::fp8_tensor: per_clock = cc >= 89 ? fp16 * 2 : fp16; break;  // no FP8 tensor cores before sm_89
  }
  return per_clock * sm_count * (sm_clock_khz * 1e3) / 1e9;
}

DeviceInfo select_device(int id) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw NoDeviceError(std::string("no usable CUDA device (cudaGetDeviceCount: ") +
                        (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) +
                        "). This lab needs an NVIDIA GPU; --help and --list work without one.");
  }
  if (id < 0 || id >= count)
    throw UsageError("--device " + std::to_string(id) + ": this machine has " + std::to_string(count) +
                     " CUDA device(s), numbered 0.." + std::to_string(count - 1) + ".");
  CUDALABS_CHECK(cudaSetDevice(id));
  cudaDeviceProp p{};
  CUDALABS_CHECK(cudaGetDeviceProperties(&p, id));
  DeviceInfo d;
  d.id = id;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.smem_per_sm = p.sharedMemPerMultiprocessor;
  d.smem_per_block_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.global_mem_bytes = p.totalGlobalMem;
  d.mem_bus_bits = p.memoryBusWidth;
  // The clock is an attribute since CUDA 13 removed it from cudaDeviceProp.
  if (cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, id) != cudaSuccess) {
    cudaGetLastError();
    d.mem_clock_khz = 0;
  }
  if (cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, id) != cudaSuccess) {
    cudaGetLastError();
    d.sm_clock_khz = 0;
  }
  // Double data rate: two transfers per clock on each bus line.
  d.dram_peak_gbps = 2.0 * d.mem_clock_khz * 1e3 * (d.mem_bus_bits / 8.0) / 1e9;
  read_pcie_link(id, d.pcie_gen, d.pcie_width);
  CUDALABS_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  CUDALABS_CHECK(cudaDriverGetVersion(&d.driver_version));
  g_device = d;
  g_selected = true;
  return d;
}

const DeviceInfo& current_device() {
  if (!g_selected) select_device(0);
  return g_device;
}

void allow_dynamic_smem(const void* kernel, std::size_t bytes, const char* what) {
  constexpr std::size_t default_limit = 48 * 1024;
  if (bytes <= default_limit) return;
  const DeviceInfo& d = current_device();
  if (bytes > d.smem_per_block_optin)
    throw CudaError(std::string(what) + " needs " + std::to_string(bytes) + " bytes of dynamic shared memory per block; " +
                    d.name + " allows at most " + std::to_string(d.smem_per_block_optin) +
                    " (cudaDevAttrMaxSharedMemoryPerBlockOptin): a smaller tile or fewer stages fit");
  CUDALABS_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

KernelResources kernel_resources(const void* kernel, int block_threads, std::size_t dynamic_smem) {
  cudaFuncAttributes attr{};
  CUDALABS_CHECK(cudaFuncGetAttributes(&attr, kernel));
  KernelResources r;
  r.registers = attr.numRegs;
  r.static_smem = attr.sharedSizeBytes;
  r.dynamic_smem = dynamic_smem;
  r.local_bytes = attr.localSizeBytes;
  r.block_threads = block_threads;
  CUDALABS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r.blocks_per_sm, kernel, block_threads, dynamic_smem));
  const DeviceInfo& d = current_device();
  if (d.max_threads_per_sm > 0)
    r.occupancy = static_cast<double>(r.blocks_per_sm * block_threads) / d.max_threads_per_sm;
  return r;
}

std::size_t device_free_bytes() {
  std::size_t free_b = 0, total_b = 0;
  CUDALABS_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

}  // namespace cudalabs
