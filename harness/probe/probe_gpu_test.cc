// The probe on the current GPU: every check passes (on an H200 against the sm_90a exact
// emulation of the block-scaled MMA; on an SM120 device against the hardware). Skipped without a
// GPU.

#include <gtest/gtest.h>

#include <cstdio>

#include "absl/status/statusor.h"
#include "harness/probe/probe.h"
#include "harness/probe/probe_device.h"
#include "tools/cuda/gpu_test.h"

namespace h3::probe {
namespace {

TEST(ProbeGpuTest, PassesOnThisDevice) {
  H3_SKIP_WITHOUT_GPU();
  const ProbeCases cases = BuildCases();
  absl::StatusOr<DeviceResults> results = RunOnCurrentDevice(cases);
  ASSERT_TRUE(results.ok()) << results.status();
  const Report report = Judge(cases, *results);
  std::fputs(FormatReport(report).c_str(), stdout);
  EXPECT_TRUE(report.layout_ok);
  EXPECT_TRUE(report.precision_ok);
  EXPECT_TRUE(report.conversion_ok);
}

}  // namespace
}  // namespace h3::probe
