#pragma once
// The course's side of labs 16 and 17: the inputs, what each kernel's output
// is compared with and how closely, the conversion of the inputs to 16 bits,
// and which head dimensions each kernel accepts, for labs 16, 17 and 31. Course
// code in labs/shared/: main.cu includes it, never a kernel file.
//
// References. Small problems: cudalabs::ref::attention (double, on every CPU
// core). Large ones (more than 2048²·128 multiply-adds per precision, e.g. one
// head of N > 2048 at d = 64): lab 15's cuBLAS pipeline — FP32 GEMMs (no TF32),
// an independent implementation, with errors around 1e-7 — because the CPU
// would take seconds. Lab 15's own baseline has no causal mask; as a reference
// under --causal it sets the masked scores to -inf between its two products.
//
// The tensor-core kernels read Q, K, V rounded to FP16 or BF16. Their reference
// is computed from those rounded values (widened back to float): the input
// rounding is a property of the data type, not an error of the kernel, and
// leaving it in would hide the kernel's own error under a 10x larger one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/checker.hpp>
#include <cudalabs/cli.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/memory.hpp>
#include <cudalabs/random.hpp>
#include <cudalabs/reference.hpp>

#include "attention_baseline.cuh"
#include "input_kinds.hpp"
#include "../16_flash_attention/attention_shape.hpp"

// FP32 kernels. O is a softmax-weighted average of rows of V, so an error in
// the weights moves O by at most (relative weight error) · 2·max|V|. The
// weights' error is the scores' error: a d-term FP32 dot product, at worst
// d·eps·max|q·k|/sqrt(d) = 2.7e-6 at d = 128 with |q|, |k| <= 2 (~1e-7
// typically), plus 2 ulp of exp2f: a worst case of ~5e-6 with |V| <= 1. A float
// simulation of the kernels' order of operations gave at most 9e-7 (N = 1 ..
// 16384, d = 20 .. 128, causal or not, split or not). A wrong index or a missed
// rescale moves O by ~1e-2.
inline constexpr cudalabs::Tolerance fp32_tolerance{.abs = 5e-6, .rel = 1e-5};

// Tensor-core kernels: products and sums are FP32, but P is rounded to the
// 16-bit type before P·V. Each weight then carries a relative error <= u (unit
// roundoff: 2^-11 for FP16, 2^-8 for BF16), so |O - O_exact| <= u·max|V|: the
// error of a weighted average whose weights are each off by at most u. We allow
// 2u (the tensor cores' FP32 accumulation and exp2f add far less than u):
// FP16 1e-3, BF16 8e-3 with |V| <= 1. Relative: the same numbers.
inline cudalabs::Tolerance tensor_core_tolerance(bool bf16) {
  const double two_u = bf16 ? 2.0 / 256 : 2.0 / 2048;
  return {.abs = two_u, .rel = two_u};
}

// Inputs: Q, K in [-2, 2) and V in [-1, 1). The scores q·k/sqrt(d) then spread
// with a standard deviation of ~1.3, so softmax weights differ by factors up to
// e^8 within a row and the running max really moves from tile to tile; inputs
// in [-1, 1) would give nearly uniform weights, which hide a missing rescale.
inline constexpr float qk_range = 2.0f, v_range = 1.0f;

// --inputs large: Q and K are those values times 8, a power of two, so every
// score and every rounding error in one is exactly 64 times the random inputs'.
// Scores then spread with a standard deviation of ~85: a row's max is ~200 and
// more, and 2^(s·log2 e) overflows float beyond s = 88.7, so a kernel that
// exponentiates before subtracting the running max gets inf/inf = NaN. V stays
// in [-1, 1).
inline constexpr float large_qk_factor = 8.0f;

// --inputs positive_v: Q and K as random, V in [0, 1). The tensor-core kernels
// keep O unnormalised, Σ_j p_j·v_j with p_j <= 1, and divide by l = Σ_j p_j at
// the end. An accumulator kept in FP16 (mma or wgmma with f16 accumulators, a
// wrong kernel) is rounded to 11 bits after every 16 keys, relative to what it
// holds. With V of both signs it holds a sum that cancels, far below l, and
// the error mostly stays within the 2u above; with V of one sign it holds about
// l/2, and the error grows with the keys. A NumPy model of the kernels' order of
// operations (64- and 128-key tiles, d = 64 and 128, seq 1024 and 2048, 10
// seeds: 80 cases), as a fraction of the tolerance at the worst element: the
// FP16 accumulator 0.38-1.35 with V in [-1, 1) (above 1 in 6 of the 80: a
// failure only now and then), and with V in [0, 1) 1.39-1.75 at seq 1024,
// 2.02-2.72 at seq 2048 (all 80 above 1); the FP32 accumulator at most 0.04
// either way. The tolerances stay: u·max|V| bounds a correct kernel's error
// for any V in [-1, 1].

