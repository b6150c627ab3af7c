#include "emulator/check.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "emulator/check_branch.h"
#include "emulator/epilogue.h"
#include "emulator/exact_sum.h"
#include "emulator/formats.h"
#include "emulator/gemm.h"
#include "emulator/op.h"
#include "emulator/quality.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"
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

// ---- The low-rank branch (contract section 13.2) ---------------------------------------------

// The branch's operands and act_smooth, owned (empty: not given).
struct Branch {
  std::vector<float> smooth;
  std::vector<uint16_t> down, up;
};

OpInputs WithBranch(const OpData& d, const Branch& b) {
  OpInputs in = d.Inputs();
  in.act_smooth = b.smooth;
  in.lora_down = b.down;
  in.lora_up = b.up;
  return in;
}

std::vector<uint16_t> RunBranch(const OpData& d, const Branch& b, GemmPath path) {
  std::vector<uint16_t> out(d.shape.m * d.shape.n);
  const absl::Status st = RunOp(WithBranch(d, b), {absl::MakeSpan(out), {}, {}}, path);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

// x' of section 12 (attn_out itself without act_smooth).
std::vector<uint16_t> Smoothed(const OpData& d, const Branch& b) {
  if (b.smooth.empty()) return d.attn_out;
  std::vector<uint16_t> xs(d.attn_out.size());
  SmoothRows(d.attn_out.data(), d.shape.m, d.shape.k, b.smooth, xs.data());
  return xs;
}

// Random data as RandomDataBoundIsTightAndContainsBothPaths's, with a branch whose part of v is
// of o's order (r = 32, K = 1024: rms 0.5 of o's), act_gs calibrated on x' (section 12).
void MakeRandomBranch(TestRng& gen, OpShape s, int64_t r, bool smooth, OpData* d, Branch* b) {
  *d = testing::MakeExactOpData(gen, s);
  for (auto& c : d->w_q) c = absl::Uniform<uint8_t>(gen, 0, 255);
  for (auto& sf : d->w_sf) sf = absl::Uniform<uint8_t>(gen, 0x20, 0x60);
  for (auto& a : d->attn_out) a = testing::RandomBf16(gen, -5, 3);
  *b = Branch{};
  if (smooth) {
    b->smooth.resize(s.k);
    for (float& v : b->smooth)
      v = std::ldexp(absl::Uniform(gen, 0.5f, 1.0f), absl::Uniform(gen, -2, 3));
  }
  b->down.resize(r * s.k);
  b->up.resize(s.n * r);
  for (auto& v : b->down) v = testing::RandomBf16(gen, -5, -1);
  for (auto& v : b->up) v = testing::RandomBf16(gen, -1, 3);
  float amax = 0.0f;
  for (uint16_t x : Smoothed(*d, *b)) amax = std::max(amax, std::fabs(Bf16ToF32(x)));
  d->act_gs = 2688.0f / amax;
}

// Envelope widths in bf16 steps of the total order, over in-range elements: 0, 1, 2, 3 or more.
struct Widths {
  int64_t count = 0, at[4] = {0, 0, 0, 0};
  double Within(int steps) const {
    int64_t c = 0;
    for (int i = 0; i <= steps; ++i) c += at[i];
    return count == 0 ? 0.0 : static_cast<double>(c) / static_cast<double>(count);
  }
};
Widths WidthsOf(const OutEnvelope& env, const OpData& d) {
  Widths w;
  for (int64_t i = 0; i < env.m; ++i) {
    if (!GateIndexInRange(d.gate_index[env.row_ids[i]], d.shape.g)) continue;
    for (int64_t j = 0; j < env.n; ++j) {
      const int32_t steps =
          Bf16OrderKey(env.hi[i * env.n + j]) - Bf16OrderKey(env.lo[i * env.n + j]);
      ++w.count;
      ++w.at[std::min(steps, 3)];
    }
  }
  return w;
}

// (a) Both emulator paths lie inside the envelope; rows out of range are their residual.
TEST(BranchEnvelope, RandomDataContainsBothPaths) {
  std::seed_seq seed{20261203};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpShape s{.m = 12, .n = 40, .k = 512, .g = 3};
  for (const int64_t r : {16, 32, 64}) {
    for (const bool smooth : {false, true}) {
      SCOPED_TRACE(std::string("r = ") + std::to_string(r) + (smooth ? ", act_smooth" : ""));
      OpData d;
      Branch b;
      MakeRandomBranch(gen, s, r, smooth, &d, &b);
      for (int64_t i = 0; i < s.m; ++i) d.gate_index[i] = static_cast<int32_t>(i % 5) - 1;  // -1..3
      auto env = ComputeOutEnvelope(WithBranch(d, b), {});
      ASSERT_TRUE(env.ok()) << env.status();
      int64_t inexact = 0;
      for (uint8_t e : env->exact) inexact += e == 0;
      EXPECT_GT(inexact, 0);
      for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
        const std::vector<uint16_t> out = RunBranch(d, b, path);
        const CompareReport rep = CompareOut(*env, out, {});
        EXPECT_TRUE(rep.pass) << rep.first_mismatch;
        for (int64_t i = 0; i < s.m; ++i) {
          if (GateIndexInRange(d.gate_index[i], s.g)) continue;
          for (int64_t j = 0; j < s.n; ++j) {
            const int64_t e = i * s.n + j;
            ASSERT_EQ(out[e], d.residual[e]);
            ASSERT_EQ(env->lo[e], d.residual[e]);
            ASSERT_EQ(env->hi[e], d.residual[e]);
            ASSERT_EQ(env->exact[e], 1);
          }
        }
      }
    }
  }
}

