// The probe's exact arithmetic (probe.h Exact): 384-bit two's complement fixed point.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "harness/probe/probe.h"

namespace h3::probe {

Exact Exact::FromScaledInt(int64_t v, int exp2) {
  Exact r;
  if (v == 0) return r;
  const int shift = exp2 - kLsbExp;
  const bool neg = v < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int bits = 64 - __builtin_clzll(mag);
  if (shift < 0 || shift + bits > 64 * kLimbs - 1) std::abort();  // outside the format: a bug
  const int limb = shift / 64, bit = shift % 64;
  r.w_[limb] = mag << bit;
  if (bit != 0 && limb + 1 < kLimbs) r.w_[limb + 1] = mag >> (64 - bit);
  return neg ? -r : r;
}

Exact Exact::FromFloat(float f) {
  if (f == 0.0f) return Exact();
  int e = 0;
  const double fr = std::frexp(static_cast<double>(f), &e);
  const int64_t mant = static_cast<int64_t>(std::ldexp(fr, 24));  // exact: <= 24 bits
  return FromScaledInt(mant, e - 24);
}

Exact Exact::operator+(const Exact& o) const {
  Exact r;
  unsigned __int128 carry = 0;
  for (int i = 0; i < kLimbs; ++i) {
    const unsigned __int128 s = static_cast<unsigned __int128>(w_[i]) + o.w_[i] + carry;
    r.w_[i] = static_cast<uint64_t>(s);
    carry = s >> 64;
  }
  return r;
}

Exact Exact::operator-() const {
  Exact r;
  unsigned __int128 carry = 1;
  for (int i = 0; i < kLimbs; ++i) {
    const unsigned __int128 s = static_cast<unsigned __int128>(~w_[i]) + carry;
    r.w_[i] = static_cast<uint64_t>(s);
    carry = s >> 64;
  }
  return r;
}

Exact Exact::ShiftRight(int n) const {
  const uint64_t fill = IsNegative() ? ~uint64_t{0} : 0;
  Exact r;
  const int limbs = n / 64, bits = n % 64;
  for (int i = 0; i < kLimbs; ++i) {
    const int src = i + limbs;
    const uint64_t lo = src < kLimbs ? w_[src] : fill;
    const uint64_t hi = src + 1 < kLimbs ? w_[src + 1] : fill;
    r.w_[i] = bits == 0 ? lo : (lo >> bits) | (hi << (64 - bits));
  }
  return r;
}

bool Exact::IsZero() const {
  for (uint64_t w : w_) {
    if (w != 0) return false;
  }
  return true;
}

int Exact::Compare(const Exact& o) const {
  const Exact d = *this - o;
  if (d.IsZero()) return 0;
  return d.IsNegative() ? -1 : 1;
}

int Exact::MsbExp() const {
  const Exact m = Abs();
  for (int i = kLimbs - 1; i >= 0; --i) {
    if (m.w_[i] != 0) return i * 64 + 63 - __builtin_clzll(m.w_[i]) + kLsbExp;
  }
  return -1000;
}

int Exact::LsbExp() const {
  for (int i = 0; i < kLimbs; ++i) {
    if (w_[i] != 0) return i * 64 + __builtin_ctzll(w_[i]) + kLsbExp;
  }
  return -1000;
}

double Exact::ToDouble() const {
  const Exact m = Abs();
  double v = 0;
  for (int i = kLimbs - 1; i >= 0; --i)
    v = v * 18446744073709551616.0 + static_cast<double>(m.w_[i]);
  v = std::ldexp(v, kLsbExp);
  return IsNegative() ? -v : v;
}

float Exact::ToFloat(bool toward_zero) const {
  if (IsZero()) return 0.0f;
  const bool neg = IsNegative();
  const Exact m = Abs();
  const int e = m.MsbExp();   // value exponent of the leading bit
  const int p = e - kLsbExp;  // its bit index
  if (e >= 128) {
    const float big = toward_zero ? FLT_MAX : std::numeric_limits<float>::infinity();
    return neg ? -big : big;
  }
  const int q = e >= -126 ? p - 23 : -149 - kLsbExp;  // bit index of the result's lsb
  uint64_t mant = 0;
  for (int i = p; i >= q; --i) mant = (mant << 1) | (m.Bit(i) ? 1u : 0u);
  if (!toward_zero && q > 0) {
    const bool half = m.Bit(q - 1);
    bool sticky = false;
    const int nb = q - 1;  // bits [0, nb) are below the half bit
    for (int i = 0; i < nb / 64; ++i) sticky = sticky || m.w_[i] != 0;
    if (nb % 64 != 0) sticky = sticky || (m.w_[nb / 64] & ((uint64_t{1} << (nb % 64)) - 1)) != 0;
    if (half && (sticky || (mant & 1) != 0)) ++mant;
  }
  // mant * 2^(q + kLsbExp) is a binary32 value (or 2^128, which becomes Inf): exact in double,
  // and the conversion to float is exact.
  const float f = static_cast<float>(std::ldexp(static_cast<double>(mant), q + kLsbExp));
  return neg ? -f : f;
}

}  // namespace h3::probe
