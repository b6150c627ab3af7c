#include "harness/bench/branch_timing_variants.h"

#include <cstdio>
#include <cstdlib>

#include "kernels/device/variant.cuh"
#include "kernels/launch/launch.cuh"

namespace h3::bench {
namespace {

// The branch instance (act_smooth optional) without one or both of its halves.
template <bool kDown, bool kUp>
struct BranchHalves : kernels::ProductBranch {
  static constexpr bool kBranchDown = kDown;
  static constexpr bool kBranchUp = kUp;
};

template <class Variant>
kernels::KernelSet BranchSet() {
  return kernels::MakeKernelSet<Variant, kernels::DefaultTileDispatch<Variant>>();
}

}  // namespace

const kernels::KernelSet& BranchHalvesKernels(bool down, bool up) {
  static const kernels::KernelSet no_up = BranchSet<BranchHalves<true, false>>();
  static const kernels::KernelSet no_down = BranchSet<BranchHalves<false, true>>();
  static const kernels::KernelSet neither = BranchSet<BranchHalves<false, false>>();
  if (down && up) {
    std::fprintf(stderr, "h3::bench::BranchHalvesKernels: both halves kept is the product\n");
    std::abort();
  }
  return down ? no_up : (up ? no_down : neither);
}

}  // namespace h3::bench
