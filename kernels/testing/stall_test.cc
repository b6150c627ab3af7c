// Bounded waits on the GPU (kernels/device/stall.h): for every kind of wait of the fused kernel, a
// testonly kernel (stall_test_kernels.h) withholds what it waits for; the call must end within
// the wait's bound in an error that names the wait, and the report must name the CTA, thread,
// ring stage / phase and tile. Each case runs in a child process of its own (a death test,
// re-executed: the trap loses the CUDA context for the rest of the process).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/device/stall.h"
#include "kernels/testing/stall_test_kernels.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using kernels::WaitKind;

constexpr int kWaitLimitMs = 200;
constexpr int kN = 640;  // M = 300: 3 m-tiles; N in 3 tiles of 256 or 5 of 128: 9 or 15 CTAs

// What case `name` (kernels::kStallCases) must report: the wait, the thread range [lo, hi) of the
// role that waits (warp 0 lane 0: the load warp; 128..255: the leading consumer group, 256..383
// the trailing one), a and b (stall.h, per kind). The CTA is the one of the case's tile (CTA b
// runs tile b: a grid of one CTA per tile); never_publish: any CTA, on its own tile.
struct Expected {
  const char* name;
  WaitKind kind;
  uint32_t thread_lo, thread_hi;
  int a, b;
  int mt = -1, nt = -1;  // the reported tile where it is not the case's (-1: the case's)
};

constexpr Expected kExpected[] = {
    {"never_publish", WaitKind::kChunkReady, 0, 1, 0, 0},   // k-chunk 0
    {"fill_a", WaitKind::kFullA, 128, 256, 0, 0},           // A stage 0, phase 0
    {"fill_a_lockstep", WaitKind::kFullA, 128, 384, 2, 1},  // ring stage 2, phase 1
    {"fill_b0", WaitKind::kFullB, 128, 256, 0, 0},          // B slot 0, phase 0
    {"fill_b1_last", WaitKind::kFullB, 256, 384, 4, 0},     // B slot 3 + 1, phase 0
    {"gate", WaitKind::kSkewGate, 256, 384, 0, 0},          // gate 0, phase 0
    {"release_a", WaitKind::kSlotA, 0, 1, 1, 0},            // A stage 1, parity 0
    {"release_b0", WaitKind::kSlotB, 0, 1, 0, 1},           // B ring 0, stage 1
    {"fill_a_128x128", WaitKind::kFullA, 128, 384, 2, 1},   // ring stage 2, phase 1
    {"release_a_128x128", WaitKind::kSlotA, 0, 1, 1, 0},    // ring stage 1, parity 0
    {"branch_l", WaitKind::kBranchReady, 0, 1, 0, 16},      // 0 of m-tile 1's 16 groups' l
    {"t_fill_staged", WaitKind::kTFull, 32, 128, 0, 0},     // parity 0, the CTA's tile 0
    // parity 0 (tile 0's drain), for the CTA's tile 1, (2, 4)
    {"t_drain_staged", WaitKind::kTEmpty, 128, 384, 0, 1, 2, 4},
};

int CaseIndex(const std::string& name) {
  for (int i = 0; i < kernels::kStallCaseCount; ++i) {
    if (name == kernels::kStallCases[i].name) return i;
  }
  return -1;
}

