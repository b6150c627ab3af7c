// Contract sections 12 (act_smooth) and 13 (the low-rank branch), against independent references:
// hand-derived values, and a long double model of the whole op on data where every sum is exact.

#include "emulator/quality.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/swizzle.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::Bits;
using ::h3::testing::OpData;

uint16_t Bf(float f) { return static_cast<uint16_t>(testing::ToBits(f) >> 16); }  // exact only

struct Outputs {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
  explicit Outputs(const OpShape& s)
      : out(s.m * s.n, 0xABCD), act_q(s.m * s.k / 2, 0xEE), act_sf(s.m * s.k / 16, 0xEE) {}
  OpOutputs Spans() { return {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)}; }
};

// ---- Section 12, one element -------------------------------------------------------------

TEST(SmoothElement, Table) {
  struct Case {
    const char* what;
    uint16_t x;
    float s;
    uint16_t want;
  };
  const Case cases[] = {
      {"1 * 2", 0x3F80, 2.0f, 0x4000},
      {"1 * 1.5", 0x3F80, 1.5f, 0x3FC0},
      {"1 * -1 flips the sign", 0x3F80, -1.0f, 0xBF80},
      {"1 * 0 is +0", 0x3F80, 0.0f, 0x0000},
      {"-1 * 0 is -0", 0xBF80, 0.0f, 0x8000},
      {"-0 * 3 is -0", 0x8000, 3.0f, 0x8000},
      {"NaN * 1 is the canonical NaN", 0x7FC1, 1.0f, 0x7FFF},
      {"NaN * 0 is NaN", 0xFFC0, 0.0f, 0x7FFF},
      {"Inf * 0.5 is Inf", 0x7F80, 0.5f, 0x7F80},
      {"-Inf * 0 is NaN (x may be Inf; s may not)", 0xFF80, 0.0f, 0x7FFF},
      // (1 + 2^-7) * s = 1 + 2^-8 + 5.8e-8 exactly: binary32 rounds it to 1 + 2^-8, a bf16 tie,
      // which goes to the even 1.0; one rounding of the exact product would give 0x3F81.
      {"two roundings (binary32, then bf16 tie to even)", 0x3F81, Bits(0x3F7F01FDu), 0x3F80},
      {"1 * FLT_MAX rounds up to Inf in bf16", 0x3F80, FLT_MAX, 0x7F80},
      {"2 * FLT_MAX overflows binary32", 0x4000, FLT_MAX, 0x7F80},
      {"-2 * FLT_MAX is -Inf", 0xC000, FLT_MAX, 0xFF80},
      {"1 * 2^-130 (subnormal s) is a bf16 subnormal", 0x3F80, Bits(0x00080000u), 0x0008},
      {"1 * 2^-140 underflows bf16 to +0", 0x3F80, Bits(0x00000200u), 0x0000},
      {"-1 * 2^-140 underflows to -0", 0xBF80, Bits(0x00000200u), 0x8000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SmoothElement(c.x, c.s), c.want) << c.what;
  }
}

// ---- Validation ------------------------------------------------------------------------------

