#include "harness/probe/probe.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "harness/testbed/rng.h"

namespace h3::probe {

// ============================================================================================
// Exact
// ============================================================================================

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

// ============================================================================================
// Fragment index math (contract section 7)
// ============================================================================================

void ALocation(int row, int k, int* lane, int* reg, int* nibble) {
  const int g = row % 8, t = (k % 32) / 8;
  *lane = 4 * g + t;
  *reg = 2 * (k / 32) + row / 8;
  *nibble = k % 8;
}

void BLocation(int k, int col, int* lane, int* reg, int* nibble) {
  const int t = (k % 32) / 8;
  *lane = 4 * col + t;
  *reg = k / 32;
  *nibble = k % 8;
}

void CLocation(int row, int col, int* lane, int* reg) {
  *lane = 4 * (row % 8) + col / 2;
  *reg = 2 * (row / 8) + col % 2;
}

Operands Unpack(const MmaCase& mc) {
  Operands o{};
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 8; ++j) {
        o.A[g + 8 * (i & 1)][8 * t + j + 32 * (i >> 1)] = (mc.a[lane][i] >> (4 * j)) & 0xF;
      }
      o.C[g + 8 * (i >> 1)][2 * t + (i & 1)] = mc.c[lane][i];
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 8; ++j) o.B[8 * t + j + 32 * i][g] = (mc.b[lane][i] >> (4 * j)) & 0xF;
    }
    for (int b = 0; b < 4; ++b) {
      if (t == 0) {
        o.SA[g][b] = (mc.sfa[lane] >> (8 * b)) & 0xFF;
        o.SB[g][b] = (mc.sfb[lane] >> (8 * b)) & 0xFF;
      } else if (t == 1) {
        o.SA[g + 8][b] = (mc.sfa[lane] >> (8 * b)) & 0xFF;
      }
    }
  }
  return o;
}

void UnpackD(const float* d, float D[16][8]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) D[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[4 * lane + i];
  }
}

namespace {

// ============================================================================================
// Case construction
// ============================================================================================

constexpr uint8_t kOne = 0x38;   // UE4M3 1.0
constexpr uint8_t kTwo = 0x40;   // UE4M3 2.0
constexpr uint8_t k448 = 0x7E;   // UE4M3 448
constexpr uint8_t kNaN = 0x7F;   // UE4M3 NaN
constexpr uint8_t kC1 = 0x2;     // e2m1 1.0
constexpr uint8_t kC2 = 0x4;     // e2m1 2.0
constexpr uint8_t kCHalf = 0x1;  // e2m1 0.5
constexpr uint8_t kC6 = 0x7;     // e2m1 6.0
constexpr uint8_t kCNeg = 0x8;   // e2m1 sign bit

uint32_t Word(const uint8_t (&bytes)[4]) {
  return uint32_t{bytes[0]} | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16) |
         (uint32_t{bytes[3]} << 24);
}
uint32_t Splat(uint8_t byte) { return 0x01010101u * byte; }

// What the ignored scale lanes hold (SFA: l % 4 in {2, 3}; SFB: l % 4 != 0).
enum class Unused {
  kReplicate,  // row g / column g, as the kernel fills them (kernels/fragment_math.h)
  kPoison,     // byte 0x10 + lane in all four bytes: distinct, non-NaN, below 1.0
  kNaN,        // 0x7F in all four bytes
};
uint8_t PoisonByte(int lane) { return static_cast<uint8_t>(0x10 + lane); }

Operands Blank(uint8_t scale = kOne) {
  Operands o{};
  for (auto& r : o.SA) std::fill(std::begin(r), std::end(r), scale);
  for (auto& r : o.SB) std::fill(std::begin(r), std::end(r), scale);
  return o;
}

MmaCase Pack(MmaKind kind, std::string name, int p0, int p1, const Operands& o,
             Unused sfa_unused = Unused::kReplicate, Unused sfb_unused = Unused::kReplicate) {
  MmaCase mc;
  mc.kind = kind;
  mc.name = std::move(name);
  mc.p0 = p0;
  mc.p1 = p1;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      uint32_t w = 0;
      for (int j = 0; j < 8; ++j) {
        w |= uint32_t{o.A[g + 8 * (i & 1)][8 * t + j + 32 * (i >> 1)] & 0xFu} << (4 * j);
      }
      mc.a[lane][i] = w;
      mc.c[lane][i] = o.C[g + 8 * (i >> 1)][2 * t + (i & 1)];
    }
    for (int i = 0; i < 2; ++i) {
      uint32_t w = 0;
      for (int j = 0; j < 8; ++j) w |= uint32_t{o.B[8 * t + j + 32 * i][g] & 0xFu} << (4 * j);
      mc.b[lane][i] = w;
    }
    auto unused = [&](Unused u, const uint8_t(&replica)[4]) {
      switch (u) {
        case Unused::kReplicate:
          return Word(replica);
        case Unused::kPoison:
          return Splat(PoisonByte(lane));
        case Unused::kNaN:
          return Splat(kNaN);
      }
      return Word(replica);
    };
    mc.sfa[lane] = t == 0   ? Word(o.SA[g])
                   : t == 1 ? Word(o.SA[g + 8])
                            : unused(sfa_unused, o.SA[g]);
    mc.sfb[lane] = t == 0 ? Word(o.SB[g]) : unused(sfb_unused, o.SB[g]);
  }
  return mc;
}

// A-case B: columns 0..5 the bits of k (1.0 or 0), column 6 = 1.0, column 7 = 2.0.
uint8_t KEncodingB(int k, int n) {
  if (n < 6) return ((k >> n) & 1) ? kC1 : 0;
  return n == 6 ? kC1 : kC2;
}
// B-case A: rows 0..5 the bits of k, 6 = 1.0, 7 = 2.0, 8..13 the complemented bits, 14 = 0.5,
// 15 = 0.
uint8_t KEncodingA(int m, int k) {
  if (m < 6) return ((k >> m) & 1) ? kC1 : 0;
  if (m == 6) return kC1;
  if (m == 7) return kC2;
  if (m < 14) return ((k >> (m - 8)) & 1) ? 0 : kC1;
  return m == 14 ? kCHalf : 0;
}
// Block weights for the scale cases: block b holds 2^b ones (block sums 1, 2, 4, 8).
uint8_t BlockWeightCode(int k) { return (k % 16) < (1 << (k / 16)) ? kC1 : 0; }

