// Tests of the sweep's case table, generators and row sampler (CPU only).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/quantize.h"
#include "gtest/gtest.h"
#include "harness/sweep/cases.h"
#include "harness/sweep/generators.h"
#include "harness/sweep/report.h"
#include "harness/sweep/runner.h"

namespace h3::sweep {
namespace {

CaseSpec Spec(OpShape shape, int64_t m, DataKind data, GatePattern gate) {
  CaseSpec c;
  c.shape = shape;
  c.shape.m = m;
  c.data = data;
  c.gate = gate;
  c.name = CaseName(c);
  return c;
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
    const CaseSpec spec = Spec(t.shape, t.m, DataKind::kExact, GatePattern::kAllValid);
    absl::StatusOr<Problem> p = GenerateProblem(spec, 7, AllRows(t.m), weights, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    const int64_t k = t.shape.k;
    std::vector<uint8_t> q(t.m * k / 2), sf(t.m * k / 16);
    QuantizeRows(p->attn_out, t.m, k, p->act_global_scale, absl::MakeSpan(q), absl::MakeSpan(sf));
    for (int64_t i = 0; i < t.m * k; ++i) {
      const float sfd = E4M3ToF32(sf[i / 16]);
      int exp = 0;
      ASSERT_TRUE(sfd == 0.f || std::frexp(sfd, &exp) == 0.5f) << spec.name << " scale " << sfd;
      const uint8_t code = (q[i / 2] >> (4 * (i % 2))) & 0xF;
      // Dequantized: code * sfd / act_gs, exact (powers of two).
      const float deq = E2M1ToF32(code) * sfd / p->act_global_scale;
      ASSERT_EQ(F32ToBf16(deq), p->attn_out[i]) << spec.name << " element " << i;
    }
  }
}

// The emulator's envelope proves the accumulation exact on exact data: bit-exact comparison.
TEST(Generators, ExactDataEnvelopeIsExact) {
  const CaseSpec table[] = {
      Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kMixedInvalid),
      Spec(OpShape{}, 2, DataKind::kExact, GatePattern::kAllValid),
  };
  WeightCache weights(3);
  for (const CaseSpec& spec : table) {
    absl::StatusOr<Problem> p = GenerateProblem(spec, 3, AllRows(spec.shape.m), weights, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(InputsOf(*p), {});
    ASSERT_TRUE(env.ok()) << env.status();
    EXPECT_TRUE(std::all_of(env->exact.begin(), env->exact.end(), [](uint8_t e) { return e; }))
        << spec.name;
  }
}

// Rows are a pure function of (seed, row): a subset equals those rows of the full problem.
TEST(Generators, RowsAreDeterministic) {
  const DataKind kinds[] = {DataKind::kExact, DataKind::kGaussian, DataKind::kHeavyTail,
                            DataKind::kSpecial, DataKind::kSaturate};
  WeightCache weights(11);
  for (DataKind kind : kinds) {
    const CaseSpec spec = Spec(kSmallShape, 300, kind, GatePattern::kPaddingRuns);
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
    const CaseSpec spec = Spec(kSmallShape, 64, t.kind, GatePattern::kAllValid);
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
  const CaseSpec spec = Spec(kSmallShape, 64, DataKind::kSpecial, GatePattern::kAllValid);
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

TEST(Sampler, AlwaysHasFirstLastAndTileEdges) {
  struct Row {
    int64_t m, count;
  };
  const Row table[] = {{1, 24},     {24, 24},     {25, 24},   {129, 8},
                       {75856, 24}, {300000, 24}, {300000, 2}};
  for (const Row& t : table) {
    const std::vector<int64_t> rows = SampleRows(t.m, t.count, 42);
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.front(), 0) << t.m;
    EXPECT_EQ(rows.back(), t.m - 1) << t.m;
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    EXPECT_EQ(std::set<int64_t>(rows.begin(), rows.end()).size(), rows.size());
    if (t.count >= t.m) {
      EXPECT_EQ(static_cast<int64_t>(rows.size()), t.m);
    } else {
      EXPECT_GE(static_cast<int64_t>(rows.size()), t.count);
      for (int64_t edge : {kTileM - 1, kTileM, kTileM + 1}) {
        if (edge < t.m) {
          EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), edge));
        }
      }
    }
  }
  EXPECT_TRUE(SampleRows(0, 24, 1).empty());
}

