// The quality options (contract sections 12, 13) on the operand path the C ABI takes
// (core/operands.def rows act_smooth, lora_down, lora_up -> OpInputsOf -> RunOp): the same bits
// as RunOpQuality given the options directly; the table's refusals with nothing written; and the
// checker's envelope with the options (act_smooth and the branch).

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "core/operands.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/op_operands.h"
#include "emulator/quality.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::h3::testing::OpData;

// The options' host arrays, r = down.size() / k.
struct Options {
  std::vector<float> smooth;
  std::vector<uint16_t> down, up;
  QualityInputs Spans() const { return {smooth, down, up}; }
};

Options MakeOptions(TestRng& gen, const OpShape& s, bool smooth, int64_t r) {
  Options o;
  if (smooth) {
    o.smooth.resize(s.k);
    for (float& v : o.smooth) v = std::ldexp(absl::Uniform(gen, 0.25f, 1.0f), absl::Uniform(gen, -3, 4));
  }
  o.down.resize(r * s.k);
  o.up.resize(s.n * r);
  for (auto& v : o.down) v = testing::RandomBf16(gen, -8, 0);
  for (auto& v : o.up) v = testing::RandomBf16(gen, -8, 0);
  return o;
}

struct Written {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
  explicit Written(const OpShape& s)
      : out(s.m * s.n, 0xABCD), act_q(s.m * s.k / 2, 0xEE), act_sf(s.m * s.k / 16, 0xEE) {}
  OpOutputs Spans() { return {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)}; }
};

// The operands as the C ABI hands them to the emulator (host memory, each with its shape).
OperandSet OperandsOf(const OpData& d, const Options& o, Written& w) {
  const OpShape& s = d.shape;
  OperandSet ops;
  ops.attn_out = Operand::Of(d.attn_out.data(), {s.m, s.k});
  ops.o_weight_q = Operand::Of(d.w_q.data(), {s.n, s.k / 2});
  ops.o_weight_sf = Operand::Of(d.w_sf.data(), {static_cast<int64_t>(d.w_sf.size())});
  ops.o_weight_global_scale_value = d.w_gs;
  ops.act_global_scale = Operand::Of(&d.act_gs, {1});
  ops.gate = Operand::Of(d.gate.data(), {s.g, s.n});
  ops.gate_index = Operand::Of(d.gate_index.data(), {s.m});
  ops.residual = Operand::Of(d.residual.data(), {s.m, s.n});
  ops.out = Operand::Of(w.out.data(), {s.m, s.n});
  ops.act_q = Operand::Of(w.act_q.data(), {s.m, s.k / 2});
  ops.act_sf = Operand::Of(w.act_sf.data(), {s.m, s.k / 16});
  const int64_t r = static_cast<int64_t>(o.down.size()) / s.k;
  if (!o.smooth.empty()) {
    ops.act_smooth = Operand::Of(o.smooth.data(), {static_cast<int64_t>(o.smooth.size())});
  }
  if (!o.down.empty()) ops.lora_down = Operand::Of(o.down.data(), {r, s.k});
  if (!o.up.empty()) ops.lora_up = Operand::Of(o.up.data(), {s.n, r});
  return ops;
}

OpData RandomData(TestRng& gen, const OpShape& s) {
  OpData d = testing::MakeExactOpData(gen, s);
  for (auto& x : d.attn_out) x = testing::RandomBf16(gen, -6, 6);  // not exact: sums round
  d.act_gs = 37.5f;
  return d;
}

