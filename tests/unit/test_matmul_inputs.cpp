// labs/shared/matmul_inputs.hpp: the matmul labs' inputs, drawn on the device
// by operand_value and on the host by operand_values, must be the same values
// bit for bit (the CPU reference is computed from the host's), for every
// --inputs kind and both input types' scales; and a timed run's inputs, drawn
// from a seed of its own, must be new in every element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cudalabs/random.hpp>

#include "matmul_inputs.hpp"

using namespace matmul_detail;

namespace {

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace

TEST(MatmulInputs, TheSharedFormulaGivesTheHostsValuesBitForBit) {
  constexpr std::size_t count = 5003;  // odd: no pattern of a power of two
  for (const std::string kind : {"random", "large", "tiny"})
    for (const InputScales scales : {fp32_scales, fp16_scales})
      for (const std::uint64_t seed : {1ull, 42ull, 1883954ull, 0xFFFFFFFFFFFFFFFFull})
        for (const int buffer : {1, 2}) {
          const auto [ea, eb] = input_exponents(kind, seed, scales);
          const int exponent = buffer == 1 ? ea : eb;
          if (kind != "random") {
            EXPECT_NE(exponent, 0) << kind;
          }
          const std::vector<float> host = operand_values(kind, count, seed, buffer, exponent);
          const OperandDraw draw = operand_draw(kind, seed, buffer, exponent);
          int differ = 0;
          for (std::size_t i = 0; i < count; ++i) differ += bits(operand_value(draw, i)) != bits(host[i]);
          EXPECT_EQ(differ, 0) << kind << " seed " << seed << " buffer " << buffer << " exponent " << exponent;
        }
}

TEST(MatmulInputs, ASeedOfItsOwnGivesNewValuesInEveryElement) {
  // Two runs' inputs share an element with probability 2^-24 (24 random bits
  // each): about 0.06 of 2^20 elements. A draw that ignored the seed, or
  // changed part of the values, would share most of them.
  constexpr std::uint64_t count = 1u << 20;
  const std::uint64_t first = cudalabs::seed_from_os(), second = cudalabs::seed_from_os();
  ASSERT_NE(first, second);
  for (const int buffer : {1, 2}) {
    const OperandDraw a = operand_draw("random", first, buffer, 0), b = operand_draw("random", second, buffer, 0);
    std::uint64_t same = 0;
    for (std::uint64_t i = 0; i < count; ++i) same += operand_value(a, i) == operand_value(b, i);
    EXPECT_LE(same, 4u) << "buffer " << buffer;
  }
}
