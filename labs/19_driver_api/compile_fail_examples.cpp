// Launches that must NOT compile, one per CASE, and (CASE 0) launches that
// must. Not part of the build: the lab's CPU tests (meson.build) compile this
// file once per case and check the compiler's message, e.g.
//
//   g++ -std=c++20 -I labs/19_driver_api -I common/include -I /usr/local/cuda/include \
//       -DCASE=3 -c labs/19_driver_api/compile_fail_examples.cpp -o /tmp/x.o
//
// Read the message of one by hand: it is the lesson. Nothing here runs; the
// launches are only compiled (a Kernel needs a loaded module to exist).
#include <cstdint>
#include <vector>

#include "kernel.hpp"
#include "lab_kernels.hpp"

#ifndef CASE
#error "compile with -DCASE=N (0: the valid launches, 1..7: the rejected ones)"
#endif

using lab19::DeviceArray;
using lab19::Kernel;

void launches(const Kernel<lab19::VectorAddSignature>& add, const Kernel<lab19::TiledMatmulSignature>& matmul,
              DeviceArray<float>& a, DeviceArray<float>& b, DeviceArray<float>& c, DeviceArray<double>& d,
              std::int64_t n, int m, CUstream s) {
  [[maybe_unused]] std::vector<float> host(16);
  [[maybe_unused]] const lab19::DevicePtr<const float> read_only = a.ptr();
#if CASE == 0
  add.launch({1}, {256}, 0, s, a.ptr(), b.ptr(), c.ptr(), n);   // float* for const float*: adding const is fine
  add.launch({1}, {256}, 0, s, read_only, b.ptr(), c.ptr(), m);  // an int for an int64: widening is fine
  matmul.launch({1, 1}, {16, 16}, 0, s, a.ptr(), b.ptr(), c.ptr(), m, m, static_cast<int>(n));
#elif CASE == 1
  add.launch({1}, {256}, 0, s, a.ptr(), b.ptr(), c.ptr());  // n forgotten
#elif CASE == 2
  add.launch({1}, {256}, 0, s, a.ptr(), b.ptr(), c.ptr(), n, n);
#elif CASE == 3
  add.launch({1}, {256}, 0, s, d.ptr(), b.ptr(), c.ptr(), n);  // double data read as floats
#elif CASE == 4
  matmul.launch({1, 1}, {16, 16}, 0, s, a.ptr(), b.ptr(), c.ptr(), m, m, n);  // int64 -> int may not fit
#elif CASE == 5
  add.launch({1}, {256}, 0, s, a.ptr(), b.ptr(), read_only, n);  // the kernel writes c: it may not be const
#elif CASE == 6
  add.launch({1}, {256}, 0, s, host.data(), b.ptr(), c.ptr(), n);  // a host pointer, read by the GPU
#elif CASE == 7
  static_assert(sizeof(Kernel<int(const float*)>) > 0);  // a kernel returns nothing
#else
#error "no such CASE"
#endif
}
