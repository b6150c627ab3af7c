// The model's description of today's kernel is the kernel's config, field by field, and its
// built default (BuiltDesigns()[0], the headline's design) is the registry's default (kernels/device/tiles.h
// kOutProjTileDefault).

#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"
#include "kernels/device/config.cuh"
#include "kernels/device/tiles.h"

namespace h3::perf_model {
namespace {

template <class Cfg>
void ExpectMatches(const Design& d) {
  EXPECT_EQ(d.bm, Cfg::kBM);
  EXPECT_EQ(d.bn, Cfg::kBN);
  EXPECT_EQ(d.bk, Cfg::kBK);
  EXPECT_EQ(d.stages, Cfg::kStages);
  EXPECT_EQ(d.a_stages > 0 ? d.a_stages : d.stages, Cfg::kAStages);
  EXPECT_EQ(d.epilogue == Epilogue::kSkewedGroups,
            (std::is_same_v<typename Cfg::Schedule, kernels::SkewedSchedule>));
  EXPECT_EQ(d.epilogue == Epilogue::kSmemStaged, Cfg::Schedule::kStagedEpilogue);
  EXPECT_EQ(d.warps_m, Cfg::kWarpsM);
  EXPECT_EQ(d.warps_n, Cfg::kWarpsN);
  EXPECT_EQ(d.load_warps, 1);
  EXPECT_EQ(d.quant_warps, Cfg::kQuantWarps);
  EXPECT_EQ(d.Threads(), Cfg::kThreads);
  EXPECT_EQ(d.quant_rows_per_unit, Cfg::kQuantRows);
  EXPECT_EQ(d.MFrags(), Cfg::kMFrags);
  EXPECT_EQ(d.NFrags(), Cfg::kNFrags);
  EXPECT_EQ(d.KSteps(), Cfg::kKSteps);
  EXPECT_EQ(d.setmaxnreg, Cfg::kSetMaxNReg);
  if (d.setmaxnreg) {
    EXPECT_EQ(d.regs_consumer, Cfg::kConsumerRegs);
    EXPECT_EQ(d.regs_producer, Cfg::kProducerRegs);
  }
  EXPECT_EQ(d.quant_order, QuantOrder::kFirstWaveKChunks);
  for (int k : {256, 1024, 2304, 5120, 7168, 1 << 20}) {
    EXPECT_EQ(d.quant_chunk_elems(k), kernels::ChunkElems(k)) << "k " << k;
  }
}

TEST(CurrentDesign, MatchesSm120Config128x256Skewed) {
  ExpectMatches<kernels::Sm120Config128x256Skewed>(CurrentDesign());
}
TEST(CurrentDesign, MatchesSm120Config128x256Lockstep) {
  ExpectMatches<kernels::Sm120Config128x256Lockstep>(CurrentLockstepDesign());
}
TEST(CurrentDesign, MatchesSm120Config128x128Lockstep) {
  ExpectMatches<kernels::Sm120Config128x128Lockstep>(Current128Design());
}
TEST(CurrentDesign, MatchesSm120Config128x128Staged) {
  ExpectMatches<kernels::Sm120Config128x128Staged>(CurrentStagedDesign());
}

// BuiltDesigns(): the registry's default config first, then the others in the registry's order.
TEST(CurrentDesign, BuiltDesignsFollowTheRegistry) {
  const std::vector<Design> built = BuiltDesigns();
  ASSERT_EQ(static_cast<int>(built.size()), kOutProjTileCount);
  int i = 1;
  int defaults = 0;
#define H3_EXPECT_BUILT(id, code, name, cfg, what)   \
  {                                                  \
    SCOPED_TRACE(name);                              \
    if (OutProjTile::id == kOutProjTileDefault) {    \
      ExpectMatches<kernels::cfg>(built[0]);         \
      ++defaults;                                    \
    } else {                                         \
      ExpectMatches<kernels::cfg>(built[i]);         \
      ++i;                                           \
    }                                                \
  }
  H3_OUT_PROJ_TILES(H3_EXPECT_BUILT)
#undef H3_EXPECT_BUILT
  EXPECT_EQ(defaults, 1);
}

}  // namespace
}  // namespace h3::perf_model
