#ifndef H3_KERNELS_SM90_CVT_EMULATED_H_
#define H3_KERNELS_SM90_CVT_EMULATED_H_

// Hopper validation only: the e2m1 conversion that sm_90 lacks (cvt.rn.satfinite.e2m1x2.f32 is
// sm_100a/sm_120a), written in software, bit-identical to the contract (section 2). Host and
// device, so the CPU tests hold it to the emulator over many inputs.

#include <cstdint>

#include "core/formats.h"
#include "core/host_device.h"

namespace h3::kernels::sm90 {

// e2m1(v) in software, bit-identical to the contract: nearest-even on {0, .5, 1, 1.5, 2, 3, 4,
// 6} with ties 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4 (the tie goes to the
// even mantissa), saturating, sign kept (also for zero results), NaN -> 0x7. The magnitude
// code is the number of rounding thresholds |v| passes (> at a tie that rounds down,
// >= at one that rounds up).
H3_HD uint32_t F32ToE2m1Soft(float v) {
  const uint32_t bits = F32Bits(v);
  const float a = F32FromBits(bits & 0x7FFFFFFFu);
  if (!(a == a)) return 0x7u;
  const uint32_t mag = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) +
                       (a >= 3.5f) + (a > 5.0f);
  return mag | ((bits >> 28) & 0x8u);
}

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_CVT_EMULATED_H_