// The --inputs flag of the attention labs (16, 17, 31), the kinds they accept,
// and the note a run on a kind other than random ends with.
inline cudalabs::ExtraFlag attention_inputs_flag() {
  return inputs_flag("random: Q, K in [-2, 2), V in [-1, 1); large: Q, K times 8, scores at which exp\n"
                     "                      overflows unless the running max is subtracted; positive_v: V in [0, 1), so\n"
                     "                      the sums of P·V do not cancel and an FP16 accumulator's rounding shows");
}
inline InputKind attention_input_kind(const cudalabs::Options& o) {
  return input_kind(o, {"random", "large", "positive_v"}, "Masked keys: --causal.");
}
inline void note_attention_inputs(cudalabs::Session& s, InputKind kind) {
  if (kind == InputKind::large) s.note("--inputs large: Q, K times 8; every tolerance 6.3e-4 wider (flash_check.cuh).");
  if (kind == InputKind::positive_v)
    s.note("--inputs positive_v: V in [0, 1); the same tolerances, which an FP16 accumulator of P·V exceeds.");
}

// Q, K, V of n elements each from buffers first, first + 1, first + 2 of a
// seed: Q and K times large_qk_factor for `large`, V in [0, 1) for `positive_v`.
struct HostInputs {
  std::vector<float> q, k, v;
};
inline HostInputs draw_inputs(std::size_t n, std::uint64_t seed, InputKind kind, std::uint64_t first = 1) {
  const float qk_factor = kind == InputKind::large ? large_qk_factor : 1.0f;
  const float v_low = kind == InputKind::positive_v ? 0.0f : -v_range;
  HostInputs in{.q = cudalabs::random_floats(n, cudalabs::mix_seed(seed, first), -qk_range, qk_range),
                .k = cudalabs::random_floats(n, cudalabs::mix_seed(seed, first + 1), -qk_range, qk_range),
                .v = cudalabs::random_floats(n, cudalabs::mix_seed(seed, first + 2), v_low, v_range)};
  for (float& x : in.q) x *= qk_factor;
  for (float& x : in.k) x *= qk_factor;
  return in;
}

// A tolerance for the inputs drawn, large or not. Whatever the weights, a
// score error δs_j moves weight j by P_j·(δs_j - Σ_k P_k·δs_k), so O by at
// most 2·max|δs|·max|V|: the output's error grows as the scores' errors do,
// 64-fold. All of fp32_tolerance but exp2f's 2 ulp (~5e-7) is score error, so
// 64 × 5e-6 = 3.2e-4 bounds an FP32 kernel's error; the tensor-core kernels'
// 2u (P rounded to 16 bits) does not grow, their scores (FP32 sums of exact
// products) err as the FP32 kernel's do: 3.2e-4 more. Large problems are
// checked against lab 15's FP32 pipeline, whose scores err just as much, so
// the growth is counted twice, once for the kernel, once for the reference
// (margin when the reference is the CPU's): 6.3e-4 more in all. A float
// simulation of flash_fp32 differed by at most 7.6e-5 from the double
// reference and 1.3e-4 from a float simulation of the pipeline (N = 1000 and
// 3001, d = 64 and 128, 6 seeds). A wrong key or a missed rescale moves O by
// ~|V| ≈ 0.5.
inline cudalabs::Tolerance for_inputs(cudalabs::Tolerance base, bool large) {
  constexpr double growth = large_qk_factor * large_qk_factor;
  if (!large) return base;
  return {.abs = base.abs + 2.0 * (growth - 1.0) * fp32_tolerance.abs, .rel = base.rel};
}

// The 16-bit values a kernel reads, back in float.
template <typename T>
std::vector<float> widen(const cudalabs::DeviceBuffer<T>& buffer) {
  const std::vector<T> narrow = buffer.download();
  std::vector<float> wide(narrow.size());
  for (std::size_t i = 0; i < narrow.size(); ++i) {
    if constexpr (std::is_same_v<T, __half>)
      wide[i] = __half2float(narrow[i]);
    else
      wide[i] = __bfloat162float(narrow[i]);
  }
  return wide;
}

