#pragma once
// CPU reference implementations: one per operation, shared by labs and tests.
// All accumulate in double; the slow ones run on every CPU core.
// Matrices are row-major.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace cudalabs::ref {

// Runs body(begin, end) over disjoint ranges covering [0, n), one per hardware
// thread, each at least `min_chunk` long (below ~64k cheap elements a thread
// costs more to start than the work it does; pass 1 when each item is a row).
void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body,
                  std::size_t min_chunk = 65536);

std::vector<double> vector_add(std::span<const float> a, std::span<const float> b);

double sum(std::span<const float> x);

// C[m×n] = A[m×k] · B[k×n]
std::vector<double> matmul(std::span<const float> a, std::span<const float> b, std::int64_t m,
                           std::int64_t n, std::int64_t k);

// Numerically stable softmax of each row of x[rows×cols].
std::vector<double> softmax_rows(std::span<const float> x, std::int64_t rows, std::int64_t cols);

// Single-head attention, Q,K,V [seq×dim]:
//   S = Q·Kᵀ / sqrt(dim)   (masked to j <= i when causal)
//   P = softmax_rows(S)
//   O = P·V                 [seq×dim]
struct Attention {
  std::vector<double> scores;   // S, seq×seq (empty unless keep_intermediates)
  std::vector<double> weights;  // P, seq×seq (empty unless keep_intermediates)
  std::vector<double> out;      // O, seq×dim
};
Attention attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                    std::int64_t seq, std::int64_t dim, bool causal = false,
                    bool keep_intermediates = false);

}  // namespace cudalabs::ref
