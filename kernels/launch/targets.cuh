#ifndef H3_KERNELS_TARGETS_CUH_
#define H3_KERNELS_TARGETS_CUH_

// The one registration point of the fused kernel's targets: the only header outside kernels/sm90/
// that includes Hopper code. Each target is one struct with its facts; the launcher (launch.cuh)
// and the device code that is not a kernel template reach the targets through this header alone.
//
//   Sm120Target         the product: the Sm120 policy (arch.cuh), sm_120f, every registry config.
//   Sm90FaithfulTarget  Hopper validation: the same kernel code and configs with the
//                       sm90::Sm90Emulated policy (kernels/sm90/arch.cuh), sm_90a.
//   Sm90FastTarget      Hopper validation: its own kernel and config
//                       (kernels/sm90/fast_kernel.cuh); the tile is not consulted.
// A target's members:
//   kFacts               its facts (../device/target_facts.h): devices, shared memory, heuristic
//   kBuild               its KernelBuild: what the host API picks by device (FindTarget)
//   Arch                 its architecture policy (arch.cuh lists a policy's members)
//   kOwnKernel           false: OutProjKernel<Cfg, Arch, Variant> for the tile's registry config;
//                        true: its own kernel, Cfg and Storage, Kernel<Variant>()

#include <type_traits>

#include "kernels/device/arch.cuh"
#include "kernels/device/kernel_set.h"
#include "kernels/device/target_facts.h"
#include "kernels/sm90/arch.cuh"
#include "kernels/sm90/fast_kernel.cuh"

namespace h3::kernels {

struct Sm120Target {
  static constexpr const TargetFacts& kFacts = kSm120Facts;
  static constexpr KernelBuild kBuild = kFacts.build;
  using Arch = Sm120;
  static constexpr bool kOwnKernel = false;
};

struct Sm90FaithfulTarget {
  static constexpr const TargetFacts& kFacts = kSm90FaithfulFacts;
  static constexpr KernelBuild kBuild = kFacts.build;
  using Arch = sm90::Sm90Emulated;
  static constexpr bool kOwnKernel = false;
};

struct Sm90FastTarget {
  static constexpr const TargetFacts& kFacts = kSm90FastFacts;
  static constexpr KernelBuild kBuild = kFacts.build;
  using Arch = sm90::Sm90Emulated;
  static constexpr bool kOwnKernel = true;
  using Cfg = sm90::Sm90Config;
  using Storage = sm90::Sm90Storage;
  template <class Variant>
  static auto Kernel() {
    return &sm90::FastKernel<Variant>;
  }
};

// The target of `build`: calls f(Target{}). The one switch over the builds.
template <class F>
auto WithTarget(KernelBuild build, F&& f) {
  if (build == Sm90FastTarget::kBuild) return f(Sm90FastTarget{});
  if (build == Sm120Target::kBuild) return f(Sm120Target{});
  return f(Sm90FaithfulTarget{});
}

// The target whose policy runs a registry config (or a test's own config) for `build`: the
// product for its build, the faithful sm_90 policy for either sm_90 build (the fast target has no
// kernel for another config). Calls f(Target{}).
template <class F>
auto WithConfigTarget(KernelBuild build, F&& f) {
  if (build == Sm120Target::kBuild) return f(Sm120Target{});
  return f(Sm90FaithfulTarget{});
}

// The policy of the nvcc pass being compiled, for device code that is not a kernel template
// (the standalone quantizers, the instruction-level tests, the probe): Sm120 in an SM12x pass,
// Sm90Emulated in the sm_90 pass (and on the host, where it is meaningless). Any other device
// pass already failed to compile (arch.cuh).
using TargetArch = std::conditional_t<Sm120::kCompiledHere, Sm120, sm90::Sm90Emulated>;

}  // namespace h3::kernels

#endif  // H3_KERNELS_TARGETS_CUH_