// Exponent of the lowest set bit of a finite nonzero bf16 value.
int Bf16Lsb(uint16_t b) {
  const int field = (b >> 7) & 0xFF;
  const int mant = (b & 0x7F) | (field != 0 ? 0x80 : 0);
  return (field != 0 ? field : 1) - 134 + __builtin_ctz(static_cast<unsigned>(mant));
}

// Tightness at r = 32, K = 512..2048: the widths (bf16 steps), next to the plain op's on the same
// data, and how far they are the contract's own. Two adversarial backends, computed apart from
// check_branch.cc: each lambda_j at an end of section 13.1's interval (S and A exact in double:
// products of these values have 16 bits within 2^-24..2^4), l_j = bf16 of it, o at an end of
// section 8's interval, v = the exact sum rounded once; the l_j and o ends picked to push v up,
// or down. Their outs are admissible, so they must lie inside, and where they reach the
// envelope's ends (within a step) the width is the contract's, not the checker's.
TEST(BranchEnvelope, RandomDataBoundIsTightAndReached) {
  std::seed_seq seed{20261204};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  constexpr int64_t kR = 32;
  for (const int64_t k : {512, 1024, 2048}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    const OpShape s{.m = 8, .n = 64, .k = k, .g = 2};
    OpData d;
    Branch b;
    MakeRandomBranch(gen, s, kR, false, &d, &b);
    for (int64_t i = 0; i < s.m; ++i) d.gate_index[i] = static_cast<int32_t>(i % 2);
    auto env = ComputeOutEnvelope(WithBranch(d, b), {});
    auto plain = ComputeOutEnvelope(d.Inputs(), {});
    ASSERT_TRUE(env.ok()) << env.status();
    ASSERT_TRUE(plain.ok());
    std::vector<uint8_t> q(s.m * s.k / 2), sf(s.m * s.k / 16);
    QuantizeRows(d.attn_out, s.m, s.k, d.act_gs, absl::MakeSpan(q), absl::MakeSpan(sf));
    const IntOperand a = ToIntOperand({s.m, s.k, q, sf, ScaleLayout::kLinear});
    const IntOperand w = ToIntOperand({s.n, s.k, d.w_q, d.w_sf, ScaleLayout::kSwizzled128x4});
    const float alpha = EpilogueAlpha(d.act_gs, d.w_gs);
    int64_t reached = 0;
    for (int64_t m = 0; m < s.m; ++m) {
      std::vector<float> l_lo(kR), l_hi(kR);
      for (int64_t j = 0; j < kR; ++j) {
        double sum = 0.0, abs = 0.0;
        int e = INT_MAX;
        for (int64_t i = 0; i < s.k; ++i) {
          const uint16_t x = d.attn_out[m * s.k + i], y = b.down[j * s.k + i];
          const double p = static_cast<double>(Bf16ToF32(x)) * Bf16ToF32(y);
          sum += p;
          abs += std::fabs(p);
          if (p != 0.0) e = std::min(e, Bf16Lsb(x) + Bf16Lsb(y));
        }
        ASSERT_GE(abs, std::ldexp(1.0, e + 24));  // not the exact case
        const double bound =
            static_cast<double>(k - 1) * 0x1p-24 * (abs + k * 0x1p-150) + k * 0x1p-150;
        float lo = static_cast<float>(sum - bound), hi = static_cast<float>(sum + bound);
        if (lo < sum - bound) lo = std::nextafter(lo, FLT_MAX);
        if (hi > sum + bound) hi = std::nextafter(hi, -FLT_MAX);
        l_lo[j] = Bf16ToF32(F32ToBf16(lo));
        l_hi[j] = Bf16ToF32(F32ToBf16(hi));
      }
      for (int64_t n = 0; n < s.n; ++n) {
        const AccInterval iv = AccBound(ExactDot(a, m, w, n), s.k);
        volatile float o_lo = iv.lo * alpha;
        volatile float o_hi = iv.hi * alpha;
        ExactSum up, down;
        up.Add(o_hi);
        down.Add(o_lo);
        for (int64_t j = 0; j < kR; ++j) {
          const float u = Bf16ToF32(b.up[n * kR + j]);
          up.AddProduct(u > 0.0f ? l_hi[j] : l_lo[j], u);
          down.AddProduct(u > 0.0f ? l_lo[j] : l_hi[j], u);
        }
        const int64_t el = m * s.n + n;
        const uint16_t g = d.gate[d.gate_index[m] * s.n + n];
        const int32_t k_up = Bf16OrderKey(EpilogueFromO(up.RoundToF32(), g, d.residual[el]));
        const int32_t k_down = Bf16OrderKey(EpilogueFromO(down.RoundToF32(), g, d.residual[el]));
        const int32_t k_lo = Bf16OrderKey(env->lo[el]), k_hi = Bf16OrderKey(env->hi[el]);
        ASSERT_TRUE(std::min(k_up, k_down) >= k_lo && std::max(k_up, k_down) <= k_hi) << el;
        reached += std::min(k_up, k_down) - k_lo <= 1 && k_hi - std::max(k_up, k_down) <= 1;
      }
    }
    const Widths bw = WidthsOf(*env, d), pw = WidthsOf(*plain, d);
    std::printf(
        "K = %d, r = 32: widths 0/1/2/3+ steps: branch %d/%d/%d/%d, plain %d/%d/%d/%d of %d; "
        "both ends reached within a step: %d\n",
        static_cast<int>(k), static_cast<int>(bw.at[0]), static_cast<int>(bw.at[1]),
        static_cast<int>(bw.at[2]), static_cast<int>(bw.at[3]), static_cast<int>(pw.at[0]),
        static_cast<int>(pw.at[1]), static_cast<int>(pw.at[2]), static_cast<int>(pw.at[3]),
        static_cast<int>(bw.count), static_cast<int>(reached));
    EXPECT_GE(reached, bw.count * 9 / 10);
    if (k == 512) {
      EXPECT_GE(bw.Within(2), 0.85);
    }
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      const CompareReport rep = CompareOut(*env, RunBranch(d, b, path), {});
      EXPECT_TRUE(rep.pass) << rep.first_mismatch;
    }
  }
}

