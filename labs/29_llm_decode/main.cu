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
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/blas.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>

#include "input_kinds.hpp"  // precheck_usage: flag values checked without a GPU
#include "decode_reference.hpp"
#include "kernels.hpp"

namespace {

using cudalabs::DeviceBuffer;
using lab29::Format;
namespace ref = lab29ref;

// ---- the models -----------------------------------------------------------------

struct MatvecShape {
  int rows, cols;
};

// One transformer layer's sizes. hidden = q_heads · head_dim in all three.
struct Model {
  std::string name;
  std::string about;
  int hidden, mlp, q_heads, kv_heads, head_dim, vocab;
  double rope_base;
  float norm_eps;
  std::vector<MatvecShape> matvecs;  // the shapes the matvec rows measure
};

const std::vector<Model>& models() {
  static const std::vector<Model> all{
      {"8b", "Llama-3-8B", 4096, 14336, 32, 8, 128, 128256, 500000.0, 1e-5f,
       {{4096, 14336}, {14336, 4096}}},  // the MLP's down projection, its gate (and up)
      // Qwen2-0.5B's sizes (without its q/k/v biases, with Llama's RoPE pairing).
      {"small", "Qwen2-0.5B-sized", 896, 4864, 14, 2, 64, 151936, 1000000.0, 1e-6f, {{896, 4864}, {4864, 896}}},
      // --quick: odd sizes everywhere: 9 and 33 blocks per row (not a multiple of
      // the warp's 8 per step), a single row, rows not a multiple of R.
      {"tiny", "a tiny layer (--quick)", 288, 800, 6, 2, 48, 1009, 10000.0, 1e-5f, {{1, 32}, {37, 288}, {801, 1056}}},
  };
  return all;
}

const char* format_name(Format f) { return f == Format::q8_0 ? "q8_0" : "q4_0"; }

// ---- the lab's flags --------------------------------------------------------------

struct Settings {
  std::vector<const Model*> models;
  std::int64_t tokens = 0;  // 0: enough for each kernel to move 256 MiB
  int layers = 0;           // 0: enough copies of the weights to fill 2 × L2
  int rows_per_warp = 0;    // 0: the kernel file's choice per format
  int warps_per_row = 0;    // 0: the kernel file's choice per shape
  bool decode_split = true; // the decode step's matvecs: F_dp4a_split (else F_dp4a_rows)
  Format decode_format = Format::q8_0;
  bool quick = false;
};

Settings settings_of(const cudalabs::Options& o) {
  Settings s;
  s.quick = o.quick;
  std::string list = o.text("model");
  if (list.empty()) list = o.quick ? "tiny" : "8b,small";
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    const auto it = std::find_if(models().begin(), models().end(), [&](const Model& m) { return m.name == name; });
    if (it == models().end())
      throw cudalabs::UsageError("--model " + name + ": the lab knows 8b, small and tiny. Example: --model 8b,small");
    s.models.push_back(&*it);
  }
  s.tokens = o.integer("tokens");
  s.layers = static_cast<int>(o.integer("layers"));
  s.rows_per_warp = static_cast<int>(o.integer("rows-per-warp"));
  if (s.rows_per_warp != 0 && !lab29::matvec_rows_supported(s.rows_per_warp))
    throw cudalabs::UsageError("--rows-per-warp " + std::to_string(s.rows_per_warp) +
                               ": the kernels are built for 1, 2 or 4 rows per warp (0: the kernel file's choice).");
  s.warps_per_row = static_cast<int>(o.integer("warps-per-row"));
  if (s.warps_per_row != 0 && !lab29::matvec_planar_supported(s.warps_per_row))
    throw cudalabs::UsageError("--warps-per-row " + std::to_string(s.warps_per_row) +
                               ": the split kernels are built for 1, 2, 4 or 8 warps per row (0: chosen per shape).");
  const std::string matvec = o.text("decode-matvec");
  if (matvec != "split" && matvec != "rows")
    throw cudalabs::UsageError("--decode-matvec " + matvec + ": split or rows. Example: --decode-matvec rows");
  s.decode_split = matvec == "split";
  const std::string format = o.text("decode-format");
  if (format != "q8_0" && format != "q4_0")
    throw cudalabs::UsageError("--decode-format " + format + ": q8_0 or q4_0. Example: --decode-format q4_0");
  s.decode_format = format == "q8_0" ? Format::q8_0 : Format::q4_0;
  return s;
}

// ---- helpers ----------------------------------------------------------------------

// A model's layers each have their own weights, so a real decode step never
// finds its weights in L2. The lab keeps `copies` copies of the same weights
// and each run uses the next: with 2 × L2 of them (100 MB on an H100), every
// run reads its weights from DRAM, as a model does. --layers 1 keeps one copy
// (the small shapes then run from the 50 MB L2). --quick, a correctness run,
// keeps 2: the rotation is exercised, and a sanitizer has 2 graphs to build, not 64.
constexpr int max_layer_copies = 64;
int layer_copies(const Settings& settings, double bytes, const cudalabs::DeviceInfo& dev) {
  if (settings.layers > 0) return settings.layers;
  if (settings.quick) return 2;
  return std::clamp(static_cast<int>(std::ceil(2.0 * static_cast<double>(dev.l2_bytes) / bytes)), 1, max_layer_copies);
}

// Which copy the next run reads.
struct Rotation {
  int copies = 1;
  int next = 0;
  int advance() {
    const int c = next;
    next = (next + 1) % copies;
    return c;
  }
};

// `src` into each of the `copies` equal parts of `dst`: once up, then on the device.
void upload_copies(DeviceBuffer<std::uint8_t>& dst, const std::vector<std::uint8_t>& src, int copies) {
  CUDALABS_CHECK(cudaMemcpy(dst.data(), src.data(), src.size(), cudaMemcpyHostToDevice));
  for (int c = 1; c < copies; ++c)
    CUDALABS_CHECK(cudaMemcpy(dst.data() + c * src.size(), dst.data(), src.size(), cudaMemcpyDeviceToDevice));
  CUDALABS_CHECK(cudaDeviceSynchronize());
}

// Each GGUF copy of `gguf` repacked into the same copy of `out` by `repack`,
// the kernel file's repack_aligned or repack_planar (untimed: a loader does it once).
using Repack = void (*)(Format, const void*, void*, std::int64_t, cudaStream_t);
void repack_copies(Repack repack, Format f, const DeviceBuffer<std::uint8_t>& gguf, DeviceBuffer<std::uint8_t>& out,
                   int copies, std::int64_t blocks, cudaStream_t stream) {
  const std::size_t from = gguf.size() / copies, to = out.size() / copies;
  for (int c = 0; c < copies; ++c) repack(f, gguf.data() + c * from, out.data() + c * to, blocks, stream);
  CUDALABS_CHECK(cudaStreamSynchronize(stream));
}

