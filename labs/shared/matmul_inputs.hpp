#pragma once
// The inputs of the matrix-multiply labs (labs/shared/matmul_lab.cuh), drawn
// on the host or on the device with the same values, bit for bit.
//
// The host draws them for the CPU reference (cudalabs::random_floats,
// value_kinds::scaled_floats); the device draws the same values where the
// harness needs them in device memory: every warm-up and timed run of a
// variant gets inputs of its own (matmul_lab.cuh says why), and drawing 2 x 16M
// floats on the host and uploading them costs far more than the run itself.
// operand_value is the formula both sides share (the device's draw calls it;
// tests/unit/test_matmul_inputs.cpp holds it to the host's draw).
//
// Plain C++ with CUDALABS_HD, so the CPU tests include it.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <cudalabs/math.hpp>
#include <cudalabs/random.hpp>

#include "value_kinds.hpp"

namespace matmul_detail {

// The exponent ranges of --inputs large and tiny for one input type: each
// operand times 2^e (value_kinds::KindExponents).
using InputScales = value_kinds::KindExponents;
// FP32, TF32, BF16 operands (FP32's exponent range): |C| < k·2^112 <= 2^126
// (k <= 2^14), and every nonzero product at least 2^-46·2^-80 = 2^-126 (a
// value of [-1, 1) is a multiple of 2^-23), a sum below it exact.
inline constexpr InputScales fp32_scales{40, 56, -40, -24};
// FP16 operands: |A|, |B| < 2^15 (FP16's largest value is 65504), products
// past 2^16 on average (large) or all below 2^-24 (tiny: its smallest
// subnormal), all exact in FP32 (at least 2^-48, at most 2^30).
inline constexpr InputScales fp16_scales{12, 15, -14, -12};

// The exponents of A's and B's scale for one --inputs kind and seed (0, 0 for random).
inline std::pair<int, int> input_exponents(const std::string& kind, std::uint64_t seed,
                                           InputScales scales = fp32_scales) {
  return {value_kinds::kind_exponent(kind, cudalabs::mix_seed(seed, 4), scales),
          value_kinds::kind_exponent(kind, cudalabs::mix_seed(seed, 5), scales)};
}

// One operand of --inputs `kind` (matmul_inputs_flag), on the host: `count`
// values of buffer `buffer` of the seed, times 2^exponent.
inline std::vector<float> operand_values(const std::string& kind, std::size_t count, std::uint64_t seed, int buffer,
                                         int exponent) {
  if (kind == "random") return cudalabs::random_floats(count, cudalabs::mix_seed(seed, buffer));
  return value_kinds::scaled_floats(count, cudalabs::mix_seed(seed, buffer), exponent);
}

// Where operand_values draws from: the generator's stream (cudalabs::unit_float)
// and the power of two its values are scaled by. random_floats draws buffer
// `buffer` from mix_seed(seed, buffer); scaled_floats draws from the stream 1
// of the seed it is given.
struct OperandDraw {
  std::uint64_t stream = 0;
  int exponent = 0;
};

inline OperandDraw operand_draw(const std::string& kind, std::uint64_t seed, int buffer, int exponent) {
  if (kind == "random") return {cudalabs::mix_seed(seed, buffer), 0};
  return {cudalabs::mix_seed(cudalabs::mix_seed(seed, buffer), 1), exponent};
}

// Value i of an operand drawn so, on either side: -1 + 2u is random_floats'
// lo + (hi - lo)·u for [-1, 1), a multiple of 2^-23 of magnitude below 2, so
// exact whether the compiler fuses the multiply and the add (nvcc does, g++
// for x86-64 does not); times 2^exponent, exact while the value stays normal,
// as every exponent of fp32_scales and fp16_scales keeps it (at least 2^-63).
CUDALABS_HD inline float operand_value(OperandDraw draw, std::uint64_t i) {
  return ldexpf(-1.0f + 2.0f * cudalabs::unit_float(draw.stream, i), draw.exponent);
}

}  // namespace matmul_detail
