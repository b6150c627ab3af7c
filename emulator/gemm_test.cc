#include "emulator/gemm.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "emulator/formats.h"
#include "emulator/swizzle.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::ToBits;

struct Operand {
  int64_t rows, k;
  std::vector<uint8_t> codes, scales;
  BlockScaledMatrix View() const { return {rows, k, codes, scales, ScaleLayout::kLinear}; }
};

// Random full-entropy operand: any code, scales in [lo_sf, hi_sf].
Operand RandomOperand(TestRng& gen, int64_t rows, int64_t k, int lo_sf, int hi_sf) {
  Operand o{rows, k, std::vector<uint8_t>(rows * k / 2), std::vector<uint8_t>(rows * k / 16)};
  for (auto& c : o.codes) c = absl::Uniform<uint8_t>(gen, 0, 255);
  for (auto& s : o.scales)
    s = static_cast<uint8_t>(absl::Uniform<int>(absl::IntervalClosed, gen, lo_sf, hi_sf));
  return o;
}

TEST(ScaledInt128ToF32, RoundingTable) {
  struct Case {
    int64_t v;
    int exp2;
    RoundMode mode;
    float want;
  };
  const float k24 = 16777216.0f;  // 2^24
  const Case kCases[] = {
      {(1 << 24) + 1, 0, RoundMode::kNearestEven, k24},
      {(1 << 24) + 3, 0, RoundMode::kNearestEven, k24 + 4},
      {(1 << 24) + 1, 0, RoundMode::kTowardPositive, k24 + 2},
      {(1 << 24) + 1, 0, RoundMode::kTowardNegative, k24},
      {-((1 << 24) + 1), 0, RoundMode::kTowardPositive, -k24},
      {-((1 << 24) + 1), 0, RoundMode::kTowardNegative, -(k24 + 2)},
      {(1 << 24) + 2, 0, RoundMode::kTowardPositive, k24 + 2},  // exact stays
      {3, -20, RoundMode::kNearestEven, 3 * 0x1p-20f},
      {(int64_t{1} << 25) - 1, -1, RoundMode::kNearestEven, k24},  // carry to next binade
      {0, 0, RoundMode::kNearestEven, 0.0f},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(ScaledInt128ToF32(c.v, c.exp2, c.mode), c.want) << c.v << " " << c.exp2;
  }
}

TEST(Gemm, ExactDataIsExactAndBoundIsZero) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  // Codes of magnitude <= 2 (0..4, 8..12), scales 2^-2..2^0: products multiples of 2^-6,
  // |sum| <= 512 * 4 -> every partial sum is exact.
  Operand a{16, 512, std::vector<uint8_t>(16 * 256), std::vector<uint8_t>(16 * 32)};
  Operand w{24, 512, std::vector<uint8_t>(24 * 256), std::vector<uint8_t>(24 * 32)};
  static const uint8_t kCodes[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x8, 0x9, 0xA, 0xB, 0xC};
  for (Operand* o : {&a, &w}) {
    for (auto& c : o->codes) {
      c = kCodes[absl::Uniform<int>(gen, 0, 10)] | (kCodes[absl::Uniform<int>(gen, 0, 10)] << 4);
    }
    for (auto& s : o->scales) s = static_cast<uint8_t>(0x38 - 8 * absl::Uniform<int>(gen, 0, 3));
  }
  const MatrixF32 fast = GemmFastF32(a.View(), w.View());
  const MatrixF32 exact = GemmExactF32(a.View(), w.View());
  const IntOperand ai = ToIntOperand(a.View()), wi = ToIntOperand(w.View());
  for (int64_t m = 0; m < 16; ++m) {
    for (int64_t n = 0; n < 24; ++n) {
      EXPECT_EQ(ToBits(fast(m, n)), ToBits(exact(m, n))) << m << "," << n;
      const AccInterval iv = AccBound(ExactDot(ai, m, wi, n), 512);
      EXPECT_TRUE(iv.exact);
      EXPECT_EQ(iv.lo, iv.hi);
      if (exact(m, n) != 0.0f) {
        EXPECT_EQ(ToBits(iv.lo), ToBits(exact(m, n)));
      }
    }
  }
}

