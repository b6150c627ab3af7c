#include "emulator/check.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "emulator/op.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::OpData;

std::vector<uint16_t> RunEmulator(const OpData& d, GemmPath path = GemmPath::kFastF32) {
  std::vector<uint16_t> out(d.shape.m * d.shape.n);
  EXPECT_TRUE(RunOp(d.Inputs(), {absl::MakeSpan(out), {}, {}}, path).ok());
  return out;
}

TEST(Bf16OrderKey, TotalOrder) {
  const uint16_t kAscending[] = {0xFFFF, 0xFFC0, 0xFF80, 0xBF80, 0x8001, 0x8000,
                                 0x0000, 0x0001, 0x3F80, 0x7F80, 0x7FC0, 0x7FFF};
  for (size_t i = 1; i < sizeof(kAscending) / 2; ++i) {
    EXPECT_LT(Bf16OrderKey(kAscending[i - 1]), Bf16OrderKey(kAscending[i])) << i;
  }
  EXPECT_EQ(Bf16OrderKey(0x0000) - Bf16OrderKey(0x8000), 1);
}

TEST(Envelope, ExactDataIsAPointAndTheOpHitsIt) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpData d = testing::MakeExactOpData(gen, {.m = 10, .n = 16, .k = 256, .g = 3});
  auto env = ComputeOutEnvelope(d.Inputs(), {});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->m, 10);
  EXPECT_EQ(env->n, 16);
  for (size_t i = 0; i < env->lo.size(); ++i) {
    EXPECT_EQ(env->exact[i], 1) << i;
    // A point, except an exact zero acc on a -0 residual may give either zero.
    if (env->lo[i] != env->hi[i]) {
      EXPECT_EQ(env->lo[i], 0x8000) << i;
      EXPECT_EQ(env->hi[i], 0x0000) << i;
    }
  }
  std::vector<uint16_t> out = RunEmulator(d);
  CompareReport rep = CompareOut(*env, out, {});
  EXPECT_TRUE(rep.pass) << rep.first_mismatch;
  EXPECT_EQ(rep.checked, 160);
  EXPECT_EQ(rep.max_ulp, 0);
  // One element off by one ulp (upwards in the total order): reported exactly.
  int64_t idx = -1;
  for (int64_t i = 0; i < 160 && idx < 0; ++i) {
    if (env->lo[i] == env->hi[i] && env->lo[i] != 0x7FFF && env->lo[i] != 0x7F80) idx = i;
  }
  ASSERT_GE(idx, 0);
  const uint16_t want = out[idx];
  out[idx] = (want & 0x8000) ? ((want == 0x8000) ? 0x0000 : want - 1) : want + 1;
  rep = CompareOut(*env, out, {});
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.mismatches, 1);
  EXPECT_EQ(rep.max_ulp, 1);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "out[m=%d,n=%d]: got 0x%04x want 0x%04x",
                static_cast<int>(idx / 16), static_cast<int>(idx % 16), out[idx], want);
  EXPECT_EQ(rep.first_mismatch, buf);
}

TEST(Envelope, OutOfRangeRowsAndNaNScales) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  OpData d = testing::MakeExactOpData(gen, {.m = 4, .n = 8, .k = 64, .g = 2});
  d.gate_index = {-1, 2, 0, 1};
  d.residual[0] = 0x8000;  // -0 stays -0
  d.residual[1] = 0x7FC1;  // NaN payload stays
  // Column 3 of the weight gets a NaN scale: NaN everywhere in that column of in-range rows.
  d.w_sf[SwizzledScaleOffset(3, 1, 4)] = 0x7F;
  auto env = ComputeOutEnvelope(d.Inputs(), {});
  ASSERT_TRUE(env.ok());
  for (int64_t row : {0, 1}) {
    for (int64_t n = 0; n < 8; ++n) {
      EXPECT_EQ(env->lo[row * 8 + n], d.residual[row * 8 + n]);
      EXPECT_EQ(env->hi[row * 8 + n], d.residual[row * 8 + n]);
      EXPECT_EQ(env->exact[row * 8 + n], 1);
    }
  }
  EXPECT_EQ(env->lo[2 * 8 + 3], 0x7FFF);
  EXPECT_EQ(env->hi[3 * 8 + 3], 0x7FFF);
  std::vector<uint16_t> out = RunEmulator(d);
  EXPECT_TRUE(CompareOut(*env, out, {}).pass);
  EXPECT_EQ(out[2 * 8 + 3], 0x7FFF);
  out[2 * 8 + 3] = 0x7FC0;  // a non-canonical NaN is a mismatch
  const CompareReport rep = CompareOut(*env, out, {});
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.first_mismatch, "out[m=2,n=3]: got 0x7fc0 want 0x7fff");
}