// The death-test child: runs the case, checks its report, prints it (stdout: the log keeps it)
// and exits 0 when it is the expected one, 1 with what differs (stderr) otherwise.
[[noreturn]] void RunCaseAndExit(const Expected& e) {
  std::string failures;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) failures += what + "; ";
  };
  const int i = CaseIndex(e.name);
  const kernels::StallCase& c = kernels::kStallCases[i];
  testbed::ProblemSpec spec;
  spec.shape = OpShape{300, kN, 1024, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  const bool branch = c.what == kernels::Handoff::kBranchPublish;
  if (branch) spec.lora_rank = 32;  // the case's kernels are the branch's
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 3);
  absl::StatusOr<testbed::DeviceProblem> d;
  if (p.ok()) d = testbed::UploadProblem(testbed::InputsOf(*p));
  if (!p.ok() || !d.ok()) {
    std::fprintf(stderr, "stall case %s: set-up failed: %s %s\n", e.name,
                 p.status().ToString().c_str(), d.status().ToString().c_str());
    std::_Exit(1);
  }
  OutProjArgs args = testbed::ArgsFor(*d);
  args.tile = c.tile;
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st =
      internal::RunOutProj(args, nullptr, CheckMode::kChecked, kernels::StallCaseKernels(i));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string message(st.message());
  check(!st.ok(), "the call succeeded");
  check(message.find("the kernel gave up waiting") != std::string::npos,
        "the error does not name the wait: " + message);
  // The withheld wait's bound is x1 (0.2 s), the others' x4; the rest is the launch, the report
  // and the trap.
  check(seconds < 3.0, absl::StrFormat("the call took %.3f s", seconds));
  const std::optional<kernels::StallReport> r = internal::OutProjStallReport();
  if (r.has_value()) {
    // The call's error and OutProjStallStatus() carry the report's sentence.
    const std::string sentence = kernels::StallMessage(*r);
    check(message.find(sentence) != std::string::npos, "the call's error: " + message);
    check(std::string(OutProjStallStatus().message()).find(sentence) != std::string::npos,
          "OutProjStallStatus: " + OutProjStallStatus().ToString());
    const int n_tiles = (kN + kernels::StallCaseTileN(c) - 1) / kernels::StallCaseTileN(c);
    // Without publish, any CTA on its own tile; withholding l, any tile of m-tile mt (they all
    // wait for it and the first to give up reports).
    const bool any_tile = !c.publish || branch;
    const int block = any_tile ? r->m_tile * n_tiles + r->n_tile : c.mt * n_tiles + c.nt;
    check(r->kind == static_cast<uint32_t>(e.kind), absl::StrFormat("kind %d", r->kind));
    check(r->block == static_cast<uint32_t>(block), absl::StrFormat("CTA %d", r->block));
    check(r->thread >= e.thread_lo && r->thread < e.thread_hi,
          absl::StrFormat("thread %d", r->thread));
    check(r->a == e.a && r->b == e.b, absl::StrFormat("a %d b %d", r->a, r->b));
    if (c.publish) {
      const int mt = e.mt >= 0 ? e.mt : c.mt, nt = e.nt >= 0 ? e.nt : c.nt;
      check(r->m_tile == mt && (branch || r->n_tile == nt),
            absl::StrFormat("tile (%d, %d)", r->m_tile, r->n_tile));
    }
    check(r->limit_ns == uint64_t{kWaitLimitMs} * 1000000u,
          absl::StrFormat("limit %d ns", r->limit_ns));
    // Given up at its own bound, not later (a poll's suspension is far below 0.1 s).
    check(r->waited_ns > r->limit_ns && r->waited_ns < r->limit_ns + 100000000u,
          absl::StrFormat("waited %d ns", r->waited_ns));
    std::printf(
        "stall case %-18s kind %d CTA %3d thread %3d a %d b %d tile (%d, %d) waited %.3f s "
        "(limit %.3f s), call %.3f s\n  %s\n",
        e.name, r->kind, r->block, r->thread, r->a, r->b, r->m_tile, r->n_tile,
        r->waited_ns * 1e-9, r->limit_ns * 1e-9, seconds, message.c_str());
  } else {
    check(false, "no stall report");
  }
  std::fflush(stdout);
  if (failures.empty()) {
    std::fprintf(stderr, "stall case %s: passed\n", e.name);
  } else {
    std::fprintf(stderr, "stall case %s: FAILED: %s\n", e.name, failures.c_str());
  }
  std::fflush(stderr);
  std::_Exit(failures.empty() ? 0 : 1);
}

class StallDeathTest : public ::testing::TestWithParam<Expected> {};

TEST_P(StallDeathTest, EndsInAnErrorNamingTheWait) {
  H3_SKIP_WITHOUT_GPU();
  const Expected& e = GetParam();
  ASSERT_GE(CaseIndex(e.name), 0) << e.name << " is not in kernels::kStallCases";
  // Read once per process by the host API (the child is a fresh one).
  ASSERT_EQ(setenv("MINIMAX_H3_NVFP4_WAIT_LIMIT_MS", std::to_string(kWaitLimitMs).c_str(), 1), 0);
  // Re-executes this binary for the child: the parent's CUDA state is not forked.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RunCaseAndExit(e), ::testing::ExitedWithCode(0),
              std::string("stall case ") + e.name + ": passed");
}

TEST(StallCases, EveryCaseHasAnExpectation) {
  ASSERT_EQ(sizeof(kExpected) / sizeof(kExpected[0]), size_t{kernels::kStallCaseCount});
  for (const Expected& e : kExpected) EXPECT_GE(CaseIndex(e.name), 0) << e.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, StallDeathTest, ::testing::ValuesIn(kExpected),
                         [](const ::testing::TestParamInfo<Expected>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace h3
