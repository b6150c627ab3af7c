#ifndef H3_KERNELS_TARGET_FACTS_H_
#define H3_KERNELS_TARGET_FACTS_H_

// The facts of each target of the fused kernel, one struct each, in plain C++ (g++ and nvcc read
// it): which devices it runs on, the shared memory its configs are sized for, and the inputs of
// tile auto's heuristic. The host API picks its target here (FindTarget), the tuning cache asks
// its heuristic here, the configs take their budgets from here; ../launch/targets.cuh binds each
// to its architecture policy and kernels. A new target is one struct here and one there.

#include <cstdint>
#include <string>

#include "kernels/device/tiles.h"

namespace h3::kernels {

// kSm120Native: the tile's config with the Sm120 policy, sm_120f (every SM12x part).
// kSm90Faithful: the same config and kernel code with the sm90::Sm90Emulated policy, sm_90a.
// kSm90Fast: the fast sm_90 kernel (sm90/fast_kernel.cuh; the tile is ignored), sm_90a.
enum class KernelBuild { kSm120Native, kSm90Faithful, kSm90Fast };

// Which of the caller's emulation choices selects a target (only Hopper has two).
enum class EmulationChoice { kAny, kFaithful, kFast };

inline constexpr int kAnyMinor = -1;

struct TargetFacts {
  KernelBuild build;
  int cc_major;               // the devices it runs on: compute capability cc_major.cc_minor
  int cc_minor;               //   (kAnyMinor: every minor)
  EmulationChoice selected_by;
  const char* family;         // the devices in words ("SM12x"), for messages
  const char* description;    // what runs, as the host API names it
  const char* tune_variant;   // the tuning cache's variant key
  int smem_bytes;             // dynamic shared memory per block its configs are sized for
  int64_t small_m;            // tile auto's heuristic: M <= small_m runs small_m_tile
  OutProjTile small_m_tile;   //   (small_m 0: never; the registry's default otherwise)
};

// The product: every SM12x part (sm_120 RTX 50xx / RTX PRO 6000, sm_121 GB10) runs one sm_120f
// build. Shared memory: 99 KiB per block opt-in on SM12x (CUTLASS sm120_smem_capacity_bytes =
// 101376). No small-M heuristic: the default is a 128x128 config, and the performance model
// ranks it first among the built configs at M = 128 too (RTX 5090: 276 TFLOP/s, the plain
// 128x128 265, the 128x256 configs ~145; unmeasured on SM12x).
inline constexpr TargetFacts kSm120Facts{
    KernelBuild::kSm120Native, 12, kAnyMinor, EmulationChoice::kAny, "SM12x",
    "sm_120f native", "native", 101376, 0, OutProjTile::kAuto};

// Hopper validation, faithful: the product's configs (so the SM120 budget), the MMA and e2m1
// emulated exactly; the heuristic never picks another config (tile auto is not a speed claim
// here).
inline constexpr TargetFacts kSm90FaithfulFacts{
    KernelBuild::kSm90Faithful, 9, 0, EmulationChoice::kFaithful, "sm_90",
    "sm_90a validation, faithful (the SM120 kernel, block-scaled MMA emulated from its registers)",
    "faithful", kSm120Facts.smem_bytes, 0, OutProjTile::kAuto};

// Hopper validation, fast: its own config sized for sm_90's 227 KiB per block
// (cudaDevAttrMaxSharedMemoryPerBlockOptin on H100/H200).
inline constexpr TargetFacts kSm90FastFacts{
    KernelBuild::kSm90Fast, 9, 0, EmulationChoice::kFast, "sm_90",
    "sm_90a validation, fast (block-scaled MMA emulated by wgmma on dequantized tiles)", "fast",
    232448, 0, OutProjTile::kAuto};

inline constexpr const TargetFacts* kTargets[] = {&kSm120Facts, &kSm90FaithfulFacts,
                                                  &kSm90FastFacts};

// The target that runs on a device of compute capability major.minor when the caller chose the
// fast Hopper emulation (sm90_fast) or not; nullptr: no target (the host API refuses the device).
constexpr const TargetFacts* FindTarget(int major, int minor, bool sm90_fast) {
  for (const TargetFacts* t : kTargets) {
    if (t->cc_major != major || (t->cc_minor != kAnyMinor && t->cc_minor != minor)) continue;
    if (t->selected_by == EmulationChoice::kAny ||
        (t->selected_by == EmulationChoice::kFast) == sm90_fast) {
      return t;
    }
  }
  return nullptr;
}

// The devices a target runs on, as messages write them: "12.x" (every minor) or "9.0".
inline std::string CapabilityName(const TargetFacts& t) {
  return std::to_string(t.cc_major) + "." +
         (t.cc_minor == kAnyMinor ? std::string("x") : std::to_string(t.cc_minor));
}

// The facts of a build.
constexpr const TargetFacts& FactsOf(KernelBuild build) {
  for (const TargetFacts* t : kTargets) {
    if (t->build == build) return *t;
  }
  return kSm120Facts;  // unreachable: every build has a struct (checked below)
}

static_assert(FindTarget(12, 0, false) == &kSm120Facts && FindTarget(12, 1, true) == &kSm120Facts);
static_assert(FindTarget(9, 0, false) == &kSm90FaithfulFacts);
static_assert(FindTarget(9, 0, true) == &kSm90FastFacts);
static_assert(FindTarget(10, 0, false) == nullptr && FindTarget(8, 9, false) == nullptr &&
              FindTarget(9, 1, false) == nullptr);
static_assert(&FactsOf(KernelBuild::kSm90Fast) == &kSm90FastFacts &&
              &FactsOf(KernelBuild::kSm90Faithful) == &kSm90FaithfulFacts &&
              &FactsOf(KernelBuild::kSm120Native) == &kSm120Facts);
// The heuristic is one per compute capability major (TuneHeuristic asks by major).
static_assert(kSm90FaithfulFacts.small_m == kSm90FastFacts.small_m);

}  // namespace h3::kernels

#endif  // H3_KERNELS_TARGET_FACTS_H_
