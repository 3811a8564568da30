// CPU references against values worked out by hand and against each other.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "cudalabs/random.hpp"
#include "cudalabs/reference.hpp"

using namespace cudalabs;

TEST(Reference, VectorAdd) {
  std::vector<float> a = {1, 2, 3}, b = {0.5f, -2, 10};
  EXPECT_EQ(ref::vector_add(a, b), (std::vector<double>{1.5, 0, 13}));
}

TEST(Reference, SumMatchesSequentialDouble) {
  auto x = random_floats(1000003, 11);
  double s = 0;
  for (float v : x) s += v;
  EXPECT_NEAR(ref::sum(x), s, 1e-9 * std::fabs(s) + 1e-9);
}

TEST(Reference, MatmulByHand) {
  // [1 2 3; 4 5 6] · [7 8; 9 10; 11 12] = [58 64; 139 154]
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  EXPECT_EQ(ref::matmul(a, b, 2, 2, 3), (std::vector<double>{58, 64, 139, 154}));
}

TEST(Reference, MatmulOddSizesMatchNaiveLoop) {
  const int m = 67, n = 131, k = 129;  // not multiples of any tile; > 64 to cross the k-block
  auto a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  auto c = ref::matmul(a, b, m, n, k);
  for (int i = 0; i < m; i += 13)
    for (int j = 0; j < n; j += 7) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      EXPECT_NEAR(c[i * n + j], s, 1e-12) << i << "," << j;
    }
}

TEST(Reference, SoftmaxRowsSumToOneAndAreStable) {
  std::vector<float> x = {1000, 1000, 1000, -1000, 0, 1000};  // naive exp overflows
  auto y = ref::softmax_rows(x, 2, 3);
  EXPECT_NEAR(y[0], 1.0 / 3, 1e-15);
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0, 1e-15);
  EXPECT_NEAR(y[5], 1.0, 1e-15);
  EXPECT_NEAR(y[3], 0.0, 1e-15);
}

TEST(Reference, AttentionEqualsItsParts) {
  const int seq = 37, dim = 16;
  auto q = random_floats(seq * dim, 1), k = random_floats(seq * dim, 2), v = random_floats(seq * dim, 3);
  auto att = ref::attention(q, k, v, seq, dim, false, true);
  // S = Q Kᵀ / sqrt(d), through matmul with K transposed.
  std::vector<float> kt(dim * seq);
  for (int j = 0; j < seq; ++j)
    for (int t = 0; t < dim; ++t) kt[t * seq + j] = k[j * dim + t];
  auto s = ref::matmul(q, kt, seq, seq, dim);
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(att.scores[i], s[i] / std::sqrt(16.0), 1e-12);
  for (int i = 0; i < seq; ++i) {
    double row = 0;
    for (int j = 0; j < seq; ++j) row += att.weights[i * seq + j];
    EXPECT_NEAR(row, 1.0, 1e-12);
  }
}

TEST(Reference, CausalAttentionFirstRowIsV0) {
  const int seq = 5, dim = 4;
  auto q = random_floats(seq * dim, 1), k = random_floats(seq * dim, 2), v = random_floats(seq * dim, 3);
  auto att = ref::attention(q, k, v, seq, dim, true);
  for (int t = 0; t < dim; ++t) EXPECT_NEAR(att.out[t], v[t], 1e-12);  // row 0 sees only key 0
}

TEST(Random, SeededAndNotDegenerate) {
  auto a = random_floats(1000, 42), b = random_floats(1000, 42), c = random_floats(1000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  EXPECT_GE(*lo, -1.0f);
  EXPECT_LT(*hi, 1.0f);
  EXPECT_LT(*lo, -0.9f);  // spans the range: neither constant nor all zeros
  EXPECT_GT(*hi, 0.9f);
  auto ints = random_small_ints(1000, 1, -4, 4);
  for (float v : ints) EXPECT_EQ(v, std::round(v));
  EXPECT_EQ(*std::min_element(ints.begin(), ints.end()), -4);
  EXPECT_EQ(*std::max_element(ints.begin(), ints.end()), 4);
}
