// Tests of the comparison against the emulator and of the mismatch report (CPU only).

#include "harness/testbed/compare.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "emulator/check.h"
#include "emulator/op.h"
#include "gtest/gtest.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"

namespace h3::testbed {
namespace {

JudgeOptions Options(bool exact_data, bool compare_act) {
  JudgeOptions o;
  o.exact_data = exact_data;
  o.compare_act = compare_act;
  return o;
}

TEST(Judge, FirstMismatchUsesCaseRows) {
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
  for (const Row& t : table) {
    Comparison c;
    JudgeOut(env, t.got, rows, "", c);
    EXPECT_EQ(c.first_mismatch, t.want);
    EXPECT_EQ(c.pass, t.want.empty());
    EXPECT_EQ(c.checked, 4);
  }
  Comparison c;
  JudgeBytes("act_q", std::vector<uint8_t>{1, 2, 3, 4}, std::vector<uint8_t>{1, 2, 3, 5}, 2, rows,
             "", c);
  EXPECT_EQ(c.first_mismatch, "act_q[m=300000,byte=1]: got 0x05 want 0x04");
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->row, 300000);
  EXPECT_EQ(c.first->col, 1);
  EXPECT_EQ(c.first->got, 0x05u);
  EXPECT_EQ(c.first->want_lo, 0x04u);
}

// Counts add up over several comparisons; the first mismatch (with its label) is kept; the
// emulator's max ulp is reported.
TEST(Judge, FoldsSeveralComparisons) {
  OutEnvelope env;
  env.m = 1;
  env.n = 3;
  env.lo = {0x3F80, 0x3F80, 0x3F80};
  env.hi = {0x3F80, 0x3F80, 0x3F80};
  const std::vector<int64_t> rows = {42};
  Comparison c;
  JudgeOut(env, std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F80}, rows, "first: ", c);
  JudgeOut(env, std::vector<uint16_t>{0x3F80, 0x3F83, 0x3F81}, rows, "second: ", c);
  JudgeOut(env, std::vector<uint16_t>{0x3F70, 0x3F80, 0x3F80}, rows, "third: ", c);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.checked, 9);
  EXPECT_EQ(c.mismatches, 3);
  EXPECT_EQ(c.max_ulp, 16);
  EXPECT_EQ(c.first_mismatch, "second: out[m=42,n=1]: got 0x3F83 want 0x3F80");
  EXPECT_NE(c.Summary().find("3 of 9 mismatch, max ulp 16"), std::string::npos) << c.Summary();
  // A size problem is the emulator's to describe.
  Comparison short_got;
  JudgeOut(env, std::vector<uint16_t>{0x3F80}, rows, "", short_got);
  EXPECT_FALSE(short_got.pass);
  EXPECT_FALSE(short_got.first.has_value());
  EXPECT_FALSE(short_got.first_mismatch.empty());
}

// The emulator's own run on a sub-problem passes; a broken bit is named by the case's row.
TEST(CompareWithEmulator, EmulatorRunPassesAndBreaksAreLocated) {
  ProblemSpec spec;
  spec.shape = {300, 256, 512, 9};
  spec.data = DataKind::kExact;
  spec.gate = GatePattern::kMixedInvalid;
  WeightCache weights(5);
  const std::vector<int64_t> case_rows = {0, 129, 299};
  absl::StatusOr<Problem> p = GenerateProblem(spec, 5, case_rows, weights, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  const OpShape& s = p->shape;
  RunResult got;
  got.out.resize(s.m * s.n);
  got.act_q.resize(s.m * s.k / 2);
  got.act_sf.resize(s.m * s.k / 16);
  ASSERT_TRUE(RunOp(InputsOf(*p), OpOutputs{absl::MakeSpan(got.out), absl::MakeSpan(got.act_q),
                                            absl::MakeSpan(got.act_sf)})
                  .ok());
  const std::vector<int64_t> rows = AllRows(s.m);
  absl::StatusOr<Comparison> c = CompareWithEmulator(*p, rows, got, Options(true, true));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->pass) << c->Summary();
  EXPECT_EQ(c->out_check, "bit-exact");
  EXPECT_EQ(c->act_check, "bit-exact");
  EXPECT_EQ(c->checked, s.m * s.n + s.m * s.k / 2 + s.m * s.k / 16);

  RunResult broken = got;
  broken.out[2 * s.n + 17] ^= 1;
  broken.act_sf[1 * s.k / 16 + 3] ^= 1;
  c = CompareWithEmulator(*p, rows, broken, {});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->pass);
  EXPECT_EQ(c->mismatches, 2);
  ASSERT_TRUE(c->first.has_value());
  EXPECT_EQ(c->first->tensor, "out");
  EXPECT_EQ(c->first->row, 299);
  EXPECT_EQ(c->first->col, 17);
  EXPECT_EQ(c->first_mismatch.rfind("out[m=299,n=17]: got 0x", 0), 0u) << c->first_mismatch;

  // Without act (internal workspace) only out is judged.
  RunResult out_only;
  out_only.out = got.out;
  c = CompareWithEmulator(*p, rows, out_only, Options(false, false));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pass) << c->Summary();
  EXPECT_EQ(c->act_check, "n/a (internal workspace)");
  // Asked for act it did not return: a failure, not a pass.
  c = CompareWithEmulator(*p, rows, out_only, {});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->pass);

  // A subset of the problem's rows: the reference's rows are those.
  const std::vector<int64_t> last = {2};
  RunResult last_row;
  last_row.out.assign(got.out.begin() + 2 * s.n, got.out.end());
  c = CompareWithEmulator(*p, last, last_row, Options(false, false));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pass) << c->Summary();
  EXPECT_EQ(c->checked, s.n);
  EXPECT_FALSE(CompareWithEmulator(*p, std::vector<int64_t>{3}, last_row, {}).ok());
}

// Exact data whose envelope is not a single value: the generator broke its promise.
TEST(CompareWithEmulator, ExactDataMustBeExact) {
  ProblemSpec spec;
  spec.shape = {8, 512, 1024, 9};
  spec.data = DataKind::kHeavyTail;
  absl::StatusOr<Problem> p = GenerateProblem(spec, 3);
  ASSERT_TRUE(p.ok());
  const OpShape& s = p->shape;
  RunResult got;
  got.out.resize(s.m * s.n);
  ASSERT_TRUE(RunOp(InputsOf(*p), OpOutputs{absl::MakeSpan(got.out), {}, {}}).ok());
  absl::StatusOr<Comparison> c = CompareWithEmulator(*p, AllRows(s.m), got, Options(false, false));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pass) << c->Summary();
  EXPECT_EQ(c->out_check, "bound");
  c = CompareWithEmulator(*p, AllRows(s.m), got, Options(true, false));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->pass);
  EXPECT_NE(c->first_mismatch.find("cannot prove exact"), std::string::npos) << c->first_mismatch;
}

// No rows (M = 0): nothing to compare, and nothing may come back.
TEST(CompareWithEmulator, NoRows) {
  ProblemSpec spec;
  spec.shape = {0, 256, 512, 9};
  absl::StatusOr<Problem> p = GenerateProblem(spec, 1);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Comparison> c = CompareWithEmulator(*p, {}, RunResult{}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->pass);
  EXPECT_EQ(c->out_check, "none");
  EXPECT_EQ(c->act_check, "none");
  RunResult some;
  some.out = {0};
  c = CompareWithEmulator(*p, {}, some, {});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->pass);
}

}  // namespace
}  // namespace h3::testbed
