// OutProjTile::kAuto on a GPU with a tuning cache for this device (kernels/tuning/tune_cache.h): the
// process's first call, captured into a CUDA graph, reads the cache without invalidating the
// capture and runs the config the cache names for M's bucket; other shapes and the fast sm_90
// build fall back to the heuristic. Its own binary: the cache is read once per process.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/tuning/tune_cache.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

TEST(TuneCacheGpuTest, FirstCapturedKAutoCallFollowsTheCache) {
  H3_SKIP_WITHOUT_GPU();
  int dev = 0, driver = 0;
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceProperties(&prop, dev), cudaSuccess);
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  const TuneDevice device{std::string(prop.name, strnlen(prop.name, sizeof(prop.name))), prop.major,
                          prop.minor, prop.multiProcessorCount, driver};
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/h3_tune_gpu_test.json";
  std::remove(path.c_str());
  // M = 300's bucket names the skewed config: neither the default nor the heuristic's choice.
  ASSERT_TRUE(RecordTuneWinners(path, device, 512, 1024, TuneVariant(prop.major, false),
                                {{1, "128x128"}, {300, "128x256"}, {100000, "128x128"}})
                  .ok());
  ASSERT_EQ(setenv(kTuneCacheEnv, path.c_str(), 1), 0);

  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, 512, 1024, 9};
  spec.data = testbed::DataKind::kExact;
  spec.gate = testbed::GatePattern::kMixedInvalid;
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, /*seed=*/37);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<testbed::DeviceProblem> d = testbed::UploadProblem(testbed::InputsOf(*p));
  ASSERT_TRUE(d.ok()) << d.status();
  testbed::RunOptions options;
  options.check = CheckMode::kAsync;
  OutProjArgs args = testbed::ArgsFor(*d, options);
  ASSERT_EQ(args.tile, OutProjTile::kAuto);

  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const absl::Status st = MinimaxH3Nvfp4OutProj(args, s);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess) << "the capture was invalidated";
  ASSERT_TRUE(st.ok()) << st;
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_TRUE(testbed::Poison(*d).ok());
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const std::vector<int64_t> rows = testbed::AllRows(spec.shape.m);
  absl::StatusOr<testbed::RunResult> got = testbed::DownloadResult(*d, options, rows);
  ASSERT_TRUE(got.ok()) << got.status();
  testbed::JudgeOptions judge;
  judge.exact_data = true;
  absl::StatusOr<testbed::Comparison> c = testbed::CompareWithEmulator(*p, rows, *got, judge);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->pass) << c->Summary();
  // The replay equals an explicit call of the skewed config, bit for bit.
  absl::StatusOr<std::vector<uint16_t>> replayed = d->out.Download();
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  OutProjArgs skewed = args;
  skewed.tile = OutProjTile::k128x256;
  ASSERT_TRUE(testbed::Poison(*d).ok());
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(skewed, s, CheckMode::kChecked).ok());
  absl::StatusOr<std::vector<uint16_t>> eager = d->out.Download();
  ASSERT_TRUE(eager.ok()) << eager.status();
  EXPECT_EQ(*eager, *replayed);

  // What kAuto resolves to, per M bucket, shape and build.
  struct Row {
    int64_t m, n, k;
    Sm90Emulation emulation;
    OutProjTile want;
  };
  const std::vector<Row> table = {
      {300, 512, 1024, Sm90Emulation::kFaithful, OutProjTile::k128x256},
      {1, 512, 1024, Sm90Emulation::kFaithful, OutProjTile::k128x128},
      {17, 512, 1024, Sm90Emulation::kFaithful, OutProjTile::k128x128},  // nearer 1 than 300
      {18, 512, 1024, Sm90Emulation::kFaithful, OutProjTile::k128x256},
      {75856, 512, 1024, Sm90Emulation::kFaithful, OutProjTile::k128x128},
      {300, 1024, 1024, Sm90Emulation::kFaithful, TuneHeuristic(prop.major, 300)},  // not tuned
      {300, 512, 1024, Sm90Emulation::kFast,  // sm_90: another variant; SM12x: the same one
       prop.major == 9 ? TuneHeuristic(9, 300) : OutProjTile::k128x256},
  };
  for (const Row& r : table) {
    OutProjArgs a = args;
    a.sm90_emulation = r.emulation;
    absl::StatusOr<OutProjTile> t = internal::ResolvedOutProjTile(a, OpDims{r.m, r.n, r.k, 9});
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(FindOutProjTile(*t)->name, std::string(FindOutProjTile(r.want)->name))
        << "m=" << r.m << " n=" << r.n << " k=" << r.k;
  }
  {
    OutProjArgs a = args;
    a.tile = OutProjTile::k128x128;  // an explicit config is never overridden
    EXPECT_EQ(*internal::ResolvedOutProjTile(a, OpDims{300, 512, 1024, 9}), OutProjTile::k128x128);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace h3
