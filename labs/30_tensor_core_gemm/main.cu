// Lab 30 — tensor cores up to Hopper: a half-precision GEMM ladder to cuBLAS.
//
// C[m×n] = A[m×k] · Bᵀ with FP16 or BF16 inputs (--dtype), FP32 accumulation
// and an FP32 C; A stored [m×k], B stored [n×k] (a linear layer's weight
// matrix), any m, n, k. One idea per step, each its own kernel file, all
// measured against cuBLAS in the same run:
//
//   cublas             the baseline: cuBLASLt's heuristic algorithms and
//                      cublasGemmEx timed for the shape, the fastest kept
//   wmma               the WMMA API, 16×16×16 fragments, 64×64 block tile  wmma.cuh
//   mma_ldmatrix       mma.sync.m16n8k16 + ldmatrix, 128×256 tile, 8 warps of
//                      64×64, register double buffering, padded rows  mma_ldmatrix.cuh
//   cp_async_pipeline  + cp.async, 3 stages of 64-wide slices, XOR-swizzled
//                      rows, same tile and warps                  cp_async_pipeline.cuh
//   wgmma_tma          Hopper: TMA + wgmma.m64n256k16, mbarriers, a producer
//                      and two consumer warpgroups, 4 stages, persistent
//                      blocks, split-K on few tiles, stream-K for  wgmma_tma.cuh
//                      a last round that would idle SMs; for m <= 128
//                      128×N or 64×N tiles of Cᵀ (N = 16 .. 128 >= m)
//   tf32_mma           side variant (--dtype tf32): FP32 inputs, step 2's
//                      kernel with mma.sync.m16n8k8.tf32          tf32_mma.cuh
//
// Shared by the steps: gemm_tile.cuh (tile order, guarded edge loads and
// stores). Steps 1-3 need compute capability 8.0, step 4 exactly 9.0 and
// sm_90a code (kernels_hopper.cu); a variant the GPU cannot run is skipped
// with a note, not failed.
//
// Checks, for every variant at every size: the whole of C against cuBLAS's C
// of the same inputs in the same run, and rows of C (all of them up to
// m·n·k = 2^31, else 64 drawn from the seed) against the CPU in double on
// the inputs rounded to the input type first (labs/shared/matmul_lab.cuh).
// --dtype tf32 --inputs full_fp32 gives the kernel FP32 values with all 24
// bits, which it must round to TF32 itself: both checks multiply the rounded
// values (tf32_rna), so a kernel that lets the tensor core truncate them fails.
//
// Run: make run LAB=30    (4096³, 8192³ and decode-like m = 16 … 128)
//      build/labs/30_tensor_core_gemm/30_tensor_core_gemm --size 8192 --dtype bf16
//      build/labs/30_tensor_core_gemm/30_tensor_core_gemm --dtype tf32 --size 4096
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "matmul_lab.cuh"
#include "kernels.hpp"

