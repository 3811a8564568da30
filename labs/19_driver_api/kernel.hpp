#pragma once
// Type-checked kernel launches on the driver API: the C++ answer to the
// original project's Function(Args).
//
//   mangled_name<Params...>(name)  the name nvcc gives name(Params...) in PTX
//                                  and cubin, which cuModuleGetFunction takes
//   Kernel<void(Params...)>        a kernel that carries its parameter types:
//                                  launch() with the wrong count, a wrong type,
//                                  a narrowing conversion, a dropped const or a
//                                  host pointer does not compile
//   with_kernel_arguments          the check and the void** packing, shared with
//                                  runtime_api.hpp's RuntimeKernel
//
// Why: cuLaunchKernel takes `void** args`, one pointer per parameter, and
// copies sizeof(parameter) bytes from each. Nothing checks them: an int passed
// where the kernel expects an int64 makes the driver read 4 bytes past it; a
// host pointer is dereferenced by the GPU. The Kernel type makes those compile
// errors, and its lookup by mangled name (computed from the same parameter
// list) makes a kernel whose parameters changed in the device code a load-time
// error instead of wrong arguments at every launch.
//
// The file the student edits (README.md). The course's harness does not use
// it: only main.cu's launches and runtime_api.hpp do.
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "driver.hpp"

namespace lab19 {

// ---- kernel names -----------------------------------------------------------

// The Itanium C++ ABI name that nvcc gives `name(Params...)` at namespace scope:
// "_Z" <length><name> <parameter types>, e.g.
//   vector_add_kernel(const float*, const float*, float*, long)
//   -> _Z17vector_add_kernelPKfS0_Pfl
// P = pointer, K = const, f/i/l/... builtin types, S_/S0_/S1_ = "the 1st/2nd/3rd
// compound type already written" (PKf written once, then S0_). Covers builtin
// arithmetic types, const and pointers: what kernel parameters here are.
namespace mangling {

template <typename T>
constexpr char builtin_code() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, void>) return 'v';
  else if constexpr (std::is_same_v<U, bool>) return 'b';
  else if constexpr (std::is_same_v<U, char>) return 'c';
  else if constexpr (std::is_same_v<U, signed char>) return 'a';
  else if constexpr (std::is_same_v<U, unsigned char>) return 'h';
  else if constexpr (std::is_same_v<U, short>) return 's';
  else if constexpr (std::is_same_v<U, unsigned short>) return 't';
  else if constexpr (std::is_same_v<U, int>) return 'i';
  else if constexpr (std::is_same_v<U, unsigned>) return 'j';
  else if constexpr (std::is_same_v<U, long>) return 'l';
  else if constexpr (std::is_same_v<U, unsigned long>) return 'm';
  else if constexpr (std::is_same_v<U, long long>) return 'x';
  else if constexpr (std::is_same_v<U, unsigned long long>) return 'y';
  else if constexpr (std::is_same_v<U, float>) return 'f';
  else if constexpr (std::is_same_v<U, double>) return 'd';
  else return '\0';
}

template <typename T>
constexpr bool mangleable() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_pointer_v<U>) return mangleable<std::remove_pointer_t<U>>();
  else return builtin_code<U>() != '\0';
}

// The type written out in full, without substitutions: the key of the table.
// (const is tested before pointer: std::is_pointer is true for `float* const`.)
template <typename T>
std::string full() {
  if constexpr (std::is_const_v<T>) return "K" + full<std::remove_const_t<T>>();
  else if constexpr (std::is_pointer_v<T>) return "P" + full<std::remove_pointer_t<T>>();
  else return std::string(1, builtin_code<T>());
}

// The type as C++ spells it, for messages: "const float*".
inline std::string builtin_name(char code) {
  constexpr std::string_view codes = "vbcahstijlmxyfd";
  constexpr const char* names[] = {"void", "bool", "char", "signed char", "unsigned char", "short", "unsigned short",
                                   "int", "unsigned", "long", "unsigned long", "long long", "unsigned long long",
                                   "float", "double"};
  const std::size_t at = codes.find(code);
  return at == std::string_view::npos ? "?" : names[at];
}
template <typename T>
std::string readable() {
  if constexpr (std::is_const_v<T>) return "const " + readable<std::remove_const_t<T>>();
  else if constexpr (std::is_pointer_v<T>) return readable<std::remove_pointer_t<T>>() + "*";
  else return builtin_name(builtin_code<T>());
}

