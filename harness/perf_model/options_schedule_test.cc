// The schedule behind issue 30's keep-up term (options_schedule.h) against the kernel and by
// hand: the units the model replays, in claim order, against kernels/device/work_units.h's unit
// by unit (and the branch's by hand), and the per-CTA GEMM replay by hand (l waited for at the
// last stage, waits not summed, a late chunk on a CTA with a tile less hidden).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/options.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {
namespace {

// The replay (e) charges, by hand on the 5090's grid at M = 4096 (170 CTAs, 672 tiles m-tile-major
// over 21 n-tiles: CTAs 0 .. 161 run 4 tiles, 162 .. 169 three; 56 k-steps of 128, 7 chunks of
// 1024): a tile waits for its m-tile's l at its LAST k-step, 55/56 of its main loop (not at its
// last chunk, 6/7, nor after it); a CTA's waits delay the rest of it, so the stall is the latest
// wait, not a sum; a late chunk on a CTA with a tile less is hidden.
TEST(OptionsScheduleTest, GemmReplayByHand) {
  const Hardware hw = Rtx5090();
  const Design d = CurrentDesign();
  ASSERT_EQ(d.bk, 128);
  const Prediction pr = Predict(hw, d, AtM(4096));
  ASSERT_EQ(pr.k_blocks, 56);
  ASSERT_EQ(pr.tiles, 672);
  const double main = pr.tile_main, us = 1e-6;
  const std::vector<double> never(32 * 7, -1e30), no_l(32, -1e30);
  auto replay = [&](const std::vector<double>& published, const std::vector<double>& l_ready) {
    return ModelGemmReplay(hw, d, AtM(4096), published, l_ready, /*t0=*/0);
  };
  EXPECT_EQ(replay(never, no_l).stall, 0);
  EXPECT_EQ(replay(never, {}).stall, 0);
  // m-tile 0's l, just before / after its first tiles' last stage (CTAs 0 .. 20, 4 tiles each).
  std::vector<double> l = no_l;
  l[0] = 55.0 / 56 * main - 1 * us;
  EXPECT_EQ(replay(never, l).stall, 0);
  l[0] = 55.0 / 56 * main + 1 * us;
  EXPECT_NEAR(replay(never, l).stall, 1 * us, 1e-12);
  EXPECT_NEAR(replay(never, l).l_lateness, 1 * us, 1e-12);
  EXPECT_EQ(replay(never, {}).stall, 0);  // the plain op's replay has no l to wait for
  // Its chunk 3 also 2 us late: the CTA is 2 us behind when it reaches its last stage, 1 us past
  // l: 2 us, not 3.
  std::vector<double> pub = never;
  pub[0 * 7 + 3] = 3.0 / 7 * main + 2 * us;
  EXPECT_NEAR(replay(pub, l).stall, 2 * us, 1e-12);
  EXPECT_NEAR(replay(pub, l).lateness, 2 * us, 1e-12);
  // Front m-tile 8's chunk 4, 10 us after tile 168 (CTA 168, three tiles) needs it: its other
  // tiles (170 .. 188, CTAs 0 .. 18) start a period later. Late, hidden.
  pub = never;
  pub[8 * 7 + 4] = 4.0 / 7 * main + 10 * us;
  EXPECT_NEAR(replay(pub, no_l).lateness, 10 * us, 1e-12);
  EXPECT_EQ(replay(pub, no_l).stall, 0);
  // Chunk 0 of the front m-tiles is the start-up's: never waited for here.
  pub = never;
  pub[0] = 1;
  EXPECT_EQ(replay(pub, no_l).stall, 0);
}

// The units the keep-up term replays, in claim order, against the kernel's own unit map
// (kernels/device/work_units.h), built here from the kernel's FrontMTiles on the persistent grid
// min(SMs, tiles): the branch's WorkUnits<8, true> and the plain op's WorkUnits<4>, unit by unit.
template <int kRows, bool kChunkUnits>
void ExpectKernelOrder(const Hardware& hw, const Problem& p) {
  SCOPED_TRACE(testing::Message() << hw.name << " m " << p.m << " n " << p.n << " k " << p.k
                                  << " rows " << kRows << " chunk units " << kChunkUnits);
  const Design d = CurrentDesign();
  const int64_t m_tiles = (p.m + kernels::kWorkTileM - 1) / kernels::kWorkTileM;
  const int64_t n_tiles = (p.n + d.bn - 1) / d.bn;
  const int64_t grid = std::min<int64_t>(static_cast<int64_t>(hw.sms.value), m_tiles * n_tiles);
  const kernels::WorkUnits<kRows, kChunkUnits> units(
      p.m, static_cast<int>(p.k),
      kernels::FrontMTiles(static_cast<uint32_t>(grid), static_cast<uint32_t>(n_tiles), m_tiles));
  const std::vector<ModelUnit> order = ModelUnitOrder(hw, d, p, kRows, kChunkUnits);
  ASSERT_EQ(static_cast<int64_t>(order.size()), units.count);
  for (int64_t u = 0; u < units.count; ++u) {
    const kernels::WorkUnit w = units.Unit(static_cast<uint32_t>(u));
    const ModelUnit& x = order[static_cast<size_t>(u)];
    ASSERT_EQ(x.row0, w.row0) << "unit " << u;
    ASSERT_EQ(x.row_end, w.row_end) << "unit " << u;
    ASSERT_EQ(x.chunk_begin, w.chunk_begin) << "unit " << u;
    ASSERT_EQ(x.chunk_end, w.chunk_end) << "unit " << u;
    ASSERT_EQ(x.kind, units.Kind(static_cast<uint32_t>(u))) << "unit " << u;
  }
}

TEST(OptionsScheduleTest, UnitOrderIsTheKernels) {
  ASSERT_EQ(CurrentDesign().quant_rows_per_unit, 4);
  ASSERT_EQ(CurrentDesign().bm, kernels::kWorkTileM);
  for (const Hardware& hw : {Rtx5090(), RtxPro6000()}) {
    // M around the 8-row group, the m-tile and the first wave's blocks (a partial last block and
    // a partial last group); K of 7, 6 and 4 chunks; N of 21 and 8 n-tiles (fronts of 9; 22, 24).
    const int64_t kShapes[][3] = {{1, 5376, 7168},    {100, 5376, 7168},  {1000, 5376, 7168},
                                  {4096, 5376, 7168}, {4100, 5376, 7168}, {16384, 5376, 7168},
                                  {3000, 5376, 3072}, {5000, 2048, 1024}, {75856, 5376, 7168}};
    for (const auto& [m, n, k] : kShapes) {
      Problem p;
      p.m = m;
      p.n = n;
      p.k = k;
      ExpectKernelOrder<kernels::kBranchUnitRows, true>(hw, p);
      ExpectKernelOrder<4, false>(hw, p);
    }
  }
}

// The branch's order by hand, RTX 5090 at M = 4100 (N = 5376, K = 7168): 170 CTAs over 21
// n-tiles start on ceil(170 / 21) = 9 m-tiles, so blocks of 9 x 16 = 144 8-row groups, 7 chunks
// of 1024 each. The front's units [0, 1008) quantize chunk 0 of its 144 groups, then chunk 1, ...;
// [1008, 2016) down-project the same pairs in the same order; then block b >= 1's units
// [1008 (b + 1), 1008 (b + 2)) take chunk 0 of its 144 groups, then chunk 1, ...; the last block is
// groups 432 .. 512 (81, the last of 4 rows), 567 units.
TEST(OptionsScheduleTest, BranchUnitOrderByHand) {
  Problem p;
  p.m = 4100;
  const std::vector<ModelUnit> order =
      ModelUnitOrder(Rtx5090(), CurrentDesign(), p, kernels::kBranchUnitRows, true);
  ASSERT_EQ(order.size(), 513u * 7 + 1008);
  using kernels::UnitKind;
  constexpr UnitKind kQ = UnitKind::kQuantize, kD = UnitKind::kDown, kW = UnitKind::kWhole;
  auto expect = [&](int64_t u, int64_t group, int chunk, UnitKind kind) {
    const ModelUnit& x = order[static_cast<size_t>(u)];
    EXPECT_EQ(x.row0, 8 * group) << "unit " << u;
    EXPECT_EQ(x.row_end, std::min<int64_t>(8 * group + 8, 4100)) << "unit " << u;
    EXPECT_EQ(x.chunk_begin, chunk) << "unit " << u;
    EXPECT_EQ(x.chunk_end, chunk + 1) << "unit " << u;
    EXPECT_EQ(x.kind, kind) << "unit " << u;
  };
  expect(0, 0, 0, kQ);
  expect(143, 143, 0, kQ);
  expect(144, 0, 1, kQ);
  expect(1007, 143, 6, kQ);
  expect(1008, 0, 0, kD);  // the front again, down-only
  expect(1008 + 144, 0, 1, kD);
  expect(2015, 143, 6, kD);
  expect(2016, 144, 0, kW);  // block 1: chunk-major as the front, not group 144's 7 chunks in a row
  expect(2017, 145, 0, kW);
  expect(2016 + 143, 287, 0, kW);
  expect(2016 + 144, 144, 1, kW);
  expect(3023, 287, 6, kW);
  expect(3024, 288, 0, kW);
  expect(4032, 432, 0, kW);  // the last block, 81 groups
  expect(4032 + 80, 512, 0, kW);
  expect(4032 + 81, 432, 1, kW);
  expect(4598, 512, 6, kW);
}

}  // namespace
}  // namespace h3::perf_model