// (b) Where section 13.1's exact case holds for every sum the envelope is one value, and both
// paths give it.
TEST(BranchEnvelope, ExactDataIsOneValueAndBothPathsHitIt) {
  std::seed_seq seed{20261205};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpShape s{.m = 10, .n = 24, .k = 256, .g = 3};
  for (const int64_t r : {16, 64}) {
    for (const bool smooth : {false, true}) {
      SCOPED_TRACE(std::string("r = ") + std::to_string(r) + (smooth ? ", act_smooth" : ""));
      const OpData d = testing::MakeExactOpData(gen, s);
      Branch b;
      // Products of x' (multiples of 2^-3, |x'| <= 12) and these are multiples of 2^-4, sums
      // below 2^12; v's terms multiples of 2^-6 below 2^15: exact case everywhere.
      static const float kDown[] = {0.0f, 0.5f, 1.0f, -0.5f, -1.0f};
      static const float kUp[] = {0.0f, 0.25f, 0.5f, -0.25f, -0.5f};
      b.down.resize(r * s.k);
      b.up.resize(s.n * r);
      for (auto& v : b.down) v = F32ToBf16(kDown[absl::Uniform(gen, 0, 5)]);
      for (auto& v : b.up) v = F32ToBf16(kUp[absl::Uniform(gen, 0, 5)]);
      if (smooth) {
        // One power of two (and sign) per 16-block keeps each block's scale a power of two.
        b.smooth.resize(s.k);
        for (int64_t blk = 0; blk < s.k / 16; ++blk) {
          const float f = std::ldexp(absl::Bernoulli(gen, 0.5) ? -1.0f : 1.0f,
                                     absl::Uniform(absl::IntervalClosed, gen, -1, 1));
          for (int i = 0; i < 16; ++i) b.smooth[blk * 16 + i] = f;
        }
      }
      auto env = ComputeOutEnvelope(WithBranch(d, b), {});
      ASSERT_TRUE(env.ok()) << env.status();
      for (size_t i = 0; i < env->lo.size(); ++i) {
        ASSERT_EQ(env->exact[i], 1) << i;
        if (env->lo[i] != env->hi[i]) {  // an exact zero v on a -0 residual: either zero
          EXPECT_EQ(env->lo[i], 0x8000) << i;
          EXPECT_EQ(env->hi[i], 0x0000) << i;
        }
      }
      for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
        const std::vector<uint16_t> out = RunBranch(d, b, path);
        const CompareReport rep = CompareOut(*env, out, {});
        EXPECT_TRUE(rep.pass) << rep.first_mismatch;
        EXPECT_EQ(rep.max_ulp, 0);
      }
      auto plain = ComputeOutEnvelope(d.Inputs(), {});
      ASSERT_TRUE(plain.ok());
      EXPECT_NE(plain->lo, env->lo);  // the branch reached the envelope
    }
  }
}