TEST(QualityOperands, OperandPathEqualsRunOpQuality) {
  std::seed_seq seed{30};
  TestRng gen(seed);
  const OpShape s{.m = 45, .n = 48, .k = 192, .g = 3};
  const OpData d = RandomData(gen, s);
  struct Config {
    const char* what;
    bool smooth;
    int64_t r;
  };
  for (const Config& c : {Config{"off", false, 0}, Config{"smooth", true, 0},
                          Config{"r = 16", false, 16}, Config{"r = 32", false, 32},
                          Config{"r = 64", false, 64}, Config{"smooth + r = 32", true, 32}}) {
    const Options o = MakeOptions(gen, s, c.smooth, c.r);
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      SCOPED_TRACE(std::string(c.what) + (path == GemmPath::kExact ? " exact" : " fast"));
      Written want(s), via_table(s), via_rows(s), seed_bits(s);
      ASSERT_TRUE(RunOpQuality(d.Inputs(), o.Spans(), want.Spans(), path).ok());
      ASSERT_TRUE(RunOpOnOperands(OperandsOf(d, o, via_table), path).ok());
      EXPECT_EQ(via_table.out, want.out);
      EXPECT_EQ(via_table.act_q, want.act_q);
      EXPECT_EQ(via_table.act_sf, want.act_sf);
      // OpInputs' own rows are the options too (RunOp), and the same span in both is one.
      OpInputs in = d.Inputs();
      in.act_smooth = o.smooth;
      in.lora_down = o.down;
      in.lora_up = o.up;
      ASSERT_TRUE(RunOp(in, via_rows.Spans(), path).ok());
      EXPECT_EQ(via_rows.out, want.out);
      Written both(s);
      ASSERT_TRUE(RunOpQuality(in, o.Spans(), both.Spans(), path).ok());
      EXPECT_EQ(both.out, want.out);
      // Options off: the seed's bits.
      ASSERT_TRUE(RunOp(d.Inputs(), seed_bits.Spans(), path).ok());
      if (c.r == 0 && !c.smooth) {
        EXPECT_EQ(via_table.out, seed_bits.out);
      } else {
        EXPECT_NE(via_table.out, seed_bits.out);  // the options do something
      }
    }
  }
}

TEST(QualityOperands, RefusalsWriteNothing) {
  std::seed_seq seed{31};
  TestRng gen(seed);
  const OpShape s{.m = 4, .n = 16, .k = 64, .g = 2};
  const OpData d = RandomData(gen, s);
  const Options good = MakeOptions(gen, s, true, 16);
  struct Case {
    const char* what;
    std::function<void(Options&)> mutate;
    std::function<void(OperandSet&)> reshape;  // after the operands are built
    const char* message;
  };
  const auto none = [](OperandSet&) {};
  const std::vector<Case> cases = {
      {"act_smooth NaN", [](Options& o) { o.smooth[5] = std::nanf(""); }, none,
       "act_smooth: expected finite factors, got nan at [5]"},
      {"act_smooth +Inf",
       [](Options& o) { o.smooth[0] = std::numeric_limits<float>::infinity(); }, none,
       "act_smooth: expected finite factors, got inf at [0]"},
      {"lora_up NaN", [](Options& o) { o.up[3] = 0x7FC0; }, none,
       "lora_up: expected finite values, got nan at [0, 3]"},
      {"lora_down alone", [](Options& o) { o.up.clear(); }, none,
       "lora_up must be given together with lora_down"},
      {"lora_up alone", [](Options& o) { o.down.clear(); }, none,
       "lora_down must be given together with lora_up"},
      {"r = 32 in lora_up, 16 in lora_down", [](Options&) {},
       [](OperandSet& ops) { ops.lora_up.shape[1] = 32; },
       "lora_up must have shape [N, R] = [16, 16]"},
      {"r = 8", [](Options& o) { o.down.resize(8 * 64); o.up.resize(16 * 8); }, none,
       "lora_down must be [R, K] with R a multiple of 16 in 16..64"},
      {"act_smooth [K/2]", [](Options& o) { o.smooth.resize(32); }, none,
       "act_smooth must have shape [K] = [64]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Options o = good;
    c.mutate(o);
    Written w(s);
    OperandSet ops = OperandsOf(d, o, w);
    c.reshape(ops);
    const absl::Status st = RunOpOnOperands(ops, GemmPath::kFastF32);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), c.message)) << st.message();
    for (uint16_t v : w.out) ASSERT_EQ(v, 0xABCD);
    for (uint8_t v : w.act_q) ASSERT_EQ(v, 0xEE);
    for (uint8_t v : w.act_sf) ASSERT_EQ(v, 0xEE);
  }
  // Two different arrays for one option: which one is meant is not guessed.
  OpInputs in = d.Inputs();
  in.act_smooth = good.smooth;
  const std::vector<float> other(s.k, 1.0f);
  Written w(s);
  const absl::Status st = RunOpQuality(in, {other, {}, {}}, w.Spans());
  EXPECT_TRUE(absl::StrContains(st.message(), "act_smooth: expected given once")) << st;
  for (uint16_t v : w.out) ASSERT_EQ(v, 0xABCD);
}