// S_, S0_, ..., S9_, SA_, ..., SZ_, S10_, ...: the (index+1)-th earlier compound type.
inline std::string substitution(std::size_t index) {
  if (index == 0) return "S_";
  std::string digits;
  for (std::size_t v = index - 1;; v /= 36) {
    const auto d = static_cast<char>(v % 36);
    digits.insert(digits.begin(), d < 10 ? static_cast<char>('0' + d) : static_cast<char>('A' + d - 10));
    if (v < 36) break;
  }
  return "S" + digits + "_";
}

template <typename T>
void write(std::string& out, std::vector<std::string>& seen) {
  if constexpr (!std::is_pointer_v<T> && !std::is_const_v<T>) {
    out += builtin_code<T>();  // builtin types are never substituted
  } else {
    const std::string key = full<T>();
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == key) {
        out += substitution(i);
        return;
      }
    if constexpr (std::is_const_v<T>) {
      out += 'K';
      write<std::remove_const_t<T>>(out, seen);
    } else {
      out += 'P';
      write<std::remove_pointer_t<T>>(out, seen);
    }
    seen.push_back(key);
  }
}

}  // namespace mangling

template <typename... Params>
std::string mangled_name(std::string_view name) {
  static_assert((mangling::mangleable<Params>() && ...),
                "mangled_name: kernel parameters here are builtin arithmetic types and pointers to them");
  std::string out = "_Z" + std::to_string(name.size()) + std::string(name);
  std::vector<std::string> seen;
  if constexpr (sizeof...(Params) == 0) out += 'v';
  else (mangling::write<Params>(out, seen), ...);
  return out;
}

// ---- type-checked launches ----------------------------------------------------

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Whether launch() accepts `Arg` for a kernel parameter of type `Param`:
//   pointer parameters take DevicePtr<U> where U* converts to the parameter
//     (float* -> const float* yes; const float* -> float* no; double* -> float* no)
//     and never a raw pointer (it may point to host memory);
//   value parameters take what converts without narrowing (int -> int64 yes,
//     int64 -> int no: write the static_cast where you mean it).
template <typename T>
struct DevicePtrTraits : std::false_type {};
template <typename T>
struct DevicePtrTraits<DevicePtr<T>> : std::true_type {
  using element = T;
};

template <typename Arg, typename Param>
constexpr bool passable_as() {
  using A = std::remove_cvref_t<Arg>;
  if constexpr (std::is_pointer_v<Param>) {
    if constexpr (DevicePtrTraits<A>::value) return std::is_convertible_v<typename DevicePtrTraits<A>::element*, Param>;
    else return false;
  } else {
    return !std::is_pointer_v<A> && !DevicePtrTraits<A>::value && requires(A a) { Param{a}; };
  }
}

namespace detail {

template <std::size_t Index, typename Arg, typename Param>
constexpr bool check_argument() {
  // The compiler's note "in instantiation of check_argument<Index, Arg, Param>"
  // names the argument (counted from 0) and both types.
  constexpr bool raw_pointer = std::is_pointer_v<Param> && std::is_pointer_v<std::remove_cvref_t<Arg>>;
  static_assert(!raw_pointer,
                "Kernel::launch: a raw pointer for a pointer parameter: pass device memory "
                "(DeviceArray::ptr()); a host pointer would be dereferenced by the GPU");
  static_assert(raw_pointer || passable_as<Arg, Param>(),
                "Kernel::launch: this argument does not convert to the kernel's parameter type "
                "(another element type, a dropped const, or a narrowing conversion such as int64 -> int)");
  return passable_as<Arg, Param>();
}

template <typename... T>
struct TypeList {};

template <typename... Params, typename... Args, std::size_t... I>
constexpr bool check_arguments(TypeList<Params...>, TypeList<Args...>, std::index_sequence<I...>) {
  return (check_argument<I, Args, Params>() && ...);
}

template <typename Param, typename Arg>
Param to_parameter(Arg&& arg) {
  if constexpr (std::is_pointer_v<Param>) return Param{arg.raw};
  else return Param{std::forward<Arg>(arg)};
}

}  // namespace detail

