#pragma once
// Lab 29's host code that its parts share: the models, the lab's flags
// (Settings), and what every measurement uses (weights in copies that rotate
// past the L2, int8 vectors on the device, CUDA graphs). The measurements, one
// file per topic, all course code:
//   matvec.cpp          the quantised matrix-vector products and their cuBLAS baseline
//   small_kernels.cpp   RMSNorm, RoPE, SwiGLU and argmax, at batch 1 and at a batch of tokens
//   decode_step.cpp     one decode step of a Llama-style layer, eager and as a CUDA graph
// main.cu declares the lab (its flags and variants) and runs them.
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
#include <cudalabs/evidence.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>
#include <span>

#include "decode_reference.hpp"
#include "kernels.hpp"

namespace lab29host {

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

const std::vector<Model>& models();
const char* format_name(Format f);

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
  std::string inputs = "random";  // --inputs: random, large, tiny or ties (inputs_flag in main.cu)
};

Settings settings_of(const cudalabs::Options& o);

// ---- helpers ----------------------------------------------------------------------

// A model's layers each have their own weights, so a real decode step never
// finds its weights in L2. The lab keeps `copies` copies of the same weights
// and each run uses the next: with 2 × L2 of them (100 MB on an H100), every
// run reads its weights from DRAM, as a model does. --layers 1 keeps one copy
// (the small shapes then run from the 50 MB L2). --quick, a correctness run,
// keeps 2: the rotation is exercised, and a sanitizer has 2 graphs to build, not 64.
constexpr int max_layer_copies = 64;
int layer_copies(const Settings& settings, double bytes, const cudalabs::DeviceInfo& dev);

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
void upload_copies(DeviceBuffer<std::uint8_t>& dst, const std::vector<std::uint8_t>& src, int copies);

// Each GGUF copy of `gguf` repacked into the same copy of `out` by `repack`,
// the kernel file's repack_aligned or repack_planar (untimed: a loader does it once).
using Repack = void (*)(Format, const void*, void*, std::int64_t, cudaStream_t);
void repack_copies(Repack repack, Format f, const DeviceBuffer<std::uint8_t>& gguf, DeviceBuffer<std::uint8_t>& out,
                   int copies, std::int64_t blocks, cudaStream_t stream);

// The room one planar copy takes in a buffer of copies: its bytes rounded up to 256.
std::size_t planar_copy_bytes(std::size_t bytes);

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
bool any_selected(const cudalabs::Session& s, std::initializer_list<std::string> names);

double max_abs(std::span<const float> v);
// The largest |value| an int8 vector can hold: 127 steps of its largest scale.
double max_abs(const ref::QuantVector& v);

std::vector<float> to_float(const std::vector<double>& v);

// ---- the measurements: one file each ------------------------------------------------------

// main.cu: the baseline's first kernel, GGUF blocks of `f` to `values` fp32
// values (course code, and device code: main.cu is the file nvcc compiles).
void dequantize(Format f, const std::uint8_t* w, float* out, std::int64_t values, cudaStream_t stream);
cudalabs::KernelResources dequantize_resources(Format f);

// matvec.cpp: y = W·x for one format and shape, every matvec variant and the baseline.
void measure_matvec(cudalabs::Session& s, cudalabs::Cublas& blas, const Settings& settings, Format f, MatvecShape shape);

// small_kernels.cpp
// Tokens for the batch rows: --tokens, or 7 with --quick, or the power of two
// that makes the kernel move at least 256 MiB (5x the H100's L2).
std::int64_t batch_tokens(const Settings& settings, double bytes_per_token);
void measure_rmsnorm(cudalabs::Session& s, const Model& model, std::int64_t tokens, const std::string& inputs);
void measure_rope(cudalabs::Session& s, const Model& model, std::int64_t tokens, int pos0);
void measure_swiglu(cudalabs::Session& s, const Model& model, std::int64_t tokens);
void measure_argmax(cudalabs::Session& s, const Model& model, const std::string& inputs);

// decode_step.cpp: the decode step at `positions` (the KV cache's length), eager and as a graph.
void measure_decode(cudalabs::Session& s, const Model& model, const Settings& settings, int positions);

}  // namespace lab29host
