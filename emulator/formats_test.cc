#include "emulator/formats.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::Bits;
using ::h3::testing::RefF32ToBf16;
using ::h3::testing::RefF32ToE2M1;
using ::h3::testing::RefF32ToE4M3;
using ::h3::testing::ToBits;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

float Up(float f) { return std::nextafter(f, kInf); }
float Down(float f) { return std::nextafter(f, -kInf); }

TEST(E2M1, DecodesAll16Codes) {
  const float kWant[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(ToBits(E2M1ToF32(c)), ToBits(kWant[c])) << "code " << c;
    EXPECT_EQ(ToBits(E2M1ToF32(c | 0xF0)), ToBits(kWant[c])) << "high nibble ignored";
    EXPECT_EQ(E2M1TimesTwo(c), static_cast<int>(2 * kWant[c]));
  }
}

TEST(E4M3, DecodesAll256Codes) {
  // Anchors from the definition (docs/contract.md section 2).
  struct Case {
    uint8_t byte;
    float want;
  };
  const Case kCases[] = {
      {0x00, 0.0f},   {0x01, 0x1p-9f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f}, {0x0F, 0x1.Ep-6f},
      {0x38, 1.0f},   {0x3F, 1.875f},  {0x40, 2.0f},        {0x77, 240.0f},  {0x78, 256.0f},
      {0x7E, 448.0f}, {0x80, -0.0f},   {0x81, -0x1p-9f},    {0xB8, -1.0f},   {0xFE, -448.0f},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(ToBits(E4M3ToF32(c.byte)), ToBits(c.want)) << "byte " << int{c.byte};
  }
  EXPECT_TRUE(std::isnan(E4M3ToF32(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0xFF)));
  // The 127 finite non-negative codes: strictly increasing, equal to the
  // sorted list {m 2^-9 : m < 8} u {(8 + m) 2^(e-10) : 1 <= e <= 15} minus 480.
  std::vector<double> grid;
  for (int m = 0; m < 8; ++m) grid.push_back(m * std::ldexp(1.0, -9));
  for (int e = 1; e <= 15; ++e) {
    for (int m = 0; m < 8; ++m) grid.push_back((8 + m) * std::ldexp(1.0, e - 10));
  }
  grid.pop_back();  // 480 is the NaN slot
  ASSERT_EQ(grid.size(), 127u);
  for (int b = 0; b < 127; ++b) {
    EXPECT_EQ(static_cast<double>(E4M3ToF32(b)), grid[b]) << "byte " << b;
    EXPECT_EQ(ToBits(E4M3ToF32(b | 0x80)), ToBits(-E4M3ToF32(b))) << "byte " << b;
    EXPECT_EQ(E4M3Times512(b), static_cast<int32_t>(grid[b] * 512)) << "byte " << b;
    EXPECT_EQ(F32ToE4M3(E4M3ToF32(b)), b) << "round trip " << b;
  }
}

struct EncodeCase {
  float in;
  uint8_t want;
};

