// Lab 29's decode step: one Llama-style layer for one new token, its 14 kernels
// launched one by one (decode_eager) and captured once into a CUDA graph
// (decode_graph), on weights that rotate past the L2 as a model's layers do.
#include "host_common.hpp"

namespace lab29host {
namespace {

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

}  // namespace

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
  m.keeps_pointers = "a CUDA graph replays the buffer addresses it captured";
  const auto& graph = s.measure(m);
  if (eager_ms > 0 && graph.timed) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s decode step, kv %d: the graph takes %.4g ms, eager launches %.4g ms: %.1f%% saved",
                  model.name.c_str(), positions, graph.timing.median_ms, eager_ms,
                  100.0 * (1.0 - graph.timing.median_ms / eager_ms));
    s.note(buf);
  }
}

}  // namespace lab29host
