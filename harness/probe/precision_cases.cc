// The precision cases (probe.h MmaKind kExact, kBound, kSubnormal, kNan): sums that need all 24
// bits, partial sums beyond them (the contract's bound, section 8), subnormal scale bytes and
// NaN scales.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "harness/probe/cases_internal.h"
#include "harness/probe/probe.h"
#include "harness/testbed/rng.h"

namespace h3::probe::internal {
namespace {

// Scale bytes of the bound group: normal values only (subnormals have a group of their own).
constexpr uint8_t kWideScales[] = {0x08, 0x21, 0x30, kOne, 0x3B, 0x55, 0x6A, 0x77, k448};

}  // namespace

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

}  // namespace h3::probe::internal
