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
// A timed run's C (those the harness checks, and the one the timing leaves) is
// computed from inputs of that run's own and compared, whole, with cuBLAS's C
// of them (run_matmul_lab says why and what it costs).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "checked_rows.hpp"  // rows_to_check
#include "matmul_inputs.hpp"  // the inputs, drawn on the host or the device
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

// The tolerance of a product of inputs scaled by 2^ea and 2^eb.
inline cudalabs::Tolerance scaled_tolerance(cudalabs::Tolerance unit, int ea, int eb) {
  return {.abs = std::ldexp(unit.abs, ea + eb), .rel = unit.rel};
}

}  // namespace matmul_detail

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
// as matmul_draw_kernel rounds them (to nearest even).
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

// The two checks of a downloaded C (check_whole, the first, alone: a timed
// run's own inputs, run_matmul_lab says why). Each output is a dot product of length k
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
inline cudalabs::CheckResult check_whole(const std::vector<float>& c, const std::vector<float>& library,
                                         cudalabs::Tolerance tol) {
  const cudalabs::Tolerance vs_library{.abs = 2 * tol.abs / (1 - tol.rel), .rel = 2 * tol.rel / (1 - tol.rel)};
  cudalabs::CheckResult whole = cudalabs::check_close(c, library, vs_library);
  if (!whole.passed) whole.note = "C against cuBLAS's C of the same inputs";
  return whole;
}

inline cudalabs::CheckResult check_product(const std::vector<float>& c, const Reference& ref, int n,
                                           cudalabs::Tolerance tol) {
  cudalabs::CheckResult whole = check_whole(c, ref.library, tol);
  cudalabs::CheckResult rows = cudalabs::check_close(gather_rows(c, n, ref.rows), ref.exact, tol);
  if (!rows.passed)
    rows.note = "rows of C against the double CPU reference (" + std::to_string(ref.rows.size()) + " rows)";
  positions_in_c(rows, ref.rows, n);
  return cudalabs::both(std::move(whole), rows);
}

}  // namespace matmul_detail

// One operand drawn on the device (operand_value: operand_values' values, bit
// for bit) into `out`; with `out16`, each value rounded to FP16 (to nearest
// even, as round_to_half) into out16, and the rounded value as a float into
// `out`, for cuBLAS's reference of the FP16 variants.
__global__ void matmul_draw_kernel(float* __restrict__ out, __half* __restrict__ out16, std::int64_t count,
                                   matmul_detail::OperandDraw draw) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float v = matmul_detail::operand_value(draw, static_cast<std::uint64_t>(i));
  if (out16) {
    const __half h = __float2half_rn(v);
    out16[i] = h;
    out[i] = __half2float(h);
  } else {
    out[i] = v;
  }
}

namespace matmul_detail {

inline void draw_operand(float* out, __half* out16, std::int64_t count, OperandDraw draw, cudaStream_t stream) {
  if (count == 0) return;
  matmul_draw_kernel<<<static_cast<unsigned>(cudalabs::ceil_div<std::int64_t>(count, 256)), 256, 0, stream>>>(
      out, out16, count, draw);
  CUDALABS_CHECK_LAUNCH("matmul_draw_kernel");
}

// The device's draw must be the host's: the CPU reference is computed from the
// host's values. Checked wherever both exist (at each new seed, untimed), once
// the draw queued on `stream` has run: download() copies on the legacy stream,
// which does not wait for the harness's non-blocking one (graded runs on an
// H200 read A before the draw had written it).
inline void require_same_values(const cudalabs::DeviceBuffer<float>& device, const std::vector<float>& host,
                                const char* what, cudaStream_t stream) {
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> drawn = device.download();
  if (drawn.size() != host.size() || std::memcmp(drawn.data(), host.data(), host.size() * sizeof(float)) != 0)
    throw std::logic_error(std::string("the device's draw of ") + what + " differs from the host's (matmul_inputs.hpp)");
}

}  // namespace matmul_detail