TEST(E2M1, EncodesBoundaries) {
  const EncodeCase kCases[] = {
      // Ties of docs/contract.md section 2 and one ulp either side.
      {0.25f, 0x0},
      {Down(0.25f), 0x0},
      {Up(0.25f), 0x1},
      {0.75f, 0x2},
      {Down(0.75f), 0x1},
      {Up(0.75f), 0x2},
      {1.25f, 0x2},
      {Down(1.25f), 0x2},
      {Up(1.25f), 0x3},
      {1.75f, 0x4},
      {Down(1.75f), 0x3},
      {Up(1.75f), 0x4},
      {2.5f, 0x4},
      {Down(2.5f), 0x4},
      {Up(2.5f), 0x5},
      {3.5f, 0x6},
      {Down(3.5f), 0x5},
      {Up(3.5f), 0x6},
      {5.0f, 0x6},
      {Down(5.0f), 0x6},
      {Up(5.0f), 0x7},
      {-0.25f, 0x8},
      {-0.75f, 0xA},
      {-5.0f, 0xE},
      {-Up(5.0f), 0xF},
      // Grid points.
      {0.5f, 0x1},
      {1.0f, 0x2},
      {1.5f, 0x3},
      {2.0f, 0x4},
      {3.0f, 0x5},
      {4.0f, 0x6},
      // Saturation, Inf, NaN.
      {6.0f, 0x7},
      {Up(6.0f), 0x7},
      {7.0f, 0x7},
      {1e30f, 0x7},
      {kInf, 0x7},
      {-6.0f, 0xF},
      {-1e30f, 0xF},
      {-kInf, 0xF},
      {kNaN, 0x7},
      {-kNaN, 0x7},
      // Zeros keep their sign, tiny values round to a signed zero.
      {0.0f, 0x0},
      {-0.0f, 0x8},
      {1e-30f, 0x0},
      {-1e-30f, 0x8},
      {std::numeric_limits<float>::denorm_min(), 0x0},
      {-std::numeric_limits<float>::denorm_min(), 0x8},
      {std::numeric_limits<float>::max(), 0x7},
  };
  for (const EncodeCase& c : kCases) {
    EXPECT_EQ(F32ToE2M1(c.in), c.want)
        << "in " << c.in << " (0x" << std::hex << ToBits(c.in) << ")";
  }
}

TEST(E4M3, EncodesBoundaries) {
  const EncodeCase kCases[] = {
      // Saturation edges: 448 max, 464 ties to 448 (even), above -> 480 -> satfinite 448.
      {448.0f, 0x7E},
      {Up(448.0f), 0x7E},
      {Down(448.0f), 0x7E},
      {464.0f, 0x7E},
      {Up(464.0f), 0x7E},
      {Down(464.0f), 0x7E},
      {480.0f, 0x7E},
      {1e30f, 0x7E},
      {kInf, 0x7E},
      {-kInf, 0xFE},
      {-480.0f, 0xFE},
      {std::numeric_limits<float>::max(), 0x7E},
      {kNaN, 0x7F},
      {-kNaN, 0x7F},
      // 0x7C = 384, 0x7D = 416, 0x7E = 448: 400 ties to 384 (even mantissa),
      // 432 ties to 448.
      {400.0f, 0x7C},
      {Up(400.0f), 0x7D},
      {432.0f, 0x7E},
      {Down(432.0f), 0x7D},
      // Subnormal thresholds: 2^-10 ties to 0, 2^-9 is the first subnormal.
      {0x1p-10f, 0x00},
      {Up(0x1p-10f), 0x01},
      {Down(0x1p-10f), 0x00},
      {-0x1p-10f, 0x80},
      {-Up(0x1p-10f), 0x81},
      {0x1p-9f, 0x01},
      {Up(0x1p-9f), 0x01},
      {Down(0x1p-9f), 0x01},
      {1.5f * 0x1p-9f, 0x02},
      {Down(1.5f * 0x1p-9f), 0x01},
      {2.5f * 0x1p-9f, 0x02},
      {Up(2.5f * 0x1p-9f), 0x03},
      {3.5f * 0x1p-9f, 0x04},
      // Subnormal -> normal: 7.5 * 2^-9 ties to 0x08 = 2^-6 (even).
      {7.5f * 0x1p-9f, 0x08},
      {Down(7.5f * 0x1p-9f), 0x07},
      // Normal midpoints: 1 + 1/16 ties to 1 (0x38), 1 + 3/16 ties to 1.25 (0x3A).
      {1.0625f, 0x38},
      {Up(1.0625f), 0x39},
      {1.1875f, 0x3A},
      {Down(1.1875f), 0x39},
      // Binade carry: 1.9375 ties between 1.875 (0x3F) and 2 (0x40) -> 2.
      {1.9375f, 0x40},
      {Down(1.9375f), 0x3F},
      // Zeros and tiny values.
      {0.0f, 0x00},
      {-0.0f, 0x80},
      {1e-30f, 0x00},
      {-1e-30f, 0x80},
      {std::numeric_limits<float>::denorm_min(), 0x00},
      {-std::numeric_limits<float>::denorm_min(), 0x80},
  };
  for (const EncodeCase& c : kCases) {
    EXPECT_EQ(F32ToE4M3(c.in), c.want)
        << "in " << c.in << " (0x" << std::hex << ToBits(c.in) << ")";
  }
}

