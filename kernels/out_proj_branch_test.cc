// The low-rank branch on the GPU (contract section 13): the branch instances against the
// emulator - act_q/act_sf bit-exact, out inside section 13.2's envelope (emulator/check_branch.h),
// bit-exact on exact data with zero factors - for r = 16 / 32 / 48 / 64, with and without
// act_smooth, on every config and both sm_90 emulations; two runs are bitwise identical. (The
// host API's refusals of a malformed branch: out_proj_options_test.cc, no GPU needed.)

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
                                    SmoothPattern smooth, int rank, uint64_t seed) {
  testbed::ProblemSpec spec;
  spec.shape = OpShape{m, n, k, 9};
  spec.data = data;
  spec.gate = testbed::GatePattern::kMixedInvalid;  // out-of-range rows copy residual
  spec.smooth = smooth;
  spec.lora_rank = rank;
  return testbed::GenerateProblem(spec, seed);
}

// act_q/act_sf bit-exact, out inside the envelope (asserted bit-exact where `exact`).
void ExpectMatchesEmulator(const Problem& p, const DeviceProblem& d, const RunOptions& o,
                           bool exact) {
  out_proj_test::ExpectMatchesEmulator(p, d, o, exact, /*max_rows=*/512);
}

struct BranchCase {
  const char* name;
  int64_t m, n, k;
  DataKind data;
  SmoothPattern smooth;
  int rank;
};

class OutProjBranchTest
    : public ::testing::TestWithParam<std::tuple<BranchCase, Sm90Emulation, OutProjTile>> {};

TEST_P(OutProjBranchTest, MatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const BranchCase& c = std::get<0>(GetParam());
  if (std::get<1>(GetParam()) == Sm90Emulation::kFast &&
      std::get<2>(GetParam()) != OutProjTile::kAuto) {
    GTEST_SKIP() << "the fast sm_90 build has one tile";
  }
  absl::StatusOr<Problem> p = MakeProblem(c.m, c.n, c.k, c.data, c.smooth, c.rank, 777 + c.m);
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
  ExpectMatchesEmulator(*p, *d, o, c.data == DataKind::kExact);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OutProjBranchTest,
    ::testing::Combine(
        ::testing::Values(
            // Exact data, zero factors: v = o exactly, so out stays bit-exact.
            BranchCase{"exact_zero_r32", 300, 256, 1024, DataKind::kExact, SmoothPattern::kNone,
                       32},
            BranchCase{"gauss_r16", 129, 384, 1024, DataKind::kGaussian, SmoothPattern::kNone, 16},
            // K = 256: one chunk, so each unit writes its group's l itself (no counter).
            BranchCase{"gauss_one_chunk_r16", 77, 256, 256, DataKind::kGaussian,
                       SmoothPattern::kLogNormal, 16},
            BranchCase{"gauss_r32", 1000, 384, 2048, DataKind::kGaussian, SmoothPattern::kNone, 32},
            BranchCase{"heavy_smooth_r32", 259, 256, 7168, DataKind::kHeavyTail,
                       SmoothPattern::kLogNormal, 32},
            BranchCase{"gauss_r48", 257, 640, 2304, DataKind::kGaussian, SmoothPattern::kNone, 48},
            BranchCase{"special_extreme_r64", 130, 256, 512, DataKind::kSpecial,
                       SmoothPattern::kExtreme, 64},
            // More tiles than SMs: CTAs run a second tile (the back m-tiles, quantized as the
            // front in blocks of its size).
            BranchCase{"gauss_two_tiles_per_cta_r32", 8955, 384, 512, DataKind::kGaussian,
                       SmoothPattern::kLogNormal, 32}),
        ::testing::Values(Sm90Emulation::kFaithful, Sm90Emulation::kFast),
        ::testing::ValuesIn(out_proj_test::EveryTile())),
    [](const ::testing::TestParamInfo<std::tuple<BranchCase, Sm90Emulation, OutProjTile>>& i) {
      return std::string(std::get<0>(i.param).name) +
             out_proj_test::ParamSuffix(std::get<1>(i.param), std::get<2>(i.param));
    });