// Converts the arguments to the kernel's parameter types (checked at compile
// time), then calls launch(void** args) with one pointer per parameter: what
// cuLaunchKernel and cudaLaunchKernel both take.
template <typename... Params, typename LaunchFn, typename... Args>
void with_kernel_arguments(detail::TypeList<Params...>, LaunchFn&& launch, Args&&... args) {
  if constexpr (sizeof...(Args) != sizeof...(Params)) {
    static_assert(sizeof...(Args) == sizeof...(Params),
                  "Kernel::launch: wrong number of arguments: the Kernel<void(...)> type lists the kernel's parameters");
  } else if constexpr (!detail::check_arguments(detail::TypeList<Params...>{}, detail::TypeList<Args...>{},
                                                std::index_sequence_for<Args...>{})) {
    // check_argument's static_assert has said which argument and why.
  } else {
    std::tuple<Params...> values{detail::to_parameter<Params>(std::forward<Args>(args))...};
    std::apply(
        [&](auto&... v) {
          void* pointers[sizeof...(Params) + 1] = {static_cast<void*>(&v)...};  // +1: a kernel may have no parameters
          launch(pointers);
        },
        values);
  }
}

template <typename Signature>
class Kernel {
  static_assert(!sizeof(Signature*),
                "Kernel<Signature>: Signature is the kernel's function type, returning void, "
                "e.g. Kernel<void(const float*, float*, int)>");
};

template <typename... Params>
class Kernel<void(Params...)> {
 public:
  // Looks the kernel up by the mangled name of name(Params...): a kernel whose
  // parameters in the device code differ from Params is "not found" here,
  // when the module loads, instead of misreading its arguments at every launch.
  Kernel(const Module& module, std::string_view name)
      : name_(name), mangled_(mangled_name<Params...>(name)) {
    check(cuModuleGetFunction(&f_, module.get(), mangled_.c_str()),
          ("cuModuleGetFunction(" + mangled_ + ", i.e. " + name_ + "(" + parameter_list() +
           ")): the device code has no kernel with this name and these parameter types").c_str(),
          __FILE__, __LINE__);
  }

  template <typename... Args>
  void launch(Dim3 grid, Dim3 block, unsigned dynamic_smem, CUstream stream, Args&&... args) const {
    with_kernel_arguments(
        detail::TypeList<Params...>{},
        [&](void** pointers) {
          // The message is built only on failure: a launch costs microseconds,
          // and this lab measures them.
          const CUresult r = cuLaunchKernel(f_, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_smem, stream,
                                            pointers, nullptr);
          if (r != CUDA_SUCCESS) throw_driver_error(r, ("cuLaunchKernel(" + name_ + ")").c_str(), __FILE__, __LINE__);
        },
        std::forward<Args>(args)...);
  }

  CUfunction get() const { return f_; }
  const std::string& name() const { return name_; }
  const std::string& mangled() const { return mangled_; }
  // Registers, shared and local memory, occupancy at `block_threads`.
  cudalabs::KernelResources resources(int block_threads, std::size_t dynamic_smem = 0) const;

 private:
  static std::string parameter_list();
  CUfunction f_ = nullptr;
  std::string name_, mangled_;
};

template <typename... Params>
cudalabs::KernelResources Kernel<void(Params...)>::resources(int block_threads, std::size_t dynamic_smem) const {
  return function_resources(f_, block_threads, dynamic_smem);
}

template <typename... Params>
std::string Kernel<void(Params...)>::parameter_list() {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + mangling::readable<Params>()), ...);
  return s;
}

}  // namespace lab19
