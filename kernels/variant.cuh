#ifndef H3_KERNELS_VARIANT_CUH_
#define H3_KERNELS_VARIANT_CUH_

// What a kernel instance does besides the product's work (OutProjKernel's Variant). Product is
// the product; testonly targets derive from it and override members: the bench's timing variants
// (no epilogue, one group's MMAs), the stall test's quantizers that never publish and withheld
// hand-offs, the stress test's pauses, single quantizing CTA and grid cap. The product's hooks
// are empty or constant and compile to nothing.

#include <cstdint>

#include "kernels/epilogue.cuh"
#include "kernels/params.h"
#include "kernels/stall.h"
#include "kernels/warp_acc.cuh"

namespace h3::kernels {

// Where the stress test pauses a thread (Variant::Pause).
enum class PauseSite : uint32_t { kQuantizerBlock, kQuantizerPublish, kLoaderStage, kTrailerTile };

struct Product {
  static constexpr bool kPublish = true;        // the quantizer warps publish every unit
  static constexpr bool kEveryGroupMma = true;  // both consumer warpgroups issue MMAs
  static constexpr int kGridCap = 0;            // 0: the co-resident CTAs (launch.cuh)
  // Whether this CTA's quantizer warps claim units (all do; a unit is quantized by whoever
  // claims it, so any subset that includes a resident CTA finishes them all).
  __device__ __forceinline__ static bool Quantizes() { return true; }
  __device__ __forceinline__ static void Pause(PauseSite, uint32_t) {}
  // Whether the calling thread withholds hand-off `what` (stall.h Handoff) of ring `ring` (the
  // gate: kRingA) at k-step ks of tile (mt, nt): never in the product.
  __device__ __forceinline__ static bool Withholds(Handoff, int /*ring*/, int /*mt*/, int /*nt*/,
                                                   int /*ks*/) {
    return false;
  }
  // Each role's wait bound, in p.wait_limit_ns (stall.h): the stall test reorders them so that
  // the waiter of the hand-off it withholds gives up first.
  static constexpr uint64_t kLoaderBound = kernels::kLoaderBound;
  static constexpr uint64_t kConsumerBound = kernels::kConsumerBound;
  static constexpr uint64_t kGateBound = kernels::kGateBound;
  // A finished warp tile's accumulators (the contract's f32 sums, before alpha).
  template <class Cfg, class Arch>
  __device__ __forceinline__ static void Epilogue(const WarpAcc<Cfg>& acc, int64_t row0, int col0,
                                                  const OutProjParams& p, float alpha) {
    EpilogueTile<Cfg, Arch>(acc, row0, col0, p, alpha);
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_VARIANT_CUH_
