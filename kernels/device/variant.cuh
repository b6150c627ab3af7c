#ifndef H3_KERNELS_VARIANT_CUH_
#define H3_KERNELS_VARIANT_CUH_

// What a kernel instance does besides its config and architecture (OutProjKernel's Variant): its
// epilogue, a policy type (epilogue_policy.cuh: the hooks), its quantizers' input policy
// (quantize.cuh: plain, or smoothed by act_smooth), and the test hooks of the producers
// and the rings. Product is the product: GatedResidual (epilogue.cuh), and hooks that are empty
// or constant and compile to nothing. Other instances derive from it and override members: an
// epilogue (the bench's timing variants: no epilogue, and also one group's MMAs), or test hooks
// (the stall test's quantizers that never publish and withheld hand-offs, the stress test's
// pauses, single quantizing CTA and grid cap).

#include <cstdint>

#include "kernels/device/epilogue.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/device/stall.h"

namespace h3::kernels {

// Where the stress test pauses a thread (Variant::Pause).
enum class PauseSite : uint32_t {
  kQuantizerBlock,
  kQuantizerPublish,
  kLoaderStage,
  kTrailerTile,
  kBranchArrive,  // a branch unit before its group's counter, and the last one before l's publish
  kDrainTile,     // a staged config: a quantizer warp before it drains a tile, a consumer before
                  // it writes its t words
};

struct Product {
  // What a finished warp tile's accumulators (the contract's f32 sums, before alpha) become.
  using Epilogue = GatedResidual;
  // What the quantizer warps quantize (quantize.cuh): attn_out as it is (contract section 3).
  using Input = PlainInput;
  static constexpr bool kSmooths = false;  // act_smooth required (its KernelSet's `smooths`)
  // The low-rank branch (contract section 13; lowrank.cuh): not in the product's plain instances.
  static constexpr bool kBranch = false;
  // The branch's halves where kBranch (the bench's timing variants drop one to time the other):
  // the quantizers' down-projection, with the load warp's l gate that waits for it, and the
  // consumers' up-projection.
  static constexpr bool kBranchDown = true;
  static constexpr bool kBranchUp = true;
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
  static constexpr uint64_t kDrainBound = kernels::kDrainBound;
};

// The product with act_smooth given (contract section 12): its quantizers smooth each block
// first. A separate instance, so the plain path's code is the seed's alone.
struct ProductSmoothed : Product {
  using Input = SmoothedInput;
  static constexpr bool kSmooths = true;
};

// The product with the low-rank branch given (contract section 13), act_smooth optional: the
// quantizers also down-project each unit, the consumers up-project before the epilogue.
struct ProductBranch : Product {
  using Input = MaybeSmoothedInput;
  static constexpr bool kBranch = true;
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_VARIANT_CUH_