// The room one planar copy takes in a buffer of copies: its bytes rounded up to 256.
std::size_t planar_copy_bytes(std::size_t bytes) { return cudalabs::ceil_div<std::size_t>(bytes, 256) * 256; }

// int8 activations on the device: q, per-block scales, per-block sums.
struct DeviceQuantVector {
  DeviceBuffer<std::int8_t> q;
  DeviceBuffer<float> d;
  DeviceBuffer<int> sum;
  DeviceQuantVector(std::size_t n, const char* what) : q(n, what), d(n / ref::qk, what), sum(n / ref::qk, what) {}
  lab29::QuantizedVector view() { return {q.data(), d.data(), sum.data()}; }
  void upload(const ref::QuantVector& v) {
    q.upload(v.q);
    d.upload(v.d);
    sum.upload(v.sum);
  }
  ref::QuantVector download() const { return {q.download(), d.download(), sum.download()}; }
  // download(), each part observed as an output for a judge (cudalabs/evidence.hpp).
  ref::QuantVector download_observed(std::string& missing) const {
    return {q.download_observed(missing), d.download_observed(missing), sum.download_observed(missing)};
  }
  void poison(cudaStream_t s) {
    q.poison(s);
    d.poison(s);
    sum.poison(s);
  }
};

// An instantiated CUDA graph, destroyed with its owner.
class GraphExec {
 public:
  // Captures what `work` enqueues on `stream` (nothing runs), instantiates it
  // and uploads it, so that the first launch is a launch like the others.
  static GraphExec capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& work) {
    CUDALABS_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      work(stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);  // leave the stream usable
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    CUDALABS_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    CUDALABS_CHECK(instantiated);
    GraphExec owned(exec);
    CUDALABS_CHECK(cudaGraphUpload(exec, stream));
    CUDALABS_CHECK(cudaStreamSynchronize(stream));
    return owned;
  }
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&&) = delete;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  void launch(cudaStream_t stream) const { CUDALABS_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  explicit GraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  cudaGraphExec_t exec_ = nullptr;
};

// Whether any of `names` runs (a --variant list names them, or there is none).
bool any_selected(const cudalabs::Session& s, std::initializer_list<std::string> names) {
  if (s.options().variants.empty()) return true;
  for (const auto& v : s.options().variants)
    if (std::find(names.begin(), names.end(), v) != names.end()) return true;
  return false;
}

double max_abs(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}
// The largest |value| an int8 vector can hold: 127 steps of its largest scale.
double max_abs(const ref::QuantVector& v) { return 127.0 * max_abs(v.d); }

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

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

void dequantize(Format f, const std::uint8_t* w, float* out, std::int64_t values, cudaStream_t stream) {
  const std::int64_t n4 = values / 4;
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(cudalabs::ceil_div<std::int64_t>(n4, dequantize_threads), 65536));
  if (f == Format::q8_0) dequantize_kernel<Format::q8_0><<<grid, dequantize_threads, 0, stream>>>(w, out, n4);
  else dequantize_kernel<Format::q4_0><<<grid, dequantize_threads, 0, stream>>>(w, out, n4);
  CUDALABS_CHECK_LAUNCH("dequantize_kernel");
}

// y = W·x for a row-major rows × cols W: to cuBLAS (column-major) the same
// memory is a cols × rows matrix, so y = (that matrix)ᵀ·x.
void sgemv(cublasHandle_t handle, const float* w, const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  CUDALABS_CHECK_CUBLAS(cublasSetStream(handle, stream));
  CUDALABS_CHECK_CUBLAS(cublasSgemv(handle, CUBLAS_OP_T, cols, rows, &one, w, cols, x, 1, &zero, y, 1));
}

// ---- matrix-vector products -----------------------------------------------------------

