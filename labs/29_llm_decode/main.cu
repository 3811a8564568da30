// Lab 29 — LLM decoding on the GPU: quantised matrix-vector products, the
// small kernels around them, and one decode step launched as a CUDA graph.
//
// Generating one token runs every layer once on a single activation vector.
// Each weight is read once and used for one multiply-add, so a step is bound by
// how fast the weights stream out of DRAM, and the small kernels between the
// matvecs (a few KB each) by the cost of launching them. The lab measures both
// halves of that: the matvecs as % of the copy bandwidth on the bytes they
// must read, the step eager against the same step as one CUDA graph.
//
// Variants (kernels in quant_matvec.cuh and decode_ops.cuh, called through kernels.hpp):
//   F_dequant_cublas   baseline: dequantise W (F = q8_0 or q4_0, GGUF blocks) to
//                      an fp32 matrix, then cublasSgemv: the fp32 matrix written and read
//   F_warp_per_row     fused: one warp per row dequantises in registers, fp32 x
//   F_dp4a             fused, x quantised to int8 per 32 values (Q8_1-style), __dp4a
//   F_dp4a_aligned     the same on blocks repacked to 36 (Q8_0) / 20 (Q4_0) bytes: 4-byte loads
//   F_dp4a_rows        the same, R rows per warp, R chosen per format (--rows-per-warp)
//   F_dp4a_wide        the planar layout (quants apart from scales: GGUF's bytes,
//                      16-byte aligned): 16-byte loads, one warp per row
//   F_dp4a_split       the same, each row split over W warps of a block, W from
//                      the shape (--warps-per-row): all of a row's loads in flight
//   rmsnorm_quant      residual add + RMSNorm + int8 quantisation in one kernel
//   rope               rotary embedding of q and k (pairs 2i, 2i+1, Llama's convention)
//   swiglu             silu(gate) · up
//   argmax             index of the largest logit, left on the device
//   decode_eager       one Llama-style layer for one token: 14 kernels, launched one by one
//   decode_graph       the same 14 launches captured once into a CUDA graph
// The small kernels run at batch 1 and at --tokens (a batch large enough to be
// bound by bandwidth, not by the launch).
//
// Run: make run LAB=29    (Llama-3-8B and Qwen2-0.5B-sized layers, KV cache of 1024;
//                          --model 8b|small, --kv N, --tokens N, --decode-format q4_0)
//
// The host code, by topic (as labs 19 and 20 are): host_common.hpp (the models,
// the flags, the helpers), matvec.cpp, small_kernels.cpp, decode_step.cpp. This
// file declares the lab and runs them, and holds the one kernel of the course's
// own host code, the baseline's dequantisation: the one file nvcc compiles.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <cudalabs/blas.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>

#include "input_kinds.hpp"  // precheck_usage: flag values checked without a GPU
#include "value_kinds.hpp"  // inputs_flag_of
#include "host_common.hpp"

namespace lab29host {
namespace {

// ---- the baseline's kernel: GGUF blocks to an fp32 matrix (course code) --------------

constexpr int dequantize_threads = 256;

// Four values per thread, one float4 store. level · scale is exact in float,
// so the matrix is bit for bit the CPU's dequantised one (checked).
template <Format F>
__global__ void __launch_bounds__(dequantize_threads)
    dequantize_kernel(const std::uint8_t* __restrict__ w, float* __restrict__ out, std::int64_t n4) {
  constexpr int bytes = lab29::gguf_block_bytes(F);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const std::int64_t block = i / 8;
    const int first = static_cast<int>(i % 8) * 4;  // the block's values first .. first+3
    const auto* u = reinterpret_cast<const std::uint16_t*>(w + block * bytes);
    const float d = __half2float(__ushort_as_half(u[0]));
    float level[4];
    if constexpr (F == Format::q8_0) {
      const std::uint16_t a = u[1 + first / 2], b = u[2 + first / 2];
      level[0] = static_cast<std::int8_t>(a & 0xFF), level[1] = static_cast<std::int8_t>(a >> 8);
      level[2] = static_cast<std::int8_t>(b & 0xFF), level[3] = static_cast<std::int8_t>(b >> 8);
    } else {
      // values j < 16: low nibbles of bytes j; values j >= 16: high nibbles of bytes j - 16
      const int j = first % 16, shift = first < 16 ? 0 : 4;
      const std::uint16_t a = u[1 + j / 2], b = u[2 + j / 2];
      level[0] = static_cast<float>(((a >> shift) & 0xF) - 8), level[1] = static_cast<float>(((a >> (8 + shift)) & 0xF) - 8);
      level[2] = static_cast<float>(((b >> shift) & 0xF) - 8), level[3] = static_cast<float>(((b >> (8 + shift)) & 0xF) - 8);
    }
    reinterpret_cast<float4*>(out)[i] = {level[0] * d, level[1] * d, level[2] * d, level[3] * d};
  }
}

}  // namespace