// The CPU reference costs heads·seq²·dim multiply-adds; up to 2048²·128
// (0.5 G, about 0.1 s on 16 cores) it is used, above that the GPU pipeline.
// Under --causal half the pairs count. (When causal runs always used the CPU,
// lab 17 --causal at 4 × 16 heads of N = 4096 got through one variant in 40 s:
// each variant's last check draws new inputs and a new reference.)
inline bool cpu_reference_affordable(const AttentionShape& s) {
  const double pairs = s.causal ? s.seq * (s.seq + 1.0) / 2 : s.seq * static_cast<double>(s.seq);
  return static_cast<double>(s.heads_total()) * pairs * s.dim <= 2048.0 * 2048.0 * 128.0;
}

// What lab 15's pipeline needs to run as a reference: cuBLAS, the N×N
// scratch, a stream.
struct GpuPipeline {
  const cudalabs::Cublas& blas;
  float* scores;   // seq×seq
  float* weights;  // seq×seq
  cudaStream_t stream;
};

// The expected output for one set of inputs (FP32, or rounded to 16 bits).
struct Expected {
  std::vector<double> cpu;  // cudalabs::ref::attention, head by head
  std::vector<float> gpu;   // lab 15's cuBLAS pipeline, head by head
  std::string source;

  cudalabs::CheckResult check(const std::vector<float>& got, cudalabs::Tolerance tol) const {
    return cpu.empty() ? cudalabs::check_close(got, gpu, tol) : cudalabs::check_close(got, cpu, tol);
  }
};

