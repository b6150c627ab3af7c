// The model's description of today's kernel is the kernel's config, field by field.

#include <gtest/gtest.h>

#include "harness/perf_model/model.h"
#include "kernels/config.cuh"

namespace h3::perf_model {
namespace {

TEST(CurrentDesign, MatchesSm120Config) {
  using Cfg = kernels::Sm120Config;
  const Design d = CurrentDesign();
  EXPECT_EQ(d.bm, Cfg::kBM);
  EXPECT_EQ(d.bn, Cfg::kBN);
  EXPECT_EQ(d.bk, Cfg::kBK);
  EXPECT_EQ(d.stages, Cfg::kStages);
  EXPECT_EQ(d.warps_m, Cfg::kWarpsM);
  EXPECT_EQ(d.warps_n, Cfg::kWarpsN);
  EXPECT_EQ(d.load_warps, 1);
  EXPECT_EQ(d.quant_warps, Cfg::kQuantWarps);
  EXPECT_EQ(d.Threads(), Cfg::kThreads);
  EXPECT_EQ(d.quant_rows_per_unit, Cfg::kQuantRows);
  EXPECT_EQ(d.MFrags(), Cfg::kMFrags);
  EXPECT_EQ(d.NFrags(), Cfg::kNFrags);
  EXPECT_EQ(d.KSteps(), Cfg::kKSteps);
}

}  // namespace
}  // namespace h3::perf_model
