#pragma once
// The host side every matrix-multiply lab shares (05, 09, 10, 11, 18): random
// inputs, cuBLAS SGEMM as the baseline measured first at each size, the check
// against a double-precision CPU reference, and one measure() per variant.
// A lab supplies only its kernels, as a table of MatmulVariant.
//
// C[m×n] = A[m×k] · B[k×n], row-major, FP32 in and out (lab 09 also offers the
// inputs in FP16). Sizes need not be multiples of any tile.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

struct MatmulOperands {
  const float* a;
  const float* b;
  const __half* a16;  // A and B rounded to FP16; only for variants with fp16_inputs
  const __half* b16;
  int m, n, k;
};

struct MatmulVariant {
  std::string name;
  std::string description;
  std::function<void(const MatmulOperands&, float* c, cudaStream_t)> launch;
  std::function<cudalabs::KernelResources()> resources;  // called after the device is selected
  bool fp16_inputs = false;  // checked against the reference of the FP16-rounded inputs
};

// The host data of one size, for a lab's extra rows (lab 05's end-to-end time).
struct MatmulProblem {
  cudalabs::Point point;
  int m, n, k;
  const std::vector<float>& a;
  const std::vector<float>& b;
  // Checks a downloaded C against the reference (all rows, or a sample of rows
  // at large sizes).
  std::function<cudalabs::CheckResult(const std::vector<float>&)> check;
  cudalabs::Work work;  // the bytes and flops the variants were measured with
};

inline cudalabs::LabSpec matmul_spec(std::string name, std::string title, std::string about,
                                     const std::vector<MatmulVariant>& variants) {
  std::vector<cudalabs::VariantInfo> infos{{"cublas", "cuBLAS SGEMM, FP32 (no TF32): the baseline", true}};
  for (const auto& v : variants) infos.push_back({v.name, v.description});
  // Zipped: 1024³ (the original's size), 4096³ (the benchmark); --quick: odd
  // shapes that are not multiples of any tile, including a 1×1×1 product.
  const std::int64_t max_dim = 16384;  // 3 matrices of 16384² floats = 3 GiB
  return {.name = std::move(name),
          .title = std::move(title),
          .about = std::move(about),
          .sizes = {{.name = "m", .help = "rows of A and C", .full = {1024, 4096}, .quick = {1, 67, 129, 200}, .max = max_dim},
                    {.name = "n", .help = "columns of B and C", .full = {1024, 4096}, .quick = {1, 33, 257, 200}, .max = max_dim},
                    {.name = "k", .help = "columns of A, rows of B (the contraction)", .full = {1024, 4096}, .quick = {1, 100, 65, 200}, .max = max_dim}},
          .variants = std::move(infos)};
}

__global__ void matmul_to_half_kernel(const float* __restrict__ in, __half* __restrict__ out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(in[i]);
}

inline void matmul_to_half(const float* in, __half* out, std::int64_t n, cudaStream_t stream) {
  matmul_to_half_kernel<<<static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, 256)), 256, 0, stream>>>(in, out, n);
  CUDALABS_CHECK_LAUNCH("matmul_to_half_kernel");
}