// (c) Non-finite x', o and gate: the contract's results (section 13.1's IEEE rules, then
// section 6), one value each, on both paths.
TEST(BranchEnvelope, NonFiniteCases) {
  const OpShape s{.m = 4, .n = 8, .k = 64, .g = 2};
  constexpr int64_t kR = 16, kRow = 1, kCol = 2, kK0 = 5;
  constexpr uint16_t kPosInf = 0x7F80, kNegInf = 0xFF80, kNaN = 0x7FFF;
  // Row kRow's lambda_j are all +Inf (x'[kK0] = +Inf, lora_down[j, kK0] > 0); lora_up's rows
  // make v: column 0 +Inf (all u > 0), 1 NaN (u of both signs), 2 NaN (a zero u: Inf * 0),
  // 3 -Inf (all u < 0).
  const auto inf_columns = [&](const OpData& d, Branch& b) {
    for (int64_t j = 0; j < kR; ++j) b.down[j * s.k + kK0] = 0x3F80;
    for (int64_t j = 0; j < kR; ++j) {
      b.up[0 * kR + j] = 0x3E80;
      b.up[1 * kR + j] = j == 3 ? 0xBE80 : 0x3E80;
      b.up[2 * kR + j] = j == 3 ? 0x0000 : 0x3E80;
      b.up[3 * kR + j] = 0xBE80;
    }
    (void)d;
  };
  // out for v = +-Inf / NaN at (kRow, n): the epilogue of section 6.
  const auto epi = [&](const OpData& d, float v, int64_t n) {
    return EpilogueFromO(v, d.gate[d.gate_index[kRow] * s.n + n], d.residual[kRow * s.n + n]);
  };
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* what;
    std::function<void(OpData&, Branch&)> make;
    std::function<void(const OpData&, const OutEnvelope&, const std::vector<uint16_t>&)> expect;
  };
  const auto inf_expect = [&](const OpData& d, const OutEnvelope& env,
                              const std::vector<uint16_t>& out) {
    const float v[4] = {inf, std::nanf(""), std::nanf(""), -inf};
    for (int64_t n = 0; n < 4; ++n) {
      const uint16_t want = epi(d, v[n], n);
      EXPECT_EQ(env.lo[kRow * s.n + n], want) << n;
      EXPECT_EQ(env.hi[kRow * s.n + n], want) << n;
      EXPECT_EQ(env.exact[kRow * s.n + n], 1) << n;
      EXPECT_EQ(out[kRow * s.n + n], want) << n;
    }
    EXPECT_EQ(out[kRow * s.n + 0], kPosInf);  // the gate row used here is positive
    EXPECT_EQ(out[kRow * s.n + 3], kNegInf);
  };
  const std::vector<Case> cases = {
      {"x' = +Inf from attn_out",
       [&](OpData& d, Branch& b) {
         d.attn_out[kRow * s.k + kK0] = kPosInf;
         inf_columns(d, b);
       },
       inf_expect},
      {"x' = +Inf from a huge act_smooth (4 * 2^127 overflows)",
       [&](OpData& d, Branch& b) {
         b.smooth.assign(s.k, 1.0f);
         b.smooth[kK0] = std::ldexp(1.0f, 127);
         for (int64_t i = 0; i < s.m; ++i) d.attn_out[i * s.k + kK0] = i == kRow ? 0x4080 : 0x0000;
         inf_columns(d, b);
       },
       inf_expect},
      {"NaN attn_out: every lambda_j NaN, out NaN across the row",
       [&](OpData& d, Branch&) { d.attn_out[kRow * s.k + kK0] = 0x7FC1; },
       [&](const OpData&, const OutEnvelope& env, const std::vector<uint16_t>& out) {
         for (int64_t n = 0; n < s.n; ++n) {
           EXPECT_EQ(env.lo[kRow * s.n + n], kNaN) << n;
           EXPECT_EQ(env.hi[kRow * s.n + n], kNaN) << n;
           EXPECT_EQ(out[kRow * s.n + n], kNaN) << n;
         }
       }},
      {"NaN weight scale: o NaN, out NaN in that column",
       [&](OpData& d, Branch&) { d.w_sf[SwizzledScaleOffset(kCol, 1, s.k / 16)] = 0x7F; },
       [&](const OpData&, const OutEnvelope& env, const std::vector<uint16_t>& out) {
         for (int64_t i = 0; i < s.m; ++i) {
           EXPECT_EQ(env.lo[i * s.n + kCol], kNaN) << i;
           EXPECT_EQ(out[i * s.n + kCol], kNaN) << i;
         }
       }},
      {"+Inf and -Inf gate: out = +-Inf by v's sign",
       [&](OpData& d, Branch&) {
         d.gate[d.gate_index[kRow] * s.n + kCol] = kPosInf;
         d.gate[d.gate_index[kRow] * s.n + kCol + 1] = kNegInf;
       },
       [&](const OpData&, const OutEnvelope& env, const std::vector<uint16_t>& out) {
         for (int64_t n : {kCol, kCol + 1}) {
           const int64_t e = kRow * s.n + n;
           EXPECT_TRUE(out[e] == kPosInf || out[e] == kNegInf) << n << ": " << out[e];
           EXPECT_EQ(env.lo[e], out[e]) << n;
           EXPECT_EQ(env.hi[e], out[e]) << n;
         }
       }},
      {"A >= 2^127 (x' = 2^100, lora_down 2^30): lambda unspecified, any out",
       [&](OpData& d, Branch& b) {
         d.attn_out[kRow * s.k + kK0] = 0x7180;  // 2^100
         b.down[0 * s.k + kK0] = 0x4E80;         // 2^30
       },
       [&](const OpData& d, const OutEnvelope& env, const std::vector<uint16_t>&) {
         for (int64_t n = 0; n < s.n; ++n) {
           const int64_t e = kRow * s.n + n;
           EXPECT_EQ(env.lo[e], epi(d, -inf, n)) << n;
           EXPECT_EQ(env.hi[e], kNaN) << n;
           EXPECT_EQ(env.exact[e], 0) << n;
         }
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::seed_seq seed{20261206};  // the same data for every case
    TestRng gen(seed);
    OpData d = testing::MakeExactOpData(gen, s);
    for (auto& x : d.attn_out) x = testing::RandomBf16(gen, -4, 2);
    d.act_gs = 2688.0f / 16.0f;
    d.gate_index = {0, 1, 1, 0};
    for (int64_t n = 0; n < s.n; ++n) d.gate[1 * s.n + n] = 0x3F80 + static_cast<uint16_t>(n);
    Branch b;
    b.down.resize(kR * s.k);
    b.up.resize(s.n * kR);
    for (auto& v : b.down) v = testing::RandomBf16(gen, -6, -3);
    for (auto& v : b.up) v = testing::RandomBf16(gen, -3, 0);
    c.make(d, b);
    auto env = ComputeOutEnvelope(WithBranch(d, b), {});
    ASSERT_TRUE(env.ok()) << env.status();
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      SCOPED_TRACE(path == GemmPath::kExact ? "exact path" : "fast path");
      const std::vector<uint16_t> out = RunBranch(d, b, path);
      const CompareReport rep = CompareOut(*env, out, {});
      EXPECT_TRUE(rep.pass) << rep.first_mismatch;
      c.expect(d, *env, out);
    }
  }
}

