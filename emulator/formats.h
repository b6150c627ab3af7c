#ifndef EMULATOR_FORMATS_H_
#define EMULATOR_FORMATS_H_

// Number formats of contract section 2, by integer bit manipulation (no
// "nearest by float compare" tables, so tie rules are explicit).

#include <cstdint>

namespace h3 {

uint32_t F32Bits(float f);
float F32FromBits(uint32_t u);

// bf16 <-> f32. bf16 -> f32 is exact; f32 -> bf16 rounds to nearest-even and
// turns any NaN into 0x7FFF (CUDA's __float2bfloat16_rn).
float Bf16ToF32(uint16_t b);
uint16_t F32ToBf16(float f);

// E2M1: 4-bit code S E E M (bias 1, no Inf/NaN). Nearest-even, |v| > 6 and
// +-Inf saturate to +-6, zero results keep the sign, NaN -> 0x7.
uint8_t F32ToE2M1(float f);
float E2M1ToF32(uint8_t code);  // uses the low 4 bits

// E4M3FN: nearest-even, satfinite (|v| >= 448 and +-Inf -> +-448), NaN -> 0x7F,
// |v| <= 2^-10 -> signed zero. UE4M3 is the sign-0 half of this format.
uint8_t F32ToE4M3(float f);
float E4M3ToF32(uint8_t byte);  // 0x7F and 0xFF are NaN

// Value of an E2M1 code times 2 (an exact integer in [-12, 12]).
inline int E2M1TimesTwo(uint8_t code) {
  // Magnitudes of codes 0..7 times two: 0, 1, 2, 3, 4, 6, 8, 12.
  static constexpr int kMag2[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  const int mag = kMag2[code & 7];
  return (code & 8) ? -mag : mag;
}

// Value of a finite E4M3 byte times 2^9 (an exact integer, |.| <= 229376).
// Must not be called for NaN bytes (0x7F, 0xFF).
int32_t E4M3Times512(uint8_t byte);

inline bool E4M3IsNaN(uint8_t byte) { return (byte & 0x7F) == 0x7F; }

}  // namespace h3

#endif  // EMULATOR_FORMATS_H_
