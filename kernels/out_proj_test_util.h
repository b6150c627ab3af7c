#ifndef H3_KERNELS_OUT_PROJ_TEST_UTIL_H_
#define H3_KERNELS_OUT_PROJ_TEST_UTIL_H_

// What the GPU op's tests share (out_proj_test, out_proj_smooth_test, out_proj_branch_test): the
// judge of a finished run against the emulator, and the registry's configs as test parameters.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"

namespace h3::out_proj_test {

// Checks a finished run on up to `max_rows` rows (testbed::SampleRows: always the first and the
// last): act_q/act_sf bit-exact when the run had caller workspaces, out inside the contract's
// envelope (with the problem's options: act_smooth, the low-rank branch), and bit-exact
// (asserted) on exact data.
inline void ExpectMatchesEmulator(const testbed::Problem& p, const testbed::DeviceProblem& d,
                                  const testbed::RunOptions& options, bool expect_exact,
                                  int64_t max_rows) {
  const std::vector<int64_t> rows = testbed::SampleRows(p.shape.m, max_rows, /*seed=*/1);
  absl::StatusOr<testbed::RunResult> got = testbed::DownloadResult(d, options, rows);
  ASSERT_TRUE(got.ok()) << got.status();
  testbed::JudgeOptions judge;
  judge.exact_data = expect_exact;
  judge.compare_act = options.caller_workspace;
  absl::StatusOr<testbed::Comparison> c = testbed::CompareWithEmulator(p, rows, *got, judge);
  ASSERT_TRUE(c.ok()) << c.status();
  if (expect_exact) {
    EXPECT_EQ(c->out_check, "bit-exact") << "test data is not exact";
  }
  EXPECT_TRUE(c->pass) << c->Summary();
}

// kAuto, then every other config of the registry (kernels/device/tiles.h): each test case runs
// with every config of the SM120 kernel.
inline std::vector<OutProjTile> EveryTile() {
  std::vector<OutProjTile> tiles = {OutProjTile::kAuto};
  for (const OutProjTileInfo& t : kOutProjTiles) {
    if (t.tile != kOutProjTileDefault) tiles.push_back(t.tile);
  }
  return tiles;
}

// A parameterized case's name suffix: the sm_90 emulation, then the config unless kAuto.
inline std::string ParamSuffix(Sm90Emulation emulation, OutProjTile tile) {
  return std::string(emulation == Sm90Emulation::kFast ? "_fast" : "_faithful") +
         (tile == OutProjTile::kAuto ? "" : std::string("_") + FindOutProjTile(tile)->name);
}

}  // namespace h3::out_proj_test

#endif  // H3_KERNELS_OUT_PROJ_TEST_UTIL_H_
