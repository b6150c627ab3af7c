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

// The magnitude code of a >= 0 (not NaN; +Inf allowed) as an f32 whose bit pattern is
// 0x4B000000 + code, code in 0..7: the sm_90 quantizer's fast path, without selects.
//
// The code map C(a) above is piecewise affine and concave (slopes 2, 1, 1/2), so it is the
// minimum of its three lines: C(a) = min(2a, a + 2, a/2 + 4) for every a >= 0 (2a <= a + 2 iff
// a <= 2; a + 2 <= a/2 + 4 iff a <= 4). rint is monotone, so rint(min(...)) = min(rint(...)),
// and the offsets are even integers, so the ties still go to the even code:
//   code = min(rint(2a), rint(a) + 2, rint(a/2) + 4, 7).
// Each rint is one f32 rounding of (slope * a + offset + 2^23), exact when the sum stays below
// 2^24; larger sums (a >= 8, Inf) are above 2^23 + 7 and lose to it, and the minimum of the f32
// results orders their bit patterns the same way (all positive).
H3_HD float E2m1MagnitudeMagic(float a) {
#if defined(__CUDA_ARCH__)
  const float r1 = __fmaf_rn(a, 2.0f, 8388608.0f);
  const float r2 = __fadd_rn(a, 8388610.0f);
  const float r3 = __fmaf_rn(a, 0.5f, 8388612.0f);
#else
  const float r1 = std::fma(a, 2.0f, 8388608.0f);
  const float r2 = a + 8388610.0f;
  const float r3 = std::fma(a, 0.5f, 8388612.0f);
#endif
  return fminf(fminf(r1, r2), fminf(r3, 8388615.0f));
}

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_CVT_EMULATED_H_
