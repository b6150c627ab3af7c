#include "emulator/quantize.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "emulator/formats.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::Bits;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct BlockCase {
  const char* name;
  std::array<float, 16> x;
  float gs;
  uint8_t want_sf;
  std::array<uint8_t, 8> want_packed;
};

// Expected values worked by hand from docs/contract.md section 3 (comments show the steps).
const BlockCase kBlockCases[] = {
    // amax = 0 -> sfv = 0 -> sf 0; os = 0; codes e2m1(+0) = 0.
    {"all_zero", {}, 1.0f, 0x00, {}},
    // amax = |-0| = 0 -> os = 0; -0 * 0 = -0 -> code 0x8 in both nibbles.
    {"neg_zero",
     {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f,
      -0.0f, -0.0f, -0.0f},
     1.0f,
     0x00,
     {0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88}},
    // amax = NaN -> sf 0x7F, sfd NaN, os = fminf(NaN, FLT_MAX) = FLT_MAX; NaN codes 0x7.
    {"all_nan",
     {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
      kNaN},
     1.0f,
     0x7F,
     {0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77}},
    // amax = 6 (NaN ignored); sfv = RN(6 * RN(1/6)) = RN(1 + 2^-25) = 1 -> sf 0x38, os = 1.
    // codes: NaN -> 7, 6 -> 7, -3 -> 0xD, 0 -> 0.
    {"one_nan", {kNaN, 6.0f, -3.0f}, 1.0f, 0x38, {0x77, 0x0D}},
    // amax = Inf -> sfv Inf -> sf 448 (0x7E); os = RN(1/448); Inf -> 6 (7); +-1/448 -> +-0;
    // 0.5/448 -> 0.
    {"inf", {kInf, 1.0f, -1.0f, 0.5f}, 1.0f, 0x7E, {0x07, 0x08}},
    // Saturated scale: amax = 2^100 -> sf 0x7E, os = RN(1/448): +-2^100 -> +-6,
    // 2688 * os ~ 6 -> 7, 448 * os ~ 1 -> 2, 224 * os ~ 0.5 -> 1.
    {"scale_saturates_at_448",
     {0x1p100f, -0x1p100f, 2688.0f, 448.0f, 224.0f},
     1.0f,
     0x7E,
     {0xF7, 0x27, 0x01}},
    // gs = 448: gs * RN(1/6) = RN(74.666..) = 9786710 * 2^-17; sfv = 6 * that = 448.00003 ->
    // sf 0x7E; os = 1 / (448 * RN(1/448)) ~ 1: every grid value maps to itself.
    {"grid_values_gs_448",
     {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6},
     448.0f,
     0x7E,
     {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE}},
    // Block scale driven to 0: amax = 1, gs = 2^-20 -> sfv ~ 1.6e-7 <= 2^-10 -> sf 0;
    // sfd * (1/gs) = 0 -> 1/0 = Inf -> os = FLT_MAX: every nonzero x saturates to +-6.
    {"scale_underflows_to_zero", {1.0f, -0x1p-100f, 0.0f, -0.0f}, 0x1p-20f, 0x00, {0xF7, 0x80}},
    // bf16 subnormals next to a normal value: amax = 6 -> sf 0x38, os = 1; 2^-133 -> +0,
    // -2^-130 -> -0 (0x8): tiny negatives keep their sign.
    {"bf16_subnormals", {6.0f, 0x1p-133f, -0x1p-130f, 0x1p-127f}, 1.0f, 0x38, {0x07, 0x08}},
    // A block of bf16 subnormals only (2^-127), gs = 2^110: sfv = 2^-17 * RN(1/6) -> sf 0 ->
    // os = FLT_MAX; x * os = (2 - 2^-23) -> rounds to 2 (code 4).
    {"subnormal_block_scale_zero",
     {0x1p-127f, 0x1p-127f, -0x1p-127f, 0.0f},
     0x1p110f,
     0x00,
     {0x44, 0x0C}},
    // A block of subnormals with a usable scale: x = 3 * 2^-128, gs = 2^126:
    // sfv = 0.75 * RN(1/6) = 0.125000004 -> sf 0x20 (0.125); 1/gs = 2^-126;
    // sfd * 2^-126 = 2^-129 (subnormal, exact); 1 / 2^-129 = Inf -> os = FLT_MAX;
    // x * os = 3 (1 - 2^-24) -> 3 (code 5), 2^-128 * FLT_MAX -> 1 (code 2).
    {"subnormal_block_os_overflows", {3 * 0x1p-128f, 0x1p-128f}, 0x1p126f, 0x20, {0x25}},
};

