#include "emulator/weight.h"

#include <cmath>
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

TEST(QuantizeWeight, GlobalScaleTable) {
  struct Case {
    float amax;
    float want_gs;
  };
  const Case kCases[] = {
      {6.0f, 448.0f},  // 2688 / 6 exact
      {2688.0f, 1.0f},
      {0.0f, 1.0f},  // amax 0 -> 1
      {3.0f, 896.0f},
      {7.0f, 384.0f},
      {10.0f, 268.8f},  // RN(268.8) as f32
      {0.01f, static_cast<float>(2688.0 / static_cast<double>(0.01f))},
  };
  for (const Case& c : kCases) {
    std::vector<float> w(2 * 32, 0.0f);
    w[37] = -c.amax;  // the sign does not matter
    auto q = QuantizeWeightF32(w, 2, 32);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->global_scale, c.want_gs) << "amax " << c.amax;
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
  absl::BitGen gen(seed);
  constexpr int64_t kN = 200, kK = 96;  // padding in both dimensions
  std::vector<uint16_t> w(kN * kK);
  for (auto& v : w) v = testing::RandomBf16(gen, -10, 3);
  auto q = QuantizeWeightBf16(w, kN, kK);
  ASSERT_TRUE(q.ok());
  float amax = 0;
  for (uint16_t v : w) amax = std::max(amax, std::fabs(Bf16ToF32(v)));
  EXPECT_EQ(q->global_scale, static_cast<float>(2688.0 / amax));
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
  // amax so small that 2688 / amax overflows f32.
  std::vector<float> tiny(32, 0.0f);
  tiny[3] = 1e-40f;
  auto q = QuantizeWeightF32(tiny, 1, 32);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace h3
