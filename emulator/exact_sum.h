#ifndef EMULATOR_EXACT_SUM_H_
#define EMULATOR_EXACT_SUM_H_

// An exact sum of binary32 values and of products of two binary32 values (a fixed-point
// accumulator wide enough for every such product, Kulisch's idea), rounded once at the end:
// the reference for the low-rank branch's two sums (docs/contract.md section 13.1), whose
// terms (bf16 x bf16 products down to 2^-266, the f32 o) do not fit gemm.h's integer scheme.

#include <cstdint>

namespace h3 {

class ExactSum {
 public:
  // Adds a * b (exact, any finite floats) or v. Non-finite terms follow section 13.1: NaN
  // (a NaN factor, 0 x Inf) and infinities are tracked apart from the finite sum.
  void AddProduct(float a, float b);
  void Add(float v);

  // The exact sum rounded once to binary32: nearest-even, subnormals kept, +-Inf beyond the
  // range; NaN for a NaN term or infinities of both signs; that infinity for one sign; +0 for
  // an exact zero (a sum started from +0).
  float RoundToF32() const;

 private:
  // Value = limbs (two's complement, little-endian) * 2^-kLsb. kLsb = 300 holds every product
  // of two f32 values (>= 2^-298); 640 bits reach 2^339, beyond 2^32 products below 2^256.
  static constexpr int kLimbs = 10;
  static constexpr int kLsb = 300;
  void AddShifted(uint64_t magnitude, int shift, bool negative);

  uint64_t limbs_[kLimbs] = {};
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

}  // namespace h3

#endif  // EMULATOR_EXACT_SUM_H_
