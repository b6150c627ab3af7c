#include "emulator/formats.h"

namespace h3 {
namespace {

// Rounds |f| (finite, not NaN) to nearest-even on the grid of a minifloat with
// `mbits` mantissa bits and minimum normal exponent `emin` (unbiased), and
// returns the magnitude code (exponent field << mbits | mantissa), saturated to
// `max_code`. The code arithmetic lets a mantissa carry ripple into the
// exponent field, and subnormals fall out as exponent field 0.
uint32_t RoundMagnitudeToMiniFloat(uint32_t abs_bits, int mbits, int emin, uint32_t max_code) {
  if (abs_bits == 0) return 0;
  const int biased = static_cast<int>(abs_bits >> 23);
  uint64_t sig = abs_bits & 0x7FFFFFu;
  int e;  // value = sig * 2^(e - 23)
  if (biased == 0) {
    e = -126;  // f32 subnormal: no implicit bit
  } else {
    e = biased - 127;
    sig |= 0x800000u;
  }
  // Anything far above the format's range saturates (avoids shift overflow).
  if (e > emin + 40) return max_code;
  // Quantum of the target grid at this magnitude is 2^(max(e, emin) - mbits);
  // the number of f32 significand bits to drop is the exponent difference.
  const int eff = e > emin ? e : emin;
  const int shift = (eff - mbits) - (e - 23);  // >= 23 - mbits > 0
  uint64_t n;
  if (shift >= 62) {
    n = 0;  // < half a quantum: rounds to zero
  } else {
    n = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    // Round to nearest, ties to even (even = low bit of n).
    if (rem > half || (rem == half && (n & 1))) ++n;
  }
  // n is in units of the quantum; for the normal range n in [2^m, 2^(m+1)].
  const uint64_t code = (static_cast<uint64_t>(eff - emin) << mbits) + n;
  return code > max_code ? max_code : static_cast<uint32_t>(code);
}

}  // namespace

uint16_t F32ToBf16(float f) {
  const uint32_t u = F32Bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;  // any NaN
  // Nearest-even on the 16 dropped bits; a carry into the exponent is the
  // correct rounding up (to the next binade or to Inf).
  const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

uint8_t F32ToE2M1(float f) {
  const uint32_t u = F32Bits(f);
  const uint32_t abs_bits = u & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return 0x7;  // NaN -> 0x7 (docs/contract.md section 2)
  const uint8_t sign = (u >> 31) ? 0x8 : 0x0;
  if (abs_bits == 0x7F800000u) return sign | 0x7;  // +-Inf -> +-6
  // E2M1: 1 mantissa bit, bias 1 -> minimum normal exponent 0; max code 7 = 6.
  return sign | static_cast<uint8_t>(RoundMagnitudeToMiniFloat(abs_bits, 1, 0, 7));
}

uint8_t F32ToE4M3(float f) {
  const uint32_t u = F32Bits(f);
  const uint32_t abs_bits = u & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return 0x7F;  // NaN -> 0x7F
  const uint8_t sign = (u >> 31) ? 0x80 : 0x00;
  if (abs_bits == 0x7F800000u) return sign | 0x7E;  // satfinite: +-Inf -> +-448
  // E4M3FN: 3 mantissa bits, bias 7 -> minimum normal exponent -6; the largest
  // finite code is 0x7E = 448 (0x7F is NaN), so rounding past it saturates.
  return sign | static_cast<uint8_t>(RoundMagnitudeToMiniFloat(abs_bits, 3, -6, 0x7E));
}

}  // namespace h3
