#pragma once
// The host side every matrix-multiply lab shares (05, 09, 10, 11, 18, 30, 32; 33 its row sampling): random
// inputs, cuBLAS SGEMM as the baseline measured first at each size, the checks,
// and one measure() per variant. A lab supplies only its kernels, as a table of
// MatmulVariant whose launch and resources call the lab's kernels.hpp.
//
// Course-owned, like main.cu: it includes no student kernel file, so a graded
// submission never reaches the code that judges it (docs/lab-anatomy.md).
//
// It lives in labs/shared/, the home of host code that several labs share: not
// inside one lab's folder (a lab includes another lab's header only for its
// kernels), and not in common/ (the library every lab links holds no one
// family's harness). labs/meson.build puts the folder on every main.cu's
// include path and on no kernel file's, so it is included by its plain name.
//
// C[m×n] = A[m×k] · B[k×n], row-major, FP32 in and out (lab 09 also offers the
// inputs in FP16). Sizes need not be multiples of any tile.
//
// What a variant's C must match, at every size, for every set of inputs:
//   - the WHOLE of C: cuBLAS's C of the same inputs, computed in the same run,
//     within twice the dot-product tolerance (both are float sums of the same
//     products in different orders; see check_product). One wrong element
//     anywhere fails.
//   - rows of C: the double-precision CPU reference. All rows while m·n·k <=
//     2^31; beyond, 64 rows drawn from the seed, row 0 and row m-1 always among
//     them. cuBLAS itself is held to the same rows (the baseline's check), so
//     the whole-C comparison is against a library result that is itself checked.
// The rows come from the seed (checked_rows.hpp), which the graded program
// knows: that gives a kernel nothing, since a judge compares the whole of its C
// with its own cuBLAS's. Lab 33, which compares rows only, has its judge draw them.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "checked_rows.hpp"  // rows_to_check
#include "value_kinds.hpp"

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
  std::function<void(const MatmulOperands&, float* c, cudaStream_t)> launch;  // enqueue only
  std::function<cudalabs::KernelResources()> resources;  // called after the device is selected
  bool fp16_inputs = false;  // checked against the references of the FP16-rounded inputs
};

// The host data of one size, for a lab's extra rows (lab 05's end-to-end time).
struct MatmulProblem {
  cudalabs::Point point;
  int m, n, k;
  const std::vector<float>& a;  // the current inputs: new_inputs replaces their values
  const std::vector<float>& b;
  // Checks a downloaded C against the references of the current inputs.
  std::function<cudalabs::CheckResult(const std::vector<float>&)> check;
  // New values for A and B from a seed (host, device and references): an extra
  // row's new_inputs calls it, then refreshes its own copies of a and b.
  std::function<void(std::uint64_t seed)> new_inputs;
  cudalabs::Work work;  // the bytes and flops the variants were measured with
};