void AddLayoutCases(std::vector<MmaCase>& out) {
  // C/D: distinct values pass through.
  for (int variant = 0; variant < 2; ++variant) {
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const float idx = static_cast<float>(8 * m + n + 1);
        o.C[m][n] = variant == 0 ? idx : -idx * 0.125f;
      }
    }
    out.push_back(Pack(MmaKind::kCD, absl::StrCat("C/D/distinct", variant), variant, 0, o));
  }
  // A: one-hot code per (row, k).
  for (int m0 = 0; m0 < 16; ++m0) {
    for (int k0 = 0; k0 < 64; ++k0) {
      Operands o = Blank();
      o.A[m0][k0] = kC1;
      for (int k = 0; k < 64; ++k) {
        for (int n = 0; n < 8; ++n) o.B[k][n] = KEncodingB(k, n);
      }
      out.push_back(Pack(MmaKind::kA, absl::StrFormat("A/row%d_k%d", m0, k0), m0, k0, o));
    }
  }
  // B: one-hot code per (k, column).
  for (int k0 = 0; k0 < 64; ++k0) {
    for (int n0 = 0; n0 < 8; ++n0) {
      Operands o = Blank();
      o.B[k0][n0] = kC1;
      for (int m = 0; m < 16; ++m) {
        for (int k = 0; k < 64; ++k) o.A[m][k] = KEncodingA(m, k);
      }
      out.push_back(Pack(MmaKind::kB, absl::StrFormat("B/k%d_col%d", k0, n0), k0, n0, o));
    }
  }
  // SFA: one-hot 2.0 per (row, block), ignored lanes poisoned.
  for (int r0 = 0; r0 < 16; ++r0) {
    for (int b0 = 0; b0 < 4; ++b0) {
      Operands o = Blank();
      for (int m = 0; m < 16; ++m) std::fill(std::begin(o.A[m]), std::end(o.A[m]), kC1);
      for (int k = 0; k < 64; ++k) {
        for (int n = 0; n < 8; ++n) o.B[k][n] = BlockWeightCode(k);
      }
      o.SA[r0][b0] = kTwo;
      out.push_back(Pack(MmaKind::kSfa, absl::StrFormat("SFA/row%d_block%d", r0, b0), r0, b0, o,
                         Unused::kPoison, Unused::kReplicate));
    }
  }
  // SFB: one-hot 2.0 per (column, block), ignored lanes poisoned.
  for (int n0 = 0; n0 < 8; ++n0) {
    for (int b0 = 0; b0 < 4; ++b0) {
      Operands o = Blank();
      for (int m = 0; m < 16; ++m) {
        for (int k = 0; k < 64; ++k) o.A[m][k] = BlockWeightCode(k);
      }
      for (int k = 0; k < 64; ++k) std::fill(std::begin(o.B[k]), std::end(o.B[k]), kC1);
      o.SB[n0][b0] = kTwo;
      out.push_back(Pack(MmaKind::kSfb, absl::StrFormat("SFB/col%d_block%d", n0, b0), n0, b0, o,
                         Unused::kReplicate, Unused::kPoison));
    }
  }
}

// ---- precision cases ----

uint8_t RandomCode(testbed::Rng& rng) { return static_cast<uint8_t>(rng.Next() & 0xF); }

void AddExactCases(std::vector<MmaCase>& out) {
  {  // C near +-2^23 plus 64 ones: sums of 24 bits.
    Operands o = Blank();
    for (auto& r : o.A) std::fill(std::begin(r), std::end(r), kC1);
    for (auto& r : o.B) std::fill(std::begin(r), std::end(r), kC1);
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const float c = static_cast<float>((1 << 23) - 1 - 2 * (8 * m + n));
        o.C[m][n] = (n % 2) ? -c : c;
      }
    }
    out.push_back(Pack(MmaKind::kExact, "exact/c_plus_64_ones", 0, 0, o));
  }
  {  // 2^21 + 2^20 + quarters: 24 bits from 2^21 down to 2^-2, across three scale ranges.
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      o.A[m][0] = 0x6;    // 4.0
      o.SA[m][0] = 0x78;  // 256
      for (int k = 16; k < 64; ++k) o.A[m][k] = (k - 16) < 3 * m ? kCHalf : 0;
    }
    for (int n = 0; n < 8; ++n) {
      o.B[0][n] = 0x6;
      o.SB[n][0] = 0x78;
      for (int k = 16; k < 64; ++k) o.B[k][n] = ((k + n) % 2 == 0) ? kCHalf : (kCHalf | kCNeg);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) o.C[m][n] = 2097152.0f + 0.25f * static_cast<float>(2 * n + 1);
    }
    out.push_back(Pack(MmaKind::kExact, "exact/mixed_24_bits", 0, 0, o));
  }
  {  // -(6*448*448 + 1 + ...) cancelled by the product 6*448*448, plus ones.
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      o.A[m][0] = kC6;
      o.SA[m][0] = k448;
      for (int k = 16; k < 64; ++k) o.A[m][k] = (k - 16) < (m + 8) ? kC1 : 0;
    }
    for (int n = 0; n < 8; ++n) {
      o.B[0][n] = kC6;
      o.SB[n][0] = k448;
      for (int k = 16; k < 64; ++k) o.B[k][n] = (k % 8) < n ? (kC1 | kCNeg) : kC1;
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) o.C[m][n] = -static_cast<float>(7225344 + 1 + m + 16 * n);
    }
    out.push_back(Pack(MmaKind::kExact, "exact/cancel_24_bits", 0, 0, o));
  }
}

// Scale bytes of the bound group: normal values only (subnormals have a group of their own).
constexpr uint8_t kWideScales[] = {0x08, 0x21, 0x30, kOne, 0x3B, 0x55, 0x6A, 0x77, k448};

