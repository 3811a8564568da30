#include "driver.hpp"

#include <sstream>

namespace lab19 {

// ---- errors -------------------------------------------------------------------

std::string error_text(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || cuGetErrorString(r, &text) != CUDA_SUCCESS)
    return "CUresult " + std::to_string(static_cast<int>(r)) +
           (r == CUDA_ERROR_STUB_LIBRARY ? " (CUDA_ERROR_STUB_LIBRARY)" : "");
  return std::string(name) + ": " + text;
}

void throw_driver_error(CUresult r, const char* call, const char* file, int line) {
  std::ostringstream os;  // (not operator+: it trips a false -Wrestrict in GCC 12)
  os << "CUDA driver error: " << call << "\n  at " << file << ":" << line << "\n  " << error_text(r);
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
      r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    throw cudalabs::NoDeviceError(os.str());
  throw cudalabs::CudaError(os.str());
}

// ---- context, device ------------------------------------------------------------

PrimaryContext::PrimaryContext(int ordinal) {
  const CUresult init = cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY)
    throw cudalabs::NoDeviceError(
        "libcuda.so.1 is the CUDA Toolkit's stub library here, not the NVIDIA driver: this machine has no "
        "driver (cuInit: CUDA_ERROR_STUB_LIBRARY). The build links the stub where it finds no driver, so that "
        "--help, --list and the CPU tests run; on a GPU machine, configure the build there. This lab needs an "
        "NVIDIA GPU.");
  if (init == CUDA_ERROR_NO_DEVICE)
    throw cudalabs::NoDeviceError("no usable CUDA device (cuInit: CUDA_ERROR_NO_DEVICE). This lab needs an NVIDIA "
                                  "GPU; --help and --list work without one.");
  check(init, "cuInit(0)", __FILE__, __LINE__);
  int count = 0;
  LAB19_CHECK(cuDeviceGetCount(&count));
  if (count == 0) throw cudalabs::NoDeviceError("no CUDA device (cuDeviceGetCount: 0). This lab needs an NVIDIA GPU.");
  if (ordinal < 0 || ordinal >= count)
    throw cudalabs::UsageError("--device " + std::to_string(ordinal) + ": this machine has " + std::to_string(count) +
                               " CUDA device(s), numbered 0.." + std::to_string(count - 1) + ".");
  LAB19_CHECK(cuDeviceGet(&device_, ordinal));
  // The primary context is the one the runtime API uses for this device: a
  // runtime library loaded into this process later (main.cu's runtime rows)
  // works in the same context, on the same memory and streams.
  LAB19_CHECK(cuDevicePrimaryCtxRetain(&ctx_, device_));
  LAB19_CHECK(cuCtxSetCurrent(ctx_));
}

PrimaryContext::~PrimaryContext() {
  if (ctx_) cuDevicePrimaryCtxRelease(device_);
}

namespace {
int attribute(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  check(cuDeviceGetAttribute(&v, a, d), "cuDeviceGetAttribute", __FILE__, __LINE__);
  return v;
}
}  // namespace

