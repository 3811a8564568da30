// Clocks, temperature, power and clock-event reasons through NVML, loaded at run
// time (NVML ships with the driver; the build needs neither its header nor its library).
#include <dlfcn.h>

#include <cuda_runtime_api.h>

#include <string>

#include "cudalabs/device.hpp"
#include "cudalabs/monitor.hpp"

namespace cudalabs {

namespace {

// NVML's own values (nvml.h): clock types, the GPU temperature sensor, violation
// policies, and the clock-event reason bits.
constexpr int nvml_clock_sm = 1, nvml_clock_mem = 2, nvml_temperature_gpu = 0;
constexpr int nvml_policy_power = 0, nvml_policy_thermal = 1;
constexpr unsigned long long reason_sw_power_cap = 0x4, reason_hw_slowdown = 0x8, reason_sw_thermal = 0x20,
                             reason_hw_thermal = 0x40, reason_hw_power_brake = 0x80;
constexpr unsigned long long throttle_bits = reason_hw_slowdown | reason_sw_thermal | reason_hw_thermal | reason_hw_power_brake;

struct ViolationTime {
  unsigned long long reference_time;
  unsigned long long violation_time;  // ns
};

struct Nvml {
  using by_bus_t = int (*)(const char*, void**);
  using clock_t_ = int (*)(void*, int, unsigned*);
  using temp_t = int (*)(void*, int, unsigned*);
  using uint_t = int (*)(void*, unsigned*);
  using reasons_t = int (*)(void*, unsigned long long*);
  using violation_t = int (*)(void*, int, ViolationTime*);
  clock_t_ clock = nullptr;
  temp_t temperature = nullptr;
  uint_t power_mw = nullptr;
  reasons_t reasons = nullptr;
  violation_t violation = nullptr;
  void* device = nullptr;
  int cuda_device = -1;
};

Nvml load_nvml(int cuda_device) {
  Nvml n;
  n.cuda_device = cuda_device;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
  if (!lib) return n;
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<Nvml::by_bus_t>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  n.clock = reinterpret_cast<Nvml::clock_t_>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  n.temperature = reinterpret_cast<Nvml::temp_t>(dlsym(lib, "nvmlDeviceGetTemperature"));
  n.power_mw = reinterpret_cast<Nvml::uint_t>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
  // Renamed "clocks event reasons" in newer drivers; the old name stays as an alias.
  n.reasons = reinterpret_cast<Nvml::reasons_t>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!n.reasons) n.reasons = reinterpret_cast<Nvml::reasons_t>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  n.violation = reinterpret_cast<Nvml::violation_t>(dlsym(lib, "nvmlDeviceGetViolationStatus"));
  char bus[32] = {};
  if (!init || !by_bus || init() != 0 || cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess ||
      by_bus(bus, &n.device) != 0)
    n.device = nullptr;
  cudaGetLastError();
  return n;
}

const Nvml& nvml() {
  static Nvml n = load_nvml(current_device().id);
  return n;
}

}  // namespace

ClockSample read_clocks() {
  const Nvml& n = nvml();
  ClockSample s;
  if (!n.device || !n.clock) return s;
  s.valid = n.clock(n.device, nvml_clock_sm, &s.sm_mhz) == 0;
  n.clock(n.device, nvml_clock_mem, &s.mem_mhz);
  if (n.temperature) n.temperature(n.device, nvml_temperature_gpu, &s.temp_c);
  unsigned mw = 0;
  if (n.power_mw && n.power_mw(n.device, &mw) == 0) s.power_w = mw / 1000.0;
  if (n.reasons) n.reasons(n.device, &s.reasons);
  ViolationTime v{};
  if (n.violation && n.violation(n.device, nvml_policy_thermal, &v) == 0) s.thermal_violation_ns = v.violation_time;
  if (n.violation && n.violation(n.device, nvml_policy_power, &v) == 0) s.power_violation_ns = v.violation_time;
  return s;
}

bool throttled_between(const ClockSample& before, const ClockSample& after, std::string* why) {
  if (!before.valid || !after.valid) return false;
  std::string w;
  const unsigned long long bits = (before.reasons | after.reasons) & throttle_bits;
  if (bits & reason_hw_slowdown) w += "hardware slowdown; ";
  if (bits & (reason_sw_thermal | reason_hw_thermal)) w += "thermal slowdown; ";
  if (bits & reason_hw_power_brake) w += "power brake; ";
  if (after.thermal_violation_ns > before.thermal_violation_ns)
    w += "clocks held down by temperature for " +
         std::to_string((after.thermal_violation_ns - before.thermal_violation_ns) / 1000) + " us; ";
  if (w.empty()) return false;
  if (why) *why = w.substr(0, w.size() - 2);
  return true;
}

bool power_capped_between(const ClockSample& before, const ClockSample& after) {
  if (!before.valid || !after.valid) return false;
  return ((before.reasons | after.reasons) & reason_sw_power_cap) || after.power_violation_ns > before.power_violation_ns;
}

}  // namespace cudalabs