void AddBoundCases(std::vector<MmaCase>& out) {
  {  // Guard ladder: C = +-(2^24 + 2j), 64 equal terms t per row.
    Operands o = Blank();
    // rows 0..7: t = 2^-m; rows 8..15: t = 1.5, 1.75, 1.25, 1.875, 1.125, 1.625, 1.375, 3.
    const uint8_t tail[8] = {0x3C, 0x3E, 0x3A, 0x3F, 0x39, 0x3D, 0x3B, 0x44};
    for (int m = 0; m < 16; ++m) {
      uint8_t code = kC1, scale;
      if (m < 7) {
        scale = static_cast<uint8_t>(kOne - 8 * m);
      } else if (m == 7) {
        code = kCHalf;
        scale = 0x08;
      } else {
        scale = tail[m - 8];
      }
      std::fill(std::begin(o.A[m]), std::end(o.A[m]), code);
      std::fill(std::begin(o.SA[m]), std::end(o.SA[m]), scale);
    }
    for (auto& r : o.B) std::fill(std::begin(r), std::end(r), kC1);
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const float c = 16777216.0f + 2.0f * static_cast<float>(n / 2);
        o.C[m][n] = (n % 2) ? -c : c;
      }
    }
    out.push_back(Pack(MmaKind::kBound, "bound/guard_ladder", 0, 0, o));
  }
  // Catastrophic cancellation: +-6*448*448 and 32 small terms that no 24-bit window aligned
  // to the big terms keeps. Variants: far apart (blocks 0 and 3), adjacent (k 0 and 1),
  // across blocks (k 0 and 16), and against C.
  struct Cancel {
    const char* name;
    int k_plus, k_minus;  // -1: none
    int small_b0;         // the two blocks of small terms
    bool c_cancels;
  };
  const Cancel cancels[] = {{"bound/cancel_far", 0, 63, 1, false},
                            {"bound/cancel_adjacent", 0, 1, 1, false},
                            {"bound/cancel_cross_block", 0, 16, 2, false},
                            {"bound/cancel_c", 0, -1, 1, true}};
  for (const Cancel& cc : cancels) {
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      for (int b = 0; b < 4; ++b) {
        const bool small = b == cc.small_b0 || b == cc.small_b0 + 1;
        o.SA[m][b] = small ? static_cast<uint8_t>(0x08 + m % 4) : k448;
      }
      o.A[m][cc.k_plus] = kC6;
      if (cc.k_minus >= 0) o.A[m][cc.k_minus] = kC6 | kCNeg;
      for (int k = 16 * cc.small_b0; k < 16 * cc.small_b0 + 32; ++k) {
        o.A[m][k] = static_cast<uint8_t>(1 + (k + m) % 7) | ((k % 3 == 0) ? kCNeg : 0);
      }
    }
    for (int n = 0; n < 8; ++n) {
      for (int b = 0; b < 4; ++b) {
        const bool small = b == cc.small_b0 || b == cc.small_b0 + 1;
        o.SB[n][b] = small ? static_cast<uint8_t>(0x08 + n % 4) : k448;
      }
      o.B[cc.k_plus][n] = kC6;
      if (cc.k_minus >= 0) o.B[cc.k_minus][n] = kC6;
      for (int k = 16 * cc.small_b0; k < 16 * cc.small_b0 + 32; ++k) {
        o.B[k][n] = static_cast<uint8_t>(1 + (3 * k + n) % 7) | ((k % 2) ? kCNeg : 0);
      }
    }
    if (cc.c_cancels) {
      for (auto& r : o.C) std::fill(std::begin(r), std::end(r), -7225344.0f);
    }
    out.push_back(Pack(MmaKind::kBound, cc.name, 0, 0, o));
  }
  // Random codes and scales over the whole normal UE4M3 range; C zero or wide.
  testbed::Rng rng(20261201);
  for (int i = 0; i < 6; ++i) {
    Operands o = Blank();
    for (auto& r : o.A)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.B)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.SA)
      for (auto& v : r) v = kWideScales[rng.Next() % 9];
    for (auto& r : o.SB)
      for (auto& v : r) v = kWideScales[rng.Next() % 9];
    if (i % 2 == 1) {
      for (auto& r : o.C) {
        for (auto& v : r) {
          const float mag = std::ldexp(static_cast<float>(rng.Next() % (1u << 24)),
                                       static_cast<int>(rng.Next() % 21) - 10);
          v = (rng.Next() & 1) ? -mag : mag;
        }
      }
    }
    out.push_back(Pack(MmaKind::kBound, absl::StrCat("bound/random_wide", i), 0, 0, o));
  }
  {  // Large accumulator inputs with ordinary products.
    Operands o = Blank();
    for (auto& r : o.A)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.B)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.SA)
      for (auto& v : r) v = kWideScales[rng.Next() % 9];
    for (auto& r : o.SB)
      for (auto& v : r) v = kWideScales[rng.Next() % 9];
    const float cs[8] = {std::ldexp(1.0f + std::ldexp(1.0f, -23), 60),
                         -std::ldexp(1.0f, 60),
                         1e30f,
                         -1e30f,
                         std::ldexp(1.5f, 127),
                         -std::ldexp(1.5f, 127),
                         3.0f * 16777216.0f,
                         -(16777216.0f + 2.0f)};
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) o.C[m][n] = cs[(m + n) % 8];
    }
    out.push_back(Pack(MmaKind::kBound, "bound/large_c", 0, 0, o));
  }
  {  // One MMA and three k-permutations of it: the same products (scales uniform per row and
     // per column), so the exact sums agree; whether D does measures order dependence.
    Operands base = Blank();
    const uint8_t row_scales[8] = {kOne, kTwo, 0x30, 0x48, 0x3C, 0x44, 0x34, 0x4C};
    for (int m = 0; m < 16; ++m) {
      std::fill(std::begin(base.SA[m]), std::end(base.SA[m]), row_scales[m % 8]);
      for (auto& v : base.A[m]) v = RandomCode(rng);
    }
    for (int n = 0; n < 8; ++n) {
      std::fill(std::begin(base.SB[n]), std::end(base.SB[n]), row_scales[(n + 3) % 8]);
    }
    for (auto& r : base.B)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : base.C) {
      for (auto& v : r) {
        // 24 significant bits down to 2^-3, products down to 2^-6: sums of ~27 bits.
        const float mag =
            std::ldexp(static_cast<float>((1u << 23) | (rng.Next() % (1u << 23))), -3);
        v = (rng.Next() & 1) ? -mag : mag;
      }
    }
    const std::pair<const char*, std::function<int(int)>> perms[] = {
        {"bound/order_base", [](int k) { return k; }},
        {"bound/order_reversed", [](int k) { return 63 - k; }},
        {"bound/order_rotated16", [](int k) { return (k + 16) % 64; }},
        {"bound/order_interleaved", [](int k) { return (k % 2) * 32 + k / 2; }},
    };
    for (const auto& [name, perm] : perms) {
      Operands o = base;
      for (int k = 0; k < 64; ++k) {
        for (int m = 0; m < 16; ++m) o.A[m][k] = base.A[m][perm(k)];
        for (int n = 0; n < 8; ++n) o.B[k][n] = base.B[perm(k)][n];
      }
      out.push_back(Pack(MmaKind::kBound, name, 0, 0, o));
    }
  }
}

void AddSubnormalCases(std::vector<MmaCase>& out) {
  {  // SFA: rows 0..6 all blocks 0x01..0x07, row 7 0x08, rows 8..15 mixed per block.
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      for (int b = 0; b < 4; ++b) {
        o.SA[m][b] = m < 7    ? static_cast<uint8_t>(m + 1)
                     : m == 7 ? uint8_t{0x08}
                              : static_cast<uint8_t>(1 + (m + 3 * b) % 7);
      }
      std::fill(std::begin(o.A[m]), std::end(o.A[m]), kC1);
    }
    for (int k = 0; k < 64; ++k) {
      for (int n = 0; n < 8; ++n) o.B[k][n] = static_cast<uint8_t>(n);  // 0, 0.5, ..., 6
    }
    out.push_back(Pack(MmaKind::kSubnormal, "subnormal/sfa", 0, 0, o));
  }
  {  // SFB: columns 0..6 all blocks 0x01..0x07, column 7 0x00 (a zero scale).
    Operands o = Blank();
    for (int n = 0; n < 8; ++n) {
      std::fill(std::begin(o.SB[n]), std::end(o.SB[n]), n < 7 ? static_cast<uint8_t>(n + 1) : 0);
    }
    for (int m = 0; m < 16; ++m) {
      std::fill(std::begin(o.A[m]), std::end(o.A[m]),
                static_cast<uint8_t>((m % 8) | (m >= 8 ? kCNeg : 0)));
    }
    for (auto& r : o.B) std::fill(std::begin(r), std::end(r), kC1);
    out.push_back(Pack(MmaKind::kSubnormal, "subnormal/sfb", 0, 0, o));
  }
  {  // Both subnormal: products down to 2^-20.
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      for (int b = 0; b < 4; ++b) o.SA[m][b] = static_cast<uint8_t>(1 + (m + b) % 7);
      for (int k = 0; k < 64; ++k) o.A[m][k] = static_cast<uint8_t>(1 + (k + m) % 7);
    }
    for (int n = 0; n < 8; ++n) {
      for (int b = 0; b < 4; ++b) o.SB[n][b] = static_cast<uint8_t>(1 + (n + 3 + 2 * b) % 7);
      for (int k = 0; k < 64; ++k) {
        o.B[k][n] = static_cast<uint8_t>(1 + (k + 2 * n) % 7) | ((k % 5 == 0) ? kCNeg : 0);
      }
    }
    out.push_back(Pack(MmaKind::kSubnormal, "subnormal/both", 0, 0, o));
  }
}

void AddNanCases(std::vector<MmaCase>& out) {
  testbed::Rng rng(7);
  auto random_ops = [&rng]() {
    Operands o = Blank();
    for (auto& r : o.A)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.B)
      for (auto& v : r) v = RandomCode(rng);
    for (auto& r : o.SA)
      for (auto& v : r) v = (rng.Next() & 1) ? kOne : kTwo;
    for (auto& r : o.SB)
      for (auto& v : r) v = (rng.Next() & 1) ? kOne : kTwo;
    for (auto& r : o.C)
      for (auto& v : r) v = static_cast<float>(static_cast<int>(rng.Next() % 64) - 32);
    return o;
  };
  {  // SFA row 3 block 1 NaN, that block's codes zero: row 3 NaN anyway.
    Operands o = random_ops();
    o.SA[3][1] = kNaN;
    for (int k = 16; k < 32; ++k) o.A[3][k] = 0;
    out.push_back(Pack(MmaKind::kNan, "nan/sfa_zero_codes", 3, 1, o));
  }
  {  // SFB column 5 block 2 NaN with nonzero codes.
    Operands o = random_ops();
    o.SB[5][2] = kNaN;
    for (int k = 32; k < 48; ++k) o.B[k][5] = static_cast<uint8_t>(1 + k % 7);
    out.push_back(Pack(MmaKind::kNan, "nan/sfb_codes", 5, 2, o));
  }
  {  // Everything zero but SFA row 0 block 0 and SFB column 7 block 3.
    Operands o = Blank();
    o.SA[0][0] = kNaN;
    o.SB[7][3] = kNaN;
    out.push_back(Pack(MmaKind::kNan, "nan/all_codes_zero", 0, 7, o));
  }
  {  // 0x7F only in the ignored lanes: no effect.
    out.push_back(
        Pack(MmaKind::kNan, "nan/ignored_lanes", 0, 0, random_ops(), Unused::kNaN, Unused::kNaN));
  }
  {  // A NaN accumulator input stays NaN (the accumulator after a NaN scale).
    Operands o = random_ops();
    for (int m = 0; m < 16; ++m) o.C[m][(m * 3) % 8] = std::numeric_limits<float>::quiet_NaN();
    out.push_back(Pack(MmaKind::kNan, "nan/c_nan", 0, 0, o));
  }
}