TEST(RunOpQuality, RefusesBadQualityInputsWritingNothing) {
  std::seed_seq seed{12};
  TestRng gen(seed);
  const OpShape s{.m = 4, .n = 8, .k = 64, .g = 2};
  const OpData d = testing::MakeExactOpData(gen, s);
  const std::vector<float> smooth_ok(s.k, 1.0f), smooth_short(s.k - 1, 1.0f);
  std::vector<float> smooth_nan(s.k, 1.0f), smooth_inf(s.k, 1.0f);
  smooth_nan[5] = std::nanf("");
  smooth_inf[63] = -std::numeric_limits<float>::infinity();
  const std::vector<uint16_t> down16(16 * s.k, 0x3F80), up16(s.n * 16, 0x3F80);
  const std::vector<uint16_t> down8(8 * s.k), down24(24 * s.k), down80(80 * s.k), down_odd(100);
  const std::vector<uint16_t> up_short(s.n * 16 - 1);
  std::vector<uint16_t> down_nan = down16, up_inf = up16;
  down_nan[3 * s.k + 7] = 0x7FC0;
  up_inf[2 * 16 + 5] = 0xFF80;
  struct Case {
    const char* what;
    QualityInputs q;
    const char* message;
  };
  const Case cases[] = {
      {"act_smooth short", {smooth_short, {}, {}}, "act_smooth: expected 64 elements (k), got 63"},
      {"act_smooth NaN",
       {smooth_nan, {}, {}},
       "act_smooth: expected finite factors, got nan at [5]"},
      {"act_smooth -Inf",
       {smooth_inf, {}, {}},
       "act_smooth: expected finite factors, got -inf at [63]"},
      {"lora_down alone", {{}, down16, {}}, "lora_up: expected given together with lora_down"},
      {"lora_up alone", {{}, {}, up16}, "lora_down: expected given together with lora_up"},
      {"r = 8",
       {{}, down8, up16},
       "lora_down: expected r*k elements with r a multiple of 16 in 16..64 (k = 64), got 512"},
      {"r = 24", {{}, down24, up16}, "with r a multiple of 16 in 16..64 (k = 64), got 1536"},
      {"r = 80", {{}, down80, up16}, "got 5120"},
      {"not r*k", {{}, down_odd, up16}, "got 100"},
      {"lora_up short",
       {{}, down16, up_short},
       "lora_up: expected 128 elements (n*r, n = 8, r = 16 from lora_down), got 127"},
      {"lora_down NaN",
       {{}, down_nan, up16},
       "lora_down: expected finite values, got nan at [3, 7]"},
      {"lora_up -Inf", {{}, down16, up_inf}, "lora_up: expected finite values, got -inf at [2, 5]"},
      {"both options, bad smooth", {smooth_nan, down16, up16}, "act_smooth: expected finite"},
  };
  for (const Case& c : cases) {
    for (int64_t m : {int64_t{4}, int64_t{0}}) {  // checked at M = 0 too, like the global scales
      OpData dm = d;
      dm.shape.m = m;
      dm.attn_out.resize(m * s.k);
      dm.residual.resize(m * s.n);
      dm.gate_index.resize(m);
      Outputs o(dm.shape);
      const absl::Status st = RunOpQuality(dm.Inputs(), c.q, o.Spans());
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.what;
      EXPECT_NE(std::string(st.message()).find(c.message), std::string::npos)
          << c.what << ": " << st.message();
      for (uint16_t v : o.out) ASSERT_EQ(v, 0xABCD) << c.what;
      for (uint8_t v : o.act_q) ASSERT_EQ(v, 0xEE) << c.what;
    }
  }
  Outputs o(s);
  EXPECT_TRUE(RunOpQuality(d.Inputs(), {smooth_ok, down16, up16}, o.Spans()).ok());
}

// ---- Options off, or neutral: the seed's bits ----------------------------------------------

TEST(RunOpQuality, OffOrNeutralSmoothingKeepsTheSeedBits) {
  std::seed_seq seed{13};
  TestRng gen(seed);
  const OpShape s{.m = 37, .n = 40, .k = 128, .g = 3};
  OpData d = testing::MakeExactOpData(gen, s);
  // Arbitrary activations (not exact data), with NaN payloads, infinities, -0 and subnormals.
  for (auto& x : d.attn_out) x = testing::RandomBf16(gen, -130, 20);
  d.attn_out[3] = 0x7FC1;
  d.attn_out[200] = 0xFFA0;
  d.attn_out[300] = 0x7F80;
  d.attn_out[301] = 0x8000;
  d.act_gs = 0.37f;
  const std::vector<float> ones(s.k, 1.0f);
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    Outputs seed_out(s), off(s), neutral(s);
    ASSERT_TRUE(RunOp(d.Inputs(), seed_out.Spans(), path).ok());
    ASSERT_TRUE(RunOpQuality(d.Inputs(), QualityInputs{}, off.Spans(), path).ok());
    ASSERT_TRUE(RunOpQuality(d.Inputs(), {ones, {}, {}}, neutral.Spans(), path).ok());
    EXPECT_EQ(off.out, seed_out.out);
    EXPECT_EQ(off.act_q, seed_out.act_q);
    EXPECT_EQ(off.act_sf, seed_out.act_sf);
    // s = 1: x' = x except NaN payloads (0x7FFF), which section 3 encodes alike.
    EXPECT_EQ(neutral.out, seed_out.out);
    EXPECT_EQ(neutral.act_q, seed_out.act_q);
    EXPECT_EQ(neutral.act_sf, seed_out.act_sf);
  }
}