void measure_matvec(cudalabs::Session& s, cudalabs::Cublas& blas, const Settings& settings, Format f, MatvecShape shape) {
  const std::string name = format_name(f);
  const int rows = shape.rows, cols = shape.cols, nb = cols / ref::qk;
  const std::int64_t blocks = static_cast<std::int64_t>(rows) * nb;
  const auto gguf_bytes = static_cast<std::size_t>(blocks) * lab29::gguf_block_bytes(f);
  const auto aligned_bytes = static_cast<std::size_t>(blocks) * lab29::aligned_block_bytes(f);
  const int copies = layer_copies(settings, static_cast<double>(gguf_bytes), s.device());
  DeviceBuffer<std::uint8_t> d_w(copies * gguf_bytes, "quantised W, every layer copy");
  DeviceBuffer<std::uint8_t> d_wa(copies * aligned_bytes, "repacked W, every layer copy");
  // Each planar copy starts 256-byte aligned (the kernels load 16 bytes at a
  // time; 333 blocks of 34 bytes, the tiny model's, are not a multiple of 16).
  const std::size_t planar_bytes = planar_copy_bytes(gguf_bytes);
  DeviceBuffer<std::uint8_t> d_wp(copies * planar_bytes, "planar W, every layer copy");
  DeviceBuffer<float> d_x(static_cast<std::size_t>(cols), "x"), d_y(static_cast<std::size_t>(rows), "y");
  DeviceQuantVector d_xq(static_cast<std::size_t>(cols), "int8 x");

  ref::QuantMatrix w;
  std::vector<double> y_float, y_int8;
  cudalabs::Tolerance tol;
  double allowance = 0;
  // W from U[-1, 1) quantised as GGUF does, x from U[-1, 1); x quantised on the
  // CPU for the __dp4a kernels (the decode step quantises on the GPU).
  auto new_inputs = [&](std::uint64_t seed) {
    w = ref::quantize_matrix(f, cudalabs::random_floats(static_cast<std::size_t>(blocks) * ref::qk, cudalabs::mix_seed(seed, 1)),
                             rows, cols);
    const auto x = cudalabs::random_floats(static_cast<std::size_t>(cols), cudalabs::mix_seed(seed, 2));
    const auto xq = ref::quantize_vector(x);
    upload_copies(d_w, w.bytes, copies);
    repack_copies(lab29::repack_aligned, f, d_w, d_wa, copies, blocks, s.stream());
    repack_copies(lab29::repack_planar, f, d_w, d_wp, copies, blocks, s.stream());
    d_x.upload(x);
    d_xq.upload(xq);
    y_float = ref::matvec(w, x);
    y_int8 = ref::matvec(w, xq);
    tol = ref::matvec_tolerance(cols, ref::max_abs_value(w), max_abs(x));
    allowance = ref::activation_quantisation_allowance(w, xq);
  };
  new_inputs(s.seed());

  Rotation layer{copies};
  const cudalabs::Point point{{"rows", rows}, {"cols", cols}, {"bits", f == Format::q8_0 ? 8 : 4}};
  // The bytes that must move: the GGUF matrix once, x, y. The repacked layouts
  // read 2 more bytes per block, uncounted: that is their cost.
  const cudalabs::Work work{.bytes = static_cast<double>(gguf_bytes) + 4.0 * cols + 4.0 * rows,
                            .flops = 2.0 * rows * static_cast<double>(cols)};
  auto poison = [&](cudaStream_t st) { d_y.poison(st); };
  auto check_fp32 = [&] { return cudalabs::check_close(d_y.download(), y_float, tol); };
  // Against the same int8 x (only the kernel's own error), and loosely against
  // the fp32 x (activation_quantisation_allowance).
  auto check_int8 = [&] {
    const auto y = d_y.download();
    return ref::with_failures(
        cudalabs::check_close(y, y_int8, tol),
        {ref::labelled(cudalabs::check_close(y, y_float, {.abs = allowance + tol.abs, .rel = tol.rel}),
                       "against the fp32-x reference (int8 x allowed for)")});
  };
  auto finish = [&](cudalabs::Measurement m) {
    m.extra["layers"] = copies;  // set apart: g++ 12 warns on the designated form
    s.measure(m);
  };

  {  // the baseline: two kernels, the fp32 matrix (3.8x the Q8_0 bytes, 7.1x the Q4_0) written and read
    DeviceBuffer<float> d_wf(static_cast<std::size_t>(blocks) * ref::qk, "dequantised fp32 W (the baseline's)");
    // One untimed run: cuBLAS loads its kernels now, not in the traced run.
    dequantize(f, d_w.data(), d_wf.data(), blocks * ref::qk, s.stream());
    sgemv(blas.get(), d_wf.data(), d_x.data(), d_y.data(), rows, cols, s.stream());
    CUDALABS_CHECK(cudaStreamSynchronize(s.stream()));
    finish({.variant = name + "_dequant_cublas",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  dequantize(f, d_w.data() + layer.advance() * gguf_bytes, d_wf.data(), blocks * ref::qk, st);
                  sgemv(blas.get(), d_wf.data(), d_x.data(), d_y.data(), rows, cols, st);
                },
            // y, and the fp32 matrix bit for bit.
            .check =
                [&] {
                  std::vector<float> expected(static_cast<std::size_t>(blocks) * ref::qk);
                  cudalabs::ref::parallel_for(static_cast<std::size_t>(rows), [&](std::size_t lo, std::size_t hi) {
                    for (std::size_t r = lo; r < hi; ++r)
                      for (int c = 0; c < cols; ++c)
                        expected[r * cols + c] = w.value(static_cast<std::int64_t>(r), c);
                  }, 1);
                  return ref::with_failures(check_fp32(), {ref::labelled(cudalabs::check_close(d_wf.download(), expected,
                                                                                               {.abs = 0, .rel = 0}),
                                                                         "dequantised matrix (bit-exact)")});
                },
            .poison =
                [&](cudaStream_t st) {
                  d_y.poison(st);
                  d_wf.poison(st);
                },
            .new_inputs = new_inputs,
            .resources = f == Format::q8_0 ? cudalabs::resources_of(dequantize_kernel<Format::q8_0>, dequantize_threads)
                                           : cudalabs::resources_of(dequantize_kernel<Format::q4_0>, dequantize_threads)});
  }
  if (s.selected(name + "_warp_per_row"))
    finish({.variant = name + "_warp_per_row",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_warp_per_row(f, d_w.data() + layer.advance() * gguf_bytes, d_x.data(), d_y.data(), rows,
                                             cols, st);
                },
            .check = check_fp32,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_warp_per_row_resources(f)});
  if (s.selected(name + "_dp4a"))
    finish({.variant = name + "_dp4a",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_dp4a(f, d_w.data() + layer.advance() * gguf_bytes, d_xq.view(), d_y.data(), rows, cols, st);
                },
            .check = check_int8,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_dp4a_resources(f, false)});
  if (s.selected(name + "_dp4a_aligned"))
    finish({.variant = name + "_dp4a_aligned",
            .size = point,
            .work = work,
            .run =
                [&](cudaStream_t st) {
                  lab29::matvec_dp4a_aligned(f, d_wa.data() + layer.advance() * aligned_bytes, d_xq.view(), d_y.data(),
                                             rows, cols, st);
                },
            .check = check_int8,
            .poison = poison,
            .new_inputs = new_inputs,
            .resources = lab29::matvec_dp4a_resources(f, true)});
  if (s.selected(name + "_dp4a_rows")) {
    cudalabs::Measurement m{
        .variant = name + "_dp4a_rows",
        .size = point,
        .work = work,
        .run =
            [&](cudaStream_t st) {
              lab29::matvec_dp4a_rows(f, d_wa.data() + layer.advance() * aligned_bytes, d_xq.view(), nullptr,
                                      d_y.data(), rows, cols, settings.rows_per_warp, st);
            },
        .check = check_int8,
        .poison = poison,
        .new_inputs = new_inputs,
        .resources = lab29::matvec_dp4a_rows_resources(f, settings.rows_per_warp)};
    m.extra["rows_per_warp"] = settings.rows_per_warp ? settings.rows_per_warp : lab29::matvec_rows_per_warp(f);
    finish(m);
  }
  // The planar layout: one warp per row (wide), then W warps per row (split).
  for (const auto& [suffix, asked] : {std::pair{"_dp4a_wide", 1}, std::pair{"_dp4a_split", settings.warps_per_row}}) {
    if (!s.selected(name + suffix)) continue;
    const int warps = lab29::matvec_planar_warps(f, rows, cols, asked);
    cudalabs::Measurement m{
        .variant = name + suffix,
        .size = point,
        .work = work,
        .run =
            [&, warps](cudaStream_t st) {
              lab29::matvec_planar(f, d_wp.data() + layer.advance() * planar_bytes, d_xq.view(), nullptr, d_y.data(),
                                   rows, cols, warps, st);
            },
        .check = check_int8,
        .poison = poison,
        .new_inputs = new_inputs,
        .resources = lab29::matvec_planar_resources(f, warps)};
    m.extra["warps_per_row"] = warps;
    finish(m);
  }
}

// ---- the small kernels, at batch 1 and at a batch of tokens ------------------------------

// Tokens for the batch rows: --tokens, or 7 with --quick, or the power of two
// that makes the kernel move at least 256 MiB (5x the H100's L2).
std::int64_t batch_tokens(const Settings& settings, double bytes_per_token) {
  if (settings.tokens > 0) return settings.tokens;
  if (settings.quick) return 7;
  std::int64_t t = 1;
  while (static_cast<double>(t) * bytes_per_token < 256.0 * (1 << 20)) t *= 2;
  return t;
}