// Values around every e2m1 rounding threshold, the specials, random near-grid and random bits.
E2m1Cases BuildE2m1Cases() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1e-45f,
                          -1e-45f,
                          1e-40f,
                          -1e-40f,
                          0.1f,
                          -0.1f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          FLT_MAX,
                          -FLT_MAX,
                          7.0f,
                          -7.0f,
                          1e30f,
                          -1e30f};
  for (uint32_t nan_bits :
       {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    v.push_back(F32FromBits(nan_bits));
  }
  for (float t :
       {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f}) {
    for (float s : {1.0f, -1.0f}) {
      v.push_back(s * std::nextafter(t, 0.0f));
      v.push_back(s * t);
      v.push_back(s * std::nextafter(t, 100.0f));
    }
  }
  testbed::Rng rng(11);
  for (int i = 0; i < 4096; ++i) {
    uint32_t u = static_cast<uint32_t>(rng.Next() >> 32);
    u = (u & 0x807FFFFFu) | ((120u + (u >> 23) % 12u) << 23);  // exponents near the grid
    v.push_back(F32FromBits(u));
  }
  for (int i = 0; i < 1024; ++i) v.push_back(F32FromBits(static_cast<uint32_t>(rng.Next() >> 32)));
  E2m1Cases c;
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) {
    c.even.push_back(v[i]);
    c.odd.push_back(v[n - 1 - i]);
  }
  return c;
}

// ============================================================================================
// Judging helpers
// ============================================================================================

bool Same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.9g", v);
}

std::string Elem(int m, int n) {
  int lane, reg;
  CLocation(m, n, &lane, &reg);
  return absl::StrFormat("D[m=%d, n=%d] (lane %d d[%d])", m, n, lane, reg);
}

std::string FirstDiff(const float D[16][8], const float E[16][8]) {
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      if (!Same(D[m][n], E[m][n])) {
        return absl::StrFormat("%s = %s, expected %s", Elem(m, n), Num(D[m][n]), Num(E[m][n]));
      }
    }
  }
  return "no difference";
}

bool RowZero(const float D[16][8], int m) {
  for (int n = 0; n < 8; ++n) {
    if (D[m][n] != 0.0f) return false;
  }
  return true;
}
bool ColZero(const float D[16][8], int n) {
  for (int m = 0; m < 16; ++m) {
    if (D[m][n] != 0.0f) return false;
  }
  return true;
}
std::string RowText(const float D[16][8], int m) {
  std::vector<std::string> v;
  for (int n = 0; n < 8; ++n) v.push_back(Num(D[m][n]));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}
