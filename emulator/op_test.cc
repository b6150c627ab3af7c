#include "emulator/op.h"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "emulator/check.h"
#include "emulator/epilogue.h"
#include "emulator/formats.h"
#include "emulator/quantize.h"
#include "emulator/test_util.h"
#include "emulator/weight.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::OpData;

struct Outputs {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
  explicit Outputs(const OpShape& s)
      : out(s.m * s.n, 0xABCD), act_q(s.m * s.k / 2, 0xEE), act_sf(s.m * s.k / 16, 0xEE) {}
  OpOutputs Spans() { return {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)}; }
};

// Independent whole-op reference for exact data: the reference quantizer, a long double
// GEMM (exact for these data) and the epilogue formula.
std::vector<uint16_t> ReferenceOut(const OpData& d) {
  const OpShape& s = d.shape;
  std::vector<uint16_t> out(s.m * s.n);
  const std::vector<uint8_t> wsf = UnswizzleScales(d.w_sf, s.n, s.k / 16);
  const float alpha = 1.0f / (d.act_gs * d.w_gs);
  for (int64_t m = 0; m < s.m; ++m) {
    std::vector<long double> a(s.k);
    for (int64_t b = 0; b < s.k / 16; ++b) {
      float x[16];
      for (int i = 0; i < 16; ++i) x[i] = Bf16ToF32(d.attn_out[m * s.k + 16 * b + i]);
      uint8_t sf, packed[8];
      testing::RefQuantizeBlock16(x, d.act_gs, &sf, packed);
      for (int i = 0; i < 16; ++i) {
        a[16 * b + i] =
            static_cast<long double>(testing::RefE2M1Value(packed[i / 2] >> (4 * (i & 1)))) *
            ((packed[i / 2] >> (4 * (i & 1))) & 8 ? -1 : 1) * testing::RefE4M3Value(sf);
      }
    }
    const int32_t gi = d.gate_index[m];
    for (int64_t n = 0; n < s.n; ++n) {
      const uint16_t res = d.residual[m * s.n + n];
      if (gi < 0 || gi >= s.g) {
        out[m * s.n + n] = res;
        continue;
      }
      long double acc = 0;
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const uint8_t code = (d.w_q[n * s.k / 2 + kk / 2] >> (4 * (kk & 1))) & 0xF;
        acc += a[kk] * testing::RefE2M1Value(code) * ((code & 8) ? -1 : 1) *
               testing::RefE4M3Value(wsf[n * s.k / 16 + kk / 16]);
      }
      const float o = static_cast<float>(acc) * alpha;
      const float go = Bf16ToF32(d.gate[gi * s.n + n]) * o;
      const float sum = Bf16ToF32(res) + Bf16ToF32(testing::RefF32ToBf16(go));
      out[m * s.n + n] = testing::RefF32ToBf16(sum);
    }
  }
  return out;
}

TEST(RunOp, ExactDataMatchesIndependentReferenceOnBothPaths) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpData d = testing::MakeExactOpData(gen, {.m = 19, .n = 24, .k = 256, .g = 3});
  const std::vector<uint16_t> want = ReferenceOut(d);
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    Outputs o(d.shape);
    ASSERT_TRUE(RunOp(d.Inputs(), o.Spans(), path).ok());
    EXPECT_EQ(o.out, want);
    // act_q / act_sf: the section-3 quantizer, linear scales.
    std::vector<uint8_t> q(o.act_q.size()), sf(o.act_sf.size());
    QuantizeRows(d.attn_out, 19, 256, d.act_gs, absl::MakeSpan(q), absl::MakeSpan(sf));
    EXPECT_EQ(o.act_q, q);
    EXPECT_EQ(o.act_sf, sf);
  }
}

TEST(RunOp, OutMayAliasResidualAndWorkspacesAreOptional) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpData d = testing::MakeExactOpData(gen, {.m = 9, .n = 16, .k = 128, .g = 9});
  Outputs o(d.shape);
  ASSERT_TRUE(RunOp(d.Inputs(), o.Spans()).ok());
  std::vector<uint16_t> inplace = d.residual;
  OpInputs in = d.Inputs();
  in.residual = inplace;
  ASSERT_TRUE(RunOp(in, OpOutputs{absl::MakeSpan(inplace), {}, {}}).ok());
  EXPECT_EQ(inplace, o.out);
}

TEST(RunOp, RowChunksAndOutOfRangeRows) {
  // M > the op's 4096-row chunk, on a narrow shape.
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  OpData d = testing::MakeExactOpData(gen, {.m = 4100, .n = 8, .k = 64, .g = 2});
  d.gate_index[4099] = -1;
  d.gate_index[4098] = 2;
  Outputs fast(d.shape), exact(d.shape);
  ASSERT_TRUE(RunOp(d.Inputs(), fast.Spans(), GemmPath::kFastF32).ok());
  ASSERT_TRUE(RunOp(d.Inputs(), exact.Spans(), GemmPath::kExact).ok());
  EXPECT_EQ(fast.out, exact.out);
  EXPECT_EQ(fast.act_q, exact.act_q);
  for (int64_t n = 0; n < 8; ++n) {
    EXPECT_EQ(fast.out[4099 * 8 + n], d.residual[4099 * 8 + n]);
    EXPECT_EQ(fast.out[4098 * 8 + n], d.residual[4098 * 8 + n]);
  }
}

TEST(RunOp, EmptyM) {
  OpData d;
  d.shape = {.m = 0, .n = 8, .k = 64, .g = 1};
  d.w_q.resize(8 * 32);
  d.w_sf.resize(SwizzledScaleBytes(8, 4));
  d.gate.resize(8);
  Outputs o(d.shape);
  EXPECT_TRUE(RunOp(d.Inputs(), o.Spans()).ok());
}