TEST(E4M3, MatchesBruteForceOnBoundariesAndRandomInputs) {
  std::vector<float> inputs;
  // Every code value, every midpoint, and a few ulps around each.
  for (int b = 0; b < 127; ++b) {
    const double v = testing::RefE4M3Value(b);
    const double next = b < 126 ? testing::RefE4M3Value(b + 1) : 480.0;
    for (double x : {v, (v + next) / 2}) {
      float f = static_cast<float>(x);
      for (int i = 0; i < 3; ++i) f = Down(f);
      for (int i = 0; i < 7; ++i, f = Up(f)) {
        inputs.push_back(f);
        inputs.push_back(-f);
      }
    }
  }
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  for (int i = 0; i < 100000; ++i) {
    inputs.push_back(Bits(absl::Uniform<uint32_t>(gen)));  // any bit pattern
    inputs.push_back(
        std::ldexp(absl::Uniform<float>(gen, 1.0f, 2.0f), absl::Uniform<int>(gen, -14, 10)));
  }
  for (float f : inputs) {
    ASSERT_EQ(F32ToE4M3(f), RefF32ToE4M3(f))
        << "in " << f << " (0x" << std::hex << ToBits(f) << ")";
  }
}

TEST(E2M1, MatchesBruteForce) {
  std::vector<float> inputs;
  for (float v : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,
                  5.0f, 6.0f, 7.0f}) {
    float f = v;
    for (int i = 0; i < 3; ++i) f = Down(f);
    for (int i = 0; i < 7; ++i, f = Up(f)) {
      inputs.push_back(f);
      inputs.push_back(-f);
    }
  }
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  for (int i = 0; i < 100000; ++i) {
    inputs.push_back(Bits(absl::Uniform<uint32_t>(gen)));
    inputs.push_back(absl::Uniform<float>(gen, -8.0f, 8.0f));
  }
  for (float f : inputs) {
    ASSERT_EQ(F32ToE2M1(f), RefF32ToE2M1(f)) << "in " << f;
  }
}

TEST(Bf16, ConvertsWithNearestEvenAndCanonicalNaN) {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case kCases[] = {
      {0x3F800000, 0x3F80},  // 1
      {0x3F808000, 0x3F80},  // 1 + 2^-8: tie -> even
      {0x3F818000, 0x3F82},  // tie -> even (up)
      {0x3F808001, 0x3F81},  // just above the tie
      {0x3F807FFF, 0x3F80},  // just below
      {0x7F7FFFFF, 0x7F80},  // FLT_MAX rounds to Inf
      {0x7F7F7FFF, 0x7F7F},  // stays finite
      {0x7F800000, 0x7F80},  // Inf
      {0xFF800000, 0xFF80},  // -Inf
      {0x7FC00000, 0x7FFF},  // NaN -> canonical
      {0xFFC00001, 0x7FFF},  // -NaN -> canonical
      {0x7F800001, 0x7FFF},  // signalling NaN
      {0x80000000, 0x8000},  // -0
      {0x00008000, 0x0000},  // tiny subnormal tie -> 0
      {0x00018000, 0x0002},  // subnormal tie -> even
      {0x807FFFFF, 0x8080},  // largest negative subnormal rounds to -min normal
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(F32ToBf16(Bits(c.in)), c.want) << std::hex << c.in;
  }
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = Bf16ToF32(static_cast<uint16_t>(b));
    ASSERT_EQ(ToBits(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(F32ToBf16(f), b);
    }
  }
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  for (int i = 0; i < 200000; ++i) {
    const float f = Bits(absl::Uniform<uint32_t>(gen));
    ASSERT_EQ(F32ToBf16(f), RefF32ToBf16(f)) << std::hex << ToBits(f);
  }
}

}  // namespace
}  // namespace h3