std::string ColText(const float D[16][8], int n) {
  std::vector<std::string> v;
  for (int m = 0; m < 16; ++m) v.push_back(Num(D[m][n]));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

// A case: D row m decoded through B's k encoding.
bool DecodeARow(const float D[16][8], int m, int* k) {
  if (D[m][6] != 1.0f || D[m][7] != 2.0f) return false;
  int v = 0;
  for (int n = 0; n < 6; ++n) {
    if (D[m][n] == 1.0f) {
      v |= 1 << n;
    } else if (D[m][n] != 0.0f) {
      return false;
    }
  }
  *k = v;
  return true;
}

// B case: D column n decoded through A's k encoding.
bool DecodeBCol(const float D[16][8], int n, int* k) {
  if (D[6][n] != 1.0f || D[7][n] != 2.0f || D[14][n] != 0.5f || D[15][n] != 0.0f) return false;
  int v = 0;
  for (int m = 0; m < 6; ++m) {
    const float bit = D[m][n], inv = D[m + 8][n];
    if (bit == 1.0f && inv == 0.0f) {
      v |= 1 << m;
    } else if (!(bit == 0.0f && inv == 1.0f)) {
      return false;
    }
  }
  *k = v;
  return true;
}

std::string DiagnoseCD(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  std::vector<std::string> out;
  for (int m = 0; m < 16 && out.size() < 3; ++m) {
    for (int n = 0; n < 8 && out.size() < 3; ++n) {
      if (Same(D[m][n], E[m][n])) continue;
      const double v = D[m][n];
      const double idx = mc.p0 == 0 ? v - 1 : -v * 8 - 1;
      if (idx >= 0 && idx < 128 && idx == std::floor(idx)) {
        const int sm = static_cast<int>(idx) / 8, sn = static_cast<int>(idx) % 8;
        int sl, sr, dl, dr;
        CLocation(sm, sn, &sl, &sr);
        CLocation(m, n, &dl, &dr);
        out.push_back(absl::StrFormat(
            "C/D: c[%d] of lane %d (row %d, col %d) came back as d[%d] of lane %d (row %d, col %d)",
            sr, sl, sm, sn, dr, dl, m, n));
      } else {
        out.push_back(absl::StrFormat("C/D: %s = %s is no C element (expected %s)", Elem(m, n),
                                      Num(v), Num(E[m][n])));
      }
    }
  }
  return absl::StrJoin(out, "; ");
}

std::string DiagnoseA(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  int lane, reg, nib;
  ALocation(mc.p0, mc.p1, &lane, &reg, &nib);
  std::vector<std::string> seen, junk;
  bool only_expected = true;
  for (int m = 0; m < 16; ++m) {
    if (RowZero(D, m)) continue;
    int k;
    if (DecodeARow(D, m, &k)) {
      seen.push_back(absl::StrFormat("row %d, k %d", m, k));
      if (m != mc.p0 || k != mc.p1) only_expected = false;
    } else {
      junk.push_back(absl::StrFormat("D row %d = %s", m, RowText(D, m)));
      only_expected = false;
    }
  }
  std::string s = absl::StrFormat("A: register a[%d] lane %d nibble %d (row %d, k %d) ", reg, lane,
                                  nib, mc.p0, mc.p1);
  if (seen.empty() && junk.empty()) return s + "was not read (D is all zero)";
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  if (!seen.empty()) absl::StrAppend(&s, "read as ", absl::StrJoin(seen, " and "));
  if (!junk.empty()) {
    absl::StrAppend(&s, seen.empty() ? "" : "; ", "unrecognized: ", absl::StrJoin(junk, "; "));
  }
  return s;
}

std::string DiagnoseB(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  int lane, reg, nib;
  BLocation(mc.p0, mc.p1, &lane, &reg, &nib);
  std::vector<std::string> seen, junk;
  bool only_expected = true;
  for (int n = 0; n < 8; ++n) {
    if (ColZero(D, n)) continue;
    int k;
    if (DecodeBCol(D, n, &k)) {
      seen.push_back(absl::StrFormat("k %d, column %d", k, n));
      if (n != mc.p1 || k != mc.p0) only_expected = false;
    } else {
      junk.push_back(absl::StrFormat("D column %d = %s", n, ColText(D, n)));
      only_expected = false;
    }
  }
  std::string s = absl::StrFormat("B: register b[%d] lane %d nibble %d (k %d, column %d) ", reg,
                                  lane, nib, mc.p0, mc.p1);
  if (seen.empty() && junk.empty()) return s + "was not read (D is all zero)";
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  if (!seen.empty()) absl::StrAppend(&s, "read as ", absl::StrJoin(seen, " and "));
  if (!junk.empty()) {
    absl::StrAppend(&s, seen.empty() ? "" : "; ", "unrecognized: ", absl::StrJoin(junk, "; "));
  }
  return s;
}

// Scale cases: the value of one D row (SFA) / column (SFB) names what the hardware used: 15 =
// all four blocks at 1.0; 15 + 2^b = the 2.0 byte as block b; 15 * P = ignored lane's poison P.
std::string DecodeScaleLine(float v, bool sfa, int* block) {
  *block = -1;
  if (v == 15.0f) return "";
  for (int b = 0; b < 4; ++b) {
    if (v == 15.0f + static_cast<float>(1 << b)) {
      *block = b;
      return "";
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int t = lane % 4;
    if (sfa ? t < 2 : t == 0) continue;
    if (v == 15.0f * Ue4m3ToF32(PoisonByte(lane))) {
      return absl::StrFormat("its scales from ignored lane %d", lane);
    }
  }
  return absl::StrFormat("an unrecognized value %s", Num(v));
}

std::string DiagnoseScale(const MmaCase& mc, const float D[16][8], const float E[16][8], bool sfa) {
  const int lane = sfa ? 4 * (mc.p0 % 8) + mc.p0 / 8 : 4 * mc.p0;
  const char* what = sfa ? "row" : "column";
  std::vector<std::string> seen, other;
  bool only_expected = true;
  const int lines = sfa ? 16 : 8;
  for (int x = 0; x < lines; ++x) {
    const float v = sfa ? D[x][0] : D[0][x];
    bool uniform = true;
    for (int y = 0; y < (sfa ? 8 : 16); ++y) uniform = uniform && Same(sfa ? D[x][y] : D[y][x], v);
    if (!uniform) {
      other.push_back(absl::StrFormat("%s %d is not uniform: %s", what, x,
                                      sfa ? RowText(D, x) : ColText(D, x)));
      only_expected = false;
      continue;
    }
    int block;
    const std::string odd = DecodeScaleLine(v, sfa, &block);
    if (!odd.empty()) {
      other.push_back(absl::StrFormat("%s %d used %s", what, x, odd));
      only_expected = false;
    } else if (block >= 0) {
      seen.push_back(absl::StrFormat("%s %d / block %d", what, x, block));
      if (x != mc.p0 || block != mc.p1) only_expected = false;
    }
  }
  std::string s = absl::StrFormat("%s: lane %d byte %d (%s %d, k-block %d) ", sfa ? "SFA" : "SFB",
                                  lane, mc.p1, what, mc.p0, mc.p1);
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  absl::StrAppend(&s, seen.empty() ? "was not read" : "read as " + absl::StrJoin(seen, " and "));
  if (!other.empty()) absl::StrAppend(&s, "; ", absl::StrJoin(other, "; "));
  return s;
}

// ---- precision ----

struct Terms {
  bool nan = false;
  Exact c;
  float cf = 0;
  Exact p[64];
};

Terms MakeTerms(const Operands& o, int m, int n) {
  Terms t;
  t.cf = o.C[m][n];
  for (int b = 0; b < 4; ++b) t.nan = t.nan || E4M3IsNaN(o.SA[m][b]) || E4M3IsNaN(o.SB[n][b]);
  if (std::isnan(t.cf)) t.nan = true;
  if (t.nan) return t;
  t.c = Exact::FromFloat(t.cf);
  for (int k = 0; k < 64; ++k) {
    const int b = k / 16;
    const int64_t v = int64_t{E2M1TimesTwo(o.A[m][k])} * E2M1TimesTwo(o.B[k][n]) *
                      int64_t{E4M3Times512(o.SA[m][b])} * E4M3Times512(o.SB[n][b]);
    t.p[k] = Exact::FromScaledInt(v, -20);  // (2a)(2b)(512 sa)(512 sb) = 2^20 a b sa sb
  }
  return t;
}

struct ElemVerdict {
  bool ok = true;
  bool exact_case = false;
  Exact s, a, bound;
};

// Section 8 for one instruction: the 64 products and C are 65 terms, so B = 64 * 2^-24 * A.
ElemVerdict JudgeValue(const Terms& t, float got) {
  ElemVerdict v;
  if (t.nan) {
    v.ok = std::isnan(got);
    return v;
  }
  v.s = t.c;
  v.a = t.c.Abs();
  int e = t.c.IsZero() ? 1000 : t.c.LsbExp();
  for (const Exact& p : t.p) {
    v.s = v.s + p;
    v.a = v.a + p.Abs();
    if (!p.IsZero()) e = std::min(e, p.LsbExp());
  }
  v.exact_case = v.a.IsZero() || v.a.MsbExp() < e + 24;
  v.bound = v.a.ShiftRight(18);
  if (!std::isfinite(got)) {
    v.ok = false;
  } else if (v.exact_case) {
    v.ok = Exact::FromFloat(got) == v.s;  // +-0 both admissible when S = 0
  } else {
    v.ok = (Exact::FromFloat(got) - v.s).Abs() <= v.bound;
  }
  return v;
}

// Candidate accumulation models for the measurement.
constexpr int kModels = 6;
const char* const kModelNames[kModels] = {
    "exact sum rounded once to nearest (the emulator's model)",
    "exact sum truncated once",
    "sequential round-to-nearest adds in k order",
    "sequential truncating adds in k order",
    "exact 16-block sums, round-to-nearest adds",
    "exact 16-block sums, truncating adds",
};
const char* const kModelShort[kModels] = {"exact-then-RN", "exact-then-RZ", "sequential-RN",
                                          "sequential-RZ", "block-RN",      "block-RZ"};

std::array<float, kModels> Models(const Terms& t) {
  Exact s = t.c;
  for (const Exact& p : t.p) s = s + p;
  float seq_rn = t.cf, seq_rz = t.cf, blk_rn = t.cf, blk_rz = t.cf;
  for (int k = 0; k < 64; ++k) {
    seq_rn = (Exact::FromFloat(seq_rn) + t.p[k]).ToFloatRN();
    seq_rz = (Exact::FromFloat(seq_rz) + t.p[k]).ToFloatRZ();
  }
  for (int b = 0; b < 4; ++b) {
    Exact blk;
    for (int k = 16 * b; k < 16 * b + 16; ++k) blk = blk + t.p[k];
    blk_rn = (Exact::FromFloat(blk_rn) + blk).ToFloatRN();
    blk_rz = (Exact::FromFloat(blk_rz) + blk).ToFloatRZ();
  }
  return {s.ToFloatRN(), s.ToFloatRZ(), seq_rn, seq_rz, blk_rn, blk_rz};
}

std::string MatchText(const std::array<float, kModels>& models, float got) {
  std::vector<std::string> hits;
  for (int i = 0; i < kModels; ++i) {
    if (Same(models[i], got)) hits.push_back(kModelShort[i]);
  }
  return hits.empty() ? "matches none of the candidate models"
                      : absl::StrCat("consistent with ", absl::StrJoin(hits, ", "));
}

// Subnormal cases: the scale a row / column with one uniform scale byte acted as.
std::string SubnormalHint(const MmaCase& mc, const Operands& o, const float D[16][8], int m,
                          int n) {
  uint8_t byte = 0;
  double implied = 0;
  const char* which = nullptr;
  if (mc.name == "subnormal/sfa" && m < 7) {
    byte = o.SA[m][0];
    implied = D[m][7] / (64.0 * 6.0);  // column 7: B = 6.0 everywhere
    which = "SFA";
  } else if (mc.name == "subnormal/sfb" && n < 7) {
    byte = o.SB[n][0];
    implied = D[7][n] / (64.0 * 6.0);  // row 7: A = 6.0 everywhere
    which = "SFB";
  } else {
    return "";
  }
  const double exact = Ue4m3ToF32(byte);
  std::string how;
  if (implied == 0) {
    how = " (flushed to zero)";
  } else if (implied == std::ldexp(1.0 + (byte & 7) / 8.0, -6)) {
    how = " (exponent field 0 read as a normal: 2^-6 * (1 + m/8))";
  }
  return absl::StrFormat("; %s 0x%02X (= %d * 2^-9 = %s) acted as %s%s", which, byte, byte & 7,
                         Num(exact), Num(implied), how);
}

std::string NanNote(const MmaCase& mc) {
  if (mc.name == "nan/sfa_zero_codes") {
    return "SFA 0x7F at row 3 block 1 (lane 12 byte 1), that block's A codes zero";
  }
  if (mc.name == "nan/sfb_codes") return "SFB 0x7F at column 5 block 2 (lane 20 byte 2)";
  if (mc.name == "nan/all_codes_zero") {
    return "A = B = C = 0, SFA 0x7F at row 0 block 0 (lane 0 byte 0), SFB 0x7F at column 7 "
           "block 3 (lane 28 byte 3)";
  }
  if (mc.name == "nan/ignored_lanes") return "0x7F only in the ignored scale lanes";
  if (mc.name == "nan/c_nan") return "C NaN at D[m, 3m mod 8]";
  return "";
}

const char* E2m1Category(float v) {
  const float a = std::fabs(v);
  if (std::isnan(v)) return "NaN";
  if (a <= 0.25f) return "zero sign";
  if (a > 6.0f) return "saturation";
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {
    if (a == t) return "tie";
  }
  return "rounding";
}

GroupResult& Group(std::vector<GroupResult>& groups, const std::string& name) {
  for (GroupResult& g : groups) {
    if (g.name == name) return g;
  }
  std::abort();
}

void AddFailure(GroupResult& g, const JudgeOptions& opt, std::string text) {
  ++g.failed;
  if (static_cast<int>(g.failures.size()) < opt.max_failures) g.failures.push_back(std::move(text));
}

}  // namespace

// ============================================================================================
// Public
// ============================================================================================

const char* AreaName(Area a) {
  switch (a) {
    case Area::kLayout:
      return "layout";
    case Area::kPrecision:
      return "precision";
    case Area::kConversion:
      return "conversion";
  }
  return "?";
}

const char* GroupName(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
      return "C/D";
    case MmaKind::kA:
      return "A";
    case MmaKind::kB:
      return "B";
    case MmaKind::kSfa:
      return "SFA";
    case MmaKind::kSfb:
      return "SFB";
    case MmaKind::kExact:
      return "exact";
    case MmaKind::kBound:
      return "bound";
    case MmaKind::kSubnormal:
      return "subnormal";
    case MmaKind::kNan:
      return "nan";
  }
  return "?";
}

