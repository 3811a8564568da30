// Lab 19's CPU test of kernel names (no GPU, no driver needed):
//   1. mangled_name<Params...>() spells what g++ and nvcc spell (the expected
//      names below are g++'s, read with nm from functions of these signatures);
//   2. every kernel of lab_kernels.hpp is in the embedded PTX and in every
//      embedded cubin under the name Kernel<> will look up, and the tiled
//      matmul's launch bounds in the PTX match the block main.cu launches.
// A kernel whose parameters changed in the device code, or a lab_kernels.hpp
// that no longer matches it, fails here instead of at cuModuleGetFunction.
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernel.hpp"
#include "embedded.hpp"
#include "lab_kernels.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += ok ? 0 : 1;
}

template <typename Signature>
struct Mangled;
template <typename... Params>
struct Mangled<void(Params...)> {
  static std::string of(std::string_view name) { return lab19::mangled_name<Params...>(name); }
};

template <typename Signature>
void expect_name(std::string_view name, const std::string& want) {
  const std::string got = Mangled<Signature>::of(name);
  expect(got == want, std::string(name) + " -> " + got + (got == want ? "" : " (expected " + want + ")"));
}

std::string_view text_of(const embedded::File& f) { return {reinterpret_cast<const char*>(f.data), f.size}; }

template <typename Signature>
void expect_in_device_code(const char* name) {
  const std::string mangled = Mangled<Signature>::of(name);
  int images = 0;
  for (const embedded::File& f : embedded::files()) {
    if (f.name == "ptx") {
      expect(text_of(f).find(".entry " + mangled + "(") != std::string_view::npos,
             "PTX has .entry " + mangled + " (" + name + ")");
      ++images;
    } else if (f.name.starts_with("cubin_")) {
      expect(text_of(f).find(mangled + '\0') != std::string_view::npos,
             std::string(f.name) + " has the symbol " + mangled);
      ++images;
    }
  }
  expect(images >= 2, "a PTX and at least one cubin are embedded");
}

}  // namespace

int main() {
  using std::int64_t;
  // The lab's two kernels, and the rules the mangler must follow.
  expect_name<lab19::VectorAddSignature>("vector_add_kernel", "_Z17vector_add_kernelPKfS0_Pfl");
  expect_name<lab19::TiledMatmulSignature>("tiled_matmul_kernel", "_Z19tiled_matmul_kernelPKfS0_Pfiii");
  expect_name<void(float*, float*)>("f2", "_Z2f2PfS_");
  expect_name<void(const float*, float*, const float*)>("f3", "_Z2f3PKfPfS0_");
  expect_name<void(double, double*)>("f4", "_Z2f4dPd");
  expect_name<void(int**, const int**)>("f5", "_Z2f5PPiPPKi");
  expect_name<void(const float*, unsigned, unsigned long long, const float* const*, char, bool)>(
      "f6", "_Z2f6PKfjyPKS0_cb");
  expect_name<void()>("f8", "_Z2f8v");
  expect_name<void(float*, double*, int*, unsigned*, long*, short*, char*, bool*, signed char*, unsigned char*,
                   unsigned short*, long long*, long long*)>("f9", "_Z2f9PfPdPiPjPlPsPcPbPaPhPtPxSA_");
  expect_name<void(const float* const*, const float* const*, float* const*)>("f10", "_Z3f10PKPKfS2_PKPf");

  expect_in_device_code<lab19::VectorAddSignature>(lab19::vector_add_name);
  expect_in_device_code<lab19::TiledMatmulSignature>(lab19::tiled_matmul_name);

  const embedded::File* ptx = embedded::find("ptx");
  const std::string entry = ".entry " + Mangled<lab19::TiledMatmulSignature>::of(lab19::tiled_matmul_name) + "(";
  if (ptx) {
    const std::string_view text = text_of(*ptx);
    const std::size_t at = text.find(entry);
    const std::size_t body = text.find('{', at);
    const std::string bound = ".maxntid " + std::to_string(lab19::tiled_matmul_tile * lab19::tiled_matmul_tile) + ", 1, 1";
    expect(at != std::string_view::npos && text.substr(at, body - at).find(bound) != std::string_view::npos,
           "tiled_matmul_kernel's launch bounds in the PTX are " + bound + " (lab_kernels.hpp's tile squared)");
    expect(ptx->data[ptx->size] == '\0', "the embedded PTX ends with a NUL (cuModuleLoadData reads a C string)");
  }
  expect(reinterpret_cast<std::uintptr_t>(embedded::find("fatbin")->data) % 64 == 0, "the fatbin is 64-byte aligned");

  std::printf("%s\n", failures ? "FAILED" : "all names found");
  return failures ? 1 : 0;
}
