#ifndef EMULATOR_FORMATS_H_
#define EMULATOR_FORMATS_H_

// The rounding conversions of contract section 2 (docs/contract.md), by integer bit
// manipulation (no "nearest by float compare" tables, so tie rules are explicit). The exact
// decoders and the format constants are the bottom layer's (core/formats.h), shared with the
// kernels.

#include <cstdint>

#include "core/formats.h"

namespace h3 {

// f32 -> bf16 rounds to nearest-even and turns any NaN into 0x7FFF (CUDA's
// __float2bfloat16_rn).
uint16_t F32ToBf16(float f);

// E2M1: 4-bit code S E E M (bias 1, no Inf/NaN). Nearest-even, |v| > 6 and
// +-Inf saturate to +-6, zero results keep the sign, NaN -> 0x7.
uint8_t F32ToE2M1(float f);

// E4M3FN: nearest-even, satfinite (|v| >= 448 and +-Inf -> +-448), NaN -> 0x7F,
// |v| <= 2^-10 -> signed zero. UE4M3 is the sign-0 half of this format.
uint8_t F32ToE4M3(float f);

}  // namespace h3

#endif  // EMULATOR_FORMATS_H_