Area AreaOf(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
    case MmaKind::kA:
    case MmaKind::kB:
    case MmaKind::kSfa:
    case MmaKind::kSfb:
      return Area::kLayout;
    default:
      return Area::kPrecision;
  }
}

ProbeCases BuildCases() {
  ProbeCases pc;
  AddLayoutCases(pc.mma);
  AddExactCases(pc.mma);
  AddBoundCases(pc.mma);
  AddSubnormalCases(pc.mma);
  AddNanCases(pc.mma);
  pc.e2m1 = BuildE2m1Cases();
  return pc;
}

DeviceResults RunModelDevice(const ProbeCases& cases) {
  DeviceResults r;
  r.device = "CPU model (no device)";
  r.device_code =
      "the contract's CPU model: emulator/mma_model.h (exact sum rounded once), "
      "emulator/formats.h F32ToE2M1";
  r.native = false;
  r.d.resize(cases.mma.size() * 128);
  for (size_t i = 0; i < cases.mma.size(); ++i) {
    const MmaCase& mc = cases.mma[i];
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb,
                           reinterpret_cast<float(*)[4]>(r.d.data() + 128 * i));
  }
  r.e2m1.resize(cases.e2m1.even.size());
  for (size_t i = 0; i < r.e2m1.size(); ++i) {
    r.e2m1[i] =
        static_cast<uint8_t>(F32ToE2M1(cases.e2m1.even[i]) | (F32ToE2M1(cases.e2m1.odd[i]) << 4));
  }
  return r;
}