// The op with the branch computed exactly (the exact path's definition), or deliberately wrong.
enum class Wrong { kNone, kBranchDropped, kLNotRounded, kAlphaOnBranch };

std::vector<uint16_t> ReferenceOp(const OpData& d, const Branch& b, Wrong wrong) {
  const OpShape& s = d.shape;
  const int64_t r = static_cast<int64_t>(b.down.size()) / s.k;
  const std::vector<uint16_t> xs = Smoothed(d, b);
  std::vector<uint8_t> q(s.m * s.k / 2), sf(s.m * s.k / 16);
  QuantizeRows(xs, s.m, s.k, d.act_gs, absl::MakeSpan(q), absl::MakeSpan(sf));
  const MatrixF32 acc =
      GemmExactF32(BlockScaledMatrix{s.m, s.k, q, sf, ScaleLayout::kLinear},
                   BlockScaledMatrix{s.n, s.k, d.w_q, d.w_sf, ScaleLayout::kSwizzled128x4});
  const float alpha = EpilogueAlpha(d.act_gs, d.w_gs);
  std::vector<uint16_t> out(s.m * s.n);
  for (int64_t m = 0; m < s.m; ++m) {
    std::vector<float> l(r), v(s.n);
    for (int64_t j = 0; j < r; ++j) {
      ExactSum lambda;
      for (int64_t i = 0; i < s.k; ++i) {
        lambda.AddProduct(Bf16ToF32(xs[m * s.k + i]), Bf16ToF32(b.down[j * s.k + i]));
      }
      const float lam = lambda.RoundToF32();
      l[j] = wrong == Wrong::kLNotRounded ? lam : Bf16ToF32(F32ToBf16(lam));
    }
    for (int64_t n = 0; n < s.n; ++n) {
      volatile float o = acc(m, n) * alpha;
      ExactSum branch, sum;
      sum.Add(o);
      for (int64_t j = 0; j < r; ++j) {
        branch.AddProduct(l[j], Bf16ToF32(b.up[n * r + j]));
        sum.AddProduct(l[j], Bf16ToF32(b.up[n * r + j]));
      }
      volatile float scaled = branch.RoundToF32() * alpha;
      volatile float with_alpha = o + scaled;
      v[n] = wrong == Wrong::kBranchDropped   ? o
             : wrong == Wrong::kAlphaOnBranch ? with_alpha
                                              : sum.RoundToF32();
    }
    EpilogueRowFromO(v.data(), d.gate, s.g, s.n, d.gate_index[m], d.residual.data() + m * s.n,
                     out.data() + m * s.n);
  }
  return out;
}