namespace {

using cudalabs::GemmInputs;

// A step of the ladder for inputs of type T (__half, __nv_bfloat16, or float
// for TF32).
template <typename T>
struct Step {
  std::string name;
  std::function<void(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t)> launch;
  std::function<cudalabs::KernelResources()> resources;
  std::string unavailable;  // why this GPU cannot run it, "" when it can
};

const std::vector<std::string> half_steps = {"wmma", "mma_ldmatrix", "cp_async_pipeline", "wgmma_tma"};
const std::vector<std::string> tf32_steps = {"tf32_mma"};

// The tensor cores' FP32 accumulation. A product of two FP16, BF16 or TF32
// values is exact in FP32 (at most 11 + 11 significant bits of 24), so, as in
// FP32, all the error is in the sums. But a tensor core adds the products of
// one k-step and the accumulator in one fused adder that aligns them to the
// largest exponent and truncates (Fasi et al., "Numerical behavior of NVIDIA
// tensor cores", PeerJ CS 2021): up to one unit in the last place per k-step
// where rounding gives half, in a direction that need not alternate. We allow
// 4× lab 05's FP32 dot_tolerance: abs = 8·2^-24·k (4e-3 at k = 8192, where
// outputs have a standard deviation of sqrt(k)/3 = 30), rel = 4e-5. A
// product dropped or taken twice moves an output by |a·b| (0.25 on average
// for inputs in [-1, 1)); a lost k-tail of j elements by ~sqrt(j)/3.
cudalabs::Tolerance tensor_core_tolerance(int k) {
  const cudalabs::Tolerance fp32 = cudalabs::dot_tolerance(k);
  return {.abs = 4 * fp32.abs, .rel = 4 * fp32.rel};
}

// --inputs large and tiny (matmul_lab.cuh): FP16 operands scaled within
// FP16's range, every product past it (an FP16 accumulator overflows to Inf,
// or loses every product below 2^-24); BF16 and TF32 operands, which have
// FP32's exponent range, scaled as the FP32 labs' are (beyond FP16's range).
// Scaling by a power of two leaves the tensor cores' aligned, truncated sums
// the same relative to C, so the tolerance scales by 2^(ea+eb) too.
template <typename T>
constexpr matmul_detail::InputScales input_scales_of() {
  return std::is_same_v<T, __half> ? matmul_detail::fp16_scales : matmul_detail::fp32_scales;
}

// Host values rounded as the device types hold them: FP16 and BF16 to nearest
// even; TF32 to nearest even at mantissa bit 13 (no overflow: inputs below
// 2^57). TF32 inputs are drawn representable, so that cuBLAS (which may
// truncate), the kernel (cvt.rna) and the CPU all multiply the same values;
// --inputs full_fp32 keeps all 24 bits instead (tf32_rna, below).
template <typename T>
T to_input(float x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(x);
  } else {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    return std::bit_cast<float>((bits + 0xFFFu + ((bits >> 13) & 1u)) & ~0x1FFFu);
  }
}
// x rounded to TF32 as cvt.rna.tf32.f32 rounds it: to nearest, ties away from
// zero (half a step added to the magnitude, a carry running into the
// exponent; no overflow for |x| below 2^127), the 13 bits below TF32's 10
// cleared.
float tf32_rna(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  return std::bit_cast<float>((bits + 0x1000u) & ~0x1FFFu);
}

// --inputs full_fp32 (--dtype tf32 only): random's values, A and B in [-1, 1)
// as multiples of 2^-23, NOT rounded to TF32 on the host, so the kernel gets
// all 24 bits and must round them itself (cvt.rna, tf32_mma.cuh); the CPU
// rows and the whole-C reference multiply the rounded values (tf32_rna). A
// kernel that skips the rounding hands the FP32 bits to mma.sync, which reads
// the top 19 and so truncates. Per operand that moves the value by d = 0 or
// one TF32 step (2^(e-10) in the binade [2^e, 2^(e+1))), each about half the
// time; for x uniform in [-1, 1), E[step²] = Σ_j 2^-(j+1)·2^(-2j-22) =
// 2^-23·8/7, so E[d²] = 2^-24·8/7, and a product's error d_a·b + a·d_b has
// variance 2·E[d²]·E[b²] = 2^-24·16/21: 2.1e-4 per product, 2.1e-4·sqrt(k)
// over k, a random walk (the signs of the products are random). At k = 8192
// that is a standard deviation of 0.019 against tensor_core_tolerance's
// 3.9e-3 + 4e-5·|C| (|C| ~ 30: 5.1e-3); at k = 100, 2.1e-3 against
// 4.8e-5 + 4e-5·|C| (|C| ~ 3: 1.8e-4): most outputs fail, at any k > 1.
//
// cuBLAS's TF32 kernels may round as cvt.rna does, to nearest even, or
// truncate: NVIDIA documents none of it. So the whole-C reference is cuBLAS's
// C of the rounded values (which every conversion leaves as they are), and the
// cuBLAS row itself, which runs on the unrounded ones as the variants do, is
// allowed the truncation's error on top of the tolerance: each product's
// difference is at most M = 2^-9 (|a|, |b| < 1, a step at most 2^-10 of the
// value), with the variance σ² = 2^-24·16/21 above, so by Bernstein's
// inequality a sum of k of them exceeds t = x·M/3 + sqrt((x·M/3)² + 2x·k·σ²)
// with probability at most 2·e^-x: x = 40 gives 8.5e-18 per output (2.3e-9 over
// the 2^28 outputs of 16384²). The bound is the smaller of t and the worst
// case k·M: 2.0e-3 at k = 1, 0.031 at k = 16, 0.092 at k = 1000, 0.20 at 8192.
double tf32_truncation_bound(int k) {
  const double x = 40, max_term = std::ldexp(1.0, -9), variance = std::ldexp(16.0 / 21.0, -24);
  const double a = x * max_term / 3;
  return std::min(k * max_term, a + std::sqrt(a * a + 2 * x * k * variance));
}

