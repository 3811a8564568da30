#pragma once
// FP8 e4m3 as lab 33 uses it, on the host and the device alike: the rounding
// of a float to e4m3, the value of an e4m3 code, and the scales of the three
// quantisation schemes. The CPU references and the tests use these; the GPU
// rounds with its own instruction (cvt.rn.satfinite.e4m3x2.f32), which
// fp8_format_test.cu checks against e4m3_from_float bit for bit through CUDA's
// own conversion (__nv_cvt_float_to_fp8, the same rule).
//
// e4m3 (OCP FP8, "E4M3FN"): 1 sign bit, 4 exponent bits (bias 7), 3 mantissa
// bits. No infinities; S.1111.111 is NaN, so the largest finite value is
// S.1111.110 = 1.75 · 2^8 = 448. Normal values 2^-6 .. 448 with 3 mantissa
// bits (a relative step of 2^-3, a rounding error of at most 2^-4 of the
// value); subnormals m · 2^-9, m = 1 .. 7. (e5m2, the other FP8 format, trades
// a mantissa bit for range: 2 mantissa bits, up to 57344, with infinities.)
//
// Rounding: to nearest, ties to even; finite values beyond 448 (and ±inf)
// saturate to ±448 ("satfinite"); NaN becomes the NaN code 0x7F.
#include <cstdint>
#include <cstring>

#ifndef __CUDACC__
#define FP8_HD
#else
#define FP8_HD __host__ __device__
#endif

namespace fp8 {

inline constexpr float e4m3_max = 448.0f;
inline constexpr std::uint8_t e4m3_nan = 0x7F;
// Block scaling as DeepSeek-V3 publishes it (and DeepGEMM computes with it):
// activations (A, [m × k]) one scale per row per 128 of k (1 × 128); weights
// (B, [n × k]) one scale per 128 × 128 block.
inline constexpr int block = 128;

FP8_HD inline std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// x rounded to e4m3 (the rules above), as its 8-bit code.
FP8_HD inline std::uint8_t e4m3_from_float(float x) {
  const std::uint32_t bits = bits_of(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return e4m3_nan;
  if (magnitude > 0x43E00000u) return sign | 0x7Eu;  // above 448 (464 and up would round past it): saturate
  if (magnitude < 0x3C800000u) {                     // below 2^-6: subnormal, steps of 2^-9
    float a;
    std::memcpy(&a, &magnitude, sizeof a);
    const float steps = a * 512.0f;  // exact: a power-of-two multiple
    std::uint32_t q = static_cast<std::uint32_t>(steps);
    const float rest = steps - static_cast<float>(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;  // q = 8 is the code of 2^-6, the smallest normal
    return sign | static_cast<std::uint8_t>(q);
  }
  const std::uint32_t exponent = (magnitude >> 23) - 127 + 7;  // 1 .. 15
  const std::uint32_t mantissa = magnitude & 0x7FFFFFu;
  std::uint32_t code = (exponent << 3) | (mantissa >> 20);
  const std::uint32_t rest = mantissa & 0xFFFFFu, half = 0x80000u;
  if (rest > half || (rest == half && (code & 1u))) ++code;  // a carry moves into the exponent, as it should
  return sign | static_cast<std::uint8_t>(code > 0x7Eu ? 0x7Eu : code);
}

// The value of an e4m3 code (NaN for 0x7F and 0xFF).
FP8_HD inline float e4m3_to_float(std::uint8_t code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 7;
  float value;
  if (exponent == 15 && mantissa == 7) {
    const std::uint32_t nan = 0x7FC00000u;
    std::memcpy(&value, &nan, sizeof value);
  } else if (exponent == 0) {
    value = static_cast<float>(mantissa) * (1.0f / 512.0f);
  } else {
    const std::uint32_t b = static_cast<std::uint32_t>(exponent - 7 + 127) << 23 | static_cast<std::uint32_t>(mantissa) << 20;
    std::memcpy(&value, &b, sizeof value);
  }
  return (code & 0x80) ? -value : value;
}

// The scale of a group of values whose largest magnitude is `amax`: the group
// is stored as e4m3(x / scale) and stands for e4m3 · scale, so its largest
// value lands on 448, the top of the format. A group of zeros (or one so
// small that amax / 448 underflows) gets 1. The division is IEEE (nvcc's
// default -prec-div=true; the lab is not built with fast math), so the GPU's
// scale is the CPU's to the bit.
FP8_HD inline float scale_of(float amax) {
  const float scale = amax / e4m3_max;
  return scale > 0.0f ? scale : 1.0f;
}

}  // namespace fp8

#undef FP8_HD
