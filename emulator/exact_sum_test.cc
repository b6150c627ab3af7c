#include "emulator/exact_sum.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "emulator/formats.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::Bits;
using ::h3::testing::ToBits;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Term {
  float a, b;  // a * b; b = 1 for a plain value
};
struct Case {
  const char* what;
  std::vector<Term> terms;
  uint32_t want;  // bit pattern; 0x7FC00000 stands for any NaN
};

std::vector<Term> Tiny(int count) {
  return std::vector<Term>(count, Term{std::ldexp(1.0f, -133), std::ldexp(1.0f, -20)});
}

TEST(ExactSum, Table) {
  const float e24 = std::ldexp(1.0f, -24), e200 = std::ldexp(1.0f, -100);
  const Case cases[] = {
      {"empty sum is +0", {}, 0x00000000},
      {"x + -x is +0", {{1.5f, 1}, {-1.5f, 1}}, 0x00000000},
      {"1 + 2^-24 ties to even 1", {{1, 1}, {e24, 1}}, 0x3F800000},
      {"1 + 2^-24 + 2^-200 rounds up", {{1, 1}, {e24, 1}, {e200, e200}}, 0x3F800001},
      {"-(1 + 2^-24 + 2^-30) rounds away",
       {{-1, 1}, {-e24, 1}, {-std::ldexp(1.0f, -30), 1}},
       0xBF800001},
      {"2^100 + 1 - 2^100 cancels exactly",
       {{std::ldexp(1.0f, 100), 1}, {1, 1}, {-std::ldexp(1.0f, 100), 1}},
       0x3F800000},
      {"2^-149 * 0.5 ties to +0", {{Bits(1), 0.5f}}, 0x00000000},
      {"2^-149 * 0.75 rounds to 2^-149", {{Bits(1), 0.75f}}, 0x00000001},
      {"subnormal sum kept", {{Bits(3), 1}, {Bits(5), 1}}, 0x00000008},
      {"16 products of 2^-153 (each below 2^-149) add up to 2^-149", Tiny(16), 0x00000001},
      {"15 of them round to 2^-149 (15/16 > 1/2)", Tiny(15), 0x00000001},
      {"8 of them tie to +0", Tiny(8), 0x00000000},
      {"3 * 2^127 overflows to +Inf",
       {{1.5f, std::ldexp(1.0f, 127)}, {1.5f, std::ldexp(1.0f, 127)}},
       0x7F800000},
      {"FLT_MAX + half ulp rounds to Inf",
       {{std::numeric_limits<float>::max(), 1}, {std::ldexp(1.0f, 103), 1}},
       0x7F800000},
      {"FLT_MAX + less than half ulp stays",
       {{std::numeric_limits<float>::max(), 1}, {std::ldexp(1.0f, 102), 1}},
       0x7F7FFFFF},
      {"huge products cancel",
       {{std::ldexp(1.0f, 120), std::ldexp(1.0f, 120)},
        {-std::ldexp(1.0f, 120), std::ldexp(1.0f, 120)},
        {2, 1}},
       0x40000000},
      {"Inf * 0 is NaN", {{kInf, 0}, {1, 1}}, 0x7FC00000},
      {"0 * -Inf is NaN", {{0, -kInf}}, 0x7FC00000},
      {"+Inf and -Inf give NaN", {{kInf, 2}, {kInf, -3}}, 0x7FC00000},
      {"NaN factor gives NaN", {{kNaN, 0}}, 0x7FC00000},
      {"Inf with finite terms", {{kInf, 2}, {-1e30f, 1e8f}}, 0x7F800000},
      {"-Inf product", {{-kInf, 2}, {5, 1}}, 0xFF800000},
      {"NaN value", {{kNaN, 1}}, 0x7FC00000},
  };
  for (const Case& c : cases) {
    ExactSum s;
    for (const Term& t : c.terms) {
      if (t.b == 1.0f) {
        s.Add(t.a);
      } else {
        s.AddProduct(t.a, t.b);
      }
    }
    const float got = s.RoundToF32();
    if (c.want == 0x7FC00000) {
      EXPECT_TRUE(std::isnan(got)) << c.what;
    } else {
      EXPECT_EQ(ToBits(got), c.want) << c.what << ": got " << got;
    }
  }
}

// Random sums of bf16 x bf16 products over a moderate exponent range: every term is a multiple
// of 2^-60 below 2^45, so __float128 (113 bits) holds each partial sum exactly, and GCC's
// __float128 -> float conversion rounds once, to nearest-even.
TEST(ExactSum, AgreesWithQuadOnModerateRanges) {
  std::seed_seq seed{30};
  TestRng gen(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    ExactSum s;
    __float128 q = 0;
    const int terms = absl::Uniform<int>(absl::IntervalClosed, gen, 1, 300);
    for (int i = 0; i < terms; ++i) {
      const float a = Bf16ToF32(testing::RandomBf16(gen, -22, 22));
      const float b = Bf16ToF32(testing::RandomBf16(gen, -22, 22));
      s.AddProduct(a, b);
      q += static_cast<__float128>(a) * b;
    }
    const float want = static_cast<float>(q);
    ASSERT_EQ(ToBits(s.RoundToF32()), ToBits(want == 0 ? 0.0f : want)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace h3