TEST(Envelope, RowSubsetAndErrors) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpData d = testing::MakeExactOpData(gen, {.m = 6, .n = 8, .k = 64, .g = 2});
  const std::vector<int64_t> rows = {4, 1};
  auto env = ComputeOutEnvelope(d.Inputs(), rows);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->m, 2);
  auto all = ComputeOutEnvelope(d.Inputs(), {});
  ASSERT_TRUE(all.ok());
  for (int64_t n = 0; n < 8; ++n) {
    EXPECT_EQ(env->lo[n], all->lo[4 * 8 + n]);
    EXPECT_EQ(env->hi[8 + n], all->hi[1 * 8 + n]);
  }
  const std::vector<uint16_t> out = RunEmulator(d);
  EXPECT_TRUE(CompareOut(*env, out, rows).pass);
  EXPECT_TRUE(CompareOut(*env, out, {}).pass);  // empty = the envelope's own rows
  const CompareReport bad_rows = CompareOut(*env, out, std::vector<int64_t>{1});
  EXPECT_FALSE(bad_rows.pass);
  EXPECT_EQ(bad_rows.first_mismatch, "rows: expected 2 rows (the envelope's), got 1");
  const CompareReport short_got = CompareOut(*env, absl::MakeConstSpan(out).subspan(0, 20), {});
  EXPECT_FALSE(short_got.pass);
  const std::vector<int64_t> bad = {6};
  auto e2 = ComputeOutEnvelope(d.Inputs(), bad);
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.status().message().find("rows[0]: expected a row in [0, 6), got 6"),
            std::string::npos);
  OpInputs in = d.Inputs();
  in.act_global_scale = -1.0f;
  EXPECT_FALSE(ComputeOutEnvelope(in, {}).ok());
}

TEST(Envelope, RandomDataBoundIsTightAndContainsBothPaths) {
  std::seed_seq seed{20261130};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  OpData d = testing::MakeExactOpData(gen, {.m = 8, .n = 24, .k = 512, .g = 2});
  // Full-entropy weight codes and scales.
  for (auto& c : d.w_q) c = absl::Uniform<uint8_t>(gen, 0, 255);
  for (auto& s : d.w_sf) s = absl::Uniform<uint8_t>(gen, 0x20, 0x60);
  for (auto& a : d.attn_out) a = testing::RandomBf16(gen, -5, 3);
  // Every row in range: a row that copies its residual is exact and says nothing of the bound.
  for (size_t r = 0; r < d.gate_index.size(); ++r) d.gate_index[r] = static_cast<int32_t>(r % 2);
  d.act_gs = 2688.0f / 11.0f;
  auto env = ComputeOutEnvelope(d.Inputs(), {});
  ASSERT_TRUE(env.ok());
  int64_t inexact = 0, narrow = 0;
  for (size_t i = 0; i < env->lo.size(); ++i) {
    if (!env->exact[i]) ++inexact;
    // The bound is relative to sum|products|, so a cancelling acc next to a small residual can
    // widen an element; most stay within one bf16 ulp.
    if (Bf16OrderKey(env->hi[i]) - Bf16OrderKey(env->lo[i]) <= 1) ++narrow;
  }
  EXPECT_GT(inexact, 0);
  EXPECT_GE(narrow, static_cast<int64_t>(env->lo.size()) * 8 / 10);
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    const CompareReport rep = CompareOut(*env, RunEmulator(d, path), {});
    EXPECT_TRUE(rep.pass) << rep.first_mismatch;
  }
}

TEST(CompareBytes, Table) {
  const std::vector<uint8_t> want = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<uint8_t> got = want;
  CompareReport rep = CompareBytes("act_q", want, got, 4);
  EXPECT_TRUE(rep.pass);
  EXPECT_EQ(rep.checked, 12);
  got[9] = 0x20;
  got[11] = 0;
  rep = CompareBytes("act_q", want, got, 4);
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.mismatches, 2);
  EXPECT_EQ(rep.max_ulp, 22);
  EXPECT_EQ(rep.first_mismatch, "act_q[row=2,col=1]: got 0x20 want 0x0a");
  rep = CompareBytes("act_sf", want, std::vector<uint8_t>(11), 4);
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.first_mismatch, "act_sf: expected 12 bytes, got 11");
}

}  // namespace
}  // namespace h3
