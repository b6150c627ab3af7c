// Tests of the sweep's case table, runner and report (CPU only). The generators, the row sampler
// and the mismatch report are the testbed's (harness/testbed/*_test.cc).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "emulator/op.h"
#include "gtest/gtest.h"
#include "harness/sweep/cases.h"
#include "harness/sweep/report.h"
#include "harness/sweep/runner.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/problem.h"

namespace h3::sweep {
namespace {

using testbed::DataKind;
using testbed::GatePattern;

CaseSpec Spec(OpShape shape, int64_t m, DataKind data, GatePattern gate) {
  CaseSpec c;
  c.problem.shape = shape;
  c.problem.shape.m = m;
  c.problem.data = data;
  c.problem.gate = gate;
  c.name = CaseName(c);
  return c;
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
    if (c.problem.shape.n == kH3N && c.problem.shape.k == kH3K) h3_ms.insert(c.problem.shape.m);
    small |= c.problem.shape.n != kH3N;
    kinds.insert(c.problem.data);
    patterns.insert(c.problem.gate);
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

// A device backend that runs the emulator and then breaks the result in a chosen way: the runner
// must notice each break and name the case coordinates.
class FakeDevice : public DeviceBackend {
 public:
  enum class Break { kNone, kOutBit, kActQ, kActSf, kUnsupported };
  explicit FakeDevice(Break b) : break_(b) {}
  std::string Description() const override { return "fake"; }
  absl::StatusOr<testbed::RunResult> Run(const testbed::Problem& p, bool out_is_residual,
                                         bool caller_workspace,
                                         absl::Span<const int64_t> rows) override {
    if (break_ == Break::kUnsupported) return absl::InvalidArgumentError("k: unsupported");
    const OpShape& s = p.shape;
    std::vector<uint16_t> out(p.residual);
    std::vector<uint8_t> q(s.m * s.k / 2), sf(s.m * s.k / 16);
    OpInputs in = testbed::InputsOf(p);
    if (out_is_residual) in.residual = out;
    absl::Status st =
        RunOp(in, OpOutputs{absl::MakeSpan(out), absl::MakeSpan(q), absl::MakeSpan(sf)});
    if (!st.ok()) return st;
    testbed::RunResult r;
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
  // act_smooth (contract section 12): the reference's act_q/act_sf are those of x'.
  auto smoothed = [](DataKind data, testbed::SmoothPattern smooth) {
    CaseSpec c = Spec(kSmallShape, 40, data, GatePattern::kMixedInvalid);
    c.problem.smooth = smooth;
    c.name = CaseName(c);
    return c;
  };
  const Row table[] = {
      {Spec(kSmallShape, 40, DataKind::kExact, GatePattern::kAllValid), B::kNone, Verdict::kPass,
       ""},
      {smoothed(DataKind::kExact, testbed::SmoothPattern::kPow2Block), B::kNone, Verdict::kPass,
       ""},
      {smoothed(DataKind::kGaussian, testbed::SmoothPattern::kLogNormal), B::kNone,
       Verdict::kPass, ""},
      {smoothed(DataKind::kSpecial, testbed::SmoothPattern::kExtreme), B::kNone, Verdict::kPass,
       ""},
      {smoothed(DataKind::kGaussian, testbed::SmoothPattern::kLogNormal), B::kActQ,
       Verdict::kFail, "act_q[m=0,byte=0]"},
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
  testbed::WeightCache weights(13);
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