// (d) The check can fail: each deliberate error is caught on random data.
TEST(BranchEnvelope, WrongResultsFail) {
  std::seed_seq seed{20261207};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpShape s{.m = 8, .n = 64, .k = 512, .g = 2};
  OpData d;
  Branch b;
  MakeRandomBranch(gen, s, 32, true, &d, &b);
  for (int64_t i = 0; i < s.m; ++i) d.gate_index[i] = static_cast<int32_t>(i % 2);
  auto env = ComputeOutEnvelope(WithBranch(d, b), {});
  ASSERT_TRUE(env.ok()) << env.status();
  const std::vector<uint16_t> right = ReferenceOp(d, b, Wrong::kNone);
  EXPECT_EQ(right, RunBranch(d, b, GemmPath::kExact));  // the reference is the exact path
  EXPECT_TRUE(CompareOut(*env, right, {}).pass);
  struct Case {
    const char* what;
    Wrong wrong;
  };
  for (const Case& c : {Case{"branch dropped", Wrong::kBranchDropped},
                        Case{"l_j not rounded to bf16", Wrong::kLNotRounded},
                        Case{"alpha applied to the branch", Wrong::kAlphaOnBranch}}) {
    const CompareReport rep = CompareOut(*env, ReferenceOp(d, b, c.wrong), {});
    std::printf("%s: %d of %d outside, max %d steps\n", c.what, static_cast<int>(rep.mismatches),
                static_cast<int>(rep.checked), static_cast<int>(rep.max_ulp));
    EXPECT_FALSE(rep.pass) << c.what;
  }
}