// Lab 30's --inputs: the matmul labs' kinds (matmul_inputs_flag) and full_fp32.
cudalabs::ExtraFlag tensor_core_inputs_flag() {
  cudalabs::ExtraFlag flag = matmul_inputs_flag();
  flag.choices.push_back("full_fp32");
  flag.help += "; full_fp32 (--dtype tf32 only): random's values with all 24 bits, not rounded to TF32 on the "
               "host (the kernel must round them, cvt.rna), checked against the product of the rounded values";
  return flag;
}

template <typename T>
float to_float(T x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(x);
  else
    return x;
}

template <typename T>
constexpr GemmInputs inputs_of() {
  return std::is_same_v<T, __half> ? GemmInputs::fp16 : std::is_same_v<T, __nv_bfloat16> ? GemmInputs::bf16 : GemmInputs::tf32;
}
template <typename T>
constexpr cudalabs::Peak peak_of() {
  return std::is_same_v<T, __half>          ? cudalabs::Peak::fp16_tensor
         : std::is_same_v<T, __nv_bfloat16> ? cudalabs::Peak::bf16_tensor
                                            : cudalabs::Peak::tf32_tensor;
}

// The steps for T on this GPU, each with the reason it cannot run here, if any.
template <typename T>
std::vector<Step<T>> steps_for(const cudalabs::DeviceInfo& dev) {
  const std::string no_mma = dev.cc_major >= 8 ? ""
                                               : "needs compute capability 8.0 (mma.sync for BF16 and TF32, cp.async); "
                                                 "this is " + dev.name + ", compute capability " + dev.cc();
  if constexpr (std::is_same_v<T, float>) {
    return {{"tf32_mma", lab30::tf32_mma, lab30::tf32_mma_resources, no_mma}};
  } else {
    constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
    using Launcher = void (*)(const T*, const T*, float*, int, int, int, cudaStream_t);
    return {{"wmma", static_cast<Launcher>(lab30::wmma), [] { return lab30::wmma_resources(bf16); }, no_mma},
            {"mma_ldmatrix", static_cast<Launcher>(lab30::mma_ldmatrix),
             [] { return lab30::mma_ldmatrix_resources(bf16); }, no_mma},
            {"cp_async_pipeline", static_cast<Launcher>(lab30::cp_async_pipeline),
             [] { return lab30::cp_async_pipeline_resources(bf16); }, no_mma},
            {"wgmma_tma", static_cast<Launcher>(lab30::wgmma_tma), [] { return lab30::wgmma_tma_resources(bf16); },
             lab30::wgmma_tma_unavailable()}};
  }
}

