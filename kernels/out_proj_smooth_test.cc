// act_smooth on the GPU (contract section 12): the smoothed instances against the emulator -
// act_q/act_sf bit-exact, out inside the envelope (bit-exact on exact data) - on every config and
// both sm_90 emulations; factors of 1 reproduce the seed's op bit for bit; kChecked refuses a
// non-finite factor and writes nothing.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_test_util.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using testbed::DataKind;
using testbed::DeviceProblem;
using testbed::Problem;
using testbed::RunOptions;
using testbed::SmoothPattern;

absl::StatusOr<Problem> MakeProblem(int64_t m, int64_t n, int64_t k, DataKind data,
                                    SmoothPattern smooth, uint64_t seed) {
  testbed::ProblemSpec spec;
  spec.shape = OpShape{m, n, k, 9};
  spec.data = data;
  spec.gate = testbed::GatePattern::kMixedInvalid;  // out-of-range rows copy residual
  spec.smooth = smooth;
  return testbed::GenerateProblem(spec, seed);
}

// act_q/act_sf bit-exact, out inside the envelope (asserted bit-exact where `exact`).
void ExpectMatchesEmulator(const Problem& p, const DeviceProblem& d, const RunOptions& o,
                           bool exact) {
  out_proj_test::ExpectMatchesEmulator(p, d, o, exact, /*max_rows=*/512);
}

struct SmoothCase {
  const char* name;
  int64_t m, n, k;
  DataKind data;
  SmoothPattern smooth;
};

class OutProjSmoothTest
    : public ::testing::TestWithParam<std::tuple<SmoothCase, Sm90Emulation, OutProjTile>> {};

TEST_P(OutProjSmoothTest, MatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const SmoothCase& c = std::get<0>(GetParam());
  if (std::get<1>(GetParam()) == Sm90Emulation::kFast &&
      std::get<2>(GetParam()) != OutProjTile::kAuto) {
    GTEST_SKIP() << "the fast sm_90 build has one tile";
  }
  absl::StatusOr<Problem> p = MakeProblem(c.m, c.n, c.k, c.data, c.smooth, 4321 + c.m);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  RunOptions o;
  o.caller_workspace = true;
  o.sm90_emulation = std::get<1>(GetParam());
  o.tile = std::get<2>(GetParam());
  const absl::Status st =
      MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesEmulator(*p, *d, o,
                        c.data == DataKind::kExact && c.smooth == SmoothPattern::kPow2Block);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OutProjSmoothTest,
    ::testing::Combine(
        ::testing::Values(
            SmoothCase{"exact_pow2", 300, 256, 1024, DataKind::kExact, SmoothPattern::kPow2Block},
            SmoothCase{"gauss_lognormal", 1000, 384, 2048, DataKind::kGaussian,
                       SmoothPattern::kLogNormal},
            SmoothCase{"heavy_lognormal", 259, 256, 7168, DataKind::kHeavyTail,
                       SmoothPattern::kLogNormal},
            SmoothCase{"gauss_extreme", 257, 640, 2304, DataKind::kGaussian,
                       SmoothPattern::kExtreme},
            SmoothCase{"special_extreme", 130, 256, 512, DataKind::kSpecial,
                       SmoothPattern::kExtreme},
            // More tiles than SMs: CTAs run a second tile.
            SmoothCase{"gauss_two_tiles_per_cta", 8955, 384, 512, DataKind::kGaussian,
                       SmoothPattern::kLogNormal}),
        ::testing::Values(Sm90Emulation::kFaithful, Sm90Emulation::kFast),
        ::testing::ValuesIn(out_proj_test::EveryTile())),
    [](const ::testing::TestParamInfo<std::tuple<SmoothCase, Sm90Emulation, OutProjTile>>& i) {
      return std::string(std::get<0>(i.param).name) +
             out_proj_test::ParamSuffix(std::get<1>(i.param), std::get<2>(i.param));
    });

// Factors of exactly 1: x' = attn_out (NaN payloads aside, which section 3 encodes alike), so
// the smoothed instance's act_q, act_sf and out equal the plain instance's bit for bit.
TEST(OutProjSmoothTest, FactorsOfOneAreTheSeedsOp) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p =
      MakeProblem(515, 512, 1024, DataKind::kSpecial, SmoothPattern::kNone, 99);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<float> ones(static_cast<size_t>(p->shape.k), 1.0f);
  testbed::DeviceBuffer<float> s;
  ASSERT_TRUE(s.Upload(ones).ok());
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    RunOptions o;
    o.caller_workspace = true;
    o.sm90_emulation = e;
    const std::vector<int64_t> rows = testbed::SampleRows(p->shape.m, 1 << 20, 1);
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
    absl::StatusOr<testbed::RunResult> plain = testbed::DownloadResult(*d, o, rows);
    ASSERT_TRUE(plain.ok()) << plain.status();
    ASSERT_TRUE(testbed::Poison(*d).ok());
    OutProjArgs a = testbed::ArgsFor(*d, o);
    a.act_smooth = Operand::Of(s.get(), {p->shape.k});
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
    absl::StatusOr<testbed::RunResult> smoothed = testbed::DownloadResult(*d, o, rows);
    ASSERT_TRUE(smoothed.ok()) << smoothed.status();
    EXPECT_EQ(plain->act_q, smoothed->act_q);
    EXPECT_EQ(plain->act_sf, smoothed->act_sf);
    EXPECT_EQ(plain->out, smoothed->out);
  }
}

// kChecked reads the factors back: a NaN or Inf is refused by name before the launch, and out,
// act_q and act_sf keep their poison. kAsync does not read them (contract section 9's rule for
// device-resident scalars): the launch runs.
TEST(OutProjSmoothTest, CheckedRefusesNonFiniteFactors) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p =
      MakeProblem(130, 256, 512, DataKind::kGaussian, SmoothPattern::kLogNormal, 5);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::infinity()}) {
    Problem q = *p;
    q.act_smooth[300] = bad;
    absl::StatusOr<DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(q));
    ASSERT_TRUE(d.ok()) << d.status();
    RunOptions o;
    o.caller_workspace = true;
    const absl::Status st =
        MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "act_smooth: expected finite factors")) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "at [300]")) << st;
    absl::StatusOr<std::vector<uint16_t>> out = d->out.Download();
    absl::StatusOr<std::vector<uint8_t>> sf = d->act_sf.Download();
    ASSERT_TRUE(out.ok() && sf.ok());
    EXPECT_EQ(std::count(out->begin(), out->end(), uint16_t{0xFFFF}),
              static_cast<std::ptrdiff_t>(out->size()));
    EXPECT_EQ(std::count(sf->begin(), sf->end(), uint8_t{0xFF}),
              static_cast<std::ptrdiff_t>(sf->size()));
    EXPECT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr).ok());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

}  // namespace
}  // namespace h3
