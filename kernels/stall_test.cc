// Bounded waits on the GPU (kernels/stall.h): a kernel whose quantizers never publish must end,
// within its bound, in an error that names the wait. Its own binary: the trap loses the CUDA
// context for the rest of the process.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/stall.h"
#include "kernels/stall_test_kernels.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using ::testing::HasSubstr;

TEST(BoundedWaits, NeverPublishedFlagEndsInAnError) {
  H3_SKIP_WITHOUT_GPU();
  // Read once per process by the host API: set before its first call.
  ASSERT_EQ(setenv("MINIMAX_H3_NVFP4_WAIT_LIMIT_MS", "200", 1), 0);
  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, 640, 1024, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked,
                                               kernels::NeverPublishKernels());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("the kernel gave up waiting"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("(the load warp)"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("the ready flag of k-chunk"));
  // The load warp's bound is 0.2 s (x1); the rest is the launch, the report and the trap.
  EXPECT_LT(seconds, 3.0);
  const absl::Status again = OutProjStallStatus();
  EXPECT_THAT(std::string(again.message()), HasSubstr("the ready flag of k-chunk")) << again;
}

}  // namespace
}  // namespace h3