namespace matmul_detail {

// Rows of C the checker compares: all of them when the CPU reference is cheap
// (m·n·k <= 2^31 multiply-adds: a second or two on a few cores), otherwise 64
// rows spread over C including the first and the last, where edge bugs live.
inline std::vector<int> rows_to_check(int m, int n, int k) {
  std::vector<int> rows;
  if (static_cast<double>(m) * n * k <= 2147483648.0) {
    for (int i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  const int samples = std::min(m, 64);
  for (int s = 0; s < samples; ++s) rows.push_back(static_cast<int>((static_cast<std::int64_t>(s) * (m - 1)) / std::max(samples - 1, 1)));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// Double-precision reference of the chosen rows of A·B.
inline std::vector<double> reference_rows(const std::vector<float>& a, const std::vector<float>& b, int n, int k,
                                          const std::vector<int>& rows) {
  std::vector<float> a_rows(rows.size() * static_cast<std::size_t>(k));
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy_n(a.begin() + static_cast<std::ptrdiff_t>(rows[r]) * k, k, a_rows.begin() + static_cast<std::ptrdiff_t>(r) * k);
  return cudalabs::ref::matmul(a_rows, b, static_cast<std::int64_t>(rows.size()), n, k);
}

inline std::vector<float> gather_rows(const std::vector<float>& c, int n, const std::vector<int>& rows) {
  std::vector<float> out(rows.size() * static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::copy_n(c.begin() + static_cast<std::ptrdiff_t>(rows[r]) * n, n, out.begin() + static_cast<std::ptrdiff_t>(r) * n);
  return out;
}

inline std::vector<float> round_to_half(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = __half2float(__float2half_rn(x[i]));
  return y;
}

}  // namespace matmul_detail

// Runs the baseline and every selected variant at every size. `extra` (optional)
// is called once per size after the variants, for a lab's own rows.
inline void run_matmul_lab(cudalabs::Session& s, const std::vector<MatmulVariant>& variants,
                           const std::function<void(cudalabs::Session&, const MatmulProblem&)>& extra = {}) {
  const cudalabs::Cublas blas;
  for (const auto& point : s.points()) {
    const int m = static_cast<int>(point.at("m")), n = static_cast<int>(point.at("n")), k = static_cast<int>(point.at("k"));
    const auto a = cudalabs::random_floats(static_cast<std::size_t>(m) * k, s.seed(1));
    const auto b = cudalabs::random_floats(static_cast<std::size_t>(k) * n, s.seed(2));
    const auto rows = matmul_detail::rows_to_check(m, n, k);
    const auto expected = matmul_detail::reference_rows(a, b, n, k, rows);
    // Inputs in [-1, 1): each output is a dot product of length k.
    const cudalabs::Tolerance tol = cudalabs::dot_tolerance(k);
    auto check_host = [&](const std::vector<float>& c) {
      return cudalabs::check_close(matmul_detail::gather_rows(c, n, rows), expected, tol);
    };

    cudalabs::DeviceBuffer<float> d_a(a, "A"), d_b(b, "B"), d_c(static_cast<std::size_t>(m) * n, "C");
    const cudalabs::Work work{.bytes = 4.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n),
                              .flops = 2.0 * m * n * k};
    auto poison = [&](cudaStream_t st) { d_c.poison(st); };

    s.measure({.variant = "cublas",
               .size = point,
               .work = work,
               .run = [&](cudaStream_t st) { blas.sgemm(d_a.data(), d_b.data(), d_c.data(), m, n, k, st); },
               .check = [&] { return check_host(d_c.download()); },
               .poison = poison,
               .ceiling = cudalabs::CeilingKind::baseline});

    // FP16 copies of the inputs, made once per size, and the reference of the
    // rounded inputs: the checker then measures only the kernel's own error.
    const bool any_fp16 = std::any_of(variants.begin(), variants.end(), [&](const MatmulVariant& v) { return v.fp16_inputs && s.selected(v.name); });
    cudalabs::DeviceBuffer<__half> d_a16, d_b16;
    std::vector<double> expected16;
    if (any_fp16) {
      d_a16 = cudalabs::DeviceBuffer<__half>(a.size(), "A (fp16)");
      d_b16 = cudalabs::DeviceBuffer<__half>(b.size(), "B (fp16)");
      matmul_to_half(d_a.data(), d_a16.data(), static_cast<std::int64_t>(a.size()), s.stream());
      matmul_to_half(d_b.data(), d_b16.data(), static_cast<std::int64_t>(b.size()), s.stream());
      CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
      expected16 = matmul_detail::reference_rows(matmul_detail::round_to_half(a), matmul_detail::round_to_half(b), n, k, rows);
    }
    const MatmulOperands ops{d_a.data(), d_b.data(), d_a16.data(), d_b16.data(), m, n, k};

    for (const auto& v : variants) {
      if (!s.selected(v.name)) continue;
      s.measure({.variant = v.name,
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { v.launch(ops, d_c.data(), st); },
                 .check =
                     [&] {
                       const auto c = d_c.download();
                       if (!v.fp16_inputs) return check_host(c);
                       return cudalabs::check_close(matmul_detail::gather_rows(c, n, rows), expected16, tol);
                     },
                 .poison = poison,
                 .resources = v.resources ? std::optional(v.resources()) : std::nullopt,
                 .ceiling = cudalabs::CeilingKind::baseline});
    }
    if (extra) extra(s, MatmulProblem{point, m, n, k, a, b, check_host, work});
    if (rows.size() < static_cast<std::size_t>(m))
      s.note(cudalabs::to_string(point) + ": checked " + std::to_string(rows.size()) + " of " + std::to_string(m) +
             " rows of C (spread, first and last included) against the CPU reference");
  }
}
