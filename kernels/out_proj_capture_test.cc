// The very first call of the op in a process, made while its stream is being captured into a
// CUDA graph (global capture mode: any unsafe call in any thread would invalidate it). The op
// must neither allocate synchronously nor synchronize. Its own binary, so the call really is the
// process's first; replays equal an eager run and the emulator, bit for bit.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

TEST(OutProjCaptureTest, FirstCallInTheProcessIsCaptured) {
  H3_SKIP_WITHOUT_GPU();
  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, 512, 1024, 9};
  spec.data = testbed::DataKind::kExact;
  spec.gate = testbed::GatePattern::kMixedInvalid;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, /*seed=*/31);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  for (bool caller_workspace : {false, true}) {
    testbed::RunOptions options;
    options.caller_workspace = caller_workspace;
    options.check = CheckMode::kAsync;
    const OutProjArgs args = testbed::ArgsFor(*d, options);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    const absl::Status st = MinimaxH3Nvfp4OutProj(args, s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess) << "the capture was invalidated";
    ASSERT_TRUE(st.ok()) << st;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    std::vector<uint16_t> first;
    for (int rep = 0; rep < 3; ++rep) {
      ASSERT_TRUE(testbed::Poison(*d).ok());
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      absl::StatusOr<std::vector<uint16_t>> out = d->out.Download();
      ASSERT_TRUE(out.ok()) << out.status();
      if (rep == 0) first = *out;
      EXPECT_EQ(*out, first) << "replay " << rep;
    }
    // The replayed result against an eager call and the emulator.
    const std::vector<int64_t> rows = testbed::AllRows(spec.shape.m);
    absl::StatusOr<testbed::RunResult> got = testbed::DownloadResult(*d, options, rows);
    ASSERT_TRUE(got.ok()) << got.status();
    testbed::JudgeOptions judge;
    judge.exact_data = true;
    judge.compare_act = caller_workspace;
    absl::StatusOr<testbed::Comparison> c = testbed::CompareWithEmulator(*p, rows, *got, judge);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->pass) << c->Summary();
    ASSERT_TRUE(testbed::Poison(*d).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(args, s, CheckMode::kChecked).ok());
    absl::StatusOr<std::vector<uint16_t>> eager = d->out.Download();
    ASSERT_TRUE(eager.ok()) << eager.status();
    EXPECT_EQ(*eager, first) << "replay differs from the eager call";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}

}  // namespace
}  // namespace h3