cudalabs::DeviceInfo device_info(CUdevice d, int ordinal) {
  cudalabs::DeviceInfo info;
  char name[256] = {};
  LAB19_CHECK(cuDeviceGetName(name, sizeof name, d));
  std::size_t total = 0;
  LAB19_CHECK(cuDeviceTotalMem(&total, d));
  info.id = ordinal;
  info.name = name;
  info.cc_major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_sm = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.regs_per_sm = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.smem_per_sm = static_cast<std::size_t>(attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  info.smem_per_block_optin = static_cast<std::size_t>(attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info.l2_bytes = static_cast<std::size_t>(attribute(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  info.global_mem_bytes = total;
  info.mem_bus_bits = attribute(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  info.mem_clock_khz = attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.sm_clock_khz = attribute(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info.dram_peak_gbps = 2.0 * info.mem_clock_khz * 1e3 * (info.mem_bus_bits / 8.0) / 1e9;  // double data rate
  // No runtime library here: "toolkit" is the CUDA version of the headers this
  // program was built with.
  info.runtime_version = CUDA_VERSION;
  LAB19_CHECK(cuDriverGetVersion(&info.driver_version));
  return info;
}

std::size_t device_free_bytes() {
  std::size_t free_b = 0, total_b = 0;
  LAB19_CHECK(cuMemGetInfo(&free_b, &total_b));
  return free_b;
}

// ---- modules --------------------------------------------------------------------

Module::Module(const void* image, const char* what) {
  check(cuModuleLoadData(&m_, image), ("cuModuleLoadData(" + std::string(what) + ")").c_str(), __FILE__, __LINE__);
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (m_) cuModuleUnload(m_);
    m_ = std::exchange(o.m_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (m_) cuModuleUnload(m_);
}

// ---- streams and events -----------------------------------------------------------

Stream::Stream() { LAB19_CHECK(cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING)); }
Stream::~Stream() {
  if (s_) cuStreamDestroy(s_);
}
void Stream::synchronize() const { LAB19_CHECK(cuStreamSynchronize(s_)); }

Event::Event() { LAB19_CHECK(cuEventCreate(&e_, CU_EVENT_DEFAULT)); }
Event::~Event() {
  if (e_) cuEventDestroy(e_);
}
void Event::record(CUstream stream) const { LAB19_CHECK(cuEventRecord(e_, stream)); }
void Event::synchronize() const { LAB19_CHECK(cuEventSynchronize(e_)); }
float Event::ms_since(const Event& start) const {
  float ms = 0;
  LAB19_CHECK(cuEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

// ---- device memory ----------------------------------------------------------------

void* device_alloc(std::size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;  // cuMemAlloc rejects 0 bytes
  CUdeviceptr p = 0;
  const CUresult r = cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    std::size_t free_b = 0, total_b = 0;
    cuMemGetInfo(&free_b, &total_b);
    const std::string call = "cuMemAlloc(" + std::string(what) + ": " + std::to_string(bytes) + " bytes; " +
                             std::to_string(free_b) + " of " + std::to_string(total_b) +
                             " bytes free): use a smaller size";
    throw_driver_error(r, call.c_str(), __FILE__, __LINE__);
  }
  return reinterpret_cast<void*>(p);
}

void device_free(void* p) noexcept {
  if (p) cuMemFree(reinterpret_cast<CUdeviceptr>(p));
}

void upload_bytes(void* device, const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  LAB19_CHECK(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes));
  // From pageable memory the copy may return before the DMA lands, and the lab
  // works on a non-blocking stream that does not wait for the legacy stream.
  LAB19_CHECK(cuCtxSynchronize());
}

void download_bytes(void* host, const void* device, std::size_t bytes) {
  if (bytes == 0) return;
  LAB19_CHECK(cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes));
}

void fill_bytes_async(void* device, unsigned char value, std::size_t bytes, CUstream stream) {
  if (bytes == 0) return;
  LAB19_CHECK(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(device), value, bytes, stream));
}

// ---- kernels ------------------------------------------------------------------------

cudalabs::KernelResources function_resources(CUfunction f, int block_threads, std::size_t dynamic_smem) {
  cudalabs::KernelResources r;
  int value = 0;
  LAB19_CHECK(cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  LAB19_CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  r.static_smem = static_cast<std::size_t>(value);
  LAB19_CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
  r.local_bytes = static_cast<std::size_t>(value);
  r.dynamic_smem = dynamic_smem;
  r.block_threads = block_threads;
  LAB19_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&r.blocks_per_sm, f, block_threads, dynamic_smem));
  CUdevice d = 0;
  LAB19_CHECK(cuCtxGetDevice(&d));
  const int max_threads = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  if (max_threads > 0) r.occupancy = static_cast<double>(r.blocks_per_sm * block_threads) / max_threads;
  return r;
}

}  // namespace lab19