Report Judge(const ProbeCases& cases, const DeviceResults& results, const JudgeOptions& opt) {
  Report rep;
  rep.device_info.device = results.device;
  rep.device_info.device_code = results.device_code;
  rep.device_info.native = results.native;
  auto add_group = [&rep](Area area, const char* name, const char* unit, const char* what) {
    GroupResult g;
    g.area = area;
    g.name = name;
    g.unit = unit;
    g.what = what;
    rep.groups.push_back(std::move(g));
  };
  add_group(
      Area::kLayout, "C/D", "cases",
      "C passes through to D (A = B = 0), 128 distinct values: C and D fragments as section 7");
  add_group(Area::kLayout, "A", "cases",
            "one-hot A code per (row, k), 16 x 64; B spells k in binary across its columns, so D "
            "names the (row, k) the hardware used");
  add_group(Area::kLayout, "B", "cases",
            "one-hot B code per (k, column), 64 x 8; A spells k in binary down its rows");
  add_group(Area::kLayout, "SFA", "cases",
            "one 2.0 scale byte per (row, k-block), the rest 1.0; B's blocks weigh 1, 2, 4, 8; "
            "ignored lanes (l % 4 = 2, 3) hold distinct poison scales");
  add_group(Area::kLayout, "SFB", "cases",
            "one 2.0 scale byte per (column, k-block), the rest 1.0; A's blocks weigh 1, 2, 4, 8; "
            "ignored lanes (l % 4 != 0) hold distinct poison scales");
  add_group(Area::kPrecision, "exact", "elements",
            "exact data whose sums need all 24 bits (section 8 exact case): bit for bit");
  add_group(Area::kPrecision, "bound", "elements",
            "partial sums beyond 24 bits (guard ladder at C = +-2^24, cancellation of "
            "+-6*448*448, wide random scales, large C, k-permutations): |D - (C + sum p)| <= "
            "64 * 2^-24 * (|C| + sum |p|); elements whose data is exact: bit for bit");
  add_group(Area::kPrecision, "subnormal", "elements",
            "UE4M3 scales 0x01-0x07 (m * 2^-9) and 0x00 on SFA, SFB and both: bit for bit");
  add_group(Area::kPrecision, "nan", "elements",
            "scale 0x7F makes its row / column NaN (also over zero codes); a NaN C stays NaN; 0x7F "
            "in ignored lanes has no effect");
  add_group(Area::kConversion, "e2m1", "values",
            "F32x2ToE2m1Byte (the kernels' conversion) against F32ToE2M1: NaN -> 0x7, -0 and tiny "
            "negatives -> 0x8, ties to even, saturation to +-6, both nibbles");

  const size_t ncases = cases.mma.size();
  if (results.d.size() != ncases * 128) {
    GroupResult& g = Group(rep.groups, "C/D");
    AddFailure(g, opt,
               absl::StrFormat("the device returned %d D values, expected %d", results.d.size(),
                               ncases * 128));
  }

  // Measurement tallies.
  int64_t discriminating = 0, none = 0;
  std::array<int64_t, kModels> hits{};
  double worst_ratio = 0;
  std::string worst_where;
  std::map<std::string, std::array<int, 3>> cancel;  // kept / lost / other
  std::map<std::string, std::vector<float>> order;   // case -> D
  std::string ladder;
  struct CaseTally {
    std::string name;
    int64_t disc = 0, none = 0;
    std::array<int64_t, kModels> hits{};
  };
  std::vector<CaseTally> by_case;

  for (size_t ci = 0; ci < ncases && results.d.size() == ncases * 128; ++ci) {
    const MmaCase& mc = cases.mma[ci];
    float D[16][8], E[16][8], e_frag[32][4];
    UnpackD(results.d.data() + 128 * ci, D);
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb, e_frag);
    UnpackD(&e_frag[0][0], E);
    GroupResult& g = Group(rep.groups, GroupName(mc.kind));
    if (AreaOf(mc.kind) == Area::kLayout) {
      ++g.checked;
      bool ok = true;
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 8; ++n) ok = ok && Same(D[m][n], E[m][n]);
      }
      if (ok) continue;
      std::string why;
      switch (mc.kind) {
        case MmaKind::kCD:
          why = DiagnoseCD(mc, D, E);
          break;
        case MmaKind::kA:
          why = DiagnoseA(mc, D, E);
          break;
        case MmaKind::kB:
          why = DiagnoseB(mc, D, E);
          break;
        case MmaKind::kSfa:
          why = DiagnoseScale(mc, D, E, true);
          break;
        case MmaKind::kSfb:
          why = DiagnoseScale(mc, D, E, false);
          break;
        default:
          break;
      }
      AddFailure(g, opt, why);
      continue;
    }
    // Precision: element by element.
    const Operands o = Unpack(mc);
    const bool measure = mc.kind == MmaKind::kBound || mc.kind == MmaKind::kExact;
    if (measure) by_case.push_back(CaseTally{mc.name});
    if (mc.name.rfind("bound/order_", 0) == 0) {
      order[mc.name].assign(&D[0][0], &D[0][0] + 128);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const Terms t = MakeTerms(o, m, n);
        const float got = D[m][n];
        const ElemVerdict v = JudgeValue(t, got);
        ++g.checked;
        std::array<float, kModels> models{};
        if (measure && !t.nan) {
          models = Models(t);
          bool all_same = true;
          for (int i = 1; i < kModels; ++i) all_same = all_same && Same(models[i], models[0]);
          if (!all_same) {
            ++discriminating;
            ++by_case.back().disc;
            bool any = false;
            for (int i = 0; i < kModels; ++i) {
              if (Same(models[i], got)) {
                ++hits[i];
                ++by_case.back().hits[i];
                any = true;
              }
            }
            if (!any) {
              ++none;
              ++by_case.back().none;
            }
          }
          if (!v.exact_case && std::isfinite(got)) {
            const double err = (Exact::FromFloat(got) - v.s).Abs().ToDouble();
            const double ratio = err / v.bound.ToDouble();
            if (ratio > worst_ratio) {
              worst_ratio = ratio;
              worst_where = absl::StrFormat("%s %s", mc.name, Elem(m, n));
            }
          }
          if (mc.name.rfind("bound/cancel_", 0) == 0) {
            auto& tally = cancel[mc.name];
            if (Same(got, models[0])) {
              ++tally[0];
            } else if (got == 0.0f) {
              ++tally[1];
            } else {
              ++tally[2];
            }
          }
          if (mc.name == "bound/guard_ladder" && n <= 1) {
            // Columns 0 and 1: C = +2^24 and -2^24; row m: 64 terms t.
            static const char* const kT[16] = {"1",     "2^-1",  "2^-2",  "2^-3", "2^-4", "2^-5",
                                               "2^-6",  "2^-7",  "1.5",   "1.75", "1.25", "1.875",
                                               "1.125", "1.625", "1.375", "3"};
            const double inc = static_cast<double>(got) - t.cf;
            if (n == 0) {
              absl::StrAppend(&ladder, ladder.empty() ? "" : ", ", "t=", kT[m], ": ", Num(inc));
            } else {
              absl::StrAppend(&ladder, "/", Num(inc), " (", Num(v.s.ToDouble() - t.cf), ")");
            }
          }
        }
        if (v.ok) continue;
        std::string text;
        if (t.nan) {
          text = absl::StrFormat("%s %s = %s, expected NaN (%s)", mc.name, Elem(m, n), Num(got),
                                 NanNote(mc));
        } else if (mc.kind == MmaKind::kNan && std::isnan(got)) {
          text = absl::StrFormat("%s %s = NaN, expected %s (%s)", mc.name, Elem(m, n),
                                 Num(v.s.ToFloatRN()), NanNote(mc));
        } else if (v.exact_case) {
          text = absl::StrFormat(
              "%s %s: got %s, exact %s (exact data: every partial sum fits 24 "
              "bits, bit for bit required)",
              mc.name, Elem(m, n), Num(got), Num(v.s.ToDouble()));
        } else {
          const double err =
              std::isfinite(got) ? (Exact::FromFloat(got) - v.s).Abs().ToDouble() : INFINITY;
          text =
              absl::StrFormat("%s %s: got %s, exact %s, |err| %s > bound %s", mc.name, Elem(m, n),
                              Num(got), Num(v.s.ToDouble()), Num(err), Num(v.bound.ToDouble()));
        }
        if (measure && !t.nan) absl::StrAppend(&text, " [", MatchText(models, got), "]");
        if (mc.kind == MmaKind::kSubnormal) absl::StrAppend(&text, SubnormalHint(mc, o, D, m, n));
        if (mc.kind == MmaKind::kNan && !t.nan && !std::isnan(got) && NanNote(mc).size()) {
          absl::StrAppend(&text, " (", NanNote(mc), ")");
        }
        AddFailure(g, opt, text);
      }
    }
  }

  // e2m1.
  {
    GroupResult& g = Group(rep.groups, "e2m1");
    const size_t n = cases.e2m1.even.size();
    if (results.e2m1.size() != n) {
      AddFailure(g, opt,
                 absl::StrFormat("the device returned %d conversions, expected %d",
                                 results.e2m1.size(), n));
    } else {
      for (size_t i = 0; i < n; ++i) {
        for (int half = 0; half < 2; ++half) {
          const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
          const uint8_t want = F32ToE2M1(v);
          const uint8_t got = (results.e2m1[i] >> (4 * half)) & 0xF;
          ++g.checked;
          if (got == want) continue;
          AddFailure(g, opt,
                     absl::StrFormat("e2m1: %s nibble (%s element) %s (0x%08X): got 0x%X, "
                                     "contract 0x%X [%s]",
                                     half ? "high" : "low", half ? "odd" : "even", Num(v),
                                     F32Bits(v), got, want, E2m1Category(v)));
        }
      }
    }
  }

  // Measurements.
  if (discriminating > 0) {
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], hits[i]));
    }
    rep.measurements.push_back(absl::StrFormat(
        "accumulation: of %d elements (exact and bound groups) where the candidate models "
        "differ, D equals: %s; none of them: %d (RN = round to nearest even, RZ = truncation; "
        "an element can match several). By case:",
        discriminating, absl::StrJoin(parts, ", "), none));
  }
  for (const CaseTally& ct : by_case) {
    if (ct.disc == 0) continue;
    // RN-consistent: one round-to-nearest model explains every element; truncation-consistent:
    // one truncating model does; else neither.
    std::string label = "neither RN- nor truncation-consistent";
    for (int i : {0, 2, 4, 1, 3, 5}) {
      if (ct.hits[i] == ct.disc) {
        label = absl::StrCat(i % 2 == 0 ? "RN-consistent (" : "truncation-consistent (",
                             kModelShort[i], ")");
        break;
      }
    }
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], ct.hits[i]));
    }
    rep.measurements.push_back(absl::StrFormat("  %s: %s; of %d elements: %s, none %d", ct.name,
                                               label, ct.disc, absl::StrJoin(parts, ", "),
                                               ct.none));
  }
  if (!ladder.empty()) {
    rep.measurements.push_back(
        absl::StrCat("guard ladder, D - C for C = +2^24 / C = -2^24 (exact) and 64 equal terms t "
                     "(ulp(2^24) = 2: terms of 1 and below need guard bits or exact grouping): ",
                     ladder));
  }
  for (const auto& [name, tally] : cancel) {
    rep.measurements.push_back(absl::StrFormat(
        "%s: D = the exact small-term sum (rounded once) in %d/128, 0 (small terms lost) in "
        "%d/128, other in %d/128",
        name, tally[0], tally[1], tally[2]));
  }
  if (order.count("bound/order_base")) {
    const std::vector<float>& base = order["bound/order_base"];
    std::vector<std::string> parts;
    for (const auto& [name, d] : order) {
      if (name == "bound/order_base") continue;
      int diff = 0;
      for (int i = 0; i < 128; ++i) diff += F32Bits(d[i]) != F32Bits(base[i]);
      parts.push_back(absl::StrFormat("%s %d/128", name.substr(12), diff));
    }
    rep.measurements.push_back(
        absl::StrCat("order: elements whose D changes when the same 64 products are k-permuted: ",
                     absl::StrJoin(parts, ", ")));
  }
  if (worst_ratio > 0) {
    rep.measurements.push_back(
        absl::StrFormat("largest |D - exact| / bound over the non-exact elements: %.4f (%s)",
                        worst_ratio, worst_where));
  }
  if (!results.raw_cvt.empty() && results.raw_cvt.size() == cases.e2m1.even.size()) {
    std::map<std::string, int> diffs;
    std::map<std::string, std::string> example;
    int64_t total = 0;
    for (size_t i = 0; i < results.raw_cvt.size(); ++i) {
      for (int half = 0; half < 2; ++half) {
        const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
        const uint8_t want = F32ToE2M1(v);
        const uint8_t got = (results.raw_cvt[i] >> (4 * half)) & 0xF;
        ++total;
        if (got == want) continue;
        const std::string cat = E2m1Category(v);
        if (diffs[cat]++ == 0) {
          example[cat] =
              absl::StrFormat("%s (0x%08X) -> 0x%X, contract 0x%X", Num(v), F32Bits(v), got, want);
        }
      }
    }
    if (diffs.empty()) {
      rep.measurements.push_back(absl::StrFormat(
          "raw cvt.rn.satfinite.e2m1x2.f32 equals the contract on all %d values (NaN -> 0x7, "
          "the sign of a zero result kept)",
          total));
    } else {
      std::vector<std::string> parts;
      for (const auto& [cat, count] : diffs) {
        parts.push_back(absl::StrFormat("%s %d (e.g. %s)", cat, count, example[cat]));
      }
      rep.measurements.push_back(absl::StrFormat(
          "raw cvt.rn.satfinite.e2m1x2.f32 differs from the contract on: %s; "
          "F32x2ToE2m1Byte forces NaN -> 0x7 and the zero sign after it (judged above)",
          absl::StrJoin(parts, "; ")));
    }
  } else {
    rep.measurements.push_back(
        "raw cvt.rn.satfinite.e2m1x2.f32: not measured (no SM12x instruction on this device)");
  }

  // Verdict.
  std::vector<std::string> bad[3];
  for (const GroupResult& g : rep.groups) {
    if (!g.ok()) bad[static_cast<int>(g.area)].push_back(g.name);
  }
  rep.layout_ok = bad[0].empty();
  rep.precision_ok = bad[1].empty();
  rep.conversion_ok = bad[2].empty();
  std::vector<std::string> v;
  if (!rep.layout_ok) {
    v.push_back(absl::StrCat("LAYOUT BUG in ", absl::StrJoin(bad[0], ", "),
                             ": the instruction does not read/write these operands where "
                             "docs/contract.md section 7 says (see the failures above); fix "
                             "kernels/fragment_math.h / the contract's table before reading the "
                             "precision results, which assume the layout"));
    const bool a_bad = !Group(rep.groups, "A").ok(), b_bad = !Group(rep.groups, "B").ok();
    if (a_bad && b_bad) {
      v.push_back(
          "A and B are located through each other (an A case finds its k through B's "
          "pattern and vice versa): a row / column move names the operand at fault, but a "
          "k mismatch seen in both groups only says that A's and B's k orders disagree");
    }
  }
  if (!rep.precision_ok) {
    v.push_back(absl::StrCat(
        rep.layout_ok ? "ACCUMULATION DEVIATION" : "also precision failures", " in ",
        absl::StrJoin(bad[1], ", "),
        rep.layout_ok ? ": the layout is right, but the device's arithmetic is not the "
                        "contract's (section 8 bound / exact case, subnormal or NaN scales)"
                      : " (possibly consequences of the layout bug)"));
  }
  if (!rep.conversion_ok) {
    v.push_back(
        absl::StrCat("E2M1 CONVERSION DIFFERENCE in F32x2ToE2m1Byte (section 2): act_q "
                     "will differ from the emulator"));
  }
  if (v.empty()) {
    v.push_back(
        "layout as section 7 (A, B, SFA, SFB, C/D), accumulation within section 8 (exact sums "
        "bit for bit, the rest within the bound), subnormal and NaN scales as sections 2 and 6, "
        "e2m1 as section 2: a sweep failure on this device is neither the instruction's layout, "
        "its accumulation nor the e2m1 conversion");
  }
  rep.verdict = absl::StrJoin(v, ". ");
  if (!results.native) {
    absl::StrAppend(&rep.verdict,
                    ". NOTE: the block-scaled MMA here is not the SM120 hardware instruction (",
                    results.device_code, ")");
  }
  return rep;
}

