#include "kernels/testing/register_split_kernels.h"

#include "kernels/device/arch.cuh"
#include "kernels/device/config.cuh"
#include "kernels/launch/launch.cuh"
#include "kernels/device/variant.cuh"

namespace h3::kernels {
namespace {

// Within the SM's 64K registers (the config's own assert), beyond what a 168-register launch
// puts in the CTA's pool.
struct OverSplitConfig : Sm120Config128x256Lockstep {
  static constexpr int kProducerRegs = 48;
  static constexpr int kConsumerRegs = 232;
  static_assert(kProducerWarps * 32 * kProducerRegs + kConsumerWarps * 32 * kConsumerRegs == 65536,
                "the split fills the SM exactly");
};

// Every (build, tile) runs the over-split config with the build's policy.
struct OverSplitDispatch {
  template <class F>
  static auto With(KernelBuild build, OutProjTile, F&& f) {
    return WithArch<OverSplitConfig, Product>(build, f);
  }
};

}  // namespace

const KernelSet& OverSplitKernels() {
  static const KernelSet set = MakeKernelSet<Product, OverSplitDispatch>();
  return set;
}

}  // namespace h3::kernels
