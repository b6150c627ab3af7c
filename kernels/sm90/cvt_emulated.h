#ifndef H3_KERNELS_SM90_CVT_EMULATED_H_
#define H3_KERNELS_SM90_CVT_EMULATED_H_

// Hopper validation only: the e2m1 conversion that sm_90 lacks (cvt.rn.satfinite.e2m1x2.f32 is
// sm_100a/sm_120a), written in software, bit-identical to the contract (section 2). Host and
// device, so the CPU tests hold it to the emulator over many inputs.

#include <cmath>
#include <cstdint>

#include "core/formats.h"
#include "core/host_device.h"

namespace h3::kernels::sm90 {

// e2m1(v) in software, bit-identical to the contract: nearest-even on {0, .5, 1, 1.5, 2, 3, 4,
// 6} (ties 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4), |v| > 6 and Inf saturate
// to 6, the sign kept (also for zero results), NaN -> 0x7.
//
// The magnitude code is one round-to-nearest-even to an integer, done by the f32 adder: on each
// binade range of the grid the code is affine in |v| with a power-of-two slope,
//   |v| in [0, 2): code = rint(2|v|)        (0, 1, 2, 3, 4 = 0, .5, 1, 1.5, 2)
//   |v| in [2, 4): code = rint(|v|) + 2     (4, 5, 6 = 2, 3, 4)
//   |v| in [4, 8]: code = rint(|v|/2) + 4   (6, 7, 8 = 4, 6, 8 -> saturated to 7)
// and rint(y) for 0 <= y < 2^22 is the low mantissa bits of RN(y + 2^23) (the addition rounds
// to an integer, nearest-even: exactly the contract's tie rule, since the grid's even codes are
// its even mantissas). y = |v| * slope is exact (a power of two), so the fused multiply-add below
// rounds once, exactly as RN(y + 2^23). |v| is clamped to 8 first (8 and beyond saturate, and
// y stays below 2^22); fminf maps NaN to 8 too, so NaN needs only its sign cleared.
H3_HD uint32_t F32ToE2m1Soft(float v) {
  const uint32_t bits = F32Bits(v);
  const float a = fminf(F32FromBits(bits & 0x7FFFFFFFu), 8.0f);
  const float slope = a < 2.0f ? 2.0f : (a < 4.0f ? 1.0f : 0.5f);
  const uint32_t offset = a < 2.0f ? 0u : (a < 4.0f ? 2u : 4u);
#if defined(__CUDA_ARCH__)
  const float r = __fmaf_rn(a, slope, 8388608.0f);
#else
  const float r = std::fma(a, slope, 8388608.0f);
#endif
  const uint32_t code = (F32Bits(r) & 0xFu) + offset;
  const uint32_t mag = code < 7u ? code : 7u;
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return nan ? 0x7u : mag | ((bits >> 28) & 0x8u);
}

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_CVT_EMULATED_H_
