// The probe's cases: one-hot layout operands, precision cases and e2m1 conversion inputs
// (probe.h BuildCases). Judging them is probe.cc's.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "harness/probe/probe.h"
#include "harness/testbed/rng.h"

namespace h3::probe {
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

}  // namespace

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

}  // namespace h3::probe
