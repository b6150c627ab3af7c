#include "kernels/testing/stall_test_kernels.h"

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/device/config.cuh"
#include "kernels/launch/launch.cuh"
#include "kernels/device/stall.h"
#include "kernels/device/variant.cuh"

namespace h3::kernels {
namespace {

// Bounds of case c's roles, in wait_limit_ns: the waiter of the withheld hand-off x1, the others
// x4 (never_publish: the product's). The load warp waits for releases and for l.
// `also`: a second hand-off the same role waits for (the consumers: fills and the staged drain).
constexpr uint64_t CaseBound(const StallCase& c, Handoff waits_for_handoff, uint64_t product,
                             Handoff also) {
  if (!c.publish) return product;
  const bool loader_waits_for_l =
      waits_for_handoff == Handoff::kRelease && c.what == Handoff::kBranchPublish;
  return c.what == waits_for_handoff || c.what == also || loader_waits_for_l ? 1 : 4;
}
constexpr uint64_t CaseBound(const StallCase& c, Handoff waits_for_handoff, uint64_t product) {
  return CaseBound(c, waits_for_handoff, product, waits_for_handoff);
}

// The product, or its low-rank branch instance where the case withholds l.
template <int kCase>
using CaseBase =
    std::conditional_t<kStallCases[kCase].what == Handoff::kBranchPublish, ProductBranch, Product>;

template <int kCase>
struct Withhold : CaseBase<kCase> {
  static constexpr bool kPublish = kStallCases[kCase].publish;
  static constexpr Handoff kWhat = kStallCases[kCase].what;
  static constexpr int kRing = kStallCases[kCase].ring, kMt = kStallCases[kCase].mt,
                       kNt = kStallCases[kCase].nt, kKs = kStallCases[kCase].ks;
  // The load warp waits for releases, the consumers for fills, the trailer for the gate.
  static constexpr uint64_t kLoaderBound =
      CaseBound(kStallCases[kCase], Handoff::kRelease, kernels::kLoaderBound);
  static constexpr uint64_t kConsumerBound =
      CaseBound(kStallCases[kCase], Handoff::kFill, kernels::kConsumerBound, Handoff::kTDrain);
  static constexpr uint64_t kGateBound =
      CaseBound(kStallCases[kCase], Handoff::kGateArrive, kernels::kGateBound);
  // The staged config's draining quantizer warps wait for the consumers' t.
  static constexpr uint64_t kDrainBound =
      CaseBound(kStallCases[kCase], Handoff::kTFill, kernels::kDrainBound);
  static constexpr int kGridCap = kStallCases[kCase].grid_cap;
  __device__ __forceinline__ static bool Withholds(Handoff what, int ring, int mt, int nt, int ks) {
    return kPublish && what == kWhat && ring == kRing && mt == kMt && nt == kNt && ks == kKs;
  }
};

// Every (build, tile) runs the case's config with the build's policy.
template <int kCase>
struct CaseDispatch {
  // A registered config (TileConfig has no other).
  using Cfg = typename TileConfig<kStallCases[kCase].tile>::type;
  static_assert(Cfg::kBN == StallCaseTileN(kStallCases[kCase]) && Cfg::kBK == 128,
                "the stall cases' positions: the test's tile grid, 8 k-steps of 128");
  template <class F>
  static auto With(KernelBuild build, OutProjTile, F&& f) {
    return WithArch<Cfg, Withhold<kCase>>(build, f);
  }
};

template <int... kCases>
const KernelSet& CaseKernels(int i, std::integer_sequence<int, kCases...>) {
  static const KernelSet sets[] = {MakeKernelSet<Withhold<kCases>, CaseDispatch<kCases>>()...};
  return sets[i];
}

}  // namespace

const KernelSet& StallCaseKernels(int i) {
  return CaseKernels(i, std::make_integer_sequence<int, kStallCaseCount>());
}

}  // namespace h3::kernels
