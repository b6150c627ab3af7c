// Tests of the problem generator (CPU only).

#include "harness/testbed/problem.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/quantize.h"
#include "gtest/gtest.h"
#include "harness/testbed/rows.h"

namespace h3::testbed {
namespace {

// The sweep's small shapes (harness/sweep/cases.h) and the MiniMax-H3 shape.
constexpr OpShape kSmallShape = {0, 512, 1024, kH3G};
constexpr OpShape kSmallShapeG3 = {0, 256, 2048, 3};

ProblemSpec Spec(OpShape shape, int64_t m, DataKind data, GatePattern gate) {
  ProblemSpec spec;
  spec.shape = shape;
  spec.shape.m = m;
  spec.data = data;
  spec.gate = gate;
  return spec;
}

std::string Name(const ProblemSpec& spec) {
  return absl::StrCat("n", spec.shape.n, "k", spec.shape.k, "g", spec.shape.g, "/m=", spec.shape.m,
                      "/", DataKindName(spec.data), "/", GatePatternName(spec.gate));
}

// The exact-data generator: every block scale is a power of two and every code reproduces its
// element, so the dequantized activations equal the bf16 data bit for bit.
TEST(Generators, ExactDataQuantizesExactly) {
  struct Row {
    OpShape shape;
    int64_t m;
  };
  const Row table[] = {{kSmallShape, 64}, {kSmallShapeG3, 17}, {OpShape{}, 3}};
  WeightCache weights(7);
  for (const Row& t : table) {
    const ProblemSpec spec = Spec(t.shape, t.m, DataKind::kExact, GatePattern::kAllValid);
    absl::StatusOr<Problem> p = GenerateProblem(spec, 7, AllRows(t.m), weights, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    const int64_t k = t.shape.k;
    std::vector<uint8_t> q(t.m * k / 2), sf(t.m * k / 16);
    QuantizeRows(p->attn_out, t.m, k, p->act_global_scale, absl::MakeSpan(q), absl::MakeSpan(sf));
    for (int64_t i = 0; i < t.m * k; ++i) {
      const float sfd = E4M3ToF32(sf[i / 16]);
      int exp = 0;
      ASSERT_TRUE(sfd == 0.f || std::frexp(sfd, &exp) == 0.5f) << Name(spec) << " scale " << sfd;
      const uint8_t code = (q[i / 2] >> (4 * (i % 2))) & 0xF;
      // Dequantized: code * sfd / act_gs, exact (powers of two).
      const float deq = E2M1ToF32(code) * sfd / p->act_global_scale;
      ASSERT_EQ(F32ToBf16(deq), p->attn_out[i]) << Name(spec) << " element " << i;
    }
  }
}

// The emulator's envelope proves the accumulation exact on exact data: bit-exact comparison.
TEST(Generators, ExactDataEnvelopeIsExact) {
  const ProblemSpec table[] = {
      Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kMixedInvalid),
      Spec(OpShape{}, 2, DataKind::kExact, GatePattern::kAllValid),
      // The exact shapes of kernels/out_proj_test.cc.
      Spec({0, 256, 512, 9}, 200, DataKind::kExact, GatePattern::kAllValid),
      Spec({0, 384, 1024, 9}, 129, DataKind::kExact, GatePattern::kAllValid),
      Spec({0, 256, 768, 3}, 387, DataKind::kExact, GatePattern::kAllValid),
  };
  WeightCache weights(3);
  for (const ProblemSpec& spec : table) {
    absl::StatusOr<Problem> p = GenerateProblem(spec, 3, AllRows(spec.shape.m), weights, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(InputsOf(*p), {});
    ASSERT_TRUE(env.ok()) << env.status();
    EXPECT_TRUE(std::all_of(env->exact.begin(), env->exact.end(), [](uint8_t e) { return e; }))
        << Name(spec);
  }
}

// Rows are a pure function of (seed, row): a subset equals those rows of the full problem.
TEST(Generators, RowsAreDeterministic) {
  const DataKind kinds[] = {DataKind::kExact, DataKind::kGaussian, DataKind::kHeavyTail,
                            DataKind::kSpecial, DataKind::kSaturate};
  WeightCache weights(11);
  for (DataKind kind : kinds) {
    const ProblemSpec spec = Spec(kSmallShape, 300, kind, GatePattern::kPaddingRuns);
    absl::StatusOr<Problem> full = GenerateProblem(spec, 11, AllRows(300), weights, 2);
    const std::vector<int64_t> rows = {0, 5, 128, 299};
    absl::StatusOr<Problem> sub = GenerateProblem(spec, 11, rows, weights, 1);
    ASSERT_TRUE(full.ok() && sub.ok());
    const int64_t k = spec.shape.k, n = spec.shape.n;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_TRUE(std::equal(sub->attn_out.begin() + i * k, sub->attn_out.begin() + (i + 1) * k,
                             full->attn_out.begin() + rows[i] * k))
          << DataKindName(kind) << " row " << rows[i];
      EXPECT_TRUE(std::equal(sub->residual.begin() + i * n, sub->residual.begin() + (i + 1) * n,
                             full->residual.begin() + rows[i] * n));
      EXPECT_EQ(sub->gate_index[i], full->gate_index[rows[i]]);
    }
    EXPECT_EQ(sub->gate, full->gate);
  }
}

// Calibrated data never saturates a block scale; kSaturate does; kSpecial has NaN scales.
TEST(Generators, ScalesSaturateOnlyWhenAsked) {
  struct Row {
    DataKind kind;
    bool want_448;
  };
  const Row table[] = {
      {DataKind::kGaussian, false}, {DataKind::kHeavyTail, false}, {DataKind::kSaturate, true}};
  WeightCache weights(5);
  for (const Row& t : table) {
    const ProblemSpec spec = Spec(kSmallShape, 64, t.kind, GatePattern::kAllValid);
    absl::StatusOr<Problem> p = GenerateProblem(spec, 5, AllRows(64), weights, 2);
    ASSERT_TRUE(p.ok());
    std::vector<uint8_t> q(64 * 512), sf(64 * 64);
    QuantizeRows(p->attn_out, 64, 1024, p->act_global_scale, absl::MakeSpan(q), absl::MakeSpan(sf));
    const bool has_448 = std::count(sf.begin(), sf.end(), 0x7E) > 0;
    EXPECT_EQ(has_448, t.want_448) << DataKindName(t.kind);
  }
}

TEST(Generators, SpecialDataHasSpecialValues) {
  WeightCache weights(9);
  const ProblemSpec spec = Spec(kSmallShape, 64, DataKind::kSpecial, GatePattern::kAllValid);
  absl::StatusOr<Problem> p = GenerateProblem(spec, 9, AllRows(64), weights, 2);
  ASSERT_TRUE(p.ok());
  struct Want {
    const char* what;
    bool (*match)(uint16_t);
  };
  const Want table[] = {
      {"NaN", [](uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; }},
      {"+Inf", [](uint16_t b) { return b == 0x7F80; }},
      {"-Inf", [](uint16_t b) { return b == 0xFF80; }},
      {"-0", [](uint16_t b) { return b == 0x8000; }},
      {"subnormal", [](uint16_t b) { return (b & 0x7F80) == 0 && (b & 0x7F) != 0; }},
  };
  for (const Want& w : table) {
    EXPECT_TRUE(std::any_of(p->attn_out.begin(), p->attn_out.end(), w.match)) << w.what;
    EXPECT_TRUE(std::any_of(p->residual.begin(), p->residual.end(), w.match)) << w.what;
  }
}

TEST(Generators, GateIndexPatterns) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  struct Row {
    GatePattern pattern;
    std::set<int32_t> must_contain;  // besides valid indices
    bool all_valid;
  };
  const Row table[] = {
      {GatePattern::kAllValid, {}, true},
      {GatePattern::kPaddingRuns, {-1}, false},
      {GatePattern::kIndexG, {9}, false},
      {GatePattern::kIntMin, {kMin}, false},
      {GatePattern::kIntMax, {kMax}, false},
      {GatePattern::kMixedInvalid, {-1, 9, kMin, kMax}, false},
      {GatePattern::kOneRow, {8}, true},
  };
  for (const Row& t : table) {
    std::set<int32_t> seen;
    for (int64_t r = 0; r < 1000; ++r) seen.insert(GateIndexFor(t.pattern, 1, r, 1000, 9));
    for (int32_t v : t.must_contain) {
      EXPECT_TRUE(seen.count(v)) << GatePatternName(t.pattern) << v;
    }
    const bool all_valid =
        std::all_of(seen.begin(), seen.end(), [](int32_t g) { return g >= 0 && g < 9; });
    EXPECT_EQ(all_valid, t.all_valid) << GatePatternName(t.pattern);
    if (t.pattern == GatePattern::kOneRow) {
      EXPECT_EQ(seen.size(), 1u);
    }
  }
  // Trailing padding: the last M/16 rows are -1.
  EXPECT_EQ(GateIndexFor(GatePattern::kPaddingRuns, 1, 999, 1000, 9), -1);
}

// GenerateProblem refuses shapes and rows it cannot generate.
TEST(Generators, RejectsBadShapesAndRows) {
  WeightCache weights(1);
  struct Row {
    OpShape shape;
    std::vector<int64_t> rows;
  };
  const Row table[] = {
      {{4, 128, 100, 9}, {0}},     // k not a multiple of 16
      {{4, 0, 256, 9}, {0}},       // n = 0
      {{4, 128, 256, 0}, {0}},     // g = 0
      {{4, 128, 256, 9}, {4}},     // row past M
      {{4, 128, 256, 9}, {2, 1}},  // not ascending
  };
  for (const Row& t : table) {
    const ProblemSpec spec = Spec(t.shape, t.shape.m, DataKind::kGaussian, GatePattern::kAllValid);
    EXPECT_EQ(GenerateProblem(spec, 1, t.rows, weights, 1).status().code(),
              absl::StatusCode::kInvalidArgument)
        << Name(spec);
  }
}

// The all-rows overload equals the explicit one.
TEST(Generators, AllRowsOverload) {
  const ProblemSpec spec = Spec(kSmallShapeG3, 33, DataKind::kHeavyTail, GatePattern::kIndexG);
  WeightCache weights(21);
  absl::StatusOr<Problem> a = GenerateProblem(spec, 21);
  absl::StatusOr<Problem> b = GenerateProblem(spec, 21, AllRows(33), weights, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->rows, AllRows(33));
  EXPECT_EQ(a->case_m, 33);
  EXPECT_EQ(a->attn_out, b->attn_out);
  EXPECT_EQ(a->residual, b->residual);
  EXPECT_EQ(a->gate_index, b->gate_index);
  EXPECT_EQ(a->weight->q, b->weight->q);
  EXPECT_EQ(a->weight->sf, b->weight->sf);
}

}  // namespace
}  // namespace h3::testbed