TEST(Cases, DefaultTableCoversTheIssue) {
  const std::vector<CaseSpec> cases = DefaultCases();
  std::set<std::string> names;
  std::set<int64_t> h3_ms;
  std::set<DataKind> kinds;
  std::set<GatePattern> patterns;
  bool inplace = false, nows = false, small = false;
  for (const CaseSpec& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate " << c.name;
    EXPECT_EQ(c.name, CaseName(c));
    if (c.shape.n == kH3N && c.shape.k == kH3K) h3_ms.insert(c.shape.m);
    small |= c.shape.n != kH3N;
    kinds.insert(c.data);
    patterns.insert(c.gate);
    inplace |= c.out_is_residual;
    nows |= !c.caller_workspace;
  }
  for (int64_t m : {int64_t{0}, int64_t{1}, kTileM - 1, kTileM, kTileM + 1,
                    kWrapTilesM * kTileM + 3, kTokens720p5s}) {
    EXPECT_TRUE(h3_ms.count(m)) << "M = " << m;
  }
  EXPECT_GT(kTokens720p5s, 65536);
  EXPECT_GT(*h3_ms.rbegin() * kH3K, int64_t{1} << 31);
  EXPECT_EQ(kinds.size(), 5u);
  EXPECT_EQ(patterns.size(), 7u);
  EXPECT_TRUE(inplace && nows && small);
}

TEST(Cases, Filter) {
  struct Row {
    std::string filter;
    bool ok;
    bool nonempty;
  };
  const Row table[] = {{"", true, true},
                       {"^h3/m=129/", true, true},
                       {"exact", true, true},
                       {"no-such-case", true, false},
                       {"(", false, false}};
  for (const Row& t : table) {
    absl::StatusOr<std::vector<CaseSpec>> r = FilterCases(DefaultCases(), t.filter);
    EXPECT_EQ(r.ok(), t.ok) << t.filter;
    if (r.ok()) {
      EXPECT_EQ(!r->empty(), t.nonempty) << t.filter;
    }
  }
  EXPECT_EQ(ExtraMCases({5, 77}).size(), 4u);
}

TEST(Runner, FirstMismatchUsesCaseRows) {
  OutEnvelope env;
  env.m = 2;
  env.n = 2;
  env.lo = {0x3F80, 0x3F80, 0x4000, 0x7FFF};
  env.hi = {0x3F80, 0x3F82, 0x4000, 0x7FFF};
  env.exact = {1, 0, 1, 1};
  const std::vector<int64_t> rows = {7, 300000};
  struct Row {
    std::vector<uint16_t> got;
    std::string want;
  };
  const Row table[] = {
      {{0x3F80, 0x3F81, 0x4000, 0x7FFF}, ""},
      {{0x3F80, 0x3F83, 0x4000, 0x7FFF}, "out[m=7,n=1]: got 0x3F83 want [0x3F80,0x3F82]"},
      {{0x3F80, 0x3F80, 0x4000, 0x7FC0}, "out[m=300000,n=1]: got 0x7FC0 want 0x7FFF"},
  };
  for (const Row& t : table) EXPECT_EQ(FirstOutMismatch(env, t.got, rows), t.want);
  EXPECT_EQ(FirstByteMismatch("act_q", {1, 2, 3, 4}, {1, 2, 3, 5}, 2, rows),
            "act_q[m=300000,byte=1]: got 0x05 want 0x04");
}

