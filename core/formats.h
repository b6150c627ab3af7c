#ifndef H3_CORE_FORMATS_H_
#define H3_CORE_FORMATS_H_

// The contract's scalar number formats (docs/contract.md section 2), decoded exactly: bf16,
// E2M1 and (U)E4M3 to f32, and the format constants. Host and device: the emulator and the
// kernels read the same definitions. The rounding conversions (f32 -> bf16 / E2M1 / E4M3) are the
// emulator's (emulator/formats.h) and the kernels' (kernels/device/quantize.cuh) to write, each in the
// way its target allows, and are held to each other bit for bit by the tests.

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace h3 {

inline constexpr uint16_t kBf16CanonicalNaN = 0x7FFF;  // every NaN the op writes
inline constexpr uint8_t kE2m1MaxCode = 0x7;           // +6; also what a NaN converts to
inline constexpr uint8_t kE4m3MaxByte = 0x7E;          // +448
inline constexpr uint8_t kE4m3NaNByte = 0x7F;
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE2m1Max = 6.0f;
// RN(1/6), the constant of docs/contract.md section 3 step 2, as bits and as a float literal.
inline constexpr uint32_t kRcp6Bits = 0x3E2AAAABu;
inline constexpr float kRcp6 = 0x1.555556p-3f;

H3_HD uint32_t F32Bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

H3_HD float F32FromBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

// bf16 -> f32 is exact: the bf16 bits are the f32's high half.
H3_HD float Bf16ToF32(uint16_t b) { return F32FromBits(static_cast<uint32_t>(b) << 16); }

// E2M1 code (low 4 bits: S E E M, bias 1) times 2: an exact integer in [-12, 12].
// Magnitudes of codes 0..7 times two: 0, 1, 2, 3, 4, 6, 8, 12.
H3_HD int E2M1TimesTwo(uint8_t code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const int mag = e == 0 ? m : (2 + m) << (e - 1);
  return (code & 8) ? -mag : mag;
}
// Code 0x8 is -0: the sign is applied to the magnitude, not to an integer.
H3_HD float E2M1ToF32(uint8_t code) {
  const float mag = 0.5f * static_cast<float>(E2M1TimesTwo(code & 7));
  return (code & 8) ? -mag : mag;
}

H3_HD bool E4M3IsNaN(uint8_t byte) { return (byte & 0x7F) == kE4m3NaNByte; }

// A finite E4M3FN byte times 2^9: an exact integer, |.| <= 229376. Bias 7; exponent field 0 is
// subnormal (m * 2^-9). Must not be called for NaN bytes (0x7F, 0xFF).
H3_HD int32_t E4M3Times512(uint8_t byte) {
  const int e = (byte >> 3) & 0xF, m = byte & 7;
  const int32_t mag = e == 0 ? m : (8 + m) << (e - 1);
  return (byte & 0x80) ? -mag : mag;
}

// UE4M3 (a block scale: E4M3FN with the sign bit ignored, and any bits above the byte) -> f32,
// exact: bias 7, exponent field 0 is subnormal m * 2^-9, 0x7F is NaN. Written by exponent and
// mantissa bits (no int -> float conversion for normal values): the kernels' quantizer runs it.
H3_HD float Ue4m3ToF32(uint32_t byte) {
  const uint32_t e = (byte >> 3) & 0xFu, m = byte & 7u;
  if (e == 15u && m == 7u) return F32FromBits(0x7FC00000u);
  if (e == 0u) return static_cast<float>(m) * 0.001953125f;  // m * 2^-9, exact
  return F32FromBits(((e + 120u) << 23) | (m << 20));
}

// E4M3FN byte -> f32, exact; 0x7F and 0xFF are NaN (quiet NaN 0x7FC00000).
H3_HD float E4M3ToF32(uint8_t byte) {
  const float mag = Ue4m3ToF32(byte);
  return ((byte & 0x80u) != 0 && !E4M3IsNaN(byte)) ? -mag : mag;
}

}  // namespace h3

#endif  // H3_CORE_FORMATS_H_
