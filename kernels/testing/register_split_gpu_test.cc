// The launch-time register check on the GPU: a kernel whose setmaxnreg split the launch's
// registers cannot cover is refused before it runs (it would hang), through the host API.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/testing/register_split_kernels.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using ::testing::HasSubstr;

TEST(RegisterSplitGpu, AKernelThatWouldHangIsRefused) {
  H3_SKIP_WITHOUT_GPU();
  testbed::ProblemSpec spec;
  spec.shape = OpShape{130, 256, 512, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 5);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(testbed::Poison(*d).ok());
  const absl::StatusOr<std::vector<uint16_t>> before = d->out.Download();
  ASSERT_TRUE(before.ok());
  const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked,
                                               kernels::OverSplitKernels());
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("128 x 48 + 256 x 232 = 65536"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("refusing to launch"));
  const absl::StatusOr<std::vector<uint16_t>> after = d->out.Download();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(*after == *before) << "out written by a refused call";
  // The product's kernels in the same context still run.
  EXPECT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked).ok());
}

}  // namespace
}  // namespace h3
