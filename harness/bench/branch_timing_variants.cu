#include "harness/bench/branch_timing_variants.h"

#include <cstdio>
#include <cstdlib>

#include "kernels/device/config.cuh"
#include "kernels/device/tiles.h"
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

// The registry's config type of a tile code (kernels/device/tiles.h).
template <OutProjTile kTile>
struct TileConfig;
#define H3_TILE_CONFIG(id, code, name, cfg, what) \
  template <>                                     \
  struct TileConfig<OutProjTile::id> {            \
    using type = kernels::cfg;                    \
  };
H3_OUT_PROJ_TILES(H3_TILE_CONFIG)
#undef H3_TILE_CONFIG

// The branch variants exist for the default config alone (the bench times them beside
// fused_smoothed_lowrank32): per target one instance, its own kernel or the default's config,
// not one per registry config.
template <class Variant>
struct DefaultConfigDispatch {
  template <class F>
  static auto With(kernels::KernelBuild build, OutProjTile tile, F&& f) {
    if (tile != OutProjTile::kAuto && tile != kOutProjTileDefault) {
      // The bench asks for the default alone; any other tile is a bug in the bench.
      std::fprintf(stderr, "h3::bench::BranchHalvesKernels: the branch variants have the "
                           "default tile only\n");
      std::abort();
    }
    return kernels::WithTarget(build, [&](auto target) {
      using Target = decltype(target);
      if constexpr (Target::kOwnKernel) {
        return f(kernels::MakeInstance<typename Target::Cfg, typename Target::Storage>(
            Target::template Kernel<Variant>()));
      } else {
        using Cfg = typename TileConfig<kOutProjTileDefault>::type;
        return f(kernels::MakeInstance<Cfg, kernels::SharedStorage<Cfg>>(
            &kernels::OutProjKernel<Cfg, typename Target::Arch, Variant>));
      }
    });
  }
};

template <class Variant>
kernels::KernelSet BranchSet() {
  return kernels::MakeKernelSet<Variant, DefaultConfigDispatch<Variant>>();
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