inline Expected attention_reference(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, const GpuPipeline& pipeline) {
  Expected e;
  const auto per_head = static_cast<std::size_t>(s.head_elements());
  if (cpu_reference_affordable(s)) {
    e.source = "CPU double reference";
    e.cpu.resize(q.size());
    for (std::int64_t h = 0; h < s.heads_total(); ++h) {
      const std::size_t at = static_cast<std::size_t>(h) * per_head;
      auto slice = [&](const std::vector<float>& x) { return std::span<const float>(x).subspan(at, per_head); };
      const auto head = cudalabs::ref::attention(slice(q), slice(k), slice(v), s.seq, s.dim, s.causal);
      std::copy(head.out.begin(), head.out.end(), e.cpu.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return e;
  }
  e.source = s.causal ? "lab 15's cuBLAS pipeline (FP32), keys after the query masked" : "lab 15's cuBLAS pipeline (FP32)";
  cudalabs::DeviceBuffer<float> dq(q, "reference q"), dk(k, "reference k"), dv(v, "reference v");
  cudalabs::DeviceBuffer<float> dout(q.size(), "reference out");
  for (std::int64_t h = 0; h < s.heads_total(); ++h) {
    const std::int64_t at = h * s.head_elements();
    attention_forward_cublas(pipeline.blas, dq.data() + at, dk.data() + at, dv.data() + at, pipeline.scores,
                             pipeline.weights, dout.data() + at, s.seq, s.dim, pipeline.stream, s.causal);
  }
  CUDALABS_CHECK(cudaStreamSynchronize(pipeline.stream));
  e.gpu = dout.download();
  return e;
}

// The FP32 inputs rounded to FP16 or BF16 on the device by the course's
// kernel (below), and the reference computed from the rounded values.
template <typename T>
struct Narrow {
  cudalabs::DeviceBuffer<T> q, k, v;
  Expected expected;

  explicit Narrow(std::size_t n) : q(n, "q (16-bit)"), k(n, "k (16-bit)"), v(n, "v (16-bit)") {}
  // After every new draw of the FP32 inputs dq, dk, dv [shape.elements()].
  void refresh(const AttentionShape& shape, const float* dq, const float* dk, const float* dv,
               const GpuPipeline& pipeline);
};

// The shape of one size point of labs 16, 17 and 31 (lab 16's points have no
// batch or heads: one head).
inline AttentionShape shape_at(const cudalabs::Point& point, bool causal) {
  auto size = [&](const char* name) {
    const auto it = point.find(name);
    return it == point.end() ? 1 : static_cast<int>(it->second);
  };
  return {.batch = size("batch"), .heads = size("heads"), .seq = size("seq"), .dim = size("dim"), .causal = causal};
}

// The JSON extras of a fused kernel's record.
inline std::map<std::string, double> flash_extra(const AttentionShape& s) {
  return {{"nxn_bytes_avoided", nxn_bytes_avoided(s)}, {"scratch_bytes", 0}};
}

// Sets Measurement::extra outside the designated initializer: GCC 12 warns
// falsely (-Wmaybe-uninitialized, Measurement::given_ceiling) when .extra is
// designated together with members left at their defaults.
inline cudalabs::Measurement with_extra(cudalabs::Measurement m, std::map<std::string, double> extra) {
  m.extra = std::move(extra);
  return m;
}

// Why a kernel cannot run on this GPU (empty: it can). The labs skip such a
// variant with a note instead of failing: a Turing GPU (sm_75: no
// mma.m16n8k16 for FP16/BF16, no cp.async, 64 KB of shared memory per block)
// still runs the rest of the lab.
inline std::string cannot_run(const cudalabs::DeviceInfo& dev, bool needs_sm80, std::size_t smem_bytes) {
  if (needs_sm80 && dev.cc_major < 8)
    return "needs compute capability 8.0 (mma.m16n8k16 for FP16/BF16, cp.async); this GPU is " + dev.cc();
  if (smem_bytes > dev.smem_per_block_optin)
    return "needs " + std::to_string(smem_bytes >> 10) + " KB of shared memory per block; this GPU allows " +
           std::to_string(dev.smem_per_block_optin >> 10) + " KB";
  return "";
}

// Head dimensions: the FP32 kernel takes any multiple of 4 up to 128, the
// tensor-core kernels 64 and 128. Throws UsageError naming the variant, the
// supported values and the way out.
inline void check_dims(const cudalabs::Options& o, const std::vector<std::string>& fp32_variants,
                       const std::vector<std::string>& mma_variants) {
  auto selected = [&](const std::vector<std::string>& names) {
    std::vector<std::string> hit;
    for (const auto& n : names)
      if (o.variants.empty() || std::find(o.variants.begin(), o.variants.end(), n) != o.variants.end())
        hit.push_back(n);
    return hit;
  };
  auto join = [](const std::vector<std::string>& v, const std::string& sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  for (const auto& point : o.points) {
    const std::int64_t d = point.at("dim");
    const auto fp32_refused =
        !flash_fp32_supports(static_cast<int>(d)) ? selected(fp32_variants) : std::vector<std::string>{};
    const auto mma_refused =
        !flash_mma_supports(static_cast<int>(d)) ? selected(mma_variants) : std::vector<std::string>{};
    if (fp32_refused.empty() && mma_refused.empty()) continue;
    std::string why = "--dim " + std::to_string(d) + ": ";
    if (!mma_refused.empty())
      why += "the tensor-core variants (" + join(mma_refused) + ") are compiled for head dimensions 64 and 128 only";
    if (!mma_refused.empty() && !fp32_refused.empty()) why += "; ";
    if (!fp32_refused.empty())
      why += "the CUDA-core variants (" + join(fp32_refused) +
             ") need a multiple of 4 up to 128 (rows are read as float4)";
    why += ". Use --dim 64 or --dim 128";
    if (fp32_refused.empty())
      why +=
          ", or run only the CUDA-core variants (any multiple of 4 up to 128): --variant " + join(fp32_variants, ",");
    throw cudalabs::UsageError(why + ".");
  }
}

// ---- FP32 -> FP16 / BF16, once, outside the timed region -------------------
// The tensor-core kernels read what this writes, and their reference is computed
// from it: course code, so that a kernel cannot choose its own rounded inputs.

template <typename T>
__device__ inline T float_to(float x);
template <>
__device__ inline __half float_to<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 float_to<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__global__ void convert_from_float_kernel(const float* __restrict__ in, T* __restrict__ out, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = float_to<T>(in[i]);
}

template <typename T>
void convert_from_float(const float* in, T* out, std::int64_t n, cudaStream_t stream) {
  constexpr int block = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n, block), 4096));
  convert_from_float_kernel<T><<<blocks, block, 0, stream>>>(in, out, n);
  CUDALABS_CHECK_LAUNCH("convert_from_float_kernel");
}

template <typename T>
void Narrow<T>::refresh(const AttentionShape& shape, const float* dq, const float* dk, const float* dv,
                        const GpuPipeline& pipeline) {
  convert_from_float(dq, q.data(), shape.elements(), pipeline.stream);
  convert_from_float(dk, k.data(), shape.elements(), pipeline.stream);
  convert_from_float(dv, v.data(), shape.elements(), pipeline.stream);
  CUDALABS_CHECK(cudaStreamSynchronize(pipeline.stream));
  expected = attention_reference(shape, widen(q), widen(k), widen(v), pipeline);
}