// ---- A hand-worked problem -------------------------------------------------------------------

// K = 64, N = 1, r = 16, every activation 6 and every weight value 1 (codes 0x2, scale 1.0),
// all global scales 1. Block scale: 6 * RN(1/6) = 1 exactly, so codes are 6 and acc = 64 * 6 =
// 384 = o. lora_down row j is j at k = 0 and 0 elsewhere: L_j = 6j, exact in bf16 (<= 90); up
// all 1: the branch adds 6 * (0 + ... + 15) = 720, v = 1104 = 0x448A in bf16 (gate 1, residual
// 0). With act_smooth = 0.5 everywhere: x' = 3, block scale 3 * RN(1/6) = 0.5 exactly (rounded
// from 0.500000015), codes still 6 (3 * 2), acc = 192, branch 360, v = 552 = 0x440A.
TEST(RunOpQuality, HandWorkedBranch) {
  const OpShape s{.m = 3, .n = 1, .k = 64, .g = 1};
  OpData d;
  d.shape = s;
  d.attn_out.assign(s.m * s.k, Bf(6.0f));
  d.w_q.assign(s.n * s.k / 2, 0x22);
  d.w_sf = SwizzleScales(std::vector<uint8_t>(s.n * s.k / 16, 0x38), s.n, s.k / 16);
  d.gate = {Bf(1.0f)};
  d.residual = {Bf(0.0f), Bf(0.0f), Bf(-2.5f)};
  d.gate_index = {0, 1, std::numeric_limits<int32_t>::min()};  // rows 1, 2: out of range
  std::vector<uint16_t> down(16 * s.k, 0), up(16, Bf(1.0f));
  for (int j = 0; j < 16; ++j) down[j * s.k] = Bf(static_cast<float>(j));
  const std::vector<float> half(s.k, 0.5f);
  struct Case {
    const char* what;
    bool smooth;
    uint16_t want_row0;
    uint8_t want_sf;
  };
  for (const Case& c :
       {Case{"no smoothing", false, 0x448A, 0x38}, Case{"smoothing by 0.5", true, 0x440A, 0x30}}) {
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      Outputs o(s);
      QualityInputs q{c.smooth ? absl::MakeConstSpan(half) : absl::Span<const float>(), down, up};
      ASSERT_TRUE(RunOpQuality(d.Inputs(), q, o.Spans(), path).ok()) << c.what;
      EXPECT_EQ(o.out[0], c.want_row0) << c.what;
      EXPECT_EQ(o.out[1], Bf(0.0f)) << c.what << ": out-of-range row copies its residual";
      EXPECT_EQ(o.out[2], Bf(-2.5f)) << c.what;
      for (uint8_t b : o.act_q) ASSERT_EQ(b, 0x77) << c.what;  // every code 6
      for (uint8_t b : o.act_sf) ASSERT_EQ(b, c.want_sf) << c.what;
    }
  }
}

// ---- Extreme smoothing through the branch (section 12's list, section 13.1's IEEE rule) ------

