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

#include "kernels/device/kernel_set.h"

namespace h3::bench {

enum class TimingVariant { kNoEpilogue, kOneGroupMma };

// The variant's kernels, for the host API's internal entry point (kernels/out_proj_internal.h
// RunOutProj: the product's validation, workspaces and launch).
const kernels::KernelSet& TimingKernels(TimingVariant variant);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_TIMING_VARIANTS_H_