inline cudalabs::LabSpec matmul_spec(std::string name, std::string title, std::string about,
                                     const std::vector<MatmulVariant>& variants) {
  std::vector<cudalabs::VariantInfo> infos{
      {"cublas", "cuBLAS FP32 GEMM (no TF32), the fastest of cublasSgemm and cuBLASLt's algorithms: the baseline",
       true}};
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

// --inputs of the matmul labs (05, 09, 10, 11, 18; 30 with its own types):
// random A, B in [-1, 1); large and tiny: the same values times 2^ea and 2^eb,
// each drawn from the seed in the input type's range (InputScales). A power of
// two scales every product and sum of an FP32-accumulated matmul exactly (no
// overflow, no lost bits: see each range), so C, cuBLAS's C and the tolerance
// all scale by 2^(ea+eb). Each range lies past what FP16 can hold or sum,
// so a kernel that holds its operands, products or sums in half precision
// fails: FP32 operands beyond FP16's range both ways (65504, 2^-24); FP16
// operands (09's f16_tile16, 30's --dtype fp16) inside their own range, but
// with every product past it (large: C beyond 65504, an FP16 sum is Inf;
// tiny: every product below 2^-24, an FP16 product or sum is 0).
inline cudalabs::ExtraFlag matmul_inputs_flag() {
  return value_kinds::inputs_flag_of("random: A, B in [-1, 1); large, tiny: the same times 2^ea, 2^eb, each drawn "
                                     "in [40, 56] or [-40, -24] (FP16 operands: [12, 15] or [-14, -12]); C and the "
                                     "tolerance scaled by 2^(ea+eb)",
                                     {"random", "large", "tiny"});
}

namespace matmul_detail {

// The exponent ranges of --inputs large and tiny for one input type: each
// operand times 2^e (value_kinds::KindExponents).
using InputScales = value_kinds::KindExponents;
// FP32, TF32, BF16 operands (FP32's exponent range): |C| < k·2^112 <= 2^126
// (k <= 2^14), and every nonzero product at least 2^-46·2^-80 = 2^-126 (a
// value of [-1, 1) is a multiple of 2^-23), a sum below it exact.
inline constexpr InputScales fp32_scales{40, 56, -40, -24};
// FP16 operands: |A|, |B| < 2^15 (FP16's largest value is 65504), products
// past 2^16 on average (large) or all below 2^-24 (tiny: its smallest
// subnormal), all exact in FP32 (at least 2^-48, at most 2^30).
inline constexpr InputScales fp16_scales{12, 15, -14, -12};

// The exponents of A's and B's scale for one --inputs kind and seed (0, 0 for random).
inline std::pair<int, int> input_exponents(const std::string& kind, std::uint64_t seed,
                                           InputScales scales = fp32_scales) {
  return {value_kinds::kind_exponent(kind, cudalabs::mix_seed(seed, 4), scales),
          value_kinds::kind_exponent(kind, cudalabs::mix_seed(seed, 5), scales)};
}

// One operand of --inputs `kind` (matmul_inputs_flag): `count` values of
// buffer `buffer` of the seed, times 2^exponent.
inline std::vector<float> operand_values(const std::string& kind, std::size_t count, std::uint64_t seed, int buffer,
                                         int exponent) {
  if (kind == "random") return cudalabs::random_floats(count, cudalabs::mix_seed(seed, buffer));
  return value_kinds::scaled_floats(count, cudalabs::mix_seed(seed, buffer), exponent);
}

// The tolerance of a product of inputs scaled by 2^ea and 2^eb.
inline cudalabs::Tolerance scaled_tolerance(cudalabs::Tolerance unit, int ea, int eb) {
  return {.abs = std::ldexp(unit.abs, ea + eb), .rel = unit.rel};
}

}  // namespace matmul_detail

// FP32 -> FP16, round to nearest even: the inputs of lab 09's FP16 variant.
__global__ void matmul_to_half_kernel(const float* __restrict__ in, __half* __restrict__ out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(in[i]);
}

inline void matmul_to_half(const float* in, __half* out, std::int64_t n, cudaStream_t stream) {
  matmul_to_half_kernel<<<static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(n, 256)), 256, 0, stream>>>(in, out, n);
  CUDALABS_CHECK_LAUNCH("matmul_to_half_kernel");
}

namespace matmul_detail {

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

// A check of gathered rows reports positions in C, not in the gathered rows.
inline void positions_in_c(cudalabs::CheckResult& r, const std::vector<int>& rows, int n) {
  for (auto& bad : r.first_bad)
    bad.index = static_cast<std::size_t>(rows[bad.index / static_cast<std::size_t>(n)]) * static_cast<std::size_t>(n) +
                bad.index % static_cast<std::size_t>(n);
}

// The FP16-rounded values as floats (exactly: every half is a float), rounded
// as matmul_to_half rounds them.
inline std::vector<float> round_to_half(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = __half2float(__float2half_rn(x[i]));
  return y;
}

// What a C is compared with, for one set of inputs.
struct Reference {
  std::vector<int> rows;       // rows of C checked against the CPU
  std::vector<double> exact;   // those rows of A·B, double-precision CPU
  std::vector<float> library;  // all of C, from cuBLAS in this run
};

// The two checks of a downloaded C. Each output is a dot product of length k
// of inputs in [-1, 1): any float summation order stays within
// tol = dot_tolerance(k) of the exact value e (abs + rel·|e|).
//
// Against cuBLAS's r: v and r are each within tol of e, so
// |v - r| <= 2·abs + 2·rel·|e|, and |e| <= (|r| + abs) / (1 - rel) gives
// |v - r| <= 2·abs / (1 - rel) + 2·rel / (1 - rel) · |r|: twice the tolerance,
// 1e-3 + 2e-5·|r| at k = 4096, where outputs have a standard deviation of
// sqrt(k)/3 = 21 and an index off by one moves an output by ~30. The bound
// holds where cuBLAS is within tol of e, which the rows check verifies for
// cuBLAS on the same rows.
inline cudalabs::CheckResult check_product(const std::vector<float>& c, const Reference& ref, int n,
                                           cudalabs::Tolerance tol) {
  const cudalabs::Tolerance vs_library{.abs = 2 * tol.abs / (1 - tol.rel), .rel = 2 * tol.rel / (1 - tol.rel)};
  cudalabs::CheckResult whole = cudalabs::check_close(c, ref.library, vs_library);
  if (!whole.passed) whole.note = "C against cuBLAS's C of the same inputs";
  cudalabs::CheckResult rows = cudalabs::check_close(gather_rows(c, n, ref.rows), ref.exact, tol);
  if (!rows.passed)
    rows.note = "rows of C against the double CPU reference (" + std::to_string(ref.rows.size()) + " rows)";
  positions_in_c(rows, ref.rows, n);
  return cudalabs::both(std::move(whole), rows);
}

}  // namespace matmul_detail

