#ifndef H3_KERNELS_SCHEDULER_CUH_
#define H3_KERNELS_SCHEDULER_CUH_

// Persistent tile order, and the quantizer's unit map that follows it (work_units.h).

#include <cstdint>

#include "kernels/device/params.h"
#include "kernels/device/work_units.h"

namespace h3::kernels {

// m-tile-major order: tile t covers m-tile t / num_n_tiles, n-tile t % num_n_tiles, and CTA b
// runs tiles b, b + gridDim.x, ... The CTAs then sweep the activation rows in the order the
// quantizer finishes them, and ~gridDim.x / num_n_tiles m-tiles are in flight at once, each
// activation tile read by up to num_n_tiles CTAs while it is hot in L2. The whole weight (MiniMax:
// 19 MiB codes + 2.3 MiB scales) stays L2-resident (H200 50 MiB, RTX 5090 96 MiB), so no further
// grouping is needed. The quantizer's front m-tiles (work_units.h FrontMTiles) are the first
// wave's under this order.
//
// The walk advances (m-tile, n-tile) by the grid's stride with 32-bit arithmetic only: a 64-bit
// division compiles to a subroutine call, and ptxas then ignores setmaxnreg in the whole kernel
// (ptxas C7506 "'setmaxnreg' ignored to maintain compatibility into 'extern' call").
template <class Cfg>
struct TileScheduler {
  int num_m_tiles, num_n_tiles;
  int step_m, step_n;  // the grid stride in (m-tiles, n-tiles)
  int mt, nt;          // the current tile

  __device__ __forceinline__ TileScheduler(int64_t m_rows, int n) {
    num_m_tiles = static_cast<int>((m_rows + Cfg::kBM - 1) / Cfg::kBM);  // < 2^24 (kOutProjMaxM)
    num_n_tiles = (n + Cfg::kBN - 1) / Cfg::kBN;  // the last may be half a tile (n % 256 == 128)
    const unsigned nn = static_cast<unsigned>(num_n_tiles);
    step_m = static_cast<int>(gridDim.x / nn);
    step_n = static_cast<int>(gridDim.x % nn);
    mt = static_cast<int>(blockIdx.x / nn);
    nt = static_cast<int>(blockIdx.x % nn);
  }
  __device__ __forceinline__ bool Valid() const { return mt < num_m_tiles; }
  __device__ __forceinline__ void Next() {
    mt += step_m;
    nt += step_n;
    if (nt >= num_n_tiles) {
      nt -= num_n_tiles;
      ++mt;
    }
  }
};

// Rows of a quantizer unit: the config's, or kBranchUnitRows where the Variant (variant.cuh)
// down-projects each unit for the low-rank branch (lowrank.cuh: a unit's rows are the n8 of its
// MMAs).
template <class Cfg, class Variant>
inline constexpr int kUnitRows = Variant::kBranch ? kBranchUnitRows : Cfg::kQuantRows;

// The unit map type: the branch's instances split every group into one unit per chunk.
template <class Cfg, class Variant>
using UnitsOf = WorkUnits<kUnitRows<Cfg, Variant>, Variant::kBranch>;

// The call's quantizer unit map (work_units.h): the front is the first wave's m-tiles. The
// quantizer warps and the load warp derive the same one.
template <class Cfg, class Variant>
__device__ __forceinline__ UnitsOf<Cfg, Variant> CallUnits(const OutProjParams& p) {
  const TileScheduler<Cfg> sched(p.m, p.n);
  return UnitsOf<Cfg, Variant>(p.m, p.k,
                               FrontMTiles(gridDim.x, sched.num_n_tiles, sched.num_m_tiles));
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_SCHEDULER_CUH_