void measure_rmsnorm(cudalabs::Session& s, const Model& model, std::int64_t tokens) {
  const int dim = model.hidden;
  const auto n = static_cast<std::size_t>(tokens) * dim;
  DeviceBuffer<float> d_x(n, "x"), d_delta(n, "delta"), d_h(n, "h"), d_g(static_cast<std::size_t>(dim), "g");
  DeviceQuantVector d_out(n, "int8 output");
  std::vector<double> h_exact, y_exact;
  // x, delta from U[-1, 1), g from U[0.5, 1.5). h is float (the residual
  // stream is), so the reference normalises the float sum.
  auto new_inputs = [&](std::uint64_t seed) {
    const auto x = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1));
    const auto delta = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2));
    const auto g = cudalabs::random_floats(static_cast<std::size_t>(dim), cudalabs::mix_seed(seed, 3), 0.5f, 1.5f);
    std::vector<float> h(n);
    h_exact.resize(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = x[i] + delta[i], h_exact[i] = static_cast<double>(x[i]) + delta[i];
    y_exact = ref::rmsnorm(h, g, tokens, dim, model.norm_eps);
    d_x.upload(x);
    d_delta.upload(delta);
    d_g.upload(g);
  };
  new_inputs(s.seed());
  s.measure({.variant = "rmsnorm_quant",
             .size = {{"tokens", tokens}, {"hidden", dim}},
             // x, delta and g read; h, the int8 values and a scale and sum per 32 written.
             .work = {.bytes = 13.25 * static_cast<double>(n) + 4.0 * dim},
             .run =
                 [&](cudaStream_t st) {
                   lab29::add_rmsnorm_quant(d_x.data(), d_delta.data(), d_g.data(), d_h.data(), d_out.view(),
                                            static_cast<int>(tokens), dim, model.norm_eps, st);
                 },
             // h = x + delta rounds once (half an ulp); the int8 values by check_quantized.
             .check =
                 [&] {
                   return ref::with_failures(ref::check_quantized(d_out.download(), y_exact),
                                             {ref::labelled(cudalabs::check_close(d_h.download(), h_exact,
                                                                                  {.abs = 0, .rel = ref::eps32}),
                                                            "h = x + delta")});
                 },
             .poison =
                 [&](cudaStream_t st) {
                   d_h.poison(st);
                   d_out.poison(st);
                 },
             .new_inputs = new_inputs,
             .resources = lab29::add_rmsnorm_quant_resources()});
}

void measure_rope(cudalabs::Session& s, const Model& model, std::int64_t tokens, int pos0) {
  const int hd = model.head_dim;
  const auto nq = static_cast<std::size_t>(tokens) * model.q_heads * hd;
  const auto nk = static_cast<std::size_t>(tokens) * model.kv_heads * hd;
  DeviceBuffer<float> d_q(nq, "q"), d_k(nk, "k"), d_q_out(nq, "rotated q"), d_k_out(nk, "rotated k");
  const auto inv_freq = ref::rope_inv_freq(model.rope_base, hd);
  DeviceBuffer<float> d_inv_freq(inv_freq, "rope frequencies");
  std::vector<double> q_ref, k_ref;
  cudalabs::Tolerance tol;
  auto new_inputs = [&](std::uint64_t seed) {
    const auto q = cudalabs::random_floats(nq, cudalabs::mix_seed(seed, 1));
    const auto k = cudalabs::random_floats(nk, cudalabs::mix_seed(seed, 2));
    q_ref = ref::rope(q, inv_freq, static_cast<int>(tokens), pos0, model.q_heads, hd);
    k_ref = ref::rope(k, inv_freq, static_cast<int>(tokens), pos0, model.kv_heads, hd);
    tol = ref::rope_tolerance(pos0 + static_cast<int>(tokens) - 1, std::max(max_abs(q), max_abs(k)));
    d_q.upload(q);
    d_k.upload(k);
  };
  new_inputs(s.seed());
  s.measure({.variant = "rope",
             .size = {{"tokens", tokens}, {"heads", model.q_heads + model.kv_heads}, {"head_dim", hd}},
             .work = {.bytes = 8.0 * static_cast<double>(nq + nk)},  // q and k read and written
             .run =
                 [&](cudaStream_t st) {
                   lab29::rope(d_q.data(), d_k.data(), d_q_out.data(), d_k_out.data(), d_inv_freq.data(),
                               static_cast<int>(tokens), pos0, model.q_heads, model.kv_heads, hd, st);
                 },
             .check =
                 [&] {
                   return ref::with_failures(cudalabs::check_close(d_q_out.download(), q_ref, tol),
                                             {ref::labelled(cudalabs::check_close(d_k_out.download(), k_ref, tol), "k")});
                 },
             .poison =
                 [&](cudaStream_t st) {
                   d_q_out.poison(st);
                   d_k_out.poison(st);
                 },
             .new_inputs = new_inputs,
             .resources = lab29::rope_resources()});
}

void measure_swiglu(cudalabs::Session& s, const Model& model, std::int64_t tokens) {
  const auto n = static_cast<std::size_t>(tokens) * model.mlp;
  DeviceBuffer<float> d_gate(n, "gate"), d_up(n, "up"), d_out(n, "out");
  std::vector<double> expected;
  // gate over [-6, 6): silu's whole bend, its near-zero tail and its linear part.
  auto new_inputs = [&](std::uint64_t seed) {
    const auto gate = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1), -6.0f, 6.0f);
    const auto up = cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2), -2.0f, 2.0f);
    expected = ref::swiglu(gate, up);
    d_gate.upload(gate);
    d_up.upload(up);
  };
  new_inputs(s.seed());
  s.measure({.variant = "swiglu",
             .size = {{"tokens", tokens}, {"mlp", model.mlp}},
             .work = {.bytes = 12.0 * static_cast<double>(n)},
             .run = [&](cudaStream_t st) { lab29::swiglu(d_gate.data(), d_up.data(), d_out.data(), static_cast<std::int64_t>(n), st); },
             .check = [&] { return cudalabs::check_close(d_out.download(), expected, ref::swiglu_tolerance); },
             .poison = [&](cudaStream_t st) { d_out.poison(st); },
             .new_inputs = new_inputs,
             .resources = lab29::swiglu_resources()});
}

