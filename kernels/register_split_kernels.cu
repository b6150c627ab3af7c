#include "kernels/register_split_kernels.h"

#include "kernels/arch.cuh"
#include "kernels/config.cuh"
#include "kernels/launch.cuh"
#include "kernels/variant.cuh"

namespace h3::kernels {
namespace {

// Within the SM's 64K registers (the config's own assert), beyond what a 168-register launch
// puts in the CTA's pool.
struct OverSplitConfig : Sm120ConfigLockstep {
  static constexpr int kProducerRegs = 48;
  static constexpr int kConsumerRegs = 232;
  static_assert(kProducerWarps * 32 * kProducerRegs + kConsumerWarps * 32 * kConsumerRegs == 65536,
                "the split fills the SM exactly");
};

template <class F>
auto WithOverSplit(KernelBuild build, F&& f) {
  using Cfg = OverSplitConfig;
  if (build == KernelBuild::kSm120Native) {
    return f(MakeInstance<Cfg, SharedStorage<Cfg>>(&OutProjKernel<Cfg, Sm120, Product>));
  }
  return f(MakeInstance<Cfg, SharedStorage<Cfg>>(&OutProjKernel<Cfg, sm90::Sm90Emulated, Product>));
}

}  // namespace

const KernelSet& OverSplitKernels() {
  static const KernelSet set = [] {
    KernelSet s;
    s.configure = [](KernelBuild build, OutProjTile, int* resident_ctas, std::string* refusal) {
      return WithOverSplit(build,
                           [&](const auto& k) { return Configure(k, resident_ctas, refusal); });
    };
    s.launch = [](const OutProjParams& p, KernelBuild build, OutProjTile, int resident_ctas,
                  cudaStream_t stream, const char** what) {
      return WithOverSplit(build, [&](const auto& k) {
        return Launch<Product>(k, p, resident_ctas, stream, what);
      });
    };
    s.smem_bytes = [](KernelBuild build, OutProjTile) {
      return WithOverSplit(
          build, [](const auto& k) { return int{std::remove_reference_t<decltype(k)>::kSmemBytes}; });
    };
    return s;
  }();
  return set;
}

}  // namespace h3::kernels