TEST(RunOp, RandomDataIsInsideTheEnvelope) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  OpData d;
  d.shape = {.m = 12, .n = 20, .k = 192, .g = 4};
  const OpShape& s = d.shape;
  std::vector<uint16_t> w(s.n * s.k);
  for (auto& v : w) v = testing::RandomBf16(gen, -6, 2);
  auto qw = QuantizeWeightBf16(w, s.n, s.k);
  ASSERT_TRUE(qw.ok());
  d.w_q = qw->q;
  d.w_sf = qw->sf;
  d.w_gs = qw->global_scale;
  d.attn_out.resize(s.m * s.k);
  for (auto& v : d.attn_out) v = testing::RandomBf16(gen, -4, 4);
  d.act_gs = 2688.0f / 16.0f;
  d.gate.resize(s.g * s.n);
  for (auto& v : d.gate) v = testing::RandomBf16(gen, -3, 1);
  d.residual.resize(s.m * s.n);
  for (auto& v : d.residual) v = testing::RandomBf16(gen, -6, 6);
  d.gate_index.resize(s.m);
  for (auto& v : d.gate_index) v = absl::Uniform<int32_t>(gen, -1, 5);
  Outputs o(s);
  ASSERT_TRUE(RunOp(d.Inputs(), o.Spans()).ok());
  auto env = ComputeOutEnvelope(d.Inputs(), {});
  ASSERT_TRUE(env.ok());
  const CompareReport rep = CompareOut(*env, o.out, {});
  EXPECT_TRUE(rep.pass) << rep.first_mismatch;
  EXPECT_EQ(rep.checked, s.m * s.n);
}

TEST(RunOp, ValidationErrorsNameTheArgumentAndWriteNothing) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpData good = testing::MakeExactOpData(gen, {.m = 3, .n = 8, .k = 64, .g = 2});
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* needle;
    std::function<void(OpInputs&, Outputs&)> mutate;
  };
  std::vector<uint16_t> short16(5);
  std::vector<uint8_t> short8(5);
  std::vector<int32_t> short32(2);
  const Case kCases[] = {
      {"shape.m (the rows M of attn_out [M, K]) must be >= 0, got -1",
       [](OpInputs& in, Outputs&) { in.shape.m = -1; }},
      {"shape.n (the rows N of o_weight_q [N, K/2]) must be >= 1, got 0",
       [](OpInputs& in, Outputs&) { in.shape.n = 0; }},
      {"shape.k (the columns K of attn_out [M, K]) must be a positive multiple of 64, got 32",
       [](OpInputs& in, Outputs&) { in.shape.k = 32; }},
      {"shape.g (the rows G of gate [G, N]) must be >= 1, got 0",
       [](OpInputs& in, Outputs&) { in.shape.g = 0; }},
      {"attn_out: expected 192 elements (m*k), got 5",
       [&](OpInputs& in, Outputs&) { in.attn_out = short16; }},
      {"o_weight_q: expected 256 elements (n*k/2), got 5",
       [&](OpInputs& in, Outputs&) { in.o_weight_q = short8; }},
      {"o_weight_sf: expected 512 elements",
       [&](OpInputs& in, Outputs&) { in.o_weight_sf = short8; }},
      {"gate: expected 16 elements (g*n), got 5",
       [&](OpInputs& in, Outputs&) { in.gate = short16; }},
      {"gate_index: expected 3 elements (m), got 2",
       [&](OpInputs& in, Outputs&) { in.gate_index = short32; }},
      {"residual: expected 24 elements (m*n), got 5",
       [&](OpInputs& in, Outputs&) { in.residual = short16; }},
      {"o_weight_global_scale must be a finite value > 0, got 0",
       [](OpInputs& in, Outputs&) { in.o_weight_global_scale = 0.0f; }},
      {"o_weight_global_scale must be a finite value > 0, got -1",
       [](OpInputs& in, Outputs&) { in.o_weight_global_scale = -1.0f; }},
      {"act_global_scale must be a finite value > 0, got nan",
       [&](OpInputs& in, Outputs&) { in.act_global_scale = kNaN; }},
      {"act_global_scale must be a finite value > 0, got inf",
       [&](OpInputs& in, Outputs&) { in.act_global_scale = kInf; }},
      {"act_global_scale must be a finite value > 0, got -0",
       [&](OpInputs& in, Outputs&) { in.act_global_scale = -0.0f; }},
      {"out: expected 24 elements (m*n), got 23", [](OpInputs&, Outputs& o) { o.out.pop_back(); }},
      {"act_q: expected 96 elements (m*k/2), got 95",
       [](OpInputs&, Outputs& o) { o.act_q.pop_back(); }},
      {"act_sf: expected 12 elements (m*k/16), got 13",
       [](OpInputs&, Outputs& o) { o.act_sf.push_back(0xEE); }},
  };
  for (const Case& c : kCases) {
    OpInputs in = good.Inputs();
    Outputs o(good.shape);
    c.mutate(in, o);
    const std::vector<uint16_t> out_before = o.out;
    const std::vector<uint8_t> q_before = o.act_q, sf_before = o.act_sf;
    const absl::Status st = RunOp(in, o.Spans());
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.needle;
    EXPECT_NE(st.message().find(c.needle), std::string::npos)
        << "want \"" << c.needle << "\" in \"" << st.message() << "\"";
    EXPECT_EQ(o.out, out_before) << c.needle;
    EXPECT_EQ(o.act_q, q_before) << c.needle;
    EXPECT_EQ(o.act_sf, sf_before) << c.needle;
  }
}

}  // namespace
}  // namespace h3