void measure_argmax(cudalabs::Session& s, const Model& model) {
  const int n = model.vocab;
  DeviceBuffer<float> d_logits(static_cast<std::size_t>(n), "logits");
  DeviceBuffer<int> d_index(1, "argmax");
  DeviceBuffer<std::byte> d_workspace(lab29::argmax_workspace_bytes(), "argmax workspace");
  d_workspace.zero();
  CUDALABS_CHECK(cudaDeviceSynchronize());
  int expected = 0;
  // Logits from U[-10, 10), and the maximum planted twice, at two places the
  // seed picks: the answer is the first of them (a kernel that keeps the last
  // maximum, or any one, fails).
  auto new_inputs = [&](std::uint64_t seed) {
    auto logits = cudalabs::random_floats(static_cast<std::size_t>(n), cudalabs::mix_seed(seed, 1), -10.0f, 10.0f);
    const auto a = static_cast<int>(cudalabs::mix_seed(seed, 2) % static_cast<std::uint64_t>(n));
    const auto b = static_cast<int>(cudalabs::mix_seed(seed, 3) % static_cast<std::uint64_t>(n));
    logits[static_cast<std::size_t>(a)] = logits[static_cast<std::size_t>(b)] = 12.5f;
    expected = ref::argmax(logits);
    d_logits.upload(logits);
  };
  new_inputs(s.seed());
  s.measure({.variant = "argmax",
             .size = {{"vocab", n}},
             .work = {.bytes = 4.0 * n + 4.0},
             .run = [&](cudaStream_t st) { lab29::argmax(d_logits.data(), n, d_index.data(), d_workspace.data(), st); },
             .check =
                 [&] {
                   const std::vector<float> got{static_cast<float>(d_index.download()[0])};
                   const std::vector<double> want{static_cast<double>(expected)};
                   return cudalabs::check_close(got, want, {.abs = 0, .rel = 0});
                 },
             .poison = [&](cudaStream_t st) { d_index.poison(st); },
             .new_inputs = new_inputs,
             .resources = lab29::argmax_resources()});
}

// ---- one decode step of a Llama-style layer ---------------------------------------------

// The weights of one layer, GGUF-quantised, and their repacked copies on the device.
struct LayerMatrix {
  ref::QuantMatrix host;
  DeviceBuffer<std::uint8_t> device;  // `copies` repacked (planar or 4-byte-aligned) copies
  std::size_t copy_bytes = 0;
  const void* copy(int c) const { return device.data() + c * copy_bytes; }
};

// The new token at position p = positions - 1 of a cache that holds positions
// 0..p-1, for one layer (13 launcher calls, 14 kernels):
//   a1 = int8(rmsnorm(h_in)·g1)                            add_rmsnorm_quant (no residual)
//   qkv = Wqkv·a1                                          matvec (q, k, v of all heads in one)
//   q, k = rope(q, k, p)                                   rope
//   cache[p] = half(k), half(v)                            kv_append
//   o = attention(q, cache[0..p])                          attention_decode (2 kernels)
//   attn = Wo·int8(o)                                      quantize_q8, matvec
//   h_mid = h_in + attn; a2 = int8(rmsnorm(h_mid)·g2)       add_rmsnorm_quant
//   gu = Wgate_up·a2                                       matvec (gate and up in one)
//   h_out = h_mid + Wdown·int8(silu(gate)·up)              swiglu, quantize_q8, matvec (+ residual)
// Every matvec is matvec_planar (F_dp4a_split) on the planar layout of `format`,
// or with --decode-matvec rows matvec_dp4a_rows on 4-byte-aligned blocks. The
// matrices are the model: drawn once; new_inputs draws a new hidden state,
// new norm weights and a new cache.
class DecodeStep {
 public:
  static constexpr int launches = 14;  // kernels: attention_decode is two