std::string FormatReport(const Report& r) {
  std::string s;
  absl::StrAppend(&s,
                  "minimax_h3_nvfp4_out_proj probe: the block-scaled mma.sync m16n8k64 "
                  "kind::mxf4nvf4 scale_vec::4X ue4m3 and the e2m1 conversion against "
                  "docs/contract.md sections 2, 6, 7, 8\n");
  absl::StrAppend(&s, "device: ", r.device_info.device, "\n");
  absl::StrAppend(&s, "device code: ", r.device_info.device_code, "\n");
  const char* headers[3] = {"layout (section 7)", "precision (sections 2, 6, 8)",
                            "conversion (section 2)"};
  for (int area = 0; area < 3; ++area) {
    absl::StrAppend(&s, headers[area], "\n");
    for (const GroupResult& g : r.groups) {
      if (static_cast<int>(g.area) != area) continue;
      absl::StrAppend(
          &s, absl::StrFormat("  %s  %-10s %6d/%-6d %-11s %s\n", g.ok() ? "PASS" : "FAIL", g.name,
                              g.checked - g.failed, g.checked, g.unit + " ok", g.what));
      for (const std::string& f : g.failures) absl::StrAppend(&s, "        ", f, "\n");
      if (g.failed > static_cast<int64_t>(g.failures.size())) {
        absl::StrAppend(&s, absl::StrFormat("        ... and %d more\n",
                                            g.failed - static_cast<int64_t>(g.failures.size())));
      }
    }
  }
  absl::StrAppend(&s, "measured (observations, not judged):\n");
  for (const std::string& m : r.measurements) absl::StrAppend(&s, "  ", m, "\n");
  absl::StrAppend(&s, "verdict: ", r.verdict, "\n");
  absl::StrAppend(&s, r.passed() ? "PROBE PASSED\n" : "PROBE FAILED\n");
  return s;
}

std::string ReportJson(const Report& r) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const GroupResult& g : r.groups) {
    groups.push_back({{"area", AreaName(g.area)},
                      {"name", g.name},
                      {"what", g.what},
                      {"unit", g.unit},
                      {"checked", g.checked},
                      {"failed", g.failed},
                      {"pass", g.ok()},
                      {"failures", g.failures}});
  }
  const nlohmann::ordered_json j = {
      {"device", r.device_info.device},
      {"device_code", r.device_info.device_code},
      {"native", r.device_info.native},
      {"layout_ok", r.layout_ok},
      {"precision_ok", r.precision_ok},
      {"conversion_ok", r.conversion_ok},
      {"passed", r.passed()},
      {"verdict", r.verdict},
      {"groups", groups},
      {"measurements", r.measurements},
  };
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace h3::probe