// attn_out all 1. s_0 = FLT_MAX: x'_0 = +Inf (bf16 rounds up); s_1 = 0: +0; s_2 = 2^-140: +0;
// s_3 = 2^-130: 2^-130 (a bf16 subnormal); others 1. lora_down column 0 is 1 in every row, so
// every l_j = +Inf. lora_up row 0 all 0.5: v = +Inf -> out Inf; row 1 has one -0.5: +Inf and
// -Inf -> NaN -> 0x7FFF; row 2 has one 0: Inf * 0 -> NaN. Block 0 holds the Inf: scale 448, the
// Inf's code 6, the rest 0 (1 * 1/448 rounds to 0).
TEST(RunOpQuality, ExtremeSmoothingPropagatesByIeeeRules) {
  const OpShape s{.m = 2, .n = 3, .k = 64, .g = 1};
  OpData d;
  d.shape = s;
  d.attn_out.assign(s.m * s.k, Bf(1.0f));
  d.w_q.assign(s.n * s.k / 2, 0x22);
  d.w_sf = SwizzleScales(std::vector<uint8_t>(s.n * s.k / 16, 0x38), s.n, s.k / 16);
  d.gate = {Bf(1.0f), Bf(1.0f), Bf(1.0f)};
  d.residual.assign(s.m * s.n, Bf(0.25f));
  d.gate_index = {0, 1};  // row 1 out of range: a copy whatever the branch gives
  std::vector<float> smooth(s.k, 1.0f);
  smooth[0] = FLT_MAX;
  smooth[1] = 0.0f;
  smooth[2] = Bits(0x00000200u);
  smooth[3] = Bits(0x00080000u);
  std::vector<uint16_t> down(16 * s.k, Bf(0.5f)), up(s.n * 16, Bf(0.5f));
  for (int j = 0; j < 16; ++j) down[j * s.k] = Bf(1.0f);
  up[1 * 16 + 7] = Bf(-0.5f);
  up[2 * 16 + 3] = 0;
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    Outputs o(s);
    ASSERT_TRUE(RunOpQuality(d.Inputs(), {smooth, down, up}, o.Spans(), path).ok());
    EXPECT_EQ(o.out[0], 0x7F80);
    EXPECT_EQ(o.out[1], 0x7FFF);
    EXPECT_EQ(o.out[2], 0x7FFF);
    for (int n = 0; n < 3; ++n) EXPECT_EQ(o.out[s.n + n], Bf(0.25f));
    // act_q / act_sf against the independent section-3 model on the hand x'.
    float x[16];
    for (int i = 0; i < 16; ++i) x[i] = 1.0f;
    x[0] = std::numeric_limits<float>::infinity();
    x[1] = 0.0f;
    x[2] = 0.0f;
    x[3] = std::ldexp(1.0f, -130);
    uint8_t sf, packed[8];
    testing::RefQuantizeBlock16(x, d.act_gs, &sf, packed);
    EXPECT_EQ(sf, 0x7E);
    EXPECT_EQ(o.act_sf[0], sf);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(o.act_q[j], packed[j]) << j;
    EXPECT_EQ(packed[0], 0x07);
  }
}

// ---- Exact data, r = 16 / 32 / 64: an independent model of sections 12, 13 ------------------

// Exact op data (test_util.h) with act_smooth a power of two per 16-block (x' = x * 2^d exactly
// and each block's scale moves by 2^d, its codes stay), lora_down in {0, +-1/4, +-1/2} and
// lora_up in {0, +-1/2, +-1}: every product is a multiple of 2^-7 and every sum stays below
// 2^17, so section 13.1's exact case holds and the long double model below is the only
// admissible result, on both paths. l = bf16(L) does round (L has up to 16 significant bits).
std::vector<uint16_t> ReferenceOut(const OpData& d, const std::vector<float>& smooth,
                                   const std::vector<uint16_t>& down,
                                   const std::vector<uint16_t>& up, int64_t r,
                                   std::vector<uint8_t>* act_q, std::vector<uint8_t>* act_sf) {
  const OpShape& s = d.shape;
  std::vector<uint16_t> out(s.m * s.n);
  const std::vector<uint8_t> wsf = UnswizzleScales(d.w_sf, s.n, s.k / 16);
  const float alpha = testing::RefDiv(1.0f, testing::RefMul(d.act_gs, d.w_gs));
  for (int64_t m = 0; m < s.m; ++m) {
    std::vector<float> xs(s.k);
    for (int64_t k = 0; k < s.k; ++k) {
      xs[k] = Bf16ToF32(
          testing::RefF32ToBf16(testing::RefMul(Bf16ToF32(d.attn_out[m * s.k + k]), smooth[k])));
    }
    std::vector<long double> a(s.k);
    for (int64_t b = 0; b < s.k / 16; ++b) {
      uint8_t sf, packed[8];
      testing::RefQuantizeBlock16(&xs[16 * b], d.act_gs, &sf, packed);
      (*act_sf)[m * s.k / 16 + b] = sf;
      for (int j = 0; j < 8; ++j) (*act_q)[m * s.k / 2 + 8 * b + j] = packed[j];
      for (int i = 0; i < 16; ++i) {
        const int code = packed[i / 2] >> (4 * (i & 1)) & 0xF;
        a[16 * b + i] = static_cast<long double>(testing::RefE2M1Value(code)) *
                        ((code & 8) ? -1 : 1) * testing::RefE4M3Value(sf);
      }
    }
    std::vector<float> l(r);
    for (int64_t j = 0; j < r; ++j) {
      long double sum = 0;
      for (int64_t k = 0; k < s.k; ++k)
        sum += static_cast<long double>(xs[k]) * Bf16ToF32(down[j * s.k + k]);
      l[j] = Bf16ToF32(testing::RefF32ToBf16(static_cast<float>(sum)));
    }
    const int32_t gi = d.gate_index[m];
    for (int64_t n = 0; n < s.n; ++n) {
      const uint16_t res = d.residual[m * s.n + n];
      if (gi < 0 || gi >= s.g) {
        out[m * s.n + n] = res;
        continue;
      }
      long double acc = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const uint8_t code = (d.w_q[n * s.k / 2 + k / 2] >> (4 * (k & 1))) & 0xF;
        acc += a[k] * testing::RefE2M1Value(code) * ((code & 8) ? -1 : 1) *
               testing::RefE4M3Value(wsf[n * s.k / 16 + k / 16]);
      }
      long double v = testing::RefMul(static_cast<float>(acc), alpha);
      for (int64_t j = 0; j < r; ++j)
        v += static_cast<long double>(l[j]) * Bf16ToF32(up[n * r + j]);
      const float go = testing::RefMul(Bf16ToF32(d.gate[gi * s.n + n]), static_cast<float>(v));
      const float sum = Bf16ToF32(res) + Bf16ToF32(testing::RefF32ToBf16(go));
      out[m * s.n + n] = testing::RefF32ToBf16(sum);
    }
  }
  return out;
}