  // The weights from weight_seed, repacked on `stream`; rotated copies to fill 2 × dev's L2.
  DecodeStep(const Model& m, const Settings& settings, int positions, const cudalabs::DeviceInfo& dev,
             std::uint64_t weight_seed, cudaStream_t stream)
      : m_(m),
        f_(settings.decode_format),
        positions_(positions),
        rows_per_warp_(settings.rows_per_warp),
        warps_per_row_(settings.warps_per_row),
        split_(settings.decode_split),
        qkv_rows_((m.q_heads + 2 * m.kv_heads) * m.head_dim),
        kv_dim_(m.kv_heads * m.head_dim),
        inv_freq_(ref::rope_inv_freq(m.rope_base, m.head_dim)),
        d_inv_freq_(inv_freq_, "rope frequencies"),
        d_g1_(static_cast<std::size_t>(m.hidden), "g1"),
        d_g2_(static_cast<std::size_t>(m.hidden), "g2"),
        d_h_in_(static_cast<std::size_t>(m.hidden), "h_in"),
        a1_(static_cast<std::size_t>(m.hidden), "a1"),
        d_qkv_(static_cast<std::size_t>(qkv_rows_), "qkv"),
        d_q_rot_(static_cast<std::size_t>(m.q_heads) * m.head_dim, "rotated q"),
        d_k_rot_(static_cast<std::size_t>(kv_dim_), "rotated k"),
        d_k_cache_(static_cast<std::size_t>(positions) * kv_dim_, "k cache"),
        d_v_cache_(static_cast<std::size_t>(positions) * kv_dim_, "v cache"),
        d_attn_ws_(lab29::attention_workspace_floats(positions, m.q_heads, m.head_dim), "attention partials"),
        d_o_(static_cast<std::size_t>(m.hidden), "attention output"),
        o_q_(static_cast<std::size_t>(m.hidden), "int8 attention output"),
        d_attn_(static_cast<std::size_t>(m.hidden), "attn"),
        d_h_mid_(static_cast<std::size_t>(m.hidden), "h_mid"),
        a2_(static_cast<std::size_t>(m.hidden), "a2"),
        d_gu_(2 * static_cast<std::size_t>(m.mlp), "gate, up"),
        d_s_(static_cast<std::size_t>(m.mlp), "silu(gate)·up"),
        s_q_(static_cast<std::size_t>(m.mlp), "int8 silu(gate)·up"),
        d_h_out_(static_cast<std::size_t>(m.hidden), "h_out") {
    // Entries U(-a, a), a = sqrt(3 / cols), keep every activation near unit
    // size, as a trained model's are (and attention's scores spread over a few units).
    const std::vector<MatvecShape> shapes{{qkv_rows_, m.hidden}, {m.hidden, m.hidden}, {2 * m.mlp, m.hidden}, {m.hidden, m.mlp}};
    weight_bytes_ = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      weight_bytes_ += static_cast<double>(shapes[i].rows) * shapes[i].cols / ref::qk * lab29::gguf_block_bytes(f_);
    copies_ = layer_copies(settings, weight_bytes_, dev);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto [rows, cols] = shapes[i];
      const auto values = static_cast<std::size_t>(rows) * cols;
      const float a = std::sqrt(3.0f / static_cast<float>(cols));
      LayerMatrix& lm = matrices_[i];
      lm.host = ref::quantize_matrix(f_, cudalabs::random_floats(values, cudalabs::mix_seed(weight_seed, i), -a, a), rows, cols);
      const std::int64_t blocks = static_cast<std::int64_t>(values / ref::qk);
      lm.copy_bytes = split_ ? planar_copy_bytes(static_cast<std::size_t>(blocks) * lab29::gguf_block_bytes(f_))
                             : static_cast<std::size_t>(blocks) * lab29::aligned_block_bytes(f_);
      lm.device = DeviceBuffer<std::uint8_t>(copies_ * lm.copy_bytes, "a layer's repacked weights, every copy");
      // A planar copy is rounded up to 256 bytes; no kernel reads the padding,
      // but the copies below move it, and compute-sanitizer's initcheck rightly
      // flags a copy of bytes nobody wrote. Zero it once, outside any timing.
      CUDALABS_CHECK(cudaMemsetAsync(lm.device.data(), 0, copies_ * lm.copy_bytes, stream));
      DeviceBuffer<std::uint8_t> gguf(lm.host.bytes, "a layer's GGUF weights");
      max_abs_[i] = ref::max_abs_value(lm.host);
      (split_ ? lab29::repack_planar : lab29::repack_aligned)(f_, gguf.data(), lm.device.data(), blocks, stream);
      CUDALABS_CHECK(cudaStreamSynchronize(stream));
      for (int c = 1; c < copies_; ++c)
        CUDALABS_CHECK(cudaMemcpy(lm.device.data() + c * lm.copy_bytes, lm.device.data(), lm.copy_bytes,
                                  cudaMemcpyDeviceToDevice));
    }
    CUDALABS_CHECK(cudaDeviceSynchronize());
  }

  // The step's inputs: h_in from U[-1, 1), norm weights from U[0.5, 1.5), the
  // cache's positions 0..p-1 from U[-sqrt 3, sqrt 3) (unit variance, like
  // rotated keys and values) as halfs.
  void new_inputs(std::uint64_t seed) {
    h_in_ = cudalabs::random_floats(static_cast<std::size_t>(m_.hidden), cudalabs::mix_seed(seed, 1));
    g1_ = cudalabs::random_floats(static_cast<std::size_t>(m_.hidden), cudalabs::mix_seed(seed, 2), 0.5f, 1.5f);
    g2_ = cudalabs::random_floats(static_cast<std::size_t>(m_.hidden), cudalabs::mix_seed(seed, 3), 0.5f, 1.5f);
    const auto cache_values = static_cast<std::size_t>(positions_) * kv_dim_;
    const float r = std::sqrt(3.0f);
    const auto k = cudalabs::random_floats(cache_values, cudalabs::mix_seed(seed, 4), -r, r);
    const auto v = cudalabs::random_floats(cache_values, cudalabs::mix_seed(seed, 5), -r, r);
    k_cache_.resize(cache_values);
    v_cache_.resize(cache_values);
    for (std::size_t i = 0; i < cache_values; ++i) k_cache_[i] = __float2half_rn(k[i]), v_cache_[i] = __float2half_rn(v[i]);
    d_h_in_.upload(h_in_);
    d_g1_.upload(g1_);
    d_g2_.upload(g2_);
    d_k_cache_.upload(k_cache_);  // row p is overwritten by every step
    d_v_cache_.upload(v_cache_);
  }

  // y = matrix i (copy c) · x (+ residual): the step's one matvec kernel.
  void matvec(int i, int c, lab29::QuantizedVector x, const float* residual, float* y, int rows, int cols,
              cudaStream_t st) const {
    if (split_) lab29::matvec_planar(f_, matrices_[i].copy(c), x, residual, y, rows, cols, warps_per_row_, st);
    else lab29::matvec_dp4a_rows(f_, matrices_[i].copy(c), x, residual, y, rows, cols, rows_per_warp_, st);
  }

  void enqueue(cudaStream_t st, int c) {
    const int p = positions_ - 1, hd = m_.head_dim, nq = m_.q_heads, nkv = m_.kv_heads;
    const int D = m_.hidden, F = m_.mlp;
    lab29::add_rmsnorm_quant(d_h_in_.data(), nullptr, d_g1_.data(), nullptr, a1_.view(), 1, D, m_.norm_eps, st);
    matvec(0, c, a1_.view(), nullptr, d_qkv_.data(), qkv_rows_, D, st);
    float* q = d_qkv_.data();
    float* k = q + static_cast<std::ptrdiff_t>(nq) * hd;
    float* v = k + kv_dim_;
    lab29::rope(q, k, d_q_rot_.data(), d_k_rot_.data(), d_inv_freq_.data(), 1, p, nq, nkv, hd, st);
    lab29::kv_append(d_k_rot_.data(), v, d_k_cache_.data(), d_v_cache_.data(), p, nkv, hd, st);
    lab29::attention_decode(d_q_rot_.data(), d_k_cache_.data(), d_v_cache_.data(), d_o_.data(), d_attn_ws_.data(),
                            positions_, nq, nkv, hd, st);
    lab29::quantize_q8(d_o_.data(), o_q_.view(), D, st);
    matvec(1, c, o_q_.view(), nullptr, d_attn_.data(), D, D, st);
    lab29::add_rmsnorm_quant(d_h_in_.data(), d_attn_.data(), d_g2_.data(), d_h_mid_.data(), a2_.view(), 1, D,
                             m_.norm_eps, st);
    matvec(2, c, a2_.view(), nullptr, d_gu_.data(), 2 * F, D, st);
    lab29::swiglu(d_gu_.data(), d_gu_.data() + F, d_s_.data(), F, st);
    lab29::quantize_q8(d_s_.data(), s_q_.view(), F, st);
    matvec(3, c, s_q_.view(), d_h_mid_.data(), d_h_out_.data(), D, F, st);
  }

  // Everything the step writes, the cache's row p included, and the attention
  // partials (a kernel that skipped them would otherwise find the last run's).
  void poison(cudaStream_t st) {
    a1_.poison(st);
    for (auto* b : {&d_qkv_, &d_q_rot_, &d_k_rot_, &d_attn_ws_, &d_o_, &d_attn_, &d_h_mid_, &d_gu_, &d_s_, &d_h_out_})
      b->poison(st);
    o_q_.poison(st);
    a2_.poison(st);
    s_q_.poison(st);
    const std::size_t row = static_cast<std::size_t>(positions_ - 1) * kv_dim_;
    CUDALABS_CHECK(cudaMemsetAsync(d_k_cache_.data() + row, 0xFF, kv_dim_ * sizeof(__half), st));
    CUDALABS_CHECK(cudaMemsetAsync(d_v_cache_.data() + row, 0xFF, kv_dim_ * sizeof(__half), st));
  }

  // Stage by stage, each kernel against a reference computed from the inputs
  // it actually got (the previous kernel's downloaded output): no stage's
  // rounding can blur the next one's check. The record keeps the last
  // stage's numbers (h_out); any other stage that fails is added by name.
  cudalabs::CheckResult check() const {
    const int p = positions_ - 1, hd = m_.head_dim, nq = m_.q_heads, nkv = m_.kv_heads, D = m_.hidden, F = m_.mlp;
    using cudalabs::check_close;
    // Every stage's output observed as it is downloaded: the references of the
    // later stages are computed from it, so a judge computes them from the
    // graded program's outputs (cudalabs/evidence.hpp).
    std::string missing;
    const auto a1 = a1_.download_observed(missing);
    const auto qkv = d_qkv_.download_observed(missing);
    const auto q_rot = d_q_rot_.download_observed(missing), k_rot = d_k_rot_.download_observed(missing);
    const auto o = d_o_.download_observed(missing);
    const auto o_q = o_q_.download_observed(missing);
    const auto attn = d_attn_.download_observed(missing), h_mid = d_h_mid_.download_observed(missing);
    const auto a2 = a2_.download_observed(missing);
    const auto gu = d_gu_.download_observed(missing), s = d_s_.download_observed(missing);
    const auto s_q = s_q_.download_observed(missing);
    const auto h_out = d_h_out_.download_observed(missing);
    if (!missing.empty()) return cudalabs::missing_output(h_out.size(), missing);
    const std::span<const float> q_in(qkv.data(), static_cast<std::size_t>(nq) * hd);
    const std::span<const float> k_in(qkv.data() + q_in.size(), static_cast<std::size_t>(kv_dim_));
    const std::span<const float> v_in(k_in.data() + kv_dim_, static_cast<std::size_t>(kv_dim_));

    auto matvec_check = [&](int i, const ref::QuantVector& x, std::span<const float> got, const float* residual) {
      std::vector<double> want = ref::matvec(matrices_[i].host, x);
      if (residual)
        for (std::size_t r = 0; r < want.size(); ++r) want[r] += residual[r];
      return check_close(got, want, ref::matvec_tolerance(matrices_[i].host.cols, max_abs_[i], max_abs(x)));
    };
    // The cache: rows 0..p-1 untouched, row p = half(rotated k), half(v).
    std::vector<float> k_want(k_cache_.size()), v_want(v_cache_.size());
    for (std::size_t i = 0; i < k_want.size(); ++i) {
      const bool new_row = i >= static_cast<std::size_t>(p) * kv_dim_;
      const std::size_t j = i - static_cast<std::size_t>(p) * kv_dim_;
      k_want[i] = new_row ? __half2float(__float2half_rn(k_rot[j])) : __half2float(k_cache_[i]);
      v_want[i] = new_row ? __half2float(__float2half_rn(v_in[j])) : __half2float(v_cache_[i]);
    }
    const auto as_float = [](const std::vector<__half>& h) {
      std::vector<float> f(h.size());
      for (std::size_t i = 0; i < h.size(); ++i) f[i] = __half2float(h[i]);
      return f;
    };
    const auto attention = ref::attention(q_rot, k_want, v_want, positions_, nq, nkv, hd);
    const auto rope_tol = ref::rope_tolerance(p, std::max(max_abs(q_in), max_abs(k_in)));
    std::vector<double> h_mid_want(static_cast<std::size_t>(D));
    for (int i = 0; i < D; ++i) h_mid_want[static_cast<std::size_t>(i)] = static_cast<double>(h_in_[static_cast<std::size_t>(i)]) + attn[static_cast<std::size_t>(i)];
    const std::span<const float> gate(gu.data(), static_cast<std::size_t>(F)), up(gu.data() + F, static_cast<std::size_t>(F));
    return ref::with_failures(
        ref::labelled(matvec_check(3, s_q, h_out, h_mid.data()), "h_out = h_mid + Wdown·int8(s)"),
        {ref::labelled(ref::check_quantized(a1, ref::rmsnorm(h_in_, g1_, 1, D, m_.norm_eps)), "a1 = int8(rmsnorm(h_in))"),
         ref::labelled(matvec_check(0, a1, qkv, nullptr), "qkv = Wqkv·a1"),
         ref::labelled(check_close(q_rot, ref::rope(q_in, inv_freq_, 1, p, nq, hd), rope_tol), "rope(q)"),
         ref::labelled(check_close(k_rot, ref::rope(k_in, inv_freq_, 1, p, nkv, hd), rope_tol), "rope(k)"),
         ref::labelled(check_close(as_float(d_k_cache_.download()), k_want, {.abs = 0, .rel = 0}), "k cache"),
         ref::labelled(check_close(as_float(d_v_cache_.download()), v_want, {.abs = 0, .rel = 0}), "v cache"),
         ref::labelled(check_close(o, attention.o, ref::attention_tolerance(attention, hd, positions_)), "attention"),
         ref::labelled(ref::check_quantized(o_q, std::vector<double>(o.begin(), o.end())), "int8(o)"),
         ref::labelled(matvec_check(1, o_q, attn, nullptr), "attn = Wo·int8(o)"),
         ref::labelled(check_close(h_mid, h_mid_want, {.abs = 0, .rel = ref::eps32}), "h_mid = h_in + attn"),
         ref::labelled(ref::check_quantized(a2, ref::rmsnorm(h_mid, g2_, 1, D, m_.norm_eps)), "a2 = int8(rmsnorm(h_mid))"),
         ref::labelled(matvec_check(2, a2, gu, nullptr), "gate, up = Wgu·a2"),
         ref::labelled(check_close(s, ref::swiglu(gate, up), ref::swiglu_tolerance), "s = silu(gate)·up"),
         ref::labelled(ref::check_quantized(s_q, std::vector<double>(s.begin(), s.end())), "int8(s)")});
  }

  // How far the int8 activations take the step from the same layer computed
  // in double with fp32 activations (the fp16 cache kept): one line for the notes.
  std::string drift_note() const {
    const int p = positions_ - 1, hd = m_.head_dim, nq = m_.q_heads, nkv = m_.kv_heads, D = m_.hidden, F = m_.mlp;
    const auto a1 = to_float(ref::rmsnorm(h_in_, g1_, 1, D, m_.norm_eps));
    const auto qkv = to_float(ref::matvec(matrices_[0].host, a1));
    const std::span<const float> q_in(qkv.data(), static_cast<std::size_t>(nq) * hd);
    const std::span<const float> k_in(qkv.data() + q_in.size(), static_cast<std::size_t>(kv_dim_));
    const auto q_rot = to_float(ref::rope(q_in, inv_freq_, 1, p, nq, hd));
    const auto k_rot = ref::rope(k_in, inv_freq_, 1, p, nkv, hd);
    std::vector<float> k(k_cache_.size()), v(v_cache_.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      const bool new_row = i >= static_cast<std::size_t>(p) * kv_dim_;
      const std::size_t j = i - static_cast<std::size_t>(p) * kv_dim_;
      k[i] = __half2float(new_row ? __float2half_rn(static_cast<float>(k_rot[j])) : k_cache_[i]);
      v[i] = __half2float(new_row ? __float2half_rn(qkv[q_in.size() + kv_dim_ + j]) : v_cache_[i]);
    }
    const auto o = to_float(ref::attention(q_rot, k, v, positions_, nq, nkv, hd).o);
    const auto attn = ref::matvec(matrices_[1].host, o);
    std::vector<float> h_mid(static_cast<std::size_t>(D));
    for (std::size_t i = 0; i < h_mid.size(); ++i) h_mid[i] = static_cast<float>(h_in_[i] + attn[i]);
    const auto gu = to_float(ref::matvec(matrices_[2].host, to_float(ref::rmsnorm(h_mid, g2_, 1, D, m_.norm_eps))));
    const auto act = to_float(ref::swiglu(std::span<const float>(gu.data(), static_cast<std::size_t>(F)),
                                          std::span<const float>(gu.data() + F, static_cast<std::size_t>(F))));
    auto want = ref::matvec(matrices_[3].host, act);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += h_mid[i];
    const auto r = cudalabs::check_close(d_h_out_.download(), want, {.abs = 0, .rel = 0});
    char buf[160];
    std::snprintf(buf, sizeof buf, "h_out vs the same layer in double with fp32 activations: relative L2 error %.2e "
                  "(the int8 activations; max |err| %.2e)", r.rel_l2_err, r.max_abs_err);
    return buf;
  }

  int copies() const { return copies_; }
  // The bytes a step must move: the layer's GGUF weights, the cache's keys and
  // values once, the norm weights, h_in and h_out.
  double bytes() const { return weight_bytes_ + 4.0 * positions_ * kv_dim_ + 16.0 * m_.hidden; }
  double flops() const {
    return 2.0 * (weight_bytes_ / lab29::gguf_block_bytes(f_) * ref::qk) + 4.0 * positions_ * m_.q_heads * m_.head_dim;
  }

 private:
  const Model& m_;
  Format f_;
  int positions_, rows_per_warp_, warps_per_row_;
  bool split_;
  int qkv_rows_, kv_dim_;
  int copies_ = 1;
  double weight_bytes_ = 0;
  LayerMatrix matrices_[4];  // qkv, o, gate_up, down
  double max_abs_[4] = {};
  std::vector<float> inv_freq_, h_in_, g1_, g2_;
  std::vector<__half> k_cache_, v_cache_;
  DeviceBuffer<float> d_inv_freq_, d_g1_, d_g2_, d_h_in_;
  DeviceQuantVector a1_;
  DeviceBuffer<float> d_qkv_, d_q_rot_, d_k_rot_;
  DeviceBuffer<__half> d_k_cache_, d_v_cache_;
  DeviceBuffer<float> d_attn_ws_, d_o_;
  DeviceQuantVector o_q_;
  DeviceBuffer<float> d_attn_, d_h_mid_;
  DeviceQuantVector a2_;
  DeviceBuffer<float> d_gu_, d_s_;
  DeviceQuantVector s_q_;
  DeviceBuffer<float> d_h_out_;
};