TEST(Gemm, RandomDataExactMatchesLongDoubleAndFastIsInsideTheBound) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  // Scales up to 0x50 (2^3): |sum| < 2^64 units of 2^-20 fits long double exactly.
  const Operand a = RandomOperand(gen, 20, 256, 0x18, 0x50);
  const Operand w = RandomOperand(gen, 36, 256, 0x18, 0x50);
  const MatrixF32 fast = GemmFastF32(a.View(), w.View());
  const MatrixF32 exact = GemmExactF32(a.View(), w.View());
  const IntOperand ai = ToIntOperand(a.View()), wi = ToIntOperand(w.View());
  int64_t inexact = 0;
  for (int64_t m = 0; m < 20; ++m) {
    for (int64_t n = 0; n < 36; ++n) {
      long double sum = 0;
      for (int64_t kk = 0; kk < 256; ++kk) {
        const long double x = static_cast<long double>(E2M1ToF32(a.View().Code(m, kk))) *
                              E4M3ToF32(a.scales[m * 16 + kk / 16]);
        const long double y = static_cast<long double>(E2M1ToF32(w.View().Code(n, kk))) *
                              E4M3ToF32(w.scales[n * 16 + kk / 16]);
        sum += x * y;
      }
      ASSERT_EQ(ToBits(exact(m, n)), ToBits(static_cast<float>(sum))) << m << "," << n;
      const AccInterval iv = AccBound(ExactDot(ai, m, wi, n), 256);
      if (!iv.exact) ++inexact;
      EXPECT_LE(iv.lo, exact(m, n));
      EXPECT_GE(iv.hi, exact(m, n));
      EXPECT_LE(iv.lo, fast(m, n)) << m << "," << n;
      EXPECT_GE(iv.hi, fast(m, n)) << m << "," << n;
    }
  }
  EXPECT_GT(inexact, 0) << "random data should exercise the bound";
}

TEST(Gemm, BoundTable) {
  // Hand-built accumulators: k = 64.
  struct Case {
    __int128 sum, abs_sum;
    int min_tz;
    bool exact;
  };
  const Case kCases[] = {
      {0, 0, 128, true},                                  // all products zero
      {(1 << 23), (1 << 23), 0, true},                    // < 2^(0+24)
      {(1 << 24), (1 << 24), 0, false},                   // reaches 2^24 units
      {(int64_t{1} << 30), (int64_t{1} << 30), 8, true},  // multiples of 2^8, < 2^32
      {5, (int64_t{1} << 26), 0, false},
  };
  for (const Case& c : kCases) {
    ExactAcc acc;
    acc.sum = c.sum;
    acc.abs_sum = c.abs_sum;
    acc.min_tz = c.min_tz;
    const AccInterval iv = AccBound(acc, 64);
    EXPECT_EQ(iv.exact, c.exact) << static_cast<int64_t>(c.sum);
  }
  // sum = 5 units, abs_sum = 2^26 units, k = 64: B = 63 * 2^26 * 2^-24 = 252 units.
  ExactAcc acc;
  acc.sum = 5;
  acc.abs_sum = int64_t{1} << 26;
  acc.min_tz = 0;
  const AccInterval iv = AccBound(acc, 64);
  EXPECT_EQ(iv.lo, -247 * 0x1p-20f);
  EXPECT_EQ(iv.hi, 257 * 0x1p-20f);
}

TEST(Gemm, NaNScaleGivesNaNOnBothPaths) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  Operand a = RandomOperand(gen, 4, 64, 0x30, 0x40);
  Operand w = RandomOperand(gen, 8, 64, 0x30, 0x40);
  a.scales[1 * 4 + 2] = 0x7F;  // row 1
  w.scales[5 * 4 + 0] = 0x7F;  // column 5
  // Zero codes in the NaN blocks: NaN * 0 is still NaN.
  for (int i = 0; i < 8; ++i) a.codes[1 * 32 + 16 + i] = 0;
  const MatrixF32 fast = GemmFastF32(a.View(), w.View());
  const MatrixF32 exact = GemmExactF32(a.View(), w.View());
  for (int64_t m = 0; m < 4; ++m) {
    for (int64_t n = 0; n < 8; ++n) {
      const bool want_nan = m == 1 || n == 5;
      EXPECT_EQ(std::isnan(fast(m, n)), want_nan) << m << "," << n;
      EXPECT_EQ(std::isnan(exact(m, n)), want_nan) << m << "," << n;
    }
  }
}

TEST(Gemm, SwizzledScalesReadTheSameValues) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const Operand w = RandomOperand(gen, 130, 128, 0x20, 0x48);
  const std::vector<uint8_t> sw = SwizzleScales(w.scales, 130, 8);
  const BlockScaledMatrix sv{130, 128, w.codes, sw, ScaleLayout::kSwizzled128x4};
  const MatrixF32 d1 = Dequantize(w.View()), d2 = Dequantize(sv);
  EXPECT_TRUE(d1 == d2);
}

}  // namespace
}  // namespace h3