// Runs the baseline and every selected variant at every size. `extra` (optional)
// is called once per size after the variants, for a lab's own rows.
//
// Every warm-up and timed run has inputs of its own (Measurement::timed_runs),
// drawn on the device from a seed the operating system gives at that run. On
// inputs that repeat, a launcher can keep its last C (by pointer, as the
// timed runs' buffers never move) and compute only part of the next one,
// copying the rest: every output right, half the work timed. On new values in
// every element, a kept C is of no use, and with seeds no process knows
// before the run (not timed_run_seed of --seed, which a launcher reads as
// well), no C can be computed ahead either. The draw is untimed: before each
// run's poison, on the stream, outside the events. On the device, not the
// host: at 4096³, random_floats of A and B (2 x 16M floats) took 251 to 322 ms
// on a 2-core host, and the upload of their 128 MB comes on top, for a
// tiled16 run of about 17 ms (8164 GFLOP/s on an H100, tools/grading.toml);
// the device writes them at its memory's rate, a fraction of a millisecond.
//
// The output of a timed run the harness checks is compared with cuBLAS's C of
// that run's inputs, the whole of C, computed when the check needs it; not
// with the CPU's rows, which would need the inputs drawn on the host and 64
// rows of double multiply-adds per check (465 ms at 4096³ on 2 cores): cuBLAS
// is itself held to the CPU's rows at every other check's inputs. The seed of
// the inputs is observed first in every check (evidence.hpp): a judge, which
// times nothing, reads the graded program's, draws the same inputs and
// computes its own cuBLAS's C of them. The harness writes it, as it writes the
// outputs: a kernel file does no file I/O (the import audit).
inline void run_matmul_lab(cudalabs::Session& s, const std::vector<MatmulVariant>& variants,
                           const std::function<void(cudalabs::Session&, const MatmulProblem&)>& extra = {}) {
  const cudalabs::Cublas blas;
  for (const auto& point : s.points()) {
    const int m = static_cast<int>(point.at("m")), n = static_cast<int>(point.at("n")), k = static_cast<int>(point.at("k"));
    const std::size_t a_count = static_cast<std::size_t>(m) * k, b_count = static_cast<std::size_t>(k) * n;
    const std::size_t c_count = static_cast<std::size_t>(m) * n;
    cudalabs::DeviceBuffer<float> d_a(a_count, "A"), d_b(b_count, "B"), d_c(c_count, "C");
    // cuBLAS's C of the inputs checked against: never in C, which a check
    // after the timing reads as the last run left it.
    cudalabs::DeviceBuffer<float> d_library(c_count, "cuBLAS's C");

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
    // The tolerance of inputs drawn from a seed, scaled with them (matmul_inputs_flag).
    auto tolerance_of = [&](std::uint64_t seed, bool fp16) {
      const auto [ea, eb] =
          matmul_detail::input_exponents(inputs, seed, fp16 ? matmul_detail::fp16_scales : matmul_detail::fp32_scales);
      return matmul_detail::scaled_tolerance(cudalabs::dot_tolerance(k), ea, eb);
    };
    // cuBLAS's C of two device operands, downloaded. The first call at a size
    // is where Cublas chooses its fastest algorithm for the shape: here,
    // before any measurement, never inside a traced or timed run. A graded
    // program makes the call and keeps no C (evidence::keeps_references):
    // not in host memory, and not on the device either, where a kernel could
    // read it through a pointer it was not given.
    auto library_product = [&](const float* da, const float* db) {
      blas.sgemm(da, db, d_library.data(), m, n, k, s.stream());
      if (!cudalabs::evidence::keeps_references()) d_library.poison(s.stream());
      CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
      return cudalabs::evidence::keeps_references() ? d_library.download() : std::vector<float>{};
    };
    // The device's operands from a seed (buffer 1: A, 2: B), and their FP16
    // forms: for random the same values, for large and tiny the same draw
    // scaled into FP16's range (fp16_scales). Enqueued on the stream.
    std::uint64_t drawn_seed = 0;  // the seed of the operands on the device now
    auto draw_inputs = [&](std::uint64_t seed) {
      const auto [ea, eb] = matmul_detail::input_exponents(inputs, seed);
      using matmul_detail::draw_operand, matmul_detail::operand_draw;
      const auto a_n = static_cast<std::int64_t>(a_count), b_n = static_cast<std::int64_t>(b_count);
      draw_operand(d_a.data(), nullptr, a_n, operand_draw(inputs, seed, 1, ea), s.stream());
      draw_operand(d_b.data(), nullptr, b_n, operand_draw(inputs, seed, 2, eb), s.stream());
      if (any_fp16) {
        const auto [ea16, eb16] = matmul_detail::input_exponents(inputs, seed, matmul_detail::fp16_scales);
        draw_operand(d_a16f.data(), d_a16.data(), a_n, operand_draw(inputs, seed, 1, ea16), s.stream());
        draw_operand(d_b16f.data(), d_b16.data(), b_n, operand_draw(inputs, seed, 2, eb16), s.stream());
      }
      drawn_seed = seed;
    };
    // Inputs from a seed (buffer 1: A, 2: B, 3: the sampled rows) on both
    // sides, and every reference of them: once now, and again from a fresh
    // seed for the harness's last check of each variant.
    std::uint64_t measured_seed = 0;  // the seed of a, b, ref and ref16
    auto make_inputs = [&](std::uint64_t seed) {
      const auto [ea, eb] = matmul_detail::input_exponents(inputs, seed);
      a = matmul_detail::operand_values(inputs, a_count, seed, 1, ea);
      b = matmul_detail::operand_values(inputs, b_count, seed, 2, eb);
      draw_inputs(seed);
      matmul_detail::require_same_values(d_a, a, "A", s.stream());
      matmul_detail::require_same_values(d_b, b, "B", s.stream());
      ref.rows = matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3));
      if (cudalabs::evidence::keeps_references()) ref.exact = matmul_detail::reference_rows(a, b, n, k, ref.rows);
      ref.library = library_product(d_a.data(), d_b.data());
      if (any_fp16) {
        // Rounded on the host as the device rounds them (matmul_draw_kernel).
        const auto [ea16, eb16] = matmul_detail::input_exponents(inputs, seed, matmul_detail::fp16_scales);
        const auto a_half = matmul_detail::round_to_half(
            inputs == "random" ? a : matmul_detail::operand_values(inputs, a_count, seed, 1, ea16));
        const auto b_half = matmul_detail::round_to_half(
            inputs == "random" ? b : matmul_detail::operand_values(inputs, b_count, seed, 2, eb16));
        matmul_detail::require_same_values(d_a16f, a_half, "A (fp16)", s.stream());
        matmul_detail::require_same_values(d_b16f, b_half, "B (fp16)", s.stream());
        ref16.rows = ref.rows;
        if (cudalabs::evidence::keeps_references())
          ref16.exact = matmul_detail::reference_rows(a_half, b_half, n, k, ref16.rows);
        ref16.library = library_product(d_a16f.data(), d_b16f.data());
      }
      measured_seed = seed;
    };
    make_inputs(s.seed());
    // After a timing that failed (no fresh inputs after it), the next variant
    // starts from the measured inputs again.
    auto measured_inputs = [&] {
      if (drawn_seed != measured_seed) draw_inputs(measured_seed);
    };

    // cuBLAS's C of a timed run's inputs, made once per seed and type.
    std::vector<float> run_library;
    std::uint64_t run_library_seed = 0;
    bool run_library_fp16 = false, have_run_library = false;
    // A variant's C against the references of the inputs it was computed from.
    auto check_c = [&](bool fp16) -> cudalabs::CheckResult {
      std::uint64_t seed_of_c[1] = {drawn_seed};
      if (std::string missing = cudalabs::observe_in_place(std::span<std::uint64_t>(seed_of_c)); !missing.empty())
        return cudalabs::missing_output(c_count, missing);
      const std::uint64_t seed = seed_of_c[0];
      const std::vector<float> c = d_c.download();
      if (seed == measured_seed)
        return matmul_detail::check_product(c, fp16 ? ref16 : ref, n, tolerance_of(seed, fp16));
      if (drawn_seed != seed) draw_inputs(seed);  // a judge: the graded program's run's inputs
      if (!have_run_library || run_library_seed != seed || run_library_fp16 != fp16) {
        run_library = fp16 ? library_product(d_a16f.data(), d_b16f.data()) : library_product(d_a.data(), d_b.data());
        run_library_seed = seed;
        run_library_fp16 = fp16;
        have_run_library = true;
      }
      return matmul_detail::check_whole(c, run_library, tolerance_of(seed, fp16));
    };
    cudalabs::Measurement::TimedRuns inputs_of_their_own;
    inputs_of_their_own.inputs = [&](int) { draw_inputs(cudalabs::seed_from_os()); };

    const cudalabs::Work work{.bytes = 4.0 * (static_cast<double>(a_count) + static_cast<double>(b_count) +
                                              static_cast<double>(c_count)),
                              .flops = 2.0 * m * n * k};
    auto poison = [&](cudaStream_t st) { d_c.poison(st); };

    s.measure({.variant = "cublas",
               .size = point,
               .work = work,
               .run = [&](cudaStream_t st) { blas.sgemm(d_a.data(), d_b.data(), d_c.data(), m, n, k, st); },
               .check = [&] { return check_c(false); },
               .poison = poison,
               .new_inputs = make_inputs,
               .timed_runs = inputs_of_their_own,
               .ceiling = cudalabs::CeilingKind::baseline});

    // The operands' pointers are read at each run, never kept: the harness's
    // last check moves every buffer.
    auto ops = [&] { return MatmulOperands{d_a.data(), d_b.data(), d_a16.data(), d_b16.data(), m, n, k}; };
    for (const auto& v : variants) {
      if (!s.selected(v.name)) continue;
      measured_inputs();
      s.measure({.variant = v.name,
                 .size = point,
                 .work = work,
                 .run = [&](cudaStream_t st) { v.launch(ops(), d_c.data(), st); },
                 .check = [&] { return check_c(v.fp16_inputs); },
                 .poison = poison,
                 .new_inputs = make_inputs,
                 .timed_runs = inputs_of_their_own,
                 .resources = v.resources ? std::optional(v.resources()) : std::nullopt,
                 .ceiling = cudalabs::CeilingKind::baseline});
    }
    measured_inputs();
    auto check_fp32 = [&](const std::vector<float>& c) {
      return matmul_detail::check_product(c, ref, n, tolerance_of(measured_seed, false));
    };
    if (extra) extra(s, MatmulProblem{point, m, n, k, a, b, check_fp32, make_inputs, work});

    s.note(cudalabs::to_string(point) + ": the cuBLAS row, fastest for this shape of cublasSgemm and the cuBLASLt "
           "heuristic's algorithms (each timed in this run), is " + blas.algorithm_of(m, n, k));
    if (ref.rows.size() < static_cast<std::size_t>(m))
      s.note(cudalabs::to_string(point) + ": all of C compared with cuBLAS; cuBLAS and every variant checked against "
             "the CPU on " + std::to_string(ref.rows.size()) + " of " + std::to_string(m) +
             " rows (drawn from the seed, first and last included)");
  }
}
