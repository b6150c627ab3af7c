// The bench's timing-only kernels (timing_variants.h) on the GPU: act_q / act_sf as the product
// writes them, out never written (no epilogue) or as the variant defines it (the branch's
// halves), with every build and the configs each variant has.

#include "harness/bench/timing_variants.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/device/tiles.h"
#include "tools/cuda/gpu_test.h"

namespace h3::bench {
namespace {

template <typename T>
std::vector<T> Host(const testbed::DeviceBuffer<T>& buffer) {
  absl::StatusOr<std::vector<T>> host = buffer.Download();
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? *std::move(host) : std::vector<T>();
}

TEST(TimingVariantsTest, WriteActNotOut) {
  H3_SKIP_WITHOUT_GPU();
  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, 640, 1024, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 12);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    for (const OutProjTileInfo& tile : kOutProjTiles) {
      SCOPED_TRACE(::testing::Message() << "emulation " << static_cast<int>(e) << " tile "
                                        << tile.name);
      testbed::RunOptions o;
      o.sm90_emulation = e;
      o.tile = tile.tile;
      ASSERT_TRUE(testbed::Poison(*d).ok());
      ASSERT_TRUE(
          MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
      const std::vector<uint8_t> q = Host(d->act_q), sf = Host(d->act_sf);
      ASSERT_TRUE(testbed::Poison(*d).ok());
      const std::vector<uint16_t> poisoned = Host(d->out);
      for (TimingVariant v : {TimingVariant::kNoEpilogue, TimingVariant::kOneGroupMma}) {
        const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d, o), nullptr,
                                                     CheckMode::kChecked, TimingKernels(v));
        ASSERT_TRUE(st.ok()) << st;
        EXPECT_EQ(Host(d->act_q), q) << "variant " << static_cast<int>(v);
        EXPECT_EQ(Host(d->act_sf), sf) << "variant " << static_cast<int>(v);
        EXPECT_EQ(Host(d->out), poisoned) << "out written by timing variant " << static_cast<int>(v);
      }
    }
  }
}

// The branch's halves (default config, both emulations): act as the product's branch instance
// writes it; without the up-projection, out is the smoothed op's to the bit (the same codes and
// MMAs, no l added); the others run to completion (their out is not defined).
TEST(TimingVariantsTest, BranchHalves) {
  H3_SKIP_WITHOUT_GPU();
  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, 640, 1024, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  spec.smooth = testbed::SmoothPattern::kLogNormal;
  spec.lora_rank = 32;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 13);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    SCOPED_TRACE(::testing::Message() << "emulation " << static_cast<int>(e));
    testbed::RunOptions o;
    o.sm90_emulation = e;
    o.tile = kOutProjTileDefault;  // the branch variants have this tile alone (kAuto may not)
    const OutProjArgs branch = testbed::ArgsFor(*d, o);
    OutProjArgs smoothed = branch;
    smoothed.lora_down = Operand();
    smoothed.lora_up = Operand();
    ASSERT_TRUE(testbed::Poison(*d).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(branch, nullptr, CheckMode::kChecked).ok());
    const std::vector<uint8_t> q = Host(d->act_q), sf = Host(d->act_sf);
    ASSERT_TRUE(testbed::Poison(*d).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(smoothed, nullptr, CheckMode::kChecked).ok());
    const std::vector<uint16_t> smoothed_out = Host(d->out);
    for (TimingVariant v : {TimingVariant::kBranchNoUp, TimingVariant::kBranchNoDown,
                            TimingVariant::kBranchNeither}) {
      ASSERT_TRUE(testbed::Poison(*d).ok());
      const absl::Status st =
          internal::RunOutProj(branch, nullptr, CheckMode::kChecked, TimingKernels(v));
      ASSERT_TRUE(st.ok()) << st;
      EXPECT_EQ(Host(d->act_q), q) << "variant " << static_cast<int>(v);
      EXPECT_EQ(Host(d->act_sf), sf) << "variant " << static_cast<int>(v);
      if (v == TimingVariant::kBranchNoUp) {
        EXPECT_EQ(Host(d->out), smoothed_out) << "out without the up-projection";
      }
    }
  }
}

}  // namespace
}  // namespace h3::bench