// The partial sums are written and summed in a fixed order (chunk order, whichever unit of a
// group arrives last and sums them): two runs give the same bits. Between them another problem of
// the same size runs, so the stream-ordered pool hands the second run a workspace holding other
// partials: a slot read before it is written would show.
TEST(OutProjBranchTest, Deterministic) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p =
      MakeProblem(4099, 512, 3584, DataKind::kGaussian, SmoothPattern::kLogNormal, 32, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<int64_t> rows = testbed::SampleRows(p->shape.m, 1 << 20, 1);
  RunOptions o;
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
  absl::StatusOr<testbed::RunResult> first = testbed::DownloadResult(*d, o, rows);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Problem> other =
      MakeProblem(4099, 512, 3584, DataKind::kHeavyTail, SmoothPattern::kExtreme, 32, 4);
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<DeviceProblem> d2 = testbed::UploadProblem(testbed::InputsOf(*other));
  ASSERT_TRUE(d2.ok()) << d2.status();
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d2, o), nullptr, CheckMode::kChecked).ok());
  ASSERT_TRUE(testbed::Poison(*d).ok());
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
  absl::StatusOr<testbed::RunResult> second = testbed::DownloadResult(*d, o, rows);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->out, second->out);
}

// The branch's words of a flag buffer (ready_flags.h: per-group counters, per-m-tile l-ready
// counts, placed by M) shared by calls of other M and by a plain call: after a first call clears
// the garbage, calls without the memset leave the buffer all zero and each gives the contract's
// result, on every config and both sm_90 emulations.
TEST(OutProjBranchTest, ReusedFlagsLeftZero) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p1 =
      MakeProblem(300, 256, 1024, DataKind::kGaussian, SmoothPattern::kLogNormal, 32, 41);
  absl::StatusOr<Problem> p2 =
      MakeProblem(33, 256, 1024, DataKind::kGaussian, SmoothPattern::kNone, 16, 42);
  absl::StatusOr<Problem> p3 =
      MakeProblem(150, 256, 1024, DataKind::kExact, SmoothPattern::kNone, 0, 43);  // plain
  ASSERT_TRUE(p1.ok() && p2.ok() && p3.ok());
  std::vector<absl::StatusOr<DeviceProblem>> d;
  for (const Problem* p : {&*p1, &*p2, &*p3}) {
    d.push_back(testbed::UploadProblem(testbed::InputsOf(*p)));
  }
  for (const auto& x : d) ASSERT_TRUE(x.ok()) << x.status();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  testbed::DeviceBuffer<uint8_t> flags;
  ASSERT_TRUE(flags.Alloc(OutProjReadyFlagBytes(p1->shape.m)).ok());
  for (Sm90Emulation emu : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    for (OutProjTile tile : out_proj_test::EveryTile()) {
      if (emu == Sm90Emulation::kFast && tile != OutProjTile::kAuto) continue;  // one tile
      SCOPED_TRACE(out_proj_test::ParamSuffix(emu, tile));
      ASSERT_TRUE(flags.Fill(0xA5).ok());
      for (auto& x : d) ASSERT_TRUE(testbed::Poison(*x).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the fills ran on the legacy stream
      RunOptions o;
      o.sm90_emulation = emu;
      o.tile = tile;
      std::vector<OutProjArgs> a;
      for (const auto& x : d) {
        a.push_back(testbed::ArgsFor(*x, o));
        a.back().ready_flags = Operand::Of(flags.get(), {static_cast<int64_t>(flags.count())});
      }
      ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a[0], s).ok());  // zeroes the garbage
      for (OutProjArgs& x : a) x.ready_flags_zeroed = true;
      for (int rep = 0; rep < 2; ++rep) {
        for (const OutProjArgs& x : {a[1], a[2], a[0]}) {
          ASSERT_TRUE(MinimaxH3Nvfp4OutProj(x, s).ok());
        }
      }
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      absl::StatusOr<std::vector<uint8_t>> host = flags.Download();
      ASSERT_TRUE(host.ok()) << host.status();
      EXPECT_EQ(*host, std::vector<uint8_t>(flags.count(), 0)) << "after the calls";
      ExpectMatchesEmulator(*p1, *d[0], o, false);
      ExpectMatchesEmulator(*p2, *d[1], o, false);
      ExpectMatchesEmulator(*p3, *d[2], o, true);
    }
  }
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace h3