void dequantize(Format f, const std::uint8_t* w, float* out, std::int64_t values, cudaStream_t stream) {
  const std::int64_t n4 = values / 4;
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n4, dequantize_threads), 65536));
  if (f == Format::q8_0) dequantize_kernel<Format::q8_0><<<grid, dequantize_threads, 0, stream>>>(w, out, n4);
  else dequantize_kernel<Format::q4_0><<<grid, dequantize_threads, 0, stream>>>(w, out, n4);
  CUDALABS_CHECK_LAUNCH("dequantize_kernel");
}

cudalabs::KernelResources dequantize_resources(Format f) {
  return f == Format::q8_0 ? cudalabs::resources_of(dequantize_kernel<Format::q8_0>, dequantize_threads)
                           : cudalabs::resources_of(dequantize_kernel<Format::q4_0>, dequantize_threads);
}

}  // namespace lab29host

using namespace lab29host;

int main(int argc, char** argv) {
  const cudalabs::LabSpec spec{
      .name = "29_llm_decode",
      .title = "LLM decoding: quantised matvecs at DRAM speed, the small kernels, CUDA graphs",
      .about = "One token of a Llama-style model on the GPU. y = W·x over GGUF Q8_0/Q4_0 weights (dequantise + cuBLAS\n"
               "SGEMV as the baseline, then fused kernels: float, int8 activations with __dp4a, 4-byte-aligned\n"
               "repacked blocks, R rows per warp, a planar layout with 16-byte loads, rows split over warps), as %\n"
               "of the copy bandwidth on the bytes they must read; RMSNorm\n"
               "(+ residual add + int8), RoPE, SwiGLU and argmax at batch 1 and at a batch of tokens; one layer's\n"
               "decode step launched kernel by kernel and as a CUDA graph. Models: 8b (Llama-3-8B: hidden 4096,\n"
               "MLP 14336, 32 q / 8 kv heads of 128), small (Qwen2-0.5B-sized: 896, 4864, 14 / 2 heads of 64),\n"
               "tiny (--quick). Weights rotate over copies filling 2x L2, as a model's layers would (--layers).",
      .sizes = {{.name = "kv",
                 .help = "KV-cache length of the decode step: the new token, at position kv-1, attends to kv positions",
                 .full = {1024},
                 .quick = {1, 301},
                 .max = 131072}},
      .size_alias = {"kv"},
      .variants = {{"q8_0_dequant_cublas", "baseline: Q8_0 -> fp32 matrix, then cublasSgemv (2 kernels)", true},
                   {"q8_0_warp_per_row", "fused: a warp per row, dequantised in registers, fp32 x"},
                   {"q8_0_dp4a", "fused, int8 x (per-32 scale and sum), __dp4a; 34-byte blocks (2-byte loads)"},
                   {"q8_0_dp4a_aligned", "q8_0_dp4a on blocks repacked to 36 bytes (4-byte loads)"},
                   {"q8_0_dp4a_rows", "q8_0_dp4a_aligned with R rows per warp (R tuned per format)"},
                   {"q8_0_dp4a_wide", "planar layout (quants apart from scales, GGUF's bytes): 16-byte loads, a warp per row"},
                   {"q8_0_dp4a_split", "q8_0_dp4a_wide with each row split over W warps, W from the shape"},
                   {"q4_0_dequant_cublas", "baseline: Q4_0 -> fp32 matrix, then cublasSgemv (2 kernels)", true},
                   {"q4_0_warp_per_row", "fused: a warp per row, dequantised in registers, fp32 x"},
                   {"q4_0_dp4a", "fused, int8 x, __dp4a on nibbles; 18-byte blocks (2-byte loads)"},
                   {"q4_0_dp4a_aligned", "q4_0_dp4a on blocks repacked to 20 bytes (4-byte loads)"},
                   {"q4_0_dp4a_rows", "q4_0_dp4a_aligned with R rows per warp (R tuned per format)"},
                   {"q4_0_dp4a_wide", "planar layout (quants apart from scales, GGUF's bytes): 16-byte loads, a warp per row"},
                   {"q4_0_dp4a_split", "q4_0_dp4a_wide with each row split over W warps, W from the shape"},
                   {"rmsnorm_quant", "h = x + delta, RMSNorm(h)·g, int8 per 32: one kernel (batch 1 and --tokens)"},
                   {"rope", "rotary embedding of q and k, pairs (2i, 2i+1) (batch 1 and --tokens)"},
                   {"swiglu", "silu(gate)·up (batch 1 and --tokens)"},
                   {"argmax", "index of the largest logit over the vocabulary, kept on the device"},
                   {"decode_eager", "one layer for one token: 14 kernels launched one by one (the graph's reference)",
                    true},
                   {"decode_graph", "the same 14 launches as one CUDA graph, instantiated once"}},
      .flags = {{.name = "model",
                 .help = "8b, small, tiny, or a list (default 8b,small; tiny with --quick)",
                 .kind = cudalabs::ExtraFlag::Kind::text},
                {.name = "tokens",
                 .help = "batch of the rmsnorm/rope/swiglu rows besides batch 1 (0: enough to move 256 MiB; 7 with --quick)",
                 .default_value = "0",
                 .min = 0,
                 .max = std::int64_t{1} << 20},
                {.name = "layers",
                 .help = "copies of the weights the runs rotate through (0: enough to fill 2x L2, 2 with --quick; 1: L2-warm)",
                 .default_value = "0",
                 .min = 0,
                 .max = max_layer_copies},
                {.name = "rows-per-warp",
                 .help = "R of the *_dp4a_rows kernels (and of the decode step with --decode-matvec rows): 1, 2 or 4 (0: "
                         "the kernel file's choice)",
                 .default_value = "0",
                 .min = 0,
                 .max = 4},
                {.name = "warps-per-row",
                 .help = "W of the *_dp4a_split kernels and the decode step: 1, 2, 4 or 8 (0: chosen per shape)",
                 .default_value = "0",
                 .min = 0,
                 .max = 8},
                {.name = "decode-matvec",
                 .help = "the decode step's matvec: split (F_dp4a_split, planar layout) or rows (F_dp4a_rows)",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "split"},
                {.name = "decode-format",
                 .help = "weights of the decode step: q8_0 or q4_0",
                 .kind = cudalabs::ExtraFlag::Kind::text,
                 .default_value = "q8_0"},
                // small_kernels.cpp says what each kind draws and which wrong kernel it exposes.
                value_kinds::inputs_flag_of(
                    "the inputs of rmsnorm_quant and argmax (the other rows draw random ones): random; large: "
                    "activations times 2^20..2^40, logits all in [-2^127, -2^100]; tiny: activations times "
                    "2^-11..2^-7 (mean square near the norm's epsilon), logits in [-2^-80, 2^-80]; ties (argmax "
                    "only): the maximum at every position from a drawn one on, whose index is the answer: a thread "
                    "that keeps the last of equal values fails",
                    {"random", "large", "tiny", "ties"})},
  };
  if (const int rc = precheck_usage(spec, argc, argv, [](const cudalabs::Options& o) { settings_of(o); }); rc != 0)
    return rc;

  return cudalabs::run_lab(argc, argv, spec, [&](cudalabs::Session& s) {
    const Settings settings = settings_of(s.options());
    std::optional<cudalabs::Cublas> blas;
    for (const Model* model : settings.models) {
      if (model->head_dim > lab29::attention_max_head_dim() || model->head_dim % 8 != 0)
        throw std::logic_error("head_dim must be a multiple of 8 up to attention_max_head_dim()");
      const int first_kv = static_cast<int>(s.points().front().at("kv"));
      for (Format f : {Format::q8_0, Format::q4_0}) {
        const std::string n = format_name(f);
        if (!any_selected(s, {n + "_dequant_cublas", n + "_warp_per_row", n + "_dp4a", n + "_dp4a_aligned", n + "_dp4a_rows",
                              n + "_dp4a_wide", n + "_dp4a_split"}))
          continue;
        if (!blas) blas.emplace();
        for (const MatvecShape& shape : model->matvecs) measure_matvec(s, *blas, settings, f, shape);
      }
      // Batch 1, as in decoding; then the batch that makes each kernel bandwidth-bound.
      const double rope_bytes = 8.0 * (model->q_heads + model->kv_heads) * model->head_dim;
      if (s.selected("rmsnorm_quant"))
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, 13.25 * model->hidden)}) measure_rmsnorm(s, *model, t, settings.inputs);
      if (s.selected("rope"))
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, rope_bytes)}) measure_rope(s, *model, t, first_kv - 1);
      if (s.selected("swiglu"))
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, 12.0 * model->mlp)}) measure_swiglu(s, *model, t);
      if (s.selected("argmax")) measure_argmax(s, *model, settings.inputs);
      if (!any_selected(s, {"decode_eager", "decode_graph"})) continue;
      for (const auto& point : s.points()) {
        const int kv = static_cast<int>(point.at("kv"));
        if (kv > lab29::attention_max_positions())
          throw cudalabs::UsageError("--kv " + std::to_string(kv) + ": attention_decode takes at most " +
                                     std::to_string(lab29::attention_max_positions()) + " positions.");
        measure_decode(s, *model, settings, kv);
      }
    }
  });
}
