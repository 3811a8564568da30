#include "cudalabs/reference.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace cudalabs::ref {

void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body, std::size_t min_chunk) {
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max<std::size_t>(1, n / std::max<std::size_t>(min_chunk, 1)));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) {
    std::size_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(body, b, e);
  }
  for (auto& th : pool) th.join();
}

std::vector<double> vector_add(std::span<const float> a, std::span<const float> b) {
  std::vector<double> c(a.size());
  parallel_for(a.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) c[i] = static_cast<double>(a[i]) + static_cast<double>(b[i]);
  });
  return c;
}

double sum(std::span<const float> x) {
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> partial(threads, 0.0);
  std::size_t chunk = (x.size() + threads - 1) / threads;
  parallel_for(threads, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t t = lo; t < hi; ++t) {
      double s = 0;
      for (std::size_t i = t * chunk; i < std::min(x.size(), (t + 1) * chunk); ++i) s += x[i];
      partial[t] = s;
    }
  }, 1);
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

std::vector<double> matmul(std::span<const float> a, std::span<const float> b, std::int64_t m, std::int64_t n,
                           std::int64_t k) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  // i-k-j order walks B and C along rows (unit stride); a block of 64 rows of B
  // (64 × n doubles) stays in cache while every row of A in the chunk uses it.
  constexpr std::int64_t kb = 64;
  parallel_for(static_cast<std::size_t>(m), [&](std::size_t lo, std::size_t hi) {
    const auto i0 = static_cast<std::int64_t>(lo), i1 = static_cast<std::int64_t>(hi);
    for (std::int64_t p0 = 0; p0 < k; p0 += kb) {
      std::int64_t p1 = std::min(k, p0 + kb);
      for (std::int64_t i = i0; i < i1; ++i) {
        double* crow = &c[static_cast<std::size_t>(i * n)];
        for (std::int64_t p = p0; p < p1; ++p) {
          double av = a[static_cast<std::size_t>(i * k + p)];
          const float* brow = &b[static_cast<std::size_t>(p * n)];
          for (std::int64_t j = 0; j < n; ++j) crow[j] += av * static_cast<double>(brow[j]);
        }
      }
    }
  }, 1);
  return c;
}

std::vector<double> softmax_rows(std::span<const float> x, std::int64_t rows, std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  parallel_for(static_cast<std::size_t>(rows), [&](std::size_t lo, std::size_t hi) {
    const auto r0 = static_cast<std::int64_t>(lo), r1 = static_cast<std::int64_t>(hi);
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* in = &x[static_cast<std::size_t>(r * cols)];
      double* out = &y[static_cast<std::size_t>(r * cols)];
      double mx = -INFINITY;
      for (std::int64_t c = 0; c < cols; ++c) mx = std::max(mx, static_cast<double>(in[c]));
      double s = 0;
      for (std::int64_t c = 0; c < cols; ++c) s += (out[c] = std::exp(static_cast<double>(in[c]) - mx));
      for (std::int64_t c = 0; c < cols; ++c) out[c] /= s;
    }
  }, 1);
  return y;
}

Attention attention(std::span<const float> q, std::span<const float> k, std::span<const float> v, std::int64_t seq,
                    std::int64_t dim, bool causal, bool keep_intermediates) {
  Attention a;
  a.out.assign(static_cast<std::size_t>(seq * dim), 0.0);
  if (keep_intermediates) {
    a.scores.assign(static_cast<std::size_t>(seq * seq), 0.0);
    a.weights.assign(static_cast<std::size_t>(seq * seq), 0.0);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  parallel_for(static_cast<std::size_t>(seq), [&](std::size_t lo, std::size_t hi) {
    const auto r0 = static_cast<std::int64_t>(lo), r1 = static_cast<std::int64_t>(hi);
    std::vector<double> s(static_cast<std::size_t>(seq));
    for (std::int64_t i = r0; i < r1; ++i) {
      std::int64_t cols = causal ? i + 1 : seq;
      double mx = -INFINITY;
      for (std::int64_t j = 0; j < cols; ++j) {
        double dot = 0;
        for (std::int64_t t = 0; t < dim; ++t)
          dot += static_cast<double>(q[static_cast<std::size_t>(i * dim + t)]) *
                 static_cast<double>(k[static_cast<std::size_t>(j * dim + t)]);
        s[static_cast<std::size_t>(j)] = dot * scale;
        mx = std::max(mx, s[static_cast<std::size_t>(j)]);
      }
      if (keep_intermediates)
        for (std::int64_t j = 0; j < seq; ++j)
          a.scores[static_cast<std::size_t>(i * seq + j)] = j < cols ? s[static_cast<std::size_t>(j)] : -INFINITY;
      double total = 0;
      for (std::int64_t j = 0; j < cols; ++j) total += (s[static_cast<std::size_t>(j)] = std::exp(s[static_cast<std::size_t>(j)] - mx));
      double* o = &a.out[static_cast<std::size_t>(i * dim)];
      for (std::int64_t j = 0; j < cols; ++j) {
        double p = s[static_cast<std::size_t>(j)] / total;
        if (keep_intermediates) a.weights[static_cast<std::size_t>(i * seq + j)] = p;
        for (std::int64_t t = 0; t < dim; ++t) o[t] += p * static_cast<double>(v[static_cast<std::size_t>(j * dim + t)]);
      }
    }
  }, 1);
  return a;
}

}  // namespace cudalabs::ref
