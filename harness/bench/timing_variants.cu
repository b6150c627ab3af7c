#include "harness/bench/timing_variants.h"

#include <cstdint>

#include "harness/bench/branch_timing_variants.h"
#include "kernels/device/epilogue_policy.cuh"
#include "kernels/launch/launch.cuh"
#include "kernels/device/params.h"
#include "kernels/device/variant.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::bench {
namespace {

// Never read: the one store of DiscardAccumulators, so that ptxas keeps every MMA (an empty asm
// would not do: it keeps values alive in NVVM, but the PTX it leaves has no use of them).
__device__ uint32_t g_fold_sink;

// An epilogue policy (kernels/device/epilogue_policy.cuh) that writes nothing. At the tile's last access
// Apply folds every accumulator of the tile into one word and stores it only if it equals a
// constant: a branch ptxas cannot prove dead and the data about never takes (p = 2^-32 per warp
// tile and thread). So the MMAs stay live, nothing is stored in place of the epilogue, and `out`
// is never touched: the store hooks do nothing. One fold at the end, in the order i, j, c, rather
// than a word per Apply: the same work, and the SASS that NOTES.md's fused_no_epilogue
// measurements ran (a fold per Apply compiles to different SASS).
struct DiscardAccumulators {
  static constexpr bool kVec16 = false;  // no accesses to widen

  template <class Cfg, class Arch, int kW>
  class Tile {
   public:
    __device__ __forceinline__ Tile(const kernels::EpilogueLane<kW>&, const kernels::OutProjParams&,
                                    float) {}
    __device__ __forceinline__ void Apply(const kernels::EpilogueLane<kW>&,
                                          const kernels::OutProjParams&,
                                          const kernels::WarpAcc<Cfg>& acc, int i, int h, int q,
                                          uint32_t (&)[kW]) const {
      if (i != Cfg::kMFrags - 1 || h != 1 || q != Cfg::kNFrags - 1) return;  // the last access
      uint32_t x = 0;
#pragma unroll
      for (int ii = 0; ii < Cfg::kMFrags; ++ii)
#pragma unroll
        for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) x ^= __float_as_uint(acc.v[ii][j][c]);
      if (x == 0x9E3779B9u) g_fold_sink = x;
    }
    __device__ __forceinline__ void Read(const kernels::EpilogueLane<kW>&,
                                         const kernels::OutProjParams&, int64_t, int,
                                         uint32_t* r) const {
#pragma unroll
      for (int k = 0; k < kW; ++k) r[k] = 0u;
    }
    __device__ __forceinline__ uint32_t Combine(int, int, uint32_t, uint32_t) const { return 0u; }
    __device__ __forceinline__ void Store(const kernels::EpilogueLane<kW>&,
                                          const kernels::OutProjParams&, int64_t, int,
                                          const uint32_t (&)[kW]) const {}
  };
};

// The product's kernel with the epilogue discarded.
struct NoEpilogue : kernels::Product {
  using Epilogue = DiscardAccumulators;
};

// As NoEpilogue, and the second consumer warpgroup skips its MMAs (it keeps the rings' pace).
struct OneGroupMma : NoEpilogue {
  static constexpr bool kEveryGroupMma = false;
};

}  // namespace

const kernels::KernelSet& TimingKernels(TimingVariant variant) {
  static const kernels::KernelSet no_epilogue = kernels::MakeKernelSet<NoEpilogue>();
  static const kernels::KernelSet one_group = kernels::MakeKernelSet<OneGroupMma>();
  if (IsBranchVariant(variant)) {
    return BranchHalvesKernels(variant == TimingVariant::kBranchNoUp,
                               variant == TimingVariant::kBranchNoDown);
  }
  return variant == TimingVariant::kOneGroupMma ? one_group : no_epilogue;
}

}  // namespace h3::bench