// Runs the baseline and every selected variant at every size. `extra` (optional)
// is called once per size after the variants, for a lab's own rows.
inline void run_matmul_lab(cudalabs::Session& s, const std::vector<MatmulVariant>& variants,
                           const std::function<void(cudalabs::Session&, const MatmulProblem&)>& extra = {}) {
  const cudalabs::Cublas blas;
  for (const auto& point : s.points()) {
    const int m = static_cast<int>(point.at("m")), n = static_cast<int>(point.at("n")), k = static_cast<int>(point.at("k"));
    const std::size_t a_count = static_cast<std::size_t>(m) * k, b_count = static_cast<std::size_t>(k) * n;
    cudalabs::DeviceBuffer<float> d_a(a_count, "A"), d_b(b_count, "B"), d_c(static_cast<std::size_t>(m) * n, "C");

    // FP16 variants read A and B rounded to FP16. Their references are those of
    // the rounded values (as floats, exactly), so the check measures the
    // kernel's own error: a product of two halves is exact in float (11 + 11
    // significant bits <= 24), leaving only the float sums, as in FP32.
    const bool any_fp16 = std::any_of(variants.begin(), variants.end(),
                                      [&](const MatmulVariant& v) { return v.fp16_inputs && s.selected(v.name); });
    cudalabs::DeviceBuffer<__half> d_a16, d_b16;
    cudalabs::DeviceBuffer<float> d_a16f, d_b16f;  // the FP16 values as floats, for cuBLAS's reference
    if (any_fp16) {
      d_a16 = cudalabs::DeviceBuffer<__half>(a_count, "A (fp16)");
      d_b16 = cudalabs::DeviceBuffer<__half>(b_count, "B (fp16)");
      d_a16f = cudalabs::DeviceBuffer<float>(a_count, "A (fp16 values as floats)");
      d_b16f = cudalabs::DeviceBuffer<float>(b_count, "B (fp16 values as floats)");
    }

    std::vector<float> a, b;
    matmul_detail::Reference ref, ref16;
    const auto& extra_flags = s.options().extra;
    const std::string inputs = extra_flags.count("inputs") ? extra_flags.at("inputs") : "random";
    // Scaled with each new A and B (matmul_inputs_flag): FP32 operands, FP16 operands.
    cudalabs::Tolerance tol = cudalabs::dot_tolerance(k), tol16 = tol;
    // cuBLAS's C of two device operands, downloaded. The first call at a size
    // is where Cublas chooses its fastest algorithm for the shape: here,
    // before any measurement, never inside a traced or timed run. A graded
    // program makes the call and keeps no C (evidence::keeps_references).
    auto library_product = [&](const float* da, const float* db) {
      blas.sgemm(da, db, d_c.data(), m, n, k, s.stream());
      CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
      return cudalabs::evidence::keeps_references() ? d_c.download() : std::vector<float>{};
    };
    // Inputs from a seed (buffer 1: A, 2: B, 3: the sampled rows), uploaded,
    // and every reference of them: once now, and again from a fresh seed for
    // the harness's last check of each variant.
    auto make_inputs = [&](std::uint64_t seed) {
      const cudalabs::Tolerance unit = cudalabs::dot_tolerance(k);
      const auto [ea, eb] = matmul_detail::input_exponents(inputs, seed);
      a = matmul_detail::operand_values(inputs, a_count, seed, 1, ea);
      b = matmul_detail::operand_values(inputs, b_count, seed, 2, eb);
      tol = matmul_detail::scaled_tolerance(unit, ea, eb);
      d_a.upload(a);
      d_b.upload(b);
      ref.rows = matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3));
      if (cudalabs::evidence::keeps_references()) ref.exact = matmul_detail::reference_rows(a, b, n, k, ref.rows);
      ref.library = library_product(d_a.data(), d_b.data());
      if (any_fp16) {
        // The same values scaled into FP16's range (fp16_scales; for random,
        // A and B themselves), rounded on the host; the device's halves are
        // converted from those rounded floats, which FP16 holds exactly.
        const auto [ea16, eb16] = matmul_detail::input_exponents(inputs, seed, matmul_detail::fp16_scales);
        const auto a_half = matmul_detail::round_to_half(
            inputs == "random" ? a : matmul_detail::operand_values(inputs, a_count, seed, 1, ea16));
        const auto b_half = matmul_detail::round_to_half(
            inputs == "random" ? b : matmul_detail::operand_values(inputs, b_count, seed, 2, eb16));
        tol16 = matmul_detail::scaled_tolerance(unit, ea16, eb16);
        d_a16f.upload(a_half);
        d_b16f.upload(b_half);
        matmul_to_half(d_a16f.data(), d_a16.data(), static_cast<std::int64_t>(a_count), s.stream());
        matmul_to_half(d_b16f.data(), d_b16.data(), static_cast<std::int64_t>(b_count), s.stream());
        ref16.rows = ref.rows;
        if (cudalabs::evidence::keeps_references())
          ref16.exact = matmul_detail::reference_rows(a_half, b_half, n, k, ref16.rows);
        ref16.library = library_product(d_a16f.data(), d_b16f.data());
      }
    };
    make_inputs(s.seed());

    auto check_fp32 = [&](const std::vector<float>& c) { return matmul_detail::check_product(c, ref, n, tol); };
    const cudalabs::Work work{.bytes = 4.0 * (static_cast<double>(a_count) + static_cast<double>(b_count) +
                                              static_cast<double>(m) * n),
                              .flops = 2.0 * m * n * k};
    auto poison = [&](cudaStream_t st) { d_c.poison(st); };

    s.measure({.variant = "cublas",
               .size = point,
               .work = work,
               .run = [&](cudaStream_t st) { blas.sgemm(d_a.data(), d_b.data(), d_c.data(), m, n, k, st); },
               .check = [&] { return check_fp32(d_c.download()); },
               .poison = poison,
               .new_inputs = make_inputs,
               .ceiling = cudalabs::CeilingKind::baseline});

    // The operands' pointers are read at each run, never kept: the harness's
    // last check moves every buffer.
    auto ops = [&] { return MatmulOperands{d_a.data(), d_b.data(), d_a16.data(), d_b16.data(), m, n, k}; };
    for (const auto& v : variants) {
      if (!s.selected(v.name)) continue;
      s.measure({.variant = v.name,
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { v.launch(ops(), d_c.data(), st); },
                 .check = [&] { return matmul_detail::check_product(d_c.download(), v.fp16_inputs ? ref16 : ref, n,
                                                                   v.fp16_inputs ? tol16 : tol); },
                 .poison = poison,
                 .new_inputs = make_inputs,
                 .resources = v.resources ? std::optional(v.resources()) : std::nullopt,
                 .ceiling = cudalabs::CeilingKind::baseline});
    }
    if (extra) extra(s, MatmulProblem{point, m, n, k, a, b, check_fp32, make_inputs, work});

    s.note(cudalabs::to_string(point) + ": the cuBLAS row, fastest for this shape of cublasSgemm and the cuBLASLt "
           "heuristic's algorithms (each timed in this run), is " + blas.algorithm_of(m, n, k));
    if (ref.rows.size() < static_cast<std::size_t>(m))
      s.note(cudalabs::to_string(point) + ": all of C compared with cuBLAS; cuBLAS and every variant checked against "
             "the CPU on " + std::to_string(ref.rows.size()) + " of " + std::to_string(m) +
             " rows (drawn from the seed, first and last included)");
  }
}