TEST(QuantizeBlock16, HandWorkedCases) {
  for (const BlockCase& c : kBlockCases) {
    uint8_t sf = 0xAA;
    uint8_t packed[8];
    QuantizeBlock16(c.x.data(), c.gs, &sf, packed);
    EXPECT_EQ(int{sf}, int{c.want_sf}) << c.name;
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(int{packed[j]}, int{c.want_packed[j]}) << c.name << " byte " << j;
    }
    // The independent model agrees too.
    uint8_t ref_sf, ref_packed[8];
    testing::RefQuantizeBlock16(c.x.data(), c.gs, &ref_sf, ref_packed);
    EXPECT_EQ(int{ref_sf}, int{c.want_sf}) << c.name << " (reference model)";
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(int{ref_packed[j]}, int{c.want_packed[j]}) << c.name << " ref byte " << j;
    }
  }
}

TEST(QuantizeBlock16, Rcp6Constant) { EXPECT_EQ(Bits(kRcp6Bits), static_cast<float>(1.0 / 6.0)); }

TEST(QuantizeBlock16, MatchesIndependentModelOnRandomBlocks) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const float kScales[] = {1.0f, 448.0f, 2688.0f / 3.7f, 0x1p-20f, 0x1p30f, 17.25f, 0.01f};
  for (int it = 0; it < 20000; ++it) {
    float x[16];
    const int lo = absl::Uniform<int>(absl::IntervalClosed, gen, -133, 20);
    for (float& v : x) {
      v = testing::Bits(uint32_t{testing::RandomBf16(gen, lo, lo + absl::Uniform<int>(gen, 0, 12))}
                        << 16);
      if (absl::Bernoulli(gen, 0.01)) v = kNaN;
      if (absl::Bernoulli(gen, 0.005)) v = absl::Bernoulli(gen, 0.5) ? kInf : -kInf;
      if (absl::Bernoulli(gen, 0.02)) v = absl::Bernoulli(gen, 0.5) ? 0.0f : -0.0f;
    }
    const float gs = absl::Bernoulli(gen, 0.5) ? kScales[absl::Uniform<int>(gen, 0, 7)]
                                               : std::ldexp(absl::Uniform<float>(gen, 1.0f, 2.0f),
                                                            absl::Uniform<int>(gen, -30, 30));
    uint8_t sf, packed[8], ref_sf, ref_packed[8];
    QuantizeBlock16(x, gs, &sf, packed);
    testing::RefQuantizeBlock16(x, gs, &ref_sf, ref_packed);
    std::string dump;
    for (float v : x) dump += " " + std::to_string(testing::ToBits(v));
    ASSERT_EQ(sf, ref_sf) << "iteration " << it << " gs " << gs << " x bits" << dump;
    for (int j = 0; j < 8; ++j) ASSERT_EQ(packed[j], ref_packed[j]) << "iteration " << it;
  }
}

TEST(QuantizeRows, LinearScaleLayoutAndPacking) {
  constexpr int64_t kRows = 3, kCols = 48;
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  std::vector<uint16_t> x(kRows * kCols);
  for (auto& v : x) v = testing::RandomBf16(gen);
  std::vector<uint8_t> codes(kRows * kCols / 2), scales(kRows * kCols / 16);
  QuantizeRows(x, kRows, kCols, 3.5f, absl::MakeSpan(codes), absl::MakeSpan(scales));
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t b = 0; b < kCols / 16; ++b) {
      float block[16];
      for (int i = 0; i < 16; ++i) block[i] = Bf16ToF32(x[r * kCols + 16 * b + i]);
      uint8_t sf, packed[8];
      testing::RefQuantizeBlock16(block, 3.5f, &sf, packed);
      EXPECT_EQ(scales[r * (kCols / 16) + b], sf) << r << "," << b;
      for (int j = 0; j < 8; ++j) {
        EXPECT_EQ(codes[r * (kCols / 2) + 8 * b + j], packed[j]) << r << "," << b << "," << j;
      }
    }
  }
  // Selected rows land in order.
  const int64_t ids[] = {2, 0};
  std::vector<uint8_t> c2(2 * kCols / 2), s2(2 * kCols / 16);
  QuantizeSelectedRows(x, kCols, 3.5f, ids, absl::MakeSpan(c2), absl::MakeSpan(s2));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < kCols / 2; ++j) {
      EXPECT_EQ(c2[i * kCols / 2 + j], codes[ids[i] * kCols / 2 + j]);
    }
    for (int64_t j = 0; j < kCols / 16; ++j) {
      EXPECT_EQ(s2[i * kCols / 16 + j], scales[ids[i] * kCols / 16 + j]);
    }
  }
}

}  // namespace
}  // namespace h3
