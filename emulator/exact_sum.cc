#include "emulator/exact_sum.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace h3 {
namespace {

// A finite nonzero float as mant * 2^exp with mant < 2^24 an integer (exp >= -149).
void Split(float f, uint64_t* mant, int* exp, bool* negative) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  *negative = (u >> 31) != 0;
  const int field = static_cast<int>((u >> 23) & 0xFF);
  const uint32_t frac = u & 0x7FFFFF;
  if (field == 0) {
    *mant = frac;
    *exp = -149;
  } else {
    *mant = frac | 0x800000u;
    *exp = field - 150;
  }
}

}  // namespace

void ExactSum::AddShifted(uint64_t magnitude, int shift, bool negative) {
  if (shift < 0 || shift + 64 > kLimbs * 64) std::abort();  // out of the accumulator: a bug
  const int limb = shift / 64, off = shift % 64;
  uint64_t part[kLimbs] = {};
  part[limb] = magnitude << off;
  if (off != 0 && limb + 1 < kLimbs) part[limb + 1] = magnitude >> (64 - off);
  if (!negative) {
    unsigned __int128 carry = 0;
    for (int i = 0; i < kLimbs; ++i) {
      const unsigned __int128 s = static_cast<unsigned __int128>(limbs_[i]) + part[i] + carry;
      limbs_[i] = static_cast<uint64_t>(s);
      carry = s >> 64;
    }
  } else {
    uint64_t borrow = 0;
    for (int i = 0; i < kLimbs; ++i) {
      const uint64_t a = limbs_[i], b = part[i];
      const uint64_t d = a - b - borrow;
      borrow = (a < b || (a == b && borrow)) ? 1 : 0;
      limbs_[i] = d;
    }
  }
}

void ExactSum::AddProduct(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) {
    nan_ = true;
    return;
  }
  if (std::isinf(a) || std::isinf(b)) {
    if (a == 0.0f || b == 0.0f) {
      nan_ = true;  // 0 x Inf
    } else if (std::signbit(a) != std::signbit(b)) {
      neg_inf_ = true;
    } else {
      pos_inf_ = true;
    }
    return;
  }
  if (a == 0.0f || b == 0.0f) return;
  uint64_t ma, mb;
  int ea, eb;
  bool na, nb;
  Split(a, &ma, &ea, &na);
  Split(b, &mb, &eb, &nb);
  AddShifted(ma * mb, ea + eb + kLsb, na != nb);  // ma * mb < 2^48: exact
}

void ExactSum::Add(float v) {
  if (std::isnan(v)) {
    nan_ = true;
    return;
  }
  if (std::isinf(v)) {
    (v > 0 ? pos_inf_ : neg_inf_) = true;
    return;
  }
  if (v == 0.0f) return;
  uint64_t m;
  int e;
  bool neg;
  Split(v, &m, &e, &neg);
  AddShifted(m, e + kLsb, neg);
}

float ExactSum::RoundToF32() const {
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<float>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<float>::infinity();
  if (neg_inf_) return -std::numeric_limits<float>::infinity();
  uint64_t mag[kLimbs];
  const bool negative = (limbs_[kLimbs - 1] >> 63) != 0;
  if (negative) {  // two's complement negation
    uint64_t carry = 1;
    for (int i = 0; i < kLimbs; ++i) {
      mag[i] = ~limbs_[i] + carry;
      carry = (carry && mag[i] == 0) ? 1 : 0;
    }
  } else {
    std::memcpy(mag, limbs_, sizeof(mag));
  }
  int top = -1;
  for (int i = kLimbs - 1; i >= 0 && top < 0; --i) {
    if (mag[i] != 0) top = i * 64 + 63 - __builtin_clzll(mag[i]);
  }
  if (top < 0) return 0.0f;
  auto bit = [&](int i) { return i >= 0 ? static_cast<int>((mag[i / 64] >> (i % 64)) & 1) : 0; };
  // The kept bits: 24 from the top, but never below 2^-149 (subnormals have a fixed lsb).
  const int lsb = std::max(top - 23, kLsb - 149);
  uint64_t q = 0;
  for (int i = top; i >= lsb; --i) q = (q << 1) | static_cast<uint64_t>(bit(i));
  const int round = bit(lsb - 1);
  bool sticky = false;
  for (int i = 0; i < lsb - 1 && !sticky; ++i) {
    if (i % 64 == 0 && i + 64 <= lsb - 1 && mag[i / 64] == 0) {
      i += 63;
      continue;
    }
    sticky = bit(i) != 0;
  }
  if (round && (sticky || (q & 1))) ++q;
  const int exp = lsb - kLsb;  // value = q * 2^exp, q <= 2^24
  const double value = std::ldexp(static_cast<double>(q), exp);
  const double limit = std::ldexp(1.0, 128);
  float f = value >= limit ? std::numeric_limits<float>::infinity() : static_cast<float>(value);
  return negative ? -f : f;
}

}  // namespace h3