// The envelope with act_smooth is the seed's on x' (section 12 is exact): it holds the op's
// output on both paths, a single value on exact data; with the branch (section 13.2) it holds
// both paths' output on the operand path too (emulator/check_test.cc tests it in depth).
TEST(QualityOperands, EnvelopeCoversSmoothingAndTheBranch) {
  std::seed_seq seed{32};
  TestRng gen(seed);
  const OpShape s{.m = 21, .n = 32, .k = 128, .g = 3};
  for (const bool exact_data : {true, false}) {
    SCOPED_TRACE(exact_data ? "exact data" : "random data");
    OpData d = exact_data ? testing::MakeExactOpData(gen, s) : RandomData(gen, s);
    Options o;
    // Powers of two keep exact data exact (x' = x * 2^e, exact in bf16 here).
    o.smooth.resize(s.k);
    for (float& v : o.smooth) v = std::ldexp(1.0f, absl::Uniform(gen, -1, 2));
    OpInputs in = d.Inputs();
    in.act_smooth = o.smooth;
    absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(in, {});
    ASSERT_TRUE(env.ok()) << env.status();
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      Written w(s);
      ASSERT_TRUE(RunOpQuality(d.Inputs(), o.Spans(), w.Spans(), path).ok());
      const CompareReport rep = CompareOut(*env, w.out, {});
      EXPECT_TRUE(rep.pass) << rep.first_mismatch;
      if (exact_data) {
        EXPECT_EQ(env->lo, w.out);
        EXPECT_EQ(env->hi, w.out);
      }
    }
    // The seed's envelope is not this one: the smoothing reached the checker.
    absl::StatusOr<OutEnvelope> plain = ComputeOutEnvelope(d.Inputs(), {});
    ASSERT_TRUE(plain.ok());
    EXPECT_NE(plain->lo, env->lo);
    // Selected rows agree with the whole envelope's.
    absl::StatusOr<OutEnvelope> rows = ComputeOutEnvelope(in, std::vector<int64_t>{20, 3});
    ASSERT_TRUE(rows.ok());
    for (int64_t j = 0; j < s.n; ++j) {
      EXPECT_EQ(rows->lo[j], env->lo[20 * s.n + j]);
      EXPECT_EQ(rows->hi[s.n + j], env->hi[3 * s.n + j]);
    }
  }
  OpData d = testing::MakeExactOpData(gen, s);
  const Options o = MakeOptions(gen, s, false, 16);
  OpInputs in = d.Inputs();
  in.lora_down = o.down;
  in.lora_up = o.up;
  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(in, {});
  ASSERT_TRUE(env.ok()) << env.status();
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    Written w(s);
    ASSERT_TRUE(RunOpOnOperands(OperandsOf(d, o, w), path).ok());
    const CompareReport rep = CompareOut(*env, w.out, {});
    EXPECT_TRUE(rep.pass) << rep.first_mismatch;
  }
}

}  // namespace
}  // namespace h3
