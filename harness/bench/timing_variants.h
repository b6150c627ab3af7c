#ifndef H3_HARNESS_BENCH_TIMING_VARIANTS_H_
#define H3_HARNESS_BENCH_TIMING_VARIANTS_H_

// Timing-only instances of the fused kernel, linked by the bench alone (never by the product):
// the same kernel (kernels/device/out_proj_kernel.cuh) with a Variant other than the product's.
//   kNoEpilogue   the epilogue policy DiscardAccumulators in place of the product's
//                 (kernels/device/epilogue_policy.cuh): every warp tile's accumulators are consumed, and
//                 `out` is NOT written (act_q / act_sf are). fused - this = the exposed epilogue,
//                 the performance model's least certain term.
//   kOneGroupMma  as kNoEpilogue, and the second consumer warpgroup skips its MMAs (it keeps the
//                 rings' pace), so the first one's MMAs run alone, one warp per sub-partition:
//                 fused_no_epilogue / (2 x this) is the tensor rate one MMA warp per
//                 sub-partition sustains (perf_model's single_warp_mma). The fast sm_90 kernel
//                 cannot split its wgmmas by group and runs them all.
// The low-rank branch's halves (contract section 13; kernels/device/lowrank.cuh), the product's
// branch instance with act_smooth and lora_down / lora_up given, default config only:
//   kBranchNoUp      without the consumers' up-projection: `out` is the smoothed op's, o alone.
//                    fused_smoothed_lowrank32 - this = the up-projection's cost.
//   kBranchNoDown    without the quantizers' down-projection and the load warp's l gate: the
//                    up-projection reads whatever l the workspace holds (out is not checked).
//                    fused_smoothed_lowrank32 - this = the down-projection's and the gate's.
//   kBranchNeither   without either: what is left of the branch instance is its unit map (8-row
//                    chunk units), MaybeSmoothedInput and the branch words' zeroing at exit, the
//                    quantizers otherwise the plain loop. this - fused_smoothed = that structure's
//                    cost.

#include "kernels/device/kernel_set.h"

namespace h3::bench {

enum class TimingVariant { kNoEpilogue, kOneGroupMma, kBranchNoUp, kBranchNoDown, kBranchNeither };

// Whether the variant's kernels compute the branch (the host API then needs lora_down / lora_up).
constexpr bool IsBranchVariant(TimingVariant v) {
  return v == TimingVariant::kBranchNoUp || v == TimingVariant::kBranchNoDown ||
         v == TimingVariant::kBranchNeither;
}

// The variant's kernels, for the host API's internal entry point (kernels/out_proj_internal.h
// RunOutProj: the product's validation, workspaces and launch).
const kernels::KernelSet& TimingKernels(TimingVariant variant);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_TIMING_VARIANTS_H_
