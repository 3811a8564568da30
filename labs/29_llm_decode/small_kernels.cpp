// Lab 29's small kernels, the launches between a layer's matvecs: residual add +
// RMSNorm + int8 quantisation, RoPE, SwiGLU and argmax, each at batch 1 (as in
// decoding: launch-bound) and at a batch of tokens (bandwidth-bound).
#include "host_common.hpp"
#include "value_kinds.hpp"

namespace lab29host {

std::int64_t batch_tokens(const Settings& settings, double bytes_per_token) {
  if (settings.tokens > 0) return settings.tokens;
  if (settings.quick) return 7;
  std::int64_t t = 1;
  while (static_cast<double>(t) * bytes_per_token < 256.0 * (1 << 20)) t *= 2;
  return t;
}

void measure_rmsnorm(cudalabs::Session& s, const Model& model, std::int64_t tokens, const std::string& inputs) {
  const int dim = model.hidden;
  const auto n = static_cast<std::size_t>(tokens) * dim;
  DeviceBuffer<float> d_x(n, "x"), d_delta(n, "delta"), d_h(n, "h"), d_g(static_cast<std::size_t>(dim), "g");
  DeviceQuantVector d_out(n, "int8 output");
  std::vector<double> h_exact, y_exact;
  // x, delta from U[-1, 1), g from U[0.5, 1.5). h is float (the residual
  // stream is), so the reference normalises the float sum. --inputs large and
  // tiny scale x and delta by 2^e (exactly; y = h/rms(h)·g is the same but for eps):
  //   large: e in [20, 40], activations up to 2^41 (an LLM's outlier channels
  //          reach 1e4): a sum of squares held in FP16 (65504) overflows;
  //          the float sum stays below dim·2^82.
  //   tiny:  e in [-11, -7], mean(h²) = (2/3)·2^2e from 2^-22.6 to 2^-14.6,
  //          about the norm's eps (1e-5 = 2^-16.6, 1e-6 = 2^-19.9):
  //          1/sqrt(mean + eps) differs from 1/sqrt(mean) by 1% to 8x, where
  //          random inputs (mean(h²) = 2/3) keep both under 1e-5, so a
  //          kernel that drops eps or puts it outside the root fails the
  //          block scales' check (rel 1e-5).
  // --inputs ties is argmax's alone: random activations here.
  auto new_inputs = [&](std::uint64_t seed) {
    const int e = inputs == "ties" ? 0 : value_kinds::kind_exponent(inputs, cudalabs::mix_seed(seed, 4), {20, 40, -11, -7});
    const auto x = e == 0 ? cudalabs::random_floats(n, cudalabs::mix_seed(seed, 1))
                          : value_kinds::scaled_floats(n, cudalabs::mix_seed(seed, 1), e);
    const auto delta = e == 0 ? cudalabs::random_floats(n, cudalabs::mix_seed(seed, 2))
                              : value_kinds::scaled_floats(n, cudalabs::mix_seed(seed, 2), e);
    const auto g = cudalabs::random_floats(static_cast<std::size_t>(dim), cudalabs::mix_seed(seed, 3), 0.5f, 1.5f);
    if (cudalabs::evidence::keeps_references()) {  // none in a graded program (evidence::keeps_references)
      std::vector<float> h(n);
      h_exact.resize(n);
      for (std::size_t i = 0; i < n; ++i) h[i] = x[i] + delta[i], h_exact[i] = static_cast<double>(x[i]) + delta[i];
      y_exact = ref::rmsnorm(h, g, tokens, dim, model.norm_eps);
    }
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
    if (cudalabs::evidence::keeps_references()) {
      q_ref = ref::rope(q, inv_freq, static_cast<int>(tokens), pos0, model.q_heads, hd);
      k_ref = ref::rope(k, inv_freq, static_cast<int>(tokens), pos0, model.kv_heads, hd);
    }
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
    if (cudalabs::evidence::keeps_references()) expected = ref::swiglu(gate, up);
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

void measure_argmax(cudalabs::Session& s, const Model& model, const std::string& inputs) {
  const int n = model.vocab;
  DeviceBuffer<float> d_logits(static_cast<std::size_t>(n), "logits");
  DeviceBuffer<int> d_index(1, "argmax");
  DeviceBuffer<std::byte> d_workspace(lab29::argmax_workspace_bytes(), "argmax workspace");
  d_workspace.zero();
  CUDALABS_CHECK(cudaDeviceSynchronize());
  int expected = 0;
  // Logits from U[-10, 10), and the maximum planted twice, at two places the
  // seed picks: the answer is the first of them (a kernel that keeps the last
  // maximum, or any one, fails). --inputs large and tiny (e drawn per seed):
  //   large: U[-2, -1)·2^e, e in [100, 126], every logit below -2^100 (-1.3e30)
  //          and the planted maximum -2^e: a running maximum that starts at 0
  //          or at a finite sentinel (-1e9, -1e30) instead of -Inf or -FLT_MAX
  //          never moves, and the kernel answers 0 or -1.
  //   tiny:  U[-1, 1)·2^e, e in [-100, -80] (normal floats), the planted
  //          maximum 2^e: a comparison with a tolerance (x > best + 1e-6f)
  //          sees every logit as equal.
  //   ties:  U[-10, 10) before a position f, the maximum at f and at every
  //          position after it; f is a multiple of 64 in the first quarter of
  //          the vocabulary (0 included: every logit equal), drawn per seed.
  //          The answer is f. The two planted maxima above share a thread of
  //          the course kernel's grid-stride loop in about one draw in 340 at
  //          tiny's 1009 logits over 256 threads (3 of the other 1008
  //          positions are a's thread's), far fewer at the vocabularies of
  //          small and 8b; here the thread that reads f reads later maxima too,
  //          whatever its stride (any below 3/4 of the vocabulary) or its runs
  //          of consecutive logits (any length dividing 64: f starts a run),
  //          so a per-thread loop that keeps the last of equal values (>=)
  //          answers a later index, even where the reduction across threads
  //          prefers the lower one.
  auto new_inputs = [&](std::uint64_t seed) {
    const auto size = static_cast<std::size_t>(n);
    const bool ties = inputs == "ties";
    const int e = ties ? 0 : value_kinds::kind_exponent(inputs, cudalabs::mix_seed(seed, 4), {100, 126, -100, -80});
    const bool large = inputs == "large";
    auto logits = e == 0 ? cudalabs::random_floats(size, cudalabs::mix_seed(seed, 1), -10.0f, 10.0f)
                         : value_kinds::scaled_floats(size, cudalabs::mix_seed(seed, 1), e, large ? -2.0f : -1.0f,
                                                      large ? -1.0f : 1.0f);
    const float planted = e == 0 ? 12.5f : large ? -std::ldexp(1.0f, e) : std::ldexp(1.0f, e);
    if (ties) {
      const std::size_t first = 64 * (cudalabs::mix_seed(seed, 5) % (size / 256 + 1));
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(first), logits.end(), planted);
    } else {
      const auto a = static_cast<int>(cudalabs::mix_seed(seed, 2) % static_cast<std::uint64_t>(n));
      const auto b = static_cast<int>(cudalabs::mix_seed(seed, 3) % static_cast<std::uint64_t>(n));
      logits[static_cast<std::size_t>(a)] = logits[static_cast<std::size_t>(b)] = planted;
    }
    if (cudalabs::evidence::keeps_references()) expected = ref::argmax(logits);
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

}  // namespace lab29host