// (e) Selected rows equal the whole envelope's; validation as RunOp's.
TEST(BranchEnvelope, RowSubsetAndErrors) {
  std::seed_seq seed{20261208};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  const OpShape s{.m = 9, .n = 16, .k = 128, .g = 2};
  OpData d;
  Branch b;
  MakeRandomBranch(gen, s, 16, true, &d, &b);
  auto all = ComputeOutEnvelope(WithBranch(d, b), {});
  ASSERT_TRUE(all.ok()) << all.status();
  const std::vector<int64_t> rows = {7, 2, 7};
  auto env = ComputeOutEnvelope(WithBranch(d, b), rows);
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(env->m, 3);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t n = 0; n < s.n; ++n) {
      EXPECT_EQ(env->lo[i * s.n + n], all->lo[rows[i] * s.n + n]);
      EXPECT_EQ(env->hi[i * s.n + n], all->hi[rows[i] * s.n + n]);
      EXPECT_EQ(env->exact[i * s.n + n], all->exact[rows[i] * s.n + n]);
    }
  }
  EXPECT_TRUE(CompareOut(*env, RunBranch(d, b, GemmPath::kFastF32), rows).pass);
  struct Case {
    const char* what;
    std::function<void(Branch&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"lora_down alone", [&](Branch& x) { x.up.clear(); },
       "lora_up: expected given together with lora_down"},
      {"lora_up alone", [&](Branch& x) { x.down.clear(); },
       "lora_down: expected given together with lora_up"},
      {"r = 8", [&](Branch& x) { x.down.resize(8 * s.k); },
       "lora_down: expected r*k elements with r a multiple of 16 in 16..64"},
      {"NaN in lora_up", [&](Branch& x) { x.up[17] = 0x7FC0; },
       "lora_up: expected finite values, got nan at [1, 1]"},
  };
  for (const Case& c : cases) {
    Branch x = b;
    c.mutate(x);
    const auto bad = ComputeOutEnvelope(WithBranch(d, x), {});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_TRUE(absl::StrContains(bad.status().message(), c.message))
        << c.what << ": " << bad.status();
  }
}

// ---- SumSet (section 13.1 on given terms) ------------------------------------------------------

TermSet PointTerm(float v) {
  TermSet t;
  if (std::isnan(v)) {
    t.nan = true;
  } else if (std::isinf(v)) {
    (v > 0 ? t.pos_inf : t.neg_inf) = true;
  } else {
    t.finite = true;
    t.lo = t.hi = DyadicOf(v);
  }
  return t;
}