// Transposes a row-major [rows × cols] matrix: B [n×k] into the [k×n] that
// the shared CPU reference (cudalabs::ref::matmul) multiplies.
std::vector<float> transposed(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> t(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      t[static_cast<std::size_t>(c) * rows + r] = x[static_cast<std::size_t>(r) * cols + c];
  return t;
}

template <typename T>
void run_gemm_lab(cudalabs::Session& s) {
  const std::vector<Step<T>> steps = steps_for<T>(s.device());
  std::set<std::string> skipped;  // one note per variant this GPU cannot run
  bool any_runs = false;
  for (const auto& step : steps) {
    if (!s.selected(step.name)) continue;
    if (step.unavailable.empty())
      any_runs = true;
    else
      skipped.insert(step.name + " skipped: " + step.unavailable + ".");
  }
  if (!any_runs) {
    std::string why;
    for (const auto& line : skipped) why += "\n  " + line;
    throw cudalabs::NoDeviceError("no selected variant can run on this GPU:" + why);
  }

  const GemmInputs inputs = inputs_of<T>();
  const cudalabs::Cublas blas;
  for (const auto& point : s.points()) {
    const int m = static_cast<int>(point.at("m")), n = static_cast<int>(point.at("n")), k = static_cast<int>(point.at("k"));
    const std::size_t a_count = static_cast<std::size_t>(m) * k, b_count = static_cast<std::size_t>(n) * k;
    cudalabs::DeviceBuffer<T> d_a(a_count, "A"), d_b(b_count, "B");
    cudalabs::DeviceBuffer<float> d_c(static_cast<std::size_t>(m) * n, "C");

    matmul_detail::Reference ref;
    const std::string kind = s.options().text("inputs");
    // full_fp32 draws random's values and leaves them unrounded (tf32_rna's comment).
    const bool unrounded = kind == "full_fp32";
    const std::string values = unrounded ? "random" : kind;
    cudalabs::Tolerance tol = tensor_core_tolerance(k);  // scaled with each new A and B (--inputs)
    // The cuBLAS row's: tol, plus the truncation bound where its inputs are unrounded.
    cudalabs::Tolerance library_tol = tol;
    // Inputs from a seed (buffer 1: A, 2: B, 3: the sampled rows) in [-1, 1),
    // times 2^ea and 2^eb for --inputs large and tiny (input_scales_of<T>),
    // rounded to T (full_fp32: the device's copy left unrounded); the CPU
    // reference of the rounded values; cuBLAS's C of them. The first cuBLAS
    // call at a size chooses its algorithm: here, never inside a traced or
    // timed run.
    auto make_inputs = [&](std::uint64_t seed) {
      const auto [ea, eb] = matmul_detail::input_exponents(values, seed, input_scales_of<T>());
      std::vector<float> a = matmul_detail::operand_values(values, a_count, seed, 1, ea);
      std::vector<float> b = matmul_detail::operand_values(values, b_count, seed, 2, eb);
      tol = matmul_detail::scaled_tolerance(tensor_core_tolerance(k), ea, eb);
      library_tol = tol;
      // What the device gets: the values rounded to T, or for full_fp32 as
      // drawn; a and b become what the references multiply (the rounded values).
      std::vector<T> a_t(a_count), b_t(b_count);
      auto round_inputs = [&](std::vector<float>& x, std::vector<T>& x_t) {
        for (std::size_t i = 0; i < x.size(); ++i) {
          if constexpr (std::is_same_v<T, float>) {
            if (unrounded) {
              x_t[i] = x[i];
              x[i] = tf32_rna(x[i]);
              continue;
            }
          }
          x[i] = to_float(x_t[i] = to_input<T>(x[i]));
        }
      };
      round_inputs(a, a_t);
      round_inputs(b, b_t);
      if (unrounded) library_tol.abs += tf32_truncation_bound(k);
      ref.rows = matmul_detail::rows_to_check(m, n, k, cudalabs::mix_seed(seed, 3));
      ref.exact = matmul_detail::reference_rows(a, transposed(b, n, k), n, k, ref.rows);
      // cuBLAS's C of the values the references multiply: for full_fp32 the
      // rounded ones, on the device for this product only (they have none of
      // the bits a conversion to TF32 drops, so cuBLAS multiplies them however
      // it converts), then the unrounded ones the variants get.
      if constexpr (std::is_same_v<T, float>) {
        d_a.upload(a);  // a_t's values, except for full_fp32
        d_b.upload(b);
      } else {
        d_a.upload(a_t);
        d_b.upload(b_t);
      }
      blas.gemm(inputs, d_a.data(), d_b.data(), d_c.data(), m, n, k, s.stream(), true);
      CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
      ref.library = d_c.download();
      if (unrounded) {
        d_a.upload(a_t);
        d_b.upload(b_t);
      }
    };
    make_inputs(s.seed());

    auto check = [&] { return matmul_detail::check_product(d_c.download(), ref, n, tol); };
    auto check_library = [&] { return matmul_detail::check_product(d_c.download(), ref, n, library_tol); };
    const cudalabs::Work work{.bytes = static_cast<double>(sizeof(T)) * (static_cast<double>(a_count) + static_cast<double>(b_count)) +
                                       4.0 * m * n,
                              .flops = 2.0 * m * n * k};
    auto poison = [&](cudaStream_t st) { d_c.poison(st); };
    // The record's size is m, n, k; the input type goes with it here.
    const std::map<std::string, double> extra = {{"bf16", inputs == GemmInputs::bf16 ? 1 : 0},
                                                 {"tf32", inputs == GemmInputs::tf32 ? 1 : 0}};

    // What every row shares; each sets its name, run and resources.
    cudalabs::Measurement row{.size = point,
                              .work = work,
                              .check = check,
                              .poison = poison,
                              .new_inputs = make_inputs,
                              .peak = peak_of<T>(),
                              .ceiling = cudalabs::CeilingKind::baseline};
    row.extra = extra;

    row.variant = "cublas";
    row.run = [&](cudaStream_t st) { blas.gemm(inputs, d_a.data(), d_b.data(), d_c.data(), m, n, k, st, true); };
    row.check = check_library;
    s.measure(row);
    row.check = check;
    for (const auto& step : steps) {
      if (!s.selected(step.name) || !step.unavailable.empty()) continue;
      row.variant = step.name;
      row.run = [&](cudaStream_t st) { step.launch(d_a.data(), d_b.data(), d_c.data(), m, n, k, st); };
      row.resources = step.resources();
      s.measure(row);
    }
    s.note(cudalabs::to_string(point) + ": the cuBLAS row (" + cudalabs::to_string(inputs) + " inputs) is " +
           blas.algorithm_of(inputs, m, n, k, true));
    if (ref.rows.size() < static_cast<std::size_t>(m))
      s.note(cudalabs::to_string(point) + ": all of C compared with cuBLAS; cuBLAS and every variant checked against "
             "the CPU on " + std::to_string(ref.rows.size()) + " of " + std::to_string(m) +
             " rows (drawn from the seed, first and last included)");
  }
  for (const auto& line : skipped) s.note(line);
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t max_dim = 16384;  // A, B (FP32 for TF32) and C of 16384²: 3 GiB
  const cudalabs::LabSpec spec{
      .name = "30_tensor_core_gemm",
      .title = "tensor cores up to Hopper: an FP16/BF16 GEMM ladder from WMMA to wgmma + TMA, against cuBLAS",
      .about =
          "C = A·Bᵀ (A [m×k], B [n×k], row-major) with FP16 or BF16 inputs (--dtype), FP32 accumulation and FP32 C:\n"
          "WMMA, mma.sync + ldmatrix, a cp.async pipeline with swizzled shared memory, and Hopper's TMA + wgmma\n"
          "with warp specialisation, each as GFLOP/s and × cuBLAS (cuBLASLt's fastest algorithm for the shape,\n"
          "same inputs, same run). --dtype tf32 runs the TF32 side variant on FP32 inputs against cuBLAS TF32.\n"
          "Any m, n, k. Default sizes: 4096³, 8192³ and decode-like m = 16, 64, 128 with n = k = 8192 or 4096.\n"
          "Steps 1-3 need compute capability 8.0; wgmma_tma needs 9.0 and a build with 9.0 among the\n"
          "architectures (it is skipped, not failed, elsewhere).",
      .sizes = {{.name = "m", .help = "rows of A and C (tokens, in a linear layer)",
                 .full = {4096, 8192, 16, 64, 128, 16, 128}, .quick = {1, 67, 129, 255}, .max = max_dim},
                {.name = "n", .help = "rows of B, columns of C (output features)",
                 .full = {4096, 8192, 8192, 8192, 8192, 4096, 4096}, .quick = {1, 33, 257, 130}, .max = max_dim},
                {.name = "k", .help = "columns of A and B, the contraction (input features)",
                 .full = {4096, 8192, 8192, 8192, 8192, 4096, 4096}, .quick = {1, 100, 65, 264}, .max = max_dim}},
      .variants = {{"cublas", "cuBLAS (cuBLASLt's heuristic algorithms and cublasGemmEx, the fastest for the shape), "
                              "in the --dtype: the baseline", true},
                   {"wmma", "WMMA API 16×16×16, 64×64 block tile, 4 warps of 32×32"},
                   {"mma_ldmatrix", "mma.sync m16n8k16 + ldmatrix, 128×256 tile, 8 warps of 64×64, register double buffer"},
                   {"cp_async_pipeline", "+ cp.async 3-stage pipeline (k slices of 64), XOR-swizzled shared memory"},
                   {"wgmma_tma", "Hopper: TMA + wgmma m64n256k16, mbarriers, producer + 2 consumer warpgroups, persistent, pairs of "
                                 "CTAs sharing B by TMA multicast, split-K on few tiles, stream-K last round; m <= 128: 128×N or 64×N tiles of Cᵀ (sm_90a)"},
                   {"tf32_mma", "--dtype tf32: FP32 inputs, mma_ldmatrix's kernel with mma.sync m16n8k8 TF32"}},
      .flags = {{.name = "dtype",
                 .help = "input type: fp16 or bf16 (the ladder), or tf32 (FP32 inputs: the tf32_mma side variant)",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "fp16",
                 .choices = {"fp16", "bf16", "tf32"}},
                tensor_core_inputs_flag()}};

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const std::string dtype = s.options().text("dtype");
    if (dtype.find(',') != std::string::npos)
      throw cudalabs::UsageError("--dtype " + dtype + ": one input type per run (the variants of a run share one "
                                 "cuBLAS baseline). Example: --dtype bf16");
    // A variant named with --variant must belong to the --dtype.
    const bool tf32 = dtype == "tf32";
    for (const auto& v : s.options().variants) {
      const auto& own = tf32 ? tf32_steps : half_steps;
      if (std::find(own.begin(), own.end(), v) == own.end())
        throw cudalabs::UsageError("--variant " + v + " does not run with --dtype " + dtype + ": " +
                                   (tf32 ? "it multiplies FP16/BF16 inputs. Example: --dtype fp16 --variant " + v
                                         : "it multiplies FP32 inputs as TF32. Example: --dtype tf32 --variant " + v));
    }
    if (!tf32 && s.options().text("inputs") == "full_fp32")
      throw cudalabs::UsageError("--inputs full_fp32 runs with --dtype tf32 only: FP16 and BF16 inputs are rounded "
                                 "to their type on the host, whatever the kind. Example: --dtype tf32 --inputs full_fp32");
    if (tf32)
      run_gemm_lab<float>(s);
    else if (dtype == "bf16")
      run_gemm_lab<__nv_bfloat16>(s);
    else
      run_gemm_lab<__half>(s);
  });
}