// A device backend that runs the emulator and then breaks the result in a chosen way: the runner
// must notice each break and name the case coordinates.
class FakeDevice : public DeviceBackend {
 public:
  enum class Break { kNone, kOutBit, kActQ, kActSf, kUnsupported };
  explicit FakeDevice(Break b) : break_(b) {}
  std::string Description() const override { return "fake"; }
  absl::StatusOr<DeviceResult> Run(const Problem& p, bool out_is_residual, bool caller_workspace,
                                   absl::Span<const int64_t> rows) override {
    if (break_ == Break::kUnsupported) return absl::InvalidArgumentError("k: unsupported");
    const OpShape& s = p.shape;
    std::vector<uint16_t> out(p.residual);
    std::vector<uint8_t> q(s.m * s.k / 2), sf(s.m * s.k / 16);
    OpInputs in = InputsOf(p);
    if (out_is_residual) in.residual = out;
    absl::Status st =
        RunOp(in, OpOutputs{absl::MakeSpan(out), absl::MakeSpan(q), absl::MakeSpan(sf)});
    if (!st.ok()) return st;
    DeviceResult r;
    for (int64_t row : rows) {
      r.out.insert(r.out.end(), out.begin() + row * s.n, out.begin() + (row + 1) * s.n);
      if (caller_workspace) {
        r.act_q.insert(r.act_q.end(), q.begin() + row * s.k / 2, q.begin() + (row + 1) * s.k / 2);
        r.act_sf.insert(r.act_sf.end(), sf.begin() + row * s.k / 16,
                        sf.begin() + (row + 1) * s.k / 16);
      }
    }
    const size_t last = rows.size() - 1;
    if (break_ == Break::kOutBit) r.out[last * s.n + 3] ^= 1;
    if (break_ == Break::kActQ) r.act_q[0] ^= 0x10;
    if (break_ == Break::kActSf) r.act_sf[last * s.k / 16 + 5] ^= 0x01;
    return r;
  }

 private:
  Break break_;
};

TEST(Runner, DetectsEveryKindOfBreak) {
  using B = FakeDevice::Break;
  struct Row {
    CaseSpec spec;
    B brk;
    Verdict want;
    std::string want_in_message;
  };
  CaseSpec inplace = Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kMixedInvalid);
  inplace.out_is_residual = true;
  inplace.name = CaseName(inplace);
  CaseSpec nows = Spec(kSmallShape, 40, DataKind::kGaussian, GatePattern::kAllValid);
  nows.caller_workspace = false;
  nows.name = CaseName(nows);
  const Row table[] = {
      {Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kAllValid), B::kNone, Verdict::kPass,
       ""},
      {inplace, B::kNone, Verdict::kPass, ""},
      {nows, B::kNone, Verdict::kPass, ""},
      {Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kAllValid), B::kOutBit, Verdict::kFail,
       "out[m=39,n=3]"},
      {Spec(kSmallShape, 40, DataKind::kGaussian, GatePattern::kAllValid), B::kActQ, Verdict::kFail,
       "act_q[m=0,byte=0]"},
      {Spec(kSmallShape, 40, DataKind::kSpecial, GatePattern::kAllValid), B::kActSf, Verdict::kFail,
       "act_sf[m=39,byte=5]"},
      {Spec(kSmallShape, 40, DataKind::kGaussian, GatePattern::kAllValid), B::kUnsupported,
       Verdict::kSkip, "unsupported"},
      {Spec(OpShape{}, 1, DataKind::kExact, GatePattern::kAllValid), B::kUnsupported,
       Verdict::kError, "unsupported"},
  };
  WeightCache weights(13);
  RunnerOptions options;
  options.threads = 2;
  for (const Row& t : table) {
    FakeDevice device(t.brk);
    const CaseResult r = RunCase(t.spec, &device, weights, options, [](absl::string_view) {});
    EXPECT_EQ(r.verdict, t.want) << t.spec.name << ": " << r.first_mismatch;
    EXPECT_NE(r.first_mismatch.find(t.want_in_message), std::string::npos)
        << t.spec.name << ": " << r.first_mismatch;
    if (t.want == Verdict::kPass) {
      EXPECT_TRUE(r.first_mismatch.empty()) << r.first_mismatch;
    }
  }
}

TEST(Report, CsvAndJsonQuote) {
  CaseResult r;
  r.name = "h3/m=1/exact/valid/out/ws";
  r.verdict = Verdict::kFail;
  r.first_mismatch = "out[m=0,n=1]: got 0x0001 want \"x\", y";
  const std::string csv = ToCsv({r});
  EXPECT_NE(csv.find("\"out[m=0,n=1]: got 0x0001 want \"\"x\"\", y\""), std::string::npos);
  const std::string json = ToJson({r}, "emulator");
  EXPECT_NE(json.find("\\\"x\\\""), std::string::npos);
  EXPECT_NE(json.find("\"pass\": false"), std::string::npos);
  EXPECT_FALSE(WriteReport("/tmp/x.txt", {r}, "emulator").ok());
}

}  // namespace
}  // namespace h3::sweep