TEST(SumSet, Table) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  struct Case {
    const char* what;
    std::vector<float> terms;
    bool nan, neg_inf, pos_inf, finite;
    float lo, hi;
  };
  // clang-format off
  const Case cases[] = {
      {"exact case: the sum", {3.0f, -1.5f, 0.25f}, false, false, false, true, 1.75f, 1.75f},
      {"exact zero: both zeros", {1.0f, -1.0f}, false, false, false, true, -0.0f, 0.0f},
      {"no term: +-0", {0.0f, -0.0f}, false, false, false, true, -0.0f, 0.0f},
      {"general case, B < half an ulp: one value", {1.0f, 0x1p-30f},
       false, false, false, true, 1.0f, 1.0f},
      {"general case: S +- 2^-23 around 1 + 2^-24", {1.0f, 0x1p-24f, 0x1p-60f},
       false, false, false, true, 0x1.fffffep-1f, 0x1.000002p0f},
      {"subnormal terms: the exact case holds down to 2^-149", {0x1p-149f, 0x1p-148f},
       false, false, false, true, 0x1.8p-148f, 0x1.8p-148f},
      {"+Inf wins over finite terms", {inf, 1.0f}, false, false, true, false, 0, 0},
      {"+Inf and -Inf: NaN", {inf, -inf, 1.0f}, true, false, false, false, 0, 0},
      {"a NaN term: NaN", {nan, inf}, true, false, false, false, 0, 0},
      {"range rule: A = 2^127", {0x1p126f, 0x1p126f}, true, true, true, true, -FLT_MAX, FLT_MAX},
      {"A just below 2^127: exact", {0x1p126f, 0x1p125f},
       false, false, false, true, 0x1.8p126f, 0x1.8p126f},
  };
  // clang-format on
  for (const Case& c : cases) {
    std::vector<TermSet> terms;
    for (float v : c.terms) terms.push_back(PointTerm(v));
    const ValueSet v = SumSet(terms, static_cast<int64_t>(terms.size()));
    EXPECT_EQ(v.nan, c.nan) << c.what;
    EXPECT_EQ(v.neg_inf, c.neg_inf) << c.what;
    EXPECT_EQ(v.pos_inf, c.pos_inf) << c.what;
    ASSERT_EQ(v.finite, c.finite) << c.what;
    if (c.finite) {
      EXPECT_EQ(testing::ToBits(v.lo), testing::ToBits(c.lo)) << c.what << ": " << v.lo;
      EXPECT_EQ(testing::ToBits(v.hi), testing::ToBits(c.hi)) << c.what << ": " << v.hi;
    }
  }
  // Sets: a term that may be +Inf or finite next to finite ones may give +Inf or a finite sum;
  // next to a term that is only -Inf it gives NaN or -Inf.
  TermSet maybe_inf = PointTerm(2.0f);
  maybe_inf.pos_inf = true;
  ValueSet v = SumSet({maybe_inf, PointTerm(1.0f)}, 2);
  EXPECT_TRUE(v.pos_inf && v.finite && !v.nan && !v.neg_inf);
  EXPECT_EQ(v.lo, 3.0f);
  v = SumSet({maybe_inf, PointTerm(-inf)}, 2);
  EXPECT_TRUE(v.nan && v.neg_inf && !v.pos_inf && !v.finite);
}

// Backends' sums lie inside: products rounded to binary32 (subnormal ones too) and added in f32
// in two orders, and the exact sum rounded once, over products from 2^-210 to 2^112 (those
// below 2^-149 underflow in binary32).
TEST(SumSet, ContainsRoundedSumsOverWideRanges) {
  std::seed_seq seed{20261209};  // fixed: CI runs are reproducible
  TestRng gen(seed);
  int64_t one_value = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int t = absl::Uniform(absl::IntervalClosed, gen, 2, 70);
    const int center = absl::Uniform(absl::IntervalClosed, gen, -150, 50);
    const int spread = absl::Uniform(absl::IntervalClosed, gen, 0, 60);
    std::vector<TermSet> terms(t);
    std::vector<float> prod(t);
    ExactSum exact;
    for (int i = 0; i < t; ++i) {
      const float a =
          Bf16ToF32(testing::RandomBf16(gen, center / 2 - spread / 2, center / 2 + spread / 2));
      const float b =
          Bf16ToF32(testing::RandomBf16(gen, center / 2 - spread / 2, center / 2 + spread / 2));
      terms[i].finite = true;
      terms[i].lo = terms[i].hi = DyadicProduct(DyadicOf(a), DyadicOf(b));
      volatile float p = a * b;  // binary32 rounding, subnormals kept
      prod[i] = p;
      exact.AddProduct(a, b);
    }
    const ValueSet v = SumSet(terms, t);
    ASSERT_TRUE(v.finite && !v.nan && !v.neg_inf && !v.pos_inf) << trial;
    one_value += IsOneValue(v);
    volatile float fwd = 0.0f, bwd = 0.0f;
    for (int i = 0; i < t; ++i) fwd = fwd + prod[i];
    for (int i = t - 1; i >= 0; --i) bwd = bwd + prod[i];
    for (const float got : {static_cast<float>(fwd), static_cast<float>(bwd), exact.RoundToF32()}) {
      ASSERT_TRUE(got >= v.lo && got <= v.hi)
          << trial << ": " << got << " outside [" << v.lo << ", " << v.hi << "]";
    }
  }
  EXPECT_GT(one_value, 0);
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
