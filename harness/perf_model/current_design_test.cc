// The model's description of today's kernel is the kernel's config, field by field.

#include <gtest/gtest.h>

#include "harness/perf_model/model.h"
#include "kernels/config.cuh"

namespace h3::perf_model {
namespace {

template <class Cfg>
void ExpectMatches(const Design& d) {
  EXPECT_EQ(d.bm, Cfg::kBM);
  EXPECT_EQ(d.bn, Cfg::kBN);
  EXPECT_EQ(d.bk, Cfg::kBK);
  EXPECT_EQ(d.stages, Cfg::kStages);
  EXPECT_EQ(d.a_stages > 0 ? d.a_stages : d.stages, Cfg::kAStages);
  EXPECT_EQ(d.epilogue == Epilogue::kSkewedGroups, Cfg::kSkewed);
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

TEST(CurrentDesign, MatchesSm120Config) { ExpectMatches<kernels::Sm120Config>(CurrentDesign()); }
TEST(CurrentDesign, MatchesSm120ConfigLockstep) {
  ExpectMatches<kernels::Sm120ConfigLockstep>(CurrentLockstepDesign());
}
TEST(CurrentDesign, MatchesSm120Config128) {
  ExpectMatches<kernels::Sm120Config128>(Current128Design());
}

}  // namespace
}  // namespace h3::perf_model