void measure_decode(cudalabs::Session& s, const Model& model, const Settings& settings, int positions) {
  DecodeStep step(model, settings, positions, s.device(), s.seed(10), s.stream());
  step.new_inputs(s.seed());
  const cudalabs::Point point{{"hidden", model.hidden}, {"kv", positions}};
  Rotation layer{step.copies()};
  // The resources row shows the step's matvec kernel, as the down projection (hidden × mlp) runs it.
  const cudalabs::KernelResources decode_resources =
      settings.decode_split
          ? lab29::matvec_planar_resources(settings.decode_format, lab29::matvec_planar_warps(settings.decode_format, model.hidden,
                                                                                              model.mlp, settings.warps_per_row))
          : lab29::matvec_dp4a_rows_resources(settings.decode_format, settings.rows_per_warp);
  auto measurement = [&](const std::string& variant, std::function<void(cudaStream_t)> run) {
    cudalabs::Measurement m{.variant = variant,
                            .size = point,
                            .work = {.bytes = step.bytes(), .flops = step.flops()},
                            .run = std::move(run),
                            .check = [&] { return step.check(); },
                            .poison = [&](cudaStream_t st) { step.poison(st); },
                            .new_inputs = [&](std::uint64_t seed) { step.new_inputs(seed); },
                            .resources = decode_resources};
    m.extra["launches"] = DecodeStep::launches;
    m.extra["split_matvec"] = settings.decode_split ? 1 : 0;
    m.extra["layers"] = step.copies();
    m.extra["format_bits"] = settings.decode_format == Format::q8_0 ? 8 : 4;
    return m;
  };
  const auto& eager = s.measure(measurement("decode_eager", [&](cudaStream_t st) { step.enqueue(st, layer.advance()); }));
  const double eager_ms = eager.timed ? eager.timing.median_ms : 0.0;
  s.note(std::string(model.name) + " decode step, kv " + std::to_string(positions) + ": " + step.drift_note());
  if (!s.selected("decode_graph")) return;

  // One graph per layer copy, captured and instantiated here, outside every timing.
  std::vector<GraphExec> graphs;
  for (int c = 0; c < step.copies(); ++c)
    graphs.push_back(GraphExec::capture(s.stream(), [&](cudaStream_t st) { step.enqueue(st, c); }));
  auto m = measurement("decode_graph", [&](cudaStream_t st) { graphs[static_cast<std::size_t>(layer.advance())].launch(st); });
  m.extra["eager_ms"] = eager_ms;
  const auto& graph = s.measure(m);
  if (eager_ms > 0 && graph.timed) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s decode step, kv %d: the graph takes %.4g ms, eager launches %.4g ms: %.1f%% saved",
                  model.name.c_str(), positions, graph.timing.median_ms, eager_ms,
                  100.0 * (1.0 - graph.timing.median_ms / eager_ms));
    s.note(buf);
  }
}

}  // namespace

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
                 .default_value = "q8_0"}},
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
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, 13.25 * model->hidden)}) measure_rmsnorm(s, *model, t);
      if (s.selected("rope"))
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, rope_bytes)}) measure_rope(s, *model, t, first_kv - 1);
      if (s.selected("swiglu"))
        for (std::int64_t t : {std::int64_t{1}, batch_tokens(settings, 12.0 * model->mlp)}) measure_swiglu(s, *model, t);
      if (s.selected("argmax")) measure_argmax(s, *model);
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
