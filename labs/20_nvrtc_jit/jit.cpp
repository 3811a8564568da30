#include "jit.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>

namespace lab20 {

namespace {

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw cudalabs::CudaError(std::string("NVRTC error: ") + call + ": " + nvrtcGetErrorString(r));
}

std::vector<int> supported_archs() {
  int count = 0;
  check_nvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(count));
  check_nvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;  // ascending: 75, 80, 86, ..., 90, 100, ...
}

std::string supported_text() {
  std::string s;
  for (int a : supported_archs()) s += (s.empty() ? "" : ", ") + std::to_string(a);
  return s;
}

class Program {  // an nvrtcProgram, owned
 public:
  Program(const KernelSource& source) {
    check_nvrtc(nvrtcCreateProgram(&p_, source.text.c_str(), source.file_name.c_str(), 0, nullptr, nullptr),
                "nvrtcCreateProgram");
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() { nvrtcDestroyProgram(&p_); }
  nvrtcProgram get() const { return p_; }
  std::string log() const {
    std::size_t size = 0;
    check_nvrtc(nvrtcGetProgramLogSize(p_, &size), "nvrtcGetProgramLogSize");
    std::string log(size, '\0');
    check_nvrtc(nvrtcGetProgramLog(p_, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

 private:
  nvrtcProgram p_ = nullptr;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Target target_for(int cc) {
  const std::vector<int> archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), cc) != archs.end()) return {"sm_" + std::to_string(cc), true, cc};
  int newest_runnable = 0;
  for (int a : archs)
    if (a <= cc) newest_runnable = a;
  if (newest_runnable == 0)
    throw cudalabs::NoDeviceError("this NVRTC compiles for compute capabilities " + supported_text() +
                                  "; the GPU's, " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                                  ", is older than all of them");
  return {"compute_" + std::to_string(newest_runnable), false, newest_runnable};
}

Target parse_arch(const std::string& text) {
  std::string digits = text;
  bool cubin = true;
  if (digits.starts_with("sm_")) {
    digits = digits.substr(3);
  } else if (digits.starts_with("compute_")) {
    digits = digits.substr(8);
    cubin = false;
  }
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const bool numeric = !digits.empty() && digits.size() <= 3 && std::all_of(digits.begin(), digits.end(), ::isdigit);
  const int cc = numeric ? std::stoi(digits) : 0;
  const std::vector<int> archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), cc) == archs.end())
    throw cudalabs::UsageError("--arch " + text + ": not an architecture this NVRTC compiles for (" + supported_text() +
                               "). Examples: --arch sm_90 (SASS), --arch compute_90 (PTX), --arch 9.0.");
  return {(cubin ? "sm_" : "compute_") + std::to_string(cc), cubin, cc};
}

bool runs_on(const Target& t, int cc) { return t.cubin ? t.cc / 10 == cc / 10 && t.cc <= cc : t.cc <= cc; }

Toolchain nvrtc_toolchain(int driver_version) {
  Toolchain tc;
  check_nvrtc(nvrtcVersion(&tc.nvrtc_major, &tc.nvrtc_minor), "nvrtcVersion");
  tc.driver_version = driver_version;
  return tc;
}

// -lineinfo as in the nvcc build of the baseline (meson.build), so profiles of
// both show source lines and the two compiles see the same options.
std::vector<std::string> compile_options(const Target& t) { return {"-arch=" + t.arch, "-std=c++17", "-lineinfo"}; }

CacheKey cache_key(const KernelSource& source, const std::string& name_expression, const Target& t,
                   const Toolchain& tc) {
  CacheKey k;
  k.source = source.text;
  k.options = compile_options(t);
  k.arch = t.arch;
  k.nvrtc_major = tc.nvrtc_major;
  k.nvrtc_minor = tc.nvrtc_minor;
  k.driver_version = tc.driver_version;
  k.name_expressions = {name_expression};
  return k;
}

CompiledCode compile(const KernelSource& source, const std::string& name_expression, const Target& t, std::string* log) {
  Program program(source);
  // The name expression makes NVRTC instantiate the template and tell us the
  // instantiation's mangled name, which the loaded image knows it by.
  check_nvrtc(nvrtcAddNameExpression(program.get(), name_expression.c_str()), "nvrtcAddNameExpression");
  const std::vector<std::string> options = compile_options(t);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  if (r == NVRTC_ERROR_COMPILATION)
    throw KernelSourceError("NVRTC could not compile " + name_expression + " from " + source.file_name + " for " +
                            t.arch + ":\n" + program.log());
  check_nvrtc(r, "nvrtcCompileProgram");
  if (log) *log = program.log();

  CompiledCode code;
  code.kind = t.cubin ? CompiledCode::Kind::cubin : CompiledCode::Kind::ptx;
  std::size_t size = 0;
  if (t.cubin) {
    check_nvrtc(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    code.image.resize(size);
    check_nvrtc(nvrtcGetCUBIN(program.get(), code.image.data()), "nvrtcGetCUBIN");
  } else {
    check_nvrtc(nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
    code.image.resize(size);
    check_nvrtc(nvrtcGetPTX(program.get(), code.image.data()), "nvrtcGetPTX");
    while (!code.image.empty() && code.image.back() == '\0') code.image.pop_back();  // std::string keeps its own NUL
  }
  const char* lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(program.get(), name_expression.c_str(), &lowered), "nvrtcGetLoweredName");
  code.lowered = {{name_expression, lowered}};
  return code;
}

JitResult get_or_compile(const JitCache& cache, const KernelSource& source, const std::string& name_expression,
                         const Target& t, const Toolchain& tc) {
  JitResult result;
  const CacheKey key = cache_key(source, name_expression, t, tc);
  auto t0 = std::chrono::steady_clock::now();
  JitCache::Lookup hit = cache.load(key);
  if (hit.code) {
    result.code = std::move(*hit.code);
    result.from_cache = true;
    result.ms = ms_since(t0);
    return result;
  }
  result.cache_note = hit.miss;
  t0 = std::chrono::steady_clock::now();
  result.code = compile(source, name_expression, t);
  std::string why_not;
  if (cache.enabled() && !cache.store(key, result.code, &why_not)) result.cache_note += "; not stored: " + why_not;
  result.ms = ms_since(t0);
  return result;
}

LoadedKernel::LoadedKernel(const CompiledCode& code, const std::string& name_expression) {
  std::string lowered;
  for (const auto& [expression, name] : code.lowered)
    if (expression == name_expression) lowered = name;
  if (lowered.empty()) throw cudalabs::CudaError("the compiled code has no kernel " + name_expression);
  // A PTX image must end with a NUL: std::string's data() does.
  CUDALABS_CHECK(cudaLibraryLoadData(&library_, code.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  const cudaError_t err = cudaLibraryGetKernel(&kernel_, library_, lowered.c_str());
  if (err != cudaSuccess) {
    cudaLibraryUnload(library_);
    library_ = nullptr;
    cudalabs::check_cuda(err, ("cudaLibraryGetKernel(" + lowered + ")").c_str(), __FILE__, __LINE__);
  }
}

LoadedKernel::~LoadedKernel() {
  if (library_) cudaLibraryUnload(library_);
}

}  // namespace lab20