class ExactBranch : public ::testing::TestWithParam<int64_t> {};

TEST_P(ExactBranch, BothPathsMatchTheIndependentModel) {
  const int64_t r = GetParam();
  std::seed_seq seed{20261201, static_cast<int>(r)};
  TestRng gen(seed);
  const OpShape s{.m = 21, .n = 24, .k = 128, .g = 3};
  OpData d = testing::MakeExactOpData(gen, s);
  // Edge rows: the extremes of int32 and the range's ends.
  d.gate_index[0] = std::numeric_limits<int32_t>::min();
  d.gate_index[1] = std::numeric_limits<int32_t>::max();
  d.gate_index[2] = static_cast<int32_t>(s.g);
  d.gate_index[3] = -1;
  d.gate_index[4] = 0;
  d.gate_index[s.m - 1] = static_cast<int32_t>(s.g) - 1;
  std::vector<float> smooth(s.k);
  for (int64_t b = 0; b < s.k / 16; ++b) {
    const float f = std::ldexp(1.0f, absl::Uniform<int>(absl::IntervalClosed, gen, -1, 1));
    for (int i = 0; i < 16; ++i) smooth[16 * b + i] = f;
  }
  static const float kDown[] = {0, 0.25f, -0.25f, 0.5f, -0.5f};
  static const float kUp[] = {0, 0.5f, -0.5f, 1, -1};
  std::vector<uint16_t> down(r * s.k), up(s.n * r);
  for (auto& v : down) v = Bf(kDown[absl::Uniform<int>(gen, 0, 5)]);
  for (auto& v : up) v = Bf(kUp[absl::Uniform<int>(gen, 0, 5)]);
  std::vector<uint8_t> want_q(s.m * s.k / 2), want_sf(s.m * s.k / 16);
  const std::vector<uint16_t> want = ReferenceOut(d, smooth, down, up, r, &want_q, &want_sf);
  int differs_from_seed = 0;
  Outputs seed_out(s);
  ASSERT_TRUE(RunOp(d.Inputs(), seed_out.Spans()).ok());
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    Outputs o(s);
    ASSERT_TRUE(RunOpQuality(d.Inputs(), {smooth, down, up}, o.Spans(), path).ok());
    EXPECT_EQ(o.out, want) << "path " << static_cast<int>(path);
    EXPECT_EQ(o.act_q, want_q);
    EXPECT_EQ(o.act_sf, want_sf);
    for (size_t i = 0; i < want.size(); ++i) differs_from_seed += o.out[i] != seed_out.out[i];
  }
  EXPECT_GT(differs_from_seed, 0) << "the branch changed nothing: the test would prove nothing";
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExactBranch, ::testing::Values(16, 32, 64));

}  // namespace
}  // namespace h3
