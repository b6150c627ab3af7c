#ifndef H3_KERNELS_STALL_TEST_KERNELS_H_
#define H3_KERNELS_STALL_TEST_KERNELS_H_

// Testonly: the product's kernel with one hand-off that never happens, so that one kind of wait
// (kernels/device/stall.h) waits for nothing and must give up. Each case also reorders the roles' bounds
// (Variant::kLoaderBound ...): the waiter of what it withholds gets x1, every other role x4, so
// the waits that stall behind it (the load warp on a slot the stuck consumers never free, the
// trailing group on a gate the stuck leader never opens) give up later and the report names the
// withheld one.

#include "kernels/device/kernel_set.h"
#include "kernels/device/stall.h"
#include "kernels/device/tiles.h"

namespace h3::kernels {

struct StallCase {
  const char* name;
  OutProjTile tile;      // the config every (build, tile) runs for the case
  bool publish;          // false: the quantizers never publish (the load warp's kChunkReady)
  Handoff what;          // with publish: the hand-off withheld, of ring `ring` (kRingA ...)
  int ring, mt, nt, ks;  // at k-step ks of tile (mt, nt)
  int grid_cap = 0;      // CTAs at most (0: one per tile), so that a CTA runs several tiles
};

// The columns of a tile of case c's config: the problem (M = 300, N = 640, K = 1024: 8 k-steps
// of 128) is a 3 x 3 grid of 128 x 256 tiles, or a 3 x 5 grid of 128 x 128 ones.
constexpr int StallCaseTileN(const StallCase& c) {
  return c.tile == OutProjTile::k128x128 || c.tile == OutProjTile::k128x128Staged ? 128 : 256;
}

// The cases the stall test runs, each by its index in this table. Tile (1, 1) unless said
// otherwise.
inline constexpr StallCase kStallCases[] = {
    // Nothing published: every load warp waits on its tile's first k-chunk.
    {"never_publish", OutProjTile::k128x256, false, Handoff::kFill, kRingA, 0, 0, 0},
    // The A ring's first stage of the tile never fills: the leading group waits on it (the
    // trailing one at its skew gate, which the leader opens only 3 stages in).
    {"fill_a", OutProjTile::k128x256, true, Handoff::kFill, kRingA, 1, 1, 0},
    // Lockstep, stage 5 (ring stage 2, phase 1): all eight consumer warps wait on it.
    {"fill_a_lockstep", OutProjTile::k128x256Lockstep, true, Handoff::kFill, kRingA, 1, 1, 5},
    // The leading group's B ring, first stage: the leader waits on B ring slot 0.
    {"fill_b0", OutProjTile::k128x256, true, Handoff::kFill, kRingB0, 1, 1, 0},
    // The trailing group's B ring, last stage (slot 3 + 7 % 3, phase 0): the leader finishes the
    // tile, the load warp has nothing left, the trailer waits alone.
    {"fill_b1_last", OutProjTile::k128x256, true, Handoff::kFill, kRingB0 + 1, 1, 1, 7},
    // The leader never opens the tile's skew gate (gate 0, phase 0: the CTA's first tile).
    {"gate", OutProjTile::k128x256, true, Handoff::kGateArrive, kRingA, 1, 1, 2},
    // No consumer releases A stage 1: the load warp waits to refill it with stage 5 (ring stage
    // 1, parity 0).
    {"release_a", OutProjTile::k128x256, true, Handoff::kRelease, kRingA, 1, 1, 1},
    // The leading group never releases its B ring's stage 4: the load warp, every other stage
    // issued, waits to refill it with stage 7 (B ring 0, stage 1).
    {"release_b0", OutProjTile::k128x256, true, Handoff::kRelease, kRingB0, 1, 1, 4},
    // The 128 x 128 config (lockstep, one ring of 4 stages): stage 6 (ring stage 2, phase 1)
    // never fills, all eight consumer warps wait on it.
    {"fill_a_128x128", OutProjTile::k128x128, true, Handoff::kFill, kRingA, 1, 1, 6},
    // No consumer releases its ring stage 1: the load warp waits to refill it with stage 5.
    {"release_a_128x128", OutProjTile::k128x128, true, Handoff::kRelease, kRingA, 1, 1, 1},
    // The low-rank branch's instance (the test gives lora_down / lora_up): no group of m-tile 1
    // publishes its l, so the load warps of that m-tile's tiles wait to issue their last A stage.
    {"branch_l", OutProjTile::k128x256, true, Handoff::kBranchPublish, kRingA, 1, 0, 0},
    // The staged 128 x 128 config: no consumer thread arrives on t_full after writing its t
    // words of tile (1, 1) (the CTA's only tile): its quantizer warps, out of units, wait to
    // drain it.
    {"t_fill_staged", OutProjTile::k128x128Staged, true, Handoff::kTFill, kRingA, 1, 1, 0},
    // No quantizer warp arrives on t_empty after draining tile (1, 1); with 8 CTAs, CTA 6 runs
    // tiles 6 = (1, 1) and 14 = (2, 4), whose consumers wait for the t tile to write into.
    {"t_drain_staged", OutProjTile::k128x128Staged, true, Handoff::kTDrain, kRingA, 1, 1, 0, 8},
};
inline constexpr int kStallCaseCount = sizeof(kStallCases) / sizeof(kStallCases[0]);

// Case i's kernels (i in [0, kStallCaseCount)).
const KernelSet& StallCaseKernels(int i);

}  // namespace h3::kernels

#endif  // H3_KERNELS_STALL_TEST_KERNELS_H_
