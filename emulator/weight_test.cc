#include "emulator/weight.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "emulator/formats.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

uint32_t F32Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// w_gs = RN(RN(1 / amax) * 2688) (contract section 5), through the whole quantizer, bf16 and f32
// entry points. The rows marked "!=" are amax where the one division RN(2688 / amax) gives other
// bits (found with NumPy float32; core/global_scale_test.cc has the longer table): the quantizer
// must give FlashInfer's form, not the division.
TEST(QuantizeWeight, GlobalScaleTable) {
  struct Case {
    uint32_t amax;     // f32 bits (each one is bf16-exact except the last three)
    uint32_t want_gs;  // RN(RN(1/amax) * 2688)
    uint32_t div_gs;   // RN(2688/amax)
  };
  const Case kCases[] = {
      {0x40C00000, 0x43E00000, 0x43E00000},  // 6 -> 448, exact both ways
      {0x45280000, 0x3F800000, 0x3F800000},  // 2688 -> 1
      {0x00000000, 0x3F800000, 0x7F800000},  // 0 -> 1 (contract; both forms give +Inf)
      {0x40400000, 0x44600000, 0x44600000},  // 3 -> 896
      {0x40E00000, 0x43C00001, 0x43C00000},  // 7: != (384 exact by division)
      {0x41200000, 0x43866667, 0x43866666},  // 10: !=
      {0x3FA00000, 0x45066667, 0x45066666},  // 1.25: !=
      {0x3FE00000, 0x44C00001, 0x44C00000},  // 1.75: !=
      {0x3E200000, 0x46866667, 0x46866666},  // 0.15625: !=
      {0x3E300000, 0x46745D18, 0x46745D17},  // 0.171875: !=
      {0x3DF50000, 0x46AF8AF8, 0x46AF8AF9},  // 0.11962890625: != (RCP below DIV)
      {0x4CE6C891, 0x37BA5B45, 0x37BA5B44},  // f32 1.20997e8: !=
      {0x7F47B01D, 0x05576042, 0x05576045},  // f32 2.65e38: != by 3 ulp (1/amax subnormal)
      {0x7F7FFFFF, 0x05280000, 0x05280001},  // FLT_MAX: !=
  };
  for (const Case& c : kCases) {
    float amax, want, div;
    std::memcpy(&amax, &c.amax, 4);
    std::memcpy(&want, &c.want_gs, 4);
    std::memcpy(&div, &c.div_gs, 4);
    std::vector<float> w(2 * 32, 0.0f);
    w[37] = -amax;  // the sign does not matter
    auto q = QuantizeWeightF32(w, 2, 32);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(F32Bits(q->global_scale), c.want_gs) << "amax " << amax;
    if (c.want_gs != c.div_gs) {
      EXPECT_NE(F32Bits(q->global_scale), F32Bits(div)) << amax;
    }
    const uint16_t b = F32ToBf16(amax);
    if (Bf16ToF32(b) != amax) continue;  // the bf16 entry point where amax is a bf16 value
    std::vector<uint16_t> wb(2 * 32, 0);
    wb[5] = b;
    auto qb = QuantizeWeightBf16(wb, 2, 32);
    ASSERT_TRUE(qb.ok()) << qb.status();
    EXPECT_EQ(F32Bits(qb->global_scale), c.want_gs) << "bf16 amax " << amax;
  }
}

TEST(QuantizeWeight, ZeroWeight) {
  std::vector<uint16_t> w(130 * 64, 0);
  auto q = QuantizeWeightBf16(w, 130, 64);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->global_scale, 1.0f);
  EXPECT_EQ(q->q, std::vector<uint8_t>(130 * 32, 0));
  EXPECT_EQ(q->sf, std::vector<uint8_t>(SwizzledScaleBytes(130, 4), 0));
}

TEST(QuantizeWeight, MatchesRowQuantizerAndSwizzle) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  constexpr int64_t kN = 200, kK = 96;  // padding in both dimensions
  std::vector<uint16_t> w(kN * kK);
  for (auto& v : w) v = testing::RandomBf16(gen, -10, 3);
  auto q = QuantizeWeightBf16(w, kN, kK);
  ASSERT_TRUE(q.ok());
  float amax = 0;
  for (uint16_t v : w) amax = std::max(amax, std::fabs(Bf16ToF32(v)));
  volatile float rcp = 1.0f / amax;  // section 5: the reciprocal first, then the product
  volatile float want_gs = rcp * 2688.0f;
  EXPECT_EQ(q->global_scale, want_gs);
  std::vector<uint8_t> codes(kN * kK / 2), scales(kN * kK / 16);
  QuantizeRows(w, kN, kK, q->global_scale, absl::MakeSpan(codes), absl::MakeSpan(scales));
  EXPECT_EQ(q->q, codes);
  EXPECT_EQ(q->sf, SwizzleScales(scales, kN, kK / 16));
  // The f32 entry point on the same (bf16-exact) values gives the same result.
  std::vector<float> wf(w.size());
  for (size_t i = 0; i < w.size(); ++i) wf[i] = Bf16ToF32(w[i]);
  auto qf = QuantizeWeightF32(wf, kN, kK);
  ASSERT_TRUE(qf.ok());
  EXPECT_EQ(qf->q, q->q);
  EXPECT_EQ(qf->sf, q->sf);
  EXPECT_EQ(qf->global_scale, q->global_scale);
}

TEST(QuantizeWeight, Errors) {
  std::vector<float> w(4 * 32, 1.0f);
  struct Case {
    int64_t n, k;
    size_t size;
    int bad_index;  // -1: none
    float bad_value;
    absl::StatusCode code;
    const char* needle;
  };
  const float kInf = std::numeric_limits<float>::infinity();
  const Case kCases[] = {
      {0, 32, 0, -1, 0, absl::StatusCode::kInvalidArgument, "n: expected >= 1, got 0"},
      {4, 24, 96, -1, 0, absl::StatusCode::kInvalidArgument, "multiple of 16, got 24"},
      {4, 32, 127, -1, 0, absl::StatusCode::kInvalidArgument,
       "expected n*k = 128 elements, got 127"},
      {4, 32, 128, 70, kInf, absl::StatusCode::kInvalidArgument, "weight[2, 6]: expected a finite"},
      {4, 32, 128, 5, std::nanf(""), absl::StatusCode::kInvalidArgument, "weight[0, 5]"},
  };
  for (const Case& c : kCases) {
    std::vector<float> v(c.size, 1.0f);
    if (c.bad_index >= 0) v[c.bad_index] = c.bad_value;
    auto q = QuantizeWeightF32(v, c.n, c.k);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), c.code);
    EXPECT_NE(q.status().message().find(c.needle), std::string::npos) << q.status();
  }
  // amax so small that the global scale overflows f32.
  std::vector<float> tiny(32, 0.0f);
  tiny[3] = 1e-40f;
  auto q = QuantizeWeightF32(tiny, 1, 32);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace h3
